"""A 1 GiB file streamed up from a generated stream and down again, never held in
memory: the process's peak RSS stays far below the file's size."""

from __future__ import annotations

import hashlib
import io
import os
import resource
import unittest

from support import client, name

GiB = 1024 * 1024 * 1024
BLOCK = 1024 * 1024


class Generated(io.RawIOBase):
    """`size` bytes made on demand (not seekable: sent chunked), hashed as they go."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.sha = hashlib.sha256()
        self.block = os.urandom(BLOCK)
        self.n = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: "bytearray | memoryview") -> int:  # type: ignore[override]
        n = min(len(b), self.left)
        if n <= 0:
            return 0
        start = self.n % BLOCK
        out = (self.block[start:] + self.block)[:n] if start + n > BLOCK else self.block[start:start + n]
        b[:n] = out
        self.sha.update(out)
        self.left -= n
        self.n += n
        return n


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class LargeFile(unittest.TestCase):
    def test_one_gib_up_and_down_streamed(self) -> None:
        c = client(timeout=120)
        vol = c.volumes.create(name("large"))
        before = peak_rss_mib()
        src = Generated(GiB)
        w = vol.write("big.bin", io.BufferedReader(src, 256 * 1024))
        self.assertEqual(w.size, GiB)
        self.assertEqual(w.sha256, src.sha.hexdigest())
        down = hashlib.sha256()
        n = 0
        with vol.open("big.bin") as d:
            self.assertEqual(d.size, GiB)
            for chunk in d:
                down.update(chunk)
                n += len(chunk)
        self.assertEqual(n, GiB)
        self.assertEqual(down.hexdigest(), w.sha256)
        after = peak_rss_mib()
        print("peak RSS %.0f MiB before, %.0f MiB after 1 GiB up and down" % (before, after))
        self.assertLess(after, 160, "peak RSS %.0f MiB: the file was held in memory" % after)
        vol.delete()
        c.close()


if __name__ == "__main__":
    unittest.main()
