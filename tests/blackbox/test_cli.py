"""The `coffer` command line against a real cofferd: exit codes 0/1/2, streamed put/get
of a 3 MiB file, ls, mv, rm, snapshots and restore, archive through `tar xz`, changes
(also --follow), signed links, volumes, keys, gc/fsck and serve (docs/cli.md)."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import harness
from harness import check, contains, eq, expect, sha256


def _need_cli():
    if not harness.coffer_binary():
        harness.skip("build/coffer does not exist")


def run(srv, *args, rc=0, input=None, key=harness._ABSENT, env=None, timeout=60):
    """Runs build/coffer against srv; asserts the exit code; returns CompletedProcess."""
    _need_cli()
    p = srv.cli(*args, input=input, key=key, env=env, timeout=timeout)
    check(p.returncode == rc, "coffer %s: exit code should be %s, got %s\nstdout: %r\nstderr: %r"
          % (" ".join(map(str, args)), rc, p.returncode, p.stdout[:2000], p.stderr[:2000]))
    return p


def run_json(srv, *args, **kw):
    """Runs coffer --json ARGS (exit 0 expected) and parses stdout."""
    p = run(srv, "--json", *args, **kw)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise AssertionError("coffer --json %s: stdout is not JSON (%s): %r"
                             % (" ".join(args), e, p.stdout[:2000]))


def err_text(p):
    return p.stderr.decode("utf-8", "replace")


def new_vol(srv):
    return run_json(srv, "volume", "create", "cli-%d" % (time.time_ns() % 10**12))["id"]


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ------------------------------------------------------------------ exit codes

def test_help_and_version(srv):
    p = run(srv, "--help")
    out = p.stdout.decode()
    for cmd in ("volume create", "put", "get", "ls", "mv", "rm", "changes", "snapshot create",
                "fork", "restore", "archive", "link", "key create", "gc", "fsck", "serve"):
        contains(out, cmd, "coffer --help lists %r" % cmd)
    check(re.match(r"coffer \d+\.\d+", run(srv, "--version").stdout.decode()),
          "coffer --version prints 'coffer X.Y'")
    for args in (["put"], ["volume", "create"], ["snapshot", "ls"], ["changes"],
                 ["archive"], ["gc"], ["fsck"], ["link"], ["key", "create"]):
        p = run(srv, *args, "--help")
        contains(p.stdout.decode(), "usage: coffer " + " ".join(args), "help of %s" % args)


def test_usage_errors_exit_2(srv):
    cases = [
        (["bogus"], "unknown command"),
        (["volume", "frobnicate"], "unknown command"),
        (["get", "vol"], "missing PATH"),
        (["put"], "missing VOL"),
        (["ls", "vol", "--nope"], "unknown option"),
        (["ls", "vol", "--limit", "ten"], "whole number"),
        (["volume", "create", "x", "--ceiling", "lots"], "size"),
        (["get", "vol", "a", "--range", "5"], "--range"),
        (["put", "vol", "a", "f", "--if-match", "1", "--if-none-match"], "exclude"),
        (["snapshot", "create", "vol", "--label", "nocolon"], "KEY:VALUE"),
        (["mv", "vol", "a"], "missing TO"),
        (["gc"], "--data"),
        (["--server"], "needs a value"),
    ]
    for args, words in cases:
        p = run(srv, *args, rc=2)
        e = err_text(p)
        contains(e, words, "stderr of coffer %s" % " ".join(args))
        check(e.startswith("coffer: "), "usage error starts with 'coffer: ': %r" % e)
        check("--help" in e, "usage error hints at --help: %r" % e)
    run(srv, rc=2)  # no command at all


def test_server_errors_exit_1(srv):
    p = run(srv, "volume", "get", "vol_doesnotexist", rc=1)
    check(re.search(r"^coffer: .+ \(not_found\)$", err_text(p), re.M),
          "404 shown as 'coffer: MESSAGE (not_found)': %r" % err_text(p))
    eq(p.stdout, b"", "nothing on stdout on error")
    vid = new_vol(srv)
    p = run(srv, "get", vid, "no/such/file", rc=1)
    contains(err_text(p), "(not_found)", "missing file")
    p = run(srv, "volume", "get", vid, key="ck_wrong", rc=1)
    contains(err_text(p), "(unauthorized)", "wrong key")


def test_unreachable_exit_1(srv):
    url = "http://127.0.0.1:%d" % free_port()
    p = run(srv, "volume", "ls", env={"COFFER_URL": url}, rc=1)
    contains(err_text(p), "cannot reach cofferd at " + url, "network error message")


def test_global_flags_anywhere(srv):
    vid = new_vol(srv)
    env = {"COFFER_URL": "http://127.0.0.1:%d" % free_port(), "COFFER_KEY": ""}
    p = run(srv, "volume", "get", vid, "--server", srv.url, "--key", srv.key, "--json", env=env)
    eq(json.loads(p.stdout)["id"], vid, "flags after the command")
    p = run(srv, "--server=" + srv.url, "--key=" + srv.key, "--json", "volume", "get", vid,
            env=env)
    eq(json.loads(p.stdout)["id"], vid, "flags before the command")


def test_admin_key_file_fallback(srv):
    """With no --key and no $COFFER_KEY, ./data/admin.key is read."""
    _need_cli()
    cwd = tempfile.mkdtemp(prefix="coffer-cli-")
    os.mkdir(os.path.join(cwd, "data"))
    with open(os.path.join(cwd, "data", "admin.key"), "w") as f:
        f.write(srv.key + "\n")
    env = dict(os.environ, COFFER_URL=srv.url)
    env.pop("COFFER_KEY", None)
    p = subprocess.run([harness.bin_path("coffer"), "--json", "volume", "create", "fromfile"],
                       cwd=cwd, env=env, capture_output=True, timeout=60 * harness.SCALE)
    eq(p.returncode, 0, "exit code with ./data/admin.key (stderr %r)" % p.stderr)
    eq(json.loads(p.stdout)["name"], "fromfile", "volume made with the file's key")


# ------------------------------------------------------------------ files

@harness.timeout(120)
def test_put_get_3mib_round_trip(srv):
    vid = new_vol(srv)
    tmp = tempfile.mkdtemp(prefix="coffer-cli-")
    data = os.urandom(3 * 1024 * 1024 + 17)
    src = os.path.join(tmp, "big.bin")
    with open(src, "wb") as f:
        f.write(data)
    p = run(srv, "--json", "put", vid, "dir/big file.bin", src)
    j = json.loads(p.stdout)
    eq((j["path"], j["size"], j["sha256"]), ("dir/big file.bin", len(data), sha256(data)),
       "put answer")
    eq(p.stderr, b"", "no progress bar when stderr is not a terminal")
    out = os.path.join(tmp, "out.bin")
    p = run(srv, "get", vid, "dir/big file.bin", "-o", out)
    with open(out, "rb") as f:
        eq(sha256(f.read()), sha256(data), "sha256 of the file written by get -o")
    eq(p.stderr, b"", "get -o is quiet")
    eq(sha256(run(srv, "get", vid, "/dir/big file.bin").stdout), sha256(data),
       "sha256 of get to stdout (leading / dropped)")
    g = expect(srv.get_file(vid, "dir/big file.bin"), 200)
    eq(sha256(g.body), sha256(data), "the server has the same bytes")
    # stdin, chunked
    j = run_json(srv, "put", vid, "piped.bin", "-", input=data[:1_500_000])
    eq(j["sha256"], sha256(data[:1_500_000]), "put from stdin")
    # a failed download leaves an existing file alone
    run(srv, "get", vid, "nope.bin", "-o", out, rc=1)
    with open(out, "rb") as f:
        eq(sha256(f.read()), sha256(data), "-o file untouched by a failed get")
    eq(sorted(os.listdir(tmp)), ["big.bin", "out.bin"], "no temporary file left")


def test_put_options_and_range(srv):
    vid = new_vol(srv)
    tmp = tempfile.mkdtemp(prefix="coffer-cli-")
    src = os.path.join(tmp, "a.txt")
    with open(src, "wb") as f:
        f.write(b"0123456789")
    j = run_json(srv, "put", vid, "été/a #1?.txt", src, "--content-type", "text/x-note")
    eq((j["path"], j["version"]), ("été/a #1?.txt", 1), "unicode path with # and ?")
    eq(expect(srv.get_file(vid, "été/a #1?.txt"), 200).body, b"0123456789",
       "percent-encoded path reaches the right file")
    contains(j["contentType"], "text/x-note", "content type kept")
    p = run(srv, "put", vid, "été/a #1?.txt", src, "--if-none-match", rc=1)
    contains(err_text(p), "(precondition_failed)", "--if-none-match on an existing file")
    p = run(srv, "put", vid, "été/a #1?.txt", src, "--if-match", "7", rc=1)
    contains(err_text(p), "(precondition_failed)", "--if-match with a stale version")
    run(srv, "put", vid, "été/a #1?.txt", src, "--if-match", str(j["version"]))
    eq(run(srv, "get", vid, "été/a #1?.txt", "--range", "2-4").stdout, b"234", "--range")
    eq(run(srv, "get", vid, "été/a #1?.txt", "--range", "-3").stdout, b"789", "suffix range")


def test_ls(srv):
    vid = new_vol(srv)
    for p in ("a/one.txt", "a/two.txt", "b/three.md", "top.txt"):
        srv.put_ok(vid, p, p.encode())
    out = run(srv, "ls", vid).stdout.decode()
    lines = out.strip().splitlines()
    check(lines[0].split() == ["VERSION", "SIZE", "UPDATED", "PATH"], "header: %r" % lines[0])
    eq([l.split()[-1] for l in lines[1:]], ["a/one.txt", "a/two.txt", "b/three.md", "top.txt"],
       "paths in ls, sorted")
    j = run_json(srv, "ls", vid, "--prefix", "a/")
    eq([f["path"] for f in j["files"]], ["a/one.txt", "a/two.txt"], "--prefix")
    j = run_json(srv, "ls", vid, "--glob", "**/*.md")
    eq([f["path"] for f in j["files"]], ["b/three.md"], "--glob")
    # paging: one file a page
    p = run(srv, "ls", vid, "--limit", "1")
    eq(len(p.stdout.decode().strip().splitlines()), 2, "one page of one file")
    contains(err_text(p), "--all", "hint that more pages follow")
    j = run_json(srv, "ls", vid, "--limit", "1", "--all")
    eq(len(j["files"]), 4, "--all follows every page")


def test_mv_rm(srv):
    vid = new_vol(srv)
    srv.put_ok(vid, "dir/a.txt", b"A")
    srv.put_ok(vid, "dir/b.txt", b"B")
    srv.put_ok(vid, "other.txt", b"O")
    run(srv, "mv", vid, "dir", "moved")
    eq(sorted(f["path"] for f in srv.list_files(vid)["files"]),
       ["moved/a.txt", "moved/b.txt", "other.txt"], "directory moved")
    p = run(srv, "mv", vid, "other.txt", "moved/a.txt", rc=1)
    contains(err_text(p), "(conflict)", "mv onto an existing file")
    run(srv, "mv", vid, "other.txt", "moved/a.txt", "--overwrite")
    eq(expect(srv.get_file(vid, "moved/a.txt"), 200).body, b"O", "overwritten")
    p = run(srv, "rm", vid, "moved/b.txt", "--if-match", "99", rc=1)
    contains(err_text(p), "(precondition_failed)", "rm --if-match stale")
    run(srv, "rm", vid, "moved/b.txt")
    expect(srv.get_file(vid, "moved/b.txt"), 404)
    p = run(srv, "rm", vid, "moved/b.txt", rc=1)
    contains(err_text(p), "(not_found)", "rm of an absent file")


# ------------------------------------------------------------------ snapshots

def test_snapshot_restore(srv):
    vid = new_vol(srv)
    srv.put_ok(vid, "keep.txt", b"v1")
    srv.put_ok(vid, "gone.txt", b"bye")
    snap = run_json(srv, "snapshot", "create", vid, "--pin", "--label", "stage:one")
    sid = snap["id"]
    eq(snap["pinned"], True, "--pin")
    eq(snap.get("labels"), {"stage": "one"}, "--label")
    run_json(srv, "snapshot", "create", vid, "-l", "stage:two")
    srv.put_ok(vid, "keep.txt", b"v2")
    srv.put_ok(vid, "new.txt", b"new")
    expect(srv.delete(srv.file_path(vid, "gone.txt")), 200, 204)
    eq(run(srv, "get", vid, "keep.txt", "--snapshot", sid).stdout, b"v1", "get --snapshot")
    j = run_json(srv, "ls", vid, "--snapshot", sid)
    eq(sorted(f["path"] for f in j["files"]), ["gone.txt", "keep.txt"], "ls --snapshot")
    out = run(srv, "snapshot", "ls", vid, "--label", "stage:one").stdout.decode()
    contains(out, sid, "snapshot ls --label")
    eq(len(out.strip().splitlines()), 2, "only the labelled snapshot (plus header)")
    eq(run_json(srv, "snapshot", "get", vid, sid)["id"], sid, "snapshot get")
    r = run_json(srv, "restore", vid, sid)
    eq(r.get("snapshot"), sid, "restore answer names the snapshot")
    eq(sorted(f["path"] for f in srv.list_files(vid)["files"]), ["gone.txt", "keep.txt"],
       "files after restore")
    eq(expect(srv.get_file(vid, "keep.txt"), 200).body, b"v1", "content after restore")
    p = run(srv, "snapshot", "rm", vid, sid, rc=1)
    contains(err_text(p), "(conflict)", "pinned snapshot needs --force")
    run(srv, "snapshot", "unpin", vid, sid)
    run(srv, "snapshot", "pin", vid, sid)
    run(srv, "snapshot", "rm", vid, sid, "--force")
    run(srv, "snapshot", "get", vid, sid, rc=1)


def test_fork(srv):
    vid = new_vol(srv)
    srv.put_ok(vid, "f.txt", b"shared")
    fork = run_json(srv, "fork", vid, "--name", "forked")
    check(fork["id"] != vid, "fork is a new volume")
    eq(run(srv, "get", fork["id"], "f.txt").stdout, b"shared", "fork shares content")


# ------------------------------------------------------------------ archive

def test_archive_extracts_with_tar(srv):
    vid = new_vol(srv)
    files = {"proj/readme.md": b"# hi\n", "proj/src/main.c": os.urandom(50_000),
             "other.txt": b"o"}
    for p, d in files.items():
        srv.put_ok(vid, p, d)
    tmp = tempfile.mkdtemp(prefix="coffer-cli-")
    tgz = os.path.join(tmp, "a.tar.gz")
    run(srv, "archive", vid, "-o", tgz)
    dest = os.path.join(tmp, "x")
    os.mkdir(dest)
    t = subprocess.run(["tar", "xzf", tgz, "-C", dest], capture_output=True)
    eq(t.returncode, 0, "tar xzf exit code (stderr %r)" % t.stderr)
    for p, d in files.items():
        with open(os.path.join(dest, p), "rb") as f:
            eq(sha256(f.read()), sha256(d), "extracted %s" % p)
    # to stdout, piped into tar xz, narrowed with --path
    out = run(srv, "archive", vid, "--path", "proj").stdout
    dest2 = os.path.join(tmp, "y")
    os.mkdir(dest2)
    t = subprocess.run(["tar", "xz", "-C", dest2], input=out, capture_output=True)
    eq(t.returncode, 0, "tar xz from stdout (stderr %r)" % t.stderr)
    with open(os.path.join(dest2, "src", "main.c"), "rb") as f:
        eq(sha256(f.read()), sha256(files["proj/src/main.c"]), "names relative to --path")
    check(not os.path.exists(os.path.join(dest2, "other.txt")), "--path left other.txt out")


# ------------------------------------------------------------------ changes

def test_changes(srv):
    vid = new_vol(srv)
    srv.put_ok(vid, "a.txt", b"1")
    srv.put_ok(vid, "b.txt", b"2")
    expect(srv.delete(srv.file_path(vid, "a.txt")), 200, 204)
    lines = run(srv, "changes", vid).stdout.decode().strip().splitlines()
    check(lines[0].split()[:3] == ["SEQ", "OP", "VERSION"], "header: %r" % lines[0])
    rows = [l.split() for l in lines[1:]]
    eq([(r[0], r[1], r[-1]) for r in rows],
       [("1", "write", "a.txt"), ("2", "write", "b.txt"), ("3", "remove", "a.txt")],
       "changes as SEQ OP ... PATH")
    j = run_json(srv, "changes", vid, "--since", "2")
    eq([(c["seq"], c["op"], c["path"]) for c in j["changes"]], [(3, "remove", "a.txt")],
       "--since")


@harness.timeout(90)
def test_changes_follow(srv):
    _need_cli()
    vid = new_vol(srv)
    srv.put_ok(vid, "first.txt", b"1")
    env = dict(os.environ, COFFER_URL=srv.url, COFFER_KEY=srv.key)
    proc = subprocess.Popen([harness.bin_path("coffer"), "changes", vid, "--follow", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        got = [json.loads(proc.stdout.readline())]
        eq(got[0]["path"], "first.txt", "existing change printed first")
        srv.put_ok(vid, "second.txt", b"2")
        got.append(json.loads(proc.stdout.readline()))
        eq((got[1]["seq"], got[1]["path"]), (2, "second.txt"), "a new change arrives")
        srv.put_ok(vid, "third.txt", b"3")
        got.append(json.loads(proc.stdout.readline()))
        eq((got[2]["seq"], got[2]["path"]), (3, "third.txt"), "since advanced")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


# ------------------------------------------------------------------ links

def test_link(srv):
    vid = new_vol(srv)
    srv.put_ok(vid, "share/doc.txt", b"linked bytes")
    url = run(srv, "link", vid, "share/doc.txt", "--expires", "60").stdout.decode().strip()
    check(url.startswith("http://"), "link prints an absolute URL: %r" % url)
    eq(expect(srv.get(url, key=None), 200).body, b"linked bytes", "GET through the link")
    j = run_json(srv, "link", vid, "up/new.txt", "--put", "--max-bytes", "1K",
                 "--content-type", "text/plain")
    eq(j["method"], "PUT", "--put")
    expect(srv.put(j["url"], body=b"x" * 2000, key=None,
                   headers={"Content-Type": "text/plain"}), 413)
    expect(srv.put(j["url"], body=b"via link", key=None,
                   headers={"Content-Type": "text/plain"}), 200, 201)
    eq(run(srv, "get", vid, "up/new.txt").stdout, b"via link", "uploaded through the link")


# ------------------------------------------------------------------ volumes, keys

def test_volume_commands(srv):
    a = run_json(srv, "volume", "create", "va", "--ceiling", "1G", "--idempotency-key", "k-cli-1")
    eq(a["ceiling"], 1 << 30, "--ceiling 1G")
    again = run_json(srv, "volume", "create", "va", "--ceiling", "1G",
                     "--idempotency-key", "k-cli-1")
    eq(again["id"], a["id"], "same Idempotency-Key, same volume")
    b = new_vol(srv)
    srv.put_ok(b, "x", b"xx")
    out = run(srv, "volume", "ls", a["id"], b).stdout.decode()
    contains(out, a["id"], "volume ls")
    contains(out, b, "volume ls")
    j = run_json(srv, "volume", "ls", a["id"], b)
    eq(sorted((v["id"], v["seq"]) for v in j["volumes"]), sorted([(a["id"], 0), (b, 1)]),
       "volume ls --json")
    out = run(srv, "volume", "get", b).stdout.decode()
    check(re.search(r"^seq\s+1$", out, re.M), "volume get shows 'seq  1': %r" % out)
    run(srv, "volume", "rm", a["id"])
    run(srv, "volume", "get", a["id"], rc=1)


def test_key_create(srv):
    vid = new_vol(srv)
    k = run_json(srv, "key", "create", "--org", "cli-other-org")
    check(k["key"] and k["org"] == "cli-other-org", "key create answer: %r" % k)
    p = run(srv, "volume", "get", vid, key=k["key"], rc=1)
    contains(err_text(p), "(not_found)", "another org's volume is invisible")


# ------------------------------------------------------------------ gc, fsck, serve

def test_gc_fsck(srv):
    vid = new_vol(srv)
    srv.put_ok(vid, "f.bin", os.urandom(200_000))
    p = run(srv, "fsck", "--data", srv.data)
    contains(p.stdout.decode(), "ok", "fsck report")
    j = run_json(srv, "fsck", "--data", srv.data)
    eq(j["ok"], True, "fsck ok")
    j = run_json(srv, "gc", "--data", srv.data, "--grace", "3600")
    check("blobsDeleted" in j, "gc report: %r" % j)
    empty = tempfile.mkdtemp(prefix="coffer-cli-")
    p = run(srv, "fsck", "--data", empty, rc=1)
    contains(err_text(p), "not a coffer data dir", "fsck of a non-data dir")
    eq(os.listdir(empty), [], "fsck did not create a store")


def test_fsck_finds_corruption():
    _need_cli()
    with harness.server() as s:
        vid = s.create_volume()["id"]
        data = os.urandom(300_000)
        s.put_ok(vid, "big.bin", data)
        blob = s.blob_of_size(len(data))
        with open(blob, "r+b") as f:
            f.write(b"\x00" * 64)
        p = run(s, "fsck", "--data", s.data, rc=1)
        contains(p.stdout.decode(), "corrupt", "fsck names the corrupt blob")


def test_serve():
    _need_cli()
    data = tempfile.mkdtemp(prefix="coffer-cli-")
    proc = subprocess.Popen([harness.bin_path("coffer"), "serve", "--data", data, "--listen",
                             "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20 * harness.SCALE
        line = b""
        while time.time() < deadline:
            line = proc.stdout.readline()
            if b"listening on" in line or not line:
                break
        m = re.search(rb"listening on (http://\S+)", line)
        check(m, "coffer serve prints 'cofferd listening on URL': %r" % line)
        with open(os.path.join(data, "admin.key")) as f:
            key = f.read().strip()
        env = dict(os.environ, COFFER_URL=m.group(1).decode(), COFFER_KEY=key)
        p = subprocess.run([harness.bin_path("coffer"), "--json", "volume", "create", "s"],
                           env=env, capture_output=True, timeout=30 * harness.SCALE)
        eq(p.returncode, 0, "volume create against coffer serve (stderr %r)" % p.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30 * harness.SCALE)
        proc.stdout.close()
    eq(code, 0, "coffer serve exits 0 on SIGTERM")


# ------------------------------------------------------------------ as a person uses it

def _on_terminal(srv, *args, timeout=60):
    """Runs build/coffer ARGS with stdout on a pseudo-terminal; returns (exit code,
    what reached the terminal with \\r\\n turned back into \\n, stderr)."""
    import pty
    import select
    _need_cli()
    master, slave = pty.openpty()
    import termios
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST            # the bytes as written, no \n -> \r\n
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    env = dict(os.environ, COFFER_URL=srv.url, COFFER_KEY=srv.key)
    p = subprocess.Popen([harness.bin_path("coffer")] + list(args), stdout=slave,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b""
    deadline = time.time() + timeout * harness.SCALE
    try:
        while time.time() < deadline:
            r, _, _ = select.select([master], [], [], 1)
            if not r:
                if p.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:               # EIO: the other side is closed
                break
            if not chunk:
                break
            out += chunk
        err = p.stderr.read()
        rc = p.wait(10 * harness.SCALE)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stderr.close()
        os.close(master)
    return rc, out, err


def test_get_refuses_binary_on_a_terminal(srv):
    vid = new_vol(srv)
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(3000)
    srv.put_ok(vid, "img.png", png)
    rc, out, err = _on_terminal(srv, "get", vid, "img.png")
    eq(rc, 2, "exit code of get of a PNG to a terminal (stderr %r)" % err)
    eq(out, b"", "nothing binary reached the terminal")
    contains(err.decode(), "will not write binary content", "stderr")
    contains(err.decode(), "-o FILE", "stderr names the way out")
    rc, out, err = _on_terminal(srv, "get", vid, "img.png", "-o", "-")
    eq((rc, out), (2, b""), "-o - is stdout too")
    # invalid UTF-8 is not text either
    srv.put_ok(vid, "latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    rc, out, err = _on_terminal(srv, "get", vid, "latin1.txt")
    eq((rc, out), (2, b""), "get of Latin-1 bytes to a terminal")
    # -o FILE or a pipe take anything
    tmp = tempfile.mkdtemp(prefix="coffer-cli-")
    rc, out, err = _on_terminal(srv, "get", vid, "img.png", "-o", os.path.join(tmp, "i.png"))
    eq(rc, 0, "get -o FILE with stdout on a terminal (stderr %r)" % err)
    with open(os.path.join(tmp, "i.png"), "rb") as f:
        eq(f.read(), png, "bytes written by get -o")
    eq(run(srv, "get", vid, "img.png").stdout, png, "get to a pipe")


def test_get_text_on_a_terminal(srv):
    vid = new_vol(srv)
    text = "héllo wörld ✓ 日本\n".encode()
    srv.put_ok(vid, "t.txt", text)
    rc, out, err = _on_terminal(srv, "get", vid, "t.txt")
    eq((rc, out, err), (0, text, b""), "UTF-8 text reaches the terminal")
    # multi-byte characters cut across the chunks of a long download
    big = ("é" * 7 + "✓" * 5 + "\U0001F600\n").encode() * 40000
    srv.put_ok(vid, "big.txt", big)
    rc, out, err = _on_terminal(srv, "get", vid, "big.txt", timeout=120)
    eq(rc, 0, "exit code of a %d-byte UTF-8 text to a terminal (stderr %r)" % (len(big), err))
    eq(sha256(out), sha256(big), "every byte of the long text")
    # text, then binary further on: stopped where it begins
    mixed = b"plain text line\n" * 20000 + b"\x00\x01\x02binary tail"
    srv.put_ok(vid, "mixed.log", mixed)
    rc, out, err = _on_terminal(srv, "get", vid, "mixed.log", timeout=120)
    eq(rc, 2, "exit code when binary follows text (stderr %r)" % err)
    check(b"\x00" not in out and mixed.startswith(out), "only the text before it was shown")
    contains(err.decode(), "binary content", "stderr")


def test_archive_refuses_a_terminal(srv):
    vid = new_vol(srv)
    srv.put_ok(vid, "a.txt", b"a")
    rc, out, err = _on_terminal(srv, "archive", vid)
    eq((rc, out), (2, b""), "archive to a terminal (stderr %r)" % err)
    contains(err.decode(), "will not write a gzip stream to a terminal", "stderr")


def test_range_checked_before_asking(srv):
    vid = new_vol(srv)
    srv.put_ok(vid, "r.txt", b"0123456789")
    for bad in ("5-2", "10-9", "99999999999999999999-", "-99999999999999999999", "1-2-3", "-"):
        p = run(srv, "get", vid, "r.txt", "--range", bad, rc=2)
        contains(err_text(p), "--range", "usage error for --range %s" % bad)
        eq(p.stdout, b"", "nothing printed for --range %s" % bad)
    eq(run(srv, "get", vid, "r.txt", "--range", "2-2").stdout, b"2", "--range 2-2")
    eq(run(srv, "get", vid, "r.txt", "--range", "bytes=8-").stdout, b"89", "--range bytes=8-")


def _c_string(tok):
    return bytes(tok[1:-1], "utf-8").decode("unicode_escape")


def _source_commands():
    """Each command of the tables in src/cli/*.c with the options its handler's
    parser table takes: {("group", "name") or ("name",): (usage, help, {long: short})}.
    Every handler declares its own `cli_opt opts[]` (src/cli/cli.h says so)."""
    src = os.path.join(harness.ROOT, "src", "cli")
    handlers, tables = {}, []
    for name in sorted(os.listdir(src)):
        if not name.endswith(".c"):
            continue
        with open(os.path.join(src, name)) as f:
            text = f.read()
        for m in re.finditer(r"^static int (\w+)\(const cli_cmd \*cmd, int argc, char \*\*argv\)"
                             r"\n\{\n(.*?)^\}", text, re.S | re.M):
            opts = {}
            for o in re.finditer(r'\{\s*"([a-z][a-z0-9-]*)"\s*,\s*(0|\'(.)\')\s*,\s*CLI_OPT_',
                                 m.group(2)):
                opts[o.group(1)] = o.group(3)
            handlers[m.group(1)] = opts
        for m in re.finditer(r"^const cli_cmd \w+\[\] = \{\n(.*?)^\};", text, re.S | re.M):
            tables.append(m.group(1))
    cmds = {}
    for table in tables:
        toks = re.findall(r'"(?:\\.|[^"\\])*"|[A-Za-z_]\w*|[{},]', table)
        depth, fields, cur = 0, [], None
        for t in toks:
            if t == "{":
                depth += 1
                if depth == 1:
                    fields, cur = [], None
            elif t == "}":
                if depth == 1:
                    fields.append(cur)
                    if fields[1] is not None:
                        group, name, usage, _, help_, fn = fields
                        key = (group, name) if group else (name,)
                        cmds[key] = (usage, help_ or "", handlers.get(fn))
                depth -= 1
            elif t == "," and depth == 1:
                fields.append(cur)
                cur = None
            elif t.startswith('"'):
                cur = (cur or "") + _c_string(t)
            elif t != "NULL":
                cur = t
    return cmds


def _accepts(srv, cmd, opt):
    """True when `coffer CMD OPT=v` gets past the parser's unknown-option check. A
    second, unknown option makes every run a usage error, so nothing is done."""
    p = run(srv, *cmd, opt + "=v", "--zz-not-an-option", rc=2)
    return ("unknown option '%s=v'" % opt) not in err_text(p)


def _opt_re(opt):
    return r"(?<![\w-])%s(?![\w-])" % re.escape(opt)


@harness.timeout(180)
def test_every_flag_in_usage_and_help(srv):
    """Each option a command's parser table (src/cli/*.c) takes is in its usage line
    (long name, or its one-letter alias) and in its help (`-x, --name` for an alias);
    each option the usage line names is in the table. `coffer CMD --help` must print
    the table's usage, and the binary must take the options read from the source."""
    cmds = _source_commands()
    check(len(cmds) >= 20, "commands read from src/cli: %r" % sorted(cmds))
    listed = run(srv, "--help").stdout.decode()
    problems = []
    for cmd, (usage, help_, opts) in sorted(cmds.items()):
        word = " ".join(cmd)
        contains(listed, "  " + word + " ", "coffer --help lists %r" % word)
        if cmd == ("serve",):
            continue  # hands everything to cofferd, whose own --help lists its flags
        if opts is None:
            problems.append("%s: no handler found in src/cli" % word)
            continue
        shown = run(srv, *cmd, "--help").stdout.decode()
        eq(shown.splitlines()[0], "usage: coffer %s %s" % (word, usage),
           "the usage line %s --help prints" % word)
        for name, short in sorted(opts.items()):
            if not _accepts(srv, cmd, "--" + name):
                problems.append("%s: --%s read from the source but refused" % (word, name))
            if not re.search(_opt_re("--" + name), usage) and \
                    not (short and re.search(_opt_re("-" + short), usage)):
                problems.append("%s: usage line lacks --%s" % (word, name))
            if not re.search(_opt_re("--" + name), help_):
                problems.append("%s: help lacks --%s" % (word, name))
            if short and not re.search(r"-%s, --%s\b" % (short, re.escape(name)), help_):
                problems.append("%s: help lacks '-%s, --%s'" % (word, short, name))
        named = set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", usage + "\n" + help_))
        for name in sorted(named):
            if name not in opts and name not in ("server", "key", "json", "verbose", "help"):
                problems.append("%s: names --%s, which its parser does not take"
                                % (word, name))
        for g in ("--server", "--key", "--json", "--verbose", "--help"):
            if g not in shown.split("Global flags", 1)[-1]:
                problems.append("%s: help lacks the global flag %s" % (word, g))
    check(not problems, "usage and help out of step with the parsers:\n  " +
          "\n  ".join(problems))


def test_counts_singular_and_plural(srv):
    """'1 byte', '2 bytes' in what coffer prints (here: coffer mcp's relay tools)."""
    from test_mcp import Session
    from test_relay import _session
    s, c, root = _session(srv, files={"one.bin": b"\xff", "two.bin": b"\xff\xfe"})
    m = Session("--agent", s["agent"], "--server", srv.url, "--key", srv.key)
    try:
        m.initialize()
        text, _ = m.ok("write_file", path="w1.txt", content="x")
        contains(text, "(1 byte)", "write_file of one byte")
        text, _ = m.ok("write_file", path="w2.txt", content="xy")
        contains(text, "(2 bytes)", "write_file of two bytes")
        text, _ = m.ok("read_file", path="one.bin")
        contains(text, "1 byte,", "read_file of a one-byte binary file")
        check("1 bytes" not in text, text)
        text, _ = m.ok("read_file", path="two.bin")
        contains(text, "2 bytes,", "read_file of a two-byte binary file")
    finally:
        m.close()
        c.close()


# ---------------------------------------------------- names and --jq (issue 39 item 4)

def test_volumes_by_name(srv):
    """Every command whose usage starts with VOL takes the volume's name as well as its id;
    a name no volume has, or several have, is refused naming the ids, and nothing is sent
    to the wrong volume."""
    name = "named-%d" % (time.time_ns() % 10**12)
    vid = run(srv, "volume", "create", name, "--jq", ".id").stdout.decode().strip()
    check(re.fullmatch(r"vol_[a-z2-7]{20}", vid), "--jq .id prints the raw id: %r" % vid)
    run(srv, "put", name, "docs/a.md", "-", input=b"# by name")
    eq(srv.get_file(vid, "docs/a.md").body, b"# by name", "put by name wrote the volume")
    eq(run(srv, "get", name, "docs/a.md").stdout, b"# by name", "get by name")
    eq(run(srv, "ls", name, "--jq", ".files[].path").stdout.decode(), "docs/a.md\n", "ls by name")
    eq(run(srv, "volume", "get", name, "--jq", ".id").stdout.decode().strip(), vid,
       "volume get by name")
    sid = run(srv, "snapshot", "create", name, "--jq", ".id").stdout.decode().strip()
    run(srv, "rm", name, "docs/a.md")
    run(srv, "restore", name, sid)
    eq(srv.get_file(vid, "docs/a.md").body, b"# by name", "restore by name")
    # a name that is a prefix of another volume's name is still exact
    other = run_json(srv, "volume", "create", name + "-2")["id"]
    eq(run(srv, "volume", "get", name, "--jq", ".id").stdout.decode().strip(), vid,
       "the exact name, not the longer one")
    p = run(srv, "ls", name + "-none", rc=1)
    contains(err_text(p), "(not_found)", "an unknown name is asked for as an id: the 404")
    contains(err_text(p), name + "-none", "and named in it")
    twin = run_json(srv, "volume", "create", name)["id"]
    p = run(srv, "put", name, "b.txt", "-", input=b"x", rc=1)
    contains(err_text(p), "2 volumes are named '%s'" % name, "ambiguous name refused")
    contains(err_text(p), vid, "the message lists the ids")
    contains(err_text(p), twin, "the message lists the ids")
    eq(srv.get("/v1/volumes/%s/files/b.txt" % vid).status, 404, "nothing written to the first")
    eq(srv.get("/v1/volumes/%s/files/b.txt" % twin).status, 404, "nor to the second")
    # an id is used as it is (no lookup can shadow it)
    eq(run(srv, "volume", "get", twin, "--jq", ".id").stdout.decode().strip(), twin, "by id")
    run(srv, "volume", "rm", other)


def test_jq_filters_every_json_answer(srv):
    """--jq EXPR (libjq): strings print raw, other results compact, one a line; a program
    that does not compile is a usage error before any request; a run-time error exits 1."""
    vid = new_vol(srv)
    srv.put_ok(vid, "a.txt", b"a")
    srv.put_ok(vid, "b.txt", b"bb")
    eq(run(srv, "ls", vid, "--jq", ".files[] | [.path, .size]").stdout.decode(),
       '["a.txt",1]\n["b.txt",2]\n', "compact JSON, one result a line")
    eq(run(srv, "--jq", ".seq", "ls", vid).stdout.decode(), "2\n", "--jq before the command")
    eq(run(srv, "changes", vid, "--jq", ".changes | length").stdout.decode(), "2\n", "changes")
    p = run(srv, "ls", vid, "--jq", ".files[", "--server", "http://127.0.0.1:1", rc=2)
    contains(err_text(p), "--jq: jq: error", "jq's own message, before any request")
    p = run(srv, "volume", "get", vid, "--jq", ".name.x", rc=1)
    contains(err_text(p), "--jq: Cannot index string", "run-time error named")


def _complete(srv, script, *words):
    """What bash's completion offers after `coffer WORDS...` (the last word is the one
    being completed), with the script loaded and coffer on the PATH."""
    words = ["coffer"] + list(words)
    prog = (script + "\nCOMP_WORDS=(%s); COMP_CWORD=%d; _coffer; printf '%%s\\n' \"${COMPREPLY[@]}\"\n"
            % (" ".join("'%s'" % w for w in words), len(words) - 1))
    env = dict(os.environ, COFFER_URL=srv.url, COFFER_KEY=srv.key,
               PATH=os.path.dirname(harness.coffer_binary()) + os.pathsep + os.environ["PATH"])
    p = subprocess.run(["bash", "-c", prog], capture_output=True, env=env, timeout=60)
    eq(p.returncode, 0, "bash completion ran (stderr %r)" % p.stderr[-2000:])
    return sorted(l for l in p.stdout.decode().splitlines() if l)


def test_completion_scripts(srv):
    """`coffer completion bash|zsh|fish` (issue 39 item 4): made from the command tables;
    bash completes commands, subcommands, each command's options and volume names."""
    script = run(srv, "completion", "bash").stdout.decode()
    p = subprocess.run(["bash", "-n"], input=script.encode(), capture_output=True, timeout=30)
    eq(p.returncode, 0, "bash -n (stderr %r)" % p.stderr)
    eq(_complete(srv, script, "vol"), ["volume"], "a group word")
    eq(_complete(srv, script, "volume", "c"), ["create"], "a subcommand")
    eq(_complete(srv, script, "put", "x", "--if"), ["--if-match", "--if-none-match"],
       "a command's options, from its usage line")
    eq(_complete(srv, script, "--json", "snapshot", "ls", "v", "--l"), ["--label"],
       "after a global flag and a group")
    name = "compl-%d" % (time.time_ns() % 10**12)
    run(srv, "volume", "create", name)
    check(name in _complete(srv, script, "ls", "compl-"), "a volume's name for VOL")
    eq(_complete(srv, script, "ls", name, "--gl"), ["--glob"], "options after VOL")
    for shell, check_cmd in (("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])):
        text = run(srv, "completion", shell).stdout.decode()
        contains(text, "coffer", "%s script" % shell)
        if shutil.which(check_cmd[0]):
            p = subprocess.run(check_cmd, input=text.encode(), capture_output=True, timeout=30)
            eq(p.returncode, 0, "%s parses its script (stderr %r)" % (shell, p.stderr))
    p = run(srv, "completion", "tcsh", rc=2)
    contains(err_text(p), "no completion for shell 'tcsh'", "an unknown shell")
