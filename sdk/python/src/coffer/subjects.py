"""Subject workspaces: one durable volume per (agent, subject), and its memory files."""

from __future__ import annotations

import base64
from typing import Any, Optional

from ._files import Download, open_download, read_whole
from ._http import Body, Transport, obj, quote_seg
from .models import FileData, FileInfo, Listing, Moved, SessionStart, SubjectVolume


class Subject:
    """`agent.subject(id)`: the subject's files (volume paths, `notes/a.md`), its
    memory (`USER.md`, `MEMORY.md`) and sandbox sessions. `memories/` and `skills/` are
    reserved: writes there are Forbidden."""

    def __init__(self, t: Transport, agent_base: str, subject_id: str) -> None:
        self._t = t
        self.id = subject_id
        self._base = "%s/users/%s" % (agent_base, quote_seg(subject_id))

    def __repr__(self) -> str:
        return "Subject(%r)" % self.id

    def write(self, path: str, content: "str | bytes", *,
              create_parents: Optional[bool] = None) -> FileInfo:
        """Writes one file (text as UTF-8; bytes are sent as base64)."""
        body: dict[str, Any] = {"path": path}
        if isinstance(content, str):
            body.update(encoding="utf-8", content=content)
        else:
            body.update(encoding="base64", content=base64.b64encode(content).decode("ascii"))
        if create_parents is not None:
            body["createParents"] = create_parents
        return self._t.call("PUT", self._base + "/files/content", FileInfo, json=body)

    def list(self, path: str = "") -> Listing:
        return self._t.call("GET", self._base + "/files", Listing, query={"path": path})

    def read(self, path: str) -> FileData:
        return read_whole(self._t, self._base + "/files/content", {"path": path})

    def open(self, path: str, *, range: Optional[str] = None) -> Download:
        return open_download(self._t, self._base + "/files/content", {"path": path}, range)

    def move(self, src: str, dst: str, *, overwrite: bool = False) -> Moved:
        body: dict[str, Any] = {"from": src, "to": dst}
        if overwrite:
            body["overwrite"] = True
        return self._t.call("POST", self._base + "/files/move", Moved, json=body, retry=False)

    def remove(self, path: str) -> dict[str, Any]:
        """Removes a file, or a folder and everything under it, in one change."""
        return self._t.call("DELETE", self._base + "/files", obj, query={"path": path})

    def volume(self) -> SubjectVolume:
        """`{volume_id, used, capacity, ceiling, files}`."""
        return self._t.call("GET", self._base + "/volume", SubjectVolume)

    def read_memory(self, name: str) -> FileData:
        """`USER.md` or `MEMORY.md` (NotFound until written)."""
        _memory_name("subject.read_memory", name)
        return read_whole(self._t, self._base + "/memory/" + quote_seg(name))

    def write_memory(self, name: str, content: Body) -> FileInfo:
        """Writes `memories/{name}`, the only way to write there."""
        _memory_name("subject.write_memory", name)
        return self._t.call("PUT", self._base + "/memory/" + quote_seg(name), FileInfo, body=content)

    def start_session(self) -> SessionStart:
        """Starts a sandbox session: `skills/` becomes exactly the agent's skills."""
        return self._t.call("POST", self._base + "/sessions", SessionStart, json={}, retry=True)


def _memory_name(where: str, name: str) -> None:
    if name not in ("USER.md", "MEMORY.md"):
        raise ValueError("%s: name must be 'USER.md' or 'MEMORY.md', not %r" % (where, name))
