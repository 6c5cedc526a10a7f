"""Downloads shared by every kind of file (volume, agent, subject, turn, link)."""

from __future__ import annotations

import os
from typing import IO, Any, AsyncIterator, Callable, Iterator, Mapping, Optional, Union

from ._http import (CHUNK, AsyncClosing, AsyncStreamResponse, read_chunks, Response,
                    StreamResponse, Transport)
from .errors import CofferConnectionError, CofferTimeout
from .models import FileData


def etag_version(etag: Optional[str]) -> Optional[int]:
    """`"7"` (or `W/"7"`) -> 7; None when absent or not a number."""
    if not etag:
        return None
    e = etag.strip()
    if e.startswith("W/"):
        e = e[2:]
    e = e.strip('"')
    return int(e) if e.isdigit() else None


class _Opened:
    """A download's headers and where it stands, for both clients' downloads.

    A connection that breaks mid-way is resumed where it stopped (`Range` from the
    bytes read, `If-Range` on the version), up to the client's `retries`; when the
    file changed meanwhile the download raises CofferConnectionError instead of
    joining two versions."""

    def __init__(self, resp: Any, reopen: Optional[Callable[[int, str], Any]],
                 retries: int) -> None:
        self._resp = resp
        self.status: int = resp.status
        self.headers = resp.headers
        self.content_type: str = resp.header("Content-Type") or "application/octet-stream"
        self.etag: Optional[str] = resp.header("ETag")
        self.version = etag_version(self.etag)
        seq = resp.header("X-Volume-Seq")
        self.seq: Optional[int] = int(seq) if seq and seq.isdigit() else None
        length = resp.header("Content-Length")
        self.size: Optional[int] = int(length) if length and length.isdigit() else None
        self.content_range: Optional[str] = resp.header("Content-Range")
        self.position = 0
        self.resumed = 0
        self._reopen = reopen if (self.etag and resp.status == 200) else None
        self._retries = retries

    def _may_resume(self, e: Exception) -> bool:
        """Whether a read that raised `e` is resumed (else `e` is raised)."""
        if isinstance(e, CofferTimeout) or not isinstance(e, CofferConnectionError):
            return False
        if self._reopen is None or self.resumed >= self._retries:
            return False
        self.resumed += 1
        return True

    def _resumed(self, resp: Any) -> Any:
        """The reopened answer, if it goes on with the same version."""
        if resp.status != 206:
            raise CofferConnectionError(
                "the download broke after %d bytes and the file changed since (version "
                "%s is no longer current): read it again" % (self.position, self.version))
        self._resp = resp
        return resp

    def _reopen_args(self) -> tuple[int, str]:
        assert self.etag is not None
        return self.position, self.etag


class Download(_Opened):
    """A file being downloaded: its headers at once, its bytes as they arrive.
    Iterate for chunks, `read()`, or `save_to(path or file)`; close it (or use `with`).
    Resumed as _Opened says."""

    def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes (all that is left when n < 0); b"" at the end."""
        if n < 0:
            return b"".join(iter(lambda: self.read(CHUNK), b""))
        while True:
            try:
                data: bytes = self._resp.read(n)
            except Exception as e:
                if not self._may_resume(e):
                    raise
                assert self._reopen is not None
                resp = self._reopen(*self._reopen_args())
                try:
                    self._resumed(resp)
                except CofferConnectionError:
                    resp.close()
                    raise
                continue
            self.position += len(data)
            return data

    def __iter__(self) -> Iterator[bytes]:
        return iter(lambda: self.read(CHUNK), b"")

    def save_to(self, dest: Union[str, "os.PathLike[str]", IO[bytes]]) -> int:
        """Writes the bytes to a path or a binary file as they arrive; returns how many."""
        n = 0
        if isinstance(dest, (str, os.PathLike)):
            with open(dest, "wb") as f:
                return self.save_to(f)
        for chunk in self:
            dest.write(chunk)
            n += len(chunk)
        return n

    def close(self) -> None:
        self._resp.close()

    def __enter__(self) -> "Download":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncDownload(_Opened, AsyncClosing):
    """Download for the async client: `await read(n)`, `async for chunk in ...`,
    `await save_to(path or file)`, `await aclose()` (or `async with`)."""

    async def read(self, n: int = -1) -> bytes:
        if n < 0:
            return b"".join([c async for c in self])
        while True:
            try:
                data: bytes = await self._resp.read(n)
            except Exception as e:
                if not self._may_resume(e):
                    raise
                assert self._reopen is not None
                resp = await self._reopen(*self._reopen_args())
                try:
                    self._resumed(resp)
                except CofferConnectionError:
                    await resp.aclose()
                    raise
                continue
            self.position += len(data)
            return data

    def __aiter__(self) -> AsyncIterator[bytes]:
        return read_chunks(self.read)

    async def save_to(self, dest: Union[str, "os.PathLike[str]", IO[bytes]]) -> int:
        n = 0
        if isinstance(dest, (str, os.PathLike)):
            with open(dest, "wb") as f:
                return await self.save_to(f)
        async for chunk in self:
            dest.write(chunk)
            n += len(chunk)
        return n

    async def aclose(self) -> None:
        await self._resp.aclose()


def open_download(t: Transport, path: str, query: Optional[Mapping[str, Any]] = None,
                  range: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                  timeout: Optional[float] = None) -> Download:
    """GETs `path` as a stream. `range` is a Range value (`bytes=0-99`)."""
    h = dict(headers or {})
    if range:
        h["Range"] = range
    wait = timeout or t.timeout

    def reopen(offset: int, etag: str) -> Any:
        again = dict(h, Range="bytes=%d-" % offset, **{"If-Range": etag})
        return t.request("GET", path, query=query, headers=again, stream=True, timeout=wait)

    def opened(resp: Any) -> Download:
        if isinstance(resp, AsyncStreamResponse):
            return AsyncDownload(resp, None if range else reopen,  # type: ignore[return-value]
                                 t.retries)
        return Download(resp, None if range else reopen, t.retries)

    return t.call_raw("GET", path, opened, query=query, headers=h, stream=True, timeout=wait)


def read_whole(t: Transport, path: str, query: Optional[Mapping[str, Any]] = None,
               range: Optional[str] = None) -> FileData:
    """GETs `path` whole into memory (for small files: use open_download for large); an
    answer cut off is fetched again whole."""
    return t.call_raw("GET", path, file_data, query=query,
                      headers={"Range": range} if range else None)


def file_data(r: Response) -> FileData:
    seq = r.header("X-Volume-Seq")
    return FileData(r.body, r.header("Content-Type") or "application/octet-stream",
                    etag_version(r.header("ETag")), int(seq) if seq and seq.isdigit() else None)
