#!/usr/bin/env python3
"""The metadata store on PostgreSQL vs the embedded one (issue 12), one short run.

    bench/meta_pg.py [--writes N] [--reads N] [--threads T]

Starts one cofferd on the embedded store (SQLite + DATA/blobs) and one on a PostgreSQL 15
that it starts for the run (tests/blackbox/pgpeer.py; fsync off there, as in the tests:
the figure is the cost of the store's queries and round trips, not of a disk), and
measures on each: 4 KiB PUTs per second from T keep-alive clients, and GET p50/p99 of
4 KiB files (one client). Appends a section to bench/results.md. Everything it starts
is stopped at the end, also on error.
"""
import argparse
import datetime
import http.client
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
import harness  # noqa: E402
import pgpeer  # noqa: E402
from benchlib import put_load  # noqa: E402


def client(srv):
    return http.client.HTTPConnection(srv.host, srv.port, timeout=60)


def get_lat(srv, vid, n, files):
    hdr = {"Authorization": "Bearer " + srv.key}
    c = client(srv)
    lat = []
    for i in range(n):
        t0 = time.perf_counter()
        c.request("GET", "/v1/volumes/%s/files/w/%d.bin" % (vid, i % files), headers=hdr)
        r = c.getresponse()
        r.read()
        lat.append((time.perf_counter() - t0) * 1000)
        assert r.status == 200, r.status
    c.close()
    lat.sort()
    return statistics.median(lat), lat[int(len(lat) * 0.99) - 1]


def measure(srv, args):
    vid = srv.create_volume()["id"]
    wps = put_load([srv], vid, args.writes, args.threads, timeout=60)
    p50, p99 = get_lat(srv, vid, args.reads, args.writes)
    return wps, p50, p99


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=2000)
    ap.add_argument("--reads", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    harness.set_build(os.path.join(ROOT, "build"))
    rows = []
    peer = pgpeer.shared()
    try:
        for engine in ("embedded", "pg"):
            with harness.Server(engine=engine) as srv:
                rows.append((engine,) + measure(srv, args))
                print("%-9s %7.0f writes/s  GET p50 %.2f ms  p99 %.2f ms" % rows[-1], flush=True)
    finally:
        peer.stop()
    e, p = rows
    out = ["", "## Metadata on PostgreSQL vs embedded (issue 12; bench/meta_pg.py)", "",
           "%s, %d cores, load %.1f; one run; %d 4 KiB PUTs from %d keep-alive clients, then "
           "%d GETs from one; PostgreSQL 15 on 127.0.0.1 with fsync off (as in the tests)." % (
               datetime.date.today().isoformat(), os.cpu_count(), os.getloadavg()[0],
               args.writes, args.threads, args.reads), "",
           "| store | 4 KiB writes/s | GET p50 | GET p99 |", "|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %.0f | %.2f ms | %.2f ms |" % r)
    out.append("| pg / embedded | %.2fx | %.2fx | %.2fx |" % (p[1] / e[1], p[2] / e[2],
                                                            p[3] / e[3]))
    with open(os.path.join(ROOT, "bench", "results.md"), "a") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
