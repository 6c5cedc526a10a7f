"""The README's five-minute tour, run as written (issue 39 item 1): its three shell blocks,
pasted in order into one bash in a folder beside a cofferd's data dir (`data/`, `build/`),
with nothing edited but the server's address (`$COFFER_URL`, which the tour honours).
Every command must succeed, and each example answer the tour shows on a line of its own
(`# {...}`, with `…` for what differs run to run) must match what it printed (curl's
answers follow each other without a newline, as they do in a terminal)."""

import os
import re
import signal
import subprocess
import tempfile

import harness
from harness import check, contains, eq

TOUR_START, TOUR_END = "## Five-minute tour", "## Running it for others"


def doc_blocks(doc, start, end):
    """The ```sh blocks of `doc` between the headings `start` and `end`, in order."""
    with open(os.path.join(harness.ROOT, doc), encoding="utf-8") as f:
        text = f.read()
    a = text.index(start)
    b = text.find(end, a) if end else -1
    part = text[a:b if b > 0 else len(text)]
    return re.findall(r"^```sh\n(.*?)^```$", part, re.S | re.M)


def tour_blocks():
    return doc_blocks("README.md", TOUR_START, TOUR_END)


def run_blocks(blocks, srv, work):
    """Runs the blocks in one `bash -e -o pipefail` in `work` (where `data/` is srv's data
    dir and `build/` the build), build/ on the PATH as after `make install`, COFFER_URL
    naming srv and no other COFFER_ variable; returns stdout (text) once it ended 0."""
    os.symlink(os.path.join(harness.ROOT, harness.BUILD), os.path.join(work, "build"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("COFFER_")}
    env["COFFER_URL"] = srv.url
    env["PATH"] = os.path.join(work, "build") + os.pathsep + env.get("PATH", "")
    script = "set -e -o pipefail\n" + "\n".join(blocks)
    p = subprocess.Popen(["bash", "-c", script], cwd=work, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=240 * harness.SCALE)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError("the block did not end; it printed %r, stderr %r"
                             % (out[-3000:], err[-3000:]))
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # anything it left behind
        except ProcessLookupError:
            pass
    text = out.decode("utf-8", "replace")
    eq(p.returncode, 0, "the exit code (stdout %r, stderr %r)"
       % (text[-3000:], err.decode("utf-8", "replace")[-3000:]))
    return text


def shown_answers(block):
    """The example answers a block shows on lines of their own, as regular expressions."""
    out = []
    for line in block.splitlines():
        line = line.strip()
        if line.startswith("# {"):
            shown = line[2:]
            out.append((shown, re.compile(".*?".join(re.escape(p) for p in shown.split("…")))))
    return out


def test_tour_blocks_found():
    blocks = tour_blocks()
    eq(len(blocks), 3, "the tour has three shell blocks (volumes; agents, turns, relay; CLI)")
    for b in blocks:
        code = "\n".join(l.split(" # ")[0] for l in b.splitlines() if not l.lstrip().startswith("#"))
        check("…" not in code, "no placeholder to replace by hand in %r" % code)
        check(not re.search(r"(?<![$\w])(UID|TOKEN|VOL|ID)\b(?!=)", code),
              "no placeholder word to replace by hand in %r" % code)


@harness.timeout(300)
def test_readme_tour_runs_as_written():
    if harness.ENGINE != "embedded":
        harness.skip("the tour is the embedded default's (`make run`; its gc/fsck open ./data)")
    blocks = tour_blocks()
    work = tempfile.mkdtemp(prefix="coffer-tour-")
    with harness.Server(data=os.path.join(work, "data")) as srv:
        text = run_blocks(blocks, srv, work)
        for b in blocks:
            for shown, rx in shown_answers(b):
                check(rx.search(text),
                      "the tour shows %s, but printed no such line:\n%s" % (shown, text[-6000:]))
        # what each step is for
        contains(text, "# hello", "the file read back")
        contains(text, '"type":"precondition_failed"', "the conditional write refused")
        check(re.search(r"(^|\})a\.md$", text, re.M), "tar lists the archive's a.md: %r" % text)
        contains(text, '"exitCode":0', "the confined call ran")
        contains(text, '"name":"readme.txt"', "the relay listed the user's folder")
        contains(text, "hello from my laptop", "the relay read the user's file")
        check(re.search(r"^\s+1\s+8\s+\S+\s+docs/a\.md$", text, re.M),
              "coffer ls by name lists docs/a.md: %r" % text)
        check(re.search(r"^ok\s+yes$", text, re.M), "fsck says ok: %r" % text)


@harness.timeout(300)
def test_cli_doc_examples_run_as_written():
    """docs/cli.md's example session, as written, with coffer on the PATH."""
    blocks = doc_blocks("docs/cli.md", "## Examples", None)
    eq(len(blocks), 1, "docs/cli.md has one example block")
    work = tempfile.mkdtemp(prefix="coffer-clidoc-")
    with harness.Server(data=os.path.join(work, "data")) as srv:
        text = run_blocks(blocks, srv, work)
        check(re.match(r"vol_[a-z2-7]{20}\n", text), "--jq .id printed the id: %r" % text)
        check(re.search(r"^\s+1\s+18\s+\S+\s+docs/report\.txt$", text, re.M), "ls: %r" % text)
        check(re.search(r"^docs/report\.txt$", text, re.M), "tar lists it: %r" % text)
        check(text.endswith("quarterly figures\n"), "the link's download: %r" % text[-200:])
        with open(os.path.join(work, "got.txt"), "rb") as f:
            eq(f.read(), b"quarterly figures\n", "coffer get -o")
