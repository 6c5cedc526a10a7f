"""HTTP as clients expect it (RFC 9110, S3 habits): read conditionals on every
download, downloads that name their file, one valid media type per PUT and
attachments for active types, control characters refused in paths, the
Idempotency-Key bound to its request, and a volume's ceiling held while a body
streams."""

import email.utils
import os
import socket
import threading
import time
import urllib.parse

from harness import check, contains, eq, expect, expect_error


def _http_date(t):
    return email.utils.formatdate(t, usegmt=True)


def _downloads(srv):
    """One fresh file reached by each kind of download: [(what, url path, key)]."""
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "docs/r\u00e9sum\u00e9 \"1\".txt", b"volume bytes", content_type="text/plain")
    link = expect(srv.post("/v1/volumes/%s/links" % vid,
                           json={"path": "docs/r\u00e9sum\u00e9 \"1\".txt"}), 201).json()["url"]
    aid = "rfc-%d" % (time.time_ns() % 10**12)
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    expect(srv.put("/v1/agents/%s/files/workspace/out/a%%20b.txt" % aid, body=b"agent bytes",
                   headers={"Content-Type": "text/plain"}), 201)
    expect(srv.put("/v1/agents/%s/users/ann/files/content" % aid,
                   json={"path": "notes/n.txt", "content": "subject bytes"}), 201)
    return [
        ("volume file", srv.file_path(vid, "docs/r\u00e9sum\u00e9 \"1\".txt"),
         "r\u00e9sum\u00e9 \"1\".txt"),
        ("signed link", link, "r\u00e9sum\u00e9 \"1\".txt"),
        ("agent file", "/v1/agents/%s/files/workspace/out/a%%20b.txt" % aid, "a b.txt"),
        ("subject file", "/v1/agents/%s/users/ann/files/content?path=notes/n.txt" % aid,
         "n.txt"),
    ]


# ------------------------------------------------------------- conditionals

def test_read_conditionals_everywhere(srv):
    for what, url, _ in _downloads(srv):
        r = expect(srv.get(url), 200)
        lm = r.header("Last-Modified")
        etag = r.header("ETag")
        check(lm and email.utils.parsedate_to_datetime(lm), "%s sends Last-Modified" % what)
        then = email.utils.parsedate_to_datetime(lm).timestamp()
        # If-Modified-Since: 304 when not modified since, 200 when it was
        expect(srv.get(url, headers={"If-Modified-Since": lm}), 304)
        expect(srv.get(url, headers={"If-Modified-Since": _http_date(then + 3600)}), 304)
        expect(srv.get(url, headers={"If-Modified-Since": _http_date(then - 3600)}), 200)
        expect(srv.head(url, headers={"If-Modified-Since": lm}), 304)
        # If-Match / If-Unmodified-Since that fail: 412; that hold: 200
        expect_error(srv.get(url, headers={"If-Match": '"999999"'}), 412, "precondition_failed")
        expect(srv.head(url, headers={"If-Match": "\"999999\""}), 412)
        expect(srv.get(url, headers={"If-Match": etag}), 200)
        expect(srv.get(url, headers={"If-Match": "*"}), 200)
        expect_error(srv.get(url, headers={"If-Unmodified-Since": _http_date(then - 3600)}),
                     412, "precondition_failed")
        expect(srv.get(url, headers={"If-Unmodified-Since": lm}), 200)


def test_read_conditionals_precedence(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "p.txt", b"x")
    r = expect(srv.get_file(vid, "p.txt"), 200)
    lm, etag = r.header("Last-Modified"), r.header("ETag")
    then = email.utils.parsedate_to_datetime(lm).timestamp()
    old, new = _http_date(then - 3600), _http_date(then + 3600)
    # If-Match decides before If-Unmodified-Since (which is then ignored)
    expect(srv.get_file(vid, "p.txt", headers={"If-Match": etag,
                                               "If-Unmodified-Since": old}), 200)
    expect(srv.get_file(vid, "p.txt", headers={"If-Match": '"77"',
                                               "If-Unmodified-Since": new}), 412)
    # If-None-Match decides before If-Modified-Since (ignored when INM is present)
    expect(srv.get_file(vid, "p.txt", headers={"If-None-Match": '"77"',
                                               "If-Modified-Since": new}), 200)
    expect(srv.get_file(vid, "p.txt", headers={"If-None-Match": etag,
                                               "If-Modified-Since": old}), 304)
    # a failed If-Match is 412 even when If-None-Match would say 304
    expect(srv.get_file(vid, "p.txt", headers={"If-Match": '"77"', "If-None-Match": etag}), 412)
    # weak tags never match If-Match (strong comparison)
    expect(srv.get_file(vid, "p.txt", headers={"If-Match": "W/" + etag}), 412)
    # invalid dates are ignored
    for bad in ("yesterday", "Mon, 99 Foo 2020 00:00:00 GMT", ""):
        expect(srv.get_file(vid, "p.txt", headers={"If-Modified-Since": bad}), 200)
        expect(srv.get_file(vid, "p.txt", headers={"If-Unmodified-Since": bad}), 200)
    # the obsolete forms are dates too (RFC 9110 5.6.7)
    t = time.gmtime(then + 3600)
    rfc850 = time.strftime("%A, %d-%b-%y %H:%M:%S GMT", t)
    asctime = time.strftime("%a %b %d %H:%M:%S %Y", t).replace(" 0", "  ", 1) \
        if time.strftime("%d", t).startswith("0") else time.strftime("%a %b %d %H:%M:%S %Y", t)
    expect(srv.get_file(vid, "p.txt", headers={"If-Modified-Since": rfc850}), 304)
    expect(srv.get_file(vid, "p.txt", headers={"If-Modified-Since": asctime}), 304)
    # a newer write is modified since
    time.sleep(1.1)
    srv.put_ok(vid, "p.txt", b"y")
    expect(srv.get_file(vid, "p.txt", headers={"If-Modified-Since": lm}), 200)


# ------------------------------------------------------- downloads name their file

def _filename_star(disp):
    """The decoded filename* of a Content-Disposition value (RFC 8187), or None."""
    for part in disp.split(";"):
        k, _, v = part.strip().partition("=")
        if k.lower() == "filename*":
            charset, _, rest = v.partition("'")
            _, _, pct = rest.partition("'")
            eq(charset.upper(), "UTF-8", "filename* charset")
            check(all(c.isalnum() or c in "!#$&+-.^_`|~%" for c in pct),
                  "filename* is percent-encoded per RFC 8187: %r" % pct)
            return urllib.parse.unquote(pct, encoding="utf-8", errors="strict")
    return None


def _filename_plain(disp):
    i = disp.find('filename="')
    if i < 0:
        return None
    j = disp.index('"', i + 10)
    return disp[i + 10:j]


def test_downloads_name_their_file(srv):
    for what, url, name in _downloads(srv):
        for method in (srv.get, srv.head):
            disp = expect(method(url), 200).header("Content-Disposition") or ""
            check(disp.startswith("inline;"), "%s: text/plain is inline: %r" % (what, disp))
            eq(_filename_star(disp), name, "%s: filename* of %r" % (what, disp))
            plain = _filename_plain(disp)
            check(plain is not None and all(0x20 <= ord(c) < 0x7f and c not in '"\\%'
                                            for c in plain),
                  "%s: plain ASCII filename fallback, safely quoted: %r" % (what, disp))
    # an active type is an attachment that still names its file
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "web/\u65e5\u672c.html", b"<script>1</script>", content_type="text/html")
    disp = expect(srv.get_file(vid, "web/\u65e5\u672c.html"), 200).header("Content-Disposition")
    check(disp.startswith("attachment;"), "html is an attachment: %r" % disp)
    eq(_filename_star(disp), "\u65e5\u672c.html", "filename* of a UTF-8 name")
    # archives keep their name and carry filename* too
    r = expect(srv.get("/v1/volumes/%s/archive" % vid), 200)
    disp = r.header("Content-Disposition")
    name = "%s-%s.tar.gz" % (vid, r.header("X-Volume-Seq"))
    eq(_filename_plain(disp), name, "archive name")
    eq(_filename_star(disp), name, "archive filename*")
    for h, v in (("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", "sandbox")):
        eq(r.header(h), v, "archive " + h)


def test_archive_utf8_names(srv):
    """A UTF-8 name (NFD kept) in an archive: cofferd once died writing it."""
    import io
    import tarfile
    vid = srv.create_volume()["id"]
    names = ["e\u0301t\u00e9/\u65e5\u672c.txt", "x" * 90 + "/\u00fc" * 10 + ".md"]
    for n in names:
        srv.put_ok(vid, n, n.encode())
    body = expect(srv.get("/v1/volumes/%s/archive" % vid), 200).body
    with tarfile.open(fileobj=io.BytesIO(body)) as t:
        got = {m.name: t.extractfile(m).read() for m in t}
    eq(got, {n: n.encode() for n in names}, "archive names and bytes")


# ------------------------------------------------ one media type; inline allowlist

def test_put_content_type_is_one_media_type(srv):
    vid = srv.create_volume()["id"]
    aid = "ct-%d" % (time.time_ns() % 10**12)
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    bad = ["text/plain,text/html", "text/html, text/plain", "text", "text/", "/plain",
           "text/plain; charset", "text/plain; =utf-8", "text/plain; charset=\"utf-8",
           "text plain", "te(x)t/plain", "text/plain; a=b c"]
    for ct in bad:
        e = expect_error(srv.put_file(vid, "a.txt", b"<b>x</b>", content_type=ct), 400,
                         "validation_error")
        contains(e["message"], "Content-Type", "the error names the header")
        expect_error(srv.put("/v1/agents/%s/files/workspace/a.txt" % aid, body=b"x",
                             headers={"Content-Type": ct}), 400, "validation_error")
        expect_error(srv.post("/v1/volumes/%s/links" % vid,
                              json={"path": "a.txt", "method": "PUT", "contentType": ct}),
                     400, "validation_error")
    eq(srv.list_files(vid)["files"], [], "nothing stored")
    # refused before 100 Continue: the client never sends the body
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: text/plain,text/html\r\nContent-Length: 5\r\n"
               "Expect: 100-continue\r\n\r\n" % (srv.file_path(vid, "b.txt"), srv.key)).encode())
    head = s.recv(4096).decode("latin-1")
    s.close()
    check(head.startswith("HTTP/1.1 400"), "400 without 100 Continue, got %r" % head[:80])
    good = ["text/plain", "text/plain; charset=utf-8", "text/plain;charset=\"utf-8\"",
            "application/vnd.api+json", "TEXT/Plain ; q=\"a \\\" b\"", "text/plain;"]
    for i, ct in enumerate(good):
        r = srv.put_ok(vid, "g%d.txt" % i, b"x", content_type=ct)
        eq(r["contentType"], ct, "stored type")
    # a link PUT with a bad type is refused too
    link = expect(srv.post("/v1/volumes/%s/links" % vid,
                           json={"path": "l.txt", "method": "PUT"}), 201).json()["url"]
    expect_error(srv.put(link, body=b"x", headers={"Content-Type": "text/plain,text/html"}),
                 400, "validation_error")


def test_attachment_unless_inline_allowlisted(srv):
    vid = srv.create_volume()["id"]
    inline = ["text/plain", "text/plain; charset=utf-8", "text/csv", "text/markdown",
              "application/json", "application/pdf", "image/png", "image/jpeg", "image/gif",
              "image/webp", "audio/mpeg", "video/mp4"]
    attach = ["text/xsl", "text/html", "image/svg+xml", "application/xml", "text/xml",
              "application/xhtml+xml", "text/javascript", "application/octet-stream",
              "text/css", "application/x-unknown", "text/vnd.wap.wml", "image/svg",
              "multipart/x-mixed-replace", "application/rss+xml", "audio", "text/plain2"]
    for i, ct in enumerate(inline + attach):
        if "/" not in ct:
            continue
        srv.put_ok(vid, "f%d" % i, b"<x/>", content_type=ct)
        r = expect(srv.get_file(vid, "f%d" % i), 200)
        eq(r.header("Content-Type"), ct, "served type")
        disp = r.header("Content-Disposition") or ""
        want = "inline" if ct in inline else "attachment"
        eq(disp.split(";")[0], want, "disposition of %s (%r)" % (ct, disp))
        eq(r.header("X-Content-Type-Options"), "nosniff", "nosniff on %s" % ct)
        eq(r.header("Content-Security-Policy"), "sandbox", "CSP on %s" % ct)
    # a signed link serves the same headers
    link = expect(srv.post("/v1/volumes/%s/links" % vid, json={"path": "f%d" % len(inline)}),
                  201).json()["url"]
    r = expect(srv.get(link, key=None), 200)
    eq(r.header("Content-Disposition").split(";")[0], "attachment", "text/xsl by link")
    eq((r.header("X-Content-Type-Options"), r.header("Content-Security-Policy")),
       ("nosniff", "sandbox"), "link download headers")


# ------------------------------------------------------ control characters in paths

CONTROLS = ["a\r\nX-Inj: 1", "tab\there", "bell\x07", "del\x7f", "x\x01y", "dir\x1f/f"]


def _q(s):
    return urllib.parse.quote(s, safe="/")


def test_control_characters_refused_everywhere(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "ok.txt", b"x")
    aid = "cc-%d" % (time.time_ns() % 10**12)
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    ag = "/v1/agents/%s" % aid
    for bad in CONTROLS:
        what = repr(bad)
        e = expect_error(srv.put_file(vid, bad, b"x"), 400, "validation_error")
        contains(e["message"], "control character", "volume PUT %s names why" % what)
        expect_error(srv.get_file(vid, bad), 400, "validation_error")
        expect_error(srv.delete(srv.file_path(vid, bad)), 400, "validation_error")
        expect_error(srv.post("/v1/volumes/%s/move" % vid, json={"from": "ok.txt", "to": bad}),
                     400, "validation_error")
        expect_error(srv.post("/v1/volumes/%s/move" % vid, json={"from": bad, "to": "b.txt"}),
                     400, "validation_error")
        expect_error(srv.get("/v1/volumes/%s/files" % vid, query={"prefix": bad}), 400,
                     "validation_error")
        expect_error(srv.get("/v1/volumes/%s/archive" % vid, query={"path": bad}), 400,
                     "validation_error")
        expect_error(srv.post("/v1/volumes/%s/links" % vid, json={"path": bad}), 400,
                     "validation_error")
        expect_error(srv.post("/v1/volumes/%s/links" % vid,
                              json={"path": bad, "method": "PUT"}), 400, "validation_error")
        expect_error(srv.put(ag + "/files/workspace/" + _q(bad), body=b"x"), 400,
                     "validation_error")
        expect_error(srv.get(ag + "/files/workspace/" + _q(bad)), 400, "validation_error")
        expect_error(srv.put(ag + "/uploads/r1/" + _q(bad.replace("/", "_")), body=b"x"), 400,
                     "validation_error")
        expect_error(srv.put(ag + "/uploads/" + _q(bad.replace("/", "_")) + "/n.txt",
                             body=b"x"), 400, "validation_error")
        expect_error(srv.put(ag + "/users/ann/files/content",
                             json={"path": bad, "content": "x"}), 400, "validation_error")
        expect_error(srv.get(ag + "/users/ann/files/content", query={"path": bad}), 400,
                     "validation_error")
        expect_error(srv.get(ag + "/users/ann/files", query={"path": bad}), 400,
                     "validation_error")
        expect_error(srv.post(ag + "/users/ann/files/move", json={"from": "x", "to": bad}), 400,
                     "validation_error")
        expect_error(srv.get(ag + "/files", query={"path": "/workspace/" + bad}), 400,
                     "validation_error")
        expect_error(srv.get("/v1/volumes/%s/changes" % vid, query={"prefix": bad}), 400,
                     "validation_error")
        expect_error(srv.post("/v1/volumes/%s/snapshots" % vid, json={"files": {bad: "x"}}),
                     400, "validation_error")
        expect_error(srv.post(ag + "/links", json={"path": "/workspace/" + bad}), 400,
                     "validation_error")
        expect_error(srv.post(ag + "/tools/write", json={"path": "/workspace/" + bad,
                                                         "content": "x"}), 400,
                     "validation_error")
    eq([f["path"] for f in srv.list_files(vid)["files"]], ["ok.txt"], "nothing else stored")
    # the archive never carries such a name
    import io
    import tarfile
    body = expect(srv.get("/v1/volumes/%s/archive" % vid), 200).body
    with tarfile.open(fileobj=io.BytesIO(body)) as t:
        eq(t.getnames(), ["ok.txt"], "archive names")


def test_dot_subject_ids_refused(srv):
    aid = "dot-%d" % (time.time_ns() % 10**12)
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    for sid in ("%2E", "%2E%2E"):
        base = "/v1/agents/%s/users/%s" % (aid, sid)
        e = expect_error(srv.put(base + "/files/content", json={"path": "a.txt", "content": "x"}),
                         400, "validation_error")
        contains(e["message"], "subject id", "the error names the subject id")
        expect_error(srv.get(base + "/volume"), 400, "validation_error")
        expect_error(srv.get(base + "/files"), 400, "validation_error")
        expect_error(srv.put(base + "/memory/USER.md", body=b"x"), 400, "validation_error")
    # the agent id rule it matches
    expect_error(srv.put("/v1/agents/%2E%2E", json={}), 400, "validation_error")
    expect(srv.put("/v1/agents/%s/users/a.b/files/content" % aid,
                   json={"path": "a.txt", "content": "x"}), 201)


# ------------------------------------------------- Idempotency-Key bound to its request

def test_idempotency_key_with_another_request_conflicts(srv):
    key = "idem-rfc-%d" % time.time_ns()
    h = {"Idempotency-Key": key}
    a = expect(srv.post("/v1/volumes", json={"name": key + "-a"}, headers=h), 201).json()
    # the same request again: the same volume (a replay); key order and spacing
    # of the JSON do not make another request
    b = expect(srv.request("POST", "/v1/volumes", body=('{ "name" : "%s-a" }' % key).encode(),
                           headers=dict(h, **{"Content-Type": "application/json"})), 201).json()
    eq(b["id"], a["id"], "replayed volume")
    # another body: 409 naming the key, and nothing made
    e = expect_error(srv.post("/v1/volumes", json={"name": key + "-b"}, headers=h), 409,
                     "conflict")
    contains(e["message"], key, "the 409 names the key")
    e = expect_error(srv.post("/v1/volumes", json={"name": key + "-a", "ceiling": 1 << 20},
                              headers=h), 409, "conflict")
    # another path with the same key: 409 too, no link made
    srv.put_ok(a["id"], "f.txt", b"x")
    e = expect_error(srv.post("/v1/volumes/%s/links" % a["id"], json={"path": "f.txt"},
                              headers=h), 409, "conflict")
    contains(e["message"], key, "the 409 names the key")
    # the original request still replays
    eq(expect(srv.post("/v1/volumes", json={"name": key + "-a"}, headers=h), 201).json()["id"],
       a["id"], "replay after the conflicts")
    # (test_volume_list checks that no other volume was made)
    # links: the same request is 409 (never the link again); another body is 409
    # naming the key
    lk = {"Idempotency-Key": key + "-link"}
    expect(srv.post("/v1/volumes/%s/links" % a["id"], json={"path": "f.txt"}, headers=lk), 201)
    e = expect_error(srv.post("/v1/volumes/%s/links" % a["id"], json={"path": "f.txt"},
                              headers=lk), 409, "conflict")
    contains(e["message"], key + "-link", "the 409 names the key")
    check("url" not in str(e), "no link in the 409")
    e = expect_error(srv.post("/v1/volumes/%s/links" % a["id"],
                              json={"path": "f.txt", "expiresIn": 60}, headers=lk), 409)
    contains(e["message"], "different request", "says the request differs")
    # agent links share the rule
    aid = "idem-%d" % (time.time_ns() % 10**12)
    expect(srv.put("/v1/agents/%s" % aid, json={}), 201)
    expect(srv.put("/v1/agents/%s/files/workspace/f.txt" % aid, body=b"x"), 201)
    ak = {"Idempotency-Key": key + "-agent"}
    expect(srv.post("/v1/agents/%s/links" % aid, json={"path": "/workspace/f.txt"},
                    headers=ak), 201)
    e = expect_error(srv.post("/v1/agents/%s/links" % aid,
                              json={"path": "/workspace/f.txt", "expiresIn": 5}, headers=ak),
                     409, "conflict")
    contains(e["message"], key + "-agent", "the 409 names the key")


# --------------------------------------------------- the ceiling holds while streaming

MiB = 1 << 20


def _tmp_bytes(srv):
    total = 0
    for root, _, files in os.walk(os.path.join(srv.data, "tmp")):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_size
            except FileNotFoundError:
                pass
    return total


def test_ceiling_refused_before_100_continue(srv):
    vid = srv.create_volume(ceiling=MiB)["id"]
    srv.put_ok(vid, "half.bin", b"h" * (MiB // 2))
    for path, length, want in (("big.bin", MiB, "400"), ("half.bin", MiB, "100"),
                               ("fits.bin", MiB // 2, "100")):
        s = socket.create_connection((srv.host, srv.port), timeout=10)
        s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n"
                   % (srv.file_path(vid, path), srv.key, length)).encode())
        head = s.recv(65536).decode("latin-1")
        s.close()
        # over what is left: 400 at once; an overwrite frees the file's own bytes
        check(head.startswith("HTTP/1.1 " + want),
              "PUT %s of %d bytes into a 1 MiB ceiling holding 0.5 MiB: want %s first, got %r"
              % (path, length, want, head[:200]))
        if want == "400":
            contains(head, "ceiling", "the 400 names the ceiling")
    eq(srv.volume(vid)["bytes"], MiB // 2, "bytes stored")


def _sampling_body(srv, total, chunk, fill):
    """A streamed body of `total` bytes in `chunk`s that records, before each chunk,
    the most DATA/tmp held so far (seen["max"])."""
    seen = {"max": 0, "sent": 0}

    def body():
        while seen["sent"] < total:
            seen["max"] = max(seen["max"], _tmp_bytes(srv))
            seen["sent"] += chunk
            yield fill * chunk
    return seen, body()


def test_ceiling_stops_a_streamed_body(srv):
    vid = srv.create_volume(ceiling=MiB)["id"]
    total, chunk = 48 * MiB, 256 * 1024
    seen, body = _sampling_body(srv, total, chunk, b"z")

    e = expect_error(srv.put_file(vid, "huge.bin", body), 400, "validation_error")
    contains(e["message"], "ceiling", "the error names the ceiling")
    eq(e.get("ceiling"), MiB, "error.ceiling")
    seen["max"] = max(seen["max"], _tmp_bytes(srv))
    check(seen["max"] <= MiB + chunk,
          "DATA/tmp held at most the ceiling while %d MiB streamed in (saw %d bytes)"
          % (total // MiB, seen["max"]))
    eq(srv.volume(vid)["bytes"], 0, "nothing stored")
    # a streamed body that fits is stored whole
    def fits():
        for _ in range(3):
            yield b"f" * chunk
    r = expect(srv.put_file(vid, "ok.bin", fits()), 201).json()
    eq(r["size"], 3 * chunk, "size")
    # and a signed PUT link holds the same ceiling
    link = expect(srv.post("/v1/volumes/%s/links" % vid,
                           json={"path": "l.bin", "method": "PUT"}), 201).json()["url"]
    seen, body = _sampling_body(srv, total, chunk, b"z")
    expect_error(srv.put(link, body=body, key=None), 400, "validation_error")
    check(seen["max"] <= MiB + chunk, "link upload cut at the ceiling (saw %d)" % seen["max"])


def test_ceiling_holds_for_agent_files(srv):
    vid = srv.create_volume(ceiling=MiB)["id"]
    aid = "ceil-%d" % (time.time_ns() % 10**12)
    expect(srv.put("/v1/agents/%s" % aid,
                   json={"mounts": [{"volumeId": vid, "path": "/data", "mode": "rw"}]}), 201)
    total, chunk = 24 * MiB, 256 * 1024
    seen, body = _sampling_body(srv, total, chunk, b"z")

    url = "/v1/agents/%s/files/data/big.bin" % aid
    e = expect_error(srv.put(url, body=body), 400, "validation_error")
    contains(e["message"], "ceiling", "the error names the ceiling")
    check(seen["max"] <= MiB + chunk, "agent upload cut at the ceiling (saw %d)" % seen["max"])
    s = socket.create_connection((srv.host, srv.port), timeout=10)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n"
               % (url, srv.key, 2 * MiB)).encode())
    head = s.recv(65536).decode("latin-1")
    s.close()
    check(head.startswith("HTTP/1.1 400"), "400 before 100 Continue, got %r" % head[:120])
    eq(srv.volume(vid)["bytes"], 0, "nothing stored")


def test_ceiling_holds_for_agent_uploads(srv):
    vid = srv.create_volume(ceiling=MiB)["id"]
    aid = "up-%d" % (time.time_ns() % 10**12)
    expect(srv.put("/v1/agents/%s" % aid,
                   json={"mounts": [{"workspace": False},
                                    {"volumeId": vid, "path": "/data", "mode": "rw"}]}), 201)
    total, chunk = 24 * MiB, 256 * 1024
    seen, body = _sampling_body(srv, total, chunk, b"u")

    url = "/v1/agents/%s/uploads/r1/big.bin" % aid
    e = expect_error(srv.put(url, body=body), 400, "validation_error")
    contains(e["message"], "ceiling", "the error names the ceiling")
    check(seen["max"] <= MiB + chunk, "upload cut at the ceiling (saw %d)" % seen["max"])
    eq(srv.volume(vid)["bytes"], 0, "nothing stored")
    # one that fits lands, and its retry still replays
    r = expect(srv.put(url, body=b"x" * (64 * 1024)), 201).json()
    eq(r["path"], "/data/uploads/r1/big.bin", "upload path")
    r = expect(srv.put(url, body=b"x" * (64 * 1024)), 200).json()
    eq(r.get("replayed"), True, "a retry replays")
