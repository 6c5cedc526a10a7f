#!/usr/bin/env python3
"""The TypeScript SDK (sdk/typescript) against anchors in one run, on one cofferd:
bench/sdk_typescript.mjs measures a 1 KiB GET and PUT (the SDK vs bare fetch, taken in
turns, p50 of 300) and 256 MiB up from a file and down to nothing (the SDK streaming vs
curl, and the download vs bare fetch; medians of 3). Usage: bench/sdk_typescript.py [--out FILE] [--build DIR] (writes
its section of bench/results.md by default)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import ROOT, Cofferd, write_section  # noqa: E402

BIG = 256 << 20
TITLE = "TypeScript SDK (bench/sdk_typescript.py)"


def main():
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else \
        os.path.join(ROOT, "bench/results.md")
    build = sys.argv[sys.argv.index("--build") + 1] if "--build" in sys.argv else None
    tmp = tempfile.mkdtemp(prefix="coffer-bench-sdkts-")
    s = Cofferd(os.path.join(tmp, "data"), build=build)
    try:
        big = os.path.join(tmp, "big.bin")
        with open(big, "wb") as f:
            for _ in range(BIG >> 20):
                f.write(os.urandom(1 << 20))
        env = dict(os.environ, COFFER_URL=s.url, COFFER_KEY=s.key, BIG_FILE=big)
        p = subprocess.run(["node", os.path.join(HERE, "sdk_typescript.mjs")], env=env,
                           capture_output=True, text=True, timeout=1800)
        if p.returncode:
            raise SystemExit("sdk_typescript.mjs failed:\n" + p.stdout + p.stderr)
        res = json.loads(p.stdout.strip().splitlines()[-1])
    finally:
        s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    load = " ".join("%.2f" % x for x in os.getloadavg())
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    text = ["## " + TITLE, "",
            "| | SDK | anchor | anchor | SDK / anchor |", "|---|---|---|---|---|"]
    for name, a, b, anchor in res["rows"]:
        fmt = "%.0f" if "µs" in name else "%.2f"
        text.append(("| %s | " + fmt + " | " + fmt + " | %s | %.2fx |") % (name, a, b, anchor, a / b))
    text += ["", "Node %s. p50 of 300 small calls each side, taken in turns (the SDK and bare "
             "fetch share Node's kept-alive connections); medians of 3 large transfers each side, also in turns, the SDK "
             "streaming (`fromFile()` up through node:http, the download iterated chunk by "
             "chunk, never held whole). Peak RSS of the node process over the whole run: "
             "%.0f MiB. Load average at the end: %s on %d cores." % (
                 node, res["maxRssMiB"], load, os.cpu_count() or 0)]
    write_section(out, TITLE, "\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
