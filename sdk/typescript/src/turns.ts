// Turns: scratch workspaces for confined tool calls (API.md "Turns").

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
    const info = await this.t.json<TurnInfo>({ method: "POST", path: "/v1/turns", json: body }, o);
    return new Turn(this.t, info);
  }

  /** A handle on a turn by id (no request made). */
  turn(id: string): Turn {
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
    return this.t.json({ method: "GET", path: this.base }, o);
  }

  /**
   * Runs `sh -c command` confined and waits for it. Never retried after a dropped
   * connection (a command is not idempotent). The idle timeout is raised to cover
   * `timeoutSeconds` (default 120).
   */
  async call(command: string, a: { stdin?: string; timeoutSeconds?: number } = {}, o?: CallOptions): Promise<CallResult> {
    return this.t.json({
      method: "POST", path: `${this.base}/calls`, json: { command, ...a },
      extraWaitMs: (a.timeoutSeconds ?? 120) * 1000,
    }, o);
  }

  /** A file a call returned. */
  async file(callId: string, name: string, o?: CallOptions): Promise<Download> {
    return this.t.request({
      method: "GET", path: `${this.base}/files/${encodeURIComponent(callId)}/${encodeURIComponent(name)}`,
    }, o, async (r) => ({ ...downloadInfo(r), data: await bytesOf(r) }));
  }

  /** Ends the turn: its calls are stopped, its workspace deleted. */
  async end(o?: CallOptions): Promise<void> {
    await this.t.json({ method: "DELETE", path: this.base }, o);
  }
}
