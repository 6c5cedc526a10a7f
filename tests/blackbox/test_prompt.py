"""What the model sees: `POST /v1/agents/{id}/prompt` and the conversation's rebuilt request
(API.md "What the model sees: prompt", choices in docs/api.md). Inline and {path} files, a
retried prompt writing nothing twice, references (never bytes) kept so an overwritten file
shows as it was, images scaled to 1,568 px, files over a limit named with why, the 24 MiB /
100-file budget newest first, every limit at its edge, and both output formats checked
against the providers' published shapes (tests/schemas/*.json, written from their docs).
Test images and PDFs are made here (test_media's PNG and PDF writers)."""

import base64
import json
import os
import re
import struct
import zlib

import harness
import openapi_check as oc
from harness import check, contains, eq, expect, expect_error
from test_gc import run_gc
from test_media import GIF_1X1, image_size, pdf, png, sha
from test_tools import make_agent, ok, refused, tool

try:
    import jsonschema
except ImportError:  # scripts/deps installs python3-jsonschema
    jsonschema = None

SERVER_OPTS = {"gc_grace": 1}
if oc.jsonschema is not None:
    oc.enable()  # every answer here is checked against docs/openapi.json too
TIMEOUT = 180
MIB = 1 << 20
SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schemas")
LINE = re.compile(r"^\[File (?P<path>\S+) \((?P<type>[^,]+), (?P<size>[0-9.]+ "
                  r"(?:bytes?|KB|MB|GB))\)(?:; not shown: (?P<why>.+))?\]$")


def b64(data):
    return base64.b64encode(data).decode()


def agent(srv, **body):
    a = make_agent(srv, **body)
    return a["id"], a["workspaceVolumeId"]


def prompt(srv, aid, status=200, key=harness._ABSENT, headers=None, **body):
    r = srv.post("/v1/agents/%s/prompt" % aid, json=body, key=key, headers=headers)
    expect(r, status)
    return r


def answer(srv, aid, **body):
    return prompt(srv, aid, **body).json()


def rebuilt(srv, aid, conv, fmt=None):
    q = {"format": fmt} if fmt else None
    return expect(srv.get("/v1/agents/%s/conversations/%s/request" % (aid, conv), query=q),
                  200).json()


def conv_volume(srv, aid):
    vols = expect(srv.get("/v1/volumes", query={"prefix": "conversations of agent %s" % aid}),
                  200).json()["volumes"]
    eq(len(vols), 1, "one conversations volume for agent %s" % aid)
    return vols[0]["id"]


def png_of_size(n, w=4, h=4):
    """A valid PNG of exactly n bytes: an ancillary private chunk pads it."""
    base = png(w, h)
    pad = n - len(base) - 12
    check(pad >= 0, "PNG of %d bytes can be made" % n)
    chunk = (struct.pack(">I", pad) + b"prIv" + b"\0" * pad +
             struct.pack(">I", zlib.crc32(b"prIv" + b"\0" * pad) & 0xffffffff))
    return base[:-12] + chunk + base[-12:]


def pdf_of_size(n, pages=1):
    """A valid PDF of exactly n bytes: a comment after the header pads it (the xref
    offsets are fixed-width, so the size grows one for one with the comment)."""
    base = pdf(pages)
    head = b"%PDF-1.4\n"
    pad = n - len(base) - 2
    check(pad >= 0, "PDF of %d bytes can be made" % n)
    body = base[len(head):]
    # shift the xref offsets by the padding
    fill = b"%" + b"x" * pad + b"\n"
    out = head + fill + body
    xref_at = out.rindex(b"xref\n")
    tail = out[xref_at:]
    def shift(m):
        return b"%010d 00000 n " % (int(m.group(1)) + len(fill))
    tail = re.sub(rb"(\d{10}) 00000 n ", shift, tail)
    tail = re.sub(rb"startxref\n(\d+)", lambda m: b"startxref\n%d" % (int(m.group(1)) +
                                                                       len(fill)), tail)
    out = out[:xref_at] + tail
    eq(len(out), n, "PDF size")
    return out


def lines(content):
    """The file lines at the start of `content`, parsed."""
    out = []
    for blk in content:
        if blk.get("type") == "text" and LINE.match(blk["text"]):
            out.append(LINE.match(blk["text"]).groupdict())
        else:
            break
    return out


def media(content):
    return [b for b in content if b["type"] not in ("text",)]


def block_bytes(blk):
    """(media type, decoded bytes) of an image or document block, either format."""
    if blk["type"] in ("image", "document"):
        return blk["source"]["media_type"], base64.b64decode(blk["source"]["data"])
    url = blk["image_url"]["url"] if blk["type"] == "image_url" else blk["file"]["file_data"]
    m = re.match(r"^data:([^;]+);base64,(.*)$", url, re.S)
    check(m, "a data URL: %r" % url[:60])
    return m.group(1), base64.b64decode(m.group(2))


def validate(content, schema_file):
    if jsonschema is None:
        harness.skip("needs python3-jsonschema (scripts/deps installs it)")
    with open(os.path.join(SCHEMAS, schema_file)) as f:
        schema = json.load(f)
    doc = {"messages": [{"role": "user", "content": content}]}
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    check(not errors, "content matches %s:\n%s" % (schema_file, "\n".join(
        "%s at %s" % (e.message[:300], list(e.absolute_path)) for e in errors[:5])))


# ------------------------------------------------------------------ the message

def test_inline_and_path_files(srv):
    aid, ws = agent(srv)
    notes = b"notes\n" * 350000  # 2,100,000 bytes: "2.1 MB"
    chart = png(40, 30)
    srv.put_ok(ws, "docs/notes.txt", notes, headers={"Content-Type": "text/plain"})
    srv.put_ok(ws, "docs/chart.png", chart)
    q3 = pdf(3)
    j = answer(srv, aid, text="What do these say?", requestId="r1", files=[
        {"path": "/workspace/docs/notes.txt"},
        {"path": "docs/chart.png"},                         # relative: the first mount
        {"name": "q3.pdf", "data": b64(q3), "contentType": "application/pdf"}])
    eq(j["requestId"], "r1", "requestId")
    eq(j["text"], "What do these say?", "text")
    eq([f["path"] for f in j["files"]], ["/workspace/docs/notes.txt", "/workspace/docs/chart.png",
                                         "/workspace/uploads/r1/q3.pdf"], "file paths")
    eq([f["shown"] for f in j["files"]], [False, True, True], "shown")
    eq([f["sha256"] for f in j["files"]], [sha(notes), sha(chart), sha(q3)], "sha256")
    eq([f["size"] for f in j["files"]], [len(notes), len(chart), len(q3)], "sizes")
    eq(j["files"][2]["contentType"], "application/pdf", "inline contentType kept")
    contains(j["files"][0]["reason"], "only named", "a text file is only named")
    check("reason" not in j["files"][1], "a shown file has no reason")
    c = j["content"]
    eq(c[0], {"type": "text", "text": "[File /workspace/docs/notes.txt (text/plain, 2.1 MB)]"},
       "first line, as API.md shows it")
    ls = lines(c)
    eq([x["path"] for x in ls], [f["path"] for f in j["files"]], "one line per file, in order")
    eq(c[3], {"type": "text", "text": "What do these say?"}, "then the user's text")
    eq([b["type"] for b in c[4:]], ["image", "document"], "then the files shown, in order")
    eq(block_bytes(c[4]), ("image/png", chart), "a small image is sent as it is")
    eq(block_bytes(c[5]), ("application/pdf", q3), "the PDF as it is")
    # the inline file was saved like an upload
    eq(expect(srv.get_file(ws, "uploads/r1/q3.pdf"), 200).body, q3, "saved at uploads/r1/")
    up = expect(srv.get("/v1/agents/%s/files/workspace/uploads/r1/q3.pdf" % aid), 200)
    eq(up.body, q3, "readable by agent path")


def test_retry_writes_nothing_twice(srv):
    aid, ws = agent(srv)
    body = dict(text="look", requestId="rq-1", conversation="c1",
                files=[{"name": "a.png", "data": b64(png(8, 8))},
                       {"name": "b.txt", "data": b64(b"hello\n"), "contentType": "text/plain"}])
    first = prompt(srv, aid, **body)
    check(first.header("Idempotent-Replayed") is None, "the first is not a replay")
    cv = conv_volume(srv, aid)
    seqs = (srv.seq(ws), srv.seq(cv))
    again = prompt(srv, aid, **body)
    eq(again.header("Idempotent-Replayed"), "true", "a retry is marked")
    eq(again.json(), first.json(), "a retry answers the same message")
    eq((srv.seq(ws), srv.seq(cv)), seqs, "a retry writes nothing (workspace, records)")
    ch = expect(srv.get("/v1/volumes/%s/changes" % ws, query={"since": 0}), 200).json()
    eq(sorted(c["path"] for c in ch["changes"]), ["uploads/rq-1/a.png", "uploads/rq-1/b.txt"],
       "each inline file written once")
    eq(len(rebuilt(srv, aid, "c1")["prompts"]), 1, "the conversation has the prompt once")
    # the same request id with another prompt: 409 naming it, nothing written
    other = dict(body, text="something else")
    r = prompt(srv, aid, status=409, **other)
    contains(r.error["message"], "rq-1", "409 names the request id")
    other = dict(body, files=[{"name": "a.png", "data": b64(png(9, 9))}])
    r = prompt(srv, aid, status=409, **other)
    contains(r.error["message"], "rq-1", "other bytes under a saved name: 409")
    eq((srv.seq(ws), srv.seq(cv)), seqs, "a refused prompt writes nothing")
    # the other format of the same prompt is the same prompt
    o = prompt(srv, aid, format="openai", **body)
    eq(o.header("Idempotent-Replayed"), "true", "another format is still the retry")
    eq(o.json()["files"], first.json()["files"], "same files")
    eq((srv.seq(ws), srv.seq(cv)), seqs, "nothing written for another format")
    # Idempotency-Key: the same key with another request is 409 naming the key
    b2 = dict(text="k", requestId="rq-2", files=[{"name": "x.txt", "data": b64(b"x")}])
    h = {"Idempotency-Key": "key-%s" % aid}
    k1 = prompt(srv, aid, headers=h, **b2).json()
    k2 = prompt(srv, aid, headers=h, **b2)
    eq(k2.json(), k1, "same key, same request: the same answer")
    r = prompt(srv, aid, status=409, headers=h, **dict(b2, requestId="rq-3"))
    contains(r.error["message"], "key-%s" % aid, "409 names the Idempotency-Key")
    expect(srv.get_file(ws, "uploads/rq-3/x.txt"), 404)


def test_overwritten_file_shows_old_bytes(srv):
    aid, ws = agent(srv)
    old = png(20, 10, color=(255, 0, 0)) + b"\0" * 0
    big = os.urandom(300 * 1024)  # a blob file, not inline content
    srv.put_ok(ws, "pic.png", old)
    srv.put_ok(ws, "data.bin", big)
    j = answer(srv, aid, text="t", requestId="ov1", conversation="ov",
               files=[{"path": "/workspace/pic.png"}, {"path": "/workspace/data.bin"}])
    eq(block_bytes(media(j["content"])[0])[1], old, "shown as attached")
    srv.put_ok(ws, "pic.png", png(30, 30, color=(0, 0, 255)))
    expect(srv.delete("/v1/volumes/%s/files/data.bin" % ws), 200)
    run_gc(srv)
    run_gc(srv)
    req = rebuilt(srv, aid, "ov")
    eq(block_bytes(media(req["messages"][0]["content"])[0])[1], old,
       "the rebuilt request shows the old bytes after an overwrite and GC")
    eq([f["sha256"] for f in req["prompts"][0]["files"]], [sha(old), sha(big)],
       "references of the content as attached")
    eq(lines(req["messages"][0]["content"])[1]["path"], "/workspace/data.bin",
       "a deleted file is still named")
    blob = srv.blob_file(sha(big))
    check(os.path.exists(blob), "deleted file's content kept (pinned), never copied")
    # a retry of the prompt also shows it as it was
    r = prompt(srv, aid, text="t", requestId="ov1", conversation="ov",
               files=[{"path": "/workspace/pic.png"}, {"path": "/workspace/data.bin"}])
    eq(block_bytes(media(r.json()["content"])[0])[1], old, "a retry shows it as attached")
    # the conversations volume holds small records, not the files
    cv = conv_volume(srv, aid)
    listed = srv.list_files(cv)["files"]
    check(all(f["size"] < 16384 for f in listed), "records are small: %r" % listed)
    check(all(f["sha256"] not in (sha(old), sha(big)) for f in listed), "no bytes copied")


def test_large_image_arrives_at_1568x1045(srv):
    aid, ws = agent(srv)
    data = png(3000, 2000)
    for fmt in ("anthropic", "openai"):
        j = answer(srv, aid, text="big", requestId="big-" + fmt, format=fmt,
                   files=[{"name": "big.png", "data": b64(data)}])
        eq(j["files"][0]["shown"], True, "shown")
        eq(j["files"][0]["sha256"], sha(data), "sha256 of the file, not of the scaled copy")
        mtype, shown = block_bytes(media(j["content"])[0])
        fmt_, w, h = image_size(shown)
        eq((w, h), (1568, 1045), "3000x2000 arrives at 1568x1045 (%s)" % fmt)
        eq(mtype, "image/" + fmt_, "media type matches the data")
    # a stored 8,000 px image (the edge) is shown, scaled
    srv.put_ok(ws, "edge.png", png(8000, 10))
    j = answer(srv, aid, text="e", requestId="edge", files=[{"path": "/workspace/edge.png"}])
    eq(j["files"][0]["shown"], True, "8,000 px a side is within the limit")
    eq(image_size(block_bytes(media(j["content"])[0])[1])[1:], (1568, 2), "scaled to 1568")
    srv.put_ok(ws, "over.png", png(10, 8001))
    j = answer(srv, aid, text="o", requestId="over", files=[{"path": "/workspace/over.png"}])
    eq(j["files"][0]["shown"], False, "8,001 px a side is past the limit")
    contains(j["files"][0]["reason"], "10x8001", "names the image's size")


def test_over_limits_named_with_why(srv):
    aid, ws = agent(srv)
    wide = png(9000, 10)
    pages = pdf(101)
    j = answer(srv, aid, text="x", requestId="lim", files=[
        {"name": "wide.png", "data": b64(wide)}, {"name": "long.pdf", "data": b64(pages)},
        {"name": "ok.pdf", "data": b64(pdf(100))},
        {"name": "bad.png", "data": b64(b"\x89PNG\r\n\x1a\n" + b"garbage" * 20)}])
    eq([f["shown"] for f in j["files"]], [False, False, True, False], "shown")
    for f, phrases in zip(j["files"], (["9000x10", "8,000 px"], ["101 pages", "100 pages"],
                                       [], ["damaged"])):
        for p in phrases:
            contains(f["reason"], p, "reason of %s" % f["path"])
    ls = lines(j["content"])
    contains(ls[0]["why"], "8,000 px", "the line says why too")
    contains(ls[1]["why"], "101 pages", "the line says why too")
    check(ls[2]["why"] is None, "a shown file's line is plain")
    eq([b["type"] for b in media(j["content"])], ["document"], "only the 100-page PDF is sent")
    # byte limits at their edge: 5 MiB images, 16 MiB PDFs (stored files, past the
    # 4 MiB inline limit)
    srv.put_ok(ws, "i5.png", png_of_size(5 * MIB))
    srv.put_ok(ws, "i5x.png", png_of_size(5 * MIB + 1))
    srv.put_ok(ws, "p16.pdf", pdf_of_size(16 * MIB))
    srv.put_ok(ws, "p16x.pdf", pdf_of_size(16 * MIB + 1))
    # (one prompt each: 5 MiB and 16 MiB together are past the request's 24 MiB of base64)
    j = answer(srv, aid, text="y", requestId="bytes-i", files=[
        {"path": "/workspace/i5.png"}, {"path": "/workspace/i5x.png"}])
    eq([f["shown"] for f in j["files"]], [True, False], "the image byte limit's edge")
    contains(j["files"][1]["reason"], "5 MiB", "names the image limit")
    j = answer(srv, aid, text="y", requestId="bytes-p", files=[
        {"path": "/workspace/p16.pdf"}, {"path": "/workspace/p16x.pdf"}])
    eq([f["shown"] for f in j["files"]], [True, False], "the PDF byte limit's edge")
    contains(j["files"][1]["reason"], "16 MiB", "names the PDF limit")


# ------------------------------------------------------------------ the budget

def test_budget_100_files_newest_first(srv):
    aid, _ = agent(srv)
    for p in range(6):
        files = [{"name": "i%02d.png" % i, "data": b64(png(2, 2, color=(p, i, 7)))}
                 for i in range(20)]
        j = answer(srv, aid, text="p%d" % p, requestId="b%d" % p, conversation="hundred",
                   files=files)
        eq(sum(f["shown"] for f in j["files"]), 20, "a prompt alone shows its 20")
    req = rebuilt(srv, aid, "hundred")
    eq([p["requestId"] for p in req["prompts"]], ["b%d" % i for i in range(6)], "oldest first")
    shown = [sum(f["shown"] for f in p["files"]) for p in req["prompts"]]
    eq(shown, [0, 20, 20, 20, 20, 20], "100 files shown, newest first; the oldest named")
    eq(sum(len(media(m["content"])) for m in req["messages"]), 100, "100 blocks in all")
    for f in req["prompts"][0]["files"]:
        contains(f["reason"], "budget", "named only because of the budget")
    contains(lines(req["messages"][0]["content"])[0]["why"], "budget", "the line says why")
    eq(req["messages"][0]["content"][20], {"type": "text", "text": "p0"}, "text kept")


def test_budget_24_mib_newest_first(srv):
    aid, ws = agent(srv)
    # 6 MiB of PDF is 8 MiB of base64, as sent: three make the budget exactly
    for i in range(3):
        srv.put_ok(ws, "p%d.pdf" % i, pdf_of_size(6 * MIB, pages=1 + i))
    for i in range(3):
        answer(srv, aid, text="pdf %d" % i, requestId="m%d" % i, conversation="mib",
               files=[{"path": "/workspace/p%d.pdf" % i}])
    req = rebuilt(srv, aid, "mib")
    eq([[f["shown"] for f in p["files"]] for p in req["prompts"]], [[True]] * 3,
       "3 x 8 MiB of base64 = 24 MiB: exactly the budget, all shown")
    # one byte more, in a newer prompt: the oldest PDF is named only
    answer(srv, aid, text="one more", requestId="m3", conversation="mib",
           files=[{"name": "tiny.gif", "data": b64(GIF_1X1)}])
    req = rebuilt(srv, aid, "mib", fmt="openai")
    eq([[f["shown"] for f in p["files"]] for p in req["prompts"]],
       [[False], [True], [True], [True]], "past 24 MiB the oldest is named only")
    contains(req["prompts"][0]["files"][0]["reason"], "24 MiB", "why")
    eq(req["format"], "openai", "format")
    eq(req["conversation"], "mib", "conversation")
    sent = [len(base64.b64encode(block_bytes(b)[1])) for m in req["messages"]
            for b in media(m["content"])]
    check(sum(sent) <= 24 * MIB, "at most 24 MiB of base64 shown (%d)" % sum(sent))
    eq(sum(sent), 2 * 8 * MIB + 4 * ((len(GIF_1X1) + 2) // 3), "what is shown")
    # a 16 MiB PDF (21.3 MiB of base64) fits alone; with a newer 6 MiB one it is named
    srv.put_ok(ws, "p16.pdf", pdf_of_size(16 * MIB))
    answer(srv, aid, text="a", requestId="n0", conversation="big",
           files=[{"path": "/workspace/p16.pdf"}])
    eq(rebuilt(srv, aid, "big")["prompts"][0]["files"][0]["shown"], True, "16 MiB alone")
    answer(srv, aid, text="b", requestId="n1", conversation="big",
           files=[{"path": "/workspace/p0.pdf"}])
    eq([p["files"][0]["shown"] for p in rebuilt(srv, aid, "big")["prompts"]], [False, True],
       "8 + 21.3 MiB of base64 is past 24 MiB: the older is named")


def test_rebuild_text_budget_24_mib_newest_first(srv):
    """Issue 32 item 4 (API.md: "its text has a budget too (at most 24 MiB of text a
    request; older prompts past it are named only)"). 24 prompts of 1 MiB text are
    exactly the budget and shown; the next older one, and every one older still (even a
    small one), is named only: one line for the model, its text and files left out, its
    image never read. On main all 26 MiB came back (twice: messages and prompts)."""
    aid, ws = agent(srv)
    big = "x" * MIB
    srv.put_ok(ws, "old.png", png(40, 30))
    answer(srv, aid, text="old", requestId="t00", conversation="text",
           files=[{"path": "/workspace/old.png"}])
    for i in range(1, 26):
        answer(srv, aid, text=big[:-3] + "%03d" % i, requestId="t%02d" % i,
               conversation="text")
    req = rebuilt(srv, aid, "text")
    eq([p["requestId"] for p in req["prompts"]], ["t%02d" % i for i in range(26)],
       "oldest first")
    eq([p.get("shown") for p in req["prompts"]], [False, False] + [True] * 24,
       "24 x 1 MiB is exactly the budget; older prompts named only")
    sent = sum(len(b["text"]) for m in req["messages"] for b in m["content"]
               if b["type"] == "text")
    check(24 * MIB <= sent < 24 * MIB + 4096, "at most 24 MiB of text and the notes: %d" % sent)
    for i, p in enumerate(req["prompts"][:2]):
        check("text" not in p, "a prompt past the budget has no text in the answer")
        contains(p["reason"], "24 MiB of text", "why")
        eq(p["textBytes"], len("old") + len("/workspace/old.png") + len("image/png")
           if i == 0 else MIB, "textBytes of %s" % p["requestId"])
        content = req["messages"][i]["content"]
        eq(len(content), 1, "one line for a prompt named only")
        contains(content[0]["text"], "[Prompt %s (" % p["requestId"], "names the prompt")
        contains(content[0]["text"], "not shown: past the request's text budget", "says why")
    f = req["prompts"][0]["files"][0]
    eq((f["path"], f["shown"], f["sha256"]), ("/workspace/old.png", False, sha(png(40, 30))),
       "its file is named, not shown")
    from test_media import counter
    seen = (counter(srv, "coffer_image_decodes_total"),
            counter(srv, "coffer_image_cache_hits_total"))
    eq(rebuilt(srv, aid, "text"), req, "rebuilt again: the same")
    eq((counter(srv, "coffer_image_decodes_total"),
        counter(srv, "coffer_image_cache_hits_total")), seen,
       "the image of a prompt past the text budget is not even read")
    eq(req["prompts"][25]["text"][-3:], "025", "the newest prompt's text is whole")
    eq(len(req["prompts"][2]["text"]), MIB, "so is the oldest one shown")


def test_rebuild_of_image_bombs_never_stalls_the_server():
    """Issue 32 item 2: four GETs of a conversation's request, holding the 490 KB 16-bit
    interlaced 8000x8000 PNG and an 8000x4000 interlaced one (96 MB decoded, allowed), did
    every decode on the event loop: /v1/health took 32.7 s. With one event loop
    (--threads 1) health must still answer while they are built (a generous 10 s bound,
    not a timing claim: on main it waited for every decode of all four GETs, ~8 s
    each). Now the rebuild runs on a worker, the bomb is refused from its header, and
    the scaled image is kept by SHA-256; the model sees the bomb named with the limit."""
    import concurrent.futures
    import time
    from test_media import png_bomb, the_png_bomb
    with harness.server(args=["--threads", "1"]) as s:
        aid, ws = agent(s)
        s.put_ok(ws, "bomb.png", the_png_bomb())
        s.put_ok(ws, "tall.png", png_bomb(8000, 4000, depth=8, ctype=2))
        for i, name in enumerate(("bomb.png", "tall.png")):
            answer(s, aid, text="look %d" % i, requestId="h%d" % i, conversation="bombs",
                   files=[{"path": "/workspace/" + name}])
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            gets = [ex.submit(rebuilt, s, aid, "bombs") for _ in range(4)]
            time.sleep(1)  # the GETs under way (on main: decoding on the one loop)
            t0 = time.monotonic()
            r = s.get("/v1/health", key=None, timeout=60)
            took = time.monotonic() - t0
            reqs = [g.result(timeout=600) for g in gets]
        expect(r, 200)
        check(took < 10, "health answered while four rebuilds ran: %.1f s" % took)
        for req in reqs:
            f = req["prompts"][0]["files"][0]
            eq(f["shown"], False, "the bomb is not shown")
            contains(f["reason"], "256 MiB decoded", "the reason names the limit")
            contains(lines(req["messages"][0]["content"])[0]["why"], "512000000 bytes",
                     "the model's line names the decoded size")
            eq(req["prompts"][1]["files"][0]["shown"], True, "the allowed one is shown")


# ------------------------------------------------------------------ formats

def test_formats_match_provider_shapes(srv):
    aid, ws = agent(srv)
    srv.put_ok(ws, "notes.md", b"# notes\n")
    files = [{"name": "a.gif", "data": b64(GIF_1X1)},
             {"name": "doc.pdf", "data": b64(pdf(2))}, {"path": "/workspace/notes.md"},
             {"name": "wide.png", "data": b64(png(9000, 4))}]
    for fmt, schema in (("anthropic", "anthropic_messages.json"),
                        ("openai", "openai_chat.json")):
        j = answer(srv, aid, text="describe", requestId="f-" + fmt, format=fmt,
                   conversation="shapes", files=files)
        validate(j["content"], schema)
        kinds = [b["type"] for b in media(j["content"])]
        eq(kinds, ["image", "document"] if fmt == "anthropic" else ["image_url", "file"],
           "block types (%s)" % fmt)
        if fmt == "openai":
            eq(media(j["content"])[1]["file"]["filename"], "doc.pdf", "file part's filename")
        eq(block_bytes(media(j["content"])[1]), ("application/pdf", pdf(2)), "PDF bytes")
        req = rebuilt(srv, aid, "shapes", fmt=fmt)
        for m in req["messages"]:
            validate(m["content"], schema)
    # a prompt without text has no empty text block (the providers refuse those)
    j = answer(srv, aid, text="", requestId="notext", files=[{"path": "/workspace/notes.md"}])
    eq(len(j["content"]), 1, "only the file line")
    validate(j["content"], "anthropic_messages.json")


# ------------------------------------------------------------------ limits and checks

def test_limits_at_their_edges(srv):
    aid, ws = agent(srv)
    one = {"name": "f.txt", "data": b64(b"x")}
    # 20 files
    files = [{"name": "n%02d.txt" % i, "data": b64(b"%d" % i)} for i in range(20)]
    answer(srv, aid, text="t", requestId="twenty", files=files)
    r = prompt(srv, aid, status=400, text="t", requestId="twentyone",
               files=files + [{"name": "n20.txt", "data": b64(b"x")}])
    contains(r.error["message"], "21", "names the count")
    contains(r.error["message"], "20", "names the limit")
    # 4 MiB inline in all
    half = os.urandom(2 * MIB)
    answer(srv, aid, text="t", requestId="four", files=[
        {"name": "a.bin", "data": b64(half)}, {"name": "b.bin", "data": b64(half[::-1])}])
    r = prompt(srv, aid, status=413, text="t", requestId="four+", files=[
        {"name": "a.bin", "data": b64(half)}, {"name": "b.bin", "data": b64(half + b"!")}])
    eq(r.error["type"], "too_large", "type")
    contains(r.error["message"], "4 MiB", "names the limit")
    contains(r.error["message"], str(4 * MIB + 1), "names the total")
    expect(srv.get_file(ws, "uploads/four+/a.bin"), 404)
    # text: 1 MiB
    answer(srv, aid, text="a" * MIB, requestId="text")
    r = prompt(srv, aid, status=413, text="a" * (MIB + 1), requestId="text+")
    contains(r.error["message"], "1 MiB", "names the text limit")
    # request id: one segment of at most 255 bytes
    answer(srv, aid, text="t", requestId="r" * 255)
    for bad in ("r" * 256, "a/b", "..", "", "a\tb"):
        r = prompt(srv, aid, status=400, text="t", requestId=bad)
        contains(r.error["message"], "request id", "names the request id (%r)" % bad)
    # conversation ids: 1..128 of [A-Za-z0-9._@-]
    answer(srv, aid, text="t", requestId="cv", conversation="c" * 128)
    for bad in ("c" * 129, "a b", ".", ""):
        r = prompt(srv, aid, status=400, text="t", requestId="cv2", conversation=bad)
        contains(r.error["message"], "conversation", "names the conversation (%r)" % bad)
    expect(srv.get("/v1/agents/%s/conversations/%s/request" % (aid, "c" * 129)), 400)
    # format, fields, entries
    r = prompt(srv, aid, status=400, text="t", requestId="fmt", format="gemini")
    contains(r.error["message"], "format", "names format")
    expect(srv.get("/v1/agents/%s/conversations/%s/request" % (aid, "c" * 128),
                   query={"format": "x"}), 400)
    for bad, phrase in (({"path": "/workspace/a", "name": "x"}, "files[0]"),
                        ({"name": "x.txt"}, "data"), ({"name": "x", "data": "!!"}, "base64"),
                        ({"name": "a/b", "data": "eA=="}, "file name"),
                        ({"name": "x", "data": "eA==", "contentType": "no type"}, "contentType"),
                        ("x", "files[0]")):
        r = prompt(srv, aid, status=400, text="t", requestId="bad", files=[bad])
        contains(r.error["message"], phrase, "names what is wrong in %r" % (bad,))
    r = prompt(srv, aid, status=400, text="t", requestId="dup", files=[one, one])
    contains(r.error["message"], "twice", "a name given twice")
    r = prompt(srv, aid, status=400, text="", requestId="empty")
    contains(r.error["message"], "text or at least one file", "an empty message is refused")
    prompt(srv, aid, status=400, text="t", requestId="x", extra=1)
    prompt(srv, aid, status=400, requestId="x")
    prompt(srv, aid, status=400, text="t")
    expect(srv.get_file(ws, "uploads/bad/x"), 404)


def test_uploads_per_request_limit(srv):
    aid, ws = agent(srv)
    for i in range(19):
        expect(srv.put("/v1/agents/%s/uploads/u1/f%02d" % (aid, i), body=b"%d" % i), 201)
    r = prompt(srv, aid, status=409, text="t", requestId="u1", files=[
        {"name": "a", "data": b64(b"a")}, {"name": "b", "data": b64(b"b")}])
    contains(r.error["message"], "20", "names the limit")
    expect(srv.get_file(ws, "uploads/u1/a"), 404)  # nothing written
    # the 20th fits; files the request already saved are attached by {path}
    j = answer(srv, aid, text="t", requestId="u1", files=[
        {"name": "a", "data": b64(b"a")}, {"path": "/workspace/uploads/u1/f00"}])
    eq([f["path"] for f in j["files"]], ["/workspace/uploads/u1/a",
                                         "/workspace/uploads/u1/f00"], "paths")


def test_paths_missing_excluded_and_no_place(srv):
    aid, ws = agent(srv)
    srv.put_ok(ws, ".env", b"SECRET=1")
    r = prompt(srv, aid, status=403, text="t", requestId="ex", files=[{"path": "/workspace/.env"}])
    contains(r.error["message"], "excluded", "an excluded file")
    r = prompt(srv, aid, status=404, text="t", requestId="ms", files=[{"path": "nope.txt"}])
    contains(r.error["message"], "/workspace/nope.txt", "names the missing file")
    prompt(srv, aid, status=404, text="t", requestId="om", files=[{"path": "/elsewhere/a"}])
    prompt(srv, aid, status=400, text="t", requestId="rt", files=[{"path": "/workspace"}])
    # no writable place: inline files are refused (409), {path} files still work
    vol = srv.create_volume()
    srv.put_ok(vol["id"], "a.txt", b"a")
    ro, _ = agent(srv, mounts=[{"workspace": False},
                               {"volumeId": vol["id"], "path": "/docs", "mode": "ro"}])
    prompt(srv, ro, status=409, text="t", requestId="np", files=[{"name": "x", "data": "eA=="}])
    j = answer(srv, ro, text="t", requestId="np2", files=[{"path": "/docs/a.txt"}])
    eq(j["files"][0]["path"], "/docs/a.txt", "a read-only mount's file attached")
    # unknown agent, unknown conversation
    prompt(srv, "no-such-agent", status=404, text="t", requestId="x")
    expect(srv.get("/v1/agents/%s/conversations/none/request" % aid), 404)


def test_agent_key_reaches_only_its_agent(srv):
    a, _ = agent(srv)
    b, _ = agent(srv)
    key = expect(srv.post("/v1/keys", json={"agent": a}), 201).json()["key"]
    answer_ = prompt(srv, a, key=key, text="mine", requestId="k1", conversation="k").json()
    eq(answer_["text"], "mine", "own agent")
    expect_error(srv.post("/v1/agents/%s/prompt" % b, json={"text": "t", "requestId": "k"},
                          key=key), 403, "forbidden")
    expect(srv.get("/v1/agents/%s/conversations/k/request" % a, key=key), 200)
    expect(srv.get("/v1/agents/%s/conversations/k/request" % b, key=key), 403)


def test_shown_file_counts_as_read(srv):
    aid, ws = agent(srv)
    srv.put_ok(ws, "seen.png", png(4, 4))
    srv.put_ok(ws, "named.txt", b"text\n")
    answer(srv, aid, text="t", requestId="sr", files=[{"path": "/workspace/seen.png"},
                                                      {"path": "/workspace/named.txt"}])
    ok(srv, aid, "write", path="/workspace/seen.png", content="replaced")
    refused(srv, aid, "write", "read it first", path="/workspace/named.txt", content="x")


def test_conversation_prompt_limit(srv):
    aid, _ = agent(srv)
    for i in range(1000):
        answer(srv, aid, text="t", requestId="p%04d" % i, conversation="full")
    r = prompt(srv, aid, status=409, text="t", requestId="p1000", conversation="full")
    contains(r.error["message"], "1000", "names the limit")


def test_damaged_records_refused_not_trusted(srv):
    """Records live in a volume of the organization (anyone with its key may write there):
    a record naming a blob outside the store, a size larger than its content, or a broken
    JSON is refused with 500, and cofferd goes on."""
    aid, ws = agent(srv)
    small = png(3, 3)
    j = answer(srv, aid, text="t", requestId="d1", conversation="dmg",
               files=[{"name": "s.png", "data": b64(small)}])
    eq(j["files"][0]["shown"], True, "shown at first")
    cv = conv_volume(srv, aid)
    # openapi_check refuses a stored file served as application/json (the files GET is
    # documented as */*, and the checker reads a JSON type as a JSON answer): unchecked here
    saved, harness.ON_RESPONSE = harness.ON_RESPONSE, None
    try:
        rec = json.loads(expect(srv.get_file(cv, "conversations/dmg/d1"), 200).body)
    finally:
        harness.ON_RESPONSE = saved
    good = dict(rec["files"][0])
    for bad in ({"sha256": "../../admin.key" + "0" * 49}, {"size": 4 << 20, "kind": "image"},
                {"size": -1}, {"kind": "elf"}, {"sha256": None}):
        f = dict(good, **bad)
        srv.put_ok(cv, "conversations/dmg/d1", json.dumps(dict(rec, files=[f])).encode())
        r = srv.get("/v1/agents/%s/conversations/dmg/request" % aid)
        expect_error(r, 500, "internal")
        contains(r.error["message"], "record", "names the damaged record (%r)" % bad)
    srv.put_ok(cv, "conversations/dmg/d1", b"{not json")
    expect_error(srv.get("/v1/agents/%s/conversations/dmg/request" % aid), 500, "internal")
    srv.put_ok(cv, "conversations/dmg/d1", json.dumps(rec).encode())
    req = rebuilt(srv, aid, "dmg")
    eq(block_bytes(media(req["messages"][0]["content"])[0])[1], small, "a sound record renders")


def test_agent_deleted_with_its_conversations(srv):
    aid, _ = agent(srv)
    answer(srv, aid, text="t", requestId="g1", conversation="gone",
           files=[{"name": "a.txt", "data": b64(b"a")}])
    cv = conv_volume(srv, aid)
    expect(srv.delete("/v1/agents/%s" % aid), 204)
    expect(srv.get("/v1/volumes/%s" % cv), 404)
    make_agent(srv, aid)
    expect(srv.get("/v1/agents/%s/conversations/gone/request" % aid), 404)
    j = answer(srv, aid, text="t", requestId="g1", conversation="gone")
    eq(j["files"], [], "the same request id is a new prompt for the new agent")
