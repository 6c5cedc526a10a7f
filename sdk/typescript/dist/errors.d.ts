/** The body of an API error: `{"error": {type, message, ...extra}}`. */
export interface ApiErrorBody {
    type: string;
    message: string;
    requestId?: string;
    [extra: string]: unknown;
}
/** Any error the server answered with (a status >= 400 and its JSON error). */
export declare class CofferError extends Error {
    /** HTTP status of the answer. */
    readonly status: number;
    /** The API's error type (`validation_error`, `not_found`, ...). */
    readonly type: string;
    /** `X-Request-Id` of the answer, or the error body's `requestId`. */
    readonly requestId?: string;
    /** The whole error object as the server sent it. */
    readonly body: ApiErrorBody;
    [extra: string]: unknown;
    constructor(status: number, body: ApiErrorBody, requestId?: string);
}
export declare class ValidationError extends CofferError {
}
export declare class UnauthorizedError extends CofferError {
}
export declare class ForbiddenError extends CofferError {
}
export declare class NotFoundError extends CofferError {
}
export declare class ConflictError extends CofferError {
}
/** One path a merge or a revert could not settle by itself (docs/api.md "Merge"). */
export interface MergeConflict {
    path: string;
    kind: "content" | "remove-change" | "type";
    base: MergeSide | null;
    ours: MergeSide | null;
    theirs: MergeSide | null;
    /** Text conflicts: the text with `<<<<<<< ours` / `=======` / `>>>>>>> theirs` markers. */
    merged?: string;
}
/** A side of a conflict: the version there (null when the path is absent there). */
export interface MergeSide {
    version: number;
    sha256: string;
    size: number;
}
/**
 * 409 of a merge or a revert with conflicts left unsettled: nothing changed. `conflicts`
 * lists them; settle them with `resolutions` (or a merge's `strategy`) and call again.
 */
export declare class MergeConflictError extends ConflictError {
    readonly conflicts: MergeConflict[];
}
/** 410: `oldest` is set when a changes feed's `since` is older than the kept history. */
export declare class GoneError extends CofferError {
    readonly oldest?: number;
}
/** 412: `current` is the file's version and sha256 now (`{version: 0, sha256: null}` if absent). */
export declare class PreconditionFailedError extends CofferError {
    readonly current?: {
        version: number;
        sha256: string | null;
    };
}
export declare class TooLargeError extends CofferError {
}
export declare class UnsupportedMediaTypeError extends CofferError {
}
export declare class RangeNotSatisfiableError extends CofferError {
}
/** 422: the guard refused the content (`rule`, `category`, `offset`, `layer?`). */
export declare class BlockedError extends CofferError {
}
/** 423: a supervised relay write waits for the user (`opId`). */
export declare class LockedError extends CofferError {
}
/** 429: `retryAfter` is the answer's `Retry-After` in seconds (when it had one). */
export declare class RateLimitedError extends CofferError {
    readonly retryAfter?: number;
}
export declare class InternalError extends CofferError {
}
/** 503: `retryAfter` is the answer's `Retry-After` in seconds (when it had one). */
export declare class UnavailableError extends CofferError {
    readonly retryAfter?: number;
}
/**
 * The exception for an error answer: the class of its `type` (or, for a body that is
 * not an API error, of its status). Never throws.
 */
export declare function errorFromBody(status: number, raw: unknown, requestId?: string, retryAfter?: number): CofferError;
/** The request never got an answer: the connection failed or was reset. */
export declare class ConnectionError extends Error {
    readonly cause?: unknown;
    constructor(message: string, cause?: unknown);
}
/** Nothing was sent or received for `timeoutMs` (the client's or the call's). */
export declare class TimeoutError extends Error {
    readonly timeoutMs: number;
    constructor(timeoutMs: number, what: string);
}
