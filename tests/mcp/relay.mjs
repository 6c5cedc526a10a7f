// relay.mjs — the relay tools of `coffer mcp` through the official MCP TypeScript SDK client.
//
//   node tests/mcp/relay.mjs --coffer build/coffer --agent ID --server URL --key KEY
//
// The agent must have an active relay session served by a client (the Python test runs a
// fake one). Lists the tools, then read_file, write_file, list_directory, search_files and
// a refused read (an excluded file). Prints one JSON summary on stdout for
// tests/blackbox/test_relay_mcp.py; exits 1 (error on stderr) when the SDK itself fails.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["coffer", "agent", "server", "key"])
    if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

function shape(r) {
  return {
    isError: r.isError === true,
    text: (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join(""),
    structured: r.structuredContent ?? null,
  };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const transport = new StdioClientTransport({
    command: a.coffer,
    args: ["mcp", "--agent", a.agent, "--server", a.server, "--key", a.key],
    stderr: "inherit",
  });
  const client = new Client({ name: "coffer-relay", version: "1.0.0" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const summary = { tools: tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })) };
  const call = async (name, args) => shape(await client.callTool({ name, arguments: args }));
  summary.read = await call("read_file", { path: "notes.txt" });
  summary.write = await call("write_file", { path: "sdk/out.txt", content: "from the sdk" });
  summary.list = await call("list_directory", {});
  summary.search = await call("search_files", { pattern: "relay" });
  summary.excluded = await call("read_file", { path: ".env" });
  await client.close();
  console.log(JSON.stringify(summary));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
