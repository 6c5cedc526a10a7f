// coffer mcp vs @modelcontextprotocol/server-filesystem on the same file, both driven
// by the official SDK client over stdio: median and p99 of N tool calls reading it.
// Usage: node run.mjs COFFER_BIN SERVER_URL KEY AGENT DIR N [DATA_DIR]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [coffer, url, key, agent, dir, nArg, data] = process.argv.slice(2);
const N = Number(nArg || 500);

async function measure(name, command, args, tool, toolArgs) {
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
  for (let i = 0; i < 20; i++) await client.callTool({ name: tool, arguments: toolArgs });
  const t = [];
  for (let i = 0; i < N; i++) {
    const t0 = process.hrtime.bigint();
    const r = await client.callTool({ name: tool, arguments: toolArgs });
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.isError) throw new Error(name + ": " + JSON.stringify(r.content));
  }
  await client.close();
  t.sort((a, b) => a - b);
  return { name, p50: t[Math.floor(N / 2)], p99: t[Math.floor(N * 0.99) - 1] };
}

const fsServer = new URL("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
                         import.meta.url).pathname;
const a = await measure("coffer mcp (read)", coffer,
  ["mcp", "--agent", agent, "--server", url, "--key", key], "read", { path: "/workspace/f.txt" });
const b = await measure("server-filesystem (read_text_file)", "node", [fsServer, dir],
  "read_text_file", { path: dir + "/f.txt" });
const out = [a, b];
if (data)
  out.push(await measure("coffer mcp --data (read)", coffer,
    ["mcp", "--agent", agent, "--data", data], "read", { path: "/workspace/f.txt" }));
console.log(JSON.stringify(out));
