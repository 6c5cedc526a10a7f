#!/usr/bin/env python3
"""The Python SDK (sdk/python) against anchors in the same run, on one cofferd:

  a 1 KiB GET and a 1 KiB PUT: the SDK's read()/write() vs http.client on one kept-alive
    connection sending the same requests (the SDK's own cost: records, errors, the pool);
  1,000 small writes (1 KiB, one after another): Coffer and AsyncCoffer vs http.client,
    in turns, each the whole 1,000 (the SDK's overhead per call, httpx's included);
  256 MiB up from a file and down to nothing: the SDK vs curl (-T FILE, -o /dev/null).

p50 of 300 small calls, medians of 3 large transfers. Usage: bench/sdk_python.py [--out
FILE] [--build DIR] (writes its section of bench/results.md by default). Run it with a
python3 that has httpx (Debian's /usr/bin/python3 with python3-httpx)."""

import asyncio

import http.client
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk", "python", "src"))
from benchlib import ROOT, Cofferd, write_section  # noqa: E402
import coffer  # noqa: E402

SMALL, LARGE, BIG, WRITES = 300, 3, 256 << 20, 1000


def p50_us(fa, fb):
    """p50s of two calls, taken in turns so that the load of the machine falls on both."""
    ta, tb = [], []
    for i in range(SMALL):
        for fn, ts in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            fn(i)
            ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ta), statistics.median(tb)


def median_s(fn):
    ts = []
    for i in range(LARGE):
        t0 = time.perf_counter()
        fn(i)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def thousand_writes(s, vol, base, kib):
    """Seconds for 1,000 sequential 1 KiB writes: Coffer, AsyncCoffer (each awaited before
    the next) and http.client, each run LARGE times in turns; medians. http.client gets a
    new connection each run (one kept idle meanwhile would be closed by cofferd)."""
    auth = {"Authorization": "Bearer " + s.key}

    def raw_writes(r):
        conn = http.client.HTTPConnection(s.host, int(s.port), timeout=60)
        for i in range(WRITES):
            conn.request("PUT", base + "x%d-%d.bin" % (r, i), body=kib, headers=auth)
            resp = conn.getresponse()
            resp.read()
            assert resp.status < 300, resp.status
        conn.close()

    loop = asyncio.new_event_loop()
    ac = loop.run_until_complete(_async_client(s))
    avol = ac.volume(vol.id)

    async def async_writes(r):
        for i in range(WRITES):
            await avol.write("a%d-%d.bin" % (r, i), kib)

    runs = {"sync": [], "async": [], "raw": []}
    for r in range(LARGE):
        for kind, fn in (("sync", lambda: [vol.write("s%d-%d.bin" % (r, i), kib) for i in range(WRITES)]),
                         ("async", lambda: loop.run_until_complete(async_writes(r))),
                         ("raw", lambda: raw_writes(r))):
            t0 = time.perf_counter()
            fn()
            runs[kind].append(time.perf_counter() - t0)
    loop.run_until_complete(ac.aclose())
    loop.close()
    raw = statistics.median(runs["raw"])
    return [("1,000 small writes, Coffer (s)", statistics.median(runs["sync"]), raw, "http.client"),
            ("1,000 small writes, AsyncCoffer (s)", statistics.median(runs["async"]), raw,
             "http.client")]


async def _async_client(s):
    return coffer.AsyncCoffer(s.url, s.key)


def main():
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else \
        os.path.join(ROOT, "bench/results.md")
    build = sys.argv[sys.argv.index("--build") + 1] if "--build" in sys.argv else None
    tmp = tempfile.mkdtemp(prefix="coffer-bench-sdkpy-")
    s = Cofferd(os.path.join(tmp, "data"), build=build)
    rows = []
    try:
        c = coffer.Client(s.url, s.key)
        vol = c.volumes.create("bench")
        base = "/v1/volumes/%s/files/" % vol.id
        auth = {"Authorization": "Bearer " + s.key}
        kib = os.urandom(1024)
        vol.write("small.bin", kib)
        raw = http.client.HTTPConnection(s.host, int(s.port), timeout=60)

        def raw_call(method, path, body=None):
            raw.request(method, path, body=body, headers=auth)
            r = raw.getresponse()
            r.read()
            assert r.status < 300, r.status

        rows.append(("GET 1 KiB (p50, µs)", *p50_us(
            lambda i: vol.read("small.bin"), lambda i: raw_call("GET", base + "small.bin")),
            "http.client"))
        rows.append(("PUT 1 KiB (p50, µs)", *p50_us(
            lambda i: vol.write("w%d.bin" % i, kib),
            lambda i: raw_call("PUT", base + "r%d.bin" % i, kib)), "http.client"))
        rows += thousand_writes(s, vol, base, kib)
        big = os.path.join(tmp, "big.bin")
        with open(big, "wb") as f:
            for _ in range(BIG >> 20):
                f.write(os.urandom(1 << 20))
        curl = shutil.which("curl")
        if curl:
            def curl_up(i):
                subprocess.run([curl, "-sf", "-o", "/dev/null", "-H", "Authorization: Bearer " +
                                s.key, "-T", big, s.url + base + "c%d.bin" % i], check=True)

            def curl_down(i):
                subprocess.run([curl, "-sf", "-o", "/dev/null", "-H", "Authorization: Bearer " +
                                s.key, s.url + base + "c0.bin"], check=True)

            def sdk_down(i):
                with vol.open("s0.bin") as d:
                    for _ in d:
                        pass
            up = median_s(lambda i: vol.write("s%d.bin" % i, pathlib.Path(big)))
            rows.append(("256 MiB up from a file (s)", up, median_s(curl_up), "curl -T"))
            rows.append(("256 MiB down (s)", median_s(sdk_down), median_s(curl_down), "curl"))
        raw.close()
        c.close()
    finally:
        s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    load = " ".join("%.2f" % x for x in os.getloadavg())
    text = ["## Python SDK (bench/sdk_python.py)", "",
            "| | SDK | anchor | anchor | SDK / anchor |", "|---|---|---|---|---|"]
    for name, a, b, anchor in rows:
        fmt = "%.0f" if "µs" in name else "%.2f"
        text.append(("| %s | " + fmt + " | " + fmt + " | %s | %.2fx |") % (name, a, b, anchor, a / b))
    text += ["", "p50 of %d small calls on one kept-alive connection each side, taken in turns; "
             "1,000 writes: medians of %d runs of each, in turns; medians of %d "
             "large transfers, the SDK streaming (a path sent with its length; the download "
             "iterated in 256 KiB chunks, never held whole). Load average at the end: %s on "
             "%d cores." % (SMALL, LARGE, LARGE, load, os.cpu_count() or 0)]
    write_section(out, "Python SDK (bench/sdk_python.py)", "\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
