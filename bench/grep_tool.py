#!/usr/bin/env python3
"""The agent grep tool (POST /v1/agents/{id}/tools/grep) against ripgrep, wall
time as the caller sees it (issue 38 item 7): 20,000 files / 160 MB in a volume
mounted read-only, and the same files in a directory on disk for `rg` (all
cores, warm page cache). Sides alternate, one run each in turn; medians of
--runs (5).

Cases: a literal found in one file and a regex found in ten (outputMode
count: every file is read), the literal case-insensitive, and a common word
in content mode at the default limit of 100 results (rg has no overall limit:
its side is `rg -n ... | head -100`, which stops it at the 100th line as the
tool stops at its 100th result).

Usage: bench/grep_tool.py [--runs N] [--work DIR] [--out FILE] [--build DIR]
Prints the rows; with --out writes them as the section "Grep tool vs ripgrep
(bench/grep_tool.py)" of FILE (bench/results.md). Needs build/cofferd and rg."""

import os
import shutil
import subprocess
import sys
import tempfile

from benchlib import Cofferd, write_section
from speed import Side, arg, child_cpu, fixture, proc_cpu

FILES, SIZE = 20000, 8000   # 160 MB


def rg_side(cmd):
    """Runs `cmd` (a shell line), its output thrown away."""
    return lambda: subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, check=False)


def bench(work, runs, build):
    data, vol, tree = fixture(work, "grep160", FILES, SIZE)
    s = Cofferd(data, build=build)
    rows = []
    try:
        s.call("PUT", "/v1/agents/bench", {"mounts": [
            {"volumeId": vol, "path": "/src", "mode": "ro"}]})
        tool = lambda **a: s.call("POST", "/v1/agents/bench/tools/grep", a)
        cases = [
            ("literal, count", dict(pattern="file 12345 salt", outputMode="count"),
             "rg -c -F 'file 12345 salt' %s" % tree, 1),
            ("regex, count", dict(pattern=r"file 1234[0-9] salt \d+", outputMode="count"),
             r"rg -c 'file 1234[0-9] salt \d+' %s" % tree, 10),
            ("literal ignoreCase, count", dict(pattern="FILE 12345 SALT", outputMode="count",
                                               ignoreCase=True),
             "rg -c -i -F 'FILE 12345 SALT' %s" % tree, 1),
            ("common word, content, limit 100", dict(pattern="salt"),
             "rg -n salt %s | head -100" % tree, None),
        ]
        for label, a, rg, files in cases:
            got = tool(path="/src", **a)
            assert got["ok"], got
            if files is not None:
                assert got["filesMatched"] == files, got
            else:
                assert got["truncated"] and len(got["matches"]) == 100, got
            c, r = Side("coffer"), Side("rg")
            tool(path="/src", **a)
            subprocess.run(rg, shell=True, stdout=subprocess.DEVNULL)  # warm both
            for _ in range(runs):
                c.run(lambda: tool(path="/src", **a), lambda: proc_cpu(s.p.pid))
                r.run(rg_side(rg), child_cpu)
            rows.append((label, c, r))
    finally:
        s.stop()
    return rows


def main():
    runs = int(arg("--runs", "5"))
    keep = arg("--work", None)
    out = arg("--out", None)
    build = arg("--build", None)
    work = keep or tempfile.mkdtemp(prefix="coffer-bench-grep-")
    os.makedirs(work, exist_ok=True)
    try:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        rows = bench(work, runs, build)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    lines = ["## Grep tool vs ripgrep (bench/grep_tool.py)", "",
             "| grep tool, 20,000 files / 160 MB (medians of %d, sides alternating) | "
             "tool ms | tool CPU ms | rg ms | rg CPU ms | wall ratio | CPU ratio |" % runs,
             "|---|---|---|---|---|---|---|"]
    for label, c, r in rows:
        lines.append("| %s | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2fx |" % (
            label, c.ms(), c.cpu_ms(), r.ms(), r.cpu_ms(), c.ms() / r.ms(),
            c.cpu_ms() / r.cpu_ms() if r.cpu_ms() else float("nan")))
    lines.append("")
    lines.append("Load average at the start: %s (2 cores, shared)." % load)
    text = "\n".join(lines)
    print(text)
    if out:
        write_section(out, "Grep tool vs ripgrep (bench/grep_tool.py)", text)


if __name__ == "__main__":
    main()
