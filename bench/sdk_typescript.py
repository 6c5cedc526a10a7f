#!/usr/bin/env python3
"""The TypeScript SDK (sdk/typescript) against anchors in one run, on one cofferd:

  bench/sdk_typescript.mjs (one node process) measures a 1 KiB GET and PUT (the SDK vs
    bare fetch, taken in turns, p50 of 300) and 1,000 small writes one after another
    (the SDK vs bare fetch, each the whole 1,000, medians of 3 in turns);
  N MiB (1 GiB by default) up from a file and down to nothing: the SDK streaming vs curl
    (-T FILE, -o /dev/null), and the download vs bare fetch too, each transfer in its
    own child process (`node sdk_typescript.mjs MODE ...` doing that one transfer, or
    curl) so that its peak RSS is the client's alone; medians of 3 each side in turns,
    the larger of the 3 peak RSS.

Usage: bench/sdk_typescript.py [--mib N] [--out FILE] [--build DIR] (writes its section
of bench/results.md by default)."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import ROOT, Cofferd, run_child, run_stamp, write_section  # noqa: E402

LARGE = 3
TITLE = "TypeScript SDK (bench/sdk_typescript.py)"
MJS = os.path.join(HERE, "sdk_typescript.mjs")


def transfers(fa, fb, size):
    """Two transfers LARGE times each, in turns (who goes first alternating): each fn(i)
    runs one child and returns (seconds, bytes moved, peak RSS MiB). The medians of the
    seconds and the larger peak RSS of each side."""
    runs = {fa: [], fb: []}
    for i in range(LARGE):
        for fn in ((fa, fb) if i % 2 == 0 else (fb, fa)):
            secs, moved, rss = fn(i)
            if moved != size:
                raise RuntimeError("moved %d bytes of %d" % (moved, size))
            runs[fn].append((secs, rss))
    return [(statistics.median(t for t, _ in runs[fn]), max(r for _, r in runs[fn]))
            for fn in (fa, fb)]


def version(*argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.stdout.split()[1 if argv[0].endswith("curl") else 0] if p.returncode == 0 else "none"


def main():
    arg = lambda name, dflt: sys.argv[sys.argv.index(name) + 1] if name in sys.argv else dflt
    out = arg("--out", os.path.join(ROOT, "bench/results.md"))
    build = arg("--build", None)
    mib = int(arg("--mib", "1024"))
    size = mib << 20
    when, commit, load0 = run_stamp()
    tmp = tempfile.mkdtemp(prefix="coffer-bench-sdkts-")
    s = Cofferd(os.path.join(tmp, "data"), build=build)
    large, rest = [], None
    try:
        env = dict(os.environ, COFFER_URL=s.url, COFFER_KEY=s.key)
        p = subprocess.run(["node", MJS], env=env, capture_output=True, text=True, timeout=1800)
        if p.returncode:
            raise SystemExit("sdk_typescript.mjs failed:\n" + p.stdout + p.stderr)
        res = json.loads(p.stdout.strip().splitlines()[-1])
        vid = res["volume"]
        base = "%s/v1/volumes/%s/files/" % (s.url, vid)
        big = os.path.join(tmp, "big.bin")
        with open(big, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        curl = shutil.which("curl")
        hdr = ["-H", "Authorization: Bearer " + s.key]

        def node(*args):
            out, rss = run_child(["node", MJS, args[0], vid, *args[1:]], env=env, timeout=1800)
            secs, moved = out.split()
            return float(secs), int(moved), rss

        def curl_run(what, *args):
            out, rss = run_child([curl, "-sSf", "-o", "/dev/null", "-w",
                                  "%{time_total} %{size_" + what + "}", *hdr, *args],
                                 timeout=1800)
            secs, moved = out.split()
            return float(secs), int(moved), rss

        if curl:
            rest = (node("rest", "small.bin")[2], curl_run("download", base + "small.bin")[2])
            large.append(("%d MiB up from a file" % mib, *transfers(
                lambda i: node("up", "s.bin", big),
                lambda i: curl_run("upload", "-T", big, base + "c.bin"), size),
                "curl -T"))
            large.append(("%d MiB down to nothing" % mib, *transfers(
                lambda i: node("down", "s.bin"),
                lambda i: curl_run("download", base + "c.bin"), size), "curl"))
            large.append(("%d MiB down to nothing" % mib, *transfers(
                lambda i: node("down", "s.bin"),
                lambda i: node("fetch-down", "c.bin"), size), "fetch"))
    finally:
        s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = " ".join("%.2f" % x for x in os.getloadavg())
    text = ["## " + TITLE, "",
            "%s, commit %s, Node %s, curl %s; load average (1/5/15 min) at the start %s, at "
            "the end %s, on %d cores (a shared machine: compare within one run)."
            % (when, commit, version("node", "--version"), version("curl", "--version"),
               load0, load1, os.cpu_count() or 0), "",
            "| | SDK | anchor | anchor | SDK / anchor |", "|---|---|---|---|---|"]
    for name, a, b, anchor in res["rows"]:
        fmt = "%.0f" if "µs" in name else "%.2f"
        text.append(("| %s | " + fmt + " | " + fmt + " | %s | %.2fx |") % (name, a, b, anchor, a / b))
    text += ["", "One node process: p50 of 300 small calls each side, taken in turns (the SDK "
             "and bare fetch share Node's kept-alive connections); 1,000 writes: medians of "
             "%d runs of each, in turns." % LARGE]
    if large:
        text += ["", "| | SDK s | anchor s | anchor | SDK MiB/s | anchor MiB/s | "
                 "SDK / anchor throughput | SDK peak RSS MiB | anchor peak RSS MiB |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for name, (ta, ra), (tb, rb), anchor in large:
            text.append("| %s | %.2f | %.2f | %s | %.0f | %.0f | %.2fx | %.0f | %.0f |" % (
                name, ta, tb, anchor, mib / ta, mib / tb, tb / ta, ra, rb))
        text += ["", "Each large transfer in its own child process: `node sdk_typescript.mjs "
                 "MODE` doing that one transfer (a new `Coffer`, then `vol.write(name, "
                 "fromFile(file))` up through node:http, or `vol.download(name)` iterated "
                 "chunk by chunk and dropped; the fetch anchor iterates a bare fetch's body "
                 "the same way), curl `-T FILE` or `-o /dev/null` (each side's uploads "
                 "replace one file: a volume's 4 GiB ceiling would not hold six); seconds "
                 "are the "
                 "transfer's own (timed in the child; curl's time_total), medians of %d "
                 "each side, in turns, who goes first alternating; every run checked to "
                 "move all %d bytes. Peak RSS: that child's high-water mark (GNU time's %%M "
                 "or VmHWM, see benchlib.run_child), the larger of the %d. For scale, a "
                 "child doing one 1 KiB read peaks at %.0f MiB (node with the SDK loaded) "
                 "and %.0f MiB (curl): what a transfer adds over that is its buffers."
                 % (LARGE, size, LARGE, rest[0], rest[1])]
    else:
        text += ["", "No curl on PATH: the large transfers were not run."]
    write_section(out, TITLE, "\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
