"""Retries and timeouts, through a tiny TCP proxy (support.Proxy) that breaks
connections on purpose: an upload cut mid-body is sent again whole, a create whose
answer was lost is retried with the same Idempotency-Key, 429/503 are waited out, and
what cannot be repeated safely is not."""

from __future__ import annotations

import hashlib
import io
import os
import unittest

import coffer
from support import Proxy, client, name


class Retries(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.vol = self.c.volumes.create(name("retry"))
        self.proxies: list[Proxy] = []

    def tearDown(self) -> None:
        for p in self.proxies:
            p.close()
        self.c.close()

    def via(self, plan: list[tuple], **kw: object) -> tuple[Proxy, coffer.Client]:
        p = Proxy(plan)
        self.proxies.append(p)
        kw.setdefault("backoff", 0.01)
        return p, client(p.url, **kw)

    def test_upload_cut_mid_body_is_sent_again_from_the_start(self) -> None:
        data = os.urandom(1024 * 1024)
        p, c = self.via([("cut_request", 64 * 1024)])
        with c:
            w = c.volume(self.vol.id).write("up.bin", io.BytesIO(data))
        self.assertEqual(p.connections, 2, "one cut attempt, one retry")
        self.assertEqual(p.sent[0], 64 * 1024, "the first attempt was cut")
        self.assertEqual(w.sha256, hashlib.sha256(data).hexdigest())
        self.assertEqual(w.version, 1, "the cut attempt stored nothing")
        got = self.vol.read("up.bin")
        self.assertEqual(got.data, data)
        self.assertEqual(self.vol.refresh().seq, 1)

    def test_upload_from_a_path_is_reopened_for_the_retry(self) -> None:
        import tempfile
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"p" * 300_000)
            f.flush()
            import pathlib
            p, c = self.via([("cut_request", 1000)])
            with c:
                w = c.volume(self.vol.id).write("from-path.bin", pathlib.Path(f.name))
        self.assertEqual((p.connections, w.size), (2, 300_000))

    def test_iterator_body_is_not_retried_once_started(self) -> None:
        p, c = self.via([("cut_request", 2000)])
        chunks = (b"x" * 65536 for _ in range(16))
        with c, self.assertRaises(coffer.CofferConnectionError) as cm:
            c.volume(self.vol.id).write("it.bin", chunks)
        self.assertIn("cannot be sent again", str(cm.exception))
        self.assertEqual(p.connections, 1)
        with self.assertRaises(coffer.NotFound):
            self.vol.read("it.bin")

    def test_create_retried_with_the_same_idempotency_key(self) -> None:
        vname = name("once")
        p, c = self.via([("cut_answer",)])
        with c:
            v = c.volumes.create(vname)
        self.assertEqual(p.connections, 2)
        same = [x.id for x in self.c.volumes.iter(prefix=vname)]
        self.assertEqual(same, [v.id], "the lost answer's volume, not a second one")

    def test_agent_upload_retried_after_a_lost_answer_writes_once(self) -> None:
        agent = self.c.agents.upsert(name("upag"))
        p, c = self.via([("cut_answer",)])
        with c:
            up = c.agent(agent.id).files.upload("r7", "doc.txt", b"the document")
        self.assertEqual(p.connections, 2)
        self.assertTrue(up.replayed, "the retry found the first write")
        ws = self.c.volume(agent.refresh().workspace_volume_id)
        self.assertEqual(ws.refresh().seq, 1)

    def test_503_and_429_are_waited_out(self) -> None:
        p, c = self.via([("status", 503), ("status", 429)])
        with c:
            w = c.volume(self.vol.id).write("busy.txt", "finally")
        self.assertEqual(p.connections, 3)
        self.assertEqual(w.version, 1)

    def test_retries_run_out(self) -> None:
        p, c = self.via([("status", 503)] * 3, retries=2)
        with c, self.assertRaises(coffer.Unavailable) as cm:
            c.volume(self.vol.id).read("nothing")
        self.assertEqual((p.connections, cm.exception.status), (3, 503))

    def test_post_without_a_key_is_not_repeated(self) -> None:
        self.vol.write("m/a.txt", "a")
        p, c = self.via([("cut_answer",)])
        with c, self.assertRaises(coffer.CofferConnectionError):
            c.volume(self.vol.id).move("m/a.txt", "m/b.txt")
        self.assertEqual(p.connections, 1, "a move whose answer was lost is not sent twice")
        self.assertEqual(self.vol.read("m/b.txt").data, b"a")

    def test_download_cut_mid_way_resumes_where_it_stopped(self) -> None:
        data = os.urandom(1024 * 1024)
        self.vol.write("down.bin", data)
        p, c = self.via([("cut_answer", 300_000)])
        with c, c.volume(self.vol.id).open("down.bin") as d:
            got = d.read()
            self.assertEqual(d.resumed, 1)
        self.assertEqual(p.connections, 2)
        self.assertEqual(hashlib.sha256(got).hexdigest(), hashlib.sha256(data).hexdigest())
        p, c = self.via([("cut_answer", 300_000)])
        with c:
            self.assertEqual(c.volume(self.vol.id).read("down.bin").data, data)

    def test_download_not_joined_across_versions(self) -> None:
        self.vol.write("moving.bin", b"a" * 1024 * 1024)
        p, c = self.via([("cut_answer", 300_000)])
        with c, c.volume(self.vol.id).open("moving.bin") as d:
            first = d.read(65536)
            self.vol.write("moving.bin", b"b" * 1024 * 1024)
            with self.assertRaises(coffer.CofferConnectionError) as cm:
                d.read()
        self.assertEqual(first, b"a" * 65536)
        self.assertIn("changed since", str(cm.exception))

    def test_whole_answer_cut_is_fetched_again(self) -> None:
        for i in range(30):
            self.vol.write("many/%02d.txt" % i, "x")
        p, c = self.via([("cut_answer", 200)])
        with c:
            listing = c.volume(self.vol.id).list(prefix="many/")
        self.assertEqual((p.connections, len(listing.files)), (2, 30))

    def test_kept_alive_connection_closed_by_the_server_is_replaced(self) -> None:
        self.vol.write("k/a.txt", "a")
        p, c = self.via([("drop_idle",)], retries=0)
        with c:
            self.assertTrue(c.health())
            self.assertTrue(p.dropped.wait(10), "the proxy closed the kept-alive connection")
            # a move is never repeated after a lost answer, but this one was never
            # received: the pooled connection was dead before it was sent
            mv = c.volume(self.vol.id).move("k/a.txt", "k/b.txt")
        self.assertEqual((p.connections, mv.moved), (2, 1))

    def test_connections_are_kept_alive_and_reused(self) -> None:
        p, c = self.via([])
        with c:
            v = c.volume(self.vol.id)
            for i in range(10):
                v.write("k/%d.txt" % i, "x")
                v.read("k/%d.txt" % i)
            with v.open("k/0.txt") as d:
                d.read()
            v.list()
        self.assertEqual(p.connections, 1, "22 calls over one kept-alive connection")

    def test_timeout_is_settable(self) -> None:
        p, c = self.via([("silent",)], timeout=0.5, retries=0)
        with c, self.assertRaises(coffer.CofferTimeout):
            c.volume(self.vol.id).read("x")
        self.assertEqual(p.connections, 1)


if __name__ == "__main__":
    unittest.main()
