import { type BodyInput } from "./body.js";
import { type CallOptions, Transport } from "./http.js";
import { type StreamEvent } from "./sse.js";
import { type Download, type DownloadStream, type Link, type LinkOptions, type ReadOptions, Runtime, type WriteOptions, type WriteResult } from "./volumes.js";
export type Mount = {
    volumeId: string;
    path: string;
    mode: "ro" | "rw";
    subpath?: string;
    notify?: boolean;
} | {
    workspace: true;
    path?: string;
} | {
    workspace: false;
};
export interface AgentSettings {
    mounts?: Mount[];
    fileTools?: boolean;
    exclude?: string[];
    defaultExclusions?: boolean;
    sandbox?: Record<string, unknown>;
    output?: {
        files: string[];
    };
    relay?: {
        capability: boolean;
        defaultMode?: "standard" | "supervised" | "readonly";
    };
    remount?: boolean;
}
export interface Agent extends Omit<AgentSettings, "remount"> {
    id: string;
    workspaceVolumeId?: string;
    createdAt: string;
    /** Where attachments, tool outputs and scratch files go, as agent paths (null: nowhere writable). */
    places?: {
        uploads: string | null;
        toolOutputs: string | null;
        tmp: string | null;
    };
    [more: string]: unknown;
}
export interface DirEntry {
    name: string;
    path: string;
    type: "file" | "dir";
    size?: number;
    contentType?: string;
}
export interface Listing {
    path: string;
    entries: DirEntry[];
    truncated?: boolean;
}
/** The answer of a file tool: `ok`, the model's `output`, and structured fields. */
export interface ToolResult {
    ok: boolean;
    output: string;
    [field: string]: unknown;
}
/** What a run wrote and presented, as `GET /v1/agents/{id}/runs/{runId}` answers it. */
export interface RunRecord {
    runId: string;
    files: {
        path: string;
        version: number;
        size: number;
        contentType: string;
    }[];
    presented: {
        path: string;
        caption: string;
        url: string;
    }[];
}
export interface RunOptions extends CallOptions {
    files?: PromptFile[];
    /** The run's id: its uploads land in `uploads/<runId>/`; default a new UUID. */
    runId?: string;
    conversation?: string;
    format?: "anthropic" | "openai";
    /** The subject it is from (as `agent.forUser(user).run(...)`). */
    user?: string;
}
/**
 * A run started by `agent.run(text, {files})`: its id, the model message built for it
 * (`message`, the prompt's answer), and what it wrote (`files`) and presented
 * (`raw.presented`). The run's tool calls go through `run.tools` (grouped by its id);
 * after each, `files` and `raw` are read again, and `refresh()` reads them after tool
 * calls made elsewhere with the run's id (MCP `--run-id`, `X-Run-Id`).
 */
export declare class Run {
    private agent;
    readonly id: string;
    /** The model message: `{requestId, text, files, content}`. */
    readonly message: PromptResult;
    /** The run's file tools: every call carries the run's id, then the run is read again. */
    readonly tools: AgentTools;
    files: RunRecord["files"];
    raw: RunRecord;
    constructor(agent: AgentHandle, id: string, message: PromptResult);
    /** Reads the run's files and presented files again. */
    refresh(o?: CallOptions): Promise<this>;
}
/**
 * A file sent with a prompt: bytes, a Blob or File, `{name, data, contentType?}`, a local
 * file's path (a string), or `{path}`: a file already in the agent's mounts.
 */
export type PromptFile = Uint8Array | Blob | string | {
    name: string;
    data: BodyInput;
    contentType?: string;
} | {
    path: string;
};
export interface PromptOptions extends CallOptions {
    files?: PromptFile[];
    /** The prompt's id: the uploads land in `uploads/<requestId>/`; default a new UUID. */
    requestId?: string;
    conversation?: string;
    format?: "anthropic" | "openai";
    /** The subject it is from (as `agent.forUser(user).prompt(...)`): its files are kept as the subject's attachments. */
    user?: string;
}
export interface PromptResult {
    requestId: string;
    text: string;
    files: {
        path: string;
        contentType: string;
        size: number;
        sha256: string;
        shown: boolean;
        reason?: string;
    }[];
    content: Record<string, unknown>[];
    [more: string]: unknown;
}
export type ToolName = "read" | "write" | "edit" | "ls" | "glob" | "grep" | "present_file";
/** An agent handle that also carries the agent's record (`info`, and its fields). */
export type AgentWithInfo = AgentHandle & Agent & {
    info: Agent;
};
/** Agent-wide calls (no agent id yet). */
export declare class Agents {
    private t;
    /** The volumes, under seed 001's names (`createVolume`, `volume(id)`, `volumes(ids)`). */
    readonly runtime: Runtime;
    constructor(t: Transport);
    /**
     * Creates or updates an agent (201/200) and returns a handle on it (`run`, `files`,
     * `tools`...) that also has the agent's fields (`workspaceVolumeId`, `mounts`...).
     */
    upsert(id: string, settings?: AgentSettings, o?: CallOptions): Promise<AgentWithInfo>;
    get(id: string, o?: CallOptions): Promise<AgentWithInfo>;
    /** Deletes the agent and its own workspace volume (mounted volumes stay). */
    delete(id: string, o?: CallOptions): Promise<void>;
    /** A handle on one agent (no request made); `{user}`: acting for that subject (`forUser`). */
    agent(id: string, o?: {
        user?: string;
    }): AgentHandle;
}
/** One agent's calls. */
export declare class AgentHandle {
    private root;
    readonly id: string;
    readonly user?: string | undefined;
    readonly base: string;
    /** The agent's files by the paths it sees (`/workspace/out/chart.png`). */
    readonly files: AgentFiles;
    /** The file tools, as the model calls them. */
    readonly tools: AgentTools;
    private t;
    /** `user`: the subject this handle acts for (`X-Subject` on each call, the prompt's `user`). */
    constructor(root: Transport, id: string, user?: string | undefined);
    /**
     * This agent acting for subject `user` (no request): its files, uploads, tool calls,
     * runs, links, prompts and `resolve` are that subject's, with `/user` and
     * `/attachments` among the mounts (API.md "Subjects").
     */
    forUser(user: string): AgentHandle;
    /**
     * `input` (a tool's arguments) with every `{"$file": path}` in it replaced by that file:
     * `{path, name, contentType, size, sha256, data}` (base64, 16 MiB in all), or with
     * `{as: "url"}` a signed link instead of `data`.
     */
    resolve(input: unknown, o?: CallOptions & {
        as?: "base64" | "url";
    }): Promise<unknown>;
    /** The client's transport (for the objects a handle makes). */
    get transport(): Transport;
    get(o?: CallOptions): Promise<Agent>;
    upsert(settings?: AgentSettings, o?: CallOptions): Promise<Agent>;
    /** Replaces the mounts (applies from the agent's next call). */
    setMounts(mounts: Mount[], o?: CallOptions): Promise<Agent>;
    /**
     * Starts a run (seed 001): every file is uploaded first, streamed, once, under
     * `uploads/<run id>/`, then the model message is built through `prompt` (the same id,
     * so a retried run uploads nothing twice). The Run's `files` and `raw.presented` fill
     * as the run's tool calls (`run.tools`, or any call with its id) write and present.
     */
    run(text: string, o?: RunOptions): Promise<Run>;
    /** What a run wrote and presented (`GET .../runs/{runId}`). */
    getRun(runId: string, o?: CallOptions): Promise<RunRecord>;
    /**
     * The agent's events (`files_changed`, `file_presented`) as they happen, for as long as
     * the loop runs; `break` (or `signal`) closes the stream.
     */
    events(o?: CallOptions): AsyncGenerator<StreamEvent<Record<string, unknown>>>;
    /**
     * A user message with its files, as the model should see it. Every file that is not a
     * `{path}` is first uploaded, streamed, to `uploads/<requestId>/<name>`; a retry with the
     * same `requestId` uploads nothing twice (the server replays) and the prompt itself is
     * idempotent by that id.
     */
    prompt(text: string, o?: PromptOptions): Promise<PromptResult>;
    private promptChecked;
    /** The whole model request of a conversation, rebuilt from its references. */
    conversationRequest(conversation: string, o?: CallOptions & {
        format?: "anthropic" | "openai";
    }): Promise<Record<string, unknown>>;
    /**
     * An upload: saved at `uploads/<requestId>/<name>` of the workspace; a retry never
     * writes twice (`replayed: true`).
     */
    upload(requestId: string, name: string, data: BodyInput, o?: {
        contentType?: string;
    } & CallOptions): Promise<WriteResult>;
    /** A subject's workspace (one volume per agent and subject). */
    subject(id: string): Subject;
    /** Writes a skill (`name` without `.md`), copied to each subject's `skills/` at session start. */
    putSkill(name: string, data: BodyInput, o?: CallOptions): Promise<{
        name: string;
        size: number;
        sha256: string;
        version: number;
    }>;
}
/** An agent's files by agent path. */
export declare class AgentFiles {
    private t;
    private base;
    constructor(t: Transport, base: string);
    private url;
    /** The file whole: `{data, contentType, version}`. */
    download(path: string, o?: Omit<ReadOptions, "snapshot">): Promise<Download>;
    /** The file as a stream, resumed after a dropped connection (as a volume download). */
    stream(path: string, o?: CallOptions): Promise<DownloadStream>;
    /** Writes a file by agent path, streamed, with the agent's own access. */
    upload(path: string, data: BodyInput, o?: WriteOptions): Promise<WriteResult>;
    remove(path: string, o?: CallOptions): Promise<{
        path: string;
        seq: number;
    }>;
    /**
     * The immediate children of a folder: `list("/workspace/out")` or
     * `list({path: "/workspace/out"})` (default: the server's, the first mount).
     */
    list(path?: string | {
        path?: string;
    }, o?: CallOptions): Promise<Listing>;
    /**
     * A tool's file output, streamed, saved at `tool-outputs/<callId>/<name>` of the
     * workspace (a subject's: `/user/tool-outputs/...`); a retry never writes twice
     * (`replayed: true`).
     */
    toolOutput(callId: string, name: string, data: BodyInput, o?: {
        contentType?: string;
    } & CallOptions): Promise<WriteResult>;
    /** A signed link to a file by agent path. */
    link(path: string, o?: LinkOptions): Promise<Link>;
}
/** The file tools; `runId` groups calls into a run (`X-Run-Id`). */
export declare class AgentTools {
    private t;
    private base;
    private runId?;
    private after?;
    constructor(t: Transport, base: string, runId?: string | undefined, after?: (() => Promise<void>) | undefined);
    /** Runs one tool by name with its arguments, as the model would. */
    call(tool: ToolName | string, args: Record<string, unknown>, o?: CallOptions & {
        runId?: string;
    }): Promise<ToolResult>;
    read(a: {
        path: string;
        offset?: number;
        limit?: number;
        encoding?: "base64";
    }, o?: CallOptions & {
        runId?: string;
    }): Promise<ToolResult>;
    write(a: {
        path: string;
        content: string;
    }, o?: CallOptions & {
        runId?: string;
    }): Promise<ToolResult>;
    edit(a: {
        path: string;
        oldString: string;
        newString: string;
        replaceAll?: boolean;
    }, o?: CallOptions & {
        runId?: string;
    }): Promise<ToolResult>;
    ls(a?: {
        path?: string;
    }, o?: CallOptions & {
        runId?: string;
    }): Promise<ToolResult>;
    glob(a: {
        pattern: string;
        path?: string;
    }, o?: CallOptions & {
        runId?: string;
    }): Promise<ToolResult>;
    grep(a: {
        pattern: string;
        path?: string;
        glob?: string;
        ignoreCase?: boolean;
        context?: number;
        outputMode?: "content" | "files" | "count";
        limit?: number;
    }, o?: CallOptions & {
        runId?: string;
    }): Promise<ToolResult>;
    presentFile(a: {
        path: string;
        caption?: string;
    }, o?: CallOptions & {
        runId?: string;
    }): Promise<ToolResult>;
}
/** One subject's workspace under an agent, and its memory files. */
export declare class Subject {
    private t;
    private base;
    constructor(t: Transport, base: string);
    /** Writes one file from text (or base64 with `encoding`). */
    write(path: string, content: string | Uint8Array, o?: CallOptions & {
        createParents?: boolean;
    }): Promise<WriteResult>;
    /** The bytes of one file. */
    read(path: string, o?: CallOptions): Promise<Download>;
    list(path?: string, o?: CallOptions): Promise<Listing>;
    move(from: string, to: string, o?: CallOptions & {
        overwrite?: boolean;
    }): Promise<{
        from: string;
        to: string;
        seq: number;
        moved: number;
    }>;
    /** Removes a file, or a folder and all under it, as one change. */
    remove(path: string, o?: CallOptions): Promise<{
        path: string;
        seq: number;
        removed: number;
    }>;
    /** `{volumeId, used, capacity, ceiling, files}`; `volumeId` is null while the subject has no workspace yet (a read never makes one). */
    volume(o?: CallOptions): Promise<{
        volumeId: string | null;
        used: number;
        capacity: number;
        ceiling: number;
        files: number;
    }>;
    /** Reads `USER.md` or `MEMORY.md` of `memories/`, as text. */
    readMemory(name: "USER.md" | "MEMORY.md", o?: CallOptions): Promise<string>;
    /** Writes `USER.md` or `MEMORY.md` (the only way to write `memories/`). */
    writeMemory(name: "USER.md" | "MEMORY.md", data: BodyInput, o?: CallOptions): Promise<WriteResult>;
    /** Starts a sandbox session: `skills/` becomes the agent's skills. */
    startSession(o?: CallOptions): Promise<{
        volumeId: string;
        skills: string[];
    }>;
}
