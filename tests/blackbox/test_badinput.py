"""Bad input: paths at every edge, bad JSON, unknown fields, wrong types, oversize bodies,
unknown ids. Every refusal leaves seq unchanged (API.md General, issue 2 "Bad input")."""

from harness import check, eq, expect, expect_error

# URL-encoded paths (sent as they are) that must be refused with 400.
BAD_PATHS = [
    "a/../b.txt", "../b.txt", "a/..", "..", "a/./b.txt", "./b.txt", "a/.", ".",
    "a/%2E%2E/b.txt", "%2e%2e/b.txt", "%2E/b.txt",
    "a//b.txt", "a/", "//a.txt", "a/b//", "/",
    "a%00b.txt", "%00", "a/%00/b",
    "a%FFb.txt", "%C3%28.txt", "%C0%AF.txt", "%ED%A0%80.txt", "a/%80",
]


def _seg255(c="s"):
    return c * 255


def test_bad_paths_put_refused(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a/b.txt", b"existing")
    srv.put_ok(vid, "b.txt", b"existing")
    for p in BAD_PATHS:
        r = srv.put(srv.file_path(vid, p, quote=False), body=b"x")
        expect_error(r, 400, "validation_error")
    eq(srv.seq(vid), 2, "seq after refused writes to bad paths")
    eq(sorted(f["path"] for f in srv.list_files(vid)["files"]), ["a/b.txt", "b.txt"],
       "files after refused writes")
    eq(expect(srv.get_file(vid, "a/b.txt"), 200).body, b"existing", "a/b.txt untouched")
    # `a%00b.txt` must not have been cut to `a`
    expect_error(srv.get_file(vid, "a"), 404)


def test_bad_paths_get_delete_refused(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "b.txt", b"x")
    for p in ("a/../b.txt", "a//b.txt", "b.txt%00", "%FF", "./b.txt"):
        expect_error(srv.get(srv.file_path(vid, p, quote=False)), 400)
        expect_error(srv.delete(srv.file_path(vid, p, quote=False)), 400)
    eq(srv.seq(vid), 1, "seq")
    eq(expect(srv.get_file(vid, "b.txt"), 200).body, b"x", "b.txt untouched")


def test_path_length_edges(srv):
    vid = srv.create_volume()["id"]
    # 4096 bytes in segments of at most 255: 15 x 255 + 200 + 55 + 16 slashes
    segs = ["p" * 255] * 15 + ["p" * 200, "p" * 55]
    p4096 = "/".join(segs)
    eq(len(p4096.encode()), 4096, "test's own 4096-byte path")
    r = expect(srv.put_file(vid, p4096, b"ok"), 201).json()
    eq(r["path"], p4096, "4096-byte path accepted")
    eq(expect(srv.get_file(vid, p4096), 200).body, b"ok", "4096-byte path read back")
    seq = srv.seq(vid)
    expect_error(srv.put_file(vid, p4096 + "q", b"no"), 400, mentions="4096")
    expect_error(srv.put_file(vid, "x" + p4096, b"no"), 400)
    eq(srv.seq(vid), seq, "seq after a 4097-byte path")
    # a leading / does not count against the limit (it is ignored)
    expect(srv.put_file(vid, "/" + p4096, b"again"), 200)



def test_longest_path_percent_encoded_with_16_kib_of_headers(srv):
    """The longest request the API allows fits in a connection's memory: a 4096-byte
    path of two-byte characters, every byte percent-encoded (12 KiB of URL), with
    16 KiB of other headers, is stored and read back (cofferd's MHD connection
    memory is sized to it: docs/api.md)."""
    vid = srv.create_volume()["id"]
    p = "/".join(["\u00e9" * 127] * 16 + ["p" * 16])
    eq(len(p.encode()), 4096, "test's own 4096-byte path")
    check(len(srv.file_path(vid, p)) > 12000, "the URL is percent-encoded")
    pad = {"X-Pad": "a" * (16 * 1024 - 64)}
    r = expect(srv.put_file(vid, p, b"long", headers=pad), 201).json()
    eq(r["path"], p, "the 4096-byte path as stored")
    eq(expect(srv.get_file(vid, p, headers=pad), 200).body, b"long", "read back")
    expect(srv.put_file(vid, p, b"again", headers=pad), 200)

def test_segment_length_edges(srv):
    vid = srv.create_volume()["id"]
    expect(srv.put_file(vid, "d/" + "s" * 255 + "/f", b"ok"), 201)
    expect(srv.put_file(vid, "s" * 255, b"ok"), 201)
    # bytes, not characters: 127 x "é" (2 bytes) + "a" = 255 bytes
    expect(srv.put_file(vid, "é" * 127 + "a", b"ok"), 201)
    seq = srv.seq(vid)
    expect_error(srv.put_file(vid, "d/" + "s" * 256 + "/f", b"no"), 400, mentions="255")
    expect_error(srv.put_file(vid, "s" * 256, b"no"), 400)
    expect_error(srv.put_file(vid, "é" * 128, b"no"), 400)
    eq(srv.seq(vid), seq, "seq after 256-byte segments")


def test_unusual_but_valid_paths(srv):
    vid = srv.create_volume()["id"]
    for p in ("...", "a/.hidden", "..a", "a..", "sp ace/x y.txt", "semi;colon", "q?mark",
              "hash#tag", "pct%20lit", "plus+sign"):  # a tab is a control character: 400
        r = expect(srv.put_file(vid, p, p.encode()), 201).json()
        eq(r["path"], p, "path echoed for %r" % p)
        eq(expect(srv.get_file(vid, p), 200).body, p.encode(), "read back %r" % p)


def test_bad_json_bodies(srv):
    vid = srv.create_volume()["id"]
    raw = {"Content-Type": "application/json"}
    for body in (b"{", b"", b"[]", b'"name"', b"null", b'{"name": "x"} trailing',
                 b'{"name": "\xff"}'):
        expect_error(srv.post("/v1/volumes", body=body, headers=raw), 400)
    for j in ({}, {"name": 5}, {"name": None}, {"name": ["x"]}, {"name": "x", "ceiling": "big"},
              {"name": "x", "ceiling": -1}, {"name": "x", "ceiling": 1.5},
              {"name": "x", "bogus": 1}, {"name": "x", "Name": "y"}):
        expect_error(srv.post("/v1/volumes", json=j), 400)
    mv = "/v1/volumes/%s/move" % vid
    srv.put_ok(vid, "a", b"a")
    for body in (b"{", b"[1]"):
        expect_error(srv.post(mv, body=body, headers=raw), 400)
    for j in ({"from": 1, "to": "b"}, {"from": "a", "to": None}, {"from": "a", "to": "b", "x": 1}):
        expect_error(srv.post(mv, json=j), 400)
    eq(srv.seq(vid), 1, "seq after refused bodies")


def test_oversize_json_body(srv):
    vid = srv.create_volume()["id"]

    def gen():
        yield b'{"name": "'
        chunk = b"x" * (1 << 20)
        for _ in range(64):
            yield chunk
        yield b'"}'
    r = srv.post("/v1/volumes", body=gen(), headers={"Content-Type": "application/json"},
                 timeout=120)
    expect_error(r, 413, "too_large")
    # announced by Content-Length
    big = b'{"name": "' + b"y" * (40 << 20) + b'"}'
    r = srv.post("/v1/volumes", body=big, headers={"Content-Type": "application/json"},
                 timeout=120)
    expect_error(r, 413, "too_large")
    eq(srv.seq(vid), 0, "seq")


def test_unknown_ids_404(srv):
    vid = srv.create_volume()["id"]
    for method, path in (("GET", "/v1/volumes/nosuch"),
                         ("GET", "/v1/volumes/nosuch/files"),
                         ("GET", "/v1/volumes/nosuch/files/a"),
                         ("DELETE", "/v1/volumes/nosuch"),
                         ("GET", "/v1/volumes/nosuch/changes?since=0"),
                         ("GET", "/v1/volumes/nosuch/snapshots"),
                         ("GET", "/v1/volumes/%s/snapshots/nosuch" % vid),
                         ("DELETE", "/v1/volumes/%s/snapshots/nosuch" % vid),
                         ("GET", "/v1/volumes/%s/files/a?snapshot=nosuch" % vid),
                         ("GET", "/v1/volumes/%s/files?snapshot=nosuch" % vid)):
        expect_error(srv.request(method, path), 404, "not_found")
    expect_error(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": "nosuch"}), 404)
    expect_error(srv.post("/v1/volumes/%s/fork" % vid, json={"snapshot": "nosuch"}), 404)
    eq(srv.seq(vid), 0, "seq")


def test_unknown_route_404(srv):
    expect_error(srv.get("/v1/nothing-here"), 404)
    expect_error(srv.get("/nothing"), 404)


def test_too_many_ids(srv):
    ids = ",".join("v%d" % i for i in range(51))
    expect_error(srv.get("/v1/volumes", query={"ids": ids}), 400, mentions="50")


def test_unknown_query_values(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a", b"a")
    expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"content": "maybe"}), 400)
    expect_error(srv.delete("/v1/volumes/%s/snapshots/%s" % (vid, srv.snapshot(vid)["id"]),
                            query={"force": "perhaps"}), 400)
    eq(srv.seq(vid), 1, "seq")
