"""The TypeScript SDK (sdk/typescript) against a real cofferd: one case per test file
sdk/typescript/test/*.test.mjs, each run as `node --test FILE` with COFFER_URL, COFFER_KEY
(the shared server's admin key), COFFER_BIN (build/coffer, for `coffer connect`) and
COFFER_TEST_SCALE (harness.SCALE: the tests' waits scale with it) in its environment
(history.test.mjs also COFFER_STANDARDWEBHOOKS: tests/webhooks, where the reference
verifier is installed); node's report is shown when it fails. The tests import the committed
dist/, so they need no build step; test_dist_is_current compiles src/ with the tsc pinned
in sdk/typescript/package-lock.json (installed by `npm ci --prefer-offline`) and checks
that dist/ is exactly its output. Fails, never skips, when node is missing."""

import filecmp
import glob
import json
import os
import shutil
import subprocess
import tempfile

import harness
from harness import check, eq

SDK_DIR = os.path.join(harness.ROOT, "sdk", "typescript")
# test/history.test.mjs receives a real webhook delivery on 127.0.0.1
SERVER_OPTS = {"args": ["--webhook-allow-private"]}
TIMEOUT = 300
# Per file: the 1 GiB up and down takes about 30 s on an idle machine.
TIMEOUTS = {"large": 900}


def _node():
    node = shutil.which("node")
    check(node, "node is needed for the TypeScript SDK tests; install Node.js 18 or later "
          "(scripts/deps does)")
    out = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    major = int(out.lstrip("v").split(".")[0] or 0)
    check(major >= 18, "the SDK needs Node.js 18 or later, found %s" % out)
    return node


def _files(root):
    out = set()
    for d, _, names in os.walk(root):
        out.update(os.path.relpath(os.path.join(d, n), root) for n in names)
    return out


@harness.timeout(400)
def test_dist_is_current():
    """dist/ is what the pinned tsc makes of src/ now; its types serve a user's
    TypeScript (test/types.ts); the package has no runtime dependencies and says what it
    is (ESM, exports, Node 18+)."""
    node = harness.npm_ready(SDK_DIR, "typescript", "the TypeScript SDK's dist/ check")
    with open(os.path.join(SDK_DIR, "package.json")) as f:
        pkg = json.load(f)
    eq(pkg.get("type"), "module", "package.json type")
    eq(pkg.get("dependencies", {}), {}, "runtime dependencies")
    eq(pkg["engines"]["node"], ">=18", "engines.node")
    eq(pkg["exports"]["."]["types"], "./dist/index.d.ts", "exports types")
    eq(pkg["exports"]["."]["import"], "./dist/index.js", "exports import (ES module)")
    eq(pkg["exports"]["."]["require"], "./dist/cjs/index.js", "exports require (CommonJS)")
    out = tempfile.mkdtemp(prefix="sdkts-dist-")
    try:
        p = subprocess.run([node, os.path.join("node_modules", "typescript", "bin", "tsc"),
                            "-p", "tsconfig.json", "--outDir", out],
                           cwd=SDK_DIR, capture_output=True, text=True, timeout=300 * harness.SCALE)
        check(p.returncode == 0, "tsc failed:\n%s%s" % (p.stdout[-4000:], p.stderr[-2000:]))
        # the CommonJS build (dist/cjs/, with a package.json saying so), as `npm run build`
        p = subprocess.run([node, os.path.join("node_modules", "typescript", "bin", "tsc"),
                            "-p", "tsconfig.cjs.json", "--outDir", os.path.join(out, "cjs")],
                           cwd=SDK_DIR, capture_output=True, text=True, timeout=300 * harness.SCALE)
        check(p.returncode == 0, "tsc (CommonJS) failed:\n%s%s" % (p.stdout[-4000:], p.stderr[-2000:]))
        with open(os.path.join(out, "cjs", "package.json"), "w") as f:
            f.write('{"type":"commonjs"}\n')
        dist = os.path.join(SDK_DIR, "dist")
        built, committed = _files(out), _files(dist)
        eq(sorted(committed), sorted(built), "files in dist/ (run `npm run build` in sdk/typescript)")
        stale = [n for n in sorted(built)
                 if not filecmp.cmp(os.path.join(out, n), os.path.join(dist, n), shallow=False)]
        eq(stale, [], "dist/ files that differ from tsc's output of src/ (run `npm run build` "
           "in sdk/typescript and commit dist/)")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    # The published types, through the package's own name and exports, as a user's
    # TypeScript sees them (test/types.ts, compiled, never run).
    p = subprocess.run([node, os.path.join("node_modules", "typescript", "bin", "tsc"), "--noEmit",
                        "--strict", "--skipLibCheck", "--module", "nodenext", "--moduleResolution",
                        "nodenext", "--target", "es2022", "--types", "node", "test/types.ts"],
                       cwd=SDK_DIR, capture_output=True, text=True, timeout=300 * harness.SCALE)
    check(p.returncode == 0, "test/types.ts does not type-check against dist/*.d.ts:\n%s%s" % (
        p.stdout[-4000:], p.stderr[-2000:]))


def _case(path):
    stem = os.path.basename(path)[:-len(".test.mjs")]

    def case(srv):
        node = _node()
        env = dict(os.environ, COFFER_URL=srv.url, COFFER_KEY=srv.key,
                   COFFER_BIN=harness.bin_path("coffer"), COFFER_TEST_SCALE=str(harness.SCALE))
        if stem == "history":
            # verifyWebhook is cross-checked with the Standard Webhooks reference library
            harness.npm_ready("webhooks", "standardwebhooks", "the SDK's webhook tests")
            env["COFFER_STANDARDWEBHOOKS"] = os.path.join(harness.ROOT, "tests", "webhooks")
        limit = TIMEOUTS.get(stem, TIMEOUT) * harness.SCALE - 10
        try:
            p = subprocess.run([node, "--test", path], cwd=SDK_DIR, env=env,
                               capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired as e:
            raise AssertionError("node --test %s did not end within %ss:\n%s" % (
                os.path.basename(path), limit, (e.stdout or b"")[-6000:]))
        check(p.returncode == 0, "node --test %s failed (exit %s):\n%s\n%s" % (
            os.path.basename(path), p.returncode, p.stdout[-8000:], p.stderr[-3000:]))
        check("# pass " in p.stdout and "# fail 0" in p.stdout,
              "node's report names passes and no failure:\n" + p.stdout[-3000:])

    case.__name__ = case.__qualname__ = "test_" + stem.replace("-", "_")
    case.__doc__ = "sdk/typescript/test/%s run by node --test" % os.path.basename(path)
    return harness.timeout(TIMEOUTS.get(stem, TIMEOUT))(case)


for _path in sorted(glob.glob(os.path.join(SDK_DIR, "test", "*.test.mjs"))):
    _fn = _case(_path)
    globals()[_fn.__name__] = _fn
del _path, _fn


def seed_blocks(lang):
    """The code blocks of `lang` in seed 001 (../shared/seeds/001_*.txt beside the repo):
    each as its lines, stripped of their indentation."""
    import re
    seeds = glob.glob(os.path.join(harness.ROOT, "..", "shared", "seeds", "001_*.txt"))
    if not seeds:
        harness.skip("seed 001 is not at ../shared/seeds/001_*.txt beside the repository")
    with open(seeds[0], encoding="utf-8") as f:
        blocks = re.findall(r"```%s\n(.*?)```" % lang, f.read(), re.S)
    check(blocks, "seed 001 has %s blocks" % lang)
    return [[ln.strip() for ln in b.strip().splitlines()] for b in blocks]


def test_seed_001_verbatim():
    """Every ts block of seed 001 is in test/seed_001.test.mjs as written, between a
    `// seed:` and an `// end seed` line: the test runs the seed's own code."""
    import re
    with open(os.path.join(SDK_DIR, "test", "seed_001.test.mjs"), encoding="utf-8") as f:
        copies = [[ln.strip() for ln in c.strip().splitlines()]
                  for c in re.findall(r"// seed:\n(.*?)\n\s*// end seed", f.read(), re.S)]
    for block in seed_blocks("ts"):
        # the seed's `…` stands for settings a user adds: the copy leaves it out
        want = [ln.replace(", … }", " }") for ln in block]
        check(want in copies, "seed 001's block is not in seed_001.test.mjs as written:\n" +
              "\n".join(block))
