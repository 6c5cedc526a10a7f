"""Typed exceptions for the API's errors (`{"error": {"type", "message", ...}}`).

Every answer of 400 or more raises a subclass of `CofferError` chosen by the error's
`type`; transport failures (a refused or reset connection after the retries, a timeout)
raise `CofferConnectionError` or `CofferTimeout`.
"""

from __future__ import annotations

from typing import Any, Mapping


class CofferError(Exception):
    """An error answer of the API: `status`, `type`, `message`, `request_id`, and every
    other field of the error object in `fields` (also readable as attributes in
    snake_case: `err.current`, `err.oldest`, `err.idempotency_key`)."""

    type: str = "error"

    def __init__(self, status: int, type: str, message: str,
                 fields: Mapping[str, Any] | None = None,
                 request_id: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.fields: dict[str, Any] = dict(fields or {})
        self.request_id = request_id

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        fields = self.__dict__.get("fields", {})
        key = _camel(name)
        if key in fields:
            return fields[key]
        raise AttributeError("%s has no field %r" % (type(self).__name__, name))

    def __str__(self) -> str:
        return "%s %s: %s" % (self.status, self.type, self.message)


class ValidationError(CofferError):
    """400 validation_error: the request is malformed or over a limit it names."""


class Unauthorized(CofferError):
    """401: missing, wrong, expired or revoked key."""


class Forbidden(CofferError):
    """403: the key may not do this (read-only, agent-bound, reserved, excluded)."""


class NotFound(CofferError):
    """404, also for another organization's ids and for 405 (no such method here)."""


class Conflict(CofferError):
    """409: an existing name, a pinned snapshot, a reused Idempotency-Key, ..."""


class MergeConflict(Conflict):
    """409 of a merge or a revert with conflicts left unsettled (nothing changed):
    `conflicts` lists them, each `{path, kind, base, ours, theirs, merged?}`; settle them
    with `resolutions` (or a merge's `strategy`) and call again."""

    @property
    def conflicts(self) -> list[dict[str, Any]]:
        c = self.fields.get("conflicts")
        return c if isinstance(c, list) else []


class Gone(CofferError):
    """410: an ended turn or session, or a `since` older than the history (`oldest`)."""


class PreconditionFailed(CofferError):
    """412: the file is not at the version asked; `current` is `{version, sha256}`
    (`{version: 0, sha256: None}` when the file is absent)."""

    @property
    def current(self) -> dict[str, Any]:
        cur = self.fields.get("current")
        return cur if isinstance(cur, dict) else {}


class TooLarge(CofferError):
    """413: a body or an answer over a limit the message names."""


class UnsupportedMediaType(CofferError):
    """415: a signed PUT link's content type differs."""


class RangeNotSatisfiable(CofferError):
    """416: the Range asked starts at or past the end."""


class Blocked(CofferError):
    """422: the guard refused the content (`rule`, `category`, `offset`)."""


class Locked(CofferError):
    """423: a supervised relay write waits for the user (`op_id`)."""


class RateLimited(CofferError):
    """429: over a rate or count limit (retried with backoff first)."""


class InternalError(CofferError):
    """500: the server failed; the message says where."""


class Unavailable(CofferError):
    """503: not available now (retried with backoff first)."""


class CofferConnectionError(CofferError, ConnectionError):
    """The server could not be reached, or the connection broke, after the retries
    allowed (or at once when the request could not be sent again safely)."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "connection", message)


class CofferTimeout(CofferConnectionError, TimeoutError):
    """No byte came within the timeout."""


_BY_TYPE: dict[str, type[CofferError]] = {
    "validation_error": ValidationError, "unauthorized": Unauthorized,
    "forbidden": Forbidden, "not_found": NotFound, "conflict": Conflict, "gone": Gone,
    "precondition_failed": PreconditionFailed, "too_large": TooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "range_not_satisfiable": RangeNotSatisfiable, "blocked": Blocked, "locked": Locked,
    "rate_limited": RateLimited, "internal": InternalError, "unavailable": Unavailable,
}
_BY_STATUS: dict[int, type[CofferError]] = {
    400: ValidationError, 401: Unauthorized, 403: Forbidden, 404: NotFound,
    405: NotFound, 409: Conflict, 410: Gone, 412: PreconditionFailed, 413: TooLarge,
    415: UnsupportedMediaType, 416: RangeNotSatisfiable, 422: Blocked, 423: Locked,
    429: RateLimited, 500: InternalError, 503: Unavailable,
}


def error_from(status: int, body: Any, request_id: str | None) -> CofferError:
    """The exception for an error answer: by its `type` when the body has one, else by
    the status (a proxy's HTML page still gives a typed error)."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("type"), str):
        etype = err["type"]
        cls: type[CofferError] = _BY_TYPE.get(etype) or _BY_STATUS.get(status) or CofferError
        if cls is Conflict and isinstance(err.get("conflicts"), list):
            cls = MergeConflict
        message = str(err.get("message", ""))
        fields = {k: v for k, v in err.items() if k not in ("type", "message")}
        rid = fields.get("requestId") or request_id
        return cls(status, etype, message, fields, rid)
    cls = _BY_STATUS.get(status, CofferError)
    return cls(status, cls.__name__.lower(), "HTTP %d without an error body" % status,
               {}, request_id)


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)
