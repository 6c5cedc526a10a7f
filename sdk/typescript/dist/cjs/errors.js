"use strict";
// Errors: one class per API error type (API.md "General"), all under CofferError, so
// callers can `catch (e) { if (e instanceof PreconditionFailedError) ... }`. Extra fields
// of the error object (`current` on 412, `oldest` on 410, `ceiling`, `opId`, `rule`, ...)
// are copied onto the exception as they came.
Object.defineProperty(exports, "__esModule", { value: true });
exports.TimeoutError = exports.ConnectionError = exports.UnavailableError = exports.InternalError = exports.RateLimitedError = exports.LockedError = exports.BlockedError = exports.RangeNotSatisfiableError = exports.UnsupportedMediaTypeError = exports.TooLargeError = exports.PreconditionFailedError = exports.GoneError = exports.MergeConflictError = exports.ConflictError = exports.NotFoundError = exports.ForbiddenError = exports.UnauthorizedError = exports.ValidationError = exports.CofferError = void 0;
exports.errorFromBody = errorFromBody;
/** Any error the server answered with (a status >= 400 and its JSON error). */
class CofferError extends Error {
    /** HTTP status of the answer. */
    status;
    /** The API's error type (`validation_error`, `not_found`, ...). */
    type;
    /** `X-Request-Id` of the answer, or the error body's `requestId`. */
    requestId;
    /** The whole error object as the server sent it. */
    body;
    constructor(status, body, requestId) {
        super(body.message);
        this.name = new.target.name;
        this.status = status;
        this.type = body.type;
        this.body = body;
        this.requestId = body.requestId ?? requestId;
        for (const [k, v] of Object.entries(body)) {
            if (!(k in this))
                this[k] = v;
        }
    }
}
exports.CofferError = CofferError;
class ValidationError extends CofferError {
}
exports.ValidationError = ValidationError;
class UnauthorizedError extends CofferError {
}
exports.UnauthorizedError = UnauthorizedError;
class ForbiddenError extends CofferError {
}
exports.ForbiddenError = ForbiddenError;
class NotFoundError extends CofferError {
}
exports.NotFoundError = NotFoundError;
class ConflictError extends CofferError {
}
exports.ConflictError = ConflictError;
/**
 * 409 of a merge or a revert with conflicts left unsettled: nothing changed. `conflicts`
 * lists them; settle them with `resolutions` (or a merge's `strategy`) and call again.
 */
class MergeConflictError extends ConflictError {
}
exports.MergeConflictError = MergeConflictError;
/** 410: `oldest` is set when a changes feed's `since` is older than the kept history. */
class GoneError extends CofferError {
}
exports.GoneError = GoneError;
/** 412: `current` is the file's version and sha256 now (`{version: 0, sha256: null}` if absent). */
class PreconditionFailedError extends CofferError {
}
exports.PreconditionFailedError = PreconditionFailedError;
class TooLargeError extends CofferError {
}
exports.TooLargeError = TooLargeError;
class UnsupportedMediaTypeError extends CofferError {
}
exports.UnsupportedMediaTypeError = UnsupportedMediaTypeError;
class RangeNotSatisfiableError extends CofferError {
}
exports.RangeNotSatisfiableError = RangeNotSatisfiableError;
/** 422: the guard refused the content (`rule`, `category`, `offset`, `layer?`). */
class BlockedError extends CofferError {
}
exports.BlockedError = BlockedError;
/** 423: a supervised relay write waits for the user (`opId`). */
class LockedError extends CofferError {
}
exports.LockedError = LockedError;
/** 429: `retryAfter` is the answer's `Retry-After` in seconds (when it had one). */
class RateLimitedError extends CofferError {
}
exports.RateLimitedError = RateLimitedError;
class InternalError extends CofferError {
}
exports.InternalError = InternalError;
/** 503: `retryAfter` is the answer's `Retry-After` in seconds (when it had one). */
class UnavailableError extends CofferError {
}
exports.UnavailableError = UnavailableError;
const BY_TYPE = {
    validation_error: ValidationError,
    unauthorized: UnauthorizedError,
    forbidden: ForbiddenError,
    not_found: NotFoundError,
    conflict: ConflictError,
    gone: GoneError,
    precondition_failed: PreconditionFailedError,
    too_large: TooLargeError,
    unsupported_media_type: UnsupportedMediaTypeError,
    range_not_satisfiable: RangeNotSatisfiableError,
    blocked: BlockedError,
    locked: LockedError,
    rate_limited: RateLimitedError,
    internal: InternalError,
    unavailable: UnavailableError,
};
const TYPE_OF_STATUS = {
    400: "validation_error", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "not_found", 409: "conflict", 410: "gone", 412: "precondition_failed",
    413: "too_large", 415: "unsupported_media_type", 416: "range_not_satisfiable",
    422: "blocked", 423: "locked", 429: "rate_limited", 500: "internal", 503: "unavailable",
};
/**
 * The exception for an error answer: the class of its `type` (or, for a body that is
 * not an API error, of its status). Never throws.
 */
function errorFromBody(status, raw, requestId, retryAfter) {
    let body;
    const e = raw?.error;
    if (e && typeof e === "object" && typeof e.type === "string") {
        body = { ...e, message: typeof e.message === "string" ? e.message : e.type };
    }
    else {
        const type = TYPE_OF_STATUS[status] ?? (status >= 500 ? "internal" : "validation_error");
        const text = typeof raw === "string" && raw ? raw.slice(0, 500) : `HTTP ${status}`;
        body = { type, message: text };
    }
    let cls = BY_TYPE[body.type] ?? CofferError;
    if (cls === ConflictError && Array.isArray(body.conflicts))
        cls = MergeConflictError;
    const err = new cls(status, body, requestId);
    if (retryAfter !== undefined)
        err.retryAfter = retryAfter;
    return err;
}
/** The request never got an answer: the connection failed or was reset. */
class ConnectionError extends Error {
    cause;
    constructor(message, cause) {
        super(message);
        this.name = "ConnectionError";
        this.cause = cause;
    }
}
exports.ConnectionError = ConnectionError;
/** Nothing was sent or received for `timeoutMs` (the client's or the call's). */
class TimeoutError extends Error {
    timeoutMs;
    constructor(timeoutMs, what) {
        super(`${what}: no progress for ${timeoutMs} ms (timeoutMs)`);
        this.name = "TimeoutError";
        this.timeoutMs = timeoutMs;
    }
}
exports.TimeoutError = TimeoutError;
