"""Turns: scratch workspaces for one model turn's confined calls."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ._files import Download, open_download, read_whole
from ._http import EventStream, Transport, quote_seg
from .models import CallResult, FileData, Turn as TurnInfo


class Turns:
    """`client.turns`: start a turn, or reach one by id."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def create(self, agent: str, user: str, deadline_seconds: int, *,
               accepted_output_modes: Optional[Sequence[str]] = None) -> "Turn":
        body: dict[str, Any] = {"agent": agent, "user": user,
                                "deadlineSeconds": deadline_seconds}
        if accepted_output_modes is not None:
            body["acceptedOutputModes"] = list(accepted_output_modes)
        info = TurnInfo(self._t.request("POST", "/v1/turns", json=body, retry=False).json())
        return Turn(self._t, info.id, info)

    def __call__(self, turn_id: str) -> "Turn":
        return Turn(self._t, turn_id)


class Turn:
    """A turn by id. Calls run one command each, confined; `end()` deletes the turn's
    workspace (Gone for every call after)."""

    def __init__(self, t: Transport, turn_id: str, info: Optional[TurnInfo] = None) -> None:
        self._t = t
        self.id = turn_id
        self.info = info
        self._base = "/v1/turns/" + quote_seg(turn_id)

    def __repr__(self) -> str:
        return "Turn(%r)" % self.id

    def get(self) -> TurnInfo:
        self.info = TurnInfo(self._t.request("GET", self._base).json())
        return self.info

    def _call_body(self, command: str, stdin: Optional[str],
                   timeout_seconds: Optional[int]) -> dict[str, Any]:
        body: dict[str, Any] = {"command": command}
        if stdin is not None:
            body["stdin"] = stdin
        if timeout_seconds is not None:
            body["timeoutSeconds"] = timeout_seconds
        return body

    def call(self, command: str, *, stdin: Optional[str] = None,
             timeout_seconds: Optional[int] = None) -> CallResult:
        """Runs `sh -c command` and waits for its answer (the HTTP timeout is the call's
        own plus a margin). Never retried after it was sent: a call may have run."""
        wait = (timeout_seconds or 120) + 30
        return CallResult(self._t.request(
            "POST", self._base + "/calls", json=self._call_body(command, stdin, timeout_seconds),
            timeout=max(self._t.timeout, wait), retry=False).json())

    def call_stream(self, command: str, *, stdin: Optional[str] = None,
                    timeout_seconds: Optional[int] = None) -> EventStream:
        """The call as events while it runs: `stdout`, `stderr`, `file`, then `exit`
        (the whole answer) or `error`."""
        wait = (timeout_seconds or 120) + 30
        return EventStream(self._t.request(
            "POST", self._base + "/calls", json=self._call_body(command, stdin, timeout_seconds),
            headers={"Accept": "text/event-stream"}, stream=True,
            timeout=max(self._t.stream_timeout, wait), retry=False))

    def file(self, call_id: str, name: str) -> FileData:
        """A file a call returned (its `url`), whole."""
        return read_whole(self._t, "%s/files/%s/%s" % (self._base, quote_seg(call_id),
                                                       quote_seg(name)))

    def open_file(self, call_id: str, name: str) -> Download:
        return open_download(self._t, "%s/files/%s/%s" % (self._base, quote_seg(call_id),
                                                          quote_seg(name)))

    def end(self) -> None:
        """Ends the turn: its calls stop, its workspace is deleted."""
        self._t.request("DELETE", self._base, timeout=max(self._t.timeout, 60))
