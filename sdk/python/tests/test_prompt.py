"""`agent.prompt()`: every kind of file (bytes, a local path, an Attachment, a mapping,
`{path}`), each uploaded first, streamed, to uploads/<request id>/; a retry uploads
nothing twice; both formats; a conversation rebuilt by `conversation_request`."""

from __future__ import annotations

import os
import struct
import tempfile
import unittest
import zlib

import coffer
from support import client, name


def png(w: int, h: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class Prompt(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.agent = self.c.agents.upsert(name("prompter"))
        self.ws = self.c.volume(self.agent.refresh().workspace_volume_id)
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self) -> None:
        self.tmp.cleanup()
        self.c.close()

    def test_every_kind_of_file_uploaded_first_and_a_retry_writes_nothing(self) -> None:
        self.agent.files.write("/workspace/kept.txt", "already here")
        big = os.path.join(self.tmp.name, "big.txt")
        with open(big, "wb") as f:   # over the 4 MiB inline limit: it goes as an upload
            f.write(b"line of text\n" * 400_000)
        files: list[coffer.agents.PromptFile] = [
            b"raw bytes",
            big,
            coffer.Attachment("pic.png", png(4, 3), "image/png"),
            {"name": "notes.md", "data": b"# notes", "content_type": "text/markdown"},
            {"path": "/workspace/kept.txt"},
        ]
        r = self.agent.prompt("what is in these?", files, request_id="r1")
        self.assertEqual(r.request_id, "r1")
        paths = [f.path for f in r.files]
        self.assertEqual(paths, ["/workspace/uploads/r1/file-1", "/workspace/uploads/r1/big.txt",
                                 "/workspace/uploads/r1/pic.png", "/workspace/uploads/r1/notes.md",
                                 "/workspace/kept.txt"])
        self.assertEqual([f.shown for f in r.files], [False, False, True, False, False])
        self.assertEqual(r.files[1].size, 13 * 400_000)
        blocks = r.content
        self.assertTrue(all(b["type"] == "text" for b in blocks[:5]))
        self.assertTrue(blocks[1]["text"].startswith("[File /workspace/uploads/r1/big.txt (text/plain, 5.2 MB)"),
                        blocks[1]["text"])
        self.assertEqual(blocks[5], {"type": "text", "text": "what is in these?"})
        self.assertEqual(blocks[6]["type"], "image")
        self.assertEqual(blocks[6]["source"]["media_type"], "image/png")
        self.assertEqual(self.agent.files.download("/workspace/uploads/r1/notes.md").data, b"# notes")
        seq = self.ws.refresh().seq
        again = self.agent.prompt("what is in these?", files, request_id="r1")
        self.assertEqual(again.to_dict(), r.to_dict())
        self.assertEqual(self.ws.refresh().seq, seq, "the retry wrote nothing")
        with self.assertRaises(coffer.Conflict):
            self.agent.prompt("another question", files, request_id="r1")

    def test_openai_format_and_a_conversation(self) -> None:
        conv = name("conv")
        first = self.agent.prompt("look", [coffer.Attachment("a.png", png(2, 2))],
                                  conversation=conv, format="openai")
        self.assertTrue(first.request_id.startswith("req-"))
        part = first.content[-1]
        self.assertEqual(part["type"], "image_url")
        self.assertTrue(part["image_url"]["url"].startswith("data:image/png;base64,"))
        self.agent.prompt("and now?", conversation=conv)
        req = self.agent.conversation_request(conv)
        self.assertEqual([p["text"] for p in req["prompts"]], ["look", "and now?"])
        self.assertEqual(len(req["messages"]), 2)
        self.assertEqual(req["messages"][0]["content"][-1]["type"], "image")
        with self.assertRaises(coffer.NotFound):
            self.agent.conversation_request(name("none"))

    def test_bad_files_refused_before_any_upload(self) -> None:
        with self.assertRaises(ValueError):
            self.agent.prompt("x", [b"fine", {"name": "no-data.txt"}])
        with self.assertRaises(TypeError):
            self.agent.prompt("x", [b"fine", 42])  # type: ignore[list-item]
        self.assertEqual(self.ws.refresh().seq, 0, "nothing uploaded")
        with self.assertRaises(coffer.NotFound):
            self.agent.prompt("x", [{"path": "/workspace/absent.txt"}])


if __name__ == "__main__":
    unittest.main()
