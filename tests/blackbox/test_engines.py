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
        r = _cofferd("--data", s.data, "--blobs", "s3://bucket/prefix?region=x")
        check(r.returncode != 0, "cofferd exits")
        contains(r.stderr.decode(), "s3 blob backend", "the message names the backend")
        r = _cofferd("--data", s.data, "--meta", "mysql://x")
        check(r.returncode != 0, "cofferd exits")
        contains(r.stderr.decode(), "unknown metadata backend", "an unknown scheme")
        p = _coffer("fsck", "--meta", "postgres://u@127.0.0.1:1/db")
        eq(p.returncode, 1, "fsck exit")
        contains(p.stderr.decode(), "postgres", "fsck names the backend")
