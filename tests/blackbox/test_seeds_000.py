"""Seed 000's claims (../shared/seeds/000_*: turn workspaces, disk limits, outbox), one
test per claim, named after it and written as a user of the seed would write it (the
seed's own snippets where it has them)."""

from harness import eq
from turnlib import make_agent, new_turn, ok

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
