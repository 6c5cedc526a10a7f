#!/usr/bin/env python3
"""What agents do on their files (issue 38), side by side in one run.

Part 1, in a turn's confined calls: each step is one call, timed inside the call
(`date +%s%N` around the command), in the agent's read-write `/workspace` view
against the same command on the turn's own tmpfs workspace (`/tmp`), rounds
alternating which side goes first; medians. A view's writes are committed when
the call ends: "+commit" is the call's wall time (as its HTTP client sees it)
less the time inside, less the same for the tmpfs side (so what remains is what
the commit and the view's unmount add).

Part 2, on the host: the same steps in a folder of `coffer mount` (a FUSE mount of
a volume, `--data`: in process) against a tmpfs folder, and as reference points
the libfuse passthrough example (passthrough_ll over a tmpfs folder: the FUSE
floor), rclone mount (Debian's rclone over a local tmpfs folder, --vfs-cache-mode
writes) and s3fs over the project's S3 test peer (s3rver, tests/s3); wall time of
each command.

The steps (fixtures made on the host, carried in as tar files):
  clone   `git clone --no-hardlinks` of a local 5,000-file repository (with 20
          relative and 5 absolute symbolic links)
  status  `git status --porcelain` after 50 files were edited (by an earlier call)
  diff    `git diff --stat`
  grep    `grep -r` over the clone
  find    `find -type f | xargs stat`
  tar     `tar x` of a 10,000-file node_modules-like tree (packages 6 folders deep,
          `.bin` relative links and absolute links)
  make    `make -j2` of a 100-file C project (copied in by an earlier call)
  rm      `rm -rf` of the tree (committed by an earlier call)

Usage: bench/agent_workloads.py [--rounds N] [--ref-rounds N] [--host-only]
       [--calls-only] [--refs tmpfs,coffer,passthrough,rclone,s3fs]
       [--steps clone,status,...] [--build DIR] [--out FILE]
--steps runs those steps only, in the order above (a step works on what the
earlier ones left: status, diff, grep and find need clone, rm needs tar).
Writes the "Agent workloads" section of bench/results.md (or --out). Needs
build/cofferd and build/coffer, root (or FUSE for this user), bwrap, git, make,
cc; part 2's references need libfuse3-dev's examples, rclone, s3fs and node
(a reference that cannot start is reported as such)."""

import argparse, io, json, os, random, re, shlex, shutil, signal, statistics, subprocess
import sys, tarfile
import tempfile, time

from benchlib import ROOT, Cofferd, run_stamp, write_section

STEPS = ["clone", "status", "diff", "grep", "find", "tar", "make", "rm"]
GOAL = {"clone": 3, "status": 1.5, "diff": 1.5, "grep": 1.5, "find": 1.5, "tar": 3,
        "make": 1.5, "rm": 3}
STEP_TIMEOUT = 600


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


# ---- fixtures ---------------------------------------------------------------

def words(rng, n):
    vocab = ["alpha", "beta", "gamma", "delta", "needle", "const", "return", "value",
             "module", "export", "function", "import", "static", "struct", "buffer"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def make_repo(work, rng, files=5000):
    """A git repository of `files` text files in 100 folders two deep, one commit,
    with 20 relative and 5 absolute links; returns its tar file."""
    src = os.path.join(work, "src")
    for i in range(files):
        d = os.path.join(src, "d%02d" % (i % 10), "e%02d" % (i // 10 % 10))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
            f.write("\n".join(words(rng, 12) for _ in range(rng.randint(4, 40))) + "\n")
    os.makedirs(os.path.join(src, "links"))
    for i in range(20):
        os.symlink("../d%02d/e00/f%05d.txt" % (i % 10, i % 10),
                   os.path.join(src, "links", "rel%02d" % i))
    for i in range(5):
        os.symlink("/etc/hostname", os.path.join(src, "links", "abs%02d" % i))
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x")
    sh(["git", "init", "-q", src])
    sh(["git", "-C", src, "add", "-A"], env=env)
    sh(["git", "-C", src, "commit", "-q", "-m", "fixture"], env=env)
    out = os.path.join(work, "repo.tar")
    with tarfile.open(out, "w") as t:
        t.add(src, arcname="src")
    return src, out


def make_tree(work, rng, files=10000):
    """A node_modules-like tree: 200 packages of 50 files, 6 folders deep at the
    bottom, a `.bin` of relative links and a few absolute links; its tar file."""
    out = os.path.join(work, "nm.tar")
    with tarfile.open(out, "w") as t:
        def add(name, data=None, link=None):
            ti = tarfile.TarInfo("node_modules/" + name)
            ti.mtime = 1700000000
            if link is not None:
                ti.type, ti.linkname = tarfile.SYMTYPE, link
                t.addfile(ti)
            else:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
        for p in range(files // 50):
            pkg = "pkg%03d" % p
            for k in range(50):
                sub = ["", "lib/", "lib/a/", "lib/a/b/", "lib/a/b/c/", "lib/a/b/c/d/"][k % 6]
                body = ("// %s\nmodule.exports = '%s';\n" % (pkg, words(rng, rng.randint(20, 200)))
                        ).encode()
                add("%s/%sf%02d.js" % (pkg, sub, k), body)
            add(".bin/cmd%03d" % p, link="../%s/f00.js" % pkg)
            if p % 40 == 0:
                add("%s/abs" % pkg, link="/usr/bin/env")
    return out


def make_project(work, files=100):
    """A C project: `files` .c files and a Makefile linking them; its tar file."""
    out = os.path.join(work, "proj.tar")
    with tarfile.open(out, "w") as t:
        def add(name, text):
            data = text.encode()
            ti = tarfile.TarInfo("proj/" + name)
            ti.size, ti.mtime = len(data), 1700000000
            t.addfile(ti, io.BytesIO(data))
        for i in range(files):
            add("f%03d.c" % i, "#include <string.h>\nint f%03d(const char *s) {\n"
                "\tint n = 0;\n\tfor (int i = 0; i < 1000; i++) n += (int)strlen(s) * i;\n"
                "\treturn n;\n}\n" % i)
        decl = "".join("int f%03d(const char *);\n" % i for i in range(files))
        calls = "".join("\tn += f%03d(\"x\");\n" % i for i in range(files))
        add("main.c", decl + "int main(void) {\n\tint n = 0;\n" + calls + "\treturn n & 1;\n}\n")
        objs = " ".join("f%03d.o" % i for i in range(files)) + " main.o"
        add("Makefile", "prog: %s\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O1 -c -o $@ $<\n" % objs)
    return out


# ---- the steps, as shell commands on a base folder --------------------------

def step_cmds(base, fx, srcrepo):
    """For each step: (a setup run before, as its own call or None; what runs
    untimed just before the timed command, in its call; the timed command).
    A view keeps files, not empty folders: a folder made by an earlier call and
    left empty is gone, so the folders a step writes into are made in its call."""
    r = base + "/repo"
    return {
        "clone": (None, "mkdir -p " + base, "git clone -q --no-hardlinks %s %s" % (srcrepo, r)),
        "status": ("cd %s && git ls-files | grep '^d' | head -50 | while read f; do "
                   "echo edit >> \"$f\"; done" % r, None, "git -C %s status --porcelain" % r),
        "diff": (None, None, "git -C %s diff --stat" % r),
        "grep": (None, None, "grep -r -c needle %s" % r),
        "find": (None, None, "find %s -type f | xargs stat" % r),
        "tar": (None, "mkdir -p %s/nm" % base, "tar xf %s/nm.tar -C %s/nm" % (fx, base)),
        "make": ("mkdir -p %s && tar xf %s/proj.tar -C %s" % (base, fx, base), None,
                 "make -s -j2 -C %s/proj" % base),
        "rm": (None, None, "rm -rf %s/nm" % base),
    }


def timed(cmd, pre=None, err="/tmp/.aw-err"):
    """A shell line that runs pre, then cmd (its output dropped) and prints cmd's
    microseconds; exit 97 if it failed. The same line times every side, in a call
    and on the host."""
    return ("%s" % (pre + " && " if pre else "")) + ("s=$(date +%%s%%N); ( %s ) >/dev/null 2>%s || { cat %s >&2; "
            "exit 97; }; e=$(date +%%s%%N); echo $(( (e-s)/1000 ))" % (cmd, err, err))


def strace_wrap(cmd, out):
    """cmd under `strace -c -f` (its summary to out): the syscalls a step makes
    and the time the kernel spent in each (profiles only: strace slows it)."""
    return "strace -c -f -o %s sh -c %s" % (out, shlex.quote(cmd))


# ---- the FUSE floor and the profiles --------------------------------------

PT_EX = "/usr/share/doc/libfuse3-dev/examples"
# The view caches entries, attributes and absences for an hour (src/view/ops.c
# op_init: a view at a seq changes only through its own writes); the floor gets
# the same, so it is FUSE's cost and not passthrough_ll's default of 1 s.
PT_OPTS = ["-o", "timeout=3600"]


def passthrough_exe(work):
    """libfuse's passthrough_ll example, built once into work."""
    exe = os.path.join(work, "passthrough_ll")
    if not os.path.exists(exe):
        src = os.path.join(PT_EX, "passthrough_ll.c")
        if not os.path.exists(src):
            raise RuntimeError("no %s (libfuse3-dev)" % src)
        flags = sh(["pkg-config", "--cflags", "--libs", "fuse3"]).split()
        sh(["cc", "-O2", "-Wall", "-I" + PT_EX, src, "-o", exe] + flags)
    return exe


class Floor:
    """passthrough_ll over a tmpfs folder, mounted afresh for each command.
    passthrough_ll keeps an O_PATH descriptor for every inode the kernel holds,
    until the kernel forgets it; this machine's hard limit is 20,000 open files
    (fs.nr_open cannot be reached from here), which one round's clone plus the
    10,000-file tree pass. A mount a command drops every inode at the unmount, and
    it is what a call's view is too: a new mount (kept only after a call that
    wrote nothing, and here every step follows one that wrote), cold caches."""

    def __init__(self, work):
        self.exe = passthrough_exe(work)
        self.src = tempfile.mkdtemp(prefix="aw-floor-src-", dir="/dev/shm")
        self.mnt = tempfile.mkdtemp(prefix="aw-floor-", dir=work)
        self.p = None

    def mount(self):
        self.p = subprocess.Popen([self.exe, "-f", "-o", "source=" + self.src] + PT_OPTS +
                                  [self.mnt], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, preexec_fn=many_fds)
        fuse_wait(self.mnt, "passthrough_ll", self.p)
        return self.mnt

    def umount(self):
        if subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True).returncode:
            unmount(self.mnt)  # busy: lazily
        try:
            self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.p = None

    def close(self):
        if self.p:
            self.umount()
        shutil.rmtree(self.src, ignore_errors=True)


class Trace:
    """`perf record` of the kernel's FUSE tracepoints (fuse_request_send and
    fuse_request_end, all CPUs) while a step runs: every request the step's mount
    got, its opcode, and its round trip (queued to answered: the wait for a server
    thread, the handler, the reply). Grouped by connection (the mount's device);
    the step's mount is the one with the most requests. And, if pid, `perf record
    -g` of that server process. Both slow the step (the tracepoints a little, -g of
    cofferd several times over): profile runs only."""

    def __init__(self, out, pid=None, strace_pid=None):
        self.out = out
        self.ps = [subprocess.Popen(["perf", "record", "-q", "-a", "-e", "fuse:fuse_request_send",
                                     "-e", "fuse:fuse_request_end", "-o", out + ".fuse.data"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        if pid:
            self.ps.append(subprocess.Popen(["perf", "record", "-q", "-g", "-p", str(pid),
                                             "-o", out + ".cpu.data"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if strace_pid:  # the server's own syscalls (all its threads), counted
            self.ps.append(subprocess.Popen(["strace", "-c", "-f", "-p", str(strace_pid),
                                             "-o", out + ".server.strace"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)  # perf's start: its buffers mapped before the step

    def stop(self, dev=None):
        for p in self.ps:
            p.send_signal(signal.SIGINT)
        for p in self.ps:
            p.wait(120)
        return fuse_summary(self.out + ".fuse.data", dev)


OPS = {1: "LOOKUP", 2: "FORGET", 3: "GETATTR", 4: "SETATTR", 5: "READLINK", 6: "SYMLINK",
       9: "MKDIR", 10: "UNLINK", 11: "RMDIR", 12: "RENAME", 14: "OPEN", 15: "READ",
       16: "WRITE", 18: "RELEASE", 20: "FSYNC", 22: "GETXATTR", 25: "FLUSH", 27: "OPENDIR",
       28: "READDIR", 29: "RELEASEDIR", 34: "ACCESS", 35: "CREATE", 42: "BATCH_FORGET",
       44: "READDIRPLUS", 45: "RENAME2", 46: "LSEEK", 52: "STATX"}


def fuse_summary(data, dev=None):
    """{"n": requests, "busy_ms": time with at least one request out, "sum_ms":
    their round trips added, "ops": {opcode: [n, sum ms]}} of connection dev (the
    mount's st_dev: FUSE's are anonymous, major 0, so the kernel's dev_t and the
    stat's are the same number), or else the busiest one, in a perf.data of the
    FUSE tracepoints (other mounts on the machine are traced too)."""
    txt = subprocess.run(["perf", "script", "-i", data, "-F", "time,event,trace"],
                         capture_output=True, text=True).stdout
    sent, conns = {}, {}
    rs = re.compile(r"([\d.]+):\s+fuse:fuse_request_send:\s+connection (\d+) req (\d+) opcode (\d+)")
    re_ = re.compile(r"([\d.]+):\s+fuse:fuse_request_end:\s+connection (\d+) req (\d+)")
    for line in txt.splitlines():
        m = rs.search(line)
        if m:
            sent[(m.group(2), m.group(3))] = (float(m.group(1)), int(m.group(4)))
            continue
        m = re_.search(line)
        if m and (m.group(2), m.group(3)) in sent:
            t0, op = sent.pop((m.group(2), m.group(3)))
            conns.setdefault(m.group(2), []).append((t0, float(m.group(1)), op))
    if not conns:
        return None
    reqs = conns.get(str(dev)) if dev is not None else max(conns.values(), key=len)
    if not reqs:
        return None
    ops = {}
    for t0, t1, op in reqs:
        o = ops.setdefault(OPS.get(op, str(op)), [0, 0.0])
        o[0] += 1
        o[1] += (t1 - t0) * 1000
    busy, end = 0.0, None
    for t0, t1, _ in sorted(reqs):
        if end is None or t0 > end:
            busy += t1 - t0
            end = t1
        elif t1 > end:
            busy += t1 - end
            end = t1
    return {"n": len(reqs), "busy_ms": busy * 1000,
            "sum_ms": sum((t1 - t0) for t0, t1, _ in reqs) * 1000,
            "span_ms": (max(t for _, t, _ in reqs) - min(t for t, _, _ in reqs)) * 1000,
            "first": min(t for t, _, _ in reqs), "last": max(t for _, t, _ in reqs),
            "conn": dev if dev is not None else max(conns, key=lambda k: len(conns[k])),
            "ops": {k: [v[0], round(v[1], 1)] for k, v in sorted(ops.items(),
                                                                  key=lambda kv: -kv[1][1])}}


# ---- part 1: confined calls, and the floor beside them ----------------------

def part_calls(work, rounds, repo_tar, nm_tar, proj_tar, build=None, floor=True,
               profile=None, hostfx=None, cpu=None):
    """{side: {step: {"in": [ms], "wall": [ms], "prof": [...]}}}: the view and the
    call's tmpfs in confined calls; with floor, on the host in the same rounds,
    passthrough_ll (a mount a command) and a tmpfs folder, by the same timed line.
    profile (a folder): the FUSE sides' steps traced (Trace), the view's counted
    (COFFER_VIEW_STATS) and the host tmpfs side's steps under strace -c -f (a
    call's sandbox refuses ptrace); cpu "perf": and perf -g of the FUSE server (cofferd,
    passthrough_ll), which slows the view's steps several times over; or
    "strace": strace -c -f of that server (its syscalls by kind)."""
    data = os.path.join(work, "data")
    os.makedirs(data)
    if profile:
        os.makedirs(profile, exist_ok=True)
        os.environ["COFFER_VIEW_STATS"] = os.path.join(profile, "view-stats.txt")
    s = Cofferd(data, build=build)
    fl = Floor(work) if floor else None
    hostdir = tempfile.mkdtemp(prefix="aw-host-", dir="/dev/shm") if floor else None
    try:
        fx = s.call("POST", "/v1/volumes", {"name": "aw-fx"})["id"]
        c = s.conn(600)
        for p in (repo_tar, nm_tar, proj_tar):
            with open(p, "rb") as f:
                c.request("PUT", "/v1/volumes/%s/files/%s" % (fx, os.path.basename(p)),
                          body=f, headers={"Authorization": "Bearer " + s.key,
                                           "Content-Type": "application/x-tar",
                                           "Content-Length": str(os.path.getsize(p))})
                r = c.getresponse()
                r.read()
                if r.status >= 300:
                    raise RuntimeError("fixture PUT: %d" % r.status)
        aid = "aw-%d" % time.monotonic_ns()
        s.call("PUT", "/v1/agents/" + aid, {
            "mounts": [{"workspace": True}, {"volumeId": fx, "path": "/fx", "mode": "ro"}],
            "sandbox": {"scratch": "4g", "turnDisk": "4g", "userDisk": "4g",
                        "memory": "2g", "processes": 1024}})
        tid = s.call("POST", "/v1/turns", {"agent": aid, "user": "u",
                                          "deadlineSeconds": 7200})["id"]

        def call(cmd):
            t0 = time.perf_counter()
            out = s.call("POST", "/v1/turns/%s/calls" % tid,
                         {"command": cmd, "timeoutSeconds": STEP_TIMEOUT})
            wall = (time.perf_counter() - t0) * 1000
            if out.get("exitCode") != 0:
                raise RuntimeError("call %r: exit %s: %s" % (cmd[:120], out.get("exitCode"),
                                                             (out.get("stderr") or "")[-800:]))
            return out["stdout"], wall

        def host(cmd):
            t0 = time.perf_counter()
            p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True,
                               timeout=STEP_TIMEOUT)
            wall = (time.perf_counter() - t0) * 1000
            if p.returncode:
                raise RuntimeError("host %r: exit %d: %s" % (cmd[:120], p.returncode,
                                                             p.stderr[-800:]))
            return p.stdout, wall

        call("tar xf /fx/repo.tar -C /tmp")  # the source repository, on tmpfs
        sides = ["view", "tmpfs"] + (["floor", "host"] if floor else [])
        res = {side: {st: {"in": [], "wall": [], "prof": []} for st in STEPS} for side in sides}
        err = os.path.join(work, ".aw-err")
        for rnd in range(rounds):
            order = sides[rnd % len(sides):] + sides[:rnd % len(sides)]
            for st in STEPS:
                for side in order:
                    if side == "view":
                        base, fxd, src, run = "/workspace/r%d" % rnd, "/fx", "/tmp/src", call
                    elif side == "tmpfs":
                        base, fxd, src, run = "/tmp/w%d" % rnd, "/fx", "/tmp/src", call
                    else:
                        base = ((fl.mnt if side == "floor" else hostdir) + "/r%d" % rnd)
                        fxd, src, run = hostfx, hostfx + "/src", host
                    setup, pre, cmd = step_cmds(base, fxd, src)[st]
                    tag = "%s-%s-r%d" % (st, side, rnd)
                    if setup:
                        if side == "floor":
                            fl.mount()
                        try:
                            run(setup)
                        finally:
                            if side == "floor":
                                fl.umount()
                    if profile and side == "host":
                        # on the host's tmpfs only: a call's sandbox refuses ptrace (strace:
                        # PTRACE_TRACEME: Operation not permitted), and strace would slow the
                        # floor's step under its trace; the command's syscalls are the same
                        cmd = strace_wrap(cmd, os.path.join(profile, tag + ".strace"))
                    if side == "floor":
                        fl.mount()
                    tr = None
                    if profile and side in ("view", "floor"):
                        server = s.p.pid if side == "view" else fl.p.pid
                        tr = Trace(os.path.join(profile, tag), server if cpu == "perf" else None,
                                   server if cpu == "strace" else None)
                    line = timed(cmd, pre, "/tmp/.aw-err" if run is call else err)
                    if tr and side == "view":  # its mount's device, to pick its requests
                        line = "stat -c 'dev %d' /workspace && " + line
                    dev = os.stat(fl.mnt).st_dev if tr and side == "floor" else None
                    out = ""
                    try:
                        out, wall = run(line)
                    finally:
                        if tr and side == "view":
                            m = re.search(r"^dev (\d+)$", out, re.M)
                            dev = int(m.group(1)) if m else None
                        summ = tr.stop(dev) if tr else None
                        if side == "floor":
                            fl.umount()
                    res[side][st]["in"].append(int(out.split()[-1]) / 1000)
                    res[side][st]["wall"].append(wall)
                    if profile:
                        res[side][st]["prof"].append(summ)
                        if summ:
                            with open(os.path.join(profile, tag + ".fuse.json"), "w") as f:
                                json.dump(summ, f, indent=1)
                        print("%s: %.1f ms%s" % (tag, res[side][st]["in"][-1],
                                                 "" if not summ else
                                                 " fuse %d req, busy %.1f ms, sum %.1f ms"
                                                 % (summ["n"], summ["busy_ms"], summ["sum_ms"])),
                              flush=True)
            for side in order:  # the round's files go, so the next starts alike
                if side in ("view", "tmpfs"):
                    call("rm -rf " + (("/workspace/r%d" if side == "view" else "/tmp/w%d") % rnd))
                elif side == "floor":
                    shutil.rmtree(os.path.join(fl.src, "r%d" % rnd), ignore_errors=True)
                else:
                    shutil.rmtree(os.path.join(hostdir, "r%d" % rnd), ignore_errors=True)
        return res
    finally:
        s.stop()
        if fl:
            fl.close()
        if hostdir:
            shutil.rmtree(hostdir, ignore_errors=True)


# ---- part 2: host folders --------------------------------------------------

class Target:
    """A folder on the host to run the steps in; start() returns it, stop() ends
    whatever serves it. per_command: served afresh for each command (between()
    remounts); skip: {step: why it is not run}."""
    name = ""
    per_command = False
    skip = {}

    def start(self, work, build):
        raise NotImplementedError

    def between(self):
        pass

    def stop(self):
        pass


def fuse_wait(mnt, what, p=None, t=20):
    until = time.time() + t
    while time.time() < until:
        if os.path.ismount(mnt):
            return
        if p is not None and p.poll() is not None:
            said = (p.stdout or p.stderr).read() if (p.stdout or p.stderr) else ""
            why = re.findall(r"<Code>(\w+)</Code>|\[CRT\] (.*)|^(.*error.*)$", said, re.M | re.I)
            why = [x for t in why for x in t if x]
            raise RuntimeError("%s exited: %s" % (what, "; ".join(why[:2]) or said[-300:]))
        time.sleep(0.05)
    raise RuntimeError("%s: no mount at %s after %d s" % (what, mnt, t))


def many_fds():
    """preexec_fn: a FUSE server's open-file limit raised as far as it goes
    (passthrough_ll keeps a descriptor per inode it has seen; root may go to
    fs.nr_open where the container lets it, else it stays at the hard limit)."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    try:
        top = int(open("/proc/sys/fs/nr_open").read())
        resource.setrlimit(resource.RLIMIT_NOFILE, (top, top))
    except (OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def unmount(mnt, p=None):
    subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
    subprocess.run(["fusermount", "-u", "-z", mnt], capture_output=True)
    if p is not None:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Tmpfs(Target):
    name = "tmpfs (/dev/shm)"

    def start(self, work, build):
        self.d = tempfile.mkdtemp(prefix="aw-tmpfs-", dir="/dev/shm")
        return self.d

    def stop(self):
        shutil.rmtree(self.d, ignore_errors=True)


class CofferMount(Target):
    name = "`coffer mount --data`"

    def start(self, work, build):
        data = tempfile.mkdtemp(prefix="aw-cm-data-", dir=work)
        s = Cofferd(data, build=build)
        vid = s.call("POST", "/v1/volumes", {"name": "aw-host"})["id"]
        s.stop()
        self.mnt = tempfile.mkdtemp(prefix="aw-cm-", dir=work)
        self.p = subprocess.Popen([os.path.join(build or os.path.join(ROOT, "build"), "coffer"),
                                   "mount", vid, self.mnt, "--data", data],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        fuse_wait(self.mnt, "coffer mount", self.p)
        return self.mnt

    def stop(self):
        unmount(self.mnt, self.p)


class Passthrough(Target):
    name = "libfuse passthrough_ll (over tmpfs, a mount a command)"
    per_command = True

    def start(self, work, build):
        self.fl = Floor(work)
        return self.fl.mount()

    def between(self):
        self.fl.umount()
        self.fl.mount()

    def stop(self):
        self.fl.close()


class Rclone(Target):
    name = "rclone mount (local tmpfs, --vfs-cache-mode writes)"

    def start(self, work, build):
        if not shutil.which("rclone"):
            raise RuntimeError("no rclone")
        self.src = tempfile.mkdtemp(prefix="aw-rc-src-", dir="/dev/shm")
        self.mnt = tempfile.mkdtemp(prefix="aw-rc-", dir=work)
        self.cache = tempfile.mkdtemp(prefix="aw-rc-cache-", dir=work)
        v = re.search(r"v(\d+)\.(\d+)", sh(["rclone", "version"]))
        args = []
        if v and (int(v.group(1)), int(v.group(2))) >= (1, 67):
            args = ["--links"]  # symbolic links on a mount (VFS) came in 1.67
        else:
            why = ("rclone %s.%s mounts cannot make symbolic links (symlink(2) is EIO; "
                   "`--links` of a mount came in 1.67, before it only the local backend's "
                   ".rclonelink files)" % (v.group(1), v.group(2)) if v else "?")
            self.skip = {"tar": why + ": the tree has links",
                         "rm": why + ": no tree without tar"}
        self.p = subprocess.Popen(["rclone", "mount", ":local:" + self.src, self.mnt,
                                   "--vfs-cache-mode", "writes", "--cache-dir", self.cache] + args,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        fuse_wait(self.mnt, "rclone mount", self.p)
        return self.mnt

    def stop(self):
        unmount(self.mnt, self.p)
        shutil.rmtree(self.src, ignore_errors=True)


class S3fs(Target):
    name = "s3fs over coffer's S3 gateway"
    # s3fs makes a folder by a PUT of the key `DIR/`; the gateway's keys are paths
    # (docs/s3.md): InvalidArgument "path has an empty segment"
    why_mkdir = ("s3fs makes a folder by a PUT of `DIR/`, which coffer's gateway refuses "
                 "(keys are paths: InvalidArgument, a trailing `/`)")

    def start(self, work, build):
        if not shutil.which("s3fs"):
            raise RuntimeError("no s3fs")
        import hashlib, socket
        with socket.socket() as so:
            so.bind(("127.0.0.1", 0))
            port = so.getsockname()[1]
        data = tempfile.mkdtemp(prefix="aw-s3-data-", dir=work)
        self.s = Cofferd(data, "--s3-listen", "127.0.0.1:%d" % port, build=build)
        self.s.call("POST", "/v1/volumes", {"name": "awbench"})  # the bucket
        pw = os.path.join(work, "s3fs.passwd")
        with open(pw, "w") as f:
            f.write("k_%s:%s\n" % (hashlib.sha256(self.s.key.encode()).hexdigest()[:16],
                                    self.s.key))
        os.chmod(pw, 0o600)
        self.mnt = tempfile.mkdtemp(prefix="aw-s3-", dir=work)
        self.p = subprocess.Popen(["s3fs", "awbench", self.mnt, "-f", "-o", "passwd_file=" + pw,
                                   "-o", "url=http://127.0.0.1:%d" % port,
                                   "-o", "use_path_request_style", "-o", "endpoint=us-east-1",
                                   "-o", "sigv4"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        fuse_wait(self.mnt, "s3fs", self.p)
        return self.mnt

    def stop(self):
        unmount(self.mnt, self.p)
        self.s.stop()


TARGETS = {"tmpfs": Tmpfs, "coffer": CofferMount, "passthrough": Passthrough,
           "rclone": Rclone, "s3fs": S3fs}


def part_host(work, rounds, refs, srcrepo, fx, build=None):
    """{target name: {step: [seconds...] or a reason}} or an error string; each
    command timed by the line the calls use (timed)."""
    out = {}
    err = os.path.join(work, ".aw-err")
    for key in refs:
        t = TARGETS[key]()
        try:
            d = t.start(work, build)
        except Exception as e:  # a reference that cannot start is reported, not fatal
            out[t.name] = "did not start: %s" % str(e).splitlines()[0][:200]
            continue
        res = {st: [] for st in STEPS}
        try:
            for rnd in range(rounds):
                base = os.path.join(d, "r%d" % rnd)
                try:
                    os.makedirs(base)
                except OSError as e:
                    for st in STEPS:
                        res[st].append("mkdir failed: %s%s" % (e.strerror, (
                            "; " + t.why_mkdir) if getattr(t, "why_mkdir", None) else ""))
                    continue
                for st in STEPS:
                    if st in t.skip:
                        res[st].append("not run: " + t.skip[st])
                        continue
                    setup, pre, cmd = step_cmds(base, fx, srcrepo)[st]
                    ran = False
                    try:
                        if setup:
                            if t.per_command:
                                t.between()
                            subprocess.run(["sh", "-c", setup], check=True, timeout=STEP_TIMEOUT,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                        if t.per_command:
                            t.between()
                        ran = True
                        p = subprocess.run(["sh", "-c", timed(cmd, pre, err)], check=True,
                                           timeout=STEP_TIMEOUT, capture_output=True)
                        res[st].append(int(p.stdout.split()[-1]) / 1e6)
                    except subprocess.TimeoutExpired:
                        res[st].append(float("inf"))
                    except subprocess.CalledProcessError as e:
                        why = e.stderr.decode(errors="replace").strip().splitlines()
                        res[st].append("%s failed: %s" % ("step" if ran else "setup",
                                                          why[0][:150] if why else e.returncode))
                if t.per_command:
                    t.between()
                subprocess.run(["rm", "-rf", base], timeout=STEP_TIMEOUT)
        finally:
            t.stop()
        out[t.name] = res
    return out


# ---- report ------------------------------------------------------------------

def fmt_s(v):
    return "> %d s" % STEP_TIMEOUT if v == float("inf") else ("%.3f s" % v)


def med(xs):
    nums = [x for x in xs if isinstance(x, float) or isinstance(x, int)]
    fails = [x for x in xs if isinstance(x, str)]
    if fails:
        return fails[0]
    return statistics.median(nums) if nums else None


def report(calls, host, rounds, ref_rounds):
    date, head, load = run_stamp()
    lines = ["## Agent workloads", "",
             "bench/agent_workloads.py (issue 38), %s, commit %s, load %s at the end. "
             "2 cores." % (date, head, load), ""]
    if calls:
        floor = "floor" in calls
        m = {side: {st: statistics.median(calls[side][st]["in"]) for st in STEPS}
             for side in calls}
        lines += ["**In a turn's confined calls** (medians of %d rounds, sides %s; "
                  "each step its own call, timed inside it; +commit: the view's call wall "
                  "time over its inside time, less the tmpfs side's)%s:" % (
                      rounds, "in turn" if floor else "alternating",
                      "; and in the same rounds on the host, by the same timed line, "
                      "libfuse's passthrough_ll over a tmpfs folder (`-o timeout=3600`, "
                      "a mount a command: the FUSE floor) and a tmpfs folder" if floor else ""),
                  ""]
        if floor:
            lines += ["| step | view | tmpfs (call) | passthrough_ll | tmpfs (host) | "
                      "view/tmpfs | view/passthrough | passthrough/tmpfs (host) | "
                      "+commit (view) | goal |", "|---|---|---|---|---|---|---|---|---|---|"]
        else:
            lines += ["| step | view | tmpfs | ratio | +commit (view) | goal |",
                      "|---|---|---|---|---|---|"]
        for st in STEPS:
            v, t = m["view"][st], m["tmpfs"][st]
            extra = (statistics.median(w - i for w, i in zip(calls["view"][st]["wall"],
                                                             calls["view"][st]["in"])) -
                     statistics.median(w - i for w, i in zip(calls["tmpfs"][st]["wall"],
                                                             calls["tmpfs"][st]["in"])))
            if floor:
                f, h = m["floor"][st], m["host"][st]
                lines.append("| %s | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %.2fx | %.2fx | "
                             "%.2fx | %+.0f ms | <= %gx |"
                             % (st, v, t, f, h, v / t if t else float("inf"), v / f if f else
                                float("inf"), f / h if h else float("inf"), extra, GOAL[st]))
            else:
                lines.append("| %s | %.0f ms | %.0f ms | %.2fx | %+.0f ms | <= %gx |"
                             % (st, v, t, v / t if t else float("inf"), extra, GOAL[st]))
        lines.append("")
    if host:
        names = list(host)
        anchor = names[0]
        notes = []

        def note(why):  # a failure or a step not run: a footnote, once each
            if why not in notes:
                notes.append(why)
            return "(%s)" % "abcdefghijklmnopqrstuvwxyz"[notes.index(why)]
        lines += ["**On the host** (each command timed by the same line as the calls, "
                  "medians of %d rounds; ratio to %s):" % (ref_rounds, anchor), "",
                  "| step | " + " | ".join(names) + " |",
                  "|---|" + "---|" * len(names)]
        for st in STEPS:
            row = ["| " + st]
            a = host[anchor][st] if isinstance(host[anchor], dict) else None
            am = med(a) if a else None
            for n in names:
                if isinstance(host[n], str):
                    row.append(note(n + ": " + host[n]))
                    continue
                m = med(host[n][st])
                if isinstance(m, str) or m is None:
                    row.append(note("%s: %s" % (n, m)))
                elif n == anchor or not isinstance(am, float):
                    row.append(fmt_s(m))
                else:
                    row.append("%s (%.2fx)" % (fmt_s(m), m / am))
            lines.append(" | ".join(row) + " |")
        lines.append("")
        for i, why in enumerate(notes):
            lines.append("%s %s" % ("abcdefghijklmnopqrstuvwxyz"[i], why))
        if notes:
            lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(
        description="Agent workloads on a call's view, its tmpfs and the FUSE floor "
        "(issue 38); writes the \"Agent workloads\" section of bench/results.md (or --out).")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ref-rounds", type=int, default=3)
    ap.add_argument("--calls-only", action="store_true")
    ap.add_argument("--host-only", action="store_true")
    ap.add_argument("--no-floor", action="store_true",
                    help="part 1 without passthrough_ll and a host tmpfs beside the calls")
    ap.add_argument("--refs", default="tmpfs,coffer,passthrough,rclone,s3fs")
    ap.add_argument("--steps", default=",".join(STEPS),
                    help="the steps to run, of " + ",".join(STEPS))
    ap.add_argument("--build", default=None,
                    help="the build dir whose cofferd and coffer run (default build/)")
    ap.add_argument("--profile", default=None, metavar="DIR",
                    help="part 1 profiled into DIR: FUSE requests traced (perf, the kernel's "
                    "fuse tracepoints), perf -g of the FUSE server, COFFER_VIEW_STATS, "
                    "strace -c -f of the host tmpfs side's steps (slower: not for the table; "
                    "no results.md)")
    ap.add_argument("--perf-cpu", action="store_true",
                    help="with --profile: also perf record -g of the FUSE server during each "
                    "step (DIR/STEP-SIDE-rN.cpu.data; slows cofferd several times over, so "
                    "its request times are not the unprofiled ones)")
    ap.add_argument("--strace-server", action="store_true",
                    help="with --profile: also strace -c -f of the FUSE server during each "
                    "step (DIR/STEP-SIDE-rN.server.strace: its syscalls by kind; slows it)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results.md"))
    a = ap.parse_args()
    want = [x for x in a.steps.split(",") if x]
    for x in want:
        if x not in STEPS:
            sys.exit("unknown step %r (one of %s)" % (x, ",".join(STEPS)))
    STEPS[:] = [x for x in STEPS if x in want]
    refs = [r for r in a.refs.split(",") if r]
    for r in refs:
        if r not in TARGETS:
            sys.exit("unknown reference %r (one of %s)" % (r, ",".join(TARGETS)))
    rng = random.Random(38)
    build = a.build and os.path.abspath(a.build)
    with tempfile.TemporaryDirectory(prefix="aw-") as work:
        srcrepo, repo_tar = make_repo(work, rng)
        nm_tar, proj_tar = make_tree(work, rng), make_project(work)
        # the host's fixtures on tmpfs, as the calls' are (/tmp/src, /fx is the view of
        # a volume but only tar reads it)
        hostfx = tempfile.mkdtemp(prefix="aw-fx-", dir="/dev/shm")
        try:
            for p in (repo_tar, nm_tar, proj_tar):
                shutil.copy(p, hostfx)
            shutil.copytree(srcrepo, os.path.join(hostfx, "src"), symlinks=True)
            calls = None if a.host_only else part_calls(
                work, a.rounds, repo_tar, nm_tar, proj_tar, build, not a.no_floor,
                a.profile and os.path.abspath(a.profile), hostfx,
                "perf" if a.perf_cpu else "strace" if a.strace_server else None)
            host = None if a.calls_only or a.profile else part_host(
                work, a.ref_rounds, refs, os.path.join(hostfx, "src"), hostfx, build)
        finally:
            shutil.rmtree(hostfx, ignore_errors=True)
        text = report(calls, host, a.rounds, a.ref_rounds)
    print(text)
    if not a.profile:
        write_section(a.out, "Agent workloads", text)


if __name__ == "__main__":
    main()
