"use strict";
// Server-Sent Events (the agent and relay event streams) as an async iterator.
Object.defineProperty(exports, "__esModule", { value: true });
exports.parseSse = parseSse;
/**
 * Parses a text/event-stream body into events (comments and `retry:` lines skipped; a
 * data that is not JSON is kept as its text). Ends when the body ends; breaking out of
 * the loop cancels the body, which closes the connection.
 */
async function* parseSse(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    let event = "", data = [], id;
    try {
        for (;;) {
            const { value, done } = await reader.read();
            if (done)
                return;
            buf += value;
            let nl;
            while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
                // A CR at the end of what arrived may be the first half of a CRLF: wait for more.
                if (nl === buf.length - 1 && buf[nl] === "\r")
                    break;
                const line = buf.slice(0, nl);
                buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
                if (line === "") {
                    if (data.length) {
                        const text = data.join("\n");
                        let parsed = text;
                        try {
                            parsed = JSON.parse(text);
                        }
                        catch { /* kept as text */ }
                        yield { event: event || "message", data: parsed, id };
                    }
                    event = "";
                    data = [];
                    continue;
                }
                if (line.startsWith(":"))
                    continue;
                const colon = line.indexOf(":");
                const field = colon < 0 ? line : line.slice(0, colon);
                let val = colon < 0 ? "" : line.slice(colon + 1);
                if (val.startsWith(" "))
                    val = val.slice(1);
                if (field === "event")
                    event = val;
                else if (field === "data")
                    data.push(val);
                else if (field === "id")
                    id = val;
            }
        }
    }
    finally {
        await reader.cancel().catch(() => { });
    }
}
