#!/usr/bin/env python3
"""Blobs in S3 (issue 12 part 3): the same writes and reads through cofferd on local
blobs (`--data` only) and on s3rver (`--blobs s3://...`, tests/blackbox/s3peer.py), in
one run, side by side:

  4 KiB PUT and GET (kept inline in the metadata: S3 is not touched), 64 KiB PUT and
  GET (the smallest blob: one HEAD + one PUT, one ranged GET), 64 MiB PUT
  and GET (a multipart upload of 4 parts; a streamed read).

Usage: bench/s3.py [--out FILE] (writes the "Blobs in S3" section of bench/results.md,
replacing an earlier one). Needs build/cofferd, node and npm (s3rver is installed on
first use as the tests do)."""

import hashlib, http.client, os, shutil, statistics, sys, tempfile, time

from benchlib import ROOT, RESULTS, Cofferd, write_section

sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
import s3peer  # noqa: E402

SMALL_N = int(os.environ.get("BENCH_S3_N", "300"))
BIG_N = 3
MIB = 1 << 20


def pct(v, p):
    v = sorted(v)
    return v[max(0, int(round(len(v) * p / 100.0)) - 1)]


def put(s, c, vid, path, data):
    c.request("PUT", "/v1/volumes/%s/files/%s" % (vid, path), body=data,
              headers={"Authorization": "Bearer " + s.key})
    r = c.getresponse()
    r.read()
    if r.status not in (200, 201):
        raise RuntimeError("PUT %s: %d" % (path, r.status))


def get(s, c, vid, path):
    c.request("GET", "/v1/volumes/%s/files/%s" % (vid, path),
              headers={"Authorization": "Bearer " + s.key})
    r = c.getresponse()
    n = 0
    while True:
        b = r.read(MIB)
        if not b:
            break
        n += len(b)
    if r.status != 200:
        raise RuntimeError("GET %s: %d" % (path, r.status))
    return n


def small(s, vid, size, tag):
    """PUT then GET SMALL_N files of `size` bytes (each new content): µs p50/p99."""
    c = s.conn()
    puts, gets = [], []
    for i in range(SMALL_N):
        data = hashlib.sha256(b"%s-%d" % (tag.encode(), i)).digest() * (size // 32)
        t = time.perf_counter()
        put(s, c, vid, "%s/%d" % (tag, i), data)
        puts.append((time.perf_counter() - t) * 1e6)
    for i in range(SMALL_N):
        t = time.perf_counter()
        get(s, c, vid, "%s/%d" % (tag, i))
        gets.append((time.perf_counter() - t) * 1e6)
    c.close()
    return puts, gets


def big(s, vid, size):
    """PUT (streamed, chunked) then GET BIG_N files of `size` bytes: MiB/s, median."""
    puts, gets = [], []
    for i in range(BIG_N):
        block = hashlib.sha256(b"big-%d" % i).digest() * (MIB // 32)

        def chunks():
            for j in range(size // MIB):
                yield block[:8] + j.to_bytes(8, "big") + block[16:]
        c = s.conn()
        t = time.perf_counter()
        c.request("PUT", "/v1/volumes/%s/files/big/%d" % (vid, i), body=chunks(),
                  encode_chunked=True, headers={"Authorization": "Bearer " + s.key,
                                                "Transfer-Encoding": "chunked"})
        r = c.getresponse()
        r.read()
        if r.status not in (200, 201):
            raise RuntimeError("PUT big: %d" % r.status)
        puts.append(size / MIB / (time.perf_counter() - t))
        t = time.perf_counter()
        get(s, c, vid, "big/%d" % i)
        gets.append(size / MIB / (time.perf_counter() - t))
        c.close()
    return puts, gets


def measure(s):
    vid = s.call("POST", "/v1/volumes", {"name": "bench-s3"})["id"]
    out = {}
    out["4k"] = small(s, vid, 4096, "k4")
    out["64k"] = small(s, vid, 65536, "k64")
    out["64m"] = big(s, vid, 64 * MIB)
    return out


def main():
    out_path = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else RESULTS
    root = tempfile.mkdtemp(prefix="coffer-bench-s3-")
    peer = s3peer.start()
    t0 = time.time()
    try:
        local = Cofferd(os.path.join(root, "local"))
        try:
            a = measure(local)
        finally:
            local.stop()
        os.environ.update(peer["env"])
        remote = Cofferd(os.path.join(root, "s3"), "--blobs", peer["url"])
        try:
            b = measure(remote)
        finally:
            remote.stop()
    finally:
        s3peer.stop(peer)
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    for key, label in (("4k", "4 KiB"), ("64k", "64 KiB")):
        for i, op in ((0, "PUT"), (1, "GET")):
            for p in (50, 99):
                la, lb = pct(a[key][i], p), pct(b[key][i], p)
                rows.append("| %s %s p%d (µs) | %s | %s | %.2fx |" % (
                    label, op, p, "{:,.0f}".format(la), "{:,.0f}".format(lb), lb / la))
    for i, op in ((0, "PUT"), (1, "GET")):
        la, lb = statistics.median(a["64m"][i]), statistics.median(b["64m"][i])
        rows.append("| 64 MiB %s (MiB/s, median of %d) | %.0f | %.0f | %.2fx |" % (
            op, BIG_N, la, lb, la / lb))
    load = open("/proc/loadavg").read().split()[:3]
    text = """## Blobs in S3 (bench/s3.py)

Written by `bench/s3.py` on %s in %.0f s (load average at the end: %s). One cofferd on
local blobs, then one on s3rver (`--blobs s3://...`, the tests' S3 peer, Node.js, on the
same 2 cores), each over a fresh data dir, the default SQLite metadata; Python
http.client on one keep-alive connection. %d files of each small size (each new
content: no dedupe), %d of 64 MiB (streamed chunked PUT, streamed GET).

| | local blobs | S3 (s3rver) | S3 / local |
|---|---|---|---|
%s

Content up to 16 KiB is kept inline in the metadata, so 4 KiB never reaches S3 (the
two columns measure the same path). 64 KiB is the cost of a blob: a PUT spools to
DATA/tmp, then HEAD (stored already?) and PUT to S3; a GET is one ranged GET. 64
MiB is a multipart upload of four 16 MiB parts, each signed with its own SHA-256; for
the large rows the ratio is local over S3 (how many times slower S3 is).
""" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.time() - t0,
       " ".join(load), SMALL_N, BIG_N, "\n".join(rows))
    write_section(out_path, "Blobs in S3 (bench/s3.py)", text)
    print(text)


if __name__ == "__main__":
    main()
