// Wrong shapes fail loudly: every public method, called once with a wrong argument (a
// string where an options object belongs, an unknown option, a wrong type), throws a
// TypeError naming the call and the argument, and sends nothing (the client's fetch
// records any request). The table must cover every method of every class: a method added
// without a row here fails the last test.

import test from "node:test";
import assert from "node:assert/strict";
import {
  AgentFiles, AgentHandle, Agents, AgentTools, Coffer, RelaySessionHandle, Relay, Runtime, Subject, Turn, Turns,
  VolumeHandle, Volumes, Webhooks,
} from "../dist/index.js";

const sent = [];
const c = new Coffer({
  url: "http://127.0.0.1:9", key: "k", maxRetries: 0,
  fetch: async (url) => { sent.push(String(url)); throw new Error("no request was expected: " + url); },
});
const vol = c.volume("vol_x");
const ag = c.agent("ag");
const sub = ag.subject("u");
const turn = c.turns.turn("turn_x");
const sess = c.relay.session("rs_x");

// [class, method, call, what the message names]
const ROWS = [
  [Coffer, "volume", () => c.volume({ id: "x" }), /volume: id must be a non-empty string/],
  [Coffer, "agent", () => c.agent(7), /agent: id must be/],
  [Coffer, "upsert", () => c.upsert("a", "rw"), /agents.upsert: settings must be an object/],
  [Coffer, "createKey", () => c.createKey({ orgg: "x" }), /unknown field 'orgg'/],
  [Coffer, "health", () => c.health("now"), /health: options must be an options object/],
  [Volumes, "create", () => c.volumes.create("notes"), /volumes.create: the volume must be an object .*not the string "notes"/],
  [Volumes, "list", () => c.volumes.list({ prefx: "a" }), /unknown field 'prefx'/],
  [Volumes, "all", () => c.volumes.all("a").next(), /volumes.all: the query must be an object/],
  [Volumes, "seqs", () => c.volumes.seqs("a,b"), /volumes.seqs: ids must be an array of strings/],
  [Volumes, "get", () => c.volumes.get({ id: "a" }), /volumes.get: id must be/],
  [Volumes, "delete", () => c.volumes.delete(undefined), /volumes.delete: id must be/],
  [Volumes, "volume", () => c.volumes.volume(null), /volumes.volume: id must be/],
  [Runtime, "createVolume", () => c.runtime.createVolume({ name: "a" }, "key-1"), /volumes.create: options must be an options object .*not the string "key-1"/],
  [Runtime, "volume", () => c.runtime.volume({ id: "v" }), /volumes.volume: id must be/],
  [Runtime, "volumes", () => c.runtime.volumes("vol_a"), /volumes.seqs: ids must be an array/],
  [VolumeHandle, "get", () => vol.get({ snapshot: "s" }), /volume.get: unknown option 'snapshot'/],
  [VolumeHandle, "write", () => vol.write("a.md", { text: "x" }), /volume.write: data must be a string, bytes/],
  [VolumeHandle, "read", () => vol.read("a.md", "s1"), /volume.read: options must be an options object/],
  [VolumeHandle, "download", () => vol.download({ path: "a.md" }), /volume.download: path must be/],
  [VolumeHandle, "readReq", () => vol.read("a.md", { range: { start: 0 } }), /volume.read: range must be "bytes=a-b" or \[start, end\?\]/],
  [VolumeHandle, "stat", () => vol.stat("a.md", { versoin: 1 }), /unknown option 'versoin'/],
  [VolumeHandle, "remove", () => vol.remove("a.md", { version: "3" }), /volume.remove: version must be a whole number/],
  [VolumeHandle, "move", () => vol.move("a", "b", true), /volume.move: options must be/],
  [VolumeHandle, "list", () => vol.list("docs/"), /volume.list: the query must be an object .*not the string "docs\/"/],
  [VolumeHandle, "readAll", () => vol.readAll({ prefix: "a", content: true }), /unknown field 'content'/],
  [VolumeHandle, "changes", () => vol.changes("5"), /volume.changes: since must be a whole number/],
  [VolumeHandle, "follow", () => vol.follow(0, "docs/").next(), /volume.follow: the query must be an object/],
  [VolumeHandle, "snapshot", () => vol.snapshot({ files: { "a.bin": [1, 2] } }), /volume.snapshot: files\["a.bin"\] must be text, bytes/],
  [VolumeHandle, "snapshots", () => vol.snapshots({ labels: "k:v" }), /volume.snapshots: labels must be an object of string values/],
  [VolumeHandle, "getSnapshot", () => vol.getSnapshot({ id: "s" }), /snapshot id must be/],
  [VolumeHandle, "updateSnapshot", () => vol.updateSnapshot("s", { pinned: "yes" }), /pinned must be true or false/],
  [VolumeHandle, "deleteSnapshot", () => vol.deleteSnapshot("s", true), /volume.deleteSnapshot: options must be/],
  [VolumeHandle, "fork", () => vol.fork("snap_1"), /volume.fork: the fork must be an object/],
  [VolumeHandle, "restore", () => vol.restore({ snap: "s" }), /volume.restore: snapshot must be/],
  [VolumeHandle, "archive", () => vol.archive({ snapshots: "s" }), /unknown field 'snapshots'/],
  [VolumeHandle, "link", () => vol.link("a.md", { expiresIn: "1h" }), /volume.link: expiresIn must be a whole number/],
  [VolumeHandle, "merge", () => vol.merge({ from: "vol_y" }), /volume.merge: from must be a non-empty string/],
  [VolumeHandle, "history", () => vol.history("a.md", "cur_1"), /volume.history: the query must be an object .*not the string "cur_1"/],
  [VolumeHandle, "allHistory", () => vol.allHistory("a.md", { cursor: "c" }).next(), /volume.allHistory: unknown field 'cursor'/],
  [VolumeHandle, "revert", () => vol.revert({ callId: "c1", seq: 4 }), /volume.revert: give exactly one of runId, callId, seq \(got callId, seq\)/],
  [Agents, "upsert", () => c.agents.upsert("a", { mount: [] }), /unknown field 'mount'/],
  [Agents, "get", () => c.agents.get(["a"]), /agents.get: id must be/],
  [Agents, "delete", () => c.agents.delete({}), /agents.delete: id must be/],
  [Agents, "agent", () => c.agents.agent(1), /agents.agent: id must be/],
  [AgentHandle, "get", () => ag.get("x"), /agent.get: options must be/],
  [AgentHandle, "upsert", () => ag.upsert({ mounts: [{ volumeId: "v", path: "/d", mode: "ro", readonly: true }] }), /unknown field 'readonly' in mounts\[0\]/],
  [AgentHandle, "setMounts", () => ag.setMounts({ volumeId: "v" }), /agent.setMounts: mounts must be an array/],
  [AgentHandle, "run", () => ag.run("What changed?", ["./q3.pdf"]), /agent.run: options must be an options object .*not an array/],
  [AgentHandle, "getRun", () => ag.getRun({ runId: "r" }), /agent.getRun: runId must be/],
  [AgentHandle, "events", () => ag.events("all").next(), /agent.events: options must be/],
  [AgentHandle, "prompt", () => ag.prompt("hi", { file: [] }), /unknown option 'file'/],
  [AgentHandle, "conversationRequest", () => ag.conversationRequest("c", "openai"), /agent.conversationRequest: options must be/],
  [AgentHandle, "upload", () => ag.upload("r1", { name: "a" }, "x"), /agent.upload: name must be/],
  [AgentHandle, "subject", () => ag.subject({ id: "u" }), /agent.subject: id must be/],
  [AgentHandle, "forUser", () => ag.forUser("ann smith"), /agent: user "ann smith" is not a subject id/],
  [AgentHandle, "resolve", () => ag.resolve({ $file: "a" }, { as: "link" }), /agent.resolve: as must be "base64" or "url"/],
  [AgentHandle, "putSkill", () => ag.putSkill("s", 42), /agent.putSkill: data must be/],
  [AgentHandle, "promptChecked", () => ag.prompt("hi", { files: [{ name: "a.txt" }] }), /agent.prompt: files\[0\] must be bytes/],
  [AgentFiles, "download", () => ag.files.download("/workspace/a", { snapshot: "s" }), /unknown option 'snapshot'/],
  [AgentFiles, "stream", () => ag.files.stream(5), /agent.files.stream: path must be/],
  [AgentFiles, "upload", () => ag.files.upload("/workspace/a.json", { a: 1 }), /agent.files.upload: data must be/],
  [AgentFiles, "remove", () => ag.files.remove("/workspace/a", { version: 1 }), /unknown option 'version'/],
  [AgentFiles, "list", () => ag.files.list({ path: "/workspace/out", recursive: true }), /unknown option 'recursive'/],
  [AgentFiles, "link", () => ag.files.link("/workspace/r.pdf", 3600), /agent.files.link: options must be an options object .*number 3600/],
  [AgentFiles, "toolOutput", () => ag.files.toolOutput("call_1", { name: "a" }, "x"), /agent.files.toolOutput: name must be/],
  [AgentFiles, "url", () => ag.files.download({ path: "/workspace/a" }), /agent.files.download: path must be/],
  [AgentTools, "call", () => ag.tools.call("read", "/workspace/a"), /agent.tools.read: arguments must be an object/],
  [AgentTools, "read", () => ag.tools.read("/workspace/a"), /agent.tools.read: arguments must be an object/],
  [AgentTools, "write", () => ag.tools.write({ path: "a", content: "x" }, { run: "r" }), /unknown option 'run'/],
  [AgentTools, "edit", () => ag.tools.edit(["a"]), /agent.tools.edit: arguments must be/],
  [AgentTools, "ls", () => ag.tools.ls("/workspace"), /agent.tools.ls: arguments must be/],
  [AgentTools, "glob", () => ag.tools.glob("*.md"), /agent.tools.glob: arguments must be/],
  [AgentTools, "grep", () => ag.tools.grep("TODO"), /agent.tools.grep: arguments must be/],
  [AgentTools, "presentFile", () => ag.tools.presentFile("/workspace/a"), /agent.tools.present_file: arguments must be/],
  [Subject, "write", () => sub.write("a.md", { text: "x" }), /subject.write: content must be text or bytes/],
  [Subject, "read", () => sub.read(1), /subject.read: path must be/],
  [Subject, "list", () => sub.list({ path: "a" }), /subject.list: path must be a string/],
  [Subject, "move", () => sub.move("a", "b", { force: true }), /unknown option 'force'/],
  [Subject, "remove", () => sub.remove(["a"]), /subject.remove: path must be/],
  [Subject, "volume", () => sub.volume("v"), /subject.volume: options must be/],
  [Subject, "readMemory", () => sub.readMemory("NOTES.md"), /subject.readMemory: name must be "USER.md" or "MEMORY.md"/],
  [Subject, "writeMemory", () => sub.writeMemory("USER.md", null), /subject.writeMemory: data must be/],
  [Subject, "startSession", () => sub.startSession({ skills: [] }), /unknown option 'skills'/],
  [Turns, "create", () => c.turns.create({ agent: "a", user: "u", deadlineSeconds: "60" }), /turns.create: deadlineSeconds must be a whole number/],
  [Turns, "turn", () => c.turns.turn({}), /turns.turn: id must be/],
  [Turn, "get", () => turn.get(1), /turn.get: options must be/],
  [Turn, "call", () => turn.call("echo hi", "stdin text"), /turn.call: the call must be an object/],
  [Turn, "callStream", () => turn.callStream("echo hi", { acceptedOutputModes: "text/csv" }).next(), /turn.callStream: acceptedOutputModes must be an array of strings/],
  [Turn, "file", () => turn.file("c1", { name: "a" }), /turn.file: name must be/],
  [Turn, "end", () => turn.end({ force: true }), /unknown option 'force'/],
  [Relay, "create", () => c.relay.create("agent-1"), /relay.create: the session must be an object/],
  [Relay, "list", () => c.relay.list("agent-1"), /relay.list: the query must be an object/],
  [Relay, "session", () => c.relay.session(undefined), /relay.session: uid must be/],
  [RelaySessionHandle, "get", () => sess.get("x"), /session.get: options must be/],
  [RelaySessionHandle, "op", () => sess.op({ op: "read_file", path: "a" }, { wait: "no" }), /session.op: wait must be true or false/],
  [RelaySessionHandle, "readFile", () => sess.readFile({ path: "a" }), /session.readFile: path must be/],
  [RelaySessionHandle, "writeFile", () => sess.writeFile("a", new Uint8Array(1)), /session.writeFile: content must be a string/],
  [RelaySessionHandle, "listDirectory", () => sess.listDirectory(2), /session.listDirectory: path must be/],
  [RelaySessionHandle, "searchFiles", () => sess.searchFiles("x", "src/"), /session.searchFiles: the query must be an object/],
  [RelaySessionHandle, "opStatus", () => sess.opStatus(12), /session.opStatus: opId must be/],
  [RelaySessionHandle, "events", () => sess.events({ last: "3" }).next(), /unknown option 'last'/],
  [RelaySessionHandle, "log", () => sess.log("x"), /session.log: options must be/],
  [RelaySessionHandle, "abort", () => sess.abort("x"), /session.abort: options must be/],
  [RelaySessionHandle, "close", () => sess.close("x"), /session.close: options must be/],
  [Webhooks, "create", () => c.webhooks.create({ url: "https://h/x", events: "turn.ended" }), /webhooks.create: events must be an array of strings/],
  [Webhooks, "list", () => c.webhooks.list({ cursor: "c" }), /webhooks.list: unknown option 'cursor'/],
  [Webhooks, "get", () => c.webhooks.get({ id: "wh_1" }), /webhooks.get: id must be a non-empty string/],
  [Webhooks, "update", () => c.webhooks.update("wh_1", { disabled: "yes" }), /webhooks.update: disabled must be true or false/],
  [Webhooks, "delete", () => c.webhooks.delete(7), /webhooks.delete: id must be/],
  [Webhooks, "deliveries", () => c.webhooks.deliveries("wh_1", "cur"), /webhooks.deliveries: the query must be an object/],
  [Webhooks, "redeliver", () => c.webhooks.redeliver("wh_1"), /webhooks.redeliver: delivery must be a non-empty string/],
];

test("each public method, called with a wrong shape, throws a TypeError naming the argument and sends nothing", async () => {
  for (const [, name, call, message] of ROWS) {
    let err;
    try {
      await call();
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof TypeError, `${name}: expected a TypeError, got ${err}`);
    assert.match(err.message, message, `${name}'s message`);
    assert.ok(!/\[object Object\]/.test(err.message), `${name}: ${err.message}`);
  }
  assert.deepEqual(sent, [], "no request was sent");
});

test("the seed's issue-34 mistakes: no [object Object] request, no silent run", async () => {
  // agent.files.list with an object of the wrong shape never reaches the URL
  await assert.rejects(ag.files.list({ dir: "/workspace/out" }), /unknown option 'dir'/);
  // a query value that is an object is refused by the transport itself
  assert.throws(() => c.transport.href("/v1/x", { path: { a: 1 } }), /query parameter 'path' must be a string/);
  // an option object given where a path belongs
  await assert.rejects(vol.read({ path: "a.md" }), /volume.read: path must be a non-empty string, not a Object/);
  assert.deepEqual(sent, []);
});

test("every public method of every class has a row above", () => {
  const covered = new Set(ROWS.map(([cls, name]) => `${cls.name}.${name}`));
  const missing = [];
  for (const cls of [Coffer, Volumes, Runtime, VolumeHandle, Agents, AgentHandle, AgentFiles, AgentTools, Subject, Turns, Turn, Relay, RelaySessionHandle, Webhooks]) {
    for (const name of Object.getOwnPropertyNames(cls.prototype)) {
      const d = Object.getOwnPropertyDescriptor(cls.prototype, name);
      if (name === "constructor" || typeof d.value !== "function") continue;
      if (!covered.has(`${cls.name}.${name}`)) missing.push(`${cls.name}.${name}`);
    }
  }
  assert.deepEqual(missing, [], "methods without a wrong-shape row");
});
