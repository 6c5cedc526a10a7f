"""MCP, issue 39 item 2: the instructions name each mount's volume; the relay tools take
`session` (relay_sessions lists them) and refuse to pick one of several; read-before-write
is kept per MCP session (a `coffer mcp` process, a /mcp session) as well as per agent; and
the `move` tool over the HTTP tools route and MCP."""

import os
import tempfile

import harness
from harness import check, contains, eq, expect
from relay_fake import FakeClient, create, make_agent as relay_agent, wait_status
from test_mcp import Session, make_agent, new_id, server_args
from test_mcp_http import init


def _tool(srv, aid, tool, headers=None, **args):
    return expect(srv.post("/v1/agents/%s/tools/%s" % (aid, tool), json=args,
                           headers=headers), 200).json()


def _volume(srv, name):
    return expect(srv.post("/v1/volumes", json={"name": name}), 201).json()["id"]


def test_instructions_name_the_mounts_and_their_volumes(srv):
    docs = _volume(srv, new_id("docs"))
    name = expect(srv.get("/v1/volumes/" + docs), 200).json()["name"]
    aid, ws = make_agent(srv, mounts=[{"volumeId": docs, "path": "/docs", "mode": "ro"}])
    s = Session("--agent", aid, *server_args(srv))
    res = s.initialize()
    text = res["instructions"]
    contains(text, '/docs (volume "%s", read-only)' % name, "the read-only mount")
    contains(text, '/workspace (volume "workspace of agent %s", the agent\'s workspace, '
             'read-write)' % aid, "the workspace")
    contains(text, "relative paths resolve against /docs", "the first mount")
    s.close()


def test_move_tool_over_http_and_mcp(srv):
    other = _volume(srv, new_id("other"))
    ro = _volume(srv, new_id("ro"))
    aid, ws = make_agent(srv, mounts=[{"volumeId": other, "path": "/other", "mode": "rw"},
                                      {"volumeId": ro, "path": "/ro", "mode": "ro"},
                                      {"workspace": True}])
    for p, body in (("a.md", b"alpha\n"), ("b.md", b"beta\n"), ("c.md", b"gamma\n")):
        expect(srv.put("/v1/volumes/%s/files/%s" % (ws, p), body), 201)
    expect(srv.put("/v1/volumes/%s/files/r.md" % ro, b"ro\n"), 201)
    a = _tool(srv, aid, "move", **{"from": "/workspace/a.md", "to": "/workspace/a2.md"})
    check(not a["ok"], "an unread file is not moved: %r" % a)
    contains(a["output"], "read it first", "why")
    _tool(srv, aid, "read", path="/workspace/a.md")
    _tool(srv, aid, "read", path="/workspace/b.md")
    a = _tool(srv, aid, "move", **{"from": "/workspace/a.md", "to": "/workspace/b.md"})
    check(not a["ok"], "onto an existing file without overwrite: %r" % a)
    contains(a["output"], "exists", "why")
    a = _tool(srv, aid, "move", **{"from": "/workspace/a.md", "to": "/workspace/sub/a2.md"})
    check(a["ok"] and a["sameVolume"], "moved within the workspace: %r" % a)
    expect(srv.get("/v1/volumes/%s/files/a.md" % ws), 404)
    eq(expect(srv.get("/v1/volumes/%s/files/sub/a2.md" % ws), 200).body, b"alpha\n", "moved")
    # the moved file counts as read: it moves on, onto b.md (read) with overwrite
    a = _tool(srv, aid, "move", **{"from": "/workspace/sub/a2.md", "to": "/workspace/b.md",
                                   "overwrite": True})
    check(a["ok"], "overwrite a file read: %r" % a)
    eq(expect(srv.get("/v1/volumes/%s/files/b.md" % ws), 200).body, b"alpha\n", "replaced")
    # a source changed since it was read
    _tool(srv, aid, "read", path="/workspace/c.md")
    expect(srv.put("/v1/volumes/%s/files/c.md" % ws, b"changed\n"), 200)
    a = _tool(srv, aid, "move", **{"from": "/workspace/c.md", "to": "/other/c.md"})
    check(not a["ok"], "a changed source: %r" % a)
    contains(a["output"], "changed since you last read it", "why")
    # read-only mounts, both ways
    _tool(srv, aid, "read", path="/ro/r.md")
    a = _tool(srv, aid, "move", **{"from": "/ro/r.md", "to": "/workspace/r.md"})
    check(not a["ok"], "from a read-only mount: %r" % a)
    contains(a["output"], "read-only", "why")
    _tool(srv, aid, "read", path="/workspace/c.md")
    a = _tool(srv, aid, "move", **{"from": "/workspace/c.md", "to": "/ro/c.md"})
    check(not a["ok"], "onto a read-only mount: %r" % a)
    contains(a["output"], "read-only", "why")
    # across two volumes, through MCP: a copy then a removal, one change each
    seq_ws = expect(srv.get("/v1/volumes/" + ws), 200).json()["seq"]
    seq_other = expect(srv.get("/v1/volumes/" + other), 200).json()["seq"]
    s = Session("--agent", aid, *server_args(srv))
    s.initialize()
    s.ok("read", path="/workspace/c.md")
    text, sc = s.ok("move", **{"from": "/workspace/c.md", "to": "/other/moved/c.md"})
    contains(text, "moved /workspace/c.md to /other/moved/c.md", "the answer")
    eq((sc["sameVolume"], sc["sourceRemoved"]), (False, True), "structured")
    s.close()
    expect(srv.get("/v1/volumes/%s/files/c.md" % ws), 404)
    eq(expect(srv.get("/v1/volumes/%s/files/moved/c.md" % other), 200).body, b"changed\n",
       "copied across")
    eq(expect(srv.get("/v1/volumes/" + ws), 200).json()["seq"], seq_ws + 1, "one change there")
    eq(expect(srv.get("/v1/volumes/" + other), 200).json()["seq"], seq_other + 1,
       "one change here")


def test_read_before_write_per_mcp_session(srv):
    aid, ws = make_agent(srv)
    expect(srv.put("/v1/volumes/%s/files/f.md" % ws, b"one\n"), 201)
    a = Session("--agent", aid, *server_args(srv))
    b = Session("--agent", aid, *server_args(srv))
    a.initialize()
    b.initialize()
    a.ok("read", path="/workspace/f.md")
    b.refused("write", "read it first", path="/workspace/f.md", content="from b\n")
    b.refused("edit", "read it first", path="/workspace/f.md", oldString="one",
              newString="b")
    a.ok("edit", path="/workspace/f.md", oldString="one", newString="two")
    # the agent-wide rule holds for the HTTP tools: the agent wrote it last
    r = _tool(srv, aid, "write", path="/workspace/f.md", content="http\n")
    check(r["ok"], "the HTTP tools keep the agent-wide record: %r" % r)
    # and A's record is its own: the HTTP write changed the file since A wrote it
    a.refused("write", "changed since you last read it", path="/workspace/f.md",
              content="a again\n")
    a.close()
    b.close()
    # two /mcp sessions of one agent
    q = {"agent": aid}
    _, ha = init(srv, q)
    _, hb = init(srv, q)

    def call(h, name, **args):
        r = expect(srv.post("/mcp", query=q, headers=h, json={
            "jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": name, "arguments": args}}), 200).json()["result"]
        return r["isError"], r["content"][0]["text"]

    eq(call(ha, "read", path="/workspace/f.md")[0], False, "session A reads")
    err, text = call(hb, "write", path="/workspace/f.md", content="hb\n")
    check(err, "session B did not read it: %r" % text)
    contains(text, "read it first", "why")
    err, text = call(ha, "write", path="/workspace/f.md", content="ha\n")
    check(not err, "session A read it: %r" % text)
    # a read scope sent to the HTTP tools route: its own record
    r = _tool(srv, aid, "write", headers={"X-Mcp-Session": "fresh"}, path="/workspace/f.md",
              content="x\n")
    check(not r["ok"], "a new scope has read nothing: %r" % r)
    contains(r["output"], "read it first", "why")
    expect(srv.post("/v1/agents/%s/tools/read" % aid, json={"path": "/workspace/f.md"},
                    headers={"X-Mcp-Session": "bad\x01"}), 400)


def _relay_client(srv, agent, files):
    s = create(srv, agent)
    root = tempfile.mkdtemp(prefix="relay-")
    for p, data in files.items():
        with open(os.path.join(root, p), "w") as f:
            f.write(data)
    c = FakeClient(srv, s["uid"], s["connectToken"], root)
    eq(c.status, 200, "connect status")
    wait_status(srv, s["uid"], "active")
    return s, c


def test_relay_tools_take_the_session(srv):
    agent = relay_agent(srv, new_id("rs"))
    s1, c1 = _relay_client(srv, agent, {"a.txt": "first\n"})
    s2, c2 = _relay_client(srv, agent, {"a.txt": "second\n"})
    m = Session("--agent", agent, *server_args(srv))
    m.initialize()
    tools = {t["name"]: t for t in m.result("tools/list")["tools"]}
    sch = tools["read_file"]["inputSchema"]["properties"]
    contains(sch["session"]["description"], "relay_sessions", "session names where ids come from")
    contains(tools["read_file"]["description"], "relay_sessions", "and so does the tool")
    text, sc = m.ok("relay_sessions")
    eq(sorted(x["uid"] for x in sc["sessions"]), sorted([s1["uid"], s2["uid"]]), "listed")
    text = m.refused("read_file", "give session", path="a.txt")
    contains(text, s1["uid"], "the error lists the sessions")
    contains(text, s2["uid"], "both")
    eq(m.ok("read_file", path="a.txt", session=s2["uid"])[0], "second\n", "the one named")
    eq(m.ok("read_file", path="a.txt", session=s1["uid"])[0], "first\n", "the other")
    m.refused("read_file", "no connected session", path="a.txt", session="rs_nope")
    expect(srv.delete("/v1/relay/sessions/" + s2["uid"]), 200)
    eq(m.ok("read_file", path="a.txt")[0], "first\n", "one session: used without naming it")
    m.close()
    c1.close()
    c2.close()
