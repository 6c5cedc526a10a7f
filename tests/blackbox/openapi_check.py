"""openapi_check — the router's routes and docs/openapi.json, and answers checked against it.

    import openapi_check as oc
    oc.router_routes()           # [(METHOD, "/v1/volumes/{}/files/{+}"), ...] from src/http/router.c
    oc.doc_operations()          # {(METHOD, "/v1/volumes/{}/files/{}"): operation} from the document
    oc.check_response(resp)      # raises AssertionError unless `resp` (a harness.Response) is
                                 # what the document says for its operation and status, and
                                 # a JSON request it took (2xx) is valid by the document too
    oc.enable()                  # check every answer harness.Server.request returns from now on
                                 # (also on with COFFER_OPENAPI_CHECK=1 in the environment)
    oc.seen                      # {(METHOD, doc path): {status, ...}} of the answers checked

An answer is matched to its route the way cofferd does it: the first route of the router's
table whose pattern matches the raw URL path and whose method is the request's (HEAD is
served by GET routes). That route's pattern, with `{}` and `{+}` written `{}`, names the
document's path (`{id}` and the like are written `{}` too). The status must be documented
for the operation; a JSON answer is validated (JSON Schema 2020-12, python3-jsonschema)
against the schema of its status, `$ref`s resolved in the document's components; other
answers (bytes, event streams, empty ones) must be of a media type the status documents.
Answers to a path no route matches (404) or to a method the path lacks (405) must carry the
document's `Error` schema.

Schemas are open by default (a field the document does not name is allowed: adding one is a
compatible change). With $COFFER_OPENAPI_STRICT=1 every schema but `Error` is closed, so
`COFFER_OPENAPI_CHECK=1 COFFER_OPENAPI_STRICT=1 make test` finds every field the document
misses.
"""

import json
import os
import re
import threading
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROUTER_C = os.path.join(ROOT, "src", "http", "router.c")
DOC = os.path.join(ROOT, "docs", "openapi.json")
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")

try:
    import jsonschema
except ImportError:  # the test module skips, naming python3-jsonschema
    jsonschema = None

seen = {}
_lock = threading.Lock()
_cache = {}


def router_routes():
    """(METHOD, pattern) of every entry of the `routes[]` table of src/http/router.c, in
    table order (the order the router tries them)."""
    with open(ROUTER_C, encoding="utf-8") as f:
        src = f.read()
    m = re.search(r"static const http_route routes\[\] = \{(.*?)\n\};", src, re.S)
    assert m, "no `static const http_route routes[] = {...};` table in %s" % ROUTER_C
    table = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    routes = re.findall(r'\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"', table)
    assert routes, "no routes parsed from the table in %s" % ROUTER_C
    return routes


def doc():
    if "doc" not in _cache:
        with open(DOC, encoding="utf-8") as f:
            _cache["doc"] = json.load(f)
    return _cache["doc"]


def norm(path):
    """A path template with every parameter written `{}` (router: `{}`, `{+}`; document:
    `{name}`)."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def doc_operations():
    """{(METHOD, normalised path): operation} of the document."""
    ops = {}
    for path, item in doc()["paths"].items():
        for method, o in item.items():
            if method in METHODS:
                ops[(method.upper(), norm(path))] = o
    return ops


def _doc_paths():
    """{normalised path: document path}."""
    return {norm(p): p for p in doc()["paths"]}


def _route_regex(pattern):
    """The router's matching as a regex: `{}` one non-empty segment, `{+}` the rest."""
    out, i = "", 0
    for part in re.split(r"(\{\+?\})", pattern):
        if part == "{}":
            out += "[^/]+"
        elif part == "{+}":
            out += ".*"
        else:
            out += re.escape(part)
    return re.compile(out + r"\Z")


def _routes():
    if "routes" not in _cache:
        _cache["routes"] = [(m, p, _route_regex(p)) for m, p in router_routes()]
    return _cache["routes"]


def find_route(method, raw_path):
    """(route pattern, path known) for a request: the pattern of the route cofferd serves
    it with, or None, and whether any route matches the path at all."""
    known = False
    for m, p, rx in _routes():
        if not rx.match(raw_path):
            continue
        known = True
        if m == method or (method == "HEAD" and m == "GET"):
            return p, True
    return None, known


def _closed(schema):
    """`schema` (a copy) with every object schema that names its properties and says
    nothing of others closed (`unevaluatedProperties: false`)."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _closed(v) if k in ("items", "oneOf", "anyOf", "allOf") else v
           for k, v in schema.items()}
    if "properties" in schema:
        out["properties"] = {k: _closed(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema:
            out["unevaluatedProperties"] = False
    return out


def _components():
    """The document's components; with $COFFER_OPENAPI_STRICT=1 its schemas (but `Error`,
    whose extra fields are by design) are closed, so a field the document does not name
    fails: additive fields are compatible, so this is a lint, not the default."""
    if "components" not in _cache:
        comp = dict(doc()["components"])
        if os.environ.get("COFFER_OPENAPI_STRICT") == "1":
            comp["schemas"] = {k: v if k == "Error" else _closed(v)
                               for k, v in comp["schemas"].items()}
        _cache["components"] = comp
    return _cache["components"]


def _validator(schema):
    """A Draft 2020-12 validator of `schema` whose `#/components/...` refs resolve in the
    document."""
    root = dict(schema)
    root["components"] = _components()
    cls = jsonschema.Draft202012Validator
    return cls(root, format_checker=cls.FORMAT_CHECKER)


def _short(msg, n=400):
    """A validation message cut in the middle: its end says which rule failed."""
    return msg if len(msg) <= n else msg[:n // 2] + " ... " + msg[-n // 2:]


def _validate(schema, value, what, resp):
    errors = sorted(_validator(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        lines = ["%s: %s (at %s)" % (what, _short(e.message),
                                     "/".join(str(x) for x in e.absolute_path) or "the top")
                 for e in errors[:5]]
        raise AssertionError("answer does not match docs/openapi.json\n  %s\n%s" % (
            "\n  ".join(lines), resp.describe()))


def _media(resp):
    ct = resp.header("Content-Type") or ""
    return ct.split(";")[0].strip().lower()


def _covers(documented, media):
    """True when a documented media type (`*/*`, `type/*`, exact) covers `media`."""
    if documented == "*/*" or documented == media:
        return True
    return documented.endswith("/*") and media.startswith(documented[:-1])


def check_response(resp):
    """Raises AssertionError unless resp is what docs/openapi.json says (see the module's
    docstring). Returns (METHOD, document path) or None for an answer outside any route."""
    if jsonschema is None:
        raise AssertionError("python3-jsonschema is needed to check answers against "
                             "docs/openapi.json")
    method = resp.method.upper()
    raw = urllib.parse.urlsplit(resp.url).path
    pattern, known = find_route(method, raw)
    media = _media(resp)
    if pattern is None:
        want = 405 if known else 404
        if resp.status != want:
            raise AssertionError("%s %s matches no route of src/http/router.c, so the answer "
                                 "must be %d, not %d\n%s" % (method, raw, want, resp.status,
                                                             resp.describe()))
        if method != "HEAD":
            _validate({"$ref": "#/components/schemas/Error"}, resp.json(), "error body", resp)
        return None
    dpath = _doc_paths().get(norm(pattern))
    op = doc()["paths"].get(dpath, {}).get("get" if method == "HEAD" else method.lower())
    if op is None:
        raise AssertionError("route %s %s (router.c) is not in docs/openapi.json" % (
            method, pattern))
    key = (method, dpath)
    with _lock:
        seen.setdefault(key, set()).add(resp.status)
    responses = op["responses"]
    r = responses.get(str(resp.status)) or responses.get("%dXX" % (resp.status // 100))
    if r is None:
        raise AssertionError("status %d is not documented for %s %s (documented: %s)\n%s" % (
            resp.status, method, dpath, ", ".join(sorted(responses)), resp.describe()))
    if "$ref" in r:
        r = doc()["components"]["responses"][r["$ref"].rsplit("/", 1)[1]]
    _check_request(resp, op, method, dpath)
    content = r.get("content") or {}
    if method == "HEAD" or (not resp.body and not media):
        return key  # no body to look at (204, 304, HEAD)
    if not resp.body and media == "application/json":
        raise AssertionError("empty body sent as JSON\n%s" % resp.describe())
    if not content:
        raise AssertionError("%s %s %d is documented without a body, but one came (%s)\n%s" % (
            method, dpath, resp.status, media or "no Content-Type", resp.describe()))
    if media == "application/json":
        if "application/json" not in content:
            raise AssertionError("%s %s %d: a JSON answer, but the document says %s\n%s" % (
                method, dpath, resp.status, ", ".join(content), resp.describe()))
        _validate(content["application/json"].get("schema", {}), resp.json(),
                  "%s %s %d" % (method, dpath, resp.status), resp)
    elif not any(_covers(d, media) for d in content):
        raise AssertionError("%s %s %d: answered as %r, documented as %s\n%s" % (
            method, dpath, resp.status, media, ", ".join(content), resp.describe()))
    return key


def _check_request(resp, op, method, dpath):
    """A JSON request body the server took (2xx) must be valid by the document: a schema
    that refuses what cofferd accepts is wrong too."""
    if not 200 <= resp.status < 300 or not resp.req_body:
        return
    ct = next((v for k, v in resp.req_headers.items() if k.lower() == "content-type"), "")
    schema = ((op.get("requestBody") or {}).get("content") or {}).get("application/json", {})
    if not ct.startswith("application/json") or "schema" not in schema:
        return
    try:
        body = json.loads(resp.req_body)
    except ValueError:
        return
    _validate(schema["schema"], body, "the request body of %s %s (answered %d)" % (
        method, dpath, resp.status), resp)


def enable():
    """Checks every answer of harness.Server.request from now on."""
    import harness
    harness.ON_RESPONSE = check_response
