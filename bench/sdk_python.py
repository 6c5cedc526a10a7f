#!/usr/bin/env python3
"""The Python SDK (sdk/python) against anchors in the same run, on one cofferd:

  a 1 KiB GET and a 1 KiB PUT: the SDK's read()/write() vs http.client on one kept-alive
    connection sending the same requests (the SDK's own cost: records, errors, the pool);
  1,000 small writes (1 KiB, one after another): Coffer and AsyncCoffer vs http.client,
    in turns, each the whole 1,000 (the SDK's overhead per call, httpx's included);
  N MiB (1 GiB by default) up from a file and down to nothing: the SDK vs curl (-T FILE,
    -o /dev/null), each transfer in its own child process (the SDK side is this script
    with --child, doing that one transfer) so that its peak RSS is the client's alone.

p50 of 300 small calls, medians of 3 large transfers each side in turns, the larger of
the 3 peak RSS. Usage: bench/sdk_python.py [--mib N] [--out FILE] [--build DIR] (writes
its section of bench/results.md by default). Run it with a python3 that has httpx
(Debian's /usr/bin/python3 with python3-httpx)."""

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
from benchlib import ROOT, Cofferd, run_child, run_stamp, write_section  # noqa: E402
import coffer  # noqa: E402
import httpx  # noqa: E402  (the SDK's; for its version)

SMALL, LARGE, WRITES = 300, 3, 1000


def p50_us(fa, fb):
    """p50s of two calls, taken in turns so that the load of the machine falls on both."""
    ta, tb = [], []
    for i in range(SMALL):
        for fn, ts in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            fn(i)
            ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ta), statistics.median(tb)


def transfers(fa, fb, size):
    """Two transfers LARGE times each, in turns (who goes first alternating): each fn(i)
    runs one child and returns (seconds, bytes moved, peak RSS MiB). The medians of the
    seconds and the larger peak RSS of each side."""
    runs = {fa: [], fb: []}
    for i in range(LARGE):
        for fn in ((fa, fb) if i % 2 == 0 else (fb, fa)):
            secs, moved, rss = fn(i)
            if moved != size:
                raise RuntimeError("moved %d bytes of %d" % (moved, size))
            runs[fn].append((secs, rss))
    return [(statistics.median(t for t, _ in runs[fn]), max(r for _, r in runs[fn]))
            for fn in (fa, fb)]


def child(mode, vid, name, path=None):
    """One transfer in this process (bench/sdk_python.py --child MODE VID NAME [FILE]),
    COFFER_URL and COFFER_KEY from the environment; prints "seconds bytes". rest: one
    1 KiB read, the SDK's footprint without a large transfer."""
    c = coffer.Client(os.environ["COFFER_URL"], os.environ["COFFER_KEY"])
    vol = c.volume(vid)
    t0 = time.perf_counter()
    if mode == "up":
        moved = vol.write(name, pathlib.Path(path)).size
    elif mode == "down":
        moved = 0
        with vol.open(name) as d:
            for chunk in d:
                moved += len(chunk)
    else:
        moved = len(vol.read(name).data)
    print("%.6f %d" % (time.perf_counter() - t0, moved))
    c.close()


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
    if sys.argv[1:2] == ["--child"]:
        return child(*sys.argv[2:])
    arg = lambda name, dflt: sys.argv[sys.argv.index(name) + 1] if name in sys.argv else dflt
    out = arg("--out", os.path.join(ROOT, "bench/results.md"))
    build = arg("--build", None)
    mib = int(arg("--mib", "1024"))
    size = mib << 20
    when, commit, load0 = run_stamp()
    tmp = tempfile.mkdtemp(prefix="coffer-bench-sdkpy-")
    s = Cofferd(os.path.join(tmp, "data"), build=build)
    rows, large, rest = [], [], None
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
        raw.close()
        big = os.path.join(tmp, "big.bin")
        with open(big, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        curl = shutil.which("curl")
        env = dict(os.environ, COFFER_URL=s.url, COFFER_KEY=s.key)
        me = [sys.executable, os.path.abspath(__file__), "--child"]
        hdr = ["-H", "Authorization: Bearer " + s.key]

        def sdk(*args):
            out, rss = run_child(me + list(args), env=env, timeout=1800)
            secs, moved = out.split()
            return float(secs), int(moved), rss

        def curl_run(what, *args):
            out, rss = run_child([curl, "-sSf", "-o", "/dev/null", "-w",
                                  "%{time_total} %{size_" + what + "}", *hdr, *args],
                                 timeout=1800)
            secs, moved = out.split()
            return float(secs), int(moved), rss

        sdk_rest = sdk("rest", vol.id, "small.bin")[2]
        curl_rest = curl_run("download", s.url + base + "small.bin")[2]
        rest = (sdk_rest, curl_rest)
        large.append(("%d MiB up from a file" % mib, *transfers(
            lambda i: sdk("up", vol.id, "s.bin", big),
            lambda i: curl_run("upload", "-T", big, s.url + base + "c.bin"), size),
            "curl -T"))
        large.append(("%d MiB down to nothing" % mib, *transfers(
            lambda i: sdk("down", vol.id, "s.bin"),
            lambda i: curl_run("download", s.url + base + "c.bin"), size), "curl"))
        c.close()
    finally:
        s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = " ".join("%.2f" % x for x in os.getloadavg())
    title = "Python SDK (bench/sdk_python.py)"
    text = ["## " + title, "",
            "%s, commit %s, Python %s, httpx %s, curl %s; load average (1/5/15 min) at the "
            "start %s, at the end %s, on %d cores (a shared machine: compare within one run)."
            % (when, commit, sys.version.split()[0], httpx.__version__, _curl_version(),
               load0, load1, os.cpu_count() or 0), "",
            "| | SDK | anchor | anchor | SDK / anchor |", "|---|---|---|---|---|"]
    for name, a, b, anchor in rows:
        fmt = "%.0f" if "µs" in name else "%.2f"
        text.append(("| %s | " + fmt + " | " + fmt + " | %s | %.2fx |") % (name, a, b, anchor, a / b))
    text += ["", "p50 of %d small calls on one kept-alive connection each side, taken in "
             "turns; 1,000 writes: medians of %d runs of each, in turns." % (SMALL, LARGE)]
    if large:
        text += ["", "| | SDK s | anchor s | anchor | SDK MiB/s | anchor MiB/s | "
                 "SDK / anchor throughput | SDK peak RSS MiB | anchor peak RSS MiB |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for name, (ta, ra), (tb, rb), anchor in large:
            text.append("| %s | %.2f | %.2f | %s | %.0f | %.0f | %.2fx | %.0f | %.0f |" % (
                name, ta, tb, anchor, mib / ta, mib / tb, tb / ta, ra, rb))
        text += ["", "Each large transfer in its own child process: the SDK side is this "
                 "script with `--child` (a new `coffer.Client`, then `vol.write(name, "
                 "pathlib.Path(file))`, the path sent with its length, or `vol.open(name)` "
                 "iterated in 256 KiB chunks and dropped), curl `-T FILE` or `-o /dev/null` "
                 "(each side's uploads replace one file: a volume's 4 GiB ceiling would "
                 "not hold six); "
                 "seconds are the transfer's own (timed in the child; curl's time_total), "
                 "medians of %d each side, in turns, who goes first alternating; every run "
                 "checked to move all %d bytes. Peak RSS: that child's high-water mark (GNU "
                 "time's %%M or VmHWM, see benchlib.run_child), the larger of the %d. For "
                 "scale, a child "
                 "doing one 1 KiB read peaks at %.0f MiB (SDK: Python with httpx imported) "
                 "and %.0f MiB (curl): what a transfer adds over that is its buffers."
                 % (LARGE, size, LARGE, rest[0], rest[1])]
    else:
        text += ["", "No curl on PATH: the large transfers were not run."]
    write_section(out, title, "\n".join(text))
    print("\n".join(text))


def _curl_version():
    curl = shutil.which("curl")
    if not curl:
        return "none"
    return subprocess.run([curl, "--version"], capture_output=True,
                          text=True).stdout.split()[1]


if __name__ == "__main__":
    main()
