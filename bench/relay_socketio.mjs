// relay_socketio.mjs — the Socket.IO side of bench/relay_socketio.py: the official
// socket.io-client (installed in tests/socketio by npm ci) as a seed-004 Dispatcher would
// use it, on cofferd's /jailbox namespace.
//
//   node bench/relay_socketio.mjs agent URL KEY UID
//     one agent socket over WebSocket; stdin: one JSON command a line,
//     {"op": "read", "path", "n"} or {"op": "write", "path", "bytes", "n"}: n calls one
//     after another, each an emitWithAck; stdout: {"ms": [...]} per command (each call's
//     round trip, from the emit to its ack).
//   node bench/relay_socketio.mjs idle URL UID N KEY...
//     N agent sockets (WebSocket, a manager each, the keys taken in turn) that connect and
//     then only answer pings; stdout {"connected": N} once all are, then waits for stdin
//     to close.
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "tests", "socketio", "package.json"));
const { io } = require("socket.io-client");
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const [mode, url, ...rest] = process.argv.slice(2);

function open(key, uid) {
  return new Promise((resolve, reject) => {
    const s = io(url + "/jailbox", { transports: ["websocket"], auth: { token: key, uid },
      reconnection: false, forceNew: true, timeout: 60000 });
    s.once("connect", () => resolve(s));
    s.once("connect_error", (e) => reject(new Error("connect: " + e.message)));
  });
}

if (mode === "agent") {
  const [key, uid] = rest;
  const s = await open(key, uid);
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    const ms = [];
    const content = c.op === "write" ? "w".repeat(c.bytes - 1) + "\n" : null;
    for (let i = 0; i < c.n; i++) {
      const t0 = process.hrtime.bigint();
      const a = c.op === "read"
        ? await s.timeout(60000).emitWithAck("jailbox:file_read", { path: c.path })
        : await s.timeout(60000).emitWithAck("jailbox:file_write", { path: c.path, content });
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (!a.ok) { say({ error: a.error }); process.exit(1); }
      if (c.op === "read" && a.result.size !== c.size) {
        say({ error: `read ${a.result.size} bytes, not ${c.size}` }); process.exit(1);
      }
    }
    say({ ms });
  }
  s.disconnect();
} else if (mode === "idle") {
  const [uid, n, ...keys] = rest;
  const socks = [];
  // in batches, as clients come over a while (not one burst of N handshakes)
  for (let i = 0; i < Number(n); i += 50) {
    const batch = [];
    for (let j = i; j < Math.min(Number(n), i + 50); j++) batch.push(open(keys[j % keys.length], uid));
    socks.push(...(await Promise.all(batch)));
  }
  say({ connected: socks.length });
  process.stdin.resume();
  process.stdin.on("end", () => { for (const s of socks) s.disconnect(); process.exit(0); });
} else {
  throw new Error("mode: agent or idle");
}
