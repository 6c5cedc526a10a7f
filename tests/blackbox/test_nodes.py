"""Several cofferd nodes on one PostgreSQL dataset (issue 12; API.md "Running on several
nodes"): writes through every node read the same from every node, a conditional-write
race across nodes has exactly one winner, and a long-poll on one node wakes for a write
made on another (LISTEN/NOTIFY).

Content here is small (inline in the metadata), since each node keeps its own blob
directory in this test: what crosses nodes is the metadata.
"""

import os
import shutil
import threading
import time

import harness
from harness import check, eq, expect

TIMEOUT = 120


def _nodes(n=3):
    """n nodes on one new database; the first makes the admin key, the others get a copy
    of it (API.md: later nodes use the dataset's keys)."""
    if harness.ENGINE != "pg":
        harness.skip("cross-node tests run once, in the pg pass")
    import pgpeer
    why = pgpeer.available()
    if why:
        harness.skip("PostgreSQL 15 is needed: " + why)
    url = pgpeer.shared().new_database()
    nodes = [harness.Server(args=["--meta", url], engine="pg")]
    for i in range(1, n):
        s = harness.Server(args=["--meta", url], engine="pg", start=False)
        os.makedirs(s.data, exist_ok=True)
        shutil.copy(os.path.join(nodes[0].data, "admin.key"), s.data)
        nodes.append(s.start())
    return url, nodes


def _close(url, nodes):
    for s in nodes:
        s.close()
    import pgpeer
    pgpeer.shared().drop_database(url)


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
