"""Relay sessions: the agent side of a user's own folder reached through cofferd."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ._http import EventStream, Transport, events, obj, quote_seg
from .models import RelaySessionInfo


class Relay:
    """`client.relay`: create and list sessions."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def create(self, agent: str, *, limits: Optional[Mapping[str, int]] = None) -> "RelaySession":
        """A session for `agent` (which declared `relay.capability`). The answer's
        `connect_token` is shown only here: give it to the user's `coffer connect`."""
        body: dict[str, Any] = {"agent": agent}
        if limits is not None:
            body["limits"] = dict(limits)
        return self._t.call("POST", "/v1/relay/sessions", self._made, json=body, retry=False)

    def _made(self, j: Any) -> "RelaySession":
        info = RelaySessionInfo(j)
        return RelaySession(self._t, info.uid, info)

    def __call__(self, uid: str) -> "RelaySession":
        return RelaySession(self._t, uid)

    def list(self, *, agent: Optional[str] = None, all: bool = False) -> list[RelaySessionInfo]:
        return self._t.call("GET", "/v1/relay/sessions",
                            lambda r: [RelaySessionInfo(s) for s in r.get("sessions", [])],
                            query={"agent": agent, "all": "true" if all else None})


class RelaySession:
    """A relay session by uid. Ops are checked by cofferd, then carried to the user's
    side; refusals come back as errors (Forbidden, TooLarge, RateLimited, Gone, Blocked,
    Locked for a supervised write asked with `wait=False`)."""

    def __init__(self, t: Transport, uid: str, info: Optional[RelaySessionInfo] = None) -> None:
        self._t = t
        self.uid = uid
        self.info = info
        self._base = "/v1/relay/sessions/" + quote_seg(uid)

    def __repr__(self) -> str:
        return "RelaySession(%r)" % self.uid

    @property
    def connect_token(self) -> Optional[str]:
        return self.info.connect_token if self.info is not None else None

    def get(self) -> RelaySessionInfo:
        """The session now (status, mode, exclusions, counts)."""
        return self._t.call("GET", self._base, self._got)

    def _got(self, j: Any) -> RelaySessionInfo:
        info = RelaySessionInfo(j)
        if self.info is not None and self.info.connect_token and not info.connect_token:
            info = RelaySessionInfo({**info.to_dict(), "connectToken": self.info.connect_token})
        self.info = info
        return info

    def op(self, op: str, *, wait: bool = True, timeout: Optional[float] = None,
           **fields: Any) -> dict[str, Any]:
        """One op (`read_file`, `write_file`, `list_directory`, `search_files`) with its
        fields (`path`, `content`, `encoding`, `pattern`, `glob`, `max_results`). Waits for
        the user's side (cofferd waits at most its --relay-op-wait, 120 s by default)."""
        body = {_camel(k): v for k, v in fields.items() if v is not None}
        body["op"] = op
        return self._t.call(
            "POST", self._base + "/ops", obj, json=body,
            query={"wait": "true" if wait else "false"},
            timeout=timeout or max(self._t.timeout, 150), retry=op != "write_file")

    def read_file(self, path: str) -> dict[str, Any]:
        return self.op("read_file", path=path)

    def write_file(self, path: str, content: str, *, encoding: Optional[str] = None,
                   wait: bool = True) -> dict[str, Any]:
        return self.op("write_file", path=path, content=content, encoding=encoding, wait=wait)

    def list_directory(self, path: Optional[str] = None) -> dict[str, Any]:
        return self.op("list_directory", path=path)

    def search_files(self, pattern: str, *, path: Optional[str] = None,
                     glob: Optional[str] = None,
                     max_results: Optional[int] = None) -> dict[str, Any]:
        return self.op("search_files", pattern=pattern, path=path, glob=glob,
                       max_results=max_results)

    def op_status(self, op_id: str) -> dict[str, Any]:
        """A supervised write answered Locked: pending, then done with its result."""
        return self._t.call("GET", self._base + "/ops/" + quote_seg(op_id), obj)

    def events(self, *, last_event_id: Optional[str] = None,
               timeout: Optional[float] = None) -> EventStream:
        """The session's events (replayed from the start, or after `last_event_id`);
        the stream ends after `session_ended`."""
        h = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            h["Last-Event-ID"] = str(last_event_id)
        return self._t.call_raw("GET", self._base + "/events", events, headers=h,
                                stream=True, timeout=timeout)

    def log(self) -> dict[str, Any]:
        return self._t.call("GET", self._base + "/log", obj)

    def abort(self) -> RelaySessionInfo:
        """Ends the session at once (`endReason: aborted`)."""
        return self._t.call("POST", self._base + "/abort", RelaySessionInfo, json={}, retry=True)

    def close(self) -> RelaySessionInfo:
        """The agent side's job is done (`endReason: closed`)."""
        return self._t.call("DELETE", self._base, RelaySessionInfo)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)
