// prompt() through the SDK: every kind of file uploaded first (streamed) to
// uploads/<requestId>/, then named by path; a retry writes nothing twice; an image shown
// scaled; the openai format; a conversation rebuilt; a bad entry uploads nothing.

import test from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { File } from "node:buffer"; // a global only from Node 20; Debian 12 has Node 18
import { ValidationError } from "../dist/index.js";
import { client, uniq } from "./helpers.mjs";

const c = client();

const CRC = Array.from({ length: 256 }, (_, n) => {
  let x = n;
  for (let k = 0; k < 8; k++) x = x & 1 ? 0xedb88320 ^ (x >>> 1) : x >>> 1;
  return x >>> 0;
});
function crc32(buf) {
  let x = 0xffffffff;
  for (const b of buf) x = CRC[(x ^ b) & 0xff] ^ (x >>> 8);
  return (x ^ 0xffffffff) >>> 0;
}
/** A grey RGB PNG of w x h. */
function png(w, h) {
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
  const raw = Buffer.concat(Array.from({ length: h }, () => row));
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

/** Width and height of a PNG or JPEG given as base64. */
function dims(b64) {
  const b = Buffer.from(b64, "base64");
  if (b[0] === 0x89) return [b.readUInt32BE(16), b.readUInt32BE(20)];
  for (let i = 2; i < b.length;) {
    const m = b[i + 1], len = b.readUInt16BE(i + 2);
    if (m >= 0xc0 && m <= 0xc2) return [b.readUInt16BE(i + 7), b.readUInt16BE(i + 5)];
    i += 2 + len;
  }
  return null;
}

test("every kind of file uploaded first, named by path; a retry writes nothing twice", async () => {
  const id = uniq("ag");
  const ag = await c.agents.upsert(id);
  const h = c.agent(id);
  const ws = c.volume(ag.workspaceVolumeId);
  await h.files.upload("/workspace/docs/spec.md", "# the spec\n");
  const dir = mkdtempSync(join(tmpdir(), "sdk-prompt-"));
  try {
    writeFileSync(join(dir, "local.csv"), "a,b\n1,2\n");
    const files = [
      new TextEncoder().encode("raw bytes"),
      new File([png(3000, 2000)], "wide.png", { type: "image/png" }),
      { name: "notes.txt", data: "inline notes", contentType: "text/plain" },
      join(dir, "local.csv"),
      { path: "/workspace/docs/spec.md" },
    ];
    const requestId = uniq("req");
    const r = await h.prompt("what is in these?", { files, requestId });
    assert.equal(r.requestId, requestId);
    const up = `/workspace/uploads/${requestId}/`;
    assert.deepEqual(r.files.map((f) => f.path),
      [up + "file-1", up + "wide.png", up + "notes.txt", up + "local.csv", "/workspace/docs/spec.md"]);
    assert.deepEqual(r.files.map((f) => f.shown), [false, true, false, false, false]);
    assert.match(r.content[0].text, new RegExp(`^\\[File ${up}file-1 \\(`));
    assert.equal(r.content[5].text, "what is in these?");
    const img = r.content[6];
    assert.equal(img.type, "image");
    assert.deepEqual(dims(img.source.data), [1568, 1045], "scaled to 1568 px keeping its shape");
    const seq = (await ws.get()).seq;
    const again = await h.prompt("what is in these?", { files, requestId });
    assert.deepEqual(again.files, r.files);
    assert.equal((await ws.get()).seq, seq, "the retry uploaded and wrote nothing");
    const oa = await h.prompt("what is in these?", { files, requestId, format: "openai" });
    const part = oa.content.find((b) => b.type === "image_url");
    assert.match(part.image_url.url, /^data:image\/png;base64,/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a conversation is rebuilt; a bad entry uploads nothing", async () => {
  const id = uniq("ag");
  const ag = await c.agents.upsert(id);
  const h = c.agent(id);
  const conversation = uniq("conv");
  await h.prompt("first", { conversation, files: [{ name: "a.txt", data: "A" }] });
  await h.prompt("second", { conversation });
  const req = await h.conversationRequest(conversation);
  assert.equal(req.conversation, conversation);
  assert.deepEqual(req.prompts.map((p) => p.text), ["first", "second"]);
  assert.deepEqual(req.messages.map((m) => m.role), ["user", "user"]);
  const seq = (await c.volume(ag.workspaceVolumeId).get()).seq;
  const many = Array.from({ length: 21 }, (_, i) => ({ name: `f${i}.txt`, data: "x" }));
  await assert.rejects(h.prompt("too many", { files: many }), ValidationError);
  await assert.rejects(h.prompt("missing", { files: [{ name: "ok.txt", data: "x" }, "/nonexistent/file.txt"] }), /ENOENT/);
  assert.equal((await c.volume(ag.workspaceVolumeId).get()).seq, seq, "nothing uploaded");
});
