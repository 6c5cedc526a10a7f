#!/usr/bin/env python3
"""Turns under load (issue 4): 50 turns of 10 users, one confined call in each, all
at once. All must be answered and the disk limits must hold.

  agent sandbox {scratch 4g, turnDisk 64m, userDisk 512m}, output {files:[csv]}
  10 users x 5 turns; in each turn one call (POST /v1/turns/{id}/calls), all 50 sent
  together (one thread and connection each, released by one barrier):
    40 "normal" calls write 16 MiB into $HOME, sleep 0.3 s and leave a CSV in $OUTBOX;
    10 "breaching" calls (one per user) write 256 MiB, 1 MiB a new file, printing the
    count: they must be stopped with `limit`, and their stdout says how far they got.
  While they run, a watcher polls GET /v1/turns/{id} round-robin and keeps the largest
  `used.bytes` seen per turn; after them every turn is read once more, every returned
  file fetched and checked, and every turn deleted.
  This runs once per --scratch-mode of cofferd: kernel (a tmpfs per workspace) and walk
  (the measuring loop, at least twice a second).

Reports wall time, per-call latency (median, p99, max), how many were answered, how
many breaching calls carried `limit`, the most a breaching call wrote and the largest
workspace seen, against turnDisk.
The anchors, in the same run, are the same 50 commands as plain `sh -c` processes in
50 temporary folders, started together (no confinement, no limits, no HTTP): once on
disk (where walk mode's workspaces are) and once on /dev/shm (tmpfs, as kernel mode's).

Usage: bench/turns.py [--out FILE] [--build DIR] (writes its section of
bench/results.md by default, replacing an earlier one). Needs DIR/cofferd (build by default) and bubblewrap."""

import json, os, shutil, statistics, subprocess, sys, tempfile, threading, time
import urllib.parse

from benchlib import ROOT, Cofferd, write_section
USERS, TURNS_PER_USER = 10, 5
MB = 1024 * 1024
SANDBOX = {"scratch": "4g", "turnDisk": "64m", "userDisk": "512m"}
TURN_DISK = 64 * MB
NORMAL = ("dd if=/dev/zero of=\"$HOME/data.bin\" bs=1M count=16 status=none && sleep 0.3 && "
          "printf 'turn,bytes\\n%s,16777216\\n' \"$TURN\" > \"$OUTBOX/result.csv\" && echo ok")
# MiB by MiB, one new file each (a cap on the size of one file cannot stop it), printing
# the count, so that the answer's stdout says how far it got.
BREACH = ("i=0; while [ $i -lt 256 ]; do head -c 1048576 /dev/zero > \"$HOME/big$i.bin\" "
          "|| break; i=$((i+1)); echo $i; done")
MODES = ("kernel", "walk")


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def pct(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(round(q * len(s))) - 1))]


def run_turns(s):
    c = s.conn()
    s.request(c, "PUT", "/v1/agents/bench-turns", {"sandbox": SANDBOX,
                                               "output": {"files": ["csv"]}})
    turns = []  # (turn id, user, breaching)
    for u in range(USERS):
        for k in range(TURNS_PER_USER):
            _, t = s.request(c, "POST", "/v1/turns", {"agent": "bench-turns",
                                                   "user": "user%02d" % u,
                                                   "deadlineSeconds": 600})
            turns.append((t["id"], "user%02d" % u, k == TURNS_PER_USER - 1))
    c.close()

    n = len(turns)
    barrier = threading.Barrier(n + 1)
    answers, lat, errors = [None] * n, [None] * n, []
    done = threading.Event()
    max_used = {tid: 0 for tid, _, _ in turns}

    def one(i):
        tid, user, breach = turns[i]
        cmd = BREACH if breach else NORMAL.replace("$TURN", tid)
        cc = s.conn()
        cc.connect()  # connected before the barrier: the timing is the call only
        barrier.wait()
        t0 = time.perf_counter()
        try:
            st, a = s.request(cc, "POST", "/v1/turns/%s/calls" % tid,
                           {"command": cmd, "timeoutSeconds": 120}, ok=False)
            lat[i] = time.perf_counter() - t0
            answers[i] = (st, a)
        except Exception as e:  # an unanswered call is a finding, not a crash
            errors.append("%s: %r" % (tid, e))
        cc.close()

    def watch():
        wc = s.conn(timeout=30)
        while not done.is_set():
            for tid in max_used:
                if done.is_set():
                    break
                try:
                    st, t = s.request(wc, "GET", "/v1/turns/" + tid, ok=False)
                except Exception:
                    wc.close()
                    wc = s.conn(timeout=30)
                    continue
                if st == 200 and isinstance(t, dict):
                    used = (t.get("used") or {}).get("bytes", 0)
                    max_used[tid] = max(max_used[tid], used)
        wc.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    w = threading.Thread(target=watch)
    w.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    done.set()
    w.join()

    # After the calls: every turn once more, every returned file fetched.
    c = s.conn()
    fetched = 0
    for i, (tid, _, _) in enumerate(turns):
        st, t = s.request(c, "GET", "/v1/turns/" + tid)
        max_used[tid] = max(max_used[tid], (t.get("used") or {}).get("bytes", 0))
        if answers[i] and answers[i][0] == 200:
            for f in answers[i][1].get("files", []):
                url = urllib.parse.urlsplit(f["url"]).path
                fst, body = s.request(c, "GET", url, ok=False)
                if fst == 200 and len(body) == f["size"] and tid.encode() in body:
                    fetched += 1
    for tid, _, _ in turns:
        s.request(c, "DELETE", "/v1/turns/" + tid)
    c.close()
    return turns, answers, lat, errors, wall, max_used, fetched


def run_anchor(work):
    """The same 50 commands as plain processes, all started at once."""
    procs, t_start = [], []
    dirs = []
    for i in range(USERS * TURNS_PER_USER):
        d = os.path.join(work, "anchor%02d" % i)
        os.makedirs(os.path.join(d, "outbox"))
        dirs.append(d)
    breach = [i % TURNS_PER_USER == TURNS_PER_USER - 1 for i in range(len(dirs))]
    t0 = time.perf_counter()
    for i, d in enumerate(dirs):
        # The breaching command stops at the turn's limit here (there is no limit to
        # stop it): the anchor writes what a held limit lets through.
        cmd = (BREACH.replace("-lt 256", "-lt 64") if breach[i]
               else NORMAL.replace("$TURN", "anchor%02d" % i))
        env = dict(os.environ, HOME=d, TMPDIR=d, OUTBOX=os.path.join(d, "outbox"))
        t_start.append(time.perf_counter())
        procs.append(subprocess.Popen(["sh", "-c", cmd], env=env, cwd=d,
                                      stdout=subprocess.DEVNULL))
    lat = [None] * len(procs)
    pending = set(range(len(procs)))
    while pending:
        for i in list(pending):
            if procs[i].poll() is not None:
                lat[i] = time.perf_counter() - t_start[i]
                pending.discard(i)
        time.sleep(0.002)
    wall = time.perf_counter() - t0
    ok = sum(1 for p in procs if p.returncode == 0)
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    return wall, lat, ok


def summarise(mode, r):
    turns, answers, lat, errors, wall, max_used, fetched = r
    n = len(turns)
    answered = [i for i in range(n) if answers[i] and answers[i][0] == 200]
    normal = [i for i in range(n) if not turns[i][2]]
    breach = [i for i in range(n) if turns[i][2]]
    normal_ok = [i for i in normal if i in answered and answers[i][1].get("exitCode") == 0
                 and "limit" not in answers[i][1]
                 and [f["name"] for f in answers[i][1].get("files", [])] == ["result.csv"]]
    breach_limit = [i for i in breach if i in answered and answers[i][1].get("limit")]
    written = []
    for i in breach_limit:
        out = answers[i][1].get("stdout", "").split()
        written.append(int(out[-1]) if out and out[-1].isdigit() else 0)
    over = [tid for tid, u in max_used.items() if u > TURN_DISK]
    lats = [lat[i] for i in answered]
    return {
        "mode": mode, "n": n, "wall": wall, "lats": lats, "errors": errors,
        "answered": len(answered), "normal": len(normal), "normal_ok": len(normal_ok),
        "breach": len(breach), "breach_limit": len(breach_limit), "fetched": fetched,
        "limits": sorted({answers[i][1]["limit"] for i in breach_limit}),
        "written": max(written) if written else 0,
        "seen": max(max_used.values()) if max_used else 0, "over": len(over),
        "held": (len(answered) == n and not errors and len(normal_ok) == len(normal)
                 and len(breach_limit) == len(breach) and not over
                 and (max(written) if written else 0) <= TURN_DISK // MB),
    }


def main():
    out = arg("--out", os.path.join(ROOT, "bench/results.md"))
    build = arg("--build", os.path.join(ROOT, "build"))
    work = tempfile.mkdtemp(prefix="coffer-bench-turns-")
    shm = tempfile.mkdtemp(prefix="coffer-bench-turns-", dir="/dev/shm") \
        if os.access("/dev/shm", os.W_OK) else None
    res, anchors = [], []
    try:
        # Anchors first, each run after a sync so that no run pays for the
        # previous one's writeback.
        for name, base in (("on disk, as walk", work), ("on tmpfs, as kernel", shm)):
            if base:
                os.sync()
                anchors.append((name,) + run_anchor(base))
        for mode in MODES:
            os.sync()
            s = Cofferd(os.path.join(work, "data-" + mode), "--scratch-mode", mode, build=build)
            try:
                res.append(summarise(mode, run_turns(s)))
            finally:
                s.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if shm:
            shutil.rmtree(shm, ignore_errors=True)
    a_wall, a_lat = anchors[-1][1], anchors[-1][2]  # ratios against the tmpfs one

    ms = lambda v: "%.0f" % (v * 1e3)
    row = lambda name, wall, v: "| %s | %.2f | %s | %s | %s |" % (
        name, wall, ms(statistics.median(v)), ms(pct(v, 0.99)), ms(max(v)))
    lines = ["", "## Turns: 50 at once (bench/turns.py)", "",
             "10 users x 5 turns, one call in each, all 50 sent at once (one connection "
             "each); agent sandbox `%s`. 40 calls write 16 MiB, sleep 0.3 s and return a "
             "CSV; 10 (one per user) write 256 MiB, a new 1 MiB file at a time, past the "
             "64 MiB turnDisk. Once per `cofferd --scratch-mode`: kernel (a tmpfs per "
             "workspace) and walk (the measuring loop). The anchor is the same 50 "
             "commands as plain `sh -c` in 50 folders, started together, on disk and on "
             "tmpfs (no confinement, no limit: its breaching ones stop at 64 MiB by "
             "themselves)." %
             json.dumps(SANDBOX), "",
             "| | wall s | p50 ms | p99 ms | max ms |", "|---|---|---|---|---|"]
    for r in res:
        if r["lats"]:
            lines.append(row("coffer, %s: 50 confined calls over HTTP" % r["mode"],
                             r["wall"], r["lats"]))
    for name, wall, lat, ok in anchors:
        lines.append(row("anchor %s: the same 50 commands, plain `sh -c` (%d exit 0)" % (
            name, ok), wall, lat))
    lines += ["", "| | " + " | ".join(r["mode"] for r in res) + " |",
              "|---|" + "---|" * len(res)]
    def line(label, fn):
        lines.append("| %s | %s |" % (label, " | ".join(fn(r) for r in res)))
    line("wall / anchor", lambda r: "%.1fx" % (r["wall"] / a_wall))
    line("p50 / anchor p50", lambda r: "%.1fx" % (statistics.median(r["lats"]) /
                                                  statistics.median(a_lat))
         if r["lats"] else "-")
    line("answered (HTTP 200)", lambda r: "%d of %d%s" % (
        r["answered"], r["n"], " (%s)" % "; ".join(r["errors"][:2]) if r["errors"] else ""))
    line("normal calls: exit 0, no `limit`, their CSV", lambda r: "%d of %d" % (
        r["normal_ok"], r["normal"]))
    line("returned files fetched back and checked", lambda r: "%d" % r["fetched"])
    line("breaching calls stopped with `limit`", lambda r: "%d of %d (%s)" % (
        r["breach_limit"], r["breach"], ", ".join(r["limits"]) or "none"))
    line("most MiB a breaching call wrote before the stop",
         lambda r: "%d MiB" % r["written"])
    line("largest `used.bytes` seen (polled while running, and after; blocks + 1 KiB "
         "an entry)", lambda r: "%d bytes = turnDisk %s %d KiB" % (
             r["seen"], "+" if r["seen"] >= TURN_DISK else "-",
             abs(r["seen"] - TURN_DISK) // 1024))
    line("workspaces seen over the 64 MiB turnDisk", lambda r: "%d" % r["over"])
    line("all answered and limits held", lambda r: "**yes**" if r["held"] else "**NO**")
    lines += ["", "Ratios are against the tmpfs anchor. 2 cores shared with other work; "
              "one run each.", ""]
    text = "\n".join(lines)
    print(text)
    write_section(out, "Turns: 50 at once (bench/turns.py)", text)
    return 0  # a report, not a test: "limits held" is in the table


if __name__ == "__main__":
    sys.exit(main())
