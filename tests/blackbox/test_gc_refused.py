"""Issue 36 item 3: every writer lands its bytes through one write path
(src/volume/land.c), which abandons the pending mark of content it stored when
the change is refused or leaves that content unnamed (a conflict), so the
collector takes those bytes as it takes a cut-off upload's. Each caller kind
reachable from outside is refused here with content too big to be inline, then
`coffer gc --grace 1` must remove exactly those bytes. On PostgreSQL a mark left
behind keeps them for ten minutes (COF_GC_PENDING_SECONDS): before the one
write path, a call's commit and a mount's close left it."""

import os

import harness
from harness import check, contains, eq, expect, sha256
from test_gc import BIG, gc_until
from test_view import Mount, _call_racing_puts, _fuse_ok, new_turn
from turnlib import new_id, ok

SERVER_OPTS = {"gc_grace": 1}
TIMEOUT = 120


def collected(srv, shas, who):
    """GC passes until no blob of `shas` is stored (and there was one to begin with
    for each: the test refused content that was really stored)."""
    def left():
        return [h for h in shas if os.path.exists(srv.blob_file(h))]
    eq(left(), shas, "the refused content was stored (else nothing is tested)")
    gc_until(srv, lambda: not left(),
             "bytes of a write refused by %s are still stored: %s" % (who, left()))


def test_refused_put_releases_its_mark(srv):
    # (a PUT past the ceiling is refused before its bytes are stored: test_gc)
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.bin", b"x")
    d1, d2 = os.urandom(BIG), os.urandom(BIG)
    expect(srv.put_file(vid, "a.bin", d1, headers={"If-Match": '"999"'}), 412)
    expect(srv.put_file(vid, "a.bin/under", d2), 409)  # a file under a file
    collected(srv, [sha256(d1), sha256(d2)], "PUT")


def test_refused_subject_write_releases_its_mark(srv):
    import base64
    aid = new_id("ga")
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    base = "/v1/agents/%s/users/u1/files/content" % aid
    expect(srv.put(base, json={"path": "f", "content": "a file"}), 200, 201)
    data = os.urandom(BIG)
    r = srv.put(base, json={"path": "f/under", "encoding": "base64",
                            "content": base64.b64encode(data).decode()})
    eq(r.status, 409, "a file under a file: %s" % r.body[:300])
    collected(srv, [sha256(data)], "a subject's file write")


def _small_volume_agent(srv):
    vid = expect(srv.post("/v1/volumes", json={"name": new_id("gc"), "ceiling": 1 << 20}),
                 201).json()["id"]
    srv.put_ok(vid, "fill.bin", os.urandom(900 * 1024))
    aid = new_id("ga")
    expect(srv.put("/v1/agents/%s" % aid, json={"mounts": [
        {"volumeId": vid, "path": "/small", "mode": "rw"}]}), 201)
    return vid, aid


def test_call_commit_past_the_ceiling_releases_its_mark(srv):
    """The layer alone fits the ceiling (so it is stored), the volume with it does
    not: the change refuses it."""
    _fuse_ok(srv)
    vid, aid = _small_volume_agent(srv)
    seq0 = srv.seq(vid)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "head -c %d /dev/urandom > /small/big.bin; "
             "sha256sum /small/big.bin" % BIG)
    h = out["stdout"].split()[0]
    eq(out["committed"], [], "nothing committed")
    check(any("ceiling" in n for n in out["notes"]), "a note names the ceiling: %r" %
          out["notes"])
    eq(srv.seq(vid), seq0, "the volume's seq")
    collected(srv, [h], "a call's commit (ceiling)")


def test_call_commit_conflict_releases_its_mark(srv):
    """A file of the call that conflicts is not named by the change that lands the
    rest: its content's mark goes too."""
    _fuse_ok(srv)
    aid = new_id("ga")
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    ws = expect(srv.get("/v1/agents/%s" % aid), 200).json()["workspaceVolumeId"]
    srv.put_ok(ws, "shared.bin", b"before")
    t = new_turn(srv, aid)
    out = _call_racing_puts(srv, t["id"], "sleep 2; head -c %d /dev/urandom > "
                            "/workspace/shared.bin; sha256sum /workspace/shared.bin; "
                            "echo ok > /workspace/other.md" % BIG, ws,
                            {"shared.bin": b"theirs"})
    h = out["stdout"].split()[0]
    eq([c["path"] for c in out.get("conflicts", [])], ["/workspace/shared.bin"], "conflicts")
    eq(srv.get_file(ws, "other.md").body, b"ok\n", "the rest landed")
    collected(srv, [h], "a call's commit (conflict)")


def test_mount_close_conflict_releases_its_mark(srv):
    """`coffer mount` lands a file as it is closed (cof_view_land_local): a close
    that lost to another writer leaves no mark."""
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "notes.bin", b"draft")
    m = Mount(srv, vid)
    data = os.urandom(BIG)
    try:
        f = open(m.path("notes.bin"), "r+b")
        srv.put_ok(vid, "notes.bin", b"the other side")
        f.write(data)
        try:
            f.close()
            raise AssertionError("a conflicting close succeeded")
        except OSError as e:
            eq(e.errno, 5, "errno of a conflicting close (EIO)")
    finally:
        err = m.end()
    contains(err, "the change to 'notes.bin' is dropped", "stderr")
    eq(srv.get_file(vid, "notes.bin").body, b"the other side", "the other side's bytes")
    collected(srv, [sha256(data)], "a mount's close")


def test_zz_no_fuse_mount_left(srv):
    # what a call mounts ends with it, or (a kept view) with its turn
    import test_view
    for tid in test_view.TURNS:
        srv.delete("/v1/turns/%s" % tid)
    with open("/proc/self/mounts") as f:
        left = [l for l in f if " fuse.coffer " in l and srv.data in l]
    eq(left, [], "views left mounted")
