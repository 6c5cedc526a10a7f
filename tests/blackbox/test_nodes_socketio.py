"""The Socket.IO relay across nodes (issue 35 item 3; docs/design.md "Across nodes"): two
nodes named with --node on one PostgreSQL dataset, the official socket.io-client on both
sides. A Socket.IO agent's op (read, write, list, search, and its close) sent to the node
that does not hold the session is carried to the node holding the user's side, as an HTTP
op is (forward.c, one hop), in both directions: user on B and agent on A, then the user
back on A and the agent on B. pg pass only."""

import os

import harness
from harness import check, eq, expect
from relay_fake import create, make_agent, wait_status
from test_relay_socketio import Sio, _folder, _name, _ok


def _user(srv, s, root):
    user = Sio(srv, "user", s["uid"], token=s["connectToken"], root=root, transport="websocket")
    eq(user.connected()["type"], "connected", "the user side connects at node %d" % srv.port)
    wait_status(srv, s["uid"], "active")
    return user


def _agent(srv, s):
    agent = Sio(srv, "agent", s["uid"], key=srv.key, transport="polling")
    eq(agent.connected()["type"], "connected", "the agent side connects at node %d" % srv.port)
    return agent


def _ops(agent, root, tag):
    read = _ok(agent.call("jailbox:file_read", "notes.txt"), "a read carried " + tag)
    eq(read["content"], "hello nodes\n", "the read carried " + tag)
    w = _ok(agent.call("jailbox:file_write", {"path": "w-%s.txt" % tag, "content": tag}),
            "a write carried " + tag)
    eq(w["sha256"], harness.sha256(tag.encode()), "the write's sha256 " + tag)
    with open(os.path.join(root, "w-%s.txt" % tag)) as f:
        eq(f.read(), tag, "the write reached the user's folder " + tag)
    agent.event("jailbox:write_result", lambda a: a.get("path") == "w-%s.txt" % tag)
    ls = _ok(agent.call("jailbox:list_directory", "src/"), "a listing carried " + tag)
    check("a.ts" in [x["name"] for x in ls["entries"]], "listed: %r" % ls)
    found = _ok(agent.call("jailbox:search_files", "hello"), "a search carried " + tag)
    eq([r["file"] for r in found["results"]], ["notes.txt"], "the search " + tag)
    # without an ack, the answer comes as its event, carried the same way
    agent.send(emit="jailbox:file_read", args=[{"path": "notes.txt", "requestId": tag}],
               ack=False)
    got = agent.event("jailbox:file_content", lambda a: a.get("requestId") == tag)
    eq(got["result"]["content"], "hello nodes\n", "file_content for an op without an ack")


def test_socketio_agent_ops_are_carried_to_the_users_node_both_ways():
    url, (a, b) = harness.nodes(2, named=True)
    clients = []
    try:
        s = create(a, make_agent(a, _name("nsio")))
        root = _folder({"notes.txt": "hello nodes\n", "src/a.ts": "const a = 1;\n"})
        # the user's side at B, the agent's at A
        user = _user(b, s, root)
        clients.append(user)
        agent = _agent(a, s)
        clients.append(agent)
        _ops(agent, root, "a-to-b")
        eq(wait_status(a, s["uid"], "active")["counts"]["writes"], 1, "counted once")
        agent.close()
        user.close()
        wait_status(b, s["uid"], "paused")
        # the user comes back at A (the session moves there), the agent goes to B
        user = _user(a, s, root)
        clients.append(user)
        agent = _agent(b, s)
        clients.append(agent)
        _ops(agent, root, "b-to-a")
        # the agent's close at B ends the session held at A
        got = _ok(agent.call("jailbox:close", {}), "a close carried from B")
        eq((got["status"], got["endReason"]), ("ended", "closed"), "the close's answer")
        eq(user.event("jailbox:session_ended")["reason"], "closed", "the user at A is told")
        log = expect(b.get("/v1/relay/sessions/%s/log" % s["uid"]), 200).json()
        eq(len([x for x in log["entries"] if x.get("op") == "write_file"]), 2,
           "both carried writes in the log")
    finally:
        for c in clients:
            c.close()
        harness.close_nodes(url, [a, b])
