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

# Our copy of seed 000's two deployment.toml snippets (Disk limits; Files from tools).
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


def _seed_000_deployment_toml():
    """Seed 000's deployment.toml as the seed writes it: its `[[agents]]` snippet (from
    `[[agents]]` to the first blank line) and its `[output]` snippet, verbatim; skips with
    the reason when ../shared/seeds is not beside the repository."""
    import glob
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = glob.glob(os.path.join(root, "..", "shared", "seeds", "000_*.txt"))
    if not found:
        harness.skip("seed 000 is not at ../shared/seeds/000_*.txt beside the repository")
    lines = open(found[0]).read().splitlines()

    def snippet(first):
        check(first in lines, "seed 000 has a line %r" % first)
        k = lines.index(first)
        end = lines.index("", k)
        return "\n".join(lines[k:end]) + "\n"
    return snippet("[[agents]]") + "\n" + snippet("[output]")


def _deploy(srv, tmp, text, *args):
    path = os.path.join(tmp, "deployment.toml")
    with open(path, "w") as f:
        f.write(text)
    return srv.cli("deploy", path, *args)


def _deployed_as_written(srv, text):
    """`coffer deploy` of `text` (seed 000's file): field-guide exists with its sandbox
    sizes (snake_case as written) and [output] files, its turns get the limits; deploying
    again updates, never duplicates."""
    import tempfile
    tmp = tempfile.mkdtemp(prefix="deploy-")
    srv.delete("/v1/agents/field-guide")
    p = _deploy(srv, tmp, text)
    eq(p.returncode, 0, "coffer deploy: %r" % p.stderr)
    eq(p.stdout.decode().strip(), "created agent field-guide", "what it printed")
    a = expect(srv.get("/v1/agents/field-guide"), 200).json()
    eq(a["sandbox"], {"scratch": "256m", "turn_disk": "64m", "user_disk": "128m"}, "sandbox")
    eq(a["output"], {"files": ["png", "csv"]}, "output")
    eq(a["defaultOutputModes"], ["image/png", "text/csv"], "its output modes")
    t = new_turn(srv, aid="field-guide")
    eq((t["sandbox"]["scratch"], t["sandbox"]["turnDisk"], t["sandbox"]["userDisk"]),
       (256 << 20, 64 << 20, 128 << 20), "the turn's limits")
    p = _deploy(srv, tmp, text)
    eq((p.returncode, p.stdout.decode().strip()), (0, "updated agent field-guide"), "again")


def test_deployment_toml_as_the_seed_writes_it_is_applied(srv):
    """Seed 000's deployment.toml, its text taken from the seed itself, through `coffer
    deploy`."""
    text = _seed_000_deployment_toml()
    eq(text, SEED_TOML, "our copy is the seed's text")
    _deployed_as_written(srv, text)


def test_deployment_toml_example_is_applied(srv):
    """The same with our copy of the seed's snippets (runs without ../shared/seeds)."""
    _deployed_as_written(srv, SEED_TOML)


def test_deploy_refuses_a_broken_file_and_changes_nothing(srv):
    """`deploy refuses anything but 0 < turn_disk <= user_disk <= scratch`: with a second
    agent breaking the rule, nothing is applied (the first agent is not made either), exit
    2 naming the agent, the sizes and the line; a TOML error names its line; an unknown key
    (of an agent, its sandbox, the file or [output]) names the key and its line; a
    duplicated id and an unknown output type are refused the same way."""
    import tempfile
    tmp = tempfile.mkdtemp(prefix="deploy-")
    good = '[[agents]]\nid = "dep-ok"\n'
    cases = (
        (good + '[[agents]]\nid = "dep-bad"\n[agents.sandbox]\nscratch = "256m"\n'
         'turn_disk = "200m"\nuser_disk = "128m"\n',
         ["line 7: agent 'dep-bad'", "sandbox.turn_disk (200 MiB", "sandbox.user_disk (128 MiB",
          "0 < turn_disk <= user_disk <= scratch"]),
        (good + '[[agents]]\nid = "dep-bad"\n[agents.sandbox]\nuser_disk = "512m"\n',
         ["line 6: agent 'dep-bad'", "sandbox.user_disk (512 MiB", "scratch (256 MiB"]),
        (good + '[[agents]]\nid = "dep-bad"\n[agents.sandbox]\nturn_disk = "0"\n',
         ["line 6: agent 'dep-bad'", "turn_disk is 0 bytes"]),
        (good + '[[agents]]\nid = "dep-bad"\n[agents.sandbox]\nturn_disk = "64x"\n',
         ["line 6", "turn_disk"]),
        (good + 'x = = 1\n', ["line 3, column 5"]),
        (good + '\ncolour = "red"\n', ["line 4: agent 'dep-ok': key 'colour' is not known"]),
        (good + '[agents.sandbox]\nscratch = "1g"\ndisk = "1g"\n',
         ["line 5: agent 'dep-ok'", "'disk'"]),
        (good + '[[agents]]\nid = "dep-ok"\n', ["line 3: agent 'dep-ok' is given twice",
                                                "first at line 1"]),
        (good + '[agents.output]\nfiles = ["gif"]\n', ["line 4", "gif"]),
        (good + '[output]\nfiles = ["png"]\nkind = 1\n', ["line 5", "'kind'"]),
        ('[[agents]]\npackage = "x"\n', ["line 1", "no id"]),
        ('[[agents]]\nid = "a"\n\n[database]\nurl = "x"\n', ["line 4: 'database'"]),
    )
    for text, words in cases:
        p = _deploy(srv, tmp, text)
        eq(p.returncode, 2, "exit status for %r: %r" % (text, p.stderr))
        for w in words:
            check(w in p.stderr.decode(), "the error for %r names %r: %r" % (text, w, p.stderr))
        expect_error(srv.get("/v1/agents/dep-ok"), 404, "not_found")
        expect_error(srv.get("/v1/agents/dep-bad"), 404, "not_found")


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


def test_a_4_mb_file_streams_whole_inline_and_filtered_ones_do_not(srv):
    """API.md: a kept file is at most 4 MB, so an artifact always carries its bytes inline
    (A2A's FileWithBytes, never a uri): a PNG of exactly 4 MB arrives whole as one
    `event: artifact`. With acceptedOutputModes on the streamed call, a file of another type
    sends neither a `file` event nor an artifact, and the note names it."""
    t = new_turn(srv, aid=make_agent(srv))
    size = 4 * 1024 * 1024
    ev = stream_call(srv, t["id"], {
        "callId": "big", "acceptedOutputModes": ["image/png"],
        "command": "printf '\\211PNG\\r\\n\\032\\n' > $OUTBOX/big.png;"
                   " head -c %d /dev/urandom >> $OUTBOX/big.png;"
                   " printf 'a,b\\n' > $OUTBOX/t.csv" % (size - 8)})
    arts = [d for e, d in ev if e == "artifact"]
    eq([a["parts"][0]["file"]["name"] for a in arts], ["big.png"], "only the PNG's artifact")
    eq([d["name"] for e, d in ev if e == "file"], ["big.png"], "only the PNG's file event")
    f = arts[0]["parts"][0]["file"]
    check("uri" not in f, "bytes, not a uri")
    data = base64.b64decode(f["bytes"])
    eq(len(data), size, "all 4 MB inline")
    got = expect(srv.get("/v1/turns/%s/files/big/big.png" % t["id"]), 200).body
    check(got == data, "the artifact's bytes are the kept file's")
    exit_ = [d for e, d in ev if e == "exit"][0]
    check(any("t.csv" in n for n in exit_["notes"]), "the CSV is named: %r" % exit_["notes"])


def test_two_turns_may_use_the_same_call_id(srv):
    """A callId is the model's and only unique within its turn: two turns (of one agent or
    two, one after the other and while the first's view is still kept) that both name their
    calls "1" and "2" each run them, and a call's kept file is its own turn's."""
    a = make_agent(srv)
    t1, t2 = new_turn(srv, aid=a), new_turn(srv, aid=make_agent(srv))
    for t in (t1, t2, t1, t2):
        for cid in ("1", "2"):
            out = ok(srv, t["id"], "ls / >/dev/null; printf '%s\\n' > $OUTBOX/t.csv" % t["id"],
                     callId=cid + ("b" if t is t1 and cid == "2" else ""))
            eq(out["callId"], cid + ("b" if t is t1 and cid == "2" else ""), "echoed")
    for t in (t1, t2):
        eq(expect(srv.get("/v1/turns/%s/files/1/t.csv" % t["id"]), 200).body,
           (t["id"] + "\n").encode(), "each turn's own file under callId 1")


def test_any_valid_call_id_reaches_its_files_and_artifacts(srv):
    """Whatever valid callId the model gives (128 bytes; printable ASCII such as ':', '|',
    '{', '"', '_' first), the call's kept file is at files[].url (percent-encoded where a
    URL needs it) and streams as an artifact whose metadata.call_id is that callId."""
    t = new_turn(srv, aid=make_agent(srv))
    odd = "_a:b|c{d}\"e<f>[g]^h`i~!$&'()*+,;=@"
    for cid in ("c" * 128, odd, odd + "x" * (128 - len(odd))):
        out = ok(srv, t["id"], "printf 'a,b\\n' > $OUTBOX/t.csv", callId=cid)
        eq(out["callId"], cid, "echoed")
        eq([f["name"] for f in out["files"]], ["t.csv"], "kept")
        eq(expect(srv.get(out["files"][0]["url"]), 200).body, b"a,b\n", "its URL serves it")
    ev = stream_call(srv, t["id"], {"callId": odd + "s", "command":
                                    "printf 'a,b\\n' > $OUTBOX/t.csv"})
    arts = [d for e, d in ev if e == "artifact"]
    eq([a["metadata"]["call_id"] for a in arts], [odd + "s"], "the artifact names the call")
    eq(base64.b64decode(arts[0]["parts"][0]["file"]["bytes"]), b"a,b\n", "its bytes")
