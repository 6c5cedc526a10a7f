"""`coffer mount VOLUME DIR --server URL --key KEY` (API.md "coffer mount"): the view
through a running cofferd's HTTP API (src/view/source_http.c) with real FUSE, the same
behaviours as with --data: read-only at one seq (?seq=), --follow, a closed file one
version (a conflicting close EIO, the other side's bytes stay), rename one move, a
50 MiB file read by range, errors before anything is mounted, nothing left at the end."""

import hashlib
import os
import shutil
import socket
import subprocess
import time

import harness
from harness import check, contains, eq, expect
from test_view import Mount, _fuse_ok, _mounted, conflicting_close_is_eio, \
    editor_save_is_one_version, refused_change_is_dropped

TIMEOUT = 120


def _rss_kib(pid, field="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


_made = []  # every mount point this module made


class HttpMount(Mount):
    """`coffer mount VOL DIR --server URL --key KEY ...` in the background, with a
    TMPDIR of its own (where a read-write mount keeps its written bytes); key=False
    leaves --key out (the key then comes from env)."""

    def __init__(self, srv, vid, *flags, key=None, env=None):
        self.tmp = harness.tempfile.mkdtemp(prefix="coffer-htmp-")
        source = ["--server", srv.url]
        if key is not False:
            source += ["--key", key or srv.key]
        Mount.__init__(self, srv, vid, *flags, source=source, prefix="coffer-hmnt-",
                       made=_made, env=dict(os.environ, TMPDIR=self.tmp, **(env or {})))

    def left(self):
        """What the mount left in its TMPDIR (then removes the TMPDIR)."""
        out = sorted(os.listdir(self.tmp)) if os.path.isdir(self.tmp) else []
        shutil.rmtree(self.tmp, ignore_errors=True)
        return out


def test_read_only_is_one_seq_and_follow_sees_new_writes(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "docs/a.md", b"first")
    m = HttpMount(srv, vid, "--read-only")
    f = HttpMount(srv, vid, "--read-only", "--follow")
    try:
        eq(sorted(os.listdir(m.dir)), ["docs"], "top of the mount")
        eq(open(m.path("docs/a.md"), "rb").read(), b"first", "a file's bytes")
        eq(open(f.path("docs/a.md"), "rb").read(), b"first", "the same through --follow")
        srv.put_ok(vid, "docs/a.md", b"second")          # over HTTP, after the mount
        srv.put_ok(vid, "docs/new.md", b"new")
        eq(open(m.path("docs/a.md"), "rb").read(), b"first", "changed meanwhile: not seen")
        check(not os.path.exists(m.path("docs/new.md")), "made meanwhile: absent at the seq")
        until = time.time() + 10 * harness.SCALE
        while not os.path.exists(f.path("docs/new.md")) and time.time() < until:
            time.sleep(0.2)
        eq(open(f.path("docs/new.md"), "rb").read(), b"new", "--follow: a file made after")
        until = time.time() + 10 * harness.SCALE
        while open(f.path("docs/a.md"), "rb").read() != b"second" and time.time() < until:
            time.sleep(0.2)
        eq(open(f.path("docs/a.md"), "rb").read(), b"second", "--follow: a file changed after")
        try:
            open(m.path("docs/x.md"), "wb")
            raise AssertionError("a write in a read-only mount succeeded")
        except OSError as e:
            eq(e.errno, 30, "errno of a write (EROFS)")
    finally:
        m.end()
        f.end()
    check(not _mounted(m.dir) and not _mounted(f.dir), "unmounted")


def test_snapshot_mounted_read_only(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"at the snapshot")
    sid = srv.snapshot(vid)["id"]
    srv.put_ok(vid, "a.txt", b"later")
    srv.put_ok(vid, "b.txt", b"later too")
    m = HttpMount(srv, vid, "--snapshot", sid)
    try:
        eq(sorted(os.listdir(m.dir)), ["a.txt"], "the snapshot's files")
        eq(open(m.path("a.txt"), "rb").read(), b"at the snapshot", "the snapshot's bytes")
        try:
            open(m.path("c.txt"), "wb")
            raise AssertionError("a write in a snapshot mount succeeded")
        except OSError as e:
            eq(e.errno, 30, "errno of a write (EROFS)")
    finally:
        m.end()


def test_git_clone_of_a_tree_mounted_over_http(srv):
    vid = srv.create_volume()["id"]
    work = harness.tempfile.mkdtemp(prefix="coffer-hgit-")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x", HOME=work)
    m = HttpMount(srv, vid)
    try:
        repo = m.path("repo")
        for cmd in (["git", "init", "-q", repo],
                    ["sh", "-c", "echo hello > %s/f.txt && mkdir -p %s/sub/deep && "
                     "echo x > %s/sub/deep/g && seq 1 20000 > %s/sub/n.txt"
                     % (repo, repo, repo, repo)],
                    ["git", "-C", repo, "add", "-A"],
                    ["git", "-C", repo, "commit", "-qm", "first"],
                    ["git", "-C", repo, "mv", "f.txt", "renamed.txt"],
                    ["git", "-C", repo, "commit", "-qm", "second"]):
            r = subprocess.run(cmd, capture_output=True, env=env, timeout=60 * harness.SCALE)
            eq(r.returncode, 0, "%s: %s" % (cmd, r.stderr.decode()))
    finally:
        m.end()
    paths = [f["path"] for f in srv.list_files(vid)["files"]]
    contains(paths, "repo/renamed.txt", "the volume's files")
    contains(paths, "repo/.git/HEAD", "the volume's files")
    check("repo/f.txt" not in paths, "the renamed file is gone from the volume")
    # a fresh read-only mount of that tree, cloned
    m = HttpMount(srv, vid, "--read-only")
    try:
        r = subprocess.run(["git", "clone", "-q", m.path("repo"), work + "/c"],
                           capture_output=True, env=env, timeout=60 * harness.SCALE)
        eq(r.returncode, 0, "git clone: %s" % r.stderr.decode())
        eq(sorted(os.listdir(work + "/c")), [".git", "renamed.txt", "sub"], "the clone")
        r = subprocess.run(["git", "-C", work + "/c", "log", "--format=%s"],
                           capture_output=True, timeout=30 * harness.SCALE)
        eq(r.stdout.decode().split(), ["second", "first"], "history")
        r = subprocess.run(["git", "-C", m.path("repo"), "status", "--porcelain"],
                           capture_output=True, env=env, timeout=30 * harness.SCALE)
        eq((r.returncode, r.stdout), (0, b""), "git status in the mount: clean")
        eq(open(work + "/c/sub/n.txt", "rb").read(),
           expect(srv.get_file(vid, "repo/sub/n.txt"), 200).body, "a cloned file's bytes")
    finally:
        m.end()
        subprocess.run(["rm", "-rf", work])


def test_editor_save_remove_move_and_conflict_is_eio(srv):
    vid = srv.create_volume()["id"]
    v1 = srv.put_ok(vid, "notes.md", b"draft")["version"]
    srv.put_ok(vid, "dir/one.txt", b"1")
    srv.put_ok(vid, "gone.txt", b"bye")
    m = HttpMount(srv, vid)
    try:
        editor_save_is_one_version(srv, m, vid, v1)
        os.unlink(m.path("gone.txt"))
        eq(srv.get_file(vid, "gone.txt").status, 404, "unlink is a remove")
        os.rename(m.path("dir"), m.path("moved"))
        eq(srv.get_file(vid, "moved/one.txt").body, b"1", "a folder renamed is one move")
        eq(srv.get_file(vid, "dir/one.txt").status, 404, "nothing left at the old name")
        eq(open(m.path("moved/one.txt"), "rb").read(), b"1",
           "a file moved here reads at its new name (a version after the mounted seq)")
        # someone else writes while the file is open here: the close fails
        conflicting_close_is_eio(srv, m, vid, "notes.md")
        # and a new file made here lands as one version (If-None-Match: *)
        with open(m.path("fresh.txt"), "wb") as f:
            f.write(b"fresh")
        eq(srv.get_file(vid, "fresh.txt").body, b"fresh", "a new file")
    finally:
        err = m.end()
    eq(m.proc.returncode, 0, "coffer mount's exit status after fusermount3 -u")
    contains(err, "notes.md", "the conflict is reported on stderr")
    eq(m.left(), [], "the layer folder is gone at unmount")
    check(not _mounted(m.dir), "unmounted")


def test_fifty_mib_file_read_by_range(srv):
    vid = srv.create_volume()["id"]
    data = os.urandom(50 << 20)
    srv.put_ok(vid, "big.bin", data)
    m = HttpMount(srv, vid, "--read-only")
    try:
        os.stat(m.path("big.bin"))
        before, mount_before = _rss_kib(srv.proc.pid), _rss_kib(m.proc.pid)
        h = hashlib.sha256()
        with open(m.path("big.bin"), "rb") as f:
            f.seek(40 << 20)                              # a range in the middle first
            eq(f.read(1 << 20), data[40 << 20:41 << 20], "1 MiB at 40 MiB")
            f.seek(0)
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                h.update(b)
        eq(h.hexdigest(), hashlib.sha256(data).hexdigest(), "sha256 of the file read")
        if "asan" in os.path.basename(os.path.abspath(harness.BUILD)):
            return  # ASan's allocator keeps what is freed (quarantine): RSS says nothing
        grew = _rss_kib(srv.proc.pid) - before
        check(grew < 25 * 1024, "cofferd's RSS grew by %d KiB reading a 50 MiB file: it "
              "must stream ranges, not hold the file" % grew)
        peak = _rss_kib(m.proc.pid, "VmHWM") - mount_before
        check(peak < 25 * 1024, "coffer mount's peak RSS rose %d KiB over its %d KiB at "
              "mount for a 50 MiB file: it must read by range, never the whole file" % (
                  peak, mount_before))
    finally:
        m.end()


def test_errors_name_the_thing_and_mount_nothing(srv):
    _fuse_ok()
    vid = srv.create_volume()["id"]
    d = os.path.realpath(harness.tempfile.mkdtemp(prefix="coffer-hbad-"))
    exe = harness.bin_path("coffer")
    try:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # a port nobody listens on
        cases = [
            (["--server", "http://127.0.0.1:%d" % port, "--key", srv.key], vid,
             "cannot reach cofferd"),
            (["--server", srv.url, "--key", "ck_wrong"], vid, "refused the key"),
            (["--server", srv.url, "--key", srv.key], "vol_nosuchvolume", "vol_nosuchvolume"),
        ]
        for flags, v, says in cases:
            r = subprocess.run([exe, "mount", v, d] + flags, capture_output=True,
                               timeout=30 * harness.SCALE)
            err = r.stderr.decode("utf-8", "replace")
            check(r.returncode != 0, "%s: exit status 0" % flags)
            check(not harness.SANITIZER_PATTERNS.search(err), "sanitizers: %s" % err[-3000:])
            contains(err, says, "the message of %s" % flags)
            check(not _mounted(d), "%s left a mount" % flags)
        # the key from $COFFER_KEY, as for every other command
        m = HttpMount(srv, vid, key=False, env={"COFFER_KEY": srv.key})
        m.end()
    finally:
        os.rmdir(d)


def test_rate_limited_key_waits_and_goes_on():
    """A key over its --rate-limit gets 429 with Retry-After: the mount waits and
    tries again, so reading a folder of files still works (only slower)."""
    _fuse_ok()
    with harness.server(args=["--rate-limit", "5"]) as s:   # 5 a second, a burst of 10
        vid = s.create_volume()["id"]
        files = {"f%02d.txt" % i: b"x%d" % i for i in range(12)}
        for p, b in files.items():
            r = s.put_file(vid, p, b)
            while r.status == 429:
                time.sleep(1)
                r = s.put_file(vid, p, b)
            expect(r, 201)
        time.sleep(2.5)  # the bucket full again
        m = HttpMount(s, vid, "--read-only")
        try:
            got = {p: open(m.path(p), "rb").read() for p in sorted(os.listdir(m.dir))}
        finally:
            m.end()
        eq(got, files, "every file read through a rate-limited key")


def test_a_refused_change_is_dropped_and_said(srv):
    """Issue 32.10 over HTTP (test_view.refused_change_is_dropped): a refused close's
    bytes are dropped from the mount, and stderr says so."""
    refused_change_is_dropped(srv, lambda vid: HttpMount(srv, vid))


def test_zz_no_fuse_mount_left(srv):
    eq([d for d in _made if _mounted(d)], [], "mounts of this module left mounted")
    eq([d for d in _made if os.path.exists(d)], [], "mount points left behind")
