// Shared by the SDK tests: a client of the cofferd named by COFFER_URL / COFFER_KEY (the
// black-box module tests/blackbox/test_sdk_typescript.py starts one), unique names, and
// a TCP proxy whose connections can be cut, delayed or answered falsely.

import net from "node:net";
import { Coffer } from "../dist/index.js";

export const URL_ = process.env.COFFER_URL;
export const KEY = process.env.COFFER_KEY;
if (!URL_ || !KEY) throw new Error("COFFER_URL and COFFER_KEY must name a running cofferd and its admin key");

/** Waits are multiplied by this (3 under sanitizers: the binaries are slower). */
export const SCALE = Number(process.env.COFFER_TEST_SCALE || 1);

export function client(o = {}) {
  return new Coffer({ url: URL_, key: KEY, retryBaseMs: 20, ...o });
}

let n = 0;
export function uniq(prefix = "ts") {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${++n}`;
}

/** Polls `cond` every 50 ms until it is truthy (or throws after `ms`). */
export async function until(cond, what, ms = 15000) {
  const end = Date.now() + ms * SCALE;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A TCP proxy to cofferd. `plan(i)` says what to do with connection number i (0-based):
 *   "pass"                 forward both ways
 *   {cutAfterRequestBytes: N}  forward, then reset both sides once N request bytes went up
 *   "cutResponse"          forward the request; reset the client as the answer starts
 *   {answer: "HTTP/1.1 503 ..."} answer this text without reaching cofferd
 *   "silent"               accept and never answer
 *   {cutResponseAfterBytes: N, onCut?}  forward; reset both once N answer bytes came back
 *   {after: promise}       forward once the promise has settled
 *   {cutResponseAfterText: T}  forward; reset both right after the first SSE event whose
 *                          text holds T (at the blank line ending it)
 * `conns` records each connection's request head (the text up to the first blank line).
 */
export async function proxy(plan) {
  const u = new URL(URL_);
  const conns = [];
  const sockets = new Set();
  const server = net.createServer((c) => {
    sockets.add(c);
    c.on("close", () => sockets.delete(c));
    const i = conns.length;
    const rec = { head: "", up: 0 };
    conns.push(rec);
    const what = plan(i);
    let headDone = false;
    const note = (chunk) => {
      rec.up += chunk.length;
      if (!headDone) {
        rec.head += chunk.toString("latin1");
        const end = rec.head.indexOf("\r\n\r\n");
        if (end >= 0) { rec.head = rec.head.slice(0, end); headDone = true; }
      }
    };
    if (what === "silent") { c.on("data", note); c.on("error", () => {}); return; }
    if (what && what.answer) {
      c.on("data", (chunk) => {
        note(chunk);
        if (headDone && !rec.answered) { rec.answered = true; c.end(what.answer); }
      });
      c.on("error", () => {});
      return;
    }
    if (what && what.after) {
      c.pause(); // what arrives meanwhile waits in the socket's buffer
      what.after.finally(() => {
        relay(c, i, rec, "pass");
        c.resume();
      });
      return;
    }
    relay(c, i, rec, what);
  });

  /** Forwards connection `c` to cofferd, doing what `what` says. */
  function relay(c, i, rec, what) {
    let headDone = false;
    const note = (chunk) => {
      rec.up += chunk.length;
      if (!headDone) {
        rec.head += chunk.toString("latin1");
        const end = rec.head.indexOf("\r\n\r\n");
        if (end >= 0) { rec.head = rec.head.slice(0, end); headDone = true; }
      }
    };
    const s = net.connect(Number(u.port), u.hostname);
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    const kill = () => { c.resetAndDestroy?.() ?? c.destroy(); s.destroy(); };
    c.on("error", () => s.destroy());
    s.on("error", () => c.destroy());
    c.on("data", (chunk) => {
      note(chunk);
      if (what && what.cutAfterRequestBytes !== undefined && rec.up >= what.cutAfterRequestBytes) {
        rec.cut = true;
        return kill();
      }
      s.write(chunk);
    });
    let down = 0;
    let seen = "";
    s.on("data", (chunk) => {
      if (what === "cutResponse") { rec.cut = true; return kill(); }
      if (what && what.cutResponseAfterText !== undefined) {
        const at = seen.length;
        seen += chunk.toString("latin1");
        const hit = seen.indexOf(what.cutResponseAfterText);
        const end = hit < 0 ? -1 : seen.indexOf("\n\n", hit);
        if (end >= 0) {
          c.write(chunk.subarray(0, end + 2 - at));
          rec.cut = true;
          return kill();
        }
      }
      if (what && what.cutResponseAfterBytes !== undefined && down + chunk.length > what.cutResponseAfterBytes) {
        c.write(chunk.subarray(0, what.cutResponseAfterBytes - down));
        rec.cut = true;
        what.onCut?.();
        return kill();
      }
      down += chunk.length;
      c.write(chunk);
    });
    c.on("end", () => s.end());
    s.on("end", () => c.end());
  }
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    conns,
    close: () => new Promise((r) => {
      server.close(() => r());
      for (const c of sockets) c.destroy();
    }),
  };
}

/** A header of a recorded request head, or undefined. */
export function headerOf(head, name) {
  const m = head.match(new RegExp(`^${name}:\\s*(.*)$`, "im"));
  return m ? m[1].trim() : undefined;
}

export const text = (u8) => new TextDecoder().decode(u8);

/** `p`, or a rejection naming `what` after `ms` (the timer cleared either way). */
export async function within(p, ms, what) {
  let t;
  try {
    return await Promise.race([p, new Promise((_, no) => { t = setTimeout(() => no(new Error(`timed out: ${what()}`)), ms * SCALE); })]);
  } finally {
    clearTimeout(t);
  }
}
