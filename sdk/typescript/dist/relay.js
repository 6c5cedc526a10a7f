// Relay sessions, the agent's side (API.md "Relay"; docs/api.md "Relay").
import { isNetworkError } from "./http.js";
import { parseSse } from "./sse.js";
export class Relay {
    t;
    constructor(t) {
        this.t = t;
    }
    /** A session for an agent that declared `relay.capability`; `connectToken` is shown only here. */
    async create(body, o) {
        const info = await this.t.json({ method: "POST", path: "/v1/relay/sessions", json: body }, o);
        return Object.assign(new RelaySessionHandle(this.t, info.uid), { info });
    }
    /** The organization's sessions, newest first (`all`: ended ones too). */
    async list(q = {}, o) {
        return this.t.json({
            method: "GET", path: "/v1/relay/sessions", query: { agent: q.agent, all: q.all ? "true" : undefined },
        }, o).then((j) => j.sessions);
    }
    session(uid) {
        return new RelaySessionHandle(this.t, uid);
    }
}
export class RelaySessionHandle {
    t;
    uid;
    base;
    constructor(t, uid) {
        this.t = t;
        this.uid = uid;
        this.base = `/v1/relay/sessions/${encodeURIComponent(uid)}`;
    }
    async get(o) {
        return this.t.json({ method: "GET", path: this.base }, o);
    }
    /**
     * One operation relayed to the user's side. `wait: false` makes a supervised write
     * answer LockedError (423) with `opId` at once; see opStatus. Not retried after a
     * dropped connection unless it only reads.
     */
    op(body, o = {}) {
        return this.t.json({
            method: "POST", path: `${this.base}/ops`, json: body, query: { wait: o.wait === false ? "false" : undefined },
            idempotent: body.op !== "write_file", extraWaitMs: 120_000,
        }, o);
    }
    readFile(path, o) {
        return this.op({ op: "read_file", path }, o);
    }
    writeFile(path, content, o = {}) {
        return this.op({ op: "write_file", path, content, encoding: o.encoding }, o);
    }
    listDirectory(path, o) {
        return this.op({ op: "list_directory", path }, o);
    }
    searchFiles(pattern, q = {}, o) {
        return this.op({ op: "search_files", pattern, ...q }, o);
    }
    /** A supervised write answered 423: pending, or done with its result or error. */
    async opStatus(opId, o) {
        return this.t.json({ method: "GET", path: `${this.base}/ops/${encodeURIComponent(opId)}` }, o);
    }
    /**
     * The session's events, replayed from the start (or after `lastEventId`) then followed,
     * until `session_ended`. A stream that drops is reopened with `Last-Event-ID` set to
     * the last event seen, so no event is lost or seen twice (at most `maxRetries`
     * reconnections in a row; `resume: false` turns this off). `break` (or `signal`) closes it.
     */
    async *events(o = {}) {
        let last = o.lastEventId;
        const max = o.maxRetries ?? this.t.maxRetries;
        for (let failures = 0;;) {
            const a = await this.t.request({
                method: "GET", path: `${this.base}/events`, events: true, headers: { "Last-Event-ID": last },
            }, o);
            if (!a.body)
                return;
            try {
                for await (const ev of parseSse(a.body)) {
                    failures = 0;
                    if (ev.id !== undefined)
                        last = ev.id;
                    yield ev;
                    if (ev.event === "session_ended")
                        return;
                }
                return;
            }
            catch (e) {
                if (o.signal?.aborted || o.resume === false || !isNetworkError(e) || ++failures > max)
                    throw e;
            }
            await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** failures, 8000)));
        }
    }
    /** The session's log (scan results of blocked writes, ...). */
    async log(o) {
        return this.t.json({ method: "GET", path: `${this.base}/log` }, o);
    }
    /** Ends the session now (`endReason: "aborted"`). */
    async abort(o) {
        return this.t.json({ method: "POST", path: `${this.base}/abort`, json: {} }, o);
    }
    /** Closes the session, the job done (`endReason: "closed"`). */
    async close(o) {
        return this.t.json({ method: "DELETE", path: this.base }, o);
    }
}
