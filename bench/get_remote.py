#!/usr/bin/env python3
"""GETs on remote engines (issue 13.1), side by side in one run:

    bench/get_remote.py --before BUILD_DIR [--build BUILD_DIR] [--secs S] [--rounds N]

One cofferd node on PostgreSQL + S3 (PostgreSQL 15 started as tests/blackbox/pgpeer.py
does, fsync off; s3rver from tests/blackbox/s3peer.py), `wrk -t2 -c32` on
(1) a 4 KiB file (inline in the metadata: the PostgreSQL path) and (2) a 64 KiB file
(its content in S3: an S3 GET a request), each build in turn, rounds alternating, the
medians printed as a markdown table (req/s, p50, p99). The same PostgreSQL and S3 serve
both builds; each build gets a database and an S3 prefix of its own.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import harness  # noqa: E402
from http_evloop import median, wrk  # noqa: E402


def start(build):
    s = harness.Server(build=build, args=["--log", "none", "--gc-interval", "0",
                                          "--max-conns-per-ip", "16000"], engine="pg")
    vid = s.create_volume()["id"]
    s.put_ok(vid, "4k.bin", os.urandom(4096))
    s.put_ok(vid, "64k.bin", os.urandom(65536))
    return s, vid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--before", required=True)
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=32)
    a = ap.parse_args()
    load0 = os.getloadavg()
    nodes = {"before": start(os.path.abspath(a.before)), "after": start(os.path.abspath(a.build))}
    res = {}
    try:
        for name in ("4k.bin", "64k.bin"):
            for _ in range(a.rounds):
                for which, (s, vid) in nodes.items():
                    url = s.url + s.file_path(vid, name)
                    res.setdefault((name, which), []).append(wrk(url, s.key, a.conns, a.secs))
    finally:
        for s, _ in nodes.values():
            s.close(check_exit=False)
    load1 = os.getloadavg()
    print("load %.1f / %.1f at the start, %.1f at the end; wrk -t2 -c%d -d%ds, median of %d"
          % (load0[0], load0[1], load1[0], a.conns, a.secs, a.rounds))
    print("| GET | build | req/s | p50 ms | p99 ms |")
    print("|---|---|---|---|---|")
    for (name, which), runs in res.items():
        med = [median([r[i] for r in runs]) for i in range(4)]
        print("| %s | %s | %s | %.2f | %.1f |" % (
            name, which, "{:,.0f}".format(med[0]), med[2], med[3]))


if __name__ == "__main__":
    main()
