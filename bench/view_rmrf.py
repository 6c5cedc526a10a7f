#!/usr/bin/env python3
"""`rm -rf` of a committed tree in a call's read-write view (issue 38): one call
commits N files (default 10,000) in folders of --per (default 100) under
/workspace/t (each two deep: t/aNN/bNN; the making is timed in the call too),
a later call times `rm -rf t` inside the call, then the commit of the removals
is checked. Prints milliseconds (median of --runs, each
on a fresh tree). The view's "is this folder empty" check scanned every path
the view had changed, so the removal was quadratic in the tree's size.

Usage: bench/view_rmrf.py [--files N] [--per K] [--runs R] [--build DIR]
Needs build/cofferd, root (or FUSE for this user), bwrap."""

import argparse, statistics, sys, tempfile, time

from benchlib import Cofferd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--per", type=int, default=100, help="files per folder")
    ap.add_argument("--build")
    a = ap.parse_args()
    per = a.per
    dirs = max(1, a.files // per)
    with tempfile.TemporaryDirectory() as data:
        s = Cofferd(data, build=a.build)
        try:
            aid = "rmrf-%d" % time.monotonic_ns()
            s.call("PUT", "/v1/agents/" + aid, {"mounts": [{"workspace": True}]})
            tid = s.call("POST", "/v1/turns", {"agent": aid, "user": "u",
                                               "deadlineSeconds": 3600})["id"]

            def run(cmd):
                out = s.call("POST", "/v1/turns/%s/calls" % tid,
                             {"command": cmd, "timeoutSeconds": 3000})
                if out.get("exitCode") != 0:
                    sys.exit("call failed: %r" % out)
                return out
            ms, mk = [], []
            for _ in range(a.runs):
                out = run("cd /workspace && s=$(date +%%s%%N) && for d in $(seq -w 1 %d); do "
                          "mkdir -p t/a$d/b$d && (cd t/a$d/b$d && touch $(seq -f f%%g.txt 1 %d)); "
                          "done && echo $(( ($(date +%%s%%N) - s) / 1000000 ))" % (dirs, per))
                mk.append(int(out["stdout"].split()[-1]))
                out = run("cd /workspace && s=$(date +%s%N) && rm -rf t && "
                          "echo $(( ($(date +%s%N) - s) / 1000000 ))")
                ms.append(int(out["stdout"].split()[-1]))
                removed = out["committed"][0]["removed"] if out["committed"] else 0
                if removed != dirs * per:
                    sys.exit("removed %d of %d" % (removed, dirs * per))
            print("making %d files (%d folders) in a call: %s ms, median %d ms" %
                  (dirs * per, 2 * dirs, mk, statistics.median(mk)))
            print("rm -rf of %d committed files (%d folders): %s ms, median %d ms" %
                  (dirs * per, 2 * dirs, ms, statistics.median(ms)))
        finally:
            s.stop()


if __name__ == "__main__":
    main()
