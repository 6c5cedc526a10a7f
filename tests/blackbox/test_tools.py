"""File tools as the model calls them: POST /v1/agents/{id}/tools/{read,write,edit,ls,glob,
grep} (API.md Agents > File tools). Answers are {ok, output, ...} with HTTP 200, also for
refusals the model can act on; bad arguments are 400."""

import re

import agentlib
import harness
from agentlib import agent_url, files_url
from harness import check, contains, eq, expect, expect_error

NUM_LINE = re.compile(r"^ *(\d+)\t(.*)$")


def new_id(prefix="tl"):
    return agentlib.new_id(prefix)


def make_agent(srv, aid=None, key=harness._ABSENT, **body):
    return agentlib.make_agent(srv, aid or new_id(), key, **body)


def call(srv, aid, name, key=harness._ABSENT, **args):
    return srv.post(agent_url(aid, "/tools/" + name), json=args, key=key)


def tool(srv, aid, name, key=harness._ABSENT, **args):
    """Runs a tool; asserts HTTP 200 and the {ok: bool, output: str} shape."""
    r = expect(call(srv, aid, name, key=key, **args), 200)
    j = r.json()
    check(isinstance(j, dict) and isinstance(j.get("ok"), bool),
          "tool answer has a boolean ok\n" + r.describe())
    check(isinstance(j.get("output"), str), "tool answer has a string output\n" + r.describe())
    j["_resp"] = r
    return j


def ok(srv, aid, name, **args):
    j = tool(srv, aid, name, **args)
    check(j["ok"] is True, "%s %r should succeed\n%s" % (name, args, j["_resp"].describe()))
    return j


def refused(srv, aid, name, *phrases, **args):
    """ok:false with HTTP 200; output mentions every phrase (case-insensitive)."""
    j = tool(srv, aid, name, **args)
    check(j["ok"] is False, "%s %r should be refused (ok:false)\n%s" % (
        name, args, j["_resp"].describe()))
    for p in phrases:
        check(p.lower() in j["output"].lower(), "%s refusal should say %r\n%s" % (
            name, p, j["_resp"].describe()))
    return j


def numbered(output):
    """[(n, text)] of the cat -n style lines of a read output."""
    out = []
    for line in output.split("\n"):
        m = NUM_LINE.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


def notes(output):
    """The lines of an output that are not numbered file lines."""
    return [l for l in output.split("\n") if l.strip() and not NUM_LINE.match(l)]


def lines_of(output):
    return [l for l in output.split("\n") if l.strip()]


def ws_agent(srv, **body):
    """An agent with its default workspace: (agent id, workspace volume id)."""
    a = make_agent(srv, **body)
    return a["id"], a["workspaceVolumeId"]


# ------------------------------------------------------------------ read

def test_read_numbered_lines(srv):
    aid, ws = ws_agent(srv)
    text = "first line\n\tindented\n\nlast"
    srv.put_ok(ws, "a.txt", text.encode())
    j = ok(srv, aid, "read", path="/workspace/a.txt")
    eq(numbered(j["output"]), [(1, "first line"), (2, "\tindented"), (3, ""), (4, "last")],
       "numbered lines")
    # right-aligned numbers (cat -n): every number line has the same width before the tab
    widths = {len(l.split("\t", 1)[0]) for l in j["output"].split("\n") if NUM_LINE.match(l)}
    eq(len(widths), 1, "line numbers right-aligned to one width")
    # the trailing newline does not make an extra empty line
    srv.put_ok(ws, "b.txt", b"x\ny\n")
    eq(numbered(ok(srv, aid, "read", path="/workspace/b.txt")["output"]), [(1, "x"), (2, "y")],
       "file ending in a newline")
    # relative to the first mount
    eq(numbered(ok(srv, aid, "read", path="b.txt")["output"]), [(1, "x"), (2, "y")], "relative")
    check("version" not in j["output"].lower(), "output never shows versions: %r" % j["output"])


def test_read_offset_limit(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "n.txt", "".join("line %d\n" % i for i in range(1, 11)).encode())
    j = ok(srv, aid, "read", path="/workspace/n.txt", offset=3, limit=2)
    eq(numbered(j["output"]), [(3, "line 3"), (4, "line 4")], "offset 3 limit 2")
    check(notes(j["output"]), "a cut read says so: %r" % j["output"])
    j = ok(srv, aid, "read", path="/workspace/n.txt", offset=9)
    eq(numbered(j["output"]), [(9, "line 9"), (10, "line 10")], "offset to the end")
    j = ok(srv, aid, "read", path="/workspace/n.txt", limit=10)
    eq(len(numbered(j["output"])), 10, "limit = all lines")
    for bad in ({"offset": -1}, {"limit": -5}, {"offset": "3"}, {"limit": 1.5},
                {"limit": 10001}):
        expect_error(call(srv, aid, "read", path="/workspace/n.txt", **bad), 400)


def test_read_default_limit_2000(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "big.txt", "".join("row %d\n" % i for i in range(1, 2501)).encode())
    j = ok(srv, aid, "read", path="/workspace/big.txt")
    nums = numbered(j["output"])
    eq(len(nums), 2000, "default limit: 2000 lines")
    eq((nums[0], nums[-1]), ((1, "row 1"), (2000, "row 2000")), "first and last lines")
    n = notes(j["output"])
    check(n and any(re.search(r"\d", l) for l in n),
          "the answer says where it cut (a note with a number): %r" % n)
    j = ok(srv, aid, "read", path="/workspace/big.txt", offset=2001)
    nums = numbered(j["output"])
    eq((len(nums), nums[0], nums[-1]), (500, (2001, "row 2001"), (2500, "row 2500")), "rest")


def test_read_long_line_cut(srv):
    aid, ws = ws_agent(srv)
    long = "x" * 100_000
    srv.put_ok(ws, "long.txt", ("short\n" + long + "\nafter\n").encode())
    j = ok(srv, aid, "read", path="/workspace/long.txt")
    nums = numbered(j["output"])
    eq([n for n, _ in nums], [1, 2, 3], "three numbered lines")
    eq(nums[0][1], "short", "line 1")
    eq(nums[2][1], "after", "line 3")
    check(len(nums[1][1]) < 50_000 and nums[1][1].startswith("xxxx"),
          "a 100,000-character line is cut (got %d chars)" % len(nums[1][1]))
    check(len(j["output"]) < 60_000, "output of a long-line file is bounded")
    low = j["output"].lower()
    check(any(w in low for w in ("truncat", "cut", "long", "shortened", "chars", "characters")),
          "the cut is noted: %r" % j["output"][-500:])


def test_read_missing_dir_empty(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "d/inner.txt", b"i")
    srv.put_ok(ws, "empty.txt", b"")
    j = refused(srv, aid, "read", path="/workspace/nope.txt")
    low = j["output"].lower()
    check(any(w in low for w in ("not found", "no such", "does not exist", "doesn't exist",
                                 "not exist")), "missing file named as such: %r" % j["output"])
    j = refused(srv, aid, "read", "director", path="/workspace/d")
    j = ok(srv, aid, "read", path="/workspace/empty.txt")
    eq(numbered(j["output"]), [], "an empty file has no numbered lines")
    check(j["output"].strip(), "an empty file is said to be empty, not answered with nothing")
    # arguments
    expect_error(call(srv, aid, "read"), 400)
    expect_error(call(srv, aid, "read", path=5), 400)
    expect_error(call(srv, aid, "read", path="/workspace/../etc/passwd"), 400)
    expect_error(srv.post(agent_url(aid, "/tools/read"), body=b"[1]",
                          headers={"Content-Type": "application/json"}), 400)
    expect_error(srv.post(agent_url(aid, "/tools/read"), body=b"{",
                          headers={"Content-Type": "application/json"}), 400)


def test_path_outside_mounts(srv):
    aid, ws = ws_agent(srv)
    for name, args in (("read", {"path": "/etc/passwd"}),
                       ("write", {"path": "/etc/x.txt", "content": "x"}),
                       ("ls", {"path": "/etc"})):
        r = call(srv, aid, name, **args)
        if r.status == 200:
            eq(r.json().get("ok"), False, "%s outside every mount: ok:false\n%s" % (
                name, r.describe()))
        else:
            expect_error(r, r.status)
            check(r.status in (400, 404), "%s outside every mount: 400/404/ok:false\n%s" % (
                name, r.describe()))
    eq(srv.seq(ws), 0, "nothing written")


# ------------------------------------------------------------------ write

def test_write_creates_parents_and_shows_in_volume(srv):
    aid, ws = ws_agent(srv)
    j = ok(srv, aid, "write", path="/workspace/a/b/c.txt", content="hello\nworld\n")
    check("version" not in j["output"].lower(), "no versions in output: %r" % j["output"])
    eq(expect(srv.get_file(ws, "a/b/c.txt"), 200).body, b"hello\nworld\n", "written bytes")
    eq(expect(srv.get(files_url(aid, "/workspace/a/b/c.txt")), 200).body, b"hello\nworld\n",
       "via the agent files API")
    # relative path: against the first mount
    ok(srv, aid, "write", path="rel/r.txt", content="r")
    eq(expect(srv.get_file(ws, "rel/r.txt"), 200).body, b"r", "relative write")
    # unicode and empty content
    ok(srv, aid, "write", path="/workspace/u.txt", content="été ☃")
    eq(expect(srv.get_file(ws, "u.txt"), 200).body, "été ☃".encode(), "utf-8 content")
    ok(srv, aid, "write", path="/workspace/empty.txt", content="")
    eq(expect(srv.get_file(ws, "empty.txt"), 200).body, b"", "empty content")
    # bad arguments
    expect_error(call(srv, aid, "write", path="/workspace/x.txt"), 400)
    expect_error(call(srv, aid, "write", content="x"), 400)
    expect_error(call(srv, aid, "write", path="/workspace/x.txt", content=5), 400)
    expect_error(call(srv, aid, "write", path="/workspace/x/../y.txt", content="y"), 400)
    expect_error(srv.get_file(ws, "x.txt"), 404)
    expect_error(srv.get_file(ws, "y.txt"), 404)


def test_write_over_unread_file(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "app.txt", b"made by the app")
    refused(srv, aid, "write", "read it first", path="/workspace/app.txt", content="model")
    eq(expect(srv.get_file(ws, "app.txt"), 200).body, b"made by the app", "unchanged")
    ok(srv, aid, "read", path="/workspace/app.txt")
    ok(srv, aid, "write", path="/workspace/app.txt", content="model")
    eq(expect(srv.get_file(ws, "app.txt"), 200).body, b"model", "written after a read")
    # a file it wrote itself needs no read before the next write
    ok(srv, aid, "write", path="/workspace/app.txt", content="model 2")
    ok(srv, aid, "write", path="/workspace/mine.txt", content="1")
    ok(srv, aid, "write", path="/workspace/mine.txt", content="2")
    eq(expect(srv.get_file(ws, "mine.txt"), 200).body, b"2", "own file rewritten")


def test_write_stale_file(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "s.txt", b"v1")
    ok(srv, aid, "read", path="/workspace/s.txt")
    srv.put_ok(ws, "s.txt", b"v2 by someone else")
    j = refused(srv, aid, "write", "changed since you last read it",
                path="/workspace/s.txt", content="model")
    check("read it again" in j["output"].lower() or "read it" in j["output"].lower(),
          "says to read again: %r" % j["output"])
    check("version" not in j["output"].lower(), "no versions in output: %r" % j["output"])
    eq(expect(srv.get_file(ws, "s.txt"), 200).body, b"v2 by someone else", "unchanged")
    ok(srv, aid, "read", path="/workspace/s.txt")
    ok(srv, aid, "write", path="/workspace/s.txt", content="model")
    eq(expect(srv.get_file(ws, "s.txt"), 200).body, b"model", "after reading again")
    # after its own write, another's write makes it stale again
    srv.put_ok(ws, "s.txt", b"v3")
    refused(srv, aid, "write", "changed since you last read it",
            path="/workspace/s.txt", content="x")
    # removed and re-created by someone else: stale too
    ok(srv, aid, "read", path="/workspace/s.txt")
    expect(srv.delete(srv.file_path(ws, "s.txt")), 200, 204)
    srv.put_ok(ws, "s.txt", b"reborn")
    r = tool(srv, aid, "write", path="/workspace/s.txt", content="x")
    eq(r["ok"], False, "write over a re-created file the agent never read\n%s" % r["_resp"].describe())
    eq(expect(srv.get_file(ws, "s.txt"), 200).body, b"reborn", "unchanged")


def test_write_same_content_new_version_ok(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "same.txt", b"same bytes")
    ok(srv, aid, "read", path="/workspace/same.txt")
    v1 = srv.list_files(ws)["files"][0]["version"]
    srv.put_ok(ws, "same.txt", b"same bytes")     # the version moves, the content does not
    v2 = srv.list_files(ws)["files"][0]["version"]
    check(v2 > v1, "version moved")
    ok(srv, aid, "write", path="/workspace/same.txt", content="new content")
    eq(expect(srv.get_file(ws, "same.txt"), 200).body, b"new content", "written")
    # and for edit
    srv.put_ok(ws, "same.txt", b"new content")
    ok(srv, aid, "edit", path="/workspace/same.txt", oldString="new", newString="newer")
    eq(expect(srv.get_file(ws, "same.txt"), 200).body, b"newer content", "edited")


def test_write_deleted_after_read(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "gone.txt", b"g")
    ok(srv, aid, "read", path="/workspace/gone.txt")
    expect(srv.delete(srv.file_path(ws, "gone.txt")), 200, 204)
    # the file no longer exists: writing it creates it (nothing to overwrite), or a stale
    # refusal; either way no error status and the answer is coherent with the volume
    j = tool(srv, aid, "write", path="/workspace/gone.txt", content="again")
    r = srv.get_file(ws, "gone.txt")
    if j["ok"]:
        eq(expect(r, 200).body, b"again", "written")
    else:
        expect(r, 404)


# ------------------------------------------------------------------ edit

def test_edit_unique_and_replace_all(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "e.py", b"def f(x):\n    return x + 1  # one\n\nprint(f(1))  # one\n")
    refused(srv, aid, "edit", "read it first", path="/workspace/e.py",
            oldString="def f", newString="def g")
    ok(srv, aid, "read", path="/workspace/e.py")
    j = refused(srv, aid, "edit", path="/workspace/e.py", oldString="# one", newString="# two")
    check("2" in j["output"], "says how many matches (2): %r" % j["output"])
    check("replaceall" in j["output"].lower().replace(" ", "") or "unique" in j["output"].lower()
          or "match" in j["output"].lower(), "explains the ambiguity: %r" % j["output"])
    eq(expect(srv.get_file(ws, "e.py"), 200).body,
       b"def f(x):\n    return x + 1  # one\n\nprint(f(1))  # one\n", "unchanged")
    j = ok(srv, aid, "edit", path="/workspace/e.py", oldString="def f(x):", newString="def g(x):")
    check("version" not in j["output"].lower(), "no versions in output: %r" % j["output"])
    ok(srv, aid, "edit", path="/workspace/e.py", oldString="# one", newString="# two",
       replaceAll=True)
    eq(expect(srv.get_file(ws, "e.py"), 200).body,
       b"def g(x):\n    return x + 1  # two\n\nprint(f(1))  # two\n", "edited")
    # multi-line, literal (no regex, no $ substitutions)
    ok(srv, aid, "edit", path="/workspace/e.py", oldString="  # two\n\nprint(f(1))",
       newString="\nprint(f.*(1)) $1 \\1")
    eq(expect(srv.get_file(ws, "e.py"), 200).body,
       b"def g(x):\n    return x + 1\nprint(f.*(1)) $1 \\1  # two\n", "multi-line literal edit")
    ok(srv, aid, "edit", path="/workspace/e.py", oldString="f.*(1)", newString="f(2)")
    eq(expect(srv.get_file(ws, "e.py"), 200).body,
       b"def g(x):\n    return x + 1\nprint(f(2)) $1 \\1  # two\n", "regex chars matched literally")
    # replaceAll with a single match works too
    ok(srv, aid, "edit", path="/workspace/e.py", oldString="g(x)", newString="h(x)",
       replaceAll=True)


def test_edit_no_match_shows_nearest(srv):
    aid, ws = ws_agent(srv)
    body = "alpha one\nbeta gamma delta\nepsilon\nzeta eta theta\n"
    srv.put_ok(ws, "n.txt", body.encode())
    ok(srv, aid, "read", path="/workspace/n.txt")
    j = refused(srv, aid, "edit", path="/workspace/n.txt", oldString="beta gama delta",
                newString="x")
    check("beta gamma delta" in j["output"], "the nearest line is shown: %r" % j["output"])
    # whitespace differences are not matched silently
    refused(srv, aid, "edit", path="/workspace/n.txt", oldString="alpha  one", newString="x")
    eq(expect(srv.get_file(ws, "n.txt"), 200).body, body.encode(), "unchanged")


def test_edit_bad_arguments(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "b.txt", b"abc")
    ok(srv, aid, "read", path="/workspace/b.txt")
    expect_error(call(srv, aid, "edit", path="/workspace/b.txt", oldString="", newString="x"), 400)
    expect_error(call(srv, aid, "edit", path="/workspace/b.txt", oldString="abc",
                      newString="abc"), 400)
    expect_error(call(srv, aid, "edit", path="/workspace/b.txt", oldString="a"), 400)
    expect_error(call(srv, aid, "edit", path="/workspace/b.txt", newString="a"), 400)
    expect_error(call(srv, aid, "edit", oldString="a", newString="b"), 400)
    expect_error(call(srv, aid, "edit", path="/workspace/b.txt", oldString="a", newString="b",
                      replaceAll="yes"), 400)
    expect_error(call(srv, aid, "edit", path="/workspace/b.txt", oldString="a", newString=None), 400)
    expect_error(call(srv, aid, "edit", path="/workspace/b.txt", oldString="a", newString="b",
                      bogus=1), 400)
    eq(expect(srv.get_file(ws, "b.txt"), 200).body, b"abc", "unchanged")
    eq(srv.seq(ws), 1, "no write")


def test_partial_read_counts_as_read(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "p.txt", b"1\n2\n3\nfour\n")
    ok(srv, aid, "read", path="/workspace/p.txt", limit=1)
    ok(srv, aid, "edit", path="/workspace/p.txt", oldString="four", newString="4")
    eq(expect(srv.get_file(ws, "p.txt"), 200).body, b"1\n2\n3\n4\n", "edited after a partial read")


def test_write_onto_folder_or_under_file(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "d/f.txt", b"f")
    refused(srv, aid, "write", path="/workspace/d", content="x")
    refused(srv, aid, "write", path="/workspace/d/f.txt/g", content="x")
    refused(srv, aid, "write", path="/workspace", content="x")
    eq(srv.seq(ws), 1, "nothing written")


def test_edit_stale_and_missing(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "s.txt", b"one two")
    ok(srv, aid, "read", path="/workspace/s.txt")
    srv.put_ok(ws, "s.txt", b"one two three")
    refused(srv, aid, "edit", "changed since you last read it", path="/workspace/s.txt",
            oldString="two", newString="2")
    eq(expect(srv.get_file(ws, "s.txt"), 200).body, b"one two three", "unchanged")
    ok(srv, aid, "read", path="/workspace/s.txt")
    ok(srv, aid, "edit", path="/workspace/s.txt", oldString="two", newString="2")
    # own edits need no re-read
    ok(srv, aid, "edit", path="/workspace/s.txt", oldString="three", newString="3")
    eq(expect(srv.get_file(ws, "s.txt"), 200).body, b"one 2 3", "two edits")
    refused(srv, aid, "edit", path="/workspace/missing.txt", oldString="a", newString="b")
    expect_error(srv.get_file(ws, "missing.txt"), 404)


# ------------------------------------------------------------------ read-only, subpath, sharing

def test_ro_mount_refuses_write_and_edit(srv):
    v = srv.create_volume()["id"]
    srv.put_ok(v, "ref.txt", b"reference text\n")
    a = make_agent(srv, mounts=[{"workspace": True},
                                {"volumeId": v, "path": "/ref", "mode": "ro"}])
    aid = a["id"]
    j = ok(srv, aid, "read", path="/ref/ref.txt")
    eq(numbered(j["output"]), [(1, "reference text")], "ro read")
    refused(srv, aid, "write", "read-only", path="/ref/ref.txt", content="x")
    refused(srv, aid, "write", "read-only", path="/ref/new.txt", content="x")
    refused(srv, aid, "edit", "read-only", path="/ref/ref.txt", oldString="reference",
            newString="x")
    eq(srv.seq(v), 1, "ro volume untouched")
    ok(srv, aid, "ls", path="/ref")
    ok(srv, aid, "grep", pattern="reference", path="/ref")
    ok(srv, aid, "glob", pattern="*.txt", path="/ref")


def test_tools_see_volume_writes_and_back(srv):
    v = srv.create_volume()["id"]
    a = make_agent(srv, mounts=[{"volumeId": v, "path": "/data", "mode": "rw"},
                                {"workspace": True}])
    aid = a["id"]
    srv.put_ok(v, "notes/todo.md", b"- buy milk\n")
    eq(numbered(ok(srv, aid, "read", path="/data/notes/todo.md")["output"]),
       [(1, "- buy milk")], "volume write seen by read")
    contains(ok(srv, aid, "ls", path="/data/notes")["output"], "todo.md", "ls")
    contains(ok(srv, aid, "glob", pattern="**/*.md", path="/data")["output"], "todo.md", "glob")
    contains(ok(srv, aid, "grep", pattern="milk", path="/data", outputMode="files")["output"],
             "todo.md", "grep")
    ok(srv, aid, "edit", path="/data/notes/todo.md", oldString="milk", newString="bread")
    eq(expect(srv.get_file(v, "notes/todo.md"), 200).body, b"- buy bread\n", "edit seen")
    # relative paths go to the first mount, here /data
    ok(srv, aid, "write", path="rel.txt", content="r")
    eq(expect(srv.get_file(v, "rel.txt"), 200).body, b"r", "relative write into /data")
    eq(srv.list_files(a["workspaceVolumeId"])["files"], [], "workspace untouched")


def test_subpath_confines_tools(srv):
    v = srv.create_volume()["id"]
    srv.put_many(v, {"proj/src/a.c": b"int main;\n", "proj/README": b"readme needle\n",
                     "secret.txt": b"secret needle\n", "projx/leak.c": b"needle\n"})
    a = make_agent(srv, mounts=[{"volumeId": v, "path": "/proj", "mode": "rw",
                                 "subpath": "proj"}])
    aid = a["id"]
    ok(srv, aid, "read", path="/proj/README")
    refused(srv, aid, "read", path="/proj/secret.txt")
    for p in ("/proj/../secret.txt", "/proj/src/../../secret.txt", "../secret.txt"):
        r = call(srv, aid, "read", path=p)
        if r.status == 200:
            j = r.json()
            eq(j.get("ok"), False, "read %s refused\n%s" % (p, r.describe()))
            check("secret needle" not in j.get("output", ""), "no leak of %s" % p)
        else:
            expect_error(r, 400)
    for p in ("/proj/../escape.txt", "../escape.txt"):
        r = call(srv, aid, "write", path=p, content="e")
        check(r.status == 400 or (r.status == 200 and r.json().get("ok") is False),
              "write %s refused\n%s" % (p, r.describe()))
    g = ok(srv, aid, "grep", pattern="needle", path="/proj", outputMode="files")["output"]
    check("secret" not in g and "leak" not in g and "README" in g,
          "grep sees only the subpath: %r" % g)
    g = ok(srv, aid, "glob", pattern="**/*", path="/proj")["output"]
    check("secret" not in g and "leak" not in g and "a.c" in g, "glob confined: %r" % g)
    l = ok(srv, aid, "ls", path="/proj")["output"]
    check("secret" not in l and "projx" not in l and "README" in l, "ls confined: %r" % l)
    ok(srv, aid, "write", path="/proj/out.txt", content="o")
    eq(sorted(f["path"] for f in srv.list_files(v)["files"]),
       ["proj/README", "proj/out.txt", "proj/src/a.c", "projx/leak.c", "secret.txt"],
       "volume files: the write landed under the subpath, nothing escaped")


def test_two_agents_track_separately(srv):
    v = srv.create_volume()["id"]
    srv.put_ok(v, "shared.txt", b"shared\n")
    m = [{"volumeId": v, "path": "/shared", "mode": "rw"}]
    a = make_agent(srv, mounts=m)["id"]
    b = make_agent(srv, mounts=m)["id"]
    ok(srv, a, "read", path="/shared/shared.txt")
    refused(srv, b, "write", "read it first", path="/shared/shared.txt", content="b")
    refused(srv, b, "edit", "read it first", path="/shared/shared.txt", oldString="shared",
            newString="b")
    ok(srv, b, "read", path="/shared/shared.txt")
    ok(srv, a, "write", path="/shared/shared.txt", content="from a\n")
    # a's write makes b's read stale, but not a's
    refused(srv, b, "write", "changed since you last read it", path="/shared/shared.txt",
            content="b")
    ok(srv, a, "edit", path="/shared/shared.txt", oldString="from a", newString="from A")
    eq(expect(srv.get_file(v, "shared.txt"), 200).body, b"from A\n", "a's edits")


def test_concurrent_writers_one_wins(srv):
    v = srv.create_volume()["id"]
    srv.put_ok(v, "race.txt", b"start\n")
    m = [{"volumeId": v, "path": "/r", "mode": "rw"}]
    agents = [make_agent(srv, mounts=m)["id"] for _ in range(8)]
    for a in agents:
        ok(srv, a, "read", path="/r/race.txt")
    results = {}

    def writer(a):
        return lambda: results.__setitem__(a, tool(srv, a, "write", path="/r/race.txt",
                                                   content="from %s\n" % a))
    with harness.threads_started([writer(a) for a in agents]):
        pass
    eq(len(results), len(agents), "every writer answered")
    winners = [a for a, j in results.items() if j["ok"]]
    eq(len(winners), 1, "exactly one of the racing writers wins: %r" % {
        a: j["output"] for a, j in results.items()})
    for a, j in results.items():
        if not j["ok"]:
            check("changed since you last read it" in j["output"].lower(),
                  "losers told the file changed: %r" % j["output"])
    eq(expect(srv.get_file(v, "race.txt"), 200).body, ("from %s\n" % winners[0]).encode(),
       "the winner's content")


def test_remount_applies_at_next_call(srv):
    v1 = srv.create_volume()["id"]
    v2 = srv.create_volume()["id"]
    srv.put_ok(v1, "f.txt", b"one\n")
    srv.put_ok(v2, "f.txt", b"two\n")
    a = make_agent(srv, mounts=[{"volumeId": v1, "path": "/data", "mode": "rw"}])["id"]
    eq(numbered(ok(srv, a, "read", path="/data/f.txt")["output"]), [(1, "one")], "before")
    expect(srv.put(agent_url(a, "/mounts"),
                   json=[{"volumeId": v2, "path": "/data", "mode": "ro"}]), 200)
    eq(numbered(ok(srv, a, "read", path="/data/f.txt")["output"]), [(1, "two")], "after")
    refused(srv, a, "write", "read-only", path="/data/f.txt", content="x")


# ------------------------------------------------------------------ ls, glob

def test_ls(srv):
    aid, ws = ws_agent(srv)
    srv.put_many(ws, {"b.txt": b"b", "a.txt": b"a", "dir/x.txt": b"x", "dir/sub/y": b"y"})
    out = ok(srv, aid, "ls", path="/workspace")["output"]
    for name in ("a.txt", "b.txt", "dir"):
        contains(out, name, "ls output")
    check("x.txt" not in out and "sub" not in out, "ls is one level: %r" % out)
    check(out.index("a.txt") < out.index("b.txt"), "ls sorted: %r" % out)
    check("dir/" in out or "dir (dir" in out or "[dir]" in out or "directory" in out.lower()
          or "/workspace/dir/" in out, "directories marked: %r" % out)
    # no path: the first mount
    eq(ok(srv, aid, "ls")["output"], out, "ls without path = ls of the first mount")
    out = ok(srv, aid, "ls", path="/workspace/dir")["output"]
    check("x.txt" in out and "sub" in out and "a.txt" not in out, "ls dir: %r" % out)
    refused(srv, aid, "ls", path="/workspace/nope")
    expect_error(call(srv, aid, "ls", path=3), 400)
    expect_error(call(srv, aid, "ls", path="/workspace/dir/.."), 400)


def test_glob_sorted(srv):
    aid, ws = ws_agent(srv)
    files = {"main.c": b"", "src/z.c": b"", "src/a.c": b"", "src/deep/er/m.c": b"",
             "src/a.h": b"", "b.cc": b"", "docs/x.c.txt": b"", "Zed.c": b""}
    srv.put_many(ws, files)
    out = ok(srv, aid, "glob", pattern="**/*.c")["output"]
    got = [l.strip() for l in lines_of(out) if l.strip().endswith(".c")]
    want = sorted(["Zed.c", "main.c", "src/a.c", "src/deep/er/m.c", "src/z.c"])
    rel = [l[len("/workspace/"):] if l.startswith("/workspace/") else l for l in got]
    eq(rel, want, "glob **/*.c: matching paths, sorted, one a line")
    out = ok(srv, aid, "glob", pattern="*.c", path="/workspace/src")["output"]
    rel = [l.strip().rsplit("/", 1)[-1] for l in lines_of(out)]
    eq(rel, ["a.c", "z.c"], "glob with path")
    j = ok(srv, aid, "glob", pattern="**/*.rs")
    check(j["output"].strip(), "no match is said, not an empty output")
    check("main.c" not in j["output"], "no match: %r" % j["output"])
    expect_error(call(srv, aid, "glob"), 400)
    expect_error(call(srv, aid, "glob", pattern=""), 400)
    expect_error(call(srv, aid, "glob", pattern="[a-"), 400)


@harness.timeout(180)
def test_glob_cap_note(srv):
    aid, ws = ws_agent(srv)
    n = 1200
    srv.put_many(ws, {"many/f%04d.txt" % i: b"x" for i in range(n)}, threads=16)
    out = ok(srv, aid, "glob", pattern="many/*.txt")["output"]
    paths = [l for l in lines_of(out) if re.search(r"f\d{4}\.txt\s*$", l)]
    check(len(paths) < n, "glob over %d files is capped (listed %d)" % (n, len(paths)))
    check(len(paths) >= 50, "the cap still shows a useful number (listed %d)" % len(paths))
    eq(paths, sorted(paths), "capped listing sorted")
    check(paths[0].endswith("f0000.txt"), "the first ones in order: %r" % paths[:3])
    extra = [l for l in lines_of(out) if l not in paths]
    check(extra, "a note says the list was cut: %r" % out[-300:])


# ------------------------------------------------------------------ grep

def grep_setup(srv):
    aid, ws = ws_agent(srv)
    srv.put_many(ws, {
        "src/app.py": b"import os\n# TODO: fix\ndef main():\n    return 42\n# todo later\nend\n",
        "src/util.py": b"def helper():\n    pass  # TODO\n",
        "src/notes.txt": b"TODO in text\n",
        "README.md": b"nothing here\n",
    })
    return aid, ws


def test_grep_content_with_context(srv):
    aid, ws = grep_setup(srv)
    out = ok(srv, aid, "grep", pattern="return \\d+", path="/workspace", outputMode="content",
             context=1)["output"]
    check("return 42" in out, "matching line: %r" % out)
    check("def main():" in out and "# todo later" in out, "one context line each side: %r" % out)
    check("import os" not in out, "no more than one line of context: %r" % out)
    check("app.py" in out, "the file is named: %r" % out)
    check(re.search(r"\b4\b[^\n]*return 42", out), "the line number is given: %r" % out)
    out = ok(srv, aid, "grep", pattern="return \\d+", outputMode="content")["output"]
    check("return 42" in out and "def main" not in out, "no context by default: %r" % out)


def test_grep_context_merges_neighbours(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "c.txt", b"l1\nl2 hit\nl3 hit\nl4\nl5\nl6\nl7\nl8 hit\nl9\n")
    out = ok(srv, aid, "grep", pattern="hit", path="/workspace/c.txt", outputMode="content",
             context=1)["output"]
    ls = lines_of(out)
    for t in ("l1", "l2 hit", "l3 hit", "l4", "l7", "l8 hit", "l9"):
        eq(len([l for l in ls if l.endswith(t)]), 1, "line %r shown exactly once: %r" % (t, out))
    for t in ("l5", "l6"):
        check(not [l for l in ls if l.endswith(t)], "%r is not context: %r" % (t, out))
    check(out.index("l1") < out.index("l2 hit") < out.index("l4") < out.index("l8 hit"),
          "in file order: %r" % out)
    # context 0 equals no context
    out0 = ok(srv, aid, "grep", pattern="hit", path="/workspace/c.txt", outputMode="content",
              context=0)["output"]
    eq(len([l for l in lines_of(out0) if "hit" in l]), 3, "three matching lines")
    check("l1" not in out0, "no context with context=0: %r" % out0)


def test_grep_files_count_modes(srv):
    aid, ws = grep_setup(srv)
    out = ok(srv, aid, "grep", pattern="TODO", outputMode="files")["output"]
    got = sorted(l.strip().rsplit("/", 1)[-1] for l in lines_of(out))
    eq(got, ["app.py", "notes.txt", "util.py"], "files mode: one file a line")
    out = ok(srv, aid, "grep", pattern="TODO", outputMode="count")["output"]
    counts = {}
    for name in ("app.py", "util.py", "notes.txt"):
        for l in lines_of(out):
            m = re.search(re.escape(name) + r"\D*(\d+)\s*$", l)
            if m:
                counts[name] = int(m.group(1))
    check("README" not in out, "count mode lists only files with matches: %r" % out)
    eq({k: counts.get(k) for k in ("app.py", "util.py", "notes.txt")},
       {"app.py": 1, "util.py": 1, "notes.txt": 1}, "count mode: %r" % out)
    out = ok(srv, aid, "grep", pattern="TODO", outputMode="count", ignoreCase=True)["output"]
    check(re.search(r"app\.py\D*2\s*$", out, re.M), "ignoreCase count for app.py is 2: %r" % out)
    expect_error(call(srv, aid, "grep", pattern="x", outputMode="lines"), 400)


def test_grep_glob_ignorecase_pcre(srv):
    aid, ws = grep_setup(srv)
    out = ok(srv, aid, "grep", pattern="TODO", glob="*.py", outputMode="files")["output"]
    check("app.py" in out and "util.py" in out and "notes.txt" not in out,
          "glob filter: %r" % out)
    out = ok(srv, aid, "grep", pattern="todo", outputMode="content")["output"]
    check("todo later" in out and "TODO: fix" not in out, "case-sensitive by default: %r" % out)
    out = ok(srv, aid, "grep", pattern="todo", ignoreCase=True, outputMode="content")["output"]
    for s in ("todo later", "TODO: fix", "TODO in text", "pass  # TODO"):
        contains(out, s, "ignoreCase content")
    # PCRE2 features: lookahead, \b, non-greedy
    out = ok(srv, aid, "grep", pattern=r"\bdef (?=main)", outputMode="content")["output"]
    check("def main" in out and "helper" not in out, "lookahead: %r" % out)
    out = ok(srv, aid, "grep", pattern="TODO", path="/workspace/src/util.py",
             outputMode="content")["output"]
    check("pass  # TODO" in out and "fix" not in out, "grep one file by path: %r" % out)
    j = ok(srv, aid, "grep", pattern="no-such-thing-anywhere")
    check(j["output"].strip(), "no match is said, not an empty output")


def test_grep_bad_regex_and_args(srv):
    aid, ws = grep_setup(srv)
    r = call(srv, aid, "grep", pattern="foo(bar")
    err = expect_error(r, 400)
    check(re.search(r"\d", err["message"]), "bad regex message names the position: %r" % err)
    err = expect_error(call(srv, aid, "grep", pattern="ab[c"), 400)
    check(re.search(r"\d", err["message"]), "bad regex position: %r" % err)
    expect_error(call(srv, aid, "grep"), 400)
    expect_error(call(srv, aid, "grep", pattern=""), 400)
    expect_error(call(srv, aid, "grep", pattern="x", context=-1), 400)
    expect_error(call(srv, aid, "grep", pattern="x", limit=-1), 400)
    expect_error(call(srv, aid, "grep", pattern="x", limit=10001), 400)
    expect_error(call(srv, aid, "grep", pattern="x", context=21), 400)
    expect_error(call(srv, aid, "grep", pattern="x", ignoreCase="yes"), 400)


@harness.timeout(180)
def test_grep_cap_note(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "big.txt", "".join("hit %d\n" % i for i in range(5000)).encode())
    out = ok(srv, aid, "grep", pattern="hit", outputMode="content", limit=10)["output"]
    hits = [l for l in lines_of(out) if re.search(r"hit \d+\s*$", l)]
    eq(len(hits), 10, "limit 10 content lines: %r" % out)
    check([l for l in lines_of(out) if l not in hits], "a note says it was cut: %r" % out)
    # the default cap also holds
    out = ok(srv, aid, "grep", pattern="hit", outputMode="content")["output"]
    hits = [l for l in lines_of(out) if re.search(r"hit \d+\s*$", l)]
    check(0 < len(hits) < 5000, "default content output capped (%d lines)" % len(hits))
    check([l for l in lines_of(out) if l not in hits], "a note says it was cut")
    srv.put_many(ws, {"m/%03d.txt" % i: b"needle\n" for i in range(300)}, threads=16)
    out = ok(srv, aid, "grep", pattern="needle", outputMode="files", limit=5)["output"]
    files = [l for l in lines_of(out) if re.search(r"\d{3}\.txt\s*$", l)]
    eq(len(files), 5, "files mode limit 5: %r" % out)
    check([l for l in lines_of(out) if l not in files], "note on the cut files list: %r" % out)


# ------------------------------------------------------------------ persistence

def test_read_tracking_survives_restart():
    with harness.server() as s:
        aid, ws = ws_agent(s)
        s.put_ok(ws, "t.txt", b"tracked\n")
        s.put_ok(ws, "u.txt", b"unread\n")
        s.put_ok(ws, "stale.txt", b"old\n")
        ok(s, aid, "read", path="/workspace/t.txt")
        ok(s, aid, "read", path="/workspace/stale.txt")
        s.restart()
        s.put_ok(ws, "stale.txt", b"new\n")
        ok(s, aid, "write", path="/workspace/t.txt", content="after restart\n")
        refused(s, aid, "write", "read it first", path="/workspace/u.txt", content="x")
        refused(s, aid, "edit", "changed since you last read it", path="/workspace/stale.txt",
                oldString="new", newString="x")
        eq(expect(s.get_file(ws, "t.txt"), 200).body, b"after restart\n", "written")
