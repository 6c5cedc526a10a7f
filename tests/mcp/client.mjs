// client.mjs — drives `coffer mcp` with the official MCP TypeScript SDK client, end to end.
//
//   node tests/mcp/client.mjs --coffer build/coffer --agent ID --server URL --key KEY --volume VOLID
//
// Spawns `coffer mcp --agent ID --server URL --key KEY` with StdioClientTransport, lists the
// tools, then write, read, edit, a stale edit (the file is rewritten through the volume API,
// PUT /v1/volumes/VOLID/files/..., after the agent read it), grep, and a call with bad
// arguments. Prints one JSON summary on stdout for tests/blackbox/test_mcp.py to check; exits
// 1 (with the error on stderr) when the SDK itself fails.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["coffer", "agent", "server", "key", "volume"])
    if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

// A CallToolResult as the summary shows it.
function shape(r) {
  return {
    isError: r.isError === true,
    text: (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join(""),
    contentTypes: (r.content || []).map((c) => c.type),
    structured: r.structuredContent ?? null,
  };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const path = "/workspace/sdk/notes.md";
  const transport = new StdioClientTransport({
    command: a.coffer,
    args: ["mcp", "--agent", a.agent, "--server", a.server, "--key", a.key],
    stderr: "inherit",
  });
  // The SDK hands the negotiated version to transports that want it (HTTP); catch it here.
  let negotiated = null;
  transport.setProtocolVersion = (v) => {
    negotiated = v;
  };
  const client = new Client({ name: "coffer-blackbox", version: "1.0.0" });
  await client.connect(transport);

  const summary = {
    serverInfo: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    protocolVersion: negotiated,
  };
  const { tools } = await client.listTools();
  summary.tools = tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema,
  }));

  const call = async (name, args) => shape(await client.callTool({ name, arguments: args }));
  summary.write = await call("write", { path, content: "# Notes\nalpha beta\ngamma\n" });
  summary.read = await call("read", { path });
  summary.edit = await call("edit", { path, oldString: "alpha beta", newString: "alpha BETA" });
  summary.readAfterEdit = await call("read", { path });

  // Someone else changes the file after the agent's last read: the next edit is refused.
  const url = `${a.server.replace(/\/$/, "")}/v1/volumes/${a.volume}/files/sdk/notes.md`;
  const put = await fetch(url, {
    method: "PUT",
    headers: { Authorization: `Bearer ${a.key}`, "Content-Type": "text/markdown" },
    body: "# Notes\nalpha BETA\ngamma\nchanged elsewhere\n",
  });
  summary.externalPutStatus = put.status;
  summary.staleEdit = await call("edit", { path, oldString: "gamma", newString: "GAMMA" });

  summary.grep = await call("grep", { pattern: "changed\\s+elsewhere", path: "/workspace" });
  summary.present = await call("present_file", { path, caption: "the notes" });
  summary.badArgs = await call("read", {});
  try {
    await client.ping();
    summary.ping = true;
  } catch (e) {
    summary.ping = String(e);
  }
  await client.close();
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main().catch((e) => {
  process.stderr.write(`client.mjs: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
