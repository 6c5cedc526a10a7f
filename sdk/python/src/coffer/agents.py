"""Agents: settings and mounts, their files and uploads, the file tools, runs, events,
`prompt`, and each subject's workspace and memory."""

from __future__ import annotations

import os
import pathlib
import re
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from ._files import Download, open_download, read_whole
from ._http import (Body, EventStream, Flow, ForSubject, Req, Transport, events, need_str,
                    none, obj,
                    one, quote_path, quote_seg, then)
from .models import (Agent as AgentInfo, FileData, FileInfo, Link, Listing, PromptResult,
                     Record, Run, Skill, ToolResult)
from .subjects import Subject
from .volumes import Runtime

# The settings an agent takes (snake_case or the API's camelCase).
_SETTINGS = {"fileTools", "exclude", "defaultExclusions", "sandbox", "output", "relay"}


@dataclass(frozen=True)
class Attachment:
    """A file sent with a prompt: its `name` (one path segment), its bytes (bytes, a
    path, or a binary file object, streamed) and an optional `content_type`."""
    name: str
    data: Body
    content_type: Optional[str] = None


# What prompt() takes as a file: bytes, an Attachment, {"name", "data", "content_type"?},
# a local path (str or os.PathLike), or {"path": agent path} of a file already mounted.
PromptFile = Union[bytes, Attachment, Mapping[str, Any], str, os.PathLike[str]]


class Agents:
    """`client.agents`: create or update, fetch and delete agents."""

    def __init__(self, t: Transport) -> None:
        self._t = t
        #: the volumes under seed 001's names: create_volume, volume(id), volumes(ids)
        self.runtime = Runtime(t)

    def __call__(self, agent_id: str, *, user: Optional[str] = None) -> "Agent":
        """A handle on an agent by id, without a request; acting for subject `user` when
        given (Agent.for_user)."""
        return Agent(self._t, need_str("agents(id)", "agent_id", agent_id), user)

    def upsert(self, agent_id: str, *, mounts: Optional[Sequence[Mapping[str, Any]]] = None,
               remount: Optional[bool] = None, **settings: Any) -> "Agent":
        """Creates or updates an agent. `settings` are the API's (`file_tools`,
        `exclude`, `default_exclusions`, `sandbox`, `output`, `relay`), in snake_case or
        camelCase. Other mounts than the agent has: Conflict unless `remount=True`."""
        need_str("agents.upsert", "agent_id", agent_id)
        body: dict[str, Any] = {_camel(k): v for k, v in settings.items()}
        unknown = sorted(k for k in body if k not in _SETTINGS)
        if unknown:
            raise TypeError("agents.upsert: unknown setting %s (it takes mounts, remount, %s)" % (
                ", ".join(repr(k) for k in unknown), ", ".join(sorted(_SETTINGS))))
        if mounts is not None:
            if isinstance(mounts, (str, bytes, Mapping)) or not all(
                    isinstance(m, Mapping) for m in mounts):
                raise TypeError("agents.upsert: mounts must be a list of mount dicts, not %s"
                                % type(mounts).__name__)
            body["mounts"] = [dict(m) for m in mounts]
        if remount is not None:
            body["remount"] = remount
        a = Agent(self._t, agent_id)
        return self._t.call("PUT", a._base, then(a._got, a), json=body)

    def get(self, agent_id: str) -> "Agent":
        a = Agent(self._t, agent_id)
        return self._t.call("GET", a._base, then(a._got, a))

    def delete(self, agent_id: str) -> None:
        """Deletes the agent and its own workspace (volumes it only mounted stay)."""
        return self._t.call("DELETE", "/v1/agents/" + quote_seg(agent_id), none)


class AgentFiles:
    """`agent.files`: the agent's files by the path the agent sees (`/workspace/a.md`)."""

    def __init__(self, agent: "Agent") -> None:
        self._t, self._agent = agent._t, agent

    def _url(self, path: str) -> str:
        need_str("agent.files", "path", path)
        return self._agent._base + "/files" + quote_path(path if path.startswith("/")
                                                        else "/" + path)

    def download(self, path: str, *, range: Optional[str] = None) -> FileData:
        """The whole file: `{data, content_type, version}`."""
        return read_whole(self._t, self._url(path), None, range)

    def open(self, path: str, *, range: Optional[str] = None) -> Download:
        """The file as a stream."""
        return open_download(self._t, self._url(path), None, range)

    def write(self, path: str, data: Body, *, content_type: Optional[str] = None,
              version: Optional[int] = None) -> FileInfo:
        """Writes a file through the agent's mounts (streamed)."""
        h = {"Content-Type": content_type} if content_type else {}
        if version is not None:
            h["If-Match"] = '"%d"' % version
        return self._t.call("PUT", self._url(path), FileInfo, body=data, headers=h)

    def remove(self, path: str) -> dict[str, Any]:
        return self._t.call("DELETE", self._url(path), obj)

    def list(self, path: Optional[str] = None) -> Listing:
        """A folder's immediate children (by default the first mount's)."""
        if path is not None:
            need_str("agent.files.list", "path", path)
        return self._t.call("GET", self._agent._base + "/files", Listing, query={"path": path})

    def link(self, path: str, *, method: str = "GET", expires_in: Optional[int] = None,
             max_bytes: Optional[int] = None, content_type: Optional[str] = None) -> Link:
        """A signed link to a file by its agent path."""
        need_str("agent.files.link", "path", path)
        for arg, v in (("expires_in", expires_in), ("max_bytes", max_bytes)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise TypeError("agent.files.link: %s must be an int (seconds or bytes), not %s"
                                % (arg, type(v).__name__))
        if method not in ("GET", "PUT"):
            raise ValueError("agent.files.link: method must be 'GET' or 'PUT', not %r" % (method,))
        body: dict[str, Any] = {"path": path, "method": method}
        opts: tuple[tuple[str, Any], ...] = (("expiresIn", expires_in), ("maxBytes", max_bytes),
                                             ("contentType", content_type))
        for k, v in opts:
            if v is not None:
                body[k] = v
        return self._t.call("POST", self._agent._base + "/links", Link, json=body, retry=False)

    def upload(self, *args: Any, content_type: Optional[str] = None,
               version: Optional[int] = None) -> FileInfo:
        """Two forms:

        `upload(path, data)` (seed 001): writes `data` (streamed) at the agent path
        `path` (`/workspace/in/config.json`), as `write`.

        `upload(request_id, name, data)`: saves `data` (streamed) at
        `uploads/{request_id}/{name}` of the agent's workspace; a retry never writes
        twice (the answer then has `replayed`)."""
        if len(args) == 2:
            return self.write(need_str("agent.files.upload", "path", args[0]), args[1],
                              content_type=content_type, version=version)
        if len(args) != 3:
            raise TypeError("agent.files.upload takes (path, data) or (request_id, name, "
                            "data), not %d arguments" % len(args))
        if version is not None:
            raise TypeError("agent.files.upload(request_id, name, data) takes no version")
        request_id, name, data = args
        need_str("agent.files.upload", "request_id", request_id)
        need_str("agent.files.upload", "name", name)
        return self._t.run(one(self._upload(request_id, name, data, content_type), FileInfo))

    def tool_output(self, call_id: str, name: str, data: Body, *,
                    content_type: Optional[str] = None) -> FileInfo:
        """Saves a tool's file output (streamed) at `tool-outputs/{call_id}/{name}` of the
        workspace (a subject's: `/user/tool-outputs/...`); `call_id` is the model's
        tool-call id. A retry never writes twice (the answer then has `replayed`)."""
        need_str("agent.files.tool_output", "call_id", call_id)
        need_str("agent.files.tool_output", "name", name)
        url = "%s/tool-outputs/%s/%s" % (self._agent._base, quote_seg(call_id), quote_seg(name))
        h = {"Content-Type": content_type} if content_type else None
        return self._t.call("PUT", url, FileInfo, body=data, headers=h)

    def _upload(self, request_id: str, name: str, data: Body,
                content_type: Optional[str]) -> Req:
        url = "%s/uploads/%s/%s" % (self._agent._base, quote_seg(request_id), quote_seg(name))
        h = {"Content-Type": content_type} if content_type else None
        return Req("PUT", url, body=data, headers=h)


class AgentTools:
    """`agent.tools`: the model's file tools. `run_id` groups calls into a run."""

    def __init__(self, agent: "Agent", run: Optional["RunHandle"] = None) -> None:
        self._t, self._agent, self._run = agent._t, agent, run

    def call(self, tool: str, args: Optional[Mapping[str, Any]] = None, *,
             run_id: Optional[str] = None) -> ToolResult:
        """Runs one tool with its arguments as the API names them (camelCase)."""
        need_str("agent.tools.call", "tool", tool)
        if args is not None and not isinstance(args, Mapping):
            raise TypeError("agent.tools.%s: args must be a dict, not %s" % (
                tool, type(args).__name__))
        if run_id is None and self._run is not None:
            run_id = self._run.id
        h = {"X-Run-Id": run_id} if run_id else None
        read_only = tool in ("read", "ls", "glob", "grep")
        return self._t.run(self._call(Req(
            "POST", self._agent._base + "/tools/" + quote_seg(tool), json=dict(args or {}),
            headers=h, retry=read_only)))

    def _call(self, req: Req) -> Flow[ToolResult]:
        r = ToolResult((yield req).json())
        if self._run is not None:   # what the run wrote and presented, read again
            self._run._got((yield self._run._req()).json())
        return r

    def read(self, path: str, *, offset: Optional[int] = None, limit: Optional[int] = None,
             encoding: Optional[str] = None, run_id: Optional[str] = None) -> ToolResult:
        return self.call("read", _args(path=path, offset=offset, limit=limit,
                                       encoding=encoding), run_id=run_id)

    def write(self, path: str, content: str, *, run_id: Optional[str] = None) -> ToolResult:
        return self.call("write", {"path": path, "content": content}, run_id=run_id)

    def edit(self, path: str, old_string: str, new_string: str, *,
             replace_all: Optional[bool] = None, run_id: Optional[str] = None) -> ToolResult:
        return self.call("edit", _args(path=path, oldString=old_string, newString=new_string,
                                       replaceAll=replace_all), run_id=run_id)

    def ls(self, path: Optional[str] = None, *, run_id: Optional[str] = None) -> ToolResult:
        return self.call("ls", _args(path=path), run_id=run_id)

    def glob(self, pattern: str, path: Optional[str] = None, *,
             run_id: Optional[str] = None) -> ToolResult:
        return self.call("glob", _args(pattern=pattern, path=path), run_id=run_id)

    def grep(self, pattern: str, path: Optional[str] = None, *, glob: Optional[str] = None,
             ignore_case: Optional[bool] = None, context: Optional[int] = None,
             output_mode: Optional[str] = None, limit: Optional[int] = None,
             run_id: Optional[str] = None) -> ToolResult:
        return self.call("grep", _args(pattern=pattern, path=path, glob=glob,
                                       ignoreCase=ignore_case, context=context,
                                       outputMode=output_mode, limit=limit), run_id=run_id)

    def present_file(self, path: str, caption: Optional[str] = None, *,
                     run_id: Optional[str] = None) -> ToolResult:
        return self.call("present_file", _args(path=path, caption=caption), run_id=run_id)


class Agent:
    """An agent by id; `info` holds its record when one was fetched."""

    def __init__(self, t: Transport, agent_id: str, user: Optional[str] = None) -> None:
        need_str("agent", "agent_id", agent_id)
        if user is not None:
            _subject_id("agent", user)
            t = ForSubject(t, user)
        self._t = t
        self.id = agent_id
        #: the subject (user) this handle acts for: `X-Subject` on each call, the
        #: prompt's `user` (None: the agent's own)
        self.user = user
        self.info: Optional[AgentInfo] = None
        self._base = "/v1/agents/" + quote_seg(agent_id)
        self.files = AgentFiles(self)
        self.tools = AgentTools(self)

    def __repr__(self) -> str:
        return "Agent(%r%s)" % (self.id, ", user=%r" % self.user if self.user else "")

    def for_user(self, user: str) -> "Agent":
        """This agent acting for subject `user` (no request): its files, uploads, tool
        calls, runs, links, prompts and `resolve` are that subject's, with `/user` and
        `/attachments` among the mounts (docs/api.md "Subjects")."""
        base = self._t._t if isinstance(self._t, ForSubject) else self._t
        return Agent(base, self.id, user)

    def refresh(self) -> AgentInfo:
        return self._t.call("GET", self._base, self._got)

    def _got(self, j: Any) -> AgentInfo:
        self.info = AgentInfo(j)
        return self.info

    def delete(self) -> None:
        return self._t.call("DELETE", self._base, none)

    def set_mounts(self, mounts: Sequence[Mapping[str, Any]]) -> AgentInfo:
        """Replaces the mounts now (they apply from the agent's next call)."""
        return self._t.call("PUT", self._base + "/mounts", self._got,
                            json=[dict(m) for m in mounts])

    def run(self, text: str, files: Iterable[PromptFile] = (), *, run_id: Optional[str] = None,
            conversation: Optional[str] = None, format: Optional[str] = None,
            user: Optional[str] = None) -> "RunHandle":
        """Starts a run (seed 001): each file is uploaded first, streamed, once, under
        `uploads/{run id}/`, then the model message is built through `prompt` with the
        run's id (a retried run, the same `run_id`, uploads nothing twice). The RunHandle's
        `files` and `raw.presented` fill as the run's tool calls (`run.tools`, or any
        call with its id, then `run.refresh()`) write and present."""
        need_str("agent.run", "text", text)
        if user is not None and user != self.user:
            return self.for_user(user).run(text, files, run_id=run_id,
                                           conversation=conversation, format=format)
        rid = run_id or "run-" + uuid.uuid4().hex[:20]
        prompt = self._prompt(text, files, rid, conversation, format)
        return self._t.run(self._run(rid, prompt))

    def _run(self, rid: str, prompt: Flow[PromptResult]) -> Flow["RunHandle"]:
        message = yield from prompt
        return RunHandle(self, rid, message)

    def resolve(self, input: Any, *, as_: str = "base64") -> Any:
        """`input` (a tool's arguments) with every `{"$file": path}` in it replaced by that
        file of the agent: `{path, name, content_type, size, sha256, data}` (base64, 16 MiB
        in all) or, with `as_="url"`, a signed link instead of `data`."""
        if as_ not in ("base64", "url"):
            raise ValueError("agent.resolve: as_ must be 'base64' or 'url', not %r" % (as_,))
        return self._t.call("POST", self._base + "/resolve", _resolved,
                            json={"input": input, "as": as_})

    def get_run(self, run_id: str) -> Run:
        """What a run wrote and presented: `{run_id, files, presented}`."""
        return self._t.call("GET", self._base + "/runs/" + quote_seg(run_id), Run)

    def events(self, *, timeout: Optional[float] = None) -> EventStream:
        """The agent's events (`files_changed`, `file_presented`) as they happen."""
        return self._t.call_raw("GET", self._base + "/events", events, stream=True,
                                headers={"Accept": "text/event-stream"}, timeout=timeout)

    def prompt(self, text: str, files: Iterable[PromptFile] = (), *,
               request_id: Optional[str] = None, conversation: Optional[str] = None,
               format: Optional[str] = None, user: Optional[str] = None) -> PromptResult:
        """A user message with its files, as the model should see it. Each file that is
        not already the agent's (`{"path": ...}`) is first uploaded, streamed, to
        `uploads/{request_id}/{name}`; then the prompt names them all by path. Calling
        again with the same `request_id` (made here unless given) uploads nothing twice.
        `user`: the subject it is from (as `for_user(user).prompt(...)`): its files are
        kept as that subject's attachments, `/attachments/{request_id}/{name}`."""
        need_str("agent.prompt", "text", text)
        if user is not None and user != self.user:
            return self.for_user(user).prompt(text, files, request_id=request_id,
                                              conversation=conversation, format=format)
        rid = request_id or "req-" + uuid.uuid4().hex[:20]
        return self._t.run(self._prompt(text, files, rid, conversation, format))

    def _prompt(self, text: str, files: Iterable[PromptFile], rid: str,
                conversation: Optional[str], format: Optional[str]) -> Flow[PromptResult]:
        """The flow of prompt() (and run()); its files are checked when it is made, before
        anything is sent."""
        if isinstance(files, (str, bytes, Mapping, os.PathLike)):
            raise TypeError("agent.prompt: files must be a list of files, not one %s" %
                            type(files).__name__)
        plan = [_as_path_ref(f) or _attachment(f, i) for i, f in enumerate(files)]
        return self._prompt_flow(text, plan, rid, conversation, format)

    def _prompt_flow(self, text: str, plan: list[Any], rid: str,
                     conversation: Optional[str], format: Optional[str]) -> Flow[PromptResult]:
        refs: list[dict[str, Any]] = []
        for item in plan:
            if isinstance(item, tuple):
                name, data, ctype = item
                up = FileInfo((yield self.files._upload(rid, name, data, ctype)).json())
                item = {"path": up.path}
            refs.append(item)
        body: dict[str, Any] = {"text": text, "requestId": rid, "files": refs}
        if conversation is not None:
            body["conversation"] = conversation
        if format is not None:
            body["format"] = format
        if self.user is not None:
            body["user"] = self.user
        return PromptResult((yield Req("POST", self._base + "/prompt", json=body,
                                       retry=True)).json())

    def conversation_request(self, conversation: str, *,
                             format: Optional[str] = None) -> dict[str, Any]:
        """The whole model request of a conversation, rebuilt from its references."""
        return self._t.call(
            "GET", "%s/conversations/%s/request" % (self._base, quote_seg(conversation)),
            obj, query={"format": format})

    def subject(self, subject_id: str) -> Subject:
        """The workspace and memory of one subject (user) of this agent."""
        return Subject(self._t, self._base, subject_id)

    def put_skill(self, name: str, content: Body) -> Skill:
        """Writes skill `name` (`name.md`); copied to each subject's `skills/` when its
        session starts."""
        if not name.endswith(".md"):
            name += ".md"
        return self._t.call("PUT", self._base + "/skills/" + quote_seg(name), Skill, body=content)


def _resolved(r: Any) -> Any:
    return r.get("input")


_SUBJECT = re.compile(r"[A-Za-z0-9._@-]{1,128}")


def _subject_id(where: str, user: str) -> str:
    """`user` if it is a subject id (1..128 of A-Z a-z 0-9 . _ @ -, not . or ..), else
    ValueError naming it: one that is not would be refused by the server (400)."""
    need_str(where, "user", user)
    if not _SUBJECT.fullmatch(user) or user in (".", ".."):
        raise ValueError("%s: user %r is not a subject id (1..128 of A-Z a-z 0-9 . _ @ -, "
                         "not . or ..)" % (where, user[:140]))
    return user


def _args(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _as_path_ref(f: PromptFile) -> Optional[dict[str, Any]]:
    if isinstance(f, Mapping) and "path" in f and "data" not in f:
        return {"path": f["path"]}
    return None


def _attachment(f: PromptFile, i: int) -> tuple[str, Body, Optional[str]]:
    """(name, data, content type) of a file to upload."""
    if isinstance(f, Attachment):
        return f.name, f.data, f.content_type
    if isinstance(f, (bytes, bytearray, memoryview)):
        return "file-%d" % (i + 1), bytes(f), None
    if isinstance(f, (str, os.PathLike)):
        p = os.fspath(f)
        return os.path.basename(p), pathlib.Path(p), None
    if isinstance(f, Mapping):
        if "name" not in f or "data" not in f:
            raise ValueError("prompt file %d: a mapping needs 'name' and 'data' "
                             "(or 'path' for a file the agent has)" % (i + 1))
        ctype = f.get("content_type", f.get("contentType"))
        return str(f["name"]), f["data"], ctype
    raise TypeError("prompt file %d: %s is not bytes, a path, an Attachment or a "
                    "mapping" % (i + 1, type(f).__name__))



class RunHandle:
    """A run started by `agent.run(text, files=...)`: its `id`, the model message built
    for it (`message`, the prompt's answer), what it wrote (`files`) and the record as the
    server has it (`raw`: `run_id`, `files`, `presented`). `tools` are the agent's file
    tools with the run's id; after each call the run is read again. `refresh()` reads it
    after calls made elsewhere with the run's id."""

    def __init__(self, agent: Agent, run_id: str, message: PromptResult) -> None:
        self.agent = agent
        self.id = run_id
        self.message = message
        self.raw = Run({"runId": run_id, "files": [], "presented": []})
        self.tools = AgentTools(agent, self)

    @property
    def files(self) -> list[Record]:
        return list(self.raw.files or [])

    def refresh(self) -> "RunHandle":
        return self.agent._t.run(one(self._req(), then(self._got, self)))

    def _req(self) -> Req:
        return Req("GET", self.agent._base + "/runs/" + quote_seg(self.id))

    def _got(self, j: Any) -> None:
        self.raw = Run(j)

    def __repr__(self) -> str:
        return "RunHandle(%r)" % self.id
