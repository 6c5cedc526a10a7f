#!/usr/bin/env python3
"""Turn benchmarks (issue 4), side by side with their anchors in one run:

  1. a confined `true` through POST /v1/turns/{id}/calls vs a plain `sh -c true`
     fork/exec, and vs calling bwrap by hand with the same options: 200 calls
     each, median and p99 (milliseconds)
  2. the cost of keeping disk limits: cofferd's CPU per second of a running
     call whose workspace holds 100,000 files, kernel way (tmpfs + statfs) vs the
     measuring loop (--scratch-mode walk), each against an empty workspace

Usage: bench/turns_overhead.py [--out FILE] [--calls N] [--overhead-only] [--build DIR]
                               [--against DIR]
Writes a "Turns" section into bench/results.md (replacing an older one).
--overhead-only --against DIR[,DIR...]: item 1 only, printed, with a cofferd of
each other build (an A/B) called in the same rounds, so every build and bwrap by
hand meet the same load call by call (the order turns each round).
Needs build/cofferd, root (the kernel way mounts tmpfs), /usr/bin/bwrap."""

import os, shutil, statistics, subprocess, sys, tempfile, time

from benchlib import ROOT, Cofferd, write_section
HZ = os.sysconf("SC_CLK_TCK")


class Server(Cofferd):
    """A cofferd over WORK/data, with the turn calls this bench makes."""

    build = None  # --build DIR: another build's cofferd (an A/B)

    def __init__(self, work, *args):
        self.data = os.path.join(work, "data")
        os.makedirs(work, exist_ok=True)
        super().__init__(self.data, *args, timeout=600, build=Server.build)

    def turn(self, sandbox=None):
        aid = "bench-%d" % time.monotonic_ns()
        self.call("PUT", "/v1/agents/" + aid, {"sandbox": sandbox or {}})
        return self.call("POST", "/v1/turns", {"agent": aid, "user": "u",
                                               "deadlineSeconds": 3600})["id"]

    def run(self, tid, command, **kw):
        body = {"command": command}
        body.update(kw)
        return self.call("POST", "/v1/turns/%s/calls" % tid, body)

    def cpu(self):
        """cofferd's user+system CPU seconds so far (its own and reaped children's
        are kept apart: only its own count)."""
        with open("/proc/%d/stat" % self.p.pid) as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / HZ


def stats(samples):
    s = sorted(samples)
    return statistics.median(s) * 1000, s[min(len(s) - 1, int(len(s) * 0.99))] * 1000


def timed(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bwrap_by_hand(ws, work):
    """bwrap with the options cofferd passes (seccomp left out: its filter is
    made in memory), run as root without the uid switch, with the root cofferd
    builds (bench/speed.py's: the system folders, one bind of a copy of /etc)."""
    from speed import etc_copy, minimal_root
    return ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--unshare-net", "--die-with-parent", "--new-session",
            "--uid", "65534", "--gid", "65534", "--hostname", "sandbox"] + minimal_root(
                etc_copy(work)) + ["--proc", "/proc", "--dev", "/dev",
            "--remount-ro", "/dev", "--bind", ws, "/tmp", "--remount-ro", "/", "--chdir", "/tmp",
            "--clearenv",
            "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp",
            "--", "/bin/sh", "-c", "true"]


def overhead(work, n):
    """The three sides one call each in turn, n rounds (the machine is shared:
    alternating keeps a burst of load from landing on one side only)."""
    ws = os.path.join(work, "byhand")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    argv = bwrap_by_hand(ws, work)
    subprocess.run(argv, check=True)
    s = Server(work)
    plain, hand, api = [], [], []
    try:
        tid = s.turn()
        s.run(tid, "true")
        c0 = s.cpu()
        for _ in range(n):
            plain += timed(lambda: subprocess.run(["sh", "-c", "true"], check=True), 1)
            hand += timed(lambda: subprocess.run(argv, check=True), 1)
            api += timed(lambda: s.run(tid, "true"), 1)
        overhead.cpu_ms = (s.cpu() - c0) * 1000 / n
    finally:
        s.stop()
    return [("plain `sh -c true` (fork/exec from Python)", stats(plain)),
            ("bwrap by hand, same options", stats(hand)),
            ("confined `true` over HTTP (POST .../calls)", stats(api))]


overhead.cpu_ms = None  # cofferd's own CPU over the rounds, per call (ms)


def overhead_ab(work, n, others):
    """bwrap by hand, this build's call and each build of `others`' call, one
    each in turn (the order rotating each round), n rounds: an A/B under the
    same load. Returns rows and each cofferd's own CPU a call (ms)."""
    ws = os.path.join(work, "byhand")
    os.makedirs(ws)
    os.chmod(ws, 0o777)
    argv = bwrap_by_hand(ws, work)
    subprocess.run(argv, check=True)
    servers, saved = [], Server.build
    try:
        for i, build in enumerate([saved] + others):
            Server.build = build
            servers.append(Server(os.path.join(work, "s%d" % i)))
    finally:
        Server.build = saved
    hand, times = [], [[] for _ in servers]
    try:
        turns = [s.turn() for s in servers]
        for s, t in zip(servers, turns):
            s.run(t, "true")
        cpu0 = [s.cpu() for s in servers]

        def side(k):
            if k == 0:
                return lambda: hand.extend(timed(lambda: subprocess.run(argv, check=True), 1))
            s, t = servers[k - 1], turns[k - 1]
            return lambda: times[k - 1].extend(timed(lambda: s.run(t, "true"), 1))
        sides = [side(k) for k in range(len(servers) + 1)]
        for i in range(n):
            for k in range(len(sides)):
                sides[(i + k) % len(sides)]()
        cpu = [(s.cpu() - c) * 1000 / n for s, c in zip(servers, cpu0)]
    finally:
        for s in servers:
            s.stop()
    names = ["this build"] + ["--against %s" % o for o in others]
    return ([("bwrap by hand, same options", stats(hand))] +
            [("confined `true` over HTTP, %s" % nm, stats(t)) for nm, t in zip(names, times)],
            list(zip(names, cpu)))


def measuring_cpu(work, mode, files, seconds=10):
    s = Server(work, "--scratch-mode", mode)
    try:
        tid = s.turn({"scratch": "2g", "turnDisk": "1g", "userDisk": "2g"})
        if files:
            r = s.run(tid, "mkdir d && cd d && seq 1 %d | xargs touch" % files,
                      timeoutSeconds=600)
            assert r["exitCode"] == 0 and not r.get("limit"), r
        c0, t0 = s.cpu(), time.perf_counter()
        s.run(tid, "sleep %d" % seconds)
        c1, t1 = s.cpu(), time.perf_counter()
        return (c1 - c0) / (t1 - t0)
    finally:
        s.stop()


def main():
    if "-h" in sys.argv or "--help" in sys.argv:  # usage only: no run, nothing written
        print(__doc__)
        return
    out = os.path.join(ROOT, "bench/results.md")
    n = 200
    args = sys.argv[1:]
    if "--out" in args:
        out = args[args.index("--out") + 1]
    if "--calls" in args:
        n = int(args[args.index("--calls") + 1])
    if "--build" in args:
        Server.build = args[args.index("--build") + 1]
    if "--overhead-only" in args and "--against" in args:  # an A/B, printed
        work = tempfile.mkdtemp(prefix="coffer-bench-turns-")
        try:
            rows, cpu = overhead_ab(os.path.join(work, "a"), n,
                                    args[args.index("--against") + 1].split(","))
            for name, (p50, p99) in rows:
                print("%-45s p50 %.2f ms  p99 %.2f ms  (%.2fx bwrap)" % (
                    name, p50, p99, p50 / rows[0][1][0]))
            for name, ms in cpu:
                print("cofferd CPU (its own), %-22s %.2f ms a call" % (name, ms))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    if "--overhead-only" in args:  # item 1 only, printed (not written)
        work = tempfile.mkdtemp(prefix="coffer-bench-turns-")
        try:
            for name, (p50, p99) in overhead(os.path.join(work, "a"), n):
                print("%-45s p50 %.2f ms  p99 %.2f ms" % (name, p50, p99))
            # utime+stime of cofferd itself (not bwrap, not sh) over all
            # rounds over the calls: at rest it does next to nothing else
            print("%-45s %.2f ms a call" % ("cofferd CPU (its own)", overhead.cpu_ms))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    work = tempfile.mkdtemp(prefix="coffer-bench-turns-")
    try:
        rows = overhead(os.path.join(work, "a"), n)
        cpu = {}
        for mode in ("kernel", "walk"):
            for files in (0, 100000):
                d = os.path.join(work, "%s-%d" % (mode, files))
                cpu[(mode, files)] = measuring_cpu(d, mode, files)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = rows[0][1][0]
    lines = ["## Turns (bench/turns_overhead.py)", "",
             "| %d calls of `true`, sides alternating | p50 ms | p99 ms | p50 / plain | p50 / bwrap by hand |" % n,
             "|---|---|---|---|---|"]
    for name, (p50, p99) in rows:
        lines.append("| %s | %.2f | %.2f | %.1fx | %.2fx |" % (name, p50, p99, p50 / base,
                                                            p50 / rows[1][1][0]))
    lines += ["", "| cofferd CPU while a call runs (`sleep 10`) | empty workspace | "
              "100,000 files | cost of the files |", "|---|---|---|---|"]
    for mode, label in (("kernel", "kernel way: tmpfs, statfs every 250 ms"),
                        ("walk", "measuring loop: walk every 250 ms")):
        e, f = cpu[(mode, 0)], cpu[(mode, 100000)]
        lines.append("| %s | %.1f ms/s | %.1f ms/s | %.1f ms/s |" % (
            label, e * 1000, f * 1000, (f - e) * 1000))
    lines += ["", "CPU is cofferd's own (utime+stime from /proc, children excluded) over "
              "the call, divided by its wall time. The plain anchor forks from Python; "
              "bwrap by hand runs as root without cofferd's uid switch, mount namespace "
              "and seccomp filter. One machine, one run, 2 shared cores.", ""]
    text = "\n".join(lines)
    write_section(out, "Turns (bench/turns_overhead.py)", text)
    print(text)


if __name__ == "__main__":
    main()
