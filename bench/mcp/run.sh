#!/bin/sh
# coffer mcp vs @modelcontextprotocol/server-filesystem (issue 3): the same 8 KiB text
# file read 500 times through each, driven by the official SDK client. Appends a
# section to bench/results.md. Needs node/npm (installs the two packages here).
set -eu
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
[ -d node_modules/@modelcontextprotocol/server-filesystem ] ||
  npm install --no-audit --no-fund >/dev/null
W=$(mktemp -d)
trap 'kill $PID 2>/dev/null; rm -rf "$W"' EXIT
mkdir -p "$W/dir"
"$ROOT/build/cofferd" --data "$W/data" --listen 127.0.0.1:0 >"$W/log" 2>&1 &
PID=$!
for i in $(seq 50); do grep -q "listening on" "$W/log" 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$W/log")
KEY=$(cat "$W/data/admin.key")
python3 -c "print(''.join('line %d of the file, some text to read' % i for i in range(200)))" > "$W/dir/f.txt"
curl -sf -X PUT -H "Authorization: Bearer $KEY" -d '{}' "$URL/v1/agents/mb" >/dev/null
curl -sf -X PUT -H "Authorization: Bearer $KEY" --data-binary @"$W/dir/f.txt" \
  "$URL/v1/agents/mb/files/workspace/f.txt" >/dev/null
RES=$(node run.mjs "$ROOT/build/coffer" "$URL" "$KEY" mb "$W/dir" 500 "$W/data")
python3 - "$RES" >> "$ROOT/bench/results.md" <<'PY'
import json, sys
rows = json.loads(sys.argv[1])
print("\n## 8. MCP: coffer mcp vs @modelcontextprotocol/server-filesystem (bench/mcp)\n")
print("| 500 reads of an 8 KiB text file, SDK client over stdio | p50 ms | p99 ms |")
print("|---|---|---|")
for r in rows:
    print("| %s | %.2f | %.2f |" % (r["name"], r["p50"], r["p99"]))
print("\ncoffer mcp (default) goes client -> coffer mcp -> HTTP -> cofferd -> SQLite; "
      "`--data` opens the data dir in process; server-filesystem reads the file from disk.")
PY
