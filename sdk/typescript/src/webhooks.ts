// Webhooks: the organization's events posted to URLs (API.md "Webhooks"), and the check a
// receiver makes of a delivery: Standard Webhooks signatures (webhook-id,
// webhook-timestamp, webhook-signature), verified here without a dependency.

import { createHmac, timingSafeEqual } from "node:crypto";
import * as check from "./check.js";
import { type CallOptions, Transport } from "./http.js";

/** The events a webhook can ask for. */
export type WebhookEventType =
  | "volume.changed" | "snapshot.created" | "file.presented" | "turn.ended"
  | "call.conflicted" | "merge.conflicted" | "relay.session" | "relay.write_blocked";

export interface Webhook {
  id: string;
  url: string;
  events: WebhookEventType[];
  volumes: string[];
  agents: string[];
  description?: string;
  disabled: boolean;
  createdAt: string;
  /** `whsec_` + base64: in `create`'s answer only. */
  secret?: string;
  [more: string]: unknown;
}

export interface WebhookDelivery {
  id: string;
  event: WebhookEventType;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  createdAt: string;
  lastError?: string;
  nextAttemptAt?: string;
  deliveredAt?: string;
}

/** A delivery's body: `id` is the delivery's (`msg_...`, the same as `webhook-id`). */
export interface WebhookEvent<D = Record<string, unknown>> {
  id: string;
  type: WebhookEventType;
  createdAt: string;
  data: D;
}

const CREATE = ["url", "events", "volumes", "agents", "description"] as const;
const UPDATE = ["url", "events", "disabled"] as const;

function checkEvents(w: string, v: unknown, optional: boolean): void {
  if (v === undefined && optional) return;
  check.strs(w, "events", v);
}

/** `client.webhooks`: the organization's webhooks and their deliveries. */
export class Webhooks {
  constructor(private t: Transport) {}

  /** Registers a webhook; the answer's `secret` is shown this once (keep it to verify deliveries). */
  async create(body: { url: string; events: WebhookEventType[]; volumes?: string[]; agents?: string[]; description?: string }, o?: CallOptions): Promise<Webhook> {
    const w = "webhooks.create";
    check.fields(w, "the webhook", body, CREATE, false);
    check.str(w, "url", body.url);
    checkEvents(w, body.events, false);
    if (body.volumes !== undefined) check.strs(w, "volumes", body.volumes);
    if (body.agents !== undefined) check.strs(w, "agents", body.agents);
    check.optStr(w, "description", body.description);
    check.opts(w, "options", o);
    return this.t.json({ method: "POST", path: "/v1/webhooks", json: body }, o);
  }

  /** Every webhook of the organization, by id (never a secret). */
  async list(o?: CallOptions): Promise<Webhook[]> {
    check.opts("webhooks.list", "options", o);
    return this.t.json<{ webhooks: Webhook[] }>({ method: "GET", path: "/v1/webhooks" }, o).then((j) => j.webhooks);
  }

  async get(id: string, o?: CallOptions): Promise<Webhook> {
    check.str("webhooks.get", "id", id);
    check.opts("webhooks.get", "options", o);
    return this.t.json({ method: "GET", path: `/v1/webhooks/${encodeURIComponent(id)}` }, o);
  }

  /** Changes the URL, the events, or turns it off (`disabled`). */
  async update(id: string, body: { url?: string; events?: WebhookEventType[]; disabled?: boolean }, o?: CallOptions): Promise<Webhook> {
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
  async delete(id: string, o?: CallOptions): Promise<void> {
    check.str("webhooks.delete", "id", id);
    check.opts("webhooks.delete", "options", o);
    await this.t.json({ method: "DELETE", path: `/v1/webhooks/${encodeURIComponent(id)}` }, o);
  }

  /** One page of a webhook's deliveries, newest first (`cursor` while more remain). */
  async deliveries(id: string, q: { cursor?: string } = {}, o?: CallOptions): Promise<{ deliveries: WebhookDelivery[]; cursor?: string }> {
    const w = "webhooks.deliveries";
    check.str(w, "id", id);
    check.fields(w, "the query", q, ["cursor"]);
    check.optStr(w, "cursor", q.cursor);
    check.opts(w, "options", o);
    return this.t.json({ method: "GET", path: `/v1/webhooks/${encodeURIComponent(id)}/deliveries`, query: q }, o);
  }

  /** Sends a delivery again now (the same `webhook-id`): `{id, status: "pending"}`. */
  async redeliver(id: string, delivery: string, o?: CallOptions): Promise<{ id: string; status: "pending" }> {
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
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

/** Headers as fetch's `Headers`, or Node's `IncomingMessage.headers` (any letter case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function header(h: WebhookHeaders, name: string): string | undefined {
  if (h instanceof Headers) return h.get(name) ?? undefined;
  for (const [k, v] of Object.entries(h)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(" ") : v;
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
export function verifyWebhook<D = Record<string, unknown>>(
  secret: string, headers: WebhookHeaders, body: string | Uint8Array,
  o: { toleranceSeconds?: number; now?: Date | number } = {},
): WebhookEvent<D> {
  const w = "verifyWebhook";
  check.str(w, "secret", secret);
  if (headers === null || typeof headers !== "object") throw new TypeError(`${w}: headers must be an object or Headers`);
  if (typeof body !== "string" && !(body instanceof Uint8Array)) throw new TypeError(`${w}: body must be the raw body, a string or bytes`);
  check.fields(w, "options", o, ["toleranceSeconds", "now"]);
  check.optInt(w, "toleranceSeconds", o.toleranceSeconds);
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
  if (key.length === 0) throw new TypeError(`${w}: secret is not whsec_ followed by base64`);
  const id = header(headers, "webhook-id");
  const ts = header(headers, "webhook-timestamp");
  const sigs = header(headers, "webhook-signature");
  if (!id || !ts || !sigs) {
    throw new WebhookVerificationError("missing header: webhook-id, webhook-timestamp and webhook-signature are needed");
  }
  if (!/^\d{1,15}$/.test(ts)) throw new WebhookVerificationError(`webhook-timestamp ${JSON.stringify(ts.slice(0, 20))} is not Unix seconds`);
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
    if (comma < 0 || s.slice(0, comma) !== "v1") continue;
    const got = Buffer.from(s.slice(comma + 1), "base64");
    // every candidate compared in full: the time taken says nothing of which matched
    if (got.length === want.length && timingSafeEqual(got, want)) ok = true;
  }
  if (!ok) throw new WebhookVerificationError("no v1 signature in webhook-signature matches the body under this secret");
  try {
    return JSON.parse(raw.toString("utf8")) as WebhookEvent<D>;
  } catch {
    throw new WebhookVerificationError("the signed body is not JSON");
  }
}
