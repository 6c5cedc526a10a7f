"""Whole-tree changes in a call's read-write view of a tree an earlier call
committed (issue 38 item 1): rm -rf, find -delete, git clean -fdx and mv of a
deep tree end without an error and land as exactly what they did. Real FUSE,
real bubblewrap.

Folders are implicit in a volume (one exists while it holds a file). Before
the fix a folder of the committed tree vanished from the view once the call
emptied it, before the call removed it: rm -rf failed with "rm: fts_read
failed: No such file or directory" (its walk went back up into a folder that
was gone) and the call committed the part it had removed; a folder emptied by
a move was gone too. A tree made and removed in one call never showed it (its
folders were made by mkdir, kept by the view until removed)."""

from harness import check, eq
from test_view import _agent, _fuse_ok, new_turn
from turnlib import call, ok

# A node_modules-like tree: folders that hold only folders (nm, lib, lib/x,
# lib/x/y, test) above folders of files, 6 deep; and a file beside it.
_TREE = ("cd /workspace && echo keep > keep.txt && for p in p1 p2; do "
         "for d in lib/x/y/z/w lib/x/y/q test/u; do mkdir -p nm/$p/$d; "
         "for i in 1 2 3 4 5 6; do echo $p $d $i > nm/$p/$d/f$i.js; done; done; "
         "echo '{}' > nm/$p/package.json; done && find nm -type f | wc -l")
_NFILES = 38
_GIT = ("export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@x GIT_COMMITTER_NAME=t "
        "GIT_COMMITTER_EMAIL=t@x GIT_CONFIG_NOSYSTEM=1 HOME=/tmp; ")


def _committed_tree(srv, before=""):
    """A call commits the tree (after shell `before`); (turn, workspace)."""
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], before + _TREE)
    eq(out["stdout"].split()[-1:], [str(_NFILES)], "files made")
    eq(len(out["committed"]), 1, "the tree committed: %r" % out["committed"])
    return t, ws


def _paths(srv, ws):
    return sorted(f["path"] for f in srv.list_files(ws)["files"])


def _clean(out, what):
    eq((out["exitCode"], out["stderr"]), (0, ""), what)


def test_rm_rf_of_a_deep_committed_tree(srv):
    t, ws = _committed_tree(srv)
    out = call(srv, t["id"], "cd /workspace && rm -rf nm && ls -A")
    _clean(out, "rm -rf")
    eq(out["stdout"].split(), ["keep.txt"], "what the call sees after")
    eq(out["committed"][0]["removed"], _NFILES, "every file removed: %r" % out["committed"])
    eq(_paths(srv, ws), ["keep.txt"], "what the volume holds")


def test_find_delete_of_a_deep_committed_tree(srv):
    t, ws = _committed_tree(srv)
    out = call(srv, t["id"], "cd /workspace && find nm -delete && ls -A")
    _clean(out, "find -delete")
    eq(out["stdout"].split(), ["keep.txt"], "what the call sees after")
    eq(_paths(srv, ws), ["keep.txt"], "what the volume holds")


def test_git_clean_of_a_deep_committed_tree(srv):
    t, ws = _committed_tree(srv, _GIT + "cd /workspace && git init -q && echo nm/ > "
                            ".gitignore && git add .gitignore && git commit -qm i && ")
    out = call(srv, t["id"], _GIT + "cd /workspace && git clean -fdxq && ls -A && "
               "git status --porcelain --ignored")
    _clean(out, "git clean -fdx")
    eq(out["stdout"].split(), [".git", ".gitignore"], "what is left: %r" % out["stdout"])
    paths = _paths(srv, ws)
    check(not [p for p in paths if p.startswith("nm/")] and "keep.txt" not in paths,
          "the untracked files gone from the volume: %r" % paths)
    check(".gitignore" in paths and ".git/HEAD" in paths, "the repository stays")


def test_mv_of_deep_committed_trees(srv):
    # a whole tree, then the two folders of lib/x/y: y, emptied by the moves,
    # stays until it is removed, and goes with rmdir
    t, ws = _committed_tree(srv)
    out = call(srv, t["id"], "cd /workspace && mkdir -p out && mv nm out/nm && "
               "mv out/nm/p1/lib/x/y/z out/z && mv out/nm/p1/lib/x/y/q out/q && "
               "ls -A out/nm/p1/lib/x/y && rmdir out/nm/p1/lib/x/y && ls -A out/nm/p1/lib/x "
               "&& ls -A && ls -A out")
    _clean(out, "mv")
    eq(out["stdout"].split(), ["keep.txt", "out", "nm", "q", "z"], "the call's listings")
    paths = _paths(srv, ws)
    eq(len(paths), _NFILES + 1, "every file still there: %r" % paths)
    check(all(p.startswith("out/") for p in paths if p != "keep.txt"), "all moved: %r" % paths)
    eq(sorted(p for p in paths if p.startswith(("out/z/", "out/q/"))),
       sorted(["out/z/w/f%d.js" % i for i in range(1, 7)] +
              ["out/q/f%d.js" % i for i in range(1, 7)]), "the folders moved out")
    out = call(srv, t["id"], "cat /workspace/out/z/w/f3.js /workspace/out/nm/p2/test/u/f1.js "
               "&& rm -rf /workspace/out && ls -A /workspace")
    _clean(out, "the next call reads and removes the moved tree")
    eq(out["stdout"].splitlines(), ["p1 lib/x/y/z/w 3", "p2 test/u 1", "keep.txt"], "read")
    eq(_paths(srv, ws), ["keep.txt"], "what the volume holds")
