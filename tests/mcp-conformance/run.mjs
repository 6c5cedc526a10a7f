// run.mjs — runs the MCP conformance suite's CLI (node run.mjs server --url URL ...), with
// hooks.mjs registered so that it loads on Node.js 20 (it imports fs.globSync, new in 22),
// and the global File (Node 20; Debian 12's Node 18 has it only as buffer.File).
import { register } from "node:module";
import { File as BufferFile } from "node:buffer";

globalThis.File ??= BufferFile;

register("./hooks.mjs", import.meta.url);
await import(new URL("./node_modules/@modelcontextprotocol/conformance/dist/index.js",
                     import.meta.url).href);
