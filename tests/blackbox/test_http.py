"""HTTP-level behaviour: keep-alive stays in step after errors, many connections at once,
paths are bytes (no Unicode or case folding)."""

import concurrent.futures
import http.client
import json
import os
import shutil
import tempfile
import time
import unicodedata

import harness
from harness import check, eq, expect, expect_error, sha256


def _conn(srv):
    return http.client.HTTPConnection(srv.host, srv.port, timeout=30)


def _send(conn, srv, method, path, body=None, headers=None):
    h = {"Authorization": "Bearer " + srv.key}
    h.update(headers or {})
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    return r, r.read()


def test_keep_alive_in_step_after_errors(srv):
    vid = srv.create_volume()["id"]
    conn = _conn(srv)
    try:
        steps = [
            ("PUT", "/v1/volumes/%s/files/a.txt" % vid, b"a" * 1000, 201),
            ("GET", "/v1/volumes/%s/files/a.txt" % vid, None, 200),
            ("PUT", "/v1/volumes/nosuch/files/x", os.urandom(2 << 20), 404),
            ("GET", "/v1/volumes/%s/files/a.txt" % vid, None, 200),
            ("PUT", "/v1/volumes/%s/files/a/../b" % vid, b"x" * 5000, 400),
            ("PUT", "/v1/volumes/%s/files/a.txt" % vid, b"b" * 70000, 200),
            ("GET", "/v1/volumes/%s/files/missing" % vid, None, 404),
            ("POST", "/v1/volumes", b"{bad json", 400),
            ("GET", "/v1/volumes/%s/files/a.txt" % vid, None, 200),
        ]
        for method, path, body, want in steps:
            r, data = _send(conn, srv, method, path, body)
            eq(r.status, want, "%s %s on a kept-alive connection" % (method, path))
            if (r.getheader("Connection") or "").lower() == "close":
                conn.close()
                conn = _conn(srv)
        r, data = _send(conn, srv, "GET", "/v1/volumes/%s/files/a.txt" % vid)
        eq(data, b"b" * 70000, "last body read on the connection")
    finally:
        conn.close()


def test_many_connections_at_once(srv):
    vid = srv.create_volume()["id"]
    data = os.urandom(200_000)
    srv.put_ok(vid, "shared.bin", data)

    def get(_):
        r = srv.get_file(vid, "shared.bin")
        return r.status, sha256(r.body)
    with concurrent.futures.ThreadPoolExecutor(64) as ex:
        got = list(ex.map(get, range(256)))
    eq(set(got), {(200, sha256(data))}, "256 GETs on 64 connections at once")


def test_paths_are_not_normalised(srv):
    vid = srv.create_volume()["id"]
    nfc = unicodedata.normalize("NFC", "café.txt")
    nfd = unicodedata.normalize("NFD", "café.txt")
    check(nfc != nfd, "test's own NFC/NFD strings differ")
    srv.put_ok(vid, nfc, b"nfc")
    srv.put_ok(vid, nfd, b"nfd")
    srv.put_ok(vid, "Case.txt", b"upper")
    srv.put_ok(vid, "case.txt", b"lower")
    eq(expect(srv.get_file(vid, nfc), 200).body, b"nfc", "NFC name")
    eq(expect(srv.get_file(vid, nfd), 200).body, b"nfd", "NFD name")
    eq(expect(srv.get_file(vid, "Case.txt"), 200).body, b"upper", "Case.txt")
    eq(expect(srv.get_file(vid, "case.txt"), 200).body, b"lower", "case.txt")
    eq(srv.volume(vid)["files"], 4, "four distinct files")


def test_error_shape_everywhere(srv):
    vid = srv.create_volume()["id"]
    for r in (srv.get("/v1/volumes/nosuch"), srv.get("/v1/volumes/%s" % vid, key=None),
              srv.post("/v1/volumes", json={"name": 1}),
              srv.put_file(vid, "a/../b", b"x"), srv.get_file(vid, "nope")):
        err = expect_error(r, r.status)
        eq(sorted(set(json.loads(r.body)) - {"error"}), [], "nothing beside error")
        check(err["type"] and err["message"], "type and message")


def test_request_id_echoed_or_made(srv):
    # API.md General: taken from the request when 1..128 printable ASCII bytes, else
    # made; on every answer, and in every error body as requestId
    r = expect(srv.get("/v1/volumes", headers={"X-Request-Id": "trace-42 a/b"}), 200)
    eq(r.header("X-Request-Id"), "trace-42 a/b", "a sane id echoed")
    edge = "x" * 128
    eq(srv.get("/v1/volumes", headers={"X-Request-Id": edge}).header("X-Request-Id"), edge,
       "128 bytes echoed")
    for bad in ("x" * 129, "caf\u00e9", ""):
        got = srv.get("/v1/volumes", headers={"X-Request-Id": bad}).header("X-Request-Id")
        check(got and got != bad and got.startswith("req_"), "%r replaced: %r" % (bad, got))
    made = {srv.get("/v1/volumes").header("X-Request-Id") for _ in range(3)}
    eq(len(made), 3, "a new id each request: %r" % made)
    vol = srv.create_volume()
    srv.put_ok(vol["id"], "a.bin", b"\x00\x01")
    r = expect(srv.get_file(vol["id"], "a.bin", headers={"X-Request-Id": "dl-1"}), 200)
    eq(r.header("X-Request-Id"), "dl-1", "on a file download")
    for r in (srv.get("/v1/volumes/vol_nope", headers={"X-Request-Id": "e-404"}),
              srv.get("/v1/volumes", key=None, headers={"X-Request-Id": "e-401"}),
              srv.delete("/v1/volumes", headers={"X-Request-Id": "e-405"})):
        check(r.error, "an error answer: %s" % r.status)
        eq((r.header("X-Request-Id"), r.error.get("requestId")),
           (r.header("X-Request-Id"), r.header("X-Request-Id")), "requestId in the body")
        check(r.header("X-Request-Id").startswith("e-"), "the client's id kept")
    r = srv.get("/v1/volumes/vol_nope")
    eq(r.error.get("requestId"), r.header("X-Request-Id"), "a made id in the body too")


def test_request_log_lines():
    # docs/api.md "Request log": one JSON line a request, never a key, a path or a byte of
    # a body; --log FILE, reopened on SIGHUP
    import json as _json
    import signal as _signal
    root = tempfile.mkdtemp(prefix="coffer-reqlog-")
    log = os.path.join(root, "requests.log")
    with harness.server(args=["--log", log]) as s:
        vol = s.create_volume()
        secret_path = "secret-name-%s.txt" % os.getpid()
        s.put_ok(vol["id"], secret_path, b"body-bytes-never-logged")
        expect(s.get_file(vol["id"], secret_path, headers={"X-Request-Id": "find-me"}), 200)
        expect_error(s.get("/v1/volumes", key="ck_wrong", headers={"X-Request-Id": "last"}),
                     401, "unauthorized")
        # a line is written once the answer went out: the client may read it first,
        # and two requests answered by two event loops may be logged in either order
        deadline = time.time() + 10
        while not all(r in open(log).read() for r in ('"find-me"', '"last"', '"PUT"')) and \
                time.time() < deadline:
            time.sleep(0.02)
        text = open(log).read()
        # the request lines (libmicrohttpd's own messages share the log as
        # {time, level, source, message})
        lines = [l for l in map(_json.loads, text.splitlines()) if "requestId" in l]
        for bad in (s.key, "ck_wrong", secret_path, "body-bytes-never-logged"):
            check(bad not in text, "%r is not in the log" % bad)
        got = [l for l in lines if l["requestId"] == "find-me"]
        eq(len(got), 1, "one line for the request")
        g = got[0]
        eq((g["method"], g["route"], g["status"], g["bytesOut"], g["org"]),
           ("GET", "/v1/volumes/{}/files/{+}", 200, 23, "org_default"), "its fields")
        check(g["keyId"].startswith("k_") and len(g["keyId"]) == 18, "keyId %r" % g["keyId"])
        check(g["durationMs"] >= 0 and g["time"].endswith("Z"), "time and duration %r" % g)
        put = [l for l in lines if l["method"] == "PUT"][0]
        eq((put["bytesIn"], put["status"]), (23, 201), "the upload's bytes in")
        eq([l["status"] for l in lines if l["route"] == "/v1/volumes" and
            l["method"] == "GET"], [401], "the refused call logged too")
        # logrotate: move the file away, SIGHUP, the next line goes to a new file
        os.rename(log, log + ".1")
        s.proc.send_signal(_signal.SIGHUP)
        deadline = time.time() + 10
        while not os.path.exists(log) and time.time() < deadline:
            time.sleep(0.05)
        expect(s.get("/v1/volumes", headers={"X-Request-Id": "after-hup"}), 200)
        deadline = time.time() + 10
        while "after-hup" not in open(log).read() and time.time() < deadline:
            time.sleep(0.02)
        check("after-hup" in open(log).read(), "logged in the new file")
        check("after-hup" not in open(log + ".1").read(), "not in the rotated one")
    shutil.rmtree(root, ignore_errors=True)


def test_libmicrohttpd_messages_go_through_the_log():
    """Issue 39.6: libmicrohttpd printed its own complaints (a malformed request) to stderr
    as bare text. They are lines of the request log now, in its format, with a level:
    {time, level, source:"libmicrohttpd", message}."""
    import re, socket
    d = tempfile.mkdtemp(prefix="coffer-mhdlog-")
    log = os.path.join(d, "requests.log")
    with harness.server(args=["--log", log]) as s:
        # a header line with no colon: MHD answers 400 itself, before any route runs
        c = socket.create_connection((s.host, s.port), timeout=30)
        c.sendall(b"GET /v1/health HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n")
        got = b""
        while b"\r\n" not in got:
            chunk = c.recv(4096)
            if not chunk:
                break
            got += chunk
        c.close()
        check(got.startswith(b"HTTP/1.1 400"), "MHD's 400: %r" % got[:100])

        def mhd_lines():
            return [json.loads(l) for l in open(log) if '"libmicrohttpd"' in l]
        harness.until(lambda: mhd_lines(), "a libmicrohttpd line in the log")
        lines = mhd_lines()
        for o in lines:
            eq(sorted(o), ["level", "message", "source", "time"], "the line's fields")
            check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["time"]),
                  "time %r as the request lines have it" % o["time"])
            eq(o["level"], "warn", "level")
            check(o["message"] and "\n" not in o["message"], "a one-line message")
        check(any("400" in o["message"] for o in lines), "the 400 named: %r" % lines)
        for l in open(log):
            json.loads(l)   # every line of the log is JSON
        s.stop()
        check("Error processing request" not in s.log() and
              "EXTERNAL_LOGGER" not in s.log(), "nothing of MHD's on stderr:\n" + s.log())
    shutil.rmtree(d, ignore_errors=True)
