"""cofferd's content cache (docs/api.md `--content-cache`, docs/design.md "Small contents in
memory"): small contents read once are read from memory after, counted in GET /metrics;
a changed file reads its new bytes; the budget holds; `0` keeps none; a bad size is exit 2
naming the flag."""

import subprocess

import harness
from harness import check, eq, expect
from test_metrics import _scrape, _value


def _read_all(s, vid):
    r = expect(s.get("/v1/volumes/%s/files" % vid, query={"content": "true"}), 200).json()
    return {f["path"]: f["text"].encode() for f in r["files"]}


def _cache(s):
    text = _scrape(s)
    return {k: _value(text, "coffer_content_cache_" + k)
            for k in ("hits_total", "misses_total", "contents", "bytes")}


def _small_files(n, tag):
    return {"c/%03d.txt" % i: ("%s %d\n" % (tag, i)).encode() * 40 for i in range(n)}


def test_repeat_reads_come_from_memory():
    with harness.server() as s:
        vid = s.create_volume()["id"]
        files = _small_files(30, "first")
        s.put_many(vid, files)
        c0 = _cache(s)
        eq(_read_all(s, vid), files, "the first read-all")
        c1 = _cache(s)
        check(c1["misses_total"] - c0["misses_total"] >= 30,
              "the first read looked for 30 contents and found none: %r -> %r" % (c0, c1))
        check(c1["contents"] >= 30, "30 contents are kept: %r" % c1)
        check(c1["bytes"] >= sum(len(v) for v in files.values()), "their bytes: %r" % c1)
        eq(_read_all(s, vid), files, "the second read-all")
        c2 = _cache(s)
        check(c2["hits_total"] - c1["hits_total"] >= 30,
              "the second read found the 30 in memory: %r -> %r" % (c1, c2))
        eq(c2["misses_total"], c1["misses_total"], "no content was read from the store again")
        # a write in between changes nothing kept: a content is named by its bytes
        changed = dict(files)
        changed["c/005.txt"] = b"changed after it was kept\n"
        s.put_ok(vid, "c/005.txt", changed["c/005.txt"])
        eq(_read_all(s, vid), changed, "the read-all after a write")
        # back to the first bytes: the kept content is the right one
        s.put_ok(vid, "c/005.txt", files["c/005.txt"])
        eq(_read_all(s, vid), files, "the read-all after writing the first bytes again")
        eq(s.get_file(vid, "c/005.txt").body, files["c/005.txt"], "a GET of it")


def test_budget_holds():
    """100 contents of 4 KiB into 64 KiB: at most 64 KiB kept, the newest; reads stay
    right."""
    with harness.server(args=["--content-cache", "64k"]) as s:
        vid = s.create_volume()["id"]
        files = {"b/%03d.txt" % i: bytes([97 + i % 26]) * 4096 for i in range(100)}
        s.put_many(vid, files)
        for _ in range(2):
            got = expect(s.get("/v1/volumes/%s/files" % vid,
                               query={"content": "true"}), 200).json()
            eq({f["path"]: f["text"].encode() for f in got["files"]}, files, "read-all")
        c = _cache(s)
        check(0 < c["bytes"] <= 64 * 1024, "the bytes kept are within 64 KiB: %r" % c)
        check(c["contents"] < 16, "fewer than 16 contents of 4 KiB: %r" % c)


def test_zero_keeps_none():
    with harness.server(args=["--content-cache", "0"]) as s:
        vid = s.create_volume()["id"]
        files = _small_files(10, "none")
        s.put_many(vid, files)
        for _ in range(2):
            eq(_read_all(s, vid), files, "read-all")
        eq(_cache(s), {"hits_total": 0, "misses_total": 0, "contents": 0, "bytes": 0},
           "nothing looked for, nothing kept")


def test_bad_size_exits_2():
    for bad in ("12x", "-1", "", "1.5m"):
        p = subprocess.run([harness.bin_path("cofferd"), "--content-cache", bad,
                            "--data", "/nonexistent/never-made"],
                           capture_output=True, text=True, timeout=30)
        eq(p.returncode, 2, "exit of --content-cache %r (stderr %r)" % (bad, p.stderr))
        check("--content-cache" in p.stderr, "the message names the flag: %r" % p.stderr)
