#!/usr/bin/env python3
"""What the gone-node check's statement costs (issue 12, cleanup), one short run.

    bench/gone_check.py [--records N] [--runs R]

The statement (state_end_node, src/store/meta_*_state.c) ends the turns' records of a
node that stopped beating. Before this round it ran every 2 s for every gone node, on a
plan that read all the kind's records; now it reads the index state_live(kind, node)
WHERE ended = 0, and records.c runs it only once per gone node (until its record
changes). This measures one run of the statement with N ended turn records of the gone
node and N live ones of another (as after the first round), with the index and without
it, on the embedded store (SQLite, timed here over R runs) and on PostgreSQL 15 (started
for the run, tests/blackbox/pgpeer.py; the server's own execution time from EXPLAIN
ANALYZE, median of R). Appends a section to bench/results.md.
"""
import argparse
import datetime
import os
import sqlite3
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
import harness  # noqa: E402
import pgpeer  # noqa: E402

UPDATE = ("UPDATE state SET ended = 1, updated_at = 1, body = body WHERE kind = 'turn'"
          " AND node = 'gone' AND ended = 0 AND EXISTS(SELECT 1 FROM state WHERE"
          " kind = 'node' AND id = 'gone' AND updated_at < 9000000000000)")


def rows(n):
    out = [("node", "gone", "o", "gone", 0, 1000, "{}")]
    for i in range(n):
        out.append(("turn", "t_gone_%06d" % i, "o", "gone", 1, 2000, '{"endReason":"x"}'))
        out.append(("turn", "t_live_%06d" % i, "o", "live", 0, 2000, "{}"))
    return out


def sqlite_ms(data, n, runs):
    db = sqlite3.connect(os.path.join(data, "meta.db"))
    db.executemany("INSERT INTO state VALUES(?,?,?,?,?,?,?)", rows(n))
    db.commit()
    got = {}
    for label in ("index", "no index"):
        if label == "no index":
            db.execute("DROP INDEX state_live")
        t = []
        for _ in range(runs):
            t0 = time.perf_counter()
            db.execute(UPDATE)
            db.commit()
            t.append((time.perf_counter() - t0) * 1000)
        got[label] = statistics.median(t)
    db.close()
    return got


def pg_ms(url, n, runs):
    peer, db = pgpeer.shared(), url.rsplit("/", 1)[1].split("?")[0]
    values = ",".join("('%s','%s','%s','%s',%d,%d,'%s')" % r for r in rows(n))
    peer.psql("INSERT INTO state VALUES " + values + "; ANALYZE state", db=db)
    got = {}
    for label in ("index", "no index"):
        if label == "no index":
            peer.psql("DROP INDEX state_live; ANALYZE state", db=db)
        t = []
        for _ in range(runs):
            out = peer.psql("EXPLAIN (ANALYZE) " + UPDATE, db=db).stdout.decode()
            t.append(float(out.split("Execution Time:")[1].split()[0]))
        got[label] = statistics.median(t)
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    harness.set_build(os.path.join(ROOT, "build"))
    res = {}
    peer = pgpeer.shared()
    try:
        for engine in ("embedded", "pg"):
            srv = harness.Server(engine=engine)
            srv.stop()
            res[engine] = (pg_ms(srv.meta_url, args.records, args.runs) if srv.meta_url else
                           sqlite_ms(srv.data, args.records, args.runs))
            srv.close(check_exit=False)
            print(engine, res[engine], flush=True)
    finally:
        peer.stop()
    out = ["", "## The gone-node check (issue 12, cleanup; bench/gone_check.py)", "",
           "%s, %d cores, load %.1f; one run; the statement that ends a gone node's turns, "
           "with %d ended turn records of that node and %d live ones of another; median of "
           "%d runs (PostgreSQL 15 with fsync off: EXPLAIN ANALYZE's execution time)." % (
               datetime.date.today().isoformat(), os.cpu_count(), os.getloadavg()[0],
               args.records, args.records, args.runs), "",
           "| store | state_live index | without it |", "|---|---|---|"]
    for e in ("embedded", "pg"):
        out.append("| %s | %.3f ms | %.3f ms |" % (e, res[e]["index"], res[e]["no index"]))
    out += ["", "Before this round each node ran it every 2 s for every gone node, without "
            "the index; now once per gone node (records.c remembers the heartbeat it saw), "
            "then only the read of the node records each round."]
    with open(os.path.join(ROOT, "bench", "results.md"), "a") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
