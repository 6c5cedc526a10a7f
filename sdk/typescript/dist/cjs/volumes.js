"use strict";
// Volumes: create, list, batch seq reads, and one volume's files, changes, snapshots,
// forks, restore, read-all, archive and signed links (API.md "Volumes").
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __setModuleDefault = (this && this.__setModuleDefault) || (Object.create ? (function(o, v) {
    Object.defineProperty(o, "default", { enumerable: true, value: v });
}) : function(o, v) {
    o["default"] = v;
});
var __importStar = (this && this.__importStar) || (function () {
    var ownKeys = function(o) {
        ownKeys = Object.getOwnPropertyNames || function (o) {
            var ar = [];
            for (var k in o) if (Object.prototype.hasOwnProperty.call(o, k)) ar[ar.length] = k;
            return ar;
        };
        return ownKeys(o);
    };
    return function (mod) {
        if (mod && mod.__esModule) return mod;
        var result = {};
        if (mod != null) for (var k = ownKeys(mod), i = 0; i < k.length; i++) if (k[i] !== "default") __createBinding(result, mod, k[i]);
        __setModuleDefault(result, mod);
        return result;
    };
})();
Object.defineProperty(exports, "__esModule", { value: true });
exports.VolumeHandle = exports.Runtime = exports.Volumes = exports.b64 = void 0;
exports.streamed = streamed;
exports.downloadInfo = downloadInfo;
exports.bytesOf = bytesOf;
exports.checkLink = checkLink;
exports.checkWrite = checkWrite;
const download_js_1 = require("./download.js");
const errors_js_1 = require("./errors.js");
const http_js_1 = require("./http.js");
const check = __importStar(require("./check.js"));
const save_js_1 = require("./save.js");
const CHANGES = ["prefix", "runId", "callId", "agent", "keyId", "wait"];
/** A stream download with `saveTo`. */
function streamed(info, body) {
    return { ...info, body, saveTo: (path) => (0, save_js_1.saveTo)("saveTo", body, path) };
}
/** Reads the download headers that every file GET carries. */
function downloadInfo(a) {
    const etag = a.headers.get("etag") ?? "";
    const seq = a.headers.get("x-volume-seq");
    const out = {
        contentType: a.headers.get("content-type") ?? "application/octet-stream",
        version: Number(etag.replace(/^W\//, "").replace(/"/g, "")) || 0,
        size: Number(a.headers.get("content-length") ?? 0),
    };
    if (seq !== null)
        out.seq = Number(seq);
    const cr = a.headers.get("content-range");
    if (cr)
        out.contentRange = cr;
    return out;
}
/** The whole body of an answer as bytes. */
async function bytesOf(a) {
    return a.body ? new Uint8Array(await new Response(a.body).arrayBuffer()) : new Uint8Array(0);
}
function rangeHeader(r) {
    if (r === undefined || typeof r === "string")
        return r;
    return `bytes=${r[0]}-${r[1] ?? ""}`;
}
/** Base64 (standard alphabet) to bytes and back; Buffer is Node's own. */
exports.b64 = {
    decode: (s) => new Uint8Array(Buffer.from(s, "base64")),
    encode: (u) => Buffer.from(u).toString("base64"),
};
function withInfo(t, info) {
    const h = new VolumeHandle(t, info.id);
    for (const [k, v] of Object.entries(info))
        if (!(k in h))
            h[k] = v;
    h.info = info;
    return h;
}
/** The volumes of the key's organization. */
class Volumes {
    t;
    constructor(t) {
        this.t = t;
    }
    /**
     * Creates a volume and returns a handle on it (with the new volume's fields: `id`,
     * `name`, `seq`...). An Idempotency-Key is always sent (a fresh one unless given), so
     * a retry after a dropped connection gets the same volume, never a second one; the same
     * `idempotencyKey` within a day answers the same volume.
     */
    async create(body, o = {}) {
        const w = "volumes.create";
        check.fields(w, "the volume", body, ["name", "ceiling"], false);
        check.str(w, "name", body.name);
        check.optInt(w, "ceiling", body.ceiling);
        check.opts(w, "options", o, ["idempotencyKey"]);
        check.optStr(w, "idempotencyKey", o.idempotencyKey);
        const key = o.idempotencyKey ?? http_js_1.Transport.newKey();
        const info = await this.t.json({ method: "POST", path: "/v1/volumes", json: body, headers: { "Idempotency-Key": key } }, o);
        return withInfo(this.t, info);
    }
    /** One page of volumes by name (`cursor` while more remain). */
    async list(q = {}, o) {
        check.fields("volumes.list", "the query", q, ["prefix", "cursor", "limit"]);
        check.opts("volumes.list", "options", o);
        return this.t.json({ method: "GET", path: "/v1/volumes", query: q }, o);
    }
    /** Every volume (pages followed). */
    async *all(q = {}, o) {
        check.fields("volumes.all", "the query", q, ["prefix"]);
        check.opts("volumes.all", "options", o);
        let cursor;
        do {
            const page = await this.list({ ...q, cursor }, o);
            yield* page.volumes;
            cursor = page.cursor;
        } while (cursor);
    }
    /** Batch seq read: `{id, seq, files, bytes}` of at most 50 volumes (unknown ids left out). */
    async seqs(ids, o) {
        check.strs("volumes.seqs", "ids", ids);
        check.opts("volumes.seqs", "options", o);
        return this.t.json({ method: "GET", path: "/v1/volumes", query: { ids: ids.join(",") } }, o)
            .then((j) => j.volumes);
    }
    async get(id, o) {
        check.str("volumes.get", "id", id);
        check.opts("volumes.get", "options", o);
        return this.t.json({ method: "GET", path: `/v1/volumes/${encodeURIComponent(id)}` }, o);
    }
    async delete(id, o) {
        check.str("volumes.delete", "id", id);
        check.opts("volumes.delete", "options", o);
        await this.t.json({ method: "DELETE", path: `/v1/volumes/${encodeURIComponent(id)}` }, o);
    }
    /** A handle on one volume (no request made). */
    volume(id) {
        check.str("volumes.volume", "id", id);
        return new VolumeHandle(this.t, id);
    }
}
exports.Volumes = Volumes;
/**
 * The runtime's volumes under seed 001's names: `createVolume`, `volume(id)`,
 * `volumes(ids)`. The same calls as `coffer.volumes` (`create`, `volume`, `seqs`).
 */
class Runtime {
    v;
    constructor(t) {
        this.v = new Volumes(t);
    }
    /** `volumes.create`: a handle on a new volume; `{idempotencyKey}` makes it once per key, for a day. */
    createVolume(body, o = {}) {
        return this.v.create(body, o);
    }
    /** A handle on one volume (no request made). */
    volume(id) {
        return this.v.volume(id);
    }
    /** `{id, seq, files, bytes}` of up to 50 volumes in one request (`volumes.seqs`). */
    volumes(ids, o) {
        return this.v.seqs(ids, o);
    }
}
exports.Runtime = Runtime;
const READ = ["snapshot", "range"];
const WRITE = ["version", "contentType"];
const MERGE = ["fromSnapshot", "base", "strategy", "resolutions", "dryRun", "ifSeq"];
const REVERT = ["runId", "callId", "seq", "paths", "dryRun", "resolutions"];
const LINK = ["method", "expiresIn", "maxBytes", "contentType", "idempotencyKey"];
/** Checks a link's options (shared by volume and agent links). */
function checkLink(w, path, o) {
    check.str(w, "path", path);
    check.opts(w, "options", o, LINK);
    const l = (o ?? {});
    if (l.method !== undefined && l.method !== "GET" && l.method !== "PUT") {
        throw new TypeError(`${w}: method must be "GET" or "PUT", not ${JSON.stringify(l.method)}`);
    }
    check.optInt(w, "expiresIn", l.expiresIn);
    check.optInt(w, "maxBytes", l.maxBytes);
    check.optStr(w, "contentType", l.contentType);
    check.optStr(w, "idempotencyKey", l.idempotencyKey);
}
/** Checks a map of resolutions (path to "ours" | "theirs" | "base" | {text} | {data}). */
function checkResolutions(w, v) {
    if (v === undefined)
        return;
    check.fields(w, "resolutions", v, Object.keys((v ?? {})), false);
    for (const [p, r] of Object.entries(v)) {
        if (r === "ours" || r === "theirs" || r === "base")
            continue;
        const o = r;
        const keys = o && typeof o === "object" && !Array.isArray(o) ? Object.keys(o) : [];
        if (keys.length === 1 && (keys[0] === "text" || keys[0] === "data") && typeof o[keys[0]] === "string")
            continue;
        throw new TypeError(`${w}: resolutions["${p}"] must be "ours", "theirs", "base", {text} or {data: base64}`);
    }
}
/** The JSON body of `o`'s fields named in `keys` (CallOptions left out). */
function bodyOf(o, keys) {
    const out = {};
    for (const k of keys)
        if (o[k] !== undefined)
            out[k] = o[k];
    return out;
}
/** Checks `{version?, contentType?}` and the path and body of a write. */
function checkWrite(w, path, data, o, more = []) {
    check.str(w, "path", path);
    check.body(w, "data", data);
    check.opts(w, "options", o, [...WRITE, ...more]);
    const x = (o ?? {});
    check.optInt(w, "version", x.version);
    check.optStr(w, "contentType", x.contentType);
}
/** One volume's calls. */
class VolumeHandle {
    t;
    id;
    base;
    constructor(t, id) {
        this.t = t;
        this.id = id;
        this.base = `/v1/volumes/${encodeURIComponent(id)}`;
    }
    async get(o) {
        check.opts("volume.get", "options", o);
        return this.t.json({ method: "GET", path: this.base }, o);
    }
    /**
     * Writes a file, streamed. `version` makes it conditional (412 PreconditionFailedError
     * with `current` on a mismatch; 0 = only if absent).
     */
    async write(path, data, o = {}) {
        checkWrite("volume.write", path, data, o);
        return this.t.json({
            method: "PUT", path: `${this.base}/files/${(0, http_js_1.encodePath)(path)}`, body: data,
            query: { version: o.version }, headers: { "Content-Type": o.contentType },
        }, o);
    }
    /** Reads a file whole into memory (`version` from its ETag). */
    async read(path, o = {}) {
        return this.t.request(this.readReq("volume.read", path, o), o, async (a) => ({ ...downloadInfo(a), data: await bytesOf(a) }));
    }
    /**
     * Reads a file as a stream: nothing is held in memory beyond a chunk. A connection
     * dropped mid-way is resumed from the bytes read, pinned to the version first sent.
     * `saveTo(localPath)` writes it to disk.
     */
    async download(path, o = {}) {
        const req = this.readReq("volume.download", path, o);
        const a = await this.t.request(req, o);
        return streamed(downloadInfo(a), (0, download_js_1.resumable)(this.t, req, o, a));
    }
    /** A file's version, type, size and seq (HEAD), without its bytes. */
    async stat(path, o = {}) {
        const a = await this.t.request({ ...this.readReq("volume.stat", path, o), method: "HEAD" }, o);
        await a.body?.cancel();
        return downloadInfo(a);
    }
    readReq(w, path, o) {
        check.str(w, "path", path);
        check.opts(w, "options", o, READ);
        check.optStr(w, "snapshot", o.snapshot);
        if (o.range !== undefined && typeof o.range !== "string" &&
            !(Array.isArray(o.range) && Number.isInteger(o.range[0]))) {
            throw new TypeError(`${w}: range must be "bytes=a-b" or [start, end?]`);
        }
        return {
            method: "GET", path: `${this.base}/files/${(0, http_js_1.encodePath)(path)}`,
            query: { snapshot: o.snapshot }, headers: { Range: rangeHeader(o.range) },
        };
    }
    /** Removes a file (`version`: only if still at it). */
    async remove(path, o = {}) {
        check.str("volume.remove", "path", path);
        check.opts("volume.remove", "options", o, ["version"]);
        check.optInt("volume.remove", "version", o.version);
        return this.t.json({ method: "DELETE", path: `${this.base}/files/${(0, http_js_1.encodePath)(path)}`, query: { version: o.version } }, o);
    }
    /** Moves a file or a folder as one change. */
    async move(from, to, o = {}) {
        check.str("volume.move", "from", from);
        check.str("volume.move", "to", to);
        check.opts("volume.move", "options", o, ["overwrite"]);
        check.optBool("volume.move", "overwrite", o.overwrite);
        return this.t.json({ method: "POST", path: `${this.base}/move`, json: { from, to, overwrite: o.overwrite } }, o);
    }
    /** One page of the listing, sorted by path. */
    async list(q = {}, o) {
        check.fields("volume.list", "the query", q, ["prefix", "glob", "snapshot", "cursor", "limit"]);
        check.optInt("volume.list", "limit", q.limit);
        check.opts("volume.list", "options", o);
        return this.t.json({ method: "GET", path: `${this.base}/files`, query: q }, o);
    }
    /** Read-all: every matching file with its contents, at one seq (1,000 files / 16 MiB). */
    async readAll(q = {}, o) {
        check.fields("volume.readAll", "the query", q, ["prefix", "glob", "snapshot"]);
        check.opts("volume.readAll", "options", o);
        const j = await this.t.json({ method: "GET", path: `${this.base}/files`, query: { ...q, content: "true" } }, o);
        return {
            seq: j.seq,
            files: j.files.map((f) => ({
                ...f, bytes: f.text !== undefined ? new TextEncoder().encode(f.text) : exports.b64.decode(f.data ?? ""),
            })),
        };
    }
    /** Changes after `since`, oldest first; `wait` long-polls up to that many seconds. */
    async changes(since, q = {}, o) {
        check.int("volume.changes", "since", since);
        check.fields("volume.changes", "the query", q, CHANGES);
        for (const k of ["prefix", "runId", "callId", "agent", "keyId"])
            check.optStr("volume.changes", k, q[k]);
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
    async *follow(since, q = {}, o) {
        check.int("volume.follow", "since", since);
        check.fields("volume.follow", "the query", q, CHANGES);
        check.opts("volume.follow", "options", o);
        let at = since;
        for (;;) {
            const page = await this.changes(at, { ...q, wait: q.wait ?? 30 }, o);
            for (const c of page.changes)
                yield c;
            if (page.seq < at)
                throw new errors_js_1.GoneError(410, { type: "gone", message: `volume seq went back from ${at} to ${page.seq}` });
            at = page.seq;
        }
    }
    /**
     * A snapshot of the volume, or with `files` (path to text or bytes) a snapshot of the
     * given files only, the volume left untouched.
     */
    async snapshot(body = {}, o) {
        const w = "volume.snapshot";
        check.fields(w, "the snapshot", body, ["pinned", "labels", "files"]);
        check.optBool(w, "pinned", body.pinned);
        check.optLabels(w, "labels", body.labels);
        check.opts(w, "options", o);
        let files;
        if (body.files !== undefined) {
            check.fields(w, "files", body.files, Object.keys(body.files ?? {}), false);
            files = {};
            for (const [p, v] of Object.entries(body.files)) {
                if (typeof v === "string")
                    files[p] = v;
                else if (v instanceof Uint8Array)
                    files[p] = { data: exports.b64.encode(v) };
                else if (v instanceof ArrayBuffer)
                    files[p] = { data: exports.b64.encode(new Uint8Array(v)) };
                else if (v && typeof v === "object" && typeof v.data === "string" && Object.keys(v).length === 1)
                    files[p] = v;
                else
                    throw new TypeError(`${w}: files["${p}"] must be text, bytes (Uint8Array) or {data: base64}`);
            }
        }
        return this.t.json({ method: "POST", path: `${this.base}/snapshots`, json: { ...body, files } }, o);
    }
    /** Snapshots, filtered by labels (every one must hold). */
    async snapshots(q = {}, o) {
        check.fields("volume.snapshots", "the query", q, ["labels"]);
        check.optLabels("volume.snapshots", "labels", q.labels);
        check.opts("volume.snapshots", "options", o);
        const label = Object.entries(q.labels ?? {}).map(([k, v]) => `${k}:${v}`);
        return this.t.json({ method: "GET", path: `${this.base}/snapshots`, query: { label } }, o)
            .then((j) => j.snapshots);
    }
    async getSnapshot(sid, o) {
        check.str("volume.getSnapshot", "snapshot id", sid);
        check.opts("volume.getSnapshot", "options", o);
        return this.t.json({ method: "GET", path: `${this.base}/snapshots/${encodeURIComponent(sid)}` }, o);
    }
    async updateSnapshot(sid, body, o) {
        const w = "volume.updateSnapshot";
        check.str(w, "snapshot id", sid);
        check.fields(w, "the change", body, ["pinned", "labels"], false);
        check.optBool(w, "pinned", body.pinned);
        check.optLabels(w, "labels", body.labels);
        check.opts(w, "options", o);
        return this.t.json({ method: "PATCH", path: `${this.base}/snapshots/${encodeURIComponent(sid)}`, json: body, idempotent: true }, o);
    }
    /** Deletes a snapshot; a pinned one needs `force` (else ConflictError). */
    async deleteSnapshot(sid, o = {}) {
        check.str("volume.deleteSnapshot", "snapshot id", sid);
        check.opts("volume.deleteSnapshot", "options", o, ["force"]);
        check.optBool("volume.deleteSnapshot", "force", o.force);
        await this.t.json({ method: "DELETE", path: `${this.base}/snapshots/${encodeURIComponent(sid)}`, query: { force: o.force ? "true" : undefined } }, o);
    }
    /** A new volume sharing the content (of `snapshot`, or of now): a handle on it. */
    async fork(body = {}, o) {
        check.fields("volume.fork", "the fork", body, ["snapshot", "name"]);
        check.optStr("volume.fork", "snapshot", body.snapshot);
        check.optStr("volume.fork", "name", body.name);
        check.opts("volume.fork", "options", o);
        return withInfo(this.t, await this.t.json({ method: "POST", path: `${this.base}/fork`, json: body }, o));
    }
    /** Makes the volume as the snapshot was, as one change. */
    async restore(snapshot, o) {
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
    async merge(from, o = {}) {
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
    async history(path, q = {}, o) {
        const w = "volume.history";
        check.str(w, "path", path);
        check.fields(w, "the query", q, ["cursor", "limit"]);
        check.optStr(w, "cursor", q.cursor);
        check.optInt(w, "limit", q.limit);
        check.opts(w, "options", o);
        return this.t.json({ method: "GET", path: `${this.base}/history`, query: { path, ...q } }, o);
    }
    /** Every version of a path, newest first (pages followed). */
    async *allHistory(path, q = {}, o) {
        const w = "volume.allHistory";
        check.str(w, "path", path);
        check.fields(w, "the query", q, ["limit"]);
        check.optInt(w, "limit", q.limit);
        check.opts(w, "options", o);
        let cursor;
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
    async revert(o) {
        const w = "volume.revert";
        check.opts(w, "options", o, REVERT);
        if (o === undefined)
            throw new TypeError(`${w}: give exactly one of runId, callId, seq`);
        const given = ["runId", "callId", "seq"].filter((k) => o[k] !== undefined);
        if (given.length !== 1) {
            throw new TypeError(`${w}: give exactly one of runId, callId, seq${given.length ? ` (got ${given.join(", ")})` : ""}`);
        }
        check.optStr(w, "runId", o.runId);
        check.optStr(w, "callId", o.callId);
        check.optInt(w, "seq", o.seq);
        if (o.paths !== undefined)
            check.strs(w, "paths", o.paths);
        check.optBool(w, "dryRun", o.dryRun);
        checkResolutions(w, o.resolutions);
        return this.t.json({
            method: "POST", path: `${this.base}/revert`, json: bodyOf(o, REVERT), idempotent: o.dryRun === true,
        }, o);
    }
    /** A gzip tar stream of the files at one seq (`seq` from X-Volume-Seq); `saveTo(path)` writes it to disk. */
    async archive(q = {}, o) {
        check.fields("volume.archive", "the query", q, ["snapshot", "path", "glob"]);
        check.opts("volume.archive", "options", o);
        const a = await this.t.request({ method: "GET", path: `${this.base}/archive`, query: q }, o);
        const body = a.body ?? new Blob([]).stream();
        return { seq: Number(a.headers.get("x-volume-seq")), body, saveTo: (p) => (0, save_js_1.saveTo)("archive.saveTo", body, p) };
    }
    /** A signed link anyone can use until it expires. */
    async link(path, o = {}) {
        checkLink("volume.link", path, o);
        const { method, expiresIn, maxBytes, contentType } = o;
        return this.t.json({
            method: "POST", path: `${this.base}/links`, json: { path, method, expiresIn, maxBytes, contentType },
            headers: { "Idempotency-Key": o.idempotencyKey },
        }, o);
    }
}
exports.VolumeHandle = VolumeHandle;
