// The transport: one place that sends a request to cofferd, with the key, the idle
// timeout, retries with backoff, and errors turned into exceptions. Everything else in
// the SDK describes calls and shapes and goes through Transport.request.
import { randomUUID } from "node:crypto";
import { isReplayable, prepareBody } from "./body.js";
import { streamingFetch } from "./upload.js";
import { ConnectionError, errorFromBody, TimeoutError, ValidationError } from "./errors.js";
const NETWORK_CODES = new Set([
    "ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "ECONNABORTED", "EHOSTUNREACH",
    "ENETUNREACH", "EAI_AGAIN", "UND_ERR_SOCKET", "UND_ERR_CLOSED",
]);
/** True for the error fetch gives when the connection failed or dropped. */
export function isNetworkError(e) {
    if (!(e instanceof Error))
        return false;
    let c = e;
    for (let i = 0; i < 4 && c; i++) {
        const code = c.code;
        if (code && NETWORK_CODES.has(code))
            return true;
        c = c.cause;
    }
    return e.name === "TypeError" && /fetch failed|terminated|other side closed/.test(e.message);
}
/** A watchdog that aborts when nothing happens for `ms`; touch() is progress. */
class Idle {
    ms;
    ac;
    t;
    fired = false;
    constructor(ms, ac) {
        this.ms = ms;
        this.ac = ac;
    }
    touch(extra = 0) {
        if (this.t)
            clearTimeout(this.t);
        if (this.ms <= 0)
            return;
        this.t = setTimeout(() => {
            this.fired = true;
            this.ac.abort(new Error("timeout"));
        }, this.ms + extra);
    }
    stop() {
        if (this.t)
            clearTimeout(this.t);
        this.t = undefined;
    }
}
function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        const t = setTimeout(resolve, ms);
        signal?.addEventListener("abort", () => {
            clearTimeout(t);
            reject(signal.reason);
        }, { once: true });
    });
}
/** `Retry-After` as ms (seconds or an HTTP date), or undefined. */
function retryAfterMs(h) {
    const v = h.get("retry-after");
    if (!v)
        return undefined;
    if (/^\d+$/.test(v))
        return Number(v) * 1000;
    const d = Date.parse(v);
    return Number.isNaN(d) ? undefined : Math.max(0, d - Date.now());
}
/**
 * Percent-encodes a slash-separated path segment by segment (a leading `/` dropped).
 * A `.` or `..` segment throws ValidationError here: URL parsing (fetch's too) would
 * resolve it, even percent-encoded, so the server could never see and refuse it, and
 * the call would reach another file than the one named.
 */
export function encodePath(p) {
    if (typeof p !== "string")
        throw new TypeError(`path must be a string, not ${p === null ? "null" : typeof p}`);
    const segs = p.replace(/^\//, "").split("/");
    for (const s of segs) {
        if (s === "." || s === "..") {
            throw new ValidationError(400, {
                type: "validation_error", message: `path '${p}': '${s}' segments are not allowed (refused by the SDK)`,
            });
        }
    }
    return segs.map(encodeURIComponent).join("/");
}
export class Transport {
    url;
    key;
    timeoutMs;
    maxRetries;
    base;
    cap;
    fetch;
    ownFetch;
    constructor(o = {}) {
        const env = typeof process !== "undefined" ? process.env : {};
        this.url = (o.url ?? env.COFFER_URL ?? "http://127.0.0.1:7700").replace(/\/+$/, "");
        this.key = o.key ?? env.COFFER_KEY;
        this.timeoutMs = o.timeoutMs ?? 60_000;
        this.maxRetries = o.maxRetries ?? 3;
        this.base = o.retryBaseMs ?? 250;
        this.cap = o.retryMaxMs ?? 8_000;
        this.fetch = o.fetch ?? globalThis.fetch;
        this.ownFetch = !o.fetch;
        if (!this.fetch)
            throw new Error("no fetch: Node 18 or later is needed");
    }
    /** The full URL of an API path and query. */
    href(path, query) {
        const u = new URL(path.startsWith("http") ? path : this.url + path);
        for (const [k, v] of Object.entries(query ?? {})) {
            if (v === undefined || v === null)
                continue;
            for (const one of Array.isArray(v) ? v : [v]) {
                // Never `[object Object]` in a URL: a wrong shape fails here if no check caught it.
                if (typeof one !== "string" && typeof one !== "number" && typeof one !== "boolean") {
                    throw new TypeError(`${path}: query parameter '${k}' must be a string, number or boolean, not ${one === null ? "null" : typeof one}`);
                }
                u.searchParams.append(k, String(one));
            }
        }
        return u.toString();
    }
    /** Backoff before retry number `n` (0-based): doubling with full jitter, capped. */
    backoff(n, after) {
        if (after !== undefined)
            return Math.min(after, this.cap);
        const top = Math.min(this.cap, this.base * 2 ** n);
        return top / 2 + Math.random() * (top / 2);
    }
    /**
     * Sends `req` and returns its answer (2xx or 304) with the body unread, or throws the
     * API's error as its class, ConnectionError or TimeoutError. Retries 429 always (the
     * server did nothing), and 503 and dropped connections when the request is idempotent
     * and its body replayable, with the same headers (so the same Idempotency-Key). When
     * `consume` is given the body is read inside the retry loop, so a connection dropped
     * while reading is retried too.
     */
    async request(req, o = {}, consume) {
        const max = o.maxRetries ?? this.maxRetries;
        const timeout = o.timeoutMs ?? this.timeoutMs;
        const idempotent = req.idempotent ??
            (req.method !== "POST" && req.method !== "PATCH" || !!req.headers?.["Idempotency-Key"]);
        const replayable = isReplayable(req.body);
        const headers = { "User-Agent": "coffer-sdk-ts/0.1" };
        if (this.key)
            headers.Authorization = `Bearer ${this.key}`;
        for (const [k, v] of Object.entries({ ...o.headers, ...req.headers }))
            if (v !== undefined)
                headers[k] = v;
        let jsonBody;
        if (req.json !== undefined) {
            jsonBody = new TextEncoder().encode(JSON.stringify(req.json));
            headers["Content-Type"] = "application/json";
        }
        const url = this.href(req.path, req.query);
        for (let attempt = 0;; attempt++) {
            const ac = new AbortController();
            const idle = new Idle(timeout, ac);
            const onUser = () => ac.abort(o.signal.reason);
            if (o.signal?.aborted)
                throw o.signal.reason;
            o.signal?.addEventListener("abort", onUser, { once: true });
            const done = () => { idle.stop(); o.signal?.removeEventListener("abort", onUser); };
            let retryWait;
            try {
                const prepared = jsonBody ? { body: jsonBody, stream: false } : prepareBody(req.body, () => idle.touch());
                idle.touch(req.extraWaitMs ?? 0);
                const init = {
                    method: req.method, headers, body: prepared.body,
                    signal: ac.signal, redirect: "manual",
                };
                if (prepared.stream)
                    init.duplex = "half";
                const res = prepared.stream && this.ownFetch
                    ? await streamingFetch(url, { method: req.method, headers, body: prepared.body, signal: ac.signal })
                    : await this.fetch(url, init);
                idle.touch();
                if (res.ok || res.status === 304) {
                    const answer = { status: res.status, headers: res.headers, body: null };
                    // From here the watchdog runs only while a read of the body waits: a caller
                    // that reads a download slowly is not timed out for its own pauses.
                    idle.stop();
                    if (res.body)
                        answer.body = watch(res.body, req.events ? null : idle, done);
                    else
                        done();
                    if (!consume)
                        return answer;
                    try {
                        return await consume(answer);
                    }
                    finally {
                        done();
                    }
                }
                const text = await res.text();
                done();
                let parsed = text;
                try {
                    parsed = JSON.parse(text);
                }
                catch { /* not JSON: the text is the message */ }
                const after = retryAfterMs(res.headers);
                const err = errorFromBody(res.status, parsed, res.headers.get("x-request-id") ?? undefined, after === undefined ? undefined : Math.ceil(after / 1000));
                const canRetry = attempt < max && replayable &&
                    (res.status === 429 || (res.status === 503 && idempotent));
                if (!canRetry)
                    throw err;
                retryWait = after;
            }
            catch (e) {
                done();
                if (idle.fired)
                    throw new TimeoutError(timeout, `${req.method} ${req.path}`);
                else if (o.signal?.aborted)
                    throw o.signal.reason;
                else if (isNetworkError(e)) {
                    if (!(attempt < max && idempotent && replayable)) {
                        throw new ConnectionError(`${req.method} ${req.path}: ${describe(e)}`, e);
                    }
                }
                else
                    throw e;
            }
            await sleep(this.backoff(attempt, retryWait), o.signal);
        }
    }
    /** A JSON call: the parsed answer (undefined for 204). */
    async json(req, o) {
        return this.request(req, o, async (a) => {
            const t = a.body ? await new Response(a.body).text() : "";
            return (t ? JSON.parse(t) : undefined);
        });
    }
    /**
     * This transport with `X-Subject: subject` on every request: what an agent acting for
     * a subject sends through (API.md "Subjects").
     */
    forSubject(subject) {
        const view = Object.create(this);
        const send = this.request.bind(this);
        const request = (req, o, consume) => send({ ...req, headers: { "X-Subject": subject, ...req.headers } }, o, consume);
        Object.defineProperty(view, "request", { value: request });
        return view;
    }
    /** A fresh Idempotency-Key. */
    static newKey() {
        return randomUUID();
    }
}
function describe(e) {
    const c = e.cause;
    return c?.code ? `${c.code}${c.message ? " " + c.message : ""}` : String(e.message ?? e);
}
/**
 * The answer's body, the idle watchdog (when given) armed while each read waits, and
 * `done` called at its end, error or cancel.
 */
function watch(body, idle, done) {
    const r = body.getReader();
    return new ReadableStream({
        async pull(c) {
            try {
                idle?.touch();
                const { value, done: end } = await r.read();
                idle?.stop();
                if (end) {
                    done();
                    c.close();
                }
                else
                    c.enqueue(value);
            }
            catch (e) {
                done();
                c.error(idle?.fired ? new TimeoutError(idle.ms, "reading the answer") : e);
            }
        },
        cancel(reason) {
            done();
            return r.cancel(reason);
        },
    });
}
