"""What only the async client has: a cancelled call cancels its request, an upload from
an async iterator is streamed as it gives chunks (not gathered first), a download is an
async iterator of chunks, and `async with` closes the connections. (Everything else the
async client does is the same suite as the sync one: tests/blackbox/test_sdk_python.py
runs the other modules on AsyncCoffer too.)"""

from __future__ import annotations

import asyncio
import hashlib
import os
import unittest
from typing import AsyncIterator

import coffer
from support import SCALE, Proxy, name, wait_for


class AsyncOnly(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.c = coffer.AsyncCoffer(os.environ["COFFER_URL"], os.environ["COFFER_KEY"])
        self.vol = await self.c.volumes.create(name("aio"))
        self.proxies: list[Proxy] = []

    async def asyncTearDown(self) -> None:
        for p in self.proxies:
            p.close()
        await self.c.aclose()

    def proxy(self, plan: list[tuple]) -> Proxy:
        p = Proxy(plan)
        self.proxies.append(p)
        return p

    async def test_cancelling_a_call_closes_its_connection(self) -> None:
        p = self.proxy([("silent",)])
        async with coffer.AsyncCoffer(p.url, os.environ["COFFER_KEY"], retries=0,
                                      timeout=3600) as c:
            task = asyncio.create_task(c.volume(self.vol.id).read("x"))
            await asyncio.to_thread(wait_for, lambda: p.connections == 1)
            self.assertFalse(task.done())
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            # the request itself ended: its connection was closed, not left waiting
            closed = await asyncio.to_thread(p.client_closed.wait, 10 * SCALE)
            self.assertTrue(closed, "the cancelled request's connection is still open")

    async def test_upload_from_an_async_iterator_is_streamed(self) -> None:
        p = self.proxy([])
        block = os.urandom(256 * 1024)
        sha = hashlib.sha256()
        seen: list[int] = []

        async def chunks() -> AsyncIterator[bytes]:
            for i in range(8):
                sha.update(block)
                yield block
                # the bytes given so far reach the server before the next chunk is made:
                # a client that gathered the iterator first would never get here
                ok = await asyncio.to_thread(
                    wait_for, lambda: bool(p.sent) and p.sent[0] >= (i + 1) * len(block))
                self.assertTrue(ok, "chunk %d was not sent before the next was asked" % i)
                seen.append(p.sent[0])

        async with coffer.AsyncCoffer(p.url, os.environ["COFFER_KEY"]) as c:
            w = await c.volume(self.vol.id).write("streamed.bin", chunks())
        self.assertEqual((w.size, w.sha256), (8 * len(block), sha.hexdigest()))
        self.assertEqual(len(seen), 8)

    async def test_download_is_an_async_iterator_of_chunks(self) -> None:
        data = os.urandom(3 * 1024 * 1024 + 17)
        v = self.c.volume(self.vol.id)
        await v.write("big.bin", data)
        got = hashlib.sha256()
        n = 0
        async with await v.open("big.bin") as d:
            self.assertIsInstance(d, coffer.AsyncDownload)
            self.assertEqual(d.size, len(data))
            async for chunk in d:
                self.assertLessEqual(len(chunk), 256 * 1024)
                got.update(chunk)
                n += 1
        self.assertEqual(got.hexdigest(), hashlib.sha256(data).hexdigest())
        self.assertGreater(n, 1, "the file came in chunks")

    async def test_iterators_and_events_are_async(self) -> None:
        v = self.c.volume(self.vol.id)
        for i in range(3):
            await v.write("it/%d.txt" % i, "x")
        self.assertEqual([f.path async for f in v.iter_files(prefix="it/")],
                         ["it/0.txt", "it/1.txt", "it/2.txt"])
        async for ch in v.follow(0, prefix="it/", wait=1):
            self.assertEqual(ch.path, "it/0.txt")
            break


if __name__ == "__main__":
    unittest.main()
