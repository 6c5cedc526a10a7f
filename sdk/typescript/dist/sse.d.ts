/** One event of a stream: its `event:` name, its `data:` parsed as JSON, its `id:`. */
export interface StreamEvent<T = unknown> {
    event: string;
    data: T;
    id?: string;
}
/**
 * Parses a text/event-stream body into events (comments and `retry:` lines skipped; a
 * data that is not JSON is kept as its text). Ends when the body ends; breaking out of
 * the loop cancels the body, which closes the connection.
 */
export declare function parseSse<T = unknown>(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent<T>>;
