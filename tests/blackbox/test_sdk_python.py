"""The Python SDK's own tests (sdk/python/tests/test_*.py, `unittest`) against this
module's cofferd: one case per SDK test module, generated below, each running
`python3 -m unittest -v MODULE` with COFFER_URL, COFFER_KEY and COFFER_BIN (the coffer
binary, for `coffer connect`) in the environment and the package on PYTHONPATH. A failing
module shows unittest's output. The modules in ASYNC_TOO run a second time (test_async_*) with support.client() an
AsyncCoffer. One more case runs the README's examples as written."""

import os
import re
import subprocess
import sys

import harness

SDK = os.path.join(harness.ROOT, "sdk", "python")
TESTS = os.path.join(SDK, "tests")
# the 1 GiB round trip needs minutes under ASan or load; the others take seconds
TIMEOUTS = {"test_large": 600}
TIMEOUT = 180
# tests/test_history.py receives a real webhook delivery on 127.0.0.1
SERVER_OPTS = {"args": ["--webhook-allow-private"]}


def _python():
    """The interpreter that runs the SDK: this one if it has httpx (the SDK's one
    dependency), else Debian's /usr/bin/python3, where python3-httpx installs it (a
    python3 of its own, e.g. pyenv's, ahead in PATH does not see Debian's packages)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import httpx"], capture_output=True).returncode == 0:
            return exe
    raise AssertionError("no python3 with httpx: install python3-httpx (scripts/deps)")


def _env(srv, asynchronous=False):
    env = dict(os.environ)
    if asynchronous:
        env["COFFER_TEST_ASYNC"] = "1"  # support.client() is an AsyncCoffer
    env.update(COFFER_URL=srv.url, COFFER_KEY=srv.key, COFFER_BIN=harness.bin_path("coffer"),
               PYTHONPATH=os.path.join(SDK, "src") + os.pathsep + TESTS,
               PYTHONDONTWRITEBYTECODE="1", COFFER_TEST_SCALE=str(harness.SCALE))
    return env


def _run(srv, args, timeout, asynchronous=False):
    p = subprocess.run([_python()] + args, cwd=TESTS, env=_env(srv, asynchronous),
                       capture_output=True, timeout=timeout * harness.SCALE)
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    return p.returncode, out


def _case(module, asynchronous=False):
    t = TIMEOUTS.get(module, TIMEOUT)

    def case(srv):
        code, out = _run(srv, ["-m", "unittest", "-v", module], t - 10, asynchronous)
        if code != 0 or not re.search(r"^OK", out, re.M):
            raise AssertionError("sdk/python/tests/%s.py failed (exit %d):\n%s" % (
                module, code, out[-12000:]))
        skipped = re.search(r"skipped=(\d+)", out)
        harness.check(not skipped, "no SDK test skipped:\n" + out[-4000:])
    case.__name__ = ("test_async_" if asynchronous else "test_") + module[len("test_"):]
    case.__qualname__ = case.__name__
    case.timeout = t
    return case


# The modules that test the client through support.client() run a second time on
# AsyncCoffer (COFFER_TEST_ASYNC=1): the async client passes the same suite.
ASYNC_TOO = {"test_agents", "test_volumes", "test_client", "test_prompt", "test_retries",
             "test_turns_relay", "test_large", "test_history"}

for _f in sorted(os.listdir(TESTS)):
    if _f.startswith("test_") and _f.endswith(".py"):
        _fn = _case(_f[:-3])
        globals()[_fn.__name__] = _fn
        if _f[:-3] in ASYNC_TOO:
            _fn = _case(_f[:-3], asynchronous=True)
            globals()[_fn.__name__] = _fn


def test_readme_example(srv):
    """The python blocks of sdk/python/README.md, in order, run as written (in an empty
    folder: the second writes question.txt) and print what their comments say."""
    import tempfile
    with open(os.path.join(SDK, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    harness.check(len(blocks) >= 3, "README.md has its python examples")
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([_python(), "-c", "\n".join(blocks)], cwd=d, env=_env(srv),
                           capture_output=True, timeout=60 * harness.SCALE)
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    lines = out.splitlines()
    harness.eq(p.returncode, 0, "the README examples' exit code; output:\n" + out)
    harness.eq(lines[0], "# hello", "the five-line example prints the file")
    harness.check(re.match(r"\[File /workspace/uploads/req-[0-9a-f]+/question.txt "
                           r"\(text/plain, 13 bytes\)\]$", lines[1]), "the prompt's file line: " + out)
    harness.check("# hello" in lines[2], "the model reads the note: " + out)
    harness.contains(lines, "write docs/b.md", "the change followed")
    harness.eq(lines[-1], "someone else wrote version 0", "the 412 example")


def test_seed_001_verbatim():
    """Every python block of seed 001 (../shared/seeds/001_*.txt beside the repo) is in
    sdk/python/tests/test_seed_001.py as written, between `# seed:` and `# end seed`: the
    test runs the seed's own code, on AsyncCoffer and on Coffer."""
    import glob
    seeds = glob.glob(os.path.join(harness.ROOT, "..", "shared", "seeds", "001_*.txt"))
    if not seeds:
        harness.skip("seed 001 is not at ../shared/seeds/001_*.txt beside the repository")
    with open(seeds[0], encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    harness.check(blocks, "seed 001 has python blocks")
    with open(os.path.join(TESTS, "test_seed_001.py"), encoding="utf-8") as f:
        copies = [[ln.strip() for ln in c.strip().splitlines()]
                  for c in re.findall(r"# seed:\n(.*?)\n\s*# end seed", f.read(), re.S)]
    for b in blocks:
        want = [ln.strip() for ln in b.strip().splitlines()]
        harness.check(want in copies, "seed 001's block is not in test_seed_001.py as "
                      "written:\n" + b)


def test_mypy_strict():
    """The package's type hints hold: `mypy --strict` (Debian's mypy, a test package of
    scripts/deps) finds no issue in sdk/python/src/coffer, httpx's hints included."""
    import shutil
    import tempfile
    mypy = shutil.which("mypy")
    if not mypy:
        harness.skip("mypy is not installed (scripts/deps --test installs it)")
    with tempfile.TemporaryDirectory() as cache:
        p = subprocess.run([mypy, "--strict", "--cache-dir", cache, "coffer"],
                           cwd=os.path.join(SDK, "src"), capture_output=True,
                           timeout=300 * harness.SCALE)
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    harness.eq(p.returncode, 0, "mypy --strict's exit code; its output:\n" + out)
    harness.check("Success: no issues found" in out, "mypy's verdict: " + out)
