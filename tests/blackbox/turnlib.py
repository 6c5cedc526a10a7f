"""Shared helpers of the turns tests (test_turns*.py): agents with sandbox
settings, turns, calls, and a look at the host's processes and mounts."""

import http.client
import itertools
import json as jsonlib
import os
import random
import threading

import harness
from harness import check, eq, expect

_n = itertools.count()


def new_id(prefix="ta"):
    return "%s-%d-%d" % (prefix, os.getpid(), next(_n))


def make_agent(srv, sandbox=None, output=None, key=None):
    aid = new_id()
    body = {}
    if sandbox is not None:
        body["sandbox"] = sandbox
    if output is not None:
        body["output"] = output
    kw = {} if key is None else {"key": key}
    expect(srv.put("/v1/agents/%s" % aid, json=body, **kw), 201)
    return aid


def new_turn(srv, aid=None, user="u1", deadline=600, sandbox=None, **extra):
    aid = aid or make_agent(srv, sandbox=sandbox)
    body = {"agent": aid, "user": user, "deadlineSeconds": deadline}
    body.update(extra)
    return expect(srv.post("/v1/turns", json=body), 201).json()


def call(srv, tid, command, status=200, timeout=None, **extra):
    body = {"command": command}
    body.update(extra)
    r = expect(srv.post("/v1/turns/%s/calls" % tid, json=body, timeout=timeout), status)
    return r.json()


def ok(srv, tid, command, **extra):
    """A call that must exit 0; returns its answer."""
    out = call(srv, tid, command, **extra)
    eq(out["exitCode"], 0, "exit code of %r (stderr %r)" % (command, out["stderr"]))
    return out


def processes_with(marker):
    """Host processes whose command line holds `marker` (tests run as root)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmd and "cmdline" not in cmd:
            found.append((int(pid), cmd))
    return found


def call_running(srv, tid, command, **extra):
    """Starts a call of `command` in a thread and waits until its process
    runs: `command` holds "MARKER", replaced by a number of its own so the
    process can be found on the host. Returns (thread, answer, marked), the
    answer dict filled as "out" once the call ends, `marked` the command
    line text that names its process (for processes_with)."""
    marker = "%d" % random.randint(10**8, 10**9)
    command = command.replace("MARKER", marker)
    first = command.split(";")[0].strip()  # "sleep 1NNN": its process's cmdline
    res = {}
    th = threading.Thread(target=lambda: res.update(out=call(srv, tid, command, **extra)))
    th.start()
    harness.until(lambda: processes_with(first), "the call's process %r" % first)
    return th, res, first


def mounts_under(path):
    with open("/proc/mounts") as f:
        return [l.split()[1] for l in f if l.split()[1].startswith(path)]


def stream_call(srv, tid, body):
    """POST a call with Accept: text/event-stream; returns [(event, data)]."""
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=60)
    conn.request("POST", "/v1/turns/%s/calls" % tid, body=jsonlib.dumps(body),
                 headers={"Authorization": "Bearer " + srv.key,
                          "Accept": "text/event-stream",
                          "Content-Type": "application/json"})
    resp = conn.getresponse()
    eq(resp.status, 200, "status of a streamed call")
    check("text/event-stream" in resp.getheader("Content-Type", ""), "content type")
    events, name, data = [], None, []
    for raw in resp:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and name:
            events.append((name, jsonlib.loads("\n".join(data))))
            name, data = None, []
    conn.close()
    return events
