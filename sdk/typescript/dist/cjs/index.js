"use strict";
// coffer's TypeScript SDK: `new Coffer({url, key})`, then volumes, agents, turns, relay, webhooks.
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __setModuleDefault = (this && this.__setModuleDefault) || (Object.create ? (function(o, v) {
    Object.defineProperty(o, "default", { enumerable: true, value: v });
}) : function(o, v) {
    o["default"] = v;
});
var __importStar = (this && this.__importStar) || (function () {
    var ownKeys = function(o) {
        ownKeys = Object.getOwnPropertyNames || function (o) {
            var ar = [];
            for (var k in o) if (Object.prototype.hasOwnProperty.call(o, k)) ar[ar.length] = k;
            return ar;
        };
        return ownKeys(o);
    };
    return function (mod) {
        if (mod && mod.__esModule) return mod;
        var result = {};
        if (mod != null) for (var k = ownKeys(mod), i = 0; i < k.length; i++) if (k[i] !== "default") __createBinding(result, mod, k[i]);
        __setModuleDefault(result, mod);
        return result;
    };
})();
var __exportStar = (this && this.__exportStar) || function(m, exports) {
    for (var p in m) if (p !== "default" && !Object.prototype.hasOwnProperty.call(exports, p)) __createBinding(exports, m, p);
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.Coffer = exports.saveTo = exports.fromFile = void 0;
const agents_js_1 = require("./agents.js");
const check = __importStar(require("./check.js"));
const http_js_1 = require("./http.js");
const relay_js_1 = require("./relay.js");
const turns_js_1 = require("./turns.js");
const volumes_js_1 = require("./volumes.js");
const webhooks_js_1 = require("./webhooks.js");
__exportStar(require("./errors.js"), exports);
__exportStar(require("./volumes.js"), exports);
__exportStar(require("./agents.js"), exports);
__exportStar(require("./turns.js"), exports);
__exportStar(require("./relay.js"), exports);
__exportStar(require("./webhooks.js"), exports);
var body_js_1 = require("./body.js");
Object.defineProperty(exports, "fromFile", { enumerable: true, get: function () { return body_js_1.fromFile; } });
var save_js_1 = require("./save.js");
Object.defineProperty(exports, "saveTo", { enumerable: true, get: function () { return save_js_1.saveTo; } });
/** The client. Options default to `$COFFER_URL` and `$COFFER_KEY`. */
class Coffer {
    transport;
    volumes;
    agents;
    turns;
    relay;
    /** The organization's webhooks and their deliveries (`verifyWebhook` checks one received). */
    webhooks;
    /** The volumes under seed 001's names: `createVolume`, `volume(id)`, `volumes(ids)`. */
    runtime;
    constructor(o = {}) {
        check.fields("new Coffer", "options", o, ["url", "key", "timeoutMs", "maxRetries", "retryBaseMs", "retryMaxMs", "fetch"]);
        check.optStr("new Coffer", "url", o.url);
        check.optStr("new Coffer", "key", o.key);
        this.transport = new http_js_1.Transport(o);
        this.volumes = new volumes_js_1.Volumes(this.transport);
        this.agents = new agents_js_1.Agents(this.transport);
        this.turns = new turns_js_1.Turns(this.transport);
        this.relay = new relay_js_1.Relay(this.transport);
        this.webhooks = new webhooks_js_1.Webhooks(this.transport);
        this.runtime = this.agents.runtime;
    }
    /** `agents.upsert`: creates or updates an agent and returns a handle on it (seed 001's `agents.upsert`). */
    upsert(id, settings = {}, o) {
        return this.agents.upsert(id, settings, o);
    }
    /** `client.volume(id)`: a handle on one volume. */
    volume(id) {
        check.str("volume", "id", id);
        return this.volumes.volume(id);
    }
    /** `client.agent(id, {user?})`: a handle on one agent (acting for subject `user` when given). */
    agent(id, o = {}) {
        check.str("agent", "id", id);
        return this.agents.agent(id, o);
    }
    /**
     * Mints a key: of this organization, of a new one (`org`, admin key only), or bound to
     * one agent (`agent`). The secret is in this answer only.
     */
    async createKey(body = {}, o) {
        check.fields("createKey", "the key", body, ["org", "agent", "name", "expiresIn", "readOnly"]);
        check.opts("createKey", "options", o);
        return this.transport.json({ method: "POST", path: "/v1/keys", json: body }, o);
    }
    /** `GET /v1/health`. */
    async health(o) {
        check.opts("health", "options", o);
        return this.transport.json({ method: "GET", path: "/v1/health" }, o);
    }
}
exports.Coffer = Coffer;
exports.default = Coffer;
