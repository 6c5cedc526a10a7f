"""harness — start a real cofferd, talk HTTP to it, assert with clear messages.

Black-box tests live in tests/blackbox/test_*.py. `tests/run.py` runs each module in
its own process (several modules in parallel) and every function named `test_*` in it
as one case, in file order. Python 3 standard library only.

Writing a test
--------------
    from harness import expect, expect_error, eq, check, sha256

    def test_round_trip(srv):               # `srv`: the module's shared cofferd
        vol = srv.create_volume()           # a fresh volume: keep tests independent
        put = expect(srv.put(vol["id"], "a.txt", b"hi"), 201).json()
        r = expect(srv.get(vol["id"], "a.txt"), 200)
        eq(r.body, b"hi", "body")

    def test_own_server():                  # no `srv`: start what you need yourself
        with harness.server(gc_grace=1) as s:   # SIGTERM at the end, asserts exit 0
            ...

A test passes when it returns, fails on any exception (AssertionError from the helpers
below carries the request, the answer and a diff), and is skipped on `harness.skip(why)`.
The shared server is started lazily, restarted if a test killed it (that test fails),
and stopped with SIGTERM after the last test of the module: a non-zero exit is a failure
of its own ("<module>::cofferd shutdown"). Sanitizer reports in its log fail the test
during which they appeared.

Module-level knobs: `SERIAL = True` (run.py runs the module alone, after the others),
`SERVER_OPTS = {...}` (keyword arguments for the shared server), `TIMEOUT = seconds` per
test (default 60; `@harness.timeout(s)` for one test). All timeouts are multiplied by
`harness.SCALE` (3 when the build dir name contains "asan", or $COFFER_TEST_SCALE).
A test that needs minutes starts with `harness.slow("why")`: it runs only with
$COFFER_SLOW_TESTS=1 and is reported as skipped otherwise. A test of a guarantee that
only holds when cofferd runs as root (a uid of each turn's own, RLIMIT_NPROC on it,
mounts) starts with `harness.needs_root("why")`: skipped, with the reason, when the tests
do not run as root (harness.IS_ROOT). Skip reasons are printed by run.py.
$COFFER_TEST_ENGINE=pg (run.py's second pass) gives every Server a PostgreSQL database
of its own (`--meta`, tests/blackbox/pgpeer.py; `s.meta_url`, dropped at close unless
the test gave the data dir); `harness.ENGINE` says which pass runs. On that pass every
Server also keeps its content in S3 (`--blobs`, the run's one s3rver, s3peer.shared(),
under a prefix of the server's own: `s.blobs_url`, `s.s3`), unless the test gives
--blobs itself. `s.blob_files()` / `s.blob_file(sha)` / `s.blob_of_size(n)` find stored
content files on either engine (on S3: s3rver's object files, which a test may damage as
it would a local blob).

Server (see class Server):
    s.url, s.host, s.port, s.data (data dir), s.key (admin key), s.proc
    s.request(method, path_or_url, body=None, json=None, headers=None, query=None,
              key=<admin>, auth="bearer"|"x-api-key", timeout=None) -> Response
        body: bytes/str, an iterable of bytes (sent chunked) or a file object
        key=None sends no credentials; path may be an absolute URL (signed links).
    s.get/put/post/patch/delete/head(path, ...)   -- shorthands of request()
    s.create_volume(name=None, **fields) -> dict    (asserts 201)
    s.put_file(vid, path, data, ...) -> Response ; s.put_ok(...) -> dict (asserts 2xx)
    s.put_many(vid, {path: bytes}, threads=8) -> {path: answer}
    s.get_file(vid, path, ...) -> Response ; s.file_path(vid, path) -> URL path
    s.snapshot(vid, **body) -> dict (asserts 201)
    s.volume(vid) -> dict ; s.seq(vid) -> int ; s.list_files(vid, **query) -> dict
    s.stop() -> exit code (SIGTERM) ; s.kill() (SIGKILL) ; s.start() (same data dir)
    s.restart() (SIGTERM + start) ; s.cli(*args) -> CompletedProcess of build/coffer
    s.log() -> cofferd's stdout+stderr so far
Contract: harness.ON_RESPONSE(resp) sees every answer of request(); openapi_check.enable()
    (or $COFFER_OPENAPI_CHECK=1) checks each against docs/openapi.json.
Response: status, reason, headers (case-insensitive .get), body (bytes), .json(),
    .text, .header(name), .error (the {"error":{...}} object or None)
Assertions: expect(resp, *statuses), expect_error(resp, status, type), eq(a, b, what),
    check(cond, what), contains(container, item, what); sha256(bytes) -> hex.
Node packages: npm_ready(dir, package, what=None) -> node's path, after `npm ci
    --prefer-offline` in dir (absolute, or under tests/) when the pinned `package` (of its
    package.json) is not installed there yet.
Event streams: EventStream(srv, path) reads a Server-Sent Events stream in a thread;
    .events [(type, data)], .types(), .wait(kind, n, timeout) -> list (may be short),
    .expect(kind, n, timeout) -> list (raises when short), .close().
"""

import atexit
import contextlib
import difflib
import http.client
import json as jsonlib
import hashlib
import os
import pprint
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

BUILD = os.environ.get("COFFER_BUILD", "build")
SCALE = float(os.environ.get("COFFER_TEST_SCALE") or (3 if "asan" in BUILD else 1))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The engines the servers of this run use: "embedded" (SQLite and a blob dir in DATA,
# the default) or "pg" (PostgreSQL: pgpeer.py; tests/run.py's second pass).
ENGINE = os.environ.get("COFFER_TEST_ENGINE") or "embedded"
DEFAULT_TIMEOUT = 30  # seconds per HTTP request, times SCALE
# Called with every Response that Server.request returns, or None. openapi_check.enable()
# sets it to check answers against docs/openapi.json ($COFFER_OPENAPI_CHECK=1: every test).
ON_RESPONSE = None

SANITIZER_PATTERNS = re.compile(
    r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|"
    r"WARNING: ThreadSanitizer|ERROR: UndefinedBehaviorSanitizer")


def set_build(build):
    """Points the harness at a build dir (run.py does this); rescales timeouts."""
    global BUILD, SCALE
    BUILD = build
    if not os.environ.get("COFFER_TEST_SCALE"):
        SCALE = 3 if "asan" in os.path.basename(os.path.abspath(build)) else 1


def bin_path(name):
    """Absolute path of a binary in the build dir (it may not exist)."""
    b = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
    return os.path.join(b, name)


class Skip(Exception):
    """Raised by skip(): the case is reported as skipped, not passed or failed."""



def until(cond, what, timeout=15):
    """cond() again every 0.05 s until it is truthy; returns it. Fails naming `what`
    after `timeout` seconds (times SCALE: slower under sanitizers)."""
    deadline = time.time() + timeout * SCALE
    while True:
        got = cond()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


def skip(why):
    raise Skip(why)


IS_ROOT = os.geteuid() == 0


def needs_root(why):
    """Skips the calling test when not root: `why` says which guarantee needs root."""
    if not IS_ROOT:
        raise Skip("needs root: %s" % why)


def slow(why="slow"):
    """Skips the calling test unless $COFFER_SLOW_TESTS is set (tests that need minutes)."""
    if not os.environ.get("COFFER_SLOW_TESTS"):
        raise Skip("%s; set COFFER_SLOW_TESTS=1 to run it" % why)


def timeout(seconds):
    """Decorator: this test may take `seconds` (times SCALE) instead of the default."""
    def mark(fn):
        fn.timeout = seconds
        return fn
    return mark


def libmagic_type(data):
    """The MIME type the `file` command (libmagic, as cofferd links it) gives bytes."""
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        return subprocess.run(["file", "--mime-type", "-b", f.name], capture_output=True,
                              text=True, check=True).stdout.strip()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------ responses

class Response:
    def __init__(self, method, url, status, reason, headers, body, req_headers=None,
                 req_body=None):
        self.method, self.url = method, url
        self.status, self.reason = status, reason
        self.headers = headers
        self.body = body
        self.req_headers = req_headers or {}
        self.req_body = req_body
        self._json = None

    def header(self, name):
        return self.headers.get(name)

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        if self._json is None:
            try:
                self._json = jsonlib.loads(self.body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise AssertionError("answer is not JSON (%s)\n%s" % (e, self.describe()))
        return self._json

    @property
    def error(self):
        try:
            j = jsonlib.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None
        return j.get("error") if isinstance(j, dict) else None

    def describe(self, limit=1500):
        """The request and the answer, for failure messages."""
        lines = ["request:  %s %s" % (self.method, self.url)]
        for k, v in self.req_headers.items():
            if k.lower() in ("authorization", "x-api-key"):
                v = v[:12] + "..."
            lines.append("          %s: %s" % (k, v))
        if isinstance(self.req_body, (bytes, str)) and self.req_body:
            rb = self.req_body if isinstance(self.req_body, str) else \
                self.req_body[:300].decode("utf-8", "replace")
            lines.append("          body: %s%s" % (rb[:300], "..." if len(rb) > 300 else ""))
        lines.append("answer:   %s %s" % (self.status, self.reason))
        for k, v in self.headers.items():
            lines.append("          %s: %s" % (k, v))
        b = self.body[:limit]
        try:
            shown = b.decode("utf-8")
        except UnicodeDecodeError:
            shown = repr(b)
        lines.append("          body (%d bytes): %s%s" % (len(self.body), shown,
                                                          "..." if len(self.body) > limit else ""))
        return "\n".join(lines)

    def __repr__(self):
        return "<Response %s %s -> %s>" % (self.method, self.url, self.status)


# ------------------------------------------------------------------ assertions

def _fmt(x):
    if isinstance(x, (dict, list, tuple)):
        return pprint.pformat(x, width=100, sort_dicts=True)
    return repr(x)


def eq(actual, expected, what="value"):
    """Asserts actual == expected, with a diff of the two when they are long."""
    if actual == expected:
        return actual
    a, e = _fmt(actual), _fmt(expected)
    msg = "%s differs\n  expected: %s\n  actual:   %s" % (what, e[:2000], a[:2000])
    if "\n" in a or "\n" in e or len(a) > 80:
        diff = difflib.unified_diff(e.splitlines(), a.splitlines(), "expected", "actual",
                                    lineterm="", n=2)
        msg += "\n" + "\n".join(list(diff)[:80])
    raise AssertionError(msg)


def check(cond, what):
    """Asserts cond; `what` says what was expected (shown on failure)."""
    if not cond:
        raise AssertionError(what)
    return cond


def contains(container, item, what="value"):
    if item not in container:
        raise AssertionError("%s: expected %r in %s" % (what, item, _fmt(container)[:2000]))


def expect(resp, *statuses):
    """Asserts resp.status is one of `statuses`; returns resp."""
    if resp.status not in statuses:
        raise AssertionError("expected status %s, got %s\n%s" % (
            " or ".join(map(str, statuses)), resp.status, resp.describe()))
    return resp


ERROR_TYPES = {400: "validation_error", 401: "unauthorized", 403: "forbidden",
               404: "not_found", 409: "conflict", 410: "gone", 412: "precondition_failed",
               413: "too_large", 415: "unsupported_media_type",
               416: "range_not_satisfiable", 422: "blocked", 423: "locked",
               429: "rate_limited", 500: "internal", 503: "unavailable"}


def expect_error(resp, status, etype=None, mentions=None):
    """Asserts an API error: the status, JSON {"error":{"type","message",...}} with the
    type matching the status, a non-empty message (containing every word of `mentions`,
    case-insensitive, if given). Returns the error object."""
    expect(resp, status)
    etype = etype or ERROR_TYPES.get(status)
    ct = resp.header("Content-Type") or ""
    check(ct.startswith("application/json"),
          "error answer Content-Type should be application/json, got %r\n%s" % (ct, resp.describe()))
    j = resp.json()
    err = j.get("error") if isinstance(j, dict) else None
    check(isinstance(err, dict), "answer should be {\"error\":{...}}\n" + resp.describe())
    check(err.get("type") == etype, "error.type should be %r, got %r\n%s" % (
        etype, err.get("type"), resp.describe()))
    msg = err.get("message")
    check(isinstance(msg, str) and msg.strip(), "error.message should be a non-empty string\n"
          + resp.describe())
    for w in ([mentions] if isinstance(mentions, str) else (mentions or [])):
        check(w.lower() in msg.lower(), "error.message should mention %r: %r\n%s" % (
            w, msg, resp.describe()))
    return err


# ------------------------------------------------------------------ the server

class ServerError(Exception):
    pass


_ABSENT = object()

# Every cofferd this process started and has not seen end. Each runs in a session of
# its own (start_new_session), so a test that returns or fails without closing one
# would leave it running past the run; the process's exit stops whatever is left.
_LIVE = set()


@atexit.register
def _stop_left_servers():
    for s in list(_LIVE):
        if s.alive():
            sys.stderr.write("harness: a cofferd left running by a test was stopped "
                             "(data %s)\n" % s.data)
            s.kill()


class Server:
    """A cofferd on 127.0.0.1:<free port> over a temporary data dir."""

    def __init__(self, build=None, data=None, gc_grace=None, args=(), env=None,
                 start=True, keep=False, engine=None):
        self.build = build or BUILD
        self.root = tempfile.mkdtemp(prefix="coffer-bb-")
        self.data = data or os.path.join(self.root, "data")
        self.gc_grace = gc_grace
        self.args = list(args)
        # The engines under test (ENGINE): "pg" gives this server a PostgreSQL
        # database of its own, unless the test names one itself (--meta).
        self.engine = engine or ENGINE
        self.meta_url = None
        if self.engine == "pg" and "--meta" not in self.args:
            import pgpeer
            self.meta_url = pgpeer.shared().new_database(self.build)
            self.args = ["--meta", self.meta_url] + self.args
        self.env = env
        self.s3 = self.blobs_url = self.blobs_prefix = None
        # $COFFER_TEST_PG_BLOBS=local keeps the pg pass's content in DATA/blobs (to
        # measure what S3 costs the pass, or to tell an S3 failure from a PostgreSQL one)
        if (self.engine == "pg" and "--blobs" not in self.args and
                os.environ.get("COFFER_TEST_PG_BLOBS") != "local"):
            self.use_s3(os.path.basename(self.root))
        self.keep = keep
        self.proc = None
        self.log_path = os.path.join(self.root, "cofferd.log")
        self._log_checked = 0
        self.url = self.host = self.port = self.key = None
        self.exit_codes = []
        if start:
            self.start()

    def use_s3(self, prefix, peer=None):
        """Keeps this server's content in S3 (peer, default the run's s3peer.shared())
        under `prefix`: servers of one dataset give the same one."""
        import s3peer
        self.s3 = peer or s3peer.shared()
        self.blobs_prefix = prefix
        self.blobs_url = s3peer.url_for(self.s3, prefix)
        self.args += ["--blobs", self.blobs_url]
        self.env = dict(self.env or {}, **self.s3["env"])
        # and for every tool the test runs itself (coffer fsck --data ...)
        os.environ.update(self.s3["env"])

    # ---- lifecycle
    def binary(self):
        b = self.build if os.path.isabs(self.build) else os.path.join(ROOT, self.build)
        return os.path.join(b, "cofferd")

    def start(self, wait=None):
        """Starts cofferd (again) on the same data dir; a new port each time. It must
        listen within `wait` s (times SCALE): 20, or 40 where it first reaches
        PostgreSQL and S3 (a loaded machine's pg pass missed 20)."""
        if wait is None:
            wait = 40 if self.engine == "pg" else 20
        assert self.proc is None or self.proc.poll() is not None, "already running"
        exe = self.binary()
        if not os.path.exists(exe):
            raise ServerError("%s does not exist (run make)" % exe)
        cmd = [exe, "--data", self.data, "--listen", "127.0.0.1:0"]
        if self.gc_grace is not None:
            cmd += ["--gc-grace", str(self.gc_grace)]
        cmd += self.args
        offset = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        logf = open(self.log_path, "ab")
        logf.write(("--- %s\n" % " ".join(cmd)).encode())
        logf.flush()
        offset = logf.tell()
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env,
                                     start_new_session=True)
        _LIVE.add(self)
        logf.close()
        deadline = time.time() + wait * SCALE
        pat = re.compile(r"cofferd listening on (http://([^\s:/]+):(\d+))")
        while True:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                out = f.read().decode("utf-8", "replace")
            m = pat.search(out)
            if m:
                break
            if self.proc.poll() is not None:
                raise ServerError("cofferd exited with %s before listening:\n%s" % (
                    self.proc.returncode, out[-3000:]))
            if time.time() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise ServerError("cofferd did not print 'cofferd listening on http://"
                                  "HOST:PORT' within %ss:\n%s" % (wait * SCALE, out[-3000:]))
            time.sleep(0.02)
        self.url, self.host, self.port = m.group(1), m.group(2), int(m.group(3))
        try:
            with open(os.path.join(self.data, "admin.key")) as f:
                self.key = f.read().strip()
        except FileNotFoundError:
            # a later node of a shared dataset keeps no admin key of its own (API.md
            # "Running on several nodes"): the test sets s.key to the first node's
            if "--meta" not in self.args:
                raise
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=15):
        """SIGTERM and wait; returns the exit code (SIGKILL + ServerError on timeout)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout * SCALE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise ServerError("cofferd did not exit within %ss of SIGTERM\n%s" % (
                    timeout * SCALE, self.log_tail()))
        _LIVE.discard(self)
        self.exit_codes.append(self.proc.returncode)
        return self.proc.returncode

    def kill(self):
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self):
        code = self.stop()
        check(code == 0, "cofferd exit code on SIGTERM should be 0, got %s\n%s" % (
            code, self.log_tail()))
        return self.start()

    def close(self, check_exit=True):
        """Stops the server (asserting a clean exit) and removes its temp dir."""
        code = self.stop()
        reports = self.sanitizer_reports(all_=True)
        tail = self.log_tail(6000)
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
            # A data dir of the test's own outlives the server (a tool may open it
            # after): so does its database, until the run's cluster goes.
            if self.meta_url and self.data.startswith(self.root + os.sep):
                import pgpeer
                pgpeer.shared().drop_database(self.meta_url)
        if check_exit and code is not None and code != 0:
            raise AssertionError("cofferd exit code on SIGTERM should be 0, got %s\n%s" % (
                code, reports or tail))
        if check_exit and reports:
            raise AssertionError("sanitizer reports in cofferd's log:\n" + reports)

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            self.close()
        else:
            try:
                self.close(check_exit=False)
            except Exception:
                pass
        return False

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, n=3000):
        return "cofferd log (tail):\n" + self.log()[-n:]

    def sanitizer_reports(self, all_=False):
        """New sanitizer output in the log since the last call (or all of it)."""
        text = self.log()
        start = 0 if all_ else self._log_checked
        self._log_checked = len(text)
        new = text[start:]
        m = SANITIZER_PATTERNS.search(new)
        if not m:
            return None
        return new[max(0, m.start() - 200):m.start() + 4000]

    # ---- HTTP
    def request(self, method, path, body=None, json=_ABSENT, headers=None, query=None,
                key=_ABSENT, auth="bearer", timeout=None):
        """One request on a fresh connection (Connection: close); returns Response."""
        hdrs = {"Connection": "close"}
        if key is _ABSENT:
            key = self.key
        if key is not None:
            if auth == "bearer":
                hdrs["Authorization"] = "Bearer " + key
            else:
                hdrs["x-api-key"] = key
        if json is not _ABSENT:
            body = jsonlib.dumps(json).encode()
            hdrs["Content-Type"] = "application/json"
        if isinstance(body, str):
            body = body.encode()
        if headers:
            hdrs.update(headers)
            for k in [k for k, v in hdrs.items() if v is None]:
                del hdrs[k]
        host, port = self.host, self.port
        if path.startswith("http://"):
            u = urllib.parse.urlsplit(path)
            host, port = u.hostname, u.port or 80
            path = u.path + ("?" + u.query if u.query else "")
        if query:
            q = urllib.parse.urlencode(query, doseq=True)
            path += ("&" if "?" in path else "?") + q
        conn = http.client.HTTPConnection(host, port, timeout=(timeout or DEFAULT_TIMEOUT) * SCALE)
        try:
            stream = body is not None and not isinstance(body, (bytes, bytearray))
            try:
                if stream and not any(k.lower() in ("content-length", "transfer-encoding")
                                      for k in hdrs):
                    hdrs["Transfer-Encoding"] = "chunked"
                    conn.request(method, path, body=body, headers=hdrs, encode_chunked=True)
                else:
                    conn.request(method, path, body=body, headers=hdrs)
            except (BrokenPipeError, ConnectionResetError) as e:
                # The server may answer (413, 400...) and close before reading it all.
                send_error = e
            else:
                send_error = None
            try:
                r = conn.getresponse()
            except (http.client.HTTPException, OSError):
                if send_error:
                    raise send_error
                raise
            data = r.read()
            resp = Response(method, path, r.status, r.reason, r.headers, data, hdrs,
                            body if isinstance(body, (bytes, bytearray)) else None)
            if ON_RESPONSE is not None:
                ON_RESPONSE(resp)
            return resp
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def head(self, path, **kw):
        return self.request("HEAD", path, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body=body, **kw)

    def post(self, path, json=_ABSENT, **kw):
        return self.request("POST", path, json=json, **kw)

    def patch(self, path, json=_ABSENT, **kw):
        return self.request("PATCH", path, json=json, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    S3_SUFFIX = "._S3rver_object"

    def blob_files(self):
        """Every stored content file: under DATA/blobs (temp files included: a leak is a
        leak), or on S3 s3rver's object files under this server's prefix plus the
        upload spool files in DATA/tmp."""
        out = []
        if self.s3 is None:
            top = [os.path.join(self.data, "blobs")]
        else:
            top = [os.path.join(self.s3["dir"], self.s3["bucket"], self.blobs_prefix),
                   os.path.join(self.data, "tmp")]
        for t in top:
            for dp, _, fn in os.walk(t):
                out += [os.path.join(dp, f) for f in fn
                        if self.s3 is None or dp.startswith(top[1]) or
                        f.endswith(self.S3_SUFFIX)]
        return out

    def blob_file(self, sha):
        """The file that holds content `sha` (which may not exist)."""
        if self.s3 is None:
            return os.path.join(self.data, "blobs", sha[:2], sha[2:])
        return os.path.join(self.s3["dir"], self.s3["bucket"], self.blobs_prefix, sha[:2],
                            sha[2:] + self.S3_SUFFIX)

    def blob_of_size(self, size):
        """The path of a content file of `size` bytes (blob_files), made writable
        (for tests that damage stored content); skips the test when there is none."""
        for f in self.blob_files():
            if os.path.getsize(f) == size:
                os.chmod(f, 0o644)
                return f
        skip("no blob file of %d bytes in the blob store" % size)

    # ---- API shorthands
    @staticmethod
    def file_path(vid, path, quote=True):
        """URL path of a file; quote=False passes `path` as it is (pre-encoded)."""
        p = urllib.parse.quote(path, safe="/") if quote else path
        return "/v1/volumes/%s/files/%s" % (vid, p)

    def create_volume(self, name=None, key=_ABSENT, **fields):
        body = {"name": name or "t-%d" % (time.time_ns() % 10**12)}
        body.update(fields)
        r = expect(self.post("/v1/volumes", json=body, key=key), 201)
        return r.json()

    def put_file(self, vid, path, data=b"", content_type=None, headers=None, query=None,
                 **kw):
        h = dict(headers or {})
        if content_type is not None:
            h["Content-Type"] = content_type
        return self.put(self.file_path(vid, path), body=data, headers=h, query=query, **kw)

    def put_ok(self, vid, path, data=b"", **kw):
        return expect(self.put_file(vid, path, data, **kw), 200, 201).json()

    def put_many(self, vid, files, threads=8):
        """Writes {path: bytes} with `threads` concurrent PUTs; returns {path: answer}."""
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(threads) as ex:
            futs = {p: ex.submit(self.put_ok, vid, p, d) for p, d in files.items()}
            return {p: f.result() for p, f in futs.items()}

    def get_file(self, vid, path, headers=None, query=None, **kw):
        return self.get(self.file_path(vid, path), headers=headers, query=query, **kw)

    def volume(self, vid, **kw):
        return expect(self.get("/v1/volumes/%s" % vid, **kw), 200).json()

    def seq(self, vid):
        return self.volume(vid)["seq"]

    def list_files(self, vid, **query):
        return expect(self.get("/v1/volumes/%s/files" % vid, query=query), 200).json()

    def snapshot(self, vid, **body):
        return expect(self.post("/v1/volumes/%s/snapshots" % vid, json=body), 201).json()

    # ---- CLI
    def cli(self, *args, env=None, input=None, timeout=60, key=_ABSENT):
        """Runs build/coffer with COFFER_URL/COFFER_KEY for this server."""
        exe = bin_path("coffer")
        e = dict(os.environ)
        e["COFFER_URL"] = self.url or ""
        e["COFFER_KEY"] = (self.key if key is _ABSENT else key) or ""
        if env:
            e.update(env)
        return subprocess.run([exe] + [str(a) for a in args], input=input, env=e,
                              capture_output=True, timeout=timeout * SCALE)


class EventStream:
    """Reads a Server-Sent Events stream (GET `path`) in a thread; each event with
    JSON data lands in self.events as (type, data). `done` turns true at its end."""

    def __init__(self, srv, path, key=None, timeout=120, headers=None):
        import socket
        import threading
        self._socket = socket
        self.events = []
        self.done = False
        self.conn = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout)
        self.conn.request("GET", path, headers=dict(headers or {},
                                                    Authorization="Bearer " + (key or srv.key)))
        self.resp = self.conn.getresponse()
        eq(self.resp.status, 200, "events status of %s" % path)
        check(self.resp.getheader("Content-Type", "").startswith("text/event-stream"),
              "events content type")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        kind = None
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind:
                    self.events.append((kind, jsonlib.loads(line[6:])))
                    kind = None
        except Exception:
            pass
        self.done = True

    def types(self):
        return [k for k, _ in self.events]

    def wait(self, kind, n=1, timeout=8):
        """The data of the `kind` events once there are n (fewer at the timeout)."""
        deadline = time.time() + timeout * SCALE
        while time.time() < deadline:
            got = [d for k, d in self.events if k == kind]
            if len(got) >= n:
                return got
            time.sleep(0.05)
        return [d for k, d in self.events if k == kind]

    def expect(self, kind, n=1, timeout=10):
        got = EventStream.wait(self, kind, n, timeout)
        if len(got) < n:
            raise AssertionError("no %d %r events; got %r" % (n, kind, self.events))
        return got

    def close(self):
        # shut the socket first so the reader thread's blocked read returns now
        try:
            self.conn.sock.shutdown(self._socket.SHUT_RDWR)
        except Exception:
            pass
        self.conn.close()


def server(**kw):
    """A new Server over its own data dir (use as a context manager)."""
    return Server(**kw)


def nodes_pg():
    """pgpeer when this pass may start several nodes on one PostgreSQL dataset; skips
    the test otherwise (cross-node tests run once, in the pg pass)."""
    if ENGINE != "pg":
        skip("cross-node tests run once, in the pg pass")
    import pgpeer
    why = pgpeer.available()
    if why:
        skip("PostgreSQL 15 is needed: " + why)
    return pgpeer


def node(url, first=None, start=True, name=None, args=()):
    """A node on the dataset `url` (`--node name` when named; `args`: more flags); after
    the first, one over the first's content store, with an empty data dir (no admin key
    of its own: the dataset's is used)."""
    s = Server(args=["--meta", url] + (["--node", name] if name else []) + list(args),
               engine="pg", start=False)
    if first is not None and first.s3 is not None:
        s.use_s3(first.blobs_prefix, first.s3)   # the first's blob store
    if first is not None:
        s.key = first.key
    return s.start() if start else s


def nodes(n=3, named=False, args=()):
    """n nodes on one new database (named: --node n0, n1, ...; `args`: more flags of
    each); the first makes the admin key. Returns (url, [Server]); close_nodes(url,
    nodes) ends them."""
    url = nodes_pg().shared().new_database()
    out = [node(url, name="n0" if named else None, args=args)]
    for i in range(1, n):
        out.append(node(url, out[0], name="n%d" % i if named else None, args=args))
    return url, out


def close_nodes(url, nodes):
    """Stops the nodes (a node a test left killed is not asked for its exit code) and
    drops their database."""
    for s in nodes:
        s.close(check_exit=s.alive())
    import pgpeer
    pgpeer.shared().drop_database(url)


def coffer_binary():
    """build/coffer if it exists, else None."""
    p = bin_path("coffer")
    return p if os.path.exists(p) else None


def _installed_version(directory, package):
    marker = os.path.join(directory, "node_modules", *package.split("/"), "package.json")
    try:
        with open(marker) as f:
            return jsonlib.load(f).get("version")
    except (OSError, ValueError):
        return None


def npm_ready(directory, package, what=None):
    """Node, and the packages of `directory`'s package-lock.json in its node_modules
    (`directory` absolute, or relative to tests/): when the version of `package` pinned in
    package.json (dependencies or devDependencies) is not the one installed, `npm ci
    --prefer-offline` installs exactly the lock file, from npm's cache when it has the
    packages, else from the registry. Under a lock on the lock file: modules using one
    directory run in parallel. Fails, never skips, when node or npm is missing
    (scripts/deps installs them); `what` names the tests in that message. Returns node's
    path."""
    if not os.path.isabs(directory):
        directory = os.path.join(ROOT, "tests", directory)
    node, npm = shutil.which("node"), shutil.which("npm")
    check(node and npm, "node and npm are needed for %s (found node=%r npm=%r); install "
          "Node.js 18 or later (scripts/deps does)" % (what or "the tests in " + directory,
                                                        node, npm))
    with open(os.path.join(directory, "package.json")) as f:
        pkg = jsonlib.load(f)
    pinned = dict(pkg.get("devDependencies", {}), **pkg.get("dependencies", {}))[package]
    import fcntl
    with open(os.path.join(directory, "package-lock.json")) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed_version(directory, package) != pinned:
            p = subprocess.run([npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"],
                               cwd=directory, capture_output=True, timeout=300 * SCALE)
            check(p.returncode == 0, "npm ci in %s failed (exit %s):\n%s\n%s" % (
                directory, p.returncode, p.stdout.decode()[-2000:], p.stderr.decode()[-3000:]))
            eq(_installed_version(directory, package), pinned, "%s installed by npm ci" % package)
    return node


@contextlib.contextmanager
def threads_started(fns):
    """Starts one thread per callable; joins them all on exit."""
    import threading
    ts = [threading.Thread(target=f, daemon=True) for f in fns]
    for t in ts:
        t.start()
    try:
        yield ts
    finally:
        for t in ts:
            t.join(120 * SCALE)


if os.environ.get("COFFER_OPENAPI_CHECK") == "1":
    import openapi_check
    openapi_check.enable()
