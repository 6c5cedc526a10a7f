"""Signed links across nodes of one PostgreSQL dataset (API.md "Signed links", "Running on
several nodes": every call answers the same on every node). The secret signing links is
the dataset's, stored once in its metadata: a link made on one node is served by every
node, also by one started later with an empty data dir; a tampered link is refused on
every node; nodes starting together agree on one secret.
"""

import urllib.parse

import harness
from harness import check, eq, expect, sha256
from nodelib import start_together

_close, _node, _nodes, _pg = harness.close_nodes, harness.node, harness.nodes, harness.nodes_pg


def _link(srv, vid, **body):
    r = expect(srv.post("/v1/volumes/%s/links" % vid, json=body), 201)
    # the path only (/l/TOKEN): each node is asked at its own address
    return urllib.parse.urlsplit(r.json()["url"]).path


def _tamper(path):
    tok = path.rsplit("/", 1)[1]
    i = len(tok) // 2
    c = "A" if tok[i] != "A" else "B"
    return path[:-len(tok)] + tok[:i] + c + tok[i + 1:]


def test_link_made_on_one_node_is_served_by_every_node():
    url, nodes = _nodes(3)
    try:
        a, b, c = nodes
        vid = a.create_volume()["id"]
        a.put_ok(vid, "share/a.txt", b"made on node A")
        get = _link(a, vid, path="share/a.txt", expiresIn=3600)
        for i, s in enumerate(nodes):
            r = expect(s.get(get, key=None), 200)
            eq(r.body, b"made on node A", "a GET link made on node A, on node %d" % i)
        # a PUT link made on B, used on C, its file read on A
        put = _link(b, vid, path="share/up.txt", method="PUT", maxBytes=100)
        expect(c.put(put, body=b"sent through node C", key=None), 200, 201, 204)
        eq(expect(a.get_file(vid, "share/up.txt"), 200).body, b"sent through node C",
           "a file written through a PUT link made on B and used on C")
    finally:
        _close(url, nodes)


def test_a_node_started_later_serves_links_made_before():
    url, nodes = _nodes(2)
    try:
        a = nodes[0]
        vid = a.create_volume()["id"]
        data = b"x" * 5000
        a.put_ok(vid, "early.bin", data)
        get = _link(a, vid, path="early.bin", expiresIn=3600)
        late = _node(url, a)   # an empty --data: no link.key of its own
        nodes.append(late)
        eq(sha256(expect(late.get(get, key=None), 200).body), sha256(data),
           "a link made before this node started, served by it")
        # and the other way: its links verify on the nodes before it
        mine = _link(late, vid, path="early.bin")
        for i, s in enumerate(nodes):
            eq(sha256(expect(s.get(mine, key=None), 200).body), sha256(data),
               "a link made on the later node, on node %d" % i)
    finally:
        _close(url, nodes)


def test_a_tampered_link_is_refused_on_every_node():
    url, nodes = _nodes(3)
    try:
        a = nodes[0]
        vid = a.create_volume()["id"]
        a.put_ok(vid, "secret.txt", b"not for the tamperer")
        bad = _tamper(_link(a, vid, path="secret.txt", expiresIn=3600))
        for i, s in enumerate(nodes):
            r = s.get(bad, key=None)
            eq(r.status, 403, "a tampered link on node %d (%s)" % (i, r.body[:200]))
            check(b"not for the tamperer" not in r.body, "no content for a tampered link")
    finally:
        _close(url, nodes)


def test_nodes_starting_together_sign_with_one_secret():
    url = _pg().shared().new_database()
    nodes = [_node(url, start=False) for _ in range(3)]
    try:
        eq(start_together(nodes), [], "every node started")
        import os
        key = [s for s in nodes if os.path.exists(os.path.join(s.data, "admin.key"))][0].key
        for s in nodes:
            s.key = key
        vid = nodes[0].create_volume()["id"]
        nodes[0].put_ok(vid, "t.txt", b"small: kept in the metadata")
        for i, s in enumerate(nodes):
            link = _link(s, vid, path="t.txt")
            for j, o in enumerate(nodes):
                eq(expect(o.get(link, key=None), 200).body, b"small: kept in the metadata",
                   "a link made on node %d, on node %d" % (i, j))
    finally:
        _close(url, nodes)
