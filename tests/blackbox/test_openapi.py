"""docs/openapi.json, the machine-readable contract: served at GET /v1/openapi.json (no key),
the same routes as the router's table (both ways), clean under the Redocly CLI linter
(pinned in tests/openapi), and true to real answers: every answer of this module's tour,
successes and errors, is checked against the document's schema for its operation and status
(openapi_check.py, python3-jsonschema), and the tour reaches every documented operation."""

import base64
import http.client
import json
import os
import shutil
import subprocess
import tempfile
import time

import harness
import openapi_check as oc
from harness import check, contains, eq, expect, expect_error
from relay_fake import FakeClient, create, make_agent, wait_status

OPENAPI_DIR = os.path.join(harness.ROOT, "tests", "openapi")
DOC_PATH = os.path.join(harness.ROOT, "docs", "openapi.json")
TIMEOUT = 120

if oc.jsonschema is not None:
    oc.enable()  # every answer of this module goes through the check

_n = [0]


def _name(prefix="oa"):
    _n[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _n[0])


def _need_jsonschema():
    if oc.jsonschema is None:
        harness.skip("python3-jsonschema is not installed (apt-get install python3-jsonschema)")


def _stream_head(srv, method, path, key=None, body=None, headers=None):
    """Opens a stream (Server-Sent Events), checks its status and headers against the
    document, and closes it: such answers never end by themselves."""
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=30 * harness.SCALE)
    hdrs = {"Authorization": "Bearer " + (key or srv.key)}
    hdrs.update(headers or {})
    if body is not None:
        body = json.dumps(body).encode()
        hdrs["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=hdrs)
    r = conn.getresponse()
    data = r.read() if r.status != 200 else b""  # an error is whole; a stream goes on
    resp = harness.Response(method, path, r.status, r.reason, r.headers, data, hdrs, body)
    oc.check_response(resp)
    conn.close()
    return resp


# ------------------------------------------------------------------ the document itself

def test_routes_match_document():
    routes = {(m, oc.norm(p)) for m, p in oc.router_routes()}
    ops = set(oc.doc_operations())
    missing = sorted(routes - ops)
    extra = sorted(ops - routes)
    eq(missing, [], "routes of src/http/router.c missing from docs/openapi.json")
    eq(extra, [], "operations of docs/openapi.json that the router does not serve")
    check(len(routes) == len(oc.router_routes()), "no route is listed twice in router.c")


def test_path_parameters_named_in_document():
    """Every `{name}` of a path is declared as a path parameter (the router's `{}`/`{+}`
    have no names; the document gives them)."""
    d = oc.doc()
    for path, item in d["paths"].items():
        for method, o in item.items():
            if method not in oc.METHODS:
                continue
            declared = set()
            for p in item.get("parameters", []) + o.get("parameters", []):
                if "$ref" in p:
                    p = d["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]]
                if p["in"] == "path":
                    declared.add(p["name"])
            names = set(__import__("re").findall(r"\{([^}]+)\}", path))
            eq(declared, names, "path parameters of %s %s" % (method.upper(), path))


def test_served_document_is_the_file(srv):
    with open(DOC_PATH, "rb") as f:
        want = f.read()
    r = expect(srv.get("/v1/openapi.json", key=None), 200)
    eq(r.header("Content-Type"), "application/json", "Content-Type")
    if r.body != want:
        at = next((i for i, (a, b) in enumerate(zip(r.body, want)) if a != b),
                  min(len(r.body), len(want)))
        raise AssertionError("GET /v1/openapi.json serves %d bytes, docs/openapi.json has %d; "
                             "they differ from byte %d (%r, the file: %r): is cofferd built "
                             "from this docs/openapi.json?" % (
                                 len(r.body), len(want), at, r.body[at:at + 60],
                                 want[at:at + 60]))
    eq(r.json()["openapi"], "3.1.0", "an OpenAPI 3.1 document")
    expect(srv.head("/v1/openapi.json", key=None), 200)
    expect(srv.get("/v1/openapi.json", key="wrong-key"), 200)  # a key is not even looked at


def _redocly():
    node, npm = shutil.which("node"), shutil.which("npm")
    if not (node and npm):
        harness.skip("node and npm are needed to run the Redocly CLI linter (found node=%r "
                     "npm=%r)" % (node, npm))
    with open(os.path.join(OPENAPI_DIR, "package.json")) as f:
        pinned = json.load(f)["dependencies"]["@redocly/cli"]
    marker = os.path.join(OPENAPI_DIR, "node_modules", "@redocly", "cli", "package.json")
    have = None
    if os.path.exists(marker):
        with open(marker) as f:
            have = json.load(f).get("version")
    if have != pinned:
        p = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=OPENAPI_DIR,
                           capture_output=True, timeout=300 * harness.SCALE)
        check(p.returncode == 0, "npm ci in tests/openapi failed (exit %s):\n%s\n%s" % (
            p.returncode, p.stdout.decode()[-2000:], p.stderr.decode()[-3000:]))
    return os.path.join(OPENAPI_DIR, "node_modules", ".bin", "redocly")


@harness.timeout(400)
def test_redocly_lint_is_clean():
    redocly = _redocly()
    p = subprocess.run([redocly, "lint", "--config", os.path.join(OPENAPI_DIR, "redocly.yaml"),
                        "--format", "json", DOC_PATH], capture_output=True,
                       timeout=120 * harness.SCALE, cwd=OPENAPI_DIR)
    out = p.stdout.decode()
    try:
        report = json.loads(out[out.index("{"):])
    except ValueError:
        raise AssertionError("redocly lint said no JSON (exit %s):\n%s\n%s" % (
            p.returncode, out[-3000:], p.stderr.decode()[-3000:]))
    problems = ["%s %s: %s" % (x.get("severity"), x.get("ruleId"), x.get("message"))
                for x in report.get("problems", [])]
    eq(problems, [], "redocly lint problems")
    # the four ignored are named, with why, in tests/openapi/.redocly.lint-ignore.yaml
    eq(report["totals"], {"errors": 0, "warnings": 0, "ignored": 4}, "redocly lint totals")
    eq(p.returncode, 0, "redocly lint exit code")


def test_checker_refuses_what_the_document_does_not_say():
    """The check is not a rubber stamp: a wrong shape, an undocumented status, a wrong
    error type and a wrong media type each fail."""
    _need_jsonschema()
    before = {k: set(v) for k, v in oc.seen.items()}

    def resp(method, path, status, body, ct="application/json; charset=utf-8"):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        return harness.Response(method, path, status, "", {"Content-Type": ct} if ct else {},
                                raw)

    vol = {"id": "vol_x", "name": "n", "seq": 0, "files": 0, "bytes": 0,
           "capacity": 1, "ceiling": 2, "createdAt": "2026-01-01T00:00:00Z"}
    oc.check_response(resp("GET", "/v1/volumes/vol_x", 200, vol))
    bad = dict(vol)
    del bad["seq"]
    cases = [
        (resp("GET", "/v1/volumes/vol_x", 200, bad), "'seq' is a required property"),
        (resp("GET", "/v1/volumes/vol_x", 200, dict(vol, files="3")), "is not of type"),
        (resp("GET", "/v1/volumes/vol_x", 418, {"error": {"type": "x", "message": "m"}}),
         "status 418 is not documented"),
        (resp("GET", "/v1/volumes/vol_x", 404, {"error": {"type": "conflict", "message": "m"}}),
         "'not_found' was expected"),
        (resp("GET", "/v1/volumes/vol_x", 404, {"message": "m"}), "'error' is a required"),
        (resp("GET", "/v1/volumes/vol_x", 200, b"<html>", "text/html"), "documented as"),
        (resp("GET", "/v1/volumes/vol_x/files/a.txt", 200, vol), "a JSON answer"),
        (resp("GET", "/v1/nothing/here", 200, vol), "must be 404"),
        (resp("PATCH", "/v1/volumes/vol_x", 405, {"error": {"message": "m"}}), "'type'"),
        (harness.Response("POST", "/v1/volumes", 201, "",
                          {"Content-Type": "application/json"}, json.dumps(vol).encode(),
                          {"Content-Type": "application/json"}, b'{"name": 5}'),
         "the request body of POST /v1/volumes"),
    ]
    for r, why in cases:
        try:
            oc.check_response(r)
        except AssertionError as e:
            check(why in str(e), "the check of %s %s %d names %r; it said:\n%s" % (
                r.method, r.url, r.status, why, str(e)[:600]))
        else:
            raise AssertionError("the check passed %s %s %d %r" % (r.method, r.url, r.status,
                                                                  r.body[:200]))
    oc.seen.clear()  # these were not real answers
    oc.seen.update(before)


def test_strict_mode_refuses_fields_the_document_does_not_name():
    _need_jsonschema()
    before = {k: set(v) for k, v in oc.seen.items()}
    vol = {"id": "vol_x", "name": "n", "seq": 0, "files": 0, "bytes": 0, "capacity": 1,
           "ceiling": 2, "createdAt": "2026-01-01T00:00:00Z", "surprise": 1}
    r = harness.Response("GET", "/v1/volumes/vol_x", 200, "",
                         {"Content-Type": "application/json"}, json.dumps(vol).encode())
    old = os.environ.get("COFFER_OPENAPI_STRICT")
    try:
        os.environ["COFFER_OPENAPI_STRICT"] = "0"
        oc._cache.pop("components", None)
        oc.check_response(r)  # open by default: an added field is compatible
        os.environ["COFFER_OPENAPI_STRICT"] = "1"
        oc._cache.pop("components", None)
        try:
            oc.check_response(r)
        except AssertionError as e:
            check("'surprise' was unexpected" in str(e), "strict mode names the field: %s" % e)
        else:
            raise AssertionError("strict mode passed a field the document does not name")
    finally:
        if old is None:
            os.environ.pop("COFFER_OPENAPI_STRICT", None)
        else:
            os.environ["COFFER_OPENAPI_STRICT"] = old
        oc._cache.pop("components", None)
        oc.seen.clear()
        oc.seen.update(before)


# ------------------------------------------------------------------ the tour

def test_tour_general_and_volumes(srv):
    _need_jsonschema()
    expect(srv.get("/v1/health", key=None), 200)
    page = expect(srv.get("/console", key=None), 200)
    expect(srv.get("/console", key=None, headers={"If-None-Match": page.header("ETag")}), 304)
    js = expect(srv.get("/console/app.js", key=None), 200)
    expect(srv.get("/console/app.js", key=None, headers={"If-None-Match": js.header("ETag")}), 304)
    expect_error(srv.get("/console/nosuch.js", key=None), 404, "not_found")
    expect_error(srv.get("/v1/volumes/vol_x", key=None), 401, "unauthorized")
    expect_error(srv.get("/v1/volumes/vol_x", key="ck_wrong"), 401, "unauthorized")
    expect_error(srv.get("/v1/volumes/vol_nosuchvolume", auth="x-api-key"), 404, "not_found")
    expect_error(srv.get("/v1/no/such/endpoint"), 404, "not_found")
    expect_error(srv.patch("/v1/volumes", json={}), 405, "not_found")
    other = expect(srv.post("/v1/keys", json={"org": _name("org")}), 201).json()["key"]
    expect_error(srv.post("/v1/keys", json={"nope": 1}), 400, "validation_error")
    lk = expect(srv.post("/v1/keys", json={"name": _name("k"), "expiresIn": 600,
                                           "readOnly": True}), 201).json()
    expect(srv.get("/v1/keys"), 200)
    expect(srv.get("/metrics"), 200)
    expect(srv.delete("/v1/keys/" + lk["id"]), 204)
    expect_error(srv.delete("/v1/keys/" + lk["id"]), 404, "not_found")

    idem = {"Idempotency-Key": _name("idem")}
    v = expect(srv.post("/v1/volumes", json={"name": _name()}, headers=idem), 201).json()
    expect(srv.post("/v1/volumes", json={"name": v["name"]}, headers=idem), 201)
    expect(srv.post("/v1/volumes", json={"name": "other"}, headers=idem), 201, 409)
    expect_error(srv.post("/v1/volumes", body=b"{nope", headers={"Content-Type":
                                                                 "application/json"}),
                 400, "validation_error")
    vid = v["id"]
    expect(srv.get("/v1/volumes", query={"ids": vid + ",vol_nosuch"}), 200)
    expect(srv.get("/v1/volumes"), 200, 400)  # the listing by name, or 400 before it
    expect(srv.get("/v1/volumes/" + vid), 200)
    expect_error(srv.get("/v1/volumes/" + vid, key=other), 404, "not_found")

    # files
    put = expect(srv.put_file(vid, "docs/a.md", b"# hello\n"), 201).json()
    expect(srv.put_file(vid, "docs/a.md", b"# hello again\n"), 200)
    expect(srv.put_file(vid, "docs/b.bin", bytes(range(256)) * 4), 201)
    expect_error(srv.put_file(vid, "docs/a.md", b"x", headers={"If-Match": '"%d"' % put["version"]}),
                 412, "precondition_failed")
    expect_error(srv.put_file(vid, "docs/a.md", b"x", query={"version": 0}), 412,
                 "precondition_failed")
    expect_error(srv.put_file(vid, "a/../b", b"x", ), 400, "validation_error")
    expect_error(srv.put_file("vol_nosuchvolume", "a.txt", b"x"), 404, "not_found")
    f = srv.file_path(vid, "docs/a.md")
    r = expect(srv.get(f), 200)
    expect(srv.head(f), 200)
    expect(srv.get(f, headers={"Range": "bytes=0-1"}), 206)
    expect_error(srv.get(f, headers={"Range": "bytes=999-"}), 416, "range_not_satisfiable")
    expect(srv.get(f, headers={"If-None-Match": r.header("ETag")}), 304)
    expect(srv.get(f, headers={"If-Modified-Since": r.header("Last-Modified")}), 200, 304)
    expect(srv.get(f, headers={"If-Match": '"999999"'}), 200, 412)
    expect_error(srv.get(srv.file_path(vid, "docs/none.md")), 404, "not_found")
    expect(srv.get("/v1/volumes/%s/files" % vid), 200)
    expect(srv.get("/v1/volumes/%s/files" % vid, query={"glob": "**/*.md", "limit": 1}), 200)
    expect(srv.get("/v1/volumes/%s/files" % vid, query={"content": "true"}), 200)
    expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"limit": 0}), 400,
                 "validation_error")
    expect(srv.get("/v1/volumes/%s/changes" % vid, query={"since": 0}), 200)
    expect_error(srv.get("/v1/volumes/%s/changes" % vid, query={"wait": 61}), 400,
                 "validation_error")
    expect(srv.post("/v1/volumes/%s/move" % vid, json={"from": "docs/b.bin", "to": "c.bin"}),
           200)
    expect_error(srv.post("/v1/volumes/%s/move" % vid, json={"from": "c.bin", "to": "docs/a.md"}),
                 409, "conflict")

    # snapshots, fork, restore, merge, archive
    s1 = expect(srv.post("/v1/volumes/%s/snapshots" % vid, json={"labels": {"stage": "draft"}}),
                201).json()
    expect(srv.post("/v1/volumes/%s/snapshots" % vid,
                    json={"files": {"x.txt": "x", "y.bin": {"data": base64.b64encode(b"\0").decode()}}}),
           201)
    expect(srv.get("/v1/volumes/%s/snapshots" % vid, query={"label": "stage:draft"}), 200)
    sp = "/v1/volumes/%s/snapshots/%s" % (vid, s1["id"])
    expect(srv.get(sp), 200)
    expect(srv.patch(sp, json={"pinned": True}), 200)
    expect_error(srv.patch(sp, json={"labels": "no"}), 400, "validation_error")
    expect(srv.get(f, query={"snapshot": s1["id"]}), 200)
    expect(srv.delete(f), 200)
    expect_error(srv.delete(f), 404, "not_found")
    expect(srv.post("/v1/volumes/%s/restore" % vid, json={"snapshot": s1["id"]}), 200)
    fork = expect(srv.post("/v1/volumes/%s/fork" % vid, json={"name": _name("fork")}), 201).json()
    expect(srv.put(srv.file_path(fork["id"], "merged.txt"), body=b"m"), 200, 201)
    expect(srv.post("/v1/volumes/%s/merge" % vid, json={"from": fork["id"], "dryRun": True}), 200)
    expect(srv.post("/v1/volumes/%s/merge" % vid, json={"from": fork["id"]}), 200)
    expect_error(srv.post("/v1/volumes/%s/merge" % vid, json={"from": vid}), 400,
                 "validation_error")
    expect(srv.get("/v1/volumes/%s/history" % vid, query={"path": "merged.txt", "limit": 1}), 200)
    expect_error(srv.get("/v1/volumes/%s/history" % vid), 400, "validation_error")
    last = srv.seq(vid)
    expect(srv.post("/v1/volumes/%s/revert" % vid, json={"seq": last, "dryRun": True}), 200)
    expect(srv.post("/v1/volumes/%s/revert" % vid, json={"seq": last}), 200)
    expect_error(srv.post("/v1/volumes/%s/revert" % vid, json={}), 400, "validation_error")
    expect(srv.get("/v1/volumes/%s/changes" % vid, query={"since": 0, "keyId": "k_x"}), 200)
    r = expect(srv.get("/v1/volumes/%s/archive" % vid), 200)
    eq(r.body[:2], b"\x1f\x8b", "a gzip stream")
    expect_error(srv.delete(sp), 409, "conflict")
    expect(srv.delete(sp, query={"force": "true"}), 204)
    expect_error(srv.get(sp), 404, "not_found")
    expect(srv.get("/v1/volumes/%s/changes" % fork["id"], query={"since": 0}), 200, 410)
    expect(srv.delete("/v1/volumes/" + fork["id"]), 204)

    # signed links
    lk = expect(srv.post("/v1/volumes/%s/links" % vid, json={"path": "docs/a.md"},
                         headers={"Idempotency-Key": "lk-" + vid}), 201).json()
    expect_error(srv.post("/v1/volumes/%s/links" % vid, json={"path": "docs/a.md"},
                          headers={"Idempotency-Key": "lk-" + vid}), 409, "conflict")
    expect(srv.get(lk["url"], key=None), 200)
    expect(srv.get(lk["url"], key=None, headers={"Range": "bytes=1-2"}), 206)
    expect_error(srv.put(lk["url"], body=b"x", key=None), 403, "forbidden")
    expect_error(srv.get(lk["url"] + "x", key=None), 403, "forbidden")
    up = expect(srv.post("/v1/volumes/%s/links" % vid,
                         json={"path": "up/u.txt", "method": "PUT", "maxBytes": 8,
                               "contentType": "text/plain"}), 201).json()
    expect(srv.put(up["url"], body=b"hi", key=None, headers={"Content-Type": "text/plain"}), 201)
    expect(srv.put(up["url"], body=b"hi!", key=None, headers={"Content-Type": "text/plain"}), 200)
    expect_error(srv.put(up["url"], body=b"x" * 100, key=None,
                         headers={"Content-Type": "text/plain"}), 413, "too_large")
    expect_error(srv.put(up["url"], body=b"x", key=None, headers={"Content-Type": "image/png"}),
                 415, "unsupported_media_type")
    expect(srv.delete("/v1/volumes/" + vid), 204)


def test_tour_agents_and_subjects(srv):
    _need_jsonschema()
    aid = _name("ag")
    a = expect(srv.put("/v1/agents/" + aid, json={"exclude": ["*.secret"]}), 201).json()
    expect(srv.put("/v1/agents/" + aid, json={"sandbox": {"scratch": "64m"},
                                                 "exclude": ["*.secret"]}), 200)
    expect_error(srv.put("/v1/agents/" + aid, json={"nope": 1}), 400, "validation_error")
    docs = srv.create_volume()
    mounts = [{"workspace": True}, {"volumeId": docs["id"], "path": "/docs", "mode": "ro"}]
    expect(srv.put("/v1/agents/%s/mounts" % aid, json=mounts), 200)
    expect_error(srv.put("/v1/agents/" + aid, json={"mounts": [{"workspace": True}]}), 409,
                 "conflict")
    expect(srv.get("/v1/agents/" + aid), 200)
    expect_error(srv.get("/v1/agents/" + _name("none")), 404, "not_found")
    bound = expect(srv.post("/v1/keys", json={"agent": aid}), 201).json()["key"]
    expect_error(srv.get("/v1/volumes/" + a["workspaceVolumeId"], key=bound), 403, "forbidden")
    expect_error(srv.get("/v1/agents/" + _name("other"), key=bound), 403, "forbidden")
    listed = expect(srv.get("/v1/agents", query={"prefix": aid, "limit": 1}), 200).json()
    eq([x["id"] for x in listed["agents"]], [aid], "the list")
    expect_error(srv.get("/v1/agents", query={"limit": 0}), 400, "validation_error")
    expect_error(srv.get("/v1/agents", key=bound), 403, "forbidden")

    base = "/v1/agents/%s" % aid
    expect(srv.put(base + "/files/workspace/notes/a.txt", body=b"one\ntwo\n"), 201)
    expect(srv.put(base + "/files/workspace/notes/a.txt", body=b"one\ntwo\nthree\n"), 200)
    expect_error(srv.put(base + "/files/docs/x.txt", body=b"x"), 403, "forbidden")
    expect_error(srv.put(base + "/files/workspace/k.secret", body=b"x"), 403, "forbidden")
    expect(srv.get(base + "/files/workspace/notes/a.txt"), 200)
    expect(srv.get(base + "/files", query={"path": "/workspace/notes"}), 200)
    expect_error(srv.get(base + "/files/elsewhere/a.txt"), 404, "not_found")
    run = {"X-Run-Id": _name("run")}
    tools = [("read", {"path": "/workspace/notes/a.txt"}),
             ("read", {"path": "/workspace/notes/a.txt", "encoding": "base64"}),
             ("write", {"path": "/workspace/notes/b.md", "content": "# b\n"}),
             ("edit", {"path": "/workspace/notes/a.txt", "oldString": "two", "newString": "2"}),
             ("write", {"path": "/workspace/notes/a.txt", "content": "fresh\n"}),
             ("ls", {}), ("ls", {"path": "/nowhere"}),
             ("glob", {"pattern": "**/*.md"}),
             ("grep", {"pattern": "b", "outputMode": "count"}),
             ("grep", {"pattern": "b"}),
             ("present_file", {"path": "/workspace/notes/b.md", "caption": "b"})]
    for tool, args in tools:
        expect(srv.post(base + "/tools/" + tool, json=args, headers=run), 200)
    expect_error(srv.post(base + "/tools/grep", json={"pattern": "("}), 400, "validation_error")
    expect_error(srv.post(base + "/tools/nosuchtool", json={}), 404, "not_found")
    got = expect(srv.get(base + "/runs/" + run["X-Run-Id"]), 200).json()
    check(got["presented"], "the run presented a file")
    expect(srv.get(got["presented"][0]["url"], key=None), 200)
    expect(srv.post(base + "/links", json={"path": "/workspace/notes/b.md"}), 201)
    expect(srv.put(base + "/uploads/r1/q.txt", body=b"question"), 201)
    expect(srv.put(base + "/uploads/r1/q.txt", body=b"question"), 200)
    expect(srv.put(base + "/tool-outputs/toolu_1/o.txt", body=b"out"), 201)
    expect(srv.put(base + "/tool-outputs/toolu_1/o.txt", body=b"out"), 200)
    expect(srv.post(base + "/resolve", json={"input": {"f": {"$file": "/workspace/uploads/r1/q.txt"}}}),
           200)
    expect(srv.post(base + "/resolve", json={"input": [{"$file": "/workspace/uploads/r1/q.txt"}],
                                             "as": "url"}), 200)
    expect_error(srv.post(base + "/resolve", json={"input": {"$file": "/nope"}}), 404,
                 "not_found")
    gif = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"
    pr = {"text": "see", "requestId": "p1", "conversation": "c1",
          "files": [{"path": "/workspace/notes/a.txt"}, {"name": "i.gif", "data": gif}]}
    expect(srv.post(base + "/prompt", json=pr), 200)
    expect(srv.post(base + "/prompt", json=pr), 200)  # a retry
    expect_error(srv.post(base + "/prompt", json=dict(pr, text="other")), 409, "conflict")
    expect(srv.get(base + "/conversations/c1/request", query={"format": "openai"}), 200)
    expect_error(srv.get(base + "/conversations/none/request"), 404, "not_found")
    expect(srv.delete(base + "/files/workspace/notes/b.md"), 200)
    expect_error(srv.delete(base + "/files/workspace/notes/b.md"), 404, "not_found")
    _stream_head(srv, "GET", base + "/events")
    _stream_head(srv, "GET", "/v1/agents/%s/events" % _name("none"))

    su = base + "/users/ann"
    expect(srv.put(su + "/files/content", json={"path": "notes/n.md", "content": "n"}), 201)
    expect(srv.put(su + "/files/content", json={"path": "notes/n.md", "content": "bg==",
                                               "encoding": "base64"}), 200)
    expect_error(srv.put(su + "/files/content", json={"path": "memories/x.md", "content": "x"}),
                 403, "forbidden")
    expect_error(srv.put(su + "/files/content", json={"path": "notes/n.md/x", "content": "x"}),
                 409, "conflict")
    expect_error(srv.put(su + "/files/content", json={"path": "n.md"}), 400, "validation_error")
    expect(srv.get(su + "/files", query={"path": "notes"}), 200)
    expect_error(srv.get(su + "/files", query={"path": "nowhere"}), 404, "not_found")
    expect(srv.get(su + "/files/content", query={"path": "notes/n.md"}), 200)
    expect_error(srv.get(su + "/files/content"), 400, "validation_error")
    expect(srv.post(su + "/files/move", json={"from": "notes/n.md", "to": "notes/m.md"}), 200)
    expect(srv.delete(su + "/files", query={"path": "notes"}), 200)
    expect(srv.get(su + "/volume"), 200)
    expect(srv.put(su + "/memory/USER.md", body=b"likes tea"), 201)
    expect(srv.put(su + "/memory/USER.md", body=b"likes coffee"), 200)
    expect(srv.get(su + "/memory/USER.md"), 200)
    expect_error(srv.get(su + "/memory/MEMORY.md"), 404, "not_found")
    expect(srv.put(base + "/skills/s1.md", body=b"# s1"), 201)
    expect(srv.put(base + "/skills/s1.md", body=b"# s1 again"), 200)
    expect_error(srv.put(base + "/skills/s1.md", body=b"x" * ((1 << 20) + 1)), 413, "too_large")
    expect(srv.post(su + "/sessions", json={}), 201)
    expect(srv.post(su + "/prewarm", json={}), 200)
    expect_error(srv.post(su + "/tools/read_file", json={"path": "n.md"}), 404, "not_found")
    expect(srv.put(base, json={"tools": [{"type": "agent_toolset", "configs": [
        {"name": "file", "enabled": True, "permissionPolicy": {"type": "always_allow"}}]}]}),
        200)
    expect(srv.post(su + "/tools/write_file", json={"path": "t.md", "content": "t\n"}), 200)
    expect(srv.post(su + "/tools/read_file", json={"path": "t.md"}), 200)
    expect(srv.post(su + "/tools/patch", json={"path": "t.md", "oldString": "t",
                                               "newString": "u"}), 200)
    expect(srv.post(su + "/tools/search_files", json={"pattern": "u"}), 200)
    expect_error(srv.post(su + "/tools/read_file", json={"nope": 1}), 400, "validation_error")
    expect(srv.put(base, json={"tools": [{"type": "agent_toolset", "configs": [
        {"name": "file", "permissionPolicy": {"type": "always_ask"}}]}]}), 200)
    held = expect_error(srv.post(su + "/tools/write_file", json={"path": "t.md",
                                                               "content": "x"}),
                        423, "locked")["approvalId"]
    expect(srv.get(su + "/approvals"), 200)
    expect(srv.post(su + "/approvals/" + held, json={"approve": True}), 200)
    expect_error(srv.post(su + "/approvals/" + held, json={"approve": True}), 409, "conflict")
    expect_error(srv.post(su + "/approvals/ap_none", json={"approve": True}), 404, "not_found")
    expect(srv.post(su + "/tools/write_file", json={"path": "t.md", "content": "x"}), 200)
    expect(srv.delete(base), 204)
    expect_error(srv.delete(base), 404, "not_found")


def test_tour_turns(srv):
    _need_jsonschema()
    aid = _name("tu")
    expect(srv.put("/v1/agents/" + aid, json={"sandbox": {"scratch": "64m"}}), 201)
    t = expect(srv.post("/v1/turns", json={"agent": aid, "user": "u1", "deadlineSeconds": 600,
                                           "acceptedOutputModes": ["text/csv"]}), 201).json()
    expect_error(srv.post("/v1/turns", json={"agent": aid, "user": "u1"}), 400,
                 "validation_error")
    tp = "/v1/turns/" + t["id"]
    c = expect(srv.post(tp + "/calls", json={"command": "echo a,b > $OUTBOX/t.csv; echo hi"},
                        timeout=120), 200).json()
    eq(len(c["files"]), 1, "one file came back: %r" % c["notes"])
    expect(srv.get(c["files"][0]["url"]), 200)
    expect_error(srv.get(tp + "/files/%s/none.csv" % c["callId"]), 404, "not_found")
    expect(srv.post(tp + "/calls", json={"command": "echo streamed"},
                    headers={"Accept": "text/event-stream"}, timeout=120), 200)
    expect_error(srv.post(tp + "/calls", json={"command": ""}), 400, "validation_error")
    expect(srv.get(tp), 200)
    expect(srv.delete(tp), 204)
    expect_error(srv.post(tp + "/calls", json={"command": "true"}), 410, "gone")
    expect_error(srv.get(tp), 410, "gone")
    expect_error(srv.delete(tp), 410, "gone")
    expect(srv.get(c["files"][0]["url"]), 404, 410)
    expect_error(srv.get("/v1/turns/turn_nosuchturnatall12345"), 404, "not_found")
    expect(srv.delete("/v1/agents/" + aid), 204)


_wait_status = wait_status


def test_tour_relay(srv):
    _need_jsonschema()
    agent = make_agent(srv, _name("rl"))
    plain = _name("rn")
    expect(srv.put("/v1/agents/" + plain, json={}), 201)
    expect_error(srv.post("/v1/relay/sessions", json={"agent": plain}), 409, "conflict")
    expect_error(srv.post("/v1/relay/sessions", json={"agent": _name("none")}), 404, "not_found")
    expect_error(srv.post("/v1/relay/sessions", json={"agent": agent,
                                                      "limits": {"reads": 10 ** 9}}),
                 400, "validation_error")
    s = create(srv, agent, limits={"reads": 6, "fileBytes": 64})
    uid = s["uid"]
    ops = "/v1/relay/sessions/%s/ops" % uid
    expect_error(srv.post(ops, json={"op": "read_file", "path": "a.txt"}), 503, "unavailable")
    root = tempfile.mkdtemp(prefix="oa-relay-")
    with open(os.path.join(root, "a.txt"), "w") as f:
        f.write("hello\nworld\n")
    c = FakeClient(srv, uid, s["connectToken"], root)
    eq(c.status, 200, "connect")
    oc.check_response(harness.Response("POST", "/v1/relay/sessions/%s/connect" % uid, c.status,
                                       "", c.resp.headers, b""))
    _wait_status(srv, uid, "active")
    expect_error(srv.post("/v1/relay/sessions/%s/connect" % uid, json={},
                          key=s["connectToken"]), 409, "conflict")
    expect_error(srv.post("/v1/relay/sessions/%s/connect" % uid, json={}, key="rct_wrong"),
                 401, "unauthorized")
    expect(srv.post(ops, json={"op": "read_file", "path": "a.txt"}), 200)
    expect(srv.post(ops, json={"op": "write_file", "path": "b.txt", "content": "new"}), 200)
    expect(srv.post(ops, json={"op": "list_directory"}), 200)
    expect(srv.post(ops, json={"op": "search_files", "pattern": "wor"}), 200)
    expect_error(srv.post(ops, json={"op": "read_file", "path": "../x"}), 400, "validation_error")
    expect_error(srv.post(ops, json={"op": "read_file", "path": ".env"}), 403, "forbidden")
    expect_error(srv.post(ops, json={"op": "read_file", "path": "none.txt"}), 404, "not_found")
    expect_error(srv.post(ops, json={"op": "write_file", "path": "big.txt", "content": "x" * 65}),
                 413, "too_large")
    expect_error(srv.post(ops, json={"op": "write_file", "path": "$(id).txt", "content": "x"}),
                 422, "blocked")
    for _ in range(3):
        srv.post(ops, json={"op": "list_directory"})
    expect_error(srv.post(ops, json={"op": "list_directory"}), 429, "rate_limited")
    expect_error(c.post_result("op_nosuch", {"ok": True, "result": {}}), 404, "not_found")
    expect(c.post_event("accept", {"path": "b.txt"}), 204)
    expect_error(c.post_event("nonsense"), 400, "validation_error")
    expect(srv.get("/v1/relay/sessions"), 200)
    expect(srv.get("/v1/relay/sessions", query={"agent": agent, "all": "true"}), 200)
    _stream_head(srv, "GET", "/v1/relay/sessions/%s/events" % uid)
    expect(srv.get("/v1/relay/sessions/%s/log" % uid), 200)
    expect(srv.delete("/v1/relay/sessions/" + uid), 200)
    expect_error(srv.delete("/v1/relay/sessions/" + uid), 410, "gone")
    expect_error(srv.post(ops, json={"op": "list_directory"}), 410, "gone")
    expect(srv.get("/v1/relay/sessions/%s/events" % uid), 200)  # an ended stream ends
    expect_error(srv.get("/v1/relay/sessions/rs_nosuch"), 404, "not_found")
    c.close()

    # a supervised write answered later, and an abort
    s2 = create(srv, agent)
    c2 = FakeClient(srv, s2["uid"], s2["connectToken"], root, mode="supervised")
    eq(c2.status, 200, "connect")
    _wait_status(srv, s2["uid"], "active")
    c2.hold = True
    ops2 = "/v1/relay/sessions/%s/ops" % s2["uid"]
    err = expect_error(srv.post(ops2, json={"op": "write_file", "path": "s.txt", "content": "s"},
                                query={"wait": "false"}), 423, "locked")
    opp = "/v1/relay/sessions/%s/ops/%s" % (s2["uid"], err["opId"])
    eq(expect(srv.get(opp), 200).json()["status"], "pending", "waits for the user")
    c2.wait_ops(1)
    expect(c2.answer(c2.ops[0]), 204)
    eq(expect(srv.get(opp), 200).json()["status"], "done", "the user said yes")
    expect_error(srv.get("/v1/relay/sessions/%s/ops/op_nosuch" % s2["uid"]), 404, "not_found")
    expect(srv.post("/v1/relay/sessions/%s/abort" % s2["uid"]), 200)
    expect_error(c2.post_event("accept", {}), 410, "gone")
    # the Socket.IO face (tests/blackbox/test_relay_socketio.py drives it whole)
    hs = expect(srv.get("/socket.io/", query={"EIO": "4", "transport": "polling"}, key=None),
                200)
    sid = json.loads(hs.body[1:])["sid"]
    q = {"EIO": "4", "transport": "polling", "sid": sid}
    expect(srv.post("/socket.io/", body="3", query=q, key=None), 200)
    expect(srv.get("/socket.io/", query={"EIO": "3", "transport": "polling"}, key=None), 400)
    expect(srv.post("/socket.io/", body="x", query=q, key=None), 400)
    expect_error(srv.post("/v1/relay/sessions/%s/abort" % s2["uid"]), 410, "gone")
    c2.close()


def test_tour_mcp(srv):
    """/mcp (tests/blackbox/test_mcp_http.py drives it with the MCP SDK)."""
    _need_jsonschema()
    aid = _name("mcp")
    expect(srv.put("/v1/agents/" + aid, json={}), 201)
    q = {"agent": aid}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "tour", "version": "1"}}}
    r = expect(srv.post("/mcp", json=init, query=q), 200)
    sid = r.headers["Mcp-Session-Id"]
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    expect(srv.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    query=q, headers=h), 202)
    expect(srv.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    query=q, headers=h), 200)
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    expect(srv.post("/mcp", json=ping, query=q), 400)  # no session
    expect(srv.post("/mcp", json=ping, query=q, key=None), 401)
    expect(srv.post("/mcp", json=ping, query=q, headers=dict(h, Origin="http://evil.example")),
           403)
    expect(srv.post("/mcp", json=init, query={"agent": _name("none")}), 404)
    expect(srv.post("/mcp", json=ping, query=q, headers=dict(h, Accept="text/html")), 406)
    expect(srv.post("/mcp", body=b"{}", query=q,
                    headers=dict(h, **{"Content-Type": "text/plain"})), 415)
    expect(srv.get("/mcp", query=q, headers=h), 406)
    expect(srv.get("/mcp", query=q, headers={"Accept": "text/event-stream"}), 400)
    expect(srv.get("/mcp", query=q, key=None), 401)
    expect(srv.get("/mcp", query=q, headers={"Origin": "http://evil.example"}), 403)
    expect(srv.delete("/mcp", headers=h), 204)
    expect(srv.delete("/mcp", headers=h), 404)
    expect(srv.delete("/mcp"), 400)
    expect(srv.delete("/mcp", key=None), 401)
    expect(srv.delete("/mcp", headers={"Origin": "http://evil.example"}), 403)
    expect(srv.post("/mcp", json=ping, query=q, headers=h), 404)


def test_tour_webhooks(srv):
    _need_jsonschema()
    # a documentation address (TEST-NET-3): public, so accepted without the flag
    h = expect(srv.post("/v1/webhooks", json={"url": "http://203.0.113.10/hook",
                                              "events": ["snapshot.created"],
                                              "description": "tour"}), 201).json()
    expect_error(srv.post("/v1/webhooks", json={"url": "http://127.0.0.1/",
                                                "events": ["turn.ended"]}), 400)
    expect(srv.get("/v1/webhooks"), 200)
    expect(srv.get("/v1/webhooks/" + h["id"]), 200)
    expect_error(srv.get("/v1/webhooks/wh_nosuch"), 404, "not_found")
    expect(srv.patch("/v1/webhooks/" + h["id"], json={"events": ["snapshot.created",
                                                                 "turn.ended"]}), 200)
    vol = srv.create_volume()
    srv.snapshot(vol["id"])
    dl = expect(srv.get("/v1/webhooks/%s/deliveries" % h["id"]), 200).json()["deliveries"]
    eq(len(dl), 1, "one delivery queued")
    expect(srv.post("/v1/webhooks/%s/deliveries/%s/redeliver" % (h["id"], dl[0]["id"])), 202)
    expect(srv.delete("/v1/webhooks/" + h["id"]), 204)


def test_tour_reached_every_operation():
    """The tour above had answers of every documented operation checked."""
    _need_jsonschema()
    ops = {(m, p) for p, item in oc.doc()["paths"].items() for m in
           (k.upper() for k in item if k in oc.METHODS)}
    missed = sorted(ops - set(oc.seen))
    eq(missed, [], "documented operations the tour never reached")
    statuses = set().union(*oc.seen.values())
    for st in (200, 201, 204, 206, 304, 400, 401, 403, 404, 409, 410, 412, 413, 415, 416, 422,
               423, 429, 503):
        contains(statuses, st, "statuses checked against the document")
