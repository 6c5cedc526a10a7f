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


# ---- deployment.toml and `coffer deploy` (issue 33 item 7)

SEED_TOML = """[[agents]]
id = "field-guide"
package = "../examples/field-guide"
[agents.sandbox]
scratch = "256m"
turn_disk = "64m"    # default: a quarter of scratch
user_disk = "128m"   # default: half of scratch

[output]
files = ["png", "csv"]   # any of png, svg, csv, pdf
"""


def _seed_000_toml_blocks():
    """The deployment.toml lines of seed 000 as written (None when ../shared/seeds is not
    beside the repository)."""
    import glob
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = glob.glob(os.path.join(root, "..", "shared", "seeds", "000_*.txt"))
    return open(found[0]).read() if found else None


def _deploy(srv, tmp, text, *args):
    path = os.path.join(tmp, "deployment.toml")
    with open(path, "w") as f:
        f.write(text)
    return srv.cli("deploy", path, *args)


def test_deployment_toml_as_written_is_applied(srv):
    """Seed 000's deployment.toml, as the seed writes it, through `coffer deploy`: the
    agent field-guide exists with its sandbox sizes (snake_case as written), and [output]
    files; running it again updates, never duplicates."""
    import tempfile
    seed = _seed_000_toml_blocks()
    if seed is not None:
        for line in SEED_TOML.strip().splitlines():
            check(line.strip() in seed, "the seed's deployment.toml holds %r" % line)
    tmp = tempfile.mkdtemp(prefix="deploy-")
    p = _deploy(srv, tmp, SEED_TOML)
    eq(p.returncode, 0, "coffer deploy: %r" % p.stderr)
    eq(p.stdout.decode().strip(), "created agent field-guide", "what it printed")
    a = expect(srv.get("/v1/agents/field-guide"), 200).json()
    eq(a["sandbox"], {"scratch": "256m", "turn_disk": "64m", "user_disk": "128m"}, "sandbox")
    eq(a["output"], {"files": ["png", "csv"]}, "output")
    eq(a["defaultOutputModes"], ["image/png", "text/csv"], "its output modes")
    t = new_turn(srv, aid="field-guide")
    eq((t["sandbox"]["turnDisk"], t["sandbox"]["userDisk"]), (64 << 20, 128 << 20),
       "the turn's limits")
    p = _deploy(srv, tmp, SEED_TOML)
    eq((p.returncode, p.stdout.decode().strip()), (0, "updated agent field-guide"), "again")


def test_deploy_refuses_a_broken_file_and_changes_nothing(srv):
    """`deploy refuses anything but 0 < turn_disk <= user_disk <= scratch`: with a second
    agent breaking the rule, nothing is applied (the first agent is not made either), exit
    2 naming the agent and both sizes; a TOML error names its line; an unknown key, a
    duplicated id and an unknown output type are refused the same way."""
    import tempfile
    tmp = tempfile.mkdtemp(prefix="deploy-")
    good = '[[agents]]\nid = "dep-ok"\n'
    cases = (
        (good + '[[agents]]\nid = "dep-bad"\n[agents.sandbox]\nscratch = "256m"\n'
         'turn_disk = "200m"\nuser_disk = "128m"\n', "dep-bad"),
        (good + '[[agents]]\nid = "dep-bad"\n[agents.sandbox]\nturn_disk = "0"\n', "dep-bad"),
        (good + 'x = = 1\n', "line 3"),
        (good + 'colour = "red"\n', "colour"),
        (good + '[[agents]]\nid = "dep-ok"\n', "twice"),
        (good + '[agents.output]\nfiles = ["gif"]\n', "gif"),
        ('[[agents]]\npackage = "x"\n', "no id"),
        ('[[agents]]\nid = "a"\n[database]\nurl = "x"\n', "database"),
    )
    for text, words in cases:
        p = _deploy(srv, tmp, text)
        eq(p.returncode, 2, "exit status for %r: %r" % (text, p.stderr))
        check(words in p.stderr.decode(), "the error names %r: %r" % (words, p.stderr))
        expect_error(srv.get("/v1/agents/dep-ok"), 404, "not_found")


def test_api_accepts_seed_000s_snake_case_sandbox(srv):
    """API.md: seed 000's turn_disk/user_disk spellings are accepted by the API too, and
    checked by the same rule; both spellings of one setting are 400."""
    a = make_agent(srv, sandbox={"scratch": "64m", "turn_disk": "8m", "user_disk": "16m"})
    t = new_turn(srv, aid=a)
    eq((t["sandbox"]["turnDisk"], t["sandbox"]["userDisk"]), (8 << 20, 16 << 20),
       "snake_case limits apply")
    r = srv.put("/v1/agents/snake-bad", json={"sandbox": {"turn_disk": "32m",
                                                          "user_disk": "16m"}})
    expect_error(r, 400, "validation_error", "32 MiB")
    r = srv.put("/v1/agents/snake-both", json={"sandbox": {"turn_disk": "8m",
                                                           "turnDisk": "8m"}})
    expect_error(r, 400, "validation_error", "not both")
