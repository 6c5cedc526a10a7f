"""Relay checks on names, letter case and sizes (docs/api.md "Relay"):

- names the guard refuses on a write (`$`, quotes, `*`, `?`, `{`, a leading `-`,
  bidirectional controls, a `C:` drive prefix): 422 `blocked` naming the rule, by cofferd
  (nothing forwarded) and by `coffer connect` alone; ordinary names with spaces, letters
  of any script, dots and dashes still written;
- the user's `--exclude` patterns match without regard to case, on both sides;
- the size of what the user's side answers is measured, never taken from its `size`."""

import base64
import hashlib
import os

from harness import check, contains, eq, expect, expect_error
from test_relay import _session as _fake_session
from test_relay_connect import Client, FakeServer, _folder, _op, _read, _refused, _session

# (name, the rule that refuses it)
REFUSED_NAMES = [
    ("a$HOME.txt", "name-shell-meta"),
    ("${IFS}x", "name-shell-meta"),
    ("it's.txt", "name-quote"),
    ('say"hi".txt', "name-quote"),
    ("*.txt", "name-glob"),
    ("what?.md", "name-glob"),
    ("src/{a,b}.c", "name-glob"),
    ("-rf", "name-leading-dash"),
    ("docs/--exec=sh", "name-leading-dash"),
    ("invoice\u202egpj.exe", "name-bidi"),
    ("a\u202ab.txt", "name-bidi"),
    ("a\u2066b.txt", "name-bidi"),
    ("a\u2069b.txt", "name-bidi"),
    ("C:evil.txt", "path-absolute"),
    ("c:/x.txt", "path-absolute"),
]
GOOD_NAMES = ["My Notes (1).md", "caf\u00e9/\u65e5\u672c\u8a9e.txt", "a-b.c", "x.tar.gz",
              "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440.md", "v1.2.3-rc.1",
              "[slug].tsx", "ab:c.txt", "a\u2014b.txt", "under_score.py"]


# ------------------------------------------------------------------ names

def test_refused_names_by_cofferd(srv):
    s, c, root = _fake_session(srv)
    try:
        for name, rule in REFUSED_NAMES:
            err = expect_error(_op(srv, s["uid"], op="write_file", path=name, content="x"),
                               422, "blocked")
            eq((err["rule"], err["category"]), (rule, "path"), "rule for %r" % name)
            contains(err["message"], rule, "the message names the rule")
        eq(c.ops, [], "nothing forwarded")
        eq(os.listdir(root), [], "nothing written")
        got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
        eq(got["counts"]["writes"], 0, "refused writes count nothing")
    finally:
        c.close()


def test_good_names_written_through_real_client(srv):
    uid, _, c, root = _session(srv)
    try:
        for name in GOOD_NAMES:
            got = expect(_op(srv, uid, op="write_file", path=name, content="ok\n"),
                         200).json()
            eq(got["path"], name, "answer path")
            eq(_read(root, name), b"ok\n", "%r on disk" % name)
        for name, rule in REFUSED_NAMES[:3]:
            expect_error(_op(srv, uid, op="write_file", path=name, content="x"), 422,
                         "blocked")
    finally:
        c.stop()


def test_refused_names_by_client_alone():
    fake = FakeServer()
    root = _folder()
    c = Client(fake.url, "u1", "good-token", root)
    try:
        for i, (name, rule) in enumerate(REFUSED_NAMES):
            err = _refused(fake.send({"id": "n%d" % i, "op": "write_file", "path": name,
                                      "content": "x"}), "blocked")
            eq(err["rule"], rule, "rule for %r" % name)
        eq(os.listdir(root), [], "nothing written")
        got = fake.send({"id": "ok", "op": "write_file", "path": GOOD_NAMES[1],
                         "content": "x"})
        eq(got["ok"], True, "a unicode name is written")
    finally:
        c.stop()
        fake.close()


# ------------------------------------------------------------------ letter case

CASE_FILES = {"SECRET.txt": "needle\n", "Secret.md": "needle\n", "secret.txt": "needle\n",
              "sub/SeCrEt.json": "needle\n", "public.txt": "needle\n"}


def test_exclude_ignores_case_through_real_client(srv):
    uid, _, c, root = _session(srv, CASE_FILES, args=["--exclude", "secret*"])
    try:
        got = expect(_op(srv, uid, op="list_directory"), 200).json()
        eq([e["name"] for e in got["entries"]], ["public.txt", "sub"], "listing")
        got = expect(_op(srv, uid, op="list_directory", path="sub"), 200).json()
        eq(got["entries"], [], "nested one hidden")
        got = expect(_op(srv, uid, op="search_files", pattern="needle"), 200).json()
        eq([r["file"] for r in got["results"]], ["public.txt"], "search")
        for p in ("SECRET.txt", "Secret.md", "secret.txt", "sub/SeCrEt.json"):
            expect_error(_op(srv, uid, op="read_file", path=p), 403, "forbidden")
        expect_error(_op(srv, uid, op="write_file", path="SECRET.txt", content="x"), 403,
                     "forbidden")
        eq(_read(root, "SECRET.txt"), b"needle\n", "unchanged")
    finally:
        c.stop()


def test_exclude_ignores_case_by_cofferd(srv):
    s, c, root = _fake_session(srv, files=CASE_FILES, exclusions=["secret*"])
    try:
        for p in ("SECRET.txt", "Secret.md", "sub/SeCrEt.json"):
            expect_error(_op(srv, s["uid"], op="read_file", path=p), 403, "forbidden")
        eq(c.ops, [], "nothing forwarded")
        got = expect(_op(srv, s["uid"], op="list_directory"), 200).json()
        eq([e["name"] for e in got["entries"]], ["public.txt", "sub"],
           "cofferd filters what the user's side listed")
        got = expect(_op(srv, s["uid"], op="search_files", pattern="needle"), 200).json()
        eq([r["file"] for r in got["results"]], ["public.txt"], "and searched")
    finally:
        c.close()


def test_exclude_ignores_case_by_client_alone():
    fake = FakeServer()
    root = _folder(CASE_FILES)
    c = Client(fake.url, "u1", "good-token", root, ["--exclude", "secret*"])
    try:
        _refused(fake.send({"id": "1", "op": "read_file", "path": "SECRET.txt"}), "forbidden")
        _refused(fake.send({"id": "2", "op": "read_file", "path": "sub/SeCrEt.json"}),
                 "forbidden")
        got = fake.send({"id": "3", "op": "list_directory"})
        eq([e["name"] for e in got["result"]["entries"]], ["public.txt", "sub"], "listing")
    finally:
        c.stop()
        fake.close()


# ------------------------------------------------------------------ sizes measured

def _lying_session(srv, tamper, limits=None, files=None):
    s, c, root = _fake_session(srv, limits=limits, files=files)
    c.tamper = tamper
    return s, c, root


def test_read_size_lie_413(srv):
    """The user's side answers 20 MB but says size 1 (the 10 MB default limit)."""
    big = "A" * (20 * 1048576)

    def lie(op, result):
        return dict(result, content=big, size=1) if op["op"] == "read_file" else result

    s, c, _ = _lying_session(srv, lie, files={"small.txt": "x"})
    try:
        err = expect_error(_op(srv, s["uid"], op="read_file", path="small.txt"), 413,
                           "too_large")
        eq(err.get("limit"), "fileBytes", "names the limit")
        contains(err["message"], "20971520 bytes", "the measured size")
    finally:
        c.close()


def test_read_size_lie_base64_and_edge(srv):
    limit = 1024

    def lie(op, result):
        if op["op"] != "read_file":
            return result
        n = int(op["path"].split(".")[0])
        data = b"\x00" * n
        return {"path": op["path"], "content": base64.b64encode(data).decode(),
                "encoding": "base64", "size": 1}

    s, c, _ = _lying_session(srv, lie, limits={"fileBytes": limit},
                             files={"%d.bin" % n: "x" for n in (limit, limit + 1, 50000)})
    try:
        got = expect(_op(srv, s["uid"], op="read_file", path="%d.bin" % limit), 200).json()
        eq(got["size"], limit, "the measured size replaces the declared one")
        for n in (limit + 1, 50000):
            expect_error(_op(srv, s["uid"], op="read_file", path="%d.bin" % n), 413,
                         "too_large")
    finally:
        c.close()


def test_read_bad_answers_refused(srv):
    def lie(op, result):
        if op["path"] == "bad64.txt":
            return dict(result, content="not base64!!", encoding="base64")
        return dict(result, encoding="rot13")

    s, c, _ = _lying_session(srv, lie, files={"bad64.txt": "x", "enc.txt": "x"})
    try:
        for p in ("bad64.txt", "enc.txt"):
            err = expect_error(_op(srv, s["uid"], op="read_file", path=p), 500, "internal")
            contains(err["message"], "the user's side", "says who answered wrongly")
    finally:
        c.close()


def test_write_answer_measured(srv):
    def lie(op, result):
        if op["path"] == "bad-sha.txt":
            return dict(result, sha256="0" * 64)
        return dict(result, size=1, path="elsewhere.txt")

    s, c, _ = _lying_session(srv, lie)
    try:
        got = expect(_op(srv, s["uid"], op="write_file", path="a.txt", content="hello"),
                     200).json()
        eq((got["path"], got["size"], got["sha256"]),
           ("a.txt", 5, hashlib.sha256(b"hello").hexdigest()), "what was sent, measured")
        err = expect_error(_op(srv, s["uid"], op="write_file", path="bad-sha.txt",
                               content="x"), 500, "internal")
        contains(err["message"], "sha256", "names the mismatch")
        check(hashlib.sha256(b"x").hexdigest() in err["message"], "and the expected hash")
    finally:
        c.close()
