// The TypeScript SDK's figures against anchors in the same run (started by
// bench/sdk_typescript.py, which passes COFFER_URL, COFFER_KEY and BIG_FILE): a 1 KiB GET
// and PUT, the SDK vs bare fetch with the same requests, taken in turns (the SDK's own
// cost: errors, retries' bookkeeping, the idle watchdog); 256 MiB up from a file and down
// to nothing, the SDK streaming vs curl (and the download vs bare fetch too: Node's own
// fetch is most of the gap). Prints one JSON object of rows.

import { execFileSync } from "node:child_process";
import { Coffer, fromFile } from "../sdk/typescript/dist/index.js";

const { COFFER_URL: url, COFFER_KEY: key, BIG_FILE: big } = process.env;
const SMALL = 300, LARGE = 3;
const c = new Coffer({ url, key });
const vol = c.volume((await c.volumes.create({ name: "bench" })).id);
const base = `${url}/v1/volumes/${vol.id}/files/`;
const auth = { Authorization: `Bearer ${key}` };
const kib = new Uint8Array(1024).map((_, i) => (i * 7) & 0xff);
await vol.write("small.bin", kib);

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
/** p50s in µs of two calls, taken in turns so the machine's load falls on both. */
async function p50(fa, fb) {
  const ta = [], tb = [];
  for (let i = 0; i < SMALL; i++) {
    for (const [fn, ts] of [[fa, ta], [fb, tb]]) {
      const t0 = process.hrtime.bigint();
      await fn(i);
      ts.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
  }
  return [median(ta), median(tb)];
}
/** Medians in s of two transfers, taken in turns as p50 does. */
async function seconds(fa, fb) {
  const ta = [], tb = [];
  for (let i = 0; i < LARGE; i++) {
    for (const [fn, ts] of [[fa, ta], [fb, tb]]) {
      const t0 = process.hrtime.bigint();
      await fn(i);
      ts.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
  }
  return [median(ta), median(tb)];
}
async function raw(method, name, body) {
  const r = await fetch(base + name, { method, headers: auth, body });
  await r.arrayBuffer();
  if (r.status >= 300) throw new Error(`${method} ${name}: ${r.status}`);
}
const curl = (args) => execFileSync("curl", ["-sf", "-o", "/dev/null", "-H", `Authorization: Bearer ${key}`, ...args]);

const rows = [];
rows.push(["GET 1 KiB (p50, µs)", ...(await p50(() => vol.read("small.bin"), () => raw("GET", "small.bin"))), "fetch"]);
rows.push(["PUT 1 KiB (p50, µs)", ...(await p50((i) => vol.write(`w${i}.bin`, kib), (i) => raw("PUT", `r${i}.bin`, kib))), "fetch"]);
rows.push(["256 MiB up from a file (s)", ...(await seconds(
  (i) => vol.write(`s${i}.bin`, fromFile(big)), (i) => curl(["-T", big, `${base}c${i}.bin`]))), "curl -T"]);
async function sdkDown() {
  const d = await vol.download("s0.bin");
  for await (const chunk of d.body) void chunk;
}
rows.push(["256 MiB down (s)", ...(await seconds(sdkDown, () => curl([`${base}c0.bin`]))), "curl"]);
rows.push(["256 MiB down (s)", ...(await seconds(sdkDown, async () => {
  const r = await fetch(`${base}s0.bin`, { headers: auth });
  for await (const chunk of r.body) void chunk;
})), "fetch"]);
console.log(JSON.stringify({ rows, maxRssMiB: process.resourceUsage().maxRSS / 1024 }));
