"""What a restart still lost (issue 12), both passes: files_changed agent events are
stored with ids (one event per coalescing window, whatever the number of streams open)
and replay after Last-Event-ID across a restart; deleting an agent forgets its stored
events; a relay op's record outlives a restart (SIGTERM and SIGKILL): a supervised write
waiting for the user still waits and the user's answer still applies, an op whose result
is unknown answers 410 `gone` with the reason, a finished one keeps its answer."""

import os
import tempfile
import threading
import time

import harness
from harness import check, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent, wait_status
from test_restart import _bounce, _name, _sse


def _notify_agent(srv):
    vol = srv.create_volume("shared")["id"]
    agent = _name("fc")
    expect(srv.put("/v1/agents/" + agent, json={"mounts": [
        {"volumeId": vol, "path": "/shared", "mode": "rw", "notify": True}]}), 201)
    return vol, agent


def test_files_changed_has_an_id_and_replays_after_restart():
    with harness.server() as srv:
        vol, agent = _notify_agent(srv)
        path = "/v1/agents/%s/events" % agent
        # two streams open at once: still one event per change window
        s1, s2 = harness.EventStream(srv, path), harness.EventStream(srv, path)
        try:
            time.sleep(0.3)
            srv.put_ok(vol, "a.txt", b"a")
            srv.put_ok(vol, "b.txt", b"b")
            got = s1.expect("files_changed", 1, timeout=10)
            eq(sorted(got[0]["paths"]), ["/shared/a.txt", "/shared/b.txt"], "coalesced")
            eq(len(s2.expect("files_changed", 1, timeout=10)), 1, "the second stream too")
            time.sleep(1.5)
            eq((len(s1.wait("files_changed", 2, timeout=0.1)),
                len(s2.wait("files_changed", 2, timeout=0.1))), (1, 1),
               "one event for both streams: %r %r" % (s1.events, s2.events))
        finally:
            s1.close()
            s2.close()
        stored = [e for e in _sse(srv, path, last_id=0, seconds=1.5) if e[1] == "files_changed"]
        eq(len(stored), 1, "one stored files_changed: %r" % stored)
        check(stored[0][0] is not None, "it has an id: %r" % stored)
        _bounce(srv, "kill")
        again = _sse(srv, path, last_id=stored[0][0] - 1, seconds=1.5)
        eq([(i, t, sorted(d["paths"])) for i, t, d in again],
           [(stored[0][0], "files_changed", ["/shared/a.txt", "/shared/b.txt"])],
           "replayed after Last-Event-ID across a SIGKILL")


def test_deleting_an_agent_forgets_its_events():
    with harness.server() as srv:
        vol = srv.create_volume("shared")["id"]
        agent = _name("del")
        body = {"mounts": [{"volumeId": vol, "path": "/shared", "mode": "rw",
                            "notify": True}]}
        expect(srv.put("/v1/agents/" + agent, json=body), 201)
        srv.put_ok(vol, "one.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>")
        expect(srv.post("/v1/agents/%s/tools/present_file" % agent,
                        json={"path": "/shared/one.svg"}), 200)
        path = "/v1/agents/%s/events" % agent
        s = harness.EventStream(srv, path)
        try:
            time.sleep(0.3)
            srv.put_ok(vol, "two.txt", b"2")
            s.expect("files_changed", 1, timeout=10)
        finally:
            s.close()
        eq(sorted(t for _, t, _ in _sse(srv, path, last_id=0, seconds=1.0)),
           ["file_presented", "files_changed"], "stored before the delete")
        expect(srv.delete("/v1/agents/" + agent), 204)
        expect(srv.put("/v1/agents/" + agent, json=body), 201)
        eq(_sse(srv, path, last_id=0, seconds=1.0), [],
           "an agent made again under the name has none of the deleted one's events")
        # nor its files_changed cursor: a change is reported to the new agent
        s = harness.EventStream(srv, path)
        try:
            time.sleep(0.3)
            srv.put_ok(vol, "three.txt", b"3")
            eq(s.expect("files_changed", 1, timeout=10)[0]["paths"], ["/shared/three.txt"],
               "the new agent's first change")
        finally:
            s.close()
