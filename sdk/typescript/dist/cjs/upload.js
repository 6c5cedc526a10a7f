"use strict";
// Streamed uploads over node:http. Node's fetch (undici, as bundled with Node 18-22)
// reads a ReadableStream request body ahead of the socket: measured here, a 256 MiB
// upload to cofferd held 256 MiB of chunks in the client, so a 1 GiB file would be held
// whole. node:http's pipe waits for the socket to drain, so memory stays at a few chunks.
// Bodies of known length (bytes, small Blobs, JSON) still go through fetch.
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.streamingFetch = streamingFetch;
const node_http_1 = __importDefault(require("node:http"));
const node_https_1 = __importDefault(require("node:https"));
const node_stream_1 = require("node:stream");
const promises_1 = require("node:stream/promises");
/**
 * A fetch for one request whose body is a web stream, sent chunked with backpressure.
 * Resolves with the answer as a Response as soon as its headers arrive (even when the
 * server answers before reading the whole body); rejects with node's error (ECONNRESET,
 * ...) when the connection fails first, or the signal's reason when it is aborted.
 */
function streamingFetch(url, init) {
    return new Promise((resolve, reject) => {
        const u = new URL(url);
        const mod = u.protocol === "https:" ? node_https_1.default : node_http_1.default;
        let answered = false;
        const req = mod.request(u, { method: init.method, headers: init.headers, signal: init.signal }, (res) => {
            answered = true;
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers)) {
                if (v !== undefined)
                    h.set(k, Array.isArray(v) ? v.join(", ") : v);
            }
            const status = res.statusCode ?? 500;
            const empty = status === 204 || status === 304 || init.method === "HEAD";
            if (empty)
                res.resume();
            const body = empty ? null : node_stream_1.Readable.toWeb(res);
            resolve(new Response(body, { status, headers: h }));
        });
        req.on("error", (e) => { if (!answered)
            reject(init.signal.aborted ? init.signal.reason : e); });
        const src = node_stream_1.Readable.fromWeb(init.body);
        (0, promises_1.pipeline)(src, req).catch((e) => {
            // An answer already given (an early 400 or 413) explains the rest; else fail.
            if (!answered) {
                req.destroy(e);
                reject(init.signal.aborted ? init.signal.reason : e);
            }
        });
    });
}
