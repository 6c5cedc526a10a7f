"""pgpeer — a real PostgreSQL 15 for the tests: one cluster per test run, one database
per cofferd (Python 3 standard library only; the Debian packages `postgresql` and
`postgresql-client`, installed by scripts/deps).

    peer = pgpeer.Cluster()            # initdb + start on a free port, in a temp dir
    url = peer.new_database()          # postgresql://postgres@127.0.0.1:PORT/coffer_N
    peer.stop()                        # also at exit, and when the process that started
                                       # it dies (the postmaster's parent-death signal)

initdb refuses root, so as root the cluster runs as user `postgres` (its dir is made
theirs); otherwise as the current user. The superuser is named `postgres` either way.
The cluster is for tests only: fsync off, trust authentication, 127.0.0.1 and a Unix
socket in its own dir.

tests/run.py starts one Cluster for the PostgreSQL pass and hands it to the workers in
$COFFER_TEST_PG (`host:port:dir`); `shared()` returns that one, or starts one for this
process when the variable is not set (a module run by hand).

Each new database is empty: the cofferd (or test) that opens it first creates the schema
(src/store/meta_pg.c, migrations under an advisory lock), which takes less time than
keeping a migrated template in step with the code would save.
"""

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

PG_BIN = "/usr/lib/postgresql/15/bin"
_lock = threading.Lock()
_shared = None


def available():
    """None when PostgreSQL 15 is installed, else why not."""
    for b in ("initdb", "postgres", "pg_ctl"):
        if not os.access(os.path.join(PG_BIN, b), os.X_OK):
            return "%s/%s not found (scripts/deps installs postgresql)" % (PG_BIN, b)
    if not shutil.which("psql"):
        return "psql not found (scripts/deps installs postgresql)"
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user(uid, gid):
    """A preexec_fn: drop to uid/gid (root only) and die with the parent."""
    libc = ctypes.CDLL(None, use_errno=True)

    def fn():
        os.setsid()
        if os.geteuid() == 0:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        libc.prctl(1, signal.SIGINT)   # PR_SET_PDEATHSIG: a fast shutdown
    return fn


class Cluster:
    """A PostgreSQL cluster in a temp dir, started on a free 127.0.0.1 port."""

    def __init__(self, host=None, port=None, dir=None, durable=False):
        """durable: fsync, synchronous_commit and full_page_writes on, as PostgreSQL's
        users run it (the benchmarks); off for the tests, which never cut power."""
        self.durable = durable
        self.proc = None
        self.counter = 0
        self.owned = host is None
        if not self.owned:   # attach to one another process started
            self.host, self.port, self.dir = host, int(port), dir
            return
        why = available()
        if why:
            raise RuntimeError("cannot start PostgreSQL: " + why)
        self.host = "127.0.0.1"
        self.dir = tempfile.mkdtemp(prefix="coffer-pg-")
        uid, gid = os.getuid(), os.getgid()
        if os.geteuid() == 0:
            import pwd
            pw = pwd.getpwnam("postgres")
            uid, gid = pw.pw_uid, pw.pw_gid
            os.chown(self.dir, uid, gid)
        self.pre = _as_user(uid, gid)
        atexit.register(self.stop)
        data = os.path.join(self.dir, "data")
        p = subprocess.run([PG_BIN + "/initdb", "-D", data, "-A", "trust", "-U", "postgres",
                            "-E", "UTF8", "--locale=C", "--no-sync"], capture_output=True,
                           preexec_fn=self.pre, cwd=self.dir, timeout=120)
        if p.returncode:
            self.stop()
            raise RuntimeError("initdb failed (%s):\n%s" % (p.returncode, (p.stdout + p.stderr)
                                                            .decode("utf-8", "replace")[-3000:]))
        for _ in range(5):
            self.port = _free_port()
            if self._start(data):
                return
        self.stop()
        raise RuntimeError("PostgreSQL did not start:\n" + self.log_tail())

    def _start(self, data):
        """Starts the postmaster in the foreground as our child; True once it answers."""
        self.logf = os.path.join(self.dir, "postgres.log")
        log = open(self.logf, "ab")
        opts = ["-D", data, "-p", str(self.port), "-k", self.dir,
                "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=%s" % ("on" if self.durable else "off"),
                "-c", "synchronous_commit=%s" % ("on" if self.durable else "off"),
                "-c", "full_page_writes=%s" % ("on" if self.durable else "off"),
                "-c", "max_connections=400", "-c", "shared_buffers=32MB",
                "-c", "log_min_messages=warning"]
        self.proc = subprocess.Popen([PG_BIN + "/postgres"] + opts, stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     preexec_fn=self.pre, cwd=self.dir)
        log.close()
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            if self.psql("SELECT 1", check=False).returncode == 0:
                return True
            time.sleep(0.1)
        self.proc.kill()
        self.proc.wait()
        return False

    def env(self):
        """What run.py exports so that workers attach to this cluster."""
        return "%s:%d:%s" % (self.host, self.port, self.dir)

    def url(self, db):
        return "postgresql://postgres@%s:%d/%s" % (self.host, self.port, db)

    def psql(self, sql, db="postgres", check=True):
        """Runs `sql` with psql; returns the CompletedProcess (raises on failure if check)."""
        p = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-h",
                            self.host, "-p", str(self.port), "-U", "postgres", "-d", db,
                            "-c", sql], capture_output=True, timeout=60,
                           env=dict(os.environ, PGCONNECT_TIMEOUT="10"))
        if check and p.returncode:
            raise RuntimeError("psql %r failed: %s" % (sql, p.stderr.decode("utf-8", "replace")))
        return p

    def new_database(self, build=None):
        """A new, empty database; returns its URL (cofferd migrates it at its start,
        about 30 ms: no template is kept)."""
        with _lock:
            self.counter += 1
            name = "coffer_%d_%d" % (os.getpid(), self.counter)
        for attempt in range(20):
            p = self.psql("CREATE DATABASE %s" % name, check=False)
            if p.returncode == 0:
                return self.url(name)
            # "source database is being accessed by other users": another process
            # is copying template1 this instant; retry.
            time.sleep(0.05 * (attempt + 1))
        raise RuntimeError("cannot create database %s: %s" % (
            name, p.stderr.decode("utf-8", "replace")))

    def drop_database(self, url):
        db = url.rsplit("/", 1)[1]
        self.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % db, check=False)

    def log_tail(self, n=3000):
        try:
            with open(self.logf, "rb") as f:
                return f.read().decode("utf-8", "replace")[-n:]
        except (OSError, AttributeError):
            return ""

    def stop(self):
        """Fast shutdown and removal of the cluster's dir (this process's own only)."""
        if not self.owned:
            return
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def shared():
    """The run's cluster ($COFFER_TEST_PG), or one started for this process."""
    global _shared
    with _lock:
        if _shared is None:
            env = os.environ.get("COFFER_TEST_PG")
            if env:
                host, port, d = env.split(":", 2)
                _shared = Cluster(host, port, d)
            else:
                _shared = Cluster()
        return _shared
