"""`coffer migrate --from DATA --to-meta URL --to-blobs URL` (issue 12; docs/design.md
"Migrating an embedded dataset"): an embedded dataset (SQLite + local blobs) copied into
PostgreSQL + S3 reads the same from a node started on the copy (files, history,
snapshots, forks, agents, keys with the admin key), the copy is verified (rows per
table, every blob hashed, fsck), a target that is not empty is refused, and a run cut
off in the middle (a failure, SIGKILL) is finished by running it again."""

import json
import os
import signal
import subprocess
import time
import urllib.parse

import harness
from harness import check, contains, eq, expect, sha256

TIMEOUT = 180


def _engines():
    if harness.ENGINE != "pg":
        harness.skip("migrate copies into PostgreSQL + S3: it runs in the pg pass")
    import pgpeer
    import s3peer
    why = pgpeer.available()
    if why:
        harness.skip("PostgreSQL 15 is needed: " + why)
    return pgpeer.shared(), s3peer.shared()


def _source(files=12):
    """An embedded dataset with a bit of everything; returns (server stopped, what)."""
    s = harness.Server(engine="embedded")
    vid = s.create_volume(name="src")["id"]
    want = {}
    for i in range(files):
        # inline (small) and in the blob store (larger), text with tabs, newlines
        # and backslashes (COPY's escapes)
        data = (b"line\t%d\\ with\r\nescapes\n" % i) * (1 if i % 3 == 0 else 2000 + i)
        path = "d%d/f%02d.txt" % (i % 3, i)
        s.put_ok(vid, path, data)
        want[path] = sha256(data)
    s.put_ok(vid, "gone.txt", b"deleted later")
    expect(s.delete(s.file_path(vid, "gone.txt")), 200, 204)
    snap = s.snapshot(vid, labels={"k": "v"})["id"]
    fork = expect(s.post("/v1/volumes/%s/fork" % vid, json={"snapshot": snap, "name": "fork"}),
                  201).json()["id"]
    # a file removed in the fork only (a copy-on-write fork's whiteout row)
    expect(s.delete(s.file_path(fork, "d0/f00.txt")), 200, 204)
    expect(s.put("/v1/agents/migrated", json={}), 201)
    key = expect(s.post("/v1/keys", json={}), 201).json()["key"]
    ro = expect(s.post("/v1/keys", json={"name": "reader", "readOnly": True}), 201).json()
    # a link signed with the source's DATA/link.key (the path only: /l/TOKEN)
    link = expect(s.post("/v1/volumes/%s/links" % vid, json={"path": "d1/f01.txt",
                                                              "expiresIn": 86400}), 201)
    what = {"vid": vid, "want": want, "seq": s.seq(vid), "snap": snap, "fork": fork,
            "key": key, "admin": s.key, "ro": ro,
            "link": urllib.parse.urlsplit(link.json()["url"]).path}
    s.stop()
    return s, what


def _migrate(src, url, blobs_url, *extra, wait=True):
    cmd = [harness.coffer_binary(), "--json", "migrate", "--from", src.data,
           "--to-meta", url, "--to-blobs", blobs_url] + list(extra)
    import s3peer
    env = dict(os.environ, **s3peer.shared()["env"])
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return subprocess.run(cmd, capture_output=True, timeout=120 * harness.SCALE, env=env)


def _target(pg, s3, name):
    url = pg.new_database()
    import s3peer
    return url, s3peer.url_for(s3, "mig-%s-%d" % (name, os.getpid()))


def _node(url, blobs_url, s3, key):
    """A node on the migrated dataset with an empty data dir: it uses the dataset's
    admin key (the source's)."""
    n = harness.Server(args=["--meta", url], engine="pg", start=False)
    n.args = ["--meta", url]
    n.use_s3(blobs_url.split("?")[0].split("/", 3)[3], s3)
    n.key = key
    return n.start()


def _check_copy(n, what):
    vid = what["vid"]
    files = n.list_files(vid, limit=1000)["files"]
    eq({f["path"]: f["sha256"] for f in files}, what["want"], "files of the migrated volume")
    for p, h in sorted(what["want"].items()):
        eq(sha256(expect(n.get_file(vid, p), 200).body), h, "content of %s" % p)
    eq(n.seq(vid), what["seq"], "the volume's seq")
    ch = expect(n.get("/v1/volumes/%s/changes" % vid, query={"since": 0}), 200).json()
    check(any(c["path"] == "gone.txt" for c in ch["changes"]), "history kept: %s" % ch)
    sn = expect(n.get("/v1/volumes/%s/snapshots/%s" % (vid, what["snap"])), 200).json()
    eq(sn.get("labels"), {"k": "v"}, "the snapshot's labels")
    eq(sorted(f["path"] for f in n.list_files(what["fork"], limit=1000)["files"]),
       sorted(p for p in what["want"] if p != "d0/f00.txt"), "files of the fork")
    expect(n.get("/v1/agents/migrated"), 200)
    # a link made before the migration verifies on a node of the target
    eq(sha256(expect(n.get(what["link"], key=None), 200).body), what["want"]["d1/f01.txt"],
       "a link signed before the migration")
    expect(n.get("/v1/volumes", key=what["key"]), 200)   # a key minted before
    # a named read-only key keeps its id, name and scope
    ro = what["ro"]
    expect(n.get("/v1/volumes", key=ro["key"]), 200)
    expect(n.post("/v1/volumes", json={"name": "nope"}, key=ro["key"]), 403)
    listed = expect(n.get("/v1/keys"), 200).json()
    mine = [k for k in listed.get("keys", listed) if k["id"] == ro["id"]]
    eq([(k["name"], k["readOnly"]) for k in mine], [("reader", True)], "the copied key")
    # the copy goes on: new volumes and snapshots past the copied ids
    v2 = n.create_volume(name="after")["id"]
    n.put_ok(v2, "new.txt", b"after the migration")
    n.snapshot(vid)


def test_migrate_copies_everything_and_verifies():
    pg, s3 = _engines()
    src, what = _source()
    url, blobs_url = _target(pg, s3, "all")
    try:
        # the S3 gateway's text of a version (docs/s3.md) goes along, on both tables
        import sqlite3
        db = sqlite3.connect(os.path.join(src.data, "meta.db"))
        db.execute("UPDATE entries SET s3meta = '{\"etag\":\"e1\"}' WHERE path = 'd1/f01.txt'")
        db.execute("UPDATE changes SET s3meta = '{\"etag\":\"e1\"}' WHERE path = 'd1/f01.txt'")
        db.commit()
        db.close()
        p = _migrate(src, url, blobs_url)
        eq(p.returncode, 0, "migrate exit: %s%s" % (p.stdout.decode(), p.stderr.decode()))
        got = pg.psql("SELECT (SELECT count(*) FROM entries WHERE s3meta = '{\"etag\":\"e1\"}')"
                      " || ' ' || (SELECT count(*) FROM changes WHERE s3meta IS NOT NULL)",
                      db=url.rsplit("/", 1)[1]).stdout.strip()
        check(got.split()[0] != "0" and got.split()[1] != "0", "s3meta migrated: %s" % got)
        rep = json.loads(p.stdout)
        eq(rep["ok"], True, "the report")
        eq(rep["tables"]["volumes"] >= 3, True, "volumes counted (the fork, hidden ones)")
        eq(rep["blobs"], rep["blobsCopied"], "every blob copied on a first run")
        check(rep["blobs"] >= 8, "the larger files are blobs: %s" % rep)
        eq(rep["fsck"]["ok"], True, "fsck of the target")
        # a run again after it finished: verified again, nothing copied
        p = _migrate(src, url, blobs_url)
        eq(p.returncode, 0, "migrate again: %s" % p.stderr.decode())
        eq(json.loads(p.stdout).get("alreadyCopied"), True, "the second run's report")
        n = _node(url, blobs_url, s3, what["admin"])
        try:
            check(not os.path.exists(os.path.join(n.data, "admin.key")),
                  "the node made no admin key: the source's is the dataset's")
            _check_copy(n, what)
        finally:
            n.close()
        p = _migrate(src, url, blobs_url)
        eq(p.returncode, 0, "migrate again once the copy was written to: %s" %
           p.stderr.decode())
    finally:
        src.close()
        pg.drop_database(url)


def test_migrate_refuses_a_target_that_is_not_empty():
    pg, s3 = _engines()
    src, what = _source(files=2)
    url, blobs_url = _target(pg, s3, "full")
    try:
        other = harness.Server(args=["--meta", url], engine="pg")   # makes its admin key
        other.close()
        p = _migrate(src, url, blobs_url)
        eq(p.returncode != 0, True, "migrate into a used database must fail")
        contains(p.stderr.decode(), "not empty", "the error says why")
        # and a source a cofferd serves is refused
        src.start()
        p = _migrate(src, pg.new_database(), blobs_url)
        check(p.returncode != 0, "migrate of a served data dir must fail")
        contains(p.stderr.decode(), "in use by a cofferd", "the error says why")
    finally:
        src.close()
        pg.drop_database(url)


def test_migrate_cut_off_then_run_again_finishes():
    pg, s3 = _engines()
    src, what = _source(files=30)
    url, blobs_url = _target(pg, s3, "cut")
    try:
        # a failure in the middle of the content: one blob missing from the source
        blobs = sorted(p for p in src.blob_files() if os.path.getsize(p) > 20000)
        victim = blobs[len(blobs) // 2]
        os.rename(victim, victim + ".away")
        p = _migrate(src, url, blobs_url)
        check(p.returncode != 0, "migrate with a blob missing must fail")
        contains(p.stderr.decode(), "coffer fsck --data", "the error points at fsck")
        os.rename(victim + ".away", victim)
        # SIGKILL at some moment of a run (wherever it is, the next run finishes)
        proc = _migrate(src, url, blobs_url, wait=False)
        time.sleep(0.3 * harness.SCALE)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        p = _migrate(src, url, blobs_url)
        eq(p.returncode, 0, "migrate after a cut: %s%s" % (p.stdout.decode(),
                                                           p.stderr.decode()))
        rep = json.loads(p.stdout)
        check(rep.get("alreadyCopied") or rep["blobsPresent"] > 0,
              "the run again reuses what the cut-off runs stored: %s" % rep)
        n = _node(url, blobs_url, s3, what["admin"])
        try:
            _check_copy(n, what)
        finally:
            n.close()
    finally:
        src.close()
        pg.drop_database(url)


def test_migrate_again_repairs_a_short_copy_in_the_target():
    """A store whose uploads are not atomic (s3rver) can keep a cut-off upload whole in
    its listing but short in its body; the next run's verification puts it again."""
    pg, s3 = _engines()
    src, what = _source(files=6)
    url, blobs_url = _target(pg, s3, "short")
    try:
        p = _migrate(src, url, blobs_url)
        eq(p.returncode, 0, "migrate: %s" % p.stderr.decode())
        import s3peer
        prefix = urllib.parse.urlparse(blobs_url).path.lstrip("/")
        objs = s3peer.keys(s3, prefix)
        big = max(objs, key=lambda k: os.path.getsize(
            os.path.join(s3["dir"], s3["bucket"], k + "._S3rver_object")))
        body = os.path.join(s3["dir"], s3["bucket"], big + "._S3rver_object")
        size = os.path.getsize(body)
        with open(body, "r+b") as f:
            f.truncate(size - 1)       # as an upload cut one byte before its end
        p = _migrate(src, url, blobs_url)
        eq(p.returncode, 0, "migrate again over a short copy: %s" % p.stderr.decode())
        rep = json.loads(p.stdout)
        eq(rep.get("blobsRepaired"), 1, "the short copy put again: %s" % rep)
        eq(os.path.getsize(body), size, "the object whole again")
    finally:
        src.close()
        pg.drop_database(url)
