/** Bytes the SDK can upload. A function is called once per attempt for a fresh stream. */
export type BodyInput = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | (() => ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Uint8Array | Blob);
/** One attempt's body: what fetch sends, and its length when known. */
export interface PreparedBody {
    body: BodyInit | Uint8Array | undefined;
    length?: number;
    stream: boolean;
}
/** A local file as an upload body: streamed from disk, reopened for each attempt. */
export declare function fromFile(path: string): () => AsyncIterable<Uint8Array>;
/** True when the body can be sent again from its start. */
export declare function isReplayable(b: BodyInput | undefined): boolean;
/** An async iterable as a web stream (ReadableStream.from is Node 20+ only). */
export declare function iterableToStream(it: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array>;
/**
 * The body for one attempt. `onPull` is called each time fetch takes a chunk of a
 * streamed body (the idle timeout counts it as progress).
 */
export declare function prepareBody(b: BodyInput | undefined, onPull: () => void): PreparedBody;
