// Turns: scratch workspaces for confined tool calls (API.md "Turns").

import * as check from "./check.js";
import { type CallOptions, Transport } from "./http.js";
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
  async call(command: string, a: { stdin?: string; timeoutSeconds?: number } = {}, o?: CallOptions): Promise<CallResult> {
    check.str("turn.call", "command", command);
    check.fields("turn.call", "the call", a, ["stdin", "timeoutSeconds"]);
    check.optInt("turn.call", "timeoutSeconds", a.timeoutSeconds);
    check.opts("turn.call", "options", o);
    return this.t.json({
      method: "POST", path: `${this.base}/calls`, json: { command, ...a },
      extraWaitMs: (a.timeoutSeconds ?? 120) * 1000,
    }, o);
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
