#!/usr/bin/env python3
"""Two builds of cofferd side by side on one store, interleaved (issue 11's
cold-call figures move a lot between runs of the same code; only an A/B taken
in one run says whether a change helped):

  bench/views_ab.py [--rounds R] [--calls K] [--modes rw:grep,ro:grep,rw:find] [--big N]
                    BUILD_A BUILD_B

Each round starts each build's cofferd once (A then B, then B then A in the
next round) and times K cold calls per mode: each call's first run of the
command on a view just mounted (the volume moved before it), timed inside the
call, with the same tree copied to the call's tmpfs timed beside it. Prints the
medians over all rounds and the ratios to the tmpfs anchor. Writes nothing to
results.md. BUILD_* are build dirs holding cofferd (make BUILD=dir), each with cofferd
flags after a `+` if wanted (`build+--content-cache=0`: the same build with no content
cache, so one build may be set against itself). --big N adds a
volume of N files of 64 bytes to the store, as bench/views.py's call-start row has
(100,000): a larger store makes SQLite's reads slower, and read-only roots' pushes fall
further behind grep (bench/results.md, Views: history)."""

import os, shutil, statistics, subprocess, sys, tempfile, time

from benchlib import Cofferd
import views

CMDS = {"grep": "grep -r zzzneedle %s", "find": "find %s -type f | xargs stat"}


def main():
    rounds, calls, modes, big = 2, 5, "rw:grep,ro:grep,rw:find", 0
    args = sys.argv[1:]
    builds = []
    while args:
        a = args.pop(0)
        if a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--calls":
            calls = int(args.pop(0))
        elif a == "--modes":
            modes = args.pop(0)
        elif a == "--big":
            big = int(args.pop(0))
        else:
            builds.append(a)
    if len(builds) != 2:
        sys.exit(__doc__)
    modes = [tuple(m.split(":")) for m in modes.split(",")]
    work = tempfile.mkdtemp(prefix="coffer-bench-ab-")
    data = os.path.join(work, "data")
    try:
        exe = views.populate_bin(work)
        if big:
            views.fill(exe, data, "big", big, 64)
        tree = views.fill(exe, data, "tree", 5000, 4096)
        sbx = {"scratch": "512m", "turnDisk": "128m", "userDisk": "256m"}
        got = {(b, m): [] for b in builds for m in modes}
        anchor = {m: [] for m in modes}
        for r in range(rounds):
            for b in (builds if r % 2 == 0 else builds[::-1]):
                d, *flags = b.split("+")
                s = Cofferd(data, *[x for f in flags for x in f.split("=", 1)],
                            build=os.path.abspath(d))
                try:
                    for mode, what in modes:
                        aid = views.agent(s, [{"workspace": True},
                                              {"volumeId": tree, "path": "/data", "mode": mode}],
                                          sandbox=sbx)
                        tid = views.turn(s, aid)
                        views.run(s, tid, "cp -r /data /tmp/tree")
                        cmd = CMDS[what]
                        views.inner_ms(s, tid, cmd % "/tmp/tree", 1)
                        anchor[(mode, what)].append(views.inner_ms(s, tid, cmd % "/tmp/tree", 3))
                        for _ in range(calls):
                            views.bump(s, tree, time.monotonic_ns())
                            got[(b, (mode, what))].append(views.inner_ms(s, tid, cmd % "/data", 1))
                finally:
                    s.stop()
        load = open("/proc/loadavg").read().split()[0]
        print("A/B, %d rounds x %d cold calls, %d more files in the store, load %s, %s" %
              (rounds, calls, big, load, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
        print("| mode | tmpfs | A %s | B %s |" % (builds[0],
                                                  builds[1]))
        print("|---|---|---|---|")
        for m in modes:
            t = statistics.median(anchor[m])
            cells = []
            for b in builds:
                v = statistics.median(got[(b, m)])
                cells.append("%.0f ms (%.2fx)" % (v, v / t))
            print("| %s %s | %.0f ms | %s | %s |" % (m[1], m[0], t, cells[0], cells[1]))
    finally:
        subprocess.run(["sh", "-c", "grep %s /proc/mounts | cut -d' ' -f2 | "
                        "xargs -r -n1 fusermount3 -u -z" % work], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
