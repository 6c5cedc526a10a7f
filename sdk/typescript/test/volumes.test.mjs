// Volumes through the SDK: every call of API.md "Volumes" against a real cofferd, typed
// errors, and a 412 race.

import test from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import {
  ConflictError, fromFile, GoneError, NotFoundError, PreconditionFailedError, ValidationError, CofferError,
} from "../dist/index.js";
import { client, text, uniq } from "./helpers.mjs";

const c = client();
const sha = (s) => createHash("sha256").update(s).digest("hex");

test("create with an idempotency key, get, list, batch seqs, delete", async () => {
  const name = uniq("vol");
  const key = uniq("idem");
  const a = await c.volumes.create({ name }, { idempotencyKey: key });
  const b = await c.volumes.create({ name }, { idempotencyKey: key });
  assert.equal(b.id, a.id, "the same key gives the same volume");
  assert.equal(a.seq, 0);
  assert.equal(a.capacity, 512 * 1024 * 1024);
  await assert.rejects(c.volumes.create({ name: name + "x" }, { idempotencyKey: key }), ConflictError);
  const other = await c.volumes.create({ name: name + "-2", ceiling: 1 << 30 });
  assert.equal(other.ceiling, 1 << 30);
  assert.deepEqual((await c.volumes.get(a.id)).name, name);
  const page = await c.volumes.list({ prefix: name });
  assert.deepEqual(page.volumes.map((v) => v.id), [a.id, other.id]);
  const p1 = await c.volumes.list({ prefix: name, limit: 1 });
  assert.equal(p1.volumes.length, 1);
  assert.ok(p1.cursor, "a cursor while more remain");
  const all = [];
  for await (const v of c.volumes.all({ prefix: name })) all.push(v.id);
  assert.deepEqual(all, [a.id, other.id]);
  await c.volume(a.id).write("x.txt", "1");
  const seqs = await c.volumes.seqs([a.id, other.id, "vol_nope"]);
  assert.deepEqual(Object.fromEntries(seqs.map((v) => [v.id, v.seq])), { [a.id]: 1, [other.id]: 0 });
  await c.volumes.delete(other.id);
  const err = await c.volumes.get(other.id).catch((e) => e);
  assert.ok(err instanceof NotFoundError && err instanceof CofferError, String(err));
  assert.equal(err.status, 404);
  assert.equal(err.type, "not_found");
});

test("write, read, conditional writes, range, remove, move, list, readAll", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  const w = await v.write("docs/a.md", "# hello");
  assert.deepEqual([w.path, w.version, w.size, w.contentType, w.sha256, w.seq],
    ["docs/a.md", 1, 7, "text/markdown", sha("# hello"), 1]);
  const r = await v.read("docs/a.md");
  assert.equal(text(r.data), "# hello");
  assert.deepEqual([r.contentType, r.version, r.seq, r.size], ["text/markdown", 1, 1, 7]);
  const st = await v.stat("docs/a.md");
  assert.deepEqual([st.version, st.size, st.contentType, st.seq], [1, 7, "text/markdown", 1]);
  const part = await v.read("docs/a.md", { range: [2, 4] });
  assert.equal(text(part.data), "hel");
  assert.equal(part.contentRange, "bytes 2-4/7");
  const e412 = await v.write("docs/a.md", "x", { version: 7 }).catch((e) => e);
  assert.ok(e412 instanceof PreconditionFailedError, String(e412));
  assert.deepEqual(e412.current, { version: 1, sha256: sha("# hello") });
  assert.match(e412.message, /version/);
  await assert.rejects(v.write("docs/a.md", "x", { version: 0 }), PreconditionFailedError);
  const w2 = await v.write("docs/a.md", new TextEncoder().encode("two"), { version: 1, contentType: "text/plain" });
  assert.equal(w2.version, 2);
  assert.equal((await v.read("docs/a.md")).contentType, "text/plain");
  await v.write("docs/b.txt", new Blob(["bee"]));
  const dir = mkdtempSync(join(tmpdir(), "sdk-vol-"));
  writeFileSync(join(dir, "local.txt"), "from disk");
  const fw = await v.write("docs/disk.txt", fromFile(join(dir, "local.txt")));
  rmSync(dir, { recursive: true });
  assert.equal(fw.sha256, sha("from disk"));
  await v.remove("docs/disk.txt");
  await v.write("src/c.js", async function* () { yield new TextEncoder().encode("let c"); }());
  const ls = await v.list({ glob: "**/*.md" });
  assert.deepEqual(ls.files.map((f) => f.path), ["docs/a.md"]);
  assert.equal(ls.seq, 6);
  const pre = await v.list({ prefix: "docs/" });
  assert.deepEqual(pre.files.map((f) => f.path), ["docs/a.md", "docs/b.txt"]);
  const mv = await v.move("docs/b.txt", "docs/bee.txt");
  assert.equal(mv.moved, 1);
  await assert.rejects(v.move("docs/bee.txt", "docs/a.md"), ConflictError);
  await v.move("docs/bee.txt", "docs/a.md", { overwrite: true });
  assert.equal(text((await v.read("docs/a.md")).data), "bee");
  await v.write("bin/z", new Uint8Array([0, 255, 1]));
  const all = await v.readAll({ prefix: "" });
  assert.deepEqual(all.files.map((f) => [f.path, text(f.bytes)]).slice(0, 2), [["bin/z", "\u0000\ufffd\u0001"], ["docs/a.md", "bee"]]);
  assert.deepEqual([...all.files[0].bytes], [0, 255, 1]);
  assert.equal(all.files[1].text, "bee");
  await assert.rejects(v.remove("docs/a.md", { version: 1 }), PreconditionFailedError);
  const rm = await v.remove("src/c.js");
  assert.equal(rm.path, "src/c.js");
  await assert.rejects(v.read("src/c.js"), NotFoundError);
  await assert.rejects(v.write("../x", "x"), ValidationError);
});

test("a 412 race: of eight writers at one version exactly one wins", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  const first = await v.write("race.txt", "v1");
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) =>
    v.write("race.txt", `writer ${i}`, { version: first.version })));
  const won = results.filter((r) => r.status === "fulfilled");
  const lost = results.filter((r) => r.status === "rejected");
  assert.equal(won.length, 1, "one winner");
  assert.equal(lost.length, 7);
  for (const l of lost) {
    assert.ok(l.reason instanceof PreconditionFailedError, String(l.reason));
    assert.equal(l.reason.current.version, won[0].value.version);
    assert.equal(l.reason.current.sha256, won[0].value.sha256);
  }
  assert.equal(text((await v.read("race.txt")).data), `writer ${results.indexOf(won[0])}`);
});

test("snapshots: pinned, labels, files, update, delete with force, fork, restore", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  await v.write("a.txt", "one");
  const s1 = await v.snapshot({ pinned: true, labels: { stage: "draft" } });
  assert.deepEqual([s1.volumeId, s1.seq, s1.pinned, s1.labels, s1.files], [v.id, 1, true, { stage: "draft" }, 1]);
  const s2 = await v.snapshot({ files: { "only.txt": "given", "bin.dat": { data: "AAE=" } } });
  assert.deepEqual(s2.contents.map((x) => x.path).sort(), ["bin.dat", "only.txt"]);
  assert.deepEqual((await v.list()).files.map((f) => f.path), ["a.txt"], "the volume untouched");
  assert.equal(text((await v.read("only.txt", { snapshot: s2.id })).data), "given");
  const byLabel = await v.snapshots({ labels: { stage: "draft" } });
  assert.deepEqual(byLabel.map((s) => s.id), [s1.id]);
  assert.equal((await v.getSnapshot(s1.id)).id, s1.id);
  const up = await v.updateSnapshot(s1.id, { labels: { stage: "final" } });
  assert.deepEqual(up.labels, { stage: "final" });
  await v.write("a.txt", "two");
  await v.remove("a.txt");
  await v.write("b.txt", "bee");
  const rs = await v.restore(s1.id);
  assert.deepEqual([rs.snapshot, rs.written, rs.removed], [s1.id, 1, 1]);
  assert.equal(text((await v.read("a.txt")).data), "one");
  const f = await v.fork({ snapshot: s1.id, name: uniq("fork") });
  assert.notEqual(f.id, v.id);
  await c.volume(f.id).write("a.txt", "forked");
  assert.equal(text((await v.read("a.txt")).data), "one", "the fork diverges");
  const gone = await c.volume(f.id).changes(0).catch((e) => e);
  assert.ok(gone instanceof GoneError, String(gone));
  assert.equal(typeof gone.oldest, "number", "oldest carried on 410");
  await assert.rejects(v.deleteSnapshot(s1.id), ConflictError);
  await v.deleteSnapshot(s1.id, { force: true });
  await assert.rejects(v.getSnapshot(s1.id), NotFoundError);
  await v.deleteSnapshot(s2.id);
});

test("archive as a stream, signed links", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  await v.write("docs/a.md", "alpha");
  await v.write("docs/sub/b.md", "beta");
  const ar = await v.archive({ path: "docs" });
  assert.equal(ar.seq, 2);
  const tar = gunzipSync(Buffer.from(await new Response(ar.body).arrayBuffer()));
  const names = [];
  for (let off = 0; off + 512 <= tar.length; ) {
    const name = tar.subarray(off, off + 100).toString().replace(/\0.*$/s, "");
    if (!name) break;
    const size = parseInt(tar.subarray(off + 124, off + 136).toString(), 8);
    names.push(name);
    off += 512 + Math.ceil(size / 512) * 512;
  }
  assert.deepEqual(names.sort(), ["a.md", "sub/b.md"]);
  const l = await v.link("docs/a.md", { expiresIn: 60 });
  assert.equal(l.method, "GET");
  const got = await fetch(l.url);
  assert.equal(await got.text(), "alpha");
  const put = await v.link("docs/new.txt", { method: "PUT", maxBytes: 10, contentType: "text/plain" });
  const res = await fetch(put.url, { method: "PUT", body: "linked", headers: { "Content-Type": "text/plain" } });
  assert.equal(res.status, 201);
  assert.equal(text((await v.read("docs/new.txt")).data), "linked");
  const key = uniq("lk");
  await v.link("docs/a.md", { idempotencyKey: key });
  await assert.rejects(v.link("docs/a.md", { idempotencyKey: key }), ConflictError);
});

test("a wrong key is UnauthorizedError; keys of another org and of an agent", async () => {
  const bad = client({ key: "nope" });
  const e = await bad.volumes.list().catch((x) => x);
  assert.equal(e.name, "UnauthorizedError");
  assert.equal(e.status, 401);
  const mine = await c.volumes.create({ name: uniq() });
  const k = await c.createKey({ org: uniq("org") });
  const other = client({ key: k.key });
  await assert.rejects(other.volumes.get(mine.id), NotFoundError);
  const agent = uniq("ag");
  await c.agents.upsert(agent);
  const bound = client({ key: (await c.createKey({ agent })).key });
  await assert.rejects(bound.volumes.list(), (x) => x.name === "ForbiddenError" && x.status === 403);
  assert.equal((await bound.agent(agent).get()).id, agent);
  const h = await c.health();
  assert.equal(h.ok, true);
  assert.match(h.version, /^\d+\.\d+\.\d+/);
});
