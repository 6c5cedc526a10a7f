"""Answers of the API as read-only records with snake_case attributes.

A record keeps the JSON object it came from (`to_dict()`, or `rec["createdAt"]` by the
wire name) and reads its fields by their Python names: `vol.created_at` is
`createdAt`. Fields the server adds later are readable the same way without a new SDK.
An optional field the answer left out reads as None.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
import base64
from typing import Any, ClassVar, Iterator, Mapping, Optional


def camel(name: str) -> str:
    """`created_at` -> `createdAt`; a trailing `_` is dropped (`from_` -> `from`)."""
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


class Record(Mapping[str, Any]):
    """A JSON object read by attribute (snake_case) or by key (the wire's camelCase)."""

    _nested: ClassVar[dict[str, type["Record"]]] = {}

    def __init__(self, raw: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_raw", dict(raw))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raw = self.__dict__["_raw"]
        key = camel(name)
        if key in raw:
            return _wrap(raw[key], type(self)._nested.get(key))
        if name in raw:
            return _wrap(raw[name], type(self)._nested.get(name))
        for klass in type(self).__mro__:
            if name in getattr(klass, "__annotations__", {}):
                return None
        raise AttributeError("%s has no field %r" % (type(self).__name__, name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("%s is read-only" % type(self).__name__)

    def __getitem__(self, key: str) -> Any:
        return self.__dict__["_raw"][key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.__dict__["_raw"])

    def __len__(self) -> int:
        return len(self.__dict__["_raw"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON object as the server sent it (camelCase keys)."""
        return dict(self.__dict__["_raw"])

    def __repr__(self) -> str:
        return "%s(%r)" % (type(self).__name__, self.__dict__["_raw"])


def _wrap(value: Any, cls: Optional[type[Record]]) -> Any:
    if isinstance(value, dict):
        return (cls or Record)(value)
    if isinstance(value, list):
        return [_wrap(v, cls) for v in value]
    return value


class VolumeInfo(Record):
    id: str
    name: str
    seq: int
    files: int
    bytes: int
    capacity: int
    ceiling: int
    created_at: str


class FileInfo(Record):
    """A file as written or listed: `{path, version, size, contentType, sha256, seq}`
    (a listing has `updatedAt` instead of `seq`; an upload retry adds `replayed`)."""
    path: str
    version: int
    size: int
    content_type: str
    sha256: str
    seq: int
    updated_at: str
    replayed: bool


class FileList(Record):
    _nested = {"files": FileInfo}
    seq: int
    files: list[FileInfo]
    cursor: Optional[str]


class Removed(Record):
    path: str
    seq: int
    removed: int


class Moved(Record):
    from_: str
    to: str
    seq: int
    moved: int


class ChangeBy(Record):
    """Who made a change (docs/api.md "Who"): `via` says which way it came (`http`,
    `tool`, `call`, `link`, `console`, `mount`, `s3`, `merge`, `restore`, `revert`); the
    others are there as far as that way knows them."""
    key_id: Optional[str]
    agent: Optional[str]
    user: Optional[str]
    run_id: Optional[str]
    call_id: Optional[str]
    relay_session: Optional[str]
    tool: Optional[str]
    via: str


class Change(Record):
    """One entry of the changes feed; `by` is None for changes made before it was
    recorded."""
    _nested = {"by": ChangeBy}
    seq: int
    op: str
    path: str
    version: int
    size: int
    sha256: str
    at: str
    by: Optional[ChangeBy]


class FileVersion(Record):
    """One change of a path in its history (a `remove` carries the version it removed)."""
    _nested = {"by": ChangeBy}
    version: int
    seq: int
    op: str
    size: int
    sha256: str
    at: str
    by: Optional[ChangeBy]


class HistoryPage(Record):
    _nested = {"versions": FileVersion}
    versions: list[FileVersion]
    cursor: Optional[str]


class MergeResult(Record):
    """A merge's answer: `merged` `[{path, from}]` (`from`: theirs, merged or ours) and,
    for a dry run, the `conflicts`."""
    seq: int
    merged: list[Record]
    conflicts: list[Record]


class RevertResult(Record):
    """A revert's answer: `reverted` `[{path, from}]` (`from`: before, merged or kept)."""
    seq: int
    reverted: list[Record]
    conflicts: list[Record]


class Webhook(Record):
    """A webhook; `secret` (whsec_...) only in the answer of `create`."""
    id: str
    url: str
    events: list[str]
    volumes: list[str]
    agents: list[str]
    description: Optional[str]
    disabled: bool
    created_at: str
    secret: Optional[str]


class WebhookDelivery(Record):
    id: str
    event: str
    status: str
    attempts: int
    created_at: str
    last_error: Optional[str]
    next_attempt_at: Optional[str]
    delivered_at: Optional[str]


class WebhookDeliveries(Record):
    _nested = {"deliveries": WebhookDelivery}
    deliveries: list[WebhookDelivery]
    cursor: Optional[str]


class ChangesPage(Record):
    _nested = {"changes": Change}
    seq: int
    changes: list[Change]
    more: bool


class Snapshot(Record):
    id: str
    volume_id: str
    seq: int
    pinned: bool
    labels: Mapping[str, str]
    files: int
    bytes: int
    created_at: str
    contents: Optional[list[Record]]


class Restored(Record):
    snapshot: str
    seq: int
    written: int
    removed: int


class Link(Record):
    url: str
    method: str
    path: str
    expires_at: str


class ReadAllFile(Record):
    path: str
    size: int
    version: int
    content_type: str
    sha256: str
    text: Optional[str]

    @property
    def content(self) -> bytes:
        """The file's bytes, from `text` (UTF-8) or `data` (base64)."""
        raw = self.__dict__["_raw"]
        if "text" in raw:
            return str(raw["text"]).encode("utf-8")
        return base64.b64decode(raw.get("data", ""))


class ReadAll(Record):
    _nested = {"files": ReadAllFile}
    seq: int
    files: list[ReadAllFile]

    def contents(self) -> dict[str, bytes]:
        """Every file's bytes by path."""
        return {f.path: f.content for f in self.files}


class Agent(Record):
    id: str
    workspace_volume_id: str
    mounts: list[Record]
    file_tools: bool
    created_at: str
    #: where the agent's attachments, tool outputs and scratch files go, as agent paths
    #: (`{uploads, tool_outputs, tmp}`; None where there is no read-write place)
    places: Record


class Entry(Record):
    name: str
    path: str
    type: str
    size: Optional[int]
    content_type: Optional[str]


class Listing(Record):
    _nested = {"entries": Entry}
    path: str
    entries: list[Entry]
    truncated: Optional[bool]


class ToolResult(Record):
    """`{ok, output, ...}`: `output` is what the model reads; the structured fields
    (`path`, `version`, `entries`, `image`, ...) are attributes too."""
    ok: bool
    output: str


class Run(Record):
    run_id: str
    files: list[Record]
    presented: list[Record]


class PromptResult(Record):
    request_id: str
    text: str
    files: list[Record]
    content: list[Record]


class SubjectVolume(Record):
    volume_id: Optional[str]  # None while the subject has no workspace yet
    used: int
    capacity: int
    ceiling: int
    files: int


class Skill(Record):
    name: str
    size: int
    sha256: str
    version: int


class SessionStart(Record):
    volume_id: str
    skills: list[str]


class Turn(Record):
    id: str
    agent: str
    user: str
    created_at: str
    deadline: str
    expires_at: str
    sandbox: Record
    calls: Optional[int]
    running: Optional[int]
    used: Optional[Record]


class CallResult(Record):
    call_id: str
    exit_code: int
    stdout: str
    stderr: str
    files: list[Record]
    notes: list[str]
    limit: Optional[str]
    timed_out: Optional[bool]
    committed: Optional[list[Record]]
    conflicts: Optional[list[Record]]


class RelaySessionInfo(Record):
    uid: str
    connect_token: Optional[str]
    agent: str
    status: str
    mode: Optional[str]
    default_mode: str
    exclusions: list[str]
    counts: Record
    limits: Record
    started_at: str
    expires_at: str
    end_reason: Optional[str]


class Key(Record):
    id: str
    key: Optional[str]
    org: str
    agent: Optional[str]
    name: Optional[str]
    read_only: bool
    expires_at: Optional[str]
    created_at: str
    last_used_at: Optional[str]


@dataclass(frozen=True)
class FileData:
    """A whole downloaded file: its bytes, `content_type`, `version` (from the ETag)
    and the volume's `seq` when the server sent it."""
    data: bytes
    content_type: str
    version: Optional[int]
    seq: Optional[int] = None

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")


@dataclass(frozen=True)
class Event:
    """One Server-Sent Event: `type` (`event:`), `data` (JSON, or the raw text when it
    is not JSON) and `id` (`id:`, when sent)."""
    type: str
    data: Any
    id: Optional[str] = None


@dataclass(frozen=True)
class Artifact:
    """A file a call kept, as it streams in an `artifact` event of `Turn.call_stream`:
    an A2A v0.3 Artifact (`artifactId` "CALLID/NAME", one file part with its bytes
    inline). `Artifact.of(event)` decodes one; None for other events."""
    artifact_id: str
    name: str
    media_type: str
    data: bytes
    call_id: str

    @classmethod
    def of(cls, ev: "Event") -> "Optional[Artifact]":
        if ev.type != "artifact" or not isinstance(ev.data, dict):
            return None
        parts = ev.data.get("parts") or []
        f = parts[0].get("file", {}) if parts and isinstance(parts[0], dict) else {}
        meta = ev.data.get("metadata") or {}
        return cls(artifact_id=str(ev.data.get("artifactId", "")), name=str(f.get("name", "")),
                   media_type=str(f.get("mimeType", "")),
                   data=base64.b64decode(f.get("bytes", "")),
                   call_id=str(meta.get("call_id", "")))
