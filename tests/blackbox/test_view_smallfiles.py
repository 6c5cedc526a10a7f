"""Many small files made in a call's read-write view and committed (issue 38
item 3). Real FUSE, real bubblewrap.

A call's commit lands all its files as one change, records what the agent saw
of each in one write (a file the call wrote counts as written by the agent),
and sniffs the type of untyped files on one thread a core: the types are
libmagic's for each file alone, as `file --mime-type -b` gives them. Lookups
beneath a folder the call made ask the store nothing: what they answer must
stay what the store would (nothing, even where the volume held a file of the
folder's name or files the call removed)."""

import base64
import os

import harness
from harness import check, eq, expect
from test_view import Mount, _agent, _fuse_ok, new_turn
from turnlib import ok

# Nameless small files (no extension says a type): what libmagic names
# specially and what it calls plain text.
_TABLE = [
    b"1\n",
    b"hello world\n",
    b"#!/bin/sh\necho hi\n",
    b"#!/usr/bin/env python3\nprint(1)\n",
    b'{"a": 1, "b": [1, 2]}\n',
    b'<?xml version="1.0"?>\n<a/>\n',
    b"<!DOCTYPE html>\n<html><body>x</body></html>\n",
    b"a,b,c\n1,2,3\n4,5,6\n",
    b"#include <stdio.h>\nint main(void) { return 0; }\n",
    b"070707\n",
    b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
    b"From someone@example.com Mon Jan  1 00:00:00 2024\nSubject: hi\n\nbody\n",
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0",
    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n",
    b"\x1f\x8b\x08\0\0\0\0\0\0\x03\x03\0\0\0\0\0\0\0\0\0",
    "naïve café — ünïcode text\n".encode(),
    bytes(range(256)),
]
_NUMBERED = 60   # beside the table: more than a landing sniffs on one thread


def test_nameless_small_files_commit_in_one_change_typed_as_libmagic_says(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    seq0 = srv.seq(ws)
    t = new_turn(srv, aid)
    cmd = "mkdir -p /workspace/new/deep && cd /workspace/new/deep && "
    cmd += "".join("echo %s | base64 -d > t%d && " % (base64.b64encode(b).decode(), i)
                   for i, b in enumerate(_TABLE))
    cmd += "for i in $(seq %d); do echo $i > n$i; done && ls | wc -l" % _NUMBERED
    out = ok(srv, t["id"], cmd)
    n = len(_TABLE) + _NUMBERED
    eq(out["stdout"].split(), [str(n)], "files the call made")
    eq(out["committed"], [{"volumeId": ws, "path": "/workspace", "seq": seq0 + 1,
                           "written": n, "removed": 0}], "one change")
    got = {f["path"]: f for f in srv.list_files(ws, prefix="new/")["files"]}
    eq(len(got), n, "files listed")
    for i, b in enumerate(_TABLE):
        f = got["new/deep/t%d" % i]
        eq((f["size"], f["contentType"]), (len(b), harness.libmagic_type(b)), "type of %r" % b[:40])
        eq(srv.get_file(ws, "new/deep/t%d" % i).body, b, "bytes of t%d" % i)
    for i in (1, _NUMBERED):
        eq(got["new/deep/n%d" % i]["contentType"], harness.libmagic_type(b"%d\n" % i), "type of n%d" % i)
    # every file the call wrote counts as written by the agent (recorded in
    # one write): an edit of the first and the last needs no read
    for p in ("t1", "n%d" % _NUMBERED):
        r = expect(srv.post("/v1/agents/%s/tools/edit" % aid, json={
            "path": "/workspace/new/deep/" + p, "oldString": "\n", "newString": "!\n"}),
            200).json()
        check(r["ok"], "edit of %s after the call's write: %r" % (p, r))


def test_lookups_beneath_a_folder_the_call_made(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_ok(ws, "d", b"a file d\n")
    srv.put_ok(ws, "e/a.txt", b"old a\n")
    srv.put_ok(ws, "e/sub/b.txt", b"old b\n")
    t = new_turn(srv, aid)
    # d: a file the call removes, then a folder it makes; e: a folder whose
    # files it removes (the folder stays), removes, and makes again
    out = ok(srv, t["id"], "cd /workspace && rm d && mkdir d && "
             "(cat d/x 2>/dev/null || echo no-d/x) && echo x > d/x && cat d/x && "
             "rm -r e && mkdir -p e/sub/deeper && ls -A e && "
             "(cat e/a.txt 2>/dev/null || echo no-e/a) && "
             "(cat e/sub/b.txt 2>/dev/null || echo no-e/sub/b) && "
             "echo new a > e/a.txt && cat e/a.txt && "
             "echo z > e/sub/deeper/z && find e d -type f | sort")
    eq(out["stdout"].split("\n"), ["no-d/x", "x", "sub", "no-e/a", "no-e/sub/b", "new a",
                                   "d/x", "e/a.txt", "e/sub/deeper/z", ""],
       "what the call saw")
    paths = {f["path"] for f in srv.list_files(ws)["files"]}
    check("e/sub/b.txt" not in paths and "e/a.txt" in paths and "e/sub/deeper/z" in paths,
          "the volume after: %r (committed %r)" % (sorted(paths), out["committed"]))
    eq(srv.get_file(ws, "e/a.txt").body, b"new a\n", "e/a.txt")
    # the next call, on a view of what landed, sees it all
    out = ok(srv, t["id"], "cd /workspace && cat e/a.txt e/sub/deeper/z && "
             "find e -type f | sort")
    eq(out["stdout"].split("\n"), ["new a", "z", "e/a.txt", "e/sub/deeper/z", ""],
       "the next call")


def test_lookups_in_a_folder_of_the_volume(srv):
    """A name looked up in a folder the volume holds is answered from one walk
    of the rows starting with it: the file itself, siblings that sort before
    its folder's rows ("a.txt", "a-b" before "a/..."), its folder's rows, and
    names that sort after them ("a0"). Each must read as the volume says, and
    an absence the kernel was told must never hide what the call then makes."""
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    for p in ("d/a", "d/a.txt", "d/a0", "d/b.txt", "d/b-x/y", "d/b/x.txt", "d/b0",
              "d/c/deep/z", "d/\u00e9/u", "d/gone/only", "d/q.txt", "d/q-r"):
        srv.put_ok(ws, p, p.encode())
    t = new_turn(srv, aid)
    names = "a a.txt a0 b b.txt b-x b0 c \u00e9 gone q a.tx nope a/x b/nope"
    out = ok(srv, t["id"], "cd /workspace/d && rm gone/only && for n in %s; do "
             "if [ -d $n ]; then echo $n:dir; elif [ -f $n ]; then echo $n:file:$(cat $n); "
             "else echo $n:none; fi; done" % names)
    eq(out["stdout"].split(), [
        "a:file:d/a", "a.txt:file:d/a.txt", "a0:file:d/a0", "b:dir", "b.txt:file:d/b.txt",
        "b-x:dir", "b0:file:d/b0", "c:dir", "\u00e9:dir", "gone:dir", "q:none", "a.tx:none",
        "nope:none",
        "a/x:none", "b/nope:none"], "what each name is")
    # absent, then made by the call: the negative entry hides nothing
    out = ok(srv, t["id"], "cd /workspace/d && (cat new 2>/dev/null || echo no-new) && "
             "(ls n2 2>/dev/null || echo no-n2) && echo made > new && mkdir n2 && "
             "echo x > n2/x && cat new n2/x && ls n2")
    eq(out["stdout"].split(), ["no-new", "no-n2", "made", "x", "x"], "made after a miss")
    eq(srv.get_file(ws, "d/new").body, b"made\n", "committed")


def test_follow_mount_shows_names_made_after_a_miss(srv):
    """A mount that follows the volume keeps an absence for a second only:
    a name looked up before another writer made it appears."""
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "d/a.txt", b"a")
    m = Mount(srv, vid, "--read-only", "--follow")
    try:
        check(not os.path.exists(m.path("d/new.txt")) and not os.path.exists(m.path("d/n")),
              "absent at first")
        srv.put_ok(vid, "d/new.txt", b"new")
        srv.put_ok(vid, "d/n/x", b"x")
        harness.until(lambda: os.path.exists(m.path("d/new.txt")) and
                      os.path.exists(m.path("d/n/x")), "the new names appear")
        eq(open(m.path("d/new.txt"), "rb").read(), b"new", "the file made after")
        check(os.path.isdir(m.path("d/n")), "the folder made after")
    finally:
        m.end()


def test_a_run_records_every_file_a_call_wrote(srv):
    """The run's files of a call's commit are recorded in one write; a file
    written again by a later call of the run stays one item, updated."""
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    for cmd in ("mkdir -p /workspace/r && cd /workspace/r && "
                "for i in $(seq 40); do echo $i > f$i.txt; done",
                "echo again > /workspace/r/f1.txt"):
        expect(srv.post("/v1/turns/%s/calls" % t["id"], json={"command": cmd},
                        headers={"X-Run-Id": "run-many"}), 200)
    run = expect(srv.get("/v1/agents/%s/runs/run-many" % aid,
                         headers={"X-Subject": t["user"]}), 200).json()
    got = {f["path"]: f for f in run["files"]}
    eq(sorted(got), sorted("/workspace/r/f%d.txt" % i for i in range(1, 41)), "the run's files")
    eq((got["/workspace/r/f1.txt"]["size"], got["/workspace/r/f1.txt"]["version"]),
       (6, srv.list_files(ws, prefix="r/f1.txt")["files"][0]["version"]), "f1 updated")
    eq(got["/workspace/r/f40.txt"]["contentType"], "text/plain", "a file's type")
