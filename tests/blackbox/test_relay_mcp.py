"""`coffer mcp` and relay sessions: with an active (or paused) relay session of the agent,
tools/list adds read_file, write_file, list_directory and search_files, each relayed
through POST /v1/relay/sessions/{uid}/ops to the user's side (here the fake client); the
server's refusals come back as error results the model reads. Also through the official
TypeScript SDK client (tests/mcp/relay.mjs)."""

import json
import os
import subprocess

import harness
from harness import check, eq, expect
from test_mcp import MCP_DIR, Session, sdk_ready
from test_relay import _session

RELAY_TOOLS = ["read_file", "write_file", "list_directory", "search_files", "relay_sessions"]


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


@harness.timeout(400)
def test_relay_tools_through_the_sdk(srv):
    node = sdk_ready()
    s, c, root = _session(srv, files={"notes.txt": "relay notes\n", ".env": "S=1"})
    p = subprocess.run([node, os.path.join(MCP_DIR, "relay.mjs"), "--coffer",
                        harness.bin_path("coffer"), "--agent", s["agent"], "--server", srv.url,
                        "--key", srv.key], capture_output=True, timeout=120 * harness.SCALE)
    c.close()
    check(p.returncode == 0, "relay.mjs failed (exit %s):\nstdout: %s\nstderr: %s" % (
        p.returncode, p.stdout.decode()[-2000:], p.stderr.decode()[-3000:]))
    sm = json.loads(p.stdout.decode().strip().splitlines()[-1])
    names = [t["name"] for t in sm["tools"]]
    for t in RELAY_TOOLS:
        check(t in names, "%s listed through the SDK: %r" % (t, names))
    eq((sm["read"]["isError"], sm["read"]["text"]), (False, "relay notes\n"), "read_file")
    eq(sm["write"]["isError"], False, "write_file")
    with open(os.path.join(root, "sdk/out.txt")) as f:
        eq(f.read(), "from the sdk", "written")
    eq(sm["list"]["isError"], False, "list_directory")
    check(".env" not in sm["list"]["text"], "excluded file hidden: %r" % sm["list"]["text"])
    eq([r["file"] for r in sm["search"]["structured"]["results"]], ["notes.txt"], "search")
    check(sm["excluded"]["isError"] and "excluded" in sm["excluded"]["text"],
          "excluded read refused: %r" % sm["excluded"])
