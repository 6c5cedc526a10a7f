"""A confined call's commit merges text by lines (coffer issue 37 item 2; API.md "Merge,
history, who changed what, revert", the last paragraph of Merge, and Turns): a call's edit
of lines nobody else touched lands although someone else changed other lines of that file
meanwhile (reported in committed[].merged); a real overlap, a binary file, a file removed or
created meanwhile stay conflicts, kept at /tmp/.conflicts/PATH. Real FUSE, real calls.

Each call here begins, says so (/tmp/started in its workspace), and waits for /tmp/go:
what "meanwhile" changes is made while the call's view is open, with no sleep to race."""

import hashlib
import os
import threading

import harness
from harness import check, eq, expect
from test_webhooks import Receiver, _hook
from turnlib import call, new_id, ok
from turnlib import new_turn as _new_turn

SERVER_OPTS = {"args": ["--webhook-allow-private"]}
TIMEOUT = 120
TURNS = []

BASE = b"one\ntwo\nthree\nfour\nfive\n"


def _fuse_ok():
    if not os.path.exists("/dev/fuse") or not harness.IS_ROOT:
        harness.skip("calls see the agent's files through FUSE, mounted here as root")


def new_turn(srv, aid, **kw):
    t = _new_turn(srv, aid, **kw)
    TURNS.append(t["id"])
    return t


def _agent(srv):
    aid = new_id("cm")
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    ws = expect(srv.get("/v1/agents/%s" % aid), 200).json()["workspaceVolumeId"]
    return aid, ws


class Held:
    """A call of turn `tid` that begins, then waits (its view open) until release();
    then runs `edit`. answer() is the call's answer."""

    def __init__(self, srv, tid, edit, **extra):
        self.dir = os.path.join(srv.data, "scratch", "ws", tid)
        self.res = {}
        cmd = ("touch /tmp/started; while [ ! -e /tmp/go ]; do sleep 0.05; done; "
               "rm -f /tmp/started /tmp/go; " + edit)
        self.th = threading.Thread(target=lambda: self.res.update(
            out=call(srv, tid, cmd, timeoutSeconds=90, **extra)))
        self.th.start()
        harness.until(lambda: os.path.exists(os.path.join(self.dir, "started")),
                      "the call of %s to begin" % tid, 60)

    def release(self):
        open(os.path.join(self.dir, "go"), "w").close()

    def answer(self):
        self.release()
        self.th.join(100)
        check("out" in self.res, "the call answered")
        out = self.res["out"]
        eq(out["exitCode"], 0, "exit code (stderr %r)" % out["stderr"])
        return out


def _history(srv, vid, path):
    return expect(srv.get("/v1/volumes/%s/history" % vid, query={"path": path}),
                  200).json()["versions"]


def _conflicts(out):
    return [c["path"] for c in out.get("conflicts", [])]


def test_call_edit_of_other_lines_merges_with_a_write_made_meanwhile(srv):
    _fuse_ok()
    aid, ws = _agent(srv)
    srv.put_ok(ws, "notes.md", BASE)
    t = new_turn(srv, aid)
    # sed -i writes a new file and renames it over: the view keeps what it saw
    c = Held(srv, t["id"], "sed -i s/^five$/FIVE/ /workspace/notes.md; "
             "echo x > /workspace/x.md", callId="call-m1")
    theirs = srv.put_ok(ws, "notes.md", BASE.replace(b"one", b"ONE"))
    out = c.answer()
    eq(_conflicts(out), [], "no conflict: %r" % out)
    eq(len(out["committed"]), 1, "committed %r" % out)
    cm = out["committed"][0]
    eq((cm["written"], cm["removed"], cm.get("merged")), (2, 0, ["/workspace/notes.md"]),
       "written, and the merged path named")
    merged = b"ONE\ntwo\nthree\nfour\nFIVE\n"
    r = expect(srv.get_file(ws, "notes.md"), 200)
    eq(r.body, merged, "both edits are in the file")
    eq(r.header("etag"), '"%d"' % cm["seq"], "its version is the call's change")
    vs = _history(srv, ws, "notes.md")
    eq([v["seq"] for v in vs[:2]], [cm["seq"], theirs["seq"]], "one change each")
    eq((vs[0]["by"].get("via"), vs[0]["by"].get("callId")), ("call", "call-m1"),
       "the merged version is the call's")
    eq(vs[0]["sha256"], hashlib.sha256(merged).hexdigest(), "its bytes are the merge")
    eq(vs[1]["by"].get("via"), "http", "the write meanwhile is the other side's")
    # the model's next call reads the merged file, and no copy was kept
    out = ok(srv, t["id"], "cat /workspace/notes.md; ls -a /tmp/.conflicts 2>&1 | head -1")
    eq(out["stdout"].splitlines()[:5], merged.decode().splitlines(), "seen by the next call")
    check("No such file" in out["stdout"], "no .conflicts kept: %r" % out["stdout"])


def test_two_calls_edit_other_lines_of_one_file_both_land(srv):
    _fuse_ok()
    aid, ws = _agent(srv)
    srv.put_ok(ws, "plan.txt", BASE)
    t1, t2 = new_turn(srv, aid, user="u1"), new_turn(srv, aid, user="u2")
    a = Held(srv, t1["id"], "sed -i s/^one$/ONE/ /workspace/plan.txt", callId="call-a")
    # printf > truncates and writes in place (the other way a file is edited)
    b = Held(srv, t2["id"], "printf 'one\\ntwo\\nthree\\nfour\\nFIVE\\n' > /workspace/plan.txt",
             callId="call-b")
    oa = a.answer()
    eq(_conflicts(oa), [], "the first call has no conflict")
    check("merged" not in oa["committed"][0], "the first lands as written: %r" % oa)
    ob = b.answer()
    eq(_conflicts(ob), [], "the second call has no conflict: %r" % ob)
    eq(ob["committed"][0].get("merged"), ["/workspace/plan.txt"], "the second merged")
    eq(srv.get_file(ws, "plan.txt").body, b"ONE\ntwo\nthree\nfour\nFIVE\n", "both edits")
    vs = _history(srv, ws, "plan.txt")
    eq([(v["seq"], v["by"].get("callId")) for v in vs[:2]],
       [(ob["committed"][0]["seq"], "call-b"), (oa["committed"][0]["seq"], "call-a")],
       "one change per call, each by its call")


def test_overlap_binary_removed_and_created_stay_conflicts(srv):
    _fuse_ok()
    aid, ws = _agent(srv)
    srv.put_ok(ws, "same.md", BASE)
    srv.put_ok(ws, "bin.dat", b"\x00\x01base\n")
    srv.put_ok(ws, "gone.md", BASE)
    t = new_turn(srv, aid)
    c = Held(srv, t["id"],
             "sed -i s/^three$/mine/ /workspace/same.md; "
             "printf '\\000\\001mine\\n' > /workspace/bin.dat; "
             "sed -i s/^one$/mine/ /workspace/gone.md; "
             "echo mine > /workspace/new.md")
    srv.put_ok(ws, "same.md", BASE.replace(b"three", b"theirs"))
    srv.put_ok(ws, "bin.dat", b"\x00\x01theirs\n")
    expect(srv.delete(srv.file_path(ws, "gone.md")), 200, 204)
    srv.put_ok(ws, "new.md", b"theirs\n")
    seq = srv.seq(ws)
    out = c.answer()
    why = {c["path"]: c["reason"] for c in out.get("conflicts", [])}
    eq(sorted(why), ["/workspace/bin.dat", "/workspace/gone.md", "/workspace/new.md",
                     "/workspace/same.md"], "conflicts: %r" % out)
    check("changed by someone else" in why["/workspace/same.md"], "reason %r" % why)
    check("removed by someone else" in why["/workspace/gone.md"], "reason %r" % why)
    check("created by someone else" in why["/workspace/new.md"], "reason %r" % why)
    eq(out.get("committed"), [], "nothing landed")
    eq(srv.seq(ws), seq, "the volume is unchanged by the call")
    eq(srv.get_file(ws, "same.md").body, BASE.replace(b"three", b"theirs"), "theirs stays")
    eq(srv.get_file(ws, "bin.dat").body, b"\x00\x01theirs\n", "binary: theirs stays")
    eq(srv.get_file(ws, "gone.md").status, 404, "the removal stays")
    out = ok(srv, t["id"], "cat /tmp/.conflicts/workspace/same.md; "
             "od -c /tmp/.conflicts/workspace/bin.dat | head -1; "
             "cat /tmp/.conflicts/workspace/gone.md /tmp/.conflicts/workspace/new.md")
    eq(out["stdout"].splitlines(),
       ["one", "two", "mine", "four", "five",
        "0000000  \\0 001   m   i   n   e  \\n",
        "mine", "two", "three", "four", "five", "mine"], "the call's bytes are kept")


def test_text_past_the_merge_limit_stays_a_conflict(srv):
    # 8 MiB a side, as a merge's (COF_MERGE_TEXT_MAX): one line more is not merged
    _fuse_ok()
    aid, ws = _agent(srv)
    big = b"x\n" * (4 * 1024 * 1024) + b"last\n"
    srv.put_ok(ws, "big.txt", big)
    t = new_turn(srv, aid)
    c = Held(srv, t["id"], "sed -i s/^last$/mine/ /workspace/big.txt")
    srv.put_ok(ws, "big.txt", b"first\n" + big[2:])
    out = c.answer()
    eq(_conflicts(out), ["/workspace/big.txt"], "too big to merge: a conflict")
    eq(srv.get_file(ws, "big.txt").body[:6], b"first\n", "theirs stays")


def test_call_conflicted_hook_for_an_overlap_not_for_a_clean_merge(srv):
    _fuse_ok()
    rec = Receiver()
    try:
        _hook(srv, rec.url, ["call.conflicted"])
        aid, ws = _agent(srv)
        srv.put_ok(ws, "h.md", BASE)
        clean = new_turn(srv, aid, user="u1")
        c = Held(srv, clean["id"], "sed -i s/^five$/FIVE/ /workspace/h.md")
        srv.put_ok(ws, "h.md", BASE.replace(b"one", b"ONE"))
        eq(c.answer()["committed"][0].get("merged"), ["/workspace/h.md"], "merged clean")
        over = new_turn(srv, aid, user="u2")
        c = Held(srv, over["id"], "sed -i s/^two$/mine/ /workspace/h.md")
        srv.put_ok(ws, "h.md", b"ONE\ntheirs\nthree\nfour\nFIVE\n")
        eq(_conflicts(c.answer()), ["/workspace/h.md"], "the overlap")
        (_, ev), = rec.wait("call.conflicted")
        data = ev["data"]
        eq((data["turnId"], [x["path"] for x in data["conflicts"]]),
           (over["id"], ["/workspace/h.md"]), "one delivery, for the overlap only")
    finally:
        rec.close()


def test_zz_turns_ended(srv):
    for tid in TURNS:
        srv.delete("/v1/turns/%s" % tid)
