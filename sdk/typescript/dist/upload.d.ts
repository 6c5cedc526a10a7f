/**
 * A fetch for one request whose body is a web stream, sent chunked with backpressure.
 * Resolves with the answer as a Response as soon as its headers arrive (even when the
 * server answers before reading the whole body); rejects with node's error (ECONNRESET,
 * ...) when the connection fails first, or the signal's reason when it is aborted.
 */
export declare function streamingFetch(url: string, init: {
    method: string;
    headers: Record<string, string>;
    body: ReadableStream<Uint8Array>;
    signal: AbortSignal;
}): Promise<Response>;
