"""Archive: a tar.gz of the files at one seq, names relative to `path`, glob, ?snapshot=."""

import io
import os
import tarfile

import harness
from harness import check, eq, expect, expect_error, sha256


def _tar(resp):
    ct = resp.header("Content-Type") or ""
    check(ct.startswith("application/gzip"), "archive Content-Type application/gzip, got %r" % ct)
    try:
        tf = tarfile.open(fileobj=io.BytesIO(resp.body), mode="r:gz")
        out = {}
        for m in tf.getmembers():
            if m.isfile():
                out[m.name] = tf.extractfile(m).read()
            else:
                check(m.isdir(), "only files and directories in the archive: %r" % m.name)
        return out
    except (tarfile.TarError, EOFError, OSError) as e:
        raise AssertionError("archive does not parse as tar.gz: %s\n%s" % (e, resp.describe(300)))


def _vol(srv):
    vid = srv.create_volume()["id"]
    files = {"proj/readme.md": b"# readme\n", "proj/src/main.c": b"int main(void){}\n",
             "proj/src/lib/util.c": os.urandom(70_000), "proj/notes.txt": b"notes",
             "other/x.txt": b"x", "top.txt": b"top"}
    for p, d in files.items():
        srv.put_ok(vid, p, d)
    return vid, files


def test_archive_whole_volume(srv):
    vid, files = _vol(srv)
    r = expect(srv.get("/v1/volumes/%s/archive" % vid), 200)
    eq(r.header("X-Volume-Seq"), str(len(files)), "X-Volume-Seq")
    got = _tar(r)
    eq(sorted(got), sorted(files), "names in the archive")
    for p, d in files.items():
        eq(sha256(got[p]), sha256(d), "bytes of " + p)


def test_archive_path_relative_names(srv):
    vid, files = _vol(srv)
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "proj"}), 200))
    eq(sorted(got), ["notes.txt", "readme.md", "src/lib/util.c", "src/main.c"],
       "names relative to path=proj")
    eq(got["src/main.c"], files["proj/src/main.c"], "bytes")
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "proj/src"}), 200))
    eq(sorted(got), ["lib/util.c", "main.c"], "names relative to path=proj/src")
    for n in got:
        check(not n.startswith("/") and ".." not in n.split("/"), "safe tar name %r" % n)


def test_archive_glob(srv):
    vid, files = _vol(srv)
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid,
                              query={"path": "proj", "glob": "**/*.c"}), 200))
    eq(sorted(got), ["src/lib/util.c", "src/main.c"], "glob **/*.c under proj")
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid, query={"glob": "*.txt"}), 200))
    eq(sorted(got), ["top.txt"], "glob *.txt at the top")


def test_archive_at_snapshot(srv):
    vid, files = _vol(srv)
    snap = srv.snapshot(vid)
    srv.put_ok(vid, "top.txt", b"changed")
    srv.put_ok(vid, "new.txt", b"new")
    r = expect(srv.get("/v1/volumes/%s/archive" % vid, query={"snapshot": snap["id"]}), 200)
    eq(r.header("X-Volume-Seq"), str(snap["seq"]), "X-Volume-Seq of a snapshot archive")
    got = _tar(r)
    eq(sorted(got), sorted(files), "names at the snapshot")
    eq(got["top.txt"], b"top", "bytes at the snapshot")


def test_archive_empty_and_errors(srv):
    vid = srv.create_volume()["id"]
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid), 200))
    eq(got, {}, "archive of an empty volume")
    expect_error(srv.get("/v1/volumes/%s/archive" % vid, query={"snapshot": "nosuch"}), 404)
    expect_error(srv.get("/v1/volumes/nosuch/archive"), 404)
    expect_error(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "../x"}), 400)


@harness.timeout(900)
def test_archive_over_10000_files_413(srv):
    harness.slow("writes 10,001 files")
    vid = srv.create_volume()["id"]
    srv.put_many(vid, {"f/%05d" % i: b"x" for i in range(10001)}, threads=8)
    r = srv.get("/v1/volumes/%s/archive" % vid)
    expect_error(r, 413, "too_large")
    check(not (r.header("Content-Type") or "").startswith("application/gzip"),
          "413 comes before any byte of the archive")
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid, query={"glob": "f/0*"}), 200))
    eq(len(got), 10000, "exactly 10,000 files is fine")


@harness.timeout(120)
def test_archive_at_one_seq_under_writes(srv):
    import threading
    vid = srv.create_volume()["id"]
    log, stop = [], threading.Event()

    def writer():
        r = 0
        while not stop.is_set():
            for i in range(10):
                data = ("round %d file %d" % (r, i)).encode()
                a = srv.put_ok(vid, "w/f%d.txt" % i, data)
                log.append((a["seq"], "f%d.txt" % i, data))
            r += 1
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    got = []
    try:
        import time
        deadline = time.time() + 3
        while time.time() < deadline:
            r = expect(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "w"}), 200)
            got.append((int(r.header("X-Volume-Seq")), _tar(r)))
    finally:
        stop.set()
        t.join(60)
    for seq, files in got:
        want = {}
        for s, p, d in sorted(log):
            if s <= seq:
                want[p] = d
        eq(files, want, "archive with X-Volume-Seq %d holds the files as at that seq" % seq)


@harness.timeout(300)
def test_archive_over_1gib_413_and_capacity_grows(srv):
    """1,025 files of the same 1 MiB (stored once) would make a 1 GiB + 1 MiB archive:
    413 before any byte. The volume's capacity has doubled past its usage meanwhile."""
    vid = srv.create_volume()["id"]
    block = os.urandom(1 << 20)
    answers = srv.put_many(vid, {"big/%04d.bin" % k: block for k in range(1025)}, threads=8)
    eq({a["sha256"] for a in answers.values()}, {sha256(block)}, "sha256 of every copy")
    v = srv.volume(vid)
    eq(v["bytes"], 1025 << 20, "volume bytes")
    check(v["bytes"] <= v["capacity"] <= v["ceiling"],
          "capacity grew past usage, within the ceiling: %r" % v)
    check(v["capacity"] in (2 << 30, 4 << 30),
          "capacity doubles from 512 MiB past 1 GiB of usage: %r" % v["capacity"])
    r = srv.get("/v1/volumes/%s/archive" % vid, timeout=120)
    err = expect_error(r, 413, "too_large")
    check("GiB" in err["message"] or "1073741824" in err["message"],
          "the 413 names the 1 GiB limit: %r" % err["message"])
    # a glob that leaves out enough is fine
    r = expect(srv.get("/v1/volumes/%s/archive" % vid, query={"glob": "big/000*.bin"},
                       timeout=120), 200)
    eq(sorted(_tar(r)), ["big/%04d.bin" % k for k in range(10)], "names under the limit")
