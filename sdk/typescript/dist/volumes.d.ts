import { type BodyInput } from "./body.js";
import { type MergeConflict } from "./errors.js";
import { type Answer, type CallOptions, Transport } from "./http.js";
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
/** How a merge or a revert settles one conflicting path: text and data (base64) give the bytes. */
export type Resolution = "ours" | "theirs" | "base" | {
    text: string;
} | {
    data: string;
};
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
    merged: {
        path: string;
        from: "theirs" | "merged" | "ours";
    }[];
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
    reverted: {
        path: string;
        from: "before" | "merged" | "kept";
    }[];
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
    contents?: {
        path: string;
        sha256: string;
    }[];
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
export declare function streamed(info: Omit<Download, "data">, body: ReadableStream<Uint8Array>): DownloadStream;
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
export declare function downloadInfo(a: Answer): Omit<Download, "data">;
/** The whole body of an answer as bytes. */
export declare function bytesOf(a: Answer): Promise<Uint8Array>;
/** Base64 (standard alphabet) to bytes and back; Buffer is Node's own. */
export declare const b64: {
    decode: (s: string) => Uint8Array<ArrayBuffer>;
    encode: (u: Uint8Array) => string;
};
/** A volume handle that also carries the record it was made from (`info`, and its fields). */
export type VolumeWithInfo = VolumeHandle & Volume & {
    info: Volume;
};
/** The volumes of the key's organization. */
export declare class Volumes {
    private t;
    constructor(t: Transport);
    /**
     * Creates a volume and returns a handle on it (with the new volume's fields: `id`,
     * `name`, `seq`...). An Idempotency-Key is always sent (a fresh one unless given), so
     * a retry after a dropped connection gets the same volume, never a second one; the same
     * `idempotencyKey` within a day answers the same volume.
     */
    create(body: {
        name: string;
        ceiling?: number;
    }, o?: CallOptions & {
        idempotencyKey?: string;
    }): Promise<VolumeWithInfo>;
    /** One page of volumes by name (`cursor` while more remain). */
    list(q?: {
        prefix?: string;
        cursor?: string;
        limit?: number;
    }, o?: CallOptions): Promise<{
        volumes: Volume[];
        cursor?: string;
    }>;
    /** Every volume (pages followed). */
    all(q?: {
        prefix?: string;
    }, o?: CallOptions): AsyncGenerator<Volume>;
    /** Batch seq read: `{id, seq, files, bytes}` of at most 50 volumes (unknown ids left out). */
    seqs(ids: string[], o?: CallOptions): Promise<Volume[]>;
    get(id: string, o?: CallOptions): Promise<Volume>;
    delete(id: string, o?: CallOptions): Promise<void>;
    /** A handle on one volume (no request made). */
    volume(id: string): VolumeHandle;
}
/**
 * The runtime's volumes under seed 001's names: `createVolume`, `volume(id)`,
 * `volumes(ids)`. The same calls as `coffer.volumes` (`create`, `volume`, `seqs`).
 */
export declare class Runtime {
    private v;
    constructor(t: Transport);
    /** `volumes.create`: a handle on a new volume; `{idempotencyKey}` makes it once per key, for a day. */
    createVolume(body: {
        name: string;
        ceiling?: number;
    }, o?: CallOptions & {
        idempotencyKey?: string;
    }): Promise<VolumeWithInfo>;
    /** A handle on one volume (no request made). */
    volume(id: string): VolumeHandle;
    /** `{id, seq, files, bytes}` of up to 50 volumes in one request (`volumes.seqs`). */
    volumes(ids: string[], o?: CallOptions): Promise<Volume[]>;
}
/** A snapshot's file: text, bytes, or `{data: base64}`. */
export type SnapshotFile = string | Uint8Array | {
    data: string;
};
/** Checks a link's options (shared by volume and agent links). */
export declare function checkLink(w: string, path: unknown, o: unknown): void;
/** Checks `{version?, contentType?}` and the path and body of a write. */
export declare function checkWrite(w: string, path: unknown, data: unknown, o: unknown, more?: readonly string[]): void;
/** One volume's calls. */
export declare class VolumeHandle {
    private t;
    readonly id: string;
    private base;
    constructor(t: Transport, id: string);
    get(o?: CallOptions): Promise<Volume>;
    /**
     * Writes a file, streamed. `version` makes it conditional (412 PreconditionFailedError
     * with `current` on a mismatch; 0 = only if absent).
     */
    write(path: string, data: BodyInput, o?: WriteOptions): Promise<WriteResult>;
    /** Reads a file whole into memory (`version` from its ETag). */
    read(path: string, o?: ReadOptions): Promise<Download>;
    /**
     * Reads a file as a stream: nothing is held in memory beyond a chunk. A connection
     * dropped mid-way is resumed from the bytes read, pinned to the version first sent.
     * `saveTo(localPath)` writes it to disk.
     */
    download(path: string, o?: ReadOptions): Promise<DownloadStream>;
    /** A file's version, type, size and seq (HEAD), without its bytes. */
    stat(path: string, o?: ReadOptions): Promise<Omit<Download, "data">>;
    private readReq;
    /** Removes a file (`version`: only if still at it). */
    remove(path: string, o?: {
        version?: number;
    } & CallOptions): Promise<{
        path: string;
        seq: number;
    }>;
    /** Moves a file or a folder as one change. */
    move(from: string, to: string, o?: CallOptions & {
        overwrite?: boolean;
    }): Promise<{
        from: string;
        to: string;
        seq: number;
        moved: number;
    }>;
    /** One page of the listing, sorted by path. */
    list(q?: {
        prefix?: string;
        glob?: string;
        snapshot?: string;
        cursor?: string;
        limit?: number;
    }, o?: CallOptions): Promise<{
        seq: number;
        files: FileInfo[];
        cursor?: string;
    }>;
    /** Read-all: every matching file with its contents, at one seq (1,000 files / 16 MiB). */
    readAll(q?: {
        prefix?: string;
        glob?: string;
        snapshot?: string;
    }, o?: CallOptions): Promise<{
        seq: number;
        files: ReadAllFile[];
    }>;
    /** Changes after `since`, oldest first; `wait` long-polls up to that many seconds. */
    changes(since: number, q?: ChangesQuery, o?: CallOptions): Promise<ChangesPage>;
    /**
     * Follows the changes feed: yields every change after `since`, in order, for as long as
     * the loop runs, over long-polls of `wait` seconds (default 30). A `since` older than
     * the kept history throws GoneError (its `oldest` says where to start again). The
     * `by` filters (`runId`, `agent`...) keep only the changes they name.
     */
    follow(since: number, q?: ChangesQuery, o?: CallOptions): AsyncGenerator<Change>;
    /**
     * A snapshot of the volume, or with `files` (path to text or bytes) a snapshot of the
     * given files only, the volume left untouched.
     */
    snapshot(body?: {
        pinned?: boolean;
        labels?: Record<string, string>;
        files?: Record<string, SnapshotFile>;
    }, o?: CallOptions): Promise<Snapshot>;
    /** Snapshots, filtered by labels (every one must hold). */
    snapshots(q?: {
        labels?: Record<string, string>;
    }, o?: CallOptions): Promise<Snapshot[]>;
    getSnapshot(sid: string, o?: CallOptions): Promise<Snapshot>;
    updateSnapshot(sid: string, body: {
        pinned?: boolean;
        labels?: Record<string, string>;
    }, o?: CallOptions): Promise<Snapshot>;
    /** Deletes a snapshot; a pinned one needs `force` (else ConflictError). */
    deleteSnapshot(sid: string, o?: CallOptions & {
        force?: boolean;
    }): Promise<void>;
    /** A new volume sharing the content (of `snapshot`, or of now): a handle on it. */
    fork(body?: {
        snapshot?: string;
        name?: string;
    }, o?: CallOptions): Promise<VolumeWithInfo>;
    /** Makes the volume as the snapshot was, as one change. */
    restore(snapshot: string, o?: CallOptions): Promise<{
        snapshot: string;
        seq: number;
        written: number;
        removed: number;
    }>;
    /**
     * Brings the changes of volume `from` (now, or as its snapshot `fromSnapshot` was) since
     * the two volumes' common base into this one, as one change. Conflicts left unsettled:
     * MergeConflictError with `conflicts`, nothing changed; settle them with `resolutions`
     * (path to "ours", "theirs", "base", {text} or {data}) or `strategy`. `dryRun` changes
     * nothing; `ifSeq` makes it conditional (PreconditionFailedError).
     */
    merge(from: string, o?: MergeOptions & CallOptions): Promise<MergeResult>;
    /** One page of a path's history, newest first (`cursor` while more remain). */
    history(path: string, q?: {
        cursor?: string;
        limit?: number;
    }, o?: CallOptions): Promise<HistoryPage>;
    /** Every version of a path, newest first (pages followed). */
    allHistory(path: string, q?: {
        limit?: number;
    }, o?: CallOptions): AsyncGenerator<FileVersion>;
    /**
     * Puts back what one run (`runId`), turn call (`callId`) or seq (`seq`) changed, as one
     * new change: exactly one of the three. Paths changed since by someone else merge or
     * conflict as in `merge` (MergeConflictError; `resolutions` settle them).
     */
    revert(o: RevertOptions & CallOptions): Promise<RevertResult>;
    /** A gzip tar stream of the files at one seq (`seq` from X-Volume-Seq); `saveTo(path)` writes it to disk. */
    archive(q?: {
        snapshot?: string;
        path?: string;
        glob?: string;
    }, o?: CallOptions): Promise<{
        seq: number;
        body: ReadableStream<Uint8Array>;
        saveTo(path: string): Promise<number>;
    }>;
    /** A signed link anyone can use until it expires. */
    link(path: string, o?: LinkOptions): Promise<Link>;
}
