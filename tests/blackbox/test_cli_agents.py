"""`coffer agent`, `coffer turn` and `coffer relay` against a real cofferd (docs/cli.md):
an agent made with a mount given by volume name, its files and file tools as the model uses
them (the stale-write refusal included), a turn's confined call whose exit code and output
the command passes on, and a relay session opened, served by `coffer connect`, used and
ended from the command line."""

import json
import os
import shutil
import subprocess
import tempfile
import time

import harness
from harness import check, contains, eq, expect
from relay_fake import make_agent as relay_agent

_n = [0]


def _name(prefix):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _n[0])


def run(srv, *args, rc=0, input=None):
    if not harness.coffer_binary():
        harness.skip("build/coffer does not exist")
    p = srv.cli(*args, input=input)
    check(p.returncode == rc, "coffer %s: exit code should be %s, got %s\nstdout: %r\nstderr: %r"
          % (" ".join(map(str, args)), rc, p.returncode, p.stdout[:2000], p.stderr[:2000]))
    return p


def run_json(srv, *args, **kw):
    return json.loads(run(srv, "--json", *args, **kw).stdout)


def test_agent_put_get_mounts_by_name(srv):
    vname = _name("cli-ag-vol")
    vid = run_json(srv, "volume", "create", vname)["id"]
    aid = _name("cli-ag")
    out = run_json(srv, "agent", "put", aid, '{"fileTools": true}',
                   "--mount", vname + ":/data:ro")
    got = run_json(srv, "agent", "get", aid)
    eq(got["id"], aid, "agent id")
    eq([(m.get("volumeId"), m["path"], m.get("mode")) for m in got["mounts"]][:1],
       [(vid, "/data", "ro")], "the mount given by the volume's name, read-only: %r"
       % got["mounts"])
    check(out.get("id") == aid, "put answers the agent: %r" % out)
    # the table form prints key/value lines
    contains(run(srv, "agent", "get", aid).stdout.decode(), "workspaceVolumeId", "table form")
    p = run(srv, "agent", "put", aid, "--mount", "nocolon", rc=2)
    contains(p.stderr.decode(), "--mount wants VOL:/PATH", "bad --mount named")
    p = run(srv, "agent", "put", aid, "{not json", rc=2)
    contains(p.stderr.decode(), "not valid", "bad JSON named")
    p = run(srv, "agent", "put", aid, "[1]", rc=2)
    contains(p.stderr.decode(), "JSON object", "SETTINGS must be an object")
    run(srv, "agent", "rm", aid)
    run(srv, "agent", "get", aid, rc=1)


def test_agent_files_and_tools(srv):
    aid = _name("cli-ag")
    run(srv, "agent", "put", aid)
    tmp = tempfile.mkdtemp(prefix="coffer-cli-ag-")
    try:
        src = os.path.join(tmp, "in.txt")
        with open(src, "w") as f:
            f.write("one\ntwo\n")
        run(srv, "agent", "upload", aid, "/workspace/notes/in.txt", src)
        out = run(srv, "agent", "files", aid, "/workspace/notes").stdout.decode()
        contains(out, "/workspace/notes/in.txt", "files lists the upload")
        eq(run(srv, "agent", "download", aid, "/workspace/notes/in.txt").stdout, b"one\ntwo\n",
           "download")
        # the tools as the model uses them: read, then edit
        out = run(srv, "agent", "tool", aid, "read", '{"path": "/workspace/notes/in.txt"}',
                  "--run-id", "r1").stdout.decode()
        contains(out, "two", "read's text")
        run(srv, "agent", "tool", aid, "edit", json.dumps(
            {"path": "/workspace/notes/in.txt", "oldString": "two", "newString": "TWO"}),
            "--run-id", "r1")
        eq(run(srv, "agent", "download", aid, "/workspace/notes/in.txt").stdout, b"one\nTWO\n",
           "edited")
        # a change behind the agent's back: the next edit is refused, exit 1, on stderr
        run(srv, "agent", "upload", aid, "/workspace/notes/in.txt", "-", input=b"other\n")
        p = run(srv, "agent", "tool", aid, "edit", json.dumps(
            {"path": "/workspace/notes/in.txt", "oldString": "other", "newString": "x"}), rc=1)
        contains(p.stderr.decode(), "changed since you last read it", "stale edit refused")
        eq(p.stdout, b"", "a refusal prints nothing on stdout")
        got = json.loads(run(srv, "--json", "agent", "tool", aid, "ls", "-",
                             input=b'{"path": "/workspace/notes"}').stdout)
        check(got["ok"] is True, "ls via stdin JSON: %r" % got)
        run_data = run_json(srv, "agent", "run", aid, "r1")
        eq([f["path"] for f in run_data["files"]], ["/workspace/notes/in.txt"],
           "the run's files")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_turn_call_exit_code_and_files(srv):
    aid = _name("cli-turn")
    run(srv, "agent", "put", aid)
    turn = run_json(srv, "turn", "create", aid, "u1", "--deadline", "600")
    tid = turn["id"]
    p = run(srv, "turn", "call", tid, "echo out; echo err >&2; exit 3", rc=3)
    eq(p.stdout, b"out\n", "the call's stdout")
    contains(p.stderr.decode(), "err", "the call's stderr")
    p = run(srv, "turn", "call", tid, "cat", "--stdin", "-", input=b"fed\n")
    eq(p.stdout, b"fed\n", "--stdin -")
    p = run(srv, "turn", "call", tid, "printf 'a,b\\n' > $OUTBOX/t.csv", "--call-id", "c1")
    contains(p.stderr.decode(), "coffer turn file %s c1 t.csv" % tid, "files named on stderr")
    eq(run(srv, "turn", "file", tid, "c1", "t.csv").stdout, b"a,b\n", "turn file")
    got = run_json(srv, "turn", "get", tid)
    check(got["calls"] >= 3, "turn get counts calls: %r" % got)
    contains(run(srv, "turn", "end", tid).stdout.decode(), "ended turn", "end")
    run(srv, "turn", "get", tid, rc=1)
    p = run(srv, "turn", "call", tid, "true", "--stdin", "/nonexistent/in", rc=1)
    contains(p.stderr.decode(), "/nonexistent/in", "missing --stdin file named")


def test_relay_open_op_log_end(srv):
    agent = relay_agent(srv, _name("cli-rl"))
    s = run_json(srv, "relay", "open", agent)
    uid, token = s["uid"], s["connectToken"]
    root = tempfile.mkdtemp(prefix="coffer-cli-relay-")
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("hello relay\n")
    env = dict(os.environ, COFFER_CONNECT_TOKEN=token)
    client = subprocess.Popen([harness.bin_path("coffer"), "connect", "--server", srv.url,
                               "--uid", uid, "--dir", root], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        harness.until(lambda: run_json(srv, "relay", "get", uid)["status"] == "active",
                      "the session to become active")
        out = run(srv, "relay", "ls", "--agent", agent).stdout.decode()
        contains(out, uid, "relay ls lists the session")
        eq(run(srv, "relay", "op", uid, "read_file", "hello.txt").stdout, b"hello relay\n",
           "read_file prints the text")
        run(srv, "relay", "op", uid, "write_file", "out/new.txt", "--content", "new\n")
        with open(os.path.join(root, "out", "new.txt")) as f:
            eq(f.read(), "new\n", "written on the user's side")
        got = run_json(srv, "relay", "op", uid, "list_directory")
        check(any(e["name"] == "out" for e in got["entries"]), "list: %r" % got)
        lines = run(srv, "relay", "log", uid).stdout.decode().splitlines()
        check(lines and all(json.loads(x) for x in lines), "log is JSON Lines: %r" % lines)
        run(srv, "relay", "op", uid, "read_file", "../etc/passwd", rc=1)
        contains(run(srv, "relay", "end", uid).stdout.decode(), "ended relay session", "end")
        eq(run_json(srv, "relay", "get", uid)["status"], "ended", "ended")
        out = run(srv, "relay", "ls", "--agent", agent).stdout.decode()
        check(uid not in out, "an ended session is not listed without --all")
        contains(run(srv, "relay", "ls", "--agent", agent, "--all").stdout.decode(), uid,
                 "--all lists it")
    finally:
        client.kill()
        client.wait(10)
        shutil.rmtree(root, ignore_errors=True)


def test_agent_ls_pages(srv):
    base = _name("cli-ls")
    for s in ("a", "b", "c"):
        run(srv, "agent", "put", "%s-%s" % (base, s))
    p = run(srv, "agent", "ls", "--prefix", base, "--limit", "2")
    rows = p.stdout.decode().splitlines()
    eq([r.split()[0] for r in rows[1:]], [base + "-a", base + "-b"], "first page")
    contains(p.stderr.decode(), "--cursor %s-b" % base, "the next page named")
    rows = run(srv, "agent", "ls", "--prefix", base, "--limit", "2", "--cursor",
               base + "-b").stdout.decode().splitlines()
    eq([r.split()[0] for r in rows[1:]], [base + "-c"], "second page")
    got = run_json(srv, "agent", "ls", "--prefix", base, "--limit", "1", "--all")
    eq([a["id"] for a in got["agents"]], [base + "-a", base + "-b", base + "-c"],
       "--all --json: every page in one object")
    eq(run(srv, "--jq", ".agents[].id", "agent", "ls", "--prefix", base).stdout.decode(),
       "%s-a\n%s-b\n%s-c\n" % (base, base, base), "--jq")
