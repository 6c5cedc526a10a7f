"""Subject workspaces (API.md "Subject workspaces", docs/api.md): one durable volume per
(agent, subject), the files calls, reserved memories/ and skills/, the memory calls,
agent skills written at session start, isolation, usage, agent-bound keys."""

import base64
import itertools
import os
import urllib.parse

import harness
from harness import check, contains, eq, expect, expect_error

_n = itertools.count()


def new_id(prefix="sj"):
    return "%s-%d-%d" % (prefix, os.getpid(), next(_n))


def make_agent(srv, aid=None):
    aid = aid or new_id()
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    return aid


def su(aid, subject, tail=""):
    return "/v1/agents/%s/users/%s%s" % (aid, urllib.parse.quote(subject, safe=""), tail)


def put_text(srv, aid, subject, path, text, key=harness._ABSENT, timeout=None, **extra):
    body = {"path": path, "encoding": "utf-8", "content": text}
    body.update(extra)
    return srv.put(su(aid, subject, "/files/content"), json=body, key=key, timeout=timeout)


def download(srv, aid, subject, path, key=harness._ABSENT):
    return srv.get(su(aid, subject, "/files/content"), query={"path": path}, key=key)


def listing(srv, aid, subject, path=None, key=harness._ABSENT):
    q = {"path": path} if path is not None else None
    return srv.get(su(aid, subject, "/files"), query=q, key=key)


def names(r):
    return sorted((e["name"], e["type"]) for e in r.json()["entries"])


def test_write_download_list_roundtrip(srv):
    aid = make_agent(srv)
    put = expect(put_text(srv, aid, "alice", "notes/a.txt", "hello"), 201).json()
    eq((put["path"], put["size"], put["version"] > 0), ("notes/a.txt", 5, True), "put answer")
    check(put["sha256"] == harness.sha256(b"hello"), "sha256 of the bytes")
    again = expect(put_text(srv, aid, "alice", "/notes/a.txt", "hello!"), 200).json()
    eq(again["path"], "notes/a.txt", "a leading '/' names the same file")
    r = expect(download(srv, aid, "alice", "notes/a.txt"), 200)
    eq(r.body, b"hello!", "downloaded bytes")
    check(r.header("ETag"), "download has an ETag")
    expect(put_text(srv, aid, "alice", "notes/deep/b.md", "b"), 201)
    expect(put_text(srv, aid, "alice", "top.txt", "t"), 201)
    root = expect(listing(srv, aid, "alice"), 200).json()
    eq(root["path"], "", "root listing path")
    eq(sorted((e["name"], e["path"], e["type"]) for e in root["entries"]),
       [("notes", "notes", "dir"), ("top.txt", "top.txt", "file")], "root entries")
    r = expect(listing(srv, aid, "alice", "notes/"), 200)
    eq(r.json()["path"], "notes", "listing path without trailing '/'")
    eq(names(r), [("a.txt", "file"), ("deep", "dir")], "immediate children only")
    sizes = {e["name"]: e.get("size") for e in r.json()["entries"] if e["type"] == "file"}
    eq(sizes, {"a.txt": 6}, "file size in the listing")
    eq(names(expect(listing(srv, aid, "alice", "/"), 200)), names(expect(listing(
        srv, aid, "alice", ""), 200)), "'/' and '' are the root")
    # a file is not a folder; a missing folder is 404; a missing file is 404
    expect_error(listing(srv, aid, "alice", "top.txt"), 409)
    expect_error(listing(srv, aid, "alice", "nope"), 404)
    expect_error(download(srv, aid, "alice", "nope.txt"), 404)
    expect_error(srv.get(su(aid, "alice", "/files/content")), 400, mentions="path")
    # HEAD of a download
    r = expect(srv.head(su(aid, "alice", "/files/content"), query={"path": "top.txt"}), 200)
    eq(r.header("Content-Length"), "1", "HEAD length")


def test_base64_content_and_bad_encodings(srv):
    aid = make_agent(srv)
    blob = bytes(range(256)) * 8
    body = {"path": "bin/data.bin", "encoding": "base64",
            "content": base64.b64encode(blob).decode()}
    expect(srv.put(su(aid, "u1", "/files/content"), json=body), 201)
    eq(expect(download(srv, aid, "u1", "bin/data.bin"), 200).body, blob, "binary round trip")
    # encoding absent = utf-8; non-ASCII text is stored as UTF-8
    expect(srv.put(su(aid, "u1", "/files/content"), json={"path": "t.txt", "content": "é€"}),
           201)
    eq(download(srv, aid, "u1", "t.txt").body, "é€".encode(), "utf-8 bytes")
    body["content"] = "not base64!!"
    expect_error(srv.put(su(aid, "u1", "/files/content"), json=body), 400, mentions="base64")
    expect_error(srv.put(su(aid, "u1", "/files/content"),
                         json={"path": "x", "content": "x", "encoding": "latin-1"}), 400,
                 mentions="encoding")
    expect_error(srv.put(su(aid, "u1", "/files/content"), json={"path": "x"}), 400,
                 mentions="content")
    expect_error(srv.put(su(aid, "u1", "/files/content"), json={"content": "x"}), 400,
                 mentions="path")
    expect_error(srv.put(su(aid, "u1", "/files/content"),
                         json={"path": "x", "content": "x", "extra": 1}), 400)
    expect_error(put_text(srv, aid, "u1", "a/../b", "x"), 400)
    expect_error(put_text(srv, aid, "u1", "a//b", "x"), 400)


def test_create_parents(srv):
    aid = make_agent(srv)
    # false: the parent must exist
    err = expect_error(put_text(srv, aid, "cp", "a/b/c.txt", "x", createParents=False), 404)
    check("createParents" in err["message"] and "a/b" in err["message"],
          "message names the folder and createParents: %r" % err["message"])
    # at the root there is always a parent
    expect(put_text(srv, aid, "cp", "root.txt", "x", createParents=False), 201)
    # true (and absent): folders are implicit
    expect(put_text(srv, aid, "cp", "a/b/c.txt", "x", createParents=True), 201)
    expect(put_text(srv, aid, "cp", "d/e/f.txt", "x"), 201)
    # now a/b exists, and so does a (it holds a file at depth)
    expect(put_text(srv, aid, "cp", "a/b/d.txt", "x", createParents=False), 201)
    expect(put_text(srv, aid, "cp", "a/z.txt", "x", createParents=False), 201)
    # a parent that is a file
    expect_error(put_text(srv, aid, "cp", "root.txt/x", "x", createParents=False), 409)
    expect_error(put_text(srv, aid, "cp", "root.txt/x", "x"), 409)
    expect_error(srv.put(su(aid, "cp", "/files/content"),
                         json={"path": "q", "content": "x", "createParents": "no"}), 400)


def test_move_and_delete(srv):
    aid = make_agent(srv)
    expect(put_text(srv, aid, "mv", "a.txt", "A"), 201)
    r = expect(srv.post(su(aid, "mv", "/files/move"), json={"from": "a.txt", "to": "dir/b.txt"}),
               200).json()
    eq((r["from"], r["to"], r["moved"]), ("a.txt", "dir/b.txt", 1), "move answer")
    expect_error(download(srv, aid, "mv", "a.txt"), 404)
    eq(download(srv, aid, "mv", "dir/b.txt").body, b"A", "moved bytes")
    expect(put_text(srv, aid, "mv", "c.txt", "C"), 201)
    expect_error(srv.post(su(aid, "mv", "/files/move"), json={"from": "c.txt", "to": "dir/b.txt"}),
                 409)
    expect(srv.post(su(aid, "mv", "/files/move"),
                    json={"from": "c.txt", "to": "dir/b.txt", "overwrite": True}), 200)
    eq(download(srv, aid, "mv", "dir/b.txt").body, b"C", "overwritten")
    expect_error(srv.post(su(aid, "mv", "/files/move"), json={"from": "c.txt"}), 400)
    # delete a file, then a folder with everything in it
    expect(put_text(srv, aid, "mv", "dir/sub/x.txt", "x"), 201)
    expect(put_text(srv, aid, "mv", "keep.txt", "k"), 201)
    r = expect(srv.delete(su(aid, "mv", "/files"), query={"path": "dir/b.txt"}), 200).json()
    eq((r["path"], r["removed"]), ("dir/b.txt", 1), "delete a file")
    expect(put_text(srv, aid, "mv", "dir/y.txt", "y"), 201)
    r = expect(srv.delete(su(aid, "mv", "/files"), query={"path": "dir"}), 200).json()
    eq(r["removed"], 2, "a folder goes with its files")
    eq(names(expect(listing(srv, aid, "mv"), 200)), [("keep.txt", "file")], "what is left")
    expect_error(srv.delete(su(aid, "mv", "/files"), query={"path": "dir"}), 404)
    expect_error(srv.delete(su(aid, "mv", "/files")), 400, mentions="path")


def test_reserved_folders_refused(srv):
    aid = make_agent(srv)
    expect(put_text(srv, aid, "rs", "free.txt", "f"), 201)
    expect(srv.put(su(aid, "rs", "/memory/USER.md"), body=b"user notes"), 201)
    expect(srv.put("/v1/agents/%s/skills/s1.md" % aid, body=b"# s1"), 201)
    expect(srv.post(su(aid, "rs", "/sessions"), json={}), 201)
    for top in ("memories", "skills"):
        for p in (top + "/x.md", "/" + top + "/x.md", top, top + "/deep/x"):
            expect_error(put_text(srv, aid, "rs", p, "x"), 403, mentions=top)
        # out of, into, and within the reserved folder
        existing = "memories/USER.md" if top == "memories" else "skills/s1.md"
        expect_error(srv.post(su(aid, "rs", "/files/move"),
                              json={"from": existing, "to": "stolen.md"}), 403)
        expect_error(srv.post(su(aid, "rs", "/files/move"),
                              json={"from": "free.txt", "to": top + "/free.txt"}), 403)
        expect_error(srv.post(su(aid, "rs", "/files/move"),
                              json={"from": existing, "to": top + "/other.md"}), 403)
        expect_error(srv.delete(su(aid, "rs", "/files"), query={"path": existing}), 403)
        expect_error(srv.delete(su(aid, "rs", "/files"), query={"path": top}), 403)
        # reading is fine
        expect(download(srv, aid, "rs", existing), 200)
        expect(listing(srv, aid, "rs", top), 200)
    # nothing changed
    eq(download(srv, aid, "rs", "memories/USER.md").body, b"user notes", "memory kept")
    eq(download(srv, aid, "rs", "skills/s1.md").body, b"# s1", "skill kept")
    expect(download(srv, aid, "rs", "free.txt"), 200)
    # similar names are not reserved
    expect(put_text(srv, aid, "rs", "memories2/x.md", "x"), 201)
    expect(put_text(srv, aid, "rs", "my/skills/x.md", "x"), 201)


def test_memory_files(srv):
    aid = make_agent(srv)
    expect_error(srv.get(su(aid, "mem", "/memory/USER.md")), 404)
    r = expect(srv.put(su(aid, "mem", "/memory/USER.md"), body=b"prefers short answers"),
               201).json()
    eq(r["path"], "memories/USER.md", "stored under memories/")
    expect(srv.put(su(aid, "mem", "/memory/MEMORY.md"), body=b"- met on monday\n"), 201)
    expect(srv.put(su(aid, "mem", "/memory/USER.md"), body=b"prefers long answers"), 200)
    eq(expect(srv.get(su(aid, "mem", "/memory/USER.md")), 200).body, b"prefers long answers",
       "USER.md")
    eq(srv.get(su(aid, "mem", "/memory/MEMORY.md")).body, b"- met on monday\n", "MEMORY.md")
    eq(download(srv, aid, "mem", "memories/USER.md").body, b"prefers long answers",
       "the files calls read memories/")
    eq(names(expect(listing(srv, aid, "mem", "memories"), 200)),
       [("MEMORY.md", "file"), ("USER.md", "file")], "memories/ listing")
    for bad in ("OTHER.md", "user.md", "USER.txt"):
        expect_error(srv.put(su(aid, "mem", "/memory/" + bad), body=b"x"), 404)
        expect_error(srv.get(su(aid, "mem", "/memory/" + bad)), 404)
    # another subject has its own memory
    expect_error(srv.get(su(aid, "mem2", "/memory/USER.md")), 404)


def test_skills_written_at_session_start(srv):
    aid = make_agent(srv)
    expect(srv.put("/v1/agents/%s/skills/pdf.md" % aid, body=b"# PDF\nuse pdftotext"), 201)
    expect(srv.put("/v1/agents/%s/skills/web-search.md" % aid, body=b"# search"), 201)
    r = expect(srv.put("/v1/agents/%s/skills/pdf.md" % aid, body=b"# PDF v2"), 200).json()
    eq((r["name"], r["size"]), ("pdf", 8), "skill answer")
    # a subject sees no skills until its session starts
    expect_error(listing(srv, aid, "sk", "skills"), 404)
    s = expect(srv.post(su(aid, "sk", "/sessions")), 201).json()
    eq(s["skills"], ["pdf", "web-search"], "skills written")
    vol = expect(srv.get(su(aid, "sk", "/volume")), 200).json()
    eq(s["volumeId"], vol["volumeId"], "the session's volume is the subject's")
    eq(download(srv, aid, "sk", "skills/pdf.md").body, b"# PDF v2", "skill bytes")
    eq(download(srv, aid, "sk", "skills/web-search.md").body, b"# search", "skill bytes")
    # a stale file in skills/ (only possible through the volume API) is replaced
    expect(srv.put_file(vol["volumeId"], "skills/stale.md", b"old"), 201)
    expect(srv.put_file(vol["volumeId"], "skills/pdf.md", b"tampered"), 200)
    expect(srv.put("/v1/agents/%s/skills/new.md" % aid, body=b"# new"), 201)
    s = expect(srv.post(su(aid, "sk", "/sessions"), json={}), 201).json()
    eq(s["skills"], ["new", "pdf", "web-search"], "skills after another start")
    eq(names(expect(listing(srv, aid, "sk", "skills"), 200)),
       [("new.md", "file"), ("pdf.md", "file"), ("web-search.md", "file")],
       "skills/ is exactly the agent's skills")
    eq(download(srv, aid, "sk", "skills/pdf.md").body, b"# PDF v2", "tampering undone")
    # an agent without skills: a session empties nothing else, answers none
    b = make_agent(srv)
    expect(put_text(srv, b, "u", "keep.txt", "k"), 201)
    s = expect(srv.post(su(b, "u", "/sessions")), 201).json()
    eq(s["skills"], [], "no skills")
    expect(download(srv, b, "u", "keep.txt"), 200)
    expect_error(srv.post(su(aid, "sk", "/sessions"), json={"x": 1}), 400)


def test_skill_names(srv):
    aid = make_agent(srv)
    for ok in ("a", "A.b_c-d", "x" * 100, ".dot"):
        expect(srv.put("/v1/agents/%s/skills/%s.md" % (aid, ok), body=b"ok"), 201)
    eq(expect(srv.post(su(aid, "n", "/sessions")), 201).json()["skills"],
       [".dot", "A.b_c-d", "a", "x" * 100], "every skill, by name")
    for bad in (".md", "x" * 101 + ".md", "a%20b.md", "a@b.md"):
        expect_error(srv.put("/v1/agents/%s/skills/%s" % (aid, bad), body=b"x"), 400)
    expect_error(srv.put("/v1/agents/%s/skills/noext" % aid, body=b"x"), 404)
    expect_error(srv.put("/v1/agents/%s/skills/a.txt" % aid, body=b"x"), 404)
    expect_error(srv.put("/v1/agents/nosuch-agent-%d/skills/a.md" % os.getpid(), body=b"x"), 404)
    expect_error(srv.put("/v1/agents/%s/skills/big.md" % aid, body=b"x" * ((1 << 20) + 1)), 413)


def test_subjects_isolated(srv):
    a, b = make_agent(srv), make_agent(srv)
    expect(put_text(srv, a, "alice", "secret.txt", "alice's"), 201)
    expect(srv.put(su(a, "alice", "/memory/USER.md"), body=b"alice"), 201)
    expect_error(download(srv, a, "bob", "secret.txt"), 404)
    eq(expect(listing(srv, a, "bob"), 200).json()["entries"], [], "bob sees nothing")
    expect_error(srv.get(su(a, "bob", "/memory/USER.md")), 404)
    # the same subject id under another agent is another workspace
    expect_error(download(srv, b, "alice", "secret.txt"), 404)
    expect(put_text(srv, b, "alice", "secret.txt", "b's alice"), 201)
    eq(download(srv, a, "alice", "secret.txt").body, b"alice's", "a's alice unchanged")
    vols = {expect(srv.get(su(x, s, "/volume")), 200).json()["volumeId"]
            for x, s in ((a, "alice"), (a, "bob"), (b, "alice"))}
    eq(len(vols), 3, "three different volumes")
    # skills of one agent reach only its subjects
    expect(srv.put("/v1/agents/%s/skills/only-a.md" % a, body=b"a"), 201)
    eq(expect(srv.post(su(b, "alice", "/sessions")), 201).json()["skills"], [], "b has none")
    # durable and stable: the same volume on every call and after a restart
    v1 = srv.get(su(a, "alice", "/volume")).json()["volumeId"]
    srv.restart()
    eq(srv.get(su(a, "alice", "/volume")).json()["volumeId"], v1, "same volume after restart")
    eq(download(srv, a, "alice", "secret.txt").body, b"alice's", "file after restart")


def test_usage_numbers(srv):
    aid = make_agent(srv)
    v = expect(srv.get(su(aid, "use", "/volume")), 200).json()
    eq(set(v), {"volumeId", "used", "capacity", "ceiling", "files"}, "volume fields")
    eq((v["used"], v["files"], v["capacity"], v["ceiling"]), (0, 0, 512 << 20, 4 << 30),
       "a new workspace")
    expect(put_text(srv, aid, "use", "a.txt", "12345"), 201)
    expect(put_text(srv, aid, "use", "d/b.txt", "123"), 201)
    expect(srv.put(su(aid, "use", "/memory/USER.md"), body=b"xy"), 201)
    v = expect(srv.get(su(aid, "use", "/volume")), 200).json()
    eq((v["used"], v["files"]), (10, 3), "used bytes and files count every file")
    expect(srv.delete(su(aid, "use", "/files"), query={"path": "a.txt"}), 200)
    v = expect(srv.get(su(aid, "use", "/volume")), 200).json()
    eq((v["used"], v["files"]), (5, 2), "after a delete")
    info = srv.volume(v["volumeId"])
    eq((info["bytes"], info["files"]), (5, 2), "the volume API agrees")


@harness.timeout(120)
def test_capacity_grows(srv):
    aid = make_agent(srv)
    big = b"m" * (400 << 20)  # past 3/4 of 512 MiB: capacity doubles
    expect(srv.put(su(aid, "grow", "/memory/MEMORY.md"), body=big, timeout=120), 201)
    v = expect(srv.get(su(aid, "grow", "/volume")), 200).json()
    eq((v["used"], v["capacity"], v["ceiling"]), (400 << 20, 1 << 30, 4 << 30),
       "capacity grew toward the ceiling")
    expect(srv.put(su(aid, "grow", "/memory/MEMORY.md"), body=b"small"), 200)


@harness.timeout(900)
def test_ceiling_refused():
    harness.slow("fills a subject workspace to its 4 GiB ceiling")
    with harness.server() as s:
        aid = make_agent(s)
        chunk = "c" * (31 << 20)
        n = 0
        while True:
            r = put_text(s, aid, "full", "f%d" % n, chunk, timeout=120)
            if r.status != 201:
                break
            n += 1
            check(n < 200, "the ceiling was never reached")
        err = expect_error(r, 400, "validation_error", mentions="ceiling")
        check(err.get("ceiling") == 4 << 30, "error names the ceiling: %r" % err)
        v = expect(s.get(su(aid, "full", "/volume")), 200).json()
        check(v["used"] <= 4 << 30 and v["capacity"] == 4 << 30, "at the ceiling: %r" % v)


def test_bad_subject_ids_and_unknown_agent(srv):
    aid = make_agent(srv)
    for ok in ("a", "user@example.com", "A.b_c-d@e", "x" * 128):
        expect(srv.get(su(aid, ok, "/volume")), 200)
    for bad in ("x" * 129, "a b", "a/b", "ü", "a+b", "a:b"):
        r = srv.get(su(aid, bad, "/volume"))
        if "/" in bad:
            check(r.status in (400, 404), "a '/' never reaches a subject\n" + r.describe())
            continue
        expect_error(r, 400, mentions="subject id")
        expect_error(put_text(srv, aid, bad, "a.txt", "x"), 400)
        expect_error(srv.put(su(aid, bad, "/memory/USER.md"), body=b"x"), 400)
        expect_error(srv.post(su(aid, bad, "/sessions")), 400)
    ghost = "ghost-%d" % os.getpid()
    expect_error(srv.get(su(ghost, "u", "/volume")), 404, mentions=ghost)
    expect_error(put_text(srv, ghost, "u", "a.txt", "x"), 404)
    expect_error(listing(srv, ghost, "u"), 404)
    expect_error(download(srv, ghost, "u", "a.txt"), 404)
    expect_error(srv.put(su(ghost, "u", "/memory/USER.md"), body=b"x"), 404)
    expect_error(srv.post(su(ghost, "u", "/sessions")), 404)
    expect_error(srv.post(su(ghost, "u", "/files/move"), json={"from": "a", "to": "b"}), 404)
    expect_error(srv.delete(su(ghost, "u", "/files"), query={"path": "a"}), 404)


def test_agent_key_reaches_its_subjects_only(srv):
    a, b = make_agent(srv), make_agent(srv)
    k = expect(srv.post("/v1/keys", json={"agent": a}), 201).json()["key"]
    expect(put_text(srv, a, "u", "a.txt", "x", key=k), 201)
    eq(download(srv, a, "u", "a.txt", key=k).body, b"x", "own subject file")
    expect(listing(srv, a, "u", key=k), 200)
    expect(srv.post(su(a, "u", "/files/move"), json={"from": "a.txt", "to": "b.txt"}, key=k), 200)
    expect(srv.delete(su(a, "u", "/files"), query={"path": "b.txt"}, key=k), 200)
    expect(srv.get(su(a, "u", "/volume"), key=k), 200)
    expect(srv.put(su(a, "u", "/memory/USER.md"), body=b"m", key=k), 201)
    expect(srv.get(su(a, "u", "/memory/USER.md"), key=k), 200)
    expect(srv.put("/v1/agents/%s/skills/k.md" % a, body=b"k", key=k), 201)
    expect(srv.post(su(a, "u", "/sessions"), key=k), 201)
    # another agent's subjects: 403 on every call
    expect(put_text(srv, b, "u", "b.txt", "secret"), 201)
    expect_error(put_text(srv, b, "u", "x.txt", "x", key=k), 403)
    expect_error(download(srv, b, "u", "b.txt", key=k), 403)
    expect_error(listing(srv, b, "u", key=k), 403)
    expect_error(srv.post(su(b, "u", "/files/move"), json={"from": "b.txt", "to": "c.txt"},
                          key=k), 403)
    expect_error(srv.delete(su(b, "u", "/files"), query={"path": "b.txt"}, key=k), 403)
    expect_error(srv.get(su(b, "u", "/volume"), key=k), 403)
    expect_error(srv.put(su(b, "u", "/memory/USER.md"), body=b"m", key=k), 403)
    expect_error(srv.get(su(b, "u", "/memory/USER.md"), key=k), 403)
    expect_error(srv.put("/v1/agents/%s/skills/k.md" % b, body=b"k", key=k), 403)
    expect_error(srv.post(su(b, "u", "/sessions"), key=k), 403)
    eq(download(srv, b, "u", "b.txt").body, b"secret", "b's file untouched")
    # another organization does not see the agent at all
    other = expect(srv.post("/v1/keys", json={"org": "sj-o-%d" % os.getpid()}), 201).json()["key"]
    expect_error(srv.get(su(a, "u", "/volume"), key=other), 404)
    expect_error(download(srv, a, "u", "a.txt", key=other), 404)


def test_agent_delete_deletes_subject_volumes(srv):
    aid = make_agent(srv)
    expect(put_text(srv, aid, "s1", "a.txt", "x"), 201)
    expect(put_text(srv, aid, "s2", "a.txt", "y"), 201)
    expect(srv.put("/v1/agents/%s/skills/z.md" % aid, body=b"z"), 201)
    vols = [srv.get(su(aid, s, "/volume")).json()["volumeId"] for s in ("s1", "s2")]
    for v in vols:
        expect(srv.get("/v1/volumes/%s" % v), 200)
    expect(srv.delete("/v1/agents/%s" % aid), 204)
    for v in vols:
        expect_error(srv.get("/v1/volumes/%s" % v), 404)
    expect_error(srv.get(su(aid, "s1", "/volume")), 404)
    # the same id again starts empty: new volumes, no skills
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    v = expect(srv.get(su(aid, "s1", "/volume")), 200).json()
    check(v["volumeId"] not in vols and v["files"] == 0, "a fresh workspace: %r" % v)
    eq(expect(srv.post(su(aid, "s1", "/sessions")), 201).json()["skills"], [], "no old skills")


def test_routes_and_methods(srv):
    aid = make_agent(srv)
    r = srv.request("PATCH", su(aid, "u", "/files"))
    expect(r, 405)
    contains(r.header("Allow") or "", "DELETE", "Allow of the files listing")
    expect(srv.request("POST", su(aid, "u", "/volume")), 405)
    expect_error(srv.get(su(aid, "u", "/files/content"), query={"path": "a\x00b"}), 400)


def test_reads_of_an_absent_subject_make_nothing(srv):
    """Issue 32.10: a GET of a subject that has no workspace made one (a read-only key
    could create volumes by GET). Now every read answers the absent subject as an empty
    workspace without making it: the listing is empty; a file, a memory file and a
    folder are 404; the volume is a new one's numbers with `volumeId: null`; no volume
    appears. A write then makes it."""
    aid = make_agent(srv)
    ro = expect(srv.post("/v1/keys", json={"readOnly": True}), 201).json()["key"]
    before = len(expect(srv.get("/v1/volumes"), 200).json()["volumes"])
    for key in (ro, harness._ABSENT):
        sub = new_id("ghost")
        eq(expect(listing(srv, aid, sub, key=key), 200).json()["entries"], [], "empty listing")
        expect_error(listing(srv, aid, sub, path="docs", key=key), 404, "not_found")
        expect_error(download(srv, aid, sub, "a.txt", key=key), 404, "not_found",
                     mentions="a.txt")
        expect_error(srv.get(su(aid, sub, "/memory/USER.md"), key=key), 404, "not_found",
                     mentions="USER.md")
        v = expect(srv.get(su(aid, sub, "/volume"), key=key), 200).json()
        eq((v["volumeId"], v["used"], v["files"], v["capacity"], v["ceiling"]),
           (None, 0, 0, 512 << 20, 4 << 30), "an absent subject's volume")
        eq(len(expect(srv.get("/v1/volumes"), 200).json()["volumes"]), before,
           "no volume made by reads")
    sub = new_id("real")
    expect(put_text(srv, aid, sub, "a.txt", "hi"), 201)
    eq(expect(srv.get(su(aid, sub, "/volume")), 200).json()["files"], 1, "made by a write")
    eq(len(expect(srv.get("/v1/volumes"), 200).json()["volumes"]), before + 1, "one volume")
