"""What a restart still lost (issue 12), both passes: files_changed agent events are
stored with ids (one event per coalescing window, whatever the number of streams open)
and replay after Last-Event-ID across a restart; deleting an agent forgets its stored
events; a relay op's record outlives a restart (SIGTERM and SIGKILL): a supervised write
waiting for the user still waits and the user's answer still applies, an op whose result
is unknown answers 410 `gone` with the reason, a finished one keeps its answer."""

import os
import tempfile
import threading
import time

import harness
from harness import check, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent, wait_status
from test_restart import _bounce, _name, _sse


def _notify_agent(srv):
    vol = srv.create_volume("shared")["id"]
    agent = _name("fc")
    expect(srv.put("/v1/agents/" + agent, json={"mounts": [
        {"volumeId": vol, "path": "/shared", "mode": "rw", "notify": True}]}), 201)
    return vol, agent


def test_files_changed_has_an_id_and_replays_after_restart():
    with harness.server() as srv:
        vol, agent = _notify_agent(srv)
        path = "/v1/agents/%s/events" % agent
        # two streams open at once: still one event per change window
        s1, s2 = harness.EventStream(srv, path), harness.EventStream(srv, path)
        try:
            time.sleep(0.3)
            srv.put_ok(vol, "a.txt", b"a")
            srv.put_ok(vol, "b.txt", b"b")
            got = s1.expect("files_changed", 1, timeout=10)
            eq(sorted(got[0]["paths"]), ["/shared/a.txt", "/shared/b.txt"], "coalesced")
            eq(len(s2.expect("files_changed", 1, timeout=10)), 1, "the second stream too")
            time.sleep(1.5)
            eq((len(s1.wait("files_changed", 2, timeout=0.1)),
                len(s2.wait("files_changed", 2, timeout=0.1))), (1, 1),
               "one event for both streams: %r %r" % (s1.events, s2.events))
        finally:
            s1.close()
            s2.close()
        stored = [e for e in _sse(srv, path, last_id=0, seconds=1.5) if e[1] == "files_changed"]
        eq(len(stored), 1, "one stored files_changed: %r" % stored)
        check(stored[0][0] is not None, "it has an id: %r" % stored)
        _bounce(srv, "kill")
        again = _sse(srv, path, last_id=stored[0][0] - 1, seconds=1.5)
        eq([(i, t, sorted(d["paths"])) for i, t, d in again],
           [(stored[0][0], "files_changed", ["/shared/a.txt", "/shared/b.txt"])],
           "replayed after Last-Event-ID across a SIGKILL")


def test_deleting_an_agent_forgets_its_events():
    with harness.server() as srv:
        vol = srv.create_volume("shared")["id"]
        agent = _name("del")
        body = {"mounts": [{"volumeId": vol, "path": "/shared", "mode": "rw",
                            "notify": True}]}
        expect(srv.put("/v1/agents/" + agent, json=body), 201)
        srv.put_ok(vol, "one.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>")
        expect(srv.post("/v1/agents/%s/tools/present_file" % agent,
                        json={"path": "/shared/one.svg"}), 200)
        path = "/v1/agents/%s/events" % agent
        s = harness.EventStream(srv, path)
        try:
            time.sleep(0.3)
            srv.put_ok(vol, "two.txt", b"2")
            s.expect("files_changed", 1, timeout=10)
        finally:
            s.close()
        before = [t for _, t, _ in _sse(srv, path, last_id=0, seconds=1.0)]
        check("file_presented" in before, "stored before the delete: %r" % before)
        expect(srv.delete("/v1/agents/" + agent), 204)
        expect(srv.put("/v1/agents/" + agent, json=body), 201)
        eq(_sse(srv, path, last_id=0, seconds=1.0), [],
           "an agent made again under the name has none of the deleted one's events")
        # nor its files_changed cursor: a change is reported to the new agent
        s = harness.EventStream(srv, path)
        try:
            time.sleep(0.3)
            srv.put_ok(vol, "three.txt", b"3")
            eq(s.expect("files_changed", 1, timeout=10)[0]["paths"], ["/shared/three.txt"],
               "the new agent's first change")
        finally:
            s.close()


def _supervised(srv):
    agent = make_agent(srv, _name())
    s = create(srv, agent)
    root = tempfile.mkdtemp(prefix="relay-ops-")
    with open(os.path.join(root, "r.txt"), "w") as f:
        f.write("read me")
    c = FakeClient(srv, s["uid"], s["connectToken"], root, mode="supervised")
    eq(c.status, 200, "connect status")
    wait_status(srv, s["uid"], "active")
    return s, c, root


def _op(srv, uid, query=None, **body):
    return srv.post("/v1/relay/sessions/%s/ops" % uid, query=query, json=body)


def _op_path(uid, op_id):
    return "/v1/relay/sessions/%s/ops/%s" % (uid, op_id)


def _ops_survive(how):
    with harness.server() as srv:
        s, c, root = _supervised(srv)
        uid = s["uid"]
        c.hold = True
        # one write the user answered before the restart
        done_id = expect_error(_op(srv, uid, query={"wait": "false"}, op="write_file",
                                   path="done.txt", content="early"), 423)["opId"]
        c.wait_ops(1)
        expect(c.answer(c.ops[0]), 204)
        # one left to the user, and a read whose caller is waiting when cofferd goes
        wait_id = expect_error(_op(srv, uid, query={"wait": "false"}, op="write_file",
                                   path="later.txt", content="decided later"), 423)["opId"]
        reader = threading.Thread(target=lambda: _op(srv, uid, op="read_file", path="r.txt"),
                                  daemon=True)
        reader.start()
        c.wait_ops(3)
        eq([o["op"] for o in c.ops], ["write_file", "write_file", "read_file"], "ops received")
        read_id = c.ops[2]["id"]
        _bounce(srv, how)
        reader.join(10 * harness.SCALE)
        got = expect(srv.get(_op_path(uid, done_id)), 200).json()
        eq((got["status"], got["ok"], got["result"]["size"]), ("done", True, 5),
           "a finished op keeps its answer across the restart")
        got = expect(srv.get(_op_path(uid, wait_id)), 200).json()
        eq((got["status"], got["path"]), ("pending", "later.txt"),
           "the write left to the user still waits after the restart")
        r = srv.get(_op_path(uid, read_id))
        if how == "kill":
            err = expect_error(r, 410, "gone")
            eq((err.get("reason"), err.get("opId")), ("restart", read_id), "why: %r" % err)
            check("unknown" in err["message"] and "restart" in err["message"],
                  "the message says why: %r" % err)
        else:   # a clean stop answered its caller (503): the op is forgotten
            expect_error(r, 404)
        # the user decides now (the client's prompt outlived the restart)
        expect(c.answer(c.ops[1]), 204)
        got = expect(srv.get(_op_path(uid, wait_id)), 200).json()
        eq((got["status"], got["ok"], got["result"]["size"]), ("done", True, 13),
           "the user's yes applies after the restart")
        with open(os.path.join(root, "later.txt")) as f:
            eq(f.read(), "decided later", "written")
        c.close()
        # the client comes back; the session ends: the records go with it
        c2 = FakeClient(srv, uid, s["connectToken"], root, mode="supervised")
        eq(c2.status, 200, "reconnect")
        wait_status(srv, uid, "active")
        expect(srv.delete("/v1/relay/sessions/" + uid), 200)
        c2.close()
        _bounce(srv, how)
        err = expect_error(srv.get(_op_path(uid, done_id)), 410, "gone")
        eq(err.get("reason"), "closed", "an ended session's ops: %r" % err)


def test_relay_ops_survive_sigterm():
    _ops_survive("term")


def test_relay_ops_survive_sigkill():
    _ops_survive("kill")


def test_relay_user_refusal_after_restart_and_abort():
    with harness.server() as srv:
        s, c, root = _supervised(srv)
        uid = s["uid"]
        c.hold = True
        ids = [expect_error(_op(srv, uid, query={"wait": "false"}, op="write_file",
                                path="n%d.txt" % i, content="no"), 423)["opId"]
               for i in range(2)]
        c.wait_ops(2)
        _bounce(srv, "kill")
        expect(c.post_result(ids[0], {"ok": False, "error": {
            "type": "forbidden", "message": "the user said no"}}), 204)
        got = expect(srv.get(_op_path(uid, ids[0])), 200).json()
        eq((got["ok"], got["error"]["type"]), (False, "forbidden"), "the user's no applies")
        # the user aborts: the other write ends with the session
        expect(c.post_event("abort"), 204)
        got = expect(srv.get(_op_path(uid, ids[1])), 200).json()
        eq((got["status"], got["error"]["type"]), ("done", "gone"), "ended by the abort")
        eq(sorted(os.listdir(root)), ["r.txt"], "nothing written")
        c.close()
