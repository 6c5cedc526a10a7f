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

import argparse, io, json, os, random, shutil, statistics, subprocess, sys, tarfile
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


def timed(cmd, pre=None):
    """A shell line that runs pre, then cmd (its output dropped) and prints cmd's
    microseconds; exit 97 if it failed."""
    return ("%s" % (pre + " && " if pre else "")) + ("s=$(date +%%s%%N); ( %s ) >/dev/null 2>/tmp/.aw-err || { cat /tmp/.aw-err >&2; "
            "exit 97; }; e=$(date +%%s%%N); echo $(( (e-s)/1000 ))" % cmd)


# ---- part 1: confined calls ------------------------------------------------

def part_calls(work, rounds, repo_tar, nm_tar, proj_tar, build=None):
    data = os.path.join(work, "data")
    os.makedirs(data)
    s = Cofferd(data, build=build)
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
            return out, wall

        call("tar xf /fx/repo.tar -C /tmp")  # the source repository, on tmpfs
        res = {side: {st: {"in": [], "wall": []} for st in STEPS} for side in ("view", "tmpfs")}
        for rnd in range(rounds):
            sides = ["view", "tmpfs"] if rnd % 2 == 0 else ["tmpfs", "view"]
            for st in STEPS:
                for side in sides:
                    base = ("/workspace/r%d" if side == "view" else "/tmp/w%d") % rnd
                    setup, pre, cmd = step_cmds(base, "/fx", "/tmp/src")[st]
                    if setup:
                        call(setup)
                    out, wall = call(timed(cmd, pre))
                    res[side][st]["in"].append(int(out["stdout"].split()[-1]) / 1000)
                    res[side][st]["wall"].append(wall)
            for side in sides:  # the round's files go, so the next starts alike
                call("rm -rf " + (("/workspace/r%d" if side == "view" else "/tmp/w%d") % rnd))
        return res
    finally:
        s.stop()


# ---- part 2: host folders --------------------------------------------------

class Target:
    """A folder on the host to run the steps in; start() returns it, stop() ends
    whatever serves it."""
    name = ""

    def start(self, work):
        raise NotImplementedError

    def stop(self):
        pass


def fuse_wait(mnt, what, p=None, t=20):
    until = time.time() + t
    while time.time() < until:
        if os.path.ismount(mnt):
            return
        if p is not None and p.poll() is not None:
            said = (p.stdout or p.stderr).read() if (p.stdout or p.stderr) else ""
            import re
            why = re.findall(r"<Code>(\w+)</Code>|\[CRT\] (.*)|^(.*error.*)$", said, re.M | re.I)
            why = [x for t in why for x in t if x]
            raise RuntimeError("%s exited: %s" % (what, "; ".join(why[:2]) or said[-300:]))
        time.sleep(0.05)
    raise RuntimeError("%s: no mount at %s after %d s" % (what, mnt, t))


def many_fds():
    """preexec_fn: a FUSE server's open-file limit raised as far as it goes
    (passthrough_ll keeps a descriptor per inode it has seen: the clone and the
    10,000-file tree of one round pass 20,000; root may go to fs.nr_open where
    the container lets it, else it stays at the hard limit and tar x fails)."""
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

    def start(self, work):
        self.d = tempfile.mkdtemp(prefix="aw-tmpfs-", dir="/dev/shm")
        return self.d

    def stop(self):
        shutil.rmtree(self.d, ignore_errors=True)


class CofferMount(Target):
    name = "`coffer mount --data`"

    def start(self, work):
        data = tempfile.mkdtemp(prefix="aw-cm-data-", dir=work)
        s = Cofferd(data)
        vid = s.call("POST", "/v1/volumes", {"name": "aw-host"})["id"]
        s.stop()
        self.mnt = tempfile.mkdtemp(prefix="aw-cm-", dir=work)
        self.p = subprocess.Popen([os.path.join(ROOT, "build", "coffer"), "mount", vid,
                                   self.mnt, "--data", data],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        fuse_wait(self.mnt, "coffer mount", self.p)
        return self.mnt

    def stop(self):
        unmount(self.mnt, self.p)


class Passthrough(Target):
    name = "libfuse passthrough_ll (over tmpfs)"
    EX = "/usr/share/doc/libfuse3-dev/examples"

    def start(self, work):
        exe = os.path.join(work, "passthrough_ll")
        if not os.path.exists(exe):
            src = os.path.join(self.EX, "passthrough_ll.c")
            if not os.path.exists(src):
                raise RuntimeError("no %s (libfuse3-dev)" % src)
            flags = sh(["pkg-config", "--cflags", "--libs", "fuse3"]).split()
            sh(["cc", "-O2", "-Wall", "-I" + self.EX, src, "-o", exe] + flags)
        self.src = tempfile.mkdtemp(prefix="aw-pt-src-", dir="/dev/shm")
        self.mnt = tempfile.mkdtemp(prefix="aw-pt-", dir=work)
        self.p = subprocess.Popen([exe, "-f", "-o", "source=" + self.src, self.mnt],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  preexec_fn=many_fds)
        fuse_wait(self.mnt, "passthrough_ll", self.p)
        return self.mnt

    def stop(self):
        unmount(self.mnt, self.p)
        shutil.rmtree(self.src, ignore_errors=True)


class Rclone(Target):
    name = "rclone mount (local tmpfs, --vfs-cache-mode writes)"

    def start(self, work):
        if not shutil.which("rclone"):
            raise RuntimeError("no rclone")
        self.src = tempfile.mkdtemp(prefix="aw-rc-src-", dir="/dev/shm")
        self.mnt = tempfile.mkdtemp(prefix="aw-rc-", dir=work)
        self.cache = tempfile.mkdtemp(prefix="aw-rc-cache-", dir=work)
        self.p = subprocess.Popen(["rclone", "mount", ":local:" + self.src, self.mnt,
                                   "--vfs-cache-mode", "writes", "--cache-dir", self.cache,
                                   "--links"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        fuse_wait(self.mnt, "rclone mount", self.p)
        return self.mnt

    def stop(self):
        unmount(self.mnt, self.p)
        shutil.rmtree(self.src, ignore_errors=True)


class S3fs(Target):
    name = "s3fs over the S3 test peer (s3rver)"

    def start(self, work):
        if not shutil.which("s3fs"):
            raise RuntimeError("no s3fs")
        sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
        import s3peer
        self.s3peer = s3peer
        self.peer = s3peer.start(bucket="awbench")
        pw = os.path.join(work, "s3fs.passwd")
        with open(pw, "w") as f:
            f.write("%s:%s\n" % (self.peer["access_key"], self.peer["secret_key"]))
        os.chmod(pw, 0o600)
        self.mnt = tempfile.mkdtemp(prefix="aw-s3-", dir=work)
        self.p = subprocess.Popen(["s3fs", "awbench", self.mnt, "-f", "-o", "passwd_file=" + pw,
                                   "-o", "url=" + self.peer["endpoint"], "-o", "use_path_request_style",
                                   "-o", "endpoint=" + self.peer["region"], "-o", "sigv4"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        fuse_wait(self.mnt, "s3fs", self.p)
        return self.mnt

    def stop(self):
        unmount(self.mnt, self.p)
        self.s3peer.stop(self.peer)


TARGETS = {"tmpfs": Tmpfs, "coffer": CofferMount, "passthrough": Passthrough,
           "rclone": Rclone, "s3fs": S3fs}


def part_host(work, rounds, refs, srcrepo, fx):
    """{target name: {step: [seconds...]} or an error string}."""
    out = {}
    for key in refs:
        t = TARGETS[key]()
        try:
            d = t.start(work)
        except Exception as e:  # a reference that cannot start is reported, not fatal
            out[t.name] = "did not start: %s" % str(e).splitlines()[0][:200]
            continue
        res = {st: [] for st in STEPS}
        try:
            for rnd in range(rounds):
                base = os.path.join(d, "r%d" % rnd)
                os.makedirs(base)
                for st in STEPS:
                    setup, pre, cmd = step_cmds(base, fx, srcrepo)[st]
                    t0 = None
                    try:
                        for c in (setup, pre):
                            if c:
                                subprocess.run(["sh", "-c", c], check=True, timeout=STEP_TIMEOUT,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                        t0 = time.perf_counter()
                        subprocess.run(["sh", "-c", cmd], check=True, timeout=STEP_TIMEOUT,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                        res[st].append(time.perf_counter() - t0)
                    except subprocess.TimeoutExpired:
                        res[st].append(float("inf"))
                    except subprocess.CalledProcessError as e:
                        why = e.stderr.decode(errors="replace").strip().splitlines()
                        res[st].append("%s failed: %s" % ("step" if t0 else "setup",
                                                          why[0][:150] if why else e.returncode))
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
        lines += ["**In a turn's confined calls** (medians of %d rounds, sides alternating; "
                  "each step its own call, timed inside it; +commit: the view's call wall "
                  "time over its inside time, less the tmpfs side's):" % rounds, "",
                  "| step | view | tmpfs | ratio | +commit (view) | goal |", "|---|---|---|---|---|---|"]
        for st in STEPS:
            v = statistics.median(calls["view"][st]["in"])
            t = statistics.median(calls["tmpfs"][st]["in"])
            extra = (statistics.median(w - i for w, i in zip(calls["view"][st]["wall"],
                                                             calls["view"][st]["in"])) -
                     statistics.median(w - i for w, i in zip(calls["tmpfs"][st]["wall"],
                                                             calls["tmpfs"][st]["in"])))
            lines.append("| %s | %.0f ms | %.0f ms | %.2fx | %+.0f ms | <= %gx |"
                         % (st, v, t, v / t if t else float("inf"), extra, GOAL[st]))
        lines.append("")
    if host:
        names = list(host)
        anchor = names[0]
        lines += ["**On the host** (wall time of each command, medians of %d rounds; ratio "
                  "to %s):" % (ref_rounds, anchor), "",
                  "| step | " + " | ".join(names) + " |",
                  "|---|" + "---|" * len(names)]
        for st in STEPS:
            row = ["| " + st]
            a = host[anchor][st] if isinstance(host[anchor], dict) else None
            am = med(a) if a else None
            for n in names:
                if isinstance(host[n], str):
                    row.append(host[n])
                    continue
                m = med(host[n][st])
                if isinstance(m, str) or m is None:
                    row.append(str(m))
                elif n == anchor or not isinstance(am, float):
                    row.append(fmt_s(m))
                else:
                    row.append("%s (%.2fx)" % (fmt_s(m), m / am))
            lines.append(" | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ref-rounds", type=int, default=3)
    ap.add_argument("--calls-only", action="store_true")
    ap.add_argument("--host-only", action="store_true")
    ap.add_argument("--refs", default="tmpfs,coffer,passthrough,rclone,s3fs")
    ap.add_argument("--steps", default=",".join(STEPS),
                    help="the steps to run, of " + ",".join(STEPS))
    ap.add_argument("--build", default=None,
                    help="the build dir whose cofferd part 1 runs (default build/)")
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
    with tempfile.TemporaryDirectory(prefix="aw-") as work:
        srcrepo, repo_tar = make_repo(work, rng)
        nm_tar, proj_tar = make_tree(work, rng), make_project(work)
        calls = None if a.host_only else part_calls(work, a.rounds, repo_tar, nm_tar, proj_tar,
                                                      a.build and os.path.abspath(a.build))
        host = None if a.calls_only else part_host(work, a.ref_rounds, refs, srcrepo, work)
        text = report(calls, host, a.rounds, a.ref_rounds)
    print(text)
    write_section(a.out, "Agent workloads", text)


if __name__ == "__main__":
    main()
