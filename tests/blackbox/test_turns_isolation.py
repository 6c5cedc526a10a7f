"""Turns: a turn cannot hurt another turn or the host (docs/design.md
"Confinement"): a shared disk limit stops only turns that grew; a call sees the
system's programs and its own workspace, nothing of other turns, the data dir or
the host's private folders; bytes a call wrote never run (memfd included)."""

import os
import threading
import time

import harness
from harness import check, contains, eq, expect
from turnlib import call, make_agent, new_turn, ok

TIMEOUT = 120


# ---- a shared limit stops only the turns that grew

def _victim_at_rest(s, parallel=True):
    aid = make_agent(s, sandbox={"scratch": "64m", "turnDisk": "16m", "userDisk": "32m"})
    victim = new_turn(s, aid, user="victim")
    ok(s, victim["id"], "dd if=/dev/zero of=keep bs=1M count=8 2>/dev/null")
    res = {}
    th = threading.Thread(target=lambda: res.update(out=call(
        s, victim["id"], "sleep 6; du -k keep", timeoutSeconds=60)))
    th.start()
    time.sleep(1)
    limits, growers = [], [new_turn(s, aid, user="grower%d" % i) for i in range(4)]

    def grow(t):
        limits.append(call(s, t["id"], "dd if=/dev/zero of=f bs=1M count=15 2>/dev/null; "
                           "sleep %s" % (2 if parallel else 0.6), timeoutSeconds=60).get("limit"))
    ths = [threading.Thread(target=grow, args=(t,)) for t in growers]
    for g in ths:
        g.start()
        if not parallel:
            g.join(60)
    for g in ths + [th]:
        g.join(60)
    out = res["out"]
    check("scratch" in limits, "one of the growers reached scratch: %r" % limits)
    eq(out.get("limit"), None, "the victim at rest: %r" % out)
    eq(out["stdout"].split()[:1], ["8192"], "the victim's file")
    eq(ok(s, victim["id"], "du -k keep")["stdout"].split()[:1], ["8192"], "after")


def test_shared_limit_spares_a_turn_at_rest(srv):
    _victim_at_rest(srv)


def test_shared_limit_spares_a_turn_at_rest_growers_one_by_one(srv):
    _victim_at_rest(srv, parallel=False)


def test_walk_mode_shared_limit_spares_a_turn_at_rest():
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        _victim_at_rest(s)


def test_shared_limit_spares_a_grower_within_its_share(srv):
    # both grow in their call: the one past its share (32m / 2) is stopped
    aid = make_agent(srv, sandbox={"scratch": "32m", "turnDisk": "30m", "userDisk": "32m"})
    small = new_turn(srv, aid, user="small")
    res = {}
    th = threading.Thread(target=lambda: res.update(out=call(
        srv, small["id"], "dd if=/dev/zero of=f bs=1M count=4 2>/dev/null; sleep 5",
        timeoutSeconds=60)))
    th.start()
    time.sleep(1.5)
    big = new_turn(srv, aid, user="big")
    out = call(srv, big["id"], "dd if=/dev/zero of=f bs=1M count=40 2>/dev/null; sleep 1")
    eq(out.get("limit"), "scratch", "the grower past its share: %r" % out)
    th.join(60)
    eq(res["out"].get("limit"), None, "the grower within its share: %r" % res["out"])
    eq(ok(srv, small["id"], "du -k f")["stdout"].split()[:1], ["4096"], "its file")


# ---- what a call sees

def test_mounts_name_no_other_turn_nor_the_data_dir(srv):
    a = new_turn(srv)
    ok(srv, a["id"], "echo a > f")
    b = new_turn(srv, a["agent"])
    out = ok(srv, b["id"], "cat /proc/self/mounts")
    check(a["id"] not in out["stdout"], "another turn named: %r" % out["stdout"])
    check(b["id"] not in out["stdout"], "its own id named: %r" % out["stdout"])
    check(srv.data not in out["stdout"] and srv.root not in out["stdout"],
          "the data dir named: %r" % out["stdout"])
    info = ok(srv, b["id"], "cat /proc/self/mountinfo")["stdout"]
    check(a["id"] not in info, "another turn named in mountinfo: %r" % info)
    if os.geteuid() == 0:  # as non-root a workspace is a bound folder, named in it
        check(srv.data not in info and "/scratch" not in info, "mountinfo: %r" % info)


def test_host_folders_absent(srv):
    t = new_turn(srv)
    for d in ["/work", "/home", "/root", "/srv", "/var", "/var/lib", "/mnt", "/opt",
              "/run", "/sys", "/boot", srv.data]:
        out = call(srv, t["id"], "ls -A %s" % d)
        check(out["exitCode"] != 0 or out["stdout"] == "", "%s seen: %r" % (d, out))


def test_etc_secrets_absent(srv):
    t = new_turn(srv)
    for f in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/ssh_host_rsa_key",
              "/etc/ssl/private/ssl-cert-snakeoil.key",
              "/etc/ssh/ssh_host_ed25519_key"]:
        out = call(srv, t["id"], "cat %s" % f)
        check(out["exitCode"] != 0 and out["stdout"] == "", "%s read: %r" % (f, out))
    out = ok(srv, t["id"], "ls /etc")
    for name in ["passwd", "ld.so.cache"]:
        contains(out["stdout"].split(), name, "/etc has what programs need")
    if os.path.isdir("/etc/ssl/private"):
        eq(ok(srv, t["id"], "ls -A /etc/ssl")["stdout"].split(), sorted(
            n for n in ["certs", "openssl.cnf"] if os.path.exists("/etc/ssl/" + n)),
           "/etc/ssl without private/")
    ok(srv, t["id"], "python3 -c 'import ssl; c = ssl.create_default_context(); "
       "assert c.cert_store_stats()[\"x509_ca\"] > 0'")


def test_root_read_only(srv):
    t = new_turn(srv)
    out = call(srv, t["id"], "mkdir /new || echo x > /x")
    contains(out["stderr"], "Read-only", "stderr")


def test_programs_still_run(srv):
    t = new_turn(srv)
    eq(ok(srv, t["id"], "python3 -c 'print(6*7)'")["stdout"], "42\n", "python3")
    eq(ok(srv, t["id"], "/usr/bin/python3 -c 'import json, ssl; print(1)'")["stdout"],
       "1\n", "python3 with ssl")
    eq(ok(srv, t["id"], "sh -c 'echo hi' | tr a-z A-Z; awk 'BEGIN{print 1}'")["stdout"],
       "HI\n1\n", "sh, tr, awk (through /etc/alternatives)")
    eq(ok(srv, t["id"], "echo $HOME $TMPDIR; pwd")["stdout"], "/tmp /tmp\n/tmp\n", "env")


# ---- bytes a call wrote never run

MEMFD_EXEC = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
flags = int(sys.argv[1])
fd = libc.memfd_create(b"x", flags)
if fd < 0:
    print("memfd refused", ctypes.get_errno()); sys.exit(3)
os.write(fd, open("/bin/true", "rb").read())
try:
    os.execv("/proc/self/fd/%d" % fd, ["t"])
except OSError as e:
    print("exec refused", e.errno)
empty = ctypes.c_char_p(b"")
argv = (ctypes.c_char_p * 2)(b"t", None)
r = libc.syscall(322, fd, empty, argv, argv, 0x1000)  # execveat AT_EMPTY_PATH
print("execveat refused", ctypes.get_errno())
sys.exit(4)
"""


def test_memfd_bytes_never_run(srv):
    t = new_turn(srv)
    ok(srv, t["id"], "cat > m.py", stdin=MEMFD_EXEC)
    for flags, what in [(0, "no flags"), (1, "MFD_CLOEXEC"), (0x10, "MFD_EXEC"),
                        (8, "MFD_NOEXEC_SEAL")]:
        out = call(srv, t["id"], "python3 m.py %d" % flags)
        check(out["exitCode"] in (3, 4), "a memfd (%s) ran: %r" % (what, out))
        if flags != 8:
            contains(out["stdout"], "memfd refused 38", "memfd_create (%s): ENOSYS" % what)


def _exec_refused_in(srv, dirs):
    t = new_turn(srv)
    for d in dirs:
        out = call(srv, t["id"], "cp /bin/true %s/t 2>/dev/null && %s/t && echo ran" % (d, d))
        check("ran" not in out["stdout"], "ran from %s: %r" % (d, out))


def test_exec_refused_in_dev(srv):
    _exec_refused_in(srv, ["/dev/shm", "/dev/pts", "/dev/mqueue", "/dev", "/"])


def _noexec(srv):
    if os.geteuid() != 0 and "landlock" not in srv.log():
        harness.skip("needs root or landlock: the workspace is noexec as a tmpfs cofferd "
                     "mounts as root, or by coffer-exec's landlock rules: %s" % srv.log())


def test_exec_refused_in_the_workspace(srv):
    _noexec(srv)
    _exec_refused_in(srv, ["/tmp", "$HOME", "$TMPDIR", "/tmp/outbox"])


def test_execveat_of_a_workspace_file_refused(srv):
    _noexec(srv)
    t = new_turn(srv)
    out = call(srv, t["id"], "cp /bin/true t; python3 -c \"import ctypes, os\n"
               "l = ctypes.CDLL(None, use_errno=True); fd = os.open('t', os.O_RDONLY)\n"
               "argv = (ctypes.c_char_p * 2)(b't', None)\n"
               "l.syscall(322, fd, ctypes.c_char_p(b''), argv, argv, 0x1000)\n"
               "print('refused', ctypes.get_errno())\"")
    contains(out["stdout"], "refused 13", "execveat(fd, \"\", AT_EMPTY_PATH): EACCES")
