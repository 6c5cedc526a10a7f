"""Seed 001 (shared/seeds/001_*.txt, "Files") as its users read it, in Python: the python
sample runs as written (`run = await agent.run(...)`, with only the client's construction
added) and the calls its prose names for Python (`agent.files.download/list/link/upload`,
`create_volume(name=..., idempotency_key=...)`, `read_all`...) do what it says, against a
real cofferd. The scenario runs twice: on `AsyncCoffer` (as the seed writes it) and on
the synchronous `Coffer`, each awaited call then made directly (`Sync` below), so both
clients pass the same checks. The seed's line is copied verbatim between `# seed:` and
`# end seed` (tests/blackbox/test_sdk_python.py checks it is the seed's)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import tempfile
import unittest
import urllib.request
import zlib
from pathlib import Path
from typing import Any

import coffer
from support import name


def sha(b: bytes | str) -> str:
    return hashlib.sha256(b.encode() if isinstance(b, str) else b).hexdigest()


def png(w: int, h: int) -> bytes:
    import struct

    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    raw = b"".join(b"\0" + b"\x80" * (3 * w) for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def pdf() -> bytes:
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"]
    out, offs = "%PDF-1.4\n", []
    for i, o in enumerate(objs):
        offs.append(len(out))
        out += "%d 0 obj\n%s\nendobj\n" % (i + 1, o)
    xref = len(out)
    out += "xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += "".join("%010d 00000 n \n" % o for o in offs)
    out += "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return out.encode("latin-1")


class Sync:
    """The synchronous client seen through `await`: each call is made at once and its
    answer handed to `await` already there, so the scenario below runs on it unchanged."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __getattr__(self, attr: str) -> Any:
        v = getattr(self._obj, attr)
        if any(isinstance(self._obj, k) and attr == n for k, n in coffer.aio._LOCAL):
            return lambda *a, **kw: _sync(v(*a, **kw))  # a handle, no request: not awaited
        if inspect.ismethod(v):
            def call(*a: Any, **kw: Any) -> Any:
                return _Done(_sync(v(*a, **kw)))
            return call
        return _sync(v)


def _sync(v: Any) -> Any:
    if isinstance(v, (coffer.Client, coffer.Agent, coffer.Agents, coffer.AgentFiles,
                      coffer.AgentTools, coffer.Volume, coffer.Volumes, coffer.RunHandle,
                      coffer.Runtime)):
        return Sync(v)
    return v


class _Done:
    def __init__(self, v: Any) -> None:
        self.v = v

    def __await__(self) -> Any:
        return self.v
        yield  # a generator: `await` takes its return value


async def scenario(t: unittest.TestCase, agents: Any) -> None:
    # ---- attaching files to a message
    d = tempfile.mkdtemp(prefix="seed001-")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        Path("q3.pdf").write_bytes(pdf())
        screenshot_bytes = png(40, 30)
        csv = "quarter,revenue\nQ3,42\n"
        agent = await agents.upsert(name("seed-py"))
        await agent.files.upload("/workspace/notes.md", "# notes\n")
        # seed:
        run = await agent.run("What changed in Q3?", files=[Path("q3.pdf"), screenshot_bytes, {"name": "data.csv", "data": csv}, {"path": "/workspace/notes.md"}])
        # end seed
    finally:
        os.chdir(cwd)
    up = "/workspace/uploads/%s" % run.id
    t.assertEqual([(f.path, f.content_type) for f in run.message.files], [
        (up + "/q3.pdf", "application/pdf"), (up + "/file-2", "image/png"),
        (up + "/data.csv", "text/csv"), ("/workspace/notes.md", "text/markdown")])
    t.assertEqual(run.message.request_id, run.id)
    kinds = [b["type"] for b in run.message.content]
    t.assertIn("image", kinds)
    t.assertIn("document", kinds)
    t.assertTrue(any("What changed in Q3?" in b.get("text", "") for b in run.message.content))
    info = await agent.refresh()
    ws = agents.runtime.volume(info.workspace_volume_id)
    t.assertEqual(sha((await ws.read("uploads/%s/data.csv" % run.id)).data), sha(csv))
    seq = (await ws.refresh()).seq
    again = await agent.run("What changed in Q3?", files=[
        Path(d, "q3.pdf"), screenshot_bytes, {"name": "data.csv", "data": csv},
        {"path": "/workspace/notes.md"}], run_id=run.id)
    t.assertEqual([f.sha256 for f in again.message.files], [f.sha256 for f in run.message.files])
    t.assertEqual((await ws.refresh()).seq, seq, "a retried run writes nothing")
    # run.files and run.raw.presented fill as the run's files are written and presented
    t.assertEqual((run.files, list(run.raw.presented)), ([], []))
    await run.tools.write("/workspace/out/summary.md", "Q3: revenue 42\n")
    t.assertEqual([(f.path, f.size) for f in run.files], [("/workspace/out/summary.md", 15)])
    await run.tools.present_file("/workspace/out/summary.md", "the summary")
    t.assertEqual([(p.path, p.caption) for p in run.raw.presented],
                  [("/workspace/out/summary.md", "the summary")])
    t.assertIn("/l/", run.raw.presented[0].url)

    # ---- files out: download (.data, .content_type, .version), list(path=), link, upload
    chart = png(8, 8)
    w = await agent.files.upload("/workspace/out/chart.png", chart)
    got = await agent.files.download("/workspace/out/chart.png")
    t.assertEqual((got.data, got.content_type, got.version), (chart, "image/png", w.version))
    listing = await agent.files.list(path="/workspace/out")
    t.assertEqual([e.name for e in listing.entries], ["chart.png", "summary.md"])
    link = await agent.files.link("/workspace/out/chart.png", expires_in=3600)
    with urllib.request.urlopen(link.url, timeout=10) as r:
        t.assertEqual(r.read(), chart)
    config = {"depth": 2}
    await agent.files.upload("/workspace/in/config.json", json.dumps(config))
    t.assertEqual(json.loads((await agent.files.download("/workspace/in/config.json")).data), config)
    await agents.agents.delete(agent.id)

    # ---- volumes: create_volume(name=, idempotency_key=), write with version, read,
    # list, remove, changes(since, prefix=), volumes(ids), snapshots, fork, restore,
    # archive, read_all, link
    key = name("idem")
    vol = await agents.runtime.create_volume(name=name("docs"), idempotency_key=key)
    same = await agents.runtime.create_volume(name=vol.info.name, idempotency_key=key)
    t.assertEqual(same.id, vol.id)
    volume = agents.runtime.volume(vol.id)
    a1 = await volume.write("a.md", "one", version=0)
    with t.assertRaises(coffer.PreconditionFailed):
        await volume.write("a.md", "two", version=0)
    await volume.write("a.md", "two", version=a1.version)
    await volume.write("docs/b.md", "bee")
    since = (await volume.refresh()).seq
    await volume.write("docs/c.md", "sea")
    await volume.write("x.md", "x")
    await volume.remove("x.md")
    page = await volume.changes(since, prefix="docs/")
    t.assertEqual([(c.op, c.path) for c in page.changes], [("write", "docs/c.md")])
    t.assertEqual([(v.id, v.files) for v in await agents.runtime.volumes([vol.id])], [(vol.id, 3)])
    snap = await volume.snapshot(labels={"release": "q3"})
    await volume.write("a.md", "after")
    fork = await volume.fork(snapshot=snap.id)
    t.assertEqual((await agents.runtime.volume(fork.id).read("a.md")).data, b"two")
    t.assertEqual((await volume.read("a.md", snapshot=snap.id)).data, b"two")
    t.assertEqual(len((await volume.list(snapshot=snap.id)).files), 3)
    ra = await volume.read_all(prefix="docs/", snapshot=snap.id)
    t.assertEqual([(f.path, f.text) for f in ra.files], [("docs/b.md", "bee"), ("docs/c.md", "sea")])
    t.assertEqual([s.id for s in await volume.snapshots(labels={"release": "q3"})], [snap.id])
    pinned = await volume.snapshot(pinned=True)
    with t.assertRaises(coffer.Conflict):
        await volume.delete_snapshot(pinned.id)
    t.assertEqual((await volume.update_snapshot(pinned.id, pinned=False)).pinned, False)
    await volume.delete_snapshot(pinned.id)
    made = await volume.snapshot(files={"a.txt": "text", "b.bin": b"\0\1\xff"})
    t.assertEqual([(c["path"], c["sha256"]) for c in made.contents],
                  [("a.txt", sha("text")), ("b.bin", sha(b"\0\1\xff"))])
    r = await volume.restore(made.id)
    t.assertEqual((r.written, r.removed), (2, 3))
    arc = await volume.archive(snapshot=snap.id, path="docs")
    tgz = b"".join([c async for c in arc]) if hasattr(arc, "__aiter__") else b"".join(arc)
    t.assertIn(b"b.md", zlib.decompress(tgz, 31))
    put = await volume.link("up/new.txt", method="PUT", expires_in=60, max_bytes=10,
                            content_type="text/plain")
    req = urllib.request.Request(put.url, data=b"hello", method="PUT",
                                 headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        t.assertEqual(resp.status, 201)
    await agents.volumes.delete(fork.id)
    await agents.volumes.delete(vol.id)


class Seed001(unittest.TestCase):
    def test_async_client(self) -> None:
        async def main() -> None:
            # the client's construction
            async with coffer.AsyncCoffer(os.environ["COFFER_URL"], os.environ["COFFER_KEY"]) as agents:
                await scenario(self, agents)
        asyncio.run(main())

    def test_sync_client(self) -> None:
        with coffer.Coffer(os.environ["COFFER_URL"], os.environ["COFFER_KEY"]) as agents:
            asyncio.run(scenario(self, Sync(agents)))


if __name__ == "__main__":
    unittest.main()
