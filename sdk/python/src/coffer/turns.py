"""Turns: scratch workspaces for one model turn's confined calls."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ._files import Download, open_download, read_whole
from ._http import EventStream, Transport, events, none, quote_seg
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
        return self._t.call("POST", "/v1/turns", self._made, json=body, retry=False)

    def _made(self, j: Any) -> "Turn":
        info = TurnInfo(j)
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
        return self._t.call("GET", self._base, self._got)

    def _got(self, j: Any) -> TurnInfo:
        self.info = TurnInfo(j)
        return self.info

    def _call_body(self, command: str, stdin: Optional[str], timeout_seconds: Optional[int],
                   call_id: Optional[str],
                   accepted_output_modes: Optional[Sequence[str]]) -> dict[str, Any]:
        if not isinstance(command, str):
            raise TypeError("command must be a str, not %s" % type(command).__name__)
        body: dict[str, Any] = {"command": command}
        if stdin is not None:
            body["stdin"] = stdin
        if timeout_seconds is not None:
            body["timeoutSeconds"] = timeout_seconds
        if call_id is not None:
            body["callId"] = call_id
        if accepted_output_modes is not None:
            if isinstance(accepted_output_modes, str):
                raise TypeError("accepted_output_modes must be a list of media types, not a str")
            body["acceptedOutputModes"] = list(accepted_output_modes)
        return body

    def call(self, command: str, *, stdin: Optional[str] = None,
             timeout_seconds: Optional[int] = None, call_id: Optional[str] = None,
             accepted_output_modes: Optional[Sequence[str]] = None) -> CallResult:
        """Runs `sh -c command` and waits for its answer (the HTTP timeout is the call's
        own plus a margin). Never retried after it was sent: a call may have run.
        `call_id` is the model's tool-call id (it names the kept files);
        `accepted_output_modes` keeps only files of those media types."""
        wait = (timeout_seconds or 120) + 30
        return self._t.call("POST", self._base + "/calls", CallResult,
                            json=self._call_body(command, stdin, timeout_seconds, call_id,
                                                 accepted_output_modes),
                            timeout=max(self._t.timeout, wait), retry=False)

    def call_stream(self, command: str, *, stdin: Optional[str] = None,
                    timeout_seconds: Optional[int] = None, call_id: Optional[str] = None,
                    accepted_output_modes: Optional[Sequence[str]] = None) -> EventStream:
        """The call as events while it runs: `stdout`, `stderr`, `file` then `artifact`
        for each kept file (an A2A Artifact with the bytes inline: `coffer.Artifact.of(ev)`
        decodes it), then `exit` (the whole answer) or `error`."""
        wait = (timeout_seconds or 120) + 30
        return self._t.call_raw(
            "POST", self._base + "/calls", events,
            json=self._call_body(command, stdin, timeout_seconds, call_id,
                                 accepted_output_modes),
            headers={"Accept": "text/event-stream"}, stream=True,
            timeout=max(self._t.stream_timeout, wait), retry=False)

    def file(self, call_id: str, name: str) -> FileData:
        """A file a call returned (its `url`), whole."""
        return read_whole(self._t, "%s/files/%s/%s" % (self._base, quote_seg(call_id),
                                                       quote_seg(name)))

    def open_file(self, call_id: str, name: str) -> Download:
        return open_download(self._t, "%s/files/%s/%s" % (self._base, quote_seg(call_id),
                                                          quote_seg(name)))

    def end(self) -> None:
        """Ends the turn: its calls stop, its workspace is deleted."""
        return self._t.call("DELETE", self._base, none, timeout=max(self._t.timeout, 60))
