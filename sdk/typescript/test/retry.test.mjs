// Retries, through a TCP proxy in front of cofferd whose connections this test cuts or
// answers itself: an upload retried after a dropped connection, a create retried with
// the same Idempotency-Key, an upload retry the server replays, 429/503 backoff, what is
// never retried, and the idle timeout.

import test from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ConnectionError, RateLimitedError, TimeoutError, UnavailableError } from "../dist/index.js";
import { client, headerOf, proxy, text, uniq } from "./helpers.mjs";

const c = client();

function errorAnswer(status, reason, type, extra = "") {
  const body = JSON.stringify({ error: { type, message: `${type} (from the test's proxy)` } });
  return `HTTP/1.1 ${status} ${reason}\r\n${extra}Content-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

test("an upload cut after 256 KiB is sent again whole on a new connection", async () => {
  const vol = await c.volumes.create({ name: uniq() });
  const p = await proxy((i) => (i === 0 ? { cutAfterRequestBytes: 256 * 1024 } : "pass"));
  try {
    const data = new Uint8Array(1 << 20).map((_, i) => (i * 7) & 0xff);
    const w = await client({ url: p.url }).volume(vol.id).write("big.bin", data);
    assert.equal(p.conns.length, 2, "one retry");
    assert.ok(p.conns[0].cut, "the first attempt was cut");
    assert.equal(w.size, data.length);
    assert.equal(w.sha256, createHash("sha256").update(data).digest("hex"));
    assert.equal((await c.volume(vol.id).get()).seq, 1, "written once");
  } finally {
    await p.close();
  }
});

test("a streamed upload from a function is reopened for the retry", async () => {
  const vol = await c.volumes.create({ name: uniq() });
  const p = await proxy((i) => (i === 0 ? { cutAfterRequestBytes: 100 * 1024 } : "pass"));
  let opened = 0;
  const chunk = new Uint8Array(64 * 1024).fill(120);
  async function* gen() { opened++; for (let i = 0; i < 8; i++) yield chunk; }
  try {
    const w = await client({ url: p.url }).volume(vol.id).write("s.bin", () => gen());
    assert.equal(opened, 2, "the factory was called for each attempt");
    assert.equal(w.size, 8 * chunk.length);
    assert.equal(p.conns.length, 2);
  } finally {
    await p.close();
  }
});

test("a create whose answer was lost is retried with the same Idempotency-Key: one volume", async () => {
  const name = uniq("idem");
  const p = await proxy((i) => (i === 0 ? "cutResponse" : "pass"));
  try {
    const v = await client({ url: p.url }).volumes.create({ name });
    assert.equal(p.conns.length, 2);
    const k0 = headerOf(p.conns[0].head, "Idempotency-Key"), k1 = headerOf(p.conns[1].head, "Idempotency-Key");
    assert.ok(k0, "a key was sent");
    assert.equal(k1, k0, "the retry reused it");
    const listed = await c.volumes.list({ prefix: name });
    assert.deepEqual(listed.volumes.map((x) => x.id), [v.id], "exactly one volume made");
  } finally {
    await p.close();
  }
});

test("an agent upload whose answer was lost: the retry is replayed, nothing written twice", async () => {
  const id = uniq("ag");
  const ag = await c.agents.upsert(id);
  const p = await proxy((i) => (i === 0 ? "cutResponse" : "pass"));
  try {
    const up = await client({ url: p.url }).agent(id).upload("req-1", "doc.txt", "the bytes");
    assert.equal(p.conns.length, 2);
    assert.equal(up.replayed, true);
    assert.equal((await c.volume(ag.workspaceVolumeId).get()).seq, 1);
    assert.equal(text((await c.agent(id).files.download(up.path)).data), "the bytes");
  } finally {
    await p.close();
  }
});

test("503 and 429 are retried with backoff (Retry-After honoured); POSTs without a key only on 429", async () => {
  const vol = await c.volumes.create({ name: uniq() });
  const busy = errorAnswer(503, "Service Unavailable", "unavailable", "Retry-After: 0\r\n");
  let p = await proxy((i) => (i < 2 ? { answer: busy } : "pass"));
  try {
    const got = await client({ url: p.url }).volumes.get(vol.id);
    assert.equal(got.id, vol.id);
    assert.equal(p.conns.length, 3, "two 503s, then the answer");
  } finally {
    await p.close();
  }
  const id = uniq("ag");
  await c.agents.upsert(id);
  const slow = errorAnswer(429, "Too Many Requests", "rate_limited");
  p = await proxy((i) => (i === 0 ? { answer: slow } : "pass"));
  try {
    const r = await client({ url: p.url }).agent(id).tools.write({ path: "/workspace/t.md", content: "t" });
    assert.equal(r.ok, true);
    assert.equal(p.conns.length, 2, "429: retried even for a POST");
  } finally {
    await p.close();
  }
  p = await proxy(() => ({ answer: busy }));
  try {
    await assert.rejects(client({ url: p.url }).agent(id).tools.write({ path: "/workspace/t.md", content: "t" }), UnavailableError);
    assert.equal(p.conns.length, 1, "503 on a POST without an Idempotency-Key: not retried");
    await assert.rejects(client({ url: p.url, maxRetries: 2 }).volumes.get(vol.id), UnavailableError);
    assert.equal(p.conns.length, 4, "1 + 2 retries, then the error");
  } finally {
    await p.close();
  }
  p = await proxy(() => ({ answer: slow }));
  try {
    const e = await client({ url: p.url, maxRetries: 1 }).volumes.get(vol.id).catch((x) => x);
    assert.ok(e instanceof RateLimitedError, String(e));
    assert.equal(e.status, 429);
    assert.equal(e.retryAfter, undefined, "no Retry-After, no retryAfter");
  } finally {
    await p.close();
  }
});

test("a 429 given up on carries retryAfter: the answer's Retry-After in seconds", async () => {
  const vol = await c.volumes.create({ name: uniq() });
  const later = errorAnswer(429, "Too Many Requests", "rate_limited", "Retry-After: 7\r\n");
  const p = await proxy(() => ({ answer: later }));
  try {
    const e = await client({ url: p.url, maxRetries: 0 }).volumes.get(vol.id).catch((x) => x);
    assert.ok(e instanceof RateLimitedError, String(e));
    assert.equal(e.retryAfter, 7);
    assert.equal(p.conns.length, 1, "maxRetries 0: asked once");
  } finally {
    await p.close();
  }
});

test("never retried: a one-shot stream, a tool call; a silent server times out", async () => {
  const vol = await c.volumes.create({ name: uniq() });
  let p = await proxy(() => ({ cutAfterRequestBytes: 1000 }));
  try {
    const once = new ReadableStream({
      start(ctl) { ctl.enqueue(new Uint8Array(64 * 1024)); ctl.enqueue(new Uint8Array(64 * 1024)); ctl.close(); },
    });
    await assert.rejects(client({ url: p.url }).volume(vol.id).write("x.bin", once), ConnectionError);
    assert.equal(p.conns.length, 1, "a stream cannot be sent again");
  } finally {
    await p.close();
  }
  const id = uniq("ag");
  await c.agents.upsert(id);
  p = await proxy(() => "cutResponse");
  try {
    await assert.rejects(client({ url: p.url }).agent(id).tools.write({ path: "/workspace/w.md", content: "w" }), ConnectionError);
    assert.equal(p.conns.length, 1, "a POST without an Idempotency-Key is not sent twice");
  } finally {
    await p.close();
  }
  p = await proxy(() => "silent");
  try {
    const e = await client({ url: p.url, timeoutMs: 300, maxRetries: 0 }).volumes.get(vol.id).catch((x) => x);
    assert.ok(e instanceof TimeoutError, String(e));
    assert.equal(e.timeoutMs, 300);
    const e2 = await client({ url: p.url, maxRetries: 0 }).volumes.get(vol.id, { timeoutMs: 200 }).catch((x) => x);
    assert.ok(e2 instanceof TimeoutError && e2.timeoutMs === 200, String(e2));
  } finally {
    await p.close();
  }
});

test("a download cut mid-way resumes from the bytes read; a file changed meanwhile is not joined", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  const data = new Uint8Array(4 << 20).map((_, i) => (i * 13 + (i >> 12)) & 0xff);
  await v.write("f.bin", data);
  let p = await proxy((i) => (i === 0 ? { cutResponseAfterBytes: 1 << 20 } : "pass"));
  try {
    const d = await client({ url: p.url }).volume(v.id).download("f.bin");
    const got = new Uint8Array(await new Response(d.body).arrayBuffer());
    assert.equal(got.length, data.length);
    assert.ok(Buffer.from(got).equals(Buffer.from(data)), "the bytes, whole and in order");
    assert.equal(p.conns.length, 2, "one resume");
    assert.match(headerOf(p.conns[1].head, "Range"), /^bytes=\d+-$/);
    assert.equal(headerOf(p.conns[1].head, "If-Range"), '"1"');
  } finally {
    await p.close();
  }
  let changed;
  const overwritten = new Promise((r) => { changed = r; });
  p = await proxy((i) => (i === 0
    ? { cutResponseAfterBytes: 1 << 20, onCut: () => v.write("f.bin", "another version").then(changed, changed) }
    : { after: overwritten }));
  try {
    const d = await client({ url: p.url }).volume(v.id).download("f.bin");
    const e = await new Response(d.body).arrayBuffer().catch((x) => x);
    assert.ok(e instanceof ConnectionError, String(e));
    assert.match(e.message, /no longer at "1"/);
  } finally {
    await p.close();
  }
});
