"""The engines by URL (API.md "Running on several nodes"): `cofferd --meta URL --blobs
URL` keeps metadata and content where they say, `coffer fsck/gc --meta --blobs` check
and collect that dataset without a data dir, and a backend that is not built in is
refused at start with a message naming it."""

import os
import subprocess

import harness
from harness import check, contains, eq, expect, sha256


def _cofferd(*args):
    exe = os.path.join(harness.ROOT, harness.BUILD, "cofferd")
    return subprocess.run([exe, "--listen", "127.0.0.1:0"] + list(args), capture_output=True,
                          timeout=30 * harness.SCALE)


def _coffer(*args):
    exe = os.path.join(harness.ROOT, harness.BUILD, "coffer")
    return subprocess.run([exe] + list(args), capture_output=True, timeout=60 * harness.SCALE)


def test_meta_and_blobs_where_the_urls_say():
    with harness.server(start=False) as s:
        meta_dir = os.path.join(s.root, "engines", "meta")
        blobs = os.path.join(s.root, "engines", "content")
        os.makedirs(meta_dir)
        meta = "sqlite:" + os.path.join(meta_dir, "shared.db")
        s.args += ["--meta", meta, "--blobs", blobs]
        s.start()
        vid = s.create_volume()["id"]
        big = os.urandom(200_000)
        s.put_ok(vid, "big.bin", big)
        s.put_ok(vid, "small.txt", b"small")
        check(os.path.exists(os.path.join(meta_dir, "shared.db")), "the metadata is in --meta")
        check(not os.path.exists(os.path.join(s.data, "meta.db")), "no DATA/meta.db")
        stored = [os.path.join(r, n) for r, _, ns in os.walk(os.path.join(blobs, "blobs"))
                  for n in ns]
        eq([os.path.getsize(p) for p in stored], [len(big)], "the content is under --blobs")
        check(not os.path.exists(os.path.join(s.data, "blobs")) or
              not any(ns for _, _, ns in os.walk(os.path.join(s.data, "blobs"))),
              "nothing stored under DATA/blobs")
        r = expect(s.get_file(vid, "big.bin", headers={"Range": "bytes=1000-1999"}), 206)
        eq(r.body, big[1000:2000], "a range of the content")
        s.restart()
        eq(sha256(expect(s.get_file(vid, "big.bin"), 200).body), sha256(big), "after restart")

        # the offline tools over the same URLs, with no data dir at all
        p = _coffer("fsck", "--json", "--meta", meta, "--blobs", blobs)
        eq(p.returncode, 0, "fsck exit: %s" % p.stderr.decode())
        contains(p.stdout.decode(), '"ok": true', "fsck report")
        with open(stored[0], "r+b") as f:
            f.seek(500)
            f.write(b"\0" * 8)
        p = _coffer("fsck", "--json", "--meta", meta, "--blobs", blobs)
        eq(p.returncode, 1, "fsck finds the damage: %s" % p.stdout.decode())
        contains(p.stdout.decode(), sha256(big), "fsck names the damaged content")
        p = _coffer("gc", "--json", "--meta", meta, "--blobs", blobs)
        eq(p.returncode, 0, "gc exit: %s" % p.stderr.decode())
        contains(p.stdout.decode(), "blobsDeleted", "gc report")


def test_backends_not_built_in_are_refused_by_name():
    with harness.server(start=False) as s:
        r = _cofferd("--data", s.data, "--meta", "postgres://u@127.0.0.1:1/db")
        check(r.returncode != 0, "cofferd exits")
        contains(r.stderr.decode(), "postgres", "the message names the backend")
        # S3 is built in (test_s3_blobs): a store it cannot use stops the start, named
        r = _cofferd("--data", s.data, "--blobs", "s3://bucket/prefix?endpoint=http://127.0.0.1:1")
        check(r.returncode != 0, "cofferd exits")
        contains(r.stderr.decode(), "blob store 's3://bucket/prefix'", "the message names it")
        r = _cofferd("--data", s.data, "--meta", "mysql://x")
        check(r.returncode != 0, "cofferd exits")
        contains(r.stderr.decode(), "unknown metadata backend", "an unknown scheme")
        p = _coffer("fsck", "--meta", "postgres://u@127.0.0.1:1/db")
        eq(p.returncode, 1, "fsck exit")
        contains(p.stderr.decode(), "postgres", "fsck names the backend")


def test_downloads_through_the_reader_without_sendfile():
    """COFFER_BLOB_NO_FD=1 makes the local store's readers offer no fd, as S3's will
    not: downloads then go through the MHD content reader over read_at, whole, in
    ranges, conditional and as links."""
    with harness.server(env={"COFFER_BLOB_NO_FD": "1"}) as s:
        vid = s.create_volume()["id"]
        big = os.urandom(3 * 1024 * 1024 + 12345)    # past the 1 MiB hashed at GET
        put = s.put_ok(vid, "big.bin", big)
        r = expect(s.get_file(vid, "big.bin"), 200)
        eq(len(r.body), len(big), "length")
        eq(sha256(r.body), sha256(big), "whole body")
        for rng, want in (("bytes=0-99", big[:100]),
                          ("bytes=1048570-2097160", big[1048570:2097161]),
                          ("bytes=-5000", big[-5000:])):
            r = expect(s.get_file(vid, "big.bin", headers={"Range": rng}), 206)
            eq(r.body, want, "range %s" % rng)
        etag = r.header("ETag")
        expect(s.get_file(vid, "big.bin", headers={"If-None-Match": etag}), 304)
        mid = os.urandom(200_000)                     # hashed, then sent from memory
        s.put_ok(vid, "mid.bin", mid)
        eq(expect(s.get_file(vid, "mid.bin"), 200).body, mid, "a file under 1 MiB")
        link = expect(s.post("/v1/volumes/%s/links" % vid, json={"path": "big.bin"}),
                      201).json()
        r = expect(s.get(link["url"], key=None), 200)
        eq(sha256(r.body), put["sha256"], "through a signed link")
