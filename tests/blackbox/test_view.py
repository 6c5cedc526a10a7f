"""Views of volumes as directories (FUSE): `coffer mount` and the agent's files
in confined calls (API.md "What a call sees", "coffer mount"). Real FUSE, real
bubblewrap. Every mount a test makes is lazily unmounted in a `finally`."""

import os
import socket
import subprocess
import time

import harness
from harness import check, contains, eq, expect
from turnlib import call, new_id, ok
from turnlib import new_turn as _new_turn

TURNS = []  # every turn made here: test_zz ends them, then nothing is left mounted


def new_turn(srv, aid=None, **kw):
    t = _new_turn(srv, aid, **kw)
    TURNS.append(t["id"])
    return t

TIMEOUT = 90


_probe = {}


def _fuse_ok(srv=None):
    """Skips (naming why) where this user cannot mount FUSE: no /dev/fuse, or
    not root and neither /dev/fuse nor a setuid fusermount3 works for it."""
    if not os.path.exists("/dev/fuse"):
        harness.skip("no /dev/fuse on this machine")
    if harness.IS_ROOT or os.access("/dev/fuse", os.R_OK | os.W_OK):
        return
    if "ok" not in _probe:
        d = harness.tempfile.mkdtemp(prefix="coffer-probe-")
        a, b = socket.socketpair()
        try:
            r = subprocess.run(["fusermount3", "-o", "nosuid,nodev", "--", d],
                               env=dict(os.environ, _FUSE_COMMFD=str(a.fileno())),
                               pass_fds=[a.fileno()], capture_output=True, timeout=10)
        finally:
            a.close()
            b.close()
            subprocess.run(["fusermount3", "-u", "-z", d], capture_output=True)
            os.rmdir(d)
        _probe["ok"] = r.returncode == 0
        _probe["why"] = r.stderr.decode("utf-8", "replace").strip()
    if not _probe["ok"]:
        harness.skip("needs root here: FUSE as another user goes through fusermount3, "
                     "which cannot open /dev/fuse on this machine (%s)" % _probe["why"])


def _mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


class Mount:
    """`coffer mount VOL DIR SOURCE... FLAGS...` in the background: SOURCE is `srv`
    (`--server URL --key KEY`) unless given (`--data DATA` only for a data dir no
    cofferd serves: a served one is refused); `made`, a list, gets the mount point
    before the mount starts."""

    def __init__(self, srv, vid, *flags, source=None, env=None, prefix="coffer-mnt-",
                 made=None):
        _fuse_ok()
        self.dir = os.path.realpath(harness.tempfile.mkdtemp(prefix=prefix))
        if made is not None:
            made.append(self.dir)
        if source is None:
            source = ["--server", srv.url, "--key", srv.key]
        self.proc = subprocess.Popen([harness.bin_path("coffer"), "mount", vid, self.dir] +
                                     list(source) + list(flags), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        until = time.time() + 20 * harness.SCALE
        while not _mounted(self.dir):
            if self.proc.poll() is not None or time.time() > until:
                err = self.proc.communicate(timeout=5)[1] if self.proc.poll() is not None \
                    else b""
                self.end()
                raise AssertionError("coffer mount %s did not mount: %r" % (source[0], err))
            time.sleep(0.05)

    def path(self, rel):
        return os.path.join(self.dir, rel)

    def end(self):
        """Unmounts, waits for the mount's process, removes the mount point; returns
        what the process said on stderr (a sanitizer report fails the test)."""
        subprocess.run(["fusermount3", "-u", "-z", self.dir], capture_output=True)
        if _mounted(self.dir):
            subprocess.run(["umount", "-l", self.dir], capture_output=True)
        try:
            self.proc.wait(timeout=10 * harness.SCALE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            os.rmdir(self.dir)
        except OSError:
            pass
        err = self.proc.stderr.read().decode("utf-8", "replace") if self.proc.stderr else ""
        if self.proc.stderr:
            self.proc.stderr.close()
            self.proc.stdout.close()
            self.proc.stderr = None
        if harness.SANITIZER_PATTERNS.search(err):
            raise AssertionError("coffer mount reported under the sanitizers:\n" + err[-4000:])
        return err


def editor_save_is_one_version(srv, m, vid, v1):
    """An editor's save of notes.md (version v1 of volume `vid`) in mount `m`: a
    temp file, then a rename over the original; it lands as one new version and
    leaves no temp file."""
    with open(m.path(".notes.md.swp"), "wb") as f:
        f.write(b"saved by the editor")
    os.rename(m.path(".notes.md.swp"), m.path("notes.md"))
    r = expect(srv.get_file(vid, "notes.md"), 200)
    eq(r.body, b"saved by the editor", "the saved bytes")
    check(int(r.header("etag").strip('"')) > v1, "a new version")
    eq(srv.get_file(vid, ".notes.md.swp").status, 404, "no temp file left")


def conflicting_close_is_eio(srv, m, vid, path):
    """Someone else writes `path` of volume `vid` while it is open in mount `m`:
    the close here fails with EIO and the other side's bytes stay."""
    f = open(m.path(path), "r+b")
    srv.put_ok(vid, path, b"the other side")
    f.write(b"mine")
    try:
        f.close()
        raise AssertionError("a conflicting close succeeded")
    except OSError as e:
        eq(e.errno, 5, "errno of a conflicting close (EIO)")
    eq(srv.get_file(vid, path).body, b"the other side", "the other side's bytes stay")


def refused_change_is_dropped(srv, mount):
    """Issue 32.10: a close the volume refused (here a 412: someone else wrote the file
    meanwhile) failed with EIO, but the mount went on showing the refused bytes as if
    they were written (they stayed in its layer). Now the change is dropped and stderr
    says so: the file reads as this mount last saw it (the version it landed itself
    before, else the mounted one), never as the refused bytes; a new file refused the
    same way (If-None-Match: * lost to another writer) is absent again. `mount(vid)`
    makes a read-write mount of volume vid; it is ended here."""
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "notes.md", b"draft")
    srv.put_ok(vid, "other.md", b"draft")
    m = mount(vid)
    try:
        conflicting_close_is_eio(srv, m, vid, "notes.md")
        eq(open(m.path("notes.md"), "rb").read(), b"draft",
           "the refused bytes are not shown as written: the mounted version")
        with open(m.path("other.md"), "wb") as f:      # landed by this mount
            f.write(b"landed here")
        conflicting_close_is_eio(srv, m, vid, "other.md")
        eq(open(m.path("other.md"), "rb").read(), b"landed here",
           "the refused bytes are not shown: the version this mount landed")
        f = open(m.path("new.md"), "wb")
        srv.put_ok(vid, "new.md", b"theirs")
        f.write(b"mine too")
        try:
            f.close()
            raise AssertionError("a refused close succeeded")
        except OSError as e:
            eq(e.errno, 5, "EIO")
        check(not os.path.exists(m.path("new.md")), "the refused new file is not shown")
        eq(srv.get_file(vid, "new.md").body, b"theirs", "the other side's bytes stay")
    finally:
        err = m.end()
    for name in ("notes.md", "other.md", "new.md"):
        contains(err, "the change to '%s' is dropped" % name, "stderr says it was dropped")


# ---------------------------------------------------------------- coffer mount


def test_mount_read_only_is_one_seq(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "docs/a.md", b"first")
    big = os.urandom(300000)
    srv.put_ok(vid, "big.bin", big)
    m = Mount(srv, vid, "--read-only")
    try:
        eq(sorted(os.listdir(m.dir)), ["big.bin", "docs"], "top of the mount")
        eq(open(m.path("docs/a.md"), "rb").read(), b"first", "a file's bytes")
        eq(open(m.path("big.bin"), "rb").read(), big, "a blob read by range")
        # written after the mount: the view stays at its seq
        srv.put_ok(vid, "docs/a.md", b"second")
        srv.put_ok(vid, "docs/new.md", b"new")
        eq(open(m.path("docs/a.md"), "rb").read(), b"first", "a file changed meanwhile")
        check(not os.path.exists(m.path("docs/new.md")), "a file made meanwhile is absent")
        try:
            open(m.path("docs/x.md"), "wb")
            raise AssertionError("a write in a read-only mount succeeded")
        except OSError as e:
            eq(e.errno, 30, "errno of a write (EROFS)")
        check(not os.path.islink(m.path("docs")), "no links")
    finally:
        m.end()
    check(not _mounted(m.dir), "unmounted")


def test_mount_reads_a_blob_by_range_spliced_or_copied():
    # in process (--data, on a data dir no cofferd serves) a local blob's bytes
    # go to the kernel by splice (and the disk is asked 4 MiB ahead); with
    # COFFER_BLOB_NO_FD=1 the store offers no fd (as S3) and they are copied:
    # both give the same bytes at every edge, and a file written through a
    # read-write mount reads back from its layer
    _fuse_ok()
    srv = harness.Server()
    try:
        _spliced_or_copied(srv)
    finally:
        srv.close()


def _spliced_or_copied(srv):
    vid = srv.create_volume()["id"]
    size = (9 << 20) + 12345  # past two read-ahead windows, not page aligned
    big = os.urandom(size)
    srv.put_ok(vid, "big.bin", big)
    eq(srv.stop(), 0, "cofferd stopped")
    data = ["--data", srv.data]
    for env in (None, dict(os.environ, COFFER_BLOB_NO_FD="1")):
        way = "copied" if env else "spliced"
        m = Mount(srv, vid, "--read-only", source=data, env=env)
        try:
            with open(m.path("big.bin"), "rb") as f:
                eq(harness.sha256(f.read()), harness.sha256(big), "%s: all of it" % way)
                for off, n in ((0, 1), (4095, 3), ((4 << 20) - 7, 70000), (size - 10, 100),
                               (size - 1, 1), (size, 10), (size + 4096, 10)):
                    eq(os.pread(f.fileno(), n, off), big[off:off + n],
                       "%s: %d bytes at %d" % (way, n, off))
        finally:
            m.end()
    m = Mount(srv, vid, source=data)
    try:
        mine = os.urandom((1 << 20) + 3)
        with open(m.path("mine.bin"), "wb") as f:
            f.write(mine)
        with open(m.path("mine.bin"), "rb") as f:
            eq(f.read(), mine, "a file written through the mount, read back")
        with open(m.path("big.bin"), "r+b") as f:
            f.seek(size - 3)
            f.write(b"END")
            f.flush()
            f.seek(size - 5)
            eq(f.read(), big[size - 5:size - 3] + b"END", "a changed blob, read from its layer")
    finally:
        m.end()
    srv.start()
    eq(srv.get_file(vid, "mine.bin").body, mine, "landed")


def test_mount_data_refuses_a_dir_a_cofferd_serves(srv):
    """Issue 39 item 4: an in-process mount's commits would pass under a running
    cofferd's caches and change waits, so `--data` takes DATA/lock as a cofferd does:
    a served dir is refused, naming the server's pid and the way through it, and a
    cofferd does not start on a dir that is mounted."""
    _fuse_ok()
    vid = srv.create_volume()["id"]
    d = os.path.realpath(harness.tempfile.mkdtemp(prefix="coffer-mnt-busy-"))
    try:
        r = subprocess.run([harness.bin_path("coffer"), "mount", vid, d, "--data", srv.data],
                           capture_output=True, timeout=30 * harness.SCALE)
        err = r.stderr.decode("utf-8", "replace")
        eq(r.returncode, 1, "exit code (stderr %r)" % err)
        contains(err, "in use by another cofferd (pid %d)" % srv.proc.pid, "names the server")
        contains(err, "leave out --data", "says how to mount it")
        check(not _mounted(d), "nothing mounted")
    finally:
        os.rmdir(d)
    other = harness.Server()
    try:
        v2 = other.create_volume()["id"]
        other.put_ok(v2, "a.txt", b"mounted")
        eq(other.stop(), 0, "cofferd stopped")
        m = Mount(other, v2, "--read-only", source=["--data", other.data])
        try:
            eq(open(m.path("a.txt"), "rb").read(), b"mounted", "the dir mounts once free")
            p = subprocess.run([harness.bin_path("cofferd"), "--data", other.data, "--listen",
                                "127.0.0.1:0"] + other.args, capture_output=True,
                               timeout=30 * harness.SCALE)
            check(p.returncode != 0, "a cofferd on a mounted dir is refused")
            contains(p.stderr.decode("utf-8", "replace"), "in use by another cofferd",
                     "cofferd's message")
        finally:
            m.end()
        other.start()
    finally:
        other.close()


def test_mount_follow_shows_new_seqs(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"one")
    m = Mount(srv, vid, "--read-only", "--follow")
    try:
        eq(open(m.path("a.txt"), "rb").read(), b"one", "before")
        srv.put_ok(vid, "b.txt", b"two")
        until = time.time() + 5
        while not os.path.exists(m.path("b.txt")) and time.time() < until:
            time.sleep(0.2)
        eq(open(m.path("b.txt"), "rb").read(), b"two", "a file made after the mount")
    finally:
        m.end()


def test_mount_git_init_add_commit_and_clone(srv):
    vid = srv.create_volume()["id"]
    m = Mount(srv, vid)
    clone = harness.tempfile.mkdtemp(prefix="coffer-clone-")
    try:
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x", HOME=clone)
        repo = m.path("repo")
        for cmd in (["git", "init", "-q", repo],
                    ["sh", "-c", "echo hello > %s/f.txt && mkdir %s/sub && echo x > %s/sub/g"
                     % (repo, repo, repo)],
                    ["git", "-C", repo, "add", "-A"],
                    ["git", "-C", repo, "commit", "-qm", "first"],
                    ["git", "-C", repo, "mv", "f.txt", "renamed.txt"],
                    ["git", "-C", repo, "commit", "-qm", "second"],
                    ["git", "clone", "-q", repo, clone + "/c"]):
            r = subprocess.run(cmd, capture_output=True, env=env, timeout=60)
            eq(r.returncode, 0, "%s: %s" % (cmd, r.stderr.decode()))
        eq(sorted(os.listdir(clone + "/c")), [".git", "renamed.txt", "sub"], "the clone")
        r = subprocess.run(["git", "-C", clone + "/c", "log", "--format=%s"],
                           capture_output=True, timeout=30)
        eq(r.stdout.decode().split(), ["second", "first"], "history")
        paths = [f["path"] for f in srv.list_files(vid)["files"]]
        contains(paths, "repo/renamed.txt", "the volume's files")
        contains(paths, "repo/.git/HEAD", "the volume's files")
        check("repo/f.txt" not in paths, "the renamed file is gone from the volume")
    finally:
        m.end()
        subprocess.run(["rm", "-rf", clone])


def test_mount_tar_x_and_chown_change_no_owner(srv):
    """Volumes keep no owners: a chown naming the caller's own ids changes nothing
    and passes; root's `tar x` (which chowns every file it makes) succeeds; a
    chown by someone else naming another owner is EPERM (as root: skipped)."""
    vid = srv.create_volume()["id"]
    m = Mount(srv, vid)
    work = harness.tempfile.mkdtemp(prefix="coffer-tar-")
    try:
        src = os.path.join(work, "src")
        os.makedirs(src + "/p/q")
        for name in ("p/a.txt", "p/q/b.txt"):
            with open(os.path.join(src, name), "w") as f:
                f.write(name + "\n")
        tar = os.path.join(work, "t.tar")
        # numeric owner 4321: root's tar x chowns each file to it, anyone else's does not
        subprocess.run(["tar", "cf", tar, "--owner=4321", "--group=4321", "-C", src, "p"],
                       check=True, timeout=30)
        os.makedirs(m.path("x"))
        r = subprocess.run(["tar", "xf", tar, "-C", m.path("x")], capture_output=True,
                           timeout=60)
        eq(r.returncode, 0, "tar x into the mount: %s" % r.stderr.decode())
        eq(open(m.path("x/p/q/b.txt")).read(), "p/q/b.txt\n", "the file tar made")
        st = os.stat(m.path("x/p/a.txt"))
        eq((st.st_uid, st.st_gid), (os.getuid(), os.getgid()), "owner shown: the caller's")
        os.chown(m.path("x/p/a.txt"), os.getuid(), os.getgid())
        os.chown(m.path("x/p/a.txt"), -1, -1)
        if harness.IS_ROOT:
            os.chown(m.path("x/p/a.txt"), 4321, 4321)
            st = os.stat(m.path("x/p/a.txt"))
            eq((st.st_uid, st.st_gid), (0, 0), "root's chown changed no owner")
        else:
            try:
                os.chown(m.path("x/p/a.txt"), os.getuid() + 1, -1)
                raise AssertionError("chown to another user passed")
            except PermissionError:
                pass
        paths = sorted(f["path"] for f in srv.list_files(vid)["files"])
        eq(paths, ["x/p/a.txt", "x/p/q/b.txt"], "the volume's files")
    finally:
        m.end()
        subprocess.run(["rm", "-rf", work])


def test_mount_editor_save_is_one_version_and_conflict_is_eio(srv):
    vid = srv.create_volume()["id"]
    v1 = srv.put_ok(vid, "notes.md", b"draft")["version"]
    m = Mount(srv, vid)
    try:
        editor_save_is_one_version(srv, m, vid, v1)
        # someone else writes while the file is open here: the close fails
        conflicting_close_is_eio(srv, m, vid, "notes.md")
    finally:
        m.end()


def test_mount_drops_a_refused_change_and_says_so(srv):
    refused_change_is_dropped(srv, lambda vid: Mount(srv, vid))


def test_mount_file_removed_while_open_keeps_its_handle(srv):
    # `coffer mount` read-write keeps its opens: a file removed while open is
    # still written and read through its handle, and the kernel's attribute
    # check by handle (libfuse gives no path for it) once crashed the mount
    vid = srv.create_volume()["id"]
    m = Mount(srv, vid)
    try:
        with open(m.path("tmp"), "w+") as g:
            os.unlink(m.path("tmp"))
            g.write("gone")
            g.flush()
            g.seek(0)
            eq(g.read(), "gone", "read back through the handle")
        with open(m.path("after.txt"), "w") as f:
            f.write("alive")
        eq(srv.get_file(vid, "after.txt").body, b"alive", "the mount still serves")
        eq(srv.get_file(vid, "tmp").status, 404, "the removed file is not stored")
    finally:
        m.end()


# ---------------------------------------------------------------- calls


def _agent(srv, **body):
    aid = new_id("va")
    expect(srv.put("/v1/agents/%s" % aid, json=body), 201)
    ws = expect(srv.get("/v1/agents/%s" % aid), 200).json()["workspaceVolumeId"]
    return aid, ws


def test_call_greps_and_edits_mounts_one_seq(srv):
    _fuse_ok(srv)
    docs = srv.create_volume()["id"]
    srv.put_ok(docs, "species/fox.md", b"the fox is red\n")
    srv.put_ok(docs, "species/owl.md", b"the owl hoots\n")
    aid, ws = _agent(srv, mounts=[{"workspace": True},
                                  {"volumeId": docs, "path": "/docs", "mode": "ro"}])
    old = srv.put_ok(ws, "a.md", b"hello world\n")
    seq0 = srv.seq(ws)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "grep -l red /docs/species/*.md; "
             "sed -i s/world/there/ /workspace/a.md; echo new > /workspace/b.md; "
             "echo no > /docs/x.md 2>&1 || true")
    eq(out["stdout"].split(), ["/docs/species/fox.md"], "grep over /docs")
    contains(out["stderr"], "Read-only file system", "a write to /docs (EROFS)")
    eq(out["committed"], [{"volumeId": ws, "path": "/workspace", "seq": seq0 + 1,
                           "written": 2, "removed": 0}], "committed")
    eq(srv.seq(ws), seq0 + 1, "one seq for the call")
    r = expect(srv.get_file(ws, "a.md"), 200)
    eq(r.body, b"hello there\n", "the edit landed")
    eq(r.header("etag"), '"%d"' % (seq0 + 1), "its version")
    eq(srv.get_file(ws, "b.md").body, b"new\n", "a new file")
    eq(srv.seq(docs), 2, "the ro volume is unchanged")
    check(old["version"] < seq0 + 1, "versions move")
    # a file the call wrote counts as written by the agent: edit needs no read
    r = expect(srv.post("/v1/agents/%s/tools/edit" % aid, json={
        "path": "/workspace/b.md", "oldString": "new", "newString": "newer"}), 200).json()
    check(r["ok"], "edit after the call's write: %r" % r)
    # a file the call only read does not count as read by the model
    srv.put_ok(ws, "r.md", b"read me\n")
    ok(srv, t["id"], "cat /workspace/r.md")
    r = expect(srv.post("/v1/agents/%s/tools/edit" % aid, json={
        "path": "/workspace/r.md", "oldString": "read", "newString": "edit"}), 200).json()
    check(not r["ok"] and "read it first" in r["output"], "edit of a file only the call "
          "read: %r" % r)


def _call_racing_puts(srv, tid, command, vid, puts):
    """Runs `command` (it should sleep 2 s before writing) in a call of turn
    `tid` while `puts` ({path: bytes}) land in volume `vid` a second in: the
    call loses the race for those paths. The call's answer."""
    import threading
    res = {}

    def run():
        res["out"] = call(srv, tid, command)
    th = threading.Thread(target=run)
    th.start()
    time.sleep(1)
    for path, data in puts.items():
        srv.put_ok(vid, path, data)
    th.join(60)
    return res["out"]


def test_call_does_not_see_writes_made_meanwhile_and_reports_conflict(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_ok(ws, "shared.md", b"before\n")
    t = new_turn(srv, aid)
    out = _call_racing_puts(srv, t["id"], "sleep 2; cat /workspace/shared.md; "
                            "echo mine > /workspace/shared.md; echo ok > /workspace/other.md",
                            ws, {"shared.md": b"theirs\n"})
    eq(out["stdout"], "before\n", "the call read the seq it began at")
    eq([c["path"] for c in out.get("conflicts", [])], ["/workspace/shared.md"], "conflicts")
    eq(srv.get_file(ws, "shared.md").body, b"theirs\n", "the other side's bytes stay")
    eq(srv.get_file(ws, "other.md").body, b"ok\n", "the rest landed")
    out = ok(srv, t["id"], "cat /tmp/.conflicts/workspace/shared.md")
    eq(out["stdout"], "mine\n", "the call's version is kept in the workspace")


def test_conflict_copy_never_follows_a_link_the_call_made(srv):
    """Issue 32 item 1: the call's /tmp is its own, so .conflicts/workspace (and
    any folder below it) may be a link the call planted to a host folder. The
    kept copy of a conflicting file must never be written, made or chowned
    through it (before the fix cofferd renamed the call's bytes into the host
    folder, as its own user)."""
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_ok(ws, "shared.md", b"before\n")
    srv.put_ok(ws, "deep/inner/x.md", b"before\n")
    host = os.path.realpath(harness.tempfile.mkdtemp(prefix="coffer-host-"))
    host2 = os.path.realpath(harness.tempfile.mkdtemp(prefix="coffer-host2-"))
    os.chmod(host, 0o777)
    os.chmod(host2, 0o777)
    t = new_turn(srv, aid)
    out = _call_racing_puts(
        srv, t["id"], "mkdir -p /tmp/.conflicts/x && ln -s %s /tmp/.conflicts/workspace && "
        "mkdir -p /tmp/.conflicts/x/workspace/deep && "
        "ln -s %s /tmp/.conflicts/x/workspace/deep/inner && "
        "sleep 2; echo mine > /workspace/shared.md; "
        "echo mine > /workspace/deep/inner/x.md" % (host, host2),
        ws, {"shared.md": b"theirs\n", "deep/inner/x.md": b"theirs\n"})
    eq(sorted(c["path"] for c in out.get("conflicts", [])),
       ["/workspace/deep/inner/x.md", "/workspace/shared.md"], "conflicts")
    eq(os.listdir(host), [], "nothing written through the link to a host folder")
    eq(os.listdir(host2), [], "nothing written through a link deeper down")
    eq(srv.get_file(ws, "shared.md").body, b"theirs\n", "the other side's bytes stay")
    # the call's link is still its own link, untouched
    out = ok(srv, t["id"], "readlink /tmp/.conflicts/workspace")
    eq(out["stdout"], host + "\n", "the call's link stays as it was")


def test_conflict_copy_is_kept_beneath_a_folder_the_call_made(srv):
    """A .conflicts the call made itself (a real folder) is used, and the kept
    copy lands beneath it, owned by the call's user where cofferd is root."""
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_ok(ws, "a/b/c.md", b"before\n")
    t = new_turn(srv, aid)
    out = _call_racing_puts(srv, t["id"], "mkdir -p /tmp/.conflicts/workspace/a; sleep 2; "
                            "echo mine > /workspace/a/b/c.md", ws, {"a/b/c.md": b"theirs\n"})
    eq([c["path"] for c in out.get("conflicts", [])], ["/workspace/a/b/c.md"], "conflicts")
    out = ok(srv, t["id"], "cat /tmp/.conflicts/workspace/a/b/c.md; "
             "test -O /tmp/.conflicts/workspace/a/b/c.md && test -O /tmp/.conflicts/workspace/a/b "
             "&& echo owned")
    eq(out["stdout"], "mine\nowned\n", "the call's version is kept, and the call owns it")


def test_call_stopped_by_its_timeout_commits_nothing(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    seq0 = srv.seq(ws)
    t = new_turn(srv, aid)
    out = call(srv, t["id"], "echo x > /workspace/t.txt; sleep 30", timeoutSeconds=1)
    check(out.get("timedOut"), "timed out: %r" % out)
    check(not out.get("committed"), "nothing committed: %r" % out.get("committed"))
    eq(srv.seq(ws), seq0, "the volume's seq")
    eq(srv.get_file(ws, "t.txt").status, 404, "the file is absent")


def test_call_excluded_file_absent_and_not_creatable(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv, exclude=["secret/"])
    srv.put_ok(ws, ".env", b"KEY=1\n")
    srv.put_ok(ws, "secret/k.txt", b"k\n")
    srv.put_ok(ws, "ok.txt", b"fine\n")
    t = new_turn(srv, aid)
    out = call(srv, t["id"], "ls -a /workspace; cat /workspace/.env; "
               "echo s > /workspace/.env && echo made; mkdir /workspace/secret && echo made")
    names = out["stdout"].split()
    contains(names, "ok.txt", "listing")
    check(".env" not in names and "secret" not in names, "excluded entries absent: %r" % names)
    check("made" not in names, "an excluded name cannot be made: %r" % out)
    eq(srv.get_file(ws, ".env").body, b"KEY=1\n", ".env untouched")


def test_call_python_mmap_reads(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    data = bytes(range(256)) * 400
    srv.put_ok(ws, "blob.bin", data)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "python3 -c 'import mmap,hashlib;f=open(\"/workspace/blob.bin\",\"rb\");"
             "m=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ);print(hashlib.sha256(m[:]).hexdigest())'")
    eq(out["stdout"].strip(), harness.sha256(data), "sha256 through mmap")


def test_two_turns_on_one_volume(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t1, t2 = new_turn(srv, aid, user="u1"), new_turn(srv, aid, user="u2")
    a = ok(srv, t1["id"], "echo one > /workspace/one.txt")
    b = ok(srv, t2["id"], "ls /workspace; echo two > /workspace/two.txt")
    eq(b["stdout"].split(), ["one.txt"], "the second turn sees the first's commit")
    check(b["committed"][0]["seq"] == a["committed"][0]["seq"] + 1, "two seqs")
    eq(srv.get_file(ws, "one.txt").body, b"one\n", "first")
    eq(srv.get_file(ws, "two.txt").body, b"two\n", "second")


def test_a_call_ends_while_a_later_call_pins_its_view(srv):
    # a call started while another call's view is mounted copies that mount
    # into its own mount namespace (unshare, bwrap), where the other call's
    # lazy unmount never reaches it: the earlier call must still end (and
    # commit) while the later one runs, not wait for it
    _fuse_ok(srv)
    import threading
    aid, ws = _agent(srv)
    t1, t2 = new_turn(srv, aid, user="u1"), new_turn(srv, aid, user="u2")
    res = {}
    a = threading.Thread(target=lambda: res.update(a=call(
        srv, t1["id"], "sleep 2; echo a > /workspace/a.txt", timeoutSeconds=60)))
    b = threading.Thread(target=lambda: res.update(b=call(
        srv, t2["id"], "cat /workspace/a.txt 2>/dev/null; sleep 20", timeoutSeconds=60)))
    a.start()
    time.sleep(1)
    b.start()
    a.join(60)
    check("a" in res, "the first call answered")
    check(b.is_alive(), "the first call answered while the second runs: %r" % res)
    eq(res["a"]["exitCode"], 0, "the first call: %r" % res["a"])
    eq(len(res["a"].get("committed", [])), 1, "it committed: %r" % res["a"])
    eq(srv.get_file(ws, "a.txt").body, b"a\n", "its file")
    b.join(60)
    eq(res["b"]["stdout"], "", "the second call saw the seq it began at")


def test_a_limit_stopped_call_beside_a_running_one_on_one_volume(srv):
    # two calls on one volume: the one stopped at its scratch share commits
    # nothing and answers; the other keeps its view and commits
    _fuse_ok(srv)
    import threading
    aid, ws = _agent(srv, sandbox={"scratch": "32m", "turnDisk": "30m", "userDisk": "32m"})
    small, big = new_turn(srv, aid, user="small"), new_turn(srv, aid, user="big")
    res = {}
    th = threading.Thread(target=lambda: res.update(out=call(
        srv, small["id"], "cat /workspace/* >/dev/null 2>&1; sleep 4; "
        "echo s > /workspace/s.txt", timeoutSeconds=60)))
    th.start()
    time.sleep(1.5)
    out = call(srv, big["id"], "echo b > /workspace/b.txt; "
               "dd if=/dev/zero of=f bs=1M count=40 2>/dev/null; sleep 1")
    contains(["scratch", "turn_disk"], out.get("limit"), "the grower stopped: %r" % out)
    check(not out.get("committed"), "the stopped call committed nothing: %r" % out)
    th.join(60)
    check("out" in res, "the other call answered")
    eq(res["out"].get("limit"), None, "the call within its share: %r" % res["out"])
    eq(len(res["out"].get("committed", [])), 1, "it committed: %r" % res["out"])
    eq(srv.get_file(ws, "s.txt").body, b"s\n", "its file")
    eq(srv.get_file(ws, "b.txt").status, 404, "nothing of the stopped call")


def test_read_only_mount_reads_without_handles(srv):
    # a call's read-only mounts are a view of their own that answers no open
    # (the kernel then reads with no handle): large and small files, read
    # interleaved by several processes, mmap, and a second pass from the page
    # cache, all give the volume's bytes; the read-write mount beside it works
    _fuse_ok(srv)
    docs = srv.create_volume()["id"]
    big = os.urandom(3 << 20)
    srv.put_ok(docs, "big.bin", big)
    small = {"s/%02d.txt" % i: (b"file %d\n" % i) * (i + 1) for i in range(40)}
    for p, b in small.items():
        srv.put_ok(docs, p, b)
    aid, ws = _agent(srv, mounts=[{"workspace": True},
                                  {"volumeId": docs, "path": "/docs", "mode": "ro"}])
    t = new_turn(srv, aid)
    cmd = ("for i in 1 2; do (sha256sum /docs/big.bin & sha256sum /docs/s/*.txt & wait) "
           "| sort -k2; done; python3 -c 'import mmap,hashlib;f=open(\"/docs/big.bin\",\"rb\");"
           "m=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ);print(hashlib.sha256(m[:]).hexdigest())'; "
           "cp /docs/s/01.txt /workspace/copy.txt; echo x > /docs/new.txt 2>&1 || true")
    out = ok(srv, t["id"], cmd)
    lines = out["stdout"].split("\n")
    want = sorted([(harness.sha256(big), "/docs/big.bin")] +
                  [(harness.sha256(b), "/docs/" + p) for p, b in small.items()],
                  key=lambda x: x[1])
    got = [tuple(l.split()) for l in lines if l.strip() and " " in l.strip()]
    eq(got[:len(want)], want, "first pass")
    eq(got[len(want):2 * len(want)], want, "second pass (page cache)")
    eq(lines[2 * len(want)].strip(), harness.sha256(big), "mmap")
    contains(out["stderr"], "Read-only file system", "a write to /docs")
    eq(srv.get_file(ws, "copy.txt").body, small["s/01.txt"], "the rw mount beside it")


def test_call_runs_git_in_the_workspace_and_it_lands_as_one_seq(srv):
    # a real program with lock files, renames over, fsync and many small
    # files inside a call's rw mount: the repository lands as one seq and the
    # next call's git reads it back
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_ok(ws, "src/a.txt", b"alpha\n")
    seq0 = srv.seq(ws)
    t = new_turn(srv, aid)
    env = "export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@x GIT_COMMITTER_NAME=t " \
          "GIT_COMMITTER_EMAIL=t@x GIT_CONFIG_NOSYSTEM=1; "
    out = ok(srv, t["id"], env + "cd /workspace && git init -q && git add -A && "
             "git commit -qm first && echo beta > src/b.txt && git add src/b.txt && "
             "git mv src/a.txt src/a2.txt && git commit -qm second && git log --format=%s")
    eq(out["stdout"].split(), ["second", "first"], "history in the call")
    eq(len(out["committed"]), 1, "committed: %r" % out["committed"])
    eq(srv.seq(ws), seq0 + 1, "one seq for the whole call")
    paths = [f["path"] for f in srv.list_files(ws)["files"]]
    contains(paths, ".git/HEAD", "the repository landed")
    contains(paths, "src/a2.txt", "the moved file")
    check("src/a.txt" not in paths, "the old name is gone: %r" % paths)
    check(not any(p.endswith(".lock") for p in paths), "no lock file left: %r" % paths)
    out = ok(srv, t["id"], env + "cd /workspace && git status --porcelain && "
             "git log --format=%s && git show HEAD:src/b.txt")
    eq(out["stdout"].split(), ["second", "first", "beta"], "the next call reads it back")


def test_user_volume_at_user_with_reserved_folders_read_only(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid, user="ann")
    out = call(srv, t["id"], "echo n > /user/note.md; mkdir /user/memories; true")
    contains(out["stderr"], "Read-only", "memories/ is read-only")
    r = expect(srv.get("/v1/agents/%s/users/ann/files/content" % aid,
                       query={"path": "note.md"}), 200)
    eq(r.body, b"n\n", "the file landed in the subject's volume")


def _flat(srv, n):
    vid = srv.create_volume()["id"]
    srv.put_many(vid, {"flat/f%05d.txt" % i: b"%d\n" % i for i in range(n)}, threads=8)
    srv.put_ok(vid, "flat/sub/x.txt", b"x")
    srv.put_ok(vid, "flat-sibling.txt", b"s")
    return vid


@harness.timeout(240)
def test_large_folder_listed_in_pages(srv):
    _fuse_ok(srv)
    # 3,000 entries: a dozen pages of the view's listing (256 a page) and many
    # readdir calls of the kernel; a subfolder among them is listed once
    vid = _flat(srv, 3000)
    m = Mount(srv, vid, "--read-only")
    try:
        names = os.listdir(m.path("flat"))
        eq(len(names), 3001, "entries listed")
        eq(len(set(names)), 3001, "no entry twice")
        contains(names, "sub", "the subfolder")
        eq(sorted(os.listdir(m.dir)), ["flat", "flat-sibling.txt"], "the top")
    finally:
        m.end()
    aid = new_id("va")
    expect(srv.put("/v1/agents/%s" % aid, json={"mounts": [
        {"volumeId": vid, "path": "/data", "mode": "ro"}]}), 201)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "ls /data/flat | wc -l; find /data -type f | wc -l; "
             "cat /data/flat/f02999.txt")
    eq(out["stdout"].split(), ["3001", "3002", "2999"], "ls, find and a read in a call")


def test_hundred_thousand_files_mount(srv):
    harness.slow("writes 100,000 files over HTTP first")
    _fuse_ok(srv)
    vid = _flat(srv, 100000)
    aid = new_id("va")
    expect(srv.put("/v1/agents/%s" % aid, json={"mounts": [
        {"volumeId": vid, "path": "/data", "mode": "ro"}]}), 201)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "ls /data/flat | wc -l; cat /data/flat/f54321.txt")
    eq(out["stdout"].split(), ["100001", "54321"], "all listed, one read")

def test_commit_seen_by_others_not_by_itself_and_in_the_run(srv):
    _fuse_ok(srv)
    shared = srv.create_volume()["id"]
    writer, watcher = new_id("vw"), new_id("vw")
    for aid in (writer, watcher):
        expect(srv.put("/v1/agents/%s" % aid, json={"mounts": [
            {"volumeId": shared, "path": "/shared", "mode": "rw", "notify": True}]}), 201)
    streams = [harness.EventStream(srv, "/v1/agents/%s/events" % a, timeout=60)
               for a in (writer, watcher)]
    try:
        time.sleep(0.3)
        seq0 = srv.seq(shared)
        t = new_turn(srv, writer)
        r = expect(srv.post("/v1/turns/%s/calls" % t["id"], json={
            "command": "echo a > /shared/a.txt; mkdir -p /shared/d; echo b > /shared/d/b.txt"},
            headers={"X-Run-Id": "run-1"}), 200).json()
        eq(r["committed"][0]["seq"], seq0 + 1, "one seq")
        ch = expect(srv.get("/v1/volumes/%s/changes" % shared, query={"since": seq0}), 200).json()
        eq(sorted((c["path"], c["seq"]) for c in ch["changes"]),
           [("a.txt", seq0 + 1), ("d/b.txt", seq0 + 1)], "the changes feed")
        got = streams[1].expect("files_changed", 1, timeout=10)
        eq(sorted(got[0]["paths"]), ["/shared/a.txt", "/shared/d/b.txt"], "others are told")
        time.sleep(2)
        eq(streams[0].wait("files_changed", 1, timeout=0.1), [], "never back to the writer")
        # the turn acts for its user: the run is that subject's (X-Subject)
        run = expect(srv.get("/v1/agents/%s/runs/run-1" % writer,
                             headers={"X-Subject": t["user"]}), 200).json()
        eq(sorted(f["path"] for f in run["files"]), ["/shared/a.txt", "/shared/d/b.txt"],
           "the run's files")
    finally:
        for st in streams:
            st.close()


def test_call_cannot_fill_a_volume_past_its_ceiling(srv):
    _fuse_ok(srv)
    vid = expect(srv.post("/v1/volumes", json={"name": new_id("vc"), "ceiling": 1 << 20}),
                 201).json()["id"]
    srv.put_ok(vid, "keep.txt", b"kept")
    seq0 = srv.seq(vid)
    aid = new_id("va")
    expect(srv.put("/v1/agents/%s" % aid, json={"mounts": [
        {"volumeId": vid, "path": "/small", "mode": "rw"}]}), 201)
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], "head -c 2000000 /dev/zero > /small/big.bin; echo x > /small/x.txt")
    eq(out["committed"], [], "nothing committed")
    check(any("ceiling" in n for n in out["notes"]), "a note names the ceiling: %r" % out["notes"])
    eq(srv.seq(vid), seq0, "the volume's seq")
    eq(srv.get_file(vid, "big.bin").status, 404, "the big file is absent")
    eq(srv.get_file(vid, "x.txt").status, 404, "and so is the rest of that change")
    # a sparse file past the ceiling: refused as it is made, never stored whole
    out = call(srv, t["id"], "truncate -s 1T /small/sparse; echo $?; "
               "dd if=/dev/zero of=/small/far bs=1 count=1 seek=2000000 2>&1; echo ok")
    contains(out["stdout"], "File too large", "EFBIG past the ceiling: %r" % out)
    sizes = {f["path"]: f["size"] for f in srv.list_files(vid)["files"]}
    eq(sizes.get("keep.txt"), 4, "the file that was there")
    check(all(n == 0 for p, n in sizes.items() if p != "keep.txt"),
          "the files made empty stay empty: %r" % sizes)


def test_call_cannot_make_a_name_no_volume_can_hold(srv):
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    t = new_turn(srv, aid)
    out = call(srv, t["id"], "cd /workspace; touch \"$(printf 'a\\001b')\" && echo made; "
               "touch \"$(printf 'bad\\377')\" && echo made; "
               "mkdir \"$(printf 'd\\033')\" && echo made; echo ok > fine.txt")
    check("made" not in out["stdout"], "control characters and invalid UTF-8 refused: %r" % out)
    contains(out["stderr"], "Invalid argument", "errno EINVAL")
    eq([f["path"] for f in srv.list_files(ws)["files"]], ["fine.txt"], "what landed")



def _views(srv):
    """The views of srv mounted now."""
    with open("/proc/self/mounts") as f:
        return [l.split()[1] for l in f if " fuse.coffer " in l and srv.data in l]


def _kept(srv):
    """The turns' kept read-only views mounted now (src/turn/views.c)."""
    return [p for p in _views(srv) if "/views/keep-" in p]


def test_read_only_view_kept_for_the_next_call_while_it_shows_the_same(srv):
    # the next call of a turn reuses its read-only view (one mount, its page
    # cache warm) only while that view shows what the call would see: a new
    # seq of the volume, a new exclusion or a new mount set gets a new view,
    # the replaced one ends, and the turn's end ends what is kept
    _fuse_ok(srv)
    docs = srv.create_volume()["id"]
    srv.put_ok(docs, "a.md", b"one\n")
    srv.put_ok(docs, "secret.md", b"s\n")
    mounts = [{"workspace": True}, {"volumeId": docs, "path": "/docs", "mode": "ro"}]
    aid, ws = _agent(srv, mounts=mounts)
    before = set(_kept(srv))
    t = new_turn(srv, aid)  # its view is made with it, for its first call
    eq(ok(srv, t["id"], "cat /docs/a.md")["stdout"], "one\n", "first call")
    kept = set(_kept(srv)) - before
    eq(len(kept), 1, "one view kept for the turn: %r" % kept)
    eq(ok(srv, t["id"], "cat /docs/a.md")["stdout"], "one\n", "second call")
    eq(set(_kept(srv)) - before, kept, "the same view served the second call")
    # the volume moved: the next call reads at its new seq, in a new view
    srv.put_ok(docs, "a.md", b"two\n")
    eq(ok(srv, t["id"], "cat /docs/a.md")["stdout"], "two\n", "a call after a write")
    now = set(_kept(srv)) - before
    eq(len(now), 1, "the old view ended: %r" % now)
    check(now != kept, "a new view for the new seq")
    # a new exclusion applies from the next call
    expect(srv.put("/v1/agents/%s" % aid, json={"mounts": mounts, "exclude": ["secret.md"]}),
           200, 201)
    out = ok(srv, t["id"], "ls /docs")
    eq(out["stdout"].split(), ["a.md"], "the excluded file is gone from the next call")
    # another turn of the agent has a view of its own
    t2 = new_turn(srv, aid)
    eq(ok(srv, t2["id"], "ls /docs")["stdout"].split(), ["a.md"], "the other turn")
    eq(len(set(_kept(srv)) - before), 2, "one view kept per turn")
    for tid in (t["id"], t2["id"]):
        expect(srv.delete("/v1/turns/%s" % tid), 200, 204)
    eq(set(_kept(srv)) - before, set(), "the turns' end ended their views")


def test_call_writes_files_with_no_handle(srv):
    # a call's read-write view answers no open either: writes, appends,
    # truncations, O_TRUNC, mmap writes and renames keep their bytes; a file
    # removed while open fails cleanly (once its read, an attribute check by
    # handle with no path, crashed cofferd)
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    for i in range(4):
        srv.put_ok(ws, "f%d.txt" % i, b"0123456789\n")
    t = new_turn(srv, aid)
    cmd = ("cd /workspace; printf abc > f0.txt; echo x >> f1.txt; truncate -s 2 f2.txt; "
           "echo new > n.txt; echo more >> n.txt; mv n.txt m.txt; cat m.txt; "
           "python3 -c '\nimport mmap, os\nf = open(\"f3.txt\", \"r+b\")\n"
           "m = mmap.mmap(f.fileno(), 0)\nm[0:3] = b\"XYZ\"\nm.flush(); m.close(); f.close()\n"
           "g = open(\"tmp\", \"w+\"); os.unlink(\"tmp\")\n"
           "try:\n  g.write(\"gone\"); g.flush(); g.seek(0); print(g.read())\n"
           "except OSError as e:\n  print(\"error\", e.errno)\n'; "
           "cat f0.txt f3.txt")
    out = ok(srv, t["id"], cmd)
    eq(out["stdout"], "new\nmore\nerror 2\nabcXYZ3456789\n", "what the call read back "
       "(a file removed while open has no bytes left: ENOENT)")
    want = {"f0.txt": b"abc", "f1.txt": b"0123456789\nx\n", "f2.txt": b"01",
            "f3.txt": b"XYZ3456789\n", "m.txt": b"new\nmore\n"}
    for p, b in want.items():
        eq(srv.get_file(ws, p).body, b, p)
    eq(srv.get_file(ws, "tmp").status, 404, "the removed file is not stored")
    eq(srv.get_file(ws, "n.txt").status, 404, "the renamed file is under its new name")


def test_read_write_view_kept_only_while_untouched(srv):
    # a call that leaves the read-write view untouched hands it to the next
    # call (one call at a time); a call that writes lands its layer and its
    # view ends; a volume that moved gets a new view
    _fuse_ok(srv)
    aid, ws = _agent(srv)
    srv.put_ok(ws, "a.md", b"one\n")
    before = set(_views(srv))
    t = new_turn(srv, aid)  # its view is made with it, for its first call
    eq(ok(srv, t["id"], "cat /workspace/a.md")["stdout"], "one\n", "a reading call")
    kept = set(_views(srv)) - before
    eq(len(kept), 1, "its view kept: %r" % kept)
    out = ok(srv, t["id"], "cat /workspace/a.md")
    eq(out["committed"], [], "nothing to land")
    eq(set(_views(srv)) - before, kept, "the next call used it")
    seq = srv.seq(ws)
    out = ok(srv, t["id"], "cat /workspace/a.md; echo two > /workspace/a.md")
    eq(out["stdout"], "one\n", "read in the kept view")
    eq([c["seq"] for c in out["committed"]], [seq + 1], "the write landed as one seq")
    eq(set(_views(srv)) - before, set(), "the written view ended")
    eq(ok(srv, t["id"], "cat /workspace/a.md")["stdout"], "two\n", "the next call")
    kept = set(_views(srv)) - before
    eq(len(kept), 1, "kept again: %r" % kept)
    srv.put_ok(ws, "a.md", b"three\n")
    eq(ok(srv, t["id"], "cat /workspace/a.md")["stdout"], "three\n",
       "a write made between calls is seen")
    check(set(_views(srv)) - before != kept, "by a new view")
    eq(len(set(_views(srv)) - before), 1, "the old one ended")
    # two calls at once: one may use the kept view, the other mounts its own
    import threading
    outs = []
    th = [threading.Thread(target=lambda: outs.append(call(srv, t["id"], "cat /workspace/a.md; "
                                                           "sleep 1; ls /workspace")))
          for _ in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    eq(sorted(o["stdout"] for o in outs), ["three\na.md\n"] * 2, "both calls")
    expect(srv.delete("/v1/turns/%s" % t["id"]), 200, 204)
    eq(set(_views(srv)) - before, set(), "the turn's end ended its views")


def test_call_the_kept_views_serve_makes_nothing_outside_its_namespace(srv):
    # a call that the turn's kept views serve (read-write and read-only)
    # makes no folder, layer or mount of its own on the scratch disk: its
    # child binds the kept views from where they are mounted (issue 38 item 6:
    # each call's mkdirs, rmdirs, bind and unmount there were most of
    # cofferd's own CPU in a confined `true`)
    _fuse_ok(srv)
    import threading
    docs = srv.create_volume()["id"]
    srv.put_ok(docs, "a.md", b"ro\n")
    aid, ws = _agent(srv, mounts=[{"workspace": True},
                                  {"volumeId": docs, "path": "/docs", "mode": "ro"}])
    srv.put_ok(ws, "w.md", b"rw\n")
    t = new_turn(srv, aid)
    both = "cat /docs/a.md /workspace/w.md"
    eq(ok(srv, t["id"], both)["stdout"], "ro\nrw\n", "the first call, its views kept")
    scratch = os.path.join(srv.data, "scratch")
    views, dirs = set(_views(srv)), set(os.listdir(os.path.join(scratch, "views")))
    layers = set(os.listdir(os.path.join(scratch, "layers", t["id"])))
    res = {}
    th = threading.Thread(target=lambda: res.update(
        out=call(srv, t["id"], both + "; sleep 2; " + both)))
    th.start()
    time.sleep(1)  # the call is in its sleep
    now = (set(_views(srv)), set(os.listdir(os.path.join(scratch, "views"))),
           set(os.listdir(os.path.join(scratch, "layers", t["id"]))))
    th.join(60)
    eq(now[0], views, "no mount of the call's own")
    eq(now[1], dirs, "no folder of the call's own under views/")
    eq(now[2], layers, "no layer of the call's own")
    eq(res["out"]["stdout"], "ro\nrw\n" * 2, "the call read both mounts")
    eq(res["out"]["exitCode"], 0, "exit code")
    # a call that writes still lands its layer; the next one mounts anew
    out = ok(srv, t["id"], "echo new > /workspace/w.md; cat /docs/a.md")
    eq(out["stdout"], "ro\n", "read in the kept read-only view")
    eq(len(out["committed"]), 1, "the write landed")
    eq(ok(srv, t["id"], both)["stdout"], "ro\nnew\n", "the next call")


def test_zz_no_fuse_mount_left(srv):
    # what a call mounts ends with it, or (a kept view) with its turn
    for tid in TURNS:
        srv.delete("/v1/turns/%s" % tid)
    with open("/proc/self/mounts") as f:
        left = [l for l in f if " fuse.coffer " in l and srv.data in l]
    eq(left, [], "views left mounted")
