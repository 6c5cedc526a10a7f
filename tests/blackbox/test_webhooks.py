"""Webhooks (API.md "Webhooks", docs/api.md): management with its limits, keys and
tenancy; deliveries to a real receiver (a Python HTTP server here), signed as the
Standard Webhooks specification says (checked in Python and by its reference verifier
from npm, tests/webhooks); retries, redelivery, the address checks (SSRF), volume.changed
coalesced, relay.session's fields, a queue that survives kill -9, and one delivery per
event with three nodes."""

import base64
import hashlib
import hmac
import http.server
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

import harness
from harness import check, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent

SERVER_OPTS = {"args": ["--webhook-allow-private"]}
TIMEOUT = 90
ALL_EVENTS = ["volume.changed", "snapshot.created", "file.presented", "turn.ended",
              "call.conflicted", "merge.conflicted", "relay.session", "relay.write_blocked"]
_n = [0]


def _name(prefix="wh"):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _n[0])


class Receiver:
    """An HTTP server on 127.0.0.1 that records every POST (headers, body) and answers
    the statuses of `answers` in turn (200 once they run out)."""

    def __init__(self, answers=(), port=0):
        self.got, self.answers, self.lock = [], list(answers), threading.Lock()
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with rec.lock:
                    status = rec.answers.pop(0) if rec.answers else 200
                    rec.got.append(({k.lower(): v for k, v in self.headers.items()}, body,
                                    status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d/hook" % self.port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def events(self, kind=None):
        with self.lock:
            return [(h, json.loads(b)) for h, b, _ in self.got
                    if kind is None or json.loads(b)["type"] == kind]

    def wait(self, kind, n=1, timeout=20):
        harness.until(lambda: len(self.events(kind)) >= n,
                      "%d %s deliveries (got %d)" % (n, kind, len(self.events(kind))),
                      timeout)
        return self.events(kind)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _hook(srv, url, events, key=None, **kw):
    body = dict(url=url, events=events, **kw)
    return expect(srv.post("/v1/webhooks", json=body, key=key or srv.key), 201).json()


def _verify(secret, headers, body):
    """The signature as the specification defines it, checked here in Python."""
    key = base64.b64decode(secret[len("whsec_"):])
    signed = ("%s.%s." % (headers["webhook-id"], headers["webhook-timestamp"])).encode() + body
    want = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    check(want in headers["webhook-signature"].split(" "),
          "signature %r is %r" % (headers["webhook-signature"], want))


def _org_key(srv, org=None):
    return expect(srv.post("/v1/keys", json={"org": org or _name("org")}), 201).json()["key"]


def test_crud_and_limits(srv):
    key = _org_key(srv)
    h = _hook(srv, "http://127.0.0.1:9/x", ["volume.changed", "turn.ended"], key=key,
              description="ci", volumes=["vol_a"])
    check(h["id"].startswith("wh_"), "id")
    check(h["secret"].startswith("whsec_"), "secret prefix")
    check(len(base64.b64decode(h["secret"][6:])) >= 24, "24+ random bytes")
    eq(h["events"], ["volume.changed", "turn.ended"], "events")
    listed = expect(srv.get("/v1/webhooks", key=key), 200).json()["webhooks"]
    eq([w["id"] for w in listed], [h["id"]], "listing")
    check("secret" not in listed[0], "the secret is shown only at creation")
    got = expect(srv.get("/v1/webhooks/" + h["id"], key=key), 200).json()
    eq(got["volumes"], ["vol_a"], "volumes")
    check("secret" not in got, "no secret on GET")
    p = expect(srv.patch("/v1/webhooks/" + h["id"], json={"events": ["snapshot.created"],
                                                          "disabled": True}, key=key), 200)
    eq((p.json()["events"], p.json()["disabled"]), (["snapshot.created"], True), "patched")
    # limits, each at its edge
    expect_error(srv.post("/v1/webhooks", json={"url": "http://127.0.0.1/" + "a" * 2032,
                                                "events": ["turn.ended"]}, key=key),
                 400, "validation_error", "limit is 2048")
    _hook(srv, "http://127.0.0.1/" + "a" * 2031, ["turn.ended"], key=key)   # 2048 bytes
    expect_error(srv.post("/v1/webhooks", json={"url": "http://127.0.0.1/",
                                                "events": ["nope"]}, key=key),
                 400, "validation_error", "unknown event")
    expect_error(srv.post("/v1/webhooks", json={"url": "http://127.0.0.1/",
                                                "events": []}, key=key),
                 400, "validation_error", "at least one")
    expect_error(srv.post("/v1/webhooks", json={"url": "http://127.0.0.1/",
                                                "events": ALL_EVENTS + ["turn.ended"]},
                          key=key), 400, "validation_error", "limit is 8")
    _hook(srv, "http://127.0.0.1/", ALL_EVENTS, key=key)   # all 8
    expect_error(srv.post("/v1/webhooks", json={"url": "http://127.0.0.1/", "events":
                                                ["turn.ended"],
                                                "volumes": ["v%d" % i for i in range(21)]},
                          key=key), 400, "validation_error", "limit is 20")
    for _ in range(17):
        _hook(srv, "http://127.0.0.1/", ["turn.ended"], key=key)   # 20 in all
    expect_error(srv.post("/v1/webhooks", json={"url": "http://127.0.0.1/",
                                                "events": ["turn.ended"]}, key=key),
                 409, "conflict", "its limit")
    expect(srv.delete("/v1/webhooks/" + h["id"], key=key), 204)
    expect_error(srv.get("/v1/webhooks/" + h["id"], key=key), 404, "not_found")
    _hook(srv, "http://127.0.0.1/", ["turn.ended"], key=key)   # room again


def test_keys_and_tenancy(srv):
    org = _name("org")
    key = _org_key(srv, org)
    h = _hook(srv, "http://127.0.0.1:9/x", ["turn.ended"], key=key)
    other = _org_key(srv)
    expect_error(srv.get("/v1/webhooks/" + h["id"], key=other), 404, "not_found")
    expect_error(srv.delete("/v1/webhooks/" + h["id"], key=other), 404, "not_found")
    expect_error(srv.get("/v1/webhooks/%s/deliveries" % h["id"], key=other), 404)
    eq(expect(srv.get("/v1/webhooks", key=other), 200).json()["webhooks"], [], "other org")
    ro = expect(srv.post("/v1/keys", json={"org": org, "readOnly": True}), 201).json()["key"]
    expect_error(srv.get("/v1/webhooks", key=ro), 403, "forbidden")
    expect_error(srv.get("/v1/webhooks/" + h["id"], key=ro), 403, "forbidden")
    expect_error(srv.post("/v1/webhooks", json={"url": "http://127.0.0.1/",
                                                "events": ["turn.ended"]}, key=ro), 403)
    agent = _name("ag")
    expect(srv.request("PUT", "/v1/agents/" + agent, json={}, key=key), 200, 201)
    ak = expect(srv.post("/v1/keys", json={"org": org, "agent": agent}), 201).json()["key"]
    expect_error(srv.get("/v1/webhooks", key=ak), 403, "forbidden")


def test_delivery_signed_and_verified_by_the_reference(srv):
    rec = Receiver()
    try:
        vol = srv.create_volume()
        h = _hook(srv, rec.url, ["snapshot.created"], volumes=[vol["id"]])
        other = srv.create_volume()
        srv.snapshot(other["id"])          # filtered out: another volume
        snap = srv.snapshot(vol["id"])
        (headers, msg), = rec.wait("snapshot.created")
        eq(msg["type"], "snapshot.created", "type")
        eq(msg["data"]["snapshot"]["id"], snap["id"], "the snapshot")
        eq(msg["id"], headers["webhook-id"], "body id is the webhook-id")
        check(msg["createdAt"].endswith("Z"), "createdAt RFC 3339")
        body = [b for hh, b, _ in rec.got if hh["webhook-id"] == msg["id"]][0]
        _verify(h["secret"], headers, body)
        node = harness.npm_ready("webhooks", "standardwebhooks", "the webhooks verifier")
        def ref(secret, hdrs):
            p = subprocess.run([node, os.path.join(harness.ROOT, "tests", "webhooks",
                                                   "verify.js")],
                               input=json.dumps({"secret": secret, "headers": hdrs,
                                                 "body": body.decode()}).encode(),
                               capture_output=True, timeout=60)
            return p.returncode, p.stdout.decode()
        rc, out = ref(h["secret"], headers)
        eq(rc, 0, "reference verifier accepts (%s)" % out)
        eq(json.loads(out)["type"], "snapshot.created", "verified payload")
        bad = "whsec_" + base64.b64encode(b"x" * 24).decode()
        rc, _ = ref(bad, headers)
        eq(rc, 1, "the reference refuses another secret")
        dl = expect(srv.get("/v1/webhooks/%s/deliveries" % h["id"]), 200).json()
        eq([(d["id"], d["status"], d["attempts"]) for d in dl["deliveries"]],
           [(msg["id"], "delivered", 1)], "deliveries")
        check("deliveredAt" in dl["deliveries"][0], "deliveredAt")
    finally:
        rec.close()


def test_retry_then_redeliver(srv):
    rec = Receiver(answers=[500])
    try:
        vol = srv.create_volume()
        h = _hook(srv, rec.url, ["snapshot.created"])
        srv.snapshot(vol["id"])
        rec.wait("snapshot.created", 1)
        def one():
            return expect(srv.get("/v1/webhooks/%s/deliveries" % h["id"]), 200).json()[
                "deliveries"][0]
        harness.until(lambda: one()["attempts"] == 1, "the failed attempt recorded")
        d = one()
        eq(d["status"], "pending", "retried later")
        check("500" in d["lastError"], "lastError names the answer: %r" % d)
        check("nextAttemptAt" in d, "nextAttemptAt")
        got = rec.wait("snapshot.created", 2, timeout=30)   # the 5 s step
        eq(got[0][0]["webhook-id"], got[1][0]["webhook-id"], "the same message id")
        harness.until(lambda: one()["status"] == "delivered", "delivered on the retry")
        eq(one()["attempts"], 2, "attempts")
        r = expect(srv.post("/v1/webhooks/%s/deliveries/%s/redeliver" % (h["id"], d["id"])),
                   202).json()
        eq(r, {"id": d["id"], "status": "pending"}, "redeliver answer")
        got = rec.wait("snapshot.created", 3)
        eq(got[2][0]["webhook-id"], d["id"], "redelivered the same message")
        expect_error(srv.post("/v1/webhooks/%s/deliveries/msg_nope/redeliver" % h["id"]),
                     404, "not_found")
    finally:
        rec.close()


def test_ssrf_refused_without_the_flag():
    with harness.server() as s:
        for url in ["http://127.0.0.1:8080/", "http://localhost/", "http://10.1.2.3/",
                    "http://169.254.169.254/latest/meta-data", "http://[::1]/",
                    "http://0.0.0.0/", "http://[fd00::1]/", "http://192.168.1.1/",
                    "http://[fe80::1]/"]:
            expect_error(s.post("/v1/webhooks", json={"url": url, "events": ["turn.ended"]}),
                         400, "validation_error", "private")
        for url in ["ftp://example.com/", "file:///etc/passwd", "not a url"]:
            expect_error(s.post("/v1/webhooks", json={"url": url, "events": ["turn.ended"]}),
                         400, "validation_error")


def test_volume_changed_coalesced(srv):
    rec = Receiver()
    try:
        vol = srv.create_volume()
        _hook(srv, rec.url, ["volume.changed"], volumes=[vol["id"]])
        t0 = time.monotonic()
        for i in range(30):
            srv.put_ok(vol["id"], "f%d.txt" % i, b"x")
        elapsed = time.monotonic() - t0
        seq = srv.seq(vol["id"])
        harness.until(lambda: rec.events("volume.changed") and
                      rec.events("volume.changed")[-1][1]["data"]["seq"] == seq,
                      "the last change reported")
        evs = [m["data"] for _, m in rec.events("volume.changed")]
        eq(sum(e["changes"] for e in evs), 30, "every change counted once")
        eq([e["seq"] for e in evs], sorted(e["seq"] for e in evs), "in order")
        me = {"keyId": "k_" + hashlib.sha256(srv.key.encode()).hexdigest()[:16], "via": "http"}
        check(all(e["volumeId"] == vol["id"] for e in evs), "volumeId: %r" % evs)
        eq([e["by"] for e in evs], [me] * len(evs), "by: who made the newest change of each")
        # a change by another key: the event names that key
        other = expect(srv.post("/v1/keys", json={"name": "second"}), 201).json()
        expect(srv.put(srv.file_path(vol["id"], "last.txt"), body=b"y", key=other["key"]), 201)
        harness.until(lambda: rec.events("volume.changed")[-1][1]["data"]["seq"] == seq + 1,
                      "the other key's change reported")
        eq(rec.events("volume.changed")[-1][1]["data"]["by"],
           {"keyId": other["id"], "via": "http"}, "by of the other key's change")
        # at most one a second: the writes took `elapsed` seconds
        check(len(evs) <= int(elapsed) + 2, "%d events for %.1f s of writes" % (
            len(evs), elapsed))
    finally:
        rec.close()


def test_relay_session_and_write_blocked(srv):
    rec = Receiver()
    try:
        key = _org_key(srv)
        _hook(srv, rec.url, ["relay.session", "relay.write_blocked"], key=key)
        agent = make_agent(srv, _name("ra"), key=key)
        s = create(srv, agent, key=key)
        c = FakeClient(srv, s["uid"], s["connectToken"], tempfile.mkdtemp(prefix="wh-"))
        eq(c.status, 200, "connect")
        def active():
            return [m for _, m in rec.events("relay.session")
                    if m["data"]["status"] == "active"]
        harness.until(active, "relay.session active")
        d = active()[0]["data"]
        eq(d["uid"], s["uid"], "uid")
        eq(d["mode"], "standard", "mode")
        eq(d["metadata"], {"workspaceEnabled": True, "workspaceMode": "standard",
                           "workspaceUid": s["uid"]}, "seed 004's metadata")
        expect(c.post_event("write_blocked", {"path": "a.sh", "rule": "r1",
                                              "category": "miner"}), 204)
        (_, b), = rec.wait("relay.write_blocked")
        eq((b["data"]["uid"], b["data"]["path"], b["data"]["rule"]), (s["uid"], "a.sh", "r1"),
           "relay.write_blocked data")
        c.close()
    finally:
        rec.close()


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_queue_survives_kill_9():
    port = _free_port()
    with harness.server(args=["--webhook-allow-private"]) as s:
        vol = s.create_volume()
        h = _hook(s, "http://127.0.0.1:%d/hook" % port, ["snapshot.created"])
        snap = s.snapshot(vol["id"])          # nobody listens yet: fails, retried
        def dl():
            return expect(s.get("/v1/webhooks/%s/deliveries" % h["id"]), 200).json()[
                "deliveries"]
        harness.until(lambda: dl() and dl()[0]["attempts"] >= 1, "the first attempt")
        s.kill()
        rec = Receiver(port=port)
        try:
            s.start()
            got = rec.wait("snapshot.created", 1, timeout=40)
            eq(got[0][1]["data"]["snapshot"]["id"], snap["id"], "sent after the restart")
            _verify(h["secret"], got[0][0], [b for _, b, _ in rec.got][0])
        finally:
            rec.close()


def test_three_nodes_one_delivery_each():
    harness.nodes_pg()
    url, ns = harness.nodes(3, args=["--webhook-allow-private"])
    rec = Receiver()
    try:
        h = _hook(ns[0], rec.url, ["snapshot.created"])
        vol = ns[0].create_volume()
        snaps = [ns[i % 3].snapshot(vol["id"])["id"] for i in range(9)]
        rec.wait("snapshot.created", 9)
        time.sleep(2)   # any duplicate would come within the senders' next look
        got = rec.events("snapshot.created")
        eq(sorted(m["data"]["snapshot"]["id"] for _, m in got), sorted(snaps),
           "each event delivered exactly once")
        eq(len({hh["webhook-id"] for hh, _ in got}), 9, "distinct ids")
        dl = expect(ns[1].get("/v1/webhooks/%s/deliveries" % h["id"]), 200).json()
        eq(sorted(d["status"] for d in dl["deliveries"]), ["delivered"] * 9, "all delivered")
    finally:
        rec.close()
        harness.close_nodes(url, ns)


def test_merge_presented_and_turn_events(srv):
    rec = Receiver()
    try:
        key = _org_key(srv)
        _hook(srv, rec.url, ["merge.conflicted", "file.presented", "turn.ended"], key=key)
        # merge.conflicted: both sides change one line differently
        ours = expect(srv.post("/v1/volumes", json={"name": _name("m")}, key=key), 201).json()
        srv.put_ok(ours["id"], "a.txt", b"base\n", key=key)
        theirs = expect(srv.post("/v1/volumes/%s/fork" % ours["id"], json={}, key=key),
                        201).json()["id"]
        srv.put_ok(ours["id"], "a.txt", b"ours\n", key=key)
        srv.put_ok(theirs, "a.txt", b"theirs\n", key=key)
        expect_error(srv.post("/v1/volumes/%s/merge" % ours["id"], json={"from": theirs},
                              key=key), 409)
        (_, m), = rec.wait("merge.conflicted")
        eq(m["data"], {"volumeId": ours["id"], "from": theirs, "conflicts": 1}, "merge data")
        # file.presented
        agent = _name("pa")
        expect(srv.request("PUT", "/v1/agents/" + agent, key=key, json={"mounts": [
            {"volumeId": ours["id"], "path": "/shared", "mode": "rw"}]}), 200, 201)
        expect(srv.post("/v1/agents/%s/tools/present_file" % agent, key=key,
                        json={"path": "/shared/a.txt", "caption": "see"}), 200)
        (_, p), = rec.wait("file.presented")
        eq((p["data"]["agent"], p["data"]["path"], p["data"]["caption"]),
           (agent, "/shared/a.txt", "see"), "presented data")
        # turn.ended: a turn deleted ends
        t = srv.post("/v1/turns", json={"agent": agent, "user": "u1",
                                        "deadlineSeconds": 600}, key=key)
        if t.status != 201:
            return      # turns need what this machine may lack; the rest stands
        expect(srv.delete("/v1/turns/" + t.json()["id"], key=key), 200, 204)
        (_, te), = rec.wait("turn.ended")
        eq(te["data"], {"turnId": t.json()["id"], "agent": agent}, "turn data")
    finally:
        rec.close()


def test_ssrf_checked_again_at_send():
    """A webhook registered while private addresses were allowed is not sent to one
    once cofferd runs without the flag: the address is checked at each send."""
    rec = Receiver()
    try:
        with harness.server(args=["--webhook-allow-private"]) as s:
            h = _hook(s, rec.url, ["snapshot.created"])
            s.stop()
            s.args.remove("--webhook-allow-private")
            s.start()
            vol = s.create_volume()
            s.snapshot(vol["id"])
            def dl():
                return expect(s.get("/v1/webhooks/%s/deliveries" % h["id"]), 200).json()[
                    "deliveries"]
            harness.until(lambda: dl() and dl()[0]["attempts"] == 1, "an attempt")
            check("private" in dl()[0]["lastError"], "refused: %r" % dl()[0])
            eq(rec.events(), [], "nothing reached the receiver")
    finally:
        rec.close()
