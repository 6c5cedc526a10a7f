"""No I/O under a view's mutex (issue 36 item 5; docs/design.md, Views, "No I/O
under the view's mutex"): a large file opened for writing is copied into the
layer with the view's lock dropped, so lookups, listings and reads of other files
in the same view go on meanwhile; two writers of one file copy it once; a rename
made while the copy runs wins (the copy is thrown away and the open answers what
is at its path then).

The copy is made to wait by events, never by time: `coffer mount --server` reads
the volume through a small HTTP proxy of this test that holds every ranged GET of
the big file's bytes until the test lets them go."""

import http.client
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse

import harness
from harness import check, eq
from test_view import Mount, _mounted

TIMEOUT = 180
BIG = 64 << 20

_made = []  # every mount point this module made


class _Proxy:
    """Forwards every request to cofferd; a GET with a Range header whose path
    holds `hold` waits at `gate` (and sets `held`). `ranged` counts the bytes of
    those answers."""

    def __init__(self, target, hold):
        u = urllib.parse.urlsplit(target)
        self.gate = threading.Event()
        self.held = threading.Event()
        self.ranged = 0
        self.mu = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                hit = self.command == "GET" and hold in self.path and "Range" in self.headers
                if hit:
                    proxy.held.set()
                    proxy.gate.wait()
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
                try:
                    c.request(self.command, self.path, body=body, headers={
                        k: v for k, v in self.headers.items()
                        if k.lower() not in ("connection", "expect", "host",
                                             "content-length", "transfer-encoding")})
                    r = c.getresponse()
                    data = r.read()
                finally:
                    c.close()
                if hit:
                    with proxy.mu:
                        proxy.ranged += len(data)
                self.send_response(r.status, r.reason)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "keep-alive", "transfer-encoding",
                                         "content-length"):
                        self.send_header(k, v)
                length = r.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


def _bg(code, *args):
    """A Python process running `code` (argv: args) in the background."""
    return subprocess.Popen([sys.executable, "-c", code] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


# opens argv[1] for writing, writes argv[3] at offset argv[2], closes; then the
# marker argv[4] (what it got: "ok" or the errno's name)
WRITER = r"""
import errno, os, sys
try:
    with open(sys.argv[1], "r+b") as f:
        f.seek(int(sys.argv[2]))
        f.write(sys.argv[3].encode())
    got = "ok"
except OSError as e:
    got = errno.errorcode.get(e.errno, str(e.errno))
with open(sys.argv[4], "w") as m:
    m.write(got)
"""

# lookups, listings, attributes and another file's bytes in the mount argv[1];
# then the marker argv[2] holding what it saw
READER = r"""
import json, os, sys
d = sys.argv[1]
seen = {"top": sorted(os.listdir(d)), "docs": sorted(os.listdir(os.path.join(d, "docs")))}
seen["sizes"] = [os.stat(os.path.join(d, "docs", n)).st_size for n in seen["docs"]]
seen["big"] = os.stat(os.path.join(d, "big.bin")).st_size
seen["f0"] = open(os.path.join(d, "docs", "f0.txt")).read()
with open(sys.argv[2], "w") as m:
    json.dump(seen, m)
"""


def _setup(srv, tmp):
    vid = srv.create_volume()["id"]
    data = os.urandom(BIG)
    srv.put_ok(vid, "big.bin", data)
    for i in range(20):
        srv.put_ok(vid, "docs/f%d.txt" % i, b"file %d" % i)
    proxy = _Proxy(srv.url, "big.bin")
    try:
        m = Mount(srv, vid, source=["--server", proxy.url, "--key", srv.key], made=_made,
                  env=dict(os.environ, TMPDIR=tmp))
    except BaseException:
        proxy.close()
        raise
    return vid, data, proxy, m


def _read(path):
    with open(path) as f:
        return f.read()


def test_lookups_go_on_while_a_large_file_is_copied_up_and_two_writers_copy_once(srv):
    tmp = harness.tempfile.mkdtemp(prefix="coffer-cu-")
    vid, data, proxy, m = _setup(srv, tmp)
    procs = []
    try:
        os.stat(m.path("big.bin"))
        w1, w2, rd = (os.path.join(tmp, n) for n in ("w1", "w2", "reader"))
        procs.append(_bg(WRITER, m.path("big.bin"), "0", "A", w1))
        harness.until(proxy.held.is_set, "the copy of big.bin began (its bytes asked)",
                      timeout=60)
        procs.append(_bg(WRITER, m.path("big.bin"), "1", "B", w2))
        procs.append(_bg(READER, m.dir, rd))
        # the reader ends while the copy still waits at the proxy: nothing of it
        # queued behind the copy
        harness.until(lambda: os.path.exists(rd) and os.path.getsize(rd) > 0,
                      "the reader's lookups, listings and reads end during the copy",
                      timeout=60)
        check(not os.path.exists(w1) and not os.path.exists(w2),
              "no writer finished before the copy was let go")
        seen = json.loads(_read(rd))
        eq(seen["top"], ["big.bin", "docs"], "top listed during the copy")
        eq(seen["docs"], sorted("f%d.txt" % i for i in range(20)), "docs listed")
        eq(seen["sizes"], [len(b"file %d" % int(n[1:-4])) for n in seen["docs"]], "sizes")
        eq(seen["big"], BIG, "the file being copied has its size meanwhile")
        eq(seen["f0"], "file 0", "another file's bytes read during the copy")
        proxy.gate.set()
        for p in procs:
            p.wait(timeout=120)
        eq((_read(w1), _read(w2)), ("ok", "ok"), "both writers")
        check(proxy.ranged < BIG * 3 // 2,
              "big.bin copied once for two writers (%d bytes read of %d)" % (
                  proxy.ranged, BIG))
        want = b"AB" + data[2:]
        got = srv.get_file(vid, "big.bin").body
        check(got == want, "the volume has both writers' bytes over the original "
              "(%d bytes, first %r)" % (len(got), got[:2]))
        with open(m.path("big.bin"), "rb") as f:
            check(f.read(4) == b"AB" + data[2:4], "the mount reads them too")
    finally:
        proxy.gate.set()
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
            p.stderr.close()
        m.end()
        proxy.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_rename_during_a_copy_up_wins_and_the_copy_is_dropped(srv):
    tmp = harness.tempfile.mkdtemp(prefix="coffer-cu-")
    vid, data, proxy, m = _setup(srv, tmp)
    procs = []
    try:
        os.stat(m.path("big.bin"))
        w1, mv = os.path.join(tmp, "w1"), os.path.join(tmp, "mv")
        procs.append(_bg(WRITER, m.path("big.bin"), "0", "A", w1))
        harness.until(proxy.held.is_set, "the copy of big.bin began", timeout=60)
        procs.append(_bg("import os, sys; os.rename(sys.argv[1], sys.argv[2]); "
                         "open(sys.argv[3], 'w').write('ok')",
                         m.path("big.bin"), m.path("moved.bin"), mv))
        harness.until(lambda: os.path.exists(mv) and os.path.getsize(mv) > 0,
                      "the rename ends during the copy", timeout=60)
        check(not os.path.exists(w1), "the writer did not finish before the copy was let go")
        proxy.gate.set()
        procs[0].wait(timeout=120)
        # the open is answered after the rename: nothing is at its path now
        eq(_read(w1), "ENOENT", "the writer's open of the renamed file")
        eq(sorted(os.listdir(m.dir)), ["docs", "moved.bin"], "the mount after")
        names = sorted(f["path"] for f in srv.list_files(vid)["files"])
        check("moved.bin" in names and "big.bin" not in names, "the volume after: %s" % names)
        check(srv.get_file(vid, "moved.bin").body == data, "moved.bin has the original bytes")
    finally:
        proxy.gate.set()
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
            p.stderr.close()
        m.end()
        proxy.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_zz_no_fuse_mount_left():
    eq([d for d in _made if _mounted(d)], [], "mounts of this module left mounted")
