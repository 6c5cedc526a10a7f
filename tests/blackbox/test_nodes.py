"""Several cofferd nodes on one PostgreSQL dataset (issue 12; API.md "Running on several
nodes"): writes through every node read the same from every node, a conditional-write
race across nodes has exactly one winner, a long-poll on one node wakes for a write made
on another (LISTEN/NOTIFY), later nodes use the dataset's admin key (they make none), and
a node killed with SIGKILL under 8 writers loses no acknowledged write.

The nodes of one dataset share its content as well: on this pass every server keeps its
content in S3 (harness.Server.use_s3), and the nodes of a test share one prefix.
"""

import os
import subprocess
import threading
import time

import harness
from harness import check, contains, eq, expect, expect_error, sha256
from nodelib import start_together

TIMEOUT = 120


# the nodes of a test: harness.nodes (one starter for every test_nodes* module)
_pg, _node, _nodes, _close = (harness.nodes_pg, harness.node, harness.nodes,
                              harness.close_nodes)


def _admin_keys(url):
    import pgpeer
    return int(pgpeer.shared().psql("SELECT count(*) FROM keys WHERE admin = 1",
                                    db=url.rsplit("/", 1)[1]).stdout)


def test_writes_through_every_node_read_on_every_node():
    url, nodes = _nodes()
    try:
        vid = nodes[0].create_volume()["id"]
        for i, s in enumerate(nodes):
            for j in range(5):
                s.put_ok(vid, "n%d/f%d.txt" % (i, j), b"node %d file %d" % (i, j))
        want = sorted("n%d/f%d.txt" % (i, j) for i in range(3) for j in range(5))
        for i, s in enumerate(nodes):
            files = s.list_files(vid, limit=100)
            eq(sorted(f["path"] for f in files["files"]), want, "files as node %d lists them" % i)
            eq(s.seq(vid), 15, "seq on node %d" % i)
            eq(expect(s.get_file(vid, "n2/f4.txt"), 200).body, b"node 2 file 4",
               "a file written on node 2, read on node %d" % i)
    finally:
        _close(url, nodes)


def test_revocation_and_overwrite_on_one_node_hold_on_another_at_once():
    """The small-GET path (issue 13.1) keeps no key or entry that another node could
    change behind it: a key revoked on node A is refused by node B on its next request,
    and a file overwritten on A reads as the new version on B right away."""
    url, nodes = _nodes(2)
    a, b = nodes
    try:
        vid = a.create_volume()["id"]
        a.put_ok(vid, "f.txt", b"one")
        k = expect(a.post("/v1/keys", json={"name": "across"}), 201).json()
        for _ in range(20):  # warm every loop thread of B on this key and file
            eq(expect(b.get_file(vid, "f.txt", key=k["key"]), 200).body, b"one",
               "version 1 on node B")
        a.put_ok(vid, "f.txt", b"two")
        for _ in range(5):
            r = expect(b.get_file(vid, "f.txt", key=k["key"]), 200)
            eq(r.body, b"two", "node B reads the overwrite made on node A")
            eq(r.header("ETag"), '"2"', "its ETag")
        expect(a.delete("/v1/keys/" + k["id"]), 204)
        for _ in range(5):
            r = expect_error(b.get_file(vid, "f.txt", key=k["key"]), 401, "unauthorized")
            contains(r["message"], "revoked", "node B on the revoked key")
    finally:
        _close(url, nodes)


def test_cas_race_across_nodes_one_winner():
    url, nodes = _nodes()
    try:
        vid = nodes[0].create_volume()["id"]
        nodes[0].put_ok(vid, "race.txt", b"v1")
        results = [None] * 16
        go = threading.Barrier(16)

        def writer(i):
            s = nodes[i % 3]
            go.wait()
            results[i] = s.put_file(vid, "race.txt", b"writer %d" % i,
                                    headers={"If-Match": '"1"'}).status
        ts = [threading.Thread(target=writer, args=(i,)) for i in range(16)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        won = [i for i, st in enumerate(results) if st in (200, 201)]
        eq(len(won), 1, "winners of 16 conditional writers over 3 nodes (statuses %s)" % results)
        eq(sorted(set(results)), sorted({200, 412}), "every other writer gets 412")
        for i, s in enumerate(nodes):
            eq(expect(s.get_file(vid, "race.txt"), 200).body, b"writer %d" % won[0],
               "the winner's bytes on node %d" % i)
            eq(s.seq(vid), 2, "one change: seq on node %d" % i)
    finally:
        _close(url, nodes)


def test_long_poll_on_one_node_woken_by_a_write_on_another():
    url, nodes = _nodes(2)
    try:
        a, b = nodes
        vid = a.create_volume()["id"]
        a.put_ok(vid, "first.txt", b"1")
        res = {}

        def poll():
            t0 = time.monotonic()
            r = b.get("/v1/volumes/%s/changes" % vid, query={"since": 1, "wait": 30},
                      timeout=60)
            res["at"], res["took"], res["r"] = time.monotonic(), time.monotonic() - t0, r
        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.5 * harness.SCALE)   # the poll is waiting on node B
        check("r" not in res, "the long-poll answered before any change: %r" % res.get("r"))
        a.put_ok(vid, "second.txt", b"2")
        acked = time.monotonic()
        t.join(40 * harness.SCALE)
        check("r" in res, "the long-poll on node B never answered")
        j = expect(res["r"], 200).json()
        eq([c["path"] for c in j["changes"]], ["second.txt"], "the change made on node A")
        # Woken, not timed out: it answered long before its 30 s wait was over.
        check(res["took"] < 25, "node B's long-poll waited %.1fs: it was not woken" % res["took"])
        print("cross-node wake-up: %.1f ms after node A acknowledged the write" % (
            (res["at"] - acked) * 1000))
    finally:
        _close(url, nodes)


def test_later_nodes_use_the_datasets_admin_key():
    url, nodes = _nodes(2)
    try:
        a, b = nodes
        check(os.path.exists(os.path.join(a.data, "admin.key")), "the first node saved the key")
        contains(a.log(), "cofferd admin key: " + a.key, "the first node printed its new key")
        check(not os.path.exists(os.path.join(b.data, "admin.key")),
              "a later node with an empty data dir saves no admin key of its own")
        contains(b.log(), "this node uses the dataset's keys", "what the later node says")
        check("cofferd admin key:" not in b.log(), "the later node printed no new key")
        eq(_admin_keys(url), 1, "admin keys in the dataset")
        # the first node's key works on the later one, and keys it mints work on both
        vid = b.create_volume()["id"]
        b.put_ok(vid, "a.txt", b"through b")
        k = expect(b.post("/v1/keys", json={}), 201).json()["key"]
        eq(expect(a.get_file(vid, "a.txt", key=k), 200).body, b"through b",
           "a key minted on node B, used on node A")
        b.restart()
        check(not os.path.exists(os.path.join(b.data, "admin.key")), "none after a restart")
        eq(_admin_keys(url), 1, "admin keys after the later node's restart")
    finally:
        _close(url, nodes)


def test_nodes_starting_together_make_one_admin_key():
    url = _pg().shared().new_database()
    nodes = [_node(url, start=False) for _ in range(4)]
    try:
        eq(start_together(nodes), [], "every node started")
        made = [s for s in nodes if os.path.exists(os.path.join(s.data, "admin.key"))]
        eq(len(made), 1, "nodes that made an admin key, of 4 started together")
        eq(_admin_keys(url), 1, "admin keys in the dataset")
        for s in nodes:
            s.key = made[0].key
            expect(s.get("/v1/volumes"), 200)
    finally:
        _close(url, nodes)


def _content(w, i):
    """Distinct content; every third small enough to be kept inline in the metadata,
    the others in the blob store (S3 on this pass)."""
    size = 2000 if i % 3 == 0 else 30000 + 991 * (i % 40)
    seed = ("w%d-f%d-" % (w, i)).encode()
    return (seed * (size // len(seed) + 1))[:size]


@harness.timeout(180)
def test_8_writers_over_3_nodes_dense_seqs_each_once_in_the_feed():
    """Each node groups only its own writers of a volume (one batch a node at a time,
    the volume's row lock between the nodes): 8 writers over 3 nodes, 3 rounds, get
    dense distinct seqs, and every node's feed lists each write once at its seq."""
    url, nodes = _nodes(3)
    try:
        vid = nodes[0].create_volume()["id"]
        writers, rounds = 8, 3
        seqs, gate = {}, threading.Barrier(writers)

        def writer(i):
            s = nodes[i % 3]
            gate.wait(30)
            for rnd in range(rounds):
                path = "r%d/w%d.txt" % (rnd, i)
                r = s.put_file(vid, path, b"%d %d" % (rnd, i),
                               headers={"If-None-Match": "*"}, timeout=TIMEOUT)
                seqs[path] = expect(r, 201).json()["seq"]
        ts = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(TIMEOUT)
        eq(len(seqs), writers * rounds, "every write acknowledged")
        eq(sorted(seqs.values()), list(range(1, writers * rounds + 1)),
           "dense, distinct seqs across the nodes")
        for n, s in enumerate(nodes):
            j = expect(s.get("/v1/volumes/%s/changes" % vid, query={"since": 0}), 200).json()
            eq([(c["seq"], c["path"]) for c in j["changes"]],
               sorted((q, p) for p, q in seqs.items()),
               "node %d's feed: each write once, at its seq, in order" % n)
    finally:
        _close(url, nodes)


def test_sigkill_of_a_node_under_8_writers_loses_no_acknowledged_write():
    url, nodes = _nodes(3)
    try:
        if not nodes[0].blobs_url:
            harness.skip("the nodes need one shared blob store (S3; not with "
                         "COFFER_TEST_PG_BLOBS=local)")
        vid = nodes[0].create_volume()["id"]
        acked, mu, stop = {}, threading.Lock(), threading.Event()
        tried = [0] * 8

        def writer(w):
            s = nodes[w % 3]
            i = 0
            while not stop.is_set():
                path, data = "w%d/f%05d.bin" % (w, i), _content(w, i)
                i += 1
                tried[w] += 1
                try:
                    r = s.put_file(vid, path, data, timeout=20)
                except OSError:
                    if not s.alive():
                        return   # its node is gone: nothing more is acknowledged
                    continue
                if r.status in (200, 201):
                    with mu:
                        acked[path] = sha256(data)
        ts = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
        for t in ts:
            t.start()
        time.sleep(1.5 * harness.SCALE)
        victim = nodes[2]
        victim.kill()
        killed_at = len(acked)
        time.sleep(1.0 * harness.SCALE)   # the survivors keep writing
        stop.set()
        for t in ts:
            t.join(60 * harness.SCALE)
        print("%d writes tried, %d acknowledged (%d before the kill)" % (
            sum(tried), len(acked), killed_at))
        check(killed_at > 0 and len(acked) > killed_at,
              "writes were acknowledged before and after the kill (%d, %d)" % (
                  killed_at, len(acked)))
        for s in nodes[:2]:
            listed = {f["path"]: f["sha256"]
                      for f in s.list_files(vid, limit=10000)["files"]}
            lost = [p for p, h in sorted(acked.items()) if listed.get(p) != h]
            eq(lost[:10], [], "acknowledged writes missing from node %d's listing" %
               nodes.index(s))
            bad = []
            for p, h in sorted(acked.items()):
                r = s.get_file(vid, p)
                if r.status != 200 or sha256(r.body) != h:
                    bad.append((p, r.status))
            eq(bad[:10], [], "acknowledged writes read back wrong from node %d" %
               nodes.index(s))
        # the killed node comes back with all of it too
        victim.start()
        r = victim.get_file(vid, sorted(acked)[-1])
        eq(sha256(expect(r, 200).body), acked[sorted(acked)[-1]], "read on the restarted node")
        args = ["fsck", "--json", "--meta", url, "--blobs", nodes[0].blobs_url]
        p = subprocess.run([harness.coffer_binary()] + args, capture_output=True,
                           env=dict(os.environ, **(nodes[0].env or {})),
                           timeout=120 * harness.SCALE)
        eq(p.returncode, 0, "coffer fsck --meta --blobs after the kill:\n%s%s" % (
            p.stdout.decode(errors="replace")[-3000:], p.stderr.decode(errors="replace")))
        contains(p.stdout.decode(), '"ok": true', "fsck report")
    finally:
        _close(url, nodes)
