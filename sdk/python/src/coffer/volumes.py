"""Volumes: versioned file trees, their changes, snapshots, forks, archives and links."""

from __future__ import annotations

import base64
import uuid
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Union

from ._files import Download, etag_version, open_download, read_whole
from ._http import (Body, Item, Items, Req, Response, StreamResponse, Transport, need_str, none,
                    one, quote_path, quote_seg, then)
from .models import (Change, ChangesPage, FileData, FileInfo, FileList, FileVersion,
                     HistoryPage, Link, MergeResult, Moved, ReadAll, Removed, Restored,
                     RevertResult, Snapshot, VolumeInfo)

#: how a merge or a revert settles a conflicting path: "ours", "theirs", "base",
#: {"text": str}, {"data": base64 str}, or bytes (sent as data)
Resolution = Union[str, Mapping[str, str], bytes]


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
                run_id: Optional[str] = None, call_id: Optional[str] = None,
                agent: Optional[str] = None, key_id: Optional[str] = None,
                wait: Optional[float] = None) -> ChangesPage:
        """The changes after `since`, oldest first, each with `by` (who made it);
        `run_id`, `call_id`, `agent`, `key_id` keep those whose `by` names them (the
        page's `seq` still moves past the others). `wait` (≤ 60 s) long-polls until there
        is one. A `since` older than the history: Gone with `oldest`."""
        by = _by_filters(run_id, call_id, agent, key_id)
        return self._t.run(one(self._changes(since, prefix, wait, by), ChangesPage))

    def _changes(self, since: int, prefix: Optional[str], wait: Optional[float],
                 by: Mapping[str, Optional[str]]) -> Req:
        w = None if wait is None else int(wait)
        return Req("GET", self._base + "/changes", query={"since": since, "prefix": prefix,
                                                          **by, "wait": w},
                   timeout=max(self._t.timeout, (w or 0) + 15))

    def follow(self, since: int = 0, *, prefix: Optional[str] = None,
               run_id: Optional[str] = None, call_id: Optional[str] = None,
               agent: Optional[str] = None, key_id: Optional[str] = None,
               wait: float = 30) -> Iterator[Change]:
        """Every change after `since` (those the `by` filters keep), as it happens:
        long-polls one after another and never ends by itself (break out of the loop, or
        close the generator)."""
        by = _by_filters(run_id, call_id, agent, key_id)
        return self._t.iterate(self._follow(since, prefix, wait, by))

    def _follow(self, since: int, prefix: Optional[str], wait: float,
                by: Mapping[str, Optional[str]]) -> Items[Change]:
        while True:
            page = ChangesPage((yield self._changes(since, prefix, wait, by)).json())
            for ch in page.changes:
                yield Item(ch)
            since = max(since, page.seq)

    # ---- merge, history, revert
    def merge(self, from_: str, *, from_snapshot: Optional[str] = None,
              base: Optional[int] = None, strategy: Optional[str] = None,
              resolutions: Optional[Mapping[str, Resolution]] = None,
              dry_run: bool = False, if_seq: Optional[int] = None) -> MergeResult:
        """Brings the changes of volume `from_` (now, or as its snapshot `from_snapshot`
        was) since the common base into this volume, as one change. Conflicts left
        unsettled raise MergeConflict (`conflicts`) and change nothing; `resolutions`
        (path: "ours" | "theirs" | "base" | {"text": ...} | {"data": base64} | bytes) or
        `strategy` ("ours" | "theirs") settle them. `dry_run` changes nothing; `if_seq`
        makes it conditional (PreconditionFailed)."""
        w = "volume.merge"
        body: dict[str, Any] = {"from": need_str(w, "from_", from_)}
        if from_snapshot is not None:
            body["fromSnapshot"] = need_str(w, "from_snapshot", from_snapshot)
        if base is not None:
            body["base"] = _need_int(w, "base", base)
        if strategy is not None:
            if strategy not in ("ours", "theirs"):
                raise ValueError("%s: strategy must be 'ours' or 'theirs', not %r" % (w, strategy))
            body["strategy"] = strategy
        if resolutions is not None:
            body["resolutions"] = _resolutions(w, resolutions)
        if dry_run:
            body["dryRun"] = True
        if if_seq is not None:
            body["ifSeq"] = _need_int(w, "if_seq", if_seq)
        # a dry run changes nothing and a merge at if_seq happens once: safe to send again
        return self._t.call("POST", self._base + "/merge", MergeResult, json=body,
                            retry=dry_run or if_seq is not None)

    def history(self, path: str, *, cursor: Optional[str] = None,
                limit: Optional[int] = None) -> HistoryPage:
        """One page of a path's history, newest first (`versions`, `cursor` while more
        remain); a path that never changed has none."""
        q = {"path": need_str("volume.history", "path", path), "cursor": cursor,
             "limit": None if limit is None else _need_int("volume.history", "limit", limit)}
        return self._t.call("GET", self._base + "/history", HistoryPage, query=q)

    def iter_history(self, path: str, *, limit: Optional[int] = None) -> Iterator[FileVersion]:
        """Every version of a path, newest first, page after page (`limit` a page)."""
        need_str("volume.iter_history", "path", path)
        if limit is not None:
            _need_int("volume.iter_history", "limit", limit)
        return self._t.iterate(self._iter_history(path, limit))

    def _iter_history(self, path: str, limit: Optional[int]) -> Items[FileVersion]:
        cursor: Optional[str] = None
        while True:
            r = yield Req("GET", self._base + "/history",
                          query={"path": path, "cursor": cursor, "limit": limit})
            page = HistoryPage(r.json())
            for v in page.versions:
                yield Item(v)
            cursor = page.cursor
            if not cursor:
                return

    def revert(self, *, run_id: Optional[str] = None, call_id: Optional[str] = None,
               seq: Optional[int] = None, paths: Optional[Sequence[str]] = None,
               dry_run: bool = False,
               resolutions: Optional[Mapping[str, Resolution]] = None) -> RevertResult:
        """Puts back what one run (`run_id`), turn call (`call_id`) or seq (`seq`)
        changed, as one new change: exactly one of the three. A path changed since by
        someone else merges or conflicts as in `merge` (MergeConflict; `resolutions`
        settle it: "ours" keeps it as now, "theirs" takes it back)."""
        w = "volume.revert"
        given = [k for k, v in (("run_id", run_id), ("call_id", call_id), ("seq", seq))
                 if v is not None]
        if len(given) != 1:
            raise ValueError("%s: give exactly one of run_id, call_id, seq%s" % (
                w, " (got %s)" % ", ".join(given) if given else ""))
        body: dict[str, Any] = {}
        if run_id is not None:
            body["runId"] = need_str(w, "run_id", run_id)
        if call_id is not None:
            body["callId"] = need_str(w, "call_id", call_id)
        if seq is not None:
            body["seq"] = _need_int(w, "seq", seq)
        if paths is not None:
            if isinstance(paths, (str, bytes)) or not all(isinstance(p, str) and p for p in paths):
                raise TypeError("%s: paths must be a list of paths, not %s" % (
                    w, type(paths).__name__))
            body["paths"] = list(paths)
        if dry_run:
            body["dryRun"] = True
        if resolutions is not None:
            body["resolutions"] = _resolutions(w, resolutions)
        return self._t.call("POST", self._base + "/revert", RevertResult, json=body,
                            retry=dry_run)

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


def _by_filters(run_id: Optional[str], call_id: Optional[str], agent: Optional[str],
                key_id: Optional[str]) -> dict[str, Optional[str]]:
    out = {"runId": run_id, "callId": call_id, "agent": agent, "keyId": key_id}
    for k, v in zip(("run_id", "call_id", "agent", "key_id"), out.values()):
        if v is not None:
            need_str("volume.changes", k, v)
    return out


def _need_int(where: str, arg: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise TypeError("%s: %s must be an int >= 0, not %s" % (where, arg, type(v).__name__
                                                                + " " + repr(v)[:40]))
    return v


def _resolutions(where: str, rs: Mapping[str, Resolution]) -> dict[str, Any]:
    """The resolutions as the API takes them (bytes sent as {"data": base64})."""
    if not isinstance(rs, Mapping):
        raise TypeError("%s: resolutions must be a dict of path to resolution, not %s" % (
            where, type(rs).__name__))
    out: dict[str, Any] = {}
    for p, r in rs.items():
        if isinstance(r, (bytes, bytearray)):
            out[p] = {"data": base64.b64encode(bytes(r)).decode("ascii")}
        elif r in ("ours", "theirs", "base"):
            out[p] = r
        elif (isinstance(r, Mapping) and len(r) == 1 and next(iter(r)) in ("text", "data")
              and isinstance(next(iter(r.values())), str)):
            out[p] = dict(r)
        else:
            raise ValueError("%s: resolutions[%r] must be 'ours', 'theirs', 'base', "
                             "{'text': str}, {'data': base64} or bytes, not %r" % (
                                 where, p, r if not isinstance(r, str) else r[:40]))
    return out


def _page(r: Any) -> tuple[list[VolumeInfo], Optional[str]]:
    return [VolumeInfo(v) for v in r.get("volumes", [])], r.get("cursor")


def _stat(r: Response) -> dict[str, Any]:
    return {"version": etag_version(r.header("ETag")),
            "size": int(r.header("Content-Length") or 0),
            "content_type": r.header("Content-Type"),
            "seq": int(r.header("X-Volume-Seq") or 0)}


def _same(r: StreamResponse) -> StreamResponse:
    return r
