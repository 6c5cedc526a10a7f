// Relay sessions, the agent's side (API.md "Relay"; docs/api.md "Relay").
import * as check from "./check.js";
import { isNetworkError } from "./http.js";
import { parseSse } from "./sse.js";
export class Relay {
    t;
    constructor(t) {
        this.t = t;
    }
    /** A session for an agent that declared `relay.capability`; `connectToken` is shown only here. */
    async create(body, o) {
        check.fields("relay.create", "the session", body, ["agent", "limits"], false);
        check.str("relay.create", "agent", body.agent);
        check.opts("relay.create", "options", o);
        const info = await this.t.json({ method: "POST", path: "/v1/relay/sessions", json: body }, o);
        return Object.assign(new RelaySessionHandle(this.t, info.uid), { info });
    }
    /** The organization's sessions, newest first (`all`: ended ones too). */
    async list(q = {}, o) {
        check.fields("relay.list", "the query", q, ["agent", "all"]);
        check.optStr("relay.list", "agent", q.agent);
        check.opts("relay.list", "options", o);
        return this.t.json({
            method: "GET", path: "/v1/relay/sessions", query: { agent: q.agent, all: q.all ? "true" : undefined },
        }, o).then((j) => j.sessions);
    }
    session(uid) {
        check.str("relay.session", "uid", uid);
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
        check.opts("session.get", "options", o);
        return this.t.json({ method: "GET", path: this.base }, o);
    }
    /**
     * One operation relayed to the user's side. `wait: false` makes a supervised write
     * answer LockedError (423) with `opId` at once; see opStatus. Not retried after a
     * dropped connection unless it only reads.
     */
    async op(body, o = {}) {
        check.fields("session.op", "the op", body, ["op", "path", "content", "encoding", "pattern", "glob", "maxResults"], false);
        check.str("session.op", "op", body.op);
        check.opts("session.op", "options", o, ["wait"]);
        check.optBool("session.op", "wait", o.wait);
        return this.t.json({
            method: "POST", path: `${this.base}/ops`, json: body, query: { wait: o.wait === false ? "false" : undefined },
            idempotent: body.op !== "write_file", extraWaitMs: 120_000,
        }, o);
    }
    readFile(path, o) {
        check.str("session.readFile", "path", path);
        check.opts("session.readFile", "options", o);
        return this.op({ op: "read_file", path }, o);
    }
    writeFile(path, content, o = {}) {
        check.str("session.writeFile", "path", path);
        if (typeof content !== "string")
            throw new TypeError("session.writeFile: content must be a string (text, or base64 with {encoding: \"base64\"})");
        check.opts("session.writeFile", "options", o, ["encoding", "wait"]);
        const { encoding, ...rest } = o;
        return this.op({ op: "write_file", path, content, encoding }, rest);
    }
    listDirectory(path, o) {
        check.optStr("session.listDirectory", "path", path);
        check.opts("session.listDirectory", "options", o);
        return this.op({ op: "list_directory", path }, o);
    }
    searchFiles(pattern, q = {}, o) {
        check.str("session.searchFiles", "pattern", pattern);
        check.fields("session.searchFiles", "the query", q, ["path", "glob", "maxResults"]);
        check.opts("session.searchFiles", "options", o);
        return this.op({ op: "search_files", pattern, ...q }, o);
    }
    /** A supervised write answered 423: pending, or done with its result or error. */
    async opStatus(opId, o) {
        check.str("session.opStatus", "opId", opId);
        check.opts("session.opStatus", "options", o);
        return this.t.json({ method: "GET", path: `${this.base}/ops/${encodeURIComponent(opId)}` }, o);
    }
    /**
     * The session's events, replayed from the start (or after `lastEventId`) then followed,
     * until `session_ended`. A stream that drops is reopened with `Last-Event-ID` set to
     * the last event seen, so no event is lost or seen twice (at most `maxRetries`
     * reconnections in a row; `resume: false` turns this off). `break` (or `signal`) closes it.
     */
    async *events(o = {}) {
        check.opts("session.events", "options", o, ["lastEventId", "resume"]);
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
        check.opts("session.log", "options", o);
        return this.t.json({ method: "GET", path: `${this.base}/log` }, o);
    }
    /** Ends the session now (`endReason: "aborted"`). */
    async abort(o) {
        check.opts("session.abort", "options", o);
        return this.t.json({ method: "POST", path: `${this.base}/abort`, json: {} }, o);
    }
    /** Closes the session, the job done (`endReason: "closed"`). */
    async close(o) {
        check.opts("session.close", "options", o);
        return this.t.json({ method: "DELETE", path: this.base }, o);
    }
}
