"""Listing: prefix, glob, cursor pages, ?snapshot=; read-all (content=true) and its limits."""

import base64
import os
import re
import time

import harness
from harness import check, eq, expect, expect_error, sha256

TREE = {
    "a/1.txt": b"one",
    "a/2.md": b"# two",
    "a/b/3.txt": b"three",
    "a/b/c/4.txt": b"four",
    "ab.txt": b"ab",
    "c.txt": b"c",
    "d/x.bin": b"\x00\x01\x02",
}


def _tree(srv):
    vid = srv.create_volume()["id"]
    for p in sorted(TREE):
        srv.put_ok(vid, p, TREE[p])
    return vid


def _paths(j):
    return [f["path"] for f in j["files"]]


def test_list_all_sorted_with_fields(srv):
    vid = _tree(srv)
    j = srv.list_files(vid)
    eq(j["seq"], len(TREE), "listing seq")
    eq(_paths(j), sorted(TREE), "paths, sorted")
    check(not j.get("cursor"), "no cursor on the last page: %r" % j.get("cursor"))
    f = {x["path"]: x for x in j["files"]}
    for p, d in TREE.items():
        e = f[p]
        for k in ("path", "size", "version", "contentType", "sha256", "updatedAt"):
            check(k in e, "listing entry has %s: %r" % (k, e))
        eq((e["size"], e["sha256"]), (len(d), sha256(d)), "size, sha256 of " + p)
        check(re.match(r"^\d{4}-\d\d-\d\dT", e["updatedAt"]), "updatedAt RFC 3339: %r" % e)
    eq(f["a/1.txt"]["version"], 1, "version of the first file written")


def test_empty_volume_listing(srv):
    vid = srv.create_volume()["id"]
    j = srv.list_files(vid)
    eq((j["seq"], j["files"]), (0, []), "empty listing")


def test_prefix(srv):
    vid = _tree(srv)
    eq(_paths(srv.list_files(vid, prefix="a/")), ["a/1.txt", "a/2.md", "a/b/3.txt", "a/b/c/4.txt"],
       "prefix a/")
    eq(_paths(srv.list_files(vid, prefix="a/b/")), ["a/b/3.txt", "a/b/c/4.txt"], "prefix a/b/")
    eq(_paths(srv.list_files(vid, prefix="zzz/")), [], "prefix matching nothing")


def test_glob(srv):
    vid = _tree(srv)
    eq(_paths(srv.list_files(vid, glob="*.txt")), ["ab.txt", "c.txt"],
       "glob *.txt (* does not cross /)")
    eq(_paths(srv.list_files(vid, glob="**/*.txt")),
       ["a/1.txt", "a/b/3.txt", "a/b/c/4.txt", "ab.txt", "c.txt"], "glob **/*.txt")
    eq(_paths(srv.list_files(vid, glob="a/*")), ["a/1.txt", "a/2.md"], "glob a/*")
    eq(_paths(srv.list_files(vid, glob="a/**")), ["a/1.txt", "a/2.md", "a/b/3.txt", "a/b/c/4.txt"],
       "glob a/**")
    eq(_paths(srv.list_files(vid, glob="a/**/*.txt")), ["a/1.txt", "a/b/3.txt", "a/b/c/4.txt"],
       "glob a/**/*.txt")
    eq(_paths(srv.list_files(vid, glob="?.txt")), ["c.txt"], "glob ?.txt")
    eq(_paths(srv.list_files(vid, glob="**/*.md")), ["a/2.md"], "glob **/*.md")
    # prefix and glob together (this glob reads the same relative or not)
    eq(_paths(srv.list_files(vid, prefix="a/", glob="**/*.txt")),
       ["a/1.txt", "a/b/3.txt", "a/b/c/4.txt"], "prefix a/ + glob **/*.txt")


def test_cursor_pages(srv):
    vid = srv.create_volume()["id"]
    names = ["p/%03d.txt" % i for i in range(25)]
    srv.put_many(vid, {n: n.encode() for n in names})
    seen, cursor, pages = [], None, 0
    while True:
        q = {"limit": 7}
        if cursor:
            q["cursor"] = cursor
        j = srv.list_files(vid, **q)
        pages += 1
        check(len(j["files"]) <= 7, "page of at most limit=7 entries, got %d" % len(j["files"]))
        seen += _paths(j)
        cursor = j.get("cursor")
        if not cursor:
            break
        check(pages < 10, "cursor pages never end")
    eq(seen, names, "every file exactly once, in order, across pages")
    eq(pages, 4, "pages for 25 files at limit 7")


def test_cursor_with_prefix_and_glob(srv):
    vid = srv.create_volume()["id"]
    files = {"x/%02d.txt" % i: b"t" for i in range(10)}
    files.update({"x/%02d.md" % i: b"m" for i in range(10)})
    files.update({"y/%02d.txt" % i: b"y" for i in range(5)})
    srv.put_many(vid, files)
    seen, cursor = [], None
    for _ in range(20):
        q = {"limit": 3, "prefix": "x/", "glob": "**/*.txt"}
        if cursor:
            q["cursor"] = cursor
        j = srv.list_files(vid, **q)
        seen += _paths(j)
        cursor = j.get("cursor")
        if not cursor:
            break
    eq(seen, sorted(p for p in files if p.startswith("x/") and p.endswith(".txt")),
       "filtered pages")


def test_bad_listing_params(srv):
    vid = _tree(srv)
    expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"limit": "abc"}), 400)
    expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"limit": "-1"}), 400)
    expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"snapshot": "nosuchsnap"}), 404)


def test_listing_at_snapshot(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "keep.txt", b"old")
    srv.put_ok(vid, "gone.txt", b"gone")
    snap = srv.snapshot(vid)
    srv.put_ok(vid, "keep.txt", b"new!")
    srv.put_ok(vid, "added.txt", b"added")
    expect(srv.delete(srv.file_path(vid, "gone.txt")), 200, 204)
    j = srv.list_files(vid, snapshot=snap["id"])
    eq(j["seq"], snap["seq"], "seq of a snapshot listing")
    eq(_paths(j), ["gone.txt", "keep.txt"], "paths at the snapshot")
    k = {f["path"]: f for f in j["files"]}["keep.txt"]
    eq((k["size"], k["sha256"], k["version"]), (3, sha256(b"old"), 1), "keep.txt at the snapshot")
    eq(_paths(srv.list_files(vid)), ["added.txt", "keep.txt"], "paths now")


# ------------------------------------------------------------------ read-all

def test_read_all_text_and_data(srv):
    vid = srv.create_volume()["id"]
    binary = bytes(range(256))
    srv.put_ok(vid, "t/hello.txt", "héllo\n".encode())
    srv.put_ok(vid, "t/bin.dat", binary)
    srv.put_ok(vid, "t/empty", b"")
    srv.put_ok(vid, "u/other.txt", b"other")
    j = expect(srv.get("/v1/volumes/%s/files" % vid, query={"content": "true", "prefix": "t/"}),
               200).json()
    eq(j["seq"], 4, "read-all seq")
    files = {f["path"]: f for f in j["files"]}
    eq(sorted(files), ["t/bin.dat", "t/empty", "t/hello.txt"], "read-all paths")
    h = files["t/hello.txt"]
    eq(h.get("text"), "héllo\n", "text of a UTF-8 file")
    check("data" not in h, "a UTF-8 file has no data field: %r" % h)
    b = files["t/bin.dat"]
    check("data" in b and "text" not in b, "binary file has data, not text: %r" % b)
    eq(base64.b64decode(b["data"]), binary, "base64 data of a binary file")
    eq(b["sha256"], sha256(binary), "sha256 in read-all")
    e = files["t/empty"]
    check(e.get("text") == "" or e.get("data") == "", "empty file content: %r" % e)


def test_read_all_escapes_every_byte_at_every_offset(srv):
    """Text with each byte JSON escapes (controls, '"', '\\') and some it does not
    (DEL, '/', UTF-8) at each offset of an 8-byte word, and long plain runs, comes
    back exactly (read-all scans for escapes a word at a time)."""
    vid = srv.create_volume()["id"]
    special = [chr(c) for c in range(1, 0x20)] + ['"', "\\", "\x7f", "/", "é", "日"]
    texts = {}
    for k, ch in enumerate(special):
        for off in range(9):
            texts["e/%02d-%d.txt" % (k, off)] = "a" * off + ch + "b" * (17 - off) + ch + ch
    texts["e/plain.txt"] = "x" * 1000
    texts["e/tail.txt"] = "y" * 15 + '"'
    srv.put_many(vid, {p: t.encode() for p, t in texts.items()}, threads=8)
    j = expect(srv.get("/v1/volumes/%s/files" % vid, query={"content": "true"}), 200).json()
    got = {f["path"]: f.get("text") for f in j["files"]}
    eq(got, texts, "read-all texts")


def test_read_all_glob_and_snapshot(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"first")
    srv.put_ok(vid, "b.md", b"md")
    snap = srv.snapshot(vid)
    srv.put_ok(vid, "a.txt", b"second")
    j = expect(srv.get("/v1/volumes/%s/files" % vid,
                       query={"content": "true", "glob": "*.txt", "snapshot": snap["id"]}),
               200).json()
    eq([(f["path"], f.get("text")) for f in j["files"]], [("a.txt", "first")],
       "read-all at a snapshot with a glob")
    eq(j["seq"], snap["seq"], "seq")


@harness.timeout(240)
def test_read_all_too_many_files(srv):
    vid = srv.create_volume()["id"]
    files = {"many/%04d.txt" % i: b"x" for i in range(1000)}
    files["extra.txt"] = b"y"
    srv.put_many(vid, files, threads=8)
    r = srv.get("/v1/volumes/%s/files" % vid, query={"content": "true"})
    err = expect_error(r, 413, "too_large")
    msg = err["message"].lower()
    check("prefix" in msg or "glob" in msg, "413 message tells to narrow prefix or glob: %r" % msg)
    check("1000" in msg.replace(",", ""), "413 message names the 1,000-file limit: %r" % msg)
    # exactly 1,000 is fine
    j = expect(srv.get("/v1/volumes/%s/files" % vid, query={"content": "true", "prefix": "many/"}),
               200).json()
    eq(len(j["files"]), 1000, "read-all of exactly 1,000 files")
    # a plain listing has no such limit
    eq(len(srv.list_files(vid)["files"]), 1001, "plain listing of 1,001 files")


def test_read_all_too_many_bytes(srv):
    vid = srv.create_volume()["id"]
    big = os.urandom(9 * 1024 * 1024)
    srv.put_ok(vid, "big/one.bin", big)
    srv.put_ok(vid, "big/two.bin", big[::-1])
    r = srv.get("/v1/volumes/%s/files" % vid, query={"content": "true"}, timeout=120)
    err = expect_error(r, 413, "too_large")
    msg = err["message"].lower()
    check("prefix" in msg or "glob" in msg, "413 message tells to narrow prefix or glob: %r" % msg)
    check("16 mib" in msg or "16777216" in msg, "413 message names the 16 MiB limit: %r" % msg)
    j = expect(srv.get("/v1/volumes/%s/files" % vid,
                       query={"content": "true", "glob": "**/one.bin"}, timeout=120), 200).json()
    eq([f["path"] for f in j["files"]], ["big/one.bin"], "narrowed read-all")
    eq(sha256(base64.b64decode(j["files"][0]["data"])), sha256(big), "9 MiB file in read-all")


# ------------------------------------------------------------------ one seq under writes

def _state_at(log, seq):
    state = {}
    for s, path, data in sorted(log):
        if s <= seq:
            state[path] = data
    return state


def _writer(srv, vid, log, stop, nfiles=10):
    r = 0
    while not stop.is_set():
        for i in range(nfiles):
            data = ("round %d file %d" % (r, i)).encode()
            a = srv.put_ok(vid, "w/f%d.txt" % i, data)
            log.append((a["seq"], "w/f%d.txt" % i, data))
        r += 1


@harness.timeout(120)
def test_read_all_and_listing_at_one_seq_under_writes(srv):
    import threading
    vid = srv.create_volume()["id"]
    log, stop = [], threading.Event()
    t = threading.Thread(target=_writer, args=(srv, vid, log, stop), daemon=True)
    t.start()
    reads, lists = [], []
    try:
        deadline = time.time() + 3
        while time.time() < deadline:
            j = expect(srv.get("/v1/volumes/%s/files" % vid, query={"content": "true"}), 200).json()
            reads.append((j["seq"], {f["path"]: f.get("text") for f in j["files"]}))
            j = srv.list_files(vid)
            lists.append((j["seq"], {f["path"]: f["sha256"] for f in j["files"]}))
    finally:
        stop.set()
        t.join(60)
    check(len(reads) >= 3, "only %d reads happened" % len(reads))
    for seq, files in reads:
        want = {p: d.decode() for p, d in _state_at(log, seq).items()}
        eq(files, want, "read-all at seq %d equals the volume as it was at that seq" % seq)
    for seq, files in lists:
        want = {p: sha256(d) for p, d in _state_at(log, seq).items()}
        eq(files, want, "listing at seq %d equals the volume as it was at that seq" % seq)
