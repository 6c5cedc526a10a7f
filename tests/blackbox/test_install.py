"""`make install PREFIX=... DESTDIR=...` (docs/api.md "Installing") and `cofferd --config
FILE` (docs/api.md "Config file"): what lands where, the systemd unit as
`systemd-analyze verify` sees it, the installed binaries serving with the example config,
and the config file's rules (flags win; bad lines named)."""

import os
import shutil
import stat
import subprocess
import tempfile

import harness
from harness import check, contains, eq, expect

TIMEOUT = 300


def _make_install(**vars):
    args = ["make", "-s", "-C", harness.ROOT, "install", "BUILD=" + harness.BUILD]
    args += ["%s=%s" % kv for kv in sorted(vars.items())]
    p = subprocess.run(args, capture_output=True, timeout=240 * harness.SCALE)
    eq(p.returncode, 0, "%s exit (stderr %r)" % (" ".join(args), p.stderr.decode()[-2000:]))


def test_install_into_destdir():
    dest = tempfile.mkdtemp(prefix="coffer-destdir-")
    try:
        _make_install(PREFIX="/usr/local", DESTDIR=dest)
        root = dest + "/usr/local"
        for f, mode in (("bin/cofferd", 0o755), ("bin/coffer", 0o755),
                        ("bin/coffer-exec", 0o755), ("share/man/man1/coffer.1", 0o644),
                        ("share/man/man8/cofferd.8", 0o644),
                        ("lib/systemd/system/cofferd.service", 0o644),
                        ("lib/sysusers.d/coffer.conf", 0o644),
                        ("share/doc/coffer/cofferd.conf.example", 0o644),
                        ("etc/coffer/cofferd.conf", 0o644)):
            p = os.path.join(root, f)
            check(os.path.isfile(p), "installed: %s" % f)
            eq(stat.S_IMODE(os.stat(p).st_mode), mode, "mode of %s" % f)
        unit = open(root + "/lib/systemd/system/cofferd.service").read()
        for line in ("ExecStart=/usr/local/bin/cofferd --config /usr/local/etc/coffer/cofferd.conf"
                     " --data /var/lib/coffer", "User=coffer", "StateDirectory=coffer",
                     "ProtectSystem=strict", "NoNewPrivileges=yes", "Delegate=yes",
                     "DeviceAllow=/dev/fuse rw", "CapabilityBoundingSet="):
            contains(unit.splitlines(), line, "a line of the unit")
        check("@" not in unit.replace("$MAINPID", ""), "no placeholder left in the unit")
        v = subprocess.run([root + "/bin/cofferd", "--version"], capture_output=True, timeout=30)
        eq((v.returncode, v.stdout.decode().split()[0]), (0, "cofferd"), "cofferd --version")
        # an admin's own config is never overwritten by a later install
        conf = root + "/etc/coffer/cofferd.conf"
        with open(conf, "w") as f:
            f.write("listen = 127.0.0.1:7701\n")
        _make_install(PREFIX="/usr/local", DESTDIR=dest)
        eq(open(conf).read(), "listen = 127.0.0.1:7701\n", "the config after a second install")
        # the installed binaries serve, with the example config (its listen loses to
        # the flag the harness gives)
        with harness.server(build=root + "/bin",
                            args=["--config", root + "/share/doc/coffer/cofferd.conf.example"]) as s:
            vol = s.create_volume()
            s.put_ok(vol["id"], "a.txt", b"installed")
            eq(expect(s.get_file(vol["id"], "a.txt"), 200).body, b"installed", "round trip")
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def test_unit_verifies():
    tool = shutil.which("systemd-analyze")
    if not tool:
        harness.skip("systemd-analyze is not installed (package systemd)")
    prefix = tempfile.mkdtemp(prefix="coffer-prefix-")
    try:
        # a real prefix (no DESTDIR), so the paths the unit names exist to be checked
        _make_install(PREFIX=prefix)
        unit = os.path.join(prefix, "lib/systemd/system/cofferd.service")
        p = subprocess.run([tool, "verify", "--man=no", unit], capture_output=True, timeout=60)
        eq(p.returncode, 0, "systemd-analyze verify (stderr %r)" % p.stderr.decode())
        eq(p.stderr.decode().strip(), "", "no warning from systemd-analyze verify")
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


def _cofferd(*args, timeout=30):
    exe = os.path.join(harness.ROOT, harness.BUILD, "cofferd")
    return subprocess.run([exe] + list(args), capture_output=True, timeout=timeout)


def test_config_file_flags_and_flags_win():
    d = tempfile.mkdtemp(prefix="coffer-conf-")
    try:
        conf = os.path.join(d, "c.conf")
        file_log, flag_log = os.path.join(d, "file.log"), os.path.join(d, "flag.log")
        with open(conf, "w") as f:
            f.write("# a comment\n\n  rate-limit = 1000\nlog \"%s\"\nlisten=127.0.0.1:1\n"
                    % file_log)
        # the file's log, the command line's listen (harness) winning over the file's
        with harness.server(args=["--config", conf]) as s:
            expect(s.get("/v1/volumes"), 200)
            s.stop()
        check(os.path.exists(file_log) and "/v1/volumes" in open(file_log).read(),
              "the request log named in the file was written")
        os.unlink(file_log)
        # a flag given wins over the file's
        with harness.server(args=["--config", conf, "--log", flag_log]) as s:
            expect(s.get("/v1/volumes"), 200)
            s.stop()
        check("/v1/volumes" in open(flag_log).read(), "the flag's log was written")
        check(not os.path.exists(file_log), "the file's log was not")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_config_file_errors_are_named():
    d = tempfile.mkdtemp(prefix="coffer-conf-")
    try:
        cases = (("listen = 127.0.0.1:0\n= x\n", "c.conf:2"),
                 ("listen\n", "c.conf:1"),
                 ("frobnicate = 3\n", "--frobnicate"),
                 ("config = other.conf\n", "c.conf:1"),
                 ("rate-limit = lots\n", "--rate-limit"))
        for text, words in cases:
            with open(os.path.join(d, "c.conf"), "w") as f:
                f.write(text)
            p = _cofferd("--config", os.path.join(d, "c.conf"), "--data", os.path.join(d, "x"))
            eq(p.returncode, 2, "exit for a config of %r" % text)
            contains(p.stderr.decode(), words, "message for %r" % text)
        p = _cofferd("--config", os.path.join(d, "absent.conf"))
        eq(p.returncode, 2, "exit for a missing config")
        contains(p.stderr.decode(), "absent.conf", "message")
        check(not os.path.exists(os.path.join(d, "x")), "no data dir made on a bad config")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_config_must_be_a_regular_file_without_nul():
    """Issue 32.10: `--config DIR` started with no flags at all (a directory reads as
    empty), `--config /dev/zero` spun for ever, and a NUL byte cut its line short (the
    rest of the line silently dropped). Each is exit 2 naming the file and what is wrong;
    no data dir is made."""
    d = tempfile.mkdtemp(prefix="coffer-conf-")
    try:
        data = os.path.join(d, "x")
        cut = os.path.join(d, "nul.conf")
        with open(cut, "wb") as f:
            f.write(b"listen = 127.0.0.1:0\nlog = /tmp/a\x00.log\n")
        big = os.path.join(d, "big.conf")
        with open(big, "wb") as f:
            f.write((b"# " + b"c" * 1000 + b"\n") * 1100)
        for conf, words in ((d, "a directory"), ("/dev/zero", "not a regular file"),
                            (cut, "nul.conf:2: a NUL byte at column 13"),
                            (big, "over 1048576 bytes")):
            p = _cofferd("--config", conf, "--data", data, timeout=20)
            eq(p.returncode, 2, "exit for --config %s (stderr %r)" % (conf, p.stderr[-300:]))
            contains(p.stderr.decode(), words, "message for --config %s" % conf)
            contains(p.stderr.decode(), conf, "names the file")
        check(not os.path.exists(data), "no data dir made on a bad config")
    finally:
        shutil.rmtree(d, ignore_errors=True)
