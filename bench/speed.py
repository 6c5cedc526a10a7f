#!/usr/bin/env python3
"""Issue 13 parts 4 and 5, each side by side with its anchor in one run:

  grep      the agent grep tool over 20,000 files / 200 MB (needle in a few files, so
            every file is read), literal and regex, vs `rg` over the same files on disk
  call      a confined `true` over HTTP (POST /v1/turns/{id}/calls) vs the same
            bubblewrap command by hand with a minimal root
  readall   GET files?content=true of 1,000 files / 16 MB vs `tar c` of the same files
  readall-pg  the same on PostgreSQL + S3 (reported, not a goal; needs PostgreSQL, node)

Usage: bench/speed.py [--only grep,call,readall,readall-pg] [--runs N] [--work DIR] [--out FILE]
                      [--build DIR] (another build's cofferd, e.g. an older commit's)
Each figure is a median of N runs (default 7), alternating coffer and its anchor; beside
the wall time it gives the user+sys CPU time of each side (the machine is shared: CPU
time says more than wall time under load). --work keeps the fixtures in DIR for the next
run (they take a minute to build). Writes the "Speed" section of bench/results.md.
Needs build/cofferd, rg, bwrap; the call benchmark needs root."""

import json, os, resource, shutil, statistics, subprocess, sys, tempfile, time

from benchlib import ROOT, Cofferd, write_section
PKGS = subprocess.run(["make", "-s", "--no-print-directory", "pkgs"], cwd=ROOT,
                      capture_output=True, text=True, check=True).stdout.strip()
HZ = os.sysconf("SC_CLK_TCK")
BUILD = None  # --build


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def proc_cpu(pid, children=False):
    """user+sys CPU seconds of process `pid` (its threads; with `children`, also
    those of the children it has reaped: a confined call's bwrap and command)."""
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in parts[11:15 if children else 13]) / HZ


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Side:
    """Wall and CPU samples of one side."""

    def __init__(self, name):
        self.name, self.wall, self.cpu = name, [], []

    def run(self, fn, cpu):
        c0, t0 = cpu(), time.perf_counter()
        fn()
        self.wall.append(time.perf_counter() - t0)
        self.cpu.append(cpu() - c0)

    def ms(self):
        return statistics.median(self.wall) * 1e3

    def cpu_ms(self):
        """The mean: CPU time comes in clock ticks (10 ms), too coarse for a median
        of calls of a few ms."""
        return sum(self.cpu) / len(self.cpu) * 1e3


def row(label, c, a, anchor):
    return "| %s | %.2f | %.1f | %.2f | %.1f | %s | %.2fx | %.2fx |" % (
        label, c.ms(), c.cpu_ms(), a.ms(), a.cpu_ms(), anchor, c.ms() / a.ms(),
        c.cpu_ms() / a.cpu_ms() if a.cpu_ms() else float("nan"))


def populate_exe(work):
    exe = os.path.join(work, "populate")
    if not os.path.exists(exe):
        subprocess.run("cc -O2 -D_GNU_SOURCE -Iinclude -Isrc bench/populate.c "
                       "build/libcoffer.a $(pkg-config --libs %s) -lmagic -lpthread -lm -o %s"
                       % (PKGS, exe), shell=True, cwd=ROOT, check=True)
    return exe


def fixture(work, name, n, size):
    """(data dir, volume id, plain directory) of n files of size bytes."""
    data, tree = os.path.join(work, "data-" + name), os.path.join(work, "tree-" + name)
    idf = os.path.join(work, name + ".id")
    if not os.path.exists(idf):
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(tree, ignore_errors=True)
        pop = populate_exe(work)
        env = dict(os.environ, COFFER_BENCH_NOSYNC="1")
        out = subprocess.run([pop, "fill", data, name, str(n), str(size)], env=env,
                             check=True, capture_output=True, text=True).stdout
        subprocess.run([pop, "dir", tree, str(n), str(size)], check=True, capture_output=True)
        open(idf, "w").write(json.loads(out)["id"])
    return data, open(idf).read().strip(), tree


def bench_grep(work, runs):
    data, vol, tree = fixture(work, "grep", 20000, 10000)
    s = Cofferd(data, build=BUILD)
    try:
        s.call("PUT", "/v1/agents/bench", {"mounts": [
            {"volumeId": vol, "path": "/src", "mode": "ro"}]})
        tool = lambda **a: s.call("POST", "/v1/agents/bench/tools/grep", a)
        cases = [("literal", "file 12345 salt", ["-F"], 1),
                 ("regex", r"file 1234[0-9] salt \d+", [], 10)]
        rows = []
        for label, pat, flags, files in cases:
            got = tool(pattern=pat, path="/src", outputMode="count")
            assert got["filesMatched"] == files, got
            rg = ["rg", "-c"] + flags + [pat, tree]
            c, a = Side("coffer"), Side("rg")
            for _ in range(runs):
                c.run(lambda: tool(pattern=pat, path="/src", outputMode="count"),
                      lambda: proc_cpu(s.p.pid))
                a.run(lambda: subprocess.run(rg, stdout=subprocess.DEVNULL), child_cpu)
            rows.append(row("grep %s, 20,000 files / 200 MB" % label, c, a, "rg " +
                            " ".join(flags)))
        return rows
    finally:
        s.stop()


def bench_readall(work, runs):
    data, vol, tree = fixture(work, "readall", 1000, 16000)
    s = Cofferd(data, build=BUILD)
    return readall_rows(s, vol, tree, runs, "")


def bench_readall_pg(work, runs):
    """The same read-all on PostgreSQL + S3 (the tests' peers: a local cluster and
    s3rver). The fixture's 16,000-byte files are inline content, so they are read
    from PostgreSQL; the files are PUT over HTTP from the same tree."""
    _, _, tree = fixture(work, "readall", 1000, 16000)
    sys.path.insert(0, os.path.join(ROOT, "tests/blackbox"))
    import pgpeer, s3peer
    cluster, peer = pgpeer.Cluster(), s3peer.start()
    try:
        os.environ.update(peer["env"])
        data = os.path.join(work, "data-readall-pg")
        shutil.rmtree(data, ignore_errors=True)
        s = Cofferd(data, "--meta", cluster.new_database(), "--blobs", peer["url"],
                    build=BUILD)
        vol = s.call("POST", "/v1/volumes", {"name": "readall-pg"})["id"]
        c = s.conn()
        for dp, _, fns in os.walk(tree):
            for fn in fns:
                full = os.path.join(dp, fn)
                c.request("PUT", "/v1/volumes/%s/files/%s" % (vol, os.path.relpath(full, tree)),
                          body=open(full, "rb").read(),
                          headers={"Authorization": "Bearer " + s.key})
                r = c.getresponse()
                r.read()
                assert r.status < 300, r.status
        return readall_rows(s, vol, tree, runs, ", PostgreSQL + S3")
    finally:
        s3peer.stop(peer)
        cluster.stop()


def readall_rows(s, vol, tree, runs, what):
    try:
        url = "%s/v1/volumes/%s/files?content=true" % (s.url, vol)
        curl = ["curl", "-sf", "-o", "/dev/null", "-H", "Authorization: Bearer " + s.key, url]
        tar = "tar cf - -C '%s' . | cat > /dev/null" % tree
        subprocess.run(curl, check=True)
        c, a = Side("coffer"), Side("tar")
        for _ in range(runs):
            c.run(lambda: subprocess.run(curl, check=True),
                  lambda: proc_cpu(s.p.pid) + child_cpu())  # curl's too
            a.run(lambda: subprocess.run(tar, shell=True, check=True), child_cpu)
        return [row("read-all, 1,000 files / 16 MB%s (coffer: cofferd + curl)" % what, c, a,
                    "tar c \\| cat")]
    finally:
        s.stop()


def minimal_root():
    """The root cofferd builds for a call (src/turn/confine.c argv_root): the system
    folders read-only, the allowed part of /etc (its list read from confine.c, so the
    two stay the same), each as its own --ro-bind-try."""
    import re
    src = open(os.path.join(ROOT, "src/turn/confine.c")).read()
    allowed = re.findall(r'"([^"]+)"', src.split("etc_allowed[] = {", 1)[1].split("};", 1)[0])
    parts = re.findall(r'"([^"]+)"', src.split("etc_parts[] = {", 1)[1].split("};", 1)[0])
    args = []
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    args += ["--dir", "/etc"]
    for name in sorted(os.listdir("/etc")):
        if any(name.startswith(a[:-1]) if a.endswith("*") else name == a for a in allowed):
            args += ["--ro-bind-try", "/etc/" + name, "/etc/" + name]
    for p in parts:
        if os.path.exists("/etc/" + p):
            args += ["--ro-bind-try", "/etc/" + p, "/etc/" + p]
    return args


def bench_call(work, runs):
    if os.geteuid() != 0:
        return ["| confined call | skipped: needs root (as cofferd's sandbox does here) |"]
    s = Cofferd(os.path.join(work, "data-call"), build=BUILD, timeout=600)
    try:
        s.call("PUT", "/v1/agents/callbench", {"sandbox": {}})
        tid = s.call("POST", "/v1/turns", {"agent": "callbench", "user": "u",
                                           "deadlineSeconds": 3600})["id"]
        run = lambda: s.call("POST", "/v1/turns/%s/calls" % tid, {"command": "true"})
        assert run()["exitCode"] == 0
        ws = os.path.join(work, "byhand")
        os.makedirs(ws, exist_ok=True)
        os.chmod(ws, 0o777)
        # cofferd's bwrap command (confine.c argv_build, as root) but for its seccomp
        # filter and info fd, and the mount namespace, uid, IPC limits and cgroups
        # cofferd's child sets up before it
        argv = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
                "--die-with-parent", "--new-session", "--uid", "65534", "--gid", "65534",
                "--hostname", "sandbox"] + minimal_root() + [
                    "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
                    "--bind", ws, "/tmp", "--remount-ro", "/", "--chdir", "/tmp",
                    "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
                    "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
                    "--setenv", "LANG", "C.UTF-8", "--", "/bin/sh", "-c", "true"]
        subprocess.run(argv, check=True)
        c, a = Side("coffer"), Side("bwrap")
        for _ in range(runs * 5):
            c.run(run, lambda: proc_cpu(s.p.pid, True))
            a.run(lambda: subprocess.run(argv, check=True), child_cpu)
        return [row("confined `true` (coffer: cofferd + its children)", c, a,
                    "bwrap by hand, the same root")]
    finally:
        s.stop()


def main():
    runs = int(arg("--runs", "7"))
    only = arg("--only", "grep,call,readall").split(",")
    out = arg("--out", os.path.join(ROOT, "bench/results.md"))
    keep = arg("--work", None)
    global BUILD
    BUILD = arg("--build", None)
    work = keep or tempfile.mkdtemp(prefix="coffer-bench-speed-")
    os.makedirs(work, exist_ok=True)
    load0 = open("/proc/loadavg").read().split()[:3]
    rows = []
    try:
        for name, fn in (("grep", bench_grep), ("call", bench_call),
                         ("readall", bench_readall), ("readall-pg", bench_readall_pg)):
            if name in only:
                rows += fn(work, runs)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    t = ["## Speed: grep, confined call, read-all (bench/speed.py)", "",
         "| | coffer ms | coffer CPU ms | anchor ms | anchor CPU ms | anchor | "
         "time ratio | CPU ratio |", "|---|---|---|---|---|---|---|---|"] + rows
    t += ["", "Wall times: medians; CPU times: means. %d runs (calls: %d), coffer and anchor alternating, warm page "
          "cache, %d cores shared with 8 other engineers' builds and tests (load average "
          "%s at start, %s at end): wall times under that load are unreliable, CPU times "
          "(user+sys) less so." % (runs, runs * 5, os.cpu_count(), " ".join(load0),
                                   " ".join(load1)), ""]
    text = "\n".join(t)
    if set(only) == {"grep", "call", "readall"} and not BUILD:
        write_section(out, "Speed: grep, confined call, read-all (bench/speed.py)", text)
    print(text)


if __name__ == "__main__":
    main()
