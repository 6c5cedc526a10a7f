"""Turns: a call's /etc is a copy of the allowed part of the host's, made once
and again when the host's changes (docs/design.md "A call's /etc"): it follows
the host's /etc, never shows a name outside the allowlist, a running call keeps
the copy it started with, and a replaced copy goes once its last call ends.
Also: a call with an empty outbox leaves no folder behind on the scratch disk.

These change the host's /etc (a name of the allowlist this system lacks, and
a secret-looking name), so they need root; each removes what it made."""

import fcntl
import os
import threading
import time

import harness
from harness import check, contains, eq
from turnlib import call, new_turn, ok

TIMEOUT = 120

# names of the allowlist (src/turn/etcview.c) a Debian image seldom has
_CANDIDATES = ["papersize", "mailcap", "locale.conf", "lsb-release"]


_held = []


def _free_name():
    """A candidate name absent from /etc, held (flock) for this process's life: the
    two passes, and other runs, run at once and must not share one."""
    if os.geteuid() != 0:
        harness.skip("needs root: these tests write the host's /etc")
    if _held:  # this process's own, each test removing what it made
        return _held[0][1]
    for n in _CANDIDATES:
        fd = os.open("/tmp/coffer-test-etc-%s.lock" % n, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        if not os.path.lexists("/etc/" + n):
            _held.append((fd, n))
            return n
        os.close(fd)
    harness.skip("every candidate name exists in this /etc or is in use: %s" % _CANDIDATES)


def _write(path, text):
    tmp = path + ".coffer-test"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def _until(fn, what, seconds=10):
    """fn() until true (a change reaches the copy at the next call)."""
    end = time.time() + seconds
    while True:
        got = fn()
        if got or time.time() > end:
            check(got, what)
            return
        time.sleep(0.2)


def test_etc_follows_the_hosts(srv):
    name = _free_name()
    t = new_turn(srv)
    path = "/etc/" + name
    eq(call(srv, t["id"], "cat %s" % path)["exitCode"] != 0, True, "%s absent" % path)
    try:
        _write(path, "a4\n")
        _until(lambda: call(srv, t["id"], "cat %s" % path)["stdout"] == "a4\n",
               "a new allowed file is seen")
        with open(path, "w") as f:  # in place, not replaced
            f.write("letter\n")
        _until(lambda: call(srv, t["id"], "cat %s" % path)["stdout"] == "letter\n",
               "a file changed in place is seen")
        os.chmod(path, 0o600)
        _until(lambda: call(srv, t["id"], "cat %s" % path)["exitCode"] != 0,
               "a file only root may read stays so")
    finally:
        if os.path.exists(path):
            os.unlink(path)
    _until(lambda: call(srv, t["id"], "cat %s" % path)["exitCode"] != 0,
           "a removed file is gone")
    eq(ok(srv, t["id"], "head -c 5 /etc/passwd")["stdout"], "root:", "/etc/passwd still")


def test_etc_never_shows_other_names(srv):
    _free_name()
    t = new_turn(srv)
    secret = "/etc/coffer-test-secret-%d" % os.getpid()
    try:
        _write(secret, "k\n")
        # a change of an allowed file makes a new copy: still without it
        os.utime("/etc/passwd")
        for _ in range(3):
            out = ok(srv, t["id"], "ls -A /etc")
            check(os.path.basename(secret) not in out["stdout"].split(),
                  "%s seen: %r" % (secret, out["stdout"]))
            time.sleep(0.3)
    finally:
        os.unlink(secret)


def test_a_running_call_keeps_its_copy(srv):
    name = _free_name()
    t = new_turn(srv)
    other = new_turn(srv, t["agent"], user="u2")
    ok(srv, t["id"], "true")
    res = {}
    th = threading.Thread(target=lambda: res.update(out=call(
        srv, t["id"], "sleep 3; head -c 5 /etc/passwd; ls /etc | wc -l", timeoutSeconds=60)))
    th.start()
    time.sleep(1)
    path = "/etc/" + name
    try:
        _write(path, "x\n")
        # the other turn's call makes the new copy while the first runs
        _until(lambda: call(srv, other["id"], "cat %s" % path)["stdout"] == "x\n",
               "the new copy")
        th.join(60)
    finally:
        os.unlink(path)
    out = res["out"]
    eq(out["exitCode"], 0, "the running call: %r" % out)
    check(out["stdout"].startswith("root:"), "its /etc/passwd was kept: %r" % out)
    check(int(out["stdout"][5:].strip()) > 5, "its /etc was kept whole: %r" % out)
    ok(srv, other["id"], "true")
    copies = os.path.join(srv.data, "scratch", "etc")
    _until(lambda: len([n for n in os.listdir(copies) if n.startswith("g")]) == 1,
           "replaced copies are removed: %r" % os.listdir(copies))
    contains(open("/proc/mounts").read(), copies + " tmpfs", "the copies are on a tmpfs")


def test_an_empty_outbox_leaves_no_folder(srv):
    t = new_turn(srv)
    ok(srv, t["id"], "true")
    kept = os.path.join(srv.data, "scratch", "kept", t["id"])
    eq(os.listdir(kept) if os.path.isdir(kept) else [], [], "kept folders of %s" % t["id"])
