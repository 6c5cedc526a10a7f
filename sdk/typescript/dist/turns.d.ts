import { type CallOptions, Transport } from "./http.js";
import { type StreamEvent } from "./sse.js";
import { type Download } from "./volumes.js";
export interface TurnInfo {
    id: string;
    agent: string;
    user: string;
    createdAt: string;
    deadline: string;
    expiresAt: string;
    sandbox: Record<string, unknown>;
    acceptedOutputModes?: string[];
    calls?: number;
    running?: number;
    used?: {
        bytes: number;
        entries: number;
    };
}
export interface CallResult {
    callId: string;
    exitCode: number;
    stdout: string;
    stderr: string;
    files: {
        name: string;
        mediaType: string;
        size: number;
        url: string;
    }[];
    notes: string[];
    limit?: string;
    timedOut?: boolean;
    committed?: {
        volumeId: string;
        seq: number;
        written: number;
        removed: number;
    }[];
    conflicts?: {
        path: string;
        reason: string;
    }[];
}
/** What a call takes besides its command. */
export interface CallArgs {
    stdin?: string;
    timeoutSeconds?: number;
    /** The model's tool-call id; it names the call's kept files (made when absent). */
    callId?: string;
    /** Media types: only kept files of those types come back. */
    acceptedOutputModes?: string[];
}
/**
 * A kept file as an A2A v0.3 Artifact (the `artifact` events of `turn.callStream`), its
 * bytes decoded: `artifactId` is "CALLID/NAME".
 */
export interface Artifact {
    artifactId: string;
    name: string;
    mediaType: string;
    data: Uint8Array;
    callId: string;
}
/** The Artifact an `artifact` event carries, decoded; undefined for other events. */
export declare function artifactOf(ev: StreamEvent<unknown>): Artifact | undefined;
export declare class Turns {
    private t;
    constructor(t: Transport);
    /** A new turn for an agent and a user (its workspace is made at its first call). */
    create(body: {
        agent: string;
        user: string;
        deadlineSeconds: number;
        acceptedOutputModes?: string[];
    }, o?: CallOptions): Promise<Turn>;
    /** A handle on a turn by id (no request made). */
    turn(id: string): Turn;
}
export declare class Turn {
    private t;
    readonly info: TurnInfo;
    readonly id: string;
    private base;
    constructor(t: Transport, info: TurnInfo);
    get(o?: CallOptions): Promise<TurnInfo>;
    /**
     * Runs `sh -c command` confined and waits for it. Never retried after a dropped
     * connection (a command is not idempotent). The idle timeout is raised to cover
     * `timeoutSeconds` (default 120).
     */
    call(command: string, a?: CallArgs, o?: CallOptions): Promise<CallResult>;
    /**
     * The call as events while it runs: `stdout`, `stderr`, `file` then `artifact` for each
     * kept file (an A2A Artifact with the bytes inline: `artifactOf(ev)` decodes it), then
     * `exit` (the whole answer) or `error`. Never retried after it was sent.
     */
    callStream(command: string, a?: CallArgs, o?: CallOptions): AsyncGenerator<StreamEvent<Record<string, unknown>>>;
    /** A file a call returned. */
    file(callId: string, name: string, o?: CallOptions): Promise<Download>;
    /** Ends the turn: its calls are stopped, its workspace deleted. */
    end(o?: CallOptions): Promise<void>;
}
