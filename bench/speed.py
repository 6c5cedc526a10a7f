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


class CpuGroup:
    """A cgroup that counts the CPU time of everything in it, in ns: cpuacct (v1) or
    cpu.stat (v2). A confined call's sandbox (bwrap's pid 1, which does the mounts)
    is not reaped by the bwrap we wait for, so RUSAGE_CHILDREN never counts it
    (bwrap --unshare-pid of a 2 s busy loop: 0.00 s user); a cgroup does."""

    def __init__(self, name):
        v1 = "/sys/fs/cgroup/cpuacct"
        if os.path.isdir(v1):
            self.path, self.file = os.path.join(v1, name), "cpuacct.usage"
        else:
            self.path, self.file = os.path.join("/sys/fs/cgroup", name), "cpu.stat"
        os.makedirs(self.path, exist_ok=True)

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def join(self):
        """For preexec_fn: the child puts itself in."""
        self.add(0)

    def cpu(self):
        with open(os.path.join(self.path, self.file)) as f:
            text = f.read()
        if self.file == "cpuacct.usage":
            return int(text) / 1e9
        return int(text.split("usage_usec ", 1)[1].split()[0]) / 1e6

    def drop(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def etc_allowed():
    """/etc names a call sees (src/turn/etcview.c's lists, read from it, so the two
    stay the same): (top-level names, parts such as ssl/certs)."""
    import re
    src = open(os.path.join(ROOT, "src/turn/etcview.c")).read()
    allowed = re.findall(r'"([^"]+)"', src.split("etc_allowed[] = {", 1)[1].split("};", 1)[0])
    parts = re.findall(r'"([^"]+)"', src.split("etc_parts[] = {", 1)[1].split("};", 1)[0])
    names = [n for n in sorted(os.listdir("/etc")) if any(
        n.startswith(a[:-1]) if a.endswith("*") else n == a for a in allowed)]
    return names, [p for p in parts if os.path.exists("/etc/" + p)]


def system_dirs():
    args = []
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    return args


def minimal_root(etc_copy=None):
    """The root cofferd builds for a call (src/turn/confine.c argv_root): the system
    folders read-only and the allowed part of /etc: with `etc_copy` one bind of that
    copy of it (as cofferd does now), else each name as its own --ro-bind-try (as it
    did before)."""
    args = system_dirs()
    if etc_copy:
        return args + ["--ro-bind", etc_copy, "/etc"]
    names, parts = etc_allowed()
    args += ["--dir", "/etc"]
    for name in names + parts:
        args += ["--ro-bind-try", "/etc/" + name, "/etc/" + name]
    return args


def etc_copy(work):
    """A copy of the allowed part of /etc, as cofferd makes (links kept, a link at
    the top followed)."""
    dst = os.path.join(work, "etc-copy")
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    names, parts = etc_allowed()
    for n in names + parts:
        src, to = "/etc/" + n, os.path.join(dst, n)
        os.makedirs(os.path.dirname(to), exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, to, symlinks=True)
        else:
            shutil.copy2(src, to)
    return dst


def pruned_ns(ws, etc, group):
    """For preexec_fn (as root, x86-64): what cofferd's child does before bwrap
    (src/turn/confine_root.c): a mount namespace pivoted onto a tmpfs with only what
    bwrap binds from, so bwrap by hand reads as short a mountinfo as a call's. Its
    system calls count in `group` too."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18

    def ck(rc):
        if rc != 0:
            raise OSError(ctypes.get_errno(), "pruned namespace")

    def bind(src, name, rec=MS_REC):
        os.mkdir("/mnt/" + name)
        ck(libc.mount(src.encode(), ("/mnt/" + name).encode(), None, MS_BIND | rec, None))

    def fn():
        group.join()
        ck(libc.unshare(0x00020000))  # CLONE_NEWNS
        ck(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
        ck(libc.mount(b"tmpfs", b"/mnt", b"tmpfs", 0, b"size=64k,mode=0755"))
        for d in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            if os.path.islink("/" + d):
                os.symlink(os.readlink("/" + d), "/mnt/" + d)
            elif os.path.isdir("/" + d):
                bind("/" + d, d)
        bind(etc, "etc", 0)
        bind("/proc", "proc")
        bind("/dev", "dev")
        bind(os.path.join(ws, "w"), "tmp", 0)
        bind(os.path.join(ws, "u"), "u", 0)
        os.mkdir("/mnt/.old")
        ck(libc.syscall(155, b"/mnt", b"/mnt/.old"))  # pivot_root
        os.chdir("/")
        ck(libc.umount2(b"/.old", 2))  # MNT_DETACH
    return fn


def bench_call(work, runs):
    if os.geteuid() != 0:
        return ["| confined call | skipped: needs root (as cofferd's sandbox does here) |"]
    s = Cofferd(os.path.join(work, "data-call"), build=BUILD, timeout=600)
    gc, ga, gb, gp = (CpuGroup("coffer-bench-" + x) for x in "cabp")
    try:
        gc.add(s.p.pid)  # its threads, and every process it starts
        s.call("PUT", "/v1/agents/callbench", {"sandbox": {}})
        tid = s.call("POST", "/v1/turns", {"agent": "callbench", "user": "u",
                                           "deadlineSeconds": 3600})["id"]
        run = lambda: s.call("POST", "/v1/turns/%s/calls" % tid, {"command": "true"})
        assert run()["exitCode"] == 0
        ws = os.path.join(work, "byhand")
        for d in ("", "w", "u"):
            os.makedirs(os.path.join(ws, d), exist_ok=True)
            os.chmod(os.path.join(ws, d), 0o777)
        # cofferd's bwrap command (confine.c argv_build, as root) but for its seccomp
        # filter and info fd, and the mount namespace, uid, IPC limits and cgroups
        # cofferd's child sets up before it; the agent's files (FUSE views at
        # /workspace and /user) stand in as two plain folders bound there
        def argv(root):
            return ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc",
                    "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
                    "--die-with-parent", "--new-session", "--uid", "65534", "--gid",
                    "65534", "--hostname", "sandbox"] + root + [
                        "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
                        "--bind", os.path.join(ws, "w"), "/tmp",
                        "--bind", os.path.join(ws, "w"), "/workspace",
                        "--bind", os.path.join(ws, "u"), "/user",
                        "--remount-ro", "/", "--chdir", "/tmp",
                        "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
                        "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
                        "--setenv", "LANG", "C.UTF-8", "--", "/bin/sh", "-c", "true"]
        etc = etc_copy(work)
        one, many = argv(minimal_root(etc)), argv(minimal_root())
        # the same from the pruned namespace: its paths are those of its root
        pruned = [x for x in argv(minimal_root("/etc"))]
        for i, x in enumerate(pruned):
            if x == os.path.join(ws, "w"):
                pruned[i] = "/tmp"
            elif x == os.path.join(ws, "u"):
                pruned[i] = "/u"
        for a in (one, many):
            subprocess.run(a, check=True)
        subprocess.run(pruned, check=True, preexec_fn=pruned_ns(ws, etc, gp))
        c, a, b, p = Side("coffer"), Side("bwrap"), Side("bwrap39"), Side("pruned")
        for _ in range(runs * 5):
            c.run(run, gc.cpu)
            a.run(lambda: subprocess.run(one, check=True, preexec_fn=ga.join), ga.cpu)
            b.run(lambda: subprocess.run(many, check=True, preexec_fn=gb.join), gb.cpu)
            p.run(lambda: subprocess.run(pruned, check=True,
                                         preexec_fn=pruned_ns(ws, etc, gp)), gp.cpu)
        for x in (c, a, b, p):
            x.cpu_ms = (lambda x: lambda: statistics.median(x.cpu) * 1e3)(x)
        return [row("confined `true` (coffer: cofferd, its threads and children)", c, a,
                    "bwrap by hand, the same root: /etc one bind of a copy"),
                row("the same, against the root before", c, b,
                    "bwrap by hand, /etc as 39 binds"),
                row("the same, against bwrap by hand from a namespace like the call's", c,
                    p, "bwrap by hand, the same root, after unshare+pivot as cofferd's child")]
    finally:
        s.stop()
        for g in (gc, ga, gb, gp):
            g.drop()


def main():
    if "-h" in sys.argv or "--help" in sys.argv:  # usage only: no run, nothing written
        print(__doc__)
        return
    runs = int(arg("--runs", "7"))
    only = arg("--only", "grep,call,readall").split(",")
    out = arg("--out", os.path.join(ROOT, "bench/results.md"))
    keep = arg("--work", None)
    global BUILD
    BUILD = arg("--build", None)
    work = keep or tempfile.mkdtemp(prefix="coffer-bench-speed-")
    os.makedirs(work, exist_ok=True)
    load0 = open("/proc/loadavg").read().split()[:3]
    mounts0 = len(open("/proc/self/mountinfo").readlines())
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
    mounts1 = len(open("/proc/self/mountinfo").readlines())
    t = ["## Speed: grep, confined call, read-all (bench/speed.py)", "",
         "| | coffer ms | coffer CPU ms | anchor ms | anchor CPU ms | anchor | "
         "time ratio | CPU ratio |", "|---|---|---|---|---|---|---|---|"] + rows
    t += ["", "Wall times: medians; CPU times: means (the call's: medians, counted by a cgroup). %d runs (calls: %d), coffer and anchor alternating, warm page "
          "cache, %d cores shared with 8 other engineers' builds and tests (load average "
          "%s at start, %s at end): wall times under that load are unreliable, CPU times "
          "(user+sys) less so. The host had %d mounts at start, %d at end (bwrap by hand reads "
          "them all after each bind; a call's bwrap starts in a namespace of its own)."
          % (runs, runs * 5, os.cpu_count(), " ".join(load0), " ".join(load1), mounts0,
             mounts1), ""]
    text = "\n".join(t)
    if set(only) == {"grep", "call", "readall"} and not BUILD:
        write_section(out, "Speed: grep, confined call, read-all (bench/speed.py)", text)
    print(text)


if __name__ == "__main__":
    main()
