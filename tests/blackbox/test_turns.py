"""Turns (API.md "Turns", docs/api.md): lifecycle, what a call sees, stdin,
exit codes, output cut at 1 MiB, timeouts and processes left behind, SSE,
network off by default, org and agent scoping."""

import os
import random
import time

import harness
from harness import check, contains, eq, expect, expect_error
from turnlib import (call, call_running, make_agent, mounts_under, new_turn, ok,
                     processes_with, stream_call)

TIMEOUT = 90


# ---- lifecycle

def test_create_answers_the_turn(srv):
    aid = make_agent(srv, sandbox={"scratch": "8m"})
    t = new_turn(srv, aid, user="alice", deadline=120)
    check(t["id"].startswith("turn_"), "turn id %r" % t["id"])
    eq((t["agent"], t["user"]), (aid, "alice"), "agent and user")
    for k in ("deadline", "expiresAt", "createdAt"):
        check(k in t, "answer has %s" % k)
    eq(t["sandbox"], {"scratch": 8 << 20, "turnDisk": 2 << 20, "userDisk": 4 << 20,
                      "network": False, "memory": 512 << 20, "processes": 256},
       "sandbox defaults from scratch")


def test_create_without_agent_names_the_field(srv):
    r = srv.post("/v1/turns", json={"user": "u", "deadlineSeconds": 10})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "agent", "message")


def test_create_without_user_names_the_field(srv):
    r = srv.post("/v1/turns", json={"agent": make_agent(srv), "deadlineSeconds": 10})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "user", "message")


def test_create_without_deadline_names_the_field(srv):
    r = srv.post("/v1/turns", json={"agent": make_agent(srv), "user": "u"})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "deadlineSeconds", "message")


def test_create_deadline_zero_refused(srv):
    r = srv.post("/v1/turns", json={"agent": make_agent(srv), "user": "u",
                                    "deadlineSeconds": 0})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "deadlineSeconds", "message")


def test_create_deadline_over_a_day_refused(srv):
    r = srv.post("/v1/turns", json={"agent": make_agent(srv), "user": "u",
                                    "deadlineSeconds": 86401})
    expect_error(r, 400, "validation_error")


def test_create_deadline_a_day_accepted(srv):
    new_turn(srv, deadline=86400)


def test_create_unknown_agent_is_404(srv):
    r = srv.post("/v1/turns", json={"agent": "no-such-agent", "user": "u",
                                    "deadlineSeconds": 10})
    expect_error(r, 404, "not_found")


def test_create_unknown_field_refused(srv):
    r = srv.post("/v1/turns", json={"agent": make_agent(srv), "user": "u",
                                    "deadlineSeconds": 10, "colour": "red"})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "colour", "message")


def test_call_without_command_names_the_field(srv):
    t = new_turn(srv)
    r = srv.post("/v1/turns/%s/calls" % t["id"], json={})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "command", "message")


def test_call_timeout_over_ceiling_refused(srv):
    t = new_turn(srv)
    r = srv.post("/v1/turns/%s/calls" % t["id"], json={"command": "true",
                                                       "timeoutSeconds": 3601})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "timeoutSeconds", "message")


def test_call_unknown_turn_is_404(srv):
    r = srv.post("/v1/turns/turn_nosuchturnatall12345/calls", json={"command": "true"})
    expect_error(r, 404, "not_found")


def test_delete_then_call_is_410(srv):
    t = new_turn(srv)
    ok(srv, t["id"], "echo hi > f")
    expect(srv.delete("/v1/turns/%s" % t["id"]), 204)
    expect_error(srv.post("/v1/turns/%s/calls" % t["id"], json={"command": "true"}),
                 410, "gone")
    expect_error(srv.delete("/v1/turns/%s" % t["id"]), 410, "gone")


def test_delete_removes_the_workspace(srv):
    t = new_turn(srv)
    ok(srv, t["id"], "echo hi > f")
    check(not harness.IS_ROOT or mounts_under(os.path.join(srv.data, "scratch", "ws", t["id"])),
          "the workspace is mounted while the turn lives (a tmpfs as root)")
    expect(srv.delete("/v1/turns/%s" % t["id"]), 204)
    eq(mounts_under(os.path.join(srv.data, "scratch", "ws", t["id"])), [], "mounts left")
    check(not os.path.exists(os.path.join(srv.data, "scratch", "ws", t["id"])),
          "workspace folder removed")


def _kept_namespaces(pid):
    """The mount namespaces cofferd holds open by descriptor ("mnt:[N]")."""
    out = set()
    fds = "/proc/%d/fd" % pid
    for fd in os.listdir(fds):
        try:
            link = os.readlink(os.path.join(fds, fd))
        except OSError:
            continue
        if link.startswith("mnt:["):
            out.add(link)
    return out


def _outer_bwrap(pid, cofferd):
    """The call's bwrap whose parent is cofferd, up from a process of the call."""
    while pid > 1:
        with open("/proc/%d/stat" % pid) as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        if ppid == cofferd:
            return pid
        pid = ppid
    return None


def test_calls_of_a_turn_share_one_kept_mount_namespace(srv):
    # as root a call's bwrap starts in a mount namespace built from the
    # turn's workspace, copy of /etc and kept views; it is made once and
    # entered by the turn's later calls (issue 38 item 6), one per turn,
    # and let go when the turn ends
    harness.needs_root("a call's namespace is built by cofferd as root")
    cofferd = srv.proc.pid
    before = _kept_namespaces(cofferd)
    t = new_turn(srv)
    for _ in range(3):
        ok(srv, t["id"], "true")
    mine = _kept_namespaces(cofferd) - before
    eq(len(mine), 1, "one namespace kept for the turn's calls: %r" % mine)
    th, res, marked = call_running(srv, t["id"], "sleep 2.MARKER; ls /tmp", timeoutSeconds=60)
    found = processes_with(marked)
    check(found, "the call runs")
    bwrap = _outer_bwrap(found[0][0], cofferd)
    check(bwrap, "the call's bwrap")
    eq(os.readlink("/proc/%d/ns/mnt" % bwrap), next(iter(mine)),
       "the call's bwrap started in the kept namespace")
    th.join(60)
    eq(res["out"]["stdout"].split(), ["outbox"], "the call's /tmp is the workspace")
    expect(srv.delete("/v1/turns/%s" % t["id"]), 204)
    eq(_kept_namespaces(cofferd) & mine, set(), "the turn's end let its namespace go")


def test_delete_stops_a_running_call(srv):
    t = new_turn(srv)
    th, res, marked = call_running(srv, t["id"], "sleep 1MARKER", timeoutSeconds=60)
    expect(srv.delete("/v1/turns/%s" % t["id"]), 204)
    eq(processes_with(marked), [], "processes after DELETE answered")
    th.join(30)
    contains(" ".join(res["out"]["notes"]), "turn ended", "notes of the stopped call")


def test_delete_unknown_is_404(srv):
    expect_error(srv.delete("/v1/turns/turn_nosuchturnatall12345"), 404, "not_found")


def test_expiry_after_deadline_and_grace():
    with harness.server(args=["--turn-grace", "1"]) as s:
        aid = make_agent(s)
        t = new_turn(s, aid, deadline=1)
        ok(s, t["id"], "echo hi > f")
        ws = os.path.join(s.data, "scratch", "ws", t["id"])
        time.sleep(2.5)
        expect_error(s.post("/v1/turns/%s/calls" % t["id"], json={"command": "true"}),
                     410, "gone")
        eq(mounts_under(ws), [], "workspace mounts after expiry")


def test_expiry_swept_in_the_background():
    with harness.server(args=["--turn-grace", "1"]) as s:
        t = new_turn(s, deadline=1)
        ok(s, t["id"], "true")
        ws = os.path.join(s.data, "scratch", "ws", t["id"])
        deadline = time.time() + 10 * harness.SCALE
        while (mounts_under(ws) or os.path.exists(ws)) and time.time() < deadline:
            time.sleep(0.1)
        eq(mounts_under(ws), [], "workspace unmounted with no call arriving")
        expect_error(s.get("/v1/turns/%s" % t["id"]), 410, "gone")


def test_sigterm_stops_calls_and_unmounts_every_workspace():
    with harness.server() as s:
        t = new_turn(s)
        ok(s, t["id"], "echo hi > f")
        root = os.path.join(s.data, "scratch")
        check(not harness.IS_ROOT or mounts_under(root), "a workspace is mounted (as root)")
        import threading
        th = threading.Thread(target=lambda: s.post(
            "/v1/turns/%s/calls" % t["id"], json={"command": "sleep 60"}))
        th.start()
        time.sleep(0.5)
        started = time.time()
        eq(s.stop(), 0, "exit code")
        check(time.time() - started < 20, "stopped without waiting for the call")
        eq(mounts_under(root), [], "mounts after SIGTERM")
        th.join(10)


def test_leftovers_of_a_previous_run_unmounted_at_start():
    harness.needs_root("mounting the leftover tmpfs")
    with harness.server() as s:
        ws = os.path.join(s.data, "scratch", "ws", "turn_leftover")
        os.makedirs(ws)
        eq(os.system("mount -t tmpfs -o size=4k tmpfs %s" % ws), 0, "mount a leftover")
        s.kill()
        s.start()
        eq(mounts_under(ws), [], "leftover mounts after a start")
        check(not os.path.exists(ws), "leftover folder removed")


# ---- what a call sees

def test_env_and_cwd(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "pwd; id -u; id -g; env | sort")
    lines = out["stdout"].splitlines()
    eq(lines[:3], ["/tmp", "65534", "65534"], "cwd, uid, gid")
    env = dict(l.split("=", 1) for l in lines[3:])
    env.pop("PWD", None)
    eq(env, {"HOME": "/tmp", "TMPDIR": "/tmp", "OUTBOX": "/tmp/outbox",
             "VESSEL_OUTBOX": "/tmp/outbox", "LANG": "C.UTF-8",
             "PATH": "/usr/local/bin:/usr/bin:/bin"}, "environment")


def test_workspace_kept_between_calls(srv):
    t = new_turn(srv)
    ok(srv, t["id"], "echo kept > note.txt")
    eq(ok(srv, t["id"], "cat note.txt")["stdout"], "kept\n", "file of the call before")


def test_stdin_fed(srv):
    t = new_turn(srv)
    data = "line one\nline two\n" * 1000
    eq(ok(srv, t["id"], "cat", stdin=data)["stdout"], data, "stdout echoes stdin")


def test_no_stdin_is_empty(srv):
    t = new_turn(srv)
    eq(ok(srv, t["id"], "wc -c")["stdout"].strip(), "0", "bytes read")


def test_exit_codes(srv):
    t = new_turn(srv)
    for code in (0, 1, 3, 255):
        eq(call(srv, t["id"], "exit %d" % code)["exitCode"], code, "exit %d" % code)


def test_killed_by_signal_is_128_plus(srv):
    t = new_turn(srv)
    eq(call(srv, t["id"], "kill -TERM $$")["exitCode"], 128 + 15, "exit code")


def test_stdout_at_1mib_not_cut(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "head -c 1048576 /dev/zero | tr '\\0' a")
    eq(len(out["stdout"]), 1 << 20, "stdout length")
    eq([n for n in out["notes"] if "cut" in n], [], "notes")


def test_stdout_cut_at_1mib_with_a_note(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "head -c 1048577 /dev/zero | tr '\\0' a")
    eq(len(out["stdout"]), 1 << 20, "stdout length")
    contains(" ".join(out["notes"]), "stdout was cut at 1 MiB", "notes")


def test_stderr_cut_at_1mib_with_a_note(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "head -c 3000000 /dev/zero | tr '\\0' e >&2")
    eq(len(out["stderr"]), 1 << 20, "stderr length")
    contains(" ".join(out["notes"]), "stderr was cut at 1 MiB", "notes")


def test_invalid_utf8_output_replaced(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "printf 'a\\377b'")
    eq(out["stdout"], "a\ufffdb", "stdout")


def test_timeout_kills_the_tree(srv):
    t = new_turn(srv)
    marker = "%d" % random.randint(10**8, 10**9)
    started = time.time()
    out = call(srv, t["id"], "sleep 2%s & sleep 3%s" % (marker, marker), timeoutSeconds=1)
    check(time.time() - started < 20 * harness.SCALE, "answered soon after the timeout")
    check(out.get("timedOut"), "timedOut in %r" % out)
    eq(out["exitCode"], 137, "exit code of a killed call")
    contains(" ".join(out["notes"]), "timeoutSeconds", "notes")
    eq(processes_with("sleep 2" + marker) + processes_with("sleep 3" + marker), [],
       "processes of the call after it was answered")
    ok(srv, t["id"], "true")


def test_background_process_killed_when_call_ends(srv):
    t = new_turn(srv)
    marker = "%d" % random.randint(10**8, 10**9)
    out = ok(srv, t["id"], "(sleep 4%s > /dev/null 2>&1 &) ; echo done" % marker)
    eq(out["stdout"], "done\n", "stdout")
    eq(processes_with("sleep 4" + marker), [], "background process after the answer")


def test_network_off_by_default(srv):
    t = new_turn(srv)
    out = call(srv, t["id"], "python3 -c \"import socket; socket.create_connection("
               "('127.0.0.1', %d), 3)\"" % srv.port)
    check(out["exitCode"] != 0, "connection to cofferd from a call succeeded: %r" % out)
    devs = ok(srv, t["id"], "tail -n +3 /proc/net/dev | cut -d: -f1")["stdout"].split()
    eq(devs, ["lo"], "interfaces")


def test_network_true_shares_the_host_network(srv):
    aid = make_agent(srv, sandbox={"network": True})
    t = new_turn(srv, aid)
    ok(srv, t["id"], "python3 -c \"import socket; socket.create_connection("
       "('127.0.0.1', %d), 3)\"" % srv.port)


def test_sse_streams_events(srv):
    t = new_turn(srv)
    events = stream_call(srv, t["id"], {"command": "echo out; echo err >&2; exit 4"})
    names = [e for e, _ in events]
    contains(names, "stdout", "events")
    contains(names, "stderr", "events")
    eq(names[-1], "exit", "last event")
    eq("".join(d["data"] for e, d in events if e == "stdout"), "out\n", "stdout events")
    eq("".join(d["data"] for e, d in events if e == "stderr"), "err\n", "stderr events")
    final = events[-1][1]
    eq((final["exitCode"], final["stdout"]), (4, "out\n"), "exit event carries the answer")


def test_sse_events_arrive_while_running(srv):
    t = new_turn(srv)
    events = stream_call(srv, t["id"], {"command": "echo a; sleep 1; echo b"})
    eq([d["data"] for e, d in events if e == "stdout"], ["a\n", "b\n"],
       "one event per write")


def test_sse_unknown_turn_is_404(srv):
    import http.client
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
    conn.request("POST", "/v1/turns/turn_nosuchturnatall12345/calls",
                 body='{"command":"true"}',
                 headers={"Authorization": "Bearer " + srv.key,
                          "Accept": "text/event-stream"})
    eq(conn.getresponse().status, 404, "status")


# ---- scoping

def test_another_org_sees_404(srv):
    t = new_turn(srv)
    other = expect(srv.post("/v1/keys", json={"org": "org-turns-%d" % os.getpid()}),
                   201).json()["key"]
    expect_error(srv.post("/v1/turns/%s/calls" % t["id"], json={"command": "true"},
                          key=other), 404, "not_found")
    expect_error(srv.delete("/v1/turns/%s" % t["id"], key=other), 404, "not_found")
    expect_error(srv.post("/v1/turns", json={"agent": t["agent"], "user": "u",
                                             "deadlineSeconds": 10}, key=other),
                 404, "not_found")


def test_agent_key_reaches_only_its_agent_turns(srv):
    a1, a2 = make_agent(srv), make_agent(srv)
    k1 = expect(srv.post("/v1/keys", json={"agent": a1}), 201).json()["key"]
    t2 = new_turn(srv, a2)
    expect_error(srv.post("/v1/turns/%s/calls" % t2["id"], json={"command": "true"},
                          key=k1), 403, "forbidden")
    expect_error(srv.post("/v1/turns", json={"agent": a2, "user": "u",
                                             "deadlineSeconds": 10}, key=k1),
                 403, "forbidden")
    t1 = expect(srv.post("/v1/turns", json={"agent": a1, "user": "u",
                                            "deadlineSeconds": 60}, key=k1), 201).json()
    out = expect(srv.post("/v1/turns/%s/calls" % t1["id"], json={"command": "echo ok"},
                          key=k1), 200).json()
    eq(out["stdout"], "ok\n", "own turn's call")
