"""Seed 000's claims (../shared/seeds/000_*: turn workspaces, disk limits, outbox), one
test per claim, named after it and written as a user of the seed would write it (the
seed's own snippets where it has them)."""

import base64
import json
import os

import harness
from harness import check, eq, expect, expect_error
from turnlib import make_agent, new_turn, ok, stream_call

TIMEOUT = 90


def test_vessel_outbox_lengths_csv_as_written(srv):
    """Seed 000, "Files from tools": a confined call writes files into $VESSEL_OUTBOX and
    the seed's own example returns lengths.csv. Before $VESSEL_OUTBOX was set beside
    $OUTBOX the shell expanded it to "" and wrote "/lengths.csv" (refused: `/` is
    read-only), so the call failed and returned no file."""
    t = new_turn(srv, aid=make_agent(srv, output={"files": ["png", "csv"]}))
    out = ok(srv, t["id"],
             "printf 'name,length_cm\\nGreat Blue Heron,115\\n' > \"$VESSEL_OUTBOX/lengths.csv\"")
    body = b"name,length_cm\nGreat Blue Heron,115\n"
    eq([(f["name"], f["mediaType"], f["size"]) for f in out["files"]],
       [("lengths.csv", "text/csv", len(body))], "files of %r" % out)
    eq(out["notes"], ["attached lengths.csv (text/csv, %d bytes) to the answer" % len(body)],
       "the note the model reads")
    eq(ok(srv, t["id"], "echo \"$VESSEL_OUTBOX\"; echo \"$OUTBOX\"")["stdout"],
       "/tmp/outbox\n/tmp/outbox\n", "one outbox under both names")


# ---- "How files reach the caller": A2A artifacts (issue 33 item 6)

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 24
SCHEMA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "schemas", "a2a_artifact.json")


def test_each_kept_file_streams_as_an_a2a_artifact(srv):
    """Seed 000: "Each kept file streams to the caller as an A2A artifact named file, with
    one part carrying the raw bytes, mediaType, filename, and the tool call's id under
    metadata.call_id." Each `event: artifact` validates against A2A v0.3's Artifact schema
    (tests/schemas/a2a_artifact.json) and its bytes are the file's."""
    try:
        import jsonschema
    except ImportError:
        harness.skip("python3-jsonschema is not installed")
    schema = json.load(open(SCHEMA))
    t = new_turn(srv, aid=make_agent(srv))
    body = b"name,length_cm\nGreat Blue Heron,115\n"
    ev = stream_call(srv, t["id"], {
        "callId": "toolu_01A09q90qw90lq917835lq9",
        "command": "printf 'name,length_cm\\nGreat Blue Heron,115\\n' > $OUTBOX/lengths.csv;"
                   " printf '\\211PNG\\r\\n\\032\\n' > $OUTBOX/c.png;"
                   " head -c 24 /dev/zero >> $OUTBOX/c.png"})
    arts = [d for e, d in ev if e == "artifact"]
    eq(len(arts), 2, "two artifacts among %r" % [e for e, _ in ev])
    for a in arts:
        jsonschema.validate(a, schema)
        eq((a["name"], a["metadata"]), ("file", {"call_id": "toolu_01A09q90qw90lq917835lq9"}),
           "name and metadata")
        eq(len(a["parts"]), 1, "one part")
    by = {a["parts"][0]["file"]["name"]: a["parts"][0] for a in arts}
    eq((by["lengths.csv"]["kind"], by["lengths.csv"]["file"]["mimeType"]), ("file", "text/csv"),
       "the CSV part")
    eq(base64.b64decode(by["lengths.csv"]["file"]["bytes"]), body, "the CSV's bytes")
    eq(base64.b64decode(by["c.png"]["file"]["bytes"]), PNG, "the PNG's bytes")
    eq(len({a["artifactId"] for a in arts}), 2, "each artifact has its own id")
    exit_ = [d for e, d in ev if e == "exit"][0]
    eq(exit_["callId"], "toolu_01A09q90qw90lq917835lq9", "the answer echoes the callId")


def test_accepted_output_modes_on_the_call_filter_what_comes_back(srv):
    """Seed 000: "A caller that lists acceptedOutputModes receives only the types it lists;
    a caller that lists none receives all of them." On the call: only text/csv comes back
    of a CSV and a PNG (the PNG named in a note); none listed: both."""
    t = new_turn(srv, aid=make_agent(srv))
    cmd = ("printf 'a,b\\n' > $OUTBOX/t.csv; printf '\\211PNG\\r\\n\\032\\n' > $OUTBOX/c.png;"
           " head -c 24 /dev/zero >> $OUTBOX/c.png")
    out = ok(srv, t["id"], cmd, acceptedOutputModes=["text/csv"])
    eq([f["name"] for f in out["files"]], ["t.csv"], "only the CSV")
    check(any("c.png" in n for n in out["notes"]), "the PNG is named: %r" % out["notes"])
    out = ok(srv, t["id"], cmd)
    eq(sorted(f["name"] for f in out["files"]), ["c.png", "t.csv"], "none listed: all")
    expect_error(srv.post("/v1/turns/%s/calls" % t["id"], json={
        "command": "true", "acceptedOutputModes": "text/csv"}), 400, "validation_error")


def test_call_id_is_the_models_and_checked_at_its_edges(srv):
    """API.md: callId is the model's tool-call id, 1..128 printable ASCII (made when
    absent); 129 bytes, a '/', a space or '..' are 400; a callId used again in the turn
    keeps the first call's files and says so."""
    t = new_turn(srv, aid=make_agent(srv))
    eq(ok(srv, t["id"], "true", callId="c" * 128)["callId"], "c" * 128, "128 bytes")
    check(ok(srv, t["id"], "true")["callId"].startswith("call_"), "made when absent")
    for bad in ("c" * 129, "a/b", "a b", "..", "", "x?y"):
        expect_error(srv.post("/v1/turns/%s/calls" % t["id"], json={
            "command": "true", "callId": bad}), 400, "validation_error")
    first = ok(srv, t["id"], "printf 'a\\n' > $OUTBOX/x.csv", callId="dup")
    eq([f["name"] for f in first["files"]], ["x.csv"], "the first call's file")
    again = ok(srv, t["id"], "printf 'b\\n' > $OUTBOX/y.csv", callId="dup")
    eq(again["files"], [], "nothing kept under a callId used before")
    check(any("dup" in n and "earlier call" in n for n in again["notes"]),
          "the note says why: %r" % again["notes"])


def test_agent_card_lists_default_output_modes(srv):
    """Seed 000: "The agent card lists the file types among its defaultOutputModes":
    GET /v1/agents/{id} answers them, from output.files (all four by default)."""
    a = make_agent(srv)
    eq(expect(srv.get("/v1/agents/%s" % a), 200).json()["defaultOutputModes"],
       ["image/png", "image/svg+xml", "text/csv", "application/pdf"], "by default")
    b = make_agent(srv, output={"files": ["csv"]})
    eq(expect(srv.get("/v1/agents/%s" % b), 200).json()["defaultOutputModes"], ["text/csv"],
       "with output.files [csv]")
