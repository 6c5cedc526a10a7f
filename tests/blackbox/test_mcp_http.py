"""cofferd's /mcp: an agent's file tools over MCP's Streamable HTTP transport (docs/mcp.md,
"Over HTTP"). The official TypeScript SDK client (tests/mcp/http.mjs, pinned in
tests/mcp/package.json) drives a whole session; the transport's rules (sessions, versions,
Origin and Host, keys, limits) are checked on the wire from Python."""

import json
import os
import subprocess

import harness
from harness import check, contains, eq, expect
from test_mcp import KNOWN_VERSIONS, MCP_DIR, TOOLS, make_agent, new_id, sdk_ready

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "blackbox", "version": "1"}}}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def init(srv, query, key=harness._ABSENT, headers=None):
    """initialize: (its answer, the session's headers for later requests)."""
    r = expect(srv.post("/mcp", json=INIT, query=query, key=key, headers=headers), 200)
    sid = r.headers.get("Mcp-Session-Id")
    check(sid, "initialize answered an Mcp-Session-Id: %r" % dict(r.headers))
    return r.json(), {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}


def rpc_error(r, status, words):
    """An answer `status` with a JSON-RPC error whose message says `words`."""
    expect(r, status)
    err = r.json().get("error") or {}
    check(isinstance(err.get("code"), int), "a JSON-RPC error: %r" % r.json())
    contains(err.get("message", ""), words, "the error says why")


@harness.timeout(400)
def test_sdk_client_over_streamable_http(srv):
    node = sdk_ready()
    aid, ws = make_agent(srv)
    p = subprocess.run([node, os.path.join(MCP_DIR, "http.mjs"), "--server", srv.url,
                        "--key", srv.key, "--agent", aid, "--volume", ws],
                       capture_output=True, timeout=120 * harness.SCALE)
    check(p.returncode == 0, "http.mjs failed (exit %s):\nstdout: %s\nstderr: %s" % (
        p.returncode, p.stdout.decode()[-2000:], p.stderr.decode()[-3000:]))
    try:
        sm = json.loads(p.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError("http.mjs printed no JSON summary:\n%s\nstderr: %s" % (
            p.stdout.decode()[-2000:], p.stderr.decode()[-2000:]))
    check(sm["sessionId"], "a session id from initialize")
    check(sm["protocolVersion"] in KNOWN_VERSIONS, "negotiated: %r" % sm["protocolVersion"])
    eq(sm["serverInfo"].get("name"), "coffer", "serverInfo.name")
    contains(sm["instructions"] or "", "/workspace (volume \"workspace of agent %s\", the agent's workspace, read-write)" % aid, "instructions name the mounts")
    eq(sorted(sm["tools"]), sorted(TOOLS), "tools listed through the SDK")
    eq(sm["firstPut"], 201, "the file put through the volume API")
    check(sm["unreadEdit"]["isError"], "edit of an unread file refused: %r" % sm["unreadEdit"])
    contains(sm["unreadEdit"]["text"], "read it first", "why")
    eq(sm["read"]["text"], "     1\tone\n     2\ttwo\n", "read")
    check(not sm["edit"]["isError"], "edit after reading: %r" % sm["edit"])
    eq(sm["secondPut"], 200, "another change through the volume API")
    check(sm["staleWrite"]["isError"], "write over a changed file refused: %r" % sm["staleWrite"])
    contains(sm["staleWrite"]["text"], "changed since you last read it", "why")
    check(not sm["write"]["isError"], "a new file written: %r" % sm["write"])
    eq(sm["ping"], True, "ping")
    check(not sm["aliceWrite"]["isError"], "alice writes her /user: %r" % sm["aliceWrite"])
    eq(sm["aliceRead"]["text"], "     1\talice's\n", "alice reads it back")
    check(sm["bobRead"]["isError"], "bob does not see alice's file: %r" % sm["bobRead"])
    check("alice's" not in sm["bobRead"]["text"], "bob read nothing of alice's")
    r = expect(srv.get("/v1/agents/%s/users/alice/files/content" % aid,
                       query={"path": "note.md"}), 200)
    eq(r.body, b"alice's\n", "alice's workspace holds what the MCP session wrote")
    eq(sm["noKey"]["code"], 401, "no key: %r" % sm["noKey"])
    eq(sm["unknownAgent"]["code"], 404, "unknown agent: %r" % sm["unknownAgent"])
    contains(sm["unknownAgent"]["message"], "not found", "why")
    eq(sm["sessionAfterDelete"], None, "the SDK ended the session")
    eq(sm["reuse"]["code"], 404, "the ended session reused: %r" % sm["reuse"])
    eq(expect(srv.get("/v1/agents/%s/files/workspace/sdk/pre.md" % aid), 200).body,
       b"ONE\ntwo\nchanged elsewhere\n", "the refused write changed nothing")


def test_sessions_and_headers(srv):
    aid, _ = make_agent(srv)
    q = {"agent": aid}
    res, h = init(srv, q)
    eq(res["result"]["protocolVersion"], "2025-06-18", "the client's version answered")
    eq(res["result"]["capabilities"], {"tools": {"listChanged": True}}, "capabilities")
    # notifications and responses: 202, no body
    r = expect(srv.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        query=q, headers=h), 202)
    eq(r.body, b"", "202 has no body")
    expect(srv.post("/mcp", json={"jsonrpc": "2.0", "id": 9, "result": {}}, query=q,
                    headers=h), 202)
    eq(expect(srv.post("/mcp", json=PING, query=q, headers=h), 200).json(),
       {"jsonrpc": "2.0", "id": 2, "result": {}}, "ping in the session")
    # without the version header: the spec's default (2025-03-26) is taken
    expect(srv.post("/mcp", json=PING, query=q,
                    headers={"Mcp-Session-Id": h["Mcp-Session-Id"]}), 200)
    rpc_error(srv.post("/mcp", json=PING, query=q,
                       headers=dict(h, **{"MCP-Protocol-Version": "1999-01-01"})),
              400, "MCP-Protocol-Version")
    rpc_error(srv.post("/mcp", json=PING, query=q), 400, "Mcp-Session-Id is missing")
    rpc_error(srv.post("/mcp", json=PING, query=q, headers=dict(h, **{
        "Mcp-Session-Id": "0" * 32})), 404, "initialize again")
    rpc_error(srv.post("/mcp", json=INIT, query=q, headers=h), 400, "without Mcp-Session-Id")
    # a session is its agent's, its subject's and its key's
    other, _ = make_agent(srv)
    rpc_error(srv.post("/mcp", json=PING, query={"agent": other}, headers=h), 404, "no MCP session")
    rpc_error(srv.post("/mcp", json=PING, query=dict(q, user="alice"), headers=h), 404,
              "no MCP session")
    key2 = expect(srv.post("/v1/keys", json={}), 201).json()["key"]
    rpc_error(srv.post("/mcp", json=PING, query=q, headers=h, key=key2), 404, "no MCP session")
    # the body: JSON, as application/json
    r = expect(srv.post("/mcp", body=b"{nope", query=q,
                        headers=dict(h, **{"Content-Type": "application/json"})), 400)
    eq(r.json()["error"]["code"], -32700, "parse error")
    rpc_error(srv.post("/mcp", body=b"{}", query=q, headers=dict(h, **{
        "Content-Type": "text/plain"})), 415, "application/json")
    rpc_error(srv.post("/mcp", json=PING, query=q, headers=dict(h, Accept="text/html")), 406,
              "Accept")
    # GET: the session's event stream, which needs Accept: text/event-stream
    # (test_mcp_listchanged reads it)
    rpc_error(srv.get("/mcp", query=q, headers=h), 406, "text/event-stream")
    # DELETE ends it; again: 404
    expect(srv.delete("/mcp", headers=h), 204)
    rpc_error(srv.delete("/mcp", headers=h), 404, "no MCP session")
    rpc_error(srv.post("/mcp", json=PING, query=q, headers=h), 404, "initialize again")
    rpc_error(srv.delete("/mcp"), 400, "Mcp-Session-Id is missing")


def test_keys_and_agents(srv):
    aid, _ = make_agent(srv)
    r = expect(srv.post("/mcp", json=INIT, query={"agent": aid}, key=None), 401)
    eq(r.headers.get("WWW-Authenticate"), "Bearer", "401 names the bearer scheme")
    rpc_error(srv.post("/mcp", json=INIT), 400, "?agent=ID")
    rpc_error(srv.post("/mcp", json=INIT, query={"agent": new_id("none")}), 404, "not found")
    # a key bound to the agent needs no ?agent, and reaches no other agent
    bound = expect(srv.post("/v1/keys", json={"agent": aid}), 201).json()["key"]
    res, h = init(srv, {}, key=bound)
    contains(res["result"]["instructions"], "/workspace", "the bound agent's instructions")
    r = expect(srv.post("/mcp", key=bound, headers=h, json={
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "write", "arguments": {"path": "/workspace/b.txt", "content": "b"}}}),
        200)
    eq(r.json()["result"]["isError"], False, "the bound key's tool call: %r" % r.json())
    eq(expect(srv.get("/v1/agents/%s/files/workspace/b.txt" % aid), 200).body, b"b", "written")
    other, _ = make_agent(srv)
    rpc_error(srv.post("/mcp", json=INIT, query={"agent": other}, key=bound), 403,
              "reaches only agent")
    # a read-only key may not POST, as everywhere
    ro = expect(srv.post("/v1/keys", json={"readOnly": True}), 201).json()["key"]
    expect(srv.post("/mcp", json=INIT, query={"agent": aid}, key=ro), 403)


def test_web_pages_of_other_sites_refused(srv):
    """DNS rebinding: another site's Origin is 403; cofferd on loopback wants a loopback
    Host (the harness's cofferd listens on 127.0.0.1)."""
    aid, _ = make_agent(srv)
    q = {"agent": aid}
    rpc_error(srv.post("/mcp", json=INIT, query=q, headers={
        "Origin": "http://evil.example.com"}), 403, "Origin")
    rpc_error(srv.post("/mcp", json=INIT, query=q, headers={
        "Host": "evil.example.com", "Origin": "http://evil.example.com"}), 403, "Host")
    rpc_error(srv.post("/mcp", json=INIT, query=q, headers={"Host": "evil.example.com"}), 403,
              "Host")
    _, h = init(srv, q, headers={"Origin": "http://localhost:6274"})  # a local inspector
    init(srv, q, headers={"Host": "localhost:%d" % srv.port,
                          "Origin": "http://localhost:%d" % srv.port})
    rpc_error(srv.delete("/mcp", headers=dict(h, Origin="https://evil.example.com")), 403,
              "Origin")
    expect(srv.delete("/mcp", headers=h), 204)


def test_sessions_per_key_are_bounded(srv):
    """At most 32 live sessions per key: the 33rd ends the least recently used."""
    aid, _ = make_agent(srv)
    q = {"agent": aid}
    key = expect(srv.post("/v1/keys", json={}), 201).json()["key"]
    first = init(srv, q, key=key)[1]
    rest = [init(srv, q, key=key)[1] for _ in range(31)]
    expect(srv.post("/mcp", json=PING, query=q, headers=first, key=key), 200)  # now the newest
    init(srv, q, key=key)  # the 33rd: rest[0], least recently used, ends
    rpc_error(srv.post("/mcp", json=PING, query=q, headers=rest[0], key=key), 404,
              "initialize again")
    expect(srv.post("/mcp", json=PING, query=q, headers=first, key=key), 200)
    expect(srv.post("/mcp", json=PING, query=q, headers=rest[1], key=key), 200)
    # another key's sessions are not counted against this one
    init(srv, q)
    expect(srv.post("/mcp", json=PING, query=q, headers=rest[2], key=key), 200)
