/** The options every call takes (CallOptions). */
export declare const CALL: readonly ["timeoutMs", "maxRetries", "signal", "headers"];
/**
 * `o` is undefined or a plain object whose keys are all in `allowed` (CallOptions' keys
 * are always allowed). Else TypeError: `where: argName must be ...`.
 */
export declare function opts(where: string, arg: string, o: unknown, allowed?: readonly string[]): void;
/** A plain object whose keys are all in `allowed`, without CallOptions (a request body). */
export declare function fields(where: string, arg: string, o: unknown, allowed: readonly string[], optional?: boolean): void;
/** A non-empty string. */
export declare function str(where: string, arg: string, v: unknown): asserts v is string;
/** A string or undefined. */
export declare function optStr(where: string, arg: string, v: unknown): void;
/** A whole number >= 0. */
export declare function int(where: string, arg: string, v: unknown): asserts v is number;
/** A whole number >= 0, or undefined. */
export declare function optInt(where: string, arg: string, v: unknown): void;
/** A boolean or undefined. */
export declare function optBool(where: string, arg: string, v: unknown): void;
/** An array of non-empty strings. */
export declare function strs(where: string, arg: string, v: unknown): asserts v is string[];
/** A string-to-string map, or undefined. */
export declare function optLabels(where: string, arg: string, v: unknown): void;
/** Something an upload can send (BodyInput). */
export declare function body(where: string, arg: string, v: unknown): void;
