"""Wrong shapes fail loudly: every public method, called once with a wrong argument (a dict
where a path or an id belongs, an unknown option, a wrong type, one argument too many),
raises TypeError or ValueError saying what was wrong, and sends nothing: the client
points at a port nobody listens on, so a request would raise CofferConnectionError
instead. The table must cover every public method of every class (the last test), on
Coffer and on AsyncCoffer alike."""

from __future__ import annotations

import asyncio
import inspect
import unittest
from typing import Any, Callable

import coffer

c = coffer.Coffer("http://127.0.0.1:9", "k", retries=0, timeout=5)
vol = c.volume("vol_x")
ag = c.agent("ag")
sub = ag.subject("u")
turn = coffer.Turn(c._t, "turn_x")  # type: ignore[call-arg]
sess = coffer.RelaySession(c._t, "rs_x")  # type: ignore[call-arg]
run = coffer.RunHandle(ag, "r1", None)  # type: ignore[arg-type]

# (class, method, call, a piece of the message)
ROWS: list[tuple[type, str, Callable[[], Any], str]] = [
    (coffer.Client, "upsert", lambda: c.upsert("a", mount=[]), "unknown setting 'mount'"),
    (coffer.Client, "volume", lambda: c.volume({"id": "v"}), "must be a non-empty str, not dict"),
    (coffer.Client, "agent", lambda: c.agent(7), "must be a non-empty str, not int"),
    (coffer.Client, "health", lambda: c.health(True), "positional argument"),
    (coffer.Client, "request", lambda: c.request("GET"), "missing 1 required positional argument: 'path'"),
    (coffer.Client, "close", lambda: c.close(1), "positional argument"),
    (coffer.Keys, "create", lambda: c.keys.create("org-1"), "positional argument"),
    (coffer.Keys, "list", lambda: c.keys.list("all"), "positional argument"),
    (coffer.Keys, "revoke", lambda: c.keys.revoke({"id": "k"}), "not dict"),
    (coffer.Volumes, "create", lambda: c.volumes.create({"name": "notes"}), "volumes.create: name must be a non-empty str, not dict"),
    (coffer.Volumes, "get", lambda: c.volumes.get(None), "not NoneType"),
    (coffer.Volumes, "list", lambda: c.volumes.list("docs/"), "positional argument"),
    (coffer.Volumes, "iter", lambda: next(c.volumes.iter(prefx="a")), "unexpected keyword argument 'prefx'"),
    (coffer.Volumes, "seqs", lambda: c.volumes.seqs("vol_a,vol_b"), "volumes.seqs: ids must be a list of volume ids, not str"),
    (coffer.Volumes, "delete", lambda: c.volumes.delete(["v"]), "not list"),
    (coffer.Volume, "refresh", lambda: vol.refresh("now"), "positional argument"),
    (coffer.Volume, "delete", lambda: vol.delete(force=True), "unexpected keyword argument 'force'"),
    (coffer.Volume, "write", lambda: vol.write("a.md", {"text": "x"}), "body must be bytes, str, a path"),
    (coffer.Volume, "read", lambda: vol.read("a.md", "snap_1"), "positional argument"),
    (coffer.Volume, "open", lambda: vol.open({"path": "a.md"}), "not dict"),
    (coffer.Volume, "stat", lambda: vol.stat("a.md", snapshot={"id": "s"}), "query parameter 'snapshot'"),
    (coffer.Volume, "remove", lambda: vol.remove("a.md", 3), "positional argument"),
    (coffer.Volume, "move", lambda: vol.move("a", "b", True), "positional argument"),
    (coffer.Volume, "list", lambda: vol.list("docs/"), "positional argument"),
    (coffer.Volume, "iter_files", lambda: next(vol.iter_files(prefx="a")), "unexpected keyword argument 'prefx'"),
    (coffer.Volume, "read_all", lambda: vol.read_all(content=True), "unexpected keyword argument 'content'"),
    (coffer.Volume, "changes", lambda: vol.changes(0, prefix={"p": 1}), "query parameter 'prefix'"),
    (coffer.Volume, "follow", lambda: next(vol.follow(0, "docs/")), "positional argument"),
    (coffer.Volume, "snapshot", lambda: vol.snapshot({"pinned": True}), "positional argument"),
    (coffer.Volume, "snapshots", lambda: vol.snapshots("k:v"), "positional argument"),
    (coffer.Volume, "get_snapshot", lambda: vol.get_snapshot({"id": "s"}), "not dict"),
    (coffer.Volume, "update_snapshot", lambda: vol.update_snapshot("s", {"pinned": True}), "positional argument"),
    (coffer.Volume, "delete_snapshot", lambda: vol.delete_snapshot("s", True), "positional argument"),
    (coffer.Volume, "fork", lambda: vol.fork("snap_1"), "positional argument"),
    (coffer.Volume, "restore", lambda: vol.restore(snapshot_id="s"), "unexpected keyword argument 'snapshot_id'"),
    (coffer.Volume, "archive", lambda: vol.archive("snap_1"), "positional argument"),
    (coffer.Volume, "link", lambda: vol.link("a.md", {"expires_in": 60}), "positional argument"),
    (coffer.Volume, "merge", lambda: vol.merge({"from": "vol_y"}), "volume.merge: from_ must be a non-empty str, not dict"),
    (coffer.Volume, "history", lambda: vol.history("a.md", "cur_1"), "positional argument"),
    (coffer.Volume, "iter_history", lambda: vol.iter_history("a.md", cursor="c"), "unexpected keyword argument 'cursor'"),
    (coffer.Volume, "revert", lambda: vol.revert(call_id="c1", seq=4), "volume.revert: give exactly one of run_id, call_id, seq (got call_id, seq)"),
    (coffer.Runtime, "create_volume", lambda: c.runtime.create_volume(name="d", idempotency="k"), "unexpected keyword argument 'idempotency'"),
    (coffer.Runtime, "volume", lambda: c.runtime.volume({"id": "v"}), "not dict"),
    (coffer.Runtime, "volumes", lambda: c.runtime.volumes("vol_a"), "ids must be a list"),
    (coffer.Agents, "upsert", lambda: c.agents.upsert("a", mounts={"volumeId": "v"}), "mounts must be a list of mount dicts, not dict"),
    (coffer.Agents, "get", lambda: c.agents.get(["a"]), "not list"),
    (coffer.Agents, "delete", lambda: c.agents.delete({}), "not dict"),
    (coffer.Agent, "refresh", lambda: ag.refresh(True), "positional argument"),
    (coffer.Agent, "delete", lambda: ag.delete("now"), "positional argument"),
    (coffer.Agent, "set_mounts", lambda: ag.set_mounts("/docs"), "dictionary update sequence"),
    (coffer.Agent, "run", lambda: ag.run("What changed?", {"files": []}), "files must be a list of files, not one dict"),
    (coffer.Agent, "get_run", lambda: ag.get_run({"run_id": "r"}), "not dict"),
    (coffer.Agent, "for_user", lambda: ag.for_user("ann smith"), "agent: user 'ann smith' is not a subject id"),
    (coffer.Agent, "resolve", lambda: ag.resolve({"$file": "a"}, as_="link"), "as_ must be 'base64' or 'url', not 'link'"),
    (coffer.Agent, "events", lambda: ag.events("all"), "positional argument"),
    (coffer.Agent, "prompt", lambda: ag.prompt("hi", files=[{"name": "a.txt"}]), "a mapping needs 'name' and 'data'"),
    (coffer.Agent, "conversation_request", lambda: ag.conversation_request("c", "openai"), "positional argument"),
    (coffer.Agent, "subject", lambda: ag.subject(None), "not NoneType"),
    (coffer.Agent, "put_skill", lambda: ag.put_skill("s", {"text": "x"}), "body must be bytes"),
    (coffer.AgentFiles, "download", lambda: ag.files.download({"path": "/workspace/a"}), "not dict"),
    (coffer.AgentFiles, "open", lambda: ag.files.open(5), "not int"),
    (coffer.AgentFiles, "write", lambda: ag.files.write("/workspace/a.json", {"a": 1}), "body must be bytes"),
    (coffer.AgentFiles, "remove", lambda: ag.files.remove("/workspace/a", version=1), "unexpected keyword argument 'version'"),
    (coffer.AgentFiles, "list", lambda: ag.files.list({"path": "/workspace/out"}), "agent.files.list: path must be a non-empty str, not dict"),
    (coffer.AgentFiles, "link", lambda: ag.files.link("/workspace/r.pdf", expires_in="1h"), "expires_in must be an int"),
    (coffer.AgentFiles, "upload", lambda: ag.files.upload("/workspace/in/config.json"), "takes (path, data) or (request_id, name, data), not 1"),
    (coffer.AgentFiles, "tool_output", lambda: ag.files.tool_output("call_1", {"name": "a"}, b"x"), "agent.files.tool_output: name must be a non-empty str, not dict"),
    (coffer.AgentTools, "call", lambda: ag.tools.call("read", "/workspace/a"), "args must be a dict, not str"),
    (coffer.AgentTools, "read", lambda: ag.tools.read("/workspace/a", 10), "positional argument"),
    (coffer.AgentTools, "write", lambda: ag.tools.write("a", "x", run="r"), "unexpected keyword argument 'run'"),
    (coffer.AgentTools, "edit", lambda: ag.tools.edit("a", "x"), "missing 1 required positional argument"),
    (coffer.AgentTools, "ls", lambda: ag.tools.ls("/workspace", "x"), "positional argument"),
    (coffer.AgentTools, "glob", lambda: ag.tools.glob(pattern="*.md", recursive=True), "unexpected keyword argument 'recursive'"),
    (coffer.AgentTools, "grep", lambda: ag.tools.grep("TODO", ignorecase=True), "unexpected keyword argument 'ignorecase'"),
    (coffer.AgentTools, "present_file", lambda: ag.tools.present_file("/workspace/a", "cap", "x"), "positional argument"),
    (coffer.RunHandle, "refresh", lambda: run.refresh(True), "positional argument"),
    (coffer.Subject, "write", lambda: sub.write("a.md", "x", parents=True), "unexpected keyword argument 'parents'"),
    (coffer.Subject, "list", lambda: sub.list("a", "b"), "positional argument"),
    (coffer.Subject, "read", lambda: sub.read("a", "b"), "positional argument"),
    (coffer.Subject, "open", lambda: sub.open("a", "bytes=0-1"), "positional argument"),
    (coffer.Subject, "move", lambda: sub.move("a", "b", force=True), "unexpected keyword argument 'force'"),
    (coffer.Subject, "remove", lambda: sub.remove("a", "b"), "positional argument"),
    (coffer.Subject, "volume", lambda: sub.volume("v"), "positional argument"),
    (coffer.Subject, "read_memory", lambda: sub.read_memory("NOTES.md"), "USER.md"),
    (coffer.Subject, "write_memory", lambda: sub.write_memory("USER.md"), "missing 1 required positional argument"),
    (coffer.Subject, "start_session", lambda: sub.start_session(skills=[]), "unexpected keyword argument 'skills'"),
    (coffer.Turns, "create", lambda: c.turns.create("a", "u"), "missing 1 required positional argument: 'deadline_seconds'"),
    (coffer.Turn, "get", lambda: turn.get(1), "positional argument"),
    (coffer.Turn, "call", lambda: turn.call("echo hi", "stdin text"), "positional argument"),
    (coffer.Turn, "call_stream", lambda: turn.call_stream("echo", input="x"), "unexpected keyword argument 'input'"),
    (coffer.Turn, "file", lambda: turn.file("c1"), "missing 1 required positional argument: 'name'"),
    (coffer.Turn, "open_file", lambda: turn.open_file("c1", {"name": "a"}), "not dict"),
    (coffer.Turn, "end", lambda: turn.end(force=True), "unexpected keyword argument 'force'"),
    (coffer.Relay, "create", lambda: c.relay.create("a", {"maxOps": 1}), "positional argument"),
    (coffer.Relay, "list", lambda: c.relay.list("agent-1"), "positional argument"),
    (coffer.RelaySession, "get", lambda: sess.get("x"), "positional argument"),
    (coffer.RelaySession, "op", lambda: sess.op("read_file", "a"), "positional argument"),
    (coffer.RelaySession, "read_file", lambda: sess.read_file("a", "utf-8"), "positional argument"),
    (coffer.RelaySession, "write_file", lambda: sess.write_file("a", "x", mode="w"), "unexpected keyword argument 'mode'"),
    (coffer.RelaySession, "list_directory", lambda: sess.list_directory("a", "b"), "positional argument"),
    (coffer.RelaySession, "search_files", lambda: sess.search_files("x", "src/"), "positional argument"),
    (coffer.RelaySession, "op_status", lambda: sess.op_status(12), "not int"),
    (coffer.RelaySession, "events", lambda: sess.events(last="3"), "unexpected keyword argument 'last'"),
    (coffer.RelaySession, "log", lambda: sess.log("x"), "positional argument"),
    (coffer.RelaySession, "abort", lambda: sess.abort("x"), "positional argument"),
    (coffer.RelaySession, "close", lambda: sess.close("x"), "positional argument"),
    (coffer.Webhooks, "create", lambda: c.webhooks.create("https://h/x", "turn.ended"), "webhooks.create: events must be a list of str, not str"),
    (coffer.Webhooks, "list", lambda: c.webhooks.list("all"), "positional argument"),
    (coffer.Webhooks, "get", lambda: c.webhooks.get({"id": "wh_1"}), "not dict"),
    (coffer.Webhooks, "update", lambda: c.webhooks.update("wh_1", disabled="yes"), "webhooks.update: disabled must be a bool, not str"),
    (coffer.Webhooks, "delete", lambda: c.webhooks.delete(7), "not int"),
    (coffer.Webhooks, "deliveries", lambda: c.webhooks.deliveries("wh_1", "cur"), "positional argument"),
    (coffer.Webhooks, "redeliver", lambda: c.webhooks.redeliver("wh_1"), "missing 1 required positional argument: 'delivery_id'"),
]


class WrongShapes(unittest.TestCase):
    def test_each_method_refuses_a_wrong_shape_without_a_request(self) -> None:
        for cls, method, call, message in ROWS:
            with self.subTest(method="%s.%s" % (cls.__name__, method)):
                with self.assertRaises((TypeError, ValueError)) as cm:
                    call()
                self.assertIn(message, str(cm.exception))
                self.assertNotIn("[object Object]", str(cm.exception))

    def test_the_async_client_refuses_them_too(self) -> None:
        async def main() -> None:
            async with coffer.AsyncCoffer("http://127.0.0.1:9", "k", retries=0) as a:
                with self.assertRaisesRegex(TypeError, "agent.files.list: path must be"):
                    await a.agent("ag").files.list({"path": "/workspace/out"})
                with self.assertRaisesRegex(TypeError, "volumes.create: name must be"):
                    await a.runtime.create_volume({"name": "docs"})
                with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'idempotency'"):
                    await a.runtime.create_volume(name="d", idempotency="k")
                with self.assertRaisesRegex(TypeError, "files must be a list of files"):
                    await a.agent("ag").run("What changed?", {"files": []})
        asyncio.run(main())

    def test_every_public_method_has_a_row(self) -> None:
        covered = {(cls, m) for cls, m, _, _ in ROWS}
        missing = []
        for cls in (coffer.Client, coffer.Keys, coffer.Volumes, coffer.Volume, coffer.Runtime,
                    coffer.Agents, coffer.Agent, coffer.AgentFiles, coffer.AgentTools,
                    coffer.RunHandle, coffer.Subject, coffer.Turns, coffer.Turn, coffer.Relay,
                    coffer.RelaySession, coffer.Webhooks):
            for n, v in vars(cls).items():
                if inspect.isfunction(v) and not n.startswith("_") and (cls, n) not in covered:
                    missing.append("%s.%s" % (cls.__name__, n))
        self.assertEqual(missing, [], "methods without a wrong-shape row")


if __name__ == "__main__":
    unittest.main()
