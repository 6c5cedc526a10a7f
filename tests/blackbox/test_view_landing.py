"""No I/O under a view's mutex, the writes of `coffer mount --server` (issue 36
item 5; docs/design.md, Views, "No I/O under the view's mutex"): a file landed on
close or on truncate (PUT), removed (DELETE) or renamed (POST move) waits for its
round trip with the view's lock dropped, so lookups, listings, attributes and
reads of other files in the same mount go on meanwhile, and the change is made
once its answer comes.

The round trip is made to wait by events, never by time: the mount talks to
cofferd through a small HTTP proxy of this test that holds the one write asked
of it until the test lets it go. What is changed lies in folder `work/` and the
reader looks at the top and at `docs/` (the kernel itself holds a folder's lock
while a name in it is removed or renamed)."""

import json
import os
import shutil

import harness
from harness import check, eq
from test_view import Mount, _mounted
from test_view_copyup import _Proxy, _bg, _read, READER

_made = []  # every mount point this module made


class _WriteProxy(_Proxy):
    """_Proxy holding the first request that `hit(method, path)` picks instead
    of a ranged GET."""

    def __init__(self, target, hit):
        super().__init__(target, "\0never\0")
        self.hit, self.taken, self.armed = hit, False, False
        proxy, forward = self, self.server.RequestHandlerClass._forward

        def _forward(handler):
            with proxy.mu:
                mine = proxy.armed and not proxy.taken and \
                    proxy.hit(handler.command, handler.path)
                proxy.taken = proxy.taken or mine
            if mine:
                proxy.held.set()
                proxy.gate.wait()
            forward(handler)

        for m in ("do_GET", "do_HEAD", "do_PUT", "do_POST", "do_DELETE", "do_PATCH"):
            setattr(self.server.RequestHandlerClass, m, _forward)


def _during(srv, hit, change, after, before=None):
    """Mounts a volume (big.bin, docs/f*.txt, work/{a,b,c}.txt, work/sub/x.txt)
    through a proxy holding the request `hit` picks once armed (after the
    mount's first lookups and before(m)); runs `change` (code, argv: the mount, the
    marker) in the background until its write is held; then a reader of the
    top, of docs/ and of big.bin's size must end while it waits. Once let go
    the change ends "ok" and after(vid, m) checks the volume and the mount."""
    tmp = harness.tempfile.mkdtemp(prefix="coffer-land-")
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "big.bin", b"big" * 1000)
    for i in range(20):
        srv.put_ok(vid, "docs/f%d.txt" % i, b"file %d" % i)
    for n in "abc":
        srv.put_ok(vid, "work/%s.txt" % n, b"work %s" % n.encode())
    srv.put_ok(vid, "work/sub/x.txt", b"x")
    proxy = _WriteProxy(srv.url, hit)
    procs, m = [], None
    try:
        m = Mount(srv, vid, source=["--server", proxy.url, "--key", srv.key], made=_made,
                  env=dict(os.environ, TMPDIR=tmp))
        eq(sorted(os.listdir(m.path("work"))), ["a.txt", "b.txt", "c.txt", "sub"],
           "work/ before")
        if before:
            before(m)
        proxy.armed = True
        done, rd = os.path.join(tmp, "done"), os.path.join(tmp, "reader")
        procs.append(_bg(change, m.dir, done))
        harness.until(proxy.held.is_set, "the change's write reached the proxy", timeout=60)
        procs.append(_bg(READER, m.dir, rd))
        harness.until(lambda: os.path.exists(rd) and os.path.getsize(rd) > 0,
                      "the reader's lookups, listings and reads end while the write "
                      "waits", timeout=30)
        check(not os.path.exists(done), "the change did not end before its write was let go")
        seen = json.loads(_read(rd))
        eq(seen["top"], ["big.bin", "docs", "work"], "top listed during the write")
        eq(seen["docs"], sorted("f%d.txt" % i for i in range(20)), "docs listed")
        eq(seen["big"], 3000, "big.bin's size meanwhile")
        eq(seen["f0"], "file 0", "another file's bytes read during the write")
        proxy.gate.set()
        procs[0].wait(timeout=120)
        eq(_read(done), "ok", "the change, once its write was let go")
        after(vid, m)
    finally:
        proxy.gate.set()
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
            p.stderr.close()
        if m:
            m.end()
        proxy.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _files(srv, vid):
    """work/'s own files in the volume (not work/sub's), with their bytes."""
    return {f["path"]: srv.get_file(vid, f["path"]).body
            for f in srv.list_files(vid)["files"]
            if f["path"].startswith("work/") and f["path"].count("/") == 1}


# each writes its marker argv[2] ("ok", or the errno's name) once its change ends
_WRAP = r"""
import errno, os, sys
d = sys.argv[1]
try:
%s
    got = "ok"
except OSError as e:
    got = errno.errorcode.get(e.errno, str(e.errno))
with open(sys.argv[2], "w") as m:
    m.write(got)
"""


def _code(body):
    return _WRAP % "\n".join("    " + line for line in body.strip().splitlines())


def test_lookups_go_on_while_a_close_lands_the_file(srv):
    def after(vid, m):
        eq(_files(srv, vid)["work/a.txt"], b"written", "the volume has the closed file")
        eq(_read(m.path("work/a.txt")), "written", "the mount reads it")
    _during(srv, lambda c, p: c == "PUT" and p.endswith("/files/work/a.txt"),
            _code("with open(os.path.join(d, 'work/a.txt'), 'w') as f:\n"
                  "    f.write('written')"), after)


def test_lookups_go_on_while_a_truncate_lands_the_file(srv):
    def after(vid, m):
        eq(_files(srv, vid)["work/a.txt"], b"wo", "the volume has the truncated file")
        eq(os.stat(m.path("work/a.txt")).st_size, 2, "the mount's size")
    _during(srv, lambda c, p: c == "PUT" and p.endswith("/files/work/a.txt"),
            _code("os.truncate(os.path.join(d, 'work/a.txt'), 2)"), after)


def test_lookups_go_on_while_an_unlink_removes_the_file(srv):
    def after(vid, m):
        eq(sorted(_files(srv, vid)), ["work/a.txt", "work/c.txt"], "the volume after")
        eq(sorted(os.listdir(m.path("work"))), ["a.txt", "c.txt", "sub"], "the mount after")
    _during(srv, lambda c, p: c == "DELETE" and "/files/work/b.txt" in p,
            _code("os.unlink(os.path.join(d, 'work/b.txt'))"), after)


def test_lookups_go_on_while_a_rename_moves_the_file(srv):
    def after(vid, m):
        got = _files(srv, vid)
        eq(sorted(got), ["work/a.txt", "work/b.txt", "work/d.txt"], "the volume after")
        eq(got["work/d.txt"], b"work c", "the moved file's bytes")
        eq(sorted(os.listdir(m.path("work"))), ["a.txt", "b.txt", "d.txt", "sub"],
           "the mount after")
        eq(_read(m.path("work/d.txt")), "work c", "the mount reads it at its new name")
    _during(srv, lambda c, p: c == "POST" and p.split("?")[0].endswith("/move"),
            _code("os.rename(os.path.join(d, 'work/c.txt'), os.path.join(d, 'work/d.txt'))"),
            after)


def test_lookups_go_on_while_a_change_looks_a_node_up_first(srv):
    """The first base lookup of a node the layer makes (here the folder an
    unlink leaves in place, work/sub: a HEAD of it) is made with the lock
    dropped too."""
    def after(vid, m):
        names = [f["path"] for f in srv.list_files(vid)["files"]]
        check("work/sub/x.txt" not in names, "the volume after: %s" % names)
        eq(os.listdir(m.path("work/sub")), [], "the emptied folder stays in the mount")
    _during(srv, lambda c, p: c == "HEAD" and p.split("?")[0].endswith("/files/work/sub"),
            _code("os.unlink(os.path.join(d, 'work/sub/x.txt'))"), after,
            before=lambda m: os.stat(m.path("work/sub/x.txt")))


def test_zz_no_fuse_mount_left():
    eq([d for d in _made if _mounted(d)], [], "mounts of this module left mounted")
