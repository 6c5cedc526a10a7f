"""`read` of images and PDFs (API.md File tools): an image goes to the model at most
1,568 px a side, scaled keeping its shape, the file unchanged; images over 5 MiB or 8,000 px
a side and PDFs over 16 MiB or 100 pages are refused with why. Test files are made here
(PNG with zlib+struct, PDFs by hand); returned images are checked by their headers."""

import base64
import hashlib
import os
import struct
import zlib

import harness
import test_mcp
from harness import check, contains, eq, expect
from test_tools import ok, refused, ws_agent

# A 1x1 GIF (the classic transparent pixel).
GIF_1X1 = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")


def png(w, h, color=(200, 30, 60), noise=False):
    """A valid RGB PNG: one solid colour, or random noise (compresses badly)."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    if noise:
        raw = b"".join(b"\x00" + os.urandom(3 * w) for _ in range(h))
    else:
        row = b"\x00" + bytes(color) * w
        raw = row * h
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))


def pdf(pages, pad=0):
    """A minimal valid PDF with `pages` empty pages (xref offsets right); `pad` bytes of
    comment make it bigger."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" +
            b" ".join(b"%d 0 R" % (3 + i) for i in range(pages)) + b"] /Count %d >>" % pages]
    objs += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"] * pages
    out = b"%PDF-1.4\n"
    if pad:
        out += (b"%" + b"x" * 99 + b"\n") * (pad // 101 + 1)
    offsets = []
    for i, o in enumerate(objs):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1, xref)
    return out


def image_size(data):
    """(format, width, height) from a PNG's IHDR or a JPEG's SOF0/SOF2 marker."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        eq(data[12:16], b"IHDR", "PNG starts with IHDR")
        w, h = struct.unpack(">II", data[16:24])
        return "png", w, h
    check(data[:2] == b"\xff\xd8", "a PNG or JPEG: %r" % data[:16])
    i = 2
    while i + 4 <= len(data):
        check(data[i] == 0xFF, "JPEG marker at %d" % i)
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        seglen = struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return "jpeg", w, h
        i += 2 + seglen
    raise AssertionError("no SOF marker in the JPEG")


def sha(b):
    return hashlib.sha256(b).hexdigest()


def read_image(srv, aid, path):
    j = ok(srv, aid, "read", path=path)
    img = j.get("image")
    check(isinstance(img, dict), "read of an image has an `image` field: %r" % {
        k: v for k, v in j.items() if k != "_resp"})
    for k in ("mediaType", "data", "width", "height", "originalWidth", "originalHeight"):
        check(k in img, "image.%s present: %r" % (k, sorted(img)))
    return j, img, base64.b64decode(img["data"])


def test_large_png_scaled_shape_kept(srv):
    aid, ws = ws_agent(srv)
    data = png(3000, 2000)
    srv.put_ok(ws, "big.png", data)
    j, img, shown = read_image(srv, aid, "/workspace/big.png")
    fmt, w, h = image_size(shown)
    eq((w, h), (img["width"], img["height"]), "image.width/height are the shown image's")
    eq(w, 1568, "long side scaled to 1568")
    check(abs(h - 2000 * 1568 / 3000) <= 1, "aspect kept (±1 px): %dx%d" % (w, h))
    eq((img["originalWidth"], img["originalHeight"]), (3000, 2000), "original size")
    eq(img["mediaType"], "image/" + fmt, "mediaType matches the data")
    contains(j["output"], "3000x2000", "output names the original size")
    contains(j["output"], "%dx%d" % (w, h), "output names the shown size")
    check("version" not in j["output"].lower(), "no versions in output: %r" % j["output"])
    check(isinstance(j.get("version"), int) and j.get("sha256") == sha(data),
          "structured version and sha256: %r" % {k: j.get(k) for k in ("version", "sha256")})
    # the file in the volume is unchanged
    eq(sha(expect(srv.get_file(ws, "big.png"), 200).body), sha(data), "file unchanged")
    # portrait: the long side is the height
    srv.put_ok(ws, "tall.png", png(1000, 4000))
    _, img, shown = read_image(srv, aid, "/workspace/tall.png")
    _, w, h = image_size(shown)
    eq(h, 1568, "tall image: height scaled to 1568")
    check(abs(w - 1000 * 1568 / 4000) <= 1, "tall aspect kept: %dx%d" % (w, h))


def test_small_images_passed_through(srv):
    aid, ws = ws_agent(srv)
    data = png(100, 50, color=(1, 2, 3))
    srv.put_ok(ws, "small.png", data)
    j, img, shown = read_image(srv, aid, "/workspace/small.png")
    eq(shown, data, "an image at or under 1568 px is sent as it is")
    eq((img["width"], img["height"], img["originalWidth"], img["originalHeight"]),
       (100, 50, 100, 50), "sizes of a small image")
    eq(img["mediaType"], "image/png", "mediaType")
    contains(j["output"], "100x50", "output names the size")
    # exactly 1568 a side: not scaled
    edge = png(1568, 1568)
    srv.put_ok(ws, "edge.png", edge)
    _, img, shown = read_image(srv, aid, "/workspace/edge.png")
    eq(shown, edge, "1568x1568 is passed through")
    # a GIF, decided by its bytes, not its name
    srv.put_ok(ws, "pixel.dat", GIF_1X1)
    _, img, shown = read_image(srv, aid, "/workspace/pixel.dat")
    eq((img["mediaType"], img["width"], img["height"], shown), ("image/gif", 1, 1, GIF_1X1),
       "a GIF passed through")


def test_noisy_png_scaled_stays_under_limit(srv):
    """A noisy image whose scaled PNG would be too big for the model comes back as JPEG."""
    aid, ws = ws_agent(srv)
    data = png(1600, 1000, noise=True)
    check(len(data) <= 5 << 20, "test image under 5 MiB (%d)" % len(data))
    srv.put_ok(ws, "noise.png", data)
    _, img, shown = read_image(srv, aid, "/workspace/noise.png")
    fmt, w, h = image_size(shown)
    eq((w, h), (1568, 980), "scaled size")
    eq(img["mediaType"], "image/" + fmt, "mediaType matches the data (%s)" % fmt)
    check(len(img["data"]) <= 5 << 20, "base64 under 5 MiB: %d" % len(img["data"]))


def test_image_limits_refused(srv):
    aid, ws = ws_agent(srv)
    srv.put_ok(ws, "wide.png", png(9000, 10))
    j = refused(srv, aid, "read", "8,000 px", "9000x10", path="/workspace/wide.png")
    check("image" not in j, "no image in a refusal")
    big = png(1500, 1500, noise=True)
    check(len(big) > 5 << 20, "noise PNG is over 5 MiB (%d)" % len(big))
    srv.put_ok(ws, "heavy.png", big)
    refused(srv, aid, "read", "5 MiB", str(len(big)), path="/workspace/heavy.png")
    # raw bytes can still be read in windows
    j = ok(srv, aid, "read", path="/workspace/heavy.png", encoding="base64")
    eq(base64.b64decode(j["output"]), big[:700 * 1024], "base64 window of a refused image")


def test_broken_image_named(srv):
    aid, ws = ws_agent(srv)
    fake = b"\x89PNG\r\n\x1a\n" + os.urandom(2000)
    srv.put_ok(ws, "fake.png", fake)
    j = refused(srv, aid, "read", "fake.png", "image", path="/workspace/fake.png")
    check(len(j["output"]) < 2000, "a short message, not a dump: %r" % j["output"][:300])
    # a valid header with damaged pixel data
    good = png(64, 64)
    damaged = good[:33] + good[33:-12][:20] + b"\x00" * 10
    srv.put_ok(ws, "damaged.png", damaged)
    refused(srv, aid, "read", "damaged.png", path="/workspace/damaged.png")
    # and the server goes on
    ok(srv, aid, "read", path="/workspace/fake.png", encoding="base64")
    srv.put_ok(ws, "fine.png", png(10, 10))
    read_image(srv, aid, "/workspace/fine.png")


def test_pdf_pages(srv):
    aid, ws = ws_agent(srv)
    one = pdf(1)
    srv.put_ok(ws, "one.pdf", one)
    j = ok(srv, aid, "read", path="/workspace/one.pdf")
    doc = j.get("document")
    check(isinstance(doc, dict), "read of a PDF has `document`: %r" % sorted(j))
    eq((doc.get("mediaType"), doc.get("pages")), ("application/pdf", 1), "1-page PDF")
    eq(base64.b64decode(doc["data"]), one, "the PDF's bytes")
    contains(j["output"], "1 page", "output names the pages")
    srv.put_ok(ws, "hundred.pdf", pdf(100))
    eq(ok(srv, aid, "read", path="/workspace/hundred.pdf")["document"]["pages"], 100,
       "100 pages allowed")
    srv.put_ok(ws, "many.pdf", pdf(101))
    j = refused(srv, aid, "read", "101 pages", "100 pages", path="/workspace/many.pdf")
    check("document" not in j, "no document in a refusal")
    heavy = pdf(1, pad=17 << 20)
    srv.put_ok(ws, "heavy.pdf", heavy)
    refused(srv, aid, "read", "16 MiB", str(len(heavy)), path="/workspace/heavy.pdf")
    srv.put_ok(ws, "broken.pdf", b"%PDF-1.4\n" + os.urandom(500))
    refused(srv, aid, "read", "broken.pdf", "PDF", path="/workspace/broken.pdf")


def test_read_tracking_for_media(srv):
    aid, ws = ws_agent(srv)
    data = png(2000, 100)
    srv.put_ok(ws, "pic.png", data)
    srv.put_ok(ws, "doc.pdf", pdf(2))
    refused(srv, aid, "write", "read it first", path="/workspace/pic.png", content="x")
    read_image(srv, aid, "/workspace/pic.png")
    eq(sha(expect(srv.get_file(ws, "pic.png"), 200).body), sha(data), "unchanged by read")
    ok(srv, aid, "write", path="/workspace/pic.png", content="replaced")
    ok(srv, aid, "read", path="/workspace/doc.pdf")
    ok(srv, aid, "write", path="/workspace/doc.pdf", content="replaced too")
    # a refused (too large) image was still read: its raw bytes can be fetched anyway
    srv.put_ok(ws, "wide.png", png(9000, 10))
    refused(srv, aid, "read", "8,000 px", path="/workspace/wide.png")
    ok(srv, aid, "write", path="/workspace/wide.png", content="after a refused read")


def test_concurrent_image_reads(srv):
    import concurrent.futures
    aid, ws = ws_agent(srv)
    for i in range(4):
        srv.put_ok(ws, "c%d.png" % i, png(2000 + 100 * i, 1000, color=(i, 9, 9)))

    def one(i):
        _, img, shown = read_image(srv, aid, "/workspace/c%d.png" % i)
        return image_size(shown)[1:]
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        got = list(ex.map(one, [0, 1, 2, 3] * 3))
    for i, (w, h) in enumerate(got):
        eq(w, 1568, "concurrent read %d width" % i)


def test_mcp_image_and_pdf(srv):
    aid, ws = test_mcp.make_agent(srv)
    srv.put_ok(ws, "big.png", png(3000, 2000))
    srv.put_ok(ws, "one.pdf", pdf(1))
    s = test_mcp.Session("--agent", aid, *test_mcp.server_args(srv))
    try:
        s.initialize()
        res = s.result("tools/call", {"name": "read", "arguments": {"path": "/workspace/big.png"}})
        eq(res.get("isError"), False, "image read over MCP")
        kinds = [c.get("type") for c in res["content"]]
        eq(kinds, ["text", "image"], "content: the text, then the image")
        im = res["content"][1]
        _, w, h = image_size(base64.b64decode(im["data"]))
        eq((w, h), (1568, 1045), "MCP image scaled")
        eq(im.get("mimeType"), "image/png", "MCP image mimeType")
        sc = res.get("structuredContent") or {}
        check("data" not in sc.get("image", {}), "base64 not repeated in structuredContent")
        eq(sc["image"].get("originalWidth"), 3000, "structured originalWidth")
        res = s.result("tools/call", {"name": "read", "arguments": {"path": "/workspace/one.pdf"}})
        eq([c.get("type") for c in res["content"]], ["text", "resource"], "PDF content kinds")
        r = res["content"][1]["resource"]
        eq((r.get("mimeType"), base64.b64decode(r.get("blob", ""))),
           ("application/pdf", pdf(1)), "PDF as an embedded resource")
        contains(r.get("uri", ""), "/workspace/one.pdf", "resource uri names the file")
        s.close()
    finally:
        s.kill()
