#!/usr/bin/env python3
"""Views of volumes (issue 11), side by side with their anchors in one run:

  1. call start with a 100,000-file mount vs an empty one (`true`, medians of 15)
  2. `grep -r` over 5,000 files / 20 MB in a mount (read-only, and read-write as
     the agent's /workspace is) vs the same tree copied to the workspace's tmpfs;
     `find | xargs stat` the same (timed inside the call; medians of 3, of 9 for a
     view just mounted, whose runs spread most): a call's
     first run on a view just mounted (a file was written to the volume before
     each call, so its seq moved and no kept view applies), a call's first run on
     the view the turn's previous call kept, and a second run in one call
  3. a call that writes 1,000 small files under /workspace (committed at its end
     as one seq) vs the same writes to /tmp (nothing to commit)
  4. `coffer mount` sequential read of a 1 GiB file vs `cat` of its blob from disk
     (both warm in the page cache), with --data (in process) and with --server/--key
     (through cofferd's HTTP API), in one run

Usage: bench/views.py [--files N] [--out FILE] [--mount-only] [--only grep]
--mount-only runs part 4 alone and writes it as the "Views: coffer mount" section;
--only grep runs part 2 alone and prints it (results.md untouched).
Writes a "Views" section into bench/results.md (replacing an older one).
Needs build/cofferd and build/coffer, root (or FUSE for this user), bwrap."""

import os, shutil, statistics, subprocess, sys, tempfile, time

from benchlib import ROOT, Cofferd, write_section

# the Makefile's own list of libraries (make pkgs), not a copy of it
PKGS = subprocess.run(["make", "-s", "--no-print-directory", "pkgs"], cwd=ROOT,
                      check=True, capture_output=True, text=True).stdout.strip()


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def populate_bin(work):
    exe = os.path.join(work, "populate")
    cflags = sh(["pkg-config", "--cflags"] + PKGS.split()).split()
    libs = sh(["pkg-config", "--libs"] + PKGS.split()).split()
    sh(["cc", "-O2", "-std=c11", "-D_GNU_SOURCE", "-Iinclude", "-Isrc"] + cflags +
       ["bench/populate.c", "build/libcoffer.a"] + libs + ["-lmagic", "-lpthread", "-lm",
                                                           "-o", exe], cwd=ROOT)
    return exe


def fill(exe, data, name, n, size):
    import json
    env = dict(os.environ, COFFER_BENCH_NOSYNC="1")  # fixtures only
    return json.loads(sh([exe, "fill", data, name, str(n), str(size)], env=env))["id"]


def agent(s, mounts, sandbox=None):
    aid = "bv-%d" % time.monotonic_ns()
    body = {"mounts": mounts}
    if sandbox:
        body["sandbox"] = sandbox
    s.call("PUT", "/v1/agents/" + aid, body)
    return aid


def turn(s, aid):
    return s.call("POST", "/v1/turns", {"agent": aid, "user": "u", "deadlineSeconds": 3600})["id"]


def run(s, tid, cmd, timeout=600):
    out = s.call("POST", "/v1/turns/%s/calls" % tid, {"command": cmd, "timeoutSeconds": timeout})
    if out["exitCode"] != 0:
        raise RuntimeError("%r: %s" % (cmd, out["stderr"][-500:]))
    return out


def inner_ms(s, tid, cmd, n=3):
    """Median of n runs of `cmd` timed inside the call (milliseconds)."""
    t = "s=$(date +%%s%%N); %s >/dev/null; e=$(date +%%s%%N); echo $(( (e-s)/1000 ))" % cmd
    return statistics.median(int(run(s, tid, t)["stdout"]) / 1000 for _ in range(n))


def warm_ms(s, tid, cmd, n=3):
    """Median of n calls that run `cmd` once, then time a second run of it
    (milliseconds): the page cache of the call's own view is warm."""
    t = "%s >/dev/null; s=$(date +%%s%%N); %s >/dev/null; e=$(date +%%s%%N); " \
        "echo $(( (e-s)/1000 ))" % (cmd, cmd)
    return statistics.median(int(run(s, tid, t)["stdout"]) / 1000 for _ in range(n))


def bump(s, vid, n):
    """A small file written to volume vid over HTTP: its seq moves, so the next
    call cannot use a kept view of it (it mounts a cold one)."""
    c = s.conn()
    c.request("PUT", "/v1/volumes/%s/files/zz-bump-%d.txt" % (vid, n), body=b"bump\n",
              headers={"Authorization": "Bearer " + s.key})
    r = c.getresponse()
    r.read()
    c.close()
    if r.status >= 300:
        raise RuntimeError("PUT: %d" % r.status)


def cold_ms(s, tid, cmd, vid, n=9):
    """Median of n calls that each run `cmd` once on a view just mounted (the
    volume moved before each call, milliseconds)."""
    out = []
    for i in range(n):
        bump(s, vid, time.monotonic_ns())
        out.append(inner_ms(s, tid, cmd, 1))
    return statistics.median(out)


def call_ms(s, tid, cmd):
    t0 = time.perf_counter()
    out = run(s, tid, cmd)
    return (time.perf_counter() - t0) * 1000, out


def mount_rows(work, data, mnt):
    """Section 4: a 1 GiB file read in order through `coffer mount --data` and
    through `coffer mount --server --key` (a cofferd's HTTP API), each against `cat`
    of its blob from disk, in one run (all warm in the page cache; medians of five
    reads of each, taken in turn)."""
    src = os.path.join(work, "1g.bin")
    with open(src, "wb") as f:
        for _ in range(1024):
            f.write(os.urandom(1 << 20))
    s = Cofferd(data)
    c = s.conn(600)
    vid = s.call("POST", "/v1/volumes", {"name": "gib-%d" % time.monotonic_ns()})["id"]
    with open(src, "rb") as f:
        c.request("PUT", "/v1/volumes/%s/files/big.bin" % vid, body=f,
                  headers={"Authorization": "Bearer " + s.key,
                           "Content-Length": str(1 << 30)})
        r = c.getresponse()
        sha = __import__("json").loads(r.read())["sha256"]
    s.stop()
    os.unlink(src)
    blob = os.path.join(data, "blobs", sha[:2], sha[2:])
    if not os.path.exists(blob):
        blob = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(data, "blobs"))
                for f in fs if f.startswith(sha[2:]) or f == sha][0]

    def read(path, cold=False):
        if cold:  # from the disk: nothing of either file left in memory
            subprocess.run(["sync"], check=True)
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        t0 = time.perf_counter()
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
        return (1 << 30) / (time.perf_counter() - t0) / (1 << 20)

    def mounted_read(flags):
        p = subprocess.Popen([os.path.join(ROOT, "build", "coffer"), "mount", vid, mnt,
                              "--read-only"] + flags)
        try:
            until = time.time() + 20
            while not os.path.exists(os.path.join(mnt, "big.bin")) and time.time() < until:
                time.sleep(0.1)
            read(blob), read(os.path.join(mnt, "big.bin"))  # warm both
            ds, ms = [], []
            for _ in range(5):  # alternating, so a busy moment hits both sides
                ds.append(read(blob))
                ms.append(read(os.path.join(mnt, "big.bin")))
            warm = statistics.median(ms), statistics.median(ds)
            if os.geteuid() != 0:
                return warm, None  # dropping the page cache takes root
            ds, ms = [], []
            for _ in range(7):  # the disk's speed varies more than memory's
                ds.append(read(blob, cold=True))
                ms.append(read(os.path.join(mnt, "big.bin"), cold=True))
            return warm, (statistics.median(ms), statistics.median(ds))
        finally:
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
            p.wait(30)

    rows = []

    def add(what, res):
        (m, d), cold = res
        rows.append("| %s sequential read of 1 GiB vs `cat` of its blob, both in the page "
                    "cache | %.0f MB/s | %.0f MB/s | %.2f |" % (what, m, d, m / d))
        if cold:
            m, d = cold
            rows.append("| %s sequential read of 1 GiB vs `cat` of its blob, both from the "
                        "disk (page cache dropped) | %.0f MB/s | %.0f MB/s | %.2f |"
                        % (what, m, d, m / d))
        else:
            rows.append("| %s sequential read from the disk | not measured: dropping the "
                        "page cache takes root | | |" % what)

    add("`coffer mount`", mounted_read(["--data", data]))
    s = Cofferd(data)
    try:
        add("`coffer mount --server` (HTTP: Range windows up to 2 MiB)",
            mounted_read(["--server", s.url, "--key", s.key]))
    finally:
        s.stop()
    return rows


def publish(out, heading, run, note, rows):
    """Prints the section `heading` of results.md (the command `run`, its time
    and load, `note`, then the table of `rows`: what | view | anchor | ratio)
    and writes it to `out` in place of the one before."""
    load = open("/proc/loadavg").read().split()[0]
    text = ("## %s\n\n%s, one run, %s, load average %s (2 cores shared with other "
            "engineers' builds: compare the two columns of a row, not rows of different "
            "runs).%s\n\n| what | view | anchor | ratio |\n|---|---|---|---|\n"
            % (heading, run, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load,
               note)) + "\n".join(rows) + "\n"
    print(text)
    write_section(out, heading, text)


def main():
    files = 100000
    mount_only = False

    only = None
    out = os.path.join(ROOT, "bench", "results.md")
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "--files":
            files = int(args.pop(0))
        elif a == "--out":
            out = args.pop(0)
        elif a == "--mount-only":
            mount_only = True

        elif a == "--only":
            only = args.pop(0)  # "grep": part 2 alone, printed, results.md untouched
    work = tempfile.mkdtemp(prefix="coffer-bench-views-")
    data = os.path.join(work, "data")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt)
    s = None
    if mount_only:
        try:
            os.makedirs(data)
            Cofferd(data).stop()  # a fresh data dir and its admin key
            publish(out, "Views: coffer mount", "bench/views.py --mount-only", "",
                    mount_rows(work, data, mnt))
        finally:
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
            shutil.rmtree(work, ignore_errors=True)
        return
    try:
        exe = populate_bin(work)
        t0 = time.time()
        big = fill(exe, data, "big", files if only != "grep" else 10, 64)
        tree = fill(exe, data, "tree", 5000, 4096)
        print("fixtures: %.0f s" % (time.time() - t0), file=sys.stderr)
        s = Cofferd(data)
        lines = []

        # 1. call start
        if only == "grep":
            files = 0
        a_big = agent(s, [{"workspace": True}, {"volumeId": big, "path": "/data", "mode": "ro"}])
        a_empty = agent(s, [{"workspace": True}])
        t_big, t_empty = turn(s, a_big), turn(s, a_empty)
        call_ms(s, t_big, "true"), call_ms(s, t_empty, "true")
        sb, se = [], []
        for _ in range(15 if files else 0):
            sb.append(call_ms(s, t_big, "true")[0])
            se.append(call_ms(s, t_empty, "true")[0])
        mb, me = (statistics.median(sb), statistics.median(se)) if sb else (1, 1)
        lines.append("| call start (`true`), %d-file mount vs an empty one | %.1f ms | %.1f ms "
                     "| %.2f |" % (files, mb, me, mb / me))

        # 2. grep and stat over a mount (read-only, and read-write as the agent's
        # /workspace is) vs the same tree on the workspace's tmpfs
        sbx = {"scratch": "512m", "turnDisk": "128m", "userDisk": "256m"}
        for mode in ("ro", "rw"):
            a_tree = agent(s, [{"workspace": True},
                               {"volumeId": tree, "path": "/data", "mode": mode}], sandbox=sbx)
            t_tree = turn(s, a_tree)
            run(s, t_tree, "cp -r /data /tmp/tree")
            for what, cmd in (("`grep -r` (5,000 files, 20 MB)", "grep -r zzzneedle %s"),
                              ("`find \\| xargs stat`", "find %s -type f | xargs stat")):
                inner_ms(s, t_tree, cmd % "/tmp/tree", 1)  # warm the tmpfs side
                w = inner_ms(s, t_tree, cmd % "/tmp/tree", 9)
                m = cold_ms(s, t_tree, cmd % "/data", tree)
                lines.append("| %s, %s mount vs tmpfs, a call's first run on a view just "
                             "mounted (the volume moved) | %.0f ms | %.0f ms | %.2f |"
                             % (what, mode, m, w, m / w))
                inner_ms(s, t_tree, cmd % "/data", 1)  # the turn's view, read once
                m = inner_ms(s, t_tree, cmd % "/data")
                lines.append("| %s, %s mount vs tmpfs, a call's first run on the view the "
                             "turn's last call kept | %.0f ms | %.0f ms | %.2f |"
                             % (what, mode, m, w, m / w))
                m = warm_ms(s, t_tree, cmd % "/data")
                w = warm_ms(s, t_tree, cmd % "/tmp/tree")
                lines.append("| %s, %s mount vs tmpfs, again in the same call | %.0f ms | "
                             "%.0f ms | %.2f |" % (what, mode, m, w, m / w))
        if only == "grep":
            print("\n".join(lines))
            return

        # 3. commit of 1,000 small files
        t_ws = turn(s, a_empty)
        wr = ("s=$(date +%%s%%N); mkdir -p %s/c && for i in $(seq 1000); do echo $i > %s/c/f$i;"
              " done; e=$(date +%%s%%N); echo $(( (e-s)/1000 ))")
        mc, outc = call_ms(s, t_ws, wr % ("/workspace", "/workspace"))
        mt, outt = call_ms(s, t_ws, wr % ("/tmp", "/tmp"))
        wc, wt = int(outc["stdout"]) / 1000, int(outt["stdout"]) / 1000
        seqs = [c["seq"] for c in outc["committed"]]
        lines.append("| writing 1,000 small files inside a call: /workspace vs /tmp | %.0f ms "
                     "| %.0f ms | %.2f |" % (wc, wt, wc / wt))
        lines.append("| the rest of that call (mount, commit of the 1,000 files as seq %s "
                     "with %d written, unmount) vs the same call on /tmp | %.0f ms | %.0f ms "
                     "| %.2f |" % (",".join(map(str, seqs)), outc["committed"][0]["written"],
                                   mc - wc, mt - wt, (mc - wc) / (mt - wt)))
        s.stop()
        s = None

        # 4. coffer mount, sequential read of 1 GiB
        lines += mount_rows(work, data, mnt)

        publish(out, "Views", "bench/views.py", " Fixtures built with bench/populate.c "
                "(fsync off for the fixtures only).", lines)
    finally:
        if s:
            s.stop()
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
