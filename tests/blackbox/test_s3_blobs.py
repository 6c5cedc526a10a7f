"""Blobs in S3: a cofferd with `--blobs s3://BUCKET/PREFIX?endpoint=..&region=..` (and the
default SQLite metadata) against s3rver (tests/blackbox/s3peer.py, which checks SigV4).
Inline, medium and multipart content round-trips, ranged reads, one object per content,
read-all and tar.gz, delete + GC removing the object, fsck, an outage (503 naming the
store, at once), credentials refused, a 200 MiB body streamed with bounded memory."""

import atexit
import hashlib
import http.client
import io
import os
import subprocess
import tarfile
import time

import harness
import s3peer
from harness import check, contains, eq, expect, expect_error, sha256

TIMEOUT = 120
MIB = 1 << 20
PART = 16 * MIB  # blob_s3.c's part size: larger content is a multipart upload

PEER = s3peer.start()
atexit.register(s3peer.stop, PEER)
SERVER_OPTS = {"args": ["--blobs", PEER["url"]], "env": PEER["env"], "gc_grace": 1}
STORE = "blob store 's3://%s/%s'" % (PEER["bucket"], PEER["prefix"])


def key_of(sha, prefix=PEER["prefix"]):
    return "%s/%s/%s" % (prefix, sha[:2], sha[2:])


def data_of(n, seed):
    """n bytes that differ per seed (and do not compress to nothing)."""
    h = hashlib.sha256(b"seed-%d" % seed).digest()
    out = bytearray()
    while len(out) < n:
        h = hashlib.sha256(h).digest()
        out += h * 64
    return bytes(out[:n])


def parts_put(key):
    """How many parts of a multipart upload s3rver was sent for `key` (0: none)."""
    return sum(1 for r in s3peer.requests(PEER)
               if r.startswith("PUT /%s/%s?" % (PEER["bucket"], key)) and "partNumber=" in r)


def cli(srv, *args, peer=PEER):
    exe = harness.coffer_binary()
    check(exe, "build/coffer is needed")
    env = dict(os.environ)
    env.update(peer["env"])
    return subprocess.run([exe] + list(args) + ["--data", srv.data, "--blobs", peer["url"]],
                          capture_output=True, env=env, timeout=120 * harness.SCALE)


def stream_get(srv, path, headers=None):
    """GETs path and hashes the body as it comes: (status, sha256, length)."""
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=120 * harness.SCALE)
    h = {"Authorization": "Bearer " + srv.key}
    h.update(headers or {})
    conn.request("GET", path, headers=h)
    r = conn.getresponse()
    md, n = hashlib.sha256(), 0
    while True:
        b = r.read(MIB)
        if not b:
            break
        md.update(b)
        n += len(b)
    conn.close()
    return r.status, md.hexdigest(), n


def test_inline_medium_and_multipart_round_trip(srv):
    vid = srv.create_volume()["id"]
    files = {"small.txt": b"tiny", "medium.bin": data_of(300 * 1024, 1),
             "large.bin": data_of(2 * PART + 12345, 2)}
    for path, data in files.items():
        put = srv.put_ok(vid, path, data)
        eq(put["sha256"], sha256(data), "%s sha256" % path)
    for path, data in files.items():
        r = expect(srv.get_file(vid, path), 200)
        eq(len(r.body), len(data), "%s length" % path)
        check(r.body == data, "%s reads back as written" % path)
    keys = s3peer.keys(PEER)
    check(key_of(sha256(files["small.txt"])) not in keys,
          "small content stays inline in the metadata, not in the bucket")
    for path in ("medium.bin", "large.bin"):
        contains(keys, key_of(sha256(files[path])), "%s's object in the bucket" % path)
    eq(parts_put(key_of(sha256(files["medium.bin"]))), 0, "medium content is one PUT")
    eq(parts_put(key_of(sha256(files["large.bin"]))), 3,
       "large content is a multipart upload of 3 parts")
    with open(os.path.join(PEER["dir"], PEER["bucket"],
                           key_of(sha256(files["large.bin"])) + "._S3rver_object"), "rb") as f:
        check(f.read() == files["large.bin"], "the object holds exactly the content")
    # the GET that opens a blob (its first 256 KiB) tells its size too: no HEAD, and
    # 300 KiB is two ranged GETs
    mkey = "/%s/%s" % (PEER["bucket"], key_of(sha256(files["medium.bin"])))
    n0 = len([r for r in s3peer.requests(PEER) if r.endswith(mkey)])
    check(expect(srv.get_file(vid, "medium.bin"), 200).body == files["medium.bin"], "medium")
    eq([r for r in s3peer.requests(PEER) if r.endswith(mkey)][n0:], ["GET " + mkey] * 2,
       "requests to S3 for one read of a 300 KiB file")
    # a download streams through a read-ahead that grows: a few ranged GETs, not one
    # per piece the HTTP server asks for
    key = key_of(sha256(files["large.bin"]))
    n0 = len([r for r in s3peer.requests(PEER) if r == "GET /%s/%s" % (PEER["bucket"], key)])
    st, digest, got = stream_get(srv, srv.file_path(vid, "large.bin"))
    eq((st, got, digest), (200, len(files["large.bin"]), sha256(files["large.bin"])),
       "large.bin streamed")
    gets = len([r for r in s3peer.requests(PEER) if r == "GET /%s/%s" % (PEER["bucket"], key)])
    check(1 <= gets - n0 <= 16, "a 32 MiB download took %d ranged GETs (read-ahead up to "
          "8 MiB: about 10)" % (gets - n0))


def test_ranged_reads(srv):
    vid = srv.create_volume()["id"]
    data = data_of(PART + 3 * MIB, 3)
    srv.put_ok(vid, "r.bin", data)
    n = len(data)
    for rng, lo, hi in [("0-0", 0, 0), ("5-9", 5, 9), ("%d-%d" % (PART - 10, PART + 10),
                                                       PART - 10, PART + 10),
                        ("-100", n - 100, n - 1), ("%d-" % (n - 7), n - 7, n - 1),
                        ("1000-%d" % (3 * MIB), 1000, 3 * MIB)]:
        r = expect(srv.get_file(vid, "r.bin", headers={"Range": "bytes=" + rng}), 206)
        eq(r.header("Content-Range"), "bytes %d-%d/%d" % (lo, hi, n), "Content-Range of %s" % rng)
        check(r.body == data[lo:hi + 1], "bytes %s read back" % rng)
    expect(srv.get_file(vid, "r.bin", headers={"Range": "bytes=%d-" % n}), 416)
    st, digest, got = stream_get(srv, srv.file_path(vid, "r.bin"))
    eq((st, got, digest), (200, n, sha256(data)), "whole read after the ranged ones")


def test_same_content_stored_once(srv):
    data = data_of(200 * 1024, 4)
    before = s3peer.keys(PEER)
    a, b = srv.create_volume()["id"], srv.create_volume()["id"]
    srv.put_ok(a, "one.bin", data)
    srv.put_ok(a, "two.bin", data)
    srv.put_ok(b, "three.bin", data)
    after = s3peer.keys(PEER)
    eq(sorted(set(after) - set(before)), [key_of(sha256(data))],
       "one object for the same content written three times")
    for v, p in ((a, "one.bin"), (a, "two.bin"), (b, "three.bin")):
        check(expect(srv.get_file(v, p), 200).body == data, "%s reads back" % p)


def test_read_all_and_archive(srv):
    vid = srv.create_volume()["id"]
    files = {"docs/a.md": b"# a\n", "docs/b.bin": data_of(100 * 1024, 5),
             "docs/c.txt": ("c" * (40 * 1024)).encode()}
    for p, d in files.items():
        srv.put_ok(vid, p, d)
    j = expect(srv.get("/v1/volumes/%s/files" % vid, query={"content": "true"}), 200).json()
    got = {}
    for f in j["files"]:
        if "text" in f:
            got[f["path"]] = f["text"].encode()
        else:
            import base64
            got[f["path"]] = base64.b64decode(f["data"])
    eq(sorted(got), sorted(files), "files of the read-all")
    for p, d in files.items():
        check(got[p] == d, "%s in the read-all" % p)
    r = expect(srv.get("/v1/volumes/%s/archive" % vid), 200)
    with tarfile.open(fileobj=io.BytesIO(r.body), mode="r:gz") as t:
        names = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    eq(sorted(names), sorted(files), "files in the tar.gz")
    for p, d in files.items():
        check(names[p] == d, "%s in the tar.gz" % p)


def test_delete_then_gc_removes_the_object_and_fsck_is_clean(srv):
    vid = srv.create_volume()["id"]
    gone, kept = data_of(120 * 1024, 6), data_of(130 * 1024, 7)
    srv.put_ok(vid, "gone.bin", gone)
    srv.put_ok(vid, "kept.bin", kept)
    contains(s3peer.keys(PEER), key_of(sha256(gone)), "object before the delete")
    expect(srv.delete(srv.file_path(vid, "gone.bin")), 200, 204)
    deadline = time.time() + 20 * harness.SCALE
    while key_of(sha256(gone)) in s3peer.keys(PEER):
        check(time.time() < deadline, "the deleted file's object is still in the bucket "
              "after GC passes for 20 s")
        time.sleep(1.1)  # past the 1 s grace
        p = cli(srv, "gc", "--grace", "1")
        check(p.returncode == 0, "coffer gc exited %d: %s" % (p.returncode, p.stderr.decode()))
    contains(s3peer.keys(PEER), key_of(sha256(kept)), "live content kept by GC")
    check(expect(srv.get_file(vid, "kept.bin"), 200).body == kept, "kept.bin after GC")
    p = cli(srv, "fsck")
    eq(p.returncode, 0, "coffer fsck on a clean dataset (%s %s)" % (p.stdout.decode()[-500:],
                                                                  p.stderr.decode()[-500:]))


def test_fsck_finds_a_missing_object(srv):
    vid = srv.create_volume()["id"]
    data = data_of(90 * 1024, 8)
    srv.put_ok(vid, "lost.bin", data)
    os.unlink(os.path.join(PEER["dir"], PEER["bucket"], key_of(sha256(data)) + "._S3rver_object"))
    p = cli(srv, "fsck")
    eq(p.returncode, 1, "coffer fsck with an object gone from the bucket")
    contains((p.stdout + p.stderr).decode(), sha256(data)[:12], "fsck names the content")
    r = srv.get_file(vid, "lost.bin")
    check(r.status in (404, 500) and r.error, "reading it is an API error: %s" % r.describe())


@harness.timeout(180)
def test_outage_is_503_naming_the_store_then_recovers(srv):
    vid = srv.create_volume()["id"]
    old = data_of(70 * 1024, 9)
    srv.put_ok(vid, "old.bin", old)
    s3peer.pause(PEER)
    try:
        t0 = time.time()
        r = srv.put_file(vid, "new.bin", data_of(80 * 1024, 10))
        expect_error(r, 503, "unavailable")
        contains(r.error["message"], STORE, "the 503 names the store")
        r = srv.get_file(vid, "old.bin")
        expect_error(r, 503, "unavailable")
        contains(r.error["message"], STORE, "the 503 of a read names the store")
        check(time.time() - t0 < 10 * harness.SCALE, "503s come at once, not after a hang "
              "(%.1fs)" % (time.time() - t0))
        eq(srv.list_files(vid)["files"][0]["path"], "old.bin", "metadata still answers")
        check("new.bin" not in [f["path"] for f in srv.list_files(vid)["files"]],
              "the refused write left no file")
    finally:
        s3peer.resume(PEER)
    check(srv.alive(), "cofferd lives through the outage")
    check(expect(srv.get_file(vid, "old.bin"), 200).body == old, "old.bin after the outage")
    srv.put_ok(vid, "new.bin", data_of(80 * 1024, 10))


def test_signature_refused_while_running_is_500_naming_the_store(srv):
    vid = srv.create_volume()["id"]
    secret = PEER["secret_key"]
    s3peer.pause(PEER)
    PEER["secret_key"] = secret + "-rotated"  # s3rver comes back knowing another secret
    try:
        s3peer.resume(PEER)
        r = srv.put_file(vid, "x.bin", data_of(50 * 1024, 12))
        expect_error(r, 500, "internal")
        contains(r.error["message"], STORE, "the 500 names the store")
        contains(r.error["message"], "refused the server's credentials", "and says why")
        check("x.bin" not in [f["path"] for f in srv.list_files(vid)["files"]],
              "the refused write left no file")
    finally:
        s3peer.pause(PEER)
        PEER["secret_key"] = secret
        s3peer.resume(PEER)
    srv.put_ok(vid, "x.bin", data_of(50 * 1024, 12))


def test_refused_credentials_stop_the_start_naming_the_store():
    bad = dict(PEER["env"], AWS_SECRET_ACCESS_KEY="not-the-secret")
    url = s3peer.url_for(PEER, "refused")
    try:
        s = harness.Server(args=["--blobs", url], env=bad)
    except harness.ServerError as e:
        contains(str(e), "blob store 's3://%s/refused'" % PEER["bucket"],
                 "the start-up error names the store")
        contains(str(e), "SignatureDoesNotMatch", "and says the signature was refused")
    else:
        s.close(check_exit=False)
        raise AssertionError("cofferd started with a wrong secret key")
    nokey = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
    try:
        s = harness.Server(args=["--blobs", url], env=nokey)
    except harness.ServerError as e:
        contains(str(e), "AWS_ACCESS_KEY_ID", "the start-up error names the variable")
    else:
        s.close(check_exit=False)
        raise AssertionError("cofferd started without credentials")


def test_bad_blobs_url_refused_at_start():
    for url, says in [("s3://AB/x?endpoint=%s" % PEER["endpoint"], "bucket 'AB'"),
                      ("s3://coffer/x?endpoint=%s&color=red" % PEER["endpoint"],
                       "unknown parameter 'color'"),
                      ("s3://nosuchbucket/x?endpoint=%s" % PEER["endpoint"],
                       "does not exist")]:
        try:
            s = harness.Server(args=["--blobs", url], env=PEER["env"])
        except harness.ServerError as e:
            contains(str(e), says, "start-up error for %s" % url)
        else:
            s.close(check_exit=False)
            raise AssertionError("cofferd started with --blobs %s" % url)


def _vm(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


@harness.timeout(400)
def test_200_mib_streamed_with_bounded_memory():
    size, chunk = 200 * MIB, MIB
    url = s3peer.url_for(PEER, "huge")
    with harness.server(args=["--blobs", url], env=PEER["env"]) as s:
        vid = s.create_volume()["id"]
        base = _vm(s.proc.pid, "VmHWM")
        md = hashlib.sha256()

        def body():
            block = data_of(chunk, 11)
            for i in range(size // chunk):
                b = block[:8] + i.to_bytes(8, "big") + block[16:]
                md.update(b)
                yield b
        r = s.put_file(vid, "huge.bin", body(), timeout=300)
        expect(r, 201)
        eq(r.json()["sha256"], md.hexdigest(), "sha256 of the streamed body")
        st, digest, n = stream_get(s, s.file_path(vid, "huge.bin"))
        eq((st, n, digest), (200, size, md.hexdigest()), "the 200 MiB read back")
        hwm = _vm(s.proc.pid, "VmHWM")
        eq(parts_put(key_of(md.hexdigest(), "huge")), 13, "200 MiB is 13 parts of 16 MiB")
        eq(os.listdir(os.path.join(s.data, "tmp")), [], "no spool file left in DATA/tmp")
        if harness.SCALE > 1:
            return  # sanitizers keep freed memory in quarantine: RSS says nothing there
        check(hwm - base < 64 * MIB, "cofferd's peak RSS grew by %d MiB for a 200 MiB body "
              "(from %d MiB to %d MiB); it must stream, not hold it" % (
                  (hwm - base) // MIB, base // MIB, hwm // MIB))


def _plant(prefix, n, age=3600):
    """n objects under PREFIX/ab/<62 hex> written as s3rver's own files (quicker than n
    uploads), `age` seconds old; returns their sha256s."""
    out = []
    for i in range(n):
        sha = sha256(b"planted-%d" % i)
        path = os.path.join(PEER["dir"], PEER["bucket"], prefix, sha[:2], sha[2:])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + "._S3rver_object", "wb") as f:
            f.write(b"planted-%d" % i)
        with open(path + "._S3rver_metadata.json", "w") as f:
            f.write('{"content-type": "binary/octet-stream"}')
        t = time.time() - age
        os.utime(path + "._S3rver_object", (t, t))
        out.append(sha)
    return out


@harness.timeout(300)
def test_listing_pages_past_1000_objects():
    """ListObjectsV2 answers 1,000 keys a page: fsck and gc see all 1,100 objects
    (continuation tokens), and gc deletes the ones nothing names."""
    url = s3peer.url_for(PEER, "paged")
    with harness.server(args=["--blobs", url], env=PEER["env"]) as s:
        planted = _plant("paged", 1100)
        peer = dict(PEER, url=url)
        p = cli(s, "fsck", peer=peer)
        out = p.stdout.decode()
        eq(p.returncode, 0, "fsck with leftovers only (%s)" % p.stderr.decode()[-500:])
        contains(out.split(), "1100", "fsck counts 1100 orphans over two pages:\n" + out)
        before = sum(1 for r in s3peer.requests(PEER)
                     if r.startswith("GET /%s?continuation-token=" % PEER["bucket"]))
        check(before >= 1, "a second page was asked for with a continuation token")
        p = cli(s, "gc", "--grace", "1", peer=peer)
        eq(p.returncode, 0, "gc (%s)" % p.stderr.decode()[-500:])
        eq(s3peer.keys(PEER, "paged/"), [], "gc deleted all 1100 leftovers")
        check(len(planted) == 1100, "planted")


def test_fsck_beside_the_server_leaves_a_spooling_upload(srv):
    # the spool file of an upload under way is locked (store/lock.c), so a tool that
    # opens the data dir, which sweeps crash leftovers, leaves it even when it is old
    import threading
    vol = srv.create_volume()
    tmp = os.path.join(srv.data, "tmp")
    chunk, go_on, res = data_of(MIB, 77), threading.Event(), {}

    def body():
        for i in range(6):
            if i == 3:
                go_on.wait(60)
            yield chunk
    th = threading.Thread(target=lambda: res.update(r=srv.put_file(vol["id"], "s.bin",
                                                                   body())))
    th.start()
    try:
        deadline, live = time.time() + 20, []
        while time.time() < deadline and not live:
            live = [n for n in os.listdir(tmp) if n.startswith("s3up_") and
                    os.path.getsize(os.path.join(tmp, n)) >= 3 * MIB]
            time.sleep(0.05)
        check(live, "the upload's spool file (saw %r)" % os.listdir(tmp))
        old = time.time() - 3600
        os.utime(os.path.join(tmp, live[0]), (old, old))
        # fsck may report what earlier tests of this module damaged on purpose (exit 1)
        p = cli(srv, "fsck")
        check(p.returncode in (0, 1), "fsck beside the server ran: %d %s" % (
            p.returncode, p.stderr.decode(errors="replace")))
        check(os.path.exists(os.path.join(tmp, live[0])), "the spool file kept")
    finally:
        go_on.set()
        th.join(60)
    expect(res["r"], 201)
    eq(stream_get(srv, srv.file_path(vol["id"], "s.bin"))[1], sha256(chunk * 6), "as sent")
