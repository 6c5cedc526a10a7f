"""Durations measure the monotonic clock, not the wall clock (issue 9.6): cofferd runs
with tests/blackbox/clockshim (an LD_PRELOAD library built here with cc) that steps its
CLOCK_REALTIME and time() by a day while it runs, as an NTP step or an operator would.
A relay session paused with a grace time of 10 minutes and a time limit of 4 hours must
neither end by its grace nor expire, and a long-poll of 2 s must answer (a wait computed
on the stepped clock would last a day); the times shown (startedAt) follow the wall
clock."""

import os
import shutil
import struct
import subprocess
import tempfile
import time

import harness
from harness import check, eq, expect
from relay_fake import FakeClient, create, make_agent

HERE = os.path.dirname(os.path.abspath(__file__))
DAY = 86400


def _shim(tmp):
    """Builds the shim into tmp; its path, or skips when there is no C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        harness.skip("no C compiler to build the clock shim")
    out = os.path.join(tmp, "clockshim.so")
    p = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", out,
                        os.path.join(HERE, "clockshim", "clockshim.c"), "-ldl"],
                       capture_output=True, timeout=60)
    check(p.returncode == 0, "building the clock shim: %s" % p.stderr.decode())
    return out


def _step(path, seconds):
    with open(path, "r+b") as f:
        f.write(struct.pack("<q", seconds))
        f.flush()


def _status(srv, uid):
    return expect(srv.get("/v1/relay/sessions/" + uid), 200).json()


def test_wall_clock_step_ends_no_wait():
    tmp = tempfile.mkdtemp(prefix="coffer-clock-")
    try:
        so = _shim(tmp)
        ctl = os.path.join(tmp, "offset")
        with open(ctl, "wb") as f:
            f.write(struct.pack("<q", 0))
        env = {"LD_PRELOAD": so, "COFFER_CLOCK_SHIM": ctl,
               "ASAN_OPTIONS": (os.environ.get("ASAN_OPTIONS", "") +
                                ":verify_asan_link_order=0").lstrip(":")}
        with harness.server(env=env, args=["--relay-grace", "600"]) as srv:
            agent = make_agent(srv, "clocked")
            s = create(srv, agent)
            root = tempfile.mkdtemp(dir=tmp)
            c = FakeClient(srv, s["uid"], s["connectToken"], root)
            eq(c.status, 200, "connect")
            c.close()
            deadline = time.time() + 10 * harness.SCALE
            while _status(srv, s["uid"])["status"] != "paused":
                check(time.time() < deadline, "the session paused after its client left")
                time.sleep(0.05)
            before = _status(srv, s["uid"])
            _step(ctl, DAY)
            after = _status(srv, s["uid"])
            eq((after["status"], after.get("endReason")), ("paused", None),
               "a paused session a wall-clock day later (grace 600 s, limit 4 h)")
            eq(after["startedAt"], before["startedAt"], "startedAt as shown")
            # a shown time follows the wall clock: a new session starts a day on
            s2 = create(srv, agent)
            check(s2["startedAt"][:10] != before["startedAt"][:10],
                  "a session started after the step shows the stepped date: %s vs %s"
                  % (s2["startedAt"], before["startedAt"]))
            # a long-poll waits on the monotonic clock: the wall clock a day ahead of
            # the kernel's does not stretch a wait of 2 s to a day
            vid = srv.create_volume()["id"]
            r = expect(srv.get("/v1/volumes/%s/changes" % vid,
                               query={"since": srv.seq(vid), "wait": 2}, timeout=30), 200)
            eq(r.json()["changes"], [], "the long-poll's answer")
            eq(_status(srv, s["uid"])["status"], "paused", "still paused")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
