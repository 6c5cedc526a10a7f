#!/usr/bin/env python3
"""A subject's first call, with and without prewarm (issue 33 item 4), in one run.

    bench/prewarm.py [--subjects N]

For each of N new subjects of one agent (with 3 skills), as a client sees it (wall time
of each HTTP request): (a) without prewarm: POST /v1/turns then its first `true` call, and
a second `true` call of the same turn; (b) with prewarm: POST .../users/S/prewarm first
(not counted), then the same. Reports the medians of the turn's creation, the first call,
the first call + the creation (what the first call costs a caller who makes the turn for
it), and the later call, and the ratios first / later. Sides alternate per subject.
Writes a "Prewarm" section into bench/results.md. Needs build/cofferd and bwrap.
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time

from benchlib import RESULTS, Cofferd, write_section


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--subjects", type=int, default=15)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="prewarm-bench-")
    srv = Cofferd(os.path.join(work, "data"))
    try:
        aid = "bench-prewarm"
        srv.call("PUT", "/v1/agents/" + aid, {})
        for i in range(3):
            srv.request(srv.c, "PUT", "/v1/agents/%s/skills/s%d.md" % (aid, i), "# skill %d" % i)
        rows = {"cold": [], "prewarmed": []}
        warm = srv.call("POST", "/v1/turns", {"agent": aid, "user": "warmup",
                                              "deadlineSeconds": 600})["id"]
        srv.call("POST", "/v1/turns/%s/calls" % warm, {"command": "true"})
        for n in range(a.subjects):
            for side in (("cold", "prewarmed") if n % 2 else ("prewarmed", "cold")):
                user = "%s-%d" % (side, n)
                if side == "prewarmed":
                    srv.call("POST", "/v1/agents/%s/users/%s/prewarm" % (aid, user), {})
                tc, t = timed(lambda: srv.call("POST", "/v1/turns", {
                    "agent": aid, "user": user, "deadlineSeconds": 600}))
                f, _ = timed(lambda: srv.call("POST", "/v1/turns/%s/calls" % t["id"],
                                              {"command": "true"}))
                l, _ = timed(lambda: srv.call("POST", "/v1/turns/%s/calls" % t["id"],
                                              {"command": "true"}))
                rows[side].append((tc, f, tc + f, l))
        load = open("/proc/loadavg").read().split()[:3]
        lines = ["## Prewarm", "",
                 "bench/prewarm.py, %s: %d new subjects each way of one agent with 3 skills, "
                 "sides alternating; wall time of each request as a client sees it, "
                 "medians; %d cores, load average %s at the end." % (
                     time.strftime("%Y-%m-%d"), a.subjects, os.cpu_count(), " ".join(load)),
                 "", "| | turn created | first call | created + first | later call | "
                 "first / later | created + first / later |", "|---|---|---|---|---|---|---|"]
        for side, rs in rows.items():
            med = [statistics.median(r[i] for r in rs) * 1000 for i in range(4)]
            lines.append("| %s | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.2fx | %.2fx |" % (
                side, med[0], med[1], med[2], med[3], med[1] / med[3], med[2] / med[3]))
        text = "\n".join(lines) + "\n"
        print(text)
        write_section(RESULTS, "Prewarm", text)
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
