"""What deleting an agent takes with it (issue 12, cleanup), both passes: the keys bound
to it are revoked (401 saying revoked, gone from GET /v1/keys, also once an agent is made
again under the id); its relay sessions end (`session_ended` reason `agent_deleted` to
both sides, the client's stream closed, ops 410) and their stored records (the session's,
its log, its ops', its events) go, while another agent's stay; and the index the
gone-node check reads (state_live) exists on a new store and after an upgrade."""

import os
import sqlite3
import tempfile
import time

import harness
from harness import check, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent, wait_status


def _name(prefix):
    return "%s-%d-%d" % (prefix, os.getpid(), int(time.time() * 1000) % 100000)


def _pg_url(srv):
    """The server's PostgreSQL URL (its own or a dataset's --meta), else None."""
    if srv.meta_url:
        return srv.meta_url
    if "--meta" in srv.args:
        return srv.args[srv.args.index("--meta") + 1]
    return None


def _sql(srv, sql):
    """The first column of the rows of `sql` on the server's metadata store."""
    url = _pg_url(srv)
    if url:
        import pgpeer
        out = pgpeer.shared().psql(sql, db=url.rsplit("/", 1)[1].split("?")[0])
        return [l for l in out.stdout.decode().split("\n") if l.strip()]
    db = sqlite3.connect(os.path.join(srv.data, "meta.db"), timeout=10)
    try:
        return [str(r[0]) for r in db.execute(sql)]
    finally:
        db.close()


def _records(srv, uid):
    """How many stored records of each kind session `uid` has."""
    n = lambda sql: int(_sql(srv, sql)[0])
    return {"session": n("SELECT count(*) FROM state WHERE kind = 'relay' AND id = '%s'" % uid),
            "ops": n("SELECT count(*) FROM state WHERE kind = 'relayop' AND id LIKE '%s/%%'"
                     % uid),
            "log": n("SELECT count(*) FROM events WHERE stream = 'relaylog:%s'" % uid),
            "events": n("SELECT count(*) FROM events WHERE stream = 'relay:%s'" % uid)}


NONE = {"session": 0, "ops": 0, "log": 0, "events": 0}


def _records_gone(srv, uid, timeout=10):
    deadline = time.time() + timeout * harness.SCALE
    while _records(srv, uid) != NONE and time.time() < deadline:
        time.sleep(0.1)
    return _records(srv, uid)


def test_deleting_an_agent_revokes_its_keys(srv):
    agent, other = _name("kd"), _name("kk")
    for a in (agent, other):
        expect(srv.put("/v1/agents/" + a, json={}), 201)
    key = expect(srv.post("/v1/keys", json={"agent": agent}), 201).json()
    kept = expect(srv.post("/v1/keys", json={"agent": other}), 201).json()
    expect(srv.get("/v1/agents/" + agent, key=key["key"]), 200)
    expect(srv.delete("/v1/agents/" + agent), 204)
    expect_error(srv.get("/v1/agents/" + agent, key=key["key"]), 401, mentions="revoked")
    ids = [k["id"] for k in expect(srv.get("/v1/keys"), 200).json()["keys"]]
    check(key["id"] not in ids, "the deleted agent's key is not listed: %r" % ids)
    check(kept["id"] in ids, "another agent's key is: %r" % ids)
    # made again under the same id: the old key still does not reach it
    expect(srv.put("/v1/agents/" + agent, json={}), 201)
    expect_error(srv.get("/v1/agents/" + agent, key=key["key"]), 401, mentions="revoked")
    expect(srv.get("/v1/agents/" + other, key=kept["key"]), 200)


def test_deleting_an_agent_ends_its_relay_sessions_and_forgets_them(srv):
    agent, other = make_agent(srv, _name("rd")), make_agent(srv, _name("ro"))
    s, waiting, kept = create(srv, agent), create(srv, agent), create(srv, other)
    root = tempfile.mkdtemp(prefix="relay-del-")
    c = FakeClient(srv, s["uid"], s["connectToken"], root, mode="supervised")
    eq(c.status, 200, "connect status")
    wait_status(srv, s["uid"], "active")
    c.hold = True
    # a supervised write left to the user: an op record is stored
    op_id = expect_error(srv.post("/v1/relay/sessions/%s/ops" % s["uid"],
                                  query={"wait": "false"},
                                  json={"op": "write_file", "path": "w.txt",
                                        "content": "x"}), 423)["opId"]
    c.wait_ops(1)
    before = _records(srv, s["uid"])
    check(all(before[k] > 0 for k in before), "stored before the delete: %r" % before)
    check(_records(srv, kept["uid"])["session"] == 1, "the other agent's session is stored")
    agent_side = harness.EventStream(srv, "/v1/relay/sessions/%s/events" % s["uid"])
    try:
        time.sleep(0.3)
        expect(srv.delete("/v1/agents/" + agent), 204)
        got = agent_side.expect("session_ended", 1, timeout=10)
        eq(got[0].get("reason"), "agent_deleted", "the agent side's session_ended")
    finally:
        agent_side.close()
    eq((c.wait_event("session_ended") or {}).get("reason"), "agent_deleted",
       "the client's session_ended")
    deadline = time.time() + 10 * harness.SCALE
    while not c.closed and time.time() < deadline:
        time.sleep(0.05)
    check(c.closed, "the client's stream is closed")
    err = expect_error(srv.post("/v1/relay/sessions/%s/ops" % s["uid"],
                                json={"op": "read_file", "path": "r.txt"}), 410, "gone")
    eq(err.get("reason"), "agent_deleted", "an op after the delete: %r" % err)
    check("agent was deleted" in err["message"], "the message says why: %r" % err)
    got = expect(srv.get("/v1/relay/sessions/%s/ops/%s" % (s["uid"], op_id)), 200).json()
    eq((got["status"], got["error"]["type"], got["error"].get("reason")),
       ("done", "gone", "agent_deleted"), "the write left to the user ended with it")
    eq(_records_gone(srv, s["uid"]), NONE, "the connected session's records")
    eq(_records_gone(srv, waiting["uid"]), NONE, "the waiting session's records")
    eq(_records(srv, kept["uid"])["session"], 1, "another agent's session stays stored")
    eq(expect(srv.get("/v1/relay/sessions/" + kept["uid"]), 200).json()["status"], "waiting",
       "and goes on")
    c.close()


def test_deleted_agents_sessions_are_gone_after_a_restart():
    with harness.server() as srv:
        agent = make_agent(srv, _name("rr"))
        s = create(srv, agent)
        expect(srv.delete("/v1/agents/" + agent), 204)
        eq(_records_gone(srv, s["uid"]), NONE, "forgotten")
        srv.restart()
        expect_error(srv.get("/v1/relay/sessions/" + s["uid"]), 404)


def _has_index(srv):
    if srv.meta_url:
        return _sql(srv, "SELECT indexname FROM pg_indexes WHERE indexname = 'state_live'")
    return _sql(srv, "SELECT name FROM sqlite_master WHERE name = 'state_live'")


def test_gone_node_check_has_its_index():
    with harness.server() as srv:
        eq(_has_index(srv), ["state_live"], "a new store")
        srv.stop()
        # back to the schema before it (SQLite 2, PostgreSQL 5)
        if srv.meta_url:
            import pgpeer
            pgpeer.shared().psql("DROP INDEX state_live; UPDATE schema_version SET version = 5",
                                 db=srv.meta_url.rsplit("/", 1)[1].split("?")[0])
        else:
            db = sqlite3.connect(os.path.join(srv.data, "meta.db"))
            db.execute("DROP INDEX state_live")
            db.execute("PRAGMA user_version = 2")
            db.commit()
            db.close()
        eq(_has_index(srv), [], "taken back")
        srv.start()
        eq(_has_index(srv), ["state_live"], "after the upgrade")


def test_deleting_an_agent_at_another_node_ends_its_sessions():
    """Several nodes (pg pass): the session's client is attached at node A, the agent is
    deleted through node B: A ends the session (its client gets session_ended), the
    records go."""
    url, (a, b) = harness.nodes(2, named=True)
    try:
        agent = make_agent(a, _name("nd"))
        s = create(a, agent)
        root = tempfile.mkdtemp(prefix="relay-del-")
        c = FakeClient(a, s["uid"], s["connectToken"], root)
        eq(c.status, 200, "connect at node A")
        wait_status(a, s["uid"], "active")
        expect(b.delete("/v1/agents/" + agent), 204)
        eq((c.wait_event("session_ended", timeout=10 * harness.SCALE) or {}).get("reason"),
           "agent_deleted", "the client at A told")
        deadline = time.time() + 10 * harness.SCALE
        while not c.closed and time.time() < deadline:
            time.sleep(0.05)
        check(c.closed, "the client's stream at A is closed")
        err = expect_error(a.post("/v1/relay/sessions/%s/ops" % s["uid"],
                                  json={"op": "read_file", "path": "r.txt"}), 410, "gone")
        eq(err.get("reason"), "agent_deleted", "an op at A: %r" % err)
        eq(_records_gone(a, s["uid"]), NONE, "the session's records")
        c.close()
    finally:
        harness.close_nodes(url, [a, b])
