#!/usr/bin/env python3
"""A large copy-up against lookups in one call's read-write view (issue 36 item 5):
a committed file of --mib MiB (default 128) is written one byte in place by `dd
conv=notrunc` in the background (its first write copies the whole file into the
view's layer), and 0.1 s later the same call lists and stats the 50 files of a
folder it has not looked at. Prints, per build, the medians over --runs calls of the
lookups' time and of the time until the write ended (both measured inside the call,
from the start of the lookups). Before the view's copy ran with its mutex dropped,
the lookups waited for the whole copy.

Usage: bench/view_copyup.py [--mib N] [--runs R] BUILD_A [BUILD_B]
(build dirs holding cofferd; with two, rounds alternate A B, B A, ...)
Needs root (or FUSE for this user), bwrap."""

import argparse, statistics, sys, tempfile, time

from benchlib import Cofferd

CMD = ("cd /workspace && (dd if=/dev/zero of=big bs=1 count=1 conv=notrunc 2>/dev/null &) ; "
       "sleep 0.1; s=$(date +%s%N); ls -l docs >/dev/null; stat docs/* >/dev/null; "
       "e=$(date +%s%N); while pgrep -x dd >/dev/null; do sleep 0.01; done; "
       "w=$(date +%s%N); echo $(( (e - s) / 1000000 )) $(( (w - s) / 1000000 ))")


def one(build, mib, runs):
    look, done = [], []
    with tempfile.TemporaryDirectory() as data:
        s = Cofferd(data, build=build)
        try:
            aid = "cu-%d" % time.monotonic_ns()
            g = 4 * (mib << 20)  # room for the file, its copy and the commit's
            s.call("PUT", "/v1/agents/" + aid, {"mounts": [{"workspace": True}], "sandbox": {
                "scratch": 2 * g, "userDisk": g, "turnDisk": g}})
            tid = s.call("POST", "/v1/turns", {"agent": aid, "user": "u",
                                               "deadlineSeconds": 3600})["id"]

            def run(cmd):
                out = s.call("POST", "/v1/turns/%s/calls" % tid,
                             {"command": cmd, "timeoutSeconds": 600})
                if out.get("exitCode") != 0:
                    sys.exit("call failed: %r" % out)
                return out
            run("cd /workspace && head -c %d /dev/urandom > big && mkdir docs && "
                "for i in $(seq 1 50); do echo $i > docs/f$i; done" % (mib << 20))
            for _ in range(runs):
                a, b = run(CMD)["stdout"].split()[-2:]
                look.append(int(a))
                done.append(int(b))
        finally:
            s.stop()
    return look, done


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    got = {b: ([], []) for b in a.builds}
    for r in range(a.rounds):
        for b in (a.builds if r % 2 == 0 else a.builds[::-1]):
            look, done = one(b, a.mib, a.runs)
            got[b][0].extend(look)
            got[b][1].extend(done)
    for b in a.builds:
        print("%s: lookups %d ms (median of %s), write ended %d ms (median of %s)" % (
            b, statistics.median(got[b][0]), got[b][0], statistics.median(got[b][1]),
            got[b][1]))


if __name__ == "__main__":
    main()
