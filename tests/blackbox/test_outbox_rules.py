"""The outbox rules of a confined call end to end over HTTP, with their exact notes
(API.md "Turns", docs/api.md "Outbox"): kept files are served back, every other entry is
removed with a note, the per-turn limit holds across calls, and acceptedOutputModes /
agent output.files narrow the types. The rules at their edges are in
tests/unit/test_outbox.c and test_outbox_entries.c; tests/blackbox/test_turns_outbox.py
(the turn's) covers urls, SSE and the outbox folder itself."""

import itertools

from harness import check, contains, eq, expect, expect_error

_n = itertools.count()

# A 1x1 PNG, written by printf's octal escapes inside the sandbox.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a49444154789c636000000002000148afa47100000000"
    "49454e44ae426082")
PNG_PRINTF = "printf '%s'" % "".join("\\%03o" % b for b in PNG)


def turn(srv, **body):
    """A fresh agent and turn; returns the turn id."""
    agent = "ob%d" % next(_n)
    expect(srv.put("/v1/agents/" + agent, json={"output": body.pop("output", None)}
                   if "output" in body else {}), 200, 201)
    t = expect(srv.post("/v1/turns", json=dict({"agent": agent, "user": "u1",
                                                "deadlineSeconds": 120}, **body)), 201)
    return t.json()["id"]


def call(srv, tid, command):
    r = expect(srv.post("/v1/turns/%s/calls" % tid, json={"command": command,
                                                          "timeoutSeconds": 30}), 200)
    return r.json()


def test_kept_files_are_served(srv):
    tid = turn(srv)
    a = call(srv, tid, PNG_PRINTF + ' > "$OUTBOX/chart.png"; '
             "printf 'a,b\\n1,2\\n' > \"$OUTBOX/data.csv\"")
    eq(a["exitCode"], 0, "exit code")
    eq([(f["name"], f["mediaType"], f["size"]) for f in a["files"]],
       [("chart.png", "image/png", len(PNG)), ("data.csv", "text/csv", 8)], "files")
    eq(a["notes"], ["attached chart.png (image/png, %d bytes) to the answer" % len(PNG),
                    "attached data.csv (text/csv, 8 bytes) to the answer"], "notes")
    r = expect(srv.get(a["files"][0]["url"]), 200)
    eq(r.body, PNG, "served PNG")
    r = expect(srv.get(a["files"][1]["url"]), 200)
    eq(r.body, b"a,b\n1,2\n", "served CSV")


def test_refused_entries_noted_and_removed(srv):
    tid = turn(srv)
    a = call(srv, tid, 'cd "$OUTBOX" && printf nope > fake.png && ln -s /etc/passwd p.csv'
             ' && mkfifo f.csv && mkdir -p d/e && printf x > d/e/x.csv && printf x > x.gif'
             ' && printf x > .hidden.csv')
    eq(a["exitCode"], 0, "exit code: %s" % a.get("stderr"))
    eq(a["files"], [], "files")
    eq(a["notes"], [
        "not attached '.hidden.csv': names must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        "not attached 'd': not a regular file (folder)",
        "not attached 'f.csv': not a regular file (FIFO)",
        "not attached 'fake.png': not a PNG (no PNG signature)",
        "not attached 'p.csv': not a regular file (symbolic link)",
        "not attached 'x.gif': .gif files are not returned; allowed: png, svg, csv, pdf",
    ], "notes")
    b = call(srv, tid, 'ls -A "$OUTBOX" | wc -l')
    eq(b["stdout"].strip(), "0", "entries left in $OUTBOX")


def test_five_files_in_a_call(srv):
    tid = turn(srv)
    a = call(srv, tid, 'for i in 1 2 3 4 5; do printf x > "$OUTBOX/f$i.csv"; done')
    eq([f["name"] for f in a["files"]], ["f1.csv", "f2.csv", "f3.csv", "f4.csv"], "files")
    eq(a["notes"][4], "not attached 'f5.csv': at most 4 files come back per call", "note")


def test_turn_returns_at_most_8_files(srv):
    tid = turn(srv)
    cmd = 'for i in 1 2 3 4; do printf x > "$OUTBOX/c%d_$i.csv"; done'
    eq(len(call(srv, tid, cmd % 1)["files"]), 4, "first call")
    eq(len(call(srv, tid, cmd % 2)["files"]), 4, "second call")
    a = call(srv, tid, cmd % 3)
    eq(a["files"], [], "third call")
    contains(a["notes"][0], "a turn returns at most 8 files", "note")


def test_accepted_output_modes_narrow(srv):
    tid = turn(srv, acceptedOutputModes=["text/csv"])
    a = call(srv, tid, PNG_PRINTF + ' > "$OUTBOX/a.png"; printf x > "$OUTBOX/b.csv"')
    eq([f["name"] for f in a["files"]], ["b.csv"], "files")
    eq(a["notes"][0], "not attached 'a.png': .png files are not returned; allowed: csv",
       "note")


def test_agent_output_files_narrow(srv):
    tid = turn(srv, output={"files": ["png"]})
    a = call(srv, tid, PNG_PRINTF + ' > "$OUTBOX/a.png"; printf x > "$OUTBOX/b.csv"')
    eq([f["name"] for f in a["files"]], ["a.png"], "files")
    eq(a["notes"][1], "not attached 'b.csv': .csv files are not returned; allowed: png",
       "note")


def test_agent_output_files_unknown_type(srv):
    r = srv.put("/v1/agents/obbad", json={"output": {"files": ["png", "gif"]}})
    expect_error(r, 400, "validation_error")
    check("'gif'" in r.error["message"] and "allowed: png, svg, csv, pdf"
          in r.error["message"], "message names gif and the allowed list: %r" % r.error)
