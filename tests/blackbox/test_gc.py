"""Garbage collection with `--gc-grace 1`: content nothing refers to goes away (deleted
file, deleted volume, refused writes), content still referred to stays (live files in
other volumes, snapshots, forks). GC runs through `coffer gc --data DIR` when build/coffer
exists, else the server's background sweep is awaited."""

import os
import subprocess
import time

import harness
from harness import check, eq, expect, expect_error, sha256

SERVER_OPTS = {"gc_grace": 1}
TIMEOUT = 90
BIG = 300 * 1024  # big enough not to be stored inline in the metadata


def blobs(srv):
    """Every stored content file of srv (harness Server.blob_files: DATA/blobs with its
    temp files, or on S3 the server's objects and upload spool files)."""
    return [p for p in srv.blob_files() if os.path.isfile(p) and not os.path.islink(p)]


def run_gc(srv, wait=2.1):
    """Runs one GC pass: `coffer gc --data DIR`, or waits for the background sweep."""
    time.sleep(wait)  # past the 1 s grace (times may be whole seconds)
    exe = harness.coffer_binary()
    if exe:
        p = subprocess.run([exe, "gc", "--data", srv.data, "--grace", "1"], capture_output=True,
                           timeout=60 * harness.SCALE)
        check(p.returncode == 0, "coffer gc --data DIR exited %d\n%s\n%s" % (
            p.returncode, p.stdout.decode(errors="replace")[-2000:],
            p.stderr.decode(errors="replace")[-2000:]))
        return p.stdout.decode(errors="replace")
    return None


def gc_until(srv, cond, what):
    """GC passes (timestamps may be whole seconds: the 1 s grace can take 2 s) until
    cond() holds, for at most 10 s."""
    deadline = time.time() + 10 * harness.SCALE
    run_gc(srv)
    while not cond():
        if time.time() > deadline:
            how = "coffer gc --grace 1 (repeated for 10 s)" if harness.coffer_binary() else \
                "the background sweep (build/coffer does not exist)"
            raise AssertionError("after GC by %s: %s" % (how, what))
        time.sleep(0.5)
        if harness.coffer_binary():
            run_gc(srv, wait=0)


def test_deleted_file_blob_collected(srv):
    vid = srv.create_volume()["id"]
    data = os.urandom(BIG)
    n0 = len(blobs(srv))
    srv.put_ok(vid, "big.bin", data)
    n1 = len(blobs(srv))
    check(n1 == n0 + 1, "one new blob for a new %d-byte file (%d -> %d)" % (BIG, n0, n1))
    expect(srv.delete(srv.file_path(vid, "big.bin")), 200, 204)
    gc_until(srv, lambda: len(blobs(srv)) < n1,
             "the blob count did not go down after deleting the only file using it "
             "(%d blobs; %s)" % (len(blobs(srv)), sorted(blobs(srv))[:5]))


def test_overwritten_content_collected_live_kept(srv):
    vid = srv.create_volume()["id"]
    old, new = os.urandom(BIG), os.urandom(BIG)
    srv.put_ok(vid, "f.bin", old)
    srv.put_ok(vid, "f.bin", new)
    n = len(blobs(srv))
    gc_until(srv, lambda: len(blobs(srv)) < n, "the overwritten content was not collected")
    eq(sha256(expect(srv.get_file(vid, "f.bin"), 200).body), sha256(new), "live file after GC")


def test_deleted_volume_collected(srv):
    vid = srv.create_volume()["id"]
    n0 = len(blobs(srv))
    for i in range(3):
        srv.put_ok(vid, "f%d" % i, os.urandom(BIG))
    check(len(blobs(srv)) == n0 + 3, "three new blobs")
    expect(srv.delete("/v1/volumes/%s" % vid), 200, 204)
    gc_until(srv, lambda: len(blobs(srv)) <= n0,
             "a deleted volume's blobs were not all collected (%d -> %d)" % (
                 n0 + 3, len(blobs(srv))))


def test_dedup_and_shared_content_kept(srv):
    a = srv.create_volume()["id"]
    b = srv.create_volume()["id"]
    data = os.urandom(BIG)
    n0 = len(blobs(srv))
    srv.put_ok(a, "x.bin", data)
    srv.put_ok(b, "y.bin", data)
    srv.put_ok(a, "copy.bin", data)
    eq(len(blobs(srv)), n0 + 1, "the same content is stored once across volumes")
    expect(srv.delete(srv.file_path(a, "x.bin")), 200, 204)
    expect(srv.delete("/v1/volumes/%s" % a), 200, 204)
    run_gc(srv)
    time.sleep(1)
    eq(sha256(expect(srv.get_file(b, "y.bin"), 200).body), sha256(data),
       "content still used by another volume survives GC")


def test_snapshot_and_fork_keep_content(srv):
    vid = srv.create_volume()["id"]
    snapped, forked = os.urandom(BIG), os.urandom(BIG)
    srv.put_ok(vid, "s.bin", snapped)
    snap = srv.snapshot(vid)
    expect(srv.delete(srv.file_path(vid, "s.bin")), 200, 204)
    srv.put_ok(vid, "f.bin", forked)
    fork = expect(srv.post("/v1/volumes/%s/fork" % vid, json={}), 201).json()
    expect(srv.delete(srv.file_path(vid, "f.bin")), 200, 204)
    given = expect(srv.post("/v1/volumes/%s/snapshots" % vid,
                            json={"files": {"g.txt": "given " * 50000}}), 201).json()
    run_gc(srv)
    time.sleep(1)
    eq(sha256(expect(srv.get_file(vid, "s.bin", query={"snapshot": snap["id"]}), 200).body),
       sha256(snapped), "content a snapshot refers to survives GC")
    eq(sha256(expect(srv.get_file(fork["id"], "f.bin"), 200).body), sha256(forked),
       "content a fork refers to survives GC")
    eq(expect(srv.get_file(vid, "g.txt", query={"snapshot": given["id"]}), 200).body,
       b"given " * 50000, "content of a given-files snapshot survives GC")
    # once the snapshot is deleted its content goes
    n = len(blobs(srv))
    expect(srv.delete("/v1/volumes/%s/snapshots/%s" % (vid, snap["id"])), 200, 204)
    gc_until(srv, lambda: len(blobs(srv)) < n,
             "content only a deleted snapshot referred to was not collected")
    eq(sha256(expect(srv.get_file(fork["id"], "f.bin"), 200).body), sha256(forked),
       "fork content after the second GC")


def test_refused_writes_leave_no_blob(srv):
    vid = srv.create_volume()["id"]
    d0 = os.urandom(BIG)
    srv.put_ok(vid, "exists.bin", d0)
    small = expect(srv.post("/v1/volumes", json={"name": "small", "ceiling": 1048576}), 201).json()
    srv.put_ok(small["id"], "fill.bin", os.urandom(900 * 1024))
    link = expect(srv.post("/v1/volumes/%s/links" % vid,
                           json={"path": "l.bin", "method": "PUT", "maxBytes": 1000}), 201).json()
    time.sleep(1.3)
    run_gc(srv)
    time.sleep(1)
    before = sorted(blobs(srv))
    refused = []
    d1 = os.urandom(BIG)
    expect(srv.put_file(vid, "exists.bin", d1, headers={"If-None-Match": "*"}), 412)
    refused.append(sha256(d1))
    d2 = os.urandom(BIG)
    expect(srv.put_file(small["id"], "over.bin", d2), 400)
    refused.append(sha256(d2))
    d3 = os.urandom(BIG)
    expect(srv.put(link["url"], body=d3, key=None), 413)
    refused.append(sha256(d3))
    d4 = os.urandom(BIG)
    expect(srv.put_file(vid, "bad/../path", d4), 400)
    expect(srv.put(srv.file_path("nosuchvolume", "x"), body=d4), 404)
    refused.append(sha256(d4))
    gc_until(srv, lambda: sorted(blobs(srv)) == before,
             "blobs left behind by refused writes: %s" % sorted(set(blobs(srv)) - set(before)))
    # blobs are stored as DATA/blobs/ab/cdef... (or its S3 object): the whole sha256
    # never appears in a path, so look for the file each refused write would have made
    check(os.path.exists(srv.blob_file(sha256(d0))),
          "the live file's blob is where the check below looks: %s" % srv.blob_file(sha256(d0)))
    for h in refused:
        check(not os.path.exists(srv.blob_file(h)),
              "a blob named by a refused write's sha256 exists: %s" % srv.blob_file(h))
    eq(expect(srv.get_file(vid, "exists.bin"), 200).status, 200, "live file after GC")


def test_fork_move_restore_copy_no_bytes(srv):
    vid = srv.create_volume()["id"]
    for i in range(3):
        srv.put_ok(vid, "d/f%d.bin" % i, os.urandom(BIG))
    snap = srv.snapshot(vid)
    n = len(blobs(srv))
    expect(srv.post("/v1/volumes/%s/fork" % vid, json={}), 201)
    expect(srv.post("/v1/volumes/%s/fork" % vid, json={"snapshot": snap["id"]}), 201)
    expect(srv.post("/v1/volumes/%s/move" % vid, json={"from": "d", "to": "e"}), 200)
    expect(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": snap["id"]}), 200)
    eq(len(blobs(srv)), n, "blobs after forks, a move and a restore (no bytes copied)")
