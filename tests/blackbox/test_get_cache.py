"""The rows an event loop keeps between GETs (src/store/meta_sqlite_cache.c): a key,
a volume and a file read again and again from kept-alive connections on every loop
are still seen changed on the very next request after a commit, whether the commit
is cofferd's own or another process's (a plain sqlite3 connection to DATA/meta.db,
as `coffer gc` or a `--data` command would be). Embedded store only: on the
PostgreSQL pass nothing is kept."""
import http.client
import os
import sqlite3
import time

import harness
from harness import check, eq, expect

CONNS = 8            # kept-alive connections: MHD spreads them over both loops
WARM = 6             # GETs on each before the change


def _conns(srv):
    return [http.client.HTTPConnection(srv.host, srv.port, timeout=30 * harness.SCALE)
            for _ in range(CONNS)]


def _get(c, path, key):
    c.request("GET", path, headers={"Authorization": "Bearer " + key})
    r = c.getresponse()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()


def _warm(conns, path, key, body):
    for _ in range(WARM):
        for c in conns:
            st, _, b = _get(c, path, key)
            eq(st, 200, "warm-up GET of %s" % path)
            eq(b, body, "warm-up body")


def _sql(srv, sql, args):
    """Runs one write on DATA/meta.db from this (another) process; rows it changed."""
    db = sqlite3.connect(os.path.join(srv.data, "meta.db"), timeout=30)
    try:
        n = db.execute(sql, args).rowcount
        db.commit()
    finally:
        db.close()
    return n


def _setup(srv, name, sql=True):
    if sql and harness.ENGINE != "embedded":
        harness.skip("writes DATA/meta.db itself: the embedded store only")
    org = "gc-%d-%s" % (os.getpid(), name)
    k = expect(srv.post("/v1/keys", json={"org": org}), 201).json()
    vid = expect(srv.post("/v1/volumes", json={"name": name}, key=k["key"]), 201).json()["id"]
    body = os.urandom(4096)
    expect(srv.put(srv.file_path(vid, "f.bin"), body=body, key=k["key"]), 200, 201)
    return k, vid, srv.file_path(vid, "f.bin"), body


def test_a_key_revoked_by_another_process_fails_on_the_next_get(srv):
    k, _, path, body = _setup(srv, "rk")
    conns = _conns(srv)
    _warm(conns, path, k["key"], body)
    eq(_sql(srv, "UPDATE keys SET revoked_at = ? WHERE id = ?", (int(time.time()), k["id"])),
       1, "rows revoked")
    for i, c in enumerate(conns):
        st, _, b = _get(c, path, k["key"])
        eq(st, 401, "GET on kept connection %d after the revocation (body %r)" % (i, b[:200]))
        check(b"revoked" in b, "the answer says revoked: %r" % b[:200])


def test_a_volume_and_a_file_changed_by_another_process_show_on_the_next_get(srv):
    k, vid, path, body = _setup(srv, "vf")
    conns = _conns(srv)
    _warm(conns, path, k["key"], body)
    # the file's row: its media type, kept with the row, changes
    n = _sql(srv, "UPDATE entries SET ctype = 'text/plain' WHERE path = 'f.bin' AND"
             " to_seq IS NULL AND vno = (SELECT vno FROM volumes WHERE id = ?)", (vid,))
    eq(n, 1, "entry rows changed")
    for i, c in enumerate(conns):
        st, h, _ = _get(c, path, k["key"])
        eq(st, 200, "GET on kept connection %d" % i)
        check(h.get("content-type", "").startswith("text/plain"),
              "connection %d sees the new media type: %r" % (i, h.get("content-type")))
    # the volume's row: hidden volumes answer as absent ones
    eq(_sql(srv, "UPDATE volumes SET hidden = 1 WHERE id = ?", (vid,)), 1, "volume rows")
    for i, c in enumerate(conns):
        st, _, b = _get(c, path, k["key"])
        eq(st, 404, "GET on kept connection %d after the volume went (body %r)" % (i, b[:200]))


def test_a_new_version_put_over_http_shows_on_every_loop_at_once(srv):
    k, vid, path, body = _setup(srv, "nv", sql=False)
    conns = _conns(srv)
    _warm(conns, path, k["key"], body)
    for round_ in range(3):
        new = os.urandom(1000 + round_)
        expect(srv.put(path, body=new, key=k["key"]), 200, 201)
        for i, c in enumerate(conns):
            st, h, b = _get(c, path, k["key"])
            eq(st, 200, "GET on kept connection %d" % i)
            eq(b, new, "connection %d, round %d: the new version" % (i, round_))
        body = new
    expect(srv.delete(path, key=k["key"]), 200, 204)
    for i, c in enumerate(conns):
        st, _, _ = _get(c, path, k["key"])
        eq(st, 404, "GET on kept connection %d after the delete" % i)
