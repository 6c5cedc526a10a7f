import { type CallOptions, Transport } from "./http.js";
import { type StreamEvent } from "./sse.js";
export interface RelaySession {
    uid: string;
    connectToken?: string;
    agent: string;
    status: "waiting" | "active" | "paused" | "ended";
    mode: string;
    defaultMode?: string;
    exclusions: string[];
    counts: {
        reads: number;
        writes: number;
        bytesWritten: number;
    };
    limits?: Record<string, number>;
    startedAt: string;
    expiresAt?: string;
    endReason?: string;
    [more: string]: unknown;
}
export type RelayOp = {
    op: "read_file";
    path: string;
} | {
    op: "write_file";
    path: string;
    content: string;
    encoding?: "utf-8" | "base64";
} | {
    op: "list_directory";
    path?: string;
} | {
    op: "search_files";
    pattern: string;
    path?: string;
    glob?: string;
    maxResults?: number;
};
export declare class Relay {
    private t;
    constructor(t: Transport);
    /** A session for an agent that declared `relay.capability`; `connectToken` is shown only here. */
    create(body: {
        agent: string;
        limits?: Record<string, number>;
    }, o?: CallOptions): Promise<RelaySessionHandle & {
        info: RelaySession;
    }>;
    /** The organization's sessions, newest first (`all`: ended ones too). */
    list(q?: {
        agent?: string;
        all?: boolean;
    }, o?: CallOptions): Promise<RelaySession[]>;
    session(uid: string): RelaySessionHandle;
}
export declare class RelaySessionHandle {
    private t;
    readonly uid: string;
    private base;
    constructor(t: Transport, uid: string);
    get(o?: CallOptions): Promise<RelaySession>;
    /**
     * One operation relayed to the user's side. `wait: false` makes a supervised write
     * answer LockedError (423) with `opId` at once; see opStatus. Not retried after a
     * dropped connection unless it only reads.
     */
    op<T = Record<string, unknown>>(body: RelayOp, o?: CallOptions & {
        wait?: boolean;
    }): Promise<T>;
    readFile(path: string, o?: CallOptions): Promise<{
        path: string;
        content: string;
        encoding: "utf-8" | "base64";
        size: number;
    }>;
    writeFile(path: string, content: string, o?: CallOptions & {
        encoding?: "utf-8" | "base64";
        wait?: boolean;
    }): Promise<{
        path: string;
        size: number;
        sha256: string;
    }>;
    listDirectory(path?: string, o?: CallOptions): Promise<{
        entries: {
            name: string;
            type: string;
            size: number;
        }[];
    }>;
    searchFiles(pattern: string, q?: {
        path?: string;
        glob?: string;
        maxResults?: number;
    }, o?: CallOptions): Promise<{
        results: {
            file: string;
            line: number;
            content: string;
        }[];
        truncated: boolean;
    }>;
    /** A supervised write answered 423: pending, or done with its result or error. */
    opStatus(opId: string, o?: CallOptions): Promise<Record<string, unknown>>;
    /**
     * The session's events, replayed from the start (or after `lastEventId`) then followed,
     * until `session_ended`. A stream that drops is reopened with `Last-Event-ID` set to
     * the last event seen, so no event is lost or seen twice (at most `maxRetries`
     * reconnections in a row; `resume: false` turns this off). `break` (or `signal`) closes it.
     */
    events(o?: CallOptions & {
        lastEventId?: string;
        resume?: boolean;
    }): AsyncGenerator<StreamEvent<Record<string, unknown>>>;
    /** The session's log (scan results of blocked writes, ...). */
    log(o?: CallOptions): Promise<{
        uid: string;
        entries: Record<string, unknown>[];
        truncated: boolean;
    }>;
    /** Ends the session now (`endReason: "aborted"`). */
    abort(o?: CallOptions): Promise<RelaySession>;
    /** Closes the session, the job done (`endReason: "closed"`). */
    close(o?: CallOptions): Promise<RelaySession>;
}
