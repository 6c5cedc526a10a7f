// Agents: settings and mounts, the agent's files by the paths it sees, uploads, the file
// tools, runs, the events stream, prompts (API.md "Agents", "What the model sees"), and
// subject workspaces with their memory (API.md "Subject workspaces").

import { basename } from "node:path";
import { type BodyInput, fromFile } from "./body.js";
import { resumable } from "./download.js";
import { ValidationError } from "./errors.js";
import { type CallOptions, encodePath, Transport } from "./http.js";
import { parseSse, type StreamEvent } from "./sse.js";
import {
  bytesOf, type Download, downloadInfo, type DownloadStream, type Link, type LinkOptions,
  type ReadOptions, type WriteOptions, type WriteResult,
} from "./volumes.js";

export type Mount =
  | { volumeId: string; path: string; mode: "ro" | "rw"; subpath?: string; notify?: boolean }
  | { workspace: true; path?: string }
  | { workspace: false };

export interface AgentSettings {
  mounts?: Mount[];
  fileTools?: boolean;
  exclude?: string[];
  defaultExclusions?: boolean;
  sandbox?: Record<string, unknown>;
  output?: { files: string[] };
  relay?: { capability: boolean; defaultMode?: "standard" | "supervised" | "readonly" };
  remount?: boolean;
}

export interface Agent extends Omit<AgentSettings, "remount"> {
  id: string;
  workspaceVolumeId?: string;
  createdAt: string;
  [more: string]: unknown;
}

export interface DirEntry {
  name: string;
  path: string;
  type: "file" | "dir";
  size?: number;
  contentType?: string;
}

export interface Listing {
  path: string;
  entries: DirEntry[];
  truncated?: boolean;
}

/** The answer of a file tool: `ok`, the model's `output`, and structured fields. */
export interface ToolResult {
  ok: boolean;
  output: string;
  [field: string]: unknown;
}

export interface Run {
  runId: string;
  files: { path: string; version: number; size: number; contentType: string }[];
  presented: { path: string; caption: string; url: string }[];
}

/**
 * A file sent with a prompt: bytes, a Blob or File, `{name, data, contentType?}`, a local
 * file's path (a string), or `{path}`: a file already in the agent's mounts.
 */
export type PromptFile =
  | Uint8Array
  | Blob
  | string
  | { name: string; data: BodyInput; contentType?: string }
  | { path: string };

export interface PromptOptions extends CallOptions {
  files?: PromptFile[];
  /** The prompt's id: the uploads land in `uploads/<requestId>/`; default a new UUID. */
  requestId?: string;
  conversation?: string;
  format?: "anthropic" | "openai";
}

export interface PromptResult {
  requestId: string;
  text: string;
  files: { path: string; contentType: string; size: number; sha256: string; shown: boolean; reason?: string }[];
  content: Record<string, unknown>[];
  [more: string]: unknown;
}

export type ToolName = "read" | "write" | "edit" | "ls" | "glob" | "grep" | "present_file";

/** Agent-wide calls (no agent id yet). */
export class Agents {
  constructor(private t: Transport) {}

  /** Creates or updates an agent (201/200). */
  async upsert(id: string, settings: AgentSettings = {}, o?: CallOptions): Promise<Agent> {
    return this.t.json({ method: "PUT", path: `/v1/agents/${encodeURIComponent(id)}`, json: settings }, o);
  }

  async get(id: string, o?: CallOptions): Promise<Agent> {
    return this.t.json({ method: "GET", path: `/v1/agents/${encodeURIComponent(id)}` }, o);
  }

  /** Deletes the agent and its own workspace volume (mounted volumes stay). */
  async delete(id: string, o?: CallOptions): Promise<void> {
    await this.t.json({ method: "DELETE", path: `/v1/agents/${encodeURIComponent(id)}` }, o);
  }

  /** A handle on one agent (no request made). */
  agent(id: string): AgentHandle {
    return new AgentHandle(this.t, id);
  }
}

/** One agent's calls. */
export class AgentHandle {
  readonly base: string;
  /** The agent's files by the paths it sees (`/workspace/out/chart.png`). */
  readonly files: AgentFiles;
  /** The file tools, as the model calls them. */
  readonly tools: AgentTools;

  constructor(private t: Transport, readonly id: string) {
    this.base = `/v1/agents/${encodeURIComponent(id)}`;
    this.files = new AgentFiles(t, this.base);
    this.tools = new AgentTools(t, this.base);
  }

  async get(o?: CallOptions): Promise<Agent> {
    return this.t.json({ method: "GET", path: this.base }, o);
  }

  async upsert(settings: AgentSettings = {}, o?: CallOptions): Promise<Agent> {
    return this.t.json({ method: "PUT", path: this.base, json: settings }, o);
  }

  /** Replaces the mounts (applies from the agent's next call). */
  async setMounts(mounts: Mount[], o?: CallOptions): Promise<Agent> {
    return this.t.json({ method: "PUT", path: `${this.base}/mounts`, json: mounts }, o);
  }

  /** The files a run wrote and presented. */
  async run(runId: string, o?: CallOptions): Promise<Run> {
    return this.t.json({ method: "GET", path: `${this.base}/runs/${encodeURIComponent(runId)}` }, o);
  }

  /**
   * The agent's events (`files_changed`, `file_presented`) as they happen, for as long as
   * the loop runs; `break` (or `signal`) closes the stream.
   */
  async *events(o: CallOptions = {}): AsyncGenerator<StreamEvent<Record<string, unknown>>> {
    const a = await this.t.request({ method: "GET", path: `${this.base}/events`, events: true }, o);
    if (a.body) yield* parseSse<Record<string, unknown>>(a.body);
  }

  /**
   * A user message with its files, as the model should see it. Every file that is not a
   * `{path}` is first uploaded, streamed, to `uploads/<requestId>/<name>`; a retry with the
   * same `requestId` uploads nothing twice (the server replays) and the prompt itself is
   * idempotent by that id.
   */
  async prompt(text: string, o: PromptOptions = {}): Promise<PromptResult> {
    const requestId = o.requestId ?? Transport.newKey();
    const files = o.files ?? [];
    if (files.length > MAX_PROMPT_FILES) {
      throw new ValidationError(400, {
        type: "validation_error",
        message: `prompt has ${files.length} files; the limit is ${MAX_PROMPT_FILES} (refused by the SDK, nothing uploaded)`,
      });
    }
    // Every file is looked at (a local path opened, names made unique) before any upload,
    // so a bad entry uploads nothing.
    const used = new Set<string>();
    const plan = files.map((f, i) => {
      if (isAgentPath(f)) return { path: f.path };
      const up = promptUpload(f, i + 1);
      while (used.has(up.name)) up.name = `${i + 1}-${up.name}`;
      used.add(up.name);
      return up;
    });
    const refs: { path: string }[] = [];
    for (const p of plan) {
      if ("path" in p) { refs.push(p); continue; }
      const done = await this.upload(requestId, p.name, p.data, { ...o, contentType: p.contentType });
      refs.push({ path: done.path });
    }
    return this.t.json({
      method: "POST", path: `${this.base}/prompt`, idempotent: true,
      json: { text, requestId, files: refs, conversation: o.conversation, format: o.format },
    }, o);
  }

  /** The whole model request of a conversation, rebuilt from its references. */
  async conversationRequest(conversation: string, o: CallOptions & { format?: "anthropic" | "openai" } = {}): Promise<Record<string, unknown>> {
    return this.t.json({
      method: "GET", path: `${this.base}/conversations/${encodeURIComponent(conversation)}/request`, query: { format: o.format },
    }, o);
  }

  /**
   * An upload: saved at `uploads/<requestId>/<name>` of the workspace; a retry never
   * writes twice (`replayed: true`).
   */
  async upload(requestId: string, name: string, data: BodyInput, o: WriteOptions = {}): Promise<WriteResult> {
    return this.t.json({
      method: "PUT", path: `${this.base}/uploads/${encodeURIComponent(requestId)}/${encodeURIComponent(name)}`,
      body: data, headers: { "Content-Type": o.contentType },
    }, o);
  }

  /** A subject's workspace (one volume per agent and subject). */
  subject(id: string): Subject {
    return new Subject(this.t, `${this.base}/users/${encodeURIComponent(id)}`);
  }

  /** Writes a skill (`name` without `.md`), copied to each subject's `skills/` at session start. */
  async putSkill(name: string, data: BodyInput, o?: CallOptions): Promise<{ name: string; size: number; sha256: string; version: number }> {
    return this.t.json({ method: "PUT", path: `${this.base}/skills/${encodeURIComponent(name)}.md`, body: data }, o);
  }
}

/** At most this many files a prompt (API.md). */
const MAX_PROMPT_FILES = 20;

function isAgentPath(f: PromptFile): f is { path: string } {
  return typeof f === "object" && !(f instanceof Uint8Array) && !(f instanceof Blob) && !("data" in f);
}

/**
 * The name, body and type a prompt file is uploaded with. A local path is opened (its
 * size read) now, so a missing file throws before anything is uploaded.
 */
function promptUpload(f: Exclude<PromptFile, { path: string }>, n: number): { name: string; data: BodyInput; contentType?: string } {
  if (typeof f === "string") return { name: basename(f), data: fromFile(f) };
  if (f instanceof Uint8Array) return { name: `file-${n}`, data: f };
  if (f instanceof Blob) {
    const name = (f as File).name || `file-${n}`;
    return { name, data: f, contentType: f.type || undefined };
  }
  return { name: f.name, data: f.data, contentType: f.contentType };
}

/** An agent's files by agent path. */
export class AgentFiles {
  constructor(private t: Transport, private base: string) {}

  private url(path: string) {
    return `${this.base}/files/${encodePath(path)}`;
  }

  /** The file whole: `{data, contentType, version}`. */
  async download(path: string, o: ReadOptions = {}): Promise<Download> {
    const range = Array.isArray(o.range) ? `bytes=${o.range[0]}-${o.range[1] ?? ""}` : o.range;
    return this.t.request({ method: "GET", path: this.url(path), headers: { Range: range } }, o,
      async (a) => ({ ...downloadInfo(a), data: await bytesOf(a) }));
  }

  /** The file as a stream, resumed after a dropped connection (as a volume download). */
  async stream(path: string, o: CallOptions = {}): Promise<DownloadStream> {
    const req = { method: "GET" as const, path: this.url(path) };
    const a = await this.t.request(req, o);
    return { ...downloadInfo(a), body: resumable(this.t, req, o, a) };
  }

  /** Writes a file by agent path, streamed, with the agent's own access. */
  async upload(path: string, data: BodyInput, o: WriteOptions = {}): Promise<WriteResult> {
    return this.t.json({ method: "PUT", path: this.url(path), body: data, query: { version: o.version }, headers: { "Content-Type": o.contentType } }, o);
  }

  async remove(path: string, o?: CallOptions): Promise<{ path: string; seq: number }> {
    return this.t.json({ method: "DELETE", path: this.url(path) }, o);
  }

  /** The immediate children of a folder (default: the server's, the first mount). */
  async list(path?: string, o?: CallOptions): Promise<Listing> {
    return this.t.json({ method: "GET", path: `${this.base}/files`, query: { path } }, o);
  }

  /** A signed link to a file by agent path. */
  async link(path: string, o: LinkOptions = {}): Promise<Link> {
    const { method, expiresIn, maxBytes, contentType } = o;
    return this.t.json({
      method: "POST", path: `${this.base}/links`, json: { path, method, expiresIn, maxBytes, contentType },
      headers: { "Idempotency-Key": o.idempotencyKey },
    }, o);
  }
}

/** The file tools; `runId` groups calls into a run (`X-Run-Id`). */
export class AgentTools {
  constructor(private t: Transport, private base: string) {}

  /** Runs one tool by name with its arguments, as the model would. */
  async call(tool: ToolName | string, args: Record<string, unknown>, o: CallOptions & { runId?: string } = {}): Promise<ToolResult> {
    return this.t.json({
      method: "POST", path: `${this.base}/tools/${encodeURIComponent(tool)}`, json: args,
      headers: { "X-Run-Id": o.runId },
    }, o);
  }

  read(a: { path: string; offset?: number; limit?: number; encoding?: "base64" }, o?: CallOptions & { runId?: string }) { return this.call("read", a, o); }
  write(a: { path: string; content: string }, o?: CallOptions & { runId?: string }) { return this.call("write", a, o); }
  edit(a: { path: string; oldString: string; newString: string; replaceAll?: boolean }, o?: CallOptions & { runId?: string }) { return this.call("edit", a, o); }
  ls(a: { path?: string } = {}, o?: CallOptions & { runId?: string }) { return this.call("ls", a, o); }
  glob(a: { pattern: string; path?: string }, o?: CallOptions & { runId?: string }) { return this.call("glob", a, o); }
  grep(a: { pattern: string; path?: string; glob?: string; ignoreCase?: boolean; context?: number; outputMode?: "content" | "files" | "count"; limit?: number }, o?: CallOptions & { runId?: string }) { return this.call("grep", a, o); }
  presentFile(a: { path: string; caption?: string }, o?: CallOptions & { runId?: string }) { return this.call("present_file", a, o); }
}

/** One subject's workspace under an agent, and its memory files. */
export class Subject {
  constructor(private t: Transport, private base: string) {}

  /** Writes one file from text (or base64 with `encoding`). */
  async write(path: string, content: string | Uint8Array, o: CallOptions & { createParents?: boolean } = {}): Promise<WriteResult> {
    const bin = content instanceof Uint8Array;
    return this.t.json({
      method: "PUT", path: `${this.base}/files/content`,
      json: {
        path, content: bin ? Buffer.from(content).toString("base64") : content,
        encoding: bin ? "base64" : "utf-8", createParents: o.createParents,
      },
    }, o);
  }

  /** The bytes of one file. */
  async read(path: string, o?: CallOptions): Promise<Download> {
    return this.t.request({ method: "GET", path: `${this.base}/files/content`, query: { path } }, o,
      async (a) => ({ ...downloadInfo(a), data: await bytesOf(a) }));
  }

  async list(path = "", o?: CallOptions): Promise<Listing> {
    return this.t.json({ method: "GET", path: `${this.base}/files`, query: { path } }, o);
  }

  async move(from: string, to: string, o: CallOptions & { overwrite?: boolean } = {}): Promise<{ from: string; to: string; seq: number; moved: number }> {
    return this.t.json({ method: "POST", path: `${this.base}/files/move`, json: { from, to, overwrite: o.overwrite } }, o);
  }

  /** Removes a file, or a folder and all under it, as one change. */
  async remove(path: string, o?: CallOptions): Promise<{ path: string; seq: number; removed: number }> {
    return this.t.json({ method: "DELETE", path: `${this.base}/files`, query: { path } }, o);
  }

  /** `{volumeId, used, capacity, ceiling, files}`; `volumeId` is null while the subject has no workspace yet (a read never makes one). */
  async volume(o?: CallOptions): Promise<{ volumeId: string | null; used: number; capacity: number; ceiling: number; files: number }> {
    return this.t.json({ method: "GET", path: `${this.base}/volume` }, o);
  }

  /** Reads `USER.md` or `MEMORY.md` of `memories/`, as text. */
  async readMemory(name: "USER.md" | "MEMORY.md", o?: CallOptions): Promise<string> {
    return this.t.request({ method: "GET", path: `${this.base}/memory/${name}` }, o,
      async (a) => new TextDecoder().decode(await bytesOf(a)));
  }

  /** Writes `USER.md` or `MEMORY.md` (the only way to write `memories/`). */
  async writeMemory(name: "USER.md" | "MEMORY.md", data: BodyInput, o?: CallOptions): Promise<WriteResult> {
    return this.t.json({ method: "PUT", path: `${this.base}/memory/${name}`, body: data }, o);
  }

  /** Starts a sandbox session: `skills/` becomes the agent's skills. */
  async startSession(o?: CallOptions): Promise<{ volumeId: string; skills: string[] }> {
    return this.t.json({ method: "POST", path: `${this.base}/sessions`, json: {} }, o);
  }
}
