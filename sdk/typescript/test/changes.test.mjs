// The changes feed through the SDK: one page, a prefix, and the follow iterator over
// long-polls seeing a stream of changes made while it waits.

import test from "node:test";
import assert from "node:assert/strict";
import { GoneError } from "../dist/index.js";
import { client, uniq } from "./helpers.mjs";

const c = client();

test("changes(since, {prefix}) and a long-poll that wakes on a write", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  await v.write("a/1.txt", "1");
  await v.write("b/2.txt", "2");
  await v.move("a/1.txt", "a/3.txt");
  const all = await v.changes(0);
  assert.equal(all.seq, 3);
  assert.deepEqual(all.changes.map((x) => [x.seq, x.op, x.path]),
    [[1, "write", "a/1.txt"], [2, "write", "b/2.txt"], [3, "remove", "a/1.txt"], [3, "write", "a/3.txt"]]);
  const onlyA = await v.changes(1, { prefix: "a/" });
  assert.deepEqual(onlyA.changes.map((x) => x.path), ["a/1.txt", "a/3.txt"]);
  const waiting = v.changes(3, { wait: 20 });
  await new Promise((r) => setTimeout(r, 300));
  await v.write("c.txt", "c");
  const woke = await waiting;
  assert.deepEqual(woke.changes.map((x) => [x.seq, x.path]), [[4, "c.txt"]]);
});

test("follow(): a stream of changes over several long-polls, in order, with a prefix", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  await v.write("old.txt", "before");
  const start = (await v.get()).seq;
  const seen = [];
  const follower = (async () => {
    for await (const ch of v.follow(start, { prefix: "live/", wait: 2 })) {
      seen.push(ch);
      if (seen.length === 6) break;
    }
  })();
  for (let i = 0; i < 6; i++) {
    await v.write(`live/${i}.txt`, String(i));
    await v.write(`other/${i}.txt`, "not followed");
    // Spread out so that the follower makes several long-polls, some of them timing out.
    if (i % 2) await new Promise((r) => setTimeout(r, i === 3 ? 2500 : 150));
  }
  await follower;
  assert.deepEqual(seen.map((x) => x.path), [0, 1, 2, 3, 4, 5].map((i) => `live/${i}.txt`));
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].seq > seen[i - 1].seq, "in seq order");
  assert.deepEqual(seen.map((x) => x.op), Array(6).fill("write"));
});

test("follow() from before a fork's start throws GoneError with oldest", async () => {
  const v = c.volume((await c.volumes.create({ name: uniq() })).id);
  await v.write("a", "1");
  await v.write("b", "2");
  const f = c.volume((await v.fork({ name: uniq("fork") })).id);
  const it = f.follow(0, { wait: 1 });
  const e = await it.next().catch((x) => x);
  assert.ok(e instanceof GoneError, String(e));
  assert.equal(e.oldest, 2);
  const next = await f.follow(e.oldest, { wait: 1 });
  await f.write("c", "3");
  const got = await next.next();
  assert.equal(got.value.path, "c");
  await next.return();
});
