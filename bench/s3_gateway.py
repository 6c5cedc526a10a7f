#!/usr/bin/python3
"""The S3 gateway (issue 40 item 4) beside coffer's own HTTP API, one cofferd, one run:
boto3 put_object / get_object of 4 KiB and 1 MiB objects against PUT / GET
/v1/volumes/ID/files/PATH with a plain http.client, the same sizes, each write new
content (no dedupe), the two sides alternating request by request (which goes first
alternates too), so that load on the machine falls on both alike. Medians of N.

(bench/s3.py is the other S3 benchmark: cofferd's blobs kept in an S3 store.)

Usage: /usr/bin/python3 bench/s3_gateway.py [--out FILE] (writes the "S3 gateway
(bench/s3_gateway.py)" section of bench/results.md, replacing an earlier one). Needs
build/cofferd and Debian's python3-boto3 (scripts/deps --test)."""

import hashlib, http.client, os, re, shutil, statistics, sys, tempfile, time, urllib.parse

from benchlib import RESULTS, Cofferd, write_section

N = {4096: int(os.environ.get("BENCH_S3GW_N", "300")),
     1 << 20: int(os.environ.get("BENCH_S3GW_BIG_N", "40"))}


def http_put(s, c, vid, path, data):
    c.request("PUT", "/v1/volumes/%s/files/%s" % (vid, path), body=data,
              headers={"Authorization": "Bearer " + s.key})
    r = c.getresponse()
    r.read()
    if r.status not in (200, 201):
        raise RuntimeError("PUT %s: %d" % (path, r.status))


def http_get(s, c, vid, path):
    c.request("GET", "/v1/volumes/%s/files/%s" % (vid, path),
              headers={"Authorization": "Bearer " + s.key})
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        raise RuntimeError("GET %s: %d" % (path, r.status))
    return len(body)


def measure(s, s3, vid, size):
    """µs of each request: {(side, op): [...]}, sides alternating. Side "url" is the
    gateway without boto3: GETs of presigned URLs (made before the clock starts)
    with http.client."""
    c = s.conn()
    t = {(side, op): [] for side in ("s3", "http", "url") for op in ("PUT", "GET")}
    u = urllib.parse.urlsplit(s3.meta.endpoint_url)
    cu = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
    n = N[size]

    def data(side, i):
        return hashlib.sha256(b"%s-%d-%d" % (side.encode(), size, i)).digest() * (size // 32)

    def put(side, i):
        d = data(side, i)
        key = "%s/%d/%d" % (side, size, i)
        t0 = time.perf_counter()
        if side == "s3":
            s3.put_object(Bucket="bench-gw", Key=key, Body=d)
        else:
            http_put(s, c, vid, key, d)
        t[(side, "PUT")].append((time.perf_counter() - t0) * 1e6)

    def get(side, i):
        key = "%s/%d/%d" % ("s3" if side == "url" else side, size, i)
        if side == "url":
            url = urllib.parse.urlsplit(s3.generate_presigned_url(
                "get_object", Params={"Bucket": "bench-gw", "Key": key}, ExpiresIn=3600))
        t0 = time.perf_counter()
        if side == "url":
            cu.request("GET", url.path + "?" + url.query)
            r = cu.getresponse()
            got = len(r.read())
        elif side == "s3":
            got = len(s3.get_object(Bucket="bench-gw", Key=key)["Body"].read())
        else:
            got = http_get(s, c, vid, key)
        t[(side, "GET")].append((time.perf_counter() - t0) * 1e6)
        if got != size:
            raise RuntimeError("%s GET %s: %d bytes" % (side, key, got))

    for op, sides in ((put, ("s3", "http")), (get, ("s3", "http", "url"))):
        for i in range(n):
            for side in (sides if i % 2 == 0 else sides[::-1]):
                op(side, i)
    c.close()
    cu.close()
    return t


def main():
    import boto3
    from botocore.config import Config
    out_path = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else RESULTS
    root = tempfile.mkdtemp(prefix="coffer-bench-s3gw-")
    load0 = open("/proc/loadavg").read().split()[:3]
    t0 = time.time()
    s = Cofferd(os.path.join(root, "data"), "--s3-listen", "127.0.0.1:0")
    try:
        m = [re.search(r"S3 gateway on (http://\S+)", line) for line in s.banner]
        m = [x.group(1) for x in m if x]
        if not m:
            raise RuntimeError("no S3 address in cofferd's banner: %s" % s.banner)
        s3 = boto3.client("s3", endpoint_url=m[0], region_name="us-east-1",
                          aws_access_key_id="k_" + hashlib.sha256(s.key.encode()).hexdigest()[:16],
                          aws_secret_access_key=s.key,
                          config=Config(signature_version="s3v4",
                                        s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="bench-gw")
        vid = [v for v in s.call("GET", "/v1/volumes")["volumes"]
               if v["name"] == "bench-gw"][0]["id"]
        res = {size: measure(s, s3, vid, size) for size in N}
    finally:
        s.stop()
        shutil.rmtree(root, ignore_errors=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    rows = []
    for size, label in ((4096, "4 KiB"), (1 << 20, "1 MiB")):
        for op in ("PUT", "GET"):
            a = statistics.median(res[size][("s3", op)])
            b = statistics.median(res[size][("http", op)])
            rows.append("| %s %s (median of %d) | %s | %s | %.2fx |" % (
                label, op, N[size], "{:,.0f}".format(a), "{:,.0f}".format(b), a / b))
        a = statistics.median(res[size][("url", "GET")])
        b = statistics.median(res[size][("http", "GET")])
        rows.append("| %s GET, presigned URL by http.client (median of %d) | %s | %s | %.2fx |"
                    % (label, N[size], "{:,.0f}".format(a), "{:,.0f}".format(b), a / b))
    text = """## S3 gateway (bench/s3_gateway.py)

Written by `bench/s3_gateway.py` on %s in %.0f s; load average (1/5/15 min) %s at the
start, %s at the end (2 cores shared with other work: figures are of a loaded machine).
One cofferd (`--s3-listen`, the default SQLite metadata, local blobs); each request on
one keep-alive connection per side: boto3 (SigV4 header-signed, payload SHA-256 sent
and checked) against the S3 gateway, Python http.client against the HTTP API with a
bearer key. Each write is new content; the two sides alternate request by request.

| µs | S3 gateway (boto3) | HTTP API (http.client) | S3 / HTTP |
|---|---|---|---|
%s

The boto3 rows carry boto3's own cost (request building, SigV4 signing, the body's
SHA-256 in the client, response parsing: about a millisecond of Python per request)
on top of the gateway's (SigV4 verification, the body hashed again for
x-amz-content-sha256); the HTTP side is a bare http.client. The presigned-URL row is
the gateway without boto3: the same objects as the boto3 GETs, read with http.client
through URLs signed before the clock starts (SigV4 still verified per request).
""" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.time() - t0,
       " ".join(load0), " ".join(load1), "\n".join(rows))
    write_section(out_path, "S3 gateway (bench/s3_gateway.py)", text)
    print(text)


if __name__ == "__main__":
    main()
