"""Relay sessions: the agent side of a user's own folder reached through cofferd."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ._http import EventStream, Transport, quote_seg
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
        info = RelaySessionInfo(self._t.request("POST", "/v1/relay/sessions", json=body,
                                                retry=False).json())
        return RelaySession(self._t, info.uid, info)

    def __call__(self, uid: str) -> "RelaySession":
        return RelaySession(self._t, uid)

    def list(self, *, agent: Optional[str] = None, all: bool = False) -> list[RelaySessionInfo]:
        r = self._t.request("GET", "/v1/relay/sessions",
                            query={"agent": agent, "all": "true" if all else None}).json()
        return [RelaySessionInfo(s) for s in r.get("sessions", [])]


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
        info = RelaySessionInfo(self._t.request("GET", self._base).json())
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
        r: dict[str, Any] = self._t.request(
            "POST", self._base + "/ops", json=body,
            query={"wait": "true" if wait else "false"},
            timeout=timeout or max(self._t.timeout, 150), retry=op != "write_file").json()
        return r

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
        r: dict[str, Any] = self._t.request("GET", self._base + "/ops/" + quote_seg(op_id)).json()
        return r

    def events(self, *, last_event_id: Optional[str] = None,
               timeout: Optional[float] = None) -> EventStream:
        """The session's events (replayed from the start, or after `last_event_id`);
        the stream ends after `session_ended`."""
        h = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            h["Last-Event-ID"] = str(last_event_id)
        return EventStream(self._t.request("GET", self._base + "/events", headers=h,
                                           stream=True, timeout=timeout))

    def log(self) -> dict[str, Any]:
        r: dict[str, Any] = self._t.request("GET", self._base + "/log").json()
        return r

    def abort(self) -> RelaySessionInfo:
        """Ends the session at once (`endReason: aborted`)."""
        return RelaySessionInfo(self._t.request("POST", self._base + "/abort", json={},
                                                retry=True).json())

    def close(self) -> RelaySessionInfo:
        """The agent side's job is done (`endReason: closed`)."""
        return RelaySessionInfo(self._t.request("DELETE", self._base).json())


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)
