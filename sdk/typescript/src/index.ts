// coffer's TypeScript SDK: `new Coffer({url, key})`, then volumes, agents, turns, relay, webhooks.

import { type AgentHandle, Agents, type AgentSettings, type AgentWithInfo } from "./agents.js";
import * as check from "./check.js";
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
export class Coffer {
  readonly transport: Transport;
  readonly volumes: Volumes;
  readonly agents: Agents;
  readonly turns: Turns;
  readonly relay: Relay;
  /** The organization's webhooks and their deliveries (`verifyWebhook` checks one received). */
  readonly webhooks: Webhooks;
  /** The volumes under seed 001's names: `createVolume`, `volume(id)`, `volumes(ids)`. */
  readonly runtime: Runtime;

  constructor(o: ClientOptions = {}) {
    check.fields("new Coffer", "options", o, ["url", "key", "timeoutMs", "maxRetries", "retryBaseMs", "retryMaxMs", "fetch"]);
    check.optStr("new Coffer", "url", o.url);
    check.optStr("new Coffer", "key", o.key);
    this.transport = new Transport(o);
    this.volumes = new Volumes(this.transport);
    this.agents = new Agents(this.transport);
    this.turns = new Turns(this.transport);
    this.relay = new Relay(this.transport);
    this.webhooks = new Webhooks(this.transport);
    this.runtime = this.agents.runtime;
  }

  /** `agents.upsert`: creates or updates an agent and returns a handle on it (seed 001's `agents.upsert`). */
  upsert(id: string, settings: AgentSettings = {}, o?: CallOptions): Promise<AgentWithInfo> {
    return this.agents.upsert(id, settings, o);
  }

  /** `client.volume(id)`: a handle on one volume. */
  volume(id: string): VolumeHandle {
    check.str("volume", "id", id);
    return this.volumes.volume(id);
  }

  /** `client.agent(id, {user?})`: a handle on one agent (acting for subject `user` when given). */
  agent(id: string, o: { user?: string } = {}): AgentHandle {
    check.str("agent", "id", id);
    return this.agents.agent(id, o);
  }

  /**
   * Mints a key: of this organization, of a new one (`org`, admin key only), or bound to
   * one agent (`agent`). The secret is in this answer only.
   */
  async createKey(body: { org?: string; agent?: string; name?: string; expiresIn?: number; readOnly?: boolean } = {}, o?: CallOptions): Promise<Key> {
    check.fields("createKey", "the key", body, ["org", "agent", "name", "expiresIn", "readOnly"]);
    check.opts("createKey", "options", o);
    return this.transport.json({ method: "POST", path: "/v1/keys", json: body }, o);
  }

  /** `GET /v1/health`. */
  async health(o?: CallOptions): Promise<{ ok: boolean; version: string }> {
    check.opts("health", "options", o);
    return this.transport.json({ method: "GET", path: "/v1/health" }, o);
  }
}

export default Coffer;
