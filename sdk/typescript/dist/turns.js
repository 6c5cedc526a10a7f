// Turns: scratch workspaces for confined tool calls (API.md "Turns").
import * as check from "./check.js";
import { bytesOf, downloadInfo } from "./volumes.js";
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
        check.str("turn.call", "command", command);
        check.fields("turn.call", "the call", a, ["stdin", "timeoutSeconds"]);
        check.optInt("turn.call", "timeoutSeconds", a.timeoutSeconds);
        check.opts("turn.call", "options", o);
        return this.t.json({
            method: "POST", path: `${this.base}/calls`, json: { command, ...a },
            extraWaitMs: (a.timeoutSeconds ?? 120) * 1000,
        }, o);
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
