"""--rate-limit N (docs/api.md "Rate limits"): a token bucket per key, N a second with a
burst of 2N; past it 429 `rate_limited` with Retry-After; other keys untouched; signed
links count against the key that made them.

No timing threshold decides a result: the bucket starts full, so the first 2N requests
of a key always pass; a refusal is only asserted when the requests took less time than
one token's refill, as measured around them."""

import os
import time

import harness
from harness import check, contains, eq, expect, expect_error

SERVER_OPTS = {"args": ["--rate-limit", "1"]}   # 1 a second, a burst of 2


def _setup(call):
    """Runs a setup request, waiting out the admin key's own limit (it is a key too)."""
    for _ in range(30):
        r = call()
        if r.status != 429:
            return r
        time.sleep(int(r.header("Retry-After") or "1"))
    return r


def _key(srv):
    return expect(_setup(lambda: srv.post("/v1/keys", json={})), 201).json()["key"]


def _until_limited(srv, path, key, n=6):
    """Sends up to n GETs of path; returns (statuses, last answer, seconds taken)."""
    got, t0 = [], time.monotonic()
    for _ in range(n):
        r = srv.get(path, key=key)
        got.append(r.status)
        if r.status == 429:
            break
    return got, r, time.monotonic() - t0


def test_burst_then_429_with_retry_after(srv):
    k = _key(srv)
    got, r, took = _until_limited(srv, "/v1/volumes", k)
    eq(got[:2], [200, 200], "the burst of 2N = 2 passes")
    if took >= 1.0:
        harness.skip("the requests took %.1f s, a token's refill: no refusal is certain" % took)
    eq(got[-1], 429, "past the burst")
    err = expect_error(r, 429, "rate_limited")
    contains(err["message"], "1 requests a second", "message names the limit")
    ra = r.header("Retry-After")
    check(ra is not None and ra.isdigit() and int(ra) >= 1, "Retry-After %r" % ra)
    # after Retry-After a token is back
    time.sleep(int(ra))
    expect(srv.get("/v1/volumes", key=k), 200)


def test_keys_have_their_own_buckets(srv):
    a, b = _key(srv), _key(srv)
    got, _, took = _until_limited(srv, "/v1/volumes", a)
    if got[-1] != 429:
        harness.skip("key a was never refused (%.1f s taken)" % took)
    expect(srv.get("/v1/volumes", key=b), 200)
    expect(srv.get("/v1/volumes", key=b), 200)


def test_unauthenticated_routes_are_not_limited(srv):
    for _ in range(6):
        expect(srv.get("/v1/health", key=None), 200)


def test_signed_links_count_against_their_maker(srv):
    k = _key(srv)
    vol = expect(_setup(lambda: srv.post("/v1/volumes", json={"name": "rl-%d" % os.getpid()})),
                 201).json()
    expect(_setup(lambda: srv.put_file(vol["id"], "a.txt", b"hello")), 201)
    t0 = time.monotonic()
    link = expect(srv.post("/v1/volumes/%s/links" % vol["id"], json={"path": "a.txt"},
                           key=k), 201).json()["url"]        # one token of k
    got = []
    for _ in range(5):
        r = srv.get(link, key=None)
        got.append(r.status)
        if r.status == 429:
            break
    took = time.monotonic() - t0
    eq(got[0], 200, "the link's first use (k's second token)")
    if took >= 1.0:
        harness.skip("the requests took %.1f s, a token's refill: no refusal is certain" % took)
    eq(got[-1], 429, "the link is limited as its maker is")
    expect_error(r, 429, "rate_limited")
    check(r.header("Retry-After"), "Retry-After on a link")
    r = srv.get("/v1/volumes", key=k)
    if time.monotonic() - t0 < 1.0:
        expect_error(r, 429, "rate_limited")   # the maker's own bucket is empty too
