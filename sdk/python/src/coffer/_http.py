"""The one HTTP transport: kept-alive connections, retries, bodies streamed both ways.

On httpx (a pool of kept-alive connections): request bodies are streamed from files and
iterators, answers are read in chunks as they arrive.

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

import asyncio
import io
import json as jsonlib
import os
import random
import socket
import time
import urllib.parse
from typing import (IO, Any, AsyncIterable, AsyncIterator, Awaitable, Callable, Generator, Generic,
                    Iterable, Iterator, Mapping, Optional, TypeVar, Union)

import httpx

from .errors import CofferConnectionError, CofferError, CofferTimeout, error_from
from .models import Event

Body = Union[None, bytes, bytearray, memoryview, str, os.PathLike[str], IO[bytes],
             Iterable[bytes], AsyncIterable[bytes]]

CHUNK = 256 * 1024
IDLE_REUSE = 20.0   # seconds: cofferd closes a kept-alive connection idle for 30 s
_IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}


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
    return "/".join(_dots(s) for s in urllib.parse.quote(path, safe="/").split("/"))


def _dots(seg: str) -> str:
    """A `.` or `..` segment percent-encoded: httpx would resolve it away, and the server
    is the one to refuse it (400 naming the segment)."""
    return seg.replace(".", "%2E") if seg in (".", "..") else seg


def quote_seg(seg: str) -> str:
    """Percent-encodes one URL segment (a `/` in it too)."""
    need_str("id", "id", seg)
    return _dots(urllib.parse.quote(seg, safe=""))


class _Payload:
    """A request body prepared for sending, and sending again on a retry."""

    def __init__(self, body: Body) -> None:
        self.length: Optional[int] = None
        self.replayable = True
        self.started = False
        self._file: Optional[IO[bytes]] = None
        self._owned = False
        self._start = 0
        self._iter: Union[None, Iterable[bytes], AsyncIterable[bytes]] = None
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
        elif isinstance(body, Mapping) or not (hasattr(body, "__iter__") or
                                               hasattr(body, "__aiter__")):
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

    def content(self) -> Union[None, bytes, Iterator[bytes]]:
        """What is sent for this attempt: the bytes, or chunks read as they are sent (a
        file is sought back to where it started on a retry)."""
        if self._file is not None:
            if self.started:
                self._file.seek(self._start)
            self.started = True
            return self._file_chunks(self._file)
        if self._iter is not None:
            if not isinstance(self._iter, Iterable):
                raise TypeError("body: an async iterator needs the async client (AsyncCoffer)")
            return self._chunks(iter(self._iter))
        return self._bytes

    def acontent(self) -> Union[None, bytes, AsyncIterator[bytes]]:
        """`content()` for the async client: an async iterator is streamed as it gives
        chunks (a file or a plain iterator is read a chunk at a time between them)."""
        if self._iter is not None and hasattr(self._iter, "__aiter__"):
            return self._achunks(self._iter.__aiter__())
        sync = self.content()
        return sync if sync is None or isinstance(sync, bytes) else _to_async(sync)

    async def _achunks(self, it: AsyncIterator[Any]) -> AsyncIterator[bytes]:
        async for chunk in it:
            data = self._chunk(chunk)
            if data:
                yield data

    def _file_chunks(self, f: IO[bytes]) -> Iterator[bytes]:
        left = self.length
        while left is None or left > 0:
            data = f.read(CHUNK if left is None else min(CHUNK, left))
            if isinstance(data, str):
                data = data.encode("utf-8")
            if not data:
                return
            if left is not None:
                left -= len(data)
            yield data

    def _chunk(self, chunk: Any) -> bytes:
        """One chunk an iterator gave, checked."""
        self.started = True
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError("body: an iterator must give bytes, not %s" % type(chunk).__name__)
        return bytes(chunk)

    def _chunks(self, it: Iterator[Any]) -> Iterator[bytes]:
        for chunk in it:
            data = self._chunk(chunk)
            if data:
                yield data

    def can_resend(self) -> bool:
        return self.replayable or not self.started

    def close(self) -> None:
        if self._owned and self._file is not None:
            self._file.close()


async def _to_async(it: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in it:
        yield chunk


class Response:
    """An answer read whole: `status`, `headers`, `body` (bytes), `json()`."""

    def __init__(self, status: int, headers: httpx.Headers, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def header(self, name: str) -> Optional[str]:
        v: Optional[str] = self.headers.get(name)
        return v

    def json(self) -> Any:
        return jsonlib.loads(self.body) if self.body else {}


class _Reading:
    """What StreamResponse shares with the async one: a buffer over the answer's
    chunks, cut into reads of at most n bytes or into lines."""

    def __init__(self, resp: httpx.Response) -> None:
        self._resp = resp
        self.status = resp.status_code
        self.headers = resp.headers
        self.closed = False
        self._buf = b""

    def header(self, name: str) -> Optional[str]:
        v: Optional[str] = self.headers.get(name)
        return v

    def _take(self, n: int) -> bytes:
        data, self._buf = (self._buf, b"") if n < 0 else (self._buf[:n], self._buf[n:])
        return data

    def _line(self) -> Optional[bytes]:
        """The first line of the buffer, or None until a whole one is there."""
        i = self._buf.find(b"\n")
        if i < 0:
            return None
        line, self._buf = self._buf[:i + 1], self._buf[i + 1:]
        return line


def _read_error(e: Exception) -> CofferError:
    if isinstance(e, httpx.TimeoutException):
        return CofferTimeout("no data within the timeout: %s" % e)
    return CofferConnectionError("the connection broke while reading: %s" % e)


class StreamResponse(_Reading):
    """An answer whose body is read as it arrives; close it (or use `with`) to give the
    connection back. Iterating yields chunks of bytes."""

    def __init__(self, resp: httpx.Response) -> None:
        super().__init__(resp)
        self._chunks = resp.iter_raw()

    def _more(self) -> bool:
        """Adds the next chunk to the buffer; False at the end (the answer is closed)."""
        if self.closed:
            return False
        try:
            chunk = next(self._chunks, b"")
        except httpx.TransportError as e:
            self.close()
            raise _read_error(e) from None
        if not chunk:
            self.close()
            return False
        self._buf += chunk
        return True

    def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes (all that is left when n < 0); b"" at the end."""
        while (n < 0 or len(self._buf) < n) and self._more():
            pass
        return self._take(n)

    def readline(self) -> bytes:
        while True:
            line = self._line()
            if line is not None:
                return line
            if not self._more():
                return self._take(-1)

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
        if not self.closed:
            self.closed = True
            self._resp.close()

    def __enter__(self) -> "StreamResponse":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Request:
    """One call as both transports send it, and what decides its retries."""

    def __init__(self, t: "_Base", method: str, path: str, query: Optional[Mapping[str, Any]],
                 json: Any, body: Body, headers: Optional[Mapping[str, str]],
                 timeout: Optional[float], stream: bool, retry: Optional[bool]) -> None:
        hdrs = {"Authorization": "Bearer " + t.key, "User-Agent": t.user_agent,
                "Accept-Encoding": "identity"}
        if json is not None:
            body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"))
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        self.retry = retry if retry is not None else (method in _IDEMPOTENT or any(
            k.lower() == "idempotency-key" for k in hdrs))
        self.method, self.stream, self.retries, self.attempt = method, stream, t.retries, 0
        self.url = t.url + path + _query(query)
        self.what = "%s %s" % (method, t.base + path)
        self.timeout = httpx.Timeout(timeout if timeout is not None else
                                     t.stream_timeout if stream else t.timeout)
        self.payload = _Payload(body)
        if self.payload.length is not None and method not in ("GET", "HEAD"):
            hdrs["Content-Length"] = str(self.payload.length)
        elif body is None and method in ("POST", "PUT", "PATCH"):
            hdrs["Content-Length"] = "0"
        self.headers = hdrs
        self._t = t

    def after_break(self, e: Exception, reading: bool = False) -> float:
        """The delay before trying again after a connection that failed or broke (before
        the answer, or `reading` it); raises the error when it may not be tried again."""
        if (not isinstance(e, httpx.TimeoutException) and self.retry and
                self.payload.can_resend() and self.attempt < self.retries):
            self.attempt += 1
            return self._t.delay(self.attempt, None)
        raise self.broken(e, reading) from None

    def broken(self, e: Exception, reading: bool = False) -> CofferError:
        if isinstance(e, httpx.TimeoutException):
            return CofferTimeout("%s: %s within %ss (%s)" % (
                self.what, "the answer stalled" if reading else "no answer",
                self.timeout.read, e))
        why = "" if self.payload.can_resend() else " (its body cannot be sent again)"
        return CofferConnectionError("%s: %s%s%s" % (
            self.what, "the answer broke off: " if reading else "", e, why))

    def again_after_status(self, resp: httpx.Response) -> Optional[float]:
        """The delay before trying again after a 429 or 503, else None."""
        if (resp.status_code in (429, 503) and self.attempt < self.retries and
                self.payload.can_resend()):
            self.attempt += 1
            return self._t.delay(self.attempt, resp.headers.get("Retry-After"))
        return None

    @staticmethod
    def error(resp: httpx.Response, raw: bytes) -> CofferError:
        try:
            parsed = jsonlib.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return error_from(resp.status_code, parsed, resp.headers.get("X-Request-Id"))


class _Base:
    """What both transports share: the server, the key and the retry settings."""

    def __init__(self, url: str, key: str, timeout: float = 30.0,
                 stream_timeout: float = 60.0, retries: int = 4, backoff: float = 0.25,
                 max_backoff: float = 8.0, user_agent: str = "coffer-python") -> None:
        u = urllib.parse.urlsplit(url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("url %r: expected http://HOST:PORT or https://..." % url)
        self.url = url.rstrip("/")
        self.base = u.path
        self.key = key
        self.timeout, self.stream_timeout = timeout, stream_timeout
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.user_agent = user_agent
        # a kept-alive connection is dropped after IDLE_REUSE idle seconds, before
        # cofferd closes it; proxies of the environment are not used (as before httpx)
        self._limits = httpx.Limits(max_keepalive_connections=16, keepalive_expiry=IDLE_REUSE)

    def delay(self, attempt: int, retry_after: Optional[str]) -> float:
        delay = min(self.max_backoff, self.backoff * (2.0 ** (attempt - 1)))
        delay = delay / 2 + random.random() * delay / 2
        if retry_after and retry_after.strip().isdigit():
            delay = min(self.max_backoff, float(retry_after))
        return delay


def _nodelay_transport(limits: httpx.Limits) -> httpx.HTTPTransport:
    """httpx's sync transport with TCP_NODELAY on its sockets, as its async one has: h11
    sends a request's head and its body in two writes, and without it the body waits for
    the server's delayed ACK of the head (40 ms a small PUT, measured: bench/results.md).
    Proxies of the environment are not used (as before httpx)."""
    opt = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    newer: dict[str, Any] = {"socket_options": opt}
    try:
        return httpx.HTTPTransport(limits=limits, trust_env=False, **newer)
    except TypeError:   # httpx < 0.24 (Debian 12's 0.23) takes no socket_options
        from httpcore.backends.sync import SyncBackend

        class NoDelay(SyncBackend):
            def connect_tcp(self, *a: Any, **kw: Any) -> Any:
                stream = super().connect_tcp(*a, **kw)
                stream.get_extra_info("socket").setsockopt(*opt[0])
                return stream

        t = httpx.HTTPTransport(limits=limits, trust_env=False)
        setattr(t._pool, "_network_backend", NoDelay())
        return t


class _Sync(_Base):
    """The sync transport's I/O (Transport below adds how methods use it)."""

    def __init__(self, url: str, key: str, **kw: Any) -> None:
        super().__init__(url, key, **kw)
        self._client = httpx.Client(transport=_nodelay_transport(self._limits))

    def close(self) -> None:
        """Closes the connections."""
        self._client.close()

    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                json: Any = None, body: Body = None,
                headers: Optional[Mapping[str, str]] = None,
                timeout: Optional[float] = None, stream: bool = False,
                retry: Optional[bool] = None) -> Any:
        """Sends one request (retrying as the module says) and returns a Response, or a
        StreamResponse when `stream`; an error answer raises its CofferError.
        `retry` forces whether a broken connection may be retried (default: by method
        and Idempotency-Key)."""
        req = _Request(self, method, path, query, json, body, headers, timeout, stream, retry)
        try:
            return self._send(req)
        finally:
            req.payload.close()

    def _send(self, req: _Request) -> Any:
        while True:
            try:
                resp = self._client.send(self._client.build_request(
                    req.method, req.url, headers=req.headers, content=req.payload.content(),
                    timeout=req.timeout), stream=True)
            except httpx.TransportError as e:
                time.sleep(req.after_break(e))
                continue
            delay = req.again_after_status(resp)
            if delay is not None:
                resp.close()
                time.sleep(delay)
                continue
            if resp.status_code >= 400:
                try:
                    raw = resp.read()
                except httpx.TransportError:
                    raw = b""
                resp.close()
                raise req.error(resp, raw)
            if req.stream:
                return StreamResponse(resp)
            try:
                content = resp.read()
            except httpx.TransportError as e:
                resp.close()
                time.sleep(req.after_break(e, reading=True))
                continue
            return Response(resp.status_code, resp.headers, content)


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


S = TypeVar("S", bound="AsyncClosing")


class AsyncClosing:
    """`async with`, and `close()` as well as `aclose()`, for the async streams."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        await self.aclose()

    async def __aenter__(self: S) -> S:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


async def read_chunks(read: Callable[[int], Awaitable[bytes]],
                      size: int = CHUNK) -> AsyncIterator[bytes]:
    """The chunks of an async stream's `read(size)`, up to its end."""
    while True:
        data = await read(size)
        if not data:
            return
        yield data


class AsyncStreamResponse(_Reading, AsyncClosing):
    """StreamResponse for the async client: `await read(n)`, `async for` chunks,
    `await aclose()` (or `async with`)."""

    def __init__(self, resp: httpx.Response) -> None:
        super().__init__(resp)
        self._chunks = resp.aiter_raw()

    async def _more(self) -> bool:
        if self.closed:
            return False
        try:
            chunk = await self._chunks.__anext__()
        except StopAsyncIteration:
            chunk = b""
        except httpx.TransportError as e:
            await self.aclose()
            raise _read_error(e) from None
        if not chunk:
            await self.aclose()
            return False
        self._buf += chunk
        return True

    async def read(self, n: int = -1) -> bytes:
        while (n < 0 or len(self._buf) < n) and await self._more():
            pass
        return self._take(n)

    async def readline(self) -> bytes:
        while True:
            line = self._line()
            if line is not None:
                return line
            if not await self._more():
                return self._take(-1)

    def iter_bytes(self, chunk_size: int = CHUNK) -> AsyncIterator[bytes]:
        return read_chunks(self.read, chunk_size)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.iter_bytes()

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await self._resp.aclose()


T = TypeVar("T")


class Req:
    """A request as a flow (below) yields it: Transport.request's arguments."""

    def __init__(self, method: str, path: str, **kw: Any) -> None:
        self.method, self.path, self.kw = method, path, kw


class Item(Generic[T]):
    """What an iterating flow gives its caller (a listed volume, a change)."""

    def __init__(self, value: T) -> None:
        self.value = value


# A method of the SDK that needs more than one request is written once, as a flow: a
# generator that yields each Req and is sent back its answer (or thrown its error), and
# returns the method's result. Transport.run drives it on the sync client, and
# AsyncTransport.run on the async one, which is what lets the handles (Volume, Agent...)
# serve both clients with one body per method.
Flow = Generator[Req, Any, T]
Items = Generator[Union[Req, Item[T]], Any, None]


def one(req: Req, into: Optional[Callable[[Any], T]] = None,
        raw: Optional[Callable[[Any], T]] = None) -> Flow[T]:
    """The flow of one request: its answer's JSON given to `into`, or the answer itself
    (Response or StreamResponse) to `raw`."""
    resp = yield req
    if raw is not None:
        return raw(resp)
    assert into is not None
    return into(resp.json())


def obj(j: Any) -> dict[str, Any]:
    """`into` of a call whose result is the answer's JSON object as it is."""
    return dict(j)


def then(effect: Callable[[Any], object], result: T) -> Callable[[Any], T]:
    """`into` of a call that updates a handle (`effect`) and answers `result`."""
    def into(j: Any) -> T:
        effect(j)
        return result
    return into


class _Step(Generic[T]):
    """Drives a flow for either transport: `next()` sends it the answer (`sent`) or the
    error (`err`) of its last request and takes its next one (`req`); False once it
    returned (`result`)."""

    def __init__(self, flow: Flow[T]) -> None:
        self._flow = flow
        self.sent: Any = None
        self.err: Optional[Exception] = None
        self.req = Req("", "")
        self.result: T

    def next(self) -> bool:
        try:
            self.req = (self._flow.throw(self.err) if self.err is not None
                        else self._flow.send(self.sent))
        except StopIteration as stop:
            self.result = stop.value
            return False
        self.sent, self.err = None, None
        return True


def none(j: Any) -> None:
    """`into` of a call whose answer is not the method's result."""
    return None


class Transport(_Sync):
    """Sends requests to one cofferd with one key; thread-safe (httpx's pool).

    `call` and `run` return the result: the handles' methods return what these do."""

    def call(self, method: str, path: str, into: Callable[[Any], T], **kw: Any) -> T:
        """One request; its JSON answer made into the result by `into`."""
        return self.run(one(Req(method, path, **kw), into))

    def call_raw(self, method: str, path: str, raw: Callable[[Any], T], **kw: Any) -> T:
        """One request; `raw` makes the result from the answer itself."""
        return self.run(one(Req(method, path, **kw), raw=raw))

    def run(self, flow: Flow[T]) -> T:
        step = _Step(flow)
        while step.next():
            try:
                step.sent = self.request(step.req.method, step.req.path, **step.req.kw)
            except Exception as e:  # given to the flow, which may handle it
                step.err = e
        return step.result

    def iterate(self, flow: Items[T]) -> Iterator[T]:
        """The items of an iterating flow (pages read as they are needed)."""
        sent: Any = None
        while True:
            try:
                step = flow.send(sent)
            except StopIteration:
                return
            sent = None
            if isinstance(step, Item):
                yield step.value
            else:
                sent = self.request(step.method, step.path, **step.kw)


class ForSubject(Transport):
    """A transport whose every request says which subject it acts for (`X-Subject`):
    what `agent.for_user(S)` sends through, on either client."""

    def __init__(self, t: Transport, subject: str) -> None:  # no super(): a view of t
        self._t, self.subject = t, subject
        self.timeout, self.stream_timeout, self.retries = t.timeout, t.stream_timeout, t.retries

    def _with(self, flow: Flow[T]) -> Flow[T]:
        """`flow`, its requests sent with the header."""
        try:
            req = next(flow)
            while True:
                if isinstance(req, Req):
                    req.kw["headers"] = {"X-Subject": self.subject,
                                         **(req.kw.get("headers") or {})}
                try:
                    sent = yield req
                except Exception as e:
                    req = flow.throw(e)
                else:
                    req = flow.send(sent)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    def request(self, method: str, path: str, **kw: Any) -> Any:
        kw["headers"] = {"X-Subject": self.subject, **(kw.get("headers") or {})}
        return self._t.request(method, path, **kw)

    def run(self, flow: Flow[T]) -> T:
        return self._t.run(self._with(flow))

    def iterate(self, flow: Items[T]) -> Iterator[T]:
        return self._t.iterate(self._with(flow))  # type: ignore[arg-type]

    def close(self) -> None:
        return None


class AsyncTransport(_Base):
    """The transport of AsyncCoffer, on httpx.AsyncClient: what Transport does, awaited.
    Its `call` and `run` return coroutines, so the handles' methods do; `iterate` an
    async iterator. Cancelling the awaiting task cancels the request (its connection is
    closed)."""

    def __init__(self, url: str, key: str, **kw: Any) -> None:
        super().__init__(url, key, **kw)
        self._client = httpx.AsyncClient(limits=self._limits, trust_env=False)

    async def close(self) -> None:
        await self._client.aclose()

    async def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                      json: Any = None, body: Body = None,
                      headers: Optional[Mapping[str, str]] = None,
                      timeout: Optional[float] = None, stream: bool = False,
                      retry: Optional[bool] = None) -> Any:
        req = _Request(self, method, path, query, json, body, headers, timeout, stream, retry)
        try:
            return await self._send(req)
        finally:
            req.payload.close()

    async def _send(self, req: _Request) -> Any:
        while True:
            try:
                resp = await self._client.send(self._client.build_request(
                    req.method, req.url, headers=req.headers, content=req.payload.acontent(),
                    timeout=req.timeout), stream=True)
            except httpx.TransportError as e:
                await asyncio.sleep(req.after_break(e))
                continue
            delay = req.again_after_status(resp)
            if delay is not None:
                await resp.aclose()
                await asyncio.sleep(delay)
                continue
            if resp.status_code >= 400:
                try:
                    raw = await resp.aread()
                except httpx.TransportError:
                    raw = b""
                await resp.aclose()
                raise req.error(resp, raw)
            if req.stream:
                return AsyncStreamResponse(resp)
            try:
                content = await resp.aread()
            except httpx.TransportError as e:
                await resp.aclose()
                await asyncio.sleep(req.after_break(e, reading=True))
                continue
            return Response(resp.status_code, resp.headers, content)

    async def call(self, method: str, path: str, into: Callable[[Any], T], **kw: Any) -> T:
        return await self.run(one(Req(method, path, **kw), into))

    async def call_raw(self, method: str, path: str, raw: Callable[[Any], T], **kw: Any) -> T:
        return await self.run(one(Req(method, path, **kw), raw=raw))

    async def run(self, flow: Flow[T]) -> T:
        step = _Step(flow)
        while step.next():
            try:
                step.sent = await self.request(step.req.method, step.req.path, **step.req.kw)
            except Exception as e:
                step.err = e
        return step.result

    def iterate(self, flow: Items[T]) -> "AsyncItems[T]":
        return AsyncItems(self, flow)


class AsyncItems(Generic[T]):
    """An iterating flow on the async client: `async for x in vol.follow(...)` (awaiting
    it first, `async for x in await ...`, gives the same)."""

    def __init__(self, t: AsyncTransport, flow: Items[T]) -> None:
        self._t, self._flow = t, flow

    def __aiter__(self) -> "AsyncItems[T]":
        return self

    async def __anext__(self) -> T:
        sent: Any = None
        while True:
            try:
                step = self._flow.send(sent)
            except StopIteration:
                raise StopAsyncIteration from None
            if isinstance(step, Item):
                return step.value
            sent = await self._t.request(step.method, step.path, **step.kw)

    def __await__(self) -> Generator[Any, None, "AsyncItems[T]"]:
        if False:  # pragma: no cover (makes this a generator)
            yield
        return self

    async def aclose(self) -> None:
        self._flow.close()


class _SSE:
    """Server-Sent Events parsed from lines, for both streams: `line(raw)` gives an
    Event when one ends; comments (keep-alives) are skipped."""

    def __init__(self) -> None:
        self.last_id: Optional[str] = None
        self._reset()

    def _reset(self) -> None:
        self._type, self._data, self._id = "message", [], None  # type: tuple[str, list[str], Optional[str]]

    def line(self, raw: bytes) -> Optional[Event]:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if not self._data and self._id is None:
                return None
            if self._id is not None:
                self.last_id = self._id
            text = "\n".join(self._data)
            try:
                value: Any = jsonlib.loads(text) if text else None
            except ValueError:
                value = text
            ev = Event(self._type, value, self._id)
            self._reset()
            return ev
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._type = value
        elif field == "data":
            self._data.append(value)
        elif field == "id":
            self._id = value
        return None


class EventStream(_SSE):
    """Server-Sent Events as an iterator of Event; `close()` (or `with`) ends it. The
    stream ends by itself when the server ends it."""

    def __init__(self, resp: StreamResponse) -> None:
        super().__init__()
        self._resp = resp

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        while not self._resp.closed:
            raw = self._resp.readline()
            if not raw:
                break
            ev = self.line(raw)
            if ev is not None:
                return ev
        raise StopIteration

    def close(self) -> None:
        self._resp.close()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncEventStream(_SSE, AsyncClosing):
    """EventStream for the async client: `async for event in ...`, `await aclose()`."""

    def __init__(self, resp: AsyncStreamResponse) -> None:
        super().__init__()
        self._resp = resp

    def __aiter__(self) -> "AsyncEventStream":
        return self

    async def __anext__(self) -> Event:
        while not self._resp.closed:
            raw = await self._resp.readline()
            if not raw:
                break
            ev = self.line(raw)
            if ev is not None:
                return ev
        raise StopAsyncIteration

    async def aclose(self) -> None:
        await self._resp.aclose()


def events(resp: Any) -> EventStream:
    """The event stream of a streamed answer, of the client it came from (an
    AsyncEventStream for AsyncCoffer's)."""
    if isinstance(resp, AsyncStreamResponse):
        return AsyncEventStream(resp)  # type: ignore[return-value]
    return EventStream(resp)
