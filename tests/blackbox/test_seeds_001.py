"""Seed 001's claims (../shared/seeds/001_*: agent files, volumes, links), one test per
claim, named after it and written as a user of the seed would write it (the seed's own
snippets where it has them).

Mount order (issue 33, item 2): "The agent's own workspace stays at /workspace beside the
mounts you give (after them) ... The first mount is where relative paths resolve, e.g.
[{volumeId, path: "/bot", mode: "rw"}] has /bot first and /workspace second." On the main
before this module cofferd put the implicit workspace first: the seed's example gave
['/workspace', '/bot'] and `read {"path": "marker.txt"}` looked in /workspace. Agents
stored before keep the order they had (docs/api.md "Mounts"): that is tested here too."""

import os
import sqlite3

import harness
from harness import check, contains, eq, expect
from agentlib import agent_url
from test_tools import make_agent, ok, tool

TIMEOUT = 120
MARKER = b"the bot volume's marker\n"


def paths(agent):
    return [m["path"] for m in agent["mounts"]]


def bot_agent(srv, **body):
    """The seed's example: one volume mounted read-write at /bot, nothing else given."""
    bot = srv.create_volume()["id"]
    srv.put_ok(bot, "marker.txt", MARKER)
    a = make_agent(srv, mounts=[{"volumeId": bot, "path": "/bot", "mode": "rw"}], **body)
    return a, bot


def test_mounts_given_come_first_workspace_after(srv):
    """Seed 001: `[{volumeId, path: "/bot", mode: "rw"}]` has /bot first and /workspace
    second, and GET /v1/agents/{id} lists them in that order (API.md "Agents")."""
    a, bot = bot_agent(srv)
    eq(paths(a), ["/bot", "/workspace"], "the PUT's answer")
    got = expect(srv.get(agent_url(a["id"])), 200).json()
    eq(paths(got), ["/bot", "/workspace"], "GET /v1/agents/{id}")
    eq(got["mounts"][1], {"workspace": True, "path": "/workspace"}, "the workspace, second")


def test_relative_paths_resolve_against_the_first_mount(srv):
    """Seed 001: "The first mount is where relative paths resolve": with the seed's
    mounts, the file tools, a prompt's {path} file and ls without a path are in /bot."""
    a, bot = bot_agent(srv)
    aid = a["id"]
    j = ok(srv, aid, "read", path="marker.txt")
    contains(j["output"], "the bot volume's marker", "read {path: marker.txt}")
    ok(srv, aid, "write", path="out/rel.txt", content="r")
    eq(expect(srv.get_file(bot, "out/rel.txt"), 200).body, b"r", "a relative write lands in /bot")
    eq(srv.list_files(a["workspaceVolumeId"])["files"], [], "the workspace untouched")
    contains(ok(srv, aid, "ls")["output"], "marker.txt", "ls without a path lists /bot")
    contains(ok(srv, aid, "grep", pattern="marker", outputMode="files")["output"],
             "/bot/marker.txt", "grep without a path searches /bot")
    p = expect(srv.post(agent_url(aid, "/prompt"), json={
        "text": "see", "requestId": "r1", "files": [{"path": "marker.txt"}]}), 200).json()
    eq([f["path"] for f in p["files"]], ["/bot/marker.txt"], "a prompt's relative {path}")


def test_uploads_still_go_to_the_workspace_wherever_it_is(srv):
    """Seed 001: attachments are saved under uploads/<request>/ in the agent's own
    workspace, wherever it is mounted: the order changes where relative paths go, not
    where uploads land."""
    a, bot = bot_agent(srv)
    up = expect(srv.put(agent_url(a["id"], "/uploads/r1/q3.txt"), body=b"q3"), 201).json()
    eq(up["path"], "/workspace/uploads/r1/q3.txt", "the upload's agent path")
    eq(srv.list_files(bot)["files"][0]["path"], "marker.txt", "nothing uploaded onto /bot")


def test_workspace_true_puts_it_at_that_position(srv):
    """Seed 001: "{workspace: true} among them puts it at that position"."""
    bot = srv.create_volume()["id"]
    a = make_agent(srv, mounts=[{"workspace": True},
                                {"volumeId": bot, "path": "/bot", "mode": "rw"}])
    eq(paths(a), ["/workspace", "/bot"], "the workspace where it was put")
    ok(srv, a["id"], "write", path="w.txt", content="w")
    eq(expect(srv.get_file(a["workspaceVolumeId"], "w.txt"), 200).body, b"w",
       "relative paths go to the workspace, first here")
    b = make_agent(srv, mounts=[{"volumeId": bot, "path": "/workspace", "mode": "rw"},
                                {"workspace": True, "path": "/scratch"}])
    eq(paths(b), ["/workspace", "/scratch"], "the seed's project + scratch example")


def test_remount_and_put_mounts_follow_the_same_order(srv):
    """PUT .../mounts and an upsert with remount: the mounts given first, the workspace
    after them."""
    a, bot = bot_agent(srv)
    other = srv.create_volume()["id"]
    m = [{"volumeId": other, "path": "/other", "mode": "ro"}]
    eq(paths(expect(srv.put(agent_url(a["id"], "/mounts"), json=m), 200).json()),
       ["/other", "/workspace"], "PUT .../mounts")
    m.append({"volumeId": bot, "path": "/bot", "mode": "rw"})
    r = expect(srv.put(agent_url(a["id"]), json={"mounts": m, "remount": True}), 200).json()
    eq(paths(r), ["/other", "/bot", "/workspace"], "upsert with remount")
    # the same mounts again are no change: no 409
    expect(srv.put(agent_url(a["id"]), json={"mounts": m}), 200)


def _make_stored_before(srv, aid):
    """Rewrites agent `aid` as cofferd stored it before the rule: its workspace first in
    its stored mounts and no marker of the rule (cofferd stopped meanwhile)."""
    import json
    srv.stop()
    db = sqlite3.connect(os.path.join(srv.data, "meta.db"), timeout=30)
    with db:
        (s,) = db.execute("SELECT settings FROM agents WHERE id = ?", (aid,)).fetchone()
        settings = json.loads(s)
        check(settings.pop("_mountsGivenFirst", None) is True,
              "a new agent carries the rule's marker: %r" % settings)
        ws = [m for m in settings["mounts"] if m.get("workspace")]
        settings["mounts"] = ws + [m for m in settings["mounts"] if not m.get("workspace")]
        db.execute("UPDATE agents SET settings = ? WHERE id = ?",
                   (json.dumps(settings, separators=(",", ":")), aid))
    db.close()
    srv.start()


def test_agent_stored_before_keeps_its_workspace_first(srv):
    """docs/api.md "Mounts": an agent stored before the rule keeps working as it did: its
    workspace stays first (relative paths go there), an upsert repeating its mounts is no
    change (no 409), and a remount or PUT .../mounts of it puts the implicit workspace
    first again. {workspace: true} places it anywhere, for either kind of agent."""
    if harness.ENGINE != "embedded":
        harness.skip("rewrites an agent as stored before through the embedded SQLite file")
    a, bot = bot_agent(srv)
    aid = a["id"]
    given = [{"volumeId": bot, "path": "/bot", "mode": "rw"}]
    _make_stored_before(srv, aid)
    got = expect(srv.get(agent_url(aid)), 200).json()
    eq(paths(got), ["/workspace", "/bot"], "its stored order")
    check("_mountsGivenFirst" not in got, "the marker is never shown: %r" % got)
    ok(srv, aid, "write", path="rel.txt", content="r")
    eq(expect(srv.get_file(a["workspaceVolumeId"], "rel.txt"), 200).body, b"r",
       "relative paths still go to its workspace")
    r = expect(srv.put(agent_url(aid), json={"mounts": given}), 200).json()
    eq(paths(r), ["/workspace", "/bot"], "an upsert with the same mounts: no 409, no change")
    other = srv.create_volume()["id"]
    m = [{"volumeId": other, "path": "/other", "mode": "ro"}]
    eq(paths(expect(srv.put(agent_url(aid, "/mounts"), json=m), 200).json()),
       ["/workspace", "/other"], "PUT .../mounts keeps its rule")
    r = expect(srv.put(agent_url(aid), json={"mounts": given + [{"workspace": True}],
                                             "remount": True}), 200).json()
    eq(paths(r), ["/bot", "/workspace"], "{workspace: true} places it")
    j = tool(srv, aid, "read", path="marker.txt")
    contains(j["output"], "marker", "now relative paths go to /bot")
    # a new agent is never taken for one stored before
    n = make_agent(srv, mounts=given)
    eq(paths(n), ["/bot", "/workspace"], "a new agent")
    check("_mountsGivenFirst" not in n, "the marker is never shown: %r" % n)
    r = srv.put(agent_url(new_aid := n["id"] + "x"), json={"_mountsGivenFirst": False})
    eq(r.status, 400, "the marker is not a setting: %s" % r.describe())
    expect(srv.get(agent_url(new_aid)), 404)


def test_mcp_instructions_name_the_mounts_in_order(srv):
    """`coffer mcp` tells the model the mounts in their order and where relative paths
    resolve (the tools' descriptions point there): /bot first with the seed's mounts. On
    the main before, the descriptions said "relative to the first mount (usually
    /workspace)" and the instructions named no mount."""
    from test_mcp import Session, server_args
    a, bot = bot_agent(srv)
    s = Session("--agent", a["id"], *server_args(srv))
    try:
        text = s.initialize()["instructions"]
        name = expect(srv.get("/v1/volumes/" + bot), 200).json()["name"]
        contains(text, "The mounts, in order: /bot (volume \"%s\", read-write), /workspace "
                 "(volume \"workspace of agent %s\", the agent's workspace, read-write); "
                 "relative paths resolve against /bot." % (name, a["id"]), "instructions")
        contains(text, "Attachments are under /workspace/uploads/, tools' file outputs under "
                 "/workspace/tool-outputs/; keep scratch files under /workspace/tmp/.",
                 "seed 001's placement of uploads, tool outputs and tmp/ in the instructions")
        for t in s.result("tools/list")["tools"]:
            check("usually /workspace" not in json_text(t), "%s's description" % t["name"])
        body, _ = s.ok("read", path="marker.txt")
        contains(body, "the bot volume's marker", "a relative read over MCP")
        s.close()
    finally:
        s.kill()


def json_text(v):
    import json
    return json.dumps(v)


# ---- seed 001: "Tools of a definition's sources take the agent's files as
# {"$file": path}, and their file outputs are saved to the workspace" (issue 33 item 9)

def test_file_tool_inputs_resolve_to_their_files(srv):
    """POST /v1/agents/{id}/resolve replaces every {"$file": path} in any JSON with the
    file: as base64 by default (path, name, contentType, size, sha256, data), as a signed
    link with as: "url" (the link reads the bytes); everything else is kept as given; an
    object with more members than $file is not a reference."""
    import base64
    import urllib.request
    a, bot = bot_agent(srv)
    aid = a["id"]
    srv.put_ok(bot, "in/q3.csv", b"a,b\n1,2\n", content_type="text/csv")
    inp = {"query": "sum", "files": [{"$file": "/bot/in/q3.csv"}, {"$file": "marker.txt"}],
           "keep": {"$file": "x", "also": 1}, "n": [1, None, True]}
    out = expect(srv.post(agent_url(aid, "/resolve"), json={"input": inp}), 200).json()["input"]
    f0, f1 = out["files"]
    eq((f0["path"], f0["name"], f0["contentType"], f0["size"]),
       ("/bot/in/q3.csv", "q3.csv", "text/csv", 8), "the first file")
    eq(base64.b64decode(f0["data"]), b"a,b\n1,2\n", "its bytes")
    eq(base64.b64decode(f1["data"]), MARKER, "a relative path resolves against the first mount")
    eq((out["query"], out["keep"], out["n"]), ("sum", {"$file": "x", "also": 1}, [1, None, True]),
       "the rest as given")
    out = expect(srv.post(agent_url(aid, "/resolve"), json={
        "input": {"$file": "/bot/in/q3.csv"}, "as": "url"}), 200).json()["input"]
    check("data" not in out and out["url"].startswith("http"), "a link: %r" % out)
    with urllib.request.urlopen(out["url"], timeout=30) as r:
        eq(r.read(), b"a,b\n1,2\n", "the link reads the file")


def test_resolve_refuses_what_the_agent_cannot_read_and_past_16_mib(srv):
    """A path the agent cannot read is 404 naming it; base64 carries at most 16 MiB of
    file bytes in all (exactly 16 MiB passes, one byte more is 413 naming the limit);
    a $file that is not a string and a bad `as` are 400."""
    a, bot = bot_agent(srv)
    aid = a["id"]
    e = harness.expect_error(srv.post(agent_url(aid, "/resolve"), json={
        "input": [{"$file": "/nowhere/x.txt"}]}), 404, "not_found")
    contains(e["message"], "/nowhere/x.txt", "the 404 names the path")
    harness.expect_error(srv.post(agent_url(aid, "/resolve"), json={
        "input": {"$file": "/bot/absent.txt"}}), 404, "not_found")
    harness.expect_error(srv.post(agent_url(aid, "/resolve"), json={
        "input": {"$file": 3}}), 400, "validation_error")
    harness.expect_error(srv.post(agent_url(aid, "/resolve"), json={
        "input": {}, "as": "hex"}), 400, "validation_error")
    harness.expect_error(srv.post(agent_url(aid, "/resolve"), json={}), 400, "validation_error")
    srv.put_ok(bot, "big1.bin", b"\0" * (8 << 20))
    srv.put_ok(bot, "big2.bin", b"\1" * (8 << 20))
    srv.put_ok(bot, "one.bin", b"x")
    two = [{"$file": "/bot/big1.bin"}, {"$file": "/bot/big2.bin"}]
    out = expect(srv.post(agent_url(aid, "/resolve"), json={"input": two}), 200).json()
    eq(sum(f["size"] for f in out["input"]), 16 << 20, "exactly 16 MiB passes")
    e = harness.expect_error(srv.post(agent_url(aid, "/resolve"), json={
        "input": two + [{"$file": "/bot/one.bin"}]}), 413, "too_large")
    contains(e["message"], "16 MiB", "the 413 names the limit")
    out = expect(srv.post(agent_url(aid, "/resolve"), json={
        "input": two + [{"$file": "/bot/one.bin"}], "as": "url"}), 200).json()
    eq(len(out["input"]), 3, "links have no byte budget")


def test_tool_outputs_are_saved_where_uploads_go(srv):
    """PUT /v1/agents/{id}/tool-outputs/{callId}/{name} saves a tool's file output at
    tool-outputs/{callId}/{name} of the workspace wherever it is mounted (not the first
    mount), else the first read-write mount; none: 409; a retry never writes twice; the
    call id is 1..128 printable ASCII (129: 400)."""
    a, bot = bot_agent(srv)
    aid = a["id"]
    r = expect(srv.put(agent_url(aid, "/tool-outputs/toolu_01/chart.png"), body=b"png"), 201)
    eq(r.json()["path"], "/workspace/tool-outputs/toolu_01/chart.png", "in the workspace")
    eq(expect(srv.get_file(a["workspaceVolumeId"], "tool-outputs/toolu_01/chart.png"),
              200).body, b"png", "the bytes")
    again = expect(srv.put(agent_url(aid, "/tool-outputs/toolu_01/chart.png"), body=b"other"),
                   200).json()
    eq(again.get("replayed"), True, "a retry is answered with the first write")
    expect(srv.put(agent_url(aid, "/tool-outputs/%s/a.txt" % ("c" * 128)), body=b"x"), 201)
    harness.expect_error(srv.put(agent_url(aid, "/tool-outputs/%s/a.txt" % ("c" * 129)),
                                 body=b"x"), 400, "validation_error")
    # no workspace: the first read-write mount
    ro = srv.create_volume()["id"]
    b2 = make_agent(srv, mounts=[{"volumeId": ro, "path": "/ro", "mode": "ro"},
                                 {"volumeId": bot, "path": "/bot", "mode": "rw"},
                                 {"workspace": False}])
    r = expect(srv.put(agent_url(b2["id"], "/tool-outputs/c1/o.txt"), body=b"o"), 201)
    eq(r.json()["path"], "/bot/tool-outputs/c1/o.txt", "the first read-write mount")
    b3 = make_agent(srv, mounts=[{"volumeId": ro, "path": "/ro", "mode": "ro"},
                                 {"workspace": False}])
    harness.expect_error(srv.put(agent_url(b3["id"], "/tool-outputs/c1/o.txt"), body=b"o"),
                         409, "conflict")


def test_uploads_tool_outputs_and_tmp_follow_one_placement_rule(srv):
    """Seed 001: "Attachments are saved under uploads/<request>/ in the agent's own
    workspace, files tools return under tool-outputs/, and the model keeps scratch files
    in tmp/, wherever the workspace is mounted (/workspace/... by default, /scratch/...
    above). Without it, they go to a read-write /workspace, else the first read-write
    mount (and an agent with none cannot take attachments or tool files)."
    GET /v1/agents/{id} answers the three places (`places`), computed by the same rule
    the uploads and tool outputs are saved by; on the main before, a mount given at
    /workspace lost to an earlier read-write mount and no answer said where tmp/ is."""
    def places(a):
        return expect(srv.get(agent_url(a["id"])), 200).json()["places"]

    def under(root):
        return {"uploads": root + "/uploads", "toolOutputs": root + "/tool-outputs",
                "tmp": root + "/tmp"}

    eq(places(make_agent(srv)), under("/workspace"), "no mounts: /workspace")
    a, bot = bot_agent(srv)
    eq(places(a), under("/workspace"), "the workspace, second after /bot")
    project = srv.create_volume()["id"]
    b = make_agent(srv, mounts=[{"volumeId": project, "path": "/workspace", "mode": "rw"},
                                {"workspace": True, "path": "/scratch"}])
    eq(places(b), under("/scratch"), "the seed's /scratch example")
    r = expect(srv.put(agent_url(b["id"], "/tool-outputs/c1/o.txt"), body=b"o"), 201).json()
    eq(r["path"], "/scratch/tool-outputs/c1/o.txt", "a tool output in /scratch")
    eq(expect(srv.get_file(b["workspaceVolumeId"], "tool-outputs/c1/o.txt"), 200).body, b"o",
       "on the workspace volume, not the project")
    # a read-write mount given at /workspace takes the workspace's place: it gets
    # them, though another read-write mount comes first
    c = make_agent(srv, mounts=[{"volumeId": bot, "path": "/bot", "mode": "rw"},
                                {"volumeId": project, "path": "/workspace", "mode": "rw"}])
    eq(paths(c), ["/bot", "/workspace"], "the mounts as given")
    eq(places(c), under("/workspace"), "a read-write /workspace before the first mount")
    r = expect(srv.put(agent_url(c["id"], "/uploads/r1/u.txt"), body=b"u"), 201).json()
    eq(r["path"], "/workspace/uploads/r1/u.txt", "an upload in /workspace")
    r = expect(srv.put(agent_url(c["id"], "/tool-outputs/c1/t.txt"), body=b"t"), 201).json()
    eq(r["path"], "/workspace/tool-outputs/c1/t.txt", "a tool output in /workspace")
    eq(expect(srv.get_file(project, "tool-outputs/c1/t.txt"), 200).body, b"t",
       "on the project volume mounted there")
    check(all(not f["path"].startswith(("uploads/", "tool-outputs/"))
              for f in srv.list_files(bot)["files"]), "nothing placed onto /bot")
    # a read-only /workspace is no place: the first read-write mount
    d = make_agent(srv, mounts=[{"volumeId": project, "path": "/workspace", "mode": "ro"},
                                {"volumeId": bot, "path": "/bot", "mode": "rw"}])
    eq(places(d), under("/bot"), "a read-only /workspace: the first read-write mount")
    # none: no place for any of the three, and uploads and tool outputs are 409
    e = make_agent(srv, mounts=[{"volumeId": project, "path": "/ro", "mode": "ro"},
                                {"workspace": False}])
    eq(places(e), {"uploads": None, "toolOutputs": None, "tmp": None}, "no place")
    for url, what in (("/uploads/r1/u.txt", "uploads"), ("/tool-outputs/c1/t.txt",
                                                          "tool outputs")):
        err = harness.expect_error(srv.put(agent_url(e["id"], url), body=b"x"), 409, "conflict")
        contains(err["message"], "no writable place for " + what, "the 409 says what")


def test_tool_output_call_id_and_name_are_one_safe_segment(srv):
    """PUT .../tool-outputs/{callId}/{name}: callId 1..128 printable ASCII without spaces,
    name one path segment of at most 255 bytes; '..', '.', a '/' (sent as %2F) and
    control bytes are 400 naming the field (and the limit where it is a length)."""
    a, _ = bot_agent(srv)
    aid = a["id"]

    def bad(call, name, *phrases):
        e = harness.expect_error(srv.put(agent_url(aid, "/tool-outputs/%s/%s" % (call, name)),
                                         body=b"x"), 400, "validation_error")
        for p in phrases:
            contains(e["message"], p, "the error for %s/%s" % (call, name))

    bad("c" * 129, "a.txt", "call id", "128")
    bad("call%20one", "a.txt", "call id", "printable ASCII")
    bad("a%2Fb", "a.txt", "call id", "'/'")
    bad("%2E%2E", "a.txt", "call id", "'..'")
    bad("c1", "%2E%2E", "file name", "'..'")
    bad("c1", "%2E", "file name", "'.'")
    bad("c1", "a%2Fb.txt", "file name", "'/'")
    bad("c1", "a%01b", "file name")
    bad("c1", "n" * 256, "file name", "255")
    r = expect(srv.put(agent_url(aid, "/tool-outputs/c1/%s" % ("n" * 255)), body=b"x"), 201)
    eq(r.json()["path"], "/workspace/tool-outputs/c1/" + "n" * 255, "255 bytes is the limit")


def test_resolve_walks_nested_input_within_its_limits(srv):
    """POST .../resolve walks any JSON: {"$file"} objects at any depth up to 64 levels of
    nesting (65: 400 naming 64), at most 100 of them (101: 400 naming 100), inside objects
    and arrays alike; the same file named twice comes back twice."""
    import base64
    a, bot = bot_agent(srv)
    aid = a["id"]
    inner = {"$file": "/bot/marker.txt"}
    deep = inner
    for i in range(64):
        deep = [deep] if i % 2 else {"k": deep}
    out = expect(srv.post(agent_url(aid, "/resolve"), json={"input": deep}), 200).json()
    v = out["input"]
    for i in range(64):
        v = v[0] if (63 - i) % 2 else v["k"]
    eq(base64.b64decode(v["data"]), MARKER, "a $file 64 levels down")
    e = harness.expect_error(srv.post(agent_url(aid, "/resolve"), json={"input": [deep]}),
                             400, "validation_error")
    contains(e["message"], "64", "the 400 names the depth limit")
    many = {"a": [inner] * 50, "b": {"c": [inner] * 50}}
    out = expect(srv.post(agent_url(aid, "/resolve"), json={"input": many}), 200).json()
    eq(len(out["input"]["a"]) + len(out["input"]["b"]["c"]), 100, "100 $file objects")
    check(all(f["sha256"] == out["input"]["a"][0]["sha256"] for f in out["input"]["b"]["c"]),
          "each the same file")
    many["b"]["c"].append(inner)
    e = harness.expect_error(srv.post(agent_url(aid, "/resolve"), json={"input": many}),
                             400, "validation_error")
    contains(e["message"], "100", "the 400 names the count limit")
    eq(expect(srv.post(agent_url(aid, "/resolve"), json={"input": "text"}), 200).json(),
       {"input": "text"}, "a scalar comes back as given")
