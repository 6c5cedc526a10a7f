// Streamed uploads over node:http. Node's fetch (undici, as bundled with Node 18-22)
// reads a ReadableStream request body ahead of the socket: measured here, a 256 MiB
// upload to cofferd held 256 MiB of chunks in the client, so a 1 GiB file would be held
// whole. node:http's pipe waits for the socket to drain, so memory stays at a few chunks.
// Bodies of known length (bytes, small Blobs, JSON) still go through fetch.
import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
/**
 * A fetch for one request whose body is a web stream, sent chunked with backpressure.
 * Resolves with the answer as a Response as soon as its headers arrive (even when the
 * server answers before reading the whole body); rejects with node's error (ECONNRESET,
 * ...) when the connection fails first, or the signal's reason when it is aborted.
 */
export function streamingFetch(url, init) {
    return new Promise((resolve, reject) => {
        const u = new URL(url);
        const mod = u.protocol === "https:" ? https : http;
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
            const body = empty ? null : Readable.toWeb(res);
            resolve(new Response(body, { status, headers: h }));
        });
        req.on("error", (e) => { if (!answered)
            reject(init.signal.aborted ? init.signal.reason : e); });
        const src = Readable.fromWeb(init.body);
        pipeline(src, req).catch((e) => {
            // An answer already given (an early 400 or 413) explains the rest; else fail.
            if (!answered) {
                req.destroy(e);
                reject(init.signal.aborted ? init.signal.reason : e);
            }
        });
    });
}
