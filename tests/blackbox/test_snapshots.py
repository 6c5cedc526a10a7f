"""Snapshots: metadata, labels, patch, delete/force, retention, label limits, snapshots of
given files, reading at ?snapshot= (API.md Snapshots, forks, restore, archive)."""

import base64
import json
import os
import re

import harness
from harness import check, eq, expect, expect_error, sha256


def _snaps(srv, vid, labels=()):
    q = [("label", l) for l in labels]
    return expect(srv.get("/v1/volumes/%s/snapshots" % vid, query=q), 200).json()


def _snap_list(j):
    check(isinstance(j, dict) and isinstance(j.get("snapshots"), list),
          "snapshot list answers {snapshots:[...]}: %r" % (j,))
    return j["snapshots"]


def test_snapshot_metadata(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"12345")
    srv.put_ok(vid, "b/c.bin", b"1234567890")
    r = expect(srv.post("/v1/volumes/%s/snapshots" % vid, json={}), 201)
    s = r.json()
    for k in ("id", "volumeId", "seq", "pinned", "labels", "files", "bytes", "createdAt"):
        check(k in s, "snapshot answer has %s: %r" % (k, s))
    eq((s["volumeId"], s["seq"], s["pinned"], s["labels"], s["files"], s["bytes"]),
       (vid, 2, False, {}, 2, 15), "(volumeId, seq, pinned, labels, files, bytes)")
    check(re.match(r"^\d{4}-\d\d-\d\dT", s["createdAt"]), "createdAt RFC 3339")
    eq(srv.seq(vid), 2, "a snapshot is not a change")
    got = expect(srv.get("/v1/volumes/%s/snapshots/%s" % (vid, s["id"])), 200).json()
    core = ("id", "volumeId", "seq", "pinned", "labels", "files", "bytes", "createdAt")
    eq({k: got.get(k) for k in core}, {k: s[k] for k in core}, "GET snapshot")
    # empty volume snapshot
    e = srv.snapshot(srv.create_volume()["id"])
    eq((e["seq"], e["files"], e["bytes"]), (0, 0, 0), "snapshot of an empty volume")


def test_read_at_snapshot(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f.txt", b"before")
    srv.put_ok(vid, "del.txt", b"deleted later")
    s = srv.snapshot(vid)
    srv.put_ok(vid, "f.txt", b"after!")
    expect(srv.delete(srv.file_path(vid, "del.txt")), 200, 204)
    srv.put_ok(vid, "new.txt", b"new")
    g = expect(srv.get_file(vid, "f.txt", query={"snapshot": s["id"]}), 200)
    eq(g.body, b"before", "f.txt at the snapshot")
    eq(g.header("ETag"), '"1"', "ETag at the snapshot")
    eq(g.header("X-Volume-Seq"), str(s["seq"]), "X-Volume-Seq at the snapshot")
    eq(expect(srv.get_file(vid, "del.txt", query={"snapshot": s["id"]}), 200).body,
       b"deleted later", "a file deleted since")
    expect_error(srv.get_file(vid, "new.txt", query={"snapshot": s["id"]}), 404)
    r = expect(srv.get_file(vid, "f.txt", query={"snapshot": s["id"]},
                            headers={"Range": "bytes=-3"}), 206)
    eq(r.body, b"ore", "Range at a snapshot")
    eq(expect(srv.get_file(vid, "f.txt"), 200).body, b"after!", "f.txt now")
    expect_error(srv.get_file(vid, "f.txt", query={"snapshot": "nosuchsnapshot"}), 404)


def test_labels_and_filter(srv):
    vid = srv.create_volume()["id"]
    a = srv.snapshot(vid, labels={"env": "prod", "team": "core"})
    b = srv.snapshot(vid, labels={"env": "prod", "team": "web"})
    c = srv.snapshot(vid, labels={"env": "dev"})
    eq(a["labels"], {"env": "prod", "team": "core"}, "labels in the answer")
    ids = lambda j: sorted(s["id"] for s in _snap_list(j))
    eq(ids(_snaps(srv, vid)), sorted([a["id"], b["id"], c["id"]]), "all snapshots")
    eq(ids(_snaps(srv, vid, ["env:prod"])), sorted([a["id"], b["id"]]), "label env:prod")
    eq(ids(_snaps(srv, vid, ["env:prod", "team:web"])), [b["id"]],
       "two labels must both hold")
    eq(ids(_snaps(srv, vid, ["env:prod", "team:nope"])), [], "no snapshot holds both")
    eq(ids(_snaps(srv, vid, ["env:staging"])), [], "unknown label value")


def test_patch_pin_and_labels(srv):
    vid = srv.create_volume()["id"]
    s = srv.snapshot(vid, labels={"a": "1"})
    url = "/v1/volumes/%s/snapshots/%s" % (vid, s["id"])
    p = expect(srv.patch(url, json={"pinned": True}), 200).json()
    eq((p["pinned"], p["labels"]), (True, {"a": "1"}), "after pin")
    p = expect(srv.patch(url, json={"labels": {"b": "2"}}), 200).json()
    eq((p["pinned"], p["labels"]), (True, {"b": "2"}), "labels replaced, still pinned")
    g = expect(srv.get(url), 200).json()
    eq((g["pinned"], g["labels"]), (True, {"b": "2"}), "GET after patch")
    expect_error(srv.patch(url, json={"pinned": "yes"}), 400)
    expect_error(srv.patch(url, json={"seq": 5}), 400)
    expect_error(srv.patch("/v1/volumes/%s/snapshots/nosuch" % vid, json={"pinned": True}), 404)


def test_delete_pinned_needs_force(srv):
    vid = srv.create_volume()["id"]
    s = srv.snapshot(vid, pinned=True)
    eq(s["pinned"], True, "pinned")
    url = "/v1/volumes/%s/snapshots/%s" % (vid, s["id"])
    expect_error(srv.delete(url), 409, "conflict")
    expect(srv.get(url), 200)
    expect(srv.delete(url + "?force=true"), 200, 204)
    expect_error(srv.get(url), 404)
    expect_error(srv.delete(url), 404)
    # unpinned: no force needed
    u = srv.snapshot(vid)
    expect(srv.delete("/v1/volumes/%s/snapshots/%s" % (vid, u["id"])), 200, 204)
    # pinned then unpinned: no force needed either
    p = srv.snapshot(vid, pinned=True)
    purl = "/v1/volumes/%s/snapshots/%s" % (vid, p["id"])
    expect(srv.patch(purl, json={"pinned": False}), 200)
    expect(srv.delete(purl), 200, 204)


@harness.timeout(180)
def test_retention_drops_oldest_unpinned(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f", b"f")
    pinned = srv.snapshot(vid, pinned=True)
    first = srv.snapshot(vid)
    made = [first]
    for i in range(99):
        s = srv.snapshot(vid)
        check(first["id"] not in json.dumps({k: v for k, v in s.items() if k != "id"}),
              "snapshot %d (of 100 unpinned) should drop nothing: %r" % (i + 2, s))
        made.append(s)
    eq(len(_snap_list(_snaps(srv, vid))), 101, "100 unpinned + 1 pinned kept")
    last = srv.snapshot(vid)
    rest = {k: v for k, v in last.items() if k != "id"}
    check(first["id"] in json.dumps(rest),
          "the 101st unpinned snapshot's answer names the dropped one (%s): %r" % (
              first["id"], last))
    check(pinned["id"] not in json.dumps(rest), "the pinned one is not dropped")
    expect_error(srv.get("/v1/volumes/%s/snapshots/%s" % (vid, first["id"])), 404)
    expect(srv.get("/v1/volumes/%s/snapshots/%s" % (vid, pinned["id"])), 200)
    expect(srv.get("/v1/volumes/%s/snapshots/%s" % (vid, made[1]["id"])), 200)
    ids = [s["id"] for s in _snap_list(_snaps(srv, vid))]
    eq(len(ids), 101, "still 100 unpinned + 1 pinned")
    check(first["id"] not in ids and pinned["id"] in ids and last["id"] in ids, "kept set")


def test_label_limits(srv):
    vid = srv.create_volume()["id"]
    url = "/v1/volumes/%s/snapshots" % vid
    sixteen = {"k%02d" % i: "v" for i in range(16)}
    expect(srv.post(url, json={"labels": sixteen}), 201)
    seventeen = dict(sixteen, k16="v")
    expect_error(srv.post(url, json={"labels": seventeen}), 400, mentions="16")
    expect(srv.post(url, json={"labels": {"k" * 63: "v"}}), 201)
    expect_error(srv.post(url, json={"labels": {"k" * 64: "v"}}), 400, mentions="63")
    expect(srv.post(url, json={"labels": {"k": "v" * 255}}), 201)
    expect_error(srv.post(url, json={"labels": {"k": "v" * 256}}), 400, mentions="255")
    expect_error(srv.post(url, json={"labels": {"k": 5}}), 400)
    expect_error(srv.post(url, json={"labels": ["k:v"]}), 400)
    expect_error(srv.post(url, json={"labels": {"": "v"}}), 400)
    s = srv.snapshot(vid)
    surl = "%s/%s" % (url, s["id"])
    expect_error(srv.patch(surl, json={"labels": seventeen}), 400)
    expect_error(srv.patch(surl, json={"labels": {"k" * 64: "v"}}), 400)
    eq(len(_snap_list(_snaps(srv, vid))), 4, "refused snapshots were not made")


def test_bad_snapshot_body(srv):
    vid = srv.create_volume()["id"]
    url = "/v1/volumes/%s/snapshots" % vid
    expect_error(srv.post(url, json={"pinned": "true"}), 400)
    expect_error(srv.post(url, json={"bogus": 1}), 400)
    expect_error(srv.post(url, body=b"{not json", headers={"Content-Type": "application/json"}),
                 400)
    expect_error(srv.post("/v1/volumes/nosuch/snapshots", json={}), 404)
    expect_error(srv.get("/v1/volumes/%s/snapshots/nosuch" % vid), 404)
    eq(len(_snap_list(_snaps(srv, vid))), 0, "no snapshot made")


def test_snapshot_of_given_files(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "real.txt", b"real")
    binary = os.urandom(1000)
    body = {"files": {"notes/a.txt": "hello text", "img/b.bin":
                      {"data": base64.b64encode(binary).decode()}},
            "labels": {"kind": "given"}}
    r = expect(srv.post("/v1/volumes/%s/snapshots" % vid, json=body), 201).json()
    eq(r["labels"], {"kind": "given"}, "labels")
    eq((r["files"], r["bytes"]), (2, len(b"hello text") + 1000), "files, bytes")
    eq(sorted((c["path"], c["sha256"]) for c in r["contents"]),
       sorted([("notes/a.txt", sha256(b"hello text")), ("img/b.bin", sha256(binary))]),
       "contents [{path, sha256}]")
    # the volume stays untouched
    eq(srv.seq(vid), 1, "volume seq")
    eq([f["path"] for f in srv.list_files(vid)["files"]], ["real.txt"], "volume files")
    expect_error(srv.get_file(vid, "notes/a.txt"), 404)
    # the snapshot reads as the files given
    eq(expect(srv.get_file(vid, "notes/a.txt", query={"snapshot": r["id"]}), 200).body,
       b"hello text", "text file at the snapshot")
    eq(sha256(expect(srv.get_file(vid, "img/b.bin", query={"snapshot": r["id"]}), 200).body),
       sha256(binary), "binary file at the snapshot")
    expect_error(srv.get_file(vid, "real.txt", query={"snapshot": r["id"]}), 404)
    ls = srv.list_files(vid, snapshot=r["id"])
    eq([f["path"] for f in ls["files"]], ["img/b.bin", "notes/a.txt"], "listing at it")
    j = expect(srv.get("/v1/volumes/%s/files" % vid,
                       query={"content": "true", "snapshot": r["id"], "prefix": "notes/"}),
               200).json()
    eq([(f["path"], f.get("text")) for f in j["files"]], [("notes/a.txt", "hello text")],
       "read-all at it")


def test_snapshot_of_given_files_whole_or_nothing(srv):
    vid = srv.create_volume()["id"]
    url = "/v1/volumes/%s/snapshots" % vid
    bads = [
        {"files": {"ok.txt": "x", "../evil.txt": "y"}},
        {"files": {"ok.txt": "x", "a//b": "y"}},
        {"files": {"ok.txt": "x", "bad.bin": {"data": "!!!not base64!!!"}}},
        {"files": {"ok.txt": "x", "n.txt": 5}},
        {"files": {"ok.txt": "x", "o.txt": {"text": "y"}}},
        {"files": "nope"},
    ]
    for b in bads:
        expect_error(srv.post(url, json=b), 400)
    eq(_snap_list(_snaps(srv, vid)), [], "no snapshot made by a refused body")
    eq(srv.seq(vid), 0, "seq")


@harness.timeout(120)
def test_snapshot_of_given_files_limits(srv):
    vid = srv.create_volume()["id"]
    url = "/v1/volumes/%s/snapshots" % vid
    files = {"f%04d" % i: "x" for i in range(1000)}
    r = expect(srv.post(url, json={"files": files}), 201).json()
    eq(r["files"], 1000, "1,000 given files")
    files["f1000"] = "x"
    expect_error(srv.post(url, json={"files": files}, timeout=60), 413, "too_large")
    big = base64.b64encode(b"\0" * (8 * 1024 * 1024 + 1)).decode()
    expect_error(srv.post(url, json={"files": {"a": {"data": big}, "b": {"data": big}}},
                          timeout=60), 413)
    eq(len(_snap_list(_snaps(srv, vid))), 1, "only the first snapshot made")


@harness.timeout(900)
def test_pinned_limit_10000(srv):
    harness.slow("makes 10,000 pinned snapshots")
    import concurrent.futures
    vid = srv.create_volume()["id"]
    url = "/v1/volumes/%s/snapshots" % vid

    def pin(_):
        return srv.post(url, json={"pinned": True}).status
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        statuses = list(ex.map(pin, range(10000)))
    eq(sorted(set(statuses)), [201], "10,000 pinned snapshots are allowed")
    r = srv.post(url, json={"pinned": True})
    err = expect_error(r, 409, "conflict")
    check("10000" in err["message"].replace(",", ""),
          "the 409 names the limit (10,000): %r" % err["message"])
    # unpinned ones still work (retention makes room for them)
    expect(srv.post(url, json={}), 201)
