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

import os
import tempfile

import harness
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


# A wider tree for prefetch's counts: 24 folders of 25 small files, 2 deep.
_WIDE = ("cd /workspace && for a in a b c d e f; do for b in 1 2 3 4; do "
         "mkdir -p w/$a/$b; for i in $(seq 25); do echo $a $b $i > w/$a/$b/f$i; done; "
         "done; done && find w -type f | wc -l")
_NWIDE = 600


def _stats_lines(path):
    try:
        with open(path) as f:
            return [ln.split() for ln in f if ln.startswith("view ")]
    except FileNotFoundError:
        return []


def _stat(line, key):
    """The count of `key` in a COFFER_VIEW_STATS line (0 when absent)."""
    for w in line[2:]:
        k, _, v = w.partition("=")
        if k == key:
            return int(v.split("/")[0])
    return 0


def _call_stats(s, path, tid, cmd):
    """One call that writes (so its view ends with it) and its view's counts."""
    n = len(_stats_lines(path))
    out = call(s, tid, cmd)
    _clean(out, cmd)
    harness.until(lambda: len(_stats_lines(path)) > n, "the call's view ended")
    return out, _stats_lines(path)[-1]


def test_a_walk_that_removes_what_it_lists_stops_pushing():
    # rm -rf of a committed tree stored each listed file's bytes into the page
    # cache before its reply (prefetch) and rm read none of them: once more
    # than 64 pushed files are removed and they are over half of those pushed,
    # the view pushes no more for the call (prefetch.c, vpush_remove); a walk
    # that reads what it lists keeps pushing
    _fuse_ok()
    stats = os.path.join(tempfile.mkdtemp(prefix="coffer-vstats-"), "stats")
    with harness.Server(env={"COFFER_VIEW_STATS": stats}) as s:
        aid, ws = _agent(s)
        t = new_turn(s, aid)
        out = ok(s, t["id"], _WIDE)
        eq(out["stdout"].split()[-1:], [str(_NWIDE)], "files made")
        out, grep = _call_stats(s, stats, t["id"], "cd /workspace && grep -rc 1 w | wc -l "
                                "&& echo x > mark")
        eq(out["stdout"].split(), [str(_NWIDE)], "grep read every file")
        eq(_stat(grep, "push_off"), 0, "a reading walk keeps pushing: %r" % grep)
        check(_stat(grep, "stored") >= _NWIDE // 2, "a reading walk stores: %r" % grep)
        out, rm = _call_stats(s, stats, t["id"], "cd /workspace && rm -rf w && ls -A")
        eq(out["stdout"].split(), ["mark"], "what the call sees after")
        eq(_stat(rm, "push_off"), 1, "the removing walk stopped pushing: %r" % rm)
        # and it sent no OPENDIR but the first (answered ENOSYS: the kernel then
        # sends none, nor RELEASEDIR) though rm opens each of its 25 folders
        # twice, and its listings had no handle (listing.c, "Cursors")
        for line in (grep, rm):
            check(_stat(line, "opendir") <= 1 and _stat(line, "releasedir") == 0,
                  "no folder handles: %r" % line)
        check(_stat(rm, "cursor") >= 25, "a cursor a listing: %r" % rm)
        check(_stat(rm, "stored") < _NWIDE // 2, "it stored few of the files: %r" % rm)
        eq(sorted(f["path"] for f in s.list_files(ws)["files"]), ["mark"], "the volume")
        # the next call's view (new: the last one wrote) pushes again
        out = ok(s, t["id"], "cd /workspace && mkdir -p v && for i in $(seq 30); do "
                 "echo $i > v/f$i; done")
        out, grep = _call_stats(s, stats, t["id"], "cd /workspace && cat v/* | wc -l && rm mark")
        eq(out["stdout"].split(), ["30"], "read back")
        eq(_stat(grep, "push_off"), 0, "the next call pushes: %r" % grep)


def test_names_and_listings_stay_fresh_in_one_call(srv):
    # the kernel caches absences (negative entries) and listings of a view at
    # its seq: a name made after a lookup found it absent, and a listing after
    # a create, unlink or rename in the folder, show the change at once
    t, ws = _committed_tree(srv)
    out = call(srv, t["id"], "cd /workspace/nm/p1/test/u && ls && "
               "(test -e new || echo absent) && (cat new 2>/dev/null || echo nofile) && "
               "echo made > new && cat new && ls && rm f1.js && ls && mv f2.js g && ls && "
               "(test -e f1.js || echo gone) && echo again > f1.js && cat f1.js && ls | wc -l")
    _clean(out, "the call")
    eq(out["stdout"].split("\n"), [
        "f1.js", "f2.js", "f3.js", "f4.js", "f5.js", "f6.js", "absent", "nofile", "made",
        "f1.js", "f2.js", "f3.js", "f4.js", "f5.js", "f6.js", "new",
        "f2.js", "f3.js", "f4.js", "f5.js", "f6.js", "new",
        "f3.js", "f4.js", "f5.js", "f6.js", "g", "new",
        "gone", "again", "7", ""], "what the call saw")
    paths = [p for p in _paths(srv, ws) if p.startswith("nm/p1/test/u/")]
    eq(paths, ["nm/p1/test/u/" + n for n in
               ("f1.js", "f3.js", "f4.js", "f5.js", "f6.js", "g", "new")], "landed")
    eq(srv.get_file(ws, "nm/p1/test/u/f1.js").body, b"again\n", "the new f1.js")


# A folder of 1,000 committed files: its listing takes several READDIRPLUS
# replies, and the next is built before it is asked (listing.c, "Ahead").
_BIG = ("cd /workspace && mkdir -p big && for i in $(seq 1000); do echo $i > big/f$i; done "
        "&& ls big | wc -l")
# Removes each entry as it lists the folder (as shutil.rmtree does: os.scandir
# reads a reply at a time), then the folder.
_SCAN_RM = ("cd /workspace && python3 -c \"import os\n"
            "n = 0\n"
            "for e in os.scandir('big'):\n"
            "    os.unlink(e.path); n += 1\n"
            "print(n); os.rmdir('big')\" && ls -A")


def test_a_listing_goes_on_from_its_place_after_changes(srv):
    # a listing's next reply was built ahead; a change in the view drops it,
    # and the listing went on by listing its folder again up to the entry's
    # number, among names that had changed meanwhile: a walk that removes what
    # it lists skipped a reply's worth of names (and rmdir failed), one that
    # made a name listed one twice
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    eq(ok(srv, t["id"], _BIG)["stdout"].split(), ["1000"], "files made")
    out = call(srv, t["id"], _SCAN_RM)
    _clean(out, "remove while listing")
    eq(out["stdout"].split(), ["1000"], "every entry listed once and removed")
    eq(_paths(srv, ws), [], "what the volume holds")
    eq(ok(srv, t["id"], _BIG)["stdout"].split(), ["1000"], "files made again")
    out = ok(srv, t["id"], "cd /workspace && python3 -c \"import os\n"
             "names = []\n"
             "for e in os.scandir('big'):\n"
             "    names.append(e.name)\n"
             "    if len(names) % 100 == 1: open('big/new%d' % len(names), 'w').close()\n"
             "print(len(names), len(set(names)), len([n for n in names if n[0] == 'f']))\"")
    n, uniq, old = out["stdout"].split()
    eq((n == uniq, old), (True, "1000"), "no name twice, every old name: %r" % out["stdout"])
