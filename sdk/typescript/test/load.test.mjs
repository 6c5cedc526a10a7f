// The package loads both ways, by its own name through package.json's `exports`: as an ES
// module (`import`) and as CommonJS (`require`, dist/cjs/), and each works against
// cofferd. saveTo(path) streams a download to disk in bounded memory: a child process
// saves a 256 MiB file and its peak RSS stays far below the file's size.

import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { client, uniq } from "./helpers.mjs";

const ROOT = new URL("..", import.meta.url).pathname;
const run = (args, input) => execFileSync(process.execPath, args, { cwd: ROOT, env: process.env, input, encoding: "utf8" });

const USE = `
  const c = new Coffer();
  const v = await c.runtime.createVolume({ name: "load-" + process.pid });
  await v.write("a.txt", "hello from " + KIND);
  const r = await c.volume(v.id).read("a.txt");
  let typed = false;
  try { await v.write("b.txt", { text: "x" }); } catch (e) { typed = e instanceof TypeError; }
  console.log(JSON.stringify({ text: new TextDecoder().decode(r.data), typed, errors: typeof PreconditionFailedError }));
`;

test("require('@coffer/sdk') loads the CommonJS build and works", () => {
  const out = run(["--input-type=commonjs", "-e", `
    const { Coffer, PreconditionFailedError } = require("@coffer/sdk");
    const KIND = "cjs";
    (async () => { ${USE} })().catch((e) => { console.error(e); process.exit(1); });
  `]);
  assert.deepEqual(JSON.parse(out), { text: "hello from cjs", typed: true, errors: "function" });
  const resolved = run(["--input-type=commonjs", "-e", `console.log(require.resolve("@coffer/sdk"))`]).trim();
  assert.match(resolved, /dist\/cjs\/index\.js$/);
});

test("import('@coffer/sdk') loads the ES module build and works", () => {
  const out = run(["--input-type=module", "-e", `
    import { Coffer, PreconditionFailedError } from "@coffer/sdk";
    const KIND = "esm";
    ${USE}
  `]);
  assert.deepEqual(JSON.parse(out), { text: "hello from esm", typed: true, errors: "function" });
  // import.meta.resolve needs a flag on Node 18 (Debian 12's): compare the classes instead
  const same = run(["--input-type=module", "-e", `
    const a = await import("@coffer/sdk");
    const b = await import(${JSON.stringify(ROOT + "dist/index.js")});
    console.log(a.Coffer === b.Coffer);
  `]).trim();
  assert.equal(same, "true", "the import is dist/index.js");
});

test("download().saveTo(path) writes a 256 MiB file to disk in bounded memory", { timeout: 600_000 }, async () => {
  const SIZE = 256 << 20, CHUNK = 1 << 20;
  const c = client({ timeoutMs: 120_000 });
  const v = await c.volumes.create({ name: uniq("save") });
  const sent = createHash("sha256");
  let i = 0;
  const body = new ReadableStream({
    pull(ctl) {
      if (i * CHUNK >= SIZE) return ctl.close();
      const chunk = new Uint8Array(CHUNK).fill(i++ & 0xff);
      sent.update(chunk);
      ctl.enqueue(chunk);
    },
  });
  await v.write("big.bin", body);
  const dir = mkdtempSync(join(tmpdir(), "saveto-"));
  try {
    const dest = join(dir, "big.bin");
    // In a process of its own, so its peak RSS is the download's alone.
    const out = JSON.parse(run(["--input-type=module", "-e", `
      import { Coffer } from "@coffer/sdk";
      const d = await new Coffer({ timeoutMs: 120000 }).volume(${JSON.stringify(v.id)}).download("big.bin");
      const n = await d.saveTo(${JSON.stringify(dest)});
      console.log(JSON.stringify({ n, rss: process.resourceUsage().maxRSS / 1024 }));
    `]));
    assert.equal(out.n, SIZE);
    const got = createHash("sha256");
    got.update(readFileSync(dest));
    assert.equal(got.digest("hex"), sent.digest("hex"), "the file on disk is the one uploaded");
    // node itself takes about 50 MiB; holding the file would take over 256
    assert.ok(out.rss < 160, `the saving process's peak RSS: ${out.rss.toFixed(0)} MiB`);
    console.log(`# saveTo 256 MiB: peak RSS ${out.rss.toFixed(0)} MiB`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await c.volumes.delete(v.id);
  }
});
