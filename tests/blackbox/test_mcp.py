"""`coffer mcp --agent ID`: the agent's file tools over MCP (JSON-RPC 2.0, newline-delimited
on stdio; docs/mcp.md). Driven two ways: a Python client speaking the wire protocol (against
a cofferd and with --data DIR), and the official TypeScript SDK client (tests/mcp/client.mjs,
installed with npm on first run)."""

import json
import os
import queue
import subprocess
import tempfile
import threading
import time
import urllib.parse

import harness
from harness import check, contains, eq, expect

TIMEOUT = 90
TOOLS = ["read", "write", "edit", "ls", "glob", "grep", "present_file", "move"]
KNOWN_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MCP_DIR = os.path.join(harness.ROOT, "tests", "mcp")
_n = [0]


def new_id(prefix="mcp"):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _n[0])


def make_agent(srv, **body):
    """A new agent (own workspace at /workspace): (id, workspace volume id)."""
    aid = new_id()
    j = expect(srv.put("/v1/agents/" + aid, json=body), 201).json()
    return aid, j["workspaceVolumeId"]


def agent_file(srv, aid, path):
    r = expect(srv.get("/v1/agents/%s/files%s" % (aid, urllib.parse.quote(path))), 200)
    return r.body.decode()


class Session:
    """`coffer mcp ...` as a child process; send() a message, recv() the next line."""

    def __init__(self, *args, env=None):
        self.errf = tempfile.TemporaryFile()
        e = dict(os.environ)
        e.pop("COFFER_URL", None)
        e.pop("COFFER_KEY", None)
        e.update(env or {})
        self.cmd = [harness.bin_path("coffer"), "mcp"] + [str(a) for a in args]
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errf, env=e)
        self.lines = queue.Queue()
        self.notes = []  # the notifications coffer mcp sent, in order
        self.next_id = 0
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def stderr(self):
        self.errf.seek(0)
        return self.errf.read().decode("utf-8", "replace")

    def send_raw(self, data):
        self.proc.stdin.write(data if isinstance(data, bytes) else data.encode())
        self.proc.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg) + "\n")

    def recv(self, timeout=20):
        """The next message on stdout; every stdout line must be one JSON message."""
        try:
            line = self.lines.get(timeout=timeout * harness.SCALE)
        except queue.Empty:
            raise AssertionError("no answer from %s within %ss\nstderr:\n%s" % (
                " ".join(self.cmd), timeout * harness.SCALE, self.stderr()[-2000:]))
        check(line is not None, "coffer mcp closed stdout (exit %s)\nstderr:\n%s" % (
            self.proc.poll(), self.stderr()[-2000:]))
        check(line.endswith(b"\n"), "a message is one whole line: %r" % line[:300])
        try:
            return json.loads(line)
        except ValueError:
            raise AssertionError("stdout line is not JSON (stdout is for protocol messages "
                                 "only): %r" % line[:500])

    def request(self, method, params=None):
        """Sends a request; returns its answer (asserting the id and jsonrpc fields)."""
        self.next_id += 1
        rid = self.next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        ans = self.recv()
        while "id" not in ans and "method" in ans:  # a notification may come first
            self.notes.append(ans)
            ans = self.recv()
        eq(ans.get("jsonrpc"), "2.0", "jsonrpc of the answer to %s" % method)
        eq(ans.get("id"), rid, "id of the answer to %s: %r" % (method, ans))
        return ans

    def poll_notes(self):
        """Takes the lines written so far without asking anything: each must be a
        notification (kept in self.notes); returns how many there are now."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return len(self.notes)
            check(line is not None, "coffer mcp closed stdout (exit %s)\nstderr:\n%s" % (
                self.proc.poll(), self.stderr()[-2000:]))
            msg = json.loads(line)
            check("method" in msg and "id" not in msg, "unasked, only notifications: %r" % msg)
            self.notes.append(msg)

    def result(self, method, params=None):
        ans = self.request(method, params)
        check("result" in ans and "error" not in ans, "%s should succeed: %r" % (method, ans))
        return ans["result"]

    def initialize(self, version="2025-06-18"):
        res = self.result("initialize", {"protocolVersion": version, "capabilities": {},
                                         "clientInfo": {"name": "test_mcp", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return res

    def call(self, name, **args):
        """tools/call; returns (isError, text, structuredContent or None)."""
        res = self.result("tools/call", {"name": name, "arguments": args})
        content = res.get("content")
        check(isinstance(content, list) and content and all(
            c.get("type") == "text" and isinstance(c.get("text"), str) for c in content),
            "tools/call %s: content is [{type:text, text}]: %r" % (name, res))
        check(isinstance(res.get("isError"), bool), "isError is a boolean: %r" % res)
        sc = res.get("structuredContent")
        if sc is not None:
            check(isinstance(sc, dict) and "output" not in sc,
                  "structuredContent is the answer without output: %r" % sc)
        return res["isError"], "".join(c["text"] for c in content), sc

    def ok(self, name, **args):
        err, text, sc = self.call(name, **args)
        check(not err, "%s %r should succeed, got isError: %s" % (name, args, text))
        return text, sc

    def refused(self, name, phrase, **args):
        err, text, sc = self.call(name, **args)
        check(err, "%s %r should be an error result, got: %s" % (name, args, text))
        check(phrase.lower() in text.lower(), "%s error should say %r: %r" % (name, phrase, text))
        return text

    def close(self, timeout=20):
        """Closes stdin; coffer mcp must exit 0 with nothing more on stdout."""
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout * harness.SCALE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("coffer mcp did not exit when stdin closed")
        rest = []
        while True:
            line = self.lines.get(timeout=5)
            if line is None:
                break
            try:
                note = json.loads(line)
            except ValueError:
                note = None
            if isinstance(note, dict) and "method" in note and "id" not in note:
                self.notes.append(note)  # a notification may come at any time
            else:
                rest.append(line)
        eq(rest, [], "stdout after the last answer")
        m = harness.SANITIZER_PATTERNS.search(self.stderr())
        check(not m, "sanitizer report from coffer mcp:\n%s" % self.stderr()[-4000:])
        eq(code, 0, "coffer mcp exit code at end of input (stderr: %s)" % self.stderr()[-1000:])
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def server_args(srv):
    return ["--server", srv.url, "--key", srv.key]


# ------------------------------------------------------------ shared checks

def check_initialize(s):
    res = s.initialize()
    eq(res.get("protocolVersion"), "2025-06-18", "protocolVersion")
    check(isinstance(res.get("capabilities", {}).get("tools"), dict),
          "capabilities.tools is an object: %r" % res)
    info = res.get("serverInfo") or {}
    check(info.get("name") and info.get("version"), "serverInfo has name and version: %r" % res)
    eq(s.result("ping"), {}, "ping answers {}")


def check_tools_list(s):
    tools = s.result("tools/list").get("tools")
    check(isinstance(tools, list), "tools/list has a tools array")
    eq(sorted(t["name"] for t in tools), sorted(TOOLS), "tool names")
    by = {t["name"]: t for t in tools}
    for t in tools:
        check(isinstance(t.get("description"), str) and len(t["description"]) > 80,
              "%s has a description written for a model: %r" % (t["name"], t.get("description")))
        sch = t.get("inputSchema")
        check(isinstance(sch, dict) and sch.get("type") == "object"
              and isinstance(sch.get("properties"), dict), "%s inputSchema: %r" % (t["name"], sch))
        for pname, p in sch["properties"].items():
            check(p.get("type") in ("string", "integer", "boolean") and p.get("description"),
                  "%s.%s has a type and a description: %r" % (t["name"], pname, p))
    want = {
        "read": ({"path": "string", "offset": "integer", "limit": "integer",
                  "encoding": "string"}, ["path"]),
        "write": ({"path": "string", "content": "string"}, ["path", "content"]),
        "edit": ({"path": "string", "oldString": "string", "newString": "string",
                  "replaceAll": "boolean"}, ["path", "oldString", "newString"]),
        "ls": ({"path": "string"}, []),
        "glob": ({"pattern": "string", "path": "string"}, ["pattern"]),
        "grep": ({"pattern": "string", "path": "string", "glob": "string",
                  "ignoreCase": "boolean", "context": "integer", "outputMode": "string",
                  "limit": "integer"}, ["pattern"]),
        "present_file": ({"path": "string", "caption": "string"}, ["path"]),
    }
    for name, (props, required) in want.items():
        sch = by[name]["inputSchema"]
        eq({k: v["type"] for k, v in sch["properties"].items()}, props, "%s properties" % name)
        eq(sorted(sch.get("required", [])), sorted(required), "%s required" % name)
    eq(by["grep"]["inputSchema"]["properties"]["outputMode"].get("enum"),
       ["content", "files", "count"], "grep outputMode enum")
    eq(by["read"]["inputSchema"]["properties"]["encoding"].get("enum"),
       ["utf-8", "base64"], "read encoding enum")
    return by


def check_protocol_errors(s):
    ans = s.request("no/such/method")
    eq(ans.get("error", {}).get("code"), -32601, "unknown method: %r" % ans)
    s.send_raw(b'{"jsonrpc":"2.0","id":99,"method":\n')
    ans = s.recv()
    eq(ans.get("error", {}).get("code"), -32700, "bad JSON: %r" % ans)
    eq(ans.get("id"), None, "a parse error answers with id null")
    # a notification gets no answer, not even an unknown one: the next answer is ping's
    s.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
    eq(s.result("ping"), {}, "ping after a notification")
    ans = s.request("tools/call", {"name": "rm", "arguments": {}})
    eq(ans.get("error", {}).get("code"), -32602, "unknown tool: %r" % ans)


def file_tools_round(s, srv_put=None):
    """write, read, edit, grep, argument errors; returns nothing. srv_put, when given, is
    called to change the file behind the agent's back (then an edit is refused as stale)."""
    text, sc = s.ok("write", path="/workspace/docs/plan.md", content="# Plan\nstep one\nstep two\n")
    contains(text, "/workspace/docs/plan.md", "write output")
    eq(sc.get("ok"), True, "write structuredContent.ok")
    check(isinstance(sc.get("version"), int), "write structuredContent has the version: %r" % sc)
    check("version" not in text.lower(), "the model's text has no versions: %r" % text)
    text, sc = s.ok("read", path="/workspace/docs/plan.md")
    eq(text.splitlines()[:3], ["     1\t# Plan", "     2\tstep one", "     3\tstep two"],
       "read: numbered lines")
    eq(sc.get("totalLines"), 3, "read structuredContent.totalLines")
    text, sc = s.ok("edit", path="docs/plan.md", oldString="step two", newString="step 2")
    eq(sc.get("replacements"), 1, "edit replacements")
    text, _ = s.ok("read", path="/workspace/docs/plan.md", offset=3)
    eq(text.splitlines()[0], "     3\tstep 2", "read after edit")
    # a refusal the model can act on: isError with the reason
    s.refused("edit", "not found", path="/workspace/docs/plan.md", oldString="step nine",
              newString="x")
    # an API error (bad arguments) is a tool result with isError, not a JSON-RPC error
    s.refused("read", "path", **{})
    s.refused("grep", "regex", pattern="(unclosed")
    s.refused("read", "..", path="/workspace/../etc/passwd")
    text, sc = s.ok("grep", pattern="step \\d", path="/workspace")
    contains(text, "/workspace/docs/plan.md:3:step 2", "grep content")
    eq(sc.get("filesMatched"), 1, "grep structuredContent.filesMatched")
    text, _ = s.ok("grep", pattern="STEP", ignoreCase=True, outputMode="count")
    contains(text, "/workspace/docs/plan.md:2", "grep count")
    text, _ = s.ok("ls", path="/workspace/docs")
    contains(text, "plan.md", "ls")
    text, _ = s.ok("glob", pattern="**/*.md")
    contains(text, "/workspace/docs/plan.md", "glob")
    text, sc = s.ok("present_file", path="/workspace/docs/plan.md", caption="the plan")
    contains(text, "/workspace/docs/plan.md", "present_file output")
    check(sc.get("url"), "present_file structuredContent has the link: %r" % sc)
    s.refused("present_file", "no such file", path="/workspace/docs/none.md")
    if srv_put:
        s.ok("read", path="/workspace/docs/plan.md")
        srv_put("docs/plan.md", b"# Plan\nstep one\nstep 2\nadded elsewhere\n")
        s.refused("edit", "changed since you last read it", path="/workspace/docs/plan.md",
                  oldString="step one", newString="step 1")
        text, _ = s.ok("read", path="/workspace/docs/plan.md")
        contains(text, "added elsewhere", "read again sees the other change")
        s.ok("edit", path="/workspace/docs/plan.md", oldString="step one", newString="step 1")


# ------------------------------------------------------------ against a cofferd

def test_stdio_session_server(srv):
    aid, ws = make_agent(srv)
    s = Session("--agent", aid, *server_args(srv))
    try:
        check_initialize(s)
        check_tools_list(s)
        file_tools_round(s, srv_put=lambda p, data: srv.put_ok(ws, p, data))
        srv.put_ok(ws, "fresh.txt", b"never read\n")
        s.refused("write", "read it first", path="/workspace/fresh.txt", content="clobber")
        check_protocol_errors(s)
        s.close()
    finally:
        s.kill()
    eq(agent_file(srv, aid, "/workspace/docs/plan.md"),
       "# Plan\nstep 1\nstep 2\nadded elsewhere\n", "the file as the volume holds it")


def test_env_and_global_flags(srv):
    """COFFER_URL/COFFER_KEY as for every command; --server/--key may come first."""
    aid, _ = make_agent(srv)
    s = Session("--agent", aid, env={"COFFER_URL": srv.url, "COFFER_KEY": srv.key})
    try:
        s.initialize()
        s.ok("write", path="env.txt", content="via env\n")
        s.close()
    finally:
        s.kill()
    eq(agent_file(srv, aid, "/workspace/env.txt"), "via env\n", "written via env settings")
    # a key bound to the agent is enough
    bound = expect(srv.post("/v1/keys", json={"agent": aid}), 200, 201).json()["key"]
    s = Session("--agent", aid, "--server", srv.url, "--key", bound)
    try:
        s.initialize()
        eq(len(s.result("tools/list")["tools"]), len(TOOLS), "tools with an agent-bound key")
        text, _ = s.ok("read", path="env.txt")
        contains(text, "via env", "read with an agent-bound key")
        s.close()
    finally:
        s.kill()
    p = subprocess.run([harness.bin_path("coffer"), "--server", srv.url, "--key", srv.key,
                        "mcp", "--agent", aid], input=b"", capture_output=True,
                       timeout=30 * harness.SCALE)
    eq((p.returncode, p.stdout), (0, b""), "global flags before mcp; empty input ends cleanly")


def test_run_id(srv):
    """--run-id groups the session's calls into one run (X-Run-Id)."""
    aid, _ = make_agent(srv)
    run = new_id("run")
    s = Session("--agent", aid, "--run-id", run, *server_args(srv))
    try:
        s.initialize()
        s.ok("write", path="/workspace/out/report.md", content="# Report\n")
        s.ok("present_file", path="/workspace/out/report.md", caption="the report")
        s.close()
    finally:
        s.kill()
    j = expect(srv.get("/v1/agents/%s/runs/%s" % (aid, run)), 200).json()
    eq([f["path"] for f in j.get("files", [])], ["/workspace/out/report.md"], "run files")
    eq([(p["path"], p.get("caption")) for p in j.get("presented", [])],
       [("/workspace/out/report.md", "the report")], "run presented")


def test_initialize_versions(srv):
    aid, _ = make_agent(srv)
    s = Session("--agent", aid, *server_args(srv))
    try:
        eq(s.initialize("2025-11-25")["protocolVersion"], "2025-11-25", "a known newer version")
        eq(s.initialize("2999-01-01")["protocolVersion"], "2025-06-18",
           "an unknown version gets ours")
        # a batch (older clients) answers every request in one array
        s.send([{"jsonrpc": "2.0", "id": "a", "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": "b", "method": "tools/list"}])
        ans = s.recv()
        check(isinstance(ans, list), "a batch answer is an array: %r" % ans)
        eq([a.get("id") for a in ans], ["a", "b"], "batch answer ids")
        s.close()
    finally:
        s.kill()


def test_file_tools_off_lists_none(srv):
    aid, _ = make_agent(srv, fileTools=False)
    s = Session("--agent", aid, *server_args(srv))
    try:
        s.initialize()
        eq(s.result("tools/list").get("tools"), [], "fileTools:false lists no tools")
        s.refused("read", "fileTools", path="/workspace/a.txt")
        # turned on again: listed at the next tools/list
        expect(srv.put("/v1/agents/" + aid, json={"fileTools": True}), 200)
        eq(len(s.result("tools/list")["tools"]), len(TOOLS), "fileTools back on")
        s.close()
    finally:
        s.kill()


def test_startup_errors():
    """An unknown agent or an unreachable cofferd fails at start (exit 1, stderr only)."""
    with harness.server() as srv:
        exe = harness.bin_path("coffer")
        p = subprocess.run([exe, "mcp", "--agent", "nobody-here"] + server_args(srv),
                           input=b"", capture_output=True, timeout=30 * harness.SCALE)
        eq((p.returncode, p.stdout), (1, b""), "unknown agent: exit 1, nothing on stdout")
        contains(p.stderr.decode(), "nobody-here", "stderr names the agent")
        p = subprocess.run([exe, "mcp"] + server_args(srv), input=b"", capture_output=True,
                           timeout=30 * harness.SCALE)
        eq((p.returncode, p.stdout), (2, b""), "no --agent: usage error")
        url = srv.url
    p = subprocess.run([exe, "mcp", "--agent", "x", "--server", url, "--key", "k"],
                       input=b"", capture_output=True, timeout=30 * harness.SCALE)
    eq((p.returncode, p.stdout), (1, b""), "cofferd gone: exit 1, nothing on stdout")
    contains(p.stderr.decode(), "cannot reach", "stderr says why")


# ------------------------------------------------------------ --data DIR

def test_stdio_session_data_dir():
    """The same session with the data dir opened directly (cofferd stopped), in org_default;
    across sessions: read in one, change through the volume API with cofferd running, and
    the next session (its own read scope) must read the file before it edits it."""
    with harness.server() as srv:
        aid, ws = make_agent(srv)
        off, _ = make_agent(srv, fileTools=False)
        srv.put_ok(ws, "seed.txt", b"seeded through the API\n")
        eq(srv.stop(), 0, "cofferd stopped")
        s = Session("--agent", aid, "--data", srv.data)
        try:
            check_initialize(s)
            check_tools_list(s)
            text, _ = s.ok("read", path="/workspace/seed.txt")
            contains(text, "seeded through the API", "read of a file written through the API")
            file_tools_round(s)
            check_protocol_errors(s)
            s.ok("read", path="/workspace/docs/plan.md")
            s.close()
        finally:
            s.kill()
        s = Session("--agent", off, "--data", srv.data)
        try:
            s.initialize()
            eq(s.result("tools/list").get("tools"), [], "fileTools:false lists no tools")
            s.close()
        finally:
            s.kill()
        p = subprocess.run([harness.bin_path("coffer"), "mcp", "--agent", "nobody", "--data",
                            srv.data], input=b"", capture_output=True, timeout=30 * harness.SCALE)
        eq((p.returncode, p.stdout), (1, b""), "--data, unknown agent: exit 1")

        srv.start()
        eq(agent_file(srv, aid, "/workspace/docs/plan.md"), "# Plan\nstep one\nstep 2\n",
           "what --data wrote is what cofferd serves")
        srv.put_ok(ws, "docs/plan.md", b"# Plan\nstep one\nstep 2\nadded elsewhere\n")
        eq(srv.stop(), 0, "cofferd stopped")
        s = Session("--agent", aid, "--data", srv.data)
        try:
            s.initialize()
            # a new process is a new MCP session: what the last one read does not count
            # (api.md "Read scopes")
            s.refused("edit", "read it first", path="/workspace/docs/plan.md",
                      oldString="step one", newString="step 1")
            s.ok("read", path="/workspace/docs/plan.md")
            s.ok("edit", path="/workspace/docs/plan.md", oldString="step one",
                 newString="step 1")
            s.close()
        finally:
            s.kill()
        srv.start()
        eq(agent_file(srv, aid, "/workspace/docs/plan.md"),
           "# Plan\nstep 1\nstep 2\nadded elsewhere\n", "final content")

    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([harness.bin_path("coffer"), "mcp", "--agent", "a", "--data", d],
                           input=b"", capture_output=True, timeout=30 * harness.SCALE)
        eq((p.returncode, p.stdout), (1, b""), "--data on a dir that is not a data dir")
        contains(p.stderr.decode(), "not a coffer data dir", "stderr says why")
        eq(os.listdir(d), [], "nothing created in it")


# ------------------------------------------------------------ the official SDK client

def sdk_ready():
    """Node and the pinned @modelcontextprotocol/sdk in tests/mcp/node_modules
    (harness.npm_ready; test_mcp and test_relay_mcp run in parallel)."""
    return harness.npm_ready(MCP_DIR, "@modelcontextprotocol/sdk", "the MCP SDK end-to-end test")


@harness.timeout(400)
def test_sdk_client_end_to_end(srv):
    node = sdk_ready()
    aid, ws = make_agent(srv)
    p = subprocess.run([node, os.path.join(MCP_DIR, "client.mjs"), "--coffer",
                        harness.bin_path("coffer"), "--agent", aid, "--server", srv.url,
                        "--key", srv.key, "--volume", ws],
                       capture_output=True, timeout=120 * harness.SCALE)
    check(p.returncode == 0, "client.mjs failed (exit %s):\nstdout: %s\nstderr: %s" % (
        p.returncode, p.stdout.decode()[-2000:], p.stderr.decode()[-3000:]))
    m = harness.SANITIZER_PATTERNS.search(p.stderr.decode("utf-8", "replace"))
    check(not m, "sanitizer report from coffer mcp:\n%s" % p.stderr.decode()[-4000:])
    try:
        sm = json.loads(p.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError("client.mjs printed no JSON summary:\n%s\nstderr: %s" % (
            p.stdout.decode()[-2000:], p.stderr.decode()[-2000:]))
    eq(sm["serverInfo"].get("name"), "coffer", "serverInfo.name")
    check(sm["protocolVersion"] in KNOWN_VERSIONS, "negotiated version: %r" % sm["protocolVersion"])
    check("tools" in sm["capabilities"], "tools capability: %r" % sm["capabilities"])
    eq(sorted(t["name"] for t in sm["tools"]), sorted(TOOLS), "tools listed through the SDK")
    for t in sm["tools"]:
        eq(t["inputSchema"].get("type"), "object", "%s inputSchema.type" % t["name"])
    for step in ("write", "read", "edit", "readAfterEdit", "grep"):
        check(sm[step]["isError"] is False, "%s through the SDK: %r" % (step, sm[step]))
        eq(sm[step]["contentTypes"], ["text"], "%s content" % step)
    eq(sm["read"]["text"].splitlines(), ["     1\t# Notes", "     2\talpha beta", "     3\tgamma"],
       "read text")
    contains(sm["readAfterEdit"]["text"], "alpha BETA", "edit applied")
    eq(sm["edit"]["structured"].get("replacements"), 1, "edit structuredContent")
    eq(sm["externalPutStatus"], 200, "the change through the volume API")
    check(sm["staleEdit"]["isError"] is True, "stale edit refused: %r" % sm["staleEdit"])
    contains(sm["staleEdit"]["text"], "changed since you last read it", "stale edit message")
    contains(sm["grep"]["text"], "/workspace/sdk/notes.md:4:changed elsewhere", "grep")
    check(sm["present"]["isError"] is False and sm["present"]["structured"].get("url"),
          "present_file through the SDK: %r" % sm["present"])
    check(sm["badArgs"]["isError"] is True, "bad arguments: isError: %r" % sm["badArgs"])
    contains(sm["badArgs"]["text"], "path", "bad arguments message")
    eq(sm["ping"], True, "ping through the SDK")
    eq(agent_file(srv, aid, "/workspace/sdk/notes.md"),
       "# Notes\nalpha BETA\ngamma\nchanged elsewhere\n", "the stale edit changed nothing")
