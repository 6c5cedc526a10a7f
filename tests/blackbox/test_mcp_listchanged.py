"""MCP, issue 39 item 2: notifications/tools/list_changed when relay tools come and go (a
relay session of the agent connects, or ends). Over Streamable HTTP the official SDK client
gets it on the session's GET stream; over stdio `coffer mcp` writes it as a line. Each
change is told once: what the session was last told (its tools/list, its notifications) is
what a change is measured against."""

import json
import os
import queue
import subprocess
import tempfile
import threading

import harness
from harness import EventStream, check, eq, expect
from relay_fake import FakeClient, create, make_agent as relay_agent, wait_status
from test_mcp import MCP_DIR, Session, new_id, sdk_ready, server_args
from test_mcp_http import init

RELAY_TOOLS = {"read_file", "write_file", "list_directory", "search_files", "relay_sessions"}
NOTE = "notifications/tools/list_changed"


def _relay_client(srv, agent):
    s = create(srv, agent)
    root = tempfile.mkdtemp(prefix="relay-")
    with open(os.path.join(root, "a.txt"), "w") as f:
        f.write("hello\n")
    c = FakeClient(srv, s["uid"], s["connectToken"], root)
    eq(c.status, 200, "connect status")
    return s, c


def _end(srv, s, c):
    expect(srv.delete("/v1/relay/sessions/" + s["uid"]), 200)
    c.close()


@harness.timeout(300)
def test_sdk_client_told_when_relay_tools_come_and_go(srv):
    node = sdk_ready()
    agent = relay_agent(srv, new_id("lc"))
    errf = tempfile.TemporaryFile()
    p = subprocess.Popen([node, os.path.join(MCP_DIR, "listchanged.mjs"), "--server", srv.url,
                          "--key", srv.key, "--agent", agent],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf)
    lines = queue.Queue()

    def pump():
        for line in p.stdout:
            lines.put(json.loads(line))
    threading.Thread(target=pump, daemon=True).start()
    seen = []

    def events(kind, n):
        while True:
            try:
                seen.append(lines.get_nowait())
            except queue.Empty:
                break
        if p.poll() not in (None, 0):
            errf.seek(0)
            raise AssertionError("listchanged.mjs failed (exit %s): %s" % (
                p.returncode, errf.read().decode()[-3000:]))
        got = [e for e in seen if e["event"] == kind]
        return got if len(got) >= n else None

    try:
        ready = harness.until(lambda: events("ready", 1), "the SDK client ready", 120)[0]
        eq(ready["capabilities"]["tools"].get("listChanged"), True, "listChanged")
        eq(RELAY_TOOLS & set(ready["tools"]), set(), "no relay tools without a session")
        s, c = _relay_client(srv, agent)
        got = harness.until(lambda: events("changed", 1), "list_changed: a session connected")
        check(RELAY_TOOLS <= set(got[0]["tools"]), "the relay tools listed: %r" % got[0])
        _end(srv, s, c)
        got = harness.until(lambda: events("changed", 2), "list_changed: the session ended")
        eq(RELAY_TOOLS & set(got[1]["tools"]), set(), "the relay tools gone: %r" % got[1])
    finally:
        p.stdin.close()
        code = p.wait(60 * harness.SCALE)
    errf.seek(0)
    eq(code, 0, "listchanged.mjs exit (stderr: %s)" % errf.read().decode()[-3000:])
    events("changed", 0)
    eq(len([e for e in seen if e["event"] == "changed"]), 2, "one notification per change")


def test_stdio_told_when_relay_tools_come_and_go(srv):
    agent = relay_agent(srv, new_id("lcs"))
    m = Session("--agent", agent, *server_args(srv))
    eq(m.initialize()["capabilities"]["tools"].get("listChanged"), True, "listChanged")
    names = lambda: {t["name"] for t in m.result("tools/list")["tools"]}  # noqa: E731
    eq(RELAY_TOOLS & names(), set(), "no relay tools without a session")
    s, c = _relay_client(srv, agent)
    harness.until(lambda: m.poll_notes() >= 1, "list_changed: a session connected")
    eq(m.notes[0], {"jsonrpc": "2.0", "method": NOTE}, "the notification")
    check(RELAY_TOOLS <= names(), "the relay tools listed")
    _end(srv, s, c)
    harness.until(lambda: m.poll_notes() >= 2, "list_changed: the session ended")
    eq(RELAY_TOOLS & names(), set(), "the relay tools gone")
    m.close()
    eq(len(m.notes), 2, "one notification per change: %r" % m.notes)


def test_get_stream_on_the_wire(srv):
    agent = relay_agent(srv, new_id("lcw"))
    q = {"agent": agent}
    res, h = init(srv, q)
    eq(res["result"]["capabilities"], {"tools": {"listChanged": True}}, "capabilities")
    path = "/mcp?agent=" + agent
    sse = dict(h, Accept="text/event-stream")
    # refusals
    r = expect(srv.get("/mcp", query=q, headers=h), 406)
    check("text/event-stream" in r.json()["error"]["message"], "406 says why: %r" % r.json())
    expect(srv.get("/mcp", query=q, headers={"Accept": "text/event-stream"}), 400)
    expect(srv.get("/mcp", query=q, headers=dict(sse, **{"Mcp-Session-Id": "0" * 32})), 404)
    expect(srv.get("/mcp", query=q, headers=dict(sse, **{"MCP-Protocol-Version": "1999"})), 400)
    expect(srv.get("/mcp", query=q, headers=dict(sse, Origin="http://evil.example")), 403)
    expect(srv.get("/mcp", query={"agent": agent, "user": "bob"}, headers=sse), 404)
    # the stream tells the change once the client has listed the tools
    expect(srv.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    query=q, headers=h), 200)
    one = EventStream(srv, path, headers=sse)
    s, c = _relay_client(srv, agent)
    wait_status(srv, s["uid"], "active")
    got = one.expect("message")
    eq(got[0], {"jsonrpc": "2.0", "method": NOTE}, "the notification")
    # a newer stream of the session ends the older; it knows the change was told
    two = EventStream(srv, path, headers=sse)
    harness.until(lambda: one.done, "the older stream ended")
    _end(srv, s, c)
    two.expect("message")
    eq(len(one.events) + len(two.events), 2, "one notification per change")
    # DELETE ends the session and its stream
    expect(srv.delete("/mcp", headers=h), 204)
    harness.until(lambda: two.done, "the stream ended with its session")
    one.close()
    two.close()
