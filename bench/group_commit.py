#!/usr/bin/env python3
"""Group commit (issue 13 part 2): durable 4 KiB writes over HTTP from 1, 8 and 64
concurrent writers against a plain single-writer write+fsync loop on the same disk,
measured in the same run.

    bench/group_commit.py [--seconds S] [--before BUILD] [--strace]

Each writer is a wrk connection (wrk -t2, a Lua script giving every request a path and
4 KiB body of its own, so every PUT is a new file stored inline: one SQLite change, one
WAL fsync shared with its batch). The anchor opens, writes 4 KiB, fsyncs and closes a new
file per iteration in a directory next to cofferd's data dir (the same filesystem), for
the same time, before and after the HTTP runs. --before BUILD runs the same writers
against another build's cofferd too (e.g. main before group commit). --strace counts
cofferd's system calls over a short 8-writer run of each build (strace -c -f): how many
fdatasyncs each acknowledged write cost. Writes its section of bench/results.md.
Everything it starts is stopped at the end, also on error.
"""
import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = benchlib.ROOT
WORK = os.path.join(ROOT, "bench", "work")

LUA = r"""
local n = 0
tid = 0
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end
function init(args)
  pad = string.rep("x", 4096)
end
request = function()
  n = n + 1
  local head = string.format("t%d-n%d;", tid, n)
  local body = head .. string.sub(pad, 1, 4096 - #head)
  return wrk.format("PUT", string.format("/v1/volumes/%s/files/t%d/%d.bin", VID, tid, n),
                    {["Authorization"] = "Bearer " .. KEY,
                     ["Content-Type"] = "application/octet-stream"}, body)
end
"""


def anchor(where, seconds):
    """write+fsync of a new 4 KiB file each, one writer, for `seconds`: files/s."""
    d = tempfile.mkdtemp(prefix="fsync-", dir=where)
    buf = os.urandom(4096)
    n, t0 = 0, time.perf_counter()
    try:
        while time.perf_counter() - t0 < seconds:
            fd = os.open(os.path.join(d, "f%07d" % n), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o644)
            os.write(fd, buf)
            os.fsync(fd)
            os.close(fd)
            n += 1
        return n / (time.perf_counter() - t0)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def wrk(srv, vid, writers, seconds):
    """(writes/s, non-2xx count) of `writers` connections for `seconds`."""
    script = os.path.join(WORK, "gcommit.lua")
    with open(script, "w") as f:
        f.write('VID = "%s"\nKEY = "%s"\n' % (vid, srv.key) + LUA)
    p = subprocess.run(["wrk", "-t%d" % min(2, writers), "-c%d" % writers,
                        "-d%ds" % seconds, "-s", script, "--timeout", "30s", srv.url],
                       capture_output=True, text=True, timeout=seconds + 120)
    out = p.stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not m:
        raise RuntimeError("wrk: %s %s" % (out, p.stderr))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errs = re.search(r"Socket errors:.*", out)
    return float(m.group(1)), int(bad.group(1)) if bad else 0, errs.group(0) if errs else ""


def strace_run(srv, vid, seconds):
    """An 8-writer run under strace -c -f: (acknowledged writes, fdatasync+fsync calls,
    the top lines of the summary)."""
    log = os.path.join(WORK, "gcommit.strace")
    st = subprocess.Popen(["strace", "-c", "-f", "-o", log, "-p", str(srv.p.pid)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    before = srv.call("GET", "/v1/volumes/" + vid)["seq"]
    wrk(srv, vid, 8, seconds)
    after = srv.call("GET", "/v1/volumes/" + vid)["seq"]
    st.send_signal(2)
    st.wait(60)
    text = open(log).read()
    syncs = 0
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[-1] in ("fdatasync", "fsync"):
            syncs += int(f[3])
    top = [l for l in text.splitlines()[2:8]]
    return after - before, syncs, top


def measure(build, seconds, data, do_strace):
    srv = benchlib.Cofferd(data, build=build)
    try:
        vid = srv.call("POST", "/v1/volumes", {"name": "gcommit"})["id"]
        rows = {}
        for n in (1, 8, 64):
            rows[n] = wrk(srv, vid, n, seconds)
        tr = strace_run(srv, vid, max(2, seconds // 2)) if do_strace else None
        return rows, tr
    finally:
        srv.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--before", help="another build dir whose cofferd runs the same load")
    ap.add_argument("--before-label", default="before",
                    help="its name in the table (e.g. the commit it was built from)")
    ap.add_argument("--strace", action="store_true")
    a = ap.parse_args()
    os.makedirs(WORK, exist_ok=True)
    builds = [("this build", os.path.join(ROOT, "build"))]
    if a.before:
        builds.insert(0, (a.before_label, a.before))
    res, traces = {}, {}
    load0 = os.getloadavg()
    w0 = anchor(WORK, a.seconds)
    for name, b in builds:
        data = tempfile.mkdtemp(prefix="gcommit-", dir=WORK)
        try:
            res[name], traces[name] = measure(b, a.seconds, data, a.strace)
        finally:
            shutil.rmtree(data, ignore_errors=True)
    w1 = anchor(WORK, a.seconds)
    load1 = os.getloadavg()
    W = (w0 + w1) / 2
    lines = ["## Group commit: concurrent durable 4 KiB writes (issue 13.2; "
             "bench/group_commit.py)", "",
             "%s, %d cores, load average %.1f at the start and %.1f at the end (the machine "
             "is shared with 8 other engineers' builds and tests: single figures swing "
             "±50%%, read the ratios); %d s per row; wrk -t2 with one connection per writer, "
             "each PUT a new 4 KiB file (inline: one SQLite change). Anchor: one writer, "
             "open + write 4 KiB + fsync + close a new file, %d s before the HTTP runs "
             "(%.0f files/s) and %d s after (%.0f/s), same filesystem; the mean is the limit."
             % (datetime.date.today(), os.cpu_count(), load0[0], load1[0], a.seconds,
                a.seconds, w0, a.seconds, w1), "",
             "| writers | " + " | ".join("%s writes/s | x limit" % n for n, _ in builds) +
             " |", "|---|" + "---|---|" * len(builds)]
    for n in (1, 8, 64):
        cells = []
        for name, _ in builds:
            r, bad, errs = res[name][n]
            cells.append("%.0f%s | %.2fx" % (r, " (%d non-2xx)" % bad if bad else "", r / W))
        lines.append("| %d | %s |" % (n, " | ".join(cells)))
    lines.append("| write+fsync loop (limit) | %s |" % " | ".join(
        "%.0f | 1.00x" % W for _ in builds))
    if a.strace:
        lines += ["", "strace -c -f of cofferd over an 8-writer run (slowed by strace; counts, "
                  "not speed):", ""]
        for name, _ in builds:
            acked, syncs, top = traces[name]
            lines.append("- %s: %d writes acknowledged, %d fdatasync/fsync calls (%.2f per "
                         "write). Top of the summary:" % (name, acked, syncs,
                                                          syncs / acked if acked else 0))
            lines += ["", "      " + "\n      ".join(top), ""]
    text = "\n".join(lines) + "\n"
    print(text)
    benchlib.write_section(benchlib.RESULTS, "Group commit: concurrent durable 4 KiB writes "
                           "(issue 13.2; bench/group_commit.py)", text)


if __name__ == "__main__":
    main()
