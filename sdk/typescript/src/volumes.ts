// Volumes: create, list, batch seq reads, and one volume's files, changes, snapshots,
// forks, restore, read-all, archive and signed links (API.md "Volumes").

import { type BodyInput } from "./body.js";
import { resumable } from "./download.js";
import { GoneError, type MergeConflict } from "./errors.js";
import { type Answer, type CallOptions, encodePath, type Req, Transport } from "./http.js";
import * as check from "./check.js";
import { saveTo } from "./save.js";

export interface Volume {
  id: string;
  name?: string;
  seq: number;
  files: number;
  bytes: number;
  capacity?: number;
  ceiling?: number;
  createdAt?: string;
}

export interface WriteResult {
  path: string;
  version: number;
  size: number;
  contentType: string;
  sha256: string;
  seq?: number;
  replayed?: boolean;
}

export interface FileInfo {
  path: string;
  size: number;
  version: number;
  contentType: string;
  sha256: string;
  updatedAt: string;
}

/**
 * Who made a change (docs/api.md "Who"): the key, and as far as the way it came says, the
 * agent, the subject, the run, the turn call, the tool. `via`: `http`, `tool`, `call`,
 * `link`, `console`, `mount`, `s3`, `merge`, `restore`, `revert`.
 */
export interface ChangeBy {
  keyId?: string;
  agent?: string;
  user?: string;
  runId?: string;
  callId?: string;
  relaySession?: string;
  tool?: string;
  via: string;
}

export interface Change {
  seq: number;
  op: "write" | "remove";
  path: string;
  version: number;
  size: number;
  sha256: string;
  /** When (RFC 3339). */
  at?: string;
  /** Who; null for changes made before this was recorded. */
  by?: ChangeBy | null;
}

/** The changes feed's query: `prefix`, the `by` filters (all given must hold), `wait`. */
export interface ChangesQuery {
  prefix?: string;
  runId?: string;
  callId?: string;
  agent?: string;
  keyId?: string;
  /** Long-poll up to this many seconds (0 to 60). */
  wait?: number;
}

const CHANGES = ["prefix", "runId", "callId", "agent", "keyId", "wait"] as const;

/** How a merge or a revert settles one conflicting path: text and data (base64) give the bytes. */
export type Resolution = "ours" | "theirs" | "base" | { text: string } | { data: string };

export interface MergeOptions {
  /** Merge `from` as this snapshot of it was, not as it is now. */
  fromSnapshot?: string;
  /** A seq of `from`: what both held (default: the last merge from it, else the fork point). */
  base?: number;
  /** Settles every conflict `resolutions` leaves. */
  strategy?: "ours" | "theirs";
  resolutions?: Record<string, Resolution>;
  /** Answer what would happen; change nothing. */
  dryRun?: boolean;
  /** Only if this volume is still at this seq (else PreconditionFailedError). */
  ifSeq?: number;
}

export interface MergeResult {
  seq: number;
  merged: { path: string; from: "theirs" | "merged" | "ours" }[];
  conflicts: MergeConflict[];
}

/** Exactly one of `runId`, `callId`, `seq` says what to put back. */
export interface RevertOptions {
  runId?: string;
  callId?: string;
  seq?: number;
  /** Only these of the paths the target changed. */
  paths?: string[];
  dryRun?: boolean;
  resolutions?: Record<string, Resolution>;
}

export interface RevertResult {
  seq: number;
  reverted: { path: string; from: "before" | "merged" | "kept" }[];
  conflicts: MergeConflict[];
}

/** One change of a path, as the history lists it (a `remove` carries the version it removed). */
export interface FileVersion {
  version: number;
  seq: number;
  op: "write" | "remove";
  size: number;
  sha256: string;
  at: string;
  by: ChangeBy | null;
}

export interface HistoryPage {
  versions: FileVersion[];
  cursor?: string;
}

export interface ChangesPage {
  seq: number;
  changes: Change[];
  more?: boolean;
}

export interface Snapshot {
  id: string;
  volumeId: string;
  seq: number;
  pinned: boolean;
  labels: Record<string, string>;
  files: number;
  bytes: number;
  createdAt: string;
  contents?: { path: string; sha256: string }[];
  [more: string]: unknown;
}

export interface Link {
  url: string;
  method: "GET" | "PUT";
  path: string;
  expiresAt: string;
}

export interface LinkOptions extends CallOptions {
  method?: "GET" | "PUT";
  expiresIn?: number;
  maxBytes?: number;
  contentType?: string;
  idempotencyKey?: string;
}

/** A downloaded file, whole: its bytes and what the answer said of them. */
export interface Download {
  data: Uint8Array;
  contentType: string;
  version: number;
  size: number;
  seq?: number;
  /** 206 answers: the `Content-Range` header. */
  contentRange?: string;
}

/** A download as a stream: read `body` to its end (or cancel it). */
export interface DownloadStream extends Omit<Download, "data"> {
  body: ReadableStream<Uint8Array>;
  /**
   * Writes the body to a local file as it arrives, one chunk at a time (each written
   * before the next is read: memory stays bounded whatever the file's size); resolves to
   * the bytes written. The file is created or truncated; on an error it is removed.
   */
  saveTo(path: string): Promise<number>;
}

/** A stream download with `saveTo`. */
export function streamed(info: Omit<Download, "data">, body: ReadableStream<Uint8Array>): DownloadStream {
  return { ...info, body, saveTo: (path: string) => saveTo("saveTo", body, path) };
}

export interface ReadOptions extends CallOptions {
  snapshot?: string;
  /** `bytes=a-b` as in the Range header, or `[start, end]` inclusive. */
  range?: string | [number, number?];
}

export interface WriteOptions extends CallOptions {
  /** Write only if the file is still at this version (0: only if it does not exist). */
  version?: number;
  contentType?: string;
}

export interface ReadAllFile {
  path: string;
  size: number;
  version: number;
  contentType: string;
  sha256: string;
  text?: string;
  data?: string;
  /** The contents as bytes, whichever way they came. */
  bytes: Uint8Array;
}

/** Reads the download headers that every file GET carries. */
export function downloadInfo(a: Answer): Omit<Download, "data"> {
  const etag = a.headers.get("etag") ?? "";
  const seq = a.headers.get("x-volume-seq");
  const out: Omit<Download, "data"> = {
    contentType: a.headers.get("content-type") ?? "application/octet-stream",
    version: Number(etag.replace(/^W\//, "").replace(/"/g, "")) || 0,
    size: Number(a.headers.get("content-length") ?? 0),
  };
  if (seq !== null) out.seq = Number(seq);
  const cr = a.headers.get("content-range");
  if (cr) out.contentRange = cr;
  return out;
}

/** The whole body of an answer as bytes. */
export async function bytesOf(a: Answer): Promise<Uint8Array> {
  return a.body ? new Uint8Array(await new Response(a.body).arrayBuffer()) : new Uint8Array(0);
}

function rangeHeader(r: ReadOptions["range"]): string | undefined {
  if (r === undefined || typeof r === "string") return r;
  return `bytes=${r[0]}-${r[1] ?? ""}`;
}

/** Base64 (standard alphabet) to bytes and back; Buffer is Node's own. */
export const b64 = {
  decode: (s: string) => new Uint8Array(Buffer.from(s, "base64")),
  encode: (u: Uint8Array) => Buffer.from(u).toString("base64"),
};

/** A volume handle that also carries the record it was made from (`info`, and its fields). */
export type VolumeWithInfo = VolumeHandle & Volume & { info: Volume };

function withInfo(t: Transport, info: Volume): VolumeWithInfo {
  const h = new VolumeHandle(t, info.id) as VolumeWithInfo;
  for (const [k, v] of Object.entries(info)) if (!(k in h)) (h as unknown as Record<string, unknown>)[k] = v;
  h.info = info;
  return h;
}

/** The volumes of the key's organization. */
export class Volumes {
  constructor(private t: Transport) {}

  /**
   * Creates a volume and returns a handle on it (with the new volume's fields: `id`,
   * `name`, `seq`...). An Idempotency-Key is always sent (a fresh one unless given), so
   * a retry after a dropped connection gets the same volume, never a second one; the same
   * `idempotencyKey` within a day answers the same volume.
   */
  async create(body: { name: string; ceiling?: number }, o: CallOptions & { idempotencyKey?: string } = {}): Promise<VolumeWithInfo> {
    const w = "volumes.create";
    check.fields(w, "the volume", body, ["name", "ceiling"], false);
    check.str(w, "name", body.name);
    check.optInt(w, "ceiling", body.ceiling);
    check.opts(w, "options", o, ["idempotencyKey"]);
    check.optStr(w, "idempotencyKey", o.idempotencyKey);
    const key = o.idempotencyKey ?? Transport.newKey();
    const info = await this.t.json<Volume>({ method: "POST", path: "/v1/volumes", json: body, headers: { "Idempotency-Key": key } }, o);
    return withInfo(this.t, info);
  }

  /** One page of volumes by name (`cursor` while more remain). */
  async list(q: { prefix?: string; cursor?: string; limit?: number } = {}, o?: CallOptions): Promise<{ volumes: Volume[]; cursor?: string }> {
    check.fields("volumes.list", "the query", q, ["prefix", "cursor", "limit"]);
    check.opts("volumes.list", "options", o);
    return this.t.json({ method: "GET", path: "/v1/volumes", query: q }, o);
  }

  /** Every volume (pages followed). */
  async *all(q: { prefix?: string } = {}, o?: CallOptions): AsyncGenerator<Volume> {
    check.fields("volumes.all", "the query", q, ["prefix"]);
    check.opts("volumes.all", "options", o);
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...q, cursor }, o);
      yield* page.volumes;
      cursor = page.cursor;
    } while (cursor);
  }

  /** Batch seq read: `{id, seq, files, bytes}` of at most 50 volumes (unknown ids left out). */
  async seqs(ids: string[], o?: CallOptions): Promise<Volume[]> {
    check.strs("volumes.seqs", "ids", ids);
    check.opts("volumes.seqs", "options", o);
    return this.t.json<{ volumes: Volume[] }>({ method: "GET", path: "/v1/volumes", query: { ids: ids.join(",") } }, o)
      .then((j) => j.volumes);
  }

  async get(id: string, o?: CallOptions): Promise<Volume> {
    check.str("volumes.get", "id", id);
    check.opts("volumes.get", "options", o);
    return this.t.json({ method: "GET", path: `/v1/volumes/${encodeURIComponent(id)}` }, o);
  }

  async delete(id: string, o?: CallOptions): Promise<void> {
    check.str("volumes.delete", "id", id);
    check.opts("volumes.delete", "options", o);
    await this.t.json({ method: "DELETE", path: `/v1/volumes/${encodeURIComponent(id)}` }, o);
  }

  /** A handle on one volume (no request made). */
  volume(id: string): VolumeHandle {
    check.str("volumes.volume", "id", id);
    return new VolumeHandle(this.t, id);
  }
}

/**
 * The runtime's volumes under seed 001's names: `createVolume`, `volume(id)`,
 * `volumes(ids)`. The same calls as `coffer.volumes` (`create`, `volume`, `seqs`).
 */
export class Runtime {
  private v: Volumes;
  constructor(t: Transport) {
    this.v = new Volumes(t);
  }

  /** `volumes.create`: a handle on a new volume; `{idempotencyKey}` makes it once per key, for a day. */
  createVolume(body: { name: string; ceiling?: number }, o: CallOptions & { idempotencyKey?: string } = {}): Promise<VolumeWithInfo> {
    return this.v.create(body, o);
  }

  /** A handle on one volume (no request made). */
  volume(id: string): VolumeHandle {
    return this.v.volume(id);
  }

  /** `{id, seq, files, bytes}` of up to 50 volumes in one request (`volumes.seqs`). */
  volumes(ids: string[], o?: CallOptions): Promise<Volume[]> {
    return this.v.seqs(ids, o);
  }
}

/** A snapshot's file: text, bytes, or `{data: base64}`. */
export type SnapshotFile = string | Uint8Array | { data: string };

const READ = ["snapshot", "range"] as const;
const WRITE = ["version", "contentType"] as const;
const MERGE = ["fromSnapshot", "base", "strategy", "resolutions", "dryRun", "ifSeq"] as const;
const REVERT = ["runId", "callId", "seq", "paths", "dryRun", "resolutions"] as const;
const LINK = ["method", "expiresIn", "maxBytes", "contentType", "idempotencyKey"] as const;

/** Checks a link's options (shared by volume and agent links). */
export function checkLink(w: string, path: unknown, o: unknown): void {
  check.str(w, "path", path);
  check.opts(w, "options", o, LINK);
  const l = (o ?? {}) as LinkOptions;
  if (l.method !== undefined && l.method !== "GET" && l.method !== "PUT") {
    throw new TypeError(`${w}: method must be "GET" or "PUT", not ${JSON.stringify(l.method)}`);
  }
  check.optInt(w, "expiresIn", l.expiresIn);
  check.optInt(w, "maxBytes", l.maxBytes);
  check.optStr(w, "contentType", l.contentType);
  check.optStr(w, "idempotencyKey", l.idempotencyKey);
}

/** Checks a map of resolutions (path to "ours" | "theirs" | "base" | {text} | {data}). */
function checkResolutions(w: string, v: unknown): void {
  if (v === undefined) return;
  check.fields(w, "resolutions", v, Object.keys((v ?? {}) as object), false);
  for (const [p, r] of Object.entries(v as Record<string, unknown>)) {
    if (r === "ours" || r === "theirs" || r === "base") continue;
    const o = r as Record<string, unknown> | null;
    const keys = o && typeof o === "object" && !Array.isArray(o) ? Object.keys(o) : [];
    if (keys.length === 1 && (keys[0] === "text" || keys[0] === "data") && typeof o![keys[0]] === "string") continue;
    throw new TypeError(`${w}: resolutions["${p}"] must be "ours", "theirs", "base", {text} or {data: base64}`);
  }
}

/** The JSON body of `o`'s fields named in `keys` (CallOptions left out). */
function bodyOf(o: object, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if ((o as Record<string, unknown>)[k] !== undefined) out[k] = (o as Record<string, unknown>)[k];
  return out;
}

/** Checks `{version?, contentType?}` and the path and body of a write. */
export function checkWrite(w: string, path: unknown, data: unknown, o: unknown, more: readonly string[] = []): void {
  check.str(w, "path", path);
  check.body(w, "data", data);
  check.opts(w, "options", o, [...WRITE, ...more]);
  const x = (o ?? {}) as WriteOptions;
  check.optInt(w, "version", x.version);
  check.optStr(w, "contentType", x.contentType);
}

/** One volume's calls. */
export class VolumeHandle {
  private base: string;
  constructor(private t: Transport, readonly id: string) {
    this.base = `/v1/volumes/${encodeURIComponent(id)}`;
  }

  async get(o?: CallOptions): Promise<Volume> {
    check.opts("volume.get", "options", o);
    return this.t.json({ method: "GET", path: this.base }, o);
  }

  /**
   * Writes a file, streamed. `version` makes it conditional (412 PreconditionFailedError
   * with `current` on a mismatch; 0 = only if absent).
   */
  async write(path: string, data: BodyInput, o: WriteOptions = {}): Promise<WriteResult> {
    checkWrite("volume.write", path, data, o);
    return this.t.json({
      method: "PUT", path: `${this.base}/files/${encodePath(path)}`, body: data,
      query: { version: o.version }, headers: { "Content-Type": o.contentType },
    }, o);
  }

  /** Reads a file whole into memory (`version` from its ETag). */
  async read(path: string, o: ReadOptions = {}): Promise<Download> {
    return this.t.request(this.readReq("volume.read", path, o), o, async (a) => ({ ...downloadInfo(a), data: await bytesOf(a) }));
  }

  /**
   * Reads a file as a stream: nothing is held in memory beyond a chunk. A connection
   * dropped mid-way is resumed from the bytes read, pinned to the version first sent.
   * `saveTo(localPath)` writes it to disk.
   */
  async download(path: string, o: ReadOptions = {}): Promise<DownloadStream> {
    const req = this.readReq("volume.download", path, o);
    const a = await this.t.request(req, o);
    return streamed(downloadInfo(a), resumable(this.t, req, o, a));
  }

  /** A file's version, type, size and seq (HEAD), without its bytes. */
  async stat(path: string, o: ReadOptions = {}): Promise<Omit<Download, "data">> {
    const a = await this.t.request({ ...this.readReq("volume.stat", path, o), method: "HEAD" }, o);
    await a.body?.cancel();
    return downloadInfo(a);
  }

  private readReq(w: string, path: string, o: ReadOptions): Req {
    check.str(w, "path", path);
    check.opts(w, "options", o, READ);
    check.optStr(w, "snapshot", o.snapshot);
    if (o.range !== undefined && typeof o.range !== "string" &&
        !(Array.isArray(o.range) && Number.isInteger(o.range[0]))) {
      throw new TypeError(`${w}: range must be "bytes=a-b" or [start, end?]`);
    }
    return {
      method: "GET", path: `${this.base}/files/${encodePath(path)}`,
      query: { snapshot: o.snapshot }, headers: { Range: rangeHeader(o.range) },
    };
  }

  /** Removes a file (`version`: only if still at it). */
  async remove(path: string, o: { version?: number } & CallOptions = {}): Promise<{ path: string; seq: number }> {
    check.str("volume.remove", "path", path);
    check.opts("volume.remove", "options", o, ["version"]);
    check.optInt("volume.remove", "version", o.version);
    return this.t.json({ method: "DELETE", path: `${this.base}/files/${encodePath(path)}`, query: { version: o.version } }, o);
  }

  /** Moves a file or a folder as one change. */
  async move(from: string, to: string, o: CallOptions & { overwrite?: boolean } = {}): Promise<{ from: string; to: string; seq: number; moved: number }> {
    check.str("volume.move", "from", from);
    check.str("volume.move", "to", to);
    check.opts("volume.move", "options", o, ["overwrite"]);
    check.optBool("volume.move", "overwrite", o.overwrite);
    return this.t.json({ method: "POST", path: `${this.base}/move`, json: { from, to, overwrite: o.overwrite } }, o);
  }

  /** One page of the listing, sorted by path. */
  async list(q: { prefix?: string; glob?: string; snapshot?: string; cursor?: string; limit?: number } = {}, o?: CallOptions): Promise<{ seq: number; files: FileInfo[]; cursor?: string }> {
    check.fields("volume.list", "the query", q, ["prefix", "glob", "snapshot", "cursor", "limit"]);
    check.optInt("volume.list", "limit", q.limit);
    check.opts("volume.list", "options", o);
    return this.t.json({ method: "GET", path: `${this.base}/files`, query: q }, o);
  }

  /** Read-all: every matching file with its contents, at one seq (1,000 files / 16 MiB). */
  async readAll(q: { prefix?: string; glob?: string; snapshot?: string } = {}, o?: CallOptions): Promise<{ seq: number; files: ReadAllFile[] }> {
    check.fields("volume.readAll", "the query", q, ["prefix", "glob", "snapshot"]);
    check.opts("volume.readAll", "options", o);
    const j = await this.t.json<{ seq: number; files: Omit<ReadAllFile, "bytes">[] }>(
      { method: "GET", path: `${this.base}/files`, query: { ...q, content: "true" } }, o);
    return {
      seq: j.seq,
      files: j.files.map((f) => ({
        ...f, bytes: f.text !== undefined ? new TextEncoder().encode(f.text) : b64.decode(f.data ?? ""),
      })),
    };
  }

  /** Changes after `since`, oldest first; `wait` long-polls up to that many seconds. */
  async changes(since: number, q: ChangesQuery = {}, o?: CallOptions): Promise<ChangesPage> {
    check.int("volume.changes", "since", since);
    check.fields("volume.changes", "the query", q, CHANGES);
    for (const k of ["prefix", "runId", "callId", "agent", "keyId"] as const) check.optStr("volume.changes", k, q[k]);
    check.optInt("volume.changes", "wait", q.wait);
    check.opts("volume.changes", "options", o);
    return this.t.json({
      method: "GET", path: `${this.base}/changes`, query: { since, ...q }, extraWaitMs: (q.wait ?? 0) * 1000,
    }, o);
  }

  /**
   * Follows the changes feed: yields every change after `since`, in order, for as long as
   * the loop runs, over long-polls of `wait` seconds (default 30). A `since` older than
   * the kept history throws GoneError (its `oldest` says where to start again). The
   * `by` filters (`runId`, `agent`...) keep only the changes they name.
   */
  async *follow(since: number, q: ChangesQuery = {}, o?: CallOptions): AsyncGenerator<Change> {
    check.int("volume.follow", "since", since);
    check.fields("volume.follow", "the query", q, CHANGES);
    check.opts("volume.follow", "options", o);
    let at = since;
    for (;;) {
      const page = await this.changes(at, { ...q, wait: q.wait ?? 30 }, o);
      for (const c of page.changes) yield c;
      if (page.seq < at) throw new GoneError(410, { type: "gone", message: `volume seq went back from ${at} to ${page.seq}` });
      at = page.seq;
    }
  }

  /**
   * A snapshot of the volume, or with `files` (path to text or bytes) a snapshot of the
   * given files only, the volume left untouched.
   */
  async snapshot(body: { pinned?: boolean; labels?: Record<string, string>; files?: Record<string, SnapshotFile> } = {}, o?: CallOptions): Promise<Snapshot> {
    const w = "volume.snapshot";
    check.fields(w, "the snapshot", body, ["pinned", "labels", "files"]);
    check.optBool(w, "pinned", body.pinned);
    check.optLabels(w, "labels", body.labels);
    check.opts(w, "options", o);
    let files: Record<string, string | { data: string }> | undefined;
    if (body.files !== undefined) {
      check.fields(w, "files", body.files, Object.keys(body.files ?? {}), false);
      files = {};
      for (const [p, v] of Object.entries(body.files)) {
        if (typeof v === "string") files[p] = v;
        else if (v instanceof Uint8Array) files[p] = { data: b64.encode(v) };
        else if (v instanceof ArrayBuffer) files[p] = { data: b64.encode(new Uint8Array(v)) };
        else if (v && typeof v === "object" && typeof (v as { data?: unknown }).data === "string" && Object.keys(v).length === 1) files[p] = v;
        else throw new TypeError(`${w}: files["${p}"] must be text, bytes (Uint8Array) or {data: base64}`);
      }
    }
    return this.t.json({ method: "POST", path: `${this.base}/snapshots`, json: { ...body, files } }, o);
  }

  /** Snapshots, filtered by labels (every one must hold). */
  async snapshots(q: { labels?: Record<string, string> } = {}, o?: CallOptions): Promise<Snapshot[]> {
    check.fields("volume.snapshots", "the query", q, ["labels"]);
    check.optLabels("volume.snapshots", "labels", q.labels);
    check.opts("volume.snapshots", "options", o);
    const label = Object.entries(q.labels ?? {}).map(([k, v]) => `${k}:${v}`);
    return this.t.json<{ snapshots: Snapshot[] }>({ method: "GET", path: `${this.base}/snapshots`, query: { label } }, o)
      .then((j) => j.snapshots);
  }

  async getSnapshot(sid: string, o?: CallOptions): Promise<Snapshot> {
    check.str("volume.getSnapshot", "snapshot id", sid);
    check.opts("volume.getSnapshot", "options", o);
    return this.t.json({ method: "GET", path: `${this.base}/snapshots/${encodeURIComponent(sid)}` }, o);
  }

  async updateSnapshot(sid: string, body: { pinned?: boolean; labels?: Record<string, string> }, o?: CallOptions): Promise<Snapshot> {
    const w = "volume.updateSnapshot";
    check.str(w, "snapshot id", sid);
    check.fields(w, "the change", body, ["pinned", "labels"], false);
    check.optBool(w, "pinned", body.pinned);
    check.optLabels(w, "labels", body.labels);
    check.opts(w, "options", o);
    return this.t.json({ method: "PATCH", path: `${this.base}/snapshots/${encodeURIComponent(sid)}`, json: body, idempotent: true }, o);
  }

  /** Deletes a snapshot; a pinned one needs `force` (else ConflictError). */
  async deleteSnapshot(sid: string, o: CallOptions & { force?: boolean } = {}): Promise<void> {
    check.str("volume.deleteSnapshot", "snapshot id", sid);
    check.opts("volume.deleteSnapshot", "options", o, ["force"]);
    check.optBool("volume.deleteSnapshot", "force", o.force);
    await this.t.json({ method: "DELETE", path: `${this.base}/snapshots/${encodeURIComponent(sid)}`, query: { force: o.force ? "true" : undefined } }, o);
  }

  /** A new volume sharing the content (of `snapshot`, or of now): a handle on it. */
  async fork(body: { snapshot?: string; name?: string } = {}, o?: CallOptions): Promise<VolumeWithInfo> {
    check.fields("volume.fork", "the fork", body, ["snapshot", "name"]);
    check.optStr("volume.fork", "snapshot", body.snapshot);
    check.optStr("volume.fork", "name", body.name);
    check.opts("volume.fork", "options", o);
    return withInfo(this.t, await this.t.json<Volume>({ method: "POST", path: `${this.base}/fork`, json: body }, o));
  }

  /** Makes the volume as the snapshot was, as one change. */
  async restore(snapshot: string, o?: CallOptions): Promise<{ snapshot: string; seq: number; written: number; removed: number }> {
    check.str("volume.restore", "snapshot", snapshot);
    check.opts("volume.restore", "options", o);
    return this.t.json({ method: "POST", path: `${this.base}/restore`, json: { snapshot }, idempotent: true }, o);
  }

  /**
   * Brings the changes of volume `from` (now, or as its snapshot `fromSnapshot` was) since
   * the two volumes' common base into this one, as one change. Conflicts left unsettled:
   * MergeConflictError with `conflicts`, nothing changed; settle them with `resolutions`
   * (path to "ours", "theirs", "base", {text} or {data}) or `strategy`. `dryRun` changes
   * nothing; `ifSeq` makes it conditional (PreconditionFailedError).
   */
  async merge(from: string, o: MergeOptions & CallOptions = {}): Promise<MergeResult> {
    const w = "volume.merge";
    check.str(w, "from", from);
    check.opts(w, "options", o, MERGE);
    check.optStr(w, "fromSnapshot", o.fromSnapshot);
    check.optInt(w, "base", o.base);
    if (o.strategy !== undefined && o.strategy !== "ours" && o.strategy !== "theirs") {
      throw new TypeError(`${w}: strategy must be "ours" or "theirs", not ${JSON.stringify(o.strategy)}`);
    }
    checkResolutions(w, o.resolutions);
    check.optBool(w, "dryRun", o.dryRun);
    check.optInt(w, "ifSeq", o.ifSeq);
    // a dry run changes nothing, and a merge at `ifSeq` happens at most once: both safe to send again
    return this.t.json({
      method: "POST", path: `${this.base}/merge`, json: { from, ...bodyOf(o, MERGE) },
      idempotent: o.dryRun === true || o.ifSeq !== undefined,
    }, o);
  }

  /** One page of a path's history, newest first (`cursor` while more remain). */
  async history(path: string, q: { cursor?: string; limit?: number } = {}, o?: CallOptions): Promise<HistoryPage> {
    const w = "volume.history";
    check.str(w, "path", path);
    check.fields(w, "the query", q, ["cursor", "limit"]);
    check.optStr(w, "cursor", q.cursor);
    check.optInt(w, "limit", q.limit);
    check.opts(w, "options", o);
    return this.t.json({ method: "GET", path: `${this.base}/history`, query: { path, ...q } }, o);
  }

  /** Every version of a path, newest first (pages followed). */
  async *allHistory(path: string, q: { limit?: number } = {}, o?: CallOptions): AsyncGenerator<FileVersion> {
    const w = "volume.allHistory";
    check.str(w, "path", path);
    check.fields(w, "the query", q, ["limit"]);
    check.optInt(w, "limit", q.limit);
    check.opts(w, "options", o);
    let cursor: string | undefined;
    do {
      const page = await this.history(path, { ...q, cursor }, o);
      yield* page.versions;
      cursor = page.cursor;
    } while (cursor);
  }

  /**
   * Puts back what one run (`runId`), turn call (`callId`) or seq (`seq`) changed, as one
   * new change: exactly one of the three. Paths changed since by someone else merge or
   * conflict as in `merge` (MergeConflictError; `resolutions` settle them).
   */
  async revert(o: RevertOptions & CallOptions): Promise<RevertResult> {
    const w = "volume.revert";
    check.opts(w, "options", o, REVERT);
    if (o === undefined) throw new TypeError(`${w}: give exactly one of runId, callId, seq`);
    const given = (["runId", "callId", "seq"] as const).filter((k) => o[k] !== undefined);
    if (given.length !== 1) {
      throw new TypeError(`${w}: give exactly one of runId, callId, seq${given.length ? ` (got ${given.join(", ")})` : ""}`);
    }
    check.optStr(w, "runId", o.runId);
    check.optStr(w, "callId", o.callId);
    check.optInt(w, "seq", o.seq);
    if (o.paths !== undefined) check.strs(w, "paths", o.paths);
    check.optBool(w, "dryRun", o.dryRun);
    checkResolutions(w, o.resolutions);
    return this.t.json({
      method: "POST", path: `${this.base}/revert`, json: bodyOf(o, REVERT), idempotent: o.dryRun === true,
    }, o);
  }

  /** A gzip tar stream of the files at one seq (`seq` from X-Volume-Seq); `saveTo(path)` writes it to disk. */
  async archive(q: { snapshot?: string; path?: string; glob?: string } = {}, o?: CallOptions): Promise<{ seq: number; body: ReadableStream<Uint8Array>; saveTo(path: string): Promise<number> }> {
    check.fields("volume.archive", "the query", q, ["snapshot", "path", "glob"]);
    check.opts("volume.archive", "options", o);
    const a = await this.t.request({ method: "GET", path: `${this.base}/archive`, query: q }, o);
    const body = a.body ?? new Blob([]).stream();
    return { seq: Number(a.headers.get("x-volume-seq")), body, saveTo: (p: string) => saveTo("archive.saveTo", body, p) };
  }

  /** A signed link anyone can use until it expires. */
  async link(path: string, o: LinkOptions = {}): Promise<Link> {
    checkLink("volume.link", path, o);
    const { method, expiresIn, maxBytes, contentType } = o;
    return this.t.json({
      method: "POST", path: `${this.base}/links`, json: { path, method, expiresIn, maxBytes, contentType },
      headers: { "Idempotency-Key": o.idempotencyKey },
    }, o);
  }
}
