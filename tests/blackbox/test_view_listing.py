"""Listings of a view (docs/design.md, Views, "Listings"): replies built before
they are asked (the next reply of a listing, and the replies of the folder a
walk opens next) are sent only when they answer the request exactly and nothing
changed since; else they are dropped and built again. Every walk here must list
each entry exactly once, with the right sizes, whatever was built early. Real
FUSE, real bubblewrap."""

import ctypes
import os
import struct
import time
import subprocess

import harness
from harness import check, eq
from test_view import Mount, _agent, _fuse_ok, new_turn
from turnlib import ok

# 4 folders of 450 files: each listing takes 3 READDIRPLUS replies of 32 KiB and
# its end, so a walk meets replies built ahead and folders prepared before opened
FOLDERS = ["d%d" % i for i in range(4)]
FILES = {"%s/f%03d.txt" % (d, i): b"%s %d\n" % (d.encode(), i) * (1 + i % 3)
         for d in FOLDERS for i in range(450)}
FILES.update({"d1/sub/deep%d.txt" % i: b"deep\n" for i in range(3)})


def _fill(srv):
    vid = srv.create_volume()["id"]
    srv.put_many(vid, FILES)
    return vid


def _walk(root):
    """{relative path: size} of every file under root, by os.walk (readdir)."""
    got = {}
    for d, dirs, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            check_once(got, rel)
            got[rel] = os.stat(p).st_size
    return got


def check_once(got, rel):
    if rel in got:
        raise AssertionError("%s listed twice" % rel)


WANT = {p: len(d) for p, d in FILES.items()}


def _names(folder):
    """The names in top folder `folder` of FILES, sorted."""
    return sorted({p.split("/")[1] for p in FILES if p.startswith(folder + "/")})

_libc = ctypes.CDLL(None, use_errno=True)
SYS_getdents64 = 217  # x86-64


def _names_small_buffer(path, bufsize=4096):
    """The names of folder `path` read by getdents64 with a 4 KiB buffer: the
    kernel then asks for 4 KiB replies, not the 32 KiB replies built early."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    names = []
    try:
        buf = ctypes.create_string_buffer(bufsize)
        while True:
            n = _libc.syscall(SYS_getdents64, fd, buf, bufsize)
            if n < 0:
                raise OSError(ctypes.get_errno(), "getdents64")
            if n == 0:
                return names
            raw, at = buf.raw[:n], 0
            while at < n:
                reclen = struct.unpack_from("H", raw, at + 16)[0]
                name = raw[at + 19:at + reclen].split(b"\0", 1)[0].decode()
                if name not in (".", ".."):
                    names.append(name)
                at += reclen
    finally:
        os.close(fd)


def test_walks_list_every_entry_once(srv):
    vid = _fill(srv)
    m = Mount(srv, vid, "--read-only")
    try:
        eq(_walk(m.dir), WANT, "a cold walk: every file once, with its size")
        eq(_walk(m.dir), WANT, "the same walk again")
        out = subprocess.run(["find", m.dir, "-type", "f"], capture_output=True, text=True,
                             check=True).stdout.split()
        eq(sorted(os.path.relpath(p, m.dir) for p in out), sorted(WANT), "find")
        # requests of another size than the replies built for the last ones
        for d in FOLDERS:
            want = _names(d)
            got = _names_small_buffer(m.path(d))
            eq(sorted(got), want, "%s read with a 4 KiB buffer" % d)
            eq(len(got), len(set(got)), "%s: no name twice" % d)
        if harness.IS_ROOT:  # the kernel forgets every node; a walk makes them again
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("2\n")
            eq(_walk(m.dir), WANT, "a walk after the kernel forgot the nodes")
    finally:
        eq(m.end(), "", "what the mount said")


def test_a_folder_changed_after_it_was_prepared_lists_the_change(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_many(ws, FILES)
    t = new_turn(srv, aid)
    # `ls /workspace` lists the folders in order; `ls d0` opens d0, which
    # prepares d1 (the folder listed after it); then d1 changes, and its listing
    # must show the change, not what was prepared
    out = ok(srv, t["id"], "cd /workspace && ls >/dev/null && ls d0 >/dev/null && "
             "echo new > d1/new.txt && rm d1/f007.txt && mv d1/f008.txt d1/g008.txt && "
             "ls d1 | sort")
    want = [n for n in _names("d1") if n not in ("f007.txt", "f008.txt")]
    eq(out["stdout"].split(), sorted(want + ["g008.txt", "new.txt"]), "d1 as the call changed it")
    # a folder listed, then changed, then listed again: the kernel's copy of
    # the first listing is not what the second shows
    out = ok(srv, t["id"], "cd /workspace/d2 && ls >/dev/null && echo x > added.txt && "
             "rm f003.txt && mv f004.txt moved.txt && mkdir newdir && ls | sort")
    want = [n for n in _names("d2") if n not in ("f003.txt", "f004.txt")]
    eq(out["stdout"].split(), sorted(want + ["added.txt", "moved.txt", "newdir"]),
       "d2 listed again after its changes")
    # the same in a rw coffer mount, changed from outside the walk's folder
    vid = _fill(srv)
    m = Mount(srv, vid)
    try:
        os.listdir(m.dir)
        os.listdir(m.path("d2"))          # prepares d3
        with open(m.path("d3/made.txt"), "wb") as f:
            f.write(b"made\n")
        os.unlink(m.path("d3/f000.txt"))
        got = sorted(os.listdir(m.path("d3")))
        want = sorted([n for n in _names("d3") if n != "f000.txt"] + ["made.txt"])
        eq(got, want, "d3 after its change")
        os.rename(m.path("d3/made.txt"), m.path("d3/renamed.txt"))
        os.unlink(m.path("d3/f001.txt"))
        want = sorted([n for n in want if n not in ("made.txt", "f001.txt")] + ["renamed.txt"])
        eq(sorted(os.listdir(m.path("d3"))), want, "d3 listed again after more changes")
    finally:
        m.end()


def test_call_walks_every_file_of_a_cold_view(srv):
    _fuse_ok(srv)
    docs = _fill(srv)
    aid, _ = _agent(srv, mounts=[{"workspace": True},
                                 {"volumeId": docs, "path": "/docs", "mode": "ro"}])
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "cd /docs && find . -type f -printf '%P %s\\n' | sort")
    got = dict((p, int(s)) for p, s in (line.split() for line in out["stdout"].splitlines()))
    eq(got, WANT, "every file of a cold call view, once, with its size")
    out = ok(srv, t["id"], "grep -rc '' /docs | wc -l")
    eq(int(out["stdout"]), len(FILES), "grep -r reads every file")


def test_a_listing_prepared_before_a_write_gives_the_new_size(srv):
    # a reply built before a write names the file's old size: sent after it,
    # the kernel would take that size (the write came before the request)
    vid = _fill(srv)
    m = Mount(srv, vid)
    try:
        os.listdir(m.dir)
        os.listdir(m.path("d1"))           # opens d1: d2 is prepared
        time.sleep(0.3 * harness.SCALE)    # (beside the walk: let it end)
        fd = os.open(m.path("d2"), os.O_RDONLY | os.O_DIRECTORY)  # takes it
        try:
            with open(m.path("d2/f001.txt"), "ab") as f:
                f.write(b"more\n")
            eq(len(os.listdir(fd)), len(_names("d2")), "d2's names")
        finally:
            os.close(fd)
        eq(os.stat(m.path("d2/f001.txt")).st_size, WANT["d2/f001.txt"] + 5,
           "the size after the write, not the one listed before it")
    finally:
        m.end()


def _dents(fd, bufsize=4096):
    """One getdents64 of fd with a buffer of bufsize bytes: [(name, d_off)] of
    what it gave, [] at the end."""
    buf = ctypes.create_string_buffer(bufsize)
    n = _libc.syscall(SYS_getdents64, fd, buf, bufsize)
    if n < 0:
        raise OSError(ctypes.get_errno(), "getdents64")
    out, raw, at = [], buf.raw[:n], 0
    while at < n:
        d_off, reclen = struct.unpack_from("<qH", raw, at + 8)
        out.append((raw[at + 19:at + reclen].split(b"\0", 1)[0].decode(), d_off))
        at += reclen
    return out


def _rest(fd):
    """The names fd lists from where it is to its end (no . and ..)."""
    names = []
    while True:
        ents = _dents(fd)
        if not ents:
            return names
        names += [n for n, _ in ents if n not in (".", "..")]


def _stats_line(path):
    with open(path) as f:
        lines = [ln.split() for ln in f if ln.startswith("view ")]
    eq(len(lines), 1, "one view's counts: %r" % lines)
    return {k: int(v.split("/")[0]) for k, _, v in (w.partition("=") for w in lines[0][2:])}


def test_listings_with_no_handle_each_go_on_from_their_own_place(srv):
    # a view at a seq answers no OPENDIR, so the kernel sends neither OPENDIR
    # nor RELEASEDIR (two round trips a folder opened: rm -rf opened each
    # folder twice) and a listing has no handle: its cursor is kept on the
    # folder's node and each reply's offsets name it (listing.c, "Cursors").
    # Listings of one folder interleaved, with changes between their reads
    # (each goes on from its place: before, one went on by listing the folder
    # again up to its entry's number, and listed a name twice);
    # more listings at once than the view keeps cursors for; seeks: every name
    # once, each listing from its own place
    vid = _fill(srv)
    stats = os.path.join(harness.tempfile.mkdtemp(prefix="coffer-vstats-"), "stats")
    m = Mount(srv, vid, env=dict(os.environ, COFFER_VIEW_STATS=stats))
    try:
        # two listings of d0, 4 KiB a reply, read in turn; after their second
        # reads a name is made and one they have not reached yet is removed
        fds = [os.open(m.path("d0"), os.O_RDONLY | os.O_DIRECTORY) for _ in range(2)]
        got, done, rounds = [[], []], [False, False], 0
        while not all(done):
            for i in (0, 1):
                ents = [] if done[i] else _dents(fds[i])
                done[i] = done[i] or not ents
                got[i] += [n for n, _ in ents if n not in (".", "..")]
            rounds += 1
            if rounds == 2:
                with open(m.path("d0/made.txt"), "wb") as f:
                    f.write(b"made\n")
                os.unlink(m.path("d0/f440.txt"))
        for fd in fds:
            os.close(fd)
        check(rounds > 10, "many replies each: %d" % rounds)
        changed = {"made.txt", "f440.txt"}
        for i in (0, 1):
            eq(len(got[i]), len(set(got[i])), "listing %d: no name twice" % i)
            eq(sorted(set(got[i]) - changed), [n for n in _names("d0") if n not in changed],
               "listing %d: every name not changed, once" % i)
            check("f440.txt" not in got[i], "listing %d: not the name removed before "
                  "it reached it" % i)
        eq(sorted(os.listdir(m.path("d0"))),
           sorted([n for n in _names("d0") if n != "f440.txt"] + ["made.txt"]),
           "a listing begun after the changes")
        # 40 listings of d1 at once (the view keeps 32 cursors): each read one
        # reply, then each to its end; those whose cursor was dropped go on
        # from their place all the same
        fds = [os.open(m.path("d1"), os.O_RDONLY | os.O_DIRECTORY) for _ in range(40)]
        firsts = [[n for n, _ in _dents(fd) if n not in (".", "..")] for fd in fds]
        want = _names("d1")
        for i, fd in enumerate(fds):
            names = firsts[i] + _rest(fd)
            os.close(fd)
            eq(sorted(names), want, "listing %d of 40 of d1: every name once" % i)
        # seeks: back to an entry's offset, and to the start
        fd = os.open(m.path("d2"), os.O_RDONLY | os.O_DIRECTORY)
        try:
            first = [e for e in _dents(fd) if e[0] not in (".", "..")]
            _dents(fd)
            os.lseek(fd, first[9][1], os.SEEK_SET)
            eq(_rest(fd), _names("d2")[10:], "from the tenth entry's offset on")
            os.lseek(fd, 0, os.SEEK_SET)
            eq(sorted(_rest(fd)), _names("d2"), "from the start again")
        finally:
            os.close(fd)
    finally:
        eq(m.end(), "", "what the mount said")
    counts = _stats_line(stats)
    check(counts.get("opendir", 0) <= 1 and counts.get("releasedir", 0) == 0,
          "no OPENDIR but the first (answered ENOSYS), no RELEASEDIR: %r" % counts)
    check(counts.get("cursor", 0) >= 43 and counts.get("cursor_drop", 0) >= 8,
          "a cursor a listing, the oldest dropped past 32: %r" % counts)
