"""`AsyncCoffer`: the client for asyncio, on httpx.AsyncClient.

    async with AsyncCoffer(url, key) as agents:
        agent = await agents.upsert("support")
        run = await agent.run("What changed in Q3?", files=[Path("q3.pdf")])
        async for chunk in await agent.files.open("/workspace/out/big.bin"): ...

The handles are the synchronous client's own classes (`Volume`, `Agent`, `agent.files`,
a run...) over an AsyncTransport: every method is there under the same name and checks
its arguments at once, and what does a request returns a coroutine to await. A method
that makes a handle without a request (`volume(id)`, `agent(id)`, `runtime.volume(id)`,
`agent.subject(id)`) is not awaited. Streams are async: a download (`open()`) is an
AsyncDownload (`async for chunk in d`, `await d.read()`, `await d.save_to(path)`),
`events()` and `call_stream()` AsyncEventStreams, `archive()` an AsyncStreamResponse, and
`iter()`, `iter_files()`, `iter_history()` and `follow()` async iterators. An upload takes an async
iterable of bytes too, streamed as it gives chunks. Cancelling the task that awaits a call
cancels its request (the connection is closed, not left to finish).

Types: the handles are typed for the synchronous client; on AsyncCoffer its attributes
are `Any`.
"""

from __future__ import annotations

from typing import Any, Optional, cast

from . import agents, client, volumes
from ._http import AsyncTransport

# methods that make a handle without a request: called, not awaited
# (`agents.runtime.volume(id).write(...)` as seed 001 writes it)
_LOCAL = {(client.Client, "volume"), (client.Client, "agent"), (volumes.Runtime, "volume"),
          (agents.Agent, "subject"), (agents.Agent, "for_user")}


class _AsyncClient(client.Client):
    _transport = AsyncTransport  # type: ignore[assignment]


class AsyncCoffer:
    """The client for asyncio: `AsyncCoffer(url, key, ...)` takes what `Coffer` takes and
    has its attributes and methods (`volumes`, `agents`, `runtime`, `upsert`, `volume`,
    `webhooks`, `health`, `request`...); `async with` (or `await aclose()`) closes its connections."""

    volumes: Any
    agents: Any
    turns: Any
    relay: Any
    keys: Any
    runtime: Any
    webhooks: Any

    def __init__(self, url: Optional[str] = None, key: Optional[str] = None, **kw: Any) -> None:
        self._client = _AsyncClient(url, key, **kw)
        self.url = self._client.url
        c = self._client
        self.volumes, self.agents, self.turns = c.volumes, c.agents, c.turns
        self.relay, self.keys, self.runtime = c.relay, c.keys, c.runtime
        self.webhooks = c.webhooks

    @property
    def sync(self) -> client.Client:
        """The Client underneath (over the async transport: its calls are awaited)."""
        return self._client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def aclose(self) -> None:
        await cast(AsyncTransport, self._client._t).close()

    async def __aenter__(self) -> "AsyncCoffer":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return "AsyncCoffer(%r)" % self.url
