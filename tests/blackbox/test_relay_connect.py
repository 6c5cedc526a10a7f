"""Relay end to end: cofferd and the real `coffer connect` (docs/relay-protocol.md), with
the agent side over HTTP. The fake-client tests (test_relay*.py) cover each server rule;
these check that both halves speak the same protocol."""

import os
import signal
import subprocess
import tempfile
import time

import harness
from harness import check, eq, expect, expect_error
from relay_fake import create, make_agent
from test_relay import Events, _name, _op, _wait_status


class Connect:
    """`coffer connect` as a child process serving `root`."""

    def __init__(self, srv, s, root, *flags):
        self.errf = tempfile.TemporaryFile()
        env = dict(os.environ)
        env.pop("COFFER_URL", None)
        env.pop("COFFER_KEY", None)
        env["COFFER_CONNECT_TOKEN"] = s["connectToken"]
        self.proc = subprocess.Popen(
            [harness.bin_path("coffer"), "connect", "--server", srv.url, "--uid", s["uid"],
             "--dir", root] + list(flags), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=self.errf, env=env, start_new_session=True)

    def stderr(self):
        self.errf.seek(0)
        return self.errf.read().decode("utf-8", "replace")

    def wait(self, timeout=15):
        try:
            return self.proc.wait(timeout * harness.SCALE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("coffer connect did not exit:\n" + self.stderr()[-2000:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _setup(srv, files=None, *flags):
    agent = make_agent(srv, _name("rc"))
    s = create(srv, agent)
    root = tempfile.mkdtemp(prefix="relay-connect-")
    for p, data in (files or {}).items():
        full = os.path.join(root, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(data)
    c = Connect(srv, s, root, *flags)
    try:
        _wait_status(srv, s["uid"], "active")
    except AssertionError:
        c.stop()
        raise AssertionError("coffer connect did not attach:\n" + c.stderr()[-2000:])
    return s, c, root


def _check_connect():
    if not os.path.exists(harness.bin_path("coffer")):
        harness.skip("no coffer binary")
    r = subprocess.run([harness.bin_path("coffer"), "connect", "--help"],
                       capture_output=True)
    if r.returncode != 0:
        harness.skip("this build has no `coffer connect`")


def test_round_trip_and_close(srv):
    _check_connect()
    s, c, root = _setup(srv, {"a.txt": "hello\n", "d/b.md": "hello again\n"})
    try:
        got = expect(_op(srv, s["uid"], op="read_file", path="a.txt"), 200).json()
        eq(got["content"], "hello\n", "read through the real client")
        got = expect(_op(srv, s["uid"], op="write_file", path="out/n.txt", content="new"),
                     200).json()
        eq(got["size"], 3, "write")
        with open(os.path.join(root, "out/n.txt")) as f:
            eq(f.read(), "new", "the file is in the user's folder")
        got = expect(_op(srv, s["uid"], op="list_directory"), 200).json()
        eq(sorted((e["name"], e["type"]) for e in got["entries"]),
           [("a.txt", "file"), ("d", "directory"), ("out", "directory")], "listing")
        got = expect(_op(srv, s["uid"], op="search_files", pattern="hello"), 200).json()
        eq(sorted(r["file"] for r in got["results"]), ["a.txt", "d/b.md"], "search")
        expect_error(_op(srv, s["uid"], op="read_file", path="nope.txt"), 404, "not_found")
        expect(srv.delete("/v1/relay/sessions/" + s["uid"]), 200)
        eq(c.wait(), 0, "the client exits 0 when the session ends")
    finally:
        c.stop()


def test_user_mode_and_exclusions_reach_the_server(srv):
    _check_connect()
    s, c, root = _setup(srv, {"x.secret": "s", "a.txt": "a"}, "--readonly",
                        "--exclude", "*.secret")
    try:
        got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
        eq(got["mode"], "readonly", "the user's mode")
        check("*.secret" in got["exclusions"], "the user's exclusions: %r" % got["exclusions"])
        expect_error(_op(srv, s["uid"], op="write_file", path="b.txt", content="x"), 403,
                     "forbidden")
        expect_error(_op(srv, s["uid"], op="read_file", path="x.secret"), 403, "forbidden")
        got = expect(_op(srv, s["uid"], op="list_directory"), 200).json()
        eq([e["name"] for e in got["entries"]], ["a.txt"], "hidden")
        check(not os.path.exists(os.path.join(root, "b.txt")), "nothing written")
    finally:
        c.stop()


def test_sigterm_pauses_and_reconnect_resumes(srv):
    _check_connect()
    s, c, root = _setup(srv, {"a.txt": "a"})
    ev = Events(srv, s["uid"])
    try:
        c.proc.send_signal(signal.SIGTERM)
        c.wait()
        _wait_status(srv, s["uid"], "paused")
        c = Connect(srv, s, root)
        _wait_status(srv, s["uid"], "active")
        ev.wait("resume")
        expect(_op(srv, s["uid"], op="read_file", path="a.txt"), 200)
    finally:
        c.stop()
        ev.close()


def test_ctrl_c_aborts(srv):
    _check_connect()
    s, c, _ = _setup(srv)
    try:
        c.proc.send_signal(signal.SIGINT)
        eq(c.wait(), 0, "exit 0")
        got = _wait_status(srv, s["uid"], "ended")
        eq(got["endReason"], "aborted", "the user ended it")
        expect_error(_op(srv, s["uid"], op="list_directory"), 410, "gone")
    finally:
        c.stop()


def test_wrong_token_exits_1(srv):
    _check_connect()
    agent = make_agent(srv, _name("rc"))
    s = dict(create(srv, agent))
    s["connectToken"] = "rct_wrong"
    c = Connect(srv, s, tempfile.mkdtemp())
    eq(c.wait(), 1, "401 gives up with 1")
    _wait_status(srv, s["uid"], "waiting")
