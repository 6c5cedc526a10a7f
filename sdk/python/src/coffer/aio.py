"""`AsyncCoffer`: the same client for asyncio code.

    async with AsyncCoffer(url, key) as agents:
        agent = await agents.upsert("support")
        run = await agent.run("What changed in Q3?", files=[Path("q3.pdf")])
        async for chunk in await agent.files.open("/workspace/out/big.bin"): ...

Every method of the synchronous client is here under the same name, awaited: each call
runs the synchronous one in a worker thread (`asyncio.to_thread`), so the event loop never
blocks on the network, and what it returns is wrapped again: a handle (`Agent`,
`Volume`, `agent.files`, a run...) gives async methods, an iterator or a stream
(`events()`, `follow()`, `open()`, `archive()`) is an async iterator, read a chunk at a
time. Records (`FileData`, `FileInfo`, ...) come back as they are. Attributes that are
data (`id`, `info`, `message`, `files`, `raw`) read as they are.

Cancelling an awaited call stops waiting for it at once; the request itself goes on in
its thread to its end (or its timeout) and its answer is dropped. An upload given an
async iterator is gathered first: give bytes, a path or a file object to stream it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, AsyncIterator, Iterator, Optional

from . import _files, agents, client, relay, subjects, turns, volumes
from ._http import EventStream, StreamResponse

# the classes whose objects are handles: their methods become awaitable
_HANDLES: tuple[type, ...] = (
    client.Client, client.Keys, volumes.Volumes, volumes.Volume, volumes.Runtime,
    agents.Agents, agents.Agent, agents.AgentFiles, agents.AgentTools, agents.RunHandle,
    subjects.Subject, turns.Turns, turns.Turn, relay.Relay, relay.RelaySession,
)
# methods that make a handle without a request: called at once, not awaited
# (`agents.runtime.volume(id).write(...)` as seed 001 writes it)
_LOCAL = {(client.Client, "volume"), (client.Client, "agent"), (volumes.Runtime, "volume"),
          (agents.Agent, "subject")}
# streams: iterated a chunk (or an event) at a time in the worker thread
_STREAMS: tuple[type, ...] = (_files.Download, StreamResponse, EventStream)


def _wrap(value: Any) -> Any:
    if isinstance(value, _STREAMS):
        return AsyncStream(value)
    if isinstance(value, _HANDLES):
        return AsyncHandle(value)
    if inspect.isgenerator(value) or (isinstance(value, Iterator) and
                                      not isinstance(value, (str, bytes, list, tuple, dict))):
        return AsyncStream(value)
    return value


class AsyncHandle:
    """An async view of a handle of the synchronous client: the same methods, awaited."""

    def __init__(self, sync: Any) -> None:
        object.__setattr__(self, "_sync", sync)

    @property
    def sync(self) -> Any:
        """The synchronous object underneath."""
        return self._sync

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._sync, name)
        if any(isinstance(self._sync, k) and name == n for k, n in _LOCAL):
            local = value

            def make(*args: Any, **kw: Any) -> Any:
                return _wrap(local(*args, **kw))
            return make
        if isinstance(value, _HANDLES):
            return AsyncHandle(value)
        if inspect.ismethod(value):
            fn = value

            @functools.wraps(fn)
            async def call(*args: Any, **kw: Any) -> Any:
                args = tuple([await _gather(a) for a in args])
                return _wrap(await asyncio.to_thread(fn, *args, **kw))
            return call
        return _wrap(value)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        """`volumes(id)`, `agents(id)`: a handle, at once (no request)."""
        return _wrap(self._sync(*args, **kw))

    def __repr__(self) -> str:
        return "Async%r" % (self._sync,)


async def _gather(a: Any) -> Any:
    """An async iterator of bytes given as a body is read whole first (the synchronous
    transport cannot pull from the event loop)."""
    if hasattr(a, "__aiter__"):
        return b"".join([bytes(c) async for c in a])
    return a


class AsyncStream:
    """An async iterator over a synchronous one (a download's chunks, events, changes);
    `aclose()` (or `async with`) closes it. Other methods (`save_to`, `read`) are awaited."""

    def __init__(self, sync: Any) -> None:
        self._sync = sync
        self._it: Optional[Iterator[Any]] = None

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._sync, name)
        if inspect.ismethod(value):
            async def call(*args: Any, **kw: Any) -> Any:
                return _wrap(await asyncio.to_thread(value, *args, **kw))
            return call
        return value

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        if self._it is None:
            self._it = iter(self._sync)
        done = object()
        item = await asyncio.to_thread(next, self._it, done)
        if item is done:
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        close = getattr(self._sync, "close", None)
        if close is not None:
            await asyncio.to_thread(close)

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class AsyncCoffer(AsyncHandle):
    """The client for asyncio: `AsyncCoffer(url, key, ...)` takes what `Coffer` takes;
    `async with` closes its connections at the end."""

    def __init__(self, url: Optional[str] = None, key: Optional[str] = None, **kw: Any) -> None:
        super().__init__(client.Client(url, key, **kw))

    async def aclose(self) -> None:
        await asyncio.to_thread(self._sync.close)

    async def __aenter__(self) -> "AsyncCoffer":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
