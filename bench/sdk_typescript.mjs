// The TypeScript SDK's figures against anchors in the same run, started by
// bench/sdk_typescript.py with COFFER_URL and COFFER_KEY. Two uses:
//
//   node sdk_typescript.mjs            the small calls: a 1 KiB GET and PUT, the SDK vs
//     bare fetch with the same requests, taken in turns (the SDK's own cost: errors,
//     retries' bookkeeping, the idle watchdog), and 1,000 small writes one after another,
//     the SDK vs bare fetch, each the whole 1,000, in turns. Prints one JSON object:
//     the rows and the volume it made.
//   node sdk_typescript.mjs MODE VOLUME NAME [FILE]   exactly one transfer, so that the
//     caller can take this process's peak RSS for it alone: up (the SDK, fromFile),
//     down (the SDK's download iterated), fetch-down (bare fetch iterated), rest (one
//     1 KiB read: the footprint without a large transfer). Prints "seconds bytes".

import { Coffer, fromFile } from "../sdk/typescript/dist/index.js";

const { COFFER_URL: url, COFFER_KEY: key } = process.env;
const auth = { Authorization: `Bearer ${key}` };
const c = new Coffer({ url, key });
const now = () => process.hrtime.bigint();
const since = (t0) => Number(now() - t0) / 1e9;

async function one(mode, vid, name, file) {
  const vol = c.volume(vid);
  const t0 = now();
  let moved = 0;
  if (mode === "up") {
    moved = (await vol.write(name, fromFile(file))).size;
  } else if (mode === "down") {
    const d = await vol.download(name);
    for await (const chunk of d.body) moved += chunk.length;
  } else if (mode === "fetch-down") {
    const r = await fetch(`${url}/v1/volumes/${vid}/files/${name}`, { headers: auth });
    if (r.status >= 300) throw new Error(`GET ${name}: ${r.status}`);
    for await (const chunk of r.body) moved += chunk.length;
  } else if (mode === "rest") {
    moved = (await vol.read(name)).data.length;
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  console.log(`${since(t0).toFixed(6)} ${moved}`);
}

const SMALL = 300, LARGE = 3, WRITES = 1000;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** p50s in µs of two calls, taken in turns so the machine's load falls on both. */
async function p50(fa, fb) {
  const ta = [], tb = [];
  for (let i = 0; i < SMALL; i++) {
    for (const [fn, ts] of [[fa, ta], [fb, tb]]) {
      const t0 = now();
      await fn(i);
      ts.push(Number(now() - t0) / 1000);
    }
  }
  return [median(ta), median(tb)];
}

/** Medians in s of two runs, LARGE of each, in turns as p50 does. */
async function seconds(fa, fb) {
  const ta = [], tb = [];
  for (let r = 0; r < LARGE; r++) {
    for (const [fn, ts] of [[fa, ta], [fb, tb]]) {
      const t0 = now();
      await fn(r);
      ts.push(since(t0));
    }
  }
  return [median(ta), median(tb)];
}

async function small() {
  const vol = c.volume((await c.volumes.create({ name: "bench" })).id);
  const base = `${url}/v1/volumes/${vol.id}/files/`;
  const kib = new Uint8Array(1024).map((_, i) => (i * 7) & 0xff);
  await vol.write("small.bin", kib);
  async function raw(method, name, body) {
    const r = await fetch(base + name, { method, headers: auth, body });
    await r.arrayBuffer();
    if (r.status >= 300) throw new Error(`${method} ${name}: ${r.status}`);
  }
  const rows = [];
  rows.push(["GET 1 KiB (p50, µs)", ...(await p50(() => vol.read("small.bin"), () => raw("GET", "small.bin"))), "fetch"]);
  rows.push(["PUT 1 KiB (p50, µs)", ...(await p50((i) => vol.write(`w${i}.bin`, kib), (i) => raw("PUT", `r${i}.bin`, kib))), "fetch"]);
  rows.push(["1,000 small writes (s)", ...(await seconds(async (r) => {
    for (let i = 0; i < WRITES; i++) await vol.write(`s${r}-${i}.bin`, kib);
  }, async (r) => {
    for (let i = 0; i < WRITES; i++) await raw("PUT", `x${r}-${i}.bin`, kib);
  })), "fetch"]);
  console.log(JSON.stringify({ rows, volume: vol.id }));
}

if (process.argv.length > 2) await one(...process.argv.slice(2));
else await small();
