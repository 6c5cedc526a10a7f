import { type Answer, type CallOptions, type Req, Transport } from "./http.js";
/**
 * The body of `first` (the answer to `req`, a GET of a file), resumed after a dropped
 * connection or an idle timeout up to `maxRetries` times: `Range: bytes=N-` from the
 * first byte not yet read (within the range first asked for) with `If-Range` on the
 * answer's ETag. An answer other than 206 means the file changed (If-Range then sends it
 * whole): the stream errors with ConnectionError rather than join two versions. Without
 * an ETag the body is returned as it is (nothing to pin a resume to).
 */
export declare function resumable(t: Transport, req: Req, o: CallOptions, first: Answer): ReadableStream<Uint8Array>;
