// Merge, history, who changed what, revert and webhooks through the SDK (API.md "Merge,
// history, who changed what, revert", "Webhooks"): the calls against a real cofferd, the
// conflict error, the feed's `by` filters, and verifyWebhook against the Standard
// Webhooks test vector and against a real delivery (the server runs with
// --webhook-allow-private: test_sdk_typescript.py's SERVER_OPTS).

import test from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { createHmac } from "node:crypto";
import { createRequire } from "node:module";
import path from "node:path";
import {
  ConflictError, MergeConflictError, PreconditionFailedError, verifyWebhook, WebhookVerificationError,
} from "../dist/index.js";
import { client, text, uniq, until } from "./helpers.mjs";

const c = client();

/** A volume with `files`, and a fork of it: [ours, theirs]. */
async function pair(files) {
  const ours = c.volume((await c.volumes.create({ name: uniq("ours") })).id);
  for (const [p, d] of Object.entries(files)) await ours.write(p, d);
  const theirs = c.volume((await ours.fork({ name: uniq("theirs") })).id);
  return [ours, theirs];
}

const lines = (n, tag) => Array.from({ length: n }, (_, i) => `${tag} ${i}\n`).join("");
const edit = (t, i, s) => t.split("\n").map((l, j) => (j === i ? s : l)).join("\n");

test("merge: a clean merge, a dry run, a conflict as MergeConflictError, settled by resolutions", async () => {
  const base = lines(10, "line");
  const [ours, theirs] = await pair({ "t.txt": base, "c.txt": base });
  await theirs.write("new.txt", "from theirs");
  await theirs.write("t.txt", edit(base, 8, "theirs edit"));
  await ours.write("t.txt", edit(base, 1, "ours edit"));
  const seq = (await ours.get()).seq;
  const dry = await ours.merge(theirs.id, { dryRun: true });
  assert.equal(dry.seq, seq, "a dry run changes nothing");
  assert.deepEqual(dry.conflicts, []);
  const r = await ours.merge(theirs.id, { ifSeq: seq });
  assert.equal(r.seq, seq + 1, "one change");
  assert.deepEqual(Object.fromEntries(r.merged.map((m) => [m.path, m.from])), { "new.txt": "theirs", "t.txt": "merged" });
  assert.equal(text((await ours.read("t.txt")).data), edit(edit(base, 1, "ours edit"), 8, "theirs edit"));
  await assert.rejects(ours.merge(theirs.id, { ifSeq: seq }), PreconditionFailedError);

  // the same line changed on both: 409 with the conflicts, nothing changed
  await ours.write("c.txt", edit(base, 3, "ours three"));
  await theirs.write("c.txt", edit(base, 3, "theirs three"));
  const before = (await ours.get()).seq;
  const e = await ours.merge(theirs.id).catch((x) => x);
  assert.ok(e instanceof MergeConflictError, String(e));
  assert.ok(e instanceof ConflictError, "a ConflictError too");
  assert.equal(e.status, 409);
  assert.deepEqual(e.conflicts.map((x) => [x.path, x.kind]), [["c.txt", "content"]]);
  assert.match(e.conflicts[0].merged, /<<<<<<< ours\n.*ours three/s);
  assert.equal(e.conflicts[0].ours.size, edit(base, 3, "ours three").length);
  assert.equal((await ours.get()).seq, before, "nothing changed");
  const settled = await ours.merge(theirs.id, { resolutions: { "c.txt": { text: "settled\n" } } });
  assert.deepEqual(settled.merged, [{ path: "c.txt", from: "merged" }]);
  assert.equal(text((await ours.read("c.txt")).data), "settled\n");
});

test("merge: strategy settles what resolutions leave; a bad strategy or resolution throws before any request", async () => {
  const [ours, theirs] = await pair({ "a.bin": "base" });
  await ours.write("a.bin", "ours");
  await theirs.write("a.bin", "theirs");
  const r = await ours.merge(theirs.id, { strategy: "theirs" });
  assert.deepEqual(r.merged, [{ path: "a.bin", from: "theirs" }]);
  assert.equal(text((await ours.read("a.bin")).data), "theirs");
  await assert.rejects(ours.merge(theirs.id, { strategy: "mine" }), /volume.merge: strategy must be "ours" or "theirs"/);
  await assert.rejects(ours.merge(theirs.id, { resolutions: { "a.bin": "keep" } }), /resolutions\["a.bin"\] must be/);
  await assert.rejects(ours.merge(theirs.id, { dryrun: true }), /unknown option 'dryrun'/);
});

test("history: pages with a cursor, allHistory over every version, by on each", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  for (let i = 1; i <= 5; i++) await v.write("h.txt", `v${i}`);
  await v.write("other.txt", "x");
  await v.remove("h.txt");
  const p1 = await v.history("h.txt", { limit: 2 });
  assert.deepEqual(p1.versions.map((x) => [x.op, x.version]), [["remove", 5], ["write", 5]]);
  assert.ok(p1.cursor, "a cursor while more remain");
  const p2 = await v.history("h.txt", { limit: 2, cursor: p1.cursor });
  assert.deepEqual(p2.versions.map((x) => x.version), [4, 3]);
  const all = [];
  for await (const x of v.allHistory("h.txt", { limit: 2 })) all.push(x);
  assert.deepEqual(all.map((x) => x.version), [5, 5, 4, 3, 2, 1]);
  assert.deepEqual(all.map((x) => x.seq), [7, 5, 4, 3, 2, 1]);
  assert.equal(all[0].by.via, "http");
  assert.match(all[0].by.keyId, /^k/);
  assert.ok(all.every((x) => typeof x.at === "string" && x.sha256.length === 64));
  assert.deepEqual((await v.history("never.txt")).versions, []);
});

test("changes: by on each entry and the by filters (keyId, agent, runId, callId)", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  await v.write("a.txt", "1");
  await v.write("b.txt", "2");
  const all = await v.changes(0);
  const keyId = all.changes[0].by.keyId;
  assert.deepEqual(all.changes[0].by, { keyId, via: "http" });
  assert.equal(typeof all.changes[0].at, "string");
  const mine = await v.changes(0, { keyId });
  assert.deepEqual(mine.changes.map((x) => x.path), ["a.txt", "b.txt"]);
  for (const q of [{ keyId: "k_nobody" }, { agent: "nobody" }, { runId: "run-x" }, { callId: "call-x" }]) {
    const none = await v.changes(0, q);
    assert.deepEqual(none.changes, [], JSON.stringify(q));
    assert.equal(none.seq, 2, "the seq moves past the changes left out");
  }
  // follow() takes the filters too
  const it = v.follow(0, { keyId, wait: 1 });
  assert.equal((await it.next()).value.path, "a.txt");
  await it.return();
  await assert.rejects(v.changes(0, { runID: "r" }), /unknown field 'runID'/);
  await assert.rejects(v.changes(0, { agent: 7 }), /volume.changes: agent must be a non-empty string/);
});

test("a run's changes: by names the agent, the run and the tool; filtered by runId and agent; reverted by runId", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  await v.write("keep.txt", "mine");
  const id = uniq("ag");
  await c.agents.upsert(id, { mounts: [{ volumeId: v.id, path: "/notes", mode: "rw" }] });
  const run = uniq("run");
  const wr = await c.agent(id).tools.write({ path: "/notes/by-run.txt", content: "the run wrote this\n" }, { runId: run });
  assert.equal(wr.ok, true, wr.output);
  const page = await v.changes(0, { runId: run });
  assert.deepEqual(page.changes.map((x) => x.path), ["by-run.txt"]);
  const by = page.changes[0].by;
  assert.deepEqual([by.via, by.agent, by.runId, by.tool], ["tool", id, run, "write"]);
  assert.deepEqual((await v.changes(0, { agent: id, runId: run })).changes.map((x) => x.path), ["by-run.txt"]);
  assert.deepEqual((await v.changes(0, { agent: id, runId: "other" })).changes, [], "every filter must hold");
  const r = await v.revert({ runId: run });
  assert.deepEqual(r.reverted, [{ path: "by-run.txt", from: "before" }]);
  assert.deepEqual((await v.list()).files.map((f) => f.path), ["keep.txt"], "the run's file removed, the rest kept");
  await c.agents.delete(id);
});

test("revert: a seq as one change; a conflict as MergeConflictError; exactly one of runId, callId, seq", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  await v.write("a.txt", "one\n");
  await v.write("a.txt", "two\n");
  const s = (await v.get()).seq;
  const dry = await v.revert({ seq: s, dryRun: true });
  assert.equal(dry.seq, s);
  assert.deepEqual(dry.reverted, [{ path: "a.txt", from: "before" }]);
  const r = await v.revert({ seq: s });
  assert.equal(r.seq, s + 1);
  assert.equal(text((await v.read("a.txt")).data), "one\n");
  const last = (await v.changes(s)).changes.at(-1);
  assert.equal(last.by.via, "revert");
  // changed again since: the revert conflicts, then a resolution settles it
  await v.write("b.txt", "b1");
  const sb = (await v.get()).seq;
  await v.write("b.txt", "b2");
  await v.write("b.txt", "b3");
  const e = await v.revert({ seq: sb + 1 }).catch((x) => x);
  assert.ok(e instanceof MergeConflictError, String(e));
  assert.deepEqual(e.conflicts.map((x) => x.path), ["b.txt"]);
  const ok = await v.revert({ seq: sb + 1, resolutions: { "b.txt": "theirs" } });
  assert.deepEqual(ok.reverted.map((x) => x.path), ["b.txt"]);
  assert.equal(text((await v.read("b.txt")).data), "b1");
  // the target is checked here, before any request
  await assert.rejects(v.revert({ runId: "r1", seq: 3 }), /volume.revert: give exactly one of runId, callId, seq \(got runId, seq\)/);
  await assert.rejects(v.revert({ paths: ["a.txt"] }), /give exactly one of runId, callId, seq/);
  await assert.rejects(v.revert(), /give exactly one of runId, callId, seq/);
  await assert.rejects(v.revert({ seq: "3" }), /volume.revert: seq must be a whole number/);
});

// ---------------------------------------------------------------- webhooks

// The Standard Webhooks specification's test vector.
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: "1614265330",
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const vheaders = (sig = VECTOR.signature, ts = VECTOR.timestamp) =>
  ({ "webhook-id": VECTOR.id, "webhook-timestamp": ts, "webhook-signature": sig });
const AT = Number(VECTOR.timestamp) * 1000;

test("verifyWebhook: the specification's test vector, and what it refuses", () => {
  assert.deepEqual(verifyWebhook(VECTOR.secret, vheaders(), VECTOR.body, { now: AT }), { test: 2432232314 });
  // bytes, Headers and Node's header objects alike; one of several signatures
  assert.deepEqual(verifyWebhook(VECTOR.secret, new Headers(vheaders()), new TextEncoder().encode(VECTOR.body), { now: new Date(AT) }), { test: 2432232314 });
  const several = `v1,${Buffer.alloc(32).toString("base64")} v2,abc ${VECTOR.signature}`;
  assert.deepEqual(verifyWebhook(VECTOR.secret, { "Webhook-Signature": several, "webhook-id": VECTOR.id, "webhook-timestamp": VECTOR.timestamp }, VECTOR.body, { now: AT }), { test: 2432232314 });
  const refused = (fn, re) => assert.throws(fn, (e) => e instanceof WebhookVerificationError && re.test(e.message));
  refused(() => verifyWebhook(VECTOR.secret, vheaders(), '{"test": 2432232315}', { now: AT }), /no v1 signature/);
  refused(() => verifyWebhook("whsec_" + Buffer.from("another key").toString("base64"), vheaders(), VECTOR.body, { now: AT }), /no v1 signature/);
  refused(() => verifyWebhook(VECTOR.secret, vheaders("v2," + VECTOR.signature.slice(3)), VECTOR.body, { now: AT }), /no v1 signature/);
  refused(() => verifyWebhook(VECTOR.secret, { "webhook-id": VECTOR.id }, VECTOR.body, { now: AT }), /missing header/);
  // the tolerance, either way, at its edge
  verifyWebhook(VECTOR.secret, vheaders(), VECTOR.body, { now: AT + 300_000 });
  verifyWebhook(VECTOR.secret, vheaders(), VECTOR.body, { now: AT - 300_000 });
  refused(() => verifyWebhook(VECTOR.secret, vheaders(), VECTOR.body, { now: AT + 301_000 }), /more than 300 s/);
  refused(() => verifyWebhook(VECTOR.secret, vheaders(), VECTOR.body, { now: AT - 301_000 }), /more than 300 s/);
  verifyWebhook(VECTOR.secret, vheaders(), VECTOR.body, { now: AT + 3_600_000, toleranceSeconds: 3600 });
  refused(() => verifyWebhook(VECTOR.secret, vheaders(), VECTOR.body), /more than 300 s/);
  assert.throws(() => verifyWebhook(VECTOR.secret, vheaders(), VECTOR.body, { tolerance: 5 }), /unknown field 'tolerance'/);
});

test("verifyWebhook agrees with the Standard Webhooks reference library (npm standardwebhooks)", () => {
  const dir = process.env.COFFER_STANDARDWEBHOOKS;
  assert.ok(dir, "COFFER_STANDARDWEBHOOKS names tests/webhooks (test_sdk_typescript.py sets it)");
  const { Webhook } = createRequire(path.join(dir, "package.json"))("standardwebhooks");
  const ref = new Webhook(VECTOR.secret);
  assert.equal(ref.sign(VECTOR.id, new Date(AT), VECTOR.body), VECTOR.signature, "the library signs the vector so");
  const now = new Date();
  for (const body of ['{"type":"turn.ended","data":{"é":"ü"}}', "{}", JSON.stringify({ big: "x".repeat(100000) })]) {
    const headers = { "webhook-id": "msg_x1", "webhook-timestamp": String(Math.floor(now / 1000)), "webhook-signature": ref.sign("msg_x1", now, body) };
    assert.deepEqual(verifyWebhook(VECTOR.secret, headers, body), JSON.parse(body));
    assert.deepEqual(ref.verify(body, headers), JSON.parse(body));
    assert.throws(() => verifyWebhook(VECTOR.secret, headers, body + " "), WebhookVerificationError);
  }
});

test("webhooks: create, list, get, update, a real delivery verified, deliveries, redeliver, delete", async () => {
  const got = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const org = await c.createKey({ org: uniq("org") });
  const oc = client({ key: org.key });
  try {
    const v = oc.volume((await oc.volumes.create({ name: uniq() })).id);
    const url = `http://127.0.0.1:${server.address().port}/hook`;
    const h = await oc.webhooks.create({ url, events: ["snapshot.created"], volumes: [v.id], description: "sdk" });
    assert.match(h.id, /^wh_/);
    assert.match(h.secret, /^whsec_/);
    assert.deepEqual([h.events, h.volumes, h.description, h.disabled], [["snapshot.created"], [v.id], "sdk", false]);
    assert.deepEqual((await oc.webhooks.list()).map((x) => [x.id, x.secret]), [[h.id, undefined]]);
    assert.equal((await oc.webhooks.get(h.id)).url, url);

    const snap = await v.snapshot({ labels: { k: "v" } });
    await until(() => got.length >= 1, "the delivery");
    const ev = verifyWebhook(h.secret, got[0].headers, got[0].body);
    assert.equal(ev.type, "snapshot.created");
    assert.equal(ev.id, got[0].headers["webhook-id"]);
    assert.deepEqual([ev.data.volumeId, ev.data.snapshot.id], [v.id, snap.id]);
    assert.throws(() => verifyWebhook(h.secret, got[0].headers, Buffer.concat([got[0].body, Buffer.from(" ")])), WebhookVerificationError);
    // the signature is the specification's: HMAC-SHA256 of id.timestamp.body under the decoded secret
    const want = createHmac("sha256", Buffer.from(h.secret.slice(6), "base64"))
      .update(`${got[0].headers["webhook-id"]}.${got[0].headers["webhook-timestamp"]}.${got[0].body}`).digest("base64");
    assert.ok(got[0].headers["webhook-signature"].split(" ").includes(`v1,${want}`));

    const page = await until(async () => {
      const p = await oc.webhooks.deliveries(h.id);
      return p.deliveries[0]?.status === "delivered" && p;
    }, "the delivery marked delivered");
    assert.equal(page.deliveries[0].id, ev.id);
    assert.equal(page.deliveries[0].event, "snapshot.created");
    const again = await oc.webhooks.redeliver(h.id, ev.id);
    assert.deepEqual(again, { id: ev.id, status: "pending" });
    await until(() => got.length >= 2, "the redelivery");
    assert.equal(got[1].headers["webhook-id"], ev.id, "the same webhook-id");
    assert.equal(verifyWebhook(h.secret, got[1].headers, got[1].body).id, ev.id);

    const off = await oc.webhooks.update(h.id, { disabled: true, events: ["snapshot.created", "turn.ended"] });
    assert.deepEqual([off.disabled, off.events], [true, ["snapshot.created", "turn.ended"]]);
    await oc.webhooks.delete(h.id);
    assert.deepEqual(await oc.webhooks.list(), []);
  } finally {
    server.close();
  }
});
