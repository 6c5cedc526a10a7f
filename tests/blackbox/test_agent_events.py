"""GET /v1/agents/{id}/events (Server-Sent Events): files_changed about a second after
others change files under a `notify` mount, coalesced, never for the agent's own tool
writes nor for mounts without `notify`; file_presented with an absolute link."""

import http.client
import json
import socket
import threading
import time

from harness import check, eq, expect


class Stream:
    """Reads an SSE stream in a thread; events land in self.events as (type, data)."""

    def __init__(self, srv, agent):
        self.events = []
        self.conn = http.client.HTTPConnection(srv.host, srv.port, timeout=60)
        self.conn.request("GET", "/v1/agents/%s/events" % agent,
                          headers={"Authorization": "Bearer " + srv.key})
        self.resp = self.conn.getresponse()
        eq(self.resp.status, 200, "events status")
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
                    self.events.append((kind, json.loads(line[6:])))
                    kind = None
        except Exception:
            pass

    def wait(self, kind, n=1, timeout=8):
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = [d for k, d in self.events if k == kind]
            if len(got) >= n:
                return got
            time.sleep(0.05)
        return [d for k, d in self.events if k == kind]

    def close(self):
        # Shut the socket first so the reader thread's blocked read returns now.
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except Exception:
            pass
        self.conn.close()


def _setup(srv, name):
    shared = srv.create_volume("shared")["id"]
    quiet = srv.create_volume("quiet")["id"]
    expect(srv.put("/v1/agents/" + name, json={"mounts": [
        {"volumeId": shared, "path": "/shared", "mode": "rw", "notify": True},
        {"volumeId": quiet, "path": "/quiet", "mode": "rw"}]}), 201)
    return shared, quiet


def test_files_changed_coalesced_and_not_for_own_writes(srv):
    shared, quiet = _setup(srv, "ev1")
    s = Stream(srv, "ev1")
    try:
        time.sleep(0.3)
        t0 = time.time()
        srv.put_ok(shared, "a.txt", b"a")
        srv.put_ok(shared, "dir/b.txt", b"b")
        srv.put_ok(quiet, "q.txt", b"q")  # no notify: never reported
        got = s.wait("files_changed")
        took = time.time() - t0
        eq(len(got), 1, "one coalesced files_changed event")
        eq(sorted(got[0]["paths"]), ["/shared/a.txt", "/shared/dir/b.txt"], "paths")
        eq(got[0]["mount"], "/shared", "mount")
        check(0.5 <= took <= 4, "event about a second after the change (took %.2fs)" % took)
        # the agent's own tool write is not reported back to it
        r = expect(srv.post("/v1/agents/ev1/tools/write",
                            json={"path": "/shared/own.txt", "content": "mine"}), 200).json()
        check(r["ok"], "own write ok")
        time.sleep(2)
        eq(len(s.wait("files_changed", 2, timeout=0.1)), 1, "no event for the agent's own write")
    finally:
        s.close()


def test_file_presented_event(srv):
    shared, _ = _setup(srv, "ev2")
    srv.put_ok(shared, "chart.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>")
    s = Stream(srv, "ev2")
    try:
        time.sleep(0.3)
        r = expect(srv.post("/v1/agents/ev2/tools/present_file",
                            json={"path": "/shared/chart.svg", "caption": "a chart"}), 200).json()
        check(r["ok"], "present ok")
        got = s.wait("file_presented")
        eq(len(got), 1, "one file_presented event")
        eq((got[0]["path"], got[0]["caption"]), ("/shared/chart.svg", "a chart"), "event data")
        check(got[0]["url"].startswith("http://"), "absolute link: %r" % got[0]["url"])
        check(got[0]["url"] == r["url"], "the same link as the tool's answer")
    finally:
        s.close()


def test_events_unknown_agent_404(srv):
    expect(srv.get("/v1/agents/nobody/events"), 404)
