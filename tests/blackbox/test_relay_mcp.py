"""`coffer mcp` and relay sessions: with an active (or paused) relay session of the agent,
tools/list adds read_file, write_file, list_directory and search_files, each relayed
through POST /v1/relay/sessions/{uid}/ops to the user's side (here the fake client); the
server's refusals come back as error results the model reads."""

import os

from harness import check, eq, expect
from test_mcp import Session
from test_relay import _session

RELAY_TOOLS = ["read_file", "write_file", "list_directory", "search_files"]


def _names(s):
    return [t["name"] for t in s.result("tools/list")["tools"]]


def test_relay_tools_only_with_a_session(srv):
    s, c, root = _session(srv, files={"a.txt": "hello relay\n"})
    m = Session("--agent", s["agent"], "--server", srv.url, "--key", srv.key)
    m.initialize()
    names = _names(m)
    for t in RELAY_TOOLS:
        check(t in names, "%s offered: %r" % (t, names))
    check("read" in names, "the agent's own tools stay")
    expect(srv.delete("/v1/relay/sessions/" + s["uid"]), 200)
    names = _names(m)
    for t in RELAY_TOOLS:
        check(t not in names, "%s gone with the session: %r" % (t, names))
    m.refused("read_file", "no active relay session", path="a.txt")
    m.close()
    c.close()


def test_relay_tools_round_trip(srv):
    s, c, root = _session(srv, files={"a.txt": "hello relay\n", "d/b.txt": "relay two\n"})
    m = Session("--agent", s["agent"], "--server", srv.url, "--key", srv.key)
    m.initialize()
    text, sc = m.ok("read_file", path="a.txt")
    eq(text, "hello relay\n", "read_file text")
    eq(sc["size"], 12, "structured")
    text, _ = m.ok("write_file", path="out/new.txt", content="from mcp")
    check("wrote out/new.txt" in text, text)
    with open(os.path.join(root, "out/new.txt")) as f:
        eq(f.read(), "from mcp", "written in the user's folder")
    text, _ = m.ok("list_directory")
    eq(text.split("\n")[0:2], ["a.txt  12", "d/"], "listing text")
    text, sc = m.ok("search_files", pattern="relay")
    eq(sorted(r["file"] for r in sc["results"]), ["a.txt", "d/b.txt"], "search")
    check("a.txt:1:hello relay" in text, text)
    m.close()
    c.close()


def test_relay_refusals_are_error_results(srv):
    s, c, _ = _session(srv, files={".env": "SECRET=1"}, client_mode="readonly")
    m = Session("--agent", s["agent"], "--server", srv.url, "--key", srv.key)
    m.initialize()
    m.refused("read_file", "excluded", path=".env")
    m.refused("write_file", "read-only", path="a.txt", content="x")
    m.refused("read_file", "validation_error", path="../x")
    eq(c.ops, [], "nothing forwarded")
    m.close()
    c.close()
