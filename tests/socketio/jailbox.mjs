// jailbox.mjs — the official socket.io-client on cofferd's /jailbox namespace, for
// tests/blackbox/test_relay_socketio.py. One process runs one role and speaks JSON lines:
//
//   node tests/socketio/jailbox.mjs --url URL --role agent --key KEY --uid UID [--transport polling|websocket|both]
//   node tests/socketio/jailbox.mjs --url URL --role user --token T --uid UID --dir DIR [--mode M]
//        [--exclude PAT]... [--transport ...] [--hold-writes]
//
// stdout: one JSON object a line for everything that happens:
//   {"type":"connected", "transport"} / {"type":"connect_error", "message", "data"}
//   {"type":"event", "name", "arg"} (every event received) / {"type":"disconnect", "reason"}
//   {"type":"upgrade", "transport"} (polling moved to WebSocket)
//   {"type":"ack", "seq", "arg"} the answer to a command's emit
// stdin (agent and user): one JSON command a line: {"seq", "emit": NAME, "arg": ..., "args": [...],
//   "ack": true|false} emits (with an ack when asked, its answer printed as "ack");
//   {"seq", "close": true} disconnects; {"seq", "drop": true} drops the transport (no
//   DISCONNECT: as a network cut); {"seq", "answer": opId} answers a held op.
// The user role serves ops from --dir itself (the seed's jailbox client): read_file,
// write_file (to a temp file renamed in place), list_directory, search_files (plain
// substring), answering each op through its acknowledgement; --hold-writes keeps writes
// unanswered until an {"answer": id} command.
import { io } from "socket.io-client";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

function parseArgs(argv) {
  const out = { exclude: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--hold-writes") { out.holdWrites = true; continue; }
    if (!a.startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${a}`);
    const k = a.slice(2), v = argv[++i];
    if (k === "exclude") out.exclude.push(v); else out[k] = v;
  }
  for (const k of ["url", "role", "uid"]) if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const a = parseArgs(process.argv.slice(2));
const transports = a.transport === "polling" ? ["polling"]
  : a.transport === "websocket" ? ["websocket"] : ["polling", "websocket"];
const auth = a.role === "agent" ? { token: a.key, uid: a.uid }
  : { connectToken: a.token, uid: a.uid, dir: a.dir, ...(a.mode ? { mode: a.mode } : {}),
      ...(a.exclude.length ? { exclusions: a.exclude } : {}) };
const socket = io(a.url + "/jailbox", { transports, auth, reconnection: false, timeout: 20000 });

// the upgrade may finish before the namespace's CONNECT is answered: listened for from
// the Engine.IO open on
socket.io.on("open", () => {
  socket.io.engine.on("upgrade", (t) => say({ type: "upgrade", transport: t.name }));
});
socket.on("connect", () => {
  say({ type: "connected", transport: socket.io.engine.transport.name, id: socket.id });
});
socket.on("connect_error", (e) => say({ type: "connect_error", message: e.message, data: e.data ?? null }));
socket.on("disconnect", (reason) => { say({ type: "disconnect", reason }); setTimeout(() => process.exit(0), 50); });

// ---- the user's side: serving ops from --dir
const held = new Map();
function inside(p) {
  const full = path.resolve(a.dir, p || ".");
  if (full !== path.resolve(a.dir) && !full.startsWith(path.resolve(a.dir) + path.sep))
    throw Object.assign(new Error(`'${p}' leaves the folder`), { type: "forbidden" });
  return full;
}
function serve(op) {
  try {
    if (op.op === "read_file") {
      const b = fs.readFileSync(inside(op.path));
      return { ok: true, result: { path: op.path, content: b.toString("utf-8"), encoding: "utf-8", size: b.length } };
    }
    if (op.op === "write_file") {
      const full = inside(op.path);
      fs.mkdirSync(path.dirname(full), { recursive: true });
      const b = op.encoding === "base64" ? Buffer.from(op.content, "base64") : Buffer.from(op.content, "utf-8");
      fs.writeFileSync(full + ".tmp", b);
      fs.renameSync(full + ".tmp", full);
      return { ok: true, result: { path: op.path, size: b.length } };
    }
    if (op.op === "list_directory") {
      const entries = fs.readdirSync(inside(op.path), { withFileTypes: true }).map((d) => ({
        name: d.name, type: d.isDirectory() ? "dir" : d.isFile() ? "file" : "other",
        size: d.isFile() ? fs.statSync(path.join(inside(op.path), d.name)).size : 0 }));
      return { ok: true, result: { entries } };
    }
    if (op.op === "search_files") {
      const results = [];
      const walk = (rel) => {
        for (const d of fs.readdirSync(inside(rel), { withFileTypes: true })) {
          const r = rel ? rel + "/" + d.name : d.name;
          if (d.isDirectory()) walk(r);
          else if (d.isFile()) fs.readFileSync(inside(r), "utf-8").split("\n").forEach((l, i) => {
            if (l.includes(op.pattern)) results.push({ file: r, line: i + 1, content: l });
          });
        }
      };
      walk(op.path || "");
      return { ok: true, result: { results, truncated: false } };
    }
    return { ok: false, error: { type: "validation_error", message: `unknown op ${op.op}` } };
  } catch (e) {
    return { ok: false, error: { type: e.type || (e.code === "ENOENT" ? "not_found" : "internal"), message: e.message } };
  }
}
if (a.role === "user") {
  for (const [ev, op] of [["jailbox:file_read", "read_file"], ["jailbox:file_write", "write_file"],
    ["jailbox:list_directory", "list_directory"], ["jailbox:search_files", "search_files"]]) {
    socket.on(ev, (arg, cb) => {
      say({ type: "event", name: ev, arg: op === "write_file" ? { ...arg, content: undefined, bytes: (arg.content || "").length } : arg });
      const req = { ...arg, op };
      if (op === "write_file" && a.holdWrites) { held.set(arg.id, () => cb(serve(req))); return; }
      cb(serve(req));
    });
  }
}
socket.onAny((name, arg) => {
  if (a.role === "user" && /^jailbox:(file_read|file_write|list_directory|search_files)$/.test(name)) return;
  say({ type: "event", name, arg: arg ?? null });
});

// ---- commands
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  if (!line.trim()) return;
  const c = JSON.parse(line);
  if (c.close) { socket.disconnect(); return; }
  if (c.drop) { socket.io.engine.close(); return; }
  if (c.answer) { const f = held.get(c.answer); held.delete(c.answer); if (f) f(); say({ type: "answered", seq: c.seq, id: c.answer, found: !!f }); return; }
  const args = c.args ?? (c.arg === undefined ? [] : [c.arg]);
  if (c.ack === false) { socket.emit(c.emit, ...args); return; }
  try {
    const r = await socket.timeout(c.timeout ?? 60000).emitWithAck(c.emit, ...args);
    say({ type: "ack", seq: c.seq, arg: r });
  } catch (e) {
    say({ type: "ack", seq: c.seq, error: e.message });
  }
});
rl.on("close", () => { socket.disconnect(); });
