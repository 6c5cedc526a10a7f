// coffer's TypeScript SDK: `new Coffer({url, key})`, then volumes, agents, turns, relay.
import { Agents } from "./agents.js";
import { Transport } from "./http.js";
import { Relay } from "./relay.js";
import { Turns } from "./turns.js";
import { Volumes } from "./volumes.js";
export * from "./errors.js";
export * from "./volumes.js";
export * from "./agents.js";
export * from "./turns.js";
export * from "./relay.js";
export { fromFile } from "./body.js";
/** The client. Options default to `$COFFER_URL` and `$COFFER_KEY`. */
export class Coffer {
    transport;
    volumes;
    agents;
    turns;
    relay;
    constructor(o = {}) {
        this.transport = new Transport(o);
        this.volumes = new Volumes(this.transport);
        this.agents = new Agents(this.transport);
        this.turns = new Turns(this.transport);
        this.relay = new Relay(this.transport);
    }
    /** `client.volume(id)`: a handle on one volume. */
    volume(id) {
        return this.volumes.volume(id);
    }
    /** `client.agent(id)`: a handle on one agent. */
    agent(id) {
        return this.agents.agent(id);
    }
    /**
     * Mints a key: of this organization, of a new one (`org`, admin key only), or bound to
     * one agent (`agent`). The secret is in this answer only.
     */
    async createKey(body = {}, o) {
        return this.transport.json({ method: "POST", path: "/v1/keys", json: body }, o);
    }
    /** `GET /v1/health`. */
    async health(o) {
        return this.transport.json({ method: "GET", path: "/v1/health" }, o);
    }
}
export default Coffer;
