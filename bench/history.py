#!/usr/bin/env python3
"""History of a path and revert of a run (issue 37 items 3 and 4), both metadata stores.

    bench/history.py [--files 100000] [--versions 1000] [--run-files 100] [--runs 5]
                     [--engines embedded,pg]

For each store (embedded SQLite; PostgreSQL 15 started for the run by
tests/blackbox/pgpeer.py, fsync off there as in the tests): fills a volume of --files
files of 1 KiB straight in the metadata (bench/fork.py's fill_sql) with a changes row each
(as the writes that made them would leave, `by` recorded), then
 - writes one path --versions times and times GET .../history of it: the first page
   (limit 100) and every version in one page (limit 1000);
 - --runs times: an agent whose mount is that volume writes --run-files new files with
   its write tool under one X-Run-Id, and POST .../revert {runId} is timed (the run's
   changes are found among the volume's whole feed, then put back as one change).
Medians over HTTP on one keep-alive connection. Writes a section of bench/results.md with
the machine's load at start and end.
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

HEADING = "History and revert (issue 37)"
BY = '{"keyId":"k_fill","via":"http"}'


def log(*a):
    print("[history %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def fill_changes(srv, vid):
    """A changes row per filled file, at seq 1 (the feed a revert searches)."""
    if srv.meta_url:
        db = srv.meta_url.rsplit("/", 1)[1].split("?")[0]
        pgpeer.shared().psql(
            "INSERT INTO changes(vno, seq, path, removed, version, size, sha256, at, who)"
            " SELECT vno, 1, path, 0, 1, size, sha256, 1700000000, '{by}' FROM entries WHERE"
            " vno = (SELECT vno FROM volumes WHERE id = '{vid}')".format(by=BY, vid=vid), db=db)
    else:
        import sqlite3
        db = sqlite3.connect(os.path.join(srv.data, "meta.db"))
        db.execute("INSERT INTO changes(vno, seq, path, removed, version, size, sha256, at,"
                   " who) SELECT vno, 1, path, 0, 1, size, sha256, 1700000000, ? FROM entries"
                   " WHERE vno = (SELECT vno FROM volumes WHERE id = ?)", (BY, vid))
        db.commit()
        db.close()


def med(cl, path, n=7):
    cl.call("GET", path)
    return statistics.median(cl.call("GET", path)[0] for _ in range(n))


def run_one(engine, files, versions, run_files, runs):
    srv = harness.Server(engine=engine, args=["--gc-interval", "0", "--log", "none"])
    res = {}
    try:
        vid = srv.create_volume("h%d" % files, ceiling=1 << 40)["id"]
        srv.stop()
        t0 = time.time()
        fill_sql(srv, vid, files)
        fill_changes(srv, vid)
        res["fill"] = time.time() - t0
        log(engine, "filled", files, "in %.1f s" % res["fill"])
        srv.start()
        cl = Client(srv)
        for i in range(versions):
            cl.c.request("PUT", "/v1/volumes/%s/files/hot.txt" % vid, body=b"version %d" % i,
                         headers=cl.h)
            r = cl.c.getresponse()
            r.read()
            assert r.status in (200, 201), r.status
        base = "/v1/volumes/%s/history?path=hot.txt" % vid
        res["hist100"] = med(cl, base + "&limit=100")
        res["hist1000"] = med(cl, base + "&limit=1000")
        n = len(json.loads(cl.call("GET", base + "&limit=1000")[1])["versions"])
        assert n == versions, n
        _, data = cl.call("PUT", "/v1/agents/bench-h-%d" % os.getpid(),
                          {"mounts": [{"volumeId": vid, "path": "/data", "mode": "rw"}]})
        aid = json.loads(data)["id"]
        times = []
        for r in range(runs):
            run = "run-%d" % r
            for i in range(run_files):
                cl.h["X-Run-Id"] = run
                _, d = cl.call("POST", "/v1/agents/%s/tools/write" % aid,
                               {"path": "/data/runs/r%d/f%03d.txt" % (r, i), "content": "x"})
                assert json.loads(d)["ok"], d
            del cl.h["X-Run-Id"]
            dt, d = cl.call("POST", "/v1/volumes/%s/revert" % vid, {"runId": run})
            j = json.loads(d)
            assert len(j["reverted"]) == run_files and not j["conflicts"], j
            times.append(dt)
        res["revert"] = statistics.median(times)
        res["all"] = times
        log(engine, res)
    finally:
        srv.close()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--versions", type=int, default=1000)
    ap.add_argument("--run-files", type=int, default=100)
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
            res[engine] = run_one(engine, args.files, args.versions, args.run_files, args.runs)
    finally:
        peer.stop()
    load1 = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    out = ["## " + args.heading, "",
           "bench/history.py, %s, commit %s, %d cores shared with another helper and the "
           "lead's test runs (load average %.1f/%.1f/%.1f at start, %.1f/%.1f/%.1f at end; "
           "%.0f s). A volume of {:,} files of 1 KiB with a changes row each (filled by SQL); "
           "one path written {:,} times, its history read (median of 7, one keep-alive "
           "connection); then {} times an agent writes {} new files into the volume with "
           "its write tool under one X-Run-Id and POST /revert {{runId}} puts them back. "
           "PostgreSQL 15 on 127.0.0.1 with fsync off (as in the tests)."
           .format(args.files, args.versions, args.runs, args.run_files) % (
               datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), commit,
               os.cpu_count(), *load0, *load1, time.time() - t0), "",
           "| engine | history, first 100 ms | history, all %d in one page ms | revert of a "
           "%d-file run ms, median of %d | each revert ms |" % (args.versions, args.run_files,
                                                                args.runs),
           "|---|---|---|---|---|"]
    for engine, r in res.items():
        out.append("| %s | %.2f | %.2f | %.1f | %s |" % (
            engine, r["hist100"], r["hist1000"], r["revert"],
            ", ".join("%.1f" % x for x in r["all"])))
    out += ["", "What they cost: a history page is one index range (changes_path: vno, path, "
            "seq) read newest first; a revert of a run reads the volume's changes feed "
            "filtered by `by.runId` through the changes_run index (vno, runId, seq: SQLite "
            "schema 5, PostgreSQL migration 9), so it reads the run's rows, not the kept "
            "feed, then three point reads per path and one change."]
    text_ = "\n".join(out) + "\n"
    print(text_)
    write_section(os.path.join(ROOT, "bench", "results.md"), args.heading, text_)


if __name__ == "__main__":
    main()
