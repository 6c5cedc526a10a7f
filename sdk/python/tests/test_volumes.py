"""Volumes through the SDK against a real cofferd: every call, a 412 race, a stream of
changes followed over long-polls."""

from __future__ import annotations

import io
import tarfile
import threading
import unittest
import urllib.request

import coffer
from support import client, name


class VolumeCalls(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.vol = self.c.volumes.create(name("vol"))

    def tearDown(self) -> None:
        self.c.close()

    def test_create_get_list_seqs_delete(self) -> None:
        info = self.vol.info
        assert info is not None
        self.assertTrue(info.id.startswith("vol_"))
        self.assertEqual(info.seq, 0)
        self.assertEqual(info.capacity, 512 * 1024 * 1024)
        self.assertIsNotNone(info.created_at)
        got = self.c.volumes.get(self.vol.id)
        self.assertEqual(got.info and got.info.name, info.name)
        pre = name("listed")
        made = [self.c.volumes.create(pre + "-%d" % i).id for i in range(3)]
        page, cursor = self.c.volumes.list(prefix=pre, limit=2)
        self.assertEqual(len(page), 2)
        self.assertIsNotNone(cursor)
        self.assertEqual(sorted(v.id for v in self.c.volumes.iter(prefix=pre)), sorted(made))
        self.vol.write("a.txt", "x")
        seqs = {v.id: v.seq for v in self.c.volumes.seqs([self.vol.id, made[0], "vol_nosuch"])}
        self.assertEqual(seqs, {self.vol.id: 1, made[0]: 0})
        self.c.volumes.delete(made[0])
        with self.assertRaises(coffer.NotFound) as cm:
            self.c.volumes.get(made[0])
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(cm.exception.type, "not_found")
        self.assertIn(made[0], cm.exception.message)

    def test_create_with_idempotency_key_answers_the_same_volume(self) -> None:
        key = name("idem")
        a = self.c.volumes.create("same", idempotency_key=key)
        b = self.c.volumes.create("same", idempotency_key=key)
        self.assertEqual(a.id, b.id)
        with self.assertRaises(coffer.Conflict) as cm:
            self.c.volumes.create("other", idempotency_key=key)
        self.assertIn(key, cm.exception.message)

    def test_write_read_open_stat_remove(self) -> None:
        w = self.vol.write("docs/a.md", "# hello")
        self.assertEqual((w.path, w.version, w.size, w.seq), ("docs/a.md", 1, 7, 1))
        self.assertEqual(w.content_type, "text/markdown")
        r = self.vol.read("/docs/a.md")
        self.assertEqual((r.data, r.text, r.version, r.seq), (b"# hello", "# hello", 1, 1))
        self.vol.write("b.bin", io.BytesIO(b"\x00\x01\x02" * 1000), content_type="application/x-thing")
        with self.vol.open("b.bin", range="bytes=2-5") as d:
            self.assertEqual(d.status, 206)
            self.assertEqual(d.read(), b"\x02\x00\x01\x02")
            self.assertEqual(d.content_type, "application/x-thing")
        self.vol.write("gen.txt", (b"part%d " % i for i in range(5)))
        self.assertEqual(self.vol.read("gen.txt").data, b"part0 part1 part2 part3 part4 ")
        st = self.vol.stat("b.bin")
        self.assertEqual((st["version"], st["size"]), (2, 3000))
        rm = self.vol.remove("docs/a.md")
        self.assertEqual(rm.path, "docs/a.md")
        with self.assertRaises(coffer.NotFound):
            self.vol.read("docs/a.md")
        with self.assertRaises(coffer.NotFound):
            self.vol.remove("docs/a.md")
        with self.assertRaises(coffer.ValidationError) as cm:
            self.vol.write("a/../b", "x")
        self.assertEqual(cm.exception.status, 400)

    def test_conditional_writes_and_412_current(self) -> None:
        w = self.vol.write("c.txt", "one", if_absent=True)
        with self.assertRaises(coffer.PreconditionFailed) as cm:
            self.vol.write("c.txt", "again", if_absent=True)
        self.assertEqual(cm.exception.current["version"], w.version)
        self.assertEqual(cm.exception.current["sha256"], w.sha256)
        w2 = self.vol.write("c.txt", "two", version=w.version)
        self.assertEqual(w2.version, w.version + 1)
        with self.assertRaises(coffer.PreconditionFailed) as cm:
            self.vol.write("c.txt", "three", version=w.version)
        self.assertEqual(cm.exception.current["version"], w2.version)
        with self.assertRaises(coffer.PreconditionFailed):
            self.vol.remove("c.txt", version=w.version)
        self.vol.remove("c.txt", version=w2.version)

    def test_412_race_has_exactly_one_winner(self) -> None:
        base = self.vol.write("race.txt", "0")
        results: list[object] = []
        lock = threading.Lock()
        start = threading.Barrier(8)

        def writer(i: int) -> None:
            # one client shared by the 8 threads: its pool hands each its own connection
            start.wait()
            try:
                out: object = self.vol.write("race.txt", "w%d" % i, version=base.version)
            except coffer.PreconditionFailed as e:
                out = e
            with lock:
                results.append(out)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wins = [r for r in results if not isinstance(r, coffer.PreconditionFailed)]
        losses = [r for r in results if isinstance(r, coffer.PreconditionFailed)]
        self.assertEqual(len(wins), 1, results)
        self.assertEqual(len(losses), 7)
        winner = wins[0]
        assert isinstance(winner, coffer.models.FileInfo)
        for e in losses:
            self.assertEqual(e.current["version"], winner.version)
            self.assertEqual(e.current["sha256"], winner.sha256)
        self.assertEqual(self.vol.read("race.txt").version, winner.version)

    def test_move_list_read_all(self) -> None:
        self.vol.write("src/a.md", "A")
        self.vol.write("src/b.md", "B")
        self.vol.write("other.bin", b"\xff\x00")
        mv = self.vol.move("src", "dst")
        self.assertEqual((mv.from_, mv.to, mv.moved), ("src", "dst", 2))
        self.vol.write("x.md", "X")
        with self.assertRaises(coffer.Conflict):
            self.vol.move("x.md", "dst/a.md")
        self.vol.move("x.md", "dst/a.md", overwrite=True)
        listing = self.vol.list(glob="**/*.md")
        self.assertEqual([f.path for f in listing.files], ["dst/a.md", "dst/b.md"])
        page = self.vol.list(limit=1)
        self.assertEqual(len(page.files), 1)
        self.assertIsNotNone(page.cursor)
        self.assertEqual([f.path for f in self.vol.iter_files()],
                         ["dst/a.md", "dst/b.md", "other.bin"])
        everything = self.vol.read_all()
        self.assertEqual(everything.contents(),
                         {"dst/a.md": b"X", "dst/b.md": b"B", "other.bin": b"\xff\x00"})
        self.assertEqual(everything.seq, self.vol.refresh().seq)

    def test_changes_and_follow_over_long_polls(self) -> None:
        self.vol.write("early.txt", "e")
        page = self.vol.changes(0)
        self.assertEqual([(ch.seq, ch.op, ch.path) for ch in page.changes], [(1, "write", "early.txt")])
        # a long-poll that returns at once when there is nothing: wait=0
        self.assertEqual(self.vol.changes(page.seq, wait=0).changes, [])

        def later() -> None:
            c = client()
            v = c.volume(self.vol.id)
            for i in range(3):
                threading.Event().wait(0.3)
                v.write("live/%d.txt" % i, "v%d" % i)
            v.remove("live/0.txt")
            c.close()

        t = threading.Thread(target=later)
        t.start()
        got = []
        for ch in self.vol.follow(page.seq, prefix="live/", wait=10):
            got.append((ch.op, ch.path))
            if len(got) == 4:
                break
        t.join()
        self.assertEqual(got, [("write", "live/0.txt"), ("write", "live/1.txt"),
                               ("write", "live/2.txt"), ("remove", "live/0.txt")])

    def test_snapshots_fork_restore_archive(self) -> None:
        self.vol.write("a.txt", "first")
        snap = self.vol.snapshot(labels={"stage": "draft"}, pinned=True)
        self.assertEqual((snap.seq, snap.pinned, snap.labels), (1, True, {"stage": "draft"}))
        self.assertEqual(self.vol.get_snapshot(snap.id).id, snap.id)
        self.assertEqual([s.id for s in self.vol.snapshots(labels={"stage": "draft"})], [snap.id])
        self.assertEqual(self.vol.snapshots(labels={"stage": "final"}), [])
        with self.assertRaises(coffer.Conflict):
            self.vol.delete_snapshot(snap.id)
        up = self.vol.update_snapshot(snap.id, labels={"stage": "final"})
        self.assertEqual(up.labels.to_dict(), {"stage": "final"})
        given = self.vol.snapshot(files={"g.txt": "given", "g.bin": b"\x00\x01"})
        self.assertEqual(len(given.contents or []), 2)
        self.assertEqual(self.vol.read("g.txt", snapshot=given.id).data, b"given")
        self.vol.write("a.txt", "second")
        self.vol.write("b.txt", "new")
        fork = self.vol.fork(snapshot=snap.id, name=name("fork"))
        self.assertNotEqual(fork.id, self.vol.id)
        self.assertEqual(fork.read("a.txt").data, b"first")
        self.assertEqual(self.vol.read("a.txt", snapshot=snap.id).data, b"first")
        res = self.vol.restore(snap.id)
        self.assertEqual((res.written, res.removed), (1, 1))
        self.assertEqual(self.vol.read("a.txt").data, b"first")
        with self.vol.archive() as stream:
            self.assertEqual(stream.header("Content-Type"), "application/gzip")
            blob = b"".join(stream)
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            self.assertEqual(tar.getnames(), ["a.txt"])
            f = tar.extractfile("a.txt")
            assert f is not None
            self.assertEqual(f.read(), b"first")
        self.vol.delete_snapshot(snap.id, force=True)
        with self.assertRaises(coffer.NotFound):
            self.vol.get_snapshot(snap.id)

    def test_links(self) -> None:
        self.vol.write("shared.txt", "for anyone")
        link = self.vol.link("shared.txt", expires_in=60)
        self.assertEqual((link.method, link.path), ("GET", "shared.txt"))
        with urllib.request.urlopen(link.url, timeout=10) as r:
            self.assertEqual(r.read(), b"for anyone")
        put = self.vol.link("upload.txt", method="PUT", max_bytes=100, content_type="text/plain")
        req = urllib.request.Request(put.url, data=b"sent", method="PUT",
                                     headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(req, timeout=10) as r:
            self.assertIn(r.status, (200, 201))
        self.assertEqual(self.vol.read("upload.txt").data, b"sent")
        key = name("link")
        self.vol.link("shared.txt", idempotency_key=key)
        with self.assertRaises(coffer.Conflict):
            self.vol.link("shared.txt", idempotency_key=key)

    def test_ceiling_refusal_reaches_the_caller_of_a_streamed_write(self) -> None:
        small = self.c.volumes.create(name("small"), ceiling=1024 * 1024)
        with self.assertRaises(coffer.ValidationError) as cm:
            small.write("big.bin", io.BytesIO(b"z" * (2 * 1024 * 1024)))  # Content-Length
        self.assertIn("ceiling", cm.exception.message)
        self.assertEqual(cm.exception.ceiling, 1024 * 1024)
        with self.assertRaises(coffer.ValidationError):
            small.write("big.bin", (b"z" * 65536 for _ in range(32)))        # chunked
        self.assertEqual(small.refresh().bytes, 0)
        small.write("fits.bin", b"z" * 1000)

    def test_errors_are_typed(self) -> None:
        bad = coffer.Client(self.c.url, "ck_wrong")
        with self.assertRaises(coffer.Unauthorized) as cm:
            bad.volumes.list()
        self.assertEqual(cm.exception.status, 401)
        bad.close()
        self.vol.write("f.txt", "before the fork")
        fork = self.vol.fork()
        with self.assertRaises(coffer.Gone) as cm2:
            fork.changes(0)
        self.assertIsInstance(cm2.exception.oldest, int)
        with self.assertRaises(coffer.ValidationError):
            self.vol.changes(0, wait=61)
        self.assertTrue(issubclass(coffer.PreconditionFailed, coffer.CofferError))


if __name__ == "__main__":
    unittest.main()
