"""GET /v1/agents/{id}/events (Server-Sent Events): files_changed about a second after
others change files under a `notify` mount, coalesced, never for the agent's own tool
writes nor for mounts without `notify`; file_presented with an absolute link."""

import time

import harness
from harness import check, contains, eq, expect, expect_error


class Stream(harness.EventStream):
    """The agent's events stream."""

    def __init__(self, srv, agent, key=None):
        super().__init__(srv, "/v1/agents/%s/events" % agent, key=key, timeout=60)


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


def _ended(stream, timeout=30):
    """True once the stream's reader saw its end (a generous bound: what is asserted
    is that it ends at all; before issue 32.8 it never did)."""
    deadline = time.time() + timeout * harness.SCALE
    while time.time() < deadline and not stream.done:
        time.sleep(0.05)
    return stream.done


def test_a_revoked_keys_stream_ends(srv):
    """Issue 32.8: a stream opened before its key was revoked went on delivering events
    (fresh signed links of present_file included). Now it ends with an `error` event
    saying the key was revoked, and the key gets nothing more: its next request is 401."""
    shared, _ = _setup(srv, "ev-rev")
    k = expect(srv.post("/v1/keys", json={"name": "stream"}), 201).json()
    s = Stream(srv, "ev-rev", key=k["key"])
    try:
        srv.put_ok(shared, "before.txt", b"x")
        s.expect("files_changed")                  # the stream is live and delivers
        expect(srv.delete("/v1/keys/" + k["id"]), 204)
        check(_ended(s), "the stream of a revoked key ended")
        errs = [d for t, d in s.events if t == "error"]
        eq(len(errs), 1, "one error event ends it: %r" % (s.events,))
        eq(errs[0]["type"], "unauthorized", "its type")
        contains(errs[0]["message"], "%s was revoked" % k["id"], "its message")
        eq(s.events[-1][0], "error", "the error is the last event")
        expect_error(srv.get("/v1/agents/ev-rev/events", key=k["key"]), 401, "unauthorized")
    finally:
        s.close()


def test_an_expired_keys_stream_ends(srv):
    """Issue 32.8: the same for a key that expires while its stream is open (the key's
    row is aged in the embedded store: waiting a minute is not a test)."""
    if harness.ENGINE != "embedded":
        harness.skip("ages the key through the embedded store's SQLite file")
    import os
    import sqlite3
    _setup(srv, "ev-exp")
    k = expect(srv.post("/v1/keys", json={"expiresIn": 60}), 201).json()
    s = Stream(srv, "ev-exp", key=k["key"])
    try:
        db = sqlite3.connect(os.path.join(srv.data, "meta.db"), timeout=30)
        with db:
            db.execute("UPDATE keys SET expires_at = ? WHERE id = ?",
                       (int(time.time()) - 1, k["id"]))
        db.close()
        check(_ended(s), "the stream of an expired key ended")
        errs = [d for t, d in s.events if t == "error"]
        eq(len(errs), 1, "one error event ends it: %r" % (s.events,))
        contains(errs[0]["message"], "%s expired" % k["id"], "its message")
    finally:
        s.close()


def test_a_live_keys_stream_goes_on_when_another_key_is_revoked(srv):
    """Only the revoked key's streams end."""
    shared, _ = _setup(srv, "ev-other")
    a = expect(srv.post("/v1/keys", json={}), 201).json()
    b = expect(srv.post("/v1/keys", json={}), 201).json()
    sa = Stream(srv, "ev-other", key=a["key"])
    sb = Stream(srv, "ev-other", key=b["key"])
    try:
        expect(srv.delete("/v1/keys/" + a["id"]), 204)
        check(_ended(sa), "a's stream ended")
        srv.put_ok(shared, "after.txt", b"x")
        sb.expect("files_changed")
        check(not sb.done, "b's stream goes on")
    finally:
        sa.close()
        sb.close()
