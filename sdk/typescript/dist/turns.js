// Turns: scratch workspaces for confined tool calls (API.md "Turns").
import * as check from "./check.js";
import { parseSse } from "./sse.js";
import { bytesOf, downloadInfo } from "./volumes.js";
/** The Artifact an `artifact` event carries, decoded; undefined for other events. */
export function artifactOf(ev) {
    if (ev.event !== "artifact" || ev.data === null || typeof ev.data !== "object")
        return undefined;
    const d = ev.data;
    const f = d.parts?.[0]?.file ?? {};
    return {
        artifactId: String(d.artifactId ?? ""),
        name: String(f.name ?? ""),
        mediaType: String(f.mimeType ?? ""),
        data: new Uint8Array(Buffer.from(f.bytes ?? "", "base64")),
        callId: String(d.metadata?.call_id ?? ""),
    };
}
function callBody(where, command, a) {
    check.str(where, "command", command);
    check.fields(where, "the call", a, ["stdin", "timeoutSeconds", "callId", "acceptedOutputModes"]);
    check.optStr(where, "stdin", a.stdin);
    check.optInt(where, "timeoutSeconds", a.timeoutSeconds);
    check.optStr(where, "callId", a.callId);
    if (a.acceptedOutputModes !== undefined)
        check.strs(where, "acceptedOutputModes", a.acceptedOutputModes);
    return { command, ...a };
}
export class Turns {
    t;
    constructor(t) {
        this.t = t;
    }
    /** A new turn for an agent and a user (its workspace is made at its first call). */
    async create(body, o) {
        check.fields("turns.create", "the turn", body, ["agent", "user", "deadlineSeconds", "acceptedOutputModes"], false);
        check.str("turns.create", "agent", body.agent);
        check.str("turns.create", "user", body.user);
        check.int("turns.create", "deadlineSeconds", body.deadlineSeconds);
        check.opts("turns.create", "options", o);
        const info = await this.t.json({ method: "POST", path: "/v1/turns", json: body }, o);
        return new Turn(this.t, info);
    }
    /** A handle on a turn by id (no request made). */
    turn(id) {
        check.str("turns.turn", "id", id);
        return new Turn(this.t, { id });
    }
}
export class Turn {
    t;
    info;
    id;
    base;
    constructor(t, info) {
        this.t = t;
        this.info = info;
        this.id = info.id;
        this.base = `/v1/turns/${encodeURIComponent(info.id)}`;
    }
    async get(o) {
        check.opts("turn.get", "options", o);
        return this.t.json({ method: "GET", path: this.base }, o);
    }
    /**
     * Runs `sh -c command` confined and waits for it. Never retried after a dropped
     * connection (a command is not idempotent). The idle timeout is raised to cover
     * `timeoutSeconds` (default 120).
     */
    async call(command, a = {}, o) {
        const json = callBody("turn.call", command, a);
        check.opts("turn.call", "options", o);
        return this.t.json({
            method: "POST", path: `${this.base}/calls`, json,
            extraWaitMs: (a.timeoutSeconds ?? 120) * 1000,
        }, o);
    }
    /**
     * The call as events while it runs: `stdout`, `stderr`, `file` then `artifact` for each
     * kept file (an A2A Artifact with the bytes inline: `artifactOf(ev)` decodes it), then
     * `exit` (the whole answer) or `error`. Never retried after it was sent.
     */
    async *callStream(command, a = {}, o = {}) {
        const json = callBody("turn.callStream", command, a);
        check.opts("turn.callStream", "options", o);
        const r = await this.t.request({
            method: "POST", path: `${this.base}/calls`, json, events: true, idempotent: false,
            headers: { Accept: "text/event-stream" },
        }, o);
        if (r.body)
            yield* parseSse(r.body);
    }
    /** A file a call returned. */
    async file(callId, name, o) {
        check.str("turn.file", "callId", callId);
        check.str("turn.file", "name", name);
        check.opts("turn.file", "options", o);
        return this.t.request({
            method: "GET", path: `${this.base}/files/${encodeURIComponent(callId)}/${encodeURIComponent(name)}`,
        }, o, async (r) => ({ ...downloadInfo(r), data: await bytesOf(r) }));
    }
    /** Ends the turn: its calls are stopped, its workspace deleted. */
    async end(o) {
        check.opts("turn.end", "options", o);
        await this.t.json({ method: "DELETE", path: this.base }, o);
    }
}
