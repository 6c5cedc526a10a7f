// Downloads to disk in bounded memory: each chunk is written (and the write awaited)
// before the next is read, so at most one chunk is held whatever the file's size. (Piping
// into `Writable.toWeb(createWriteStream(...))` held 1.1 GiB for a 1 GiB file: its
// writes are not awaited, and the web stream reads ahead of the disk.)

import { open, unlink } from "node:fs/promises";

/** Writes `body` to `path` (created or truncated); the bytes written. On error the file is removed. */
export async function saveTo(where: string, body: ReadableStream<Uint8Array>, path: string): Promise<number> {
  if (typeof path !== "string" || path === "") {
    throw new TypeError(`${where}: path must be a non-empty string (a local file), not ${typeof path}`);
  }
  if (body.locked) throw new TypeError(`${where}: the body is already being read`);
  const f = await open(path, "w");
  const r = body.getReader();
  let n = 0;
  try {
    for (;;) {
      const { value, done } = await r.read();
      if (done) break;
      let off = 0;
      while (off < value.byteLength) {
        const { bytesWritten } = await f.write(value, off, value.byteLength - off);
        off += bytesWritten;
      }
      n += value.byteLength;
    }
    await f.close();
    return n;
  } catch (e) {
    await r.cancel(e).catch(() => {});
    await f.close().catch(() => {});
    await unlink(path).catch(() => {});
    throw e;
  }
}
