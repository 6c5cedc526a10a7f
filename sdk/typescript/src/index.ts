// coffer's TypeScript SDK: `new Coffer({url, key})`, then volumes, agents, turns, relay.

import { Agents, type AgentHandle } from "./agents.js";
import { type CallOptions, type ClientOptions, Transport } from "./http.js";
import { Relay } from "./relay.js";
import { Turns } from "./turns.js";
import { type VolumeHandle, Volumes } from "./volumes.js";

export * from "./errors.js";
export * from "./volumes.js";
export * from "./agents.js";
export * from "./turns.js";
export * from "./relay.js";
export { type StreamEvent } from "./sse.js";
export { type BodyInput, fromFile } from "./body.js";
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

  constructor(o: ClientOptions = {}) {
    this.transport = new Transport(o);
    this.volumes = new Volumes(this.transport);
    this.agents = new Agents(this.transport);
    this.turns = new Turns(this.transport);
    this.relay = new Relay(this.transport);
  }

  /** `client.volume(id)`: a handle on one volume. */
  volume(id: string): VolumeHandle {
    return this.volumes.volume(id);
  }

  /** `client.agent(id)`: a handle on one agent. */
  agent(id: string): AgentHandle {
    return this.agents.agent(id);
  }

  /**
   * Mints a key: of this organization, of a new one (`org`, admin key only), or bound to
   * one agent (`agent`). The secret is in this answer only.
   */
  async createKey(body: { org?: string; agent?: string } = {}, o?: CallOptions): Promise<Key> {
    return this.transport.json({ method: "POST", path: "/v1/keys", json: body }, o);
  }

  /** `GET /v1/health`. */
  async health(o?: CallOptions): Promise<{ ok: boolean }> {
    return this.transport.json({ method: "GET", path: "/v1/health" }, o);
  }
}

export default Coffer;
