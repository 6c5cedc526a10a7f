"""Auth, keys, organizations; volume create/get/batch/delete (API.md General, Volumes)."""

import os
import stat

import harness
from harness import check, contains, eq, expect, expect_error

ISO = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$"


def test_admin_key_file_mode_0600(srv):
    p = os.path.join(srv.data, "admin.key")
    st = os.stat(p)
    eq(stat.S_IMODE(st.st_mode), 0o600, "mode of DATA/admin.key")
    check(len(srv.key) >= 16, "admin key should be at least 16 characters, got %r" % srv.key)


def test_admin_key_survives_restart():
    with harness.server() as s:
        k1 = s.key
        s.restart()
        eq(s.key, k1, "admin key after restart")
        expect(s.get("/v1/volumes?ids=x"), 200)


def test_missing_key_401(srv):
    vol = srv.create_volume()
    for path in ("/v1/volumes/%s" % vol["id"], "/v1/volumes?ids=%s" % vol["id"],
                 "/v1/volumes/%s/files" % vol["id"]):
        expect_error(srv.get(path, key=None), 401, "unauthorized")
    expect_error(srv.post("/v1/volumes", json={"name": "x"}, key=None), 401)
    expect_error(srv.put_file(vol["id"], "a.txt", b"x", key=None), 401)
    eq(srv.seq(vol["id"]), 0, "seq after refused writes")


def test_wrong_key_401(srv):
    vol = srv.create_volume()
    expect_error(srv.get("/v1/volumes/%s" % vol["id"], key="nope"), 401, "unauthorized")
    expect_error(srv.get("/v1/volumes/%s" % vol["id"], key=srv.key + "x"), 401)
    expect_error(srv.get("/v1/volumes/%s" % vol["id"], key="nope", auth="x-api-key"), 401)
    r = srv.get("/v1/volumes/%s" % vol["id"], key=None, headers={"Authorization": "Basic Zm9vOmJhcg=="})
    expect_error(r, 401)


def test_bearer_and_x_api_key(srv):
    vol = srv.create_volume()
    a = expect(srv.get("/v1/volumes/%s" % vol["id"], auth="bearer"), 200).json()
    b = expect(srv.get("/v1/volumes/%s" % vol["id"], auth="x-api-key"), 200).json()
    eq(a["id"], vol["id"], "id via Bearer")
    eq(b["id"], vol["id"], "id via x-api-key")


def test_json_content_type(srv):
    r = expect(srv.post("/v1/volumes", json={"name": "ct"}), 201)
    ct = r.header("Content-Type") or ""
    check(ct.startswith("application/json"), "Content-Type %r" % ct)
    check("charset=utf-8" in ct.lower().replace(" ", ""),
          "Content-Type should be application/json; charset=utf-8, got %r" % ct)


def test_mint_key_same_org(srv):
    r = expect(srv.post("/v1/keys", json={}), 200, 201).json()
    check(isinstance(r.get("key"), str) and r["key"], "answer has key: %r" % r)
    check(isinstance(r.get("org"), str) and r["org"], "answer has org: %r" % r)
    vol = srv.create_volume()
    # The new key belongs to the admin's organization: it sees the volume.
    got = expect(srv.get("/v1/volumes/%s" % vol["id"], key=r["key"]), 200).json()
    eq(got["id"], vol["id"], "volume seen by a minted key of the same org")
    # and it can write to it
    expect(srv.put_file(vol["id"], "k.txt", b"k", key=r["key"]), 201)


def _other_org_key(srv):
    r = expect(srv.post("/v1/keys", json={"org": "other-%d" % os.getpid()}), 200, 201).json()
    check(r.get("org", "").startswith("other-"), "key minted for the named org: %r" % r)
    return r["key"]


def test_org_isolation(srv):
    vol = srv.create_volume()
    vid = vol["id"]
    srv.put_ok(vid, "secret.txt", b"top secret")
    snap = srv.snapshot(vid)
    other = _other_org_key(srv)
    for path in ("/v1/volumes/%s" % vid,
                 "/v1/volumes/%s/files/secret.txt" % vid,
                 "/v1/volumes/%s/files" % vid,
                 "/v1/volumes/%s/changes?since=0" % vid,
                 "/v1/volumes/%s/snapshots" % vid,
                 "/v1/volumes/%s/snapshots/%s" % (vid, snap["id"]),
                 "/v1/volumes/%s/archive" % vid):
        expect_error(srv.get(path, key=other), 404, "not_found")
    expect(srv.head("/v1/volumes/%s/files/secret.txt" % vid, key=other), 404)
    expect_error(srv.put_file(vid, "x.txt", b"x", key=other), 404)
    expect_error(srv.delete("/v1/volumes/%s/files/secret.txt" % vid, key=other), 404)
    expect_error(srv.post("/v1/volumes/%s/snapshots" % vid, json={}, key=other), 404)
    expect_error(srv.post("/v1/volumes/%s/fork" % vid, json={}, key=other), 404)
    expect_error(srv.post("/v1/volumes/%s/links" % vid, json={"path": "secret.txt"},
                          key=other), 404)
    expect_error(srv.delete("/v1/volumes/%s/snapshots/%s?force=true" % (vid, snap["id"]),
                            key=other), 404)
    expect_error(srv.delete("/v1/volumes/%s" % vid, key=other), 404)
    # Batch get leaves another org's ids out.
    got = expect(srv.get("/v1/volumes", query={"ids": vid}, key=other), 200).json()
    eq(got, {"volumes": []}, "batch get of another org's id")
    # Nothing changed, and the owner still sees it all.
    eq(srv.seq(vid), 1, "seq after the other org's attempts")
    eq(expect(srv.get_file(vid, "secret.txt"), 200).body, b"top secret", "file")
    expect(srv.get("/v1/volumes/%s/snapshots/%s" % (vid, snap["id"])), 200)
    # and the other org's own volume is invisible to the admin org
    ov = srv.create_volume(key=other)
    expect_error(srv.get("/v1/volumes/%s" % ov["id"]), 404)


def test_non_admin_cannot_mint_for_other_org(srv):
    k = expect(srv.post("/v1/keys", json={}), 200, 201).json()["key"]
    r = srv.post("/v1/keys", json={"org": "elsewhere-%d" % os.getpid()}, key=k)
    expect_error(r, 403, "forbidden")


def test_keys_bad_body(srv):
    expect_error(srv.post("/v1/keys", json={"bogus": 1}), 400)
    expect_error(srv.post("/v1/keys", json={"org": 5}), 400)
    expect_error(srv.post("/v1/keys", body=b"{", headers={"Content-Type": "application/json"}), 400)
    expect_error(srv.post("/v1/keys", json={}, key=None), 401)


# ------------------------------------------------------------------ volumes

def test_volume_create_fields(srv):
    r = expect(srv.post("/v1/volumes", json={"name": "fields"}), 201)
    v = r.json()
    eq(sorted(k for k in ("id", "name", "seq", "files", "bytes", "capacity", "ceiling",
                          "createdAt") if k not in v), [], "fields missing from the answer")
    eq(v["name"], "fields", "name")
    eq(v["seq"], 0, "seq")
    eq(v["files"], 0, "files")
    eq(v["bytes"], 0, "bytes")
    eq(v["capacity"], 536870912, "capacity (512 MiB)")
    eq(v["ceiling"], 4294967296, "default ceiling (4 GiB)")
    check(isinstance(v["id"], str) and v["id"], "id is a non-empty string")
    import re
    check(re.match(ISO, v["createdAt"]), "createdAt is RFC 3339: %r" % v["createdAt"])
    got = expect(srv.get("/v1/volumes/%s" % v["id"]), 200).json()
    eq(got, v, "GET /v1/volumes/{id} equals the create answer")


def test_volume_create_with_ceiling(srv):
    v = expect(srv.post("/v1/volumes", json={"name": "c", "ceiling": 2 * 2**30}), 201).json()
    eq(v["ceiling"], 2 * 2**30, "ceiling")


def test_volume_ids_differ(srv):
    a = srv.create_volume("same")
    b = srv.create_volume("same")
    check(a["id"] != b["id"], "two creates without Idempotency-Key make two volumes")


def test_volume_idempotency_key(srv):
    h = {"Idempotency-Key": "idem-%d-%d" % (os.getpid(), id(srv))}
    a = expect(srv.post("/v1/volumes", json={"name": "idem"}, headers=h), 201).json()
    r = expect(srv.post("/v1/volumes", json={"name": "idem"}, headers=h), 200, 201)
    eq(r.json()["id"], a["id"], "volume id on a retry with the same Idempotency-Key")
    c = expect(srv.post("/v1/volumes", json={"name": "idem"},
                        headers={"Idempotency-Key": h["Idempotency-Key"] + "-2"}), 201).json()
    check(c["id"] != a["id"], "another Idempotency-Key makes another volume")


def test_volume_batch_get(srv):
    a = srv.create_volume()
    b = srv.create_volume()
    srv.put_ok(a["id"], "x", b"12345")
    got = expect(srv.get("/v1/volumes", query={"ids": "%s,%s,nosuchvolume" % (a["id"], b["id"])}),
                 200).json()
    vols = {v["id"]: v for v in got["volumes"]}
    eq(sorted(vols), sorted([a["id"], b["id"]]), "ids answered (unknown ones left out)")
    for k in ("seq", "files", "bytes"):
        contains(vols[a["id"]], k, "batch entry")
    eq((vols[a["id"]]["seq"], vols[a["id"]]["files"], vols[a["id"]]["bytes"]), (1, 1, 5),
       "(seq, files, bytes) of a")
    eq((vols[b["id"]]["seq"], vols[b["id"]]["files"], vols[b["id"]]["bytes"]), (0, 0, 0),
       "(seq, files, bytes) of b")


def test_volume_batch_get_limit(srv):
    v = srv.create_volume()
    ids50 = [v["id"]] + ["v%d" % i for i in range(49)]
    got = expect(srv.get("/v1/volumes", query={"ids": ",".join(ids50)}), 200).json()
    eq([x["id"] for x in got["volumes"]], [v["id"]], "50 ids (1 known)")
    ids51 = ids50 + ["v51"]
    expect_error(srv.get("/v1/volumes", query={"ids": ",".join(ids51)}), 400, mentions="50")


def test_volume_delete(srv):
    v = srv.create_volume()
    srv.put_ok(v["id"], "a.txt", b"a")
    snap = srv.snapshot(v["id"], pinned=True)
    expect(srv.delete("/v1/volumes/%s" % v["id"]), 200, 204)
    expect_error(srv.get("/v1/volumes/%s" % v["id"]), 404, "not_found")
    expect_error(srv.get_file(v["id"], "a.txt"), 404)
    expect_error(srv.get("/v1/volumes/%s/snapshots/%s" % (v["id"], snap["id"])), 404)
    expect_error(srv.put_file(v["id"], "b.txt", b"b"), 404)
    expect_error(srv.delete("/v1/volumes/%s" % v["id"]), 404)
    got = expect(srv.get("/v1/volumes", query={"ids": v["id"]}), 200).json()
    eq(got["volumes"], [], "batch get of a deleted volume")


def test_unknown_volume_404(srv):
    expect_error(srv.get("/v1/volumes/nosuchvolume"), 404, "not_found")
    expect_error(srv.get_file("nosuchvolume", "a.txt"), 404)
    expect_error(srv.put_file("nosuchvolume", "a.txt", b"a"), 404)
    expect_error(srv.get("/v1/volumes/nosuchvolume/files"), 404)


def test_agent_bound_key_403_on_volumes(srv):
    vol = srv.create_volume()
    r = expect(srv.post("/v1/keys", json={"agent": "agent-%d" % os.getpid()}), 200, 201).json()
    k = r["key"]
    expect_error(srv.get("/v1/volumes/%s" % vol["id"], key=k), 403, "forbidden")
    expect_error(srv.put_file(vol["id"], "x", b"x", key=k), 403)
    expect_error(srv.post("/v1/volumes", json={"name": "a"}, key=k), 403)
    eq(srv.seq(vol["id"]), 0, "seq")
