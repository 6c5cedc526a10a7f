"""Changes feed: since, prefix, long-poll wait (API.md Volumes > Files, changes)."""

import threading
import time

import harness
from harness import check, eq, expect, expect_error, sha256


def _changes(srv, vid, **q):
    return expect(srv.get("/v1/volumes/%s/changes" % vid, query=q, timeout=90), 200).json()


def test_changes_since(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"a1")          # seq 1
    srv.put_ok(vid, "b/c.txt", b"c")         # seq 2
    srv.put_ok(vid, "a.txt", b"a22")         # seq 3
    expect(srv.delete(srv.file_path(vid, "b/c.txt")), 200, 204)  # seq 4
    j = _changes(srv, vid, since=0)
    eq(j["seq"], 4, "feed seq")
    got = [(c["seq"], c["op"], c["path"]) for c in j["changes"]]
    eq(got, [(1, "write", "a.txt"), (2, "write", "b/c.txt"), (3, "write", "a.txt"),
             (4, "remove", "b/c.txt")], "changes since 0, oldest first")
    w = j["changes"][2]
    eq((w["version"], w["size"], w["sha256"]), (3, 3, sha256(b"a22")), "a write entry")
    j = _changes(srv, vid, since=2)
    eq([c["seq"] for c in j["changes"]], [3, 4], "changes since 2")
    j = _changes(srv, vid, since=4)
    eq((j["seq"], j["changes"]), (4, []), "nothing since the current seq")


def test_changes_prefix(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "docs/a.md", b"a")
    srv.put_ok(vid, "src/main.c", b"int main;")
    srv.put_ok(vid, "docs/b.md", b"b")
    j = _changes(srv, vid, since=0, prefix="docs/")
    eq([(c["seq"], c["path"]) for c in j["changes"]], [(1, "docs/a.md"), (3, "docs/b.md")],
       "changes under docs/")
    eq(j["seq"], 3, "feed seq is the volume's seq even when filtered")


def test_changes_move_is_one_seq(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "m/a", b"a")
    srv.put_ok(vid, "m/b", b"b")
    expect(srv.post("/v1/volumes/%s/move" % vid, json={"from": "m", "to": "n"}), 200)
    j = _changes(srv, vid, since=2)
    check(j["changes"], "a move shows in the feed")
    eq(sorted(set(c["seq"] for c in j["changes"])), [3], "every entry of the move has seq 3")
    ops = sorted((c["op"], c["path"]) for c in j["changes"])
    eq(ops, [("remove", "m/a"), ("remove", "m/b"), ("write", "n/a"), ("write", "n/b")],
       "a move reads as removes of the old paths and writes of the new")


def test_long_poll_returns_early_on_write(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "x", b"x")
    res = {}

    def poll():
        t0 = time.time()
        try:
            res["j"] = _changes(srv, vid, since=1, wait=60)
        except Exception as e:
            res["e"] = e
        res["t"] = time.time() - t0

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(1.0)
    check("t" not in res, "the poll should still be waiting after 1 s: %r" % res)
    srv.put_ok(vid, "y", b"yy")
    t.join(30 * harness.SCALE)
    check(not t.is_alive(), "the long poll did not return within 30 s of the write")
    if "e" in res:
        raise res["e"]
    check(res["t"] < 1.0 + 5 * harness.SCALE,
          "the long poll returned %.1fs after it started (the write came at 1 s)" % res["t"])
    eq([(c["seq"], c["path"]) for c in res["j"]["changes"]], [(2, "y")], "changes returned")


def test_long_poll_prefix_ignores_other_writes(srv):
    vid = srv.create_volume()["id"]
    res = {}

    def poll():
        t0 = time.time()
        res["j"] = _changes(srv, vid, since=0, wait=10, prefix="watched/")
        res["t"] = time.time() - t0

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.5)
    srv.put_ok(vid, "elsewhere/a", b"a")
    time.sleep(1.0)
    srv.put_ok(vid, "watched/b", b"b")
    t.join(30 * harness.SCALE)
    check(not t.is_alive(), "the long poll did not return")
    eq([(c["seq"], c["path"]) for c in res["j"]["changes"]], [(2, "watched/b")],
       "a prefixed long poll returns the write under its prefix")
    check(res["t"] >= 1.3, "the poll should not return on a write outside its prefix "
          "(returned after %.1fs)" % res["t"])


def test_long_poll_times_out_empty(srv):
    vid = srv.create_volume()["id"]
    t0 = time.time()
    j = _changes(srv, vid, since=0, wait=1)
    dt = time.time() - t0
    eq(j["changes"], [], "no changes")
    check(0.8 <= dt < 1 + 5 * harness.SCALE, "wait=1 waited %.2fs" % dt)


def test_wait_over_60_refused(srv):
    vid = srv.create_volume()["id"]
    expect_error(srv.get("/v1/volumes/%s/changes" % vid, query={"since": 0, "wait": 61}), 400,
                 mentions="60")
    expect_error(srv.get("/v1/volumes/%s/changes" % vid, query={"since": 0, "wait": -1}), 400)
    expect_error(srv.get("/v1/volumes/%s/changes" % vid, query={"since": 0, "wait": "x"}), 400)
    expect_error(srv.get("/v1/volumes/%s/changes" % vid, query={"since": "abc"}), 400)
    expect_error(srv.get("/v1/volumes/%s/changes" % vid, query={"since": "-1"}), 400)
    expect_error(srv.get("/v1/volumes/nosuch/changes", query={"since": 0}), 404)


def test_many_long_polls_woken_by_one_write(srv):
    vid = srv.create_volume()["id"]
    n = 24
    res = [None] * n

    def poll(i):
        t0 = time.time()
        try:
            j = _changes(srv, vid, since=0, wait=30)
            res[i] = (time.time() - t0, [c["path"] for c in j["changes"]])
        except Exception as e:
            res[i] = (time.time() - t0, repr(e))

    ts = [threading.Thread(target=poll, args=(i,), daemon=True) for i in range(n)]
    for t in ts:
        t.start()
    time.sleep(1.0)
    srv.put_ok(vid, "wake.txt", b"wake")
    for t in ts:
        t.join(40 * harness.SCALE)
    for i, r in enumerate(res):
        check(r is not None, "poller %d never returned" % i)
        eq(r[1], ["wake.txt"], "poller %d's changes" % i)
        check(r[0] < 1.0 + 5 * harness.SCALE, "poller %d returned after %.1fs" % (i, r[0]))


def test_since_older_than_history_410():
    """With a 1 s history window and a 1 s background sweep, changes older than the
    window are dropped; a `since` before them is 410 with `oldest`, and following from
    `oldest` works."""
    s = harness.Server(args=["--history", "1", "--gc-interval", "1", "--gc-grace", "1"])
    try:
        vid = s.create_volume("hist")["id"]
        s.put_ok(vid, "a.txt", b"1")     # seq 1
        s.put_ok(vid, "b.txt", b"2")     # seq 2
        deadline = time.time() + 15 * harness.SCALE
        while True:
            r = s.get("/v1/volumes/%s/changes" % vid, query={"since": 0})
            # both changes aged out (on a loaded machine the two writes may be more than
            # the 1 s window apart, and a sweep between them drops only the first)
            if r.status == 410 and (r.error or {}).get("oldest") == 2:
                break
            check(time.time() < deadline, "since=0 still answered %d (%r) after the "
                  "history window and several sweeps" % (r.status, r.error))
            time.sleep(0.5)
        err = expect_error(r, 410, "gone")
        eq(err.get("oldest"), 2, "oldest seq still answered")
        s.put_ok(vid, "c.txt", b"3")     # seq 3
        j = _changes(s, vid, since=err["oldest"])
        eq([(c["seq"], c["path"]) for c in j["changes"]], [(3, "c.txt")],
           "following from oldest")
    finally:
        s.stop()
