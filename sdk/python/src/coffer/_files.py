"""Downloads shared by every kind of file (volume, agent, subject, turn, link)."""

from __future__ import annotations

import os
from typing import IO, Any, Callable, Iterator, Mapping, Optional, Union

from ._http import CHUNK, StreamResponse, Transport
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


class Download:
    """A file being downloaded: its headers at once, its bytes as they arrive.
    Iterate for chunks, `read()`, or `save_to(path or file)`; close it (or use `with`).

    A connection that breaks mid-way is resumed where it stopped (`Range` from the
    bytes read, `If-Range` on the version), up to the client's `retries`; when the
    file changed meanwhile the download raises CofferConnectionError instead of
    joining two versions."""

    def __init__(self, resp: StreamResponse,
                 reopen: Optional[Callable[[int, str], StreamResponse]] = None,
                 retries: int = 0) -> None:
        self._resp = resp
        self.status = resp.status
        self.headers = resp.headers
        self.content_type: str = resp.header("Content-Type") or "application/octet-stream"
        self.etag = resp.header("ETag")
        self.version = etag_version(self.etag)
        seq = resp.header("X-Volume-Seq")
        self.seq: Optional[int] = int(seq) if seq and seq.isdigit() else None
        length = resp.header("Content-Length")
        self.size: Optional[int] = int(length) if length and length.isdigit() else None
        self.content_range = resp.header("Content-Range")
        self.position = 0
        self.resumed = 0
        self._reopen = reopen if (self.etag and resp.status == 200) else None
        self._retries = retries

    def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes (all that is left when n < 0); b"" at the end."""
        if n < 0:
            return b"".join(iter(lambda: self.read(CHUNK), b""))
        while True:
            try:
                data = self._resp.read(n)
            except CofferTimeout:
                raise
            except CofferConnectionError:
                if self._reopen is None or self.resumed >= self._retries:
                    raise
                self._resume()
                continue
            self.position += len(data)
            return data

    def _resume(self) -> None:
        assert self._reopen is not None and self.etag is not None
        self.resumed += 1
        resp = self._reopen(self.position, self.etag)
        if resp.status != 206:
            resp.close()
            raise CofferConnectionError(
                "the download broke after %d bytes and the file changed since (version "
                "%s is no longer current): read it again" % (self.position, self.version))
        self._resp = resp

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


def open_download(t: Transport, path: str, query: Optional[Mapping[str, Any]] = None,
                  range: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                  timeout: Optional[float] = None) -> Download:
    """GETs `path` as a stream. `range` is a Range value (`bytes=0-99`)."""
    h = dict(headers or {})
    if range:
        h["Range"] = range
    resp = t.request("GET", path, query=query, headers=h, stream=True,
                     timeout=timeout or t.timeout)
    if range:
        return Download(resp)

    def reopen(offset: int, etag: str) -> StreamResponse:
        again = dict(h, Range="bytes=%d-" % offset, **{"If-Range": etag})
        return t.request("GET", path, query=query, headers=again, stream=True,  # type: ignore[no-any-return]
                         timeout=timeout or t.timeout)

    return Download(resp, reopen, t.retries)


def read_whole(t: Transport, path: str, query: Optional[Mapping[str, Any]] = None,
               range: Optional[str] = None) -> FileData:
    """GETs `path` whole into memory (for small files: use open_download for large)."""
    with open_download(t, path, query, range) as d:
        data = d.read()
        return FileData(data, d.content_type, d.version, d.seq)

