// A 1 GiB file up and down through the SDK, streamed: generated chunk by chunk, hashed on
// the way, and the process's peak memory (maxRSS) measured: it stays far below the file.

import test from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { client, uniq } from "./helpers.mjs";

const SIZE = 1 << 30;
const CHUNK = 1 << 20;
// Peak resident memory allowed for the whole test process: node itself takes ~50 MiB;
// holding the file would take over 1,024.
const RSS_LIMIT_MIB = 256;

/** A stream of SIZE bytes, each 1 MiB chunk different (its index in its first bytes). */
function generated(hash) {
  let i = 0;
  const base = new Uint8Array(CHUNK).map((_, k) => (k * 31 + 7) & 0xff);
  return new ReadableStream({
    pull(ctl) {
      if (i * CHUNK >= SIZE) return ctl.close();
      const chunk = new Uint8Array(base);
      new DataView(chunk.buffer).setUint32(0, i++);
      hash.update(chunk);
      ctl.enqueue(chunk);
    },
  });
}

const rssMiB = () => process.resourceUsage().maxRSS / 1024;

test("a 1 GiB upload and download, streamed, never held in memory", { timeout: 900_000 }, async () => {
  const c = client({ timeoutMs: 120_000 });
  const v = c.volume((await c.volumes.create({ name: uniq("large") })).id);
  const sent = createHash("sha256");
  const w = await v.write("big.bin", generated(sent), { contentType: "application/octet-stream" });
  const sentHex = sent.digest("hex");
  assert.equal(w.size, SIZE);
  assert.equal(w.sha256, sentHex, "the server stored what was generated");
  const afterUp = rssMiB();
  assert.ok(afterUp < RSS_LIMIT_MIB, `peak RSS after the upload: ${afterUp.toFixed(0)} MiB`);

  const d = await v.download("big.bin");
  assert.equal(d.size, SIZE);
  const got = createHash("sha256");
  let n = 0;
  for await (const chunk of d.body) {
    got.update(chunk);
    n += chunk.length;
  }
  assert.equal(n, SIZE);
  assert.equal(got.digest("hex"), sentHex, "downloaded bytes are the uploaded ones");
  const peak = rssMiB();
  assert.ok(peak < RSS_LIMIT_MIB, `peak RSS after the download: ${peak.toFixed(0)} MiB`);
  console.log(`# 1 GiB up and down; peak RSS ${peak.toFixed(0)} MiB`);
  await v.remove("big.bin");
});
