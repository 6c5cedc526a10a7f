"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
tests/mcp-conformance/package.json) against cofferd's /mcp: every scenario that applies
passes (docs/mcp.md, "Conformance", lists them and why the others do not apply).

Two adaptations, both in this file:
- the suite's `server` command sends no Authorization header, so it talks to a small local
  proxy that adds `Authorization: Bearer KEY` and passes everything else through unchanged
  (Host and Origin included, which dns-rebinding-protection depends on);
- the four tools-call-* scenarios call fixture tools of the suite's reference server
  (test_simple_text, test_image_content, test_embedded_resource, test_error_handling),
  which coffer does not have: the proxy renames each such call into coffer's own `read` of a
  real file (a text file, a PNG, a PDF, a missing file), so the suite's checks of text,
  image, embedded resource and error content run on coffer's real answers. No answer is
  made up by the proxy.
tests/mcp-conformance/run.mjs loads the suite on Node.js 20 (it imports fs.globSync, new in
Node 22, for its summary command: hooks.mjs serves it from globsync.mjs)."""

import glob
import http.client
import http.server
import json
import os
import subprocess
import tempfile
import threading

import harness
from harness import check, eq, expect
from test_mcp import make_agent
from test_media import pdf, png

CONF_DIR = os.path.join(harness.ROOT, "tests", "mcp-conformance")
STRAIGHT = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]
# fixture tool -> the agent path coffer's `read` answers it with
FIXTURES = {
    "test_simple_text": "/workspace/conformance/simple.txt",
    "test_image_content": "/workspace/conformance/red.png",
    "test_embedded_resource": "/workspace/conformance/doc.pdf",
    "test_error_handling": "/workspace/conformance/no-such-file.txt",
}
MAPPED = ["tools-call-simple-text", "tools-call-image", "tools-call-embedded-resource",
          "tools-call-error"]


class AuthProxy:
    """127.0.0.1:PORT -> cofferd, adding the bearer key; tools/call of a fixture tool is
    renamed to `read` of its file."""

    def __init__(self, srv, key):
        upstream = srv.port

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                if body and self.command == "POST":
                    body = rename_fixture(body)
                c = http.client.HTTPConnection("127.0.0.1", upstream, timeout=120 * harness.SCALE)
                c.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for k, v in self.headers.items():
                    if k.lower() not in ("connection", "content-length", "authorization"):
                        c.putheader(k, v)
                c.putheader("Authorization", "Bearer " + key)
                if body is not None:
                    c.putheader("Content-Length", str(len(body)))
                c.endheaders(body)
                r = c.getresponse()
                if r.getheader("Content-Type", "").startswith("text/event-stream"):
                    return self.stream(c, r)  # GET /mcp: passed on as it comes
                data = r.read()
                c.close()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "content-length", "transfer-encoding",
                                         "date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream(self, c, r):
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "content-length", "transfer-encoding",
                                         "date", "server"):
                        self.send_header(k, v)
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    while True:
                        chunk = r.read1(65536)
                        if not chunk:
                            break
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError:
                    pass  # the client went away
                c.close()

            do_GET = do_POST = do_DELETE = forward

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def rename_fixture(body):
    try:
        m = json.loads(body)
    except ValueError:
        return body
    if not isinstance(m, dict) or m.get("method") != "tools/call":
        return body
    params = m.get("params") or {}
    path = FIXTURES.get(params.get("name"))
    if path is None:
        return body
    m["params"] = dict(params, name="read", arguments={"path": path})
    return json.dumps(m).encode()


def run_scenario(node, url, scenario, out):
    """The suite's checks of one scenario (checks.json), and its console output."""
    p = subprocess.run([node, os.path.join(CONF_DIR, "run.mjs"), "server", "--url", url,
                        "--scenario", scenario, "-o", out], cwd=CONF_DIR, capture_output=True,
                       timeout=120 * harness.SCALE)
    files = glob.glob(os.path.join(out, "*%s*" % scenario, "checks.json"))
    text = (p.stdout + p.stderr).decode("utf-8", "replace")
    check(len(files) == 1, "%s wrote no checks.json (exit %s):\n%s" % (
        scenario, p.returncode, text[-3000:]))
    with open(files[0]) as f:
        return json.load(f), p.returncode, text


@harness.timeout(600)
def test_conformance_scenarios_that_apply_pass(srv):
    node = harness.npm_ready(CONF_DIR, "@modelcontextprotocol/conformance",
                             "the MCP conformance suite")
    aid, ws = make_agent(srv)
    srv.put_ok(ws, "conformance/simple.txt", b"This is a simple text response for testing.\n")
    srv.put_ok(ws, "conformance/red.png", png(1, 1, color=(255, 0, 0)))
    srv.put_ok(ws, "conformance/doc.pdf", pdf(1))
    key = expect(srv.post("/v1/keys", json={"agent": aid}), 201).json()["key"]
    proxy = AuthProxy(srv, key)
    results = {}
    try:
        url = "http://127.0.0.1:%d/mcp?agent=%s" % (proxy.port, aid)
        with tempfile.TemporaryDirectory() as out:
            for scenario in STRAIGHT + MAPPED:
                checks, rc, text = run_scenario(node, url, scenario, out)
                scored = [c for c in checks if c.get("status") != "INFO"]
                check(scored, "%s made no check: %s" % (scenario, text[-2000:]))
                failed = [(c.get("id"), c.get("status"), c.get("errorMessage"))
                          for c in scored if c.get("status") != "SUCCESS"]
                eq(failed, [], "%s: checks not passed\n%s" % (scenario, text[-3000:]))
                eq(rc, 0, "%s exit code" % scenario)
                results[scenario] = len(scored)
    finally:
        proxy.close()
    eq(sorted(results), sorted(STRAIGHT + MAPPED), "every applicable scenario ran")
    print("conformance checks passed per scenario: %s" % json.dumps(results, sort_keys=True))
