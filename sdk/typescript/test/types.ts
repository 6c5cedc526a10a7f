// Compiled (never run) by tests/blackbox/test_sdk_typescript.py with tsc --noEmit: the
// published types, reached through the package's own name and `exports`, type the calls
// as the README shows them, and misuse is a compile error (the @ts-expect-error lines).

import {
  type ChangeBy, Coffer, CofferError, type Download, type FileVersion, MergeConflictError, type PromptResult,
  PreconditionFailedError, type ToolResult, type Volume, verifyWebhook, type WebhookEvent,
} from "@coffer/sdk";

export async function usage(): Promise<void> {
  const coffer = new Coffer({ url: "http://127.0.0.1:7700", key: "k", timeoutMs: 5000, maxRetries: 2 });
  const v: Volume = await coffer.volumes.create({ name: "notes" }, { idempotencyKey: "k1" });
  const vol = coffer.volume(v.id);
  const w = await vol.write("a.md", new Uint8Array([1]), { version: 0, contentType: "text/plain" });
  const n: number = w.version;
  const d: Download = await vol.read("a.md", { range: [0, 10] });
  const bytes: Uint8Array = d.data;
  for await (const ch of vol.follow(n, { prefix: "docs/" })) {
    const op: "write" | "remove" = ch.op;
    void op;
    break;
  }
  try {
    await vol.write("a.md", "x", { version: 1 });
  } catch (e) {
    if (e instanceof PreconditionFailedError) {
      const cur: number | undefined = e.current?.version;
      void cur;
    } else if (e instanceof CofferError) {
      const t: string = e.type;
      void t;
    }
  }
  const tool: ToolResult = await coffer.agent("a").tools.grep({ pattern: "x", outputMode: "count" });
  const p: PromptResult = await coffer.agent("a").prompt("hi", { files: [{ path: "/workspace/a.md" }, bytes] });
  const turn = await coffer.turns.create({ agent: "a", user: "u", deadlineSeconds: 60 });
  const out = await turn.call("echo hi", { timeoutSeconds: 5 });
  const s = await coffer.relay.create({ agent: "a" });
  const token: string | undefined = s.info.connectToken;
  void tool; void p; void out; void token;
  // merge, history, who, revert, webhooks
  try {
    const m = await vol.merge("vol_b", { strategy: "theirs", resolutions: { "a.md": { text: "x" } }, ifSeq: 3 });
    const from: "theirs" | "merged" | "ours" = m.merged[0].from;
    void from;
  } catch (e) {
    if (e instanceof MergeConflictError) {
      const kind: "content" | "remove-change" | "type" = e.conflicts[0].kind;
      void kind;
    }
  }
  for await (const h of vol.allHistory("a.md")) {
    const fv: FileVersion = h;
    const by: ChangeBy | null = fv.by;
    void by;
  }
  const page = await vol.changes(0, { runId: "r1", agent: "a", keyId: "k", callId: "c" });
  const via: string | undefined = page.changes[0].by?.via;
  const rv = await vol.revert({ runId: "r1", paths: ["a.md"], dryRun: true });
  const hook = await coffer.webhooks.create({ url: "https://example.com/h", events: ["turn.ended"] });
  const ev: WebhookEvent<{ turnId: string }> = verifyWebhook(hook.secret ?? "", new Headers(), "{}", { toleranceSeconds: 60 });
  void via; void rv; void ev;
  // @ts-expect-error: no such event
  await coffer.webhooks.create({ url: "https://example.com/h", events: ["file.written"] });
  // @ts-expect-error: no such strategy
  await vol.merge("vol_b", { strategy: "mine" });
  // @ts-expect-error: a version is a number
  await vol.write("a.md", "x", { version: "1" });
  // @ts-expect-error: no such tool helper
  await coffer.agent("a").tools.delete({ path: "x" });
  // @ts-expect-error: a mount needs its mode
  await coffer.agent("a").setMounts([{ volumeId: "v", path: "/docs" }]);
}
