"""One schema (src/store/schema.c, docs/design.md "The SQL seam"): a new store and one
upgraded in place from the oldest schema this suite can make have the same tables,
columns and indexes, on the engine of the pass. The oldest: SQLite user_version 1 and
PostgreSQL schema_version 2 (as test_fork_upgrade makes them: a new store with what
came since taken away), and on SQLite also version 6 (the feed's indexes on
json_extract, no claim columns, run_items without its id). The new SQLite and
PostgreSQL schemas' names are compared by the unit test test_meta_schema."""

import os
import sqlite3

import harness
import pgpeer
from harness import eq, expect

# What came after the oldest schema, on both engines (the columns of a table are
# taken away after its indexes).
LATER_TABLES = ("state", "events", "webhooks", "hook_deliveries")
LATER_INDEXES = ("volumes_base", "keys_id", "keys_org", "changes_path", "changes_run",
                 "changes_call")
LATER_COLUMNS = {
    "volumes": ("base_vno", "base_seq", "depth", "retired"),
    "keys": ("id", "name", "read_only", "expires_at", "revoked_at", "last_used_at"),
    "changes": ("who", "s3meta"),
    "entries": ("s3meta",),
}
# SQLite's schema 7: PostgreSQL's claim columns, run_items' id, changes_at
SQLITE_7_COLUMNS = {"blobs": ("pending_at", "claimed_at")}
RUN_ITEMS_6 = ("CREATE TABLE run_items_6(org text NOT NULL, agent text NOT NULL, run text"
               " NOT NULL, kind text NOT NULL, path text NOT NULL, version INTEGER NOT NULL,"
               " size INTEGER NOT NULL, ctype text NOT NULL, caption text NOT NULL, url text"
               " NOT NULL, UNIQUE(org, agent, run, kind, path))")
RUN_ITEM_COLS = "org, agent, run, kind, path, version, size, ctype, caption, url"


def _sqlite_schema(path):
    """{table: columns}, {index: (table, unique, partial, key columns, its text)}: the
    store's."""
    db = sqlite3.connect(path)
    tables = {t: [r[1] for r in db.execute("PRAGMA table_info(%s)" % t)]
              for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                     " AND name NOT LIKE 'sqlite!_%' ESCAPE '!'")}
    sql = {n: " ".join((q or "").replace("IF NOT EXISTS ", "").split())
           for n, q in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'")}
    indexes = {}
    for t in tables:
        for r in db.execute("PRAGMA index_list(%s)" % t):
            name = r[1]
            if name.startswith("sqlite_autoindex_"):
                continue
            keys = [(x[1], x[2]) for x in db.execute("PRAGMA index_xinfo(%s)" % name) if x[5]]
            indexes[name] = (t, r[2], r[4], keys, sql[name])
    db.close()
    return tables, indexes


def _pg_schema(url):
    peer = pgpeer.shared()
    db = url.rsplit("/", 1)[1].split("?")[0]
    tables = {}
    for line in peer.psql("SELECT table_name, column_name FROM information_schema.columns"
                          " WHERE table_schema = current_schema() ORDER BY ordinal_position",
                          db=db).stdout.decode().split():
        t, c = line.split("|")
        tables.setdefault(t, []).append(c)
    indexes = dict(line.split("|", 1) for line in peer.psql(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()",
        db=db).stdout.decode().splitlines())
    return tables, indexes


def _schema(s):
    return _pg_schema(s.meta_url) if s.meta_url else _sqlite_schema(
        os.path.join(s.data, "meta.db"))


def _same(old, new, what):
    (ot, oi), (nt, ni) = old, new
    eq(sorted(ot), sorted(nt), what + ": the tables")
    for t in nt:
        eq(sorted(ot[t]), sorted(nt[t]), what + ": the columns of " + t)
    eq(sorted(oi), sorted(ni), what + ": the indexes")
    for i in ni:
        eq(oi[i], ni[i], what + ": index " + i)


def _new_schema():
    with harness.Server() as s:
        s.stop()
        return _schema(s)


def _fill(s):
    """A volume with files, a change with its who, a snapshot: rows to upgrade."""
    vid = s.create_volume("old")["id"]
    for i in range(5):
        s.put_ok(vid, "d/%d.txt" % i, b"old %d" % i)
    s.snapshot(vid)
    return vid


def _downgrade_sqlite(data, version):
    db = sqlite3.connect(os.path.join(data, "meta.db"))
    # run_items without its id (a rowid table), one row in it
    db.execute(RUN_ITEMS_6)
    db.execute("DROP TABLE run_items")
    db.execute("ALTER TABLE run_items_6 RENAME TO run_items")
    db.execute("INSERT INTO run_items(%s) VALUES('o', 'a', 'r', 'k', 'p', 1, 2, 't', '', '')"
               % RUN_ITEM_COLS)
    db.execute("DROP INDEX changes_at")
    for t, cols in SQLITE_7_COLUMNS.items():
        for c in cols:
            db.execute("ALTER TABLE %s DROP COLUMN %s" % (t, c))
    db.execute("DROP INDEX changes_run")
    db.execute("DROP INDEX changes_call")
    if version == 6:
        db.execute("CREATE INDEX changes_run ON changes(vno, json_extract(who, '$.runId'), seq)")
        db.execute("CREATE INDEX changes_call ON changes(vno, json_extract(who, '$.callId'),"
                   " seq)")
    else:
        for t in LATER_TABLES:
            db.execute("DROP TABLE %s" % t)
        for i in LATER_INDEXES:
            db.execute("DROP INDEX IF EXISTS %s" % i)
        for t, cols in LATER_COLUMNS.items():
            for c in cols:
                db.execute("ALTER TABLE %s DROP COLUMN %s" % (t, c))
    db.execute("PRAGMA user_version = %d" % version)
    db.commit()
    db.close()


def _downgrade_pg(url):
    db = url.rsplit("/", 1)[1].split("?")[0]
    pgpeer.shared().psql(
        "".join("DROP TABLE %s; " % t for t in LATER_TABLES) +
        "".join("DROP INDEX IF EXISTS %s; " % i for i in LATER_INDEXES) +
        "".join("ALTER TABLE %s %s; " % (t, ", ".join("DROP COLUMN %s" % c for c in cols))
                for t, cols in LATER_COLUMNS.items()) +
        "UPDATE schema_version SET version = 2", db=db)


def _upgraded(version):
    with harness.Server() as s:
        vid = _fill(s)
        before = s.list_files(vid)["files"]
        s.stop()
        if s.meta_url:
            _downgrade_pg(s.meta_url)
        else:
            _downgrade_sqlite(s.data, version)
        old = _schema(s)
        s.start()
        eq(s.list_files(vid)["files"], before, "the files after the upgrade")
        expect(s.get_file(vid, "d/1.txt"), 200)
        s.put_ok(vid, "d/new.txt", b"new")
        s.stop()
        rows = None
        if not s.meta_url:
            db = sqlite3.connect(os.path.join(s.data, "meta.db"))
            eq(db.execute("PRAGMA user_version").fetchone()[0], 7, "the version stamped")
            rows = db.execute("SELECT id, org, run, size FROM run_items").fetchall()
            db.close()
        return old, _schema(s), rows


def test_oldest_store_upgrades_to_the_new_schema():
    new = _new_schema()
    old, upgraded, rows = _upgraded(1)
    eq(old == new, False, "the downgraded store differs from a new one")
    _same(upgraded, new, "a store upgraded from the oldest schema")
    if harness.ENGINE == "embedded":
        eq(rows, [(1, "o", "r", 2)], "run_items' row, its rowid as its id")


def test_sqlite_6_upgrades_to_the_new_schema():
    if harness.ENGINE != "embedded":
        harness.skip("SQLite's schema 6")
    new = _new_schema()
    old, upgraded, rows = _upgraded(6)
    eq(old[1]["changes_run"] == new[1]["changes_run"], False,
       "schema 6's changes_run is on another expression")
    _same(upgraded, new, "a store upgraded from schema 6")
    eq(rows, [(1, "o", "r", 2)], "run_items' row, its rowid as its id")


def test_release_schema1_data_dir_upgrades_to_the_new_schema():
    """The schema-1 data dir of test_backup, from that release's SQL."""
    if harness.ENGINE != "embedded":
        harness.skip("SQLite's schema 1")
    from test_backup import _schema1_dir
    new = _new_schema()
    data, _key, _khash, body = _schema1_dir()
    with harness.Server(data=data, engine="embedded") as s:
        eq(expect(s.get_file("vol_schemaoneaaaaaaaaaaa", "old.txt"), 200).body, body,
           "the schema-1 file")
        s.stop()
        _same(_schema(s), new, "a release's schema-1 data dir upgraded")
