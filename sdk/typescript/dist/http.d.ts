import { type BodyInput } from "./body.js";
/** Settings of a client. Every field has a default. */
export interface ClientOptions {
    /** cofferd's base URL; default `$COFFER_URL` or `http://127.0.0.1:7700`. */
    url?: string;
    /** An API key; default `$COFFER_KEY`. */
    key?: string;
    /**
     * Longest wait, in ms, with no progress: until the answer's headers, and between two
     * chunks of a body sent or received. Default 60,000. Long-polls add their `wait`.
     */
    timeoutMs?: number;
    /** Retries after a 429, a 503 or a dropped connection; default 3. */
    maxRetries?: number;
    /** First backoff in ms (doubled each retry, with jitter); default 250. */
    retryBaseMs?: number;
    /** Longest backoff or `Retry-After` honoured, in ms; default 8,000. */
    retryMaxMs?: number;
    /** The fetch to use; default the platform's. */
    fetch?: typeof fetch;
}
/** Options every call takes. */
export interface CallOptions {
    timeoutMs?: number;
    maxRetries?: number;
    signal?: AbortSignal;
    /** Extra request headers (`X-Request-Id`, say). */
    headers?: Record<string, string>;
}
type QueryValue = string | number | boolean | undefined | null | string[];
/** One request as the API modules describe it. */
export interface Req {
    method: "GET" | "HEAD" | "PUT" | "POST" | "PATCH" | "DELETE";
    path: string;
    query?: Record<string, QueryValue>;
    json?: unknown;
    body?: BodyInput;
    headers?: Record<string, string | undefined>;
    /** Safe to send again after a dropped connection or a 503 (default: by method). */
    idempotent?: boolean;
    /** An event stream (SSE): quiet for as long as nothing happens, so no idle timeout after the headers. */
    events?: boolean;
    /** Extra ms added to the timeout before the headers (long-polls). */
    extraWaitMs?: number;
}
/** An answer whose status was 2xx or 304, its body not read yet. */
export interface Answer {
    status: number;
    headers: Headers;
    body: ReadableStream<Uint8Array> | null;
}
/** True for the error fetch gives when the connection failed or dropped. */
export declare function isNetworkError(e: unknown): boolean;
/**
 * Percent-encodes a slash-separated path segment by segment (a leading `/` dropped).
 * A `.` or `..` segment throws ValidationError here: URL parsing (fetch's too) would
 * resolve it, even percent-encoded, so the server could never see and refuse it, and
 * the call would reach another file than the one named.
 */
export declare function encodePath(p: string): string;
export declare class Transport {
    readonly url: string;
    readonly key?: string;
    readonly timeoutMs: number;
    readonly maxRetries: number;
    private base;
    private cap;
    private fetch;
    private ownFetch;
    constructor(o?: ClientOptions);
    /** The full URL of an API path and query. */
    href(path: string, query?: Record<string, QueryValue>): string;
    /** Backoff before retry number `n` (0-based): doubling with full jitter, capped. */
    private backoff;
    /**
     * Sends `req` and returns its answer (2xx or 304) with the body unread, or throws the
     * API's error as its class, ConnectionError or TimeoutError. Retries 429 always (the
     * server did nothing), and 503 and dropped connections when the request is idempotent
     * and its body replayable, with the same headers (so the same Idempotency-Key). When
     * `consume` is given the body is read inside the retry loop, so a connection dropped
     * while reading is retried too.
     */
    request<T = Answer>(req: Req, o?: CallOptions, consume?: (a: Answer) => Promise<T>): Promise<T>;
    /** A JSON call: the parsed answer (undefined for 204). */
    json<T>(req: Req, o?: CallOptions): Promise<T>;
    /**
     * This transport with `X-Subject: subject` on every request: what an agent acting for
     * a subject sends through (API.md "Subjects").
     */
    forSubject(subject: string): Transport;
    /** A fresh Idempotency-Key. */
    static newKey(): string;
}
export {};
