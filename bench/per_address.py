#!/usr/bin/env python3
"""256 connections from one address, as a reverse proxy or a NAT shows them (issue 38.8).

    bench/per_address.py [--secs S] [--rounds N] [--build DIR]

wrk -t2 -c256 GETs of a 4 KiB file from 127.0.0.1 against: cofferd with its defaults
(--max-conns-per-ip 128: past it 503 with Retry-After, then closed), cofferd with
--trusted-proxy 127.0.0.1 (the address is a proxy: requests count per X-Forwarded-For
client, here none, so per request in flight under the proxy's own address), and nginx
serving the same bytes. Rounds alternate the three; each row gives the medians of 2xx
req/s, of the other answers a second and of wrk's socket errors. Prints a Markdown section
for bench/results.md. Needs wrk and nginx (scripts/deps --bench).
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_evloop as hb  # noqa: E402  (its servers, its wrk set-up)


def wrk_counts(url, key, conns, secs):
    """(2xx a second, non-2xx a second, socket errors in all) of one wrk run."""
    o = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % secs, "-H",
                        "Authorization: Bearer " + key, url],
                       capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"(\d+) requests in", o).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", o)
    bad = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", o)
    errs = sum(int(x) for x in m.groups()) if m else 0
    return (total - bad) / secs, bad / secs, errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(hb.ROOT, "build"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="per-address-bench-")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        exe = os.path.join(work, "cofferd")
        shutil.copy(os.path.join(a.build, "cofferd"), exe)
        www = os.path.join(work, "www")
        os.makedirs(www)
        os.chmod(work, 0o755)
        os.chmod(www, 0o755)
        body = os.urandom(4096)
        with open(os.path.join(www, "small.bin"), "wb") as f:
            f.write(body)
        os.chmod(os.path.join(www, "small.bin"), 0o644)
        urls = {}
        for name, args in (("cofferd, defaults", ["--head-timeout", "600"]),
                           ("cofferd --trusted-proxy 127.0.0.1",
                            ["--trusted-proxy", "127.0.0.1", "--head-timeout", "600"])):
            _, port, key = hb.start_cofferd(exe, os.path.join(work, "data-%d" % len(urls)),
                                            args)
            vol = json.loads(hb.req(port, key, "POST", "/v1/volumes",
                                    json.dumps({"name": "wrk"}).encode()))["id"]
            hb.req(port, key, "PUT", "/v1/volumes/%s/files/small.bin" % vol, body)
            urls[name] = ("http://127.0.0.1:%d/v1/volumes/%s/files/small.bin" % (port, vol),
                          key)
        _, nport = hb.start_nginx(www, os.path.join(work, "nginx"))
        urls["nginx"] = ("http://127.0.0.1:%d/small.bin" % nport, "x")
        runs = {n: [] for n in urls}
        for n, (u, k) in urls.items():
            wrk_counts(u, k, 32, 1)  # warm
        for _ in range(a.rounds):
            for n, (u, k) in urls.items():
                runs[n].append(wrk_counts(u, k, 256, a.secs))
        load = open("/proc/loadavg").read().split()[:3]
        print("### 256 connections from one address (issue 38.8), %s\n"
              % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        print("wrk -t2 -c256 -d%ds, GET 4 KiB, medians of %d rounds, the three servers "
              "taking turns; %d cores, load average at the end %s.\n"
              % (a.secs, a.rounds, os.cpu_count(), " ".join(load)))
        print("| server | 2xx req/s | other answers/s | socket errors | 2xx vs nginx |")
        print("|---|---|---|---|---|")
        ng = hb.median([r[0] for r in runs["nginx"]])
        for n, rs in runs.items():
            ok = hb.median([r[0] for r in rs])
            print("| %s | %.0f | %.0f | %d | %.2fx |" % (
                n, ok, hb.median([r[1] for r in rs]), hb.median([r[2] for r in rs]),
                ok / ng))
    finally:
        for p in hb.procs:
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
