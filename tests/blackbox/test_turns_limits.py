"""Turns: agent sandbox settings (sizes in Docker's form, 0 < turnDisk <= userDisk
<= scratch) and the disk limits of workspaces (turn, user, scratch, inodes), each
at its edge where it has one."""

import hashlib
import os

import harness
from harness import check, contains, eq, expect, expect_error
from turnlib import call, make_agent, new_id, new_turn, ok

TIMEOUT = 90
KB, MB = 1024, 1024 * 1024


def put_sandbox(srv, sandbox):
    return srv.put("/v1/agents/%s" % new_id(), json={"sandbox": sandbox})


# ---- settings

def _bad_size(value):
    def test(srv):
        r = put_sandbox(srv, {"scratch": value})
        expect_error(r, 400, "validation_error")
        contains(r.error["message"], "sandbox.scratch", "message names the field")
    return test


for _name, _value in [("letters", "lots"), ("unit_x", "12x"), ("fraction", "1.5g"),
                      ("negative", "-1m"), ("unit_only", "m"), ("empty", ""),
                      ("two_letter_unit", "1mb"), ("leading_space", " 1m"),
                      ("trailing_space", "1m "), ("terabytes", "1t"), ("float", 1.5),
                      ("bool", True), ("negative_int", -5), ("huge", "99999999999999g")]:
    globals()["test_bad_size_" + _name] = _bad_size(_value)


def test_unknown_sandbox_field_refused(srv):
    r = put_sandbox(srv, {"scratch": "1m", "disk": "1m"})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "disk", "message")


def test_size_forms_accepted(srv):
    for value, want in [("100b", 100), ("512k", 512 * KB), ("256m", 256 * MB),
                        ("1g", 1 << 30), ("4096", 4096), ("2M", 2 * MB), (8192, 8192)]:
        aid = new_id()
        expect(srv.put("/v1/agents/%s" % aid, json={"sandbox": {
            "scratch": value, "turnDisk": "1b", "userDisk": "1b"}}), 201)
        t = new_turn(srv, aid)
        eq(t["sandbox"]["scratch"], want, "scratch of %r" % (value,))


def test_defaults(srv):
    t = new_turn(srv)
    eq(t["sandbox"], {"scratch": 256 * MB, "turnDisk": 64 * MB, "userDisk": 128 * MB,
                      "network": False, "memory": 512 * MB, "processes": 256}, "defaults")


def test_all_equal_accepted(srv):
    expect(put_sandbox(srv, {"scratch": "1m", "turnDisk": "1m", "userDisk": "1m"}), 201)


def test_turn_disk_one_byte_over_user_disk_refused(srv):
    r = put_sandbox(srv, {"scratch": "2m", "turnDisk": "1048577", "userDisk": "1m"})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "1048577", "message names turnDisk")
    contains(r.error["message"], "1048576", "message names userDisk")


def test_user_disk_one_byte_over_scratch_refused(srv):
    r = put_sandbox(srv, {"scratch": "1m", "turnDisk": "1m", "userDisk": "1048577"})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "userDisk", "message")
    contains(r.error["message"], "scratch", "message")


def test_turn_disk_zero_refused(srv):
    r = put_sandbox(srv, {"scratch": "1m", "turnDisk": "0"})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "turnDisk", "message")


def test_default_user_disk_below_given_turn_disk_refused(srv):
    r = put_sandbox(srv, {"scratch": "8m", "turnDisk": "6m"})
    expect_error(r, 400, "validation_error")
    contains(r.error["message"], "userDisk", "message")


def test_bad_output_type_refused(srv):
    r = srv.put("/v1/agents/%s" % new_id(), json={"output": {"files": ["exe"]}})
    expect_error(r, 400, "validation_error")


# ---- limits

def _sandbox_turn(srv, user="u1", **sandbox):
    return new_turn(srv, make_agent(srv, sandbox=sandbox), user=user)


def test_turn_disk_breach_empties_and_turn_goes_on(srv):
    t = _sandbox_turn(srv, scratch="16m", turnDisk="1m", userDisk="2m")
    ok(srv, t["id"], "echo keep > before.txt")
    out = call(srv, t["id"], "dd if=/dev/zero of=big bs=64k count=100")
    eq(out.get("limit"), "turn_disk", "limit of %r" % out)
    contains(" ".join(out["notes"]), "turn_disk", "notes")
    eq(ok(srv, t["id"], "ls")["stdout"].split(), ["outbox"], "workspace after a breach")
    ok(srv, t["id"], "echo again > f")


def test_just_under_turn_disk_is_fine(srv):
    # 1 MiB: 960 KiB of data + this file and $OUTBOX (1 KB each) = 962 KiB
    t = _sandbox_turn(srv, scratch="16m", turnDisk="1m", userDisk="1m")
    out = ok(srv, t["id"], "dd if=/dev/zero of=f bs=64k count=15")
    eq(out.get("limit"), None, "limit")


def test_sparse_file_counts_what_it_allocates(srv):
    harness.needs_root("the kernel way of disk limits is a tmpfs per workspace, which only "
                       "root can mount; without root the measuring loop keeps them")
    t = _sandbox_turn(srv, scratch="16m", turnDisk="2m", userDisk="2m")
    out = ok(srv, t["id"], "truncate -s 1G sparse && du -k sparse")
    eq(out.get("limit"), None, "a hole allocates nothing")
    out = call(srv, t["id"], "dd if=/dev/zero of=sparse bs=1M count=8 seek=500 "
               "conv=notrunc")
    eq(out.get("limit"), "turn_disk", "filling the sparse 1 GB file: %r" % out)


def test_fallocate_past_the_limit_refused_whole(srv):
    harness.needs_root("the kernel way of disk limits is a tmpfs per workspace, which only "
                       "root can mount; without root the measuring loop keeps them")
    # the kernel refuses it before anything is allocated: nothing was written
    t = _sandbox_turn(srv, scratch="16m", turnDisk="2m", userDisk="2m")
    ok(srv, t["id"], "echo keep > k")
    out = call(srv, t["id"], "fallocate -l 1G big")
    contains(out["stderr"], "No space left", "stderr")
    eq(ok(srv, t["id"], "cat k")["stdout"], "keep\n", "workspace kept")


def test_fallocated_file_reaching_the_limit_breach(srv):
    harness.needs_root("the kernel way of disk limits is a tmpfs per workspace, which only "
                       "root can mount; without root the measuring loop keeps them")
    # 2 MiB less 1 KB for $OUTBOX, to the page below: 2044 KiB fill the tmpfs
    t = _sandbox_turn(srv, scratch="16m", turnDisk="2m", userDisk="2m")
    out = call(srv, t["id"], "fallocate -l 2044k big")
    eq(out.get("limit"), "turn_disk", "limit of %r" % out)


def test_empty_files_count_1kb_each_at_the_edge(srv):
    harness.needs_root("the kernel way of disk limits is a tmpfs per workspace, which only "
                       "root can mount; without root the measuring loop keeps them")
    # turnDisk 64 KiB = 64 entries: $OUTBOX + 63 files reach it, 62 do not
    t = _sandbox_turn(srv, scratch="16m", turnDisk="64k", userDisk="64k")
    out = ok(srv, t["id"], "for i in $(seq 62); do : > f$i; done")
    eq(out.get("limit"), None, "63 entries")
    out = call(srv, t["id"], ": > f63")
    eq(out.get("limit"), "turn_disk", "64 entries: %r" % out)


def test_thousands_of_empty_files_run_out_of_inodes(srv):
    t = _sandbox_turn(srv, scratch="1m", turnDisk="1m", userDisk="1m")
    out = call(srv, t["id"], "for i in $(seq 3000); do : > f$i || exit 9; done")
    eq(out.get("limit"), "inodes", "limit of %r" % out)
    eq(ok(srv, t["id"], "ls | wc -l")["stdout"].strip(), "1", "entries after the breach")


def test_deleted_but_open_file_counts(srv):
    t = _sandbox_turn(srv, scratch="16m", turnDisk="1m", userDisk="1m")
    out = call(srv, t["id"], "(exec 3>held; rm held; dd if=/dev/zero bs=64k count=64 >&3 "
               "2>/dev/null; sleep 20) & sleep 20", timeoutSeconds=30)
    eq(out.get("limit"), "turn_disk", "limit of %r" % out)
    check(not out.get("timedOut"), "stopped by the breach, not the timeout")


def test_breach_stops_every_call_of_the_turn(srv):
    import threading
    t = _sandbox_turn(srv, scratch="16m", turnDisk="1m", userDisk="1m")
    res = {}
    th = threading.Thread(target=lambda: res.update(
        out=call(srv, t["id"], "sleep 30", timeoutSeconds=60)))
    th.start()
    import time
    time.sleep(1)
    out = call(srv, t["id"], "dd if=/dev/zero of=big bs=64k count=100")
    eq(out.get("limit"), "turn_disk", "limit")
    th.join(30)
    eq(res["out"].get("limit"), "turn_disk", "the other call of the turn")


def test_user_disk_breach_from_two_turns(srv):
    aid = make_agent(srv, sandbox={"scratch": "16m", "turnDisk": "3m", "userDisk": "4m"})
    a = new_turn(srv, aid, user="same")
    b = new_turn(srv, aid, user="same")
    ok(srv, a["id"], "dd if=/dev/zero of=f bs=1M count=2")
    out = call(srv, b["id"], "dd if=/dev/zero of=f bs=64k count=40")
    eq(out.get("limit"), "user_disk", "limit of %r" % out)
    eq(ok(srv, a["id"], "du -k f")["stdout"].split()[0], "2048", "turn a keeps its file")


def test_other_user_not_bound_by_user_disk(srv):
    aid = make_agent(srv, sandbox={"scratch": "16m", "turnDisk": "3m", "userDisk": "4m"})
    a = new_turn(srv, aid, user="one")
    b = new_turn(srv, aid, user="two")
    ok(srv, a["id"], "dd if=/dev/zero of=f bs=1M count=2")
    out = ok(srv, b["id"], "dd if=/dev/zero of=f bs=64k count=40")
    eq(out.get("limit"), None, "another user's 2.5 MB")


def test_scratch_breach_across_users(srv):
    aid = make_agent(srv, sandbox={"scratch": "4m", "turnDisk": "3m", "userDisk": "3m"})
    a = new_turn(srv, aid, user="one")
    b = new_turn(srv, aid, user="two")
    ok(srv, a["id"], "dd if=/dev/zero of=f bs=1M count=2")
    out = call(srv, b["id"], "dd if=/dev/zero of=f bs=64k count=40")
    eq(out.get("limit"), "scratch", "limit of %r" % out)


def test_deleted_turn_frees_its_share(srv):
    aid = make_agent(srv, sandbox={"scratch": "4m", "turnDisk": "3m", "userDisk": "3m"})
    a = new_turn(srv, aid, user="one")
    ok(srv, a["id"], "dd if=/dev/zero of=f bs=1M count=2")
    expect(srv.delete("/v1/turns/%s" % a["id"]), 204)
    b = new_turn(srv, aid, user="two")
    eq(ok(srv, b["id"], "dd if=/dev/zero of=f bs=64k count=40").get("limit"), None,
       "limit after the other turn ended")


# ---- what a call writes under the agent's mounts counts at its full length
#
# On main before the fix a sparse file in a mount cost the call's layer nothing, so
# `truncate -s 16M /workspace/big.bin` with a 4 MiB turnDisk committed 16 MiB of zeros
# into the blob store (the issue saw 2.1 GB from two `truncate -s 1G` on 64 MiB).

def _mount_turn(srv, **sandbox):
    """A turn of an agent with its workspace volume at /workspace; (turn, volume id)."""
    if not os.path.exists("/dev/fuse") or not harness.IS_ROOT:
        harness.skip("calls see the agent's files through FUSE, mounted here as root")
    aid = make_agent(srv, sandbox=sandbox)
    ws = expect(srv.get("/v1/agents/%s" % aid), 200).json()["workspaceVolumeId"]
    return new_turn(srv, aid), ws


def _zeros_sha(n):
    h = hashlib.sha256()
    for _ in range(n // MB):
        h.update(bytes(MB))
    return h.hexdigest()


def _sparse_refused(srv, t, ws, command, size):
    seq = srv.seq(ws)
    out = call(srv, t["id"], command)
    eq(out.get("limit"), "turn_disk", "limit of %r" % out)
    notes = " ".join(out["notes"])
    contains(notes, "turn_disk", "the note names the limit")
    contains(notes, "full length", "the note says how mounts' files count")
    eq(out.get("committed") or [], [], "nothing committed")
    eq(srv.seq(ws), seq, "the volume did not change")
    check(not os.path.exists(srv.blob_file(_zeros_sha(size))),
          "no %d-byte blob in the store" % size)


def test_sparse_file_in_a_mount_counts_its_full_length(srv):
    t, ws = _mount_turn(srv, scratch="64m", turnDisk="4m", userDisk="8m")
    _sparse_refused(srv, t, ws, "truncate -s 16M /workspace/big.bin", 16 * MB)
    eq(srv.get_file(ws, "big.bin").status, 404, "the file did not land")
    # the turn goes on, and what fits lands
    out = ok(srv, t["id"], "echo hi > /workspace/small.txt")
    eq(len(out["committed"]), 1, "committed %r" % out)
    eq(srv.get_file(ws, "small.txt").body, b"hi\n", "a dense file lands")


def test_sparse_files_in_a_mount_add_up(srv):
    # each under turnDisk, together over it
    t, ws = _mount_turn(srv, scratch="64m", turnDisk="4m", userDisk="8m")
    _sparse_refused(srv, t, ws, "truncate -s 3M /workspace/a.bin && "
                    "truncate -s 3M /workspace/b.bin", 3 * MB)


def test_sparse_file_in_a_mount_under_the_limit_lands(srv):
    t, ws = _mount_turn(srv, scratch="64m", turnDisk="4m", userDisk="8m")
    out = ok(srv, t["id"], "truncate -s 2M /workspace/c.bin")
    eq(out.get("limit"), None, "limit")
    eq(len(srv.get_file(ws, "c.bin").body), 2 * MB, "stored at its full length")


def test_sparse_file_in_a_mount_counts_against_user_disk(srv):
    # turn a holds 2 MiB at rest; b's sparse 3 MiB (under its turnDisk) passes the
    # user's 4 MiB
    t, ws = _mount_turn(srv, scratch="64m", turnDisk="4m", userDisk="4m")
    a = new_turn(srv, t["agent"], user=t["user"])
    ok(srv, a["id"], "dd if=/dev/zero of=f bs=1M count=2")
    seq = srv.seq(ws)
    out = call(srv, t["id"], "truncate -s 3M /workspace/s.bin")
    eq(out.get("limit"), "user_disk", "limit of %r" % out)
    eq(srv.seq(ws), seq, "nothing committed")
    eq(ok(srv, a["id"], "du -k f")["stdout"].split()[0], "2048", "turn a keeps its file")


def test_walk_mode_sparse_files_in_a_mount_count_their_full_length():
    # one file past turnDisk is stopped by RLIMIT_FSIZE here: two under it add up
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        t, ws = _mount_turn(s, scratch="64m", turnDisk="4m", userDisk="8m")
        _sparse_refused(s, t, ws, "truncate -s 3M /workspace/a.bin && "
                        "truncate -s 3M /workspace/b.bin", 3 * MB)


# ---- the measuring loop (--scratch-mode walk)

def test_walk_mode_turn_disk_breach():
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        contains(s.log(), "measuring loop", "start-up log says how limits are kept")
        t = _sandbox_turn(s, scratch="16m", turnDisk="1m", userDisk="1m")
        out = call(s, t["id"], "dd if=/dev/zero of=big bs=64k count=100; sleep 2")
        eq(out.get("limit"), "turn_disk", "limit of %r" % out)
        eq(ok(s, t["id"], "ls")["stdout"].split(), ["outbox"], "workspace after a breach")


def test_walk_mode_deleted_open_file_counts():
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        t = _sandbox_turn(s, scratch="16m", turnDisk="1m", userDisk="1m")
        out = call(s, t["id"], "exec 3>held; rm held; dd if=/dev/zero bs=64k count=40 >&3; "
                   "sleep 20", timeoutSeconds=30)
        eq(out.get("limit"), "turn_disk", "limit of %r" % out)


def test_walk_mode_tree_too_deep_counts_as_over():
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        t = _sandbox_turn(s, scratch="64m", turnDisk="64m", userDisk="64m")
        out = call(s, t["id"], "i=0; while [ $i -lt 300 ]; do mkdir d; cd d; i=$((i+1)); "
                   "done; sleep 2")
        eq(out.get("limit"), "turn_disk", "limit of %r" % out)


def test_walk_mode_workspace_still_noexec():
    harness.needs_root("the workspace is noexec only as root (a tmpfs, or a bind remounted "
                       "noexec); without root /tmp is not noexec")
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        t = new_turn(s)
        out = call(s, t["id"], "cp /bin/true ./t && ./t")
        check(out["exitCode"] != 0, "a copied binary ran from the workspace: %r" % out)
        eq(ok(s, t["id"], "echo 'echo ran' > s.sh; sh s.sh")["stdout"], "ran\n", "sh s.sh")


def test_walk_mode_one_file_capped_at_turn_disk():
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        t = _sandbox_turn(s, scratch="16m", turnDisk="1m", userDisk="1m")
        out = call(s, t["id"], "dd if=/dev/zero of=big bs=1M count=64 2>&1; ls -l big")
        check(" 1048576 " in out["stdout"], "file stopped at turnDisk: %r" % out)
        eq(out.get("limit"), "turn_disk", "limit")
