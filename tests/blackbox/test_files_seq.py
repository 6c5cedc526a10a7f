"""Reads at a seq (`?seq=N`, docs/api.md "Reads at a seq"): GET/HEAD of a file and the
listing as the volume was at seq N; the edges (0, current, current+1, negative, junk),
with `snapshot` (400), on a fork (its parent's rows up to the fork seq), and after the
collector may have dropped the history (410 `gone` with `oldest`)."""
import subprocess
import time

import harness
from harness import check, eq, expect, expect_error

SERVER_OPTS = {"gc_grace": 1}


def history(srv):
    """A volume: a.txt v1 (seq 1), a.txt v2 (seq 2), b.txt (seq 3), a.txt removed (4)."""
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"one")
    srv.put_ok(vid, "a.txt", b"two")
    srv.put_ok(vid, "d/b.txt", b"bee")
    expect(srv.delete(srv.file_path(vid, "a.txt")), 200)
    eq(srv.seq(vid), 4, "seq after four changes")
    return vid


def body_at(srv, vid, path, seq):
    return srv.get(srv.file_path(vid, path), query={"seq": str(seq)})


def names(srv, vid, **query):
    out = expect(srv.get("/v1/volumes/%s/files" % vid, query=query), 200).json()
    return out["seq"], [(f["path"], f["version"]) for f in out["files"]]


def test_file_at_each_seq(srv):
    vid = history(srv)
    expect(body_at(srv, vid, "a.txt", 0), 404)
    r = expect(body_at(srv, vid, "a.txt", 1), 200)
    eq(r.body, b"one", "a.txt at seq 1")
    eq(r.header("ETag"), '"1"', "ETag at seq 1")
    eq(r.header("X-Volume-Seq"), "1", "X-Volume-Seq is the seq asked")
    eq(expect(body_at(srv, vid, "a.txt", 2), 200).body, b"two", "a.txt at seq 2")
    expect(body_at(srv, vid, "a.txt", 4), 404)  # current: removed
    eq(expect(body_at(srv, vid, "d/b.txt", 4), 200).body, b"bee", "b at the current seq")
    r = expect(srv.head(srv.file_path(vid, "a.txt"), query={"seq": "1"}), 200)
    eq(r.header("Content-Length"), "3", "HEAD at seq 1: the size of v1")
    r = expect(srv.get(srv.file_path(vid, "a.txt"), query={"seq": "2"},
                       headers={"Range": "bytes=1-"}), 206)
    eq(r.body, b"wo", "a range at seq 2")


def test_refusals(srv):
    vid = history(srv)
    snap = srv.snapshot(vid)["id"]
    for bad in ("5", "-1", "abc", "1.5", ""):
        e = expect_error(body_at(srv, vid, "d/b.txt", bad), 400)
        check("seq" in e["message"], "the refusal of seq=%r names 'seq': %s" % (
            bad, e["message"]))
        e = expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"seq": bad}), 400,
                         )
        check("seq" in e["message"], "listing: seq=%r names 'seq'" % bad)
    e = expect_error(srv.get(srv.file_path(vid, "d/b.txt"), query={"seq": "3",
                                                                    "snapshot": snap}),
                     400)
    check("snapshot" in e["message"], "seq with snapshot: %s" % e["message"])
    expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"seq": "3", "snapshot": snap}),
                 400)


def test_listing_at_each_seq(srv):
    vid = history(srv)
    eq(names(srv, vid, seq="0"), (0, []), "listing at seq 0")
    eq(names(srv, vid, seq="1"), (1, [("a.txt", 1)]), "listing at seq 1")
    eq(names(srv, vid, seq="3"), (3, [("a.txt", 2), ("d/b.txt", 3)]), "listing at seq 3")
    eq(names(srv, vid, seq="4"), (4, [("d/b.txt", 3)]), "listing at the current seq")
    eq(names(srv, vid, seq="3", prefix="d/"), (3, [("d/b.txt", 3)]), "prefix at seq 3")
    # pages at a seq: the cursor goes on at the same seq
    first = expect(srv.get("/v1/volumes/%s/files" % vid,
                           query={"seq": "3", "limit": "1"}), 200).json()
    eq([f["path"] for f in first["files"]], ["a.txt"], "first page")
    srv.put_ok(vid, "c.txt", b"later")
    second = expect(srv.get("/v1/volumes/%s/files" % vid, query={
        "seq": "3", "limit": "1", "cursor": first["cursor"]}), 200).json()
    eq([f["path"] for f in second["files"]], ["d/b.txt"], "second page at seq 3")
    check("cursor" not in second, "no page after the last one at seq 3")


def test_fork_reads_its_parent_up_to_the_fork_seq(srv):
    src = srv.create_volume()["id"]
    srv.put_ok(src, "x.txt", b"x1")                  # parent seq 1
    srv.put_ok(src, "x.txt", b"x2")                  # parent seq 2
    f = expect(srv.post("/v1/volumes/%s/fork" % src, json={}), 201).json()
    fid, base = f["id"], f["seq"]
    eq(base, 2, "the fork's seq starts at its parent's")
    srv.put_ok(src, "x.txt", b"x3")                  # the parent moves on
    srv.put_ok(fid, "y.txt", b"why")                 # the fork's own seq 3
    eq(expect(body_at(srv, fid, "x.txt", base), 200).body, b"x2", "inherited at the fork seq")
    expect(body_at(srv, fid, "y.txt", base), 404)
    # a fork's history starts at its fork seq, as its changes feed does
    e = expect_error(body_at(srv, fid, "x.txt", 1), 410)
    eq(e.get("oldest"), base, "a fork's oldest seq is its fork seq")
    eq(expect(body_at(srv, fid, "y.txt", 3), 200).body, b"why", "the fork's own write")
    eq(expect(body_at(srv, fid, "x.txt", 3), 200).body, b"x2",
       "the parent's later write is not the fork's")
    eq(names(srv, fid, seq=str(base)), (base, [("x.txt", 2)]), "fork listing at the fork seq")
    eq(names(srv, fid, seq="3"), (3, [("x.txt", 2), ("y.txt", 3)]), "fork listing now")


def run_gc(srv):
    exe = harness.coffer_binary()
    if not exe:
        return
    p = subprocess.run([exe, "gc", "--data", srv.data, "--grace", "1"],
                               capture_output=True, timeout=60 * harness.SCALE)
    eq(p.returncode, 0, "coffer gc exit status")


def test_gone_after_the_grace(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"one")                 # seq 1
    srv.put_ok(vid, "a.txt", b"two")                 # seq 2: closes v1
    time.sleep(2.2)                                  # past the 1 s grace (whole seconds)
    run_gc(srv)
    srv.put_ok(vid, "a.txt", b"three")               # seq 3, recent: closes v2
    e = expect_error(body_at(srv, vid, "a.txt", 1), 410)
    eq(e.get("oldest"), 2, "oldest seq still read")
    expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"seq": "0"}), 410)
    eq(expect(body_at(srv, vid, "a.txt", 2), 200).body, b"two",
       "seq 2: every change after it is younger than the grace")
    eq(names(srv, vid, seq="2"), (2, [("a.txt", 2)]), "listing at the oldest seq")
    eq(expect(body_at(srv, vid, "a.txt", 3), 200).body, b"three", "current seq")
