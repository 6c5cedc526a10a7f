"""Agent exclusions (API.md Agents: `exclude`, `defaultExclusions`): an excluded path is
refused by every file tool (ok:false naming it) and every files call (403 forbidden naming
it), hidden from ls, the files listing and glob, and skipped by grep. Patterns match the
agent path relative to its mount, as a .gitignore at each mount's root (docs/api.md)."""

import itertools
import os
import urllib.parse

import harness
from harness import check, contains, eq, expect, expect_error

_n = itertools.count(1)

FILES = {
    ".env": b"SECRET=1\n",
    "app/.env.local": b"SECRET=2\n",
    "keys/server.pem": b"SECRET pem\n",
    ".ssh/config": b"SECRET host\n",
    "src/main.c": b"int main(void) { return 0; }\n",
    "logs/a.log": b"SECRET in a log\n",
    "logs/keep.log": b"kept log\n",
    "private/plan.md": b"SECRET plan\n",
    "build/out.o": b"obj\n",
    "build/keep.txt": b"kept\n",
    "notes.txt": b"SECRET note, shown\n",
}
EXCLUDE = ["*.log", "!keep.log", "/private/", "build/**", "!build/keep.txt"]


def new_id():
    return "ex-%d-%d" % (os.getpid(), next(_n))


def agent_url(aid, tail=""):
    return "/v1/agents/%s%s" % (aid, tail)


def files_url(aid, path):
    return agent_url(aid, "/files" + urllib.parse.quote(path, safe="/"))


def setup(srv, **settings):
    """An agent with a volume at /data holding FILES (written through the volume API)."""
    v = srv.create_volume()["id"]
    for p, b in FILES.items():
        srv.put_ok(v, p, b)
    aid = new_id()
    body = {"mounts": [{"workspace": True}, {"volumeId": v, "path": "/data", "mode": "rw"}]}
    body.update(settings)
    expect(srv.put(agent_url(aid), json=body), 201)
    return aid, v


def tool(srv, aid, name, **args):
    r = expect(srv.post(agent_url(aid, "/tools/" + name), json=args), 200)
    j = r.json()
    j["_resp"] = r
    return j


def refused(srv, aid, name, path, **args):
    j = tool(srv, aid, name, path=path, **args)
    check(j.get("ok") is False, "%s %s should be refused\n%s" % (name, path, j["_resp"].describe()))
    check("excluded" in j["output"] and path in j["output"],
          "%s refusal names %s and says excluded\n%s" % (name, path, j["_resp"].describe()))


def ok(srv, aid, name, **args):
    j = tool(srv, aid, name, **args)
    check(j.get("ok") is True, "%s %r should succeed\n%s" % (name, args, j["_resp"].describe()))
    return j


def forbidden(resp, path):
    expect_error(resp, 403, "forbidden")
    msg = resp.error.get("message", "")
    check(path in msg and "excluded" in msg, "403 names %s and says excluded: %r" % (path, msg))


# ------------------------------------------------------------------ tools

def test_read_refused(srv):
    aid, _ = setup(srv, exclude=EXCLUDE)
    for p in ("/data/.env", "/data/app/.env.local", "/data/keys/server.pem",
              "/data/.ssh/config", "/data/logs/a.log", "/data/private/plan.md",
              "/data/build/out.o"):
        refused(srv, aid, "read", p)
    for p, want in (("/data/logs/keep.log", "kept log"), ("/data/src/main.c", "int main"),
                    ("/data/notes.txt", "shown")):
        j = ok(srv, aid, "read", path=p)
        check(want in j["output"], "read %s shows its text" % p)


def test_negation_through_folder(srv):
    # "build/**" then "!build/keep.txt": the folder itself is not excluded, so the
    # file is re-included (with "build/" it could not be, as in git).
    aid, _ = setup(srv, exclude=EXCLUDE)
    ok(srv, aid, "read", path="/data/build/keep.txt")
    bid, _ = setup(srv, exclude=["build/", "!build/keep.txt"])
    refused(srv, bid, "read", "/data/build/keep.txt")


def test_relative_path_refused(srv):
    aid, _ = setup(srv)
    refused(srv, aid, "write", ".env", content="x")  # resolves against /workspace


def test_write_refused(srv):
    aid, v = setup(srv, exclude=EXCLUDE)
    refused(srv, aid, "write", "/data/new.pem", content="x")
    refused(srv, aid, "write", "/data/private/new.md", content="x")
    refused(srv, aid, "write", "/workspace/x.log", content="x")
    expect_error(srv.get_file(v, "new.pem"), 404)
    expect_error(srv.get_file(v, "private/new.md"), 404)
    ok(srv, aid, "write", path="/data/fine.txt", content="x")


def test_edit_refused(srv):
    aid, v = setup(srv, exclude=EXCLUDE)
    refused(srv, aid, "edit", "/data/.env", oldString="SECRET", newString="x")
    refused(srv, aid, "edit", "/data/logs/a.log", oldString="SECRET", newString="x")
    eq(expect(srv.get_file(v, ".env"), 200).body, FILES[".env"], ".env unchanged")


def test_ls_hides(srv):
    aid, _ = setup(srv, exclude=EXCLUDE)
    j = ok(srv, aid, "ls", path="/data")
    names = sorted(e["name"] for e in j["entries"])
    eq(names, ["app", "build", "keys", "logs", "notes.txt", "src"], "ls /data")
    for hidden in (".env", ".ssh", "private"):
        check(hidden not in j["output"].split(), "ls output hides %s" % hidden)
    j = ok(srv, aid, "ls", path="/data/logs")
    eq([e["name"] for e in j["entries"]], ["keep.log"], "ls /data/logs")
    j = ok(srv, aid, "ls", path="/data/keys")
    eq(j["entries"], [], "ls /data/keys (only a .pem)")
    refused(srv, aid, "ls", "/data/private")
    refused(srv, aid, "ls", "/data/.ssh")


def test_glob_hides(srv):
    aid, _ = setup(srv, exclude=EXCLUDE)
    j = ok(srv, aid, "glob", pattern="**", path="/data")
    eq(sorted(j["paths"]), ["/data/build/keep.txt", "/data/logs/keep.log", "/data/notes.txt",
                            "/data/src/main.c"], "glob ** under /data")
    j = ok(srv, aid, "glob", pattern="**/*.pem", path="/data")
    eq(j["paths"], [], "glob for .pem files")
    refused(srv, aid, "glob", "/data/private", pattern="*")


def test_grep_skips(srv):
    aid, _ = setup(srv, exclude=EXCLUDE)
    j = ok(srv, aid, "grep", pattern="SECRET", path="/data", outputMode="files")
    eq([m["path"] for m in j["matches"]], ["/data/notes.txt"], "grep SECRET")
    check(".env" not in j["output"] and "plan" not in j["output"], "grep output")
    refused(srv, aid, "grep", "/data/.env", pattern="SECRET")
    refused(srv, aid, "grep", "/data/private", pattern="SECRET")


def test_present_refused(srv):
    aid, _ = setup(srv, exclude=EXCLUDE)
    refused(srv, aid, "present_file", "/data/keys/server.pem")
    ok(srv, aid, "present_file", path="/data/notes.txt")


# ------------------------------------------------------------- files calls

def test_files_calls_forbidden(srv):
    aid, v = setup(srv, exclude=EXCLUDE)
    for p in ("/data/.env", "/data/logs/a.log", "/data/private/plan.md", "/data/.ssh/config"):
        forbidden(srv.get(files_url(aid, p)), p)
        forbidden(srv.put(files_url(aid, p), body=b"overwrite"), p)
        forbidden(srv.delete(files_url(aid, p)), p)
    eq(expect(srv.get_file(v, ".env"), 200).body, FILES[".env"], ".env untouched")
    eq(expect(srv.get_file(v, "private/plan.md"), 200).body, FILES["private/plan.md"],
       "plan untouched")
    forbidden(srv.put(files_url(aid, "/data/new.key"), body=b"k"), "/data/new.key")
    expect_error(srv.get_file(v, "new.key"), 404)
    eq(expect(srv.get(files_url(aid, "/data/logs/keep.log")), 200).body, b"kept log\n",
       "a re-included file is served")


def test_listing_hides(srv):
    aid, _ = setup(srv, exclude=EXCLUDE)
    r = expect(srv.get(agent_url(aid, "/files"), query={"path": "/data"}), 200).json()
    eq(sorted(e["name"] for e in r["entries"]),
       ["app", "build", "keys", "logs", "notes.txt", "src"], "listing /data")
    r = expect(srv.get(agent_url(aid, "/files"), query={"path": "/data/app"}), 200).json()
    eq(r["entries"], [], "listing /data/app (only .env.local)")
    forbidden(srv.get(agent_url(aid, "/files"), query={"path": "/data/private"}),
              "/data/private")
    forbidden(srv.get(agent_url(aid, "/files"), query={"path": "/data/.ssh"}), "/data/.ssh")


def test_links_forbidden(srv):
    aid, _ = setup(srv, exclude=EXCLUDE)
    forbidden(srv.post(agent_url(aid, "/links"), json={"path": "/data/.env"}), "/data/.env")
    forbidden(srv.post(agent_url(aid, "/links"), json={"path": "/data/x.log", "method": "PUT"}),
              "/data/x.log")
    expect(srv.post(agent_url(aid, "/links"), json={"path": "/data/notes.txt"}), 200, 201)


def test_uploads_forbidden(srv):
    aid, _ = setup(srv, exclude=["*.exe"])
    forbidden(srv.put(agent_url(aid, "/uploads/r1/setup.exe"), body=b"MZ"),
              "/workspace/uploads/r1/setup.exe")
    forbidden(srv.put(agent_url(aid, "/uploads/r1/.env"), body=b"A=1"),
              "/workspace/uploads/r1/.env")
    expect(srv.put(agent_url(aid, "/uploads/r1/photo.txt"), body=b"ok"), 201)


# ------------------------------------------------------ defaults, settings

def test_defaults_on_without_settings(srv):
    aid, _ = setup(srv)
    for p in ("/data/.env", "/data/app/.env.local", "/data/keys/server.pem",
              "/data/.ssh/config"):
        refused(srv, aid, "read", p)
        forbidden(srv.get(files_url(aid, p)), p)
    for p in ("/workspace/id_rsa", "/workspace/.aws/credentials", "/workspace/.netrc",
              "/workspace/credentials.json", "/workspace/x.key", "/workspace/.ENV"):
        refused(srv, aid, "write", p, content="x")
    ok(srv, aid, "read", path="/data/logs/a.log")  # only the defaults apply


def test_defaults_not_reincluded(srv):
    aid, _ = setup(srv, exclude=["!.env", "!**/*.pem"])
    refused(srv, aid, "read", "/data/.env")
    refused(srv, aid, "read", "/data/keys/server.pem")


def test_defaults_off(srv):
    aid, _ = setup(srv, defaultExclusions=False, exclude=["*.log"])
    j = ok(srv, aid, "read", path="/data/.env")
    check("SECRET=1" in j["output"], ".env readable with the defaults off")
    eq(expect(srv.get(files_url(aid, "/data/keys/server.pem")), 200).body,
       FILES["keys/server.pem"], ".pem served with the defaults off")
    refused(srv, aid, "read", "/data/logs/a.log")  # its own patterns still apply
    j = ok(srv, aid, "ls", path="/data")
    check(".env" in [e["name"] for e in j["entries"]], "ls shows .env")


def test_anchored_to_mount(srv):
    # "/private/" names the folder at the root of each mount, not deeper.
    aid, _ = setup(srv, exclude=["/private/"])
    refused(srv, aid, "write", "/workspace/private/a.md", content="x")
    refused(srv, aid, "write", "/data/private/b.md", content="x")
    ok(srv, aid, "write", path="/data/sub/private/c.md", content="x")
    # a mount's own folder is never excluded
    bid, _ = setup(srv, exclude=["data", "workspace"])
    ok(srv, bid, "ls", path="/data")
    refused(srv, bid, "read", "/data/data", )


def test_setting_changes_apply(srv):
    aid, v = setup(srv)
    ok(srv, aid, "read", path="/data/notes.txt")
    expect(srv.put(agent_url(aid), json={"exclude": ["notes.txt"]}), 200)
    refused(srv, aid, "read", "/data/notes.txt")


def test_bad_patterns_refused(srv):
    for bad, named in ((["a["], "a["), (["ok", "x/[a-"], "x/[a-"), ([""], "empty"),
                       (["!"], "!"), (["a//b/"], "a//b/"), ([7], "not a string")):
        r = srv.put(agent_url(new_id()), json={"exclude": bad})
        expect_error(r, 400, "validation_error")
        check(named in r.error.get("message", ""), "refusal names %r: %r" % (
            named, r.error.get("message")))
    r = srv.put(agent_url(new_id()), json={"exclude": ["x"] * 257})
    expect_error(r, 400, "validation_error")
    check("256" in r.error["message"], "names the limit of 256 patterns")
    expect(srv.put(agent_url(new_id()), json={"exclude": ["x"] * 256}), 201)
    r = srv.put(agent_url(new_id()), json={"exclude": ["a" * 1025]})
    expect_error(r, 400, "validation_error")
    check("1024" in r.error["message"], "names the limit of 1024 bytes")
    expect(srv.put(agent_url(new_id()), json={"exclude": ["a" * 1024]}), 201)
    expect_error(srv.put(agent_url(new_id()), json={"exclude": "*.log"}), 400,
                 "validation_error")
    # a refused update leaves the agent as it was
    aid, _ = setup(srv, exclude=["*.log"])
    expect_error(srv.put(agent_url(aid), json={"exclude": ["b["]}), 400, "validation_error")
    refused(srv, aid, "read", "/data/logs/a.log")


def test_events_leave_excluded_out(srv):
    from test_agent_events import Stream
    shared = srv.create_volume("shared")["id"]
    aid = new_id()
    expect(srv.put(agent_url(aid), json={"exclude": ["*.log"], "mounts": [
        {"volumeId": shared, "path": "/shared", "mode": "rw", "notify": True}]}), 201)
    s = Stream(srv, aid)
    try:
        srv.put_ok(shared, "x.log", b"l")  # only excluded changes: no event at all
        srv.put_ok(shared, ".env", b"e")
        got = s.wait("files_changed", timeout=3)
        eq(got, [], "no files_changed for excluded files only")
        srv.put_ok(shared, "a.txt", b"a")
        srv.put_ok(shared, "y.log", b"l")
        got = s.wait("files_changed")
        eq(len(got), 1, "one files_changed event")
        eq(got[0]["paths"], ["/shared/a.txt"], "paths without the excluded ones")
        eq(got[0]["count"], 1, "count without the excluded ones")
    finally:
        s.close()


# ------------------------------------------- renames and moves never expose
#
# On main before the fix, `mv /data/docs /data/docs2` in a call moved every file under
# docs, the excluded docs/tmp/secret.txt included, and the commit landed it at
# docs2/tmp/secret.txt, which no pattern hides: the next call and the `read` tool read it.
# The subject files move did the same for /user.

def _fuse_or_skip():
    if not os.path.exists("/dev/fuse") or not harness.IS_ROOT:
        harness.skip("calls see the agent's files through FUSE, mounted here as root")


def _turn_call(srv, tid, command):
    r = expect(srv.post("/v1/turns/%s/calls" % tid, json={"command": command}), 200)
    return r.json()


def _secret_setup(srv, files):
    v = srv.create_volume()["id"]
    for p, b in files.items():
        srv.put_ok(v, p, b)
    aid = new_id()
    expect(srv.put(agent_url(aid), json={"exclude": ["docs/tmp"], "mounts": [
        {"workspace": True}, {"volumeId": v, "path": "/data", "mode": "rw"}]}), 201)
    tid = expect(srv.post("/v1/turns", json={"agent": aid, "user": "u1",
                                             "deadlineSeconds": 600}), 201).json()["id"]
    return aid, v, tid


def test_call_folder_rename_leaves_excluded_files(srv):
    _fuse_or_skip()
    aid, v, tid = _secret_setup(srv, {"docs/a.md": b"shown\n",
                                      "docs/tmp/secret.txt": b"SECRET\n"})
    try:
        out = _turn_call(srv, tid, "mv /data/docs /data/docs2 && find /data | sort")
        eq(out["exitCode"], 0, "mv of the parent folder (%r)" % out["stderr"])
        check("secret" not in out["stdout"], "nothing excluded in sight: %r" % out["stdout"])
        eq(srv.get_file(v, "docs2/a.md").body, b"shown\n", "the visible file moved")
        eq(srv.get_file(v, "docs2/tmp/secret.txt").status, 404, "the excluded file did not")
        eq(srv.get_file(v, "docs/tmp/secret.txt").body, b"SECRET\n", "it stayed where it was")
        eq(srv.get_file(v, "docs/a.md").status, 404, "the visible file left docs")
        out = _turn_call(srv, tid, "cat /data/docs2/tmp/secret.txt")
        check(out["exitCode"] != 0 and "SECRET" not in out["stdout"],
              "the next call cannot read it: %r" % out)
        j = tool(srv, aid, "read", path="/data/docs2/tmp/secret.txt")
        check(j.get("ok") is False and "SECRET" not in j["output"],
              "the read tool cannot read it: %r" % j["output"])
    finally:
        srv.delete("/v1/turns/%s" % tid)


def test_call_folder_rename_into_excluded_place_refused(srv):
    # docs/tmp is excluded: moving src (holding tmp/x.txt) to docs would write
    # docs/tmp/x.txt, a path the call can neither see nor make; on main it landed.
    _fuse_or_skip()
    aid, v, tid = _secret_setup(srv, {"src/tmp/x.txt": b"x\n", "src/y.txt": b"y\n"})
    try:
        seq = srv.seq(v)
        out = _turn_call(srv, tid, "mv /data/src /data/docs 2>&1; echo rc=$?")
        contains(out["stdout"], "Permission denied", "mv's refusal")
        check("rc=0" not in out["stdout"], "the rename failed: %r" % out["stdout"])
        eq(srv.get_file(v, "docs/tmp/x.txt").status, 404, "nothing landed at the excluded path")
        eq(srv.get_file(v, "docs/y.txt").status, 404, "nothing moved at all")
        eq(srv.get_file(v, "src/tmp/x.txt").body, b"x\n", "the source is untouched")
        eq(srv.seq(v), seq, "nothing committed")
    finally:
        srv.delete("/v1/turns/%s" % tid)


def _subject(aid, tail):
    return agent_url(aid, "/users/s1" + tail)


def test_subject_folder_move_leaves_excluded_files(srv):
    aid = new_id()
    expect(srv.put(agent_url(aid), json={"exclude": ["docs/tmp"]}), 201)
    for p, c in [("docs/a.md", "shown\n"), ("docs/tmp/secret.txt", "SECRET\n"),
                 ("docs/.env", "K=1\n")]:
        expect(srv.put(_subject(aid, "/files/content"), json={"path": p, "content": c}), 201)
    j = expect(srv.post(_subject(aid, "/files/move"), json={"from": "docs", "to": "docs2"}),
               200).json()
    eq(j["moved"], 1, "only the visible file moved: %r" % j)

    def get(p):
        return srv.get(_subject(aid, "/files/content"), query={"path": p})
    eq(get("docs2/a.md").body, b"shown\n", "the visible file moved")
    eq(get("docs2/tmp/secret.txt").status, 404, "the excluded file did not")
    eq(get("docs2/.env").status, 404, "nor the one the defaults exclude")
    eq(get("docs/tmp/secret.txt").body, b"SECRET\n", "it stayed")
    eq(get("docs/.env").body, b"K=1\n", "it stayed too")


def test_subject_move_of_excluded_path_refused(srv):
    aid = new_id()
    expect(srv.put(agent_url(aid), json={"exclude": ["docs/tmp"]}), 201)
    expect(srv.put(_subject(aid, "/files/content"),
                   json={"path": "docs/tmp/secret.txt", "content": "SECRET\n"}), 201)
    expect(srv.put(_subject(aid, "/files/content"),
                   json={"path": "only/.env", "content": "K=1\n"}), 201)
    for src in ["docs/tmp/secret.txt", "docs/tmp"]:
        forbidden(srv.post(_subject(aid, "/files/move"), json={"from": src, "to": "out"}),
                  src)
    r = srv.post(_subject(aid, "/files/move"), json={"from": "only", "to": "out"})
    expect_error(r, 403, "forbidden")
    contains(r.error["message"], "every file under 'only' is excluded", "message")
    eq(srv.get(_subject(aid, "/files/content"), query={"path": "docs/tmp/secret.txt"}).body,
       b"SECRET\n", "nothing moved")
