#!/usr/bin/env python3
"""The relay's Socket.IO face against its HTTP ops, in one run on one cofferd (issue 35 item
5), each with the client a user would use:

  a relayed 1 MiB read and a 4 KiB write, round trip: the agent side on Socket.IO (the
    official socket.io-client in node, one WebSocket, emitWithAck; bench/relay_socketio.mjs)
    vs the agent side on the HTTP ops (the Python SDK, sdk/python: one kept-alive
    connection); the user's side is `coffer connect` for both, serving the same folder, so
    only the agent's face differs. Calls in turns (a batch of each, BATCH at a time) so
    that the machine's load falls on both; medians and p90 of CALLS each, after WARM.
  1,000 idle Socket.IO clients (agent sockets on /jailbox over WebSocket, connected to one
    session, answering pings): cofferd's RSS and threads before and after, RSS per client.

Usage: bench/relay_socketio.py [--out FILE] [--build DIR] (writes its section of
bench/results.md). Needs build/cofferd, build/coffer, node and tests/socketio's
node_modules (npm ci there)."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk", "python", "src"))
from benchlib import ROOT, Cofferd, write_section  # noqa: E402
from relay import session  # noqa: E402  (a session served by `coffer connect`)
import coffer  # noqa: E402

CALLS, WARM, BATCH = 40, 4, 10     # a session allows 500 reads and 100 writes
READ_BYTES, WRITE_BYTES = 1 << 20, 4096
IDLE = 1000
KEYS = 16                          # 64 agent sockets per key at most
SCRIPT = os.path.join(HERE, "relay_socketio.mjs")


def proc_status(pid):
    got = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "Threads"):
                got[k] = int(v.split()[0])
    return got["VmRSS"], got["Threads"]   # KiB, count


class SioAgent:
    def __init__(self, s, uid):
        self.p = subprocess.Popen(["node", SCRIPT, "agent", s.url, s.key, uid],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        got = json.loads(self.p.stdout.readline() or '{"error": "the client ended"}')
        if "error" in got:
            raise RuntimeError("socket.io-client: %s" % got["error"])
        return got["ms"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(30)


def timed(fn, n):
    ms = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def p90(v):
    v = sorted(v)
    return v[max(0, int(round(len(v) * 0.9)) - 1)]


def round_trips(s, uid):
    """{(op, face): [ms...]} for op in read, write and face in sio, http."""
    sdk = coffer.Client(s.url, s.key).relay(uid)
    sio = SioAgent(s, uid)
    out = {(op, f): [] for op in ("read", "write") for f in ("sio", "http")}
    try:
        def http_read():
            got = sdk.read_file("big.txt")
            assert got["size"] == READ_BYTES, got["size"]
        content = "h" * (WRITE_BYTES - 1) + "\n"
        ops = {
            "read": (lambda n: sio.run(op="read", path="big.txt", size=READ_BYTES, n=n),
                     lambda n: timed(http_read, n)),
            "write": (lambda n: sio.run(op="write", path="w-sio.txt", bytes=WRITE_BYTES, n=n),
                      lambda n: timed(lambda: sdk.write_file("w-http.txt", content), n)),
        }
        for op, (fs, fh) in ops.items():
            fs(WARM)
            fh(WARM)
            for _ in range(CALLS // BATCH):
                out[(op, "sio")] += fs(BATCH)
                out[(op, "http")] += fh(BATCH)
    finally:
        sio.close()
    return out


def idle_clients(s, uid):
    """cofferd's (rss KiB, threads) with the session only, then with IDLE idle sockets."""
    keys = [s.call("POST", "/v1/keys", {"name": "idle-%d" % i})["key"] for i in range(KEYS)]
    time.sleep(2)
    before = proc_status(s.p.pid)
    p = subprocess.Popen(["node", SCRIPT, "idle", s.url, uid, str(IDLE), *keys],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        got = json.loads(p.stdout.readline() or "{}")
        if got.get("connected") != IDLE:
            raise RuntimeError("the idle clients did not all connect: %r" % got)
        time.sleep(5)   # settled: connected, events replayed, idle
        after = proc_status(s.p.pid)
        time.sleep(5)
        later = proc_status(s.p.pid)
    finally:
        p.stdin.close()
        p.wait(60)
    return before, after, later


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else \
        os.path.join(ROOT, "bench/results.md")
    build = sys.argv[sys.argv.index("--build") + 1] if "--build" in sys.argv else None
    work = tempfile.mkdtemp(prefix="coffer-bench-relay-sio-")
    folder = os.path.join(work, "folder")
    os.makedirs(folder)
    with open(os.path.join(folder, "big.txt"), "w") as f:
        f.write(("r" * 1023 + "\n") * (READ_BYTES // 1024))
    s = Cofferd(os.path.join(work, "data"), "--max-conns-per-ip", str(IDLE + 200), build=build)
    clients = []
    load0 = load()
    try:
        uid, cl = session(s, folder)
        clients.append(cl)
        rt = round_trips(s, uid)
        s.c = s.conn()   # the kept-alive one timed out while the round trips ran
        uid2, cl2 = session(s, folder)
        clients.append(cl2)
        before, after, later = idle_clients(s, uid2)
    finally:
        for c in clients:
            c.terminate()
            c.wait(10)
        s.stop()
    m = statistics.median
    text = "## Relay over Socket.IO vs the HTTP ops (bench/relay_socketio.py)\n\n"
    text += ("| round trip, ms (%d calls each, in turns, after %d warm-up) | Socket.IO p50 | "
             "HTTP ops p50 | Socket.IO / HTTP | Socket.IO p90 | HTTP ops p90 |\n"
             "|---|---|---|---|---|---|\n" % (CALLS, WARM))
    for op, what in (("read", "read_file of a 1 MiB text file"),
                     ("write", "write_file of 4 KiB of text")):
        a, b = rt[(op, "sio")], rt[(op, "http")]
        text += "| %s | %.2f | %.2f | %.2fx | %.2f | %.2f |\n" % (
            what, m(a), m(b), m(a) / m(b), p90(a), p90(b))
    per = (after[0] - before[0]) / IDLE
    text += ("\n| %d idle Socket.IO clients (agent sockets, WebSocket, one session) | "
             "cofferd RSS | threads |\n|---|---|---|\n" % IDLE)
    text += "| before (the session and its `coffer connect` only) | %.1f MiB | %d |\n" % (
        before[0] / 1024, before[1])
    text += "| all %d connected, 5 s later | %.1f MiB | %d |\n" % (IDLE, after[0] / 1024,
                                                                    after[1])
    text += "| 5 s after that | %.1f MiB | %d |\n" % (later[0] / 1024, later[1])
    text += "| per client | %.1f KiB | %+d in all |\n\n" % (per, after[1] - before[1])
    text += (
        "Socket.IO: socket.io-client %s in node %s, one WebSocket, `emitWithAck` per call. "
        "HTTP ops: the Python SDK (sdk/python, `relay(uid).read_file` / `write_file`), one "
        "kept-alive connection. The user's side is `coffer connect` for both (its answer "
        "goes to cofferd as `POST .../results`), so the two differ only in the agent's "
        "face; a 1 MiB read comes back as 1 MiB of JSON string either way. Loopback, %d "
        "cores, one cofferd (embedded store), request log off. Load average (1/5/15 min) at "
        "the start: %s, at the end: %s; the machine is shared with other builds and tests, "
        "so compare figures of one run only. An idle client holds its Engine.IO "
        "session, its WebSocket (wslay's context and the connection libmicrohttpd keeps "
        "for an upgraded socket) and a relay event stream with its subscription; no thread "
        "(the threads added are the Socket.IO job pool's, started by the connects). An "
        "earlier run, before cofferd set TCP_NODELAY on upgraded sockets, measured the "
        "Socket.IO write at 76 ms p50 against 29 ms: Nagle held the event frame behind the "
        "ack for the client's delayed ACK.\n" % (
            sio_version(), node_version(), os.cpu_count(), load0, load()))
    write_section(out, "Relay over Socket.IO vs the HTTP ops (bench/relay_socketio.py)", text)
    print(text)


def sio_version():
    try:
        with open(os.path.join(ROOT, "tests/socketio/node_modules/socket.io-client/"
                               "package.json")) as f:
            return json.load(f)["version"]
    except (OSError, ValueError):
        return "?"


def node_version():
    return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
