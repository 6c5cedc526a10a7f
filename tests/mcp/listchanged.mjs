// listchanged.mjs — the official MCP TypeScript SDK client on cofferd's /mcp, waiting for
// notifications/tools/list_changed (tests/blackbox/test_mcp_listchanged.py drives it).
//
//   node tests/mcp/listchanged.mjs --server URL --key KEY --agent ID
//
// Connects (the SDK opens the session's GET stream after initialized), lists the tools and
// prints {"event":"ready","tools":[...]}; then at each list_changed notification lists the
// tools again and prints {"event":"changed","n":N,"tools":[...]}. One JSON line each on
// stdout. Ends when stdin closes: ends the session (DELETE) and exits 0.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["server", "key", "agent"])
    if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const url = new URL(`${a.server.replace(/\/$/, "")}/mcp?${new URLSearchParams({ agent: a.agent })}`);
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${a.key}` } },
  });
  const client = new Client({ name: "coffer-blackbox-listchanged", version: "1.0.0" });
  const names = async () => (await client.listTools()).tools.map((t) => t.name);
  let n = 0;
  let chain = Promise.resolve(); // one listing at a time, in the order of the notifications
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    n += 1;
    const k = n;
    chain = chain.then(async () => say({ event: "changed", n: k, tools: await names() }));
  });
  await client.connect(transport);
  say({ event: "ready", capabilities: client.getServerCapabilities(), tools: await names() });
  await new Promise((resolve) => {
    process.stdin.on("end", resolve);
    process.stdin.on("close", resolve);
    process.stdin.resume();
  });
  await chain;
  await transport.terminateSession();
  await client.close();
}

main().catch((e) => {
  process.stderr.write(`listchanged.mjs: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
