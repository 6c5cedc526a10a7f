"""Files: put/get, versions and seq, headers, HEAD, Range, content types, safe download
headers, delete, move, capacity ceiling (API.md Volumes > Files)."""

import io
import os
import random
import re
import struct
import zipfile
import zlib

import harness
from harness import check, eq, expect, expect_error, sha256


def png_bytes():
    """A valid 1x1 PNG."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
            chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def test_put_get_round_trip(srv):
    vid = srv.create_volume()["id"]
    data = os.urandom(100_000)
    r = expect(srv.put_file(vid, "dir/sub/blob.bin", data), 201)
    j = r.json()
    eq({k: j.get(k) for k in ("path", "version", "size", "sha256", "seq")},
       {"path": "dir/sub/blob.bin", "version": 1, "size": len(data), "sha256": sha256(data),
        "seq": 1}, "PUT answer")
    check(isinstance(j.get("contentType"), str) and j["contentType"], "contentType in answer")
    g = expect(srv.get_file(vid, "dir/sub/blob.bin"), 200)
    eq(len(g.body), len(data), "size read back")
    eq(sha256(g.body), sha256(data), "sha256 read back")
    eq(g.header("Content-Length"), str(len(data)), "Content-Length")
    v = srv.volume(vid)
    eq((v["seq"], v["files"], v["bytes"]), (1, 1, len(data)), "volume (seq, files, bytes)")


def test_empty_file(srv):
    vid = srv.create_volume()["id"]
    j = srv.put_ok(vid, "empty", b"")
    eq((j["size"], j["sha256"]), (0, sha256(b"")), "empty file answer")
    g = expect(srv.get_file(vid, "empty"), 200)
    eq(g.body, b"", "empty body")


def test_leading_slash_ignored(srv):
    vid = srv.create_volume()["id"]
    r = expect(srv.put(srv.file_path(vid, "/lead.txt"), body=b"x"), 201).json()
    eq(r["path"], "lead.txt", "path with its leading / dropped")
    eq(expect(srv.get_file(vid, "lead.txt"), 200).body, b"x", "read without the slash")


def test_unicode_path(srv):
    vid = srv.create_volume()["id"]
    p = "dossier/été 2024/naïve ☃.txt"
    j = srv.put_ok(vid, p, "ünïcode".encode())
    eq(j["path"], p, "path echoed")
    eq(expect(srv.get_file(vid, p), 200).body, "ünïcode".encode(), "body")
    names = [f["path"] for f in srv.list_files(vid)["files"]]
    eq(names, [p], "listing")


def test_versions_and_seq(srv):
    vid = srv.create_volume()["id"]
    a1 = expect(srv.put_file(vid, "a.txt", b"one"), 201).json()
    b1 = expect(srv.put_file(vid, "b.txt", b"two"), 201).json()
    a2 = expect(srv.put_file(vid, "a.txt", b"three"), 200).json()
    eq((a1["version"], a1["seq"]), (1, 1), "first write")
    eq((b1["version"], b1["seq"]), (2, 2), "second write")
    eq((a2["version"], a2["seq"]), (3, 3), "overwrite: version = the seq that wrote it")
    # same bytes again is still a change
    a3 = expect(srv.put_file(vid, "a.txt", b"three"), 200).json()
    eq((a3["version"], a3["seq"]), (4, 4), "rewrite of the same bytes")
    d = expect(srv.delete(srv.file_path(vid, "b.txt")), 200, 204)
    eq(srv.seq(vid), 5, "seq after a delete")
    if d.status == 200 and d.body:
        eq(d.json().get("seq"), 5, "delete answer seq")
    eq(srv.volume(vid)["files"], 1, "files after the delete")


def test_etag_and_volume_seq_headers(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"aaa")
    srv.put_ok(vid, "b.txt", b"bbb")
    g = expect(srv.get_file(vid, "a.txt"), 200)
    eq(g.header("ETag"), '"1"', "ETag of a.txt (version 1)")
    eq(g.header("X-Volume-Seq"), "2", "X-Volume-Seq")
    srv.put_ok(vid, "a.txt", b"aaaa")
    g = expect(srv.get_file(vid, "a.txt"), 200)
    eq(g.header("ETag"), '"3"', "ETag after an overwrite")
    eq(g.header("X-Volume-Seq"), "3", "X-Volume-Seq after an overwrite")


def test_head(srv):
    vid = srv.create_volume()["id"]
    data = b"0123456789" * 10
    srv.put_ok(vid, "h.txt", data, content_type="text/plain")
    h = expect(srv.head(srv.file_path(vid, "h.txt")), 200)
    eq(h.body, b"", "HEAD body")
    eq(h.header("Content-Length"), "100", "HEAD Content-Length")
    eq(h.header("ETag"), '"1"', "HEAD ETag")
    eq(h.header("X-Volume-Seq"), "1", "HEAD X-Volume-Seq")
    check((h.header("Content-Type") or "").startswith("text/plain"),
          "HEAD Content-Type %r" % h.header("Content-Type"))
    expect(srv.head(srv.file_path(vid, "absent.txt")), 404)


def _range(srv, vid, path, rng):
    return srv.get_file(vid, path, headers={"Range": rng})


def test_range(srv):
    vid = srv.create_volume()["id"]
    data = bytes(range(100))
    srv.put_ok(vid, "r.bin", data)
    cases = [("bytes=0-0", 0, 0), ("bytes=99-99", 99, 99), ("bytes=-5", 95, 99),
             ("bytes=95-", 95, 99), ("bytes=10-19", 10, 19), ("bytes=50-500", 50, 99),
             ("bytes=0-", 0, 99), ("bytes=-100", 0, 99), ("bytes=-500", 0, 99)]
    for rng, a, b in cases:
        r = expect(_range(srv, vid, "r.bin", rng), 206)
        eq(r.body, data[a:b + 1], "body for Range: %s" % rng)
        eq(r.header("Content-Range"), "bytes %d-%d/100" % (a, b), "Content-Range for %s" % rng)
        eq(r.header("Content-Length"), str(b - a + 1), "Content-Length for %s" % rng)
        eq(r.header("ETag"), '"1"', "ETag on a 206")
    check("bytes" in (expect(srv.get_file(vid, "r.bin"), 200).header("Accept-Ranges") or ""),
          "Accept-Ranges: bytes on a full GET")


def test_range_not_satisfiable(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "r.bin", bytes(range(100)))
    for rng in ("bytes=100-", "bytes=100-100", "bytes=150-200", "bytes=-0"):
        r = _range(srv, vid, "r.bin", rng)
        expect_error(r, 416, "range_not_satisfiable")
        eq(r.header("Content-Range"), "bytes */100", "Content-Range on 416 for %s" % rng)
    srv.put_ok(vid, "empty", b"")
    expect_error(_range(srv, vid, "empty", "bytes=0-0"), 416)
    eq(srv.seq(vid), 2, "seq")


def test_range_head(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "r.bin", bytes(range(100)))
    r = srv.head(srv.file_path(vid, "r.bin"), headers={"Range": "bytes=-5"})
    expect(r, 206)
    eq(r.header("Content-Range"), "bytes 95-99/100", "HEAD Content-Range")


def test_content_type_kept(srv):
    vid = srv.create_volume()["id"]
    j = srv.put_ok(vid, "data.bin", b"\x00\x01binary", content_type="application/vnd.coffer.test")
    eq(j["contentType"], "application/vnd.coffer.test", "contentType in the answer")
    g = expect(srv.get_file(vid, "data.bin"), 200)
    eq(g.header("Content-Type"), "application/vnd.coffer.test", "Content-Type served")
    ls = srv.list_files(vid)["files"]
    eq(ls[0]["contentType"], "application/vnd.coffer.test", "contentType in the listing")


def test_content_type_sniffed(srv):
    vid = srv.create_volume()["id"]
    png = png_bytes()
    # A PNG under a name that says nothing: the bytes tell.
    j = srv.put_ok(vid, "picture", png, headers={"Content-Type": None})
    eq(j["contentType"], "image/png", "sniffed type of PNG bytes")
    g = expect(srv.get_file(vid, "picture"), 200)
    eq(g.header("Content-Type"), "image/png", "served type of PNG bytes")
    j = srv.put_ok(vid, "conf.json", b'{"a": [1, 2, 3]}\n')
    check(j["contentType"].startswith("application/json"),
          ".json sniffed as application/json, got %r" % j["contentType"])
    j = srv.put_ok(vid, "notes.txt", b"hello world\n")
    check(j["contentType"].startswith("text/plain"),
          ".txt sniffed as text/plain, got %r" % j["contentType"])


def test_content_type_sniff_edges(srv):
    """Binary signatures win over any name; text with a name that says its type
    takes the name's type (UTF-8 cut at the sniffer's 4 KiB head included);
    text without such a name and bytes that are not text are libmagic's."""
    vid = srv.create_volume()["id"]
    untyped = {"Content-Type": None}
    eq(srv.put_ok(vid, "disguised.txt", png_bytes(), headers=untyped)["contentType"],
       "image/png", "PNG bytes under a .txt name")
    eq(srv.put_ok(vid, "long.md", "é".encode() * 3001, headers=untyped)["contentType"],
       "text/markdown", "UTF-8 text whose 4 KiB head ends inside a character")
    eq(srv.put_ok(vid, "ctl.md", b"a\x01b\n" * 10, headers=untyped)["contentType"],
       "text/markdown", "a control character: libmagic reads it, the name still wins")
    check(srv.put_ok(vid, "script", b"#!/bin/sh\necho hi\n",
                     headers=untyped)["contentType"].startswith("text/"),
          "text without an extension: libmagic's text type")
    eq(srv.put_ok(vid, "blob", random.Random(7).randbytes(4096), headers=untyped)["contentType"],
       "application/octet-stream", "bytes that say nothing")
    eq(srv.put_ok(vid, "empty.json", b"", headers=untyped)["contentType"],
       "application/json", "an empty file: by its name")


def _docx():
    """A minimal OOXML document: libmagic's answer for it is 71 bytes long."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("_rels/.rels", "<Relationships/>")
        z.writestr("word/document.xml", "<document/>")
    return b.getvalue()


def test_content_type_of_the_same_bytes_again(srv):
    """libmagic's answers are kept by the SHA-256 of the bytes it read, so the
    same bytes written again or under another name are not sniffed again: each
    file still gets libmagic's type for its own bytes, never another's (bytes
    that differ in one byte or in length included)."""
    vid = srv.create_volume()["id"]
    untyped = {"Content-Type": None}
    cases = [b"#!/bin/sh\necho hi\n", png_bytes(), b"a,b,c\n1,2,3\n4,5,6\n",
             b"a,b,c\n1,2,3\n4,5,6", b"hello world\n", b"hello world!", b"070707\n",
             b"070708\n", random.Random(3).randbytes(4096), _docx()]
    want = [harness.libmagic_type(b) for b in cases]
    for rnd in range(2):
        for i, b in enumerate(cases):
            j = srv.put_ok(vid, "r%d/f%d" % (rnd, i), b, headers=untyped)
            eq(j["contentType"], want[i], "round %d: type of %r" % (rnd, b[:20]))
    j = srv.put_ok(vid, "r0/f0", cases[0], headers=untyped)   # written again, same path
    eq(j["contentType"], want[0], "the same bytes written again")


def test_safe_download_headers(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "plain.txt", b"hello\n")
    srv.put_ok(vid, "page.html", b"<!doctype html><html><script>alert(1)</script></html>")
    srv.put_ok(vid, "img.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
    srv.put_ok(vid, "declared", b"<html><body>x</body></html>", content_type="text/html")
    srv.put_ok(vid, "feed.xml", b'<?xml version="1.0"?><feed></feed>')
    srv.put_ok(vid, "app.js", b"alert(1);\n", content_type="application/javascript")
    for p in ("plain.txt", "page.html", "img.svg", "declared", "feed.xml", "app.js"):
        g = expect(srv.get_file(vid, p), 200)
        eq((g.header("X-Content-Type-Options") or "").lower(), "nosniff",
           "X-Content-Type-Options of %s" % p)
        check("sandbox" in (g.header("Content-Security-Policy") or ""),
              "Content-Security-Policy: sandbox on %s, got %r" % (
                  p, g.header("Content-Security-Policy")))
    for p in ("page.html", "img.svg", "declared", "feed.xml", "app.js"):
        g = expect(srv.get_file(vid, p), 200)
        check((g.header("Content-Disposition") or "").lower().startswith("attachment"),
              "Content-Disposition: attachment for %s (type %s), got %r" % (
                  p, g.header("Content-Type"), g.header("Content-Disposition")))
    g = expect(srv.get_file(vid, "plain.txt"), 200)
    check(not (g.header("Content-Disposition") or "").lower().startswith("attachment"),
          "plain text is not forced to download")


def test_get_absent_404(srv):
    vid = srv.create_volume()["id"]
    expect_error(srv.get_file(vid, "nope.txt"), 404, "not_found")
    srv.put_ok(vid, "dir/a.txt", b"a")
    # a directory is not a file
    expect_error(srv.get_file(vid, "dir"), 404)


def test_delete(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "d.txt", b"d")
    expect(srv.delete(srv.file_path(vid, "d.txt")), 200, 204)
    expect_error(srv.get_file(vid, "d.txt"), 404)
    seq = srv.seq(vid)
    expect_error(srv.delete(srv.file_path(vid, "d.txt")), 404, "not_found")
    expect_error(srv.delete(srv.file_path(vid, "never.txt")), 404)
    eq(srv.seq(vid), seq, "seq after deleting absent files")


def test_delete_if_match(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "d.txt", b"d")
    srv.put_ok(vid, "d.txt", b"dd")
    e = expect_error(srv.delete(srv.file_path(vid, "d.txt"), headers={"If-Match": '"1"'}),
                     412, "precondition_failed")
    eq(e.get("current", {}).get("version"), 2, "current.version in the 412")
    eq(srv.seq(vid), 2, "seq after a refused delete")
    expect(srv.delete(srv.file_path(vid, "d.txt"), headers={"If-Match": '"2"'}), 200, 204)
    expect_error(srv.get_file(vid, "d.txt"), 404)


def test_directories_implicit(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a/b/c.txt", b"c")
    # a file where a directory exists, or under a file, cannot be made
    r = srv.put_file(vid, "a/b", b"x")
    expect_error(r, 409, "conflict")
    r = srv.put_file(vid, "a/b/c.txt/d", b"x")
    expect_error(r, 409, "conflict")
    eq(srv.seq(vid), 1, "seq after refused writes")
    expect(srv.delete(srv.file_path(vid, "a/b/c.txt")), 200, 204)
    # the directory is gone with its last file: the name is free for a file
    srv.put_ok(vid, "a/b", b"now a file")


def test_move_file(srv):
    vid = srv.create_volume()["id"]
    data = os.urandom(5000)
    srv.put_ok(vid, "from.bin", data)
    r = expect(srv.post("/v1/volumes/%s/move" % vid, json={"from": "from.bin", "to": "x/to.bin"}),
               200).json()
    eq(r.get("seq"), 2, "move answer seq")
    eq(srv.seq(vid), 2, "seq after the move")
    expect_error(srv.get_file(vid, "from.bin"), 404)
    eq(sha256(expect(srv.get_file(vid, "x/to.bin"), 200).body), sha256(data), "moved bytes")
    eq(srv.volume(vid)["files"], 1, "files after the move")


def test_move_directory_one_seq(srv):
    vid = srv.create_volume()["id"]
    files = {"src/a.txt": b"a", "src/b/c.txt": b"c", "src/b/d/e.bin": os.urandom(300)}
    for p, d in files.items():
        srv.put_ok(vid, p, d)
    srv.put_ok(vid, "srcx.txt", b"not under src/")
    before = srv.seq(vid)
    expect(srv.post("/v1/volumes/%s/move" % vid, json={"from": "src", "to": "dst/moved"}), 200)
    eq(srv.seq(vid), before + 1, "a directory move is ONE change")
    names = sorted(f["path"] for f in srv.list_files(vid)["files"])
    eq(names, ["dst/moved/a.txt", "dst/moved/b/c.txt", "dst/moved/b/d/e.bin", "srcx.txt"],
       "files after the move")
    for p, d in files.items():
        q = "dst/moved/" + p[len("src/"):]
        eq(sha256(expect(srv.get_file(vid, q), 200).body), sha256(d), "bytes of " + q)


def test_move_conflict_and_overwrite(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"A")
    srv.put_ok(vid, "b.txt", b"B")
    expect_error(srv.post("/v1/volumes/%s/move" % vid, json={"from": "a.txt", "to": "b.txt"}),
                 409, "conflict")
    expect_error(srv.post("/v1/volumes/%s/move" % vid,
                          json={"from": "a.txt", "to": "b.txt", "overwrite": False}), 409)
    eq(srv.seq(vid), 2, "seq after refused moves")
    eq(expect(srv.get_file(vid, "b.txt"), 200).body, b"B", "b.txt untouched")
    expect(srv.post("/v1/volumes/%s/move" % vid,
                    json={"from": "a.txt", "to": "b.txt", "overwrite": True}), 200)
    eq(srv.seq(vid), 3, "seq after the overwrite move")
    eq(expect(srv.get_file(vid, "b.txt"), 200).body, b"A", "b.txt now has a.txt's bytes")
    expect_error(srv.get_file(vid, "a.txt"), 404)
    eq(srv.volume(vid)["files"], 1, "files")


def test_move_bad(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"A")
    mv = "/v1/volumes/%s/move" % vid
    expect_error(srv.post(mv, json={"from": "nope.txt", "to": "b.txt"}), 404)
    expect_error(srv.post(mv, json={"from": "a.txt"}), 400)
    expect_error(srv.post(mv, json={"from": "a.txt", "to": "../b.txt"}), 400)
    expect_error(srv.post(mv, json={"from": "a.txt", "to": "b.txt", "overwrite": "yes"}), 400)
    expect_error(srv.post(mv, json={"from": "a.txt", "to": "b.txt", "extra": 1}), 400)
    eq(srv.seq(vid), 1, "seq after refused moves")


# ------------------------------------------------------------------ capacity

def _small_ceiling_volume(srv):
    """A volume with a 1 MiB ceiling."""
    r = srv.post("/v1/volumes", json={"name": "small", "ceiling": 1048576})
    expect(r, 201)
    v = r.json()
    eq(v["ceiling"], 1048576, "ceiling")
    check(v["capacity"] <= v["ceiling"], "capacity %s <= ceiling %s" % (v["capacity"], v["ceiling"]))
    return v


def test_capacity_ceiling_refuses(srv):
    v = _small_ceiling_volume(srv)
    vid = v["id"]
    srv.put_ok(vid, "a.bin", os.urandom(600 * 1024))
    r = srv.put_file(vid, "b.bin", os.urandom(600 * 1024))
    err = expect_error(r, 400, "validation_error", mentions="ceiling")
    msg = err["message"]
    check(re.search(r"1048576|1 ?MiB|1\.0 ?MiB|1 ?MB|1\.0 ?MB|1\.05 ?MB", msg),
          "message names the ceiling's value: %r" % msg)
    eq(srv.seq(vid), 1, "seq after a refused write")
    expect_error(srv.get_file(vid, "b.bin"), 404)
    vv = srv.volume(vid)
    eq((vv["files"], vv["bytes"]), (1, 600 * 1024), "files, bytes")
    # an overwrite that stays under the ceiling still works
    srv.put_ok(vid, "a.bin", os.urandom(900 * 1024))
    # a streamed (chunked) upload past the ceiling is refused too
    def gen():
        for _ in range(20):
            yield os.urandom(64 * 1024)
    r = srv.put(srv.file_path(vid, "c.bin"), body=gen())
    expect_error(r, 400, mentions="ceiling")
    eq(srv.seq(vid), 2, "seq after a refused streamed write")



# ------------------------------------------------------------------ concurrency and size

def test_concurrent_writes_one_seq_each(srv):
    vid = srv.create_volume()["id"]
    files = {"t%d/f%02d" % (t, i): ("%d-%d" % (t, i)).encode() for t in range(8) for i in range(25)}
    answers = srv.put_many(vid, files, threads=8)
    versions = sorted(a["version"] for a in answers.values())
    eq(versions, list(range(1, 201)), "200 concurrent writes: versions are seqs 1..200, each once")
    for a in answers.values():
        eq(a["seq"], a["version"], "a write's seq is the version it made")
    eq(srv.seq(vid), 200, "seq after 200 writes")
    ch = expect(srv.get("/v1/volumes/%s/changes" % vid, query={"since": 0}), 200).json()
    eq([c["seq"] for c in ch["changes"]], list(range(1, 201)), "changes feed seqs")
    by_path = {c["path"]: c["version"] for c in ch["changes"]}
    eq(by_path, {p: a["version"] for p, a in answers.items()}, "feed versions match the answers")


def _peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@harness.timeout(180)
def test_large_streaming_put_get_memory(srv):
    """A 256 MiB body is streamed both ways: cofferd's peak RSS grows far less than it."""
    vid = srv.create_volume()["id"]
    size = 256 * 1024 * 1024
    block = os.urandom(1 << 20)
    import hashlib
    h = hashlib.sha256()
    for i in range(256):
        h.update(bytes([i]) + block[1:])
    want = h.hexdigest()

    def gen():
        for i in range(256):
            yield bytes([i]) + block[1:]
    base = _rss_kib(srv.proc.pid)
    r = expect(srv.put(srv.file_path(vid, "big.bin"), body=gen(), timeout=300), 201).json()
    eq((r["size"], r["sha256"]), (size, want), "size, sha256 of a 256 MiB streamed PUT")
    put_peak = _peak_rss_kib(srv.proc.pid)
    g = srv.get_file(vid, "big.bin", timeout=300)
    expect(g, 200)
    eq((len(g.body), sha256(g.body)), (size, want), "256 MiB read back")
    get_peak = _peak_rss_kib(srv.proc.pid)
    del g
    print("rss base %d KiB, peak after PUT %d KiB, after GET %d KiB" % (base, put_peak, get_peak))
    if harness.SCALE > 1:
        return  # sanitizers keep freed memory in quarantine: RSS says nothing there
    check(put_peak - base < 96 * 1024, "cofferd's peak RSS grew by %d MiB during a 256 MiB PUT "
          "(bodies must be streamed, never held whole)" % ((put_peak - base) // 1024))
    check(get_peak - base < 96 * 1024, "cofferd's peak RSS grew by %d MiB during a 256 MiB GET"
          % ((get_peak - base) // 1024))
