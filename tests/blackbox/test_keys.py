"""Key lifecycle (API.md General; docs/api.md "Keys"): ids, names, expiry, read-only keys,
listing without secrets, revocation at once, `coffer admin rotate-key`, and a data dir
of the schema before keys had a lifecycle upgrading in place."""

import os
import sqlite3
import time

import harness
from harness import check, contains, eq, expect, expect_error

ISO = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"


def _mint(srv, key=None, **body):
    kw = {} if key is None else {"key": key}
    return expect(srv.post("/v1/keys", json=body, **kw), 201).json()


def _listed(srv, key=None, query=None):
    kw = {} if key is None else {"key": key}
    return {k["id"]: k for k in expect(srv.get("/v1/keys", query=query, **kw), 200).json()["keys"]}


def test_create_answers_id_and_fields(srv):
    k = _mint(srv, name="ci deploy", expiresIn=3600, readOnly=True)
    check(k["id"].startswith("k_") and len(k["id"]) == 18, "id form: %r" % k["id"])
    check(k["key"].startswith("ck_"), "secret form")
    eq(k["name"], "ci deploy", "name")
    eq(k["readOnly"], True, "readOnly")
    eq(k["org"], "org_default", "org")
    import re
    check(re.match(ISO, k["expiresAt"]), "expiresAt is RFC 3339: %r" % k["expiresAt"])
    exp = time.mktime(time.strptime(k["expiresAt"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    check(abs(exp - (time.time() + 3600)) < 120, "expiresAt about an hour from now")
    plain = _mint(srv)
    eq(plain["readOnly"], False, "readOnly default")
    check("expiresAt" not in plain and "name" not in plain, "no expiry or name unless given")


def test_list_never_shows_secrets(srv):
    k = _mint(srv, name="lister")
    keys = _listed(srv)
    contains(keys, k["id"], "listed ids")
    got = keys[k["id"]]
    for f in ("id", "name", "org", "agent", "readOnly", "createdAt", "expiresAt", "lastUsedAt"):
        contains(got, f, "fields of a listed key")
    eq(got["name"], "lister", "name")
    eq(got["lastUsedAt"], None, "lastUsedAt before any use")
    body = expect(srv.get("/v1/keys"), 200).body.decode()
    check(k["key"] not in body and srv.key not in body, "no secret in the listing")
    # using the key sets lastUsedAt
    expect(srv.get("/v1/volumes", key=k["key"]), 200)
    eq(_listed(srv)[k["id"]]["lastUsedAt"] is not None, True, "lastUsedAt after a use")


def test_orgs_see_only_their_keys(srv):
    org = "keyorg-%d" % os.getpid()
    other = _mint(srv, org=org)
    mine = _mint(srv)
    keys = _listed(srv, key=other["key"])
    contains(keys, other["id"], "the org's own key")
    check(mine["id"] not in keys, "another org's key is not listed")
    # a key of another org revoking ours: 404 as if absent; the key still works
    expect_error(srv.delete("/v1/keys/" + mine["id"], key=other["key"]), 404, "not_found")
    expect(srv.get("/v1/volumes", key=mine["key"]), 200)
    # only the admin may list another org
    expect_error(srv.get("/v1/keys", query={"org": "org_default"}, key=other["key"]), 403)
    contains(_listed(srv, query={"org": org}), other["id"], "the admin listing another org")
    # the admin key revokes across orgs
    expect(srv.delete("/v1/keys/" + other["id"]), 204)
    expect_error(srv.get("/v1/volumes", key=other["key"]), 401, "unauthorized")


def test_revoke_is_immediate_and_says_so(srv):
    k = _mint(srv, name="to revoke")
    expect(srv.get("/v1/volumes", key=k["key"]), 200)
    expect(srv.delete("/v1/keys/" + k["id"]), 204)
    r = expect_error(srv.get("/v1/volumes", key=k["key"]), 401, "unauthorized")
    contains(r["message"], "revoked", "message of a revoked key")
    check(k["id"] not in _listed(srv), "a revoked key is not listed")
    expect_error(srv.delete("/v1/keys/" + k["id"]), 404, "not_found")
    expect_error(srv.delete("/v1/keys/k_0000000000000000"), 404, "not_found")


def test_a_key_may_revoke_itself_but_not_the_admin_key(srv):
    k = _mint(srv)
    expect(srv.delete("/v1/keys/" + k["id"], key=k["key"]), 204)
    expect_error(srv.get("/v1/volumes", key=k["key"]), 401)
    admin_id = [i for i, v in _listed(srv).items() if v["admin"]]
    eq(len(admin_id), 1, "one admin key listed")
    r = expect_error(srv.delete("/v1/keys/" + admin_id[0]), 403, "forbidden")
    contains(r["message"], "rotate-key", "the message names the way")
    expect(srv.get("/v1/volumes"), 200)


def test_read_only_key_only_reads(srv):
    vol = srv.create_volume()
    srv.put_ok(vol["id"], "a.txt", b"hello")
    ro = _mint(srv, readOnly=True)["key"]
    expect(srv.get_file(vol["id"], "a.txt", key=ro), 200)
    expect(srv.head(srv.file_path(vol["id"], "a.txt"), key=ro), 200)
    r = expect_error(srv.put_file(vol["id"], "b.txt", b"x", key=ro), 403, "forbidden")
    contains(r["message"], "read-only", "message")
    expect_error(srv.delete(srv.file_path(vol["id"], "a.txt"), key=ro), 403, "forbidden")
    expect_error(srv.post("/v1/volumes", json={"name": "ro"}, key=ro), 403, "forbidden")
    expect_error(srv.post("/v1/keys", json={}, key=ro), 403, "forbidden")
    expect_error(srv.post("/v1/volumes/%s/links" % vol["id"], json={"path": "a.txt"}, key=ro),
                 403, "forbidden")
    eq(srv.seq(vol["id"]), 1, "nothing written by the read-only key")


def test_expired_key_401_says_expired(srv):
    k = _mint(srv, expiresIn=60)
    expect(srv.get("/v1/volumes", key=k["key"]), 200)
    # age the key in the store itself: waiting a minute is not a test
    if harness.ENGINE != "embedded":
        harness.skip("ages the key through the embedded store's SQLite file")
    db = sqlite3.connect(os.path.join(srv.data, "meta.db"), timeout=30)
    with db:
        db.execute("UPDATE keys SET expires_at = ? WHERE id = ?", (int(time.time()) - 1, k["id"]))
    db.close()
    r = expect_error(srv.get("/v1/volumes", key=k["key"]), 401, "unauthorized")
    contains(r["message"], "expired", "message of an expired key")


def test_bounds_are_named(srv):
    for body, field in (({"name": ""}, "name"), ({"name": "x" * 129}, "name"),
                        ({"name": "a\nb"}, "name"), ({"expiresIn": 59}, "expiresIn"),
                        ({"expiresIn": 10 * 366 * 24 * 3600}, "expiresIn"),
                        ({"expiresIn": "1h"}, "expiresIn"), ({"readOnly": 1}, "readOnly")):
        r = expect_error(srv.post("/v1/keys", json=body), 400, "validation_error")
        contains(r["message"], field, "message for %r" % (body,))
    r = expect_error(srv.post("/v1/keys", json={"expiresIn": 59}), 400)
    contains(r["message"], "60", "the lower limit")


def test_agent_bound_key_cannot_manage_keys(srv):
    k = _mint(srv, agent="bot-%d" % os.getpid())
    expect_error(srv.get("/v1/keys", key=k["key"]), 403, "forbidden")
    expect_error(srv.delete("/v1/keys/" + k["id"], key=k["key"]), 403, "forbidden")


def test_rotate_admin_key():
    with harness.server() as s:
        old = s.key
        k = _mint(s)
        r = s.cli("admin", "rotate-key", "--data", s.data)
        eq(r.returncode, 0, "rotate-key exit (stderr %r)" % r.stderr)
        new = r.stdout.decode().strip()
        with open(os.path.join(s.data, "admin.key")) as f:
            eq(f.read().strip(), new, "DATA/admin.key holds the new key")
        eq(os.stat(os.path.join(s.data, "admin.key")).st_mode & 0o777, 0o600, "mode")
        check(new != old, "a new key")
        # the running server: the old key is revoked at once, the new one works
        r = expect_error(s.get("/v1/volumes", key=old), 401, "unauthorized")
        contains(r["message"], "revoked", "message")
        expect(s.get("/v1/volumes", key=new), 200)
        expect(s.get("/v1/volumes", key=k["key"]), 200)
        s.key = new
        s.restart()
        eq(s.key, new, "the key after a restart")
        expect(s.post("/v1/keys", json={"org": "after-rotate"}), 201)
        expect_error(s.get("/v1/volumes", key=old), 401)


def test_old_data_dir_upgrades_in_place():
    """A data dir of schema 1 (keys without a lifecycle) opens, keeps its keys and
    gains ids: made by turning a new one back into schema 1's shape."""
    if harness.ENGINE != "embedded":
        harness.skip("reshapes the embedded store's SQLite file")
    with harness.server() as s:
        k = _mint(s, org="legacy")
        vol = s.create_volume()
        s.put_ok(vol["id"], "a.txt", b"kept")
        s.stop()
        db = sqlite3.connect(os.path.join(s.data, "meta.db"))
        with db:
            db.execute("DROP INDEX keys_id")
            db.execute("DROP INDEX keys_org")
            for c in ("id", "name", "read_only", "expires_at", "revoked_at", "last_used_at"):
                db.execute("ALTER TABLE keys DROP COLUMN " + c)
            db.execute("PRAGMA user_version = 1")
        cols = [r[1] for r in db.execute("PRAGMA table_info(keys)")]
        db.close()
        eq(cols, ["hash", "org", "agent", "admin", "created_at"], "schema 1's keys table")
        s.start()
        expect(s.get_file(vol["id"], "a.txt"), 200)
        keys = _listed(s, key=k["key"])
        contains(keys, k["id"], "the old key, under the id its hash gives")
        expect(s.delete("/v1/keys/" + k["id"]), 204)
        expect_error(s.get("/v1/volumes", key=k["key"]), 401)
        db = sqlite3.connect(os.path.join(s.data, "meta.db"))
        eq(db.execute("PRAGMA user_version").fetchone()[0], 7, "schema version after opening")
        db.close()


def test_last_used_is_written_at_most_once_a_minute(srv):
    if harness.ENGINE != "embedded":
        harness.skip("sets lastUsedAt through the embedded store's SQLite file")
    k = _mint(srv)
    db = sqlite3.connect(os.path.join(srv.data, "meta.db"), timeout=30)

    def set_used(t):
        with db:
            db.execute("UPDATE keys SET last_used_at = ? WHERE id = ?", (t, k["id"]))

    def used():
        return db.execute("SELECT last_used_at FROM keys WHERE id = ?", (k["id"],)).fetchone()[0]

    now = int(time.time())
    set_used(now - 30)        # used half a minute ago: this use writes nothing
    expect(srv.get("/v1/volumes", key=k["key"]), 200)
    eq(used(), now - 30, "lastUsedAt within the minute")
    set_used(now - 61)        # over a minute ago: this use records itself
    expect(srv.get("/v1/volumes", key=k["key"]), 200)
    check(used() >= now, "lastUsedAt after a minute: %r" % used())
    db.close()


def test_cli_key_commands(srv):
    r = srv.cli("--json", "key", "create", "--name", "from cli", "--expires-in", "600",
                "--read-only")
    eq(r.returncode, 0, "key create exit (stderr %r)" % r.stderr)
    import json
    k = json.loads(r.stdout)
    eq((k["name"], k["readOnly"]), ("from cli", True), "fields")
    r = srv.cli("--json", "key", "list")
    eq(r.returncode, 0, "key list exit")
    contains([x["id"] for x in json.loads(r.stdout)["keys"]], k["id"], "listed")
    r = srv.cli("key", "revoke", k["id"])
    eq(r.returncode, 0, "key revoke exit (stderr %r)" % r.stderr)
    expect_error(srv.get("/v1/volumes", key=k["key"]), 401, "unauthorized")
    r = srv.cli("key", "revoke", k["id"])
    eq(r.returncode, 1, "revoking twice: not found")


def test_many_keys_on_one_loop_each_their_own_and_revoked_at_once():
    """One event loop (--threads 1) sees more keys than it keeps hashes of (4): each
    request is still its own key's (its org's volumes only), a key that differs from a
    kept one in its last character or only in length is refused, and a revocation
    holds on the very next request although the key's hash was kept."""
    with harness.Server(args=["--threads", "1"]) as srv:
        keys = []
        for i in range(6):
            k = _mint(srv, org="kc-%d-%d" % (os.getpid(), i))
            vid = expect(srv.post("/v1/volumes", json={"name": "v%d" % i}, key=k["key"]),
                         201).json()["id"]
            keys.append((k, vid))
        for _ in range(2):
            for k, vid in keys:
                ids = [v["id"] for v in expect(srv.get("/v1/volumes", key=k["key"]),
                                               200).json()["volumes"]]
                eq(ids, [vid], "the volumes of key %s" % k["id"])
        k, _ = keys[-1]
        last = k["key"][-1]
        expect_error(srv.get("/v1/volumes", key=k["key"][:-1] + ("A" if last != "A" else "B")),
                     401, "unauthorized")
        expect_error(srv.get("/v1/volumes", key=k["key"][:-1]), 401, "unauthorized")
        expect_error(srv.get("/v1/volumes", key=k["key"] + "x"), 401, "unauthorized")
        expect(srv.get("/v1/volumes", key=k["key"]), 200)
        expect(srv.delete("/v1/keys/" + k["id"]), 204)
        expect_error(srv.get("/v1/volumes", key=k["key"]), 401, "unauthorized")


def test_live_keys_per_org_are_capped_at_the_edge():
    """Issue 32.9: keys are what the rate limit counts by, so minting them had to be
    bounded: an organization holds at most --keys-per-org live keys (1,000 by default);
    one more is 409 `conflict` naming the organization, the limit and the flag, minted
    by the admin or by a key of the organization alike. Another organization is not
    touched, and a revoked or expired key gives its place back. Before the fix the
    fourth key of the organization was 201."""
    with harness.Server(args=["--keys-per-org", "3"]) as srv:
        org = "cap-%d" % os.getpid()
        keys = [_mint(srv, org=org) for _ in range(3)]        # at the limit: all 201
        r = expect_error(srv.post("/v1/keys", json={"org": org}), 409, "conflict")
        contains(r["message"], "'%s'" % org, "names the organization")
        contains(r["message"], "3 live keys", "names the limit")
        contains(r["message"], "--keys-per-org", "names the flag")
        expect_error(srv.post("/v1/keys", json={}, key=keys[0]["key"]), 409, "conflict")
        eq(len(_listed(srv, query={"org": org})), 3, "nothing minted past the limit")
        _mint(srv, org="other-%d" % os.getpid())              # another organization
        expect(srv.delete("/v1/keys/" + keys[0]["id"]), 204)  # a revoked key's place
        keys[0] = _mint(srv, org=org)
        expect_error(srv.post("/v1/keys", json={"org": org}), 409, "conflict")
        if harness.ENGINE != "embedded":
            return
        db = sqlite3.connect(os.path.join(srv.data, "meta.db"), timeout=30)
        with db:
            db.execute("UPDATE keys SET expires_at = ? WHERE id = ?",
                       (int(time.time()) - 1, keys[1]["id"]))
        db.close()
        _mint(srv, org=org)                                   # an expired key's place


def test_keys_per_org_flag_is_checked(tmp_path=None):
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for bad in ("0", "-1", "x", "1000001"):
            r = subprocess.run([harness.bin_path("cofferd"), "--data", d, "--keys-per-org", bad],
                               capture_output=True, timeout=30)
            eq(r.returncode, 2, "exit of --keys-per-org %s" % bad)
            contains(r.stderr.decode(), "--keys-per-org", "names the flag")
