"""Volumes: versioned file trees, their changes, snapshots, forks, archives and links."""

from __future__ import annotations

import base64
import uuid
from typing import Any, Iterator, Mapping, Optional, Sequence

from ._files import Download, etag_version, open_download, read_whole
from ._http import Body, StreamResponse, Transport, need_str, quote_path, quote_seg
from .models import (Change, ChangesPage, FileData, FileInfo, FileList, Link, Moved,
                     ReadAll, Removed, Restored, Snapshot, VolumeInfo)


class Volumes:
    """`client.volumes`: create, list and fetch volumes."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def create(self, name: str, *, ceiling: Optional[int] = None,
               idempotency_key: Optional[str] = None) -> "Volume":
        """Creates a volume. An Idempotency-Key (made here unless given) makes a retry,
        by this SDK or by the caller with the same key, answer the same volume."""
        need_str("volumes.create", "name", name)
        body: dict[str, Any] = {"name": name}
        if ceiling is not None:
            body["ceiling"] = ceiling
        key = idempotency_key or "sdk-" + uuid.uuid4().hex
        info = VolumeInfo(self._t.request("POST", "/v1/volumes", json=body,
                                          headers={"Idempotency-Key": key}).json())
        return Volume(self._t, info.id, info)

    def get(self, volume_id: str) -> "Volume":
        """The volume, fetched now (404 NotFound when absent)."""
        v = Volume(self._t, volume_id)
        v.refresh()
        return v

    def __call__(self, volume_id: str) -> "Volume":
        """A handle on a volume by id, without a request."""
        return Volume(self._t, volume_id)

    def list(self, *, prefix: Optional[str] = None, cursor: Optional[str] = None,
             limit: Optional[int] = None) -> tuple[list[VolumeInfo], Optional[str]]:
        """One page of the organization's volumes by name, and the next page's cursor."""
        r = self._t.request("GET", "/v1/volumes",
                            query={"prefix": prefix, "cursor": cursor, "limit": limit}).json()
        return [VolumeInfo(v) for v in r.get("volumes", [])], r.get("cursor")

    def iter(self, *, prefix: Optional[str] = None) -> Iterator[VolumeInfo]:
        """Every volume (by name), page after page."""
        cursor: Optional[str] = None
        while True:
            page, cursor = self.list(prefix=prefix, cursor=cursor)
            yield from page
            if not cursor:
                return

    def seqs(self, ids: Sequence[str]) -> list[VolumeInfo]:
        """`{id, seq, files, bytes}` of up to 50 volumes in one request (unknown ids are
        left out): which volumes changed."""
        if isinstance(ids, (str, bytes)) or not all(isinstance(i, str) and i for i in ids):
            raise TypeError("volumes.seqs: ids must be a list of volume ids, not %s" %
                            type(ids).__name__)
        if len(ids) > 50:
            raise ValueError("seqs takes at most 50 ids, not %d" % len(ids))
        r = self._t.request("GET", "/v1/volumes", query={"ids": ",".join(ids)}).json()
        return [VolumeInfo(v) for v in r.get("volumes", [])]

    def delete(self, volume_id: str) -> None:
        self._t.request("DELETE", "/v1/volumes/" + quote_seg(volume_id))


def _conditional(version: Optional[int], if_absent: bool) -> dict[str, str]:
    if version is not None and if_absent:
        raise ValueError("give version or if_absent, not both")
    if if_absent or version == 0:
        return {"If-None-Match": "*"}
    if version is not None:
        return {"If-Match": '"%d"' % version}
    return {}


class Volume:
    """A volume by id; `info` holds its record when one was fetched. Paths are volume
    paths (`docs/a.md`; one leading `/` is ignored)."""

    def __init__(self, t: Transport, volume_id: str, info: Optional[VolumeInfo] = None) -> None:
        self._t = t
        self.id = volume_id
        self.info = info
        self._base = "/v1/volumes/" + quote_seg(volume_id)

    def __repr__(self) -> str:
        return "Volume(%r)" % self.id

    def _file(self, path: str) -> str:
        need_str("volume", "path", path)
        return self._base + "/files/" + quote_path(path[1:] if path.startswith("/") else path)

    def refresh(self) -> VolumeInfo:
        """Fetches the volume's record (seq, files, bytes, capacity, ceiling)."""
        self.info = VolumeInfo(self._t.request("GET", self._base).json())
        return self.info

    def delete(self) -> None:
        """Deletes the volume and every snapshot of it, pinned ones too."""
        self._t.request("DELETE", self._base)

    # ---- files
    def write(self, path: str, data: Body, *, version: Optional[int] = None,
              if_absent: bool = False, content_type: Optional[str] = None,
              timeout: Optional[float] = None) -> FileInfo:
        """Writes a file from bytes, str, a path (pathlib.Path), a binary file object or
        an iterator of bytes, streamed. `version=N` writes only if the file is still at
        version N, `if_absent` (or version=0) only if it does not exist: else
        PreconditionFailed with `current`."""
        h = _conditional(version, if_absent)
        if content_type:
            h["Content-Type"] = content_type
        return FileInfo(self._t.request("PUT", self._file(path), body=data, headers=h,
                                        timeout=timeout).json())

    def read(self, path: str, *, snapshot: Optional[str] = None,
             range: Optional[str] = None) -> FileData:
        """The whole file in memory, with its content type, version and the volume's
        seq. For large files use `open()`."""
        return read_whole(self._t, self._file(path), {"snapshot": snapshot}, range)

    def open(self, path: str, *, snapshot: Optional[str] = None, range: Optional[str] = None,
             if_none_match: Optional[str] = None) -> Download:
        """The file as a stream (Download): headers now, bytes as they are read."""
        h = {"If-None-Match": if_none_match} if if_none_match else None
        return open_download(self._t, self._file(path), {"snapshot": snapshot}, range, h)

    def stat(self, path: str, *, snapshot: Optional[str] = None) -> dict[str, Any]:
        """HEAD: `{version, size, content_type, seq}` without the bytes."""
        r = self._t.request("HEAD", self._file(path), query={"snapshot": snapshot})
        return {"version": etag_version(r.header("ETag")),
                "size": int(r.header("Content-Length") or 0),
                "content_type": r.header("Content-Type"),
                "seq": int(r.header("X-Volume-Seq") or 0)}

    def remove(self, path: str, *, version: Optional[int] = None) -> Removed:
        """Removes a file (NotFound when absent); `version` makes it conditional."""
        return Removed(self._t.request("DELETE", self._file(path),
                                       headers=_conditional(version, False)).json())

    def move(self, src: str, dst: str, *, overwrite: bool = False) -> Moved:
        """Moves a file or a whole folder in one change (Conflict if `dst` exists and
        not `overwrite`)."""
        body: dict[str, Any] = {"from": src, "to": dst}
        if overwrite:
            body["overwrite"] = True
        return Moved(self._t.request("POST", self._base + "/move", json=body,
                                     retry=False).json())

    def list(self, *, prefix: Optional[str] = None, glob: Optional[str] = None,
             snapshot: Optional[str] = None, cursor: Optional[str] = None,
             limit: Optional[int] = None) -> FileList:
        """One page of the listing (`files`, `seq`, `cursor` while more remain)."""
        q = {"prefix": prefix, "glob": glob, "snapshot": snapshot, "cursor": cursor,
             "limit": limit}
        return FileList(self._t.request("GET", self._base + "/files", query=q).json())

    def iter_files(self, *, prefix: Optional[str] = None, glob: Optional[str] = None,
                   snapshot: Optional[str] = None) -> Iterator[FileInfo]:
        """Every matching file, page after page."""
        cursor: Optional[str] = None
        while True:
            page = self.list(prefix=prefix, glob=glob, snapshot=snapshot, cursor=cursor)
            yield from page.files
            cursor = page.cursor
            if not cursor:
                return

    def read_all(self, *, prefix: Optional[str] = None, glob: Optional[str] = None,
                 snapshot: Optional[str] = None) -> ReadAll:
        """Every matching file with its contents, at one seq (1,000 files / 16 MiB, else
        TooLarge: narrow prefix or glob)."""
        q = {"prefix": prefix, "glob": glob, "snapshot": snapshot, "content": "true"}
        return ReadAll(self._t.request("GET", self._base + "/files", query=q).json())

    # ---- changes
    def changes(self, since: int = 0, *, prefix: Optional[str] = None,
                wait: Optional[float] = None) -> ChangesPage:
        """The changes after `since`, oldest first; `wait` (≤ 60 s) long-polls until there
        is one. A `since` older than the history: Gone with `oldest`."""
        w = None if wait is None else int(wait)
        timeout = max(self._t.timeout, (w or 0) + 15)
        return ChangesPage(self._t.request(
            "GET", self._base + "/changes", query={"since": since, "prefix": prefix, "wait": w},
            timeout=timeout).json())

    def follow(self, since: int = 0, *, prefix: Optional[str] = None,
               wait: float = 30) -> Iterator[Change]:
        """Every change after `since`, as it happens: long-polls one after another and
        never ends by itself (break out of the loop, or close the generator)."""
        while True:
            page = self.changes(since, prefix=prefix, wait=wait)
            yield from page.changes
            since = max(since, page.seq)

    # ---- snapshots, forks, restore
    def snapshot(self, *, pinned: Optional[bool] = None,
                 labels: Optional[Mapping[str, str]] = None,
                 files: Optional[Mapping[str, "str | bytes"]] = None) -> Snapshot:
        """A snapshot of the volume now, or with `files` a snapshot of those files
        (text, or bytes sent as base64) leaving the volume untouched."""
        body: dict[str, Any] = {}
        if pinned is not None:
            body["pinned"] = pinned
        if labels is not None:
            body["labels"] = dict(labels)
        if files is not None:
            body["files"] = {p: (v if isinstance(v, str) else
                                 {"data": base64.b64encode(v).decode("ascii")})
                             for p, v in files.items()}
        return Snapshot(self._t.request("POST", self._base + "/snapshots", json=body,
                                        retry=False).json())

    def snapshots(self, *, labels: Optional[Mapping[str, str]] = None) -> list[Snapshot]:
        """The snapshots, those holding every label given."""
        q = {"label": ["%s:%s" % kv for kv in (labels or {}).items()] or None}
        r = self._t.request("GET", self._base + "/snapshots", query=q).json()
        return [Snapshot(s) for s in r.get("snapshots", [])]

    def get_snapshot(self, snapshot_id: str) -> Snapshot:
        return Snapshot(self._t.request(
            "GET", self._base + "/snapshots/" + quote_seg(snapshot_id)).json())

    def update_snapshot(self, snapshot_id: str, *, pinned: Optional[bool] = None,
                        labels: Optional[Mapping[str, str]] = None) -> Snapshot:
        body: dict[str, Any] = {}
        if pinned is not None:
            body["pinned"] = pinned
        if labels is not None:
            body["labels"] = dict(labels)
        return Snapshot(self._t.request(
            "PATCH", self._base + "/snapshots/" + quote_seg(snapshot_id), json=body,
            retry=True).json())

    def delete_snapshot(self, snapshot_id: str, *, force: bool = False) -> None:
        """Deletes a snapshot; a pinned one only with `force` (else Conflict)."""
        self._t.request("DELETE", self._base + "/snapshots/" + quote_seg(snapshot_id),
                        query={"force": "true" if force else None})

    def fork(self, *, snapshot: Optional[str] = None, name: Optional[str] = None) -> "Volume":
        """A new volume sharing this one's content (at `snapshot`, else now)."""
        body = {k: v for k, v in (("snapshot", snapshot), ("name", name)) if v is not None}
        info = VolumeInfo(self._t.request("POST", self._base + "/fork", json=body,
                                          retry=False).json())
        return Volume(self._t, info.id, info)

    def restore(self, snapshot: str) -> Restored:
        """Makes the volume as the snapshot was, in place, as one change (a retry of
        it is harmless: the volume is then already so)."""
        return Restored(self._t.request("POST", self._base + "/restore",
                                        json={"snapshot": snapshot}, retry=True).json())

    def archive(self, *, snapshot: Optional[str] = None, path: Optional[str] = None,
                glob: Optional[str] = None) -> StreamResponse:
        """The files as a tar.gz stream (iterate for chunks; `X-Volume-Seq` header)."""
        q = {"snapshot": snapshot, "path": path, "glob": glob}
        return self._t.request("GET", self._base + "/archive", query=q, stream=True,
                               timeout=self._t.timeout)

    def link(self, path: str, *, method: str = "GET", expires_in: Optional[int] = None,
             max_bytes: Optional[int] = None, content_type: Optional[str] = None,
             idempotency_key: Optional[str] = None) -> Link:
        """A signed link anyone can use without a key (GET, or PUT to upload)."""
        body: dict[str, Any] = {"path": path, "method": method}
        for k, v in (("expiresIn", expires_in), ("maxBytes", max_bytes),
                     ("contentType", content_type)):
            if v is not None:
                body[k] = v
        h = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return Link(self._t.request("POST", self._base + "/links", json=body, headers=h,
                                    retry=False).json())


class Runtime:
    """The volumes under seed 001's names (`client.runtime`, `client.agents.runtime`):
    `create_volume(name=..., idempotency_key=...)`, `volume(id)`, `volumes(ids)`; the
    same calls as `client.volumes` (`create`, `__call__`, `seqs`)."""

    def __init__(self, t: Transport) -> None:
        self._v = Volumes(t)

    def create_volume(self, name: str, *, ceiling: Optional[int] = None,
                      idempotency_key: Optional[str] = None) -> "Volume":
        """A new volume (made once per `idempotency_key`, for a day)."""
        return self._v.create(name, ceiling=ceiling, idempotency_key=idempotency_key)

    def volume(self, volume_id: str) -> "Volume":
        """A handle on a volume by id, without a request."""
        return self._v(volume_id)

    def volumes(self, ids: Sequence[str]) -> list[VolumeInfo]:
        """`{id, seq, files, bytes}` of up to 50 volumes in one request."""
        return self._v.seqs(ids)
