#!/usr/bin/env python3
"""tests/toml_suite.py — util/toml.c against the TOML test suite (toml-lang/toml-test), run
by hand (docs/cli.md, "coffer deploy"); the suite is fetched, never copied here.

    python3 tests/toml_suite.py /path/to/toml-test [-v]

Builds tests/toml_check.c against build/libcoffer.a (run `make` first), then for each file
of the suite's tests/files-toml-1.0.0: a valid/ file must parse and give the values of its
.json (toml-test's tagged form, compared as toml.h documents them: inf/nan as strings,
date-times as their text with 'T' and 'Z', a fraction compared by value); an invalid/ file
must be refused. Prints the counts and each failure; exit 1 when any fails."""
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build():
    out = "/tmp/coffer-toml-check"
    pkgs = subprocess.run(["make", "-s", "pkgs"], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.split()
    flags = subprocess.run(["pkg-config", "--cflags", "--libs"] + pkgs, check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-Iinclude", "-Isrc", "-o", out,
                    "tests/toml_check.c", "build/libcoffer.a"] + flags +
                   ["-lmagic", "-lpthread", "-lm"], cwd=ROOT, check=True)
    return out


def dt_norm(s):
    """A date-time's text with 'T'/'Z' upper-case and its fraction without trailing zeros."""
    s = s.upper().replace(" ", "T")
    return re.sub(r"\.(\d+)", lambda m: "." + (m.group(1).rstrip("0") or "0"), s)


def untag(v):
    """toml-test's tagged JSON -> what toml.h gives."""
    if isinstance(v, list):
        return [untag(x) for x in v]
    if isinstance(v, dict) and set(v) == {"type", "value"} and isinstance(v["value"], str):
        t, s = v["type"], v["value"]
        if t == "integer":
            return int(s)
        if t == "float":
            if s in ("inf", "+inf", "-inf", "nan", "+nan", "-nan"):
                return "-inf" if s == "-inf" else s.lstrip("+-")
            return float(s)
        if t == "bool":
            return s == "true"
        if t.startswith("date") or t.startswith("time"):
            return ("dt", dt_norm(s))
        return s
    return {k: untag(x) for k, x in v.items()}


def same(want, got):
    if isinstance(want, tuple):
        return isinstance(got, str) and dt_norm(got) == want[1]
    if isinstance(want, float):
        return isinstance(got, (int, float)) and (got == want or
                                                  math.isclose(got, want, rel_tol=1e-15))
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and \
            all(same(a, b) for a, b in zip(want, got))
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and \
            all(same(want[k], got[k]) for k in want)
    return type(want) is type(got) and want == got


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    verbose = "-v" in sys.argv
    suite = os.path.join(args[0] if args else "/tmp/toml-test", "tests")
    check = build()
    counts = {"valid": [0, 0], "invalid": [0, 0]}
    failures = []
    for name in open(os.path.join(suite, "files-toml-1.0.0")).read().split():
        if not name.endswith(".toml"):
            continue
        kind = name.split("/")[0]
        p = subprocess.run([check, os.path.join(suite, name)], capture_output=True)
        counts[kind][1] += 1
        if kind == "invalid":
            ok = p.returncode == 1
            why = "parsed: " + p.stdout.decode(errors="replace")[:200]
        else:
            want = untag(json.load(open(os.path.join(suite, name[:-5] + ".json"))))
            ok = p.returncode == 0 and same(want, json.loads(p.stdout))
            why = p.stdout.decode(errors="replace")[:300]
        counts[kind][0] += ok
        if not ok:
            failures.append((name, why.strip()))
    for name, why in failures:
        print("FAIL %s: %s" % (name, why if verbose else why[:120]))
    print("%d/%d valid files give the expected values, %d/%d invalid files refused" %
          tuple(counts["valid"] + counts["invalid"]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
