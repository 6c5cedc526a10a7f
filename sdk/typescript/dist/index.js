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
    /** Mints a key (`org`, `agent`, `name`, `expiresIn`, `readOnly`); its secret only here. */
    createKey(body = {}, o) {
        return this.transport.json({ method: "POST", path: "/v1/keys", json: body }, o);
    }
    listKeys(o) {
        return this.transport.json({ method: "GET", path: "/v1/keys" }, o).then((j) => j.keys);
    }
    async revokeKey(id, o) {
        await this.transport.json({ method: "DELETE", path: `/v1/keys/${encodeURIComponent(id)}` }, o);
    }
    /** `GET /v1/health`. */
    health(o) {
        return this.transport.json({ method: "GET", path: "/v1/health" }, o);
    }
}
export default Coffer;
