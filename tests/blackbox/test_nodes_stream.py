"""Forwarded requests streamed (issue 12; docs/design.md "Across nodes", src/http/carry.c):
two nodes on one PostgreSQL dataset. A turn's file read through the node that does not
hold it comes with the holder's status and headers (ETag, Content-Type,
Content-Disposition, Content-Length, Range/206, 304, HEAD, X-Request-Id); a turn call
asked for as Server-Sent Events through the other node is carried as events, live, and
the client leaving ends the carried transfer; the holding node dying mid-stream cuts the
client's connection (never an orderly end); past --forward-max a carried request is 503
naming the limit; a 10 MB relay read carried through the other node leaves that node's
memory flat (the answer is not held whole). pg pass only."""

import http.client
import json
import os
import shutil
import tempfile
import time

import harness
from harness import check, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent, wait_status
import turnlib


def _nodes(n=2, later_args=()):
    if harness.ENGINE != "pg":
        harness.skip("cross-node tests run once, in the pg pass")
    import pgpeer
    why = pgpeer.available()
    if why:
        harness.skip("PostgreSQL 15 is needed: " + why)
    url = pgpeer.shared().new_database()
    nodes = [harness.Server(args=["--meta", url, "--node", "n0"], engine="pg")]
    for i in range(1, n):
        s = harness.Server(args=["--meta", url, "--node", "n%d" % i] + list(later_args),
                           engine="pg", start=False)
        os.makedirs(s.data, exist_ok=True)
        shutil.copy(os.path.join(nodes[0].data, "admin.key"), s.data)
        nodes.append(s.start())
    return url, nodes


def _close(url, nodes):
    for s in nodes:
        if s.alive():
            s.close()
    import pgpeer
    pgpeer.shared().drop_database(url)


def _metric(srv, name):
    """The value of an unlabelled sample of GET /metrics."""
    text = expect(srv.get("/metrics"), 200).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no %s in /metrics:\n%s" % (name, text[:2000]))


def _until(cond, what, timeout=10):
    harness.until(cond, what, timeout)


def _rss_kb(srv):
    with open("/proc/%d/status" % srv.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for cofferd")


def _sse_call(srv, tid, command):
    """A call with Accept: text/event-stream, left open: (connection, response)."""
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=60 * harness.SCALE)
    conn.request("POST", "/v1/turns/%s/calls" % tid, body=json.dumps({"command": command}),
                 headers={"Authorization": "Bearer " + srv.key,
                          "Accept": "text/event-stream",
                          "Content-Type": "application/json"})
    return conn, conn.getresponse()


def _next_event(resp):
    """The next (event, data) of an SSE answer."""
    name, data = None, []
    while True:
        raw = resp.readline()
        check(raw != b"", "the stream ended before an event")
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and name:
            return name, json.loads("\n".join(data))


def test_turn_file_through_another_node_comes_as_its_holder_sends_it():
    url, (a, b) = _nodes()
    try:
        aid = turnlib.make_agent(a, output={"files": ["csv"]})
        t = turnlib.new_turn(a, aid)
        out = turnlib.ok(a, t["id"], "yes 'a,b,c,d' | head -n 500000 > $OUTBOX/big.csv")
        eq(len(out["files"]), 1, "one file back: %r" % out)
        path = "/v1/turns/%s/files/%s/big.csv" % (t["id"], out["callId"])
        here = expect(a.get(path), 200)
        there = expect(b.get(path, headers={"X-Request-Id": "fwd-stream-1"}), 200)
        eq(len(there.body), 4000000, "bytes read through node B")
        check(there.body == here.body, "the same bytes through node B as from node A")
        for h in ("ETag", "Content-Type", "Content-Disposition", "Content-Length",
                  "Last-Modified", "Accept-Ranges"):
            eq(there.header(h), here.header(h), "%s through node B" % h)
        eq(there.header("X-Request-Id"), "fwd-stream-1", "the client's request id")
        eq(there.header("X-Coffer-Node"), "n0", "carried to the holding node")
        r = expect(b.get(path, headers={"Range": "bytes=10-19"}), 206)
        eq((r.body, r.header("Content-Range")), (here.body[10:20], "bytes 10-19/4000000"),
           "a range through node B")
        h = expect(b.head(path), 200)
        eq((h.header("Content-Length"), h.body), ("4000000", b""), "HEAD through node B")
        expect(b.get(path, headers={"If-None-Match": here.header("ETag")}), 304)
    finally:
        _close(url, [a, b])


def test_sse_call_through_another_node_streams_live_and_ends_when_the_client_leaves():
    url, (a, b) = _nodes()
    try:
        t = turnlib.new_turn(a)
        conn, resp = _sse_call(b, t["id"], "echo one; sleep 30; echo two")
        eq(resp.status, 200, "status of a streamed call through node B")
        check("text/event-stream" in (resp.getheader("Content-Type") or ""),
              "carried as events: %r" % resp.getheader("Content-Type"))
        eq(resp.getheader("X-Coffer-Node"), "n0", "carried to the turn's node")
        name, data = _next_event(resp)
        eq((name, data.get("data")), ("stdout", "one\n"), "the first event")
        eq(_metric(a, "coffer_turn_calls_running"), 1, "the call still runs on node A as "
           "its first event reaches the client through node B")
        eq(_metric(b, "coffer_forward_transfers"), 1, "node B carries one transfer")
        conn.close()
        _until(lambda: _metric(b, "coffer_forward_transfers") == 0,
               "node B ended its transfer once the client left")
    finally:
        _close(url, [a, b])


def test_holding_node_dying_mid_stream_cuts_the_clients_connection():
    url, (a, b) = _nodes()
    try:
        t = turnlib.new_turn(a)
        conn, resp = _sse_call(b, t["id"], "echo one; sleep 30; echo two")
        eq(_next_event(resp)[0], "stdout", "the first event")
        a.kill()
        cut = None
        try:
            rest = resp.read()
        except (http.client.IncompleteRead, ConnectionError) as e:
            cut = e
        check(cut is not None, "the stream through node B ended as if whole after node A "
              "died: %r" % (cut or rest))
        conn.close()
        _until(lambda: _metric(b, "coffer_forward_transfers") == 0, "node B's transfer ended")
    finally:
        _close(url, [a, b])


def test_carried_requests_past_forward_max_get_503_naming_it():
    url, (a, b) = _nodes(later_args=["--forward-max", "1"])
    try:
        t = turnlib.new_turn(a)
        conn, resp = _sse_call(b, t["id"], "echo one; sleep 30")
        eq(_next_event(resp)[0], "stdout", "the first event")
        err = expect_error(b.get("/v1/turns/" + t["id"]), 503, mentions="--forward-max")
        eq(err.get("limit"), 1, "the limit named: %r" % err)
        conn.close()
        _until(lambda: _metric(b, "coffer_forward_transfers") == 0, "node B's transfer ended")
        eq(expect(b.get("/v1/turns/" + t["id"]), 200).json()["id"], t["id"],
           "carried again once the stream ended")
    finally:
        _close(url, [a, b])


def test_relay_read_through_another_node_keeps_that_nodes_memory_flat():
    url, (a, b) = _nodes()
    root = tempfile.mkdtemp(prefix="relay-fwd-")
    try:
        agent = make_agent(a, "nfs-%d" % os.getpid())
        s = create(a, agent)
        size = 10 * 1000 * 1000
        with open(os.path.join(root, "big.txt"), "w") as f:
            f.write(("0123456789abcdef" * 62 + "0123456\n") * (size // 1000))
        cl = FakeClient(a, s["uid"], s["connectToken"], root)
        eq(cl.status, 200, "connect at node A")
        wait_status(a, s["uid"], "active")
        base = _rss_kb(b)
        conn = http.client.HTTPConnection(b.host, b.port, timeout=120 * harness.SCALE)
        conn.request("POST", "/v1/relay/sessions/%s/ops" % s["uid"],
                     body=json.dumps({"op": "read_file", "path": "big.txt"}),
                     headers={"Authorization": "Bearer " + b.key,
                              "Content-Type": "application/json"})
        resp = conn.getresponse()
        eq(resp.status, 200, "a read sent to node B")
        got, peak = bytearray(), base
        while True:
            chunk = resp.read(65536)
            if not chunk:
                break
            got += chunk
            peak = max(peak, _rss_kb(b))
            time.sleep(0.002)  # a slow client: node B must not take it all ahead
        conn.close()
        eq(len(json.loads(bytes(got))["content"]), size, "the bytes read through node B")
        # under ASan freed memory sits in its quarantine, so RSS measures nothing there
        if "asan" not in os.path.basename(os.path.abspath(harness.BUILD)):
            check(peak - base < 4096, "node B's RSS grew by %d KiB carrying a %d-byte "
                  "answer (from %d KiB)" % (peak - base, len(got), base))
        cl.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        _close(url, [a, b])
