"""State across nodes (issue 12; docs/design.md "Across nodes"): three nodes named with
--node on one PostgreSQL dataset. A relay client attached at node A serves ops sent to
node C (carried to A); a session's record, log and events read the same on every node; a
client may attach at another node (the session moves there); agent events presented
through one node replay on another after Last-Event-ID; a turn's calls, its returned
files and its DELETE sent to another node run on the node holding its workspace; a turn
of a node that is gone answers 410 naming it, and its turns end in their records once (by
one survivor) and stay ended when the node comes back; the agent's last events stream
closing on a node not holding the session gives the client agent_disconnected. pg pass
only."""

import os
import tempfile
import time

import harness
from harness import check, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent, wait_status
import test_restart
import turnlib


def _nodes(n=3):
    return harness.nodes(n, named=True)


_close = harness.close_nodes


def _op(srv, uid, **body):
    return srv.post("/v1/relay/sessions/%s/ops" % uid, json=body)


def _attached(a, name, text=None):
    """A relay session of a new agent with a client attached at node a (its folder
    has a.txt = `text` when given): (agent, session, folder, client)."""
    agent = make_agent(a, "%s-%d" % (name, os.getpid()))
    s = create(a, agent)
    root = tempfile.mkdtemp(prefix="relay-nodes-")
    if text is not None:
        with open(os.path.join(root, "a.txt"), "w") as f:
            f.write(text)
    cl = FakeClient(a, s["uid"], s["connectToken"], root)
    eq(cl.status, 200, "connect at node A")
    wait_status(a, s["uid"], "active")
    return agent, s, root, cl


def test_relay_client_on_a_serves_ops_sent_to_c():
    url, (a, b, c) = _nodes()
    try:
        agent, s, root, cl = _attached(a, "nsr", "from the user's folder")
        r = expect(_op(c, s["uid"], op="read_file", path="a.txt"), 200)
        eq(r.json()["content"], "from the user's folder", "a read sent to node C")
        eq(r.header("X-Coffer-Node"), "n0", "carried to the node of the client")
        expect(_op(c, s["uid"], op="write_file", path="w.txt", content="via C"), 200)
        with open(os.path.join(root, "w.txt")) as f:
            eq(f.read(), "via C", "the write sent to C reached the folder")
        for n in (a, b, c):
            listed = expect(n.get("/v1/relay/sessions", query={"agent": agent}), 200).json()
            eq([x["uid"] for x in listed["sessions"]], [s["uid"]], "listed on every node")
            got = expect(n.get("/v1/relay/sessions/" + s["uid"]), 200).json()
            eq((got["status"], got["counts"]["reads"], got["counts"]["writes"]),
               ("active", 1, 1), "the session as node %s tells it" % n.port)
            log = expect(n.get("/v1/relay/sessions/%s/log" % s["uid"]), 200).json()
            check(any(e.get("op") == "write_file" for e in log["entries"]),
                  "the log on every node: %r" % log)
        # the client comes back at node B: the session moves there
        cl.close()
        wait_status(a, s["uid"], "paused")
        cl2 = FakeClient(b, s["uid"], s["connectToken"], root)
        eq(cl2.status, 200, "the client attaches at node B")
        wait_status(b, s["uid"], "active")
        r = expect(_op(a, s["uid"], op="read_file", path="w.txt"), 200)
        eq((r.json()["content"], r.header("X-Coffer-Node")), ("via C", "n1"),
           "an op sent to A reaches the client at B")
        # the session's events on node C, which does not hold it: the stored history
        # after a Last-Event-ID, then live ones
        path = "/v1/relay/sessions/%s/events" % s["uid"]
        evs = test_restart._sse(c, path, last_id=0, seconds=1.5)
        types = [t for _, t, _ in evs]
        for want in ("write_result", "pause", "resume"):
            check(want in types, "%s in the history read on node C: %r" % (want, types))
        eq([i for i, _, _ in evs], list(range(1, len(evs) + 1)), "ids from 1 on")
        half = evs[len(evs) // 2][0]
        after = [i for i, _, _ in evs if i > half]
        again = test_restart._sse(a, path, last_id=half, seconds=1.5)
        eq([i for i, _, _ in again][:len(after)], after, "replay after Last-Event-ID on node A")
        # the stream read on C closed since (seen within about a second): the agent's
        # last stream, on any node, so agent_disconnected may follow
        check(all(t == "agent_disconnected" for _, t, _ in again[len(after):]),
              "what came after the read on node C: %r" % again)
        live = harness.EventStream(c, path)
        try:
            expect(_op(a, s["uid"], op="write_file", path="l.txt", content="live"), 200)
            got = live.expect("write_result", len([t for t in types if t == "write_result"]) + 1,
                              timeout=10)
            eq(got[-1]["path"], "l.txt", "a live event on node C")
        finally:
            live.close()
        cl2.close()
    finally:
        _close(url, [a, b, c])


def test_agent_events_across_nodes_and_replay():
    url, (a, b, c) = _nodes()
    try:
        vol = a.create_volume("shared")["id"]
        agent = "nse-%d" % os.getpid()
        expect(a.put("/v1/agents/" + agent, json={"mounts": [
            {"volumeId": vol, "path": "/shared", "mode": "rw"}]}), 201)
        a.put_ok(vol, "one.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>")
        expect(a.post("/v1/agents/%s/tools/present_file" % agent,
                      json={"path": "/shared/one.svg"}), 200)
        got = test_restart._sse(b, "/v1/agents/%s/events" % agent, last_id=0, seconds=1.5)
        eq([(t, d["path"]) for _, t, d in got], [("file_presented", "/shared/one.svg")],
           "an event of node A replayed on node B")
        # live: a stream open on C hears a presentation made on A
        stream = harness.EventStream(c, "/v1/agents/%s/events" % agent)
        try:
            time.sleep(0.3)
            expect(a.post("/v1/agents/%s/tools/present_file" % agent,
                          json={"path": "/shared/one.svg", "caption": "again"}), 200)
            live = stream.expect("file_presented", 1, timeout=10)
            eq(live[0]["caption"], "again", "node C's stream")
        finally:
            stream.close()
    finally:
        _close(url, [a, b, c])


def test_turn_calls_files_and_delete_sent_to_other_nodes():
    url, (a, b, c) = _nodes()
    try:
        aid = turnlib.make_agent(a, output={"files": ["csv"]})
        t = turnlib.new_turn(a, aid)
        turnlib.ok(a, t["id"], "echo kept > here.txt")
        r = expect(c.post("/v1/turns/%s/calls" % t["id"], json={
            "command": "cat here.txt; printf 'a,b\\n1,2\\n' > $OUTBOX/t.csv"}), 200)
        eq(r.header("X-Coffer-Node"), "n0", "the call ran on the workspace's node")
        out = r.json()
        eq(out["stdout"], "kept\n", "the call saw the workspace of node A")
        eq(len(out["files"]), 1, "one file back: %r" % out)
        path = "/v1/turns/%s/files/%s/t.csv" % (t["id"], out["callId"])
        eq(expect(b.get(path), 200).body, b"a,b\n1,2\n", "its file read through node B")
        eq(expect(b.get("/v1/turns/" + t["id"]), 200).json()["agent"], aid, "GET on B")
        expect(c.delete("/v1/turns/" + t["id"]), 204)
        expect_error(b.post("/v1/turns/%s/calls" % t["id"], json={"command": "true"}), 410)
    finally:
        _close(url, [a, b, c])


def test_carried_call_takes_x_api_key_and_answers_urls_of_the_node_asked():
    """Issue 32.10: a request carried to the node holding the turn lost its key when
    the client sent it as `x-api-key` (401 from the holder), and its answer's
    files[].url named the holder's internal address, where the client may have no
    route. Now the key is carried in either header, and the URLs name the node the
    client asked (the Host it sent)."""
    url, (a, b, c) = _nodes()
    try:
        aid = turnlib.make_agent(a, output={"files": ["csv"]})
        t = turnlib.new_turn(a, aid)
        r = expect(c.request("POST", "/v1/turns/%s/calls" % t["id"], key=None,
                             headers={"x-api-key": c.key},
                             json={"command": "printf 'a,b\\n' > $OUTBOX/t.csv"}), 200)
        eq(r.header("X-Coffer-Node"), "n0", "the call ran on the workspace's node")
        files = r.json()["files"]
        eq(len(files), 1, "one file back: %r" % files)
        check(files[0]["url"].startswith(c.url + "/"),
              "the file's URL names node C, asked: %r (C is %s, A is %s)"
              % (files[0]["url"], c.url, a.url))
        eq(expect(c.get(files[0]["url"][len(c.url):]), 200).body, b"a,b\n",
           "the file read at that URL")
        expect(c.request("GET", "/v1/turns/" + t["id"], key=None,
                         headers={"x-api-key": c.key}), 200)
    finally:
        _close(url, [a, b, c])


def test_turn_of_a_gone_node_410_naming_it():
    url, (a, b) = _nodes(2)
    try:
        t = turnlib.new_turn(a)
        a.kill()
        deadline = time.time() + 40 * harness.SCALE
        while True:
            r = b.post("/v1/turns/%s/calls" % t["id"], json={"command": "true"})
            if r.status == 410 or time.time() > deadline:
                break
            time.sleep(1)
        expect_error(r, 410)
        err = r.json()["error"]
        eq((err.get("reason"), err.get("node")), ("node_gone", "n0"), "why: %r" % err)
        check("n0" in err["message"], "the message names the node: %r" % err)
    finally:
        _close(url, [a, b])


def _psql(url, sql):
    import pgpeer
    return pgpeer.shared().psql(sql, db=url.rsplit("/", 1)[1]).stdout.decode().strip()


def _log(srv):
    with open(srv.log_path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def test_gone_nodes_turns_end_in_their_records_once():
    url, (a, b, c) = _nodes()
    try:
        t = turnlib.new_turn(a)
        a.kill()
        sql = "SELECT ended, body::jsonb->>'endReason' FROM state WHERE kind = 'turn'" \
              " AND id = '%s'" % t["id"]
        deadline = time.time() + 40 * harness.SCALE
        while _psql(url, sql) != "1|node_gone" and time.time() < deadline:
            time.sleep(0.5)
        eq(_psql(url, sql), "1|node_gone", "the gone node's turn ended in its record")
        err = expect_error(b.get("/v1/turns/" + t["id"]), 410)
        eq((err.get("reason"), err.get("node")), ("node_gone", "n0"), "GET on B: %r" % err)
        time.sleep(3)   # both survivors have looked again by now
        said = [n for n in (b, c) if "node n0 is gone" in _log(n)]
        eq(len(said), 1, "one node ended them, the other found nothing left")
        # n0 comes back under its name: the turn stays ended
        a.start()
        err = expect_error(a.get("/v1/turns/" + t["id"]), 410)
        eq(err.get("reason"), "node_gone", "not running again on n0: %r" % err)
        expect_error(a.post("/v1/turns/%s/calls" % t["id"], json={"command": "true"}), 410)
        eq(_psql(url, sql), "1|node_gone", "still ended")
    finally:
        _close(url, [a, b, c])


def test_agent_disconnected_reaches_the_client_from_another_node():
    url, (a, b, c) = _nodes()
    try:
        agent, s, root, cl = _attached(a, "nsd")
        path = "/v1/relay/sessions/%s/events" % s["uid"]
        on_b = harness.EventStream(b, path)    # a node not holding the session
        on_a = harness.EventStream(a, path)    # and the holder
        time.sleep(0.5)
        on_a.close()
        time.sleep(1.5)
        eq([k for k, _ in cl.events if k == "agent_disconnected"], [],
           "a stream of the agent is still open on node B")
        on_b.close()
        deadline = time.time() + 10 * harness.SCALE
        while not cl.wait_event("agent_disconnected", timeout=0.2) and time.time() < deadline:
            pass
        check(cl.wait_event("agent_disconnected", timeout=0.1) is not None,
              "the client at A heard the agent leave node B: %r" % cl.events)
        evs = test_restart._sse(c, path, last_id=0, seconds=1.5)
        eq([t for _, t, _ in evs].count("agent_disconnected"), 1,
           "one agent_disconnected in the stored history, read on node C: %r" % evs)
        cl.close()
    finally:
        _close(url, [a, b, c])
