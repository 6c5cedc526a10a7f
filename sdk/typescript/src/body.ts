// Request bodies: what a caller may hand to an upload, and how it becomes something
// fetch can send, once or again. A body is *replayable* when it can be produced again
// from the start (bytes, a string, a Blob, a local file, a factory); only those are
// retried after a dropped connection. A one-shot stream is sent once: a retry would send
// a stream already half read.

import { createReadStream, statSync } from "node:fs";

/** Bytes the SDK can upload. A function is called once per attempt for a fresh stream. */
export type BodyInput =
  | string
  | Uint8Array
  | ArrayBuffer
  | Blob
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>
  | (() => ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Uint8Array | Blob);

/** One attempt's body: what fetch sends, and its length when known. */
export interface PreparedBody {
  body: BodyInit | Uint8Array | undefined;
  length?: number;
  stream: boolean;
}

/** A local file as an upload body: streamed from disk, reopened for each attempt. */
export function fromFile(path: string): () => AsyncIterable<Uint8Array> {
  const f = () => createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Uint8Array>;
  // The size is known up front; kept for Content-Length-less callers that want it.
  (f as { size?: number }).size = statSync(path).size;
  return f;
}

/** True when the body can be sent again from its start. */
export function isReplayable(b: BodyInput | undefined): boolean {
  if (b === undefined || typeof b === "string" || typeof b === "function") return true;
  if (b instanceof Uint8Array || b instanceof ArrayBuffer || b instanceof Blob) return true;
  return false;
}

function isAsyncIterable(x: unknown): x is AsyncIterable<Uint8Array> {
  return x != null && typeof (x as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === "function";
}

/** An async iterable as a web stream (ReadableStream.from is Node 20+ only). */
export function iterableToStream(it: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iter = it[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      const { value, done } = await iter.next();
      if (done) c.close();
      else c.enqueue(value instanceof Uint8Array ? value : new Uint8Array(value as ArrayBuffer));
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
export function prepareBody(b: BodyInput | undefined, onPull: () => void): PreparedBody {
  if (typeof b === "function") b = b();
  if (b === undefined) return { body: undefined, stream: false };
  if (typeof b === "string") {
    const u = new TextEncoder().encode(b);
    return { body: u, length: u.byteLength, stream: false };
  }
  if (b instanceof ArrayBuffer) return { body: new Uint8Array(b), length: b.byteLength, stream: false };
  if (b instanceof Uint8Array) return { body: b, length: b.byteLength, stream: false };
  if (b instanceof Blob) {
    if (b.size <= 1 << 20) return { body: b, length: b.size, stream: false };
    b = b.stream() as ReadableStream<Uint8Array>;
  }
  const stream = b instanceof ReadableStream ? b : isAsyncIterable(b) ? iterableToStream(b) : null;
  if (!stream) throw new TypeError("body: expected a string, bytes, a Blob, a stream or a function");
  const reader = stream.getReader();
  const counted = new ReadableStream<Uint8Array>({
    async pull(c) {
      onPull();
      const { value, done } = await reader.read();
      if (done) c.close();
      else c.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return { body: counted as unknown as BodyInit, stream: true };
}
