"""A volume with more than 1,024 files-snapshots: deleting it drops every hidden volume
of those snapshots (a fixed array of 1,024 once left the rest behind, with their rows
and the content they held), and gc then collects the content."""

import os
import sqlite3
import subprocess
import time

import harness
from harness import check, eq, expect

TIMEOUT = 240
N = 1100


TABLES = ("volumes", "entries", "changes", "snapshots", "blobs")


def _counts(srv):
    """Rows left in the metadata (read with the server stopped): meta.db, or the
    server's PostgreSQL database on the pg pass."""
    if srv.meta_url:
        import pgpeer
        db = srv.meta_url.rsplit("/", 1)[1]
        return {t: int(pgpeer.shared().psql("SELECT count(*) FROM %s" % t, db=db).stdout)
                for t in TABLES}
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(srv.data, "meta.db"), uri=True)
    try:
        return {t: db.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
                for t in TABLES}
    finally:
        db.close()


def test_volume_delete_drops_every_hidden_volume():
    with harness.server(gc_grace=1, args=["--gc-interval", "0"]) as srv:
        vid = srv.create_volume()["id"]
        for i in range(N):  # each of one small file of its own (inline content)
            expect(srv.post("/v1/volumes/%s/snapshots" % vid,
                            json={"files": {"one.txt": "snapshot %d" % i},
                                  "pinned": True}), 201)
        eq(srv.stop(), 0, "cofferd exit code")
        before = _counts(srv)
        eq(before["volumes"], N + 1, "the volume and one hidden volume per files-snapshot")
        eq(before["snapshots"], N, "snapshot rows")
        eq(before["blobs"], N, "the snapshots' contents")
        srv.start()
        expect(srv.delete("/v1/volumes/" + vid), 204)
        eq(srv.stop(), 0, "cofferd exit code")
        left = _counts(srv)
        del left["blobs"]  # collected by gc below
        eq(left, {"volumes": 0, "entries": 0, "changes": 0, "snapshots": 0},
           "rows left after deleting a volume with %d files-snapshots" % N)
        time.sleep(2.1)  # past the 1 s grace (times are whole seconds)
        exe = harness.coffer_binary()
        if not exe:
            harness.skip("build/coffer is needed to run gc over the data dir")
        p = subprocess.run([exe, "gc", "--data", srv.data, "--grace", "1"],
                           capture_output=True, timeout=60 * harness.SCALE)
        eq(p.returncode, 0, "coffer gc exit code: %r" % p.stderr)
        eq(_counts(srv)["blobs"], 0, "contents left after gc")
        srv.start()
