"""Inode numbers and times of views (issue 38 item 2): a file's st_ino is the
same in every call and every mount while it is there (a hash of the volume and
the path: docs/design.md, Views, "Inode numbers"), and its mtime is the
one the call that wrote it saw (the commit keeps it as the version's time), so
git's stat cache made in one call matches in the very next and git re-hashes
nothing. Before, st_ino was the kernel's node id of the mount: a
counter in the order of lookups, different in each call. Real FUSE, real
bubblewrap."""

import os

import harness
from harness import check, eq
from test_view import Mount, _agent, _fuse_ok, new_turn
from turnlib import ok

_GIT = ("export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@x GIT_COMMITTER_NAME=t "
        "GIT_COMMITTER_EMAIL=t@x GIT_CONFIG_NOSYSTEM=1 HOME=/tmp; cd /workspace && ")
_STAT = "stat -c '%n %i %Y %Z %s'"


def _stats(out):
    return sorted(out["stdout"].splitlines())


def test_a_file_keeps_its_inode_number_and_mtime_across_calls_and_mounts():
    # each call stats in another order (node ids came in lookup order); a
    # folder, a file the volume had and one a call wrote; then `coffer mount
    # --data` of the same dir, in process (so on a server of the test's own,
    # stopped first: a dir a cofferd serves is refused)
    srv = harness.Server()
    try:
        _same_inodes_in_calls_and_mount(srv)
    finally:
        srv.close()


def _same_inodes_in_calls_and_mount(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_ok(ws, "a/first.txt", b"x" * 10)
    srv.put_ok(ws, "z/q/a.txt", b"a\n")
    t = new_turn(srv, aid)
    ok(srv, t["id"], "echo b > /workspace/z/q/b.txt")
    names = ["z/q/a.txt", "z/q/b.txt", "z/q", "z"]
    one = _stats(ok(srv, t["id"], "cd /workspace && " + _STAT + " " + " ".join(names)))
    two = _stats(ok(srv, t["id"], "cd /workspace && " + _STAT + " " + " ".join(names[::-1])))
    eq(two, one, "st_ino, mtime, ctime, size in two calls")
    inos = [l.split()[1] for l in one]
    eq(len(set(inos)), 4, "each its own number: %r" % one)
    eq(srv.stop(), 0, "cofferd stopped")
    m = Mount(srv, ws, "--read-only", source=["--data", srv.data])
    try:
        got = sorted("%s %d %d %d %d" % (p, s.st_ino, s.st_mtime, s.st_ctime, s.st_size)
                     for p in names for s in [os.stat(m.path(p))])
    finally:
        m.end()
    eq(got, one, "the same in coffer mount")


def test_a_file_keeps_the_mtime_it_had_in_the_call_that_wrote_it(srv):
    # the store kept only a version's time (its commit's): a file showed its
    # write time in the call and its commit time afterwards (issue 38 item 2).
    # Now the commit stores the mtime the view had: one written, then a second
    # passes before the call ends (its commit is in a later second), one whose
    # time the call set (tar x, touch -d), one renamed after writing
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    names = ["w.txt", "old.txt", "moved.txt"]
    one = ok(srv, t["id"], "cd /workspace && echo w > w.txt && echo o > old.txt && "
             "touch -d @1000000000 old.txt && echo m > m.txt && mv m.txt moved.txt && "
             "%s %s && sleep 1.1" % (_STAT, " ".join(names)))
    eq(len(one["committed"]), 1, "committed")
    two = ok(srv, t["id"], "cd /workspace && " + _STAT + " " + " ".join(names))
    eq(_stats(two), _stats(one), "st_ino, mtime, ctime, size in the call that wrote them "
       "and in the next")
    eq([l.split()[2] for l in _stats(one) if l.startswith("old.txt")], ["1000000000"],
       "the time the call set")
    m = Mount(srv, ws, "--read-only")
    try:
        got = sorted("%s %d %d %d %d" % (p, s.st_ino, s.st_mtime, s.st_ctime, s.st_size)
                     for p in names for s in [os.stat(m.path(p))])
    finally:
        m.end()
    eq(got, _stats(one), "the same in coffer mount")
    f = {x["path"]: x for x in srv.list_files(ws)["files"]}
    eq(f["old.txt"]["updatedAt"], "2001-09-09T01:46:40Z", "the listing's updatedAt")


def test_git_status_in_the_next_call_rewrites_no_index(srv):
    # git's index holds each file's st_ino and times: one call's git status
    # matched none of them in the next, re-hashed every file and wrote the
    # index anew (a change to land each time)
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    # the files are a second older than the index git writes (else git
    # holds them "racily clean" and re-checks them on any file system)
    ok(srv, t["id"], _GIT + "git init -q && for d in a b c; do mkdir -p src/$d; "
       "for i in $(seq 1 20); do echo $d $i > src/$d/f$i.c; done; done && sleep 1.1 && "
       "git add -A && git commit -qm first && sleep 1.1")
    # the very next call sees each file at the mtime the call that wrote it
    # saw (the commit keeps it), so its git status matches the index
    v = srv.seq(ws)
    # this call looks at the files in another order first (the kernel's node
    # ids follow the order of lookups)
    out = ok(srv, t["id"], _GIT + "find src -type f | sort -r | xargs stat > /dev/null && "
             "sha256sum .git/index && git status --porcelain && "
             "git diff --stat && sha256sum .git/index && echo edit >> src/b/f7.c && "
             "git status --porcelain")
    lines = out["stdout"].splitlines()
    eq(len(lines), 3, "status and diff of the unchanged tree say nothing: %r" % lines)
    eq(lines[1], lines[0], "the index unchanged: git re-hashed nothing")
    eq(lines[2], " M src/b/f7.c", "an edit is seen")
    v2 = srv.seq(ws)
    eq(out["committed"], [{"volumeId": ws, "path": "/workspace", "seq": v + 1, "written": 1,
                           "removed": 0}], "only the edit landed (not the index)")
    eq(v2, v + 1, "one seq")
