"""Forks (from now, from a snapshot; diverging independently) and restore (one change,
written/removed counts, one feed entry per file at the restore's seq)."""

import os

from harness import check, eq, expect, expect_error, sha256


def _files(srv, vid, **q):
    return {f["path"]: f["sha256"] for f in srv.list_files(vid, **q)["files"]}


def test_fork_from_now(srv):
    src = srv.create_volume("src")["id"]
    big = os.urandom(200_000)
    srv.put_ok(src, "a.txt", b"a")
    srv.put_ok(src, "dir/big.bin", big)
    r = expect(srv.post("/v1/volumes/%s/fork" % src, json={"name": "the-fork"}), 201)
    fork = r.json()
    for k in ("id", "name", "seq", "files", "bytes", "capacity", "ceiling", "createdAt"):
        check(k in fork, "fork answer is a volume with %s: %r" % (k, fork))
    check(fork["id"] != src, "a fork is a new volume")
    eq(fork["name"], "the-fork", "fork name")
    eq((fork["files"], fork["bytes"]), (2, 1 + len(big)), "fork files, bytes")
    fid = fork["id"]
    eq(_files(srv, fid), _files(srv, src), "fork has the source's files")
    eq(sha256(expect(srv.get_file(fid, "dir/big.bin"), 200).body), sha256(big), "bytes in fork")
    # diverge both ways
    fseq, sseq = srv.seq(fid), srv.seq(src)
    srv.put_ok(fid, "a.txt", b"fork's a")
    srv.put_ok(fid, "only-fork.txt", b"f")
    srv.put_ok(src, "only-src.txt", b"s")
    expect(srv.delete(srv.file_path(src, "dir/big.bin")), 200, 204)
    eq(srv.seq(fid), fseq + 2, "fork seq moves on its own")
    eq(srv.seq(src), sseq + 2, "source seq moves on its own")
    eq(sorted(_files(srv, fid)), ["a.txt", "dir/big.bin", "only-fork.txt"], "fork files")
    eq(sorted(_files(srv, src)), ["a.txt", "only-src.txt"], "source files")
    eq(expect(srv.get_file(src, "a.txt"), 200).body, b"a", "source a.txt untouched")
    eq(expect(srv.get_file(fid, "a.txt"), 200).body, b"fork's a", "fork a.txt")
    eq(sha256(expect(srv.get_file(fid, "dir/big.bin"), 200).body), sha256(big),
       "fork keeps a file deleted in the source")


def test_fork_from_snapshot(srv):
    src = srv.create_volume()["id"]
    srv.put_ok(src, "v.txt", b"one")
    snap = srv.snapshot(src)
    srv.put_ok(src, "v.txt", b"two")
    srv.put_ok(src, "later.txt", b"later")
    fork = expect(srv.post("/v1/volumes/%s/fork" % src, json={"snapshot": snap["id"]}), 201).json()
    fid = fork["id"]
    eq(sorted(_files(srv, fid)), ["v.txt"], "fork from a snapshot has the snapshot's files")
    eq(expect(srv.get_file(fid, "v.txt"), 200).body, b"one", "bytes as at the snapshot")
    srv.put_ok(fid, "v.txt", b"three")
    eq(expect(srv.get_file(src, "v.txt"), 200).body, b"two", "source untouched")
    eq(expect(srv.get_file(src, "v.txt", query={"snapshot": snap["id"]}), 200).body, b"one",
       "snapshot untouched")
    # the source can be deleted; the fork lives on
    expect(srv.delete("/v1/volumes/%s" % src), 200, 204)
    eq(expect(srv.get_file(fid, "v.txt"), 200).body, b"three", "fork after the source is gone")


def test_fork_bad(srv):
    src = srv.create_volume()["id"]
    expect_error(srv.post("/v1/volumes/%s/fork" % src, json={"snapshot": "nosuch"}), 404)
    other = srv.create_volume()["id"]
    osnap = srv.snapshot(other)
    expect_error(srv.post("/v1/volumes/%s/fork" % src, json={"snapshot": osnap["id"]}), 404)
    expect_error(srv.post("/v1/volumes/%s/fork" % src, json={"name": 5}), 400)
    expect_error(srv.post("/v1/volumes/%s/fork" % src, json={"bogus": True}), 400)
    expect_error(srv.post("/v1/volumes/nosuch/fork", json={}), 404)


def test_restore(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "keep.txt", b"keep")          # unchanged after the snapshot
    srv.put_ok(vid, "mod.txt", b"original")       # modified after
    srv.put_ok(vid, "del.txt", b"deleted after")  # deleted after
    snap = srv.snapshot(vid)
    srv.put_ok(vid, "mod.txt", b"modified")
    expect(srv.delete(srv.file_path(vid, "del.txt")), 200, 204)
    srv.put_ok(vid, "added.txt", b"added after")  # added after
    srv.put_ok(vid, "sub/added2.txt", b"x")
    before = srv.seq(vid)
    r = expect(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": snap["id"]}), 200).json()
    eq((r.get("snapshot"), r.get("seq"), r.get("written"), r.get("removed")),
       (snap["id"], before + 1, 2, 2), "restore answer (snapshot, seq, written, removed)")
    eq(srv.seq(vid), before + 1, "a restore is ONE change")
    eq(_files(srv, vid), _files(srv, vid, snapshot=snap["id"]), "files as at the snapshot")
    eq(expect(srv.get_file(vid, "mod.txt"), 200).body, b"original", "mod.txt restored")
    eq(expect(srv.get_file(vid, "del.txt"), 200).body, b"deleted after", "del.txt restored")
    expect_error(srv.get_file(vid, "added.txt"), 404)
    # the feed: one entry per file written or removed, all with the restore's seq
    ch = expect(srv.get("/v1/volumes/%s/changes" % vid, query={"since": before}), 200).json()
    eq(sorted((c["seq"], c["op"], c["path"]) for c in ch["changes"]),
       [(before + 1, "remove", "added.txt"), (before + 1, "remove", "sub/added2.txt"),
        (before + 1, "write", "del.txt"), (before + 1, "write", "mod.txt")],
       "changes of the restore")
    w = {c["path"]: c for c in ch["changes"]}["mod.txt"]
    eq(w["sha256"], sha256(b"original"), "sha256 in the restore's write entry")
    # the snapshot stays
    expect(srv.get("/v1/volumes/%s/snapshots/%s" % (vid, snap["id"])), 200)
    # restoring again changes nothing but is still a valid call
    r2 = expect(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": snap["id"]}), 200).json()
    eq((r2["written"], r2["removed"]), (0, 0), "restore of an identical state")


def test_restore_versions(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f.txt", b"1")
    snap = srv.snapshot(vid)
    srv.put_ok(vid, "f.txt", b"2")
    r = expect(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": snap["id"]}), 200).json()
    g = expect(srv.get_file(vid, "f.txt"), 200)
    eq(g.header("ETag"), '"%d"' % r["seq"], "a restored file's version is the restore's seq")
    # a conditional write against the restored version works
    expect(srv.put_file(vid, "f.txt", b"3", headers={"If-Match": '"%d"' % r["seq"]}), 200)


def test_restore_from_given_files_snapshot(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "old.txt", b"old")
    s = expect(srv.post("/v1/volumes/%s/snapshots" % vid,
                        json={"files": {"new.txt": "new content"}}), 201).json()
    r = expect(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": s["id"]}), 200).json()
    eq((r["written"], r["removed"]), (1, 1), "written, removed")
    eq(sorted(_files(srv, vid)), ["new.txt"], "files after restoring a given-files snapshot")


def test_restore_bad(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f", b"f")
    expect_error(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": "nosuch"}), 404)
    expect_error(srv.post("/v1/volumes/%s/restore" % vid, json={}), 400)
    expect_error(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": 7}), 400)
    other = srv.create_volume()["id"]
    osnap = srv.snapshot(other)
    expect_error(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": osnap["id"]}), 404)
    eq(srv.seq(vid), 1, "seq after refused restores")
