"""Turns: a turn cannot hurt another turn or the host (docs/design.md
"Confinement"): a shared disk limit stops only turns that grew; a call sees the
system's programs and its own workspace, nothing of other turns, the data dir or
the host's private folders; bytes a call wrote never run (memfd included)."""

import os
import threading
import time

import harness
from harness import check, contains, eq, expect
from turnlib import call, make_agent, new_turn, ok

TIMEOUT = 120


# ---- a shared limit stops only the turns that grew

def _victim_at_rest(s):
    aid = make_agent(s, sandbox={"scratch": "64m", "turnDisk": "16m", "userDisk": "32m"})
    victim = new_turn(s, aid, user="victim")
    ok(s, victim["id"], "dd if=/dev/zero of=keep bs=1M count=8 2>/dev/null")
    res = {}
    th = threading.Thread(target=lambda: res.update(out=call(
        s, victim["id"], "sleep 6; du -k keep", timeoutSeconds=60)))
    th.start()
    time.sleep(1)
    limits, growers = [], [new_turn(s, aid, user="grower%d" % i) for i in range(4)]

    def grow(t):
        limits.append(call(s, t["id"], "dd if=/dev/zero of=f bs=1M count=15 2>/dev/null; "
                           "sleep 2", timeoutSeconds=60).get("limit"))
    ths = [threading.Thread(target=grow, args=(t,)) for t in growers]
    for g in ths:
        g.start()
    for g in ths + [th]:
        g.join(60)
    out = res["out"]
    check("scratch" in limits, "one of the growers reached scratch: %r" % limits)
    eq(out.get("limit"), None, "the victim at rest: %r" % out)
    eq(out["stdout"].split()[:1], ["8192"], "the victim's file")
    eq(ok(s, victim["id"], "du -k keep")["stdout"].split()[:1], ["8192"], "after")


def test_shared_limit_spares_a_turn_at_rest(srv):
    _victim_at_rest(srv)


def test_walk_mode_shared_limit_spares_a_turn_at_rest():
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        _victim_at_rest(s)


def test_shared_limit_spares_a_grower_within_its_share(srv):
    # both grow in their call: the one past its share (32m / 2) is stopped
    aid = make_agent(srv, sandbox={"scratch": "32m", "turnDisk": "30m", "userDisk": "32m"})
    small = new_turn(srv, aid, user="small")
    res = {}
    th = threading.Thread(target=lambda: res.update(out=call(
        srv, small["id"], "dd if=/dev/zero of=f bs=1M count=4 2>/dev/null; sleep 5",
        timeoutSeconds=60)))
    th.start()
    time.sleep(1.5)
    big = new_turn(srv, aid, user="big")
    out = call(srv, big["id"], "dd if=/dev/zero of=f bs=1M count=40 2>/dev/null; sleep 1")
    eq(out.get("limit"), "scratch", "the grower past its share: %r" % out)
    th.join(60)
    eq(res["out"].get("limit"), None, "the grower within its share: %r" % res["out"])
    eq(ok(srv, small["id"], "du -k f")["stdout"].split()[:1], ["4096"], "its file")
