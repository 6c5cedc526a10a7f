"""`make install PREFIX=... DESTDIR=...` (docs/api.md "Installing") and `cofferd --config
FILE` (docs/api.md "Config file"): what lands where, the systemd unit as
`systemd-analyze verify` sees it, the installed binaries serving with the example config,
and the config file's rules (flags win; bad lines named)."""

import http.client
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile

import harness
from harness import check, contains, eq, expect

TIMEOUT = 300


def _shell_env():
    """The environment of a user who types `make install` in a shell: the suite itself may
    run under make (make test, make asan), whose MAKEFLAGS (-w, BUILD=, CC=) a child make
    would inherit and obey."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def _make_install(**vars):
    args = ["make", "-s", "-C", harness.ROOT, "install", "BUILD=" + harness.BUILD]
    args += ["%s=%s" % kv for kv in sorted(vars.items())]
    p = subprocess.run(args, capture_output=True, timeout=240 * harness.SCALE, env=_shell_env())
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
                     " --data /var/lib/coffer", "User=coffer", "StateDirectory=coffer", "LogsDirectory=coffer",
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


def test_install_needs_a_built_tree():
    """Issue 39.6: `sudo make install` built as root (root-owned objects in build/) and ran
    apt-get through scripts/deps. It now copies what `make` built and nothing else: with no
    built tree, or one make would rebuild, it stops saying to run `make` first, before
    anything is installed or built."""
    tmp = tempfile.mkdtemp(prefix="coffer-nobuild-")
    try:
        dest, empty, stale = tmp + "/dest", tmp + "/empty", tmp + "/stale"
        os.mkdir(empty)
        os.mkdir(stale)
        # binaries without the objects they are made from: make would rebuild them
        for b in ("cofferd", "coffer", "coffer-exec"):
            shutil.copy2(os.path.join(harness.ROOT, harness.BUILD, b), stale)
        for build, words in ((empty, "/empty/cofferd is not built"),
                             (stale, "/stale is older than its sources")):
            p = subprocess.run(["make", "-s", "-C", harness.ROOT, "install", "BUILD=" + build,
                                "DESTDIR=" + dest], capture_output=True, timeout=120,
                               env=_shell_env())
            err = p.stderr.decode()
            check(p.returncode != 0, "make install with BUILD=%s fails" % build)
            contains(err, words, "message for BUILD=%s" % build)
            contains(err, "run `make` first, as yourself (not root)", "what to do")
            check(not os.path.exists(dest), "nothing installed from BUILD=%s" % build)
            eq(p.stdout.decode(), "", "nothing run (no compiler, no scripts/deps)")
        eq(sorted(os.listdir(empty)), [], "nothing built into the empty tree")
        eq(sorted(os.listdir(stale)), ["coffer", "coffer-exec", "cofferd"],
           "nothing built into the stale tree")
        # and on a built tree, what install runs is copies only
        p = subprocess.run(["make", "-C", harness.ROOT, "-n", "install",
                            "BUILD=" + harness.BUILD, "DESTDIR=" + dest],
                           capture_output=True, timeout=120, env=_shell_env())
        eq(p.returncode, 0, "make -n install (stderr %r)" % p.stderr.decode()[-2000:])
        cmds = p.stdout.decode().splitlines()
        for l in cmds:
            check(not re.match(r"\s*(\S*/)?(deps|apt-get|apt|cc|gcc|clang|mkdir|xxd|ar)\b", l),
                  "make install runs no build step nor apt: %r" % l)
        check(any(l.startswith("install -m 0755") for l in cmds), "it installs: %r" % cmds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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


def _service(unit_text):
    """The [Service] settings of a unit as (name, value) pairs, in order."""
    out, inside = [], False
    for line in unit_text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == "[Service]"
        elif inside and line and not line.startswith("#") and "=" in line:
            out.append(tuple(line.split("=", 1)))
    return out


def test_example_log_path_is_writable_under_the_unit():
    """Issue 39.6: under ProtectSystem=strict only the unit's StateDirectory= and
    LogsDirectory= are writable; the example config's log path must be in one of them."""
    unit = _service(open(os.path.join(harness.ROOT, "contrib/cofferd.service.in")).read())
    conf = open(os.path.join(harness.ROOT, "contrib/cofferd.conf")).read()
    m = re.search(r"^#?\s*log\s*=\s*(\S+)\s*$", conf, re.M)
    check(m, "the example config names a log path")
    settings = dict(unit)
    eq(settings.get("ProtectSystem"), "strict", "ProtectSystem")
    writable = ["/var/lib/" + settings.get("StateDirectory", "?"),
                "/var/log/" + settings.get("LogsDirectory", "?")]
    check(os.path.dirname(m.group(1)) in writable,
          "the log path %s is in one of %s" % (m.group(1), writable))
    check("ReadWritePaths" not in settings, "no other writable path")


def test_unit_starts_under_systemd_run():
    """The installed cofferd started by systemd with the unit's own [Service] sandbox, the
    example config's log line in force: it serves and writes its request log."""
    if not os.path.isdir("/run/systemd/system"):
        harness.skip("systemd is not the init of this machine (no /run/systemd/system): "
                     "systemd-run cannot start a service here")
    if os.geteuid() != 0:
        harness.skip("starting a system service needs root")
    name = "coffer-test-%d" % os.getpid()
    # outside /tmp and /home: the unit has PrivateTmp= and ProtectHome=
    prefix = tempfile.mkdtemp(prefix="coffer-unit-", dir="/run")
    try:
        _make_install(PREFIX=prefix)
        unit = _service(open(prefix + "/lib/systemd/system/cofferd.service").read())
        have_user = subprocess.run(["getent", "passwd", "coffer"],
                                   capture_output=True).returncode == 0
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        conf = open(prefix + "/share/doc/coffer/cofferd.conf.example").read()
        conf = re.sub(r"^#?\s*log\s*=.*$", "log = /var/log/%s/requests.log" % name, conf,
                      flags=re.M)
        conf = re.sub(r"^listen\s*=.*$", "listen = 127.0.0.1:%d" % port, conf, flags=re.M)
        with open(prefix + "/test.conf", "w") as f:
            f.write(conf)
        props = []
        for k, v in unit:
            if k in ("ExecStart", "ExecReload", "Restart", "RestartSec"):
                continue
            if k in ("User", "Group") and not have_user:
                continue
            if k in ("StateDirectory", "LogsDirectory"):
                v = name
            props += ["-p", "%s=%s" % (k, v)]
        p = subprocess.run(["systemd-run", "--unit", name, "--collect"] + props +
                           [prefix + "/bin/cofferd", "--config", prefix + "/test.conf",
                            "--data", "/var/lib/" + name], capture_output=True, timeout=60)
        eq(p.returncode, 0, "systemd-run (stderr %r)" % p.stderr.decode())
        try:
            def up():
                try:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    c.request("GET", "/v1/health")
                    return c.getresponse().status == 200
                except OSError:
                    return False
            harness.until(up, "the service answers /v1/health", timeout=60)
            log = "/var/log/%s/requests.log" % name
            harness.until(lambda: os.path.exists(log) and "/v1/health" in open(log).read(),
                          "the request log in the LogsDirectory is written", timeout=30)
        finally:
            subprocess.run(["systemctl", "stop", name], capture_output=True, timeout=90)
    finally:
        for d in (prefix, "/var/lib/" + name, "/var/log/" + name):
            shutil.rmtree(d, ignore_errors=True)


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
