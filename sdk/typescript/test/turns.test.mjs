// Turns through the SDK: create, a confined call with stdin and an outbox file, the file
// downloaded, the turn read, ended, and 410 after.

import test from "node:test";
import assert from "node:assert/strict";
import { artifactOf, GoneError, NotFoundError, ValidationError } from "../dist/index.js";
import { client, text, uniq } from "./helpers.mjs";

const c = client();

test("create, call, files, get, end", async () => {
  const agent = uniq("ag");
  await c.agents.upsert(agent, { output: { files: ["csv"] } });
  const turn = await c.turns.create({ agent, user: "u1", deadlineSeconds: 120 });
  assert.match(turn.id, /^turn_/);
  assert.equal(turn.info.agent, agent);
  assert.equal(typeof turn.info.sandbox.turnDisk, "number");
  const r = await turn.call('read x; echo "got $x"; printf "a,b\\n1,2\\n" > "$OUTBOX/t.csv"; echo oops >&2; exit 3',
    { stdin: "hello\n", timeoutSeconds: 60 });
  assert.equal(r.exitCode, 3);
  assert.equal(r.stdout, "got hello\n");
  assert.equal(r.stderr, "oops\n");
  assert.deepEqual(r.files.map((f) => [f.name, f.mediaType, f.size]), [["t.csv", "text/csv", 8]]);
  assert.match(r.notes[0], /attached t\.csv/);
  const f = await turn.file(r.callId, "t.csv");
  assert.equal(text(f.data), "a,b\n1,2\n");
  assert.equal(f.contentType.split(";")[0], "text/csv");
  await assert.rejects(turn.file(r.callId, "nope.csv"), NotFoundError);
  const again = await turn.call("ls -a /tmp | grep -c . ; echo $HOME");
  assert.equal(again.exitCode, 0);
  assert.match(again.stdout, /\/tmp\n$/);
  const info = await turn.get();
  assert.equal(info.calls, 2);
  assert.equal(c.turns.turn(turn.id).id, turn.id);
  await turn.end();
  await assert.rejects(turn.call("true"), GoneError);
  await assert.rejects(turn.get(), GoneError);
  await assert.rejects(c.turns.create({ agent, user: "u1", deadlineSeconds: 0 }), ValidationError);
});

test("a call's kept files stream as A2A artifacts (seed 000)", async () => {
  const agent = uniq("ag");
  await c.agents.upsert(agent, {});
  const turn = await c.turns.create({ agent, user: "u1", deadlineSeconds: 120 });
  const seen = [];
  for await (const ev of turn.callStream("printf 'a,b\\n' > $OUTBOX/t.csv; printf x > $OUTBOX/n.txt",
    { callId: "toolu_01", acceptedOutputModes: ["text/csv"] })) seen.push(ev);
  const arts = seen.map(artifactOf).filter(Boolean);
  assert.deepEqual(arts.map((a) => [a.artifactId, a.name, a.mediaType, text(a.data), a.callId]),
    [["toolu_01/t.csv", "t.csv", "text/csv", "a,b\n", "toolu_01"]]);
  assert.equal(seen.find((e) => e.event === "artifact").data.name, "file");
  assert.equal(seen.at(-1).event, "exit");
  assert.equal(seen.at(-1).data.callId, "toolu_01");
  assert.equal(artifactOf(seen.at(-1)), undefined);
  const r = await turn.call("printf y > $OUTBOX/m.csv", { callId: "toolu_02" });
  assert.deepEqual([r.callId, r.files.map((f) => f.name)], ["toolu_02", ["m.csv"]]);
  await assert.rejects(turn.callStream("true", { acceptedOutputModes: "text/csv" }).next(), TypeError);
  await assert.rejects(turn.call("true", { acceptedOutputModes: "text/csv" }), TypeError);
  await turn.end();
});
