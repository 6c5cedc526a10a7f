"""A dataset from before copy-on-write forks upgrades in place: the metadata is taken back
to the schema of main d73bcf9 (SQLite user_version 1, PostgreSQL schema_version 2: the
volumes table without base_vno, base_seq, depth, retired and its index; and without what
the same round added beside forks: the keys' lifecycle columns, the state and events
tables, and the state table's index of live records, schema 3), with a volume
and a fork made the old way (rows copied), and a cofferd of this tree then opens it,
serves it unchanged and forks it the new way."""

import os
import sqlite3

import harness
import pgpeer
from harness import eq, expect, expect_error

NEW_COLUMNS = ("base_vno", "base_seq", "depth", "retired")
# added in the same round as forks (stored state; the key lifecycle)
NEW_TABLES = ("state", "events")
NEW_KEY_INDEXES = ("keys_id", "keys_org")
NEW_KEY_COLUMNS = ("id", "name", "read_only", "expires_at", "revoked_at", "last_used_at")


def _downgrade_sqlite(data):
    db = sqlite3.connect(os.path.join(data, "meta.db"))
    db.execute("DROP INDEX IF EXISTS volumes_base")
    for c in NEW_COLUMNS:
        db.execute("ALTER TABLE volumes DROP COLUMN %s" % c)
    for t in NEW_TABLES:
        db.execute("DROP TABLE IF EXISTS %s" % t)
    for i in NEW_KEY_INDEXES:
        db.execute("DROP INDEX IF EXISTS %s" % i)
    for c in NEW_KEY_COLUMNS:
        db.execute("ALTER TABLE keys DROP COLUMN %s" % c)
    db.execute("PRAGMA user_version = 1")
    db.commit()
    cols = [r[1] for r in db.execute("PRAGMA table_info(volumes)")]
    db.close()
    return cols


def _downgrade_pg(url):
    db = url.rsplit("/", 1)[1].split("?")[0]
    peer = pgpeer.shared()
    peer.psql("DROP INDEX IF EXISTS volumes_base; ALTER TABLE volumes " +
              ", ".join("DROP COLUMN %s" % c for c in NEW_COLUMNS) + "; " +
              "".join("DROP TABLE IF EXISTS %s; " % t for t in NEW_TABLES) +
              "".join("DROP INDEX IF EXISTS %s; " % i for i in NEW_KEY_INDEXES) +
              "ALTER TABLE keys " + ", ".join("DROP COLUMN %s" % c for c in NEW_KEY_COLUMNS) +
              "; UPDATE schema_version SET version = 2", db=db)
    out = peer.psql("SELECT column_name FROM information_schema.columns WHERE "
                    "table_name = 'volumes'", db=db).stdout.decode().split()
    return out


def _copy_fork(s, src, dst):
    """A fork as main made it: a volume holding copies of the source's files."""
    for f in s.list_files(src)["files"]:
        s.put_ok(dst, f["path"], expect(s.get_file(src, f["path"]), 200).body)


def test_old_dataset_upgrades_in_place():
    with harness.Server() as s:
        vid = s.create_volume("old")["id"]
        for i in range(30):
            s.put_ok(vid, "d/%02d.txt" % i, b"old file %d" % i)
        snap = s.snapshot(vid)
        s.put_ok(vid, "d/00.txt", b"rewritten")
        old_fork = s.create_volume("old fork")["id"]
        _copy_fork(s, vid, old_fork)
        before = {v: s.list_files(v)["files"] for v in (vid, old_fork)}
        meta_url = s.meta_url
        s.stop()
        cols = _downgrade_pg(meta_url) if meta_url else _downgrade_sqlite(s.data)
        for c in NEW_COLUMNS:
            eq(c in cols, False, "the downgraded volumes table has no %s" % c)
        s.start()
        for v in (vid, old_fork):
            eq(s.list_files(v)["files"], before[v], "files after the upgrade")
        eq(expect(s.get_file(vid, "d/00.txt", query={"snapshot": snap["id"]}), 200).body,
           b"old file 0", "a snapshot after the upgrade")
        f = expect(s.post("/v1/volumes/%s/fork" % vid, json={}), 201).json()
        eq(s.list_files(f["id"])["files"], before[vid], "a new fork of an upgraded volume")
        expect(s.delete(s.file_path(f["id"], "d/01.txt")), 200, 204)
        expect_error(s.get_file(f["id"], "d/01.txt"), 404)
        eq(expect(s.get_file(vid, "d/01.txt"), 200).body, b"old file 1", "the parent keeps it")
        # and it opens again (the migration ran once and is recorded)
        s.restart()
        eq(len(s.list_files(f["id"])["files"]), 29, "the new fork after a restart")
