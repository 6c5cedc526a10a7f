"""Long requests (turn calls, relay ops) taken in turn between organizations
(issue 32 item 7, docs/design.md "The HTTP server's threads"): one
organization's long calls never make another's wait for them, and one
organization runs at most --calls-per-org at once. A small server (two workers a
lane, two calls an organization) makes the edges easy to reach."""

import os
import threading
import time

import harness
from harness import check, eq, expect
from turnlib import make_agent, new_id, processes_with


def _turn(srv, key):
    aid = make_agent(srv, key=key)
    return expect(srv.post("/v1/turns", json={"agent": aid, "user": "u1",
                                              "deadlineSeconds": 600}, key=key), 201).json()


def _running(tag, n):
    """The tags tag-0..tag-(n-1) whose call runs now."""
    return {i for i in range(n) if processes_with("%s-%d;" % (tag, i))}


def test_one_organization_never_holds_another_s_calls():
    with harness.server(args=["--workers", "2", "--calls-per-org", "2"]) as srv:
        other = expect(srv.post("/v1/keys", json={"org": new_id("fair")}), 201).json()["key"]
        turns = [_turn(srv, srv.key) for _ in range(4)]
        b_turn = _turn(srv, other)
        tag = new_id("fair-a")
        done = []

        def a_call(i):
            # `: TAG-i;` names the call on the host's process list
            r = srv.post("/v1/turns/%s/calls" % turns[i]["id"],
                         json={"command": "sleep 120; : %s-%d;" % (tag, i)}, timeout=300)
            done.append((i, r.status))
        threads = [threading.Thread(target=a_call, args=(i,), daemon=True) for i in range(4)]
        for t in threads:
            t.start()
        # two run (the lane's two workers, the organization's cap); two wait
        harness.until(lambda: len(_running(tag, 4)) == 2, "two of A's calls to run")
        # B's call runs at once: it neither waits for A's running calls nor
        # behind A's waiting ones (before: a FIFO of two workers, ~240 s)
        out = expect(srv.post("/v1/turns/%s/calls" % b_turn["id"],
                              json={"command": "echo b"}, key=other, timeout=300), 200).json()
        eq(out["stdout"], "b\n", "B's call")
        eq(done, [], "B's call answered while every call of A still ran or waited")
        eq(len(_running(tag, 4)), 2, "A still has two running: its cap")
        # ending A's turns ends its calls, running and waiting
        for t in turns:
            srv.delete("/v1/turns/%s" % t["id"])
        for t in threads:
            t.join(120)
        check(len(done) == 4, "every call of A answered: %r" % done)


def test_the_cap_holds_calls_of_one_organization_that_others_leave_room_for():
    """--calls-per-org 1: the second call of an organization waits for the first
    even with idle workers, and runs once it ends."""
    with harness.server(args=["--workers", "4", "--calls-per-org", "1"]) as srv:
        turns = [_turn(srv, srv.key) for _ in range(2)]
        tag = new_id("cap")
        res = {}

        def a_call(i, secs):
            r = srv.post("/v1/turns/%s/calls" % turns[i]["id"],
                         json={"command": "sleep %d; : %s-%d;" % (secs, tag, i)}, timeout=300)
            res[i] = r.status
        t0 = threading.Thread(target=a_call, args=(0, 120), daemon=True)
        t0.start()
        harness.until(lambda: _running(tag, 2) == {0}, "the first call to run")
        t1 = threading.Thread(target=a_call, args=(1, 1), daemon=True)
        t1.start()
        time.sleep(2)
        eq(_running(tag, 2), {0}, "the second waits (the cap of 1)")
        check(1 not in res, "the second is not answered while the first runs")
        srv.delete("/v1/turns/%s" % turns[0]["id"])  # ends the first
        t1.join(120)
        eq(res.get(1), 200, "the second ran once the first ended")
        t0.join(60)


def test_calls_per_org_refuses_a_bad_value():
    import subprocess
    for bad in ("0", "-1", "x"):
        r = subprocess.run([harness.bin_path("cofferd"), "--calls-per-org", bad,
                            "--data", harness.tempfile.mkdtemp()],
                           capture_output=True, timeout=30)
        eq(r.returncode, 2, "exit code for --calls-per-org %s: %r" % (bad, r.stderr))
        check(b"calls-per-org" in r.stderr, "names the option: %r" % r.stderr)
