"""The agent grep tool (API.md Agents > File tools) against ripgrep: the same files
in a volume and in a directory, the same PCRE2 patterns (`rg -P`), the same matching
lines, counts and files; and the answer's order and cuts stay those of a search of
the files one by one in path order, though files are searched in parallel.
Skipped when `rg` is not installed (scripts/deps --test installs ripgrep)."""
import atexit
import os
import random
import shutil
import subprocess
import tempfile
import harness
from harness import check, eq, expect

WORDS = ["alpha", "beta", "needle", "Needle", "foo", "bar", "foobar", "a b", "x", "",
         "ne  edle", "naïve", "日本語", "tab\there", "a", "b", "12345", "needle7"]


def corpus():
    """{path: bytes}: 300 files (enough for grep to use its threads), some without a
    final newline, empty ones, blank lines, one binary file, nested folders."""
    rnd = random.Random(13)
    files = {}
    for i in range(300):
        lines = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 6)))
                 for _ in range(rnd.randint(0, 40))]
        text = "\n".join(lines)
        if rnd.random() < 0.7 and text:
            text += "\n"
        files["d%d/sub%d/f%03d.txt" % (i % 7, i % 3, i)] = text.encode()
    files["bin/data.bin"] = b"needle\x00needle\n"
    files["top.md"] = b"needle at the top\n\n\nneedle again\nlast"
    return files


_fixture = {}


def fixture(srv):
    """(agent id, directory) with corpus() in both, made once for the module."""
    if not shutil.which("rg"):
        harness.skip("rg (ripgrep) is not installed: scripts/deps --test installs it")
    if "aid" not in _fixture:
        files = corpus()
        vol = srv.create_volume()["id"]
        srv.put_many(vol, files, threads=8)
        aid = "grep-rg-%d" % os.getpid()
        expect(srv.put("/v1/agents/" + aid, json={"mounts": [
            {"volumeId": vol, "path": "/src", "mode": "ro"}]}), 201)
        d = tempfile.mkdtemp(prefix="coffer-grep-rg-")
        atexit.register(shutil.rmtree, d, True)
        for p, b in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
            with open(os.path.join(d, p), "wb") as f:
                f.write(b)
        _fixture.update(aid=aid, dir=d)
    return _fixture["aid"], _fixture["dir"]


def grep(srv, aid, **args):
    r = expect(srv.post("/v1/agents/%s/tools/grep" % aid, json=args), 200).json()
    check(r["ok"], "grep %r: %r" % (args, r))
    return r


def rg(d, pattern, *flags):
    """rg's lines with the directory prefix taken off (exit 1 is no match)."""
    p = subprocess.run(["rg", "-P", "--no-config", "--no-ignore", "--hidden", "-H",
                        "--no-heading", "--color", "never", *flags, "--", pattern, "."],
                       cwd=d, capture_output=True)
    check(p.returncode in (0, 1), "rg %r failed: %r" % (pattern, p.stderr))
    return [l[2:] if l.startswith("./") else l
            for l in p.stdout.decode().split("\n") if l and l != "--"]


def ours(out):
    """Our output's result lines, mount prefix off, notes (`[...]`) left out."""
    return [l[len("/src/"):] for l in out.split("\n") if l.startswith("/src/")]


CASES = [("needle", {}), ("ne+dle\\d", {}), ("^$", {}), ("x*", {}), ("\\bfoo\\b", {}),
         ("a\\sb", {}), ("a\\s*$", {}), ("(?<=a) b", {}), ("\\Aalpha", {}), ("bar$", {}),
         ("\\d++7", {}), ("foo|beta", {}), ("[^a-z ]", {}), ("naïve|日本", {}),
         ("NEEDLE", {"ignoreCase": True}), ("needle", {"ignoreCase": True}),
         ("(?i)beta", {}), ("\\x{65}dle", {}), ("b\\n", {}), ("tab\\t", {})]


def test_content_same_lines_as_rg(srv):
    aid, d = fixture(srv)
    for pat, extra in CASES:
        flags = ["-n"] + (["-i"] if extra.get("ignoreCase") else [])
        got = ours(grep(srv, aid, pattern=pat, path="/src", limit=10000, **extra)["output"])
        eq(sorted(got), sorted(rg(d, pat, *flags)), "content lines of %r %r" % (pat, extra))


def test_context_same_lines_as_rg(srv):
    aid, d = fixture(srv)
    for pat, n in (("needle", 1), ("foobar", 2), ("^$", 3)):
        got = ours(grep(srv, aid, pattern=pat, path="/src", limit=10000, context=n)["output"])
        eq(sorted(got), sorted(rg(d, pat, "-n", "-C", str(n))), "context %d of %r" % (n, pat))


def test_counts_and_files_same_as_rg(srv):
    aid, d = fixture(srv)
    for pat, extra in CASES:
        flags = ["-i"] if extra.get("ignoreCase") else []
        r = grep(srv, aid, pattern=pat, path="/src", outputMode="count", limit=10000, **extra)
        eq(sorted(ours(r["output"])), sorted(rg(d, pat, "-c", *flags)), "counts of %r" % pat)
        r = grep(srv, aid, pattern=pat, path="/src", outputMode="files", limit=10000, **extra)
        eq(sorted(ours(r["output"])), sorted(rg(d, pat, "-l", *flags)), "files of %r" % pat)
        eq(r["filesMatched"], len(rg(d, pat, "-l", *flags)), "filesMatched of %r" % pat)


def test_order_is_path_order_and_cuts_are_prefixes(srv):
    """Files come in byte order of their paths, lines in file order; a limit keeps
    the first N of the uncut answer, whatever order the threads finished in."""
    aid, d = fixture(srv)
    full = grep(srv, aid, pattern="needle", path="/src", limit=10000)
    paths = [m["path"] for m in full["matches"]]
    files = list(dict.fromkeys(paths))
    eq(files, sorted(files, key=lambda p: p.encode()), "files in path order")
    for f in files:
        lines = [m["line"] for m in full["matches"] if m["path"] == f]
        eq(lines, sorted(lines), "lines of %s in order" % f)
    check(len(paths) > 40, "enough matches to cut: %d" % len(paths))
    for limit in (1, 7, 40):
        cut = grep(srv, aid, pattern="needle", path="/src", limit=limit)
        eq(cut["matches"], full["matches"][:limit], "limit %d keeps the first" % limit)
        check(cut["truncated"], "limit %d cuts" % limit)
        eq(cut["filesMatched"], len(set(paths[:limit + 1])), "files counted up to the cut")
        eq(ours(cut["output"]), ours(full["output"])[:limit], "output of limit %d" % limit)
    fl = grep(srv, aid, pattern="needle", path="/src", outputMode="files", limit=10000)
    for limit in (1, 5):
        cut = grep(srv, aid, pattern="needle", path="/src", outputMode="files", limit=limit)
        eq(cut["matches"], fl["matches"][:limit], "files limit %d" % limit)
    eq(full["binarySkipped"], 1, "the binary file is skipped and counted")
