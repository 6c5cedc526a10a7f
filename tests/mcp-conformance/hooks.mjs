// hooks.mjs — module hooks registered by run.mjs: on a Node.js without fs.globSync (before
// 22), the conformance suite's import of it from "fs" is served by globsync.mjs instead.
import fs from "node:fs";

const SUITE = "/@modelcontextprotocol/conformance/dist/index.js";
const POLYFILL = new URL("./globsync.mjs", import.meta.url).href;

export async function load(url, context, next) {
  const r = await next(url, context);
  if (typeof fs.globSync === "function" || !url.endsWith(SUITE)) return r;
  let src = String(r.source);
  const m = src.match(/import\{([^}]*)\}from"fs";/);
  const names = m ? m[1].split(",") : [];
  const glob = names.find((n) => /^globSync(\s+as\s+\S+)?$/.test(n.trim()));
  if (!glob) return r; // nothing to serve: the suite changed, let it say so itself
  const rest = names.filter((n) => n !== glob);
  src = src.replace(m[0], `import{${rest.join(",")}}from"fs";import{${glob}}from"${POLYFILL}";`);
  return { ...r, source: src, shortCircuit: true };
}
