"""The console's who, history, merge and revert (issue 37 items 3 and 6) in a real browser,
through the scenarios of tests/console/drive.mjs (as test_console.py): the changes list's
who column and its filter, a file's history with each version readable, merging a fork
(dry run, conflicts, a write meanwhile, choices) and reverting a run and a seq. Markup in
paths, run ids and file text is always shown as text. Screenshots at 1280 and 390 px go to
BUILD/console-shots/."""

import harness
from harness import check, eq, expect, expect_error
from test_console import _drive, _name

# markup a caller may put in a run id, a path or a file's text: it must never run
RUN = "run<img src=x onerror=\"window.__pwned=1;fetch('/pwned-run')\">"
PATH = "h/<img src=x onerror=fetch('pwned-path')>.txt"


def _agent(srv, vid):
    """An agent with volume `vid` mounted read-write at /shared."""
    aid = _name("hagent")
    expect(srv.put("/v1/agents/" + aid, json={"mounts": [
        {"workspace": True}, {"volumeId": vid, "path": "/shared", "mode": "rw"}]}), 200, 201)
    return aid


def _tool_write(srv, aid, path, content, run=RUN):
    r = expect(srv.post("/v1/agents/%s/tools/write" % aid, json={"path": path, "content": content},
                        headers={"X-Run-Id": run}), 200).json()
    check(r.get("ok"), "the tool wrote %s: %r" % (path, r))
    return r


def _key_id(srv, vid, path):
    changes = expect(srv.get("/v1/volumes/%s/changes" % vid), 200).json()["changes"]
    return [c for c in changes if c["path"] == path][0]["by"]["keyId"]


def test_who_column_and_filter(srv):
    v = srv.create_volume(_name("who"))
    vid = v["id"]
    srv.put_ok(vid, "plain.txt", b"by a key\n")
    aid = _agent(srv, vid)
    paths = ["out/a.txt", "out/b.txt"]
    for p in paths:
        _tool_write(srv, aid, "/shared/" + p, "from the run\n")
    _drive(srv, "who_filter", vid=vid, plain="plain.txt", run=RUN, runPaths=paths, agent=aid,
           keyId=_key_id(srv, vid, "plain.txt"))


def test_file_history_paged_and_each_version_readable(srv):
    v = srv.create_volume(_name("hist"))
    vid = v["id"]
    first = None
    for i in range(1, 61):
        r = srv.put_ok(vid, PATH, ("version %d <b>of</b> the file\n" % i).encode(),
                       content_type="text/plain")
        first = first or r["seq"]
    got = expect(srv.get("/v1/volumes/%s/history" % vid, query={"path": PATH, "limit": "50"}), 200).json()
    eq(len(got["versions"]), 50, "a page of 50")
    check(got.get("cursor"), "a cursor for the rest")
    _drive(srv, "history", vid=vid, path=PATH, versions=60, page=50, firstSeq=first, read=3,
           readText="version 3 <b>of</b> the file")


def test_merge_a_fork_with_a_conflict(srv):
    v = srv.create_volume(_name("merge"))
    vid = v["id"]
    srv.put_ok(vid, "a.txt", b"one\ntwo\nthree\n", content_type="text/plain")
    fork = expect(srv.post("/v1/volumes/%s/fork" % vid, json={"name": _name("fork")}), 201).json()
    fid = fork["id"]
    theirs = b"one\n<script>window.__pwned=1;fetch('/pwned-theirs')</script>\nthree\n"
    srv.put_ok(fid, "a.txt", theirs, content_type="text/plain")
    srv.put_ok(fid, "new.txt", b"new in the fork\n")
    srv.put_ok(vid, "a.txt", b"one\n<img src=x onerror=fetch('/pwned-ours')>\nthree\n",
               content_type="text/plain")
    unrelated = srv.create_volume(_name("unrelated"))["id"]
    _drive(srv, "merge", vid=vid, fork=fid, unrelated=unrelated, added="new.txt", conflict="a.txt")
    eq(expect(srv.get_file(vid, "a.txt"), 200).body, theirs, "a.txt is theirs, as chosen")
    eq(expect(srv.get_file(vid, "new.txt"), 200).body, b"new in the fork\n", "new.txt merged")
    eq(expect(srv.get_file(vid, "meanwhile.txt"), 200).body, b"meanwhile\n",
       "the write made during the dry run stays")
    changes = expect(srv.get("/v1/volumes/%s/changes" % vid), 200).json()["changes"]
    merges = {c["seq"] for c in changes if c["by"] and c["by"]["via"] == "merge"}
    eq(len(merges), 1, "one merge landed (the refused one changed nothing): %r" % changes)
    merge_by = [c["by"] for c in changes if c["by"] and c["by"]["via"] == "merge"][0]
    check("via" in merge_by and merge_by.get("keyId"), "the merge records who: %r" % merge_by)


def test_revert_a_run_and_a_seq(srv):
    v = srv.create_volume(_name("revert"))
    vid = v["id"]
    aid = _agent(srv, vid)
    _tool_write(srv, aid, "/shared/clean.txt", "the run made this\n")
    _tool_write(srv, aid, "/shared/touched.txt", "the run made this too\n")
    # someone else changes one of the run's files since: a conflict (removal against change)
    srv.put_ok(vid, "touched.txt", b"changed since\n")
    later = srv.put_ok(vid, "later.txt", b"one seq\n")
    _drive(srv, "revert", vid=vid, run=RUN, clean="clean.txt", conflict="touched.txt",
           seq=later["seq"], seqPath="later.txt")
    for p in ("clean.txt", "touched.txt", "later.txt"):
        expect_error(srv.get_file(vid, p), 404, "not_found")
    changes = expect(srv.get("/v1/volumes/%s/changes" % vid), 200).json()["changes"]
    reverts = sorted({c["seq"] for c in changes if c["by"] and c["by"]["via"] == "revert"})
    eq(len(reverts), 2, "two reverts, each one change: %r" % changes)
