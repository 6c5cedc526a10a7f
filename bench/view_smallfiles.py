#!/usr/bin/env python3
"""Many small files written in a call's read-write view and committed (issue 38
item 3). One confined call makes N small files (a few bytes each: `echo $i`,
bash's builtin, no fork per file) in a fresh folder under /workspace, named
`f$i.txt` (a name that says the type) or nameless `f$i` (sniffed); the same
call on the call's own tmpfs /tmp is the reference. For each side: the making
as timed inside the call, and the whole call as the client sees it (the rest
is mounting, the commit of the N files as one change, unmounting; on /tmp
there is nothing to commit). Medians of --runs, sides alternating.

Usage: bench/view_smallfiles.py [--files 1000,10000] [--runs 5] [--build DIR]
       [--out bench/results.md]
Needs build/cofferd, root (or FUSE for this user), bwrap."""

import argparse, os, statistics, sys, tempfile, time

from benchlib import Cofferd, run_stamp, write_section

HEAD = "Views: many small files written in a call and committed"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default="1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build")
    ap.add_argument("--out", help="write the table into this results file")
    ap.add_argument("--label", default="", help="a word for the table's heading")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as data:
        s = Cofferd(data, build=a.build)
        try:
            tid = [None]

            def fresh_turn():
                """A new agent (an empty workspace) and turn for each row, so
                that no row's view holds the files of the rows before it."""
                aid = "small-%d" % time.monotonic_ns()
                s.call("PUT", "/v1/agents/" + aid, {
                    "mounts": [{"workspace": True}],
                    "sandbox": {"scratch": "4g", "turnDisk": "2g", "userDisk": "4g"}})
                tid[0] = s.call("POST", "/v1/turns", {"agent": aid, "user": "u",
                                                      "deadlineSeconds": 7200})["id"]
                run("/tmp", 10, "")  # the turn's first call starts things up
            k = [0]

            def run(root, n, suffix):
                k[0] += 1
                d = "%s/r%d" % (root, k[0])
                cmd = ("s=$(date +%%s%%N); mkdir -p %s && cd %s && for i in $(seq %d); do "
                       "echo $i > f$i%s; done; e=$(date +%%s%%N); echo $(( (e-s)/1000 ))"
                       % (d, d, n, suffix))
                t0 = time.perf_counter()
                out = s.call("POST", "/v1/turns/%s/calls" % tid[0],
                             {"command": cmd, "timeoutSeconds": 3000})
                wall = (time.perf_counter() - t0) * 1000
                if out.get("exitCode") != 0:
                    sys.exit("call failed: %r" % out)
                if root == "/workspace":
                    w = out["committed"][0]["written"] if out["committed"] else 0
                    if w != n:
                        sys.exit("committed %d of %d" % (w, n))
                inner = int(out["stdout"].split()[-1]) / 1000
                return inner, wall
            rows = []
            for n in [int(x) for x in a.files.split(",")]:
                for suffix, what in ((".txt", "named f$i.txt"), ("", "nameless f$i")):
                    fresh_turn()
                    r = {"/workspace": ([], []), "/tmp": ([], [])}
                    for i in range(a.runs):
                        sides = ("/workspace", "/tmp") if i % 2 == 0 else ("/tmp", "/workspace")
                        for root in sides:
                            inner, wall = run(root, n, suffix)
                            r[root][0].append(inner)
                            r[root][1].append(wall)
                    vm, vw = map(statistics.median, r["/workspace"])
                    tm, tw = map(statistics.median, r["/tmp"])
                    rows.append("| %d files, %s | %.0f ms | %.0f ms | %.0f ms | %.0f ms | "
                                "%.0f ms | %.0f ms | %.1fx | %.1fx |" % (
                                    n, what, vm, tm, vw - vm, tw - tm, vw, tw,
                                    vm / tm, vw / tw))
                    print(rows[-1], flush=True)
            date, head, load = run_stamp()
            text = ("## %s%s\n\nbench/view_smallfiles.py, %s, commit %s, load %s before; "
                    "medians of %d, sides alternating. `making`: the loop as timed inside "
                    "the call; `rest`: the call as the client sees it minus that (mount, "
                    "the commit of the files as one change, unmount); `whole`: the call.\n\n"
                    "| files | making, view | making, tmpfs | rest, view | rest, tmpfs | "
                    "whole, view | whole, tmpfs | making ratio | whole ratio |\n"
                    "|---|---|---|---|---|---|---|---|---|\n%s\n"
                    % (HEAD, (" (" + a.label + ")") if a.label else "", date, head, load,
                       a.runs, "\n".join(rows)))
            print(text)
            if a.out:
                write_section(a.out, HEAD + ((" (" + a.label + ")") if a.label else ""), text)
        finally:
            s.stop()


if __name__ == "__main__":
    main()
