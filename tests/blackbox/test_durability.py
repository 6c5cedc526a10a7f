"""Durability around the edges (issue 17, items 2 and 3).

A damaged content file (shorter than its metadata says, or with flipped bytes) is 500
`internal` naming the file, logged, never a 200 that stalls; fsck reports it. A write
that makes a new blob folder fsyncs that folder's parent before the metadata naming the
blob commits (checked by logging every fsync of cofferd through an LD_PRELOAD shim)."""

import os
import shutil
import subprocess
import tempfile

import harness
from harness import check, contains, eq, expect, expect_error, sha256

HERE = os.path.dirname(os.path.abspath(__file__))


def _damaged(s, size, how):
    vid = s.create_volume()["id"]
    data = os.urandom(size)
    s.put_ok(vid, "docs/damaged.bin", data)
    blob = s.blob_of_size(size)
    if how == "truncate":
        os.truncate(blob, size // 3)
    else:
        with open(blob, "r+b") as f:
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0xFF]))
    return vid, data


def test_truncated_blob_is_500_naming_the_file_not_a_stall():
    with harness.server() as s:
        for size in (300_000, 3 * 1024 * 1024):   # hashed on a whole read, and not
            vid, data = _damaged(s, size, "truncate")
            r = s.get_file(vid, "docs/damaged.bin", timeout=20)
            expect_error(r, 500, "internal")
            contains(r.error["message"], "docs/damaged.bin", "the message names the file")
            r = s.get_file(vid, "docs/damaged.bin", headers={"Range": "bytes=0-99"}, timeout=20)
            expect_error(r, 500, "internal")
            contains(s.log(), "docs/damaged.bin", "the failure is logged")
        eq(expect(s.get("/v1/health", key=None), 200).json().get("ok"), True, "still serving")
        p = s.cli("fsck", "--data", s.data, "--json")
        eq(p.returncode, 1, "fsck finds it: %s" % p.stdout.decode())


def test_flipped_bytes_in_a_small_blob_are_500_on_a_whole_read():
    with harness.server() as s:
        vid, data = _damaged(s, 300_000, "flip")
        r = s.get_file(vid, "docs/damaged.bin", timeout=20)
        expect_error(r, 500, "internal")
        contains(r.error["message"], "docs/damaged.bin", "the message names the file")
        contains(r.error["message"], "sha256", "the message says what does not match")
        contains(s.log(), "docs/damaged.bin", "the failure is logged")
        # a range is served from the stored bytes (only whole reads are hashed)
        r = expect(s.get_file(vid, "docs/damaged.bin", headers={"Range": "bytes=0-99"}), 206)
        eq(r.body, data[:100], "bytes before the damage")
        p = s.cli("fsck", "--data", s.data, "--json")
        eq(p.returncode, 1, "fsck finds it")
        contains(p.stdout.decode(), sha256(data), "fsck names the content")
        # an undamaged file of the same volume still reads
        s.put_ok(vid, "ok.bin", os.urandom(50_000))
        expect(s.get_file(vid, "ok.bin"), 200)


def _shim(tmp):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        harness.skip("no C compiler for the fsync shim (build-essential)")
    so = os.path.join(tmp, "fsynclog.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", so,
                    os.path.join(HERE, "fsynclog", "fsynclog.c")], check=True,
                   capture_output=True)
    return so


def test_new_blob_folder_is_fsynced_in_its_parent_before_the_metadata():
    if harness.ENGINE == "pg":
        harness.skip("embedded store only: the metadata's commit is seen as the fsync of "
                     "DATA/meta.db-wal; on PostgreSQL it happens in the server's process")
    tmp = tempfile.mkdtemp(prefix="coffer-fsync-")
    try:
        so = _shim(tmp)
        log = os.path.join(tmp, "fsync.log")
        env = {"LD_PRELOAD": so, "COFFER_FSYNC_LOG": log,
               "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
        with harness.server(env=env) as s:
            data = os.urandom(100_000)
            vid = s.create_volume()["id"]
            start = os.path.getsize(log) if os.path.exists(log) else 0
            put = s.put_ok(vid, "big.bin", data)
            with open(log) as f:
                f.seek(start)
                lines = [l.rstrip("\n") for l in f]
            blobs = os.path.realpath(os.path.join(s.data, "blobs"))
            folder = os.path.join(blobs, put["sha256"][:2])
            upload = "fsync " + os.path.realpath(os.path.join(s.data, "tmp")) + "/up_"
            wal = os.path.realpath(os.path.join(s.data, "meta.db")) + "-wal"

            def first(path, after=-1):
                for i, l in enumerate(lines):
                    if i > after and l == "fsync " + path:
                        return i
                return None
            # the content is fsynced under its temp name, then renamed into its folder
            i_blob = next((i for i, l in enumerate(lines) if l.startswith(upload)), None)
            check(i_blob is not None, "the blob file itself is fsynced:\n%s" % "\n".join(lines))
            i_folder = first(folder, i_blob)
            i_parent = first(blobs, i_blob)
            i_wal = first(wal, i_blob)
            check(i_folder is not None, "its folder is fsynced:\n%s" % "\n".join(lines))
            check(i_parent is not None,
                  "the new folder's parent (DATA/blobs) is fsynced:\n%s" % "\n".join(lines))
            check(i_wal is not None, "the metadata commits (WAL fsync):\n%s" % "\n".join(lines))
            check(i_blob < i_folder < i_wal and i_parent < i_wal,
                  "file, folder and parent are fsynced before the metadata commits:\n%s"
                  % "\n".join(lines))
            eq(sha256(expect(s.get_file(vid, "big.bin"), 200).body), sha256(data), "read back")
        with open(log) as f:
            startup = f.read()
        contains(startup, "fsync " + os.path.realpath(s.data) + "\n",
                 "a new DATA/blobs is fsynced in DATA")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
