"""Agents through the SDK: upsert and mounts, files, uploads, the tools, runs, events,
subjects and memory, skills."""

from __future__ import annotations

import io
import threading
import unittest
import urllib.request

import coffer
from support import client, name


class AgentCalls(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.docs = self.c.volumes.create(name("docs"))
        self.agent = self.c.agents.upsert(name("ag"), mounts=[
            {"workspace": True},
            {"volumeId": self.docs.id, "path": "/docs", "mode": "ro", "notify": True}])

    def tearDown(self) -> None:
        self.c.close()

    def test_upsert_get_mounts_delete(self) -> None:
        info = self.agent.info
        assert info is not None
        self.assertEqual(info.id, self.agent.id)
        self.assertTrue(info.workspace_volume_id.startswith("vol_"))
        self.assertEqual([m.path for m in info.mounts], ["/workspace", "/docs"])
        again = self.c.agents.upsert(self.agent.id, file_tools=True)
        self.assertEqual(again.info and again.info.file_tools, True)
        other = self.c.volumes.create(name("other"))
        with self.assertRaises(coffer.Conflict):
            self.c.agents.upsert(self.agent.id, mounts=[{"volumeId": other.id, "path": "/o", "mode": "rw"}])
        got = self.agent.set_mounts([{"workspace": True},
                                     {"volumeId": other.id, "path": "/o", "mode": "rw"}])
        self.assertEqual([m.path for m in got.mounts], ["/workspace", "/o"])
        self.assertEqual(self.c.agents.get(self.agent.id).info.mounts[1].volume_id, other.id)  # type: ignore[union-attr]
        ws = self.agent.refresh().workspace_volume_id
        self.c.agents.delete(self.agent.id)
        with self.assertRaises(coffer.NotFound):
            self.agent.refresh()
        with self.assertRaises(coffer.NotFound):
            self.c.volumes.get(ws)
        self.c.volumes.get(other.id)  # only mounted: stays

    def test_files_download_list_link_upload(self) -> None:
        w = self.agent.files.write("/workspace/out/chart.csv", "a,b\n1,2\n", content_type="text/csv")
        self.assertEqual(w.path, "/workspace/out/chart.csv")
        d = self.agent.files.download("/workspace/out/chart.csv")
        self.assertEqual((d.data, d.content_type, d.version), (b"a,b\n1,2\n", "text/csv", w.version))
        with self.agent.files.open("/workspace/out/chart.csv") as s:
            self.assertEqual(b"".join(s), b"a,b\n1,2\n")
        self.assertEqual([e.name for e in self.agent.files.list().entries], ["out"])
        listing = self.agent.files.list("/workspace/out")
        self.assertEqual([(e.name, e.type, e.size) for e in listing.entries], [("chart.csv", "file", 8)])
        link = self.agent.files.link("/workspace/out/chart.csv")
        with urllib.request.urlopen(link.url, timeout=10) as r:
            self.assertEqual(r.read(), b"a,b\n1,2\n")
        up = self.agent.files.upload("r1", "q.txt", io.BytesIO(b"question"))
        self.assertEqual(up.path, "/workspace/uploads/r1/q.txt")
        self.assertFalse(up.replayed)
        again = self.agent.files.upload("r1", "q.txt", b"question")
        self.assertTrue(again.replayed)
        self.assertEqual(again.version, up.version)
        with self.assertRaises(coffer.Forbidden):
            self.agent.files.write("/docs/x.txt", "read-only mount")
        self.agent.files.remove("/workspace/out/chart.csv")
        with self.assertRaises(coffer.NotFound):
            self.agent.files.download("/workspace/out/chart.csv")

    def test_tools_and_runs(self) -> None:
        run = name("run")
        t = self.agent.tools
        w = t.write("/workspace/notes.md", "alpha\nbeta\n", run_id=run)
        self.assertTrue(w.ok, w.output)
        r = t.read("/workspace/notes.md", run_id=run)
        self.assertTrue(r.ok)
        self.assertIn("alpha", r.output)
        self.assertEqual(r.total_lines, 2)
        e = t.edit("/workspace/notes.md", "beta", "gamma", run_id=run)
        self.assertTrue(e.ok, e.output)
        self.assertIn("notes.md", t.ls("/workspace").output)
        self.assertEqual(t.glob("*.md", "/workspace").paths, ["/workspace/notes.md"])
        g = t.grep("gam+a", "/workspace", output_mode="files")
        self.assertIn("/workspace/notes.md", g.output)
        p = t.present_file("/workspace/notes.md", "the notes", run_id=run)
        self.assertTrue(p.ok)
        stale = t.write("/workspace/never-read.md", "x")
        self.assertTrue(stale.ok)
        self.c.volume(self.agent.refresh().workspace_volume_id).write("notes.md", "changed")
        refused = t.write("/workspace/notes.md", "mine")
        self.assertFalse(refused.ok)
        self.assertIn("read it again", refused.output)
        runinfo = self.agent.get_run(run)
        self.assertEqual([f.path for f in runinfo.files], ["/workspace/notes.md"])
        self.assertEqual([(x.path, x.caption) for x in runinfo.presented],
                         [("/workspace/notes.md", "the notes")])
        with self.assertRaises(coffer.NotFound):
            t.call("nosuchtool", {})

    def test_events_iterator(self) -> None:
        with self.agent.events(timeout=30) as events:
            def change() -> None:
                threading.Event().wait(0.3)
                self.docs.write("guide.md", "# guide")
            threading.Thread(target=change).start()
            got = next(events)
            self.assertEqual(got.type, "files_changed")
            self.assertEqual(got.data["paths"], ["/docs/guide.md"])
            self.agent.files.write("/workspace/p.txt", "shown")
            self.agent.tools.read("/workspace/p.txt")
            self.agent.tools.present_file("/workspace/p.txt", "here")
            got = next(events)
            self.assertEqual(got.type, "file_presented")
            self.assertEqual((got.data["path"], got.data["caption"]), ("/workspace/p.txt", "here"))

    def test_subjects_memory_skills(self) -> None:
        ann = self.agent.subject("ann@example.com")
        w = ann.write("notes/a.md", "hello ann")
        self.assertEqual((w.path, w.size), ("notes/a.md", 9))
        ann.write("bin/x", b"\x00\xff")
        self.assertEqual(ann.read("bin/x").data, b"\x00\xff")
        self.assertEqual([e.name for e in ann.list().entries], ["bin", "notes"])
        self.assertEqual(ann.read("notes/a.md").text, "hello ann")
        with ann.open("notes/a.md", range="bytes=0-4") as d:
            self.assertEqual(d.read(), b"hello")
        mv = ann.move("notes/a.md", "notes/b.md")
        self.assertEqual(mv.to, "notes/b.md")
        with self.assertRaises(coffer.NotFound):
            ann.write("nope/x.md", "x", create_parents=False)
        with self.assertRaises(coffer.Forbidden):
            ann.write("memories/USER.md", "not this way")
        ann.write_memory("USER.md", "prefers short answers")
        self.assertEqual(ann.read_memory("USER.md").text, "prefers short answers")
        with self.assertRaises(coffer.NotFound):
            ann.read_memory("MEMORY.md")
        vol = ann.volume()
        self.assertTrue(vol.volume_id and vol.volume_id.startswith("vol_"))
        self.assertEqual(vol.files, 3)
        bob = self.agent.subject("bob")
        self.assertEqual(bob.list().entries, [])
        with self.assertRaises(coffer.NotFound):
            bob.read("notes/b.md")
        sk = self.agent.put_skill("summarise", "# how to summarise\n")
        self.assertEqual(sk.name, "summarise")
        started = ann.start_session()
        self.assertEqual(started.skills, ["summarise"])
        self.assertEqual(ann.read("skills/summarise.md").text, "# how to summarise\n")
        rm = ann.remove("notes")
        self.assertEqual(rm["removed"], 1)

    def test_acting_for_a_subject_tool_outputs_places_resolve(self) -> None:
        places = self.c.agents.get(self.agent.id).info.places  # type: ignore[union-attr]
        self.assertEqual((places.uploads, places.tool_outputs, places.tmp),
                         ("/workspace/uploads", "/workspace/tool-outputs", "/workspace/tmp"))
        # X-Subject: ann's /user is her workspace; a prompt's files are her attachments
        ann = self.agent.for_user("ann")
        self.assertEqual(ann.user, "ann")
        w = ann.files.write("/user/notes.md", "for ann")
        self.assertEqual(w.path, "/user/notes.md")
        self.assertEqual(self.agent.subject("ann").read("notes.md").text, "for ann")
        ann.prompt("see this", [{"name": "a.txt", "data": b"attached"}], request_id="r1")
        self.assertEqual(ann.files.download("/attachments/r1/a.txt").data, b"attached")
        self.assertEqual(self.agent.files.list("/workspace").entries, [],
                         "nothing on the agent's own workspace")
        # `user=` on prompt (and run) is the same as for_user
        self.agent.prompt("and this", [{"name": "b.txt", "data": b"bob's"}], user="bob",
                          request_id="r2")
        bob = self.c.agent(self.agent.id, user="bob")
        self.assertEqual(bob.files.download("/attachments/r2/b.txt").data, b"bob's")
        with self.assertRaises(coffer.NotFound):
            ann.files.download("/attachments/r2/b.txt")
        run = self.agent.run("go", user="bob")
        self.assertEqual(run.agent.user, "bob")
        # tool outputs go where `places` says, a subject's to its /user
        out = self.agent.files.tool_output("call_1", "chart.png", b"\x89PNG-ish")
        self.assertEqual(out.path, "/workspace/tool-outputs/call_1/chart.png")
        again = self.agent.files.tool_output("call_1", "chart.png", b"\x89PNG-ish")
        self.assertTrue(again.replayed, "a retry writes nothing")
        self.assertEqual(ann.files.tool_output("call_2", "t.txt", "x").path,
                         "/user/tool-outputs/call_2/t.txt")
        # {"$file": path} in a tool's input, resolved
        self.agent.files.write("/workspace/in.txt", "hi")
        got = self.agent.resolve({"doc": {"$file": "/workspace/in.txt"}, "n": 1})
        self.assertEqual((got["doc"]["data"], got["doc"]["size"], got["n"]), ("aGk=", 2, 1))
        link = self.agent.resolve({"$file": "in.txt"}, as_="url")
        with urllib.request.urlopen(link["url"], timeout=10) as resp:
            self.assertEqual(resp.read(), b"hi")
        with self.assertRaises(coffer.NotFound):
            self.agent.resolve({"$file": "/workspace/absent.txt"})
        with self.assertRaises(ValueError):
            self.agent.for_user("not a subject")


if __name__ == "__main__":
    unittest.main()
