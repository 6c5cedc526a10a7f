"""What the SDK tests share: a client of the cofferd named by $COFFER_URL/$COFFER_KEY,
fresh names, and a tiny TCP proxy that can break connections on purpose."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import os
import socket
import threading
import time
from typing import Any, Callable, Optional

import coffer

_n = itertools.count(1)
# how much slower than a plain build the server under test is (3 under ASan):
# every wait of these tests is stretched by it
SCALE = float(os.environ.get("COFFER_TEST_SCALE") or 1)


def client(url: Optional[str] = None, key: Optional[str] = None, **kw: object) -> coffer.Client:
    """A client of `url` (default $COFFER_URL) with `key` (default $COFFER_KEY). With
    COFFER_TEST_ASYNC=1 it is an AsyncCoffer seen through OverAsync (each call awaited on
    an event loop of its own thread), so the same tests run on the async client."""
    url, key = url or os.environ.get("COFFER_URL"), key or os.environ.get("COFFER_KEY")
    if not url or not key:
        raise RuntimeError("set COFFER_URL and COFFER_KEY to a running cofferd")
    if ASYNC:
        return OverAsync(_run(_make_async(url, key, kw)))  # type: ignore[return-value]
    return coffer.Client(url, key, **kw)  # type: ignore[arg-type]


ASYNC = os.environ.get("COFFER_TEST_ASYNC") == "1"


async def _make_async(url: str, key: str, kw: dict[str, object]) -> coffer.AsyncCoffer:
    # made on the loop it is used on (httpx.AsyncClient belongs to one loop)
    return coffer.AsyncCoffer(url, key, **kw)


_loop: Optional[asyncio.AbstractEventLoop] = None


def _run(coro: Any) -> Any:
    """Runs `coro` on the one background event loop and waits for its result."""
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        threading.Thread(target=_loop.run_forever, daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _loop).result()


# the SDK's objects that have methods to call (all else is data, as it is)
_HANDLES = (coffer.AsyncCoffer, coffer.Client, coffer.Keys, coffer.Volumes, coffer.Volume,
            coffer.Runtime, coffer.Agents, coffer.Agent, coffer.AgentFiles, coffer.AgentTools,
            coffer.RunHandle, coffer.Subject, coffer.Turns, coffer.Turn, coffer.Relay,
            coffer.RelaySession, coffer.Webhooks)


def _back(v: Any) -> Any:
    """What a call of the async client gave, as the sync client gives it: awaited, and
    a handle or a stream seen through OverAsync or _SyncStream."""
    if inspect.isawaitable(v) and not isinstance(v, coffer.AsyncItems):
        v = _run(_awaited(v))
    if isinstance(v, _HANDLES):
        return OverAsync(v)
    if hasattr(v, "__aiter__"):
        return _SyncStream(v)
    return v


async def _awaited(v: Any) -> Any:
    return await v


class OverAsync:
    """An AsyncCoffer object used synchronously: each call's coroutine is awaited on the
    background loop; what it returns is seen the same way."""

    def __init__(self, a: Any) -> None:
        object.__setattr__(self, "_a", a)

    def __getattr__(self, name: str) -> Any:
        v = getattr(self._a, name)
        if callable(v) and not isinstance(v, _HANDLES):
            return lambda *args, **kw: _back(v(*args, **kw))
        return _back(v)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return _back(self._a(*args, **kw))

    def close(self) -> Any:
        if isinstance(self._a, coffer.AsyncCoffer):
            return _run(self._a.aclose())
        return _back(self._a.close())

    def __enter__(self) -> "OverAsync":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._a)


class _SyncStream:
    """An async stream (download, events, items) used synchronously."""

    def __init__(self, a: Any) -> None:
        self._a = a
        self._it: Any = None

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        if self._it is None:
            self._it = self._a.__aiter__()

        async def one() -> Any:
            try:
                return True, await self._it.__anext__()
            except StopAsyncIteration:
                return False, None
        ok, v = _run(one())
        if not ok:
            raise StopIteration
        return v

    def __getattr__(self, name: str) -> Any:
        v = getattr(self._a, name)
        if callable(v):
            return lambda *args, **kw: _back(v(*args, **kw))
        return v

    def close(self) -> None:
        _run(self._a.aclose())

    def __enter__(self) -> "_SyncStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def name(prefix: str) -> str:
    """A name no other test (or run) uses."""
    return "%s-%d-%d-%d" % (prefix, os.getpid(), int(time.time() * 1000) % 10**8, next(_n))


def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.time() + timeout * SCALE
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


class Proxy:
    """Forwards 127.0.0.1:<port> to the cofferd of $COFFER_URL, one thread pair per
    connection. `plan` is a list, one entry per connection accepted, of what to do
    with it (connections past the list are forwarded as they are):
      ("cut_request", N)  forward N bytes of the request, then close both sides;
      ("cut_answer",)     forward the whole request, drop the answer, close;
      ("cut_answer", N)   the same after forwarding N bytes of the answer;
      ("status", CODE)    answer CODE with `Retry-After: 0` and close, forwarding nothing;
      ("silent",)         accept and never answer (sets `client_closed` when the client
                          closes the connection);
      ("drop_idle",)      forward one whole answer, then close the connection as a
                          server closes an idle kept-alive one (sets `dropped`);
      ("pass",)           forward.
    `connections` counts the connections accepted; `sent` the request bytes forwarded
    per connection."""

    def __init__(self, plan: Optional[list[tuple]] = None) -> None:
        url = os.environ["COFFER_URL"]
        host_port = url.split("//", 1)[1].split("/", 1)[0]
        host, port = host_port.rsplit(":", 1)
        self.target = (host, int(port))
        self.plan = list(plan or [])
        self.connections = 0
        self.sent: list[int] = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.closed = False
        self.held: list[socket.socket] = []
        self.dropped = threading.Event()
        self.client_closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                i = self.connections
                self.connections += 1
                self.sent.append(0)
                action = self.plan[i] if i < len(self.plan) else ("pass",)
            threading.Thread(target=self._serve, args=(c, i, action), daemon=True).start()

    def _serve(self, c: socket.socket, i: int, action: tuple) -> None:
        kind = action[0]
        if kind == "silent":
            self.held.append(c)
            try:
                while c.recv(65536):   # the request, never answered
                    pass
            except OSError:
                pass
            self.client_closed.set()   # the client gave up the connection
            return
        if kind == "status":
            _read_head(c)
            c.sendall(("HTTP/1.1 %d Busy\r\nRetry-After: 0\r\nContent-Length: 0\r\n"
                       "Connection: close\r\n\r\n" % action[1]).encode())
            c.close()
            return
        up = socket.create_connection(self.target)
        limit = action[1] if kind == "cut_request" else None
        done = threading.Event()

        def upstream() -> None:
            try:
                while True:
                    data = c.recv(65536)
                    if not data:
                        break
                    if limit is not None and self.sent[i] + len(data) >= limit:
                        up.sendall(data[:limit - self.sent[i]])
                        self.sent[i] = limit
                        break
                    up.sendall(data)
                    self.sent[i] += len(data)
            except OSError:
                pass
            if limit is not None:
                _close(c, up)
            done.set()

        def downstream() -> None:
            left = action[1] if kind == "cut_answer" and len(action) > 1 else None
            seen = b""
            try:
                while True:
                    data = up.recv(65536)
                    if not data:
                        break
                    if kind == "drop_idle":
                        c.sendall(data)
                        seen += data
                        if _answer_complete(seen):
                            break   # one whole answer given: now "idle", close it
                        continue
                    if kind == "cut_answer":
                        if not left:
                            break
                        c.sendall(data[:left])
                        left -= len(data[:left])
                        if not left:
                            break
                        continue
                    c.sendall(data)
            except OSError:
                pass
            _close(c, up)
            if kind == "drop_idle":
                self.dropped.set()

        threading.Thread(target=upstream, daemon=True).start()
        threading.Thread(target=downstream, daemon=True).start()

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        for c in self.held:
            c.close()


def _answer_complete(seen: bytes) -> bool:
    """Whether `seen` holds a whole answer with a Content-Length."""
    head, sep, body = seen.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return len(body) >= int(v.strip())
    return False


def _read_head(c: socket.socket) -> None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = c.recv(65536)
        if not data:
            return
        buf += data


def _close(*socks: socket.socket) -> None:
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()
