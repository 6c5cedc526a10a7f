// Relay sessions through the SDK, the agent's side, with a real `coffer connect` (the
// binary named by COFFER_BIN) serving a temporary folder: create, get, list, ops, events,
// the log, refusals as typed errors, close and abort.

import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConflictError, ForbiddenError, GoneError, LockedError, NotFoundError } from "../dist/index.js";
import { client, headerOf, proxy, until, uniq, URL_, within } from "./helpers.mjs";

const c = client();
const BIN = process.env.COFFER_BIN;

/** A `coffer connect` serving `dir` for the session; kill() ends it. */
function connect(s, dir, args = []) {
  assert.ok(BIN, "COFFER_BIN names build/coffer");
  const p = spawn(BIN, ["connect", "--server", URL_, "--uid", s.uid, "--dir", dir, ...args], {
    env: { ...process.env, COFFER_CONNECT_TOKEN: s.info.connectToken }, stdio: ["ignore", "ignore", "pipe"],
    detached: true, // a session of its own: no controlling terminal, so supervised writes are refused
  });
  let log = "";
  p.stderr.on("data", (d) => { log += d; });
  return { log: () => log, kill: () => new Promise((r) => { if (p.exitCode !== null) r(); else { p.on("exit", r); p.kill(); } }) };
}

test("a session: create, connect, ops, events, log, close", async () => {
  const agent = uniq("ag");
  await c.agents.upsert(agent);
  await assert.rejects(c.relay.create({ agent }), ConflictError);
  await assert.rejects(c.relay.create({ agent: uniq("none") }), NotFoundError);
  await c.agents.upsert(agent, { relay: { capability: true, defaultMode: "standard" } });
  const s = await c.relay.create({ agent });
  assert.match(s.info.connectToken, /^rct_/);
  assert.equal(s.info.status, "waiting");
  const dir = mkdtempSync(join(tmpdir(), "sdk-relay-"));
  writeFileSync(join(dir, "notes.md"), "hello relay\nsecond line\n");
  writeFileSync(join(dir, ".env"), "SECRET=1\n");
  const cl = connect(s, dir);
  const ac = new AbortController();
  try {
    await until(async () => (await s.get()).status === "active", "the session to become active; " + cl.log());
    const events = [];
    const reader = (async () => {
      for await (const e of s.events({ signal: ac.signal })) {
        events.push(e);
        if (e.event === "write_result") return;
      }
    })().catch((e) => { if (!ac.signal.aborted) throw e; });
    const rd = await s.readFile("notes.md");
    assert.deepEqual([rd.path, rd.content, rd.encoding, rd.size], ["notes.md", "hello relay\nsecond line\n", "utf-8", 24]);
    const wr = await s.writeFile("out/new.txt", "written by the agent\n");
    assert.equal(wr.size, 21);
    assert.equal(readFileSync(join(dir, "out/new.txt"), "utf8"), "written by the agent\n");
    const ls = await s.listDirectory();
    assert.deepEqual(ls.entries.map((e) => e.name).sort(), ["notes.md", "out"], ".env hidden");
    const found = await s.searchFiles("second");
    assert.deepEqual(found.results.map((r) => [r.file, r.line]), [["notes.md", 2]]);
    await assert.rejects(s.readFile(".env"), ForbiddenError);
    await within(reader, 10000, () => "a write_result event; got " + JSON.stringify(events));
    assert.ok(events.some((e) => e.event === "status_changed"), JSON.stringify(events));
    const info = await s.get();
    assert.equal(info.counts.reads, 3, "the read, the listing and the search (the refused read is not forwarded)");
    assert.equal(info.counts.writes, 1);
    assert.ok((await c.relay.list({ agent })).some((x) => x.uid === s.uid));
    const log = await s.log();
    assert.equal(log.uid, s.uid);
    const closed = await s.close();
    assert.equal(closed.endReason, "closed");
    await assert.rejects(s.readFile("notes.md"), GoneError);
  } finally {
    ac.abort();
    await cl.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("abort ends a session at once; ended sessions are listed with all", async () => {
  const agent = uniq("ag");
  await c.agents.upsert(agent, { relay: { capability: true } });
  const s = await c.relay.create({ agent, limits: { writes: 5 } });
  const ab = await s.abort();
  assert.equal(ab.endReason, "aborted");
  assert.equal((await s.get()).status, "ended");
  await assert.rejects(s.listDirectory(), GoneError);
  assert.ok(!(await c.relay.list({ agent })).some((x) => x.uid === s.uid));
  assert.ok((await c.relay.list({ agent, all: true })).some((x) => x.uid === s.uid));
  await assert.rejects(c.relay.session("nope").get(), NotFoundError);
});

test("a supervised write with wait: false is LockedError with opId; opStatus tells the user's no", async () => {
  const agent = uniq("ag");
  await c.agents.upsert(agent, { relay: { capability: true, defaultMode: "supervised" } });
  const s = await c.relay.create({ agent });
  const dir = mkdtempSync(join(tmpdir(), "sdk-relay-"));
  const cl = connect(s, dir, ["--supervised"]);
  try {
    await until(async () => (await s.get()).status === "active", "the session to become active; " + cl.log());
    assert.equal((await s.get()).mode, "supervised");
    const e = await s.writeFile("w.txt", "needs a yes", { wait: false }).catch((x) => x);
    assert.ok(e instanceof LockedError, String(e));
    assert.equal(e.status, 423);
    assert.equal(typeof e.opId, "string");
    const st = await s.opStatus(e.opId);
    assert.deepEqual([st.opId, st.op, st.path], [e.opId, "write_file", "w.txt"]);
    assert.ok(["pending", "done"].includes(st.status), st.status);
    // With no terminal to ask on, `coffer connect --supervised` refuses every write.
    const end = await until(async () => { const x = await s.opStatus(e.opId); return x.status === "done" && x; },
      "the op to be decided");
    assert.equal(end.ok, false);
    assert.equal(end.error.type, "forbidden");
    assert.match(end.error.message, /refused/);
    await s.abort();
  } finally {
    await cl.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("an events stream that drops is resumed after the last event seen: none lost, none twice", async () => {
  const agent = uniq("ag");
  await c.agents.upsert(agent, { relay: { capability: true } });
  const s = await c.relay.create({ agent });
  const dir = mkdtempSync(join(tmpdir(), "sdk-relay-"));
  const cl = connect(s, dir);
  const p = await proxy((i) => (i === 0 ? { cutResponseAfterText: "event: exclusions" } : "pass"));
  const ac = new AbortController();
  try {
    await until(async () => (await s.get()).status === "active", "the session to become active; " + cl.log());
    const events = [];
    const viaProxy = client({ url: p.url }).relay.session(s.uid);
    const reader = (async () => {
      for await (const e of viaProxy.events({ signal: ac.signal })) {
        events.push(e);
        if (e.event === "write_result") return;
      }
    })();
    await until(() => p.conns.length === 2, "the stream reopened");
    await s.writeFile("after-the-drop.txt", "x");
    await within(reader, 10000, () => "write_result after the drop; got " + JSON.stringify(events));
    const ids = events.map((e) => Number(e.id));
    assert.deepEqual([...ids].sort((a, b) => a - b), ids, "in order");
    assert.equal(new Set(ids).size, ids.length, "none twice");
    const exclusions = events.find((e) => e.event === "exclusions");
    assert.ok(p.conns[0].cut && exclusions, JSON.stringify(events));
    assert.equal(headerOf(p.conns[1].head, "Last-Event-ID"), exclusions.id, "resumed after the last event seen");
    const types = events.map((e) => e.event);
    assert.ok(types.indexOf("status_changed") < types.indexOf("exclusions"), types.join());
    assert.equal(types.filter((t) => t === "exclusions").length, 1, types.join());
  } finally {
    ac.abort();
    await p.close();
    await cl.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
