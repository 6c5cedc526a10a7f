"""Relay sessions, server side (docs/api.md "Relay", docs/relay-protocol.md): settings,
creation, tokens, the life cycle with its events, and the ops relayed to a fake client
(relay_fake.py) that has no rule of its own, so every refusal seen here is cofferd's."""

import http.client
import os
import tempfile
import threading
import time

import harness
from harness import check, contains, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent, wait_status

_n = [0]


def _name(prefix="ra"):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _n[0])


def _session(srv, mode=None, limits=None, files=None, client_mode=None, exclusions=None):
    """An agent with the capability, a session, and a fake client attached to a temp
    dir holding `files`. Returns (session, client, root)."""
    agent = make_agent(srv, _name(), mode=mode)
    s = create(srv, agent, limits)
    root = tempfile.mkdtemp(prefix="relay-")
    for p, data in (files or {}).items():
        full = os.path.join(root, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    c = FakeClient(srv, s["uid"], s["connectToken"], root, mode=client_mode,
                   exclusions=exclusions)
    eq(c.status, 200, "connect status")
    _wait_status(srv, s["uid"], "active")
    return s, c, root


_wait_status = wait_status


def _op(srv, uid, query=None, key=None, **body):
    return srv.post("/v1/relay/sessions/%s/ops" % uid, json=body, query=query,
                    key=key or srv.key)


class Events(harness.EventStream):
    """The agent's events stream of a session; wait() raises when the events
    do not come."""

    def __init__(self, srv, uid):
        super().__init__(srv, "/v1/relay/sessions/%s/events" % uid)

    def wait(self, kind, n=1, timeout=10):
        return self.expect(kind, n, timeout)


# ------------------------------------------------------------------ settings, create

def test_agent_relay_settings_validated(srv):
    a = "/v1/agents/" + _name()
    expect_error(srv.put(a, json={"relay": {"capability": "yes"}}), 400, "validation_error")
    expect_error(srv.put(a, json={"relay": {"capability": True, "defaultMode": "wild"}}),
                 400, "validation_error")
    expect_error(srv.put(a, json={"relay": {"capability": True, "other": 1}}), 400,
                 "validation_error")
    expect_error(srv.put(a, json={"relay": "on"}), 400, "validation_error")
    for mode in ("standard", "supervised", "readonly"):
        got = expect(srv.put(a, json={"relay": {"capability": True, "defaultMode": mode}}),
                     200, 201).json()
        eq(got["relay"], {"capability": True, "defaultMode": mode}, "relay settings")


def test_create_without_capability_409(srv):
    plain = _name()
    expect(srv.put("/v1/agents/" + plain, json={}), 201)
    expect_error(srv.post("/v1/relay/sessions", json={"agent": plain}), 409, "conflict")
    off = make_agent(srv, _name(), capability=False)
    expect_error(srv.post("/v1/relay/sessions", json={"agent": off}), 409, "conflict")


def test_create_unknown_agent_404_and_bad_bodies_400(srv):
    expect_error(srv.post("/v1/relay/sessions", json={"agent": "nobody-here"}), 404,
                 "not_found")
    expect_error(srv.post("/v1/relay/sessions", json={}), 400, "validation_error")
    a = make_agent(srv, _name())
    expect_error(srv.post("/v1/relay/sessions", json={"agent": a, "x": 1}), 400,
                 "validation_error")


def test_create_answer_and_get(srv):
    a = make_agent(srv, _name(), mode="supervised")
    s = create(srv, a)
    check(s["uid"].startswith("rs_"), "uid prefix")
    check(len(s["connectToken"]) >= 40, "token is long")
    eq(s["status"], "waiting", "status")
    eq(s["mode"], "supervised", "mode is the agent's default until the user chooses")
    eq(s["defaultMode"], "supervised", "defaultMode")
    eq(s["limits"], {"fileBytes": 10 << 20, "reads": 500, "writes": 100,
                     "bytesWritten": 500 << 20, "seconds": 4 * 3600, "searchResults": 100},
       "default limits")
    got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
    check("connectToken" not in got, "the token is shown once")
    for k in ("uid", "agent", "status", "mode", "defaultMode", "exclusions", "counts",
              "limits", "startedAt"):
        contains(got, k, "session field")
    eq(got["counts"], {"reads": 0, "writes": 0, "bytesWritten": 0}, "counts")
    contains(got["exclusions"], ".env", "default exclusions listed")
    eq(got["agent"], a, "agent")


def test_limits_lowered_and_over_ceiling_400(srv):
    a = make_agent(srv, _name())
    s = create(srv, a, {"reads": 5, "fileBytes": 1000})
    eq(s["limits"]["reads"], 5, "lowered")
    eq(s["limits"]["fileBytes"], 1000, "lowered")
    at = create(srv, a, {"reads": 500, "fileBytes": 10 << 20, "seconds": 14400})
    eq((at["limits"]["reads"], at["limits"]["fileBytes"]), (500, 10 << 20), "ceilings accepted")
    expect_error(srv.post("/v1/relay/sessions", json={"agent": a, "limits": {"reads": 501}}),
                 400, "validation_error")
    expect_error(srv.post("/v1/relay/sessions", json={"agent": a, "limits": {
        "fileBytes": (10 << 20) + 1}}), 400, "validation_error")
    expect_error(srv.post("/v1/relay/sessions", json={"agent": a, "limits": {"other": 1}}),
                 400, "validation_error")
    expect_error(srv.post("/v1/relay/sessions", json={"agent": a, "limits": {"writes": 0}}),
                 400, "validation_error")


def test_unknown_session_404(srv):
    expect_error(srv.get("/v1/relay/sessions/rs_nothing"), 404, "not_found")
    expect_error(_op(srv, "rs_nothing", op="list_directory"), 404, "not_found")


def test_other_org_404_and_agent_key_scoped(srv):
    s, c, _ = _session(srv)
    other = expect(srv.post("/v1/keys", json={"org": "o-%s" % _name()}), 201).json()["key"]
    expect_error(srv.get("/v1/relay/sessions/" + s["uid"], key=other), 404, "not_found")
    expect_error(_op(srv, s["uid"], key=other, op="list_directory"), 404, "not_found")
    expect_error(srv.delete("/v1/relay/sessions/" + s["uid"], key=other), 404, "not_found")
    own = expect(srv.post("/v1/keys", json={"agent": s["agent"]}), 201).json()["key"]
    expect(srv.get("/v1/relay/sessions/" + s["uid"], key=own), 200)
    expect(_op(srv, s["uid"], key=own, op="list_directory"), 200)
    b = make_agent(srv, _name())
    bkey = expect(srv.post("/v1/keys", json={"agent": b}), 201).json()["key"]
    expect_error(srv.get("/v1/relay/sessions/" + s["uid"], key=bkey), 404, "not_found")
    expect_error(srv.post("/v1/relay/sessions", json={"agent": s["agent"]}, key=bkey), 403,
                 "forbidden")
    expect_error(srv.get("/v1/relay/sessions", query={"agent": s["agent"]}, key=bkey), 403,
                 "forbidden")
    c.close()


def test_list_by_agent(srv):
    s, c, _ = _session(srv)
    got = expect(srv.get("/v1/relay/sessions", query={"agent": s["agent"]}), 200).json()
    eq([x["uid"] for x in got["sessions"]], [s["uid"]], "the agent's active session")
    expect(srv.delete("/v1/relay/sessions/" + s["uid"]), 200)
    got = expect(srv.get("/v1/relay/sessions", query={"agent": s["agent"]}), 200).json()
    eq(got["sessions"], [], "ended sessions left out")
    got = expect(srv.get("/v1/relay/sessions", query={"agent": s["agent"], "all": "true"}),
                 200).json()
    eq([x["status"] for x in got["sessions"]], ["ended"], "all=true shows ended")
    c.close()


# ------------------------------------------------------------------ tokens, clients

def test_wrong_token_401(srv):
    a = make_agent(srv, _name())
    s = create(srv, a)
    root = tempfile.mkdtemp()
    c = FakeClient(srv, s["uid"], "rct_wrong", root)
    eq(c.status, 401, "wrong token")
    eq(c.error["type"], "unauthorized", "type")
    c = FakeClient(srv, s["uid"], None, root)
    eq(c.status, 401, "no token")
    c = FakeClient(srv, s["uid"], srv.key, root)
    eq(c.status, 401, "an API key is not a connect token")
    expect_error(srv.post("/v1/relay/sessions/%s/events" % s["uid"],
                          json={"type": "abort"}, key="rct_wrong"), 401, "unauthorized")
    expect_error(srv.post("/v1/relay/sessions/%s/results/op_x" % s["uid"],
                          json={"ok": True}, key="rct_wrong"), 401, "unauthorized")
    expect_error(srv.get("/v1/relay/sessions/" + s["uid"], key=s["connectToken"]), 401,
                 "unauthorized")
    eq(_wait_status(srv, s["uid"], "waiting")["status"], "waiting", "still waiting")


def test_second_client_409(srv):
    s, c, root = _session(srv)
    c2 = FakeClient(srv, s["uid"], s["connectToken"], root)
    eq(c2.status, 409, "second client")
    eq(c2.error["type"], "conflict", "type")
    expect(_op(srv, s["uid"], op="list_directory"), 200)
    eq(len(c.ops), 1, "the first client still serves")
    c.close()


def test_connect_bad_body_400(srv):
    a = make_agent(srv, _name())
    s = create(srv, a)
    root = tempfile.mkdtemp()
    c = FakeClient(srv, s["uid"], s["connectToken"], root, mode="wild")
    eq(c.status, 400, "bad mode")
    c = FakeClient(srv, s["uid"], s["connectToken"], root, exclusions=[7])
    eq(c.status, 400, "bad exclusions")
    _wait_status(srv, s["uid"], "waiting")


# ------------------------------------------------------------------ life cycle

def test_lifecycle_events(srv):
    a = make_agent(srv, _name())
    s = create(srv, a)
    ev = Events(srv, s["uid"])
    eq(ev.wait("status_changed")[0]["status"], "waiting", "first event replayed")
    root = tempfile.mkdtemp()
    c = FakeClient(srv, s["uid"], s["connectToken"], root, exclusions=["secret/"])
    eq(c.status, 200, "connect")
    got = ev.wait("status_changed", 2)[1]
    eq((got["status"], got["previous"]), ("active", "waiting"), "active")
    ex = ev.wait("exclusions")[0]
    eq(ex["user"], ["secret/"], "the user's exclusions")
    contains(ex["exclusions"], ".env", "with the defaults")
    c.close()
    eq(ev.wait("pause")[0]["reason"], "disconnected", "pause reason")
    eq(ev.wait("status_changed", 3)[2]["status"], "paused", "paused")
    _wait_status(srv, s["uid"], "paused")
    c = FakeClient(srv, s["uid"], s["connectToken"], root)
    eq(c.status, 200, "reconnect")
    ev.wait("resume")
    eq(ev.wait("status_changed", 4)[3], {"status": "active", "previous": "paused"}, "again")
    expect(srv.delete("/v1/relay/sessions/" + s["uid"]), 200)
    eq(ev.wait("session_ended")[0]["reason"], "closed", "reason")
    eq(c.wait_event("session_ended"), {"reason": "closed"}, "the client is told")
    eq(ev.types(), ["status_changed", "status_changed", "exclusions", "pause",
                    "status_changed", "status_changed", "exclusions", "resume",
                    "status_changed", "session_ended"], "event order")
    deadline = time.time() + 5
    while not (ev.done and c.closed) and time.time() < deadline:
        time.sleep(0.05)
    check(ev.done and c.closed, "both streams end with the session")
    got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
    eq((got["status"], got["endReason"]), ("ended", "closed"), "ended")


def test_events_last_event_id(srv):
    a = make_agent(srv, _name())
    s = create(srv, a)
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
    conn.request("GET", "/v1/relay/sessions/%s/events" % s["uid"],
                 headers={"Authorization": "Bearer " + srv.key, "Last-Event-ID": "1"})
    expect(srv.post("/v1/relay/sessions/%s/abort" % s["uid"]), 200)
    body = conn.getresponse().read().decode()
    check("id: 1\n" not in body, "event 1 not replayed: %r" % body)
    check("event: abort" in body and "event: session_ended" in body, body)


def test_agent_disconnected_reaches_client(srv):
    s, c, _ = _session(srv)
    ev = Events(srv, s["uid"])
    ev.wait("status_changed")
    ev.close()
    check(c.wait_event("agent_disconnected") is not None, "client told")
    c.close()


def test_grace_expiry():
    with harness.server(args=["--relay-grace", "1"]) as srv:
        s, c, _ = _session(srv)
        c.close()
        _wait_status(srv, s["uid"], "paused")
        got = _wait_status(srv, s["uid"], "ended", timeout=10)
        eq(got["endReason"], "grace", "ended by the grace time")
        expect_error(_op(srv, s["uid"], op="list_directory"), 410, "gone")
        c2 = FakeClient(srv, s["uid"], s["connectToken"], tempfile.mkdtemp())
        eq(c2.status, 410, "no coming back")


def test_time_limit_410(srv):
    s, c, _ = _session(srv, limits={"seconds": 1})
    time.sleep(1.2)
    r = expect_error(_op(srv, s["uid"], op="list_directory"), 410, "gone")
    eq(r["reason"], "expired", "reason")
    eq(c.ops, [], "nothing forwarded")
    eq(c.wait_event("session_ended"), {"reason": "expired"}, "client told")


def test_ops_after_abort_410_nothing_forwarded(srv):
    s, c, root = _session(srv, files={"a.txt": "hi"})
    ev = Events(srv, s["uid"])
    expect(srv.post("/v1/relay/sessions/%s/abort" % s["uid"]), 200)
    eq(ev.wait("abort")[0], {"by": "agent"}, "abort event")
    for body in ({"op": "read_file", "path": "a.txt"},
                 {"op": "write_file", "path": "b.txt", "content": "x"},
                 {"op": "list_directory"}):
        expect_error(_op(srv, s["uid"], **body), 410, "gone")
    time.sleep(0.3)
    eq(c.ops, [], "the client received nothing")
    check(not os.path.exists(os.path.join(root, "b.txt")), "no file touched")
    expect_error(srv.post("/v1/relay/sessions/%s/abort" % s["uid"]), 410, "gone")
    expect_error(srv.post("/v1/relay/sessions/%s/events" % s["uid"], json={"type": "accept"},
                          key=s["connectToken"]), 410, "gone")


def test_ops_after_delete_410_nothing_forwarded(srv):
    s, c, root = _session(srv)
    expect(srv.delete("/v1/relay/sessions/" + s["uid"]), 200)
    expect_error(_op(srv, s["uid"], op="write_file", path="b.txt", content="x"), 410, "gone")
    time.sleep(0.3)
    eq(c.ops, [], "the client received nothing")
    check(not os.path.exists(os.path.join(root, "b.txt")), "no file touched")
    expect_error(srv.delete("/v1/relay/sessions/" + s["uid"]), 410, "gone")


def test_client_abort_ends_session(srv):
    s, c, _ = _session(srv)
    ev = Events(srv, s["uid"])
    expect(c.post_event("abort"), 204)
    eq(ev.wait("abort")[0], {"by": "user"}, "abort by the user")
    eq(ev.wait("session_ended")[0]["reason"], "aborted", "ended")
    expect_error(_op(srv, s["uid"], op="list_directory"), 410, "gone")


def test_op_without_client_503(srv):
    a = make_agent(srv, _name())
    s = create(srv, a)
    expect_error(_op(srv, s["uid"], op="list_directory"), 503, "unavailable")
    eq(expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()["counts"]["reads"], 0,
       "a refused op counts nothing")


def test_client_disconnect_mid_op_503(srv):
    s, c, _ = _session(srv, files={"a.txt": "hi"})
    c.hold = True
    out = {}
    t = threading.Thread(target=lambda: out.update(r=_op(srv, s["uid"], op="read_file",
                                                          path="a.txt")))
    t.start()
    c.wait_ops(1)
    eq(len(c.ops), 1, "op received")
    c.close()
    t.join(30)
    expect_error(out["r"], 503, "unavailable")
    _wait_status(srv, s["uid"], "paused")
    # a late answer for that op is dropped
    expect_error(c.post_result(c.ops[0]["id"], {"ok": True, "result": {"content": "x"}}),
                 404, "not_found")


def test_result_unknown_op_404(srv):
    s, c, _ = _session(srv)
    expect_error(c.post_result("op_nothing", {"ok": True, "result": {}}), 404, "not_found")
    expect_error(c.post_event("hello"), 400, "validation_error")
    c.close()


# ------------------------------------------------------------------ ops round trip

def test_ops_round_trip(srv):
    s, c, root = _session(srv, files={"a.txt": "hello\nworld\n", "d/b.txt": "world"})
    ev = Events(srv, s["uid"])
    got = expect(_op(srv, s["uid"], op="read_file", path="a.txt"), 200).json()
    eq((got["content"], got["size"]), ("hello\nworld\n", 12), "read")
    got = expect(_op(srv, s["uid"], op="write_file", path="d/c.txt", content="new"), 200).json()
    eq(got["size"], 3, "write")
    with open(os.path.join(root, "d/c.txt")) as f:
        eq(f.read(), "new", "file written")
    got = expect(_op(srv, s["uid"], op="write_file", path="bin.dat",
                     content="AAEC", encoding="base64"), 200).json()
    eq(got["size"], 3, "base64 write")
    got = expect(_op(srv, s["uid"], op="list_directory", path="d"), 200).json()
    eq([e["name"] for e in got["entries"]], ["b.txt", "c.txt"], "list")
    got = expect(_op(srv, s["uid"], op="search_files", pattern="world"), 200).json()
    eq(sorted(r["file"] for r in got["results"]), ["a.txt", "d/b.txt"], "search")
    eq(got["truncated"], False, "not truncated")
    w = ev.wait("write_result", 2)
    eq((w[0]["path"], w[0]["size"]), ("d/c.txt", 3), "write_result")
    got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
    eq(got["counts"], {"reads": 3, "writes": 2, "bytesWritten": 6}, "counts")
    log = expect(srv.get("/v1/relay/sessions/%s/log" % s["uid"]), 200).json()
    ops = [(e["op"], e["outcome"]) for e in log["entries"] if "op" in e]
    eq(ops, [("read_file", "ok"), ("write_file", "ok"), ("write_file", "ok"),
             ("list_directory", "ok"), ("search_files", "ok")], "log")
    c.close()


def test_client_error_passed_on(srv):
    s, c, _ = _session(srv)
    expect_error(_op(srv, s["uid"], op="read_file", path="missing.txt"), 404, "not_found")
    log = expect(srv.get("/v1/relay/sessions/%s/log" % s["uid"]), 200).json()
    eq(log["entries"][-1]["outcome"], "not_found", "logged")
    c.close()


def test_malformed_answer_ends_the_op_at_once(srv):
    """A user's side that answers with a body that is not JSON (here a NUL escape, which
    cofferd's parser refuses) or not an answer gets 400, and the op it names ends with a
    500 naming why at once; before, the agent side waited out --relay-op-wait (120 s)."""
    s, c, _ = _session(srv, files={"a.txt": "hello"})
    c.hold = True
    bodies = [b'{"ok": true, "result": {"content": "x\\u0000y", "encoding": "utf-8"}}',
              b'not json at all', b'{"result": {}}', b'']
    for raw in bodies:
        res = {}
        th = threading.Thread(target=lambda: res.update(
            r=_op(srv, s["uid"], op="read_file", path="a.txt")))
        th.start()
        deadline = time.time() + 10 * harness.SCALE
        while not c.ops and time.time() < deadline:
            time.sleep(0.02)
        check(c.ops, "the op reached the user's side")
        op = c.ops.pop()
        r = srv.request("POST", "/v1/relay/sessions/%s/results/%s" % (s["uid"], op["id"]),
                        body=raw, headers={"Content-Type": "application/json"},
                        key=c.token)
        expect_error(r, 400, "validation_error")
        th.join(10 * harness.SCALE)
        check(not th.is_alive(), "the agent's op still waits after %r" % raw)
        err = expect_error(res["r"], 500, "internal")
        contains(err["message"], "not an answer", "the agent is told why")
    # the session goes on: a good answer still comes through
    c.hold = False
    eq(expect(_op(srv, s["uid"], op="read_file", path="a.txt"), 200).json()["content"],
       "hello", "a read after the bad answers")
    c.close()


def test_op_bad_bodies_400(srv):
    s, c, _ = _session(srv)
    for body in ({"op": "delete_file", "path": "a"}, {"op": "read_file"},
                 {"op": "write_file", "path": "a.txt"},
                 {"op": "write_file", "path": "a.txt", "content": "x", "encoding": "hex"},
                 {"op": "write_file", "path": "a.txt", "content": "!!", "encoding": "base64"},
                 {"op": "search_files"}, {"op": "read_file", "path": "a", "x": 1}):
        expect_error(_op(srv, s["uid"], **body), 400, "validation_error")
    eq(c.ops, [], "nothing forwarded")
    c.close()


# ------------------------------------------------------------------ exclusions, mode

def _excl_session(srv):
    return _session(srv, exclusions=["private/", "*.log"], files={
        ".env": "SECRET=1", "ok.txt": "needle", "app.log": "needle",
        "private/p.txt": "needle", "keys/id_rsa": "needle", "sub/.env": "needle"})


def test_excluded_read_403(srv):
    s, c, _ = _excl_session(srv)
    for p in (".env", "app.log", "private/p.txt", "keys/id_rsa", "sub/.env"):
        expect_error(_op(srv, s["uid"], op="read_file", path=p), 403, "forbidden")
    eq(c.ops, [], "nothing forwarded")
    expect(_op(srv, s["uid"], op="read_file", path="ok.txt"), 200)
    c.close()


def test_excluded_write_403(srv):
    s, c, root = _excl_session(srv)
    for p in (".env", "new.log", "private/q.txt", "x.pem"):
        expect_error(_op(srv, s["uid"], op="write_file", path=p, content="x"), 403,
                     "forbidden")
    eq(c.ops, [], "nothing forwarded")
    check(not os.path.exists(os.path.join(root, "x.pem")), "no file")
    c.close()


def test_excluded_hidden_from_listing(srv):
    s, c, _ = _excl_session(srv)
    got = expect(_op(srv, s["uid"], op="list_directory"), 200).json()
    eq(sorted(e["name"] for e in got["entries"]), ["keys", "ok.txt", "sub"], "listing")
    got = expect(_op(srv, s["uid"], op="list_directory", path="keys"), 200).json()
    eq(got["entries"], [], "id_rsa hidden")
    expect_error(_op(srv, s["uid"], op="list_directory", path="private"), 403, "forbidden")
    c.close()


def test_excluded_hidden_from_search(srv):
    s, c, _ = _excl_session(srv)
    got = expect(_op(srv, s["uid"], op="search_files", pattern="needle"), 200).json()
    eq([r["file"] for r in got["results"]], ["ok.txt"], "search results")
    expect_error(_op(srv, s["uid"], op="search_files", pattern="x", path="private"), 403,
                 "forbidden")
    c.close()


def test_readonly_write_403(srv):
    s, c, root = _session(srv, client_mode="readonly")
    eq(expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()["mode"], "readonly",
       "the user's mode")
    expect_error(_op(srv, s["uid"], op="write_file", path="a.txt", content="x"), 403,
                 "forbidden")
    eq(c.ops, [], "nothing forwarded")
    expect(_op(srv, s["uid"], op="list_directory"), 200)
    c.close()


def test_user_mode_wins_over_default(srv):
    s, c, _ = _session(srv, mode="readonly", client_mode="standard")
    eq(expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()["mode"], "standard",
       "mode")
    eq(expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()["defaultMode"],
       "readonly", "defaultMode")
    expect(_op(srv, s["uid"], op="write_file", path="a.txt", content="x"), 200)
    c.close()


# ------------------------------------------------------------------ limits at their edge

def test_size_limit_edge(srv):
    s, c, root = _session(srv, limits={"fileBytes": 100},
                          files={"100.txt": "a" * 100, "101.txt": "a" * 101})
    expect(_op(srv, s["uid"], op="write_file", path="w100.txt", content="b" * 100), 200)
    r = expect_error(_op(srv, s["uid"], op="write_file", path="w101.txt", content="b" * 101),
                     413, "too_large")
    check("fileBytes" in r["message"], "names the limit: " + r["message"])
    check(not os.path.exists(os.path.join(root, "w101.txt")), "not written")
    expect(_op(srv, s["uid"], op="read_file", path="100.txt"), 200)
    expect_error(_op(srv, s["uid"], op="read_file", path="101.txt"), 413, "too_large")
    c.close()


def test_read_count_limit_edge(srv):
    s, c, _ = _session(srv, limits={"reads": 3}, files={"a.txt": "x"})
    expect(_op(srv, s["uid"], op="read_file", path="a.txt"), 200)
    expect(_op(srv, s["uid"], op="list_directory"), 200)
    expect(_op(srv, s["uid"], op="search_files", pattern="x"), 200)
    r = expect_error(_op(srv, s["uid"], op="read_file", path="a.txt"), 429, "rate_limited")
    check("reads" in r["message"], "names the limit")
    eq(len(c.ops), 3, "the fourth was not forwarded")
    expect(_op(srv, s["uid"], op="write_file", path="b.txt", content="y"), 200)
    c.close()


def test_write_count_limit_edge(srv):
    s, c, _ = _session(srv, limits={"writes": 2})
    for i in range(2):
        expect(_op(srv, s["uid"], op="write_file", path="w%d.txt" % i, content="x"), 200)
    r = expect_error(_op(srv, s["uid"], op="write_file", path="w2.txt", content="x"), 429,
                     "rate_limited")
    check("writes" in r["message"], "names the limit")
    eq(len(c.ops), 2, "not forwarded")
    c.close()


def test_bytes_written_limit_edge(srv):
    s, c, _ = _session(srv, limits={"bytesWritten": 10})
    expect(_op(srv, s["uid"], op="write_file", path="a.txt", content="x" * 6), 200)
    expect(_op(srv, s["uid"], op="write_file", path="b.txt", content="x" * 4), 200)
    r = expect_error(_op(srv, s["uid"], op="write_file", path="c.txt", content="x"), 429,
                     "rate_limited")
    check("bytesWritten" in r["message"], "names the limit")
    eq(r["limit"], "bytesWritten", "limit field")
    expect(_op(srv, s["uid"], op="write_file", path="d.txt", content=""), 200)
    c.close()


def test_search_truncated(srv):
    s, c, _ = _session(srv, limits={"searchResults": 2},
                       files={"a.txt": "hit\nhit\nhit\n", "b.txt": "hit\nhit\n"})
    got = expect(_op(srv, s["uid"], op="search_files", pattern="hit"), 200).json()
    eq(len(got["results"]), 2, "capped")
    eq(got["truncated"], True, "truncated")
    eq(c.ops[-1]["maxResults"], 2, "the client is asked for the cap")
    got = expect(_op(srv, s["uid"], op="search_files", pattern="hit", maxResults=1),
                 200).json()
    eq((len(got["results"]), got["truncated"]), (1, True), "the agent's own lower cap")
    c.close()


# ------------------------------------------------------------------ paths

def _refused_path(srv, path, status=400, kind="validation_error", op="write_file"):
    s, c, root = _session(srv)
    body = {"op": op, "path": path}
    if op == "write_file":
        body["content"] = "x"
    r = expect_error(_op(srv, s["uid"], **body), status, kind)
    eq(c.ops, [], "nothing forwarded")
    eq(os.listdir(root), [], "no file")
    c.close()
    return r


def test_path_dotdot_read_400(srv):
    _refused_path(srv, "a/../../b.txt", op="read_file")


def test_path_absolute_read_400(srv):
    _refused_path(srv, "/etc/passwd", op="read_file")


def _blocked_leaving(srv, path, rule):
    """Seed 004: path traversal is among the guard's catches. A write that tries
    to leave the folder is a guard block like any other: 422, write_blocked to
    both sides, in the session's log; nothing forwarded or written."""
    s, c, root = _session(srv)
    ev = Events(srv, s["uid"])
    r = expect_error(_op(srv, s["uid"], op="write_file", path=path, content="x"), 422,
                     "blocked")
    eq(r.get("rule"), rule, "the rule named: %r" % r)
    got = ev.wait("write_blocked")[0]
    eq((got["path"], got["rule"], got["by"]), (path, rule, "server"), "agent's event")
    deadline = time.time() + 10
    while not any(e[0] == "write_blocked" for e in c.events) and time.time() < deadline:
        time.sleep(0.05)
    check(any(e[0] == "write_blocked" and e[1]["rule"] == rule for e in c.events),
          "the user's side told: %r" % c.events)
    log = expect(srv.get("/v1/relay/sessions/%s/log" % s["uid"]), 200).json()
    check(any((e.get("blocked") or {}).get("rule") == rule for e in log["entries"]),
          "logged with the scan's result: %r" % log)
    eq(c.ops, [], "nothing forwarded")
    eq(os.listdir(root), [], "no file")
    c.close()


def test_write_dotdot_is_a_guard_block(srv):
    _blocked_leaving(srv, "../outside.txt", "path-traversal")
    _blocked_leaving(srv, "a/../../b.txt", "path-traversal")


def test_write_absolute_is_a_guard_block(srv):
    _blocked_leaving(srv, "/tmp/x.txt", "path-absolute")


def test_folder_paths_may_end_in_slash(srv):
    """Seed 004's own call: listDirectory('src/')."""
    s, c, _ = _session(srv, files={"src/a.c": "int a;\n", "src/b.c": "int b;\n"})
    got = expect(_op(srv, s["uid"], op="list_directory", path="src/"), 200).json()
    eq(sorted(e["name"] for e in got["entries"]), ["a.c", "b.c"], "listed")
    eq(c.ops[-1]["path"], "src", "the client is asked for the folder")
    got = expect(_op(srv, s["uid"], op="search_files", path="src/", pattern="int"),
                 200).json()
    eq(len(got["results"]), 2, "searched")
    expect_error(_op(srv, s["uid"], op="list_directory", path="src//"), 400,
                 "validation_error")
    c.close()


def test_profile_key_workspace_is_relay(srv):
    """Seed 004's profile key `workspace: {capability, defaultMode}`."""
    name = _name()
    expect(srv.put("/v1/agents/" + name, json={
        "workspace": {"capability": True, "defaultMode": "readonly"}}), 201)
    got = expect(srv.get("/v1/agents/" + name), 200).json()
    eq(got.get("relay"), {"capability": True, "defaultMode": "readonly"}, "stored as relay")
    s = create(srv, name)
    eq(expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()["defaultMode"],
       "readonly", "the session's suggestion")
    expect_error(srv.put("/v1/agents/" + _name(), json={
        "workspace": {"capability": True}, "relay": {"capability": True}}), 400,
        "validation_error")
    expect_error(srv.put("/v1/agents/" + _name(), json={
        "workspace": {"capability": True, "defaultMode": "yolo"}}), 400, "validation_error")


def test_path_newline_400(srv):
    _refused_path(srv, "a\nb.txt")


def test_path_nul_400(srv):
    s, c, _ = _session(srv)
    raw = b'{"op":"write_file","path":"a\\u0000b.txt","content":"x"}'
    expect_error(srv.post("/v1/relay/sessions/%s/ops" % s["uid"], body=raw,
                          headers={"Content-Type": "application/json"}), 400,
                 "validation_error")
    eq(c.ops, [], "nothing forwarded")
    c.close()


def test_path_command_substitution_blocked(srv):
    _refused_path(srv, "$(rm -rf ~).txt", 422, "blocked")


def test_path_backtick_blocked(srv):
    _refused_path(srv, "`id`.txt", 422, "blocked")


def test_path_semicolon_blocked(srv):
    _refused_path(srv, "a;rm -rf ~.txt", 422, "blocked")


def test_idle_client_detached_503_and_paused():
    with harness.server(args=["--relay-op-wait", "1"]) as srv:
        s, c, _ = _session(srv, files={"a.txt": "x"})
        ev = Events(srv, s["uid"])
        c.hold = True
        r = expect_error(_op(srv, s["uid"], op="read_file", path="a.txt"), 503, "unavailable")
        check("did not answer" in r["message"], r["message"])
        eq(ev.wait("pause")[0]["reason"], "idle", "paused as idle")
        _wait_status(srv, s["uid"], "paused")
        deadline = time.time() + 5
        while not c.closed and time.time() < deadline:
            time.sleep(0.05)
        check(c.closed, "the idle client's stream was closed")
        c2 = FakeClient(srv, s["uid"], s["connectToken"], c.root)
        eq(c2.status, 200, "a client attaches again")
        expect(_op(srv, s["uid"], op="read_file", path="a.txt"), 200)
        c2.close()
        ev.close()


def test_supervised_wait_times_out_to_423():
    with harness.server(args=["--relay-op-wait", "1"]) as srv:
        s, c, root = _session(srv, client_mode="supervised")
        c.hold = True
        r = expect_error(_op(srv, s["uid"], op="write_file", path="a.txt", content="x"), 423,
                         "locked")
        eq(_wait_status(srv, s["uid"], "active")["status"], "active", "not detached")
        c.answer(c.ops[0])
        got = expect(srv.get("/v1/relay/sessions/%s/ops/%s" % (s["uid"], r["opId"])),
                     200).json()
        eq((got["status"], got["ok"]), ("done", True), "result later")
        c.close()


def test_log_has_connect_and_pause(srv):
    s, c, _ = _session(srv)
    c.close()
    _wait_status(srv, s["uid"], "paused")
    log = expect(srv.get("/v1/relay/sessions/%s/log" % s["uid"]), 200).json()["entries"]
    eq([(e.get("event"), e.get("reason", e.get("mode"))) for e in log],
       [("connect", "standard"), ("pause", "disconnected")], "log events")
    check(all("at" in e for e in log), "each entry has its time")


def test_a_revoked_keys_session_events_stream_ends(srv):
    """Issue 32.8: the agent side's events stream of a session, opened with a key that
    is then revoked, ends with an `error` event saying so (before, it went on for as
    long as the session did). The session itself goes on: other keys still see it."""
    agent = make_agent(srv, _name())
    s = create(srv, agent)
    k = expect(srv.post("/v1/keys", json={}), 201).json()
    ev = harness.EventStream(srv, "/v1/relay/sessions/%s/events" % s["uid"], key=k["key"],
                             timeout=60)
    try:
        expect(srv.delete("/v1/keys/" + k["id"]), 204)
        deadline = time.time() + 30 * harness.SCALE
        while time.time() < deadline and not ev.done:
            time.sleep(0.05)
        check(ev.done, "the stream of a revoked key ended")
        errs = [d for t, d in ev.events if t == "error"]
        eq(len(errs), 1, "one error event ends it: %r" % (ev.events,))
        contains(errs[0]["message"], "%s was revoked" % k["id"], "its message")
        expect(srv.get("/v1/relay/sessions/%s" % s["uid"]), 200)
    finally:
        ev.close()
