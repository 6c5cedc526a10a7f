"""Turns: what one turn may take of the host (docs/design.md "Memory and
processes"): sandbox.memory and sandbox.processes per turn and 4x for an agent's
live turns, memfd and SysV shared memory, and removing a deep workspace tree with
few file descriptors."""

import os
import resource
import threading

import harness
from harness import check, contains, eq, expect, expect_error
from turnlib import call, make_agent, new_id, new_turn, ok

TIMEOUT = 120
MB = 1024 * 1024


def _root(why):
    if os.geteuid() != 0:
        harness.skip("needs root: " + why)


# ---- removal of a deep tree (issue 9.6)

def test_walk_mode_deep_tree_removed_with_few_fds():
    # 2,000 nested folders counts as over (deeper than the walk measures); the
    # breach empties the workspace with cofferd held to 200 open files: one
    # fd (or two) a level would run out at a hundred levels
    with harness.server(args=["--scratch-mode", "walk"]) as s:
        resource.prlimit(s.proc.pid, resource.RLIMIT_NOFILE, (200, 200))
        t = new_turn(s, make_agent(s, sandbox={"scratch": "64m", "turnDisk": "64m",
                                               "userDisk": "64m"}))
        out = call(s, t["id"], "python3 -c \"import os\nfor i in range(2000):\n"
                   " os.mkdir('d'); os.chdir('d')\"; sleep 3")
        eq(out.get("limit"), "turn_disk", "limit of %r" % out)
        eq(ok(s, t["id"], "ls -A")["stdout"].split(), ["outbox"], "workspace after it")
        expect(s.delete("/v1/turns/%s" % t["id"]), 204)
        check(not os.path.exists(os.path.join(s.data, "scratch", "ws", t["id"])),
              "workspace folder removed when the turn ended")
