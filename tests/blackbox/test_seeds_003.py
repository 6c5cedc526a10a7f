"""Seed 003's claims (../shared/seeds/003_*: subject workspaces, attachments) and API.md
"Subjects", one test per claim, named after it. Attachments never cross subjects: a
subject's attachments are kept with its conversation by reference (never written onto a
volume) and read by that subject alone at /attachments/...; its workspace is /user. Every
path one subject could take to another's attachment or /user is tried: prompt inline and
{path} files, uploads, links, runs, the file tools, the conversation rebuild and a turn's
calls.

On the main before this module these failed: a subject's inline file was saved at
uploads/{requestId}/ of the agent's shared workspace, where a turn for another subject read
it (`cat /workspace/uploads/r1/contract.txt`), and no call but a turn knew a subject."""

import base64
import json
import urllib.parse

from harness import check, contains, eq, expect, expect_error
from agentlib import files_url
from test_tools import make_agent, new_id
from turnlib import call as turn_call
from turnlib import new_turn, ok as turn_ok

TIMEOUT = 180
SECRET = b"alice's contract: 41,000 EUR a year\n"
MARK = "41,000"


def b64(data):
    return base64.b64encode(data).decode()


def as_(subject):
    return {"X-Subject": subject} if subject else None


def agent(srv, **body):
    a = make_agent(srv, **body)
    return a["id"], a["workspaceVolumeId"]


def prompt(srv, aid, user, rid, files, status=200, **body):
    body.update({"text": "see attached", "requestId": rid, "files": files})
    if user:
        body["user"] = user
    r = srv.post("/v1/agents/%s/prompt" % aid, json=body)
    return expect(r, status)


def contract(rid="r1", data=SECRET, name="contract.txt"):
    return [{"name": name, "data": b64(data), "contentType": "text/plain"}]


def tool(srv, aid, subject, name, run=None, **args):
    h = as_(subject) or {}
    if run:
        h["X-Run-Id"] = run
    r = expect(srv.post("/v1/agents/%s/tools/%s" % (aid, name), json=args, headers=h), 200)
    return r.json()


def link(srv, aid, subject, path, **body):
    body["path"] = path
    return srv.post("/v1/agents/%s/links" % aid, json=body, headers=as_(subject))


def upload(srv, aid, subject, rid, name, data):
    return srv.put("/v1/agents/%s/uploads/%s/%s" % (aid, rid, name), body=data,
                   headers=as_(subject))


def subject_put(srv, aid, subject, path, text):
    return expect(srv.put("/v1/agents/%s/users/%s/files/content" % (aid, subject),
                          json={"path": path, "encoding": "utf-8", "content": text}), 201)


def volume_paths(srv, vid):
    return [f["path"] for f in expect(srv.get("/v1/volumes/%s/files" % vid), 200)
            .json()["files"]]


def subject_volume(srv, aid, subject):
    return expect(srv.get("/v1/agents/%s/users/%s/volume" % (aid, subject)),
                  200).json()["volumeId"]


def turn(srv, aid, user):
    return new_turn(srv, aid=aid, user=user)["id"]


# ------------------------------------------------------------------ claims

def test_attachment_kept_with_conversation_not_written_onto_a_volume(srv):
    """Seed 003: "Turn attachments are copied into the session event history. They are
    not automatically written onto the volume." An inline file of alice's prompt is at
    /attachments/r1/contract.txt, in neither the agent's workspace nor alice's workspace,
    and her conversation rebuilds with it."""
    aid, ws = agent(srv)
    a = prompt(srv, aid, "alice", "r1", contract(), conversation="c1").json()
    eq([f["path"] for f in a["files"]], ["/attachments/r1/contract.txt"], "attached as")
    eq(a["content"][0]["text"], "[File /attachments/r1/contract.txt (text/plain, %d bytes)]"
       % len(SECRET), "the line the model reads")
    eq(volume_paths(srv, ws), [], "nothing written onto the agent's workspace")
    eq(volume_paths(srv, subject_volume(srv, aid, "alice")), [],
       "nothing written onto alice's workspace")
    r = expect(srv.get("/v1/agents/%s/conversations/c1/request" % aid,
                       headers=as_("alice")), 200).json()
    eq([f["path"] for p in r["prompts"] for f in p["files"]],
       ["/attachments/r1/contract.txt"], "the conversation keeps it")
    # a retry is answered again, nothing written twice
    again = prompt(srv, aid, "alice", "r1", contract(), conversation="c1")
    eq(again.header("Idempotent-Replayed"), "true", "a retry is replayed")
    # kept until the agent is deleted, and deleted with it
    name = "conversations of subject alice of agent %s" % aid
    eq([v["name"] for v in expect(srv.get("/v1/volumes", query={"prefix": name}), 200)
        .json()["volumes"]], [name], "kept beside alice's conversation")
    expect(srv.delete("/v1/agents/%s" % aid), 204)
    eq(expect(srv.get("/v1/volumes", query={"prefix": name}), 200).json()["volumes"], [],
       "gone with the agent")


def test_data_url_attachment_is_inline_data(srv):
    """Seed 003: "add a base64 data_url attachment to user.message". Inline `data` may be
    an RFC 2397 data: URL: base64 or percent-encoded, its media type taken when
    contentType is not given (text/plain;charset=US-ASCII when the URL names none); a
    malformed one is 400 naming the file and what is wrong."""
    aid, _ = agent(srv)
    url = "data:text/csv;base64," + base64.b64encode(b"a,b\n1,2\n").decode()
    a = prompt(srv, aid, "alice", "d1", [{"name": "t.csv", "data": url}]).json()
    eq((a["files"][0]["contentType"], a["files"][0]["size"]), ("text/csv", 8),
       "a base64 data: URL")
    a = prompt(srv, aid, "alice", "d2", [{"name": "p.txt",
                                          "data": "data:,hello%20world%21"}]).json()
    eq(a["files"][0]["size"], 12, "a percent-encoded data: URL decodes to 12 bytes")
    check(a["files"][0]["contentType"].startswith("text/plain"),
          "no media type: text/plain: %r" % a["files"][0])
    a = prompt(srv, aid, "alice", "d3", [{"name": "x.bin", "contentType": "image/png",
                                          "data": "data:text/plain;base64,aGk="}]).json()
    eq(a["files"][0]["contentType"], "image/png", "contentType given wins")
    for bad, what in (("data:text/plain;base64,@@@", "base64"),
                      ("data:text/plain", "','"),
                      ("data:,50%zz", "hex"),
                      ("data:not a type,x", "media type")):
        e = expect_error(prompt(srv, aid, "alice", "bad", [{"name": "b.txt", "data": bad}],
                                status=400), 400, "validation_error")
        check("b.txt" in e["message"] and what in e["message"],
              "the error for %r names the file and %s: %r" % (bad, what, e["message"]))


def test_data_url_is_bounded_like_other_inline_data(srv):
    """API.md "prompt": inline files are at most 4 MiB decoded in all, data: URLs
    included: a base64 data: URL of exactly 4 MiB passes, one byte more is 413 naming the
    limit, and a percent-encoded one counts its decoded bytes (3 bytes of URL a byte)."""
    aid, _ = agent(srv)
    mib4 = 4 << 20
    url = "data:application/octet-stream;base64," + b64(b"\x01" * mib4)
    a = prompt(srv, aid, None, "e1", [{"name": "four.bin", "data": url}]).json()
    eq(a["files"][0]["size"], mib4, "exactly 4 MiB passes")
    url = "data:application/octet-stream;base64," + b64(b"\x01" * (mib4 + 1))
    e = expect_error(prompt(srv, aid, None, "e2", [{"name": "over.bin", "data": url}],
                            status=413), 413, "too_large")
    contains(e["message"], "4 MiB", "the 413 names the limit")
    # percent form: 4 MiB - 2 decoded bytes in the URL, plus 3 bytes inline beside it
    pct = "data:," + "%41" * (mib4 - 2)
    e = expect_error(prompt(srv, aid, None, "e3", [{"name": "p.txt", "data": pct},
                                                   {"name": "q.txt", "data": b64(b"abc")}],
                            status=413), 413, "too_large")
    contains(e["message"], "4 MiB", "decoded bytes counted")
    a = prompt(srv, aid, None, "e4", [{"name": "p.txt", "data": pct},
                                      {"name": "q.txt", "data": b64(b"ab")}]).json()
    eq([f["size"] for f in a["files"]], [mib4 - 2, 2], "4 MiB in all passes")


def test_turn_reads_its_own_subjects_attachments_only(srv):
    """API.md "Subjects": attachments are readable at /attachments/{requestId}/{name}
    (read-only) in that subject's calls, and never by another subject's calls. The
    issue's own reproduction: a turn for bob ran `cat /workspace/uploads/alice-1/...`."""
    aid, _ = agent(srv)
    prompt(srv, aid, "alice", "alice-1", contract())
    t = turn(srv, aid, "alice")
    eq(turn_ok(srv, t, "cat /attachments/alice-1/contract.txt")["stdout"], SECRET.decode(),
       "alice's call reads her attachment")
    w = turn_call(srv, t, "echo x > /attachments/alice-1/contract.txt")
    check(w["exitCode"] != 0, "attachments are read-only in a call: %r" % w)
    b = turn(srv, aid, "bob")
    out = turn_call(srv, b, "cat /workspace/uploads/alice-1/contract.txt "
                            "/attachments/alice-1/contract.txt; "
                            "ls -laR /workspace /user /attachments; "
                            "grep -rl '%s' /workspace /user /attachments /tmp" % MARK)
    check(MARK not in out["stdout"] + out["stderr"], "bob's call read alice's secret: %r" % out)
    check("contract" not in out["stdout"], "bob's call sees alice's file: %r" % out)


def test_first_call_finds_the_agents_current_skills(srv):
    """Seed 003: skills are written into the subject's skills/ "when its sandbox starts":
    a turn's FIRST call finds the agent's current skills in /user/skills/ with no other
    call before it (no sessions call, no prewarm); a skill changed since shows in the next
    turn; they are read-only in the call."""
    aid, _ = agent(srv)
    expect(srv.put("/v1/agents/%s/skills/triage.md" % aid, body=b"# triage v1\n"), 201)
    t = turn(srv, aid, "carol")
    eq(turn_ok(srv, t, "cat /user/skills/triage.md")["stdout"], "# triage v1\n",
       "the first call reads the skill")
    w = turn_call(srv, t, "echo x > /user/skills/triage.md")
    check(w["exitCode"] != 0, "skills are read-only in a call: %r" % w)
    expect(srv.put("/v1/agents/%s/skills/triage.md" % aid, body=b"# triage v2\n"), 200)
    expect(srv.put("/v1/agents/%s/skills/new.md" % aid, body=b"# new\n"), 201)
    t2 = turn(srv, aid, "carol")
    eq(turn_ok(srv, t2, "cat /user/skills/triage.md /user/skills/new.md")["stdout"],
       "# triage v2\n# new\n", "the next turn has the changed and the new skill")


def test_prewarm_makes_the_workspace_and_writes_skills(srv):
    """POST /v1/agents/{a}/users/{s}/prewarm makes the subject's volume and writes the
    agent's skills before any turn; idempotent (200 each time, the same volume); the
    first call after it finds the skills."""
    aid, _ = agent(srv)
    expect(srv.put("/v1/agents/%s/skills/s.md" % aid, body=b"# s\n"), 201)
    eq(expect(srv.get("/v1/agents/%s/users/dan/volume" % aid), 200).json()["volumeId"], None,
       "no workspace before")
    p1 = expect(srv.post("/v1/agents/%s/users/dan/prewarm" % aid, json={}), 200).json()
    eq((p1["prewarmed"], p1["skills"]), (True, ["s"]), "prewarmed with its skills")
    p2 = expect(srv.post("/v1/agents/%s/users/dan/prewarm" % aid, json={}), 200).json()
    eq(p2["volumeId"], p1["volumeId"], "the same volume again")
    eq(expect(srv.get("/v1/agents/%s/users/dan/volume" % aid), 200).json()["volumeId"],
       p1["volumeId"], "the workspace is there")
    expect_error(srv.post("/v1/agents/%s/users/dan/prewarm" % aid, json={"x": 1}), 400)
    expect_error(srv.post("/v1/agents/ag_none/users/dan/prewarm", json={}), 404)
    t = turn(srv, aid, "dan")
    eq(turn_ok(srv, t, "cat /user/skills/s.md")["stdout"], "# s\n", "the first call")


def test_bob_reuses_alices_request_id_without_conflict(srv):
    """Requests and uploads are the subject's own: bob's requestId "r1" is not a retry of
    alice's (no 409 naming her request, no replay of her answer) and saves his own file."""
    aid, _ = agent(srv)
    prompt(srv, aid, "alice", "r1", contract())
    mine = prompt(srv, aid, "bob", "r1", contract(data=b"bob's own\n"))
    check(mine.header("Idempotent-Replayed") is None, "bob's prompt is not a replay")
    eq(mine.json()["files"][0]["sha256"], __import__("hashlib").sha256(b"bob's own\n")
       .hexdigest(), "bob's own bytes")
    expect(upload(srv, aid, "alice", "u1", "scan.txt", SECRET), 201)
    up = expect(upload(srv, aid, "bob", "u1", "scan.txt", b"bob scan\n"), 201).json()
    eq(up["path"], "/attachments/u1/scan.txt", "bob's upload path")
    eq(tool(srv, aid, "bob", "read", path="/attachments/u1/scan.txt")["output"].count("bob scan"),
       1, "bob reads his own upload")


def test_no_path_reaches_another_subjects_attachment_or_user(srv):
    """API.md "Subjects": whatever the path, one subject's attachments and /user are
    never readable by another subject's calls, tools, links or prompts. alice has an inline
    attachment, an upload and a file in /user; bob tries each by every call that takes a
    subject, and so does a caller without a subject."""
    aid, ws = agent(srv)
    prompt(srv, aid, "alice", "r1", contract(), conversation="c1")
    eq(expect(upload(srv, aid, "alice", "r2", "scan.txt", SECRET), 201).json()["path"],
       "/attachments/r2/scan.txt", "an upload for alice is her attachment")
    subject_put(srv, aid, "alice", "secret.txt", SECRET.decode())
    theirs = ["/attachments/r1/contract.txt", "/attachments/r2/scan.txt", "/user/secret.txt"]
    # alice reaches her own, by the tools, a link and a prompt
    for p in theirs:
        j = tool(srv, aid, "alice", "read", path=p)
        check(j["ok"] and MARK in j["output"], "alice reads %s: %r" % (p, j))
        url = expect(link(srv, aid, "alice", p), 201).json()["url"]
        eq(expect(srv.get(url, key=None), 200).body, SECRET, "alice's link to %s" % p)
        eq(expect(srv.get(files_url(aid, p), headers=as_("alice")), 200).body, SECRET,
           "alice's agent files GET of %s" % p)
    prompt(srv, aid, "alice", "r3", [{"path": p} for p in theirs])
    eq(volume_paths(srv, ws), [], "nothing of alice's on the agent's workspace")
    # bob (and no subject) reach none of it, nor what seed 001 would have put there
    tries = theirs + ["/workspace/uploads/r1/contract.txt", "/workspace/uploads/r2/scan.txt"]
    for who in ("bob", None):
        for p in tries:
            j = tool(srv, aid, who, "read", path=p)
            check(not j["ok"] and MARK not in j["output"], "%s read %s: %r" % (who, p, j))
            r = link(srv, aid, who, p)
            if r.status == 201:  # a GET link may name a file to come: its own, never hers
                g = srv.get(r.json()["url"], key=None)
                check(g.status == 404 and MARK.encode() not in g.body,
                      "%s's link to %s: %s" % (who, p, g.describe()))
            else:
                expect_error(r, 404, "not_found")
            expect_error(prompt(srv, aid, who, new_id("rq"), [{"path": p}], status=404), 404,
                         "not_found")
            expect_error(srv.get(files_url(aid, p), headers=as_(who)), 404, "not_found")
        for d in ("/workspace", "/user", "/attachments"):
            for name, args in (("ls", {"path": d}), ("glob", {"pattern": "**", "path": d}),
                               ("grep", {"pattern": MARK, "path": d})):
                j = tool(srv, aid, who, name, **args)
                check(MARK not in j["output"] and "contract" not in j["output"] and
                      "secret.txt" not in j["output"], "%s %s %s: %r" % (who, name, d, j))
        expect_error(srv.get("/v1/agents/%s/conversations/c1/request" % aid,
                             headers=as_(who)), 404, "not_found")


def test_resolve_and_tool_outputs_take_the_subject(srv):
    """API.md "Subjects" for seed 001's file tools: POST .../resolve with X-Subject reads
    that subject's /user and /attachments ({"$file"} as base64 and as a link); another
    subject and a caller without one get 404 naming the path, never the bytes. PUT
    .../tool-outputs with X-Subject saves in the subject's own workspace
    (/user/tool-outputs/...), where only that subject reads it."""
    aid, ws = agent(srv)
    prompt(srv, aid, "alice", "r1", contract())
    subject_put(srv, aid, "alice", "secret.txt", SECRET.decode())
    theirs = ["/user/secret.txt", "/attachments/r1/contract.txt"]
    inp = {"docs": [{"$file": p} for p in theirs]}
    out = expect(srv.post("/v1/agents/%s/resolve" % aid, json={"input": inp},
                          headers=as_("alice")), 200).json()["input"]["docs"]
    eq([base64.b64decode(f["data"]) for f in out], [SECRET, SECRET], "alice's files")
    eq([f["path"] for f in out], theirs, "by their agent paths")
    out = expect(srv.post("/v1/agents/%s/resolve" % aid, json={"input": inp, "as": "url"},
                          headers=as_("alice")), 200).json()["input"]["docs"]
    for f in out:
        eq(expect(srv.get(f["url"], key=None), 200).body, SECRET, "alice's link %s" % f["path"])
    for who in ("bob", None):
        for p in theirs:
            e = expect_error(srv.post("/v1/agents/%s/resolve" % aid,
                                      json={"input": {"$file": p}}, headers=as_(who)),
                             404, "not_found")
            contains(e["message"], p, "%s's 404 names the path" % who)
            check(MARK not in e["message"], "and nothing of the file")
    r = expect(srv.put("/v1/agents/%s/tool-outputs/toolu_1/out.txt" % aid, body=SECRET,
                       headers=as_("alice")), 201).json()
    eq(r["path"], "/user/tool-outputs/toolu_1/out.txt", "alice's tool output in her /user")
    j = tool(srv, aid, "alice", "read", path=r["path"])
    check(j["ok"] and MARK in j["output"], "alice reads it: %r" % j)
    for who in ("bob", None):
        j = tool(srv, aid, who, "read", path=r["path"])
        check(not j["ok"] and MARK not in j["output"], "%s cannot: %r" % (who, j))
    eq(volume_paths(srv, ws), [], "nothing of alice's on the agent's workspace")


def test_runs_are_the_subjects_own(srv):
    """GET /v1/agents/{id}/runs/{runId} with X-Subject: what that subject's calls of the
    run wrote. bob's run of the same id does not list alice's /user file."""
    aid, _ = agent(srv)
    w = tool(srv, aid, "alice", "write", run="run1", path="/user/out.txt", content="hi\n")
    check(w["ok"], "alice writes to /user: %r" % w)
    got = expect(srv.get("/v1/agents/%s/runs/run1" % aid, headers=as_("alice")), 200).json()
    eq([f["path"] for f in got["files"]], ["/user/out.txt"], "alice's run")
    # a call of alice's turn lands its /user write in alice's run too
    t = turn(srv, aid, "alice")
    c = expect(srv.post("/v1/turns/%s/calls" % t, json={"command": "echo t > /user/t.txt"},
                        headers={"X-Run-Id": "run1"}), 200).json()
    eq(c["exitCode"], 0, "alice's call: %r" % c)
    got = expect(srv.get("/v1/agents/%s/runs/run1" % aid, headers=as_("alice")), 200).json()
    eq(sorted(f["path"] for f in got["files"]), ["/user/out.txt", "/user/t.txt"],
       "alice's run, tool and call")
    for who in ("bob", None):
        got = expect(srv.get("/v1/agents/%s/runs/run1" % aid, headers=as_(who)), 200).json()
        eq((got["files"], got["presented"]), ([], []), "%s's run of the same id" % who)


def test_subject_cannot_write_attachments_or_reserved_folders(srv):
    """Attachments are read-only (the model saves one by writing it elsewhere); /user's
    memories/ and skills/ are read-only to the file tools, as in a call."""
    aid, _ = agent(srv)
    prompt(srv, aid, "alice", "r1", contract())
    j = tool(srv, aid, "alice", "write", path="/attachments/r1/new.txt", content="x")
    check(not j["ok"], "write into /attachments refused: %r" % j)
    contains(j["output"], "read-only", "why")
    j = tool(srv, aid, "alice", "write", path="/user/memories/MEMORY.md", content="x")
    check(not j["ok"], "write into /user/memories refused: %r" % j)
    contains(j["output"], "memories", "why")
    expect_error(link(srv, aid, "alice", "/attachments/r1/contract.txt", method="PUT"), 403,
                 "forbidden")
    j = tool(srv, aid, "alice", "read", path="/attachments/r1/contract.txt")
    w = tool(srv, aid, "alice", "write", path="/user/saved.txt", content=SECRET.decode())
    check(j["ok"] and w["ok"], "the model saves an attachment by writing it: %r" % w)


def test_bad_subject_refused_naming_it(srv):
    aid, _ = agent(srv)
    for bad in ("..", "a/b", "x" * 129):
        r = srv.post("/v1/agents/%s/tools/ls" % aid, json={}, headers=as_(bad))
        expect_error(r, 400, "validation_error")
        contains(r.error["message"], "subject", "message")
    r = srv.post("/v1/agents/%s/prompt" % aid, json={"text": "t", "requestId": "r",
                                                     "user": "a/b"})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "subject", "message")


def test_agent_without_subjects_keeps_seed_001_uploads(srv):
    """Seed 001's rule stays for agents used without subjects: uploads under uploads/ of
    the agent's workspace, and no /user or /attachments."""
    aid, ws = agent(srv)
    a = prompt(srv, aid, None, "r1", contract()).json()
    eq(a["files"][0]["path"], "/workspace/uploads/r1/contract.txt", "seed 001's place")
    eq(volume_paths(srv, ws), ["uploads/r1/contract.txt"], "on the workspace")
    j = tool(srv, aid, None, "ls", path="/user")
    check(not j["ok"], "no /user without a subject: %r" % j)


def test_mcp_user_acts_for_that_subject(srv):
    """`coffer mcp --agent A --user S` (API.md "Subjects"): the tools reach S's /user and
    /attachments, and another subject's session reaches neither of S's."""
    from test_mcp import Session, server_args
    aid, _ = agent(srv)
    prompt(srv, aid, "alice", "r1", contract())
    subject_put(srv, aid, "alice", "secret.txt", SECRET.decode())
    s = Session("--agent", aid, "--user", "alice", *server_args(srv))
    try:
        s.initialize()
        for p in ("/attachments/r1/contract.txt", "/user/secret.txt"):
            text, _ = s.ok("read", path=p)
            contains(text, MARK, "alice's session reads %s" % p)
        s.close()
    finally:
        s.kill()
    s = Session("--agent", aid, "--user", "bob", *server_args(srv))
    try:
        s.initialize()
        for p in ("/attachments/r1/contract.txt", "/user/secret.txt"):
            err, text, _ = s.call("read", path=p)
            check(MARK not in text, "bob's session read %s: %r" % (p, text))
        s.close()
    finally:
        s.kill()


# ------------------------------------------------- the file toolset (issue 33 item 3)

FILE_TOOLSET = [{"type": "agent_toolset",
                 "configs": [{"name": "file", "enabled": True,
                              "permissionPolicy": {"type": "always_allow"}}]}]
ACCOUNT = "Acme is on the Pro plan. Renewal is 12 September."


def toolset(srv, aid, subject, name, status=200, **args):
    r = srv.post("/v1/agents/%s/users/%s/tools/%s" % (aid, subject, name), json=args)
    return expect(r, status)


def seeded(srv, **body):
    """An agent with seed 003's file toolset and the seed's own briefing for user_123."""
    aid, _ = agent(srv, tools=FILE_TOOLSET, **body)
    expect(srv.put("/v1/agents/%s/users/user_123/files/content" % aid, json={
        "path": "briefing/account.md", "encoding": "utf-8", "content": ACCOUNT,
        "createParents": True}), 201)
    return aid


def test_file_toolset_paths_are_relative_to_the_subjects_root(srv):
    """Seed 003: "The volume is the subject's home directory. Paths in the Files API and in
    the built-in file / terminal toolsets are relative to that root", and the toolset
    "provides read_file, write_file, patch, and search_files". On the main before, the
    agent setting `tools` was refused (400, unknown field) and the toolset was not served."""
    aid = seeded(srv)
    j = toolset(srv, aid, "user_123", "read_file", path="briefing/account.md").json()
    check(j["ok"] and "Renewal is 12 September" in j["output"], "read_file: %r" % j)
    eq(j["path"], "briefing/account.md", "the path given back, relative to the root")
    j = toolset(srv, aid, "user_123", "write_file", path="reports/q3.md", content="# Q3\n",
                createParents=True).json()
    check(j["ok"], "write_file: %r" % j)
    got = expect(srv.get("/v1/agents/%s/users/user_123/files/content" % aid,
                         query={"path": "reports/q3.md"}), 200).body
    eq(got, b"# Q3\n", "written on the subject's volume, at its root")
    j = toolset(srv, aid, "user_123", "patch", path="briefing/account.md",
                oldString="Pro plan", newString="Team plan").json()
    check(j["ok"], "patch: %r" % j)
    j = toolset(srv, aid, "user_123", "search_files", pattern="Team plan").json()
    check(j["ok"] and "briefing/account.md" in j["output"], "search_files: %r" % j)
    eq([m["path"] for m in j["matches"]], ["briefing/account.md"], "matches, relative")
    # the agent's own tools, acting for the subject, see the same file at /user
    j = tool(srv, aid, "user_123", "read", path="/user/briefing/account.md")
    check(j["ok"] and "Team plan" in j["output"], "the agent's read of /user: %r" % j)


def test_file_toolset_refuses_stale_writes_and_reserved_folders(srv):
    """API.md: "the same stale-write refusal as the agent's tools"; memories/ and skills/
    are reserved (read-only to the tools)."""
    aid = seeded(srv)
    j = toolset(srv, aid, "user_123", "write_file", path="briefing/account.md",
                content="x").json()
    check(not j["ok"] and "read it first" in j["output"], "never read: %r" % j)
    toolset(srv, aid, "user_123", "read_file", path="briefing/account.md")
    expect(srv.put("/v1/agents/%s/users/user_123/files/content" % aid, json={
        "path": "briefing/account.md", "encoding": "utf-8", "content": "changed by the app\n"}),
        200)
    j = toolset(srv, aid, "user_123", "patch", path="briefing/account.md",
                oldString="changed", newString="x").json()
    check(not j["ok"] and "changed since you last read it" in j["output"], "stale: %r" % j)
    j = toolset(srv, aid, "user_123", "write_file", path="memories/MEMORY.md",
                content="x").json()
    check(not j["ok"] and "memories" in j["output"], "memories/ refused: %r" % j)
    j = toolset(srv, aid, "user_123", "write_file", path="new/dir/a.txt", content="x",
                createParents=False).json()
    check(not j["ok"] and "createParents" in j["output"], "createParents false: %r" % j)


def test_file_toolset_reaches_its_own_subject_only(srv):
    """A different subject receives a different workspace: bob's toolset never reads
    user_123's briefing, by any path."""
    aid = seeded(srv)
    for p in ("briefing/account.md", "/briefing/account.md", "../user_123/briefing/account.md"):
        r = srv.post("/v1/agents/%s/users/bob/tools/read_file" % aid, json={"path": p})
        check(r.status in (200, 400), "bob's read_file %s: %s" % (p, r.describe()))
        check(b"Renewal" not in r.body, "bob read user_123's file by %s: %s" % (p, r.body))
    j = toolset(srv, aid, "bob", "search_files", pattern="Renewal").json()
    check("account.md" not in j["output"], "bob's search: %r" % j)


def test_file_toolset_is_enabled_by_the_agent_toolset_setting(srv):
    """Seed 003: "Configure the built-in file toolset on the agent" with the seed's JSON.
    Without it (or with enabled:false) the toolset calls answer 404; a setting of another
    shape is 400; permissionPolicy always_ask holds writes (423)."""
    aid, _ = agent(srv)
    expect_error(srv.post("/v1/agents/%s/users/u1/tools/read_file" % aid,
                          json={"path": "a"}), 404, "not_found")
    off, _ = agent(srv, tools=[{"type": "agent_toolset",
                                "configs": [{"name": "file", "enabled": False}]}])
    expect_error(srv.post("/v1/agents/%s/users/u1/tools/read_file" % off,
                          json={"path": "a"}), 404, "not_found")
    for bad in ({"type": "agent_toolset"}, [{"type": "nope"}],
                [{"type": "agent_toolset", "configs": [{"name": "file",
                  "permissionPolicy": {"type": "sometimes"}}]}]):
        r = srv.put("/v1/agents/%s" % new_id("ag"), json={"tools": bad})
        expect_error(r, 400, "validation_error")
    ask, _ = agent(srv, tools=[{"type": "agent_toolset", "configs": [{
        "name": "file", "enabled": True, "permissionPolicy": {"type": "always_ask"}}]}])
    expect_error(srv.post("/v1/agents/%s/users/u1/tools/write_file" % ask,
                          json={"path": "a.txt", "content": "x"}), 423)
    eq(toolset(srv, ask, "u1", "search_files", pattern="x").json()["ok"], True,
       "reads need no approval")
    expect_error(srv.post("/v1/agents/%s/users/u1/tools/rm" % aid, json={}), 404)


def test_always_ask_holds_each_write_until_a_person_decides(srv):
    """permissionPolicy always_ask (seed 003's setting): a write_file or patch is 423 with an
    approvalId naming the approval route; listed as pending; the same call made again
    stays 423 until POST .../approvals/{id} {approve:true}, then runs exactly once (a third
    identical call asks again); {approve:false} makes the held call answer ok:false and
    write nothing; a decided approval is 409, another subject's or unknown 404, a bad body
    400; reads never wait."""
    ask, _ = agent(srv, tools=[{"type": "agent_toolset", "configs": [{
        "name": "file", "enabled": True, "permissionPolicy": {"type": "always_ask"}}]}])
    base = "/v1/agents/%s/users/u1" % ask
    call = {"path": "notes/a.txt", "content": "approved bytes\n"}
    err = expect_error(srv.post(base + "/tools/write_file", json=call), 423, "locked")
    aid = err.get("approvalId", "")
    check(aid.startswith("ap_") and aid in err["message"] and "/approvals/" in err["message"],
          "the 423 names its approval and the route: %r" % err)
    pend = expect(srv.get(base + "/approvals"), 200).json()["approvals"]
    eq([(p["id"], p["tool"], p["args"]) for p in pend], [(aid, "write_file", call)],
       "the pending approvals")
    eq(expect_error(srv.post(base + "/tools/write_file", json=call), 423)["approvalId"], aid,
       "the same call again waits on the same approval")
    other = dict(call, content="other\n")
    check(expect_error(srv.post(base + "/tools/write_file", json=other), 423)["approvalId"]
          != aid, "another call has another approval")
    expect_error(srv.post("/v1/agents/%s/users/u2/approvals/%s" % (ask, aid),
                          json={"approve": True}), 404)
    expect_error(srv.post(base + "/approvals/ap_nope", json={"approve": True}), 404)
    expect_error(srv.post(base + "/approvals/" + aid, json={"approve": "yes"}), 400)
    expect_error(srv.post(base + "/approvals/" + aid, json={}), 400)
    d = expect(srv.post(base + "/approvals/" + aid, json={"approve": True}), 200).json()
    eq((d["id"], d["status"], d["tool"]), (aid, "approved", "write_file"), "the decision")
    expect_error(srv.post(base + "/approvals/" + aid, json={"approve": False}), 409)
    out = toolset(srv, ask, "u1", "write_file", **call).json()
    eq(out["ok"], True, "the approved call runs: %r" % out)
    eq(toolset(srv, ask, "u1", "read_file", path="notes/a.txt").json()["ok"], True,
       "reads need no approval")
    err = expect_error(srv.post(base + "/tools/write_file", json=call), 423)
    check(err["approvalId"] == aid, "an approval lets one call through: the next asks again")
    # denied
    expect(srv.post(base + "/approvals/" + aid, json={"approve": False}), 200)
    out = toolset(srv, ask, "u1", "write_file", **call).json()
    eq(out["ok"], False, "a denied call answers ok:false: %r" % out)
    check("denied" in json.dumps(out), "it says it was denied: %r" % out)
    patch = {"path": "notes/a.txt", "oldString": "approved", "newString": "patched"}
    pid = expect_error(srv.post(base + "/tools/patch", json=patch), 423)["approvalId"]
    expect(srv.post(base + "/approvals/" + pid, json={"approve": True}), 200)
    eq(toolset(srv, ask, "u1", "patch", **patch).json()["ok"], True, "the approved patch")
    text = toolset(srv, ask, "u1", "read_file", path="notes/a.txt").json()
    check("patched bytes" in json.dumps(text), "the file holds the patch: %r" % text)


def test_file_toolset_served_over_mcp(srv):
    """`coffer mcp --agent A --user S` offers seed 003's read_file, write_file, patch and
    search_files on S's workspace when the agent enables the file toolset."""
    from test_mcp import Session, server_args
    aid = seeded(srv)
    s = Session("--agent", aid, "--user", "user_123", *server_args(srv))
    try:
        s.initialize()
        names = [t["name"] for t in s.result("tools/list")["tools"]]
        for n in ("read_file", "write_file", "patch", "search_files"):
            check(n in names, "%s listed: %r" % (n, names))
        text, sc = s.ok("read_file", path="briefing/account.md")
        contains(text, "Renewal is 12 September", "read_file over MCP")
        eq(sc["path"], "briefing/account.md", "structured path")
        s.ok("write_file", path="notes/n.md", content="n\n")
        text, _ = s.ok("search_files", pattern="^n$")
        contains(text, "notes/n.md", "search_files over MCP")
        s.close()
    finally:
        s.kill()
    s = Session("--agent", aid, *server_args(srv))  # no subject: no toolset
    try:
        s.initialize()
        names = [t["name"] for t in s.result("tools/list")["tools"]]
        check("patch" not in names, "no toolset without --user: %r" % names)
        s.close()
    finally:
        s.kill()
