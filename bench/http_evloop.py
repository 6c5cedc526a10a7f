#!/usr/bin/env python3
"""The event-driven server against nginx (issue 13.1), side by side in one run.

    bench/http_evloop.py [--secs S] [--rounds N] [--build DIR] [--before DIR]

Prints a Markdown section for bench/results.md:
  - GET of a 4 KiB file with `wrk -t2 --latency` at 32 and 256 connections: req/s,
    p50 and p99, cofferd against nginx serving the same bytes;
  - GET of a 100 MiB file (wrk -t2 -c4): MB/s;
  - 10,000 idle keep-alive connections held: cofferd's RSS before and with them, and
    the 4 KiB GET at 32 connections while they are held.
nginx is set up as its users run it: worker_processes 2, sendfile on,
keepalive_requests 100000, access_log off. Needs wrk and nginx (scripts/deps --bench).
--before DIR adds the 4 KiB rows for another build's cofferd (the thread-per-connection
server of main, say) in the same run. Each 4 KiB row is --rounds runs (default 3), cofferd
and nginx taking turns, so that both see the same load: the row gives each one's median
req/s, p50 and p99, and the ratio is the median of the rounds' ratios. Every server it starts is stopped at the end, also
on error.
"""
import argparse
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
procs = []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_cofferd(exe, data, args=("--max-conns-per-ip", "16000", "--head-timeout", "600")):
    p = subprocess.Popen([exe, "--data", data, "--listen", "127.0.0.1:0", "--gc-interval",
                          "0", "--log", "none"] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(p)
    while True:
        line = p.stdout.readline()
        m = re.search(r"listening on http://([^:/]+):(\d+)", line)
        if m:
            break
        if not line:
            raise RuntimeError("cofferd did not start")
    with open(os.path.join(data, "admin.key")) as f:
        key = f.read().strip()
    return p, int(m.group(2)), key


def start_nginx(root, work):
    port = free_port()
    t = os.path.join(work, "tmp")
    os.makedirs(t, exist_ok=True)
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""worker_processes 2;
worker_rlimit_nofile 40000;
daemon off;
pid {w}/nginx.pid;
error_log {w}/error.log warn;
events {{ worker_connections 16384; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  keepalive_timeout 120;
  default_type application/octet-stream;
  client_body_temp_path {t}/body; proxy_temp_path {t}/proxy;
  fastcgi_temp_path {t}/fastcgi; uwsgi_temp_path {t}/uwsgi; scgi_temp_path {t}/scgi;
  server {{ listen 127.0.0.1:{port}; root {root}; location / {{ }} }}
}}
""".format(w=work, t=t, port=port, root=root))
    p = subprocess.Popen(["nginx", "-p", work, "-c", conf], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    procs.append(p)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nginx did not start")


def req(port, key, method, path, body=None):
    r = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                               method=method,
                               headers={"Authorization": "Bearer " + key,
                                        "Content-Type": "application/json"
                                        if method == "POST" else "application/octet-stream"})
    with urllib.request.urlopen(r, timeout=600) as f:
        return f.read()


def unit_ms(v, u):
    return float(v) * {"us": 0.001, "ms": 1, "s": 1000}[u]


def wrk(url, key, conns, secs):
    o = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % secs, "--latency", "-H",
                        "Authorization: Bearer " + key, url],
                       capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in o or "Socket errors" in o and re.search(r"errors: connect [1-9]", o):
        raise RuntimeError("wrk saw errors:\n" + o)
    rps = float(re.search(r"Requests/sec:\s*([\d.]+)", o).group(1))
    m = re.search(r"Transfer/sec:\s*([\d.]+)([KMG]?B)", o)
    mbs = float(m.group(1)) * {"B": 1, "KB": 2 ** 10, "MB": 2 ** 20, "GB": 2 ** 30}[
        m.group(2)] / 1e6
    p50 = unit_ms(*re.search(r"50%\s+([\d.]+)(us|ms|s)", o).groups())
    p99 = unit_ms(*re.search(r"99%\s+([\d.]+)(us|ms|s)", o).groups())
    return rps, mbs, p50, p99


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def rounds(curl, nurl, key, nkey, conns, secs, n):
    """n rounds of cofferd then nginx; their medians and the median ratio."""
    cs, ns = [], []
    for _ in range(n):
        cs.append(wrk(curl, key, conns, secs))
        ns.append(wrk(nurl, nkey, conns, secs))
    med = lambda runs: tuple(median([r[i] for r in runs]) for i in range(4))
    return med(cs), med(ns), median([c[0] / m[0] for c, m in zip(cs, ns)])


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        d = dict(l.split(":", 1) for l in f if ":" in l)
    return int(d["VmRSS"].split()[0]), int(d["Threads"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--before", default=None, help="another build dir to compare")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each 4 KiB case")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="evloop-bench-")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        exe = os.path.join(work, "cofferd")
        shutil.copy(os.path.join(a.build, "cofferd"), exe)
        www = os.path.join(work, "www")
        os.makedirs(www)
        os.chmod(work, 0o755)
        os.chmod(www, 0o755)
        files = {"small.bin": 4096, "big.bin": 100 << 20}
        for name, size in files.items():
            with open(os.path.join(www, name), "wb") as f:
                f.write(os.urandom(size))
            os.chmod(os.path.join(www, name), 0o644)
        cp, cport, key = start_cofferd(exe, os.path.join(work, "data"))
        vol = json.loads(req(cport, key, "POST", "/v1/volumes",
                             json.dumps({"name": "wrk"}).encode()))["id"]
        for name in files:
            with open(os.path.join(www, name), "rb") as f:
                req(cport, key, "PUT", "/v1/volumes/%s/files/%s" % (vol, name), f.read())
        ng, nport = start_nginx(www, os.path.join(work, "nginx"))
        cu = lambda n: "http://127.0.0.1:%d/v1/volumes/%s/files/%s" % (cport, vol, n)
        nu = lambda n: "http://127.0.0.1:%d/%s" % (nport, n)
        wrk(cu("small.bin"), key, 32, 1)
        wrk(nu("small.bin"), key, 32, 1)
        rows = []
        for conns in (32, 256):
            rows.append(("GET 4 KiB, %d connections" % conns,) +
                        rounds(cu("small.bin"), nu("small.bin"), key, key, conns, a.secs,
                               a.rounds))
        c = wrk(cu("big.bin"), key, 4, a.secs)
        n = wrk(nu("big.bin"), key, 4, a.secs)
        rows.append(("GET 100 MiB, 4 connections", c, n, c[0] / n[0]))
        if a.before:
            old = os.path.join(work, "cofferd-before")
            shutil.copy(os.path.join(a.before, "cofferd"), old)
            op, oport, okey = start_cofferd(old, os.path.join(work, "data-before"))
            ovol = json.loads(req(oport, okey, "POST", "/v1/volumes",
                                  json.dumps({"name": "wrk"}).encode()))["id"]
            with open(os.path.join(www, "small.bin"), "rb") as f:
                req(oport, okey, "PUT", "/v1/volumes/%s/files/small.bin" % ovol, f.read())
            ou = "http://127.0.0.1:%d/v1/volumes/%s/files/small.bin" % (oport, ovol)
            wrk(ou, okey, 32, 1)
            for conns in (32, 256):
                rows.append(("before (%s): GET 4 KiB, %d connections" % (a.before, conns),)
                            + rounds(ou, nu("small.bin"), okey, key, conns, a.secs,
                                     a.rounds))
            op.terminate()
            op.wait(30)
        rss0, th0 = rss_kb(cp.pid)
        idle = []
        for _ in range(10000):
            idle.append(socket.create_connection(("127.0.0.1", cport)))
        time.sleep(1)
        rss1, th1 = rss_kb(cp.pid)
        c = wrk(cu("small.bin"), key, 32, a.secs)
        rss2, th2 = rss_kb(cp.pid)
        alive = 0
        for s in idle[::500]:
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            alive += s.recv(100).startswith(b"HTTP/1.1 200")
        for s in idle:
            s.close()
        load = open("/proc/loadavg").read().split()[:3]
        print("### Event-driven HTTP (issue 13.1), %s\n" % time.strftime("%Y-%m-%d %H:%M UTC",
                                                                           time.gmtime()))
        print("wrk -t2 --latency -d%ds; 4 KiB rows: medians of %d rounds, cofferd and "
              "nginx taking turns (ratio: the median of the rounds' ratios); on %d cores "
              "shared with 8 other engineers' builds and tests (load average at the end: "
              "%s)." % (a.secs, a.rounds, os.cpu_count(), " ".join(load)))
        print("nginx: worker_processes 2, sendfile on, keepalive_requests 100000, "
              "access_log off. cofferd: defaults (--threads = cores, --workers 32), "
              "--log none.\n")
        print("| case | cofferd req/s | nginx req/s | ratio | cofferd p50 / p99 ms | "
              "nginx p50 / p99 ms | cofferd MB/s | nginx MB/s |")
        print("|---|---|---|---|---|---|---|---|")
        for label, c_, n_, ratio in rows:
            print("| %s | %.0f | %.0f | %.2fx | %.2f / %.2f | %.2f / %.2f | %.0f | %.0f |" % (
                label, c_[0], n_[0], ratio, c_[2], c_[3], n_[2], n_[3], c_[1], n_[1]))
        print("\n10,000 idle keep-alive connections: cofferd's RSS %.1f MiB before, %.1f MiB "
              "holding them (%.1f KiB each), %.1f MiB after wrk ran beside them; threads %d, "
              "%d, %d. GET 4 KiB at 32 connections while they are held: %.0f req/s, p50 "
              "%.2f ms, p99 %.2f ms; %d of 20 sampled idle connections still answered."
              % (rss0 / 1024, rss1 / 1024, (rss1 - rss0) / 10000, rss2 / 1024, th0, th1, th2,
                 c[0], c[2], c[3], alive))
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
