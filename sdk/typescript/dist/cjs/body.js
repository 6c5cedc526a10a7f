"use strict";
// Request bodies: what a caller may hand to an upload, and how it becomes something
// fetch can send, once or again. A body is *replayable* when it can be produced again
// from the start (bytes, a string, a Blob, a local file, a factory); only those are
// retried after a dropped connection. A one-shot stream is sent once: a retry would send
// a stream already half read.
Object.defineProperty(exports, "__esModule", { value: true });
exports.fromFile = fromFile;
exports.isReplayable = isReplayable;
exports.iterableToStream = iterableToStream;
exports.prepareBody = prepareBody;
const node_fs_1 = require("node:fs");
/** A local file as an upload body: streamed from disk, reopened for each attempt. */
function fromFile(path) {
    const f = () => (0, node_fs_1.createReadStream)(path, { highWaterMark: 1 << 20 });
    // The size is known up front; kept for Content-Length-less callers that want it.
    f.size = (0, node_fs_1.statSync)(path).size;
    return f;
}
/** True when the body can be sent again from its start. */
function isReplayable(b) {
    if (b === undefined || typeof b === "string" || typeof b === "function")
        return true;
    if (b instanceof Uint8Array || b instanceof ArrayBuffer || b instanceof Blob)
        return true;
    return false;
}
function isAsyncIterable(x) {
    return x != null && typeof x[Symbol.asyncIterator] === "function";
}
/** An async iterable as a web stream (ReadableStream.from is Node 20+ only). */
function iterableToStream(it) {
    const iter = it[Symbol.asyncIterator]();
    return new ReadableStream({
        async pull(c) {
            const { value, done } = await iter.next();
            if (done)
                c.close();
            else
                c.enqueue(value instanceof Uint8Array ? value : new Uint8Array(value));
        },
        async cancel(reason) {
            await iter.return?.(reason);
        },
    });
}
/**
 * The body for one attempt. `onPull` is called each time fetch takes a chunk of a
 * streamed body (the idle timeout counts it as progress).
 */
function prepareBody(b, onPull) {
    if (typeof b === "function")
        b = b();
    if (b === undefined)
        return { body: undefined, stream: false };
    if (typeof b === "string") {
        const u = new TextEncoder().encode(b);
        return { body: u, length: u.byteLength, stream: false };
    }
    if (b instanceof ArrayBuffer)
        return { body: new Uint8Array(b), length: b.byteLength, stream: false };
    if (b instanceof Uint8Array)
        return { body: b, length: b.byteLength, stream: false };
    if (b instanceof Blob) {
        if (b.size <= 1 << 20)
            return { body: b, length: b.size, stream: false };
        b = b.stream();
    }
    const stream = b instanceof ReadableStream ? b : isAsyncIterable(b) ? iterableToStream(b) : null;
    if (!stream)
        throw new TypeError("body: expected a string, bytes, a Blob, a stream or a function");
    const reader = stream.getReader();
    const counted = new ReadableStream({
        async pull(c) {
            onPull();
            const { value, done } = await reader.read();
            if (done)
                c.close();
            else
                c.enqueue(value);
        },
        cancel(reason) {
            return reader.cancel(reason);
        },
    });
    return { body: counted, stream: true };
}
