/** Writes `body` to `path` (created or truncated); the bytes written. On error the file is removed. */
export declare function saveTo(where: string, body: ReadableStream<Uint8Array>, path: string): Promise<number>;
