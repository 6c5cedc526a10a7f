"""Conditional writes: If-Match, ?version=N, If-None-Match: *, ?version=0; 412 with
current {version, sha256}; atomic under 16 racing writers."""

import threading

from harness import check, eq, expect, expect_error, sha256


def _current(err, version, data):
    cur = err.get("current")
    check(isinstance(cur, dict), "412 error carries current: {version, sha256}: %r" % err)
    eq({"version": cur.get("version"), "sha256": cur.get("sha256")},
       {"version": version, "sha256": sha256(data)}, "error.current")


def test_if_match(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f.txt", b"v1")
    srv.put_ok(vid, "other.txt", b"o")
    e = expect_error(srv.put_file(vid, "f.txt", b"nope", headers={"If-Match": '"2"'}), 412,
                     "precondition_failed")
    _current(e, 1, b"v1")
    eq(srv.seq(vid), 2, "seq after a 412")
    eq(expect(srv.get_file(vid, "f.txt"), 200).body, b"v1", "bytes after a 412")
    r = expect(srv.put_file(vid, "f.txt", b"v3", headers={"If-Match": '"1"'}), 200).json()
    eq((r["version"], r["seq"]), (3, 3), "conditional write that holds")
    # the ETag as served is a valid If-Match value
    etag = expect(srv.get_file(vid, "f.txt"), 200).header("ETag")
    expect(srv.put_file(vid, "f.txt", b"v4", headers={"If-Match": etag}), 200)


def test_version_query(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f.txt", b"v1")
    srv.put_ok(vid, "f.txt", b"v2")
    e = expect_error(srv.put_file(vid, "f.txt", b"x", query={"version": 1}), 412)
    _current(e, 2, b"v2")
    eq(srv.seq(vid), 2, "seq after a 412")
    r = expect(srv.put_file(vid, "f.txt", b"v3", query={"version": 2}), 200).json()
    eq(r["version"], 3, "version")


def test_if_none_match_star(srv):
    vid = srv.create_volume()["id"]
    r = expect(srv.put_file(vid, "new.txt", b"first", headers={"If-None-Match": "*"}), 201).json()
    eq(r["version"], 1, "version")
    e = expect_error(srv.put_file(vid, "new.txt", b"second", headers={"If-None-Match": "*"}), 412)
    _current(e, 1, b"first")
    eq(srv.seq(vid), 1, "seq after a 412")
    eq(expect(srv.get_file(vid, "new.txt"), 200).body, b"first", "bytes kept")


def test_version_zero(srv):
    vid = srv.create_volume()["id"]
    expect(srv.put_file(vid, "z.txt", b"first", query={"version": 0}), 201)
    e = expect_error(srv.put_file(vid, "z.txt", b"again", query={"version": 0}), 412)
    _current(e, 1, b"first")
    eq(srv.seq(vid), 1, "seq")


def test_if_match_on_absent_file(srv):
    vid = srv.create_volume()["id"]
    expect_error(srv.put_file(vid, "ghost.txt", b"x", headers={"If-Match": '"1"'}), 412)
    expect_error(srv.put_file(vid, "ghost.txt", b"x", query={"version": 3}), 412)
    eq(srv.seq(vid), 0, "seq")
    expect_error(srv.get_file(vid, "ghost.txt"), 404)


def test_condition_after_delete(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "d.txt", b"d")
    expect(srv.delete(srv.file_path(vid, "d.txt")), 200, 204)
    # gone again: must-not-exist holds, the old version does not
    expect_error(srv.put_file(vid, "d.txt", b"x", headers={"If-Match": '"1"'}), 412)
    expect(srv.put_file(vid, "d.txt", b"x", headers={"If-None-Match": "*"}), 201)


def test_bad_precondition(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f.txt", b"v1")
    for h in ({"If-Match": "garbage"}, {"If-Match": '"1'}):
        expect_error(srv.put_file(vid, "f.txt", b"x", headers=h), 400)
    for q in ({"version": "abc"}, {"version": "-1"}, {"version": "1.5"}):
        expect_error(srv.put_file(vid, "f.txt", b"x", query=q), 400)
    eq(srv.seq(vid), 1, "seq after malformed preconditions")


def _race(srv, vid, path, kw, n=16):
    barrier = threading.Barrier(n)
    statuses = [None] * n
    bodies = [None] * n

    def writer(i):
        data = ("writer %d" % i).encode()
        try:
            barrier.wait(30)
            r = srv.put_file(vid, path, data, **kw)
            statuses[i] = r.status
            bodies[i] = r
        except Exception as e:  # reported below
            statuses[i] = repr(e)

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return statuses, bodies


def test_race_if_match(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "race.txt", b"base")
    statuses, bodies = _race(srv, vid, "race.txt", {"headers": {"If-Match": '"1"'}})
    ok = [i for i, s in enumerate(statuses) if s in (200, 201)]
    eq(len(ok), 1, "number of 2xx among 16 racing If-Match writers (statuses %s)" % statuses)
    eq(sorted(statuses).count(412), 15, "412s among 16 racing writers (statuses %s)" % statuses)
    winner = ("writer %d" % ok[0]).encode()
    eq(expect(srv.get_file(vid, "race.txt"), 200).body, winner, "the winner's bytes")
    eq(srv.seq(vid), 2, "exactly one change")
    for i, r in enumerate(bodies):
        if r is not None and r.status == 412:
            cur = (r.error or {}).get("current") or {}
            check(cur.get("version") in (1, 2), "loser's current.version: %r" % cur)


def test_race_if_none_match(srv):
    vid = srv.create_volume()["id"]
    statuses, _ = _race(srv, vid, "fresh.txt", {"headers": {"If-None-Match": "*"}})
    eq(sorted(statuses, key=str), [201] + [412] * 15,
       "statuses of 16 racing If-None-Match writers")
    eq(srv.seq(vid), 1, "exactly one change")


def test_race_version_query(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "q.txt", b"base")
    srv.put_ok(vid, "q.txt", b"base2")
    statuses, _ = _race(srv, vid, "q.txt", {"query": {"version": 2}})
    eq(sorted(statuses, key=str), [200] + [412] * 15,
       "statuses of 16 racing ?version=2 writers")
    eq(srv.seq(vid), 3, "exactly one change")
