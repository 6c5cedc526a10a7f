// Agents through the SDK: settings and mounts, files by agent path, uploads (a retry
// replayed), the file tools and runs, the events iterator, subjects and their memory.

import test from "node:test";
import assert from "node:assert/strict";
import { ConflictError, ForbiddenError, NotFoundError } from "../dist/index.js";
import { client, text, uniq, within } from "./helpers.mjs";

const c = client();

test("upsert, get, mounts, delete", async () => {
  const id = uniq("ag");
  const a = await c.agents.upsert(id);
  assert.equal(a.id, id);
  assert.ok(a.workspaceVolumeId);
  assert.deepEqual(a.mounts, [{ workspace: true, path: "/workspace" }]);
  const docs = await c.volumes.create({ name: uniq("docs") });
  await assert.rejects(c.agents.upsert(id, { mounts: [{ volumeId: docs.id, path: "/docs", mode: "ro" }] }), ConflictError);
  const b = await c.agents.upsert(id, { mounts: [{ workspace: true }, { volumeId: docs.id, path: "/docs", mode: "ro" }], remount: true });
  assert.deepEqual(b.mounts.map((m) => m.path), ["/workspace", "/docs"]);
  const h = c.agent(id);
  const m = await h.setMounts([{ workspace: true }, { volumeId: docs.id, path: "/docs", mode: "rw" }]);
  assert.equal(m.mounts[1].mode, "rw");
  assert.equal((await h.get()).workspaceVolumeId, a.workspaceVolumeId);
  await c.agents.delete(id);
  await assert.rejects(c.agents.get(id), NotFoundError);
  await assert.rejects(c.volumes.get(a.workspaceVolumeId), NotFoundError);
  assert.equal((await c.volumes.get(docs.id)).id, docs.id, "a mounted volume stays");
});

test("files by agent path: upload, download, list, link, remove; uploads replayed", async () => {
  const id = uniq("ag");
  const ag = await c.agents.upsert(id);
  const h = c.agent(id);
  const w = await h.files.upload("/workspace/out/chart.csv", "a,b\n1,2\n", { contentType: "text/csv" });
  assert.deepEqual([w.path, w.version, w.size], ["/workspace/out/chart.csv", 1, 8]);
  const d = await h.files.download("/workspace/out/chart.csv");
  assert.deepEqual([text(d.data), d.contentType, d.version], ["a,b\n1,2\n", "text/csv", 1]);
  const s = await h.files.stream("/workspace/out/chart.csv");
  assert.equal(await new Response(s.body).text(), "a,b\n1,2\n");
  const top = await h.files.list();
  assert.equal(top.path, "/workspace", "the first mount by default");
  const ls = await h.files.list("/workspace/out");
  assert.deepEqual(ls.entries.map((e) => [e.name, e.type]), [["chart.csv", "file"]]);
  const l = await h.files.link("/workspace/out/chart.csv");
  assert.equal(await (await fetch(l.url)).text(), "a,b\n1,2\n");
  const u1 = await h.upload("r1", "photo.txt", "first");
  assert.equal(u1.path, "/workspace/uploads/r1/photo.txt");
  const u2 = await h.upload("r1", "photo.txt", "first");
  assert.equal(u2.replayed, true, "a retried upload writes nothing");
  assert.equal((await c.volume(ag.workspaceVolumeId).get()).seq, 2);
  await h.files.remove("/workspace/out/chart.csv");
  await assert.rejects(h.files.download("/workspace/out/chart.csv"), NotFoundError);
  await assert.rejects(h.files.download("/elsewhere/x"), NotFoundError);
});

test("the file tools, runs, and the events iterator", async () => {
  const id = uniq("ag");
  const shared = await c.volumes.create({ name: uniq("shared") });
  await c.agents.upsert(id, { mounts: [{ workspace: true }, { volumeId: shared.id, path: "/shared", mode: "rw", notify: true }] });
  const h = c.agent(id);
  const ac = new AbortController();
  const events = [];
  const it = h.events({ signal: ac.signal });
  const reader = (async () => {
    for await (const ev of it) {
      events.push(ev);
      if (events.some((e) => e.event === "files_changed") && events.some((e) => e.event === "file_presented")) break;
    }
  })();
  await new Promise((r) => setTimeout(r, 300));
  const run = uniq("run");
  const wr = await h.tools.write({ path: "/workspace/notes.md", content: "# Notes\nalpha beta\n" }, { runId: run });
  assert.equal(wr.ok, true, wr.output);
  const rd = await h.tools.read({ path: "/workspace/notes.md" }, { runId: run });
  assert.equal(rd.output.split("\n")[0], "     1\t# Notes");
  const ed = await h.tools.edit({ path: "/workspace/notes.md", oldString: "beta", newString: "BETA" }, { runId: run });
  assert.equal(ed.ok, true, ed.output);
  assert.match((await h.tools.ls({ path: "/workspace" })).output, /notes\.md/);
  assert.match((await h.tools.glob({ pattern: "**/*.md" })).output, /\/workspace\/notes\.md/);
  assert.match((await h.tools.grep({ pattern: "BETA", outputMode: "content" })).output, /notes\.md:2:alpha BETA/);
  const pr = await h.tools.presentFile({ path: "/workspace/notes.md", caption: "the notes" }, { runId: run });
  assert.equal(pr.ok, true, pr.output);
  await c.volume(shared.id).write("from-elsewhere.txt", "x");
  const stale = await h.tools.call("edit", { path: "/shared/from-elsewhere.txt", oldString: "x", newString: "y" });
  assert.equal(stale.ok, false);
  assert.match(stale.output, /read it first/);
  const r = await h.getRun(run);
  assert.deepEqual(r.files.map((f) => f.path), ["/workspace/notes.md"]);
  assert.deepEqual(r.presented.map((p) => [p.path, p.caption]), [["/workspace/notes.md", "the notes"]]);
  await within(reader, 15000, () => "events seen: " + JSON.stringify(events));
  ac.abort();
  const fc = events.find((e) => e.event === "files_changed");
  assert.deepEqual([fc.data.mount, fc.data.paths], ["/shared", ["/shared/from-elsewhere.txt"]]);
  const fp = events.find((e) => e.event === "file_presented");
  assert.equal(fp.data.path, "/workspace/notes.md");
  assert.equal(fp.data.caption, "the notes");
  await assert.rejects(h.tools.call("nope", {}), NotFoundError);
});

test("subjects: files, move, remove, volume, memory, skills and sessions", async () => {
  const id = uniq("ag");
  await c.agents.upsert(id);
  const h = c.agent(id);
  const s = h.subject("alice@example.com");
  const w = await s.write("notes/a.md", "hello");
  assert.equal(w.version, 1);
  await s.write("bin/x", new Uint8Array([0, 1, 2]));
  assert.deepEqual([...(await s.read("bin/x")).data], [0, 1, 2]);
  assert.equal(text((await s.read("notes/a.md")).data), "hello");
  const root = await s.list();
  assert.deepEqual(root.entries.map((e) => [e.name, e.type]), [["bin", "dir"], ["notes", "dir"]]);
  const mv = await s.move("notes/a.md", "notes/b.md");
  assert.equal(mv.moved, 1);
  const rm = await s.remove("bin");
  assert.equal(rm.removed, 1);
  const vol = await s.volume();
  assert.equal(vol.files, 1);
  assert.ok(vol.volumeId);
  await assert.rejects(s.write("memories/USER.md", "no"), ForbiddenError);
  await s.writeMemory("USER.md", "Alice likes tea.");
  assert.equal(await s.readMemory("USER.md"), "Alice likes tea.");
  await assert.rejects(s.readMemory("MEMORY.md"), NotFoundError);
  const other = h.subject("bob");
  await assert.rejects(other.read("notes/b.md"), NotFoundError);
  const sk = await h.putSkill("charts", "# Charts\nuse csv");
  assert.equal(sk.name, "charts");
  const sess = await s.startSession();
  assert.deepEqual(sess.skills, ["charts"]);
  assert.equal(text((await s.read("skills/charts.md")).data), "# Charts\nuse csv");
});

test("acting for a subject (X-Subject, a prompt's user), tool outputs, places, resolve", async () => {
  const id = uniq("subj");
  const a = await c.agents.upsert(id);
  assert.deepEqual(a.places, { uploads: "/workspace/uploads", toolOutputs: "/workspace/tool-outputs", tmp: "/workspace/tmp" });
  const ann = c.agent(id).forUser("ann");
  assert.equal(ann.user, "ann");
  assert.equal((await ann.files.upload("/user/notes.md", "for ann")).path, "/user/notes.md");
  assert.equal(text((await c.agent(id).subject("ann").read("notes.md")).data), "for ann");
  await ann.prompt("see this", { files: [{ name: "a.txt", data: "attached" }], requestId: "r1" });
  assert.equal(text((await ann.files.download("/attachments/r1/a.txt")).data), "attached");
  assert.deepEqual((await c.agent(id).files.list("/workspace")).entries, [], "nothing on the agent's own workspace");
  await c.agent(id).prompt("and this", { files: [{ name: "b.txt", data: "bob's" }], user: "bob", requestId: "r2" });
  const bob = c.agent(id, { user: "bob" });
  assert.equal(text((await bob.files.download("/attachments/r2/b.txt")).data), "bob's");
  await assert.rejects(ann.files.download("/attachments/r2/b.txt"), NotFoundError);
  const out = await c.agent(id).files.toolOutput("call_1", "chart.png", new Uint8Array([0x89, 0x50]));
  assert.equal(out.path, "/workspace/tool-outputs/call_1/chart.png");
  assert.equal((await c.agent(id).files.toolOutput("call_1", "chart.png", new Uint8Array([0x89, 0x50]))).replayed, true);
  assert.equal((await ann.files.toolOutput("call_2", "t.txt", "x")).path, "/user/tool-outputs/call_2/t.txt");
  await c.agent(id).files.upload("/workspace/in.txt", "hi");
  const got = await c.agent(id).resolve({ doc: { $file: "/workspace/in.txt" }, n: 1 });
  assert.deepEqual([got.doc.data, got.doc.size, got.n], ["aGk=", 2, 1]);
  const link = await c.agent(id).resolve({ $file: "in.txt" }, { as: "url" });
  assert.equal(await (await fetch(link.url)).text(), "hi");
  await assert.rejects(c.agent(id).resolve({ $file: "/workspace/absent.txt" }), NotFoundError);
  await c.agents.delete(id);
});
