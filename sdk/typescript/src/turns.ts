// Turns: scratch workspaces for confined tool calls (API.md "Turns").

import * as check from "./check.js";
import { type CallOptions, Transport } from "./http.js";
import { parseSse, type StreamEvent } from "./sse.js";
import { bytesOf, type Download, downloadInfo } from "./volumes.js";

export interface TurnInfo {
  id: string;
  agent: string;
  user: string;
  createdAt: string;
  deadline: string;
  expiresAt: string;
  sandbox: Record<string, unknown>;
  acceptedOutputModes?: string[];
  calls?: number;
  running?: number;
  used?: { bytes: number; entries: number };
}

export interface CallResult {
  callId: string;
  exitCode: number;
  stdout: string;
  stderr: string;
  files: { name: string; mediaType: string; size: number; url: string }[];
  notes: string[];
  limit?: string;
  timedOut?: boolean;
  committed?: { volumeId: string; seq: number; written: number; removed: number }[];
  conflicts?: { path: string; reason: string }[];
}

/** What a call takes besides its command. */
export interface CallArgs {
  stdin?: string;
  timeoutSeconds?: number;
  /** The model's tool-call id; it names the call's kept files (made when absent). */
  callId?: string;
  /** Media types: only kept files of those types come back. */
  acceptedOutputModes?: string[];
}

/**
 * A kept file as an A2A v0.3 Artifact (the `artifact` events of `turn.callStream`), its
 * bytes decoded: `artifactId` is "CALLID/NAME".
 */
export interface Artifact {
  artifactId: string;
  name: string;
  mediaType: string;
  data: Uint8Array;
  callId: string;
}

/** The Artifact an `artifact` event carries, decoded; undefined for other events. */
export function artifactOf(ev: StreamEvent<unknown>): Artifact | undefined {
  if (ev.event !== "artifact" || ev.data === null || typeof ev.data !== "object") return undefined;
  const d = ev.data as { artifactId?: string; parts?: { file?: { name?: string; mimeType?: string; bytes?: string } }[]; metadata?: { call_id?: string } };
  const f = d.parts?.[0]?.file ?? {};
  return {
    artifactId: String(d.artifactId ?? ""),
    name: String(f.name ?? ""),
    mediaType: String(f.mimeType ?? ""),
    data: new Uint8Array(Buffer.from(f.bytes ?? "", "base64")),
    callId: String(d.metadata?.call_id ?? ""),
  };
}

function callBody(where: string, command: string, a: CallArgs): Record<string, unknown> {
  check.str(where, "command", command);
  check.fields(where, "the call", a, ["stdin", "timeoutSeconds", "callId", "acceptedOutputModes"]);
  check.optStr(where, "stdin", a.stdin);
  check.optInt(where, "timeoutSeconds", a.timeoutSeconds);
  check.optStr(where, "callId", a.callId);
  if (a.acceptedOutputModes !== undefined) check.strs(where, "acceptedOutputModes", a.acceptedOutputModes);
  return { command, ...a };
}

export class Turns {
  constructor(private t: Transport) {}

  /** A new turn for an agent and a user (its workspace is made at its first call). */
  async create(body: { agent: string; user: string; deadlineSeconds: number; acceptedOutputModes?: string[] }, o?: CallOptions): Promise<Turn> {
    check.fields("turns.create", "the turn", body, ["agent", "user", "deadlineSeconds", "acceptedOutputModes"], false);
    check.str("turns.create", "agent", body.agent);
    check.str("turns.create", "user", body.user);
    check.int("turns.create", "deadlineSeconds", body.deadlineSeconds);
    check.opts("turns.create", "options", o);
    const info = await this.t.json<TurnInfo>({ method: "POST", path: "/v1/turns", json: body }, o);
    return new Turn(this.t, info);
  }

  /** A handle on a turn by id (no request made). */
  turn(id: string): Turn {
    check.str("turns.turn", "id", id);
    return new Turn(this.t, { id } as TurnInfo);
  }
}

export class Turn {
  readonly id: string;
  private base: string;
  constructor(private t: Transport, readonly info: TurnInfo) {
    this.id = info.id;
    this.base = `/v1/turns/${encodeURIComponent(info.id)}`;
  }

  async get(o?: CallOptions): Promise<TurnInfo> {
    check.opts("turn.get", "options", o);
    return this.t.json({ method: "GET", path: this.base }, o);
  }

  /**
   * Runs `sh -c command` confined and waits for it. Never retried after a dropped
   * connection (a command is not idempotent). The idle timeout is raised to cover
   * `timeoutSeconds` (default 120).
   */
  async call(command: string, a: CallArgs = {}, o?: CallOptions): Promise<CallResult> {
    const json = callBody("turn.call", command, a);
    check.opts("turn.call", "options", o);
    return this.t.json({
      method: "POST", path: `${this.base}/calls`, json,
      extraWaitMs: (a.timeoutSeconds ?? 120) * 1000,
    }, o);
  }

  /**
   * The call as events while it runs: `stdout`, `stderr`, `file` then `artifact` for each
   * kept file (an A2A Artifact with the bytes inline: `artifactOf(ev)` decodes it), then
   * `exit` (the whole answer) or `error`. Never retried after it was sent.
   */
  async *callStream(command: string, a: CallArgs = {}, o: CallOptions = {}): AsyncGenerator<StreamEvent<Record<string, unknown>>> {
    const json = callBody("turn.callStream", command, a);
    check.opts("turn.callStream", "options", o);
    const r = await this.t.request({
      method: "POST", path: `${this.base}/calls`, json, events: true, idempotent: false,
      headers: { Accept: "text/event-stream" },
    }, o);
    if (r.body) yield* parseSse<Record<string, unknown>>(r.body);
  }

  /** A file a call returned. */
  async file(callId: string, name: string, o?: CallOptions): Promise<Download> {
    check.str("turn.file", "callId", callId);
    check.str("turn.file", "name", name);
    check.opts("turn.file", "options", o);
    return this.t.request({
      method: "GET", path: `${this.base}/files/${encodeURIComponent(callId)}/${encodeURIComponent(name)}`,
    }, o, async (r) => ({ ...downloadInfo(r), data: await bytesOf(r) }));
  }

  /** Ends the turn: its calls are stopped, its workspace deleted. */
  async end(o?: CallOptions): Promise<void> {
    check.opts("turn.end", "options", o);
    await this.t.json({ method: "DELETE", path: this.base }, o);
  }
}
