"""Symbolic links in volumes (issue 38 item 4): a link is a file of its own
type, as in git's blobs of mode 120000 (content type inode/symlink, its bytes
the target). PUT with X-Coffer-Symlink makes one, GET answers its target text,
listings say type "symlink" and its target, archives hold it as a link,
read-all gives its target; in a call's view and in `coffer mount` `ln -s`
makes one and readlink reads it; cofferd never follows one, and inside a call
the kernel resolves it within the call's own root. Before, a view refused
`ln -s` (EPERM): git clone, tar x and npm's node_modules/.bin failed in a call.
Real FUSE, real bubblewrap."""

import io
import os
import subprocess
import tarfile

from harness import check, eq, expect, expect_error
from test_view import Mount, _agent, _fuse_ok, new_turn
from turnlib import call, ok

_GIT = ("export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@x GIT_COMMITTER_NAME=t "
        "GIT_COMMITTER_EMAIL=t@x GIT_CONFIG_NOSYSTEM=1 HOME=/tmp; ")


def _link(srv, vid, path, target, **kw):
    return srv.put_file(vid, path, b"", headers={"X-Coffer-Symlink": target}, **kw)


def _listed(srv, vid):
    return {f["path"]: f for f in srv.list_files(vid)["files"]}


def test_http_put_get_list_archive_read_all_of_a_link(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "bin/tool.js", b"console.log(1)\n")
    r = _link(srv, vid, "bin/tool", "../bin/tool.js")
    expect(r, 201)
    eq(r.json()["contentType"], "inode/symlink", "its type")
    eq(r.json()["size"], len("../bin/tool.js"), "its size is its target's")
    g = srv.get_file(vid, "bin/tool")
    expect(g, 200)
    eq((g.body, g.header("Content-Type")), (b"../bin/tool.js", "inode/symlink"),
       "a GET answers the target, never what it points at")
    f = _listed(srv, vid)
    eq((f["bin/tool"].get("type"), f["bin/tool"].get("target")), ("symlink", "../bin/tool.js"),
       "the listing")
    check("type" not in f["bin/tool.js"] and "target" not in f["bin/tool.js"], "a file's entry")
    ra = srv.get("/v1/volumes/%s/files" % vid, query={"content": "true"}).json()
    got = {x["path"]: x for x in ra["files"]}
    eq((got["bin/tool"]["type"], got["bin/tool"]["target"]), ("symlink", "../bin/tool.js"),
       "read-all")
    a = srv.get("/v1/volumes/%s/archive" % vid)
    expect(a, 200)
    with tarfile.open(fileobj=io.BytesIO(a.body), mode="r:gz") as t:
        m = {x.name: x for x in t.getmembers()}
    check(m["bin/tool"].issym(), "the archive holds a link")
    eq(m["bin/tool"].linkname, "../bin/tool.js", "its target")
    check(m["bin/tool.js"].isfile(), "and the file")
    # an absolute target is only text to cofferd
    expect(_link(srv, vid, "etc", "/etc/passwd"), 201)
    eq(srv.get_file(vid, "etc").body, b"/etc/passwd", "never followed")


def test_http_bad_link_targets_are_refused_naming_the_limit(srv):
    vid = srv.create_volume()["id"]
    expect_error(_link(srv, vid, "l", "x" * 4096), 400, "validation_error")
    check("4095" in _link(srv, vid, "l", "x" * 4096).error["message"], "names the limit")
    expect(_link(srv, vid, "l", "x" * 4095), 201)
    expect_error(srv.put_file(vid, "l2", b"body", headers={"X-Coffer-Symlink": "t"}), 400,
                 "validation_error")
    # the type alone makes a link too, and is checked the same way
    expect_error(srv.put_file(vid, "l3", b"a\0b", content_type="inode/symlink"), 400,
                 "validation_error")
    expect_error(srv.put_file(vid, "l4", b"", content_type="inode/symlink"), 400,
                 "validation_error")
    expect(srv.put_file(vid, "l5", b"target", content_type="inode/symlink"), 201)


def test_ln_s_in_a_call_lands_and_is_a_link_in_the_next_call_and_over_http(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_ok(ws, "lib/real.txt", b"real\n")
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "cd /workspace && ln -s lib/real.txt rel && ln -s /workspace/lib "
             "abs && mkdir -p d && ln -s ../lib/real.txt d/up && cat rel abs/real.txt d/up && "
             "readlink rel abs d/up && stat -c '%F' rel")
    eq(out["stdout"].splitlines(), ["real", "real", "real", "lib/real.txt", "/workspace/lib",
                                    "../lib/real.txt", "symbolic link"], "in the call")
    eq(out["committed"][0]["written"], 3, "three links landed: %r" % out["committed"])
    f = _listed(srv, ws)
    eq({p: (f[p].get("type"), f[p].get("target")) for p in ("rel", "abs", "d/up")},
       {"rel": ("symlink", "lib/real.txt"), "abs": ("symlink", "/workspace/lib"),
        "d/up": ("symlink", "../lib/real.txt")}, "over HTTP")
    out = ok(srv, t["id"], "cd /workspace && readlink rel abs d/up && cat rel && "
             "find . -type l | sort && mv rel rel2 && rm abs && readlink rel2")
    eq(out["stdout"].splitlines(), ["lib/real.txt", "/workspace/lib", "../lib/real.txt", "real",
                                    "./abs", "./d/up", "./rel", "lib/real.txt"],
       "in the next call; a rename keeps a link a link")
    f = _listed(srv, ws)
    eq((f["rel2"]["type"], f["rel2"]["target"]), ("symlink", "lib/real.txt"), "moved")
    check("abs" not in f and "rel" not in f, "removed")


def test_a_link_to_etc_passwd_resolves_within_the_call(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    # a file only the host has, at a path the call could name
    secret = "/tmp/coffer-host-only-%d" % os.getpid()
    with open(secret, "w") as f:
        f.write("host secret\n")
    try:
        out = ok(srv, t["id"], "cd /workspace && ln -s /etc/passwd p && ln -s %s s && "
                 "cat p | sha256sum && sha256sum < /etc/passwd && (cat s || echo unseen)"
                 % secret)
        lines = out["stdout"].splitlines()
        eq(lines[0].split()[0], lines[1].split()[0], "the link reads the call's own /etc/passwd")
        eq(lines[2], "unseen", "a link to a host path reaches nothing")
        eq(srv.get_file(ws, "p").body, b"/etc/passwd", "cofferd stored only the target")
        eq(srv.get_file(ws, "s").body, secret.encode(), "and never followed it")
        out = ok(srv, t["id"], "(cat /workspace/s || echo unseen) && readlink /workspace/p")
        eq(out["stdout"].splitlines(), ["unseen", "/etc/passwd"], "in the next call")
    finally:
        os.unlink(secret)


def test_tar_x_of_a_tree_with_links(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "mkdir -p /tmp/src/pkg/bin /tmp/src/pkg/lib && cd /tmp/src && "
             "echo x > pkg/lib/x.js && ln -s ../lib/x.js pkg/bin/x && ln -s pkg/lib libs && "
             "tar czf /tmp/t.tgz pkg libs && mkdir /workspace/out && "
             "tar xzf /tmp/t.tgz -C /workspace/out && cat /workspace/out/pkg/bin/x && "
             "readlink /workspace/out/libs")
    eq(out["stdout"].splitlines(), ["x", "pkg/lib"], "tar x in the call")
    f = _listed(srv, ws)
    eq((f["out/pkg/bin/x"]["target"], f["out/libs"]["target"]), ("../lib/x.js", "pkg/lib"),
       "landed as links")


def test_git_clone_of_a_repo_with_links_in_the_workspace(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], _GIT + "mkdir /tmp/r && cd /tmp/r && git init -q && "
             "mkdir node_modules && echo 'x' > node_modules/tool.js && mkdir -p node_modules/.bin "
             "&& ln -s ../tool.js node_modules/.bin/tool && ln -s README README.link && "
             "echo hi > README && git add -A && git commit -qm one && cd /workspace && "
             "git clone -q /tmp/r clone && cd clone && git status --porcelain && "
             "readlink node_modules/.bin/tool README.link && cat README.link")
    eq(out["stdout"].splitlines(), ["../tool.js", "README", "hi"], "git clone in the view")
    f = _listed(srv, ws)
    eq(f["clone/node_modules/.bin/tool"]["target"], "../tool.js", "landed")
    out = ok(srv, t["id"], _GIT + "cd /workspace/clone && git status --porcelain && "
             "git fsck --no-progress && echo ok")
    eq(out["stdout"].splitlines(), ["ok"], "the next call's git sees the same tree")


def test_coffer_mount_ln_s(srv):
    _fuse_ok(srv)
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"a\n")
    expect(_link(srv, vid, "old", "a.txt"), 201)
    m = Mount(srv, vid)
    try:
        eq(os.readlink(m.path("old")), "a.txt", "a link of the volume")
        eq(open(m.path("old")).read(), "a\n", "followed by the kernel")
        os.symlink("a.txt", m.path("new"))
        os.symlink("/nowhere/at/all", m.path("dangling"))
        eq(os.readlink(m.path("new")), "a.txt", "made")
        check(os.path.islink(m.path("dangling")), "a dangling link is a link")
        try:
            os.symlink("x", m.path("a.txt"))
            check(False, "a link over a file")
        except FileExistsError:
            pass
    finally:
        m.end()
    f = _listed(srv, vid)
    eq((f["new"]["type"], f["new"]["target"]), ("symlink", "a.txt"), "landed at once")
    eq(f["dangling"]["target"], "/nowhere/at/all", "landed")


def test_file_tools_never_follow_a_link(srv):
    import test_tools as tt
    aid, ws = tt.ws_agent(srv)
    srv.put_ok(ws, "real.txt", b"secret line\n")
    expect(_link(srv, ws, "l", "real.txt"), 201)
    j = tt.ok(srv, aid, "read", path="/workspace/l")
    eq(j.get("target"), "real.txt", "read names the target")
    check("symbolic link to real.txt" in j["output"] and "secret" not in j["output"],
          "and never reads it: %r" % j["output"])
    tt.refused(srv, aid, "edit", "symbolic link to real.txt", path="/workspace/l",
               oldString="real", newString="fake")
    eq(srv.get_file(ws, "l").body, b"real.txt", "the link unchanged")
