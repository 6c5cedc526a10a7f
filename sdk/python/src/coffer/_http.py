"""The one HTTP transport: kept-alive connections, retries, bodies streamed both ways.

Standard library only (http.client): it streams request bodies from files and
iterators and answers in chunks, keeps connections alive, and needs nothing installed.

Retries: an answer of 429 or 503, or a connection that failed or broke before the
answer's head arrived, is tried again after a backoff (exponential with jitter, or the
server's `Retry-After`), at most `retries` times, with the same headers, so the same
`Idempotency-Key`. A broken connection is tried again only for a request that is safe
to repeat: GET, HEAD, PUT and DELETE, or any request with an Idempotency-Key (the SDK
sends one with every call that creates something). A body is sent again only when it
can be replayed: bytes, a path, or a seekable file (sought back to where it started);
an iterator cannot, so its request is never retried once a chunk was taken from it.
"""

from __future__ import annotations

import http.client
import io
import json as jsonlib
import os
import random
import socket
import threading
import time
import urllib.parse
from typing import IO, Any, Iterable, Iterator, Mapping, Optional, Union

from .errors import CofferConnectionError, CofferError, CofferTimeout, error_from
from .models import Event

Body = Union[None, bytes, bytearray, memoryview, str, os.PathLike[str], IO[bytes],
             Iterable[bytes]]

CHUNK = 256 * 1024
IDLE_REUSE = 20.0   # seconds: cofferd closes a kept-alive connection idle for 30 s
_IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}
_BROKEN = (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine,
           http.client.IncompleteRead, BrokenPipeError, socket.gaierror)


def need_str(where: str, arg: str, v: Any) -> str:
    """`v` if it is a non-empty str, else TypeError naming the call and the argument: a
    dict or a number given where a path or an id belongs never reaches a URL."""
    if not isinstance(v, str) or not v:
        raise TypeError("%s: %s must be a non-empty str, not %s" % (
            where, arg, "an empty str" if v == "" else type(v).__name__ + " " + repr(v)[:60]))
    return v


def quote_path(path: str) -> str:
    """Percent-encodes a `/`-separated path for a URL, keeping the slashes."""
    need_str("path", "path", path)
    return urllib.parse.quote(path, safe="/")


def quote_seg(seg: str) -> str:
    """Percent-encodes one URL segment (a `/` in it too)."""
    need_str("id", "id", seg)
    return urllib.parse.quote(seg, safe="")


class _Payload:
    """A request body prepared for sending, and sending again on a retry."""

    def __init__(self, body: Body) -> None:
        self.length: Optional[int] = None
        self.replayable = True
        self.started = False
        self._file: Optional[IO[bytes]] = None
        self._owned = False
        self._start = 0
        self._iter: Optional[Iterable[bytes]] = None
        self._bytes: Optional[bytes] = None
        if body is None:
            self._bytes = None
        elif isinstance(body, str):
            self._bytes = body.encode("utf-8")
        elif isinstance(body, (bytes, bytearray, memoryview)):
            self._bytes = bytes(body)
        elif isinstance(body, os.PathLike):
            self._file = open(os.fspath(body), "rb")
            self._owned = True
        elif hasattr(body, "read"):
            self._file = body  # type: ignore[assignment]
        elif isinstance(body, Mapping) or not hasattr(body, "__iter__"):
            raise TypeError("body must be bytes, str, a path (os.PathLike), a binary file "
                            "or an iterator of bytes, not %s" % type(body).__name__)
        else:
            self._iter = body
            self.replayable = False
        if self._bytes is not None:
            self.length = len(self._bytes)
        if self._file is not None:
            self._setup_file(self._file)

    def _setup_file(self, f: IO[bytes]) -> None:
        try:
            seekable = f.seekable()
        except (AttributeError, ValueError):
            seekable = False
        if not seekable:
            self.replayable = False
            return
        self._start = f.tell()
        end = f.seek(0, io.SEEK_END)
        f.seek(self._start)
        self.length = end - self._start

    def body(self) -> Any:
        """What http.client sends for this attempt (seeks a file back on a retry)."""
        if self._file is not None:
            if self.started:
                self._file.seek(self._start)
            self.started = True
            return _FileReader(self._file, self.length)
        if self._iter is not None:
            return self._chunks(self._iter)
        return self._bytes

    def _chunks(self, it: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in it:
            self.started = True
            if not isinstance(chunk, (bytes, bytearray, memoryview)):
                raise TypeError("body: an iterator must give bytes, not %s" %
                                type(chunk).__name__)
            if chunk:
                yield bytes(chunk)

    def can_resend(self) -> bool:
        return self.replayable or not self.started

    def close(self) -> None:
        if self._owned and self._file is not None:
            self._file.close()


class _FileReader:
    """Reads at most `length` bytes of a file, in big chunks (http.client reads its
    `blocksize`; this keeps a file object from being sent past the length announced)."""

    def __init__(self, f: IO[bytes], length: Optional[int]) -> None:
        self.f, self.left = f, length

    def read(self, n: int = -1) -> bytes:
        if self.left is not None:
            if self.left <= 0:
                return b""
            n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if self.left is not None:
            self.left -= len(data)
        return data


class Response:
    """An answer read whole: `status`, `headers`, `body` (bytes), `json()`."""

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name)

    def json(self) -> Any:
        return jsonlib.loads(self.body) if self.body else {}


class StreamResponse:
    """An answer whose body is read as it arrives; close it (or use `with`) to give the
    connection back. Iterating yields chunks of bytes."""

    def __init__(self, transport: "Transport", conn: http.client.HTTPConnection,
                 resp: http.client.HTTPResponse) -> None:
        self._t, self._conn, self._resp = transport, conn, resp
        self.status = resp.status
        self.headers = resp.headers
        self.closed = False

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name)

    def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes (all that is left when n < 0); b"" at the end."""
        try:
            data = self._resp.read() if n < 0 else self._resp.read(n)
        except socket.timeout as e:
            self.close()
            raise CofferTimeout("no data within the timeout: %s" % e) from None
        except _BROKEN as e:
            self.close()
            raise CofferConnectionError("the connection broke while reading: %s" % e) from None
        if n != 0 and not data and self._resp.length:
            # http.client reads a body cut short of its Content-Length as an end
            left = self._resp.length
            self.close()
            raise CofferConnectionError("the connection broke %d bytes before the end "
                                        "of the answer" % left)
        if n < 0 or not data:
            self.close()
        return data

    def readline(self) -> bytes:
        try:
            line = self._resp.readline()
        except socket.timeout as e:
            self.close()
            raise CofferTimeout("no data within the timeout: %s" % e) from None
        except _BROKEN as e:
            self.close()
            raise CofferConnectionError("the connection broke while reading: %s" % e) from None
        if not line:
            self.close()
        return line

    def iter_bytes(self, chunk_size: int = CHUNK) -> Iterator[bytes]:
        while True:
            data = self.read(chunk_size)
            if not data:
                return
            yield data

    def __iter__(self) -> Iterator[bytes]:
        return self.iter_bytes()

    def close(self) -> None:
        """Gives the connection back when the body was read to its end, else closes it."""
        if self.closed:
            return
        self.closed = True
        if self._resp.isclosed() and not self._resp.will_close:
            self._t._release(self._conn)
        else:
            self._resp.close()
            self._conn.close()

    def __enter__(self) -> "StreamResponse":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Transport:
    """Sends requests to one cofferd with one key; thread-safe (a pool of connections)."""

    def __init__(self, url: str, key: str, timeout: float = 30.0,
                 stream_timeout: float = 60.0, retries: int = 4, backoff: float = 0.25,
                 max_backoff: float = 8.0, user_agent: str = "coffer-python") -> None:
        u = urllib.parse.urlsplit(url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("url %r: expected http://HOST:PORT or https://..." % url)
        self.url = url.rstrip("/")
        self.scheme, self.host = u.scheme, u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.base = u.path
        self.key = key
        self.timeout, self.stream_timeout = timeout, stream_timeout
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.user_agent = user_agent
        self._pool: list[tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()

    # ---- connections
    def _acquire(self, timeout: Optional[float]) -> tuple[http.client.HTTPConnection, bool]:
        now = time.monotonic()
        with self._lock:
            while self._pool:
                conn, used = self._pool.pop()
                if now - used < IDLE_REUSE and conn.sock is not None:
                    conn.sock.settimeout(timeout)
                    conn.timeout = timeout
                    return conn, True
                conn.close()
        cls = (http.client.HTTPSConnection if self.scheme == "https"
               else http.client.HTTPConnection)
        return cls(self.host, self.port, timeout=timeout, blocksize=CHUNK), False

    def _release(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._pool) < 16 and conn.sock is not None:
                self._pool.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        """Closes the idle connections (streams still open keep theirs)."""
        with self._lock:
            pool, self._pool = self._pool, []
        for conn, _ in pool:
            conn.close()

    # ---- requests
    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                json: Any = None, body: Body = None,
                headers: Optional[Mapping[str, str]] = None,
                timeout: Optional[float] = None, stream: bool = False,
                retry: Optional[bool] = None) -> Any:
        """Sends one request (retrying as the module says) and returns a Response, or a
        StreamResponse when `stream`; an error answer raises its CofferError.
        `retry` forces whether a broken connection may be retried (default: by method
        and Idempotency-Key)."""
        hdrs = {"Authorization": "Bearer " + self.key, "User-Agent": self.user_agent,
                "Accept-Encoding": "identity"}
        if json is not None:
            body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"))
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        if retry is None:
            retry = method in _IDEMPOTENT or any(
                k.lower() == "idempotency-key" for k in hdrs)
        url = self.base + path + _query(query)
        if timeout is None:
            timeout = self.stream_timeout if stream else self.timeout
        payload = _Payload(body)
        try:
            return self._send(method, url, hdrs, payload, timeout, stream, retry)
        finally:
            payload.close()

    def _send(self, method: str, url: str, hdrs: dict[str, str], payload: _Payload,
              timeout: float, stream: bool, retry: bool) -> Any:
        if payload.length is not None and method not in ("GET", "HEAD"):
            hdrs["Content-Length"] = str(payload.length)
        attempt = 0
        while True:
            conn, reused = self._acquire(timeout)
            try:
                data = payload.body()
                chunked = payload.length is None and data is not None
                conn.request(method, url, body=data, headers=hdrs, encode_chunked=chunked)
                resp = conn.getresponse()
            except socket.timeout as e:
                conn.close()
                raise CofferTimeout("%s %s: no answer within %ss (%s)" % (
                    method, url, timeout, e)) from None
            except (_BROKEN + (OSError,)) as e:
                conn.close()
                stale = reused and isinstance(e, _BROKEN)
                if ((retry or stale) and payload.can_resend() and
                        attempt < self.retries + (1 if stale else 0)):
                    attempt += 1
                    if not stale:
                        self._sleep(attempt, None)
                    continue
                why = "" if payload.can_resend() else " (its body cannot be sent again)"
                raise CofferConnectionError("%s %s: %s%s" % (method, url, e, why)) from None
            if resp.status in (429, 503) and attempt < self.retries and payload.can_resend():
                resp.read()
                self._finish(conn, resp)
                attempt += 1
                self._sleep(attempt, resp.headers.get("Retry-After"))
                continue
            if resp.status >= 400:
                raise self._error(conn, resp)
            if stream:
                return StreamResponse(self, conn, resp)
            try:
                content = resp.read()
            except socket.timeout as e:
                conn.close()
                raise CofferTimeout("%s %s: the answer stalled for %ss (%s)" % (
                    method, url, timeout, e)) from None
            except _BROKEN as e:
                conn.close()
                if retry and payload.can_resend() and attempt < self.retries:
                    attempt += 1
                    self._sleep(attempt, None)
                    continue
                raise CofferConnectionError("%s %s: the answer broke off: %s" % (
                    method, url, e)) from None
            self._finish(conn, resp)
            return Response(resp.status, resp.headers, content)

    def _finish(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        if resp.will_close:
            conn.close()
        else:
            self._release(conn)

    def _error(self, conn: http.client.HTTPConnection,
               resp: http.client.HTTPResponse) -> CofferError:
        try:
            raw = resp.read()
            self._finish(conn, resp)
        except (socket.timeout, *_BROKEN):
            conn.close()
            raw = b""
        try:
            parsed = jsonlib.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return error_from(resp.status, parsed, resp.headers.get("X-Request-Id"))

    def _sleep(self, attempt: int, retry_after: Optional[str]) -> None:
        delay = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        delay = delay / 2 + random.random() * delay / 2
        if retry_after and retry_after.strip().isdigit():
            delay = min(self.max_backoff, float(retry_after))
        time.sleep(delay)


def _query(q: Optional[Mapping[str, Any]]) -> str:
    if not q:
        return ""
    pairs: list[tuple[str, str]] = []
    for k, v in q.items():
        if v is None:
            continue
        for item in (v if isinstance(v, (list, tuple)) else [v]):
            if not isinstance(item, (str, int, float)):
                raise TypeError("query parameter %r must be a str or a number, not %s" % (
                    k, type(item).__name__))
            if isinstance(item, bool):
                item = "true" if item else "false"
            pairs.append((k, str(item)))
    return "?" + urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote) if pairs else ""


class EventStream:
    """Server-Sent Events as an iterator of Event; `close()` (or `with`) ends it. The
    stream ends by itself when the server ends it; comments (keep-alives) are skipped."""

    def __init__(self, resp: StreamResponse) -> None:
        self._resp = resp
        self.last_id: Optional[str] = None

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        etype, data, eid = "message", [], None
        while True:
            if self._resp.closed:
                raise StopIteration
            raw = self._resp.readline()
            if not raw:
                raise StopIteration
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line:
                if data or eid is not None:
                    if eid is not None:
                        self.last_id = eid
                    text = "\n".join(data)
                    try:
                        value: Any = jsonlib.loads(text) if text else None
                    except ValueError:
                        value = text
                    return Event(etype, value, eid)
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                etype = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                eid = value

    def close(self) -> None:
        self._resp.close()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
