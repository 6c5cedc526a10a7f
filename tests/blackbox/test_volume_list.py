"""GET /v1/volumes: the organization's volumes by name in cursor pages
(`?cursor=&limit=&prefix=`, pages of at most 1,000), `?ids=` answers with
names, `coffer volume ls` without ids, and an Idempotency-Key conflict that
made nothing."""

import json
import time

from harness import check, contains, eq, expect, expect_error


def _org_key(srv):
    """A key of a fresh organization, so listings hold only this test's volumes."""
    r = expect(srv.post("/v1/keys", json={"org": "org%d" % (time.time_ns() % 10**12)}), 201)
    return r.json()["key"]


def _all(srv, key, **query):
    out, cursor = [], None
    for _ in range(100):
        q = dict(query)
        if cursor:
            q["cursor"] = cursor
        page = expect(srv.get("/v1/volumes", query=q, key=key), 200).json()
        out += page["volumes"]
        cursor = page.get("cursor")
        if not cursor:
            return out
    raise AssertionError("more than 100 pages")


def test_list_by_name_in_pages(srv):
    key = _org_key(srv)
    names = ["b", "a", "\u00e9t\u00e9", "a/b", "ab", "B", "b"]  # two volumes named "b"
    made = [srv.create_volume(n, key=key) for n in names]
    srv.put_ok(made[1]["id"], "f.txt", b"12345", key=key)
    got = _all(srv, key)
    eq([v["name"] for v in got], sorted(names, key=lambda n: n.encode()), "sorted by name")
    eq(len({v["id"] for v in got}), len(names), "every volume once")
    a = [v for v in got if v["name"] == "a"][0]
    eq(sorted(a), ["bytes", "createdAt", "files", "id", "name", "seq"], "fields")
    eq((a["id"], a["seq"], a["files"], a["bytes"]), (made[1]["id"], 1, 1, 5), "volume a")
    # pages of one follow the same order, with a cursor until the last
    paged = _all(srv, key, limit=1)
    eq([v["id"] for v in paged], [v["id"] for v in got], "limit=1 pages")
    page = expect(srv.get("/v1/volumes", query={"limit": len(names)}, key=key), 200).json()
    check("cursor" not in page, "no cursor on the last page: %r" % page)
    # prefix: bytes, not a glob
    eq([v["name"] for v in _all(srv, key, prefix="a")], ["a", "a/b", "ab"], "prefix a")
    eq([v["name"] for v in _all(srv, key, prefix="\u00e9")], ["\u00e9t\u00e9"], "utf-8 prefix")
    eq(_all(srv, key, prefix="zz"), [], "prefix with no match")
    # another organization sees none of them
    other = _org_key(srv)
    eq(_all(srv, other), [], "another organization's listing")
    # ?ids= answers carry names too
    ids = expect(srv.get("/v1/volumes", query={"ids": made[0]["id"] + "," + made[2]["id"]},
                         key=key), 200).json()["volumes"]
    eq(sorted((v["id"], v["name"]) for v in ids),
       sorted([(made[0]["id"], "b"), (made[2]["id"], "\u00e9t\u00e9")]), "ids with names")
    # deleting a volume drops it from the listing
    expect(srv.delete("/v1/volumes/%s" % made[4]["id"], key=key), 204)
    check(made[4]["id"] not in [v["id"] for v in _all(srv, key)], "deleted volume gone")


def test_limits_at_their_edges(srv):
    key = _org_key(srv)
    for _ in range(3):
        srv.create_volume(key=key)
    eq(len(expect(srv.get("/v1/volumes", query={"limit": 1000}, key=key), 200)
           .json()["volumes"]), 3, "limit=1000")
    for bad in ("1001", "0", "-1", "ten", ""):
        e = expect_error(srv.get("/v1/volumes", query={"limit": bad}, key=key), 400,
                         "validation_error")
        contains(e["message"], "limit", "names the parameter")
        if bad in ("1001", "0"):
            contains(e["message"], "1000", "names the limit")
    for bad in ("nonsense", "eyJ4IjoxfQ", "W10"):
        e = expect_error(srv.get("/v1/volumes", query={"cursor": bad}, key=key), 400,
                         "validation_error")
        contains(e["message"], "cursor", "names the parameter")
    expect_error(srv.get("/v1/volumes", query={"prefix": "x" * 256}, key=key), 400)
    expect_error(srv.get("/v1/volumes", query={"ids": "a", "limit": 5}, key=key), 400)


def test_page_of_1000(srv):
    key = _org_key(srv)
    ids = set()
    for i in range(1001):
        r = expect(srv.post("/v1/volumes", json={"name": "v%04d" % i}, key=key), 201)
        ids.add(r.json()["id"])
    page = expect(srv.get("/v1/volumes", key=key), 200).json()
    eq(len(page["volumes"]), 1000, "default page is 1,000")
    check(page.get("cursor"), "a cursor past 1,000")
    rest = expect(srv.get("/v1/volumes", query={"cursor": page["cursor"]}, key=key), 200).json()
    eq([v["name"] for v in rest["volumes"]], ["v1000"], "second page")
    check("cursor" not in rest, "last page has no cursor")


def test_cli_volume_ls_without_ids(srv):
    key = _org_key(srv)
    a = srv.create_volume("cli-a", key=key)
    b = srv.create_volume("cli-b", key=key)
    p = srv.cli("--json", "volume", "ls", key=key)
    eq(p.returncode, 0, "exit code (stderr %r)" % p.stderr)
    eq([(v["id"], v["name"]) for v in json.loads(p.stdout)["volumes"]],
       [(a["id"], "cli-a"), (b["id"], "cli-b")], "coffer volume ls --json")
    p = srv.cli("volume", "ls", key=key)
    out = p.stdout.decode()
    check(a["id"] in out and "cli-b" in out, "table lists both: %r" % out)


def test_idempotency_conflict_made_nothing(srv):
    key = _org_key(srv)
    h = {"Idempotency-Key": "k1"}
    expect(srv.post("/v1/volumes", json={"name": "one"}, headers=h, key=key), 201)
    expect_error(srv.post("/v1/volumes", json={"name": "two"}, headers=h, key=key), 409,
                 "conflict")
    expect(srv.post("/v1/volumes", json={"name": "one"}, headers=h, key=key), 201)
    eq([v["name"] for v in _all(srv, key)], ["one"], "only one volume made")
