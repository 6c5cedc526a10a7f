"""Signed links: GET (Range), PUT (maxBytes 413, contentType 415), expiry, tampering,
Idempotency-Key (API.md Signed links)."""

import os
import re
import time
import urllib.parse

from harness import check, eq, expect, expect_error, sha256


def _link(srv, vid, status=201, headers=None, **body):
    r = srv.post("/v1/volumes/%s/links" % vid, json=body, headers=headers)
    expect(r, status)
    return r.json()


def _tamper(url):
    u = urllib.parse.urlsplit(url)
    tok = u.path.rsplit("/", 1)[1]
    i = len(tok) // 2
    c = "A" if tok[i] != "A" else "B"
    return url.replace(tok, tok[:i] + c + tok[i + 1:])


def test_get_link(srv):
    vid = srv.create_volume()["id"]
    data = os.urandom(1000)
    srv.put_ok(vid, "share/file.bin", data)
    before = time.time()
    l = _link(srv, vid, path="share/file.bin")
    eq((l.get("method"), l.get("path")), ("GET", "share/file.bin"), "link method, path")
    check(re.match(r"^https?://[^/]+/l/[^/?#]+$", l["url"] or ""),
          "url is absolute and ends in /l/TOKEN: %r" % l["url"])
    check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", l["expiresAt"]),
          "expiresAt is RFC 3339: %r" % l["expiresAt"])
    import datetime
    exp = datetime.datetime.fromisoformat(l["expiresAt"].replace("Z", "+00:00")).timestamp()
    check(abs(exp - (before + 900)) < 30, "default expiry 900 s (expiresAt %s)" % l["expiresAt"])
    r = expect(srv.get(l["url"], key=None), 200)
    eq(sha256(r.body), sha256(data), "bytes via the link, no key")
    eq((r.header("X-Content-Type-Options") or "").lower(), "nosniff", "nosniff via link")
    r = expect(srv.get(l["url"], key=None, headers={"Range": "bytes=10-19"}), 206)
    eq(r.body, data[10:20], "Range via the link")
    eq(r.header("Content-Range"), "bytes 10-19/1000", "Content-Range via the link")
    expect(srv.get(l["url"], key=None, headers={"Range": "bytes=1000-"}), 416)
    h = expect(srv.head(l["url"], key=None), 200)
    eq(h.header("Content-Length"), "1000", "HEAD via the link")
    # the link reads the file as it is now
    srv.put_ok(vid, "share/file.bin", b"new")
    eq(expect(srv.get(l["url"], key=None), 200).body, b"new", "link after an overwrite")


def test_put_link(srv):
    vid = srv.create_volume()["id"]
    l = _link(srv, vid, path="up/in.txt", method="PUT", maxBytes=10, contentType="text/plain")
    eq(l["method"], "PUT", "method")
    seq = srv.seq(vid)
    expect_error(srv.put(l["url"], body=b"x" * 11, key=None, headers={"Content-Type": "text/plain"}),
                 413, "too_large")

    def gen():
        for _ in range(4):
            yield b"x" * 5
    expect_error(srv.put(l["url"], body=gen(), key=None, headers={"Content-Type": "text/plain"}),
                 413)
    expect_error(srv.put(l["url"], body=b"hi", key=None, headers={"Content-Type": "image/png"}),
                 415, "unsupported_media_type")
    eq(srv.seq(vid), seq, "seq after refused link uploads")
    expect_error(srv.get_file(vid, "up/in.txt"), 404)
    r = expect(srv.put(l["url"], body=b"0123456789", key=None,
                       headers={"Content-Type": "text/plain"}), 200, 201)
    eq(r.json().get("sha256"), sha256(b"0123456789"), "PUT via link answer sha256")
    g = expect(srv.get_file(vid, "up/in.txt"), 200)
    eq(g.body, b"0123456789", "bytes uploaded via the link")
    check((g.header("Content-Type") or "").startswith("text/plain"), "content type kept")
    eq(srv.seq(vid), seq + 1, "one change")


def test_link_method_mismatch(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f", b"f")
    g = _link(srv, vid, path="f")
    expect_error(srv.put(g["url"], body=b"overwrite", key=None), 403, "forbidden")
    p = _link(srv, vid, path="f", method="PUT")
    expect_error(srv.get(p["url"], key=None), 403)
    eq(expect(srv.get_file(vid, "f"), 200).body, b"f", "file untouched")


def test_expires_in_limits(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f", b"f")
    _link(srv, vid, path="f", expiresIn=86400)
    expect_error(srv.post("/v1/volumes/%s/links" % vid, json={"path": "f", "expiresIn": 86401}),
                 400, mentions="86400")
    for bad in (0, -5, "900", 1.5):
        expect_error(srv.post("/v1/volumes/%s/links" % vid, json={"path": "f", "expiresIn": bad}),
                     400)


def test_bad_link_bodies(srv):
    vid = srv.create_volume()["id"]
    url = "/v1/volumes/%s/links" % vid
    expect_error(srv.post(url, json={}), 400)
    expect_error(srv.post(url, json={"path": "../x"}), 400)
    expect_error(srv.post(url, json={"path": "f", "method": "DELETE"}), 400)
    expect_error(srv.post(url, json={"path": "f", "bogus": 1}), 400)
    expect_error(srv.post(url, json={"path": "f", "method": "PUT", "maxBytes": -1}), 400)
    expect_error(srv.post("/v1/volumes/nosuch/links", json={"path": "f"}), 404)


def test_tampered_token_403(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f", b"secret")
    l = _link(srv, vid, path="f")
    expect_error(srv.get(_tamper(l["url"]), key=None), 403, "forbidden")
    expect_error(srv.get(l["url"] + "x", key=None), 403)
    expect_error(srv.get("/l/notatoken", key=None), 403)
    p = _link(srv, vid, path="f", method="PUT")
    expect_error(srv.put(_tamper(p["url"]), body=b"evil", key=None), 403)
    eq(expect(srv.get_file(vid, "f"), 200).body, b"secret", "file untouched")


def test_expired_link_403(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f", b"f")
    l = _link(srv, vid, path="f", expiresIn=1)
    p = _link(srv, vid, path="g", method="PUT", expiresIn=1)
    time.sleep(2.2)
    expect_error(srv.get(l["url"], key=None), 403, "forbidden")
    expect_error(srv.put(p["url"], body=b"late", key=None), 403)
    expect_error(srv.get_file(vid, "g"), 404)


def test_idempotency_key_retry_409(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f", b"f")
    h = {"Idempotency-Key": "link-%s" % vid}
    l = _link(srv, vid, headers=h, path="f")
    r = srv.post("/v1/volumes/%s/links" % vid, json={"path": "f"}, headers=h)
    expect_error(r, 409, "conflict")
    tok = urllib.parse.urlsplit(l["url"]).path.rsplit("/", 1)[1]
    check(tok not in r.text and "/l/" not in r.text, "the retry must not carry the link: %s" % r.text)
    # a different key makes another link
    _link(srv, vid, headers={"Idempotency-Key": "link2-%s" % vid}, path="f")


def test_link_to_deleted_volume(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "f", b"f")
    l = _link(srv, vid, path="f")
    expect(srv.delete("/v1/volumes/%s" % vid), 200, 204)
    r = srv.get(l["url"], key=None)
    check(r.status in (403, 404, 410), "a link into a deleted volume serves nothing (got %d)" % r.status)
    check(r.body != b"f", "no bytes")


def test_a_revoked_keys_links_stop(srv):
    """Issue 32.10: a link outlived the key that made it. Now a GET or PUT link of a
    revoked key is 403 naming the key (before the fix: 200 and 201); a link of another,
    live key of the organization goes on working."""
    vid = srv.create_volume("revoked-links")["id"]
    srv.put_ok(vid, "a.txt", b"hello")
    k = expect(srv.post("/v1/keys", json={}), 201).json()
    other = expect(srv.post("/v1/keys", json={}), 201).json()
    get = expect(srv.post("/v1/volumes/%s/links" % vid, json={"path": "a.txt"},
                          key=k["key"]), 201).json()["url"]
    put = expect(srv.post("/v1/volumes/%s/links" % vid, json={"path": "b.txt", "method": "PUT"},
                          key=k["key"]), 201).json()["url"]
    live = expect(srv.post("/v1/volumes/%s/links" % vid, json={"path": "a.txt"},
                           key=other["key"]), 201).json()["url"]
    expect(srv.get(get, key=None), 200)
    expect(srv.delete("/v1/keys/" + k["id"]), 204)
    for r in (srv.get(get, key=None), srv.request("HEAD", get, key=None),
              srv.put(put, body=b"x", key=None, headers={"Content-Type": "text/plain"})):
        expect(r, 403)
    err = expect_error(srv.get(get, key=None), 403, "forbidden")
    check(k["id"] in err["message"] and "revoked" in err["message"],
          "names the key and why: %r" % err["message"])
    eq(srv.get(live, key=None).body, b"hello", "a live key's link still serves")
