"""GET /v1/agents/{id}/events (Server-Sent Events): files_changed about a second after
others change files under a `notify` mount, coalesced, never for the agent's own tool
writes nor for mounts without `notify`; file_presented with an absolute link."""

import time

import harness
from harness import check, eq, expect


class Stream(harness.EventStream):
    """The agent's events stream."""

    def __init__(self, srv, agent):
        super().__init__(srv, "/v1/agents/%s/events" % agent, timeout=60)


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
