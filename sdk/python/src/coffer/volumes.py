"""Volumes: versioned file trees, their changes, snapshots, forks, archives and links."""

from __future__ import annotations

import base64
import uuid
from typing import Any, Iterator, List, Mapping, Optional, Sequence

from ._files import Download, etag_version, open_download, read_whole
from ._http import (Body, Item, Items, Req, Response, StreamResponse, Transport, need_str, none,
                    one, quote_path, quote_seg, then)
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
        return self._t.call("POST", "/v1/volumes", self._made, json=body,
                            headers={"Idempotency-Key": key})

    def _made(self, j: Any) -> "Volume":
        info = VolumeInfo(j)
        return Volume(self._t, info.id, info)

    def get(self, volume_id: str) -> "Volume":
        """The volume, fetched now (404 NotFound when absent)."""
        v = Volume(self._t, volume_id)
        return self._t.call("GET", v._base, then(v._got, v))

    def __call__(self, volume_id: str) -> "Volume":
        """A handle on a volume by id, without a request."""
        return Volume(self._t, volume_id)

    def list(self, *, prefix: Optional[str] = None, cursor: Optional[str] = None,
             limit: Optional[int] = None) -> tuple[list[VolumeInfo], Optional[str]]:
        """One page of the organization's volumes by name, and the next page's cursor."""
        return self._t.call("GET", "/v1/volumes", _page,
                            query={"prefix": prefix, "cursor": cursor, "limit": limit})

    def iter(self, *, prefix: Optional[str] = None) -> Iterator[VolumeInfo]:
        """Every volume (by name), page after page."""
        return self._t.iterate(self._iter(prefix))

    def _iter(self, prefix: Optional[str]) -> Items[VolumeInfo]:
        cursor: Optional[str] = None
        while True:
            r = yield Req("GET", "/v1/volumes", query={"prefix": prefix, "cursor": cursor})
            page, cursor = _page(r.json())
            for v in page:
                yield Item(v)
            if not cursor:
                return

    def seqs(self, ids: Sequence[str]) -> List[VolumeInfo]:
        """`{id, seq, files, bytes}` of up to 50 volumes in one request (unknown ids are
        left out): which volumes changed."""
        if isinstance(ids, (str, bytes)) or not all(isinstance(i, str) and i for i in ids):
            raise TypeError("volumes.seqs: ids must be a list of volume ids, not %s" %
                            type(ids).__name__)
        if len(ids) > 50:
            raise ValueError("seqs takes at most 50 ids, not %d" % len(ids))
        return self._t.call("GET", "/v1/volumes", lambda r: _page(r)[0],
                            query={"ids": ",".join(ids)})

    def delete(self, volume_id: str) -> None:
        return self._t.call("DELETE", "/v1/volumes/" + quote_seg(volume_id), none)


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
        return self._t.call("GET", self._base, self._got)

    def _got(self, j: Any) -> VolumeInfo:
        self.info = VolumeInfo(j)
        return self.info

    def delete(self) -> None:
        """Deletes the volume and every snapshot of it, pinned ones too."""
        return self._t.call("DELETE", self._base, none)

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
        return self._t.call("PUT", self._file(path), FileInfo, body=data, headers=h, timeout=timeout)

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
        return self._t.call_raw("HEAD", self._file(path), _stat, query={"snapshot": snapshot})


    def remove(self, path: str, *, version: Optional[int] = None) -> Removed:
        """Removes a file (NotFound when absent); `version` makes it conditional."""
        return self._t.call("DELETE", self._file(path), Removed, headers=_conditional(version, False))

    def move(self, src: str, dst: str, *, overwrite: bool = False) -> Moved:
        """Moves a file or a whole folder in one change (Conflict if `dst` exists and
        not `overwrite`)."""
        body: dict[str, Any] = {"from": src, "to": dst}
        if overwrite:
            body["overwrite"] = True
        return self._t.call("POST", self._base + "/move", Moved, json=body, retry=False)

    def list(self, *, prefix: Optional[str] = None, glob: Optional[str] = None,
             snapshot: Optional[str] = None, cursor: Optional[str] = None,
             limit: Optional[int] = None) -> FileList:
        """One page of the listing (`files`, `seq`, `cursor` while more remain)."""
        q = {"prefix": prefix, "glob": glob, "snapshot": snapshot, "cursor": cursor,
             "limit": limit}
        return self._t.call("GET", self._base + "/files", FileList, query=q)

    def iter_files(self, *, prefix: Optional[str] = None, glob: Optional[str] = None,
                   snapshot: Optional[str] = None) -> Iterator[FileInfo]:
        """Every matching file, page after page."""
        return self._t.iterate(self._iter_files(prefix, glob, snapshot))

    def _iter_files(self, prefix: Optional[str], glob: Optional[str],
                    snapshot: Optional[str]) -> Items[FileInfo]:
        cursor: Optional[str] = None
        while True:
            r = yield Req("GET", self._base + "/files", query={
                "prefix": prefix, "glob": glob, "snapshot": snapshot, "cursor": cursor})
            page = FileList(r.json())
            for f in page.files:
                yield Item(f)
            cursor = page.cursor
            if not cursor:
                return

    def read_all(self, *, prefix: Optional[str] = None, glob: Optional[str] = None,
                 snapshot: Optional[str] = None) -> ReadAll:
        """Every matching file with its contents, at one seq (1,000 files / 16 MiB, else
        TooLarge: narrow prefix or glob)."""
        q = {"prefix": prefix, "glob": glob, "snapshot": snapshot, "content": "true"}
        return self._t.call("GET", self._base + "/files", ReadAll, query=q)

    # ---- changes
    def changes(self, since: int = 0, *, prefix: Optional[str] = None,
                wait: Optional[float] = None) -> ChangesPage:
        """The changes after `since`, oldest first; `wait` (≤ 60 s) long-polls until there
        is one. A `since` older than the history: Gone with `oldest`."""
        return self._t.run(one(self._changes(since, prefix, wait), ChangesPage))

    def _changes(self, since: int, prefix: Optional[str], wait: Optional[float]) -> Req:
        w = None if wait is None else int(wait)
        return Req("GET", self._base + "/changes", query={"since": since, "prefix": prefix,
                                                          "wait": w},
                   timeout=max(self._t.timeout, (w or 0) + 15))

    def follow(self, since: int = 0, *, prefix: Optional[str] = None,
               wait: float = 30) -> Iterator[Change]:
        """Every change after `since`, as it happens: long-polls one after another and
        never ends by itself (break out of the loop, or close the generator)."""
        return self._t.iterate(self._follow(since, prefix, wait))

    def _follow(self, since: int, prefix: Optional[str], wait: float) -> Items[Change]:
        while True:
            page = ChangesPage((yield self._changes(since, prefix, wait)).json())
            for ch in page.changes:
                yield Item(ch)
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
        return self._t.call("POST", self._base + "/snapshots", Snapshot, json=body, retry=False)

    def snapshots(self, *, labels: Optional[Mapping[str, str]] = None) -> List[Snapshot]:
        """The snapshots, those holding every label given."""
        q = {"label": ["%s:%s" % kv for kv in (labels or {}).items()] or None}
        return self._t.call("GET", self._base + "/snapshots",
                            lambda r: [Snapshot(s) for s in r.get("snapshots", [])], query=q)

    def get_snapshot(self, snapshot_id: str) -> Snapshot:
        return self._t.call("GET", self._base + "/snapshots/" + quote_seg(snapshot_id), Snapshot)

    def update_snapshot(self, snapshot_id: str, *, pinned: Optional[bool] = None,
                        labels: Optional[Mapping[str, str]] = None) -> Snapshot:
        body: dict[str, Any] = {}
        if pinned is not None:
            body["pinned"] = pinned
        if labels is not None:
            body["labels"] = dict(labels)
        return self._t.call("PATCH", self._base + "/snapshots/" + quote_seg(snapshot_id), Snapshot, json=body, retry=True)

    def delete_snapshot(self, snapshot_id: str, *, force: bool = False) -> None:
        """Deletes a snapshot; a pinned one only with `force` (else Conflict)."""
        return self._t.call("DELETE", self._base + "/snapshots/" + quote_seg(snapshot_id), none,
                        query={"force": "true" if force else None})

    def fork(self, *, snapshot: Optional[str] = None, name: Optional[str] = None) -> "Volume":
        """A new volume sharing this one's content (at `snapshot`, else now)."""
        body = {k: v for k, v in (("snapshot", snapshot), ("name", name)) if v is not None}
        return self._t.call("POST", self._base + "/fork", Volumes(self._t)._made, json=body,
                            retry=False)

    def restore(self, snapshot: str) -> Restored:
        """Makes the volume as the snapshot was, in place, as one change (a retry of
        it is harmless: the volume is then already so)."""
        return self._t.call("POST", self._base + "/restore", Restored, json={"snapshot": snapshot}, retry=True)

    def archive(self, *, snapshot: Optional[str] = None, path: Optional[str] = None,
                glob: Optional[str] = None) -> StreamResponse:
        """The files as a tar.gz stream (iterate for chunks; `X-Volume-Seq` header)."""
        q = {"snapshot": snapshot, "path": path, "glob": glob}
        return self._t.call_raw("GET", self._base + "/archive", _same, query=q, stream=True,
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
        return self._t.call("POST", self._base + "/links", Link, json=body, headers=h, retry=False)


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


def _page(r: Any) -> tuple[list[VolumeInfo], Optional[str]]:
    return [VolumeInfo(v) for v in r.get("volumes", [])], r.get("cursor")


def _stat(r: Response) -> dict[str, Any]:
    return {"version": etag_version(r.header("ETag")),
            "size": int(r.header("Content-Length") or 0),
            "content_type": r.header("Content-Type"),
            "seq": int(r.header("X-Volume-Seq") or 0)}


def _same(r: StreamResponse) -> StreamResponse:
    return r
