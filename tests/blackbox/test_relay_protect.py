"""Protected paths of the relay (docs/api.md "Relay", protected paths): what a tool on the
user's machine runs by itself (.git/**, shell start-up files, .envrc, .vscode/**, ...) can
be read but not written, in every mode, unless the user passes `--allow-write PAT`.
Checked three ways: a real cofferd with a real `coffer connect` (403 naming the rule, the
file unchanged on disk), cofferd alone (a fake client with no rules: nothing forwarded),
and `coffer connect` alone (a fake server that sends the write anyway). Also the session's
answer and `exclusions` event listing the rules and the allowances, and the supervised
prompt saying "(protected)"."""

import os
import threading

import harness
from harness import check, contains, eq, expect, expect_error
from test_relay import Events
from test_relay import _session as _fake_session
from test_relay_connect import Client, FakeServer, _folder, _op, _read, _refused, _session

# (path, the rule that protects it). Some exist beforehand (ORIGINAL), some would be new.
PROTECTED = [
    (".git/config", ".git/**"),
    (".git/hooks/pre-commit", ".git/**"),
    ("sub/.git/config", ".git/**"),
    (".GIT/config", ".git/**"),
    (".gitmodules", ".gitmodules"),
    (".gitattributes", ".gitattributes"),
    (".bashrc", ".bashrc"),
    (".bash_profile", ".bash_profile"),
    (".profile", ".profile"),
    (".zshrc", ".zshrc"),
    (".zshenv", ".zshenv"),
    ("app/.envrc", ".envrc"),
    (".envrc", ".envrc"),
    (".vscode/settings.json", ".vscode/**"),
    (".vscode/tasks.json", ".vscode/**"),
    (".idea/workspace.xml", ".idea/**"),
    (".github/workflows/ci.yml", ".github/workflows/**"),
    (".devcontainer/devcontainer.json", ".devcontainer/**"),
    (".config/fish/config.fish", "config.fish"),
    (".yarnrc.yml", ".yarnrc.yml"),
    ("pip.conf", "pip.conf"),
    (".cargo/config.toml", ".cargo/**"),
    (".docker/config.json", ".docker/config.json"),
    (".pre-commit-config.yaml", ".pre-commit-config.yaml"),
    (".husky/pre-commit", ".husky/**"),
    (".gnupg/gpg.conf", ".gnupg/**"),
]
ORIGINAL = {".git/config": "[core]\n\tbare = false\n", ".bashrc": "# mine\n",
            ".vscode/settings.json": "{}\n", "sub/.git/config": "[core]\n",
            "Makefile": "all:\n", "src/main.c": "int main;\n"}
PAYLOAD = '[core]\n\tfsmonitor = "touch /tmp/PWNED; false"\n'
ORDINARY = ["Makefile", "src/main.c", ".gitignore", "docs/git.md", "my.git/notes.txt",
            ".github/CODEOWNERS"]


def _check_refused(err, path, rule):
    contains(err["message"], "'%s' is protected (rule '%s')" % (path, rule), "message")
    contains(err["message"], "--allow-write '%s'" % rule, "the message says how to allow it")
    eq(err.get("rule"), rule, "rule in the error")


def _unchanged(root, path):
    if path in ORIGINAL:
        eq(_read(root, path), ORIGINAL[path].encode(), "%s unchanged on disk" % path)
    else:
        check(not os.path.exists(os.path.join(root, path)), "%s not created" % path)


@harness.timeout(120)
def test_protected_refused_through_real_client(srv):
    uid, _, c, root = _session(srv, ORIGINAL)
    try:
        for path, rule in PROTECTED:
            err = expect_error(_op(srv, uid, op="write_file", path=path, content=PAYLOAD),
                               403, "forbidden")
            _check_refused(err, path, rule)
            _unchanged(root, path)
        # .npmrc and .pypirc are protected and excluded too: refused either way
        expect_error(_op(srv, uid, op="write_file", path=".npmrc", content="x"), 403,
                     "forbidden")
        check(not os.path.exists(os.path.join(root, ".npmrc")), "no .npmrc")
        # reading stays allowed
        got = expect(_op(srv, uid, op="read_file", path=".git/config"), 200).json()
        eq(got["content"], ORIGINAL[".git/config"], "protected files are readable")
        # ordinary sources stay writable
        for path in ORDINARY:
            expect(_op(srv, uid, op="write_file", path=path, content="ok\n"), 200)
            eq(_read(root, path), b"ok\n", "%s written" % path)
        got = expect(srv.get("/v1/relay/sessions/" + uid), 200).json()
        eq(got["counts"]["writes"], len(ORDINARY), "refused writes count nothing")
        for _, rule in PROTECTED:
            contains(got["protected"], rule, "the session lists the rules")
        eq(got["allowWrite"], [], "no allowances")
        log = expect(srv.get("/v1/relay/sessions/%s/log" % uid), 200).json()["entries"]
        refused = [e for e in log if e.get("path") == ".git/config" and e.get("op")]
        eq((refused[0]["outcome"], refused[0]["status"]), ("forbidden", 403), "logged")
    finally:
        c.stop()


def test_protected_refused_in_every_mode(srv):
    for args in (["--supervised"], ["--readonly"]):
        uid, _, c, root = _session(srv, ORIGINAL, args=args)
        try:
            err = expect_error(_op(srv, uid, op="write_file", path=".git/config",
                                   content=PAYLOAD), 403, "forbidden")
            check("protected" in err["message"] or "read-only" in err["message"],
                  "refused as protected or read-only: %r" % err)
            _unchanged(root, ".git/config")
        finally:
            c.stop()


def test_allow_write_through_real_client(srv):
    uid, _, c, root = _session(srv, ORIGINAL,
                               args=["--allow-write", ".git/**", "--allow-write", ".bashrc"])
    ev = Events(srv, uid)
    try:
        for path in (".git/config", "sub/.git/config", ".git/hooks/pre-commit", ".bashrc"):
            expect(_op(srv, uid, op="write_file", path=path, content=PAYLOAD), 200)
            eq(_read(root, path), PAYLOAD.encode(), "%s written when allowed" % path)
        for path, rule in ((".vscode/settings.json", ".vscode/**"), (".profile", ".profile")):
            err = expect_error(_op(srv, uid, op="write_file", path=path, content="x"), 403,
                               "forbidden")
            _check_refused(err, path, rule)
            _unchanged(root, path)
        got = expect(srv.get("/v1/relay/sessions/" + uid), 200).json()
        eq(got["allowWrite"], [".git/**", ".bashrc"], "the allowances in the session")
        data = ev.wait("exclusions")[0]
        eq(data["allowWrite"], [".git/**", ".bashrc"], "the allowances in the event")
        contains(data["protected"], ".git/**", "the rules in the event")
    finally:
        ev.close()
        c.stop()


def test_bad_allow_write_pattern_is_a_usage_error(srv):
    root = _folder()
    c = Client(srv.url, "rs_x", "t", root, ["--allow-write", "a//b"])
    eq(c.wait(), 2, "exit code of a bad command line")
    contains(c.log(), "a//b", "names the pattern")


# ------------------------------------------------------------------ cofferd alone

def test_server_refuses_before_relaying(srv):
    s, c, root = _fake_session(srv)
    try:
        for path, rule in PROTECTED:
            err = expect_error(_op(srv, s["uid"], op="write_file", path=path,
                                   content=PAYLOAD), 403, "forbidden")
            _check_refused(err, path, rule)
        eq(c.ops, [], "nothing forwarded to the user's side")
        eq(os.listdir(root), [], "nothing written")
    finally:
        c.close()


def test_server_takes_the_clients_allowances(srv):
    from relay_fake import FakeClient, create, make_agent
    agent = make_agent(srv, "protect-allow-%d" % os.getpid())
    s = create(srv, agent)
    root = _folder()
    c = FakeClient(srv, s["uid"], s["connectToken"], root, allow_write=[".vscode/**"])
    try:
        eq(c.status, 200, "attached")
        expect(_op(srv, s["uid"], op="write_file", path=".vscode/tasks.json", content="{}"),
               200)
        eq(len(c.ops), 1, "forwarded when allowed")
        expect_error(_op(srv, s["uid"], op="write_file", path=".git/config", content="x"),
                     403, "forbidden")
        eq(len(c.ops), 1, "other rules still hold")
    finally:
        c.close()
    for bad in ("nope", ["a//b"], [7]):
        s2 = create(srv, agent)
        c2 = FakeClient(srv, s2["uid"], s2["connectToken"], root, allow_write=bad)
        eq(c2.status, 400, "a bad allowWrite %r is refused" % (bad,))
        eq(c2.error["type"], "validation_error", "its type")


# ------------------------------------------------------------------ coffer connect alone

def test_client_alone_refuses_protected():
    fake = FakeServer()
    root = _folder(ORIGINAL)
    c = Client(fake.url, "u1", "good-token", root)
    try:
        for i, (path, rule) in enumerate(PROTECTED):
            err = _refused(fake.send({"id": "p%d" % i, "op": "write_file", "path": path,
                                      "content": PAYLOAD}), "forbidden")
            _check_refused(err, path, rule)
            _unchanged(root, path)
        got = fake.send({"id": "r1", "op": "read_file", "path": ".git/config"})
        eq(got["ok"], True, "reads allowed")
        got = fake.send({"id": "w1", "op": "write_file", "path": "Makefile", "content": "x"})
        eq(got["ok"], True, "ordinary write")
        eq(fake.connects[0]["allowWrite"], [], "no allowances sent")
        c.wait_log("write refused  .git/config  (protected)")
    finally:
        c.stop()
        fake.close()


def test_client_alone_honours_allow_write():
    fake = FakeServer()
    root = _folder(ORIGINAL)
    c = Client(fake.url, "u1", "good-token", root, ["--allow-write", ".git/**"])
    try:
        got = fake.send({"id": "1", "op": "write_file", "path": ".git/config",
                         "content": PAYLOAD})
        eq(got["ok"], True, "allowed: %r" % got)
        eq(_read(root, ".git/config"), PAYLOAD.encode(), "written")
        _refused(fake.send({"id": "2", "op": "write_file", "path": ".bashrc",
                            "content": "x"}), "forbidden")
        eq(fake.connects[0]["allowWrite"], [".git/**"], "the allowances sent on connect")
    finally:
        c.stop()
        fake.close()


# ------------------------------------------------------------------ the supervised prompt

def test_supervised_prompt_marks_protected(srv):
    uid, _, c, root = _session(srv, ORIGINAL, args=["--supervised", "--allow-write",
                                                    ".git/**"], tty=True)
    try:
        out = {}
        t = threading.Thread(target=lambda: out.update(r=_op(
            srv, uid, op="write_file", path=".git/config", content=PAYLOAD)))
        t.start()
        c.wait_tty("allow this write? [y/N]")
        text = c.tty_out.decode()
        contains(text, "change .git/config (protected)", "the prompt says protected")
        contains(text, "rule '.git/**'", "and names the rule")
        c.type("y\n")
        t.join(30 * harness.SCALE)
        expect(out["r"], 200)
        eq(_read(root, ".git/config"), PAYLOAD.encode(), "written after yes")
        c.tty_out = b""
        t = threading.Thread(target=lambda: out.update(r=_op(
            srv, uid, op="write_file", path="notes.txt", content="hi\n")))
        t.start()
        c.wait_tty("allow this write? [y/N]")
        check("(protected)" not in c.tty_out.decode(), "an ordinary path is not marked")
        c.type("y\n")
        t.join(30 * harness.SCALE)
        expect(out["r"], 200)
    finally:
        c.stop()
