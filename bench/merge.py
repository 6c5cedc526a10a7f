#!/usr/bin/env python3
"""Merge of a fork back (issue 37 item 1), both metadata stores.

    bench/merge.py [--files 100000] [--changed 10] [--runs 5] [--engines embedded,pg]

For each store (embedded SQLite; PostgreSQL 15 started for the run by
tests/blackbox/pgpeer.py, fsync off there as in the tests): fills a volume of --files
files of 1 KiB straight in the metadata (bench/fork.py's fill_sql), forks it, then --runs
times: writes --changed files on each side (different paths; one text file edited on both
sides in lines far apart, so one line merge a run) and times POST /merge of the fork into
the parent over HTTP on one keep-alive connection. Each merge brings only what is new since
the last one (its base is the last merge). Goal: median < 50 ms. Writes a section of
bench/results.md with the machine's load at start and end.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import harness  # noqa: E402
import pgpeer  # noqa: E402
from benchlib import write_section  # noqa: E402
from fork import Client, fill_sql  # noqa: E402

HEADING = "Merge (issue 37)"


def log(*a):
    print("[merge %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def text(tag_top, tag_bottom):
    lines = ["line %d\n" % i for i in range(40)]
    lines[1] = "top %s\n" % tag_top
    lines[35] = "bottom %s\n" % tag_bottom
    return "".join(lines).encode()


def run_one(engine, files, changed, runs):
    srv = harness.Server(engine=engine, args=["--gc-interval", "0", "--log", "none"])
    res = {}
    try:
        parent = srv.create_volume("m%d" % files, ceiling=1 << 40)["id"]
        srv.stop()
        res["fill"] = fill_sql(srv, parent, files)
        log(engine, "filled", files, "in %.1f s" % res["fill"])
        srv.start()
        cl = Client(srv)
        srv.put_ok(parent, "shared.txt", text("base", "base"))
        _, data = cl.call("POST", "/v1/volumes/%s/fork" % parent, {})
        fk = json.loads(data)["id"]
        times, merged = [], []
        for r in range(runs):
            for i in range(changed - 1):
                srv.put_ok(parent, "d%04d/f%07d.txt" % (i, i * 997 % files),
                           b"parent %d %d" % (r, i))
                srv.put_ok(fk, "d%04d/f%07d.txt" % (50 + i, (50 + i) * 991 % files),
                           b"fork %d %d" % (r, i))
            srv.put_ok(parent, "shared.txt", text("parent %d" % r, "base" if r == 0 else
                                                  "fork %d" % (r - 1)))
            srv.put_ok(fk, "shared.txt", text("base", "fork %d" % r))
            dt, data = cl.call("POST", "/v1/volumes/%s/merge" % parent, {"from": fk})
            j = json.loads(data)
            assert not j["conflicts"], j
            times.append(dt)
            merged.append(len(j["merged"]))
        res["merge"] = statistics.median(times)
        res["all"] = times
        res["merged"] = merged
        log(engine, res)
    finally:
        srv.close()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--changed", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--engines", default="embedded,pg")
    ap.add_argument("--heading", default=HEADING)
    args = ap.parse_args()
    harness.set_build(os.path.join(ROOT, "build"))
    load0 = os.getloadavg()
    t0 = time.time()
    res = {}
    peer = pgpeer.shared()
    try:
        for engine in args.engines.split(","):
            res[engine] = run_one(engine, args.files, args.changed, args.runs)
    finally:
        peer.stop()
    load1 = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    out = ["## " + args.heading, "",
           "bench/merge.py, %s, commit %s, %d cores shared with another helper and the lead's "
           "test runs (load average %.1f/%.1f/%.1f at start, %.1f/%.1f/%.1f at end; %.0f s). "
           "A volume of {:,} files of 1 KiB (filled by SQL as bench/fork.py does) and a fork "
           "of it; each run writes {} files on each side (one of them a text file both edit "
           "in lines far apart: a line merge) and times POST /merge of the fork into the "
           "parent over HTTP on one keep-alive connection (Python http.client adds ~0.1 ms). "
           "PostgreSQL 15 on 127.0.0.1 with fsync off (as in the tests). Goal: < 50 ms."
           .format(args.files, args.changed) % (
               datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), commit,
               os.cpu_count(), *load0, *load1, time.time() - t0), "",
           "| engine | merge ms, median of %d | each run ms | paths merged a run |" % args.runs,
           "|---|---|---|---|"]
    for engine, r in res.items():
        out.append("| %s | %.2f | %s | %s |" % (engine, r["merge"],
                                                 ", ".join("%.1f" % x for x in r["all"]),
                                                 ", ".join(map(str, r["merged"]))))
    out += ["", "What a merge costs: the fork's changes feed since the last merge (an index "
            "range of about %d rows; this volume's own changes are not read), three point reads per changed path (base, ours, "
            "theirs), the three contents of the text file for libgit2's git_merge_file, and "
            "one change writing what comes in; nothing lists either volume, so the "
            "volumes' {:,} files do not enter.".format(args.files) % args.changed]
    text_ = "\n".join(out) + "\n"
    print(text_)
    write_section(os.path.join(ROOT, "bench", "results.md"), args.heading, text_)


if __name__ == "__main__":
    main()
