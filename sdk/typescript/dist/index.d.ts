import { type AgentHandle, Agents, type AgentSettings, type AgentWithInfo } from "./agents.js";
import { type CallOptions, type ClientOptions, Transport } from "./http.js";
import { Relay } from "./relay.js";
import { Turns } from "./turns.js";
import { Runtime, type VolumeHandle, Volumes } from "./volumes.js";
import { Webhooks } from "./webhooks.js";
export * from "./errors.js";
export * from "./volumes.js";
export * from "./agents.js";
export * from "./turns.js";
export * from "./relay.js";
export * from "./webhooks.js";
export { type StreamEvent } from "./sse.js";
export { type BodyInput, fromFile } from "./body.js";
export { saveTo } from "./save.js";
export { type CallOptions, type ClientOptions } from "./http.js";
export interface Key {
    key: string;
    org: string;
    agent?: string;
    [more: string]: unknown;
}
/** The client. Options default to `$COFFER_URL` and `$COFFER_KEY`. */
export declare class Coffer {
    readonly transport: Transport;
    readonly volumes: Volumes;
    readonly agents: Agents;
    readonly turns: Turns;
    readonly relay: Relay;
    /** The organization's webhooks and their deliveries (`verifyWebhook` checks one received). */
    readonly webhooks: Webhooks;
    /** The volumes under seed 001's names: `createVolume`, `volume(id)`, `volumes(ids)`. */
    readonly runtime: Runtime;
    constructor(o?: ClientOptions);
    /** `agents.upsert`: creates or updates an agent and returns a handle on it (seed 001's `agents.upsert`). */
    upsert(id: string, settings?: AgentSettings, o?: CallOptions): Promise<AgentWithInfo>;
    /** `client.volume(id)`: a handle on one volume. */
    volume(id: string): VolumeHandle;
    /** `client.agent(id, {user?})`: a handle on one agent (acting for subject `user` when given). */
    agent(id: string, o?: {
        user?: string;
    }): AgentHandle;
    /**
     * Mints a key: of this organization, of a new one (`org`, admin key only), or bound to
     * one agent (`agent`). The secret is in this answer only.
     */
    createKey(body?: {
        org?: string;
        agent?: string;
        name?: string;
        expiresIn?: number;
        readOnly?: boolean;
    }, o?: CallOptions): Promise<Key>;
    /** `GET /v1/health`. */
    health(o?: CallOptions): Promise<{
        ok: boolean;
        version: string;
    }>;
}
export default Coffer;
