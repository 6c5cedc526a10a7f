#!/usr/bin/env python3
"""cofferd's CPU a small GET, two builds side by side (issue 13.1):

    bench/get_cpu.py BUILD_A BUILD_B [--secs S] [--rounds N] [--conns C ...]

Each build's cofferd (embedded engines, --log none) serves a 4 KiB file to
`wrk -t2 -cC -dS`; the builds take turns for N rounds. Reported per build and
connection count, medians over the rounds: req/s, p50 and p99, and cofferd's own
CPU (utime + stime from /proc/PID/stat) divided by the requests wrk counted: on a
machine shared with others the CPU a request moves far less than the rate does.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_evloop import median, procs, req, start_cofferd  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def run_wrk(url, key, conns, secs):
    o = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % secs, "--latency", "-H",
                        "Authorization: Bearer " + key, url],
                       capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in o:
        raise RuntimeError("wrk saw errors:\n" + o)
    n = int(re.search(r"(\d+) requests in", o).group(1))
    ms = lambda v, u: float(v) * {"us": 0.001, "ms": 1, "s": 1000}[u]
    return (n, float(re.search(r"Requests/sec:\s*([\d.]+)", o).group(1)),
            ms(*re.search(r"50%\s+([\d.]+)(us|ms|s)", o).groups()),
            ms(*re.search(r"99%\s+([\d.]+)(us|ms|s)", o).groups()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs=2)
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, nargs="+", default=[32, 256])
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="getcpu-bench-")
    servers = []
    try:
        for i, b in enumerate(a.builds):
            exe = os.path.join(work, "cofferd%d" % i)
            shutil.copy(os.path.join(b, "cofferd"), exe)
            p, port, key = start_cofferd(exe, os.path.join(work, "data%d" % i))
            vol = json.loads(req(port, key, "POST", "/v1/volumes",
                                 json.dumps({"name": "wrk"}).encode()))["id"]
            req(port, key, "PUT", "/v1/volumes/%s/files/small.bin" % vol, os.urandom(4096))
            servers.append((b, p, "http://127.0.0.1:%d/v1/volumes/%s/files/small.bin"
                            % (port, vol), key))
        load0 = os.getloadavg()[0]
        res = {}
        for c in a.conns:
            for _ in range(a.rounds):
                for b, p, url, key in servers:
                    t0 = cpu_s(p.pid)
                    n, rps, p50, p99 = run_wrk(url, key, c, a.secs)
                    us = (cpu_s(p.pid) - t0) * 1e6 / max(n, 1)
                    res.setdefault((c, b), []).append((rps, p50, p99, us))
        print("load %.1f at the start, %.1f at the end; wrk -t2 -d%ds, medians of %d rounds"
              % (load0, os.getloadavg()[0], a.secs, a.rounds))
        print("| conns | build | req/s | p50 ms | p99 ms | cofferd CPU µs / req |")
        print("|---|---|---|---|---|---|")
        for (c, b), runs in res.items():
            m = [median([r[i] for r in runs]) for i in range(4)]
            print("| %d | %s | %s | %.2f | %.1f | %.1f |" % (c, b, "{:,.0f}".format(m[0]),
                                                           m[1], m[2], m[3]))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
