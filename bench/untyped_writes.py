#!/usr/bin/env python3
"""The default write path (issue 38 item 5): 8 writers' durable 4 KiB PUTs without a
Content-Type (what curl, the SDKs' write(path, data) and most clients send) beside the
same with `application/octet-stream`, and a single-writer write+fsync loop on the same
disk as the limit, in one run.

    bench/untyped_writes.py [--seconds S] [--before BUILD [--before-label L]]

Rows: typed (application/octet-stream); untyped text under a name whose extension
says its type (`.txt`); untyped text without an extension (each file's bytes its own,
and the same 4 KiB in every file: the sniffer's cache of libmagic's answers); untyped binary bytes
(`.bin`: libmagic still reads them). Each writer is a wrk connection (wrk -t2, a Lua
script giving every request a path of its own). --before BUILD runs the same rows
against another build's cofferd (e.g. main before the change). Writes its section of
bench/results.md. Everything it starts is stopped at the end, also on error.
"""
import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from group_commit import anchor  # noqa: E402

ROOT = benchlib.ROOT
WORK = os.path.join(ROOT, "bench", "work")
TITLE = "Untyped writes: the default write path (issue 38.5; bench/untyped_writes.py)"

LUA = r"""
local n = 0
tid = 0
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end
function init(args)
  if BINARY then
    local t = {}
    for i = 1, 4096 do t[i] = string.char((i * 131 + 7) % 256) end
    pad = table.concat(t)
  else
    pad = string.rep("the quick brown fox jumps over the lazy dog\n", 100)
  end
end
request = function()
  n = n + 1
  local head = SAME and "" or string.format("t%d-n%d;", tid, n)
  local body = head .. string.sub(pad, 1, 4096 - #head)
  local h = {["Authorization"] = "Bearer " .. KEY}
  if CTYPE ~= "" then h["Content-Type"] = CTYPE end
  return wrk.format("PUT", string.format("/v1/volumes/%s/files/t%d/%d%s", VID, tid, n, EXT),
                    h, body)
end
"""

ROWS = [("typed application/octet-stream, .bin", "application/octet-stream", ".bin", False, False),
        ("untyped text, .txt", "", ".txt", False, False),
        ("untyped text, no extension", "", "", False, False),
        ("untyped binary, .bin", "", ".bin", True, False),
        # last: its many cheap writes would make the volume the other rows write to larger
        ("untyped text, no extension, the same bytes each write", "", "", False, True)]


def wrk(srv, vid, ctype, ext, binary, same, writers, seconds):
    script = os.path.join(WORK, "untyped.lua")
    with open(script, "w") as f:
        f.write('VID = "%s"\nKEY = "%s"\nCTYPE = "%s"\nEXT = "%s"\nBINARY = %s\nSAME = %s\n' % (
            vid, srv.key, ctype, ext, "true" if binary else "false",
            "true" if same else "false") + LUA)
    p = subprocess.run(["wrk", "-t2", "-c%d" % writers, "-d%ds" % seconds, "-s", script,
                        "--timeout", "30s", srv.url],
                       capture_output=True, text=True, timeout=seconds + 120)
    m = re.search(r"Requests/sec:\s+([\d.]+)", p.stdout)
    if not m:
        raise RuntimeError("wrk: %s %s" % (p.stdout, p.stderr))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", p.stdout)
    return float(m.group(1)), int(bad.group(1)) if bad else 0


def measure(build, seconds):
    data = tempfile.mkdtemp(prefix="untyped-", dir=WORK)
    srv = benchlib.Cofferd(data, build=build)
    try:
        vid = srv.call("POST", "/v1/volumes", {"name": "untyped"})["id"]
        # the type each row's files got (the sniffer's answer, checked once)
        out = {}
        for label, ctype, ext, binary, same in ROWS:
            out[label] = wrk(srv, vid, ctype, ext, binary, same, 8, seconds)
        return out
    finally:
        srv.stop()
        shutil.rmtree(data, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--before", help="another build dir whose cofferd runs the same rows")
    ap.add_argument("--before-label", default="before")
    a = ap.parse_args()
    os.makedirs(WORK, exist_ok=True)
    builds = [("this build", os.path.join(ROOT, "build"))]
    if a.before:
        builds.insert(0, (a.before_label, a.before))
    load0 = os.getloadavg()
    w0 = anchor(WORK, a.seconds)
    res = {name: measure(b, a.seconds) for name, b in builds}
    w1 = anchor(WORK, a.seconds)
    load1 = os.getloadavg()
    W = (w0 + w1) / 2
    lines = ["## " + TITLE, "",
             "%s, %d cores, load average %.1f at the start and %.1f at the end; %d s a row; "
             "8 writers (wrk -t2 -c8), each PUT a new 4 KiB file. Limit: one writer's "
             "open + write 4 KiB + fsync + close loop on the same filesystem, before (%.0f/s) "
             "and after (%.0f/s) the HTTP runs; the mean is the limit."
             % (datetime.date.today(), os.cpu_count(), load0[0], load1[0], a.seconds, w0, w1),
             "", "| 8 writers | " + " | ".join("%s writes/s | x limit" % n for n, _ in builds) +
             " |", "|---|" + "---|---|" * len(builds)]
    for label, *_ in ROWS:
        cells = []
        for name, _ in builds:
            r, bad = res[name][label]
            cells.append("%.0f%s | %.2fx" % (r, " (%d non-2xx)" % bad if bad else "", r / W))
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    lines.append("| write+fsync loop (limit) | %s |" % " | ".join(
        "%.0f | 1.00x" % W for _ in builds))
    text = "\n".join(lines) + "\n"
    print(text)
    benchlib.write_section(benchlib.RESULTS, TITLE, text)


if __name__ == "__main__":
    main()
