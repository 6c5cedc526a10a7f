#!/usr/bin/env python3
"""Agent file-tool benchmarks (issue 3), side by side with their anchors in one run:

  grep over 20,000 files / 200 MB (literal and regex) vs ripgrep on the same files on disk
  glob **/*.txt over 100,000 paths vs fdfind and find on the same tree
  read + edit round trip over HTTP (1,000 calls each): median and p99

Usage: bench/agents.py [--out FILE] (writes its section of bench/results.md by default, replacing an earlier one).
Needs build/cofferd, bench/populate (built by bench/run, or here), rg, fdfind."""

import json, os, shutil, statistics, subprocess, sys, tempfile, time

from benchlib import ROOT, Cofferd, write_section
PKGS = subprocess.run(["make", "-s", "--no-print-directory", "pkgs"], cwd=ROOT,
                      capture_output=True, text=True, check=True).stdout.strip()  # one list


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True, **kw).stdout


def build_populate(work):
    exe = os.path.join(work, "populate")
    sh("cc -O2 -D_GNU_SOURCE -Iinclude -Isrc bench/populate.c build/libcoffer.a "
       "$(pkg-config --libs %s) -lmagic -lpthread -lm -o %s" % (PKGS, exe), cwd=ROOT)
    return exe


def timed(fn, runs=3):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else \
        os.path.join(ROOT, "bench/results.md")
    work = tempfile.mkdtemp(prefix="coffer-bench-agents-")
    rows = []
    try:
        pop = build_populate(work)
        env = dict(os.environ, COFFER_BENCH_NOSYNC="1")
        data = os.path.join(work, "data")
        vg = json.loads(subprocess.run([pop, "fill", data, "grep", "20000", "10000"], env=env,
                                       check=True, capture_output=True, text=True).stdout)["id"]
        vp = json.loads(subprocess.run([pop, "fill", data, "paths", "100000", "64"], env=env,
                                       check=True, capture_output=True, text=True).stdout)["id"]
        dg, dp = os.path.join(work, "grepdir"), os.path.join(work, "pathdir")
        subprocess.run([pop, "dir", dg, "20000", "10000"], check=True, capture_output=True)
        subprocess.run([pop, "dir", dp, "100000", "64"], check=True, capture_output=True)
        s = Cofferd(data)
        s.call("PUT", "/v1/agents/bench", {"mounts": [
            {"volumeId": vg, "path": "/src", "mode": "ro"},
            {"volumeId": vp, "path": "/paths", "mode": "ro"}]})

        def tool(name, **args):
            return s.call("POST", "/v1/agents/bench/tools/" + name, args)

        lit, rx = "file 12345 salt", r"file 1234[0-9] salt \d+"
        g1 = tool("grep", pattern=lit, path="/src", outputMode="count")
        g2 = tool("grep", pattern=rx, path="/src", outputMode="count")
        assert g1["filesMatched"] == 1 and g2["filesMatched"] == 10, (g1, g2)
        t_lit = timed(lambda: tool("grep", pattern=lit, path="/src", outputMode="count"))
        t_rx = timed(lambda: tool("grep", pattern=rx, path="/src", outputMode="count"))
        r_lit = timed(lambda: sh("rg -c -F '%s' %s || true" % (lit, dg)))
        r_rx = timed(lambda: sh("rg -c '%s' %s || true" % (rx, dg)))
        rows.append(("grep literal, 20,000 files / 200 MB", t_lit, r_lit, "rg -F"))
        rows.append(("grep regex, 20,000 files / 200 MB", t_rx, r_rx, "rg"))
        gl = tool("glob", pattern="**/*.txt", path="/paths")
        assert gl["total"] == 100000, gl["total"]
        t_glob = timed(lambda: tool("glob", pattern="**/*.txt", path="/paths"))
        f_fd = timed(lambda: sh("fdfind -t f -g '*.txt' %s | wc -l" % dp))
        f_find = timed(lambda: sh("find %s -name '*.txt' | wc -l" % dp))
        rows.append(("glob **/*.txt, 100,000 paths", t_glob, f_fd, "fdfind"))
        rows.append(("glob **/*.txt, 100,000 paths", t_glob, f_find, "find"))

        s.call("PUT", "/v1/agents/rt", {})
        tool_rt = lambda name, **a: s.call("POST", "/v1/agents/rt/tools/" + name, a)
        tool_rt("write", path="f.txt", content="counter 0\n")
        reads, edits = [], []
        for i in range(1000):
            t0 = time.perf_counter()
            tool_rt("read", path="f.txt")
            t1 = time.perf_counter()
            r = tool_rt("edit", path="f.txt", oldString="counter %d\n" % i,
                        newString="counter %d\n" % (i + 1))
            t2 = time.perf_counter()
            assert r["ok"], r
            reads.append(t1 - t0)
            edits.append(t2 - t1)
        s.stop()
        p99 = lambda v: sorted(v)[int(len(v) * 0.99) - 1]
        t = ["## 7. Agent file tools (bench/agents.py)", "",
             "| | coffer s | anchor s | anchor | coffer / anchor |", "|---|---|---|---|---|"]
        t += ["| %s | %.3f | %.3f | %s | %.2fx |" % (name, c, a, an, c / a)
              for name, c, a, an in rows]
        t += ["", "| HTTP, 1,000 calls, one keep-alive connection | p50 ms | p99 ms |",
              "|---|---|---|",
              "| read tool | %.2f | %.2f |" % (statistics.median(reads) * 1e3, p99(reads) * 1e3),
              "| edit tool (after a read) | %.2f | %.2f |" % (
                  statistics.median(edits) * 1e3, p99(edits) * 1e3), "",
              "Medians of 3. grep: outputMode count over the whole tree (one file "
              "matches the literal, ten the regex), a read-only mount; rg over the same "
              "files checked out in a directory, warm page cache, all cores. glob: the "
              "tool answers the first 1,000 paths but matches all 100,000; fdfind/find "
              "print every path. The files are `.txt` (the populate fixture), so the "
              "glob is `**/*.txt` rather than `**/*.c`; the cost is the same.", ""]
        text = "\n".join(t)
        write_section(out, "7. Agent file tools (bench/agents.py)", text)
        print(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
