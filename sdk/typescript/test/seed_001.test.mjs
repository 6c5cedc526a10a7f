// Seed 001 (shared/seeds/001_*.txt, "Files") as its users read it: every TypeScript
// sample runs as written, with only the client's construction added
// (`const agents = new Coffer(...)`), against a real cofferd, and does what the seed says.
// The samples are copied here verbatim between `// seed:` and `// end seed` lines
// (tests/blackbox/test_sdk_typescript.py checks that each ts block of the seed is one of
// them); the lines around them make the names they use and check what they did.

import test from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateSync, gunzipSync } from "node:zlib";
import { File } from "node:buffer"; // a global only from Node 20; Debian 12 has Node 18
import { Coffer, ConflictError, PreconditionFailedError } from "../dist/index.js";
import { KEY, text, uniq, URL_ } from "./helpers.mjs";

// The client's construction: the seed calls it `agents`.
const agents = new Coffer({ url: URL_, key: KEY, retryBaseMs: 20 });
const sha = (b) => createHash("sha256").update(b).digest("hex");

/** A grey PNG of w x h. */
function png(w, h) {
  const table = Array.from({ length: 256 }, (_, n) => {
    let x = n;
    for (let k = 0; k < 8; k++) x = x & 1 ? 0xedb88320 ^ (x >>> 1) : x >>> 1;
    return x >>> 0;
  });
  const crc32 = (buf) => {
    let x = 0xffffffff;
    for (const b of buf) x = table[(x ^ b) & 0xff] ^ (x >>> 8);
    return (x ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; ihdr[9] = 2;
  const row = Buffer.alloc(1 + w * 3, 128); row[0] = 0;
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(Buffer.concat(Array.from({ length: h }, () => row)))), chunk("IEND", Buffer.alloc(0))]);
}

/** A one-page PDF. */
function pdf() {
  const objs = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"];
  let out = "%PDF-1.4\n";
  const offs = objs.map((o, i) => { const at = out.length; out += `${i + 1} 0 obj\n${o}\nendobj\n`; return at; });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n` + offs.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

test("seed 001: attaching files to a message (agent.run)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "seed001-"));
  const cwd = process.cwd();
  const id = uniq("seed-run");
  try {
    process.chdir(dir);
    writeFileSync("q3.pdf", pdf());
    const screenshotBytes = new Uint8Array(png(40, 30));
    const csv = "quarter,revenue\nQ3,42\n";
    const agent = await agents.upsert(id);
    await agent.files.upload("/workspace/notes.md", "# notes\nQ3 went well\n");
    // seed:
    const run = await agent.run("What changed in Q3?", {
      files: ["./q3.pdf", screenshotBytes, new File([csv], "data.csv"), { path: "/workspace/notes.md" }],
    });
    // end seed
    const up = `/workspace/uploads/${run.id}`;
    assert.deepEqual(run.message.files.map((f) => [f.path, f.contentType]), [
      [`${up}/q3.pdf`, "application/pdf"], [`${up}/file-2`, "image/png"],
      [`${up}/data.csv`, "text/csv"], ["/workspace/notes.md", "text/markdown"],
    ]);
    assert.equal(run.message.requestId, run.id, "the message is built under the run's id");
    const lines = run.message.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    assert.match(lines, new RegExp(`\\[File ${up}/q3\\.pdf \\(application/pdf, `));
    assert.match(lines, /What changed in Q3\?/);
    assert.ok(run.message.content.some((b) => b.type === "image"), "the screenshot is shown natively");
    assert.ok(run.message.content.some((b) => b.type === "document"), "the PDF is shown natively");
    // each file was uploaded once, where the seed says, with its bytes
    const ws = agents.volume(agent.workspaceVolumeId);
    assert.equal(sha((await ws.read(`uploads/${run.id}/data.csv`)).data), sha(csv));
    assert.equal(sha((await ws.read(`uploads/${run.id}/file-2`)).data), sha(screenshotBytes));
    const seq = (await ws.get()).seq;
    // a retried run (the same id) uploads nothing twice
    const again = await agent.run("What changed in Q3?", {
      runId: run.id, files: ["./q3.pdf", screenshotBytes, new File([csv], "data.csv"), { path: "/workspace/notes.md" }],
    });
    assert.deepEqual(again.message.files.map((f) => f.sha256), run.message.files.map((f) => f.sha256));
    assert.equal((await ws.get()).seq, seq, "a retried run writes nothing");

    // run.files and run.raw.presented fill as the run's files are written and presented
    assert.deepEqual([run.files, run.raw.presented], [[], []]);
    await run.tools.write({ path: "/workspace/out/summary.md", content: "Q3: revenue 42\n" });
    assert.deepEqual(run.files.map((f) => [f.path, f.size, f.contentType]), [["/workspace/out/summary.md", 15, "text/markdown"]]);
    await run.tools.presentFile({ path: "/workspace/out/summary.md", caption: "the summary" });
    assert.deepEqual(run.raw.presented.map((p) => [p.path, p.caption]), [["/workspace/out/summary.md", "the summary"]]);
    assert.match(run.raw.presented[0].url, /^http:\/\/.*\/l\//, "a signed download url");
    // a call made elsewhere with the run's id shows after refresh()
    await agent.tools.write({ path: "/workspace/out/b.md", content: "b" }, { runId: run.id });
    assert.deepEqual((await run.refresh()).files.map((f) => f.path), ["/workspace/out/summary.md", "/workspace/out/b.md"]);
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
    await agents.agents.delete(id).catch(() => {});
  }
});

test("seed 001: files out (agent.files download, list, link, upload)", async () => {
  const agent = await agents.upsert(uniq("seed-files"));
  const chart = new Uint8Array(png(8, 8));
  await agent.files.upload("/workspace/out/chart.png", chart);
  await agent.files.upload("/workspace/out/report.pdf", pdf());
  const config = { model: "x", depth: 2 };
  // seed:
  const { data, contentType } = await agent.files.download("/workspace/out/chart.png");
  const listing = await agent.files.list({ path: "/workspace/out" });
  const link = await agent.files.link("/workspace/out/report.pdf", { expiresIn: 3600 }); // for a browser or another service
  await agent.files.upload("/workspace/in/config.json", JSON.stringify(config));
  // end seed
  assert.equal(sha(data), sha(chart));
  assert.equal(contentType, "image/png");
  assert.equal(listing.path, "/workspace/out");
  assert.deepEqual(listing.entries.map((e) => e.name), ["chart.png", "report.pdf"]);
  const left = Date.parse(link.expiresAt) - Date.now();
  assert.ok(left > 3000 * 1000 && left <= 3600 * 1000, `expires in an hour: ${link.expiresAt}`);
  const got = await fetch(link.url);
  assert.equal(got.status, 200);
  assert.equal(sha(new Uint8Array(await got.arrayBuffer())), sha(pdf()), "the link downloads without a key");
  assert.deepEqual(JSON.parse(text((await agent.files.download("/workspace/in/config.json")).data)), config);
  await agents.agents.delete(agent.id);
});

test("seed 001: volumes (createVolume, volume(id).write, upsert with mounts)", async () => {
  const handbook = "# Handbook\nBe kind.\n";
  await agents.agents.delete("support").catch(() => {}); // the seed's agent id, from an earlier run
  // seed:
  const docs = await agents.runtime.createVolume({ name: "shared docs" });
  await agents.runtime.volume(docs.id).write("handbook.md", handbook);
  const agent = await agents.upsert("support", { mounts: [{ volumeId: docs.id, path: "/docs", mode: "ro" }] });
  // end seed
  // The mounts given come first, the workspace after them (seed 001, API.md "Agents").
  assert.deepEqual(agent.mounts.map((m) => m.path), ["/docs", "/workspace"]);
  assert.equal(text((await agent.files.download("/docs/handbook.md")).data), handbook);
  const w = await agent.tools.write({ path: "/docs/x.md", content: "x" });
  assert.equal(w.ok, false, "the mount is read-only");
  assert.match(w.output, /read-only/);
  // other mounts: 409, unless remount
  const other = await agents.runtime.createVolume({ name: "other docs" });
  await assert.rejects(agents.upsert("support", { mounts: [{ volumeId: other.id, path: "/docs", mode: "ro" }] }), ConflictError);
  await agents.upsert("support", { mounts: [{ volumeId: other.id, path: "/docs", mode: "ro" }], remount: true });
  await agents.agents.delete("support");
  assert.equal((await agents.runtime.volumes([docs.id]))[0].files, 1, "a mounted volume stays when the agent goes");
});

test("seed 001: the volume calls the seed names", async () => {
  const rt = agents.runtime;
  const key = uniq("idem");
  // createVolume({ name }, { idempotencyKey }): once per key
  const vol = await rt.createVolume({ name: uniq("v") }, { idempotencyKey: key });
  const same = await rt.createVolume({ name: vol.name }, { idempotencyKey: key });
  assert.equal(same.id, vol.id);
  const volume = rt.volume(vol.id);
  // write(path, data, { version }): 0 = must not exist
  const a1 = await volume.write("a.md", "one", { version: 0 });
  await assert.rejects(volume.write("a.md", "two", { version: 0 }), PreconditionFailedError);
  const a2 = await volume.write("a.md", "two", { version: a1.version });
  await assert.rejects(volume.write("a.md", "three", { version: a1.version }), (e) => e instanceof PreconditionFailedError && e.current.version === a2.version);
  assert.equal(text((await volume.read("a.md")).data), "two");
  await volume.write("docs/b.md", "bee");
  assert.deepEqual((await volume.list()).files.map((f) => f.path), ["a.md", "docs/b.md"]);
  const since = (await volume.get()).seq;
  await volume.write("docs/c.md", "sea");
  await volume.write("x.md", "x");
  await volume.remove("x.md");
  const ch = await volume.changes(since, { prefix: "docs/" });
  assert.deepEqual(ch.changes.map((c) => [c.op, c.path]), [["write", "docs/c.md"]]);
  assert.deepEqual((await volume.changes(since)).changes.map((c) => [c.op, c.path]), [["write", "docs/c.md"], ["write", "x.md"], ["remove", "x.md"]]);
  const seqs = await rt.volumes([vol.id]);
  assert.deepEqual(seqs.map((v) => [v.id, v.seq, v.files]), [[vol.id, ch.seq, 3]]);

  // snapshot(), fork({ snapshot }), read/list/readAll with { snapshot }
  const snap = await volume.snapshot({ labels: { release: "q3" } });
  await volume.write("a.md", "after");
  const fork = await volume.fork({ snapshot: snap.id });
  assert.equal(text((await rt.volume(fork.id).read("a.md")).data), "two");
  assert.equal(text((await volume.read("a.md", { snapshot: snap.id })).data), "two");
  assert.deepEqual((await volume.list({ snapshot: snap.id })).files.length, 3);
  const all = await volume.readAll({ prefix: "docs/", snapshot: snap.id });
  assert.deepEqual(all.files.map((f) => [f.path, f.text]), [["docs/b.md", "bee"], ["docs/c.md", "sea"]]);
  assert.deepEqual((await volume.readAll({ glob: "*.md" })).files.map((f) => f.text), ["after"]);
  assert.deepEqual((await volume.snapshots({ labels: { release: "q3" } })).map((s) => s.id), [snap.id]);

  // pinned: updateSnapshot, deleteSnapshot(id, { force })
  const pinned = await volume.snapshot({ pinned: true });
  assert.equal(pinned.pinned, true);
  await assert.rejects(volume.deleteSnapshot(pinned.id), ConflictError);
  await volume.deleteSnapshot(pinned.id, { force: true });
  const p2 = await volume.snapshot({ pinned: true });
  assert.equal((await volume.updateSnapshot(p2.id, { pinned: false })).pinned, false);
  await volume.deleteSnapshot(p2.id);

  // snapshot({ files }) with text and bytes: the volume untouched
  const before = (await volume.get()).seq;
  const bytes = new Uint8Array([0, 1, 2, 255]);
  const made = await volume.snapshot({ files: { "a.txt": "text", "b.bin": bytes } });
  assert.deepEqual(made.contents.map((c) => [c.path, c.sha256]), [["a.txt", sha("text")], ["b.bin", sha(bytes)]]);
  assert.equal((await volume.get()).seq, before, "the volume is untouched");
  assert.deepEqual([...(await volume.read("b.bin", { snapshot: made.id })).data], [...bytes]);

  // restore(snapshot): {snapshot, seq, written, removed}
  const r = await volume.restore(made.id);
  assert.deepEqual([r.snapshot, r.written, r.removed], [made.id, 2, 3]);
  assert.deepEqual((await volume.list()).files.map((f) => f.path), ["a.txt", "b.bin"]);

  // archive({ snapshot?, path?, glob? })
  const arc = await volume.archive({ snapshot: snap.id, path: "docs" });
  const tar = gunzipSync(Buffer.from(await new Response(arc.body).arrayBuffer())).toString("latin1");
  assert.match(tar, /b\.md/);
  assert.ok(!/a\.md/.test(tar), "named relative to path, a.md left out");

  // link(path, { expiresIn, method, maxBytes, contentType })
  const put = await volume.link("up/new.txt", { expiresIn: 60, method: "PUT", maxBytes: 10, contentType: "text/plain" });
  assert.equal(put.method, "PUT");
  assert.equal((await fetch(put.url, { method: "PUT", body: "hello", headers: { "Content-Type": "text/plain" } })).status, 201);
  assert.equal((await fetch(put.url, { method: "PUT", body: "far too long", headers: { "Content-Type": "text/plain" } })).status, 413);
  const get = await volume.link("up/new.txt", { expiresIn: 60 });
  assert.equal(await (await fetch(get.url)).text(), "hello");
  await agents.volumes.delete(fork.id);
  await agents.volumes.delete(vol.id);
});
