// Volumes: create, list, batch seq reads, and one volume's files, changes, snapshots,
// forks, restore, read-all, archive and signed links (API.md "Volumes").

import { type BodyInput } from "./body.js";
import { resumable } from "./download.js";
import { GoneError } from "./errors.js";
import { type Answer, type CallOptions, encodePath, type Req, Transport } from "./http.js";

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

export interface Change {
  seq: number;
  op: "write" | "remove";
  path: string;
  version: number;
  size: number;
  sha256: string;
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

/** The volumes of the key's organization. */
export class Volumes {
  constructor(private t: Transport) {}

  /**
   * Creates a volume. An Idempotency-Key is always sent (a fresh one unless given), so a
   * retry after a dropped connection gets the same volume, never a second one.
   */
  async create(body: { name: string; ceiling?: number }, o: CallOptions & { idempotencyKey?: string } = {}): Promise<Volume> {
    const key = o.idempotencyKey ?? Transport.newKey();
    return this.t.json({ method: "POST", path: "/v1/volumes", json: body, headers: { "Idempotency-Key": key } }, o);
  }

  /** One page of volumes by name (`cursor` while more remain). */
  async list(q: { prefix?: string; cursor?: string; limit?: number } = {}, o?: CallOptions): Promise<{ volumes: Volume[]; cursor?: string }> {
    return this.t.json({ method: "GET", path: "/v1/volumes", query: q }, o);
  }

  /** Every volume (pages followed). */
  async *all(q: { prefix?: string } = {}, o?: CallOptions): AsyncGenerator<Volume> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...q, cursor }, o);
      yield* page.volumes;
      cursor = page.cursor;
    } while (cursor);
  }

  /** Batch seq read: `{id, seq, files, bytes}` of at most 50 volumes (unknown ids left out). */
  async seqs(ids: string[], o?: CallOptions): Promise<Volume[]> {
    return this.t.json<{ volumes: Volume[] }>({ method: "GET", path: "/v1/volumes", query: { ids: ids.join(",") } }, o)
      .then((j) => j.volumes);
  }

  async get(id: string, o?: CallOptions): Promise<Volume> {
    return this.t.json({ method: "GET", path: `/v1/volumes/${encodeURIComponent(id)}` }, o);
  }

  async delete(id: string, o?: CallOptions): Promise<void> {
    await this.t.json({ method: "DELETE", path: `/v1/volumes/${encodeURIComponent(id)}` }, o);
  }

  /** A handle on one volume (no request made). */
  volume(id: string): VolumeHandle {
    return new VolumeHandle(this.t, id);
  }
}

/** One volume's calls. */
export class VolumeHandle {
  private base: string;
  constructor(private t: Transport, readonly id: string) {
    this.base = `/v1/volumes/${encodeURIComponent(id)}`;
  }

  async get(o?: CallOptions): Promise<Volume> {
    return this.t.json({ method: "GET", path: this.base }, o);
  }

  /**
   * Writes a file, streamed. `version` makes it conditional (412 PreconditionFailedError
   * with `current` on a mismatch; 0 = only if absent).
   */
  async write(path: string, data: BodyInput, o: WriteOptions = {}): Promise<WriteResult> {
    return this.t.json({
      method: "PUT", path: `${this.base}/files/${encodePath(path)}`, body: data,
      query: { version: o.version }, headers: { "Content-Type": o.contentType },
    }, o);
  }

  /** Reads a file whole into memory (`version` from its ETag). */
  async read(path: string, o: ReadOptions = {}): Promise<Download> {
    return this.t.request(this.readReq(path, o), o, async (a) => ({ ...downloadInfo(a), data: await bytesOf(a) }));
  }

  /**
   * Reads a file as a stream: nothing is held in memory beyond a chunk. A connection
   * dropped mid-way is resumed from the bytes read, pinned to the version first sent.
   */
  async download(path: string, o: ReadOptions = {}): Promise<DownloadStream> {
    const req = this.readReq(path, o);
    const a = await this.t.request(req, o);
    return { ...downloadInfo(a), body: resumable(this.t, req, o, a) };
  }

  /** A file's version, type, size and seq (HEAD), without its bytes. */
  async stat(path: string, o: ReadOptions = {}): Promise<Omit<Download, "data">> {
    const a = await this.t.request({ ...this.readReq(path, o), method: "HEAD" }, o);
    await a.body?.cancel();
    return downloadInfo(a);
  }

  private readReq(path: string, o: ReadOptions): Req {
    return {
      method: "GET", path: `${this.base}/files/${encodePath(path)}`,
      query: { snapshot: o.snapshot }, headers: { Range: rangeHeader(o.range) },
    };
  }

  /** Removes a file (`version`: only if still at it). */
  async remove(path: string, o: WriteOptions = {}): Promise<{ path: string; seq: number }> {
    return this.t.json({ method: "DELETE", path: `${this.base}/files/${encodePath(path)}`, query: { version: o.version } }, o);
  }

  /** Moves a file or a folder as one change. */
  async move(from: string, to: string, o: CallOptions & { overwrite?: boolean } = {}): Promise<{ from: string; to: string; seq: number; moved: number }> {
    return this.t.json({ method: "POST", path: `${this.base}/move`, json: { from, to, overwrite: o.overwrite } }, o);
  }

  /** One page of the listing, sorted by path. */
  async list(q: { prefix?: string; glob?: string; snapshot?: string; cursor?: string; limit?: number } = {}, o?: CallOptions): Promise<{ seq: number; files: FileInfo[]; cursor?: string }> {
    return this.t.json({ method: "GET", path: `${this.base}/files`, query: q }, o);
  }

  /** Read-all: every matching file with its contents, at one seq (1,000 files / 16 MiB). */
  async readAll(q: { prefix?: string; glob?: string; snapshot?: string } = {}, o?: CallOptions): Promise<{ seq: number; files: ReadAllFile[] }> {
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
  async changes(since: number, q: { prefix?: string; wait?: number } = {}, o?: CallOptions): Promise<ChangesPage> {
    return this.t.json({
      method: "GET", path: `${this.base}/changes`, query: { since, ...q }, extraWaitMs: (q.wait ?? 0) * 1000,
    }, o);
  }

  /**
   * Follows the changes feed: yields every change after `since`, in order, for as long as
   * the loop runs, over long-polls of `wait` seconds (default 30). A `since` older than
   * the kept history throws GoneError (its `oldest` says where to start again).
   */
  async *follow(since: number, q: { prefix?: string; wait?: number } = {}, o?: CallOptions): AsyncGenerator<Change> {
    let at = since;
    for (;;) {
      const page = await this.changes(at, { prefix: q.prefix, wait: q.wait ?? 30 }, o);
      for (const c of page.changes) yield c;
      if (page.seq < at) throw new GoneError(410, { type: "gone", message: `volume seq went back from ${at} to ${page.seq}` });
      at = page.seq;
    }
  }

  /** A snapshot of the volume, or with `files` of the given files only. */
  async snapshot(body: { pinned?: boolean; labels?: Record<string, string>; files?: Record<string, string | { data: string }> } = {}, o?: CallOptions): Promise<Snapshot> {
    return this.t.json({ method: "POST", path: `${this.base}/snapshots`, json: body }, o);
  }

  /** Snapshots, filtered by labels (every one must hold). */
  async snapshots(q: { labels?: Record<string, string> } = {}, o?: CallOptions): Promise<Snapshot[]> {
    const label = Object.entries(q.labels ?? {}).map(([k, v]) => `${k}:${v}`);
    return this.t.json<{ snapshots: Snapshot[] }>({ method: "GET", path: `${this.base}/snapshots`, query: { label } }, o)
      .then((j) => j.snapshots);
  }

  async getSnapshot(sid: string, o?: CallOptions): Promise<Snapshot> {
    return this.t.json({ method: "GET", path: `${this.base}/snapshots/${encodeURIComponent(sid)}` }, o);
  }

  async updateSnapshot(sid: string, body: { pinned?: boolean; labels?: Record<string, string> }, o?: CallOptions): Promise<Snapshot> {
    return this.t.json({ method: "PATCH", path: `${this.base}/snapshots/${encodeURIComponent(sid)}`, json: body, idempotent: true }, o);
  }

  /** Deletes a snapshot; a pinned one needs `force` (else ConflictError). */
  async deleteSnapshot(sid: string, o: CallOptions & { force?: boolean } = {}): Promise<void> {
    await this.t.json({ method: "DELETE", path: `${this.base}/snapshots/${encodeURIComponent(sid)}`, query: { force: o.force ? "true" : undefined } }, o);
  }

  /** A new volume sharing the content (of `snapshot`, or of now). */
  async fork(body: { snapshot?: string; name?: string } = {}, o?: CallOptions): Promise<Volume> {
    return this.t.json({ method: "POST", path: `${this.base}/fork`, json: body }, o);
  }

  /** Makes the volume as the snapshot was, as one change. */
  async restore(snapshot: string, o?: CallOptions): Promise<{ snapshot: string; seq: number; written: number; removed: number }> {
    return this.t.json({ method: "POST", path: `${this.base}/restore`, json: { snapshot }, idempotent: true }, o);
  }

  /** A gzip tar stream of the files at one seq (`seq` from X-Volume-Seq). */
  async archive(q: { snapshot?: string; path?: string; glob?: string } = {}, o?: CallOptions): Promise<{ seq: number; body: ReadableStream<Uint8Array> }> {
    const a = await this.t.request({ method: "GET", path: `${this.base}/archive`, query: q }, o);
    return { seq: Number(a.headers.get("x-volume-seq")), body: a.body ?? new Blob([]).stream() };
  }

  /** A signed link anyone can use until it expires. */
  async link(path: string, o: LinkOptions = {}): Promise<Link> {
    const { method, expiresIn, maxBytes, contentType } = o;
    return this.t.json({
      method: "POST", path: `${this.base}/links`, json: { path, method, expiresIn, maxBytes, contentType },
      headers: { "Idempotency-Key": o.idempotencyKey },
    }, o);
  }
}
