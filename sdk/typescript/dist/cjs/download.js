"use strict";
// Streamed downloads that survive a dropped connection: the bytes not read yet are asked
// for again, pinned to the version first sent, so a resumed file is never two versions
// joined.
Object.defineProperty(exports, "__esModule", { value: true });
exports.resumable = resumable;
const errors_js_1 = require("./errors.js");
const http_js_1 = require("./http.js");
/**
 * The body of `first` (the answer to `req`, a GET of a file), resumed after a dropped
 * connection or an idle timeout up to `maxRetries` times: `Range: bytes=N-` from the
 * first byte not yet read (within the range first asked for) with `If-Range` on the
 * answer's ETag. An answer other than 206 means the file changed (If-Range then sends it
 * whole): the stream errors with ConnectionError rather than join two versions. Without
 * an ETag the body is returned as it is (nothing to pin a resume to).
 */
function resumable(t, req, o, first) {
    const empty = () => new Blob([]).stream();
    const etag = first.headers.get("etag");
    if (!first.body || !etag || (first.status !== 200 && first.status !== 206))
        return first.body ?? empty();
    let start = 0;
    let end;
    if (first.status === 206) {
        const m = /^bytes (\d+)-(\d+)\//.exec(first.headers.get("content-range") ?? "");
        if (!m)
            return first.body;
        start = Number(m[1]);
        end = Number(m[2]);
    }
    const max = o.maxRetries ?? t.maxRetries;
    let reader = first.body.getReader();
    let got = 0;
    let resumes = 0;
    return new ReadableStream({
        async pull(c) {
            for (;;) {
                try {
                    const { value, done } = await reader.read();
                    if (done)
                        return c.close();
                    got += value.byteLength;
                    return c.enqueue(value);
                }
                catch (e) {
                    if (!((0, http_js_1.isNetworkError)(e) || e instanceof errors_js_1.TimeoutError) || resumes >= max)
                        throw e;
                }
                resumes++;
                const from = start + got;
                const a = await t.request({
                    ...req, headers: { ...req.headers, Range: `bytes=${from}-${end ?? ""}`, "If-Range": etag },
                }, o);
                if (a.status !== 206 || !a.body) {
                    await a.body?.cancel();
                    throw new errors_js_1.ConnectionError(`GET ${req.path}: the connection dropped after ${from} bytes and the ` +
                        `file is no longer at ${etag}: not resumed (a file of two versions)`);
                }
                reader = a.body.getReader();
            }
        },
        cancel(reason) {
            return reader.cancel(reason);
        },
    });
}
