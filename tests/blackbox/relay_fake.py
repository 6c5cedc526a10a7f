"""A fake `coffer connect` for the relay tests: speaks docs/relay-protocol.md (opens the
connect SSE stream with the connect token and answers each `op` from a temp dir by POSTing
to results/{opId}) without any rule of its own, so every refusal a test sees comes from
cofferd. Python standard library only.

    c = FakeClient(srv, uid, token, root, mode="standard", exclusions=["*.log"],
                   allow_write=[".git/**"])
    c.status            # 200 when attached; else c.error is the API error object
    c.ops, c.events     # ops received; other events as (type, data)
    c.hold = True       # stop answering: ops wait in c.ops (answer with c.answer(op))
    c.tamper = f        # f(op, result) -> the result to send: a lying user side
    c.close()           # drop the stream (cofferd pauses the session)
"""

import base64
import hashlib
import http.client
import json
import os
import re
import socket
import threading
import time


def make_agent(srv, name, mode=None, capability=True, key=None):
    relay = {"capability": capability}
    if mode:
        relay["defaultMode"] = mode
    r = srv.put("/v1/agents/" + name, json={"relay": relay}, key=key or srv.key)
    assert r.status in (200, 201), (r.status, r.body)
    return name


def create(srv, agent, limits=None, key=None):
    body = {"agent": agent}
    if limits is not None:
        body["limits"] = limits
    r = srv.post("/v1/relay/sessions", json=body, key=key or srv.key)
    assert r.status == 201, (r.status, r.body)
    return r.json()


def wait_status(srv, uid, status, timeout=10):
    """Polls GET /v1/relay/sessions/{uid} until its status is `status` (asserts it
    after `timeout` seconds, times harness.SCALE); returns the session."""
    import harness
    deadline = time.time() + timeout * harness.SCALE
    while True:
        got = harness.expect(srv.get("/v1/relay/sessions/" + uid), 200).json()
        if got["status"] == status or time.time() > deadline:
            harness.eq(got["status"], status, "session status")
            return got
        time.sleep(0.05)


class FakeClient:
    def __init__(self, srv, uid, token, root, mode=None, exclusions=None, client="fake 1",
                 allow_write=None):
        self.srv, self.uid, self.token, self.root = srv, uid, token, root
        self.ops, self.events = [], []
        self.hold = False
        self.tamper = None
        self.closed = False
        self.error = None
        body = {"client": client}
        if mode:
            body["mode"] = mode
        if exclusions is not None:
            body["exclusions"] = exclusions
        if allow_write is not None:
            body["allowWrite"] = allow_write
        self.conn = http.client.HTTPConnection(srv.host, srv.port, timeout=120)
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        self.conn.request("POST", "/v1/relay/sessions/%s/connect" % uid,
                          body=json.dumps(body), headers=headers)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        if self.status != 200:
            self.error = json.loads(self.resp.read() or b"{}").get("error")
            self.conn.close()
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    # ---- the stream
    def _read(self):
        kind, data = None, None
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                elif line == "" and kind:
                    if kind == "op":
                        self.ops.append(data)
                        if not self.hold:
                            self.answer(data)
                    else:
                        self.events.append((kind, data))
                    kind, data = None, None
        except Exception:
            pass
        self.closed = True

    def wait_event(self, kind, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for k, d in self.events:
                if k == kind:
                    return d
            time.sleep(0.05)
        return None

    def wait_ops(self, n, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline and len(self.ops) < n:
            time.sleep(0.05)
        return self.ops

    def close(self):
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except Exception:
            pass
        self.conn.close()

    # ---- answering
    def post_result(self, op_id, body):
        return self.srv.post("/v1/relay/sessions/%s/results/%s" % (self.uid, op_id),
                             json=body, key=self.token)

    def post_event(self, kind, data=None):
        body = {"type": kind}
        if data is not None:
            body["data"] = data
        return self.srv.post("/v1/relay/sessions/%s/events" % self.uid, json=body,
                             key=self.token)

    def answer(self, op):
        try:
            result = self.run(op)
            if self.tamper:
                result = self.tamper(op, result)
            body = {"ok": True, "result": result}
        except FileNotFoundError:
            body = {"ok": False, "error": {"type": "not_found",
                                           "message": "no file '%s'" % op.get("path")}}
        return self.post_result(op["id"], body)

    def run(self, op):
        path = os.path.join(self.root, op.get("path", ""))
        kind = op["op"]
        if kind == "read_file":
            with open(path, "rb") as f:
                data = f.read()
            try:
                return {"path": op["path"], "content": data.decode("utf-8"),
                        "encoding": "utf-8", "size": len(data)}
            except UnicodeDecodeError:
                return {"path": op["path"], "content": base64.b64encode(data).decode(),
                        "encoding": "base64", "size": len(data)}
        if kind == "write_file":
            data = op["content"].encode() if op.get("encoding", "utf-8") == "utf-8" \
                else base64.b64decode(op["content"])
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            return {"path": op["path"], "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest()}
        if kind == "list_directory":
            if not os.path.isdir(path):
                raise FileNotFoundError(path)
            entries = []
            for name in sorted(os.listdir(path)):
                full = os.path.join(path, name)
                isdir = os.path.isdir(full)
                entries.append({"name": name, "type": "dir" if isdir else "file",
                                "size": 0 if isdir else os.path.getsize(full)})
            return {"entries": entries}
        if kind == "search_files":
            rx = re.compile(op["pattern"])
            results, cap = [], op.get("maxResults", 1000)
            for dirpath, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    full = os.path.join(dirpath, name)
                    rel = os.path.relpath(full, self.root)
                    with open(full, "rb") as f:
                        for i, line in enumerate(f.read().decode("utf-8", "replace")
                                                 .splitlines(), 1):
                            if rx.search(line):
                                results.append({"file": rel, "line": i, "content": line})
            # answers more than asked on purpose: the server caps them
            return {"results": results[:cap + 5], "truncated": False}
        raise ValueError(kind)
