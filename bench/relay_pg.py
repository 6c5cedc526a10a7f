#!/usr/bin/env python3
"""Relayed writes on PostgreSQL (issue 36 item 6): what the relay's store writes cost.

    bench/relay_pg.py [--build DIR] [--writes N] [--sessions S] [--runs R] [--engine E]

Starts one cofferd on PostgreSQL (tests/blackbox/pgpeer.py, fsync off as in the tests)
and `coffer connect` clients serving temp folders, then measures:
  - a relayed 4 KiB write_file (agent ops call -> cofferd -> coffer connect -> back),
    one session, N calls one after another (10 first to warm up; a session allows 100
    writes by default): median and p99 in ms;
  - S other sessions at once, one agent thread per session, N writes each: writes/s.
Prints one line per run and the medians of R runs; --build points at another build
directory (to run a baseline and a change in one session). Writes nothing.
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
import harness  # noqa: E402
import pgpeer  # noqa: E402


def session(srv, build, folder, name):
    """A relay session with `coffer connect` serving `folder`: (uid, client process)."""
    r = srv.put("/v1/agents/" + name, json={"relay": {"capability": True}})
    assert r.status in (200, 201), r.body
    got = srv.post("/v1/relay/sessions", json={"agent": name}).json()
    env = dict(os.environ, COFFER_CONNECT_TOKEN=got["connectToken"])
    client = subprocess.Popen([os.path.join(build, "coffer"), "connect", "--server", srv.url,
                               "--uid", got["uid"], "--dir", folder], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    harness.until(lambda: srv.get("/v1/relay/sessions/" + got["uid"]).json()["status"]
                  == "active", "coffer connect attached", timeout=20)
    return got["uid"], client


def writes(srv, uid, n, tag, lat=None):
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=60)
    hdr = {"Authorization": "Bearer " + srv.key, "Content-Type": "application/json"}
    content = "x" * 4096
    for i in range(n):
        body = json.dumps({"op": "write_file", "path": "w/%s-%d.txt" % (tag, i % 50),
                           "content": content})
        t0 = time.perf_counter()
        c.request("POST", "/v1/relay/sessions/%s/ops" % uid, body=body, headers=hdr)
        r = c.getresponse()
        r.read()
        assert r.status == 200, (r.status, r.reason)
        if lat is not None:
            lat.append((time.perf_counter() - t0) * 1000)
    c.close()


def run(build, engine, args):
    harness.set_build(build)
    work = tempfile.mkdtemp(prefix="coffer-bench-relaypg-")
    clients = []
    try:
        with harness.Server(engine=engine) as srv:
            folders = []
            for i in range(args.sessions + 1):
                f = os.path.join(work, "f%d" % i)
                os.makedirs(os.path.join(f, "w"))
                folders.append(f)
            one, c = session(srv, build, folders[0], "bench-one")
            clients.append(c)
            writes(srv, one, 10, "warm")
            lat = []
            writes(srv, one, args.writes, "one", lat)
            lat.sort()
            uids = []
            for i in range(args.sessions):
                uid, c = session(srv, build, folders[i + 1], "bench-%d" % i)
                clients.append(c)
                uids.append(uid)
            ths = [threading.Thread(target=writes, args=(srv, u, args.writes, "par"))
                   for u in uids]
            t0 = time.perf_counter()
            for t in ths:
                t.start()
            for t in ths:
                t.join()
            wps = len(uids) * args.writes / (time.perf_counter() - t0)
            return statistics.median(lat), lat[int(len(lat) * 0.99) - 1], wps
    finally:
        for c in clients:
            c.terminate()
            c.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--writes", type=int, default=80)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--engine", default="pg")
    args = ap.parse_args()
    peer = pgpeer.shared() if args.engine == "pg" else None
    rows = []
    try:
        for _ in range(args.runs):
            rows.append(run(os.path.abspath(args.build), args.engine, args))
            print("run: 4 KiB write p50 %.2f ms p99 %.2f ms; %d sessions %.0f writes/s"
                  % (rows[-1][0], rows[-1][1], args.sessions, rows[-1][2]), flush=True)
    finally:
        if peer:
            peer.stop()
    print("median: 4 KiB write p50 %.2f ms p99 %.2f ms; %d sessions %.0f writes/s; load %.1f"
          % (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows),
             args.sessions, statistics.median(r[2] for r in rows), os.getloadavg()[0]))


if __name__ == "__main__":
    main()
