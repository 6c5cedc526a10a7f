// Agents: settings and mounts, the agent's files by the paths it sees, uploads, the file
// tools, runs, the events stream, prompts (API.md "Agents", "What the model sees"), and
// subject workspaces with their memory (API.md "Subject workspaces").

import { basename } from "node:path";
import { type BodyInput, fromFile } from "./body.js";
import { resumable } from "./download.js";
import { ValidationError } from "./errors.js";
import * as check from "./check.js";
import { type CallOptions, encodePath, Transport } from "./http.js";
import { parseSse, type StreamEvent } from "./sse.js";
import {
  bytesOf, checkLink, checkWrite, type Download, downloadInfo, type DownloadStream, type Link, type LinkOptions,
  type ReadOptions, Runtime, streamed, type WriteOptions, type WriteResult,
} from "./volumes.js";

const SETTINGS = ["mounts", "fileTools", "exclude", "defaultExclusions", "sandbox", "output", "relay", "remount"] as const;

function checkSettings(w: string, s: unknown): void {
  check.fields(w, "settings", s, SETTINGS);
  const m = (s as AgentSettings | undefined)?.mounts;
  if (m !== undefined) checkMounts(w, m);
}

function checkMounts(w: string, m: unknown): void {
  if (!Array.isArray(m)) throw new TypeError(`${w}: mounts must be an array of mounts, not ${typeof m}`);
  m.forEach((x, i) => {
    if (x && typeof x === "object" && "workspace" in x) check.fields(w, `mounts[${i}]`, x, ["workspace", "path"], false);
    else check.fields(w, `mounts[${i}]`, x, ["volumeId", "path", "mode", "subpath", "notify"], false);
  });
}

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
  /** Where attachments, tool outputs and scratch files go, as agent paths (null: nowhere writable). */
  places?: { uploads: string | null; toolOutputs: string | null; tmp: string | null };
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

/** What a run wrote and presented, as `GET /v1/agents/{id}/runs/{runId}` answers it. */
export interface RunRecord {
  runId: string;
  files: { path: string; version: number; size: number; contentType: string }[];
  presented: { path: string; caption: string; url: string }[];
}

export interface RunOptions extends CallOptions {
  files?: PromptFile[];
  /** The run's id: its uploads land in `uploads/<runId>/`; default a new UUID. */
  runId?: string;
  conversation?: string;
  format?: "anthropic" | "openai";
  /** The subject it is from (as `agent.forUser(user).run(...)`). */
  user?: string;
}

/**
 * A run started by `agent.run(text, {files})`: its id, the model message built for it
 * (`message`, the prompt's answer), and what it wrote (`files`) and presented
 * (`raw.presented`). The run's tool calls go through `run.tools` (grouped by its id);
 * after each, `files` and `raw` are read again, and `refresh()` reads them after tool
 * calls made elsewhere with the run's id (MCP `--run-id`, `X-Run-Id`).
 */
export class Run {
  readonly id: string;
  /** The model message: `{requestId, text, files, content}`. */
  readonly message: PromptResult;
  /** The run's file tools: every call carries the run's id, then the run is read again. */
  readonly tools: AgentTools;
  files: RunRecord["files"] = [];
  raw: RunRecord;

  constructor(private agent: AgentHandle, id: string, message: PromptResult) {
    this.id = id;
    this.message = message;
    this.raw = { runId: id, files: [], presented: [] };
    this.tools = new AgentTools(agent.transport, agent.base, id, () => this.refresh().then(() => undefined));
  }

  /** Reads the run's files and presented files again. */
  async refresh(o?: CallOptions): Promise<this> {
    this.raw = await this.agent.getRun(this.id, o);
    this.files = this.raw.files;
    return this;
  }
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
  /** The subject it is from (as `agent.forUser(user).prompt(...)`): its files are kept as the subject's attachments. */
  user?: string;
}

export interface PromptResult {
  requestId: string;
  text: string;
  files: { path: string; contentType: string; size: number; sha256: string; shown: boolean; reason?: string }[];
  content: Record<string, unknown>[];
  [more: string]: unknown;
}

export type ToolName = "read" | "write" | "edit" | "ls" | "glob" | "grep" | "present_file";

/** An agent handle that also carries the agent's record (`info`, and its fields). */
export type AgentWithInfo = AgentHandle & Agent & { info: Agent };

function withInfo(t: Transport, info: Agent): AgentWithInfo {
  const h = new AgentHandle(t, info.id) as AgentWithInfo;
  for (const [k, v] of Object.entries(info)) if (!(k in h)) (h as unknown as Record<string, unknown>)[k] = v;
  h.info = info;
  return h;
}

/** Agent-wide calls (no agent id yet). */
export class Agents {
  /** The volumes, under seed 001's names (`createVolume`, `volume(id)`, `volumes(ids)`). */
  readonly runtime: Runtime;

  constructor(private t: Transport) {
    this.runtime = new Runtime(t);
  }

  /**
   * Creates or updates an agent (201/200) and returns a handle on it (`run`, `files`,
   * `tools`...) that also has the agent's fields (`workspaceVolumeId`, `mounts`...).
   */
  async upsert(id: string, settings: AgentSettings = {}, o?: CallOptions): Promise<AgentWithInfo> {
    check.str("agents.upsert", "id", id);
    checkSettings("agents.upsert", settings);
    check.opts("agents.upsert", "options", o);
    return withInfo(this.t, await this.t.json<Agent>({ method: "PUT", path: `/v1/agents/${encodeURIComponent(id)}`, json: settings }, o));
  }

  async get(id: string, o?: CallOptions): Promise<AgentWithInfo> {
    check.str("agents.get", "id", id);
    check.opts("agents.get", "options", o);
    return withInfo(this.t, await this.t.json<Agent>({ method: "GET", path: `/v1/agents/${encodeURIComponent(id)}` }, o));
  }

  /** Deletes the agent and its own workspace volume (mounted volumes stay). */
  async delete(id: string, o?: CallOptions): Promise<void> {
    check.str("agents.delete", "id", id);
    check.opts("agents.delete", "options", o);
    await this.t.json({ method: "DELETE", path: `/v1/agents/${encodeURIComponent(id)}` }, o);
  }

  /** A handle on one agent (no request made); `{user}`: acting for that subject (`forUser`). */
  agent(id: string, o: { user?: string } = {}): AgentHandle {
    check.str("agents.agent", "id", id);
    check.opts("agents.agent", "options", o, ["user"]);
    return new AgentHandle(this.t, id, o.user);
  }
}

/** One agent's calls. */
export class AgentHandle {
  readonly base: string;
  /** The agent's files by the paths it sees (`/workspace/out/chart.png`). */
  readonly files: AgentFiles;
  /** The file tools, as the model calls them. */
  readonly tools: AgentTools;

  private t: Transport;

  /** `user`: the subject this handle acts for (`X-Subject` on each call, the prompt's `user`). */
  constructor(private root: Transport, readonly id: string, readonly user?: string) {
    if (user !== undefined) subjectId("agent", user);
    this.t = user === undefined ? root : root.forSubject(user);
    this.base = `/v1/agents/${encodeURIComponent(id)}`;
    this.files = new AgentFiles(this.t, this.base);
    this.tools = new AgentTools(this.t, this.base);
  }

  /**
   * This agent acting for subject `user` (no request): its files, uploads, tool calls,
   * runs, links, prompts and `resolve` are that subject's, with `/user` and
   * `/attachments` among the mounts (API.md "Subjects").
   */
  forUser(user: string): AgentHandle {
    return new AgentHandle(this.root, this.id, user);
  }

  /**
   * `input` (a tool's arguments) with every `{"$file": path}` in it replaced by that file:
   * `{path, name, contentType, size, sha256, data}` (base64, 16 MiB in all), or with
   * `{as: "url"}` a signed link instead of `data`.
   */
  async resolve(input: unknown, o: CallOptions & { as?: "base64" | "url" } = {}): Promise<unknown> {
    check.opts("agent.resolve", "options", o, ["as"]);
    if (o.as !== undefined && o.as !== "base64" && o.as !== "url") {
      throw new TypeError(`agent.resolve: as must be "base64" or "url", not ${JSON.stringify(o.as)}`);
    }
    const { as, ...call } = o;
    const r = await this.t.json<{ input: unknown }>({ method: "POST", path: `${this.base}/resolve`, json: { input, as } }, call);
    return r.input;
  }

  /** The client's transport (for the objects a handle makes). */
  get transport(): Transport {
    return this.t;
  }

  async get(o?: CallOptions): Promise<Agent> {
    check.opts("agent.get", "options", o);
    return this.t.json({ method: "GET", path: this.base }, o);
  }

  async upsert(settings: AgentSettings = {}, o?: CallOptions): Promise<Agent> {
    checkSettings("agent.upsert", settings);
    check.opts("agent.upsert", "options", o);
    return this.t.json({ method: "PUT", path: this.base, json: settings }, o);
  }

  /** Replaces the mounts (applies from the agent's next call). */
  async setMounts(mounts: Mount[], o?: CallOptions): Promise<Agent> {
    checkMounts("agent.setMounts", mounts);
    check.opts("agent.setMounts", "options", o);
    return this.t.json({ method: "PUT", path: `${this.base}/mounts`, json: mounts }, o);
  }

  /**
   * Starts a run (seed 001): every file is uploaded first, streamed, once, under
   * `uploads/<run id>/`, then the model message is built through `prompt` (the same id,
   * so a retried run uploads nothing twice). The Run's `files` and `raw.presented` fill
   * as the run's tool calls (`run.tools`, or any call with its id) write and present.
   */
  async run(text: string, o: RunOptions = {}): Promise<Run> {
    check.str("agent.run", "text", text);
    check.opts("agent.run", "options", o, ["files", "runId", "conversation", "format", "user"]);
    const { runId, user, ...rest } = o;
    if (user !== undefined && user !== this.user) return this.forUser(user).run(text, { runId, ...rest });
    check.optStr("agent.run", "runId", runId);
    const id = runId ?? Transport.newKey();
    const message = await this.promptChecked("agent.run", text, { ...rest, requestId: id });
    return new Run(this, id, message);
  }

  /** What a run wrote and presented (`GET .../runs/{runId}`). */
  async getRun(runId: string, o?: CallOptions): Promise<RunRecord> {
    check.str("agent.getRun", "runId", runId);
    check.opts("agent.getRun", "options", o);
    return this.t.json({ method: "GET", path: `${this.base}/runs/${encodeURIComponent(runId)}` }, o);
  }

  /**
   * The agent's events (`files_changed`, `file_presented`) as they happen, for as long as
   * the loop runs; `break` (or `signal`) closes the stream.
   */
  async *events(o: CallOptions = {}): AsyncGenerator<StreamEvent<Record<string, unknown>>> {
    check.opts("agent.events", "options", o);
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
    check.str("agent.prompt", "text", text);
    check.opts("agent.prompt", "options", o, ["files", "requestId", "conversation", "format", "user"]);
    const { user, ...rest } = o;
    if (user !== undefined && user !== this.user) return this.forUser(user).prompt(text, rest);
    return this.promptChecked("agent.prompt", text, rest);
  }

  private async promptChecked(w: string, text: string, o: PromptOptions): Promise<PromptResult> {
    check.optStr(w, "requestId", o.requestId);
    check.optStr(w, "conversation", o.conversation);
    if (o.format !== undefined && o.format !== "anthropic" && o.format !== "openai") {
      throw new TypeError(`${w}: format must be "anthropic" or "openai", not ${JSON.stringify(o.format)}`);
    }
    if (o.files !== undefined && !Array.isArray(o.files)) {
      throw new TypeError(`${w}: files must be an array of files, not ${typeof o.files}`);
    }
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
      if (isAgentPath(f)) {
        check.fields(w, `files[${i}]`, f, ["path"], false);
        check.str(w, `files[${i}].path`, f.path);
        return { path: f.path };
      }
      const up = promptUpload(w, f, i + 1);
      while (used.has(up.name)) up.name = `${i + 1}-${up.name}`;
      used.add(up.name);
      return up;
    });
    const refs: { path: string }[] = [];
    for (const p of plan) {
      if ("path" in p) { refs.push(p); continue; }
      const { timeoutMs, maxRetries, signal, headers } = o;
      const done = await this.upload(requestId, p.name, p.data, { timeoutMs, maxRetries, signal, headers, contentType: p.contentType });
      refs.push({ path: done.path });
    }
    return this.t.json({
      method: "POST", path: `${this.base}/prompt`, idempotent: true,
      json: { text, requestId, files: refs, conversation: o.conversation, format: o.format, user: this.user },
    }, { timeoutMs: o.timeoutMs, maxRetries: o.maxRetries, signal: o.signal, headers: o.headers });
  }

  /** The whole model request of a conversation, rebuilt from its references. */
  async conversationRequest(conversation: string, o: CallOptions & { format?: "anthropic" | "openai" } = {}): Promise<Record<string, unknown>> {
    check.str("agent.conversationRequest", "conversation", conversation);
    check.opts("agent.conversationRequest", "options", o, ["format"]);
    return this.t.json({
      method: "GET", path: `${this.base}/conversations/${encodeURIComponent(conversation)}/request`, query: { format: o.format },
    }, o);
  }

  /**
   * An upload: saved at `uploads/<requestId>/<name>` of the workspace; a retry never
   * writes twice (`replayed: true`).
   */
  async upload(requestId: string, name: string, data: BodyInput, o: { contentType?: string } & CallOptions = {}): Promise<WriteResult> {
    return putOnce(this.t, "agent.upload", `${this.base}/uploads`, ["requestId", requestId], name, data, o);
  }

  /** A subject's workspace (one volume per agent and subject). */
  subject(id: string): Subject {
    check.str("agent.subject", "id", id);
    return new Subject(this.t, `${this.base}/users/${encodeURIComponent(id)}`);
  }

  /** Writes a skill (`name` without `.md`), copied to each subject's `skills/` at session start. */
  async putSkill(name: string, data: BodyInput, o?: CallOptions): Promise<{ name: string; size: number; sha256: string; version: number }> {
    check.str("agent.putSkill", "name", name);
    check.body("agent.putSkill", "data", data);
    check.opts("agent.putSkill", "options", o);
    return this.t.json({ method: "PUT", path: `${this.base}/skills/${encodeURIComponent(name)}.md`, body: data }, o);
  }
}

/** `user` if it is a subject id (1..128 of A-Z a-z 0-9 . _ @ -, not . or ..), else a TypeError naming it. */
function subjectId(w: string, user: unknown): string {
  check.str(w, "user", user);
  if (!/^[A-Za-z0-9._@-]{1,128}$/.test(user) || user === "." || user === "..") {
    throw new TypeError(`${w}: user ${JSON.stringify(user.slice(0, 140))} is not a subject id (1..128 of A-Z a-z 0-9 . _ @ -, not . or ..)`);
  }
  return user;
}

/**
 * A PUT of a file the server keeps once per id and name (an upload, a tool output), at
 * `<dir>/<id>/<name>`, streamed; a retry writes nothing (`replayed: true`).
 */
function putOnce(t: Transport, w: string, dir: string, [idArg, id]: [string, unknown], name: unknown,
  data: BodyInput, o: { contentType?: string } & CallOptions): Promise<WriteResult> {
  check.str(w, idArg, id);
  check.str(w, "name", name);
  check.body(w, "data", data);
  check.opts(w, "options", o, ["contentType"]);
  check.optStr(w, "contentType", o.contentType);
  return t.json({
    method: "PUT", path: `${dir}/${encodeURIComponent(id)}/${encodeURIComponent(name)}`,
    body: data, headers: { "Content-Type": o.contentType },
  }, o);
}

/** At most this many files a prompt (API.md). */
const MAX_PROMPT_FILES = 20;

function isAgentPath(f: PromptFile): f is { path: string } {
  return typeof f === "object" && f !== null && !(f instanceof Uint8Array) && !(f instanceof Blob) && "path" in f && !("data" in f);
}

/**
 * The name, body and type a prompt file is uploaded with. A local path is opened (its
 * size read) now, so a missing file throws before anything is uploaded.
 */
function promptUpload(w: string, f: Exclude<PromptFile, { path: string }>, n: number): { name: string; data: BodyInput; contentType?: string } {
  if (typeof f === "string" && f !== "") return { name: basename(f), data: fromFile(f) };
  if (f instanceof Uint8Array) return { name: `file-${n}`, data: f };
  if (f instanceof ArrayBuffer) return { name: `file-${n}`, data: new Uint8Array(f) };
  if (f instanceof Blob) {
    const name = (f as File).name || `file-${n}`;
    return { name, data: f, contentType: f.type || undefined };
  }
  if (f && typeof f === "object" && "data" in f) {
    check.fields(w, `files[${n - 1}]`, f, ["name", "data", "contentType"], false);
    check.str(w, `files[${n - 1}].name`, f.name);
    check.body(w, `files[${n - 1}].data`, f.data);
    check.optStr(w, `files[${n - 1}].contentType`, f.contentType);
    return { name: f.name, data: f.data, contentType: f.contentType };
  }
  throw new TypeError(`${w}: files[${n - 1}] must be bytes, a Blob or File, {name, data, contentType?}, a local path or {path}, not ${f === null ? "null" : typeof f}`);
}

/** An agent's files by agent path. */
export class AgentFiles {
  constructor(private t: Transport, private base: string) {}

  private url(path: string) {
    return `${this.base}/files/${encodePath(path)}`;
  }

  /** The file whole: `{data, contentType, version}`. */
  async download(path: string, o: Omit<ReadOptions, "snapshot"> = {}): Promise<Download> {
    check.str("agent.files.download", "path", path);
    check.opts("agent.files.download", "options", o, ["range"]);
    const range = Array.isArray(o.range) ? `bytes=${o.range[0]}-${o.range[1] ?? ""}` : o.range;
    return this.t.request({ method: "GET", path: this.url(path), headers: { Range: range } }, o,
      async (a) => ({ ...downloadInfo(a), data: await bytesOf(a) }));
  }

  /** The file as a stream, resumed after a dropped connection (as a volume download). */
  async stream(path: string, o: CallOptions = {}): Promise<DownloadStream> {
    check.str("agent.files.stream", "path", path);
    check.opts("agent.files.stream", "options", o);
    const req = { method: "GET" as const, path: this.url(path) };
    const a = await this.t.request(req, o);
    return streamed(downloadInfo(a), resumable(this.t, req, o, a));
  }

  /** Writes a file by agent path, streamed, with the agent's own access. */
  async upload(path: string, data: BodyInput, o: WriteOptions = {}): Promise<WriteResult> {
    checkWrite("agent.files.upload", path, data, o);
    return this.t.json({ method: "PUT", path: this.url(path), body: data, query: { version: o.version }, headers: { "Content-Type": o.contentType } }, o);
  }

  async remove(path: string, o?: CallOptions): Promise<{ path: string; seq: number }> {
    check.str("agent.files.remove", "path", path);
    check.opts("agent.files.remove", "options", o);
    return this.t.json({ method: "DELETE", path: this.url(path) }, o);
  }

  /**
   * The immediate children of a folder: `list("/workspace/out")` or
   * `list({path: "/workspace/out"})` (default: the server's, the first mount).
   */
  async list(path?: string | { path?: string }, o?: CallOptions): Promise<Listing> {
    if (path !== undefined && typeof path === "object" && path !== null && !Array.isArray(path)) {
      check.opts("agent.files.list", "the query", path, ["path"]);
      const { path: p, ...call } = path as { path?: string } & CallOptions;
      check.optStr("agent.files.list", "path", p);
      if (o !== undefined) throw new TypeError("agent.files.list: give the options in the first object, not as a second argument");
      return this.t.json({ method: "GET", path: `${this.base}/files`, query: { path: p } }, call);
    }
    check.optStr("agent.files.list", "path", path);
    check.opts("agent.files.list", "options", o);
    return this.t.json({ method: "GET", path: `${this.base}/files`, query: { path } }, o);
  }

  /**
   * A tool's file output, streamed, saved at `tool-outputs/<callId>/<name>` of the
   * workspace (a subject's: `/user/tool-outputs/...`); a retry never writes twice
   * (`replayed: true`).
   */
  async toolOutput(callId: string, name: string, data: BodyInput, o: { contentType?: string } & CallOptions = {}): Promise<WriteResult> {
    return putOnce(this.t, "agent.files.toolOutput", `${this.base}/tool-outputs`, ["callId", callId], name, data, o);
  }

  /** A signed link to a file by agent path. */
  async link(path: string, o: LinkOptions = {}): Promise<Link> {
    checkLink("agent.files.link", path, o);
    const { method, expiresIn, maxBytes, contentType } = o;
    return this.t.json({
      method: "POST", path: `${this.base}/links`, json: { path, method, expiresIn, maxBytes, contentType },
      headers: { "Idempotency-Key": o.idempotencyKey },
    }, o);
  }
}

/** The file tools; `runId` groups calls into a run (`X-Run-Id`). */
export class AgentTools {
  constructor(private t: Transport, private base: string, private runId?: string, private after?: () => Promise<void>) {}

  /** Runs one tool by name with its arguments, as the model would. */
  async call(tool: ToolName | string, args: Record<string, unknown>, o: CallOptions & { runId?: string } = {}): Promise<ToolResult> {
    const w = `agent.tools.${tool}`;
    check.str("agent.tools.call", "tool", tool);
    check.fields(w, "arguments", args, Object.keys(args ?? {}), false);
    check.opts(w, "options", o, ["runId"]);
    check.optStr(w, "runId", o.runId);
    const { runId = this.runId, ...call } = o;
    const r = await this.t.json<ToolResult>({
      method: "POST", path: `${this.base}/tools/${encodeURIComponent(tool)}`, json: args,
      headers: { "X-Run-Id": runId },
    }, call);
    if (this.after) await this.after();
    return r;
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
    check.str("subject.write", "path", path);
    if (typeof content !== "string" && !(content instanceof Uint8Array)) throw new TypeError("subject.write: content must be text or bytes (Uint8Array)");
    check.opts("subject.write", "options", o, ["createParents"]);
    check.optBool("subject.write", "createParents", o.createParents);
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
    check.str("subject.read", "path", path);
    check.opts("subject.read", "options", o);
    return this.t.request({ method: "GET", path: `${this.base}/files/content`, query: { path } }, o,
      async (a) => ({ ...downloadInfo(a), data: await bytesOf(a) }));
  }

  async list(path = "", o?: CallOptions): Promise<Listing> {
    if (typeof path !== "string") throw new TypeError("subject.list: path must be a string");
    check.opts("subject.list", "options", o);
    return this.t.json({ method: "GET", path: `${this.base}/files`, query: { path } }, o);
  }

  async move(from: string, to: string, o: CallOptions & { overwrite?: boolean } = {}): Promise<{ from: string; to: string; seq: number; moved: number }> {
    check.str("subject.move", "from", from);
    check.str("subject.move", "to", to);
    check.opts("subject.move", "options", o, ["overwrite"]);
    return this.t.json({ method: "POST", path: `${this.base}/files/move`, json: { from, to, overwrite: o.overwrite } }, o);
  }

  /** Removes a file, or a folder and all under it, as one change. */
  async remove(path: string, o?: CallOptions): Promise<{ path: string; seq: number; removed: number }> {
    check.str("subject.remove", "path", path);
    check.opts("subject.remove", "options", o);
    return this.t.json({ method: "DELETE", path: `${this.base}/files`, query: { path } }, o);
  }

  /** `{volumeId, used, capacity, ceiling, files}`; `volumeId` is null while the subject has no workspace yet (a read never makes one). */
  async volume(o?: CallOptions): Promise<{ volumeId: string | null; used: number; capacity: number; ceiling: number; files: number }> {
    check.opts("subject.volume", "options", o);
    return this.t.json({ method: "GET", path: `${this.base}/volume` }, o);
  }

  /** Reads `USER.md` or `MEMORY.md` of `memories/`, as text. */
  async readMemory(name: "USER.md" | "MEMORY.md", o?: CallOptions): Promise<string> {
    memoryName("subject.readMemory", name);
    check.opts("subject.readMemory", "options", o);
    return this.t.request({ method: "GET", path: `${this.base}/memory/${name}` }, o,
      async (a) => new TextDecoder().decode(await bytesOf(a)));
  }

  /** Writes `USER.md` or `MEMORY.md` (the only way to write `memories/`). */
  async writeMemory(name: "USER.md" | "MEMORY.md", data: BodyInput, o?: CallOptions): Promise<WriteResult> {
    memoryName("subject.writeMemory", name);
    check.body("subject.writeMemory", "data", data);
    check.opts("subject.writeMemory", "options", o);
    return this.t.json({ method: "PUT", path: `${this.base}/memory/${name}`, body: data }, o);
  }

  /** Starts a sandbox session: `skills/` becomes the agent's skills. */
  async startSession(o?: CallOptions): Promise<{ volumeId: string; skills: string[] }> {
    check.opts("subject.startSession", "options", o);
    return this.t.json({ method: "POST", path: `${this.base}/sessions`, json: {} }, o);
  }
}

function memoryName(w: string, name: unknown): void {
  if (name !== "USER.md" && name !== "MEMORY.md") throw new TypeError(`${w}: name must be "USER.md" or "MEMORY.md", not ${JSON.stringify(name)}`);
}
