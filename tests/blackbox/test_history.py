"""Who changed what, history, revert (issue 37 items 3 and 4; API.md "Merge, history, who
changed what, revert"; docs/api.md "Who", "History", "Revert"): every change records `by`
(key, agent, user, run, call, tool, via) for HTTP writes, agent tool writes, a turn call's
commit, a signed link PUT, merge and restore; the changes feed shows it and filters by
runId/callId/agent/keyId; GET .../history lists a path's versions newest first, paged;
POST .../revert undoes a seq, a run or a call as one change, with conflicts settled as a
merge's (409, resolutions, dryRun); tenancy."""

import hashlib
import os

import agentlib
import harness
from agentlib import agent_url, new_id
from harness import check, eq, expect, expect_error

TIMEOUT = 600


def key_id(key):
    return "k_" + hashlib.sha256(key.encode()).hexdigest()[:16]


def changes(srv, vid, key=None, **query):
    kw = {} if key is None else {"key": key}
    return expect(srv.get("/v1/volumes/%s/changes" % vid, query=query, **kw), 200).json()


def bys(srv, vid, **query):
    """[(seq, path, op, by)] of the feed."""
    return [(c["seq"], c["path"], c["op"], c["by"]) for c in changes(srv, vid, **query)["changes"]]


def history(srv, vid, path, key=None, **query):
    kw = {} if key is None else {"key": key}
    q = dict(query, path=path)
    return srv.get("/v1/volumes/%s/history" % vid, query=q, **kw)


def revert(srv, vid, key=None, **body):
    kw = {} if key is None else {"key": key}
    return srv.post("/v1/volumes/%s/revert" % vid, json=body, **kw)


def reverted(srv, vid, **body):
    return expect(revert(srv, vid, **body), 200).json()


def body_of(srv, vid, path):
    r = srv.get_file(vid, path)
    return r.body if r.status == 200 else None


def rm(srv, vid, path):
    expect(srv.delete(srv.file_path(vid, path)), 200, 204)


def tool_write(srv, aid, path, text, run=None):
    h = {"X-Run-Id": run} if run else None
    # a write over a file the agent has not read is refused: read it first
    expect(srv.post(agent_url(aid, "/tools/read"), json={"path": path}, headers=h), 200)
    r = expect(srv.post(agent_url(aid, "/tools/write"), json={"path": path, "content": text},
                        headers=h), 200).json()
    check(r["ok"] is True, "tool write ok: %r" % r)
    return r


def workspace(srv, aid):
    return expect(srv.get(agent_url(aid)), 200).json()["workspaceVolumeId"]


# ---------------------------------------------------------------------- by

def test_http_writes_record_the_key(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"a")
    expect(srv.post("/v1/volumes/%s/move" % vid, json={"from": "a.txt", "to": "b.txt"}), 200)
    rm(srv, vid, "b.txt")
    me = {"keyId": key_id(srv.key), "via": "http"}
    eq([(p, op, by) for _, p, op, by in bys(srv, vid)],
       [("a.txt", "write", me), ("a.txt", "remove", me), ("b.txt", "write", me),
        ("b.txt", "remove", me)], "by of a put, a move and a delete")
    other = expect(srv.post("/v1/keys", json={"name": "second"}), 201).json()
    expect(srv.put(srv.file_path(vid, "c.txt"), body=b"c", key=other["key"]), 201)
    got = bys(srv, vid, keyId=other["id"])
    eq([(p, by["keyId"]) for _, p, _, by in got], [("c.txt", other["id"])],
       "?keyId= keeps that key's changes")
    eq(changes(srv, vid, keyId=other["id"])["seq"], srv.seq(vid), "the seq moves past the rest")
    eq(bys(srv, vid, keyId="k_nobody"), [], "no change of an unknown key")
    expect(srv.put(srv.file_path(vid, "d.txt"), body=b"d",
                   headers={"X-Coffer-Client": "console"}), 201)
    eq(bys(srv, vid)[-1][3], {"keyId": key_id(srv.key), "via": "console"}, "the console's write")


def test_agent_tool_writes_record_agent_run_and_tool(srv):
    a = agentlib.make_agent(srv, new_id(), harness._ABSENT)
    aid, ws = a["id"], a["workspaceVolumeId"]
    tool_write(srv, aid, "/workspace/r1.txt", "one", run="run-1")
    tool_write(srv, aid, "/workspace/r2.txt", "two", run="run-2")
    srv.put_ok(ws, "plain.txt", b"p")
    got = bys(srv, ws, runId="run-1")
    eq([p for _, p, _, _ in got], ["r1.txt"], "?runId= keeps that run's changes")
    by = got[0][3]
    eq((by.get("keyId"), by.get("agent"), by.get("runId"), by.get("tool"), by.get("via")),
       (key_id(srv.key), aid, "run-1", "write", "tool"), "by of a tool write")
    eq(sorted(p for _, p, _, _ in bys(srv, ws, agent=aid)), ["r1.txt", "r2.txt"],
       "?agent= keeps the agent's changes, not the key's own")


def test_link_put_records_the_links_maker(srv):
    vid = srv.create_volume()["id"]
    l = expect(srv.post("/v1/volumes/%s/links" % vid, json={"path": "up.txt", "method": "PUT"}),
               201).json()
    expect(srv.put(l["url"], body=b"hi", key=None), 200, 201)
    eq(bys(srv, vid)[-1][3], {"keyId": key_id(srv.key), "via": "link"}, "by of a link PUT")


def test_merge_and_restore_record_their_via(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a", b"1")
    snap = srv.snapshot(vid)["id"]
    fk = expect(srv.post("/v1/volumes/%s/fork" % vid, json={}), 201).json()["id"]
    srv.put_ok(fk, "b", b"2")
    expect(srv.post("/v1/volumes/%s/merge" % vid, json={"from": fk}), 200)
    eq(bys(srv, vid)[-1][3], {"keyId": key_id(srv.key), "via": "merge"}, "by of a merge")
    expect(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": snap}), 200)
    eq(bys(srv, vid)[-1][1:], ("b", "remove", {"keyId": key_id(srv.key), "via": "restore"}),
       "by of a restore")


def test_turn_call_commit_records_the_call(srv):
    if not os.path.exists("/dev/fuse") or not harness.IS_ROOT:
        harness.skip("calls see the agent's files through FUSE, mounted here as root")
    from turnlib import make_agent, new_turn, ok
    aid = make_agent(srv)
    ws = workspace(srv, aid)
    t = new_turn(srv, aid, user="u7")
    out = ok(srv, t["id"], "echo hi > /workspace/from-call.txt", callId="call-7")
    eq(len(out["committed"]), 1, "committed %r" % out)
    got = bys(srv, ws, callId="call-7")
    eq([p for _, p, _, _ in got], ["from-call.txt"], "?callId= keeps the call's changes")
    by = got[0][3]
    eq((by.get("keyId"), by.get("agent"), by.get("user"), by.get("callId"), by.get("via")),
       (key_id(srv.key), aid, "u7", "call-7", "call"), "by of a call's commit")
    # revert of the call
    srv.put_ok(ws, "other.txt", b"o")
    r = reverted(srv, ws, callId="call-7")
    eq(r["reverted"], [{"path": "from-call.txt", "from": "before"}], "reverted")
    eq(body_of(srv, ws, "from-call.txt"), None, "the call's file is gone again")
    eq(body_of(srv, ws, "other.txt"), b"o", "another write stays")


# ----------------------------------------------------------------- history

def test_history_of_a_path_newest_first_paged(srv):
    vid = srv.create_volume()["id"]
    seqs = []
    for i in range(5):
        seqs.append(srv.put_ok(vid, "h.txt", b"v%d" % i)["seq"])
        srv.put_ok(vid, "noise.txt", b"%d" % i)
    rm(srv, vid, "h.txt")
    seqs.append(srv.seq(vid))
    srv.put_ok(vid, "h.txt", b"again")
    seqs.append(srv.seq(vid))
    full = expect(history(srv, vid, "h.txt"), 200).json()
    vs = full["versions"]
    eq([v["seq"] for v in vs], seqs[::-1], "every version, newest first")
    eq([v["op"] for v in vs], ["write", "remove"] + ["write"] * 5, "ops")
    eq(vs[0]["sha256"], hashlib.sha256(b"again").hexdigest(), "sha256 of the newest")
    eq(vs[0]["size"], 5, "size")
    eq(vs[1]["version"], seqs[4], "a remove names the version it removed")
    eq(vs[0]["by"], {"keyId": key_id(srv.key), "via": "http"}, "by")
    check(isinstance(vs[0]["at"], str) and vs[0]["at"], "at: %r" % vs[0]["at"])
    check("cursor" not in full, "no cursor on the last page")
    # paged
    got, cursor = [], None
    while True:
        q = {"limit": 3}
        if cursor:
            q["cursor"] = cursor
        page = expect(history(srv, vid, "/h.txt", **q), 200).json()
        check(len(page["versions"]) <= 3, "a page holds at most limit")
        got += [v["seq"] for v in page["versions"]]
        cursor = page.get("cursor")
        if not cursor:
            break
    eq(got, seqs[::-1], "pages put together")
    eq(expect(history(srv, vid, "never.txt"), 200).json(), {"versions": []}, "unknown path")
    expect_error(history(srv, vid, "a/../b"), 400, mentions="path")
    expect_error(srv.get("/v1/volumes/%s/history" % vid), 400, mentions="path")
    eq(len(expect(history(srv, vid, "h.txt", limit=1000), 200).json()["versions"]), 7,
       "limit 1000 is taken")
    expect_error(history(srv, vid, "h.txt", limit=1001), 400, mentions="limit")
    expect_error(history(srv, vid, "h.txt", limit=0), 400, mentions="limit")
    expect_error(history(srv, vid, "h.txt", cursor="zz"), 400, mentions="cursor")
    other = expect(srv.post("/v1/keys", json={"org": "history-other"}), 200, 201).json()["key"]
    expect_error(history(srv, vid, "h.txt", key=other), 404)


# ------------------------------------------------------------------ revert

def test_revert_a_seq(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"a1")
    srv.put_ok(vid, "b.txt", b"b1")
    s = srv.put_ok(vid, "a.txt", b"a2")["seq"]
    srv.put_ok(vid, "c.txt", b"c")
    before = srv.seq(vid)
    dry = reverted(srv, vid, seq=s, dryRun=True)
    eq((dry["seq"], dry["dryRun"]), (before, True), "a dry run answers the seq now")
    eq(srv.seq(vid), before, "a dry run changes nothing")
    r = reverted(srv, vid, seq=s)
    eq(r["seq"], before + 1, "one new change")
    eq(r["reverted"], [{"path": "a.txt", "from": "before"}], "reverted")
    eq(body_of(srv, vid, "a.txt"), b"a1", "back to what it was")
    eq(body_of(srv, vid, "c.txt"), b"c", "later writes stay")
    eq(bys(srv, vid)[-1][3], {"keyId": key_id(srv.key), "via": "revert"}, "by of a revert")
    # reverting a creation removes the file
    s2 = srv.put_ok(vid, "new.txt", b"n")["seq"]
    reverted(srv, vid, seq=s2)
    eq(body_of(srv, vid, "new.txt"), None, "a created file goes")
    # reverting a remove brings it back
    rm(srv, vid, "b.txt")
    reverted(srv, vid, seq=srv.seq(vid))
    eq(body_of(srv, vid, "b.txt"), b"b1", "a removed file comes back")


def test_revert_a_run_and_paths(srv):
    a = agentlib.make_agent(srv, new_id(), harness._ABSENT)
    aid, ws = a["id"], a["workspaceVolumeId"]
    srv.put_ok(ws, "keep.txt", b"k0")
    srv.put_ok(ws, "x.txt", b"x0")
    tool_write(srv, aid, "/workspace/x.txt", "x1", run="bad")
    tool_write(srv, aid, "/workspace/x.txt", "x2", run="bad")
    tool_write(srv, aid, "/workspace/y.txt", "y1", run="bad")
    tool_write(srv, aid, "/workspace/keep.txt", "k1", run="good")
    only = reverted(srv, ws, runId="bad", paths=["y.txt"])
    eq(only["reverted"], [{"path": "y.txt", "from": "before"}], "only the paths named")
    eq(body_of(srv, ws, "x.txt"), b"x2", "x untouched")
    r = reverted(srv, ws, runId="bad")
    eq([m["path"] for m in r["reverted"]], ["x.txt"], "y is back already")
    eq(body_of(srv, ws, "x.txt"), b"x0", "back to before the run's first write")
    eq(body_of(srv, ws, "keep.txt"), b"k1", "another run's write stays")
    expect_error(revert(srv, ws, runId="bad", paths=["keep.txt"]), 400, mentions="keep.txt")
    expect_error(revert(srv, ws, runId="none-such"), 404, mentions="none-such")


def test_revert_conflicts_and_resolutions(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "t.txt", b"one\ntwo\nthree\n")
    srv.put_ok(vid, "bin", b"\0b0")
    s = srv.put_ok(vid, "bin", b"\0b1")["seq"]
    srv.put_ok(vid, "bin", b"\0b2")    # changed again since
    before = srv.seq(vid)
    e = expect_error(revert(srv, vid, seq=s), 409, mentions="conflict")
    c = e["conflicts"]
    eq([(x["path"], x["kind"]) for x in c], [("bin", "content")], "the conflict")
    eq((c[0]["base"]["sha256"], c[0]["ours"]["sha256"], c[0]["theirs"]["sha256"]),
       (hashlib.sha256(b"\0b1").hexdigest(), hashlib.sha256(b"\0b2").hexdigest(),
        hashlib.sha256(b"\0b0").hexdigest()), "base = the reverted, ours = now, theirs = before")
    eq(srv.seq(vid), before, "nothing changed")
    dry = reverted(srv, vid, seq=s, dryRun=True)
    eq(len(dry["conflicts"]), 1, "a dry run lists the conflicts")
    r = reverted(srv, vid, seq=s, resolutions={"bin": "theirs"})
    eq(r["reverted"], [{"path": "bin", "from": "before"}], "settled: back to before")
    eq(body_of(srv, vid, "bin"), b"\0b0", "theirs = before the reverted change")
    # text: a change of other lines since merges cleanly
    s2 = srv.put_ok(vid, "t.txt", b"ONE\ntwo\nthree\n")["seq"]
    srv.put_ok(vid, "t.txt", b"ONE\ntwo\nTHREE\n")
    r = reverted(srv, vid, seq=s2)
    eq(r["reverted"], [{"path": "t.txt", "from": "merged"}], "merged by lines")
    eq(body_of(srv, vid, "t.txt"), b"one\ntwo\nTHREE\n", "only the reverted lines go back")
    s3 = srv.put_ok(vid, "t.txt", b"x\n")["seq"]
    srv.put_ok(vid, "t.txt", b"y\n")
    expect_error(revert(srv, vid, seq=s3), 409)
    reverted(srv, vid, seq=s3, resolutions={"t.txt": {"text": "z\n"}})
    eq(body_of(srv, vid, "t.txt"), b"z\n", "a {text} resolution")
    s4 = srv.put_ok(vid, "t.txt", b"p\n")["seq"]
    rm(srv, vid, "t.txt")
    e = expect_error(revert(srv, vid, seq=s4), 409)
    eq(e["conflicts"][0]["kind"], "remove-change", "removed since: remove-change")
    reverted(srv, vid, seq=s4, resolutions={"t.txt": "ours"})
    eq(body_of(srv, vid, "t.txt"), None, "ours keeps it removed")


def test_revert_bad_bodies_and_tenancy(srv):
    vid = srv.create_volume()["id"]
    s = srv.put_ok(vid, "a", b"a")["seq"]
    expect_error(revert(srv, vid), 400, mentions="exactly one")
    expect_error(revert(srv, vid, seq=s, runId="r"), 400, mentions="exactly one")
    expect_error(revert(srv, vid, seq=0), 400, mentions="seq")
    expect_error(revert(srv, vid, seq=s + 5), 400, mentions="seq")
    expect_error(revert(srv, vid, seq=s, paths=[3]), 400, mentions="paths")
    # 'paths' holds at most 10,000: at the limit each is looked at (this one is not
    # a path seq s changed), past it 413 naming the limit
    many = ["p%05d" % i for i in range(10000)]
    expect_error(revert(srv, vid, seq=s, paths=many), 400, mentions="p00000")
    expect_error(revert(srv, vid, seq=s, paths=many + ["x"]), 413, mentions=["paths", "10000"])
    expect_error(revert(srv, vid, seq=s, resolutions={"a": "mine"}), 400, mentions="resolutions")
    expect_error(revert(srv, vid, seq=s, nope=1), 400)
    ro = expect(srv.post("/v1/keys", json={"readOnly": True}), 201).json()["key"]
    expect_error(revert(srv, vid, key=ro, seq=s), 403, mentions="read-only")
    other = expect(srv.post("/v1/keys", json={"org": "revert-other"}), 200, 201).json()["key"]
    expect_error(revert(srv, vid, key=other, seq=s), 404)
    expect_error(srv.get("/v1/volumes/%s/changes" % vid, key=other), 404)
    eq(body_of(srv, vid, "a"), b"a", "nothing changed")


def test_agent_routes_record_agent_user_run_and_call(srv):
    """The agent's own routes record who: file PUT/DELETE, uploads (the request id is the
    run's), tool outputs (the call), a prompt's inline file, and X-Run-Id on a volume PUT."""
    import base64
    a = agentlib.make_agent(srv, new_id(), harness._ABSENT)
    aid, ws = a["id"], a["workspaceVolumeId"]
    me = key_id(srv.key)
    expect(srv.put(agentlib.files_url(aid, "/workspace/f.txt"), body=b"f"), 201)
    expect(srv.delete(agentlib.files_url(aid, "/workspace/f.txt")), 200)
    expect(srv.put(agent_url(aid, "/uploads/req-1/u.txt"), body=b"u"), 201)
    expect(srv.put(agent_url(aid, "/tool-outputs/call-1/o.txt"), body=b"o"), 201)
    expect(srv.post(agent_url(aid, "/prompt"), json={
        "text": "see", "requestId": "req-2",
        "files": [{"name": "p.txt", "data": base64.b64encode(b"p").decode()}]}), 200)
    agent_by = {"keyId": me, "agent": aid, "via": "http"}
    eq([(p, op, by) for _, p, op, by in bys(srv, ws)],
       [("f.txt", "write", agent_by), ("f.txt", "remove", agent_by),
        ("uploads/req-1/u.txt", "write", dict(agent_by, runId="req-1")),
        ("tool-outputs/call-1/o.txt", "write", dict(agent_by, callId="call-1")),
        ("uploads/req-2/p.txt", "write", dict(agent_by, runId="req-2"))],
       "by of the agent's file routes, uploads, tool outputs and a prompt's file")
    eq([p for _, p, _, _ in bys(srv, ws, runId="req-1")], ["uploads/req-1/u.txt"],
       "?runId= finds an upload by its request id")
    # a client's own run: X-Run-Id on a volume write is recorded, and reverts as a run
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "keep.txt", b"k")
    expect(srv.put(srv.file_path(vid, "r.txt"), body=b"r", headers={"X-Run-Id": "my-run"}), 201)
    expect(srv.put(srv.file_path(vid, "bad.txt"), body=b"b",
                   headers={"X-Run-Id": "has space"}), 201)
    eq([(p, by) for _, p, _, by in bys(srv, vid)],
       [("keep.txt", {"keyId": me, "via": "http"}),
        ("r.txt", {"keyId": me, "runId": "my-run", "via": "http"}),
        ("bad.txt", {"keyId": me, "via": "http"})],
       "X-Run-Id recorded when it is a run id (1..128 printable ASCII, no space)")
    reverted(srv, vid, runId="my-run")
    eq((body_of(srv, vid, "r.txt"), body_of(srv, vid, "keep.txt")), (None, b"k"),
       "reverting the client's run undoes its write alone")


def test_subject_routes_record_the_user(srv):
    a = agentlib.make_agent(srv, new_id(), harness._ABSENT)
    aid = a["id"]
    sub = "/v1/agents/%s/users/alice" % aid
    expect(srv.put(sub + "/files/content", json={"path": "n.md", "content": "x"}), 201)
    expect(srv.post(sub + "/files/move", json={"from": "n.md", "to": "m.md"}), 200)
    expect(srv.delete(sub + "/files", query={"path": "m.md"}), 200)
    expect(srv.put(sub + "/memory/USER.md", body=b"likes tea"), 201)
    expect(srv.put(agent_url(aid, "/skills/s.md"), body=b"# skill"), 201)
    expect(srv.post(sub + "/sessions", json={}), 201)
    vid = expect(srv.get(sub + "/volume"), 200).json()["volumeId"]
    who = {"keyId": key_id(srv.key), "agent": aid, "user": "alice", "via": "http"}
    eq([(p, op, by) for _, p, op, by in bys(srv, vid)],
       [("n.md", "write", who), ("m.md", "write", who), ("n.md", "remove", who),
        ("m.md", "remove", who), ("memories/USER.md", "write", who),
        ("skills/s.md", "write", who)],
       "by of a subject's put, move, delete, memory and session's skills")
