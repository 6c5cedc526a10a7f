// Webhooks: the organization's events posted to URLs (API.md "Webhooks"), and the check a
// receiver makes of a delivery: Standard Webhooks signatures (webhook-id,
// webhook-timestamp, webhook-signature), verified here without a dependency.
import { createHmac, timingSafeEqual } from "node:crypto";
import * as check from "./check.js";
const CREATE = ["url", "events", "volumes", "agents", "description"];
const UPDATE = ["url", "events", "disabled"];
function checkEvents(w, v, optional) {
    if (v === undefined && optional)
        return;
    check.strs(w, "events", v);
}
/** `client.webhooks`: the organization's webhooks and their deliveries. */
export class Webhooks {
    t;
    constructor(t) {
        this.t = t;
    }
    /** Registers a webhook; the answer's `secret` is shown this once (keep it to verify deliveries). */
    async create(body, o) {
        const w = "webhooks.create";
        check.fields(w, "the webhook", body, CREATE, false);
        check.str(w, "url", body.url);
        checkEvents(w, body.events, false);
        if (body.volumes !== undefined)
            check.strs(w, "volumes", body.volumes);
        if (body.agents !== undefined)
            check.strs(w, "agents", body.agents);
        check.optStr(w, "description", body.description);
        check.opts(w, "options", o);
        return this.t.json({ method: "POST", path: "/v1/webhooks", json: body }, o);
    }
    /** Every webhook of the organization, by id (never a secret). */
    async list(o) {
        check.opts("webhooks.list", "options", o);
        return this.t.json({ method: "GET", path: "/v1/webhooks" }, o).then((j) => j.webhooks);
    }
    async get(id, o) {
        check.str("webhooks.get", "id", id);
        check.opts("webhooks.get", "options", o);
        return this.t.json({ method: "GET", path: `/v1/webhooks/${encodeURIComponent(id)}` }, o);
    }
    /** Changes the URL, the events, or turns it off (`disabled`). */
    async update(id, body, o) {
        const w = "webhooks.update";
        check.str(w, "id", id);
        check.fields(w, "the change", body, UPDATE, false);
        check.optStr(w, "url", body.url);
        checkEvents(w, body.events, true);
        check.optBool(w, "disabled", body.disabled);
        check.opts(w, "options", o);
        return this.t.json({ method: "PATCH", path: `/v1/webhooks/${encodeURIComponent(id)}`, json: body, idempotent: true }, o);
    }
    /** Deletes a webhook and its deliveries. */
    async delete(id, o) {
        check.str("webhooks.delete", "id", id);
        check.opts("webhooks.delete", "options", o);
        await this.t.json({ method: "DELETE", path: `/v1/webhooks/${encodeURIComponent(id)}` }, o);
    }
    /** One page of a webhook's deliveries, newest first (`cursor` while more remain). */
    async deliveries(id, q = {}, o) {
        const w = "webhooks.deliveries";
        check.str(w, "id", id);
        check.fields(w, "the query", q, ["cursor"]);
        check.optStr(w, "cursor", q.cursor);
        check.opts(w, "options", o);
        return this.t.json({ method: "GET", path: `/v1/webhooks/${encodeURIComponent(id)}/deliveries`, query: q }, o);
    }
    /** Sends a delivery again now (the same `webhook-id`): `{id, status: "pending"}`. */
    async redeliver(id, delivery, o) {
        const w = "webhooks.redeliver";
        check.str(w, "id", id);
        check.str(w, "delivery", delivery);
        check.opts(w, "options", o);
        return this.t.json({
            method: "POST", idempotent: true,
            path: `/v1/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(delivery)}/redeliver`,
        }, o);
    }
}
/** A delivery that is not what the secret signed, or too old or too new. */
export class WebhookVerificationError extends Error {
    constructor(message) {
        super(message);
        this.name = "WebhookVerificationError";
    }
}
function header(h, name) {
    if (h instanceof Headers)
        return h.get(name) ?? undefined;
    for (const [k, v] of Object.entries(h)) {
        if (k.toLowerCase() === name)
            return Array.isArray(v) ? v.join(" ") : v;
    }
    return undefined;
}
/**
 * Verifies a delivery as the Standard Webhooks specification says and returns its event:
 * `webhook-signature` holds one or more space-separated `v1,BASE64` signatures, one of
 * which must be HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` under the
 * secret (`whsec_` + base64 of the key), compared in constant time; the timestamp must
 * be within `toleranceSeconds` (default 300) of now, either way (a replay is refused).
 * `body` is the raw body as received: parsed JSON re-serialized would not match.
 * Throws WebhookVerificationError naming what failed.
 */
export function verifyWebhook(secret, headers, body, o = {}) {
    const w = "verifyWebhook";
    check.str(w, "secret", secret);
    if (headers === null || typeof headers !== "object")
        throw new TypeError(`${w}: headers must be an object or Headers`);
    if (typeof body !== "string" && !(body instanceof Uint8Array))
        throw new TypeError(`${w}: body must be the raw body, a string or bytes`);
    check.fields(w, "options", o, ["toleranceSeconds", "now"]);
    check.optInt(w, "toleranceSeconds", o.toleranceSeconds);
    const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
    if (key.length === 0)
        throw new TypeError(`${w}: secret is not whsec_ followed by base64`);
    const id = header(headers, "webhook-id");
    const ts = header(headers, "webhook-timestamp");
    const sigs = header(headers, "webhook-signature");
    if (!id || !ts || !sigs) {
        throw new WebhookVerificationError("missing header: webhook-id, webhook-timestamp and webhook-signature are needed");
    }
    if (!/^\d{1,15}$/.test(ts))
        throw new WebhookVerificationError(`webhook-timestamp ${JSON.stringify(ts.slice(0, 20))} is not Unix seconds`);
    const now = Math.floor((o.now === undefined ? Date.now() : Number(o.now)) / 1000);
    const tolerance = o.toleranceSeconds ?? 300;
    if (Math.abs(now - Number(ts)) > tolerance) {
        throw new WebhookVerificationError(`webhook-timestamp ${ts} is more than ${tolerance} s from now (${now})`);
    }
    const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    const want = createHmac("sha256", key).update(`${id}.${ts}.`).update(raw).digest();
    let ok = false;
    for (const s of sigs.split(" ")) {
        const comma = s.indexOf(",");
        if (comma < 0 || s.slice(0, comma) !== "v1")
            continue;
        const got = Buffer.from(s.slice(comma + 1), "base64");
        // every candidate compared in full: the time taken says nothing of which matched
        if (got.length === want.length && timingSafeEqual(got, want))
            ok = true;
    }
    if (!ok)
        throw new WebhookVerificationError("no v1 signature in webhook-signature matches the body under this secret");
    try {
        return JSON.parse(raw.toString("utf8"));
    }
    catch {
        throw new WebhookVerificationError("the signed body is not JSON");
    }
}
