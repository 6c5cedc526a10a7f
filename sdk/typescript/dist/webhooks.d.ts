import { type CallOptions, Transport } from "./http.js";
/** The events a webhook can ask for. */
export type WebhookEventType = "volume.changed" | "snapshot.created" | "file.presented" | "turn.ended" | "call.conflicted" | "merge.conflicted" | "relay.session" | "relay.write_blocked";
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
/** `client.webhooks`: the organization's webhooks and their deliveries. */
export declare class Webhooks {
    private t;
    constructor(t: Transport);
    /** Registers a webhook; the answer's `secret` is shown this once (keep it to verify deliveries). */
    create(body: {
        url: string;
        events: WebhookEventType[];
        volumes?: string[];
        agents?: string[];
        description?: string;
    }, o?: CallOptions): Promise<Webhook>;
    /** Every webhook of the organization, by id (never a secret). */
    list(o?: CallOptions): Promise<Webhook[]>;
    get(id: string, o?: CallOptions): Promise<Webhook>;
    /** Changes the URL, the events, or turns it off (`disabled`). */
    update(id: string, body: {
        url?: string;
        events?: WebhookEventType[];
        disabled?: boolean;
    }, o?: CallOptions): Promise<Webhook>;
    /** Deletes a webhook and its deliveries. */
    delete(id: string, o?: CallOptions): Promise<void>;
    /** One page of a webhook's deliveries, newest first (`cursor` while more remain). */
    deliveries(id: string, q?: {
        cursor?: string;
    }, o?: CallOptions): Promise<{
        deliveries: WebhookDelivery[];
        cursor?: string;
    }>;
    /** Sends a delivery again now (the same `webhook-id`): `{id, status: "pending"}`. */
    redeliver(id: string, delivery: string, o?: CallOptions): Promise<{
        id: string;
        status: "pending";
    }>;
}
/** A delivery that is not what the secret signed, or too old or too new. */
export declare class WebhookVerificationError extends Error {
    constructor(message: string);
}
/** Headers as fetch's `Headers`, or Node's `IncomingMessage.headers` (any letter case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;
/**
 * Verifies a delivery as the Standard Webhooks specification says and returns its event:
 * `webhook-signature` holds one or more space-separated `v1,BASE64` signatures, one of
 * which must be HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` under the
 * secret (`whsec_` + base64 of the key), compared in constant time; the timestamp must
 * be within `toleranceSeconds` (default 300) of now, either way (a replay is refused).
 * `body` is the raw body as received: parsed JSON re-serialized would not match.
 * Throws WebhookVerificationError naming what failed.
 */
export declare function verifyWebhook<D = Record<string, unknown>>(secret: string, headers: WebhookHeaders, body: string | Uint8Array, o?: {
    toleranceSeconds?: number;
    now?: Date | number;
}): WebhookEvent<D>;
