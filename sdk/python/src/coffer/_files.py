"""Downloads shared by every kind of file (volume, agent, subject, turn, link)."""

from __future__ import annotations

import os
from typing import IO, Any, Iterator, Mapping, Optional, Union

from ._http import CHUNK, StreamResponse, Transport
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
    Iterate for chunks, `read()`, or `save_to(path or file)`; close it (or use `with`)."""

    def __init__(self, resp: StreamResponse) -> None:
        self._resp = resp
        self.status = resp.status
        self.headers = resp.headers
        self.content_type: str = resp.header("Content-Type") or "application/octet-stream"
        self.version = etag_version(resp.header("ETag"))
        seq = resp.header("X-Volume-Seq")
        self.seq: Optional[int] = int(seq) if seq and seq.isdigit() else None
        length = resp.header("Content-Length")
        self.size: Optional[int] = int(length) if length and length.isdigit() else None
        self.content_range = resp.header("Content-Range")

    def read(self, n: int = -1) -> bytes:
        return self._resp.read(n)

    def __iter__(self) -> Iterator[bytes]:
        return self._resp.iter_bytes(CHUNK)

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
    return Download(t.request("GET", path, query=query, headers=h, stream=True,
                              timeout=timeout or t.timeout))


def read_whole(t: Transport, path: str, query: Optional[Mapping[str, Any]] = None,
               range: Optional[str] = None) -> FileData:
    """GETs `path` whole into memory (for small files: use open_download for large)."""
    with open_download(t, path, query, range) as d:
        data = d.read()
        return FileData(data, d.content_type, d.version, d.seq)

