// globsync.mjs — fs.globSync for Node.js before 22 (run.mjs hands it to the conformance
// suite): @modelcontextprotocol/conformance 0.1.16 imports it from "fs" (for its summary
// command) and so does not load on Node 20 without it.
// Patterns: '*' and '?' within one path segment, '**' any number of segments; answers the
// matching paths relative to `cwd`, as Node 22's globSync does.
import fs from "node:fs";
import path from "node:path";

function toRegExp(pattern) {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*" && pattern[i + 1] === "*") {
      i++;
      if (pattern[i + 1] === "/") {
        i++;
        re += "(?:.*/)?";
      } else {
        re += ".*";
      }
    } else if (c === "*") {
      re += "[^/]*";
    } else if (c === "?") {
      re += "[^/]";
    } else {
      re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
  }
  return new RegExp("^" + re + "$");
}

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const re = toRegExp(String(pattern));
  const out = [];
  const walk = (rel) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(cwd, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = rel ? rel + "/" + e.name : e.name;
      if (re.test(p)) out.push(p);
      if (e.isDirectory()) walk(p);
    }
  };
  walk("");
  return out;
}
