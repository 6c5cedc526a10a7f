"""Backups, restore, versions and schema upgrades (docs/design.md "Backups" and
"Schema versions"): `coffer backup DATA DEST` taken while 8 writers PUT through a
running cofferd restores (`coffer restore-backup`) into a data dir where every write
acknowledged before the backup began is there with its bytes and fsck is clean; the
refusals; one version everywhere; a schema-1 data dir opens and upgrades, and one
stamped newer than the binary knows is refused naming both versions."""

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import tempfile
import threading

import harness
from harness import check, contains, eq, expect

TIMEOUT = 180
HERE = os.path.dirname(os.path.abspath(__file__))


def _tool(*args):
    exe = harness.coffer_binary()
    if not exe:
        harness.skip("build/coffer does not exist")
    p = subprocess.run([exe] + list(args), capture_output=True, timeout=120 * harness.SCALE)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def _embedded():
    # the backup is of an embedded data dir; the pg pass's engines have their own tools
    return harness.Server(engine="embedded")


def test_backup_under_writers_restores_every_acknowledged_write():
    tmp = tempfile.mkdtemp(prefix="coffer-bk-")
    dest, restored = os.path.join(tmp, "backup"), os.path.join(tmp, "restored")
    with _embedded() as s:
        vols = [s.create_volume()["id"] for _ in range(2)]
        lock = threading.Lock()
        acked = []          # (vol, path, bytes) in the order the server acknowledged them
        stop = threading.Event()
        errors = []

        def writer(w):
            i = 0
            while not stop.is_set():
                # small (inline in the metadata) and large (a blob file) in turn
                data = os.urandom(100 if i % 2 else 40000) + b"%d/%d" % (w, i)
                vol, path = vols[w % 2], "w%d/f%05d.bin" % (w, i)
                r = s.put_file(vol, path, data)
                if r.status != 201:
                    errors.append(r.describe())
                    return
                with lock:
                    acked.append((vol, path, data))
                i += 1
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        try:
            harness.until(lambda: len(acked) >= 80 or errors, "80 writes acknowledged", 90)
            with lock:
                before = list(acked)   # acknowledged before the backup begins
            rc, out, err = _tool("backup", s.data, dest)
        finally:
            stop.set()
            for t in threads:
                t.join(60)
        check(not errors, "every write accepted: %s" % errors[:1])
        eq(rc, 0, "coffer backup beside 8 writers:\n" + out + err)
        rep = json.loads(out)
        check(rep["ok"] is True and rep["blobs"] >= 1 and rep["bytes"] > 0 and
              rep["maxSeq"] >= 1, "the backup's report: %r" % rep)
        eq(rep["volumes"], 2, "volumes in the snapshot")
        # DEST not empty: refused, naming it, exit 2, nothing written
        rc2, _, err2 = _tool("backup", s.data, dest)
        eq(rc2, 2, "a second backup into the same DEST")
        contains(err2, "'%s' is not empty" % dest, "its message")
        # restore over the live (non-empty, served) data dir: refused, naming the pid
        rc3, _, err3 = _tool("restore-backup", dest, s.data)
        eq(rc3, 2, "restore over the live data dir")
        contains(err3, "in use by a cofferd (pid %d)" % s.proc.pid, "its message")

    rc, out, err = _tool("restore-backup", dest, restored)
    eq(rc, 0, "coffer restore-backup:\n" + out + err)
    rep = json.loads(out)
    eq(rep["fsck"]["ok"], True, "fsck in the restore's report")
    rc, out, err = _tool("--json", "fsck", "--data", restored)
    eq(rc, 0, "coffer fsck of the restored dir:\n" + out + err)
    eq(json.loads(out)["missing"], [], "nothing missing")
    with harness.Server(data=restored, engine="embedded") as r:
        for vol, path, data in before:
            got = expect(r.get_file(vol, path), 200)
            check(got.body == data, "%s/%s has the bytes acknowledged" % (vol, path))
        # the restored dir is held by its cofferd now: a restore into it is refused
        rc, _, err = _tool("restore-backup", dest, restored)
        eq(rc, 2, "restore into a data dir a cofferd holds")
        contains(err, "in use by a cofferd (pid %d)" % r.proc.pid, "its message")


def test_restore_into_non_empty_dir_refused():
    tmp = tempfile.mkdtemp(prefix="coffer-bk-")
    dest, target = os.path.join(tmp, "backup"), os.path.join(tmp, "target")
    with _embedded() as s:
        vol = s.create_volume()["id"]
        expect(s.put_file(vol, "a.txt", b"a"), 201)
        rc, out, err = _tool("backup", s.data, dest)
        eq(rc, 0, "backup:\n" + out + err)
    os.mkdir(target)
    with open(os.path.join(target, "keep.txt"), "w") as f:
        f.write("mine")
    rc, _, err = _tool("restore-backup", dest, target)
    eq(rc, 2, "restore into a non-empty dir")
    contains(err, "'%s' is not empty" % target, "its message")
    eq(sorted(os.listdir(target)), ["keep.txt"], "nothing written into it")


def test_backup_refuses_other_engines():
    tmp = tempfile.mkdtemp(prefix="coffer-bk-")
    data = os.path.join(tmp, "data")
    os.mkdir(data)
    with open(os.path.join(data, "meta.url"), "w") as f:
        f.write("postgres://nowhere/x\n")
    rc, _, err = _tool("backup", data, os.path.join(tmp, "dest"))
    eq(rc, 2, "backup of a dataset on PostgreSQL")
    contains(err, "not an embedded dataset", "its message")
    contains(err, "Backups", "it points at the docs")
    check(not os.path.exists(os.path.join(tmp, "dest")), "no DEST made")


def _version_of(args):
    p = subprocess.run(args, capture_output=True, timeout=30 * harness.SCALE)
    eq(p.returncode, 0, "%s exit" % " ".join(args))
    m = re.fullmatch(r"(\S+) (\S+)\n", p.stdout.decode())
    check(m, "%s prints 'NAME VERSION': %r" % (" ".join(args), p.stdout))
    return m.group(2)


def test_versions_agree(srv):
    exe = harness.coffer_binary()
    if not exe:
        harness.skip("build/coffer does not exist")
    d = _version_of([harness.bin_path("cofferd"), "--version"])
    c = _version_of([exe, "--version"])
    eq(c, d, "coffer --version and cofferd --version")
    check(re.fullmatch(r"\d+\.\d+\.\d+", d), "a release number: %r" % d)
    h = expect(srv.request("GET", "/v1/health", key=None), 200).json()
    eq(h, {"ok": True, "version": d}, "GET /v1/health")


def _schema1_dir():
    """A data dir as the last schema-1 cofferd left it: its SQL, a key, a volume with
    one small file (inline) and its change, all rows in their old form."""
    data = tempfile.mkdtemp(prefix="coffer-schema1-")
    key = "ck_" + "ab" * 24
    with open(os.path.join(data, "admin.key"), "w") as f:
        f.write(key + "\n")
    os.chmod(os.path.join(data, "admin.key"), 0o600)
    db = sqlite3.connect(os.path.join(data, "meta.db"))
    with open(os.path.join(HERE, "fixtures", "sqlite_schema1.sql")) as f:
        db.executescript(f.read())
    body = b"written by schema 1\n"
    sha = hashlib.sha256(body).hexdigest()
    khash = hashlib.sha256(key.encode()).hexdigest()
    db.execute("INSERT INTO keys(hash, org, agent, admin, created_at) VALUES(?, ?, '', 1,"
               " 1700000000)", (khash, "org_default"))
    db.execute("INSERT INTO volumes(vno, id, org, name, seq, files, bytes, capacity, ceiling,"
               " created_at) VALUES(1, 'vol_schemaoneaaaaaaaaaaa', 'org_default', 'old', 1, 1,"
               " ?, 536870912, 4294967296, 1700000000)", (len(body),))
    db.execute("INSERT INTO entries(vno, path, from_seq, to_seq, version, size, sha256, ctype,"
               " updated_at, closed_at) VALUES(1, 'old.txt', 1, NULL, 1, ?, ?, 'text/plain',"
               " 1700000000, NULL)", (len(body), sha))
    db.execute("INSERT INTO changes VALUES(1, 1, 'old.txt', 0, 1, ?, ?, 1700000000)",
               (len(body), sha))
    db.execute("INSERT INTO blobs(sha256, size, orphan_since, data) VALUES(?, ?, NULL, ?)",
               (sha, len(body), body))
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    return data, key, khash, body


def test_schema1_data_dir_opens_and_upgrades():
    data, key, khash, body = _schema1_dir()
    with harness.Server(data=data, engine="embedded") as s:
        eq(s.key, key, "the data dir's admin key")
        got = expect(s.get_file("vol_schemaoneaaaaaaaaaaa", "old.txt"), 200)
        eq(got.body, body, "the schema-1 file")
        keys = expect(s.get("/v1/keys"), 200).json()
        ids = [k["id"] for k in keys.get("keys", keys.get("items", []))]
        contains(ids, "k_" + khash[:16], "the old key's id, derived from its hash")
        put = expect(s.put_file("vol_schemaoneaaaaaaaaaaa", "new.txt", b"new"), 201).json()
        eq(put["seq"], 2, "a write after the upgrade")
        ch = expect(s.get("/v1/volumes/vol_schemaoneaaaaaaaaaaa/changes"), 200).json()["changes"]
        eq([(c["path"], c["by"] is None) for c in ch], [("old.txt", True), ("new.txt", False)],
           "a change from before `by` was recorded reads by: null; a new one has it")
    db = sqlite3.connect(os.path.join(data, "meta.db"))
    eq(db.execute("PRAGMA user_version").fetchone()[0], 7, "the schema version stamped")
    db.close()
    rc, out, err = _tool("fsck", "--data", data)
    eq(rc, 0, "fsck of the upgraded dir:\n" + out + err)


def test_newer_schema_refused_naming_both_versions():
    data, _, _, _ = _schema1_dir()
    db = sqlite3.connect(os.path.join(data, "meta.db"))
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    before = open(os.path.join(data, "meta.db"), "rb").read()
    p = subprocess.run([harness.bin_path("cofferd"), "--data", data, "--listen",
                        "127.0.0.1:0"], capture_output=True, timeout=30 * harness.SCALE)
    check(p.returncode != 0, "cofferd on a newer data dir exited %d" % p.returncode)
    msg = p.stderr.decode(errors="replace")
    contains(msg, "written by a newer cofferd (schema 99;", "its message")
    contains(msg, "knows schema 7", "its message names this binary's schema")
    eq(open(os.path.join(data, "meta.db"), "rb").read(), before, "the data dir untouched")
