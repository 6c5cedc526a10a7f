// Argument checks: a call with the wrong shape (a string where an options object belongs,
// an option the call does not know, a number where a path belongs) throws a TypeError
// naming the call and the argument before any request is made, never a request with
// `[object Object]` or `undefined` in its path.
/** The options every call takes (CallOptions). */
export const CALL = ["timeoutMs", "maxRetries", "signal", "headers"];
function shape(v) {
    if (v === null)
        return "null";
    if (Array.isArray(v))
        return "an array";
    if (v instanceof Uint8Array)
        return "bytes";
    if (typeof v === "string")
        return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v)}`;
    if (typeof v === "object")
        return `a ${v.constructor?.name ?? "object"}`;
    return `${typeof v} ${String(v)}`;
}
function isPlain(v) {
    if (v === null || typeof v !== "object" || Array.isArray(v))
        return false;
    const p = Object.getPrototypeOf(v);
    return p === Object.prototype || p === null;
}
/**
 * `o` is undefined or a plain object whose keys are all in `allowed` (CallOptions' keys
 * are always allowed). Else TypeError: `where: argName must be ...`.
 */
export function opts(where, arg, o, allowed = []) {
    if (o === undefined)
        return;
    const all = [...allowed, ...CALL];
    if (!isPlain(o)) {
        throw new TypeError(`${where}: ${arg} must be an options object {${all.join(", ")}}, not ${shape(o)}`);
    }
    for (const k of Object.keys(o)) {
        if (!all.includes(k)) {
            throw new TypeError(`${where}: unknown option '${k}' in ${arg} (it takes ${all.join(", ")})`);
        }
    }
}
/** A plain object whose keys are all in `allowed`, without CallOptions (a request body). */
export function fields(where, arg, o, allowed, optional = true) {
    if (o === undefined && optional)
        return;
    if (!isPlain(o))
        throw new TypeError(`${where}: ${arg} must be an object {${allowed.join(", ")}}, not ${shape(o)}`);
    for (const k of Object.keys(o)) {
        if (!allowed.includes(k))
            throw new TypeError(`${where}: unknown field '${k}' in ${arg} (it takes ${allowed.join(", ")})`);
    }
}
/** A non-empty string. */
export function str(where, arg, v) {
    if (typeof v !== "string" || v === "") {
        throw new TypeError(`${where}: ${arg} must be a non-empty string, not ${v === "" ? "empty" : shape(v)}`);
    }
}
/** A string or undefined. */
export function optStr(where, arg, v) {
    if (v !== undefined)
        str(where, arg, v);
}
/** A whole number >= 0. */
export function int(where, arg, v) {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
        throw new TypeError(`${where}: ${arg} must be a whole number >= 0, not ${shape(v)}`);
    }
}
/** A whole number >= 0, or undefined. */
export function optInt(where, arg, v) {
    if (v !== undefined)
        int(where, arg, v);
}
/** A boolean or undefined. */
export function optBool(where, arg, v) {
    if (v !== undefined && typeof v !== "boolean")
        throw new TypeError(`${where}: ${arg} must be true or false, not ${shape(v)}`);
}
/** An array of non-empty strings. */
export function strs(where, arg, v) {
    if (!Array.isArray(v) || v.some((s) => typeof s !== "string" || s === "")) {
        throw new TypeError(`${where}: ${arg} must be an array of strings, not ${shape(v)}`);
    }
}
/** A string-to-string map, or undefined. */
export function optLabels(where, arg, v) {
    if (v === undefined)
        return;
    if (!isPlain(v) || Object.values(v).some((s) => typeof s !== "string")) {
        throw new TypeError(`${where}: ${arg} must be an object of string values, not ${shape(v)}`);
    }
}
/** Something an upload can send (BodyInput). */
export function body(where, arg, v) {
    const ok = typeof v === "string" || typeof v === "function" || v instanceof Uint8Array ||
        v instanceof ArrayBuffer || v instanceof Blob || v instanceof ReadableStream ||
        (v != null && typeof v[Symbol.asyncIterator] === "function");
    if (!ok) {
        throw new TypeError(`${where}: ${arg} must be a string, bytes, a Blob, a stream, an async iterable or a function returning one, not ${shape(v)}`);
    }
}
