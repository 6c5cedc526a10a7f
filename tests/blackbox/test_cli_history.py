"""`coffer merge`, `coffer log` and `coffer revert` against a real cofferd (docs/cli.md
"Merge, history, revert"): a merge by volume name with --dry-run and --strategy, a
conflict listed on stderr with exit 1, a path's log with who made each version, a revert
of a seq (dry run first) and of a run, and the usage errors (exit 2)."""

import json
import time

import agentlib
import harness
from harness import check, contains, eq, expect

_n = [0]


def _name(prefix):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, time.time_ns() % 10**9, _n[0])


def run(srv, *args, rc=0):
    p = srv.cli(*args)
    check(p.returncode == rc, "coffer %s: exit code should be %s, got %s\nstdout: %r\nstderr: %r"
          % (" ".join(map(str, args)), rc, p.returncode, p.stdout[:2000], p.stderr[:2000]))
    return p


def out(p):
    return p.stdout.decode()


def err(p):
    return p.stderr.decode()


def test_merge_by_name_dry_run_strategy_and_conflicts(srv):
    name = _name("m")
    vid = srv.create_volume(name=name)["id"]
    srv.put_ok(vid, "a", b"\0a")
    fname = _name("mf")
    fk = expect(srv.post("/v1/volumes/%s/fork" % vid, json={"name": fname}), 201).json()["id"]
    srv.put_ok(fk, "new.txt", b"n")
    seq = srv.seq(vid)
    p = run(srv, "merge", name, "--from", fname, "--dry-run")
    contains(out(p), "theirs  new.txt", "the dry run lists the path")
    contains(out(p), "would be at seq %d" % seq, "a dry run names the seq now")
    eq(srv.seq(vid), seq, "a dry run changes nothing")
    p = run(srv, "merge", name, "--from", fname)
    contains(out(p), "at seq %d" % (seq + 1), "one change")
    srv.put_ok(vid, "a", b"\0ours")
    srv.put_ok(fk, "a", b"\0theirs")
    p = run(srv, "merge", name, "--from", fname, rc=1)
    contains(err(p), "conflict  a  (content)", "the conflict on stderr")
    run(srv, "merge", name, "--from", fname, "--strategy", "theirs")
    eq(srv.get_file(vid, "a").body, b"\0theirs", "settled by --strategy")
    j = json.loads(out(run(srv, "--json", "merge", name, "--from", fname)))
    eq(j["merged"], [], "--json prints the answer")


def test_log_and_revert(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f.txt", b"one")
    s = srv.put_ok(vid, "f.txt", b"two")["seq"]
    p = run(srv, "log", vid, "f.txt")
    lines = out(p).splitlines()
    check(lines[0].split()[:3] == ["SEQ", "VERSION", "OP"], "a header: %r" % lines[0])
    eq([l.split()[0] for l in lines[1:]], [str(s), str(s - 1)], "newest first")
    contains(lines[1], "http keyId=k_", "who made it")
    j = json.loads(out(run(srv, "--json", "log", vid, "f.txt")))
    eq([v["seq"] for v in j["versions"]], [s, s - 1], "--json")
    p = run(srv, "revert", vid, "--seq", str(s), "--dry-run")
    contains(out(p), "before  f.txt", "what would go back")
    eq(srv.get_file(vid, "f.txt").body, b"two", "a dry run changes nothing")
    run(srv, "revert", vid, "--seq", str(s))
    eq(srv.get_file(vid, "f.txt").body, b"one", "reverted")
    a = agentlib.make_agent(srv, agentlib.new_id(), harness._ABSENT)
    expect(srv.post(agentlib.agent_url(a["id"], "/tools/write"),
                    json={"path": "/workspace/r.txt", "content": "r"},
                    headers={"X-Run-Id": "cli-run"}), 200)
    p = run(srv, "revert", a["workspaceVolumeId"], "--run", "cli-run")
    contains(out(p), "before  r.txt", "the run's file")
    eq(srv.get_file(a["workspaceVolumeId"], "r.txt").status, 404, "gone again")
    run(srv, "revert", vid, "--run", "none-such", rc=1)


def test_usage_errors(srv):
    for args, words in [(["merge", "v"], "--from"),
                        (["merge", "v", "--from", "w", "--strategy", "mine"], "ours or theirs"),
                        (["revert", "v"], "exactly one"),
                        (["revert", "v", "--seq", "1", "--run", "r"], "exactly one"),
                        (["log", "v"], "PATH")]:
        p = run(srv, *args, rc=2)
        contains(err(p), words, "stderr of coffer %s" % " ".join(args))
        check(err(p).startswith("coffer: "), "a usage error: %r" % err(p))
