#!/usr/bin/python3
"""The S3 gateway (issue 40 item 4) beside coffer's own HTTP API and the project's S3
test peer (s3rver, tests/blackbox/s3peer.py), one cofferd, one run. Parts (all by
default; `--parts small,peer,big,list` picks some):

  small  boto3 put_object / get_object of 4 KiB and 1 MiB objects against PUT / GET
         /v1/volumes/ID/files/PATH with a plain http.client, each write new content (no
         dedupe), the sides alternating request by request (which goes first alternates
         too), so that load on the machine falls on all alike. Medians of N.
  peer   the same boto3 calls against s3rver too, alternating with the others.
  big    100 MiB PUT and GET: `aws s3 cp` (Debian's /usr/bin/aws) against the gateway,
         `curl -T` / `curl -o` against the HTTP API, `aws s3 cp` against s3rver; wall
         time of each command, sides rotating, sha256 of what came back checked.
  list   LIST of 100,000 keys (bench/populate.c `fill` into a volume before cofferd
         starts, so the gateway and the HTTP API see the same volume): boto3's
         list_objects_v2 paginator (1,000 a page) and `aws s3 ls --recursive | wc -l`
         against the gateway, the HTTP API's listing page by page, and s3rver filled
         with the same keys by boto3 from 16 threads (20,000 keys when 100,000 would
         take more than ~5 minutes, which the section then says).

(bench/s3.py is the other S3 benchmark: cofferd's blobs kept in an S3 store.)

Usage: /usr/bin/python3 bench/s3_gateway.py [--out FILE] [--parts P,...] (writes the
"S3 gateway (bench/s3_gateway.py)" section of bench/results.md, replacing an earlier
one). Environment: BENCH_S3GW_N, BENCH_S3GW_BIG_N (small), BENCH_S3GW_REPS (big and
list, default 3), BENCH_S3GW_KEYS (list, default 100000). Needs build/cofferd,
build/libcoffer.a (list), Debian's python3-boto3 and awscli, curl, and node/npm for
s3rver (scripts/deps --test)."""

import concurrent.futures, hashlib, http.client, json, os, re, shutil, statistics, \
    subprocess, sys, tempfile, time, urllib.parse

from benchlib import ROOT, RESULTS, Cofferd, write_section

N = {4096: int(os.environ.get("BENCH_S3GW_N", "300")),
     1 << 20: int(os.environ.get("BENCH_S3GW_BIG_N", "40"))}
REPS = int(os.environ.get("BENCH_S3GW_REPS", "3"))
KEYS = int(os.environ.get("BENCH_S3GW_KEYS", "100000"))
BIG = 100 << 20
AWS = "/usr/bin/aws"        # Debian's awscli, as tests/blackbox/test_s3.py uses it
PARTS = ("small", "peer", "big", "list")


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


def client(endpoint, key_id, secret):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=key_id, aws_secret_access_key=secret,
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1},
                                      max_pool_connections=32))


def measure(s, s3, vid, size, peer=None):
    """µs of each request: {(side, op): [...]}, sides alternating. Side "url" is the
    gateway without boto3: GETs of presigned URLs (made before the clock starts)
    with http.client. Side "peer" (when `peer` is (boto3 client, bucket)): the same
    boto3 calls against s3rver."""
    c = s.conn()
    t = {(side, op): [] for side in ("s3", "http", "url", "peer") for op in ("PUT", "GET")}
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
        elif side == "peer":
            peer[0].put_object(Bucket=peer[1], Key=key, Body=d)
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
        elif side == "peer":
            got = len(peer[0].get_object(Bucket=peer[1], Key=key)["Body"].read())
        else:
            got = http_get(s, c, vid, key)
        t[(side, "GET")].append((time.perf_counter() - t0) * 1e6)
        if got != size:
            raise RuntimeError("%s GET %s: %d bytes" % (side, key, got))

    extra = ("peer",) if peer else ()
    for op, sides in ((put, ("s3", "http") + extra), (get, ("s3", "http", "url") + extra)):
        for i in range(n):
            for side in (sides if i % 2 == 0 else sides[::-1]):
                op(side, i)
    c.close()
    cu.close()
    return t


def timed(cmd, env=None, shell=False):
    """Seconds of wall time of one command, which must succeed."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, shell=shell, capture_output=True, timeout=900)
    dt = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError("%s: exit %d: %s %s" % (cmd, p.returncode, p.stdout[-500:],
                                                   p.stderr[-1000:]))
    return dt, p.stdout


def aws_env(work, key_id, secret):
    none = os.path.join(work, "none")    # no ~/.aws config or credentials
    return dict(os.environ, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret,
                AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=none,
                AWS_SHARED_CREDENTIALS_FILE=none)


def sha_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def big(s, gw, gw_env, peer, peer_env, work):
    """Seconds of each command: {(side, op): [...]}; sides "s3" (aws, gateway), "http"
    (curl, HTTP API), "peer" (aws, s3rver); a new 100 MiB file per side and rep."""
    vid = s.call("POST", "/v1/volumes", {"name": "bench-big", "ceiling": 1 << 40})["id"]
    api = "%s/v1/volumes/%s/files/" % (s.url, vid)
    auth = "Authorization: Bearer " + s.key
    sides = ("s3", "http", "peer") if peer else ("s3", "http")
    t = {(side, op): [] for side in sides for op in ("PUT", "GET")}
    t[("aws", "start")] = []
    src, dst = os.path.join(work, "big.src"), os.path.join(work, "big.dst")
    for i in range(REPS):
        order = sides[i % len(sides):] + sides[:i % len(sides)]
        t[("aws", "start")].append(timed([AWS, "--version"])[0])
        for op in ("PUT", "GET"):
            for side in order:
                key = "big/%s-%d" % (side, i)
                if op == "PUT":
                    with open(src, "wb") as f:
                        f.write(os.urandom(BIG))
                    cmd = {"s3": ([AWS, "--endpoint-url", gw, "s3", "cp", src,
                                   "s3://bench-big/" + key], gw_env),
                           "http": (["curl", "-sS", "-f", "-T", src, "-H", auth,
                                     "-o", "/dev/null", api + key], None),
                           "peer": ([AWS, "--endpoint-url", peer and peer["endpoint"], "s3",
                                     "cp", src, "s3://%s/%s" % (peer and peer["bucket"], key)],
                                    peer_env)}[side]
                    t[(side, op)].append(timed(cmd[0], env=cmd[1])[0])
                    os.rename(src, os.path.join(work, "big-%s-%d" % (side, i)))
                else:
                    cmd = {"s3": ([AWS, "--endpoint-url", gw, "s3", "cp",
                                   "s3://bench-big/" + key, dst], gw_env),
                           "http": (["curl", "-sS", "-f", "-o", dst, "-H", auth, api + key],
                                    None),
                           "peer": ([AWS, "--endpoint-url", peer and peer["endpoint"], "s3",
                                     "cp", "s3://%s/%s" % (peer and peer["bucket"], key), dst],
                                    peer_env)}[side]
                    t[(side, op)].append(timed(cmd[0], env=cmd[1])[0])
                    want = os.path.join(work, "big-%s-%d" % (side, i))
                    if sha_file(dst) != sha_file(want):
                        raise RuntimeError("%s GET %s: sha256 differs" % (side, key))
                    os.unlink(dst)
                    os.unlink(want)
    return t


def fill_peer(p3, bucket, n):
    """Puts keys 0..n-1 (populate.c's names, 64 bytes each) into s3rver from 16 threads;
    stops early (returning how many went in, a prefix 0..k-1 of the names) when the
    first 5,000 say n would take more than ~5 minutes: then 20,000. Returns (keys,
    seconds)."""
    def put(i):
        p3.put_object(Bucket=bucket, Key=key_name(i), Body=b"%063d\n" % i)
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        first = min(n, 5000)
        list(ex.map(put, range(first)))
        rate = first / (time.perf_counter() - t0)
        if n / rate > 300:
            n = max(first, min(n, 20000))
        list(ex.map(put, range(first, n)))
    return n, time.perf_counter() - t0


def key_name(i):
    return "d%04d/f%07d.txt" % (i // 1000, i)   # bench/populate.c's file_path


def list_http(s, vid, limit):
    c = s.conn(900)
    n, cursor = 0, None
    while True:
        q = "limit=%d" % limit + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
        page = s.request(c, "GET", "/v1/volumes/%s/files?%s" % (vid, q))[1]
        n += len(page["files"])
        cursor = page.get("cursor")
        if not cursor:
            c.close()
            return n


def list_boto3(c, bucket):
    n = 0
    for page in c.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, PaginationConfig={"PageSize": 1000}):
        n += len(page.get("Contents", []))
    return n


def listing(s, s3, gw, gw_env, vid, keys, peer, p3, peer_env, peer_keys):
    """Seconds of each listing and the count it gave: {side: [(s, count), ...]}."""
    sides = {"s3": lambda: list_boto3(s3, "bench-list"),
             "s3-cli": lambda: timed("%s --endpoint-url %s s3 ls --recursive s3://bench-list"
                                     " | wc -l" % (AWS, gw), env=gw_env, shell=True)[1],
             "http-1000": lambda: list_http(s, vid, 1000),
             "http-10000": lambda: list_http(s, vid, 10000)}
    if peer:
        sides["peer"] = lambda: list_boto3(p3, "bench-list")
        sides["peer-cli"] = lambda: timed(
            "%s --endpoint-url %s s3 ls --recursive s3://bench-list | wc -l" % (
                AWS, peer["endpoint"]), env=peer_env, shell=True)[1]
    want = {k: peer_keys if k.startswith("peer") else keys for k in sides}
    names = list(sides)
    t = {k: [] for k in names}
    for i in range(REPS):
        for k in names[i % len(names):] + names[:i % len(names)]:
            t0 = time.perf_counter()
            got = int(sides[k]())
            t[k].append(time.perf_counter() - t0)
            if got != want[k]:
                raise RuntimeError("%s listed %d keys, not %d" % (k, got, want[k]))
    return t


def fmt(x):
    return "{:,.0f}".format(x)


def small_rows(res, peer):
    rows = []
    for size, label in ((4096, "4 KiB"), (1 << 20, "1 MiB")):
        for op in ("PUT", "GET"):
            a = statistics.median(res[size][("s3", op)])
            b = statistics.median(res[size][("http", op)])
            c = ("| %s | %.2fx" % (fmt(statistics.median(res[size][("peer", op)])),
                                   statistics.median(res[size][("peer", op)]) / b)
                 if peer else "| – | –")
            rows.append("| %s %s (median of %d) | %s | %s | %.2fx %s |" % (
                label, op, N[size], fmt(a), fmt(b), a / b, c))
        a = statistics.median(res[size][("url", "GET")])
        b = statistics.median(res[size][("http", "GET")])
        rows.append("| %s GET, presigned URL by http.client (median of %d) | %s | %s | %.2fx"
                    " | – | – |" % (label, N[size], fmt(a), fmt(b), a / b))
    return rows


def main():
    out_path = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else RESULTS
    parts = (sys.argv[sys.argv.index("--parts") + 1].split(",") if "--parts" in sys.argv
             else PARTS)
    bad = [p for p in parts if p not in PARTS]
    if bad:
        sys.exit("s3_gateway.py: unknown part %s (parts: %s)" % (bad, ",".join(PARTS)))
    root = tempfile.mkdtemp(prefix="coffer-bench-s3gw-")
    data = os.path.join(root, "data")
    load0 = open("/proc/loadavg").read().split()[:3]
    t0 = time.time()
    peer = s = None
    notes, fill_note = {}, ""
    try:
        list_vid = None
        if "list" in parts:
            from views import fill, populate_bin
            os.makedirs(data)
            Cofferd(data).stop()  # a fresh data dir and its admin key
            tf = time.time()
            list_vid = fill(populate_bin(root), data, "bench-list", KEYS, 64)
            fill_note = "coffer's volume filled by populate.c in %.0f s" % (time.time() - tf)
        s = Cofferd(data, "--s3-listen", "127.0.0.1:0")
        m = [re.search(r"S3 gateway on (http://\S+)", line) for line in s.banner]
        m = [x.group(1) for x in m if x]
        if not m:
            raise RuntimeError("no S3 address in cofferd's banner: %s" % s.banner)
        gw = m[0]
        key_id = "k_" + hashlib.sha256(s.key.encode()).hexdigest()[:16]
        s3 = client(gw, key_id, s.key)
        gw_env = aws_env(root, key_id, s.key)
        p3 = peer_env = None
        if {"peer", "big", "list"} & set(parts):
            sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
            import s3peer
            peer = s3peer.start(bucket="bench-peer")
            p3 = client(peer["endpoint"], peer["access_key"], peer["secret_key"])
            peer_env = aws_env(root, peer["access_key"], peer["secret_key"])
        res = {}
        if "small" in parts or "peer" in parts:
            s3.create_bucket(Bucket="bench-gw")
            vid = [v for v in s.call("GET", "/v1/volumes")["volumes"]
                   if v["name"] == "bench-gw"][0]["id"]
            res["small"] = {size: measure(s, s3, vid, size,
                                          (p3, peer["bucket"]) if "peer" in parts else None)
                            for size in N}
            notes["small"] = time.time() - t0
        if "big" in parts:
            res["big"] = big(s, gw, gw_env, peer, peer_env, root)
        if "list" in parts:
            p3.create_bucket(Bucket="bench-list")   # the others' objects stay out of it
            peer_keys, secs = fill_peer(p3, "bench-list", KEYS)
            fill_note += ("; s3rver filled with %s keys by boto3 from 16 threads in %.0f s%s" % (
                fmt(peer_keys), secs, "" if peer_keys == KEYS else
                " (%s would have taken more than ~5 minutes)" % fmt(KEYS)))
            res["list"] = listing(s, s3, gw, gw_env, list_vid, KEYS, peer, p3, peer_env,
                                  peer_keys)
            res["peer_keys"] = peer_keys
    finally:
        if s:
            s.stop()
        if peer:
            s3peer.stop(peer)
        shutil.rmtree(root, ignore_errors=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    text = """## S3 gateway (bench/s3_gateway.py)

Written by `bench/s3_gateway.py --parts %s` on %s in %.0f s;
load average (1/5/15 min) %s at the start, %s at the end (2 cores
shared with other work: figures are of a loaded machine). One cofferd (`--s3-listen`,
the default SQLite metadata, local blobs); the S3 test peer is s3rver (tests/blackbox/s3peer.py: Node, objects as files, SigV4 checked).
""" % (",".join(parts), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.time() - t0,
       " ".join(load0), " ".join(load1))
    if "small" in res:
        text += """
### 4 KiB and 1 MiB PUT / GET (µs a request)

Each request on one keep-alive connection per side: boto3 (SigV4 header-signed, payload
SHA-256 sent and checked) against the S3 gateway and against s3rver, Python http.client
against the HTTP API with a bearer key. Each write is new content; the sides alternate
request by request.

| µs | S3 gateway (boto3) | HTTP API (http.client) | gateway / HTTP | s3rver (boto3) | s3rver / HTTP |
|---|---|---|---|---|---|
%s

The boto3 rows carry boto3's own cost (request building, SigV4 signing, the body's
SHA-256 in the client, response parsing: about a millisecond of Python per request)
on top of the gateway's (SigV4 verification, the body hashed again for
x-amz-content-sha256); the HTTP side is a bare http.client. The presigned-URL row is
the gateway without boto3: the same objects as the boto3 GETs, read with http.client
through URLs signed before the clock starts (SigV4 still verified per request).
""" % "\n".join(small_rows(res["small"], "peer" in parts))
    if "big" in res:
        b = res["big"]
        med = lambda k: statistics.median(b[k]) if k in b else float("nan")
        rows = ["| 100 MiB %s (median of %d) | %.2f | %.2f | %.2f |" % (
            op, REPS, med(("s3", op)), med(("http", op)), med(("peer", op)))
            for op in ("PUT", "GET")]
        rows.append("| `aws --version` (the CLI's start alone, median of %d) | %.2f | – | %.2f |"
                    % (REPS, med(("aws", "start")), med(("aws", "start"))))
        text += """
### 100 MiB PUT / GET (seconds of wall time a command)

`aws s3 cp` (Debian's awscli %s: above 8 MiB it sends 8 MiB parts, 10 at a time, and
reads in ranged GETs the same way) against the gateway and against s3rver; `curl -T FILE`
/ `curl -o FILE` (one request, one stream) against the HTTP API. A new random 100 MiB file
per side and rep (no dedupe); sides rotate which goes first; every GET's file checked by
sha256 against what was put.

| s | S3 gateway (aws s3 cp) | HTTP API (curl) | s3rver (aws s3 cp) |
|---|---|---|---|
%s
""" % (aws_version(), "\n".join(rows))
    if "list" in res:
        li = res["list"]
        med = lambda k: "%.2f" % statistics.median(li[k]) if k in li else "–"
        pk = fmt(res["peer_keys"])
        text += """
### LIST of %s keys (seconds, median of %d)

%s.
Keys `dNNNN/fNNNNNNN.txt`, 1,000 a folder, 64 bytes each; the same volume
through the gateway and the HTTP API. Every listing walks all pages and its count is
checked.

| s | S3 gateway | HTTP API | s3rver (%s keys) |
|---|---|---|---|
| boto3 list_objects_v2 paginator, 1,000 a page | %s | – | %s |
| `aws s3 ls --recursive \\| wc -l` | %s | – | %s |
| `GET /v1/volumes/{id}/files?limit=1000`, all pages | – | %s | – |
| `GET /v1/volumes/{id}/files?limit=10000` (the default), all pages | – | %s | – |
""" % (fmt(KEYS), REPS, fill_note[0].upper() + fill_note[1:], pk, med("s3"), med("peer"),
       med("s3-cli"), med("peer-cli"), med("http-1000"), med("http-10000"))
    write_section(out_path, "S3 gateway (bench/s3_gateway.py)", text)
    print(text)


def aws_version():
    return subprocess.run([AWS, "--version"], capture_output=True, text=True
                          ).stdout.split()[0].split("/")[-1]


if __name__ == "__main__":
    main()
