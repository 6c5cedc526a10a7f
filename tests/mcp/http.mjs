// http.mjs — drives cofferd's /mcp with the official MCP TypeScript SDK client over
// StreamableHTTPClientTransport, end to end.
//
//   node tests/mcp/http.mjs --server URL --key KEY --agent ID --volume VOLID
//
// Connects to URL/mcp?agent=ID with the key as bearer token, lists the tools, meets the
// read-before-write refusal on a file put through the volume API (PUT /v1/volumes/VOLID/
// files/sdk/pre.md), reads, edits, meets the stale-write refusal after another change
// through the volume API, then acts for subjects alice and bob (&user=), tries without a
// key and with an unknown agent, ends the session (DELETE) and tries to use it again.
// Prints one JSON summary on stdout for tests/blackbox/test_mcp_http.py to check; exits 1
// (with the error on stderr) when the SDK itself fails where it should not.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["server", "key", "agent", "volume"])
    if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

// A CallToolResult as the summary shows it.
function shape(r) {
  return {
    isError: r.isError === true,
    text: (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join(""),
    structured: r.structuredContent ?? null,
  };
}

// What a failure looked like: the SDK's HTTP status (StreamableHTTPError.code) and message.
function failure(e) {
  return { code: e && typeof e.code === "number" ? e.code : null, message: String(e && e.message) };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const base = a.server.replace(/\/$/, "");
  const mcpUrl = (query) => new URL(`${base}/mcp?${new URLSearchParams(query)}`);
  const auth = { requestInit: { headers: { Authorization: `Bearer ${a.key}` } } };
  const open = async (query, opts = auth) => {
    const transport = new StreamableHTTPClientTransport(mcpUrl(query), opts);
    const client = new Client({ name: "coffer-blackbox-http", version: "1.0.0" });
    await client.connect(transport);
    return { client, transport };
  };
  const summary = {};

  const { client, transport } = await open({ agent: a.agent });
  summary.sessionId = transport.sessionId ?? null;
  summary.protocolVersion = transport.protocolVersion ?? null;
  summary.serverInfo = client.getServerVersion();
  summary.instructions = client.getInstructions() ?? null;
  summary.tools = (await client.listTools()).tools.map((t) => t.name);
  const call = async (c, name, args) => shape(await c.callTool({ name, arguments: args }));

  // a file the agent never read: edit is refused until it reads it
  const path = "/workspace/sdk/pre.md";
  const putUrl = `${base}/v1/volumes/${a.volume}/files/sdk/pre.md`;
  const put = (body) => fetch(putUrl, {
    method: "PUT",
    headers: { Authorization: `Bearer ${a.key}`, "Content-Type": "text/markdown" },
    body,
  });
  summary.firstPut = (await put("one\ntwo\n")).status;
  summary.unreadEdit = await call(client, "edit", { path, oldString: "one", newString: "ONE" });
  summary.read = await call(client, "read", { path });
  summary.edit = await call(client, "edit", { path, oldString: "one", newString: "ONE" });
  summary.secondPut = (await put("ONE\ntwo\nchanged elsewhere\n")).status;
  summary.staleWrite = await call(client, "write", { path, content: "overwritten\n" });
  summary.write = await call(client, "write", { path: "/workspace/sdk/new.md", content: "new\n" });
  summary.ping = (await client.ping()) !== undefined;

  // subjects: alice writes in her /user, bob does not see it
  const alice = await open({ agent: a.agent, user: "alice" });
  summary.aliceWrite = await call(alice.client, "write", { path: "/user/note.md", content: "alice's\n" });
  summary.aliceRead = await call(alice.client, "read", { path: "/user/note.md" });
  await alice.transport.terminateSession();
  await alice.client.close();
  const bob = await open({ agent: a.agent, user: "bob" });
  summary.bobRead = await call(bob.client, "read", { path: "/user/note.md" });
  await bob.client.close();

  // no key; an unknown agent
  try {
    await open({ agent: a.agent }, {});
    summary.noKey = { code: 0, message: "connected without a key" };
  } catch (e) {
    summary.noKey = failure(e);
  }
  try {
    await open({ agent: `${a.agent}-nosuch` });
    summary.unknownAgent = { code: 0, message: "connected to an unknown agent" };
  } catch (e) {
    summary.unknownAgent = failure(e);
  }

  // DELETE ends the session; a client that reuses its id gets 404
  const sid = transport.sessionId;
  await transport.terminateSession();
  summary.sessionAfterDelete = transport.sessionId ?? null;
  await client.close();
  const again = new StreamableHTTPClientTransport(mcpUrl({ agent: a.agent }),
    { ...auth, sessionId: sid });
  const reuse = new Client({ name: "coffer-blackbox-http", version: "1.0.0" });
  await reuse.connect(again); // a session id given: the SDK does not initialize again
  try {
    await reuse.listTools();
    summary.reuse = { code: 0, message: "the ended session still answered" };
  } catch (e) {
    summary.reuse = failure(e);
  }
  await reuse.close();
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main().catch((e) => {
  process.stderr.write(`http.mjs: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
