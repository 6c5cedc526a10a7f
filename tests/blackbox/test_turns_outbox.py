"""Turns: files returned through $OUTBOX end to end (API.md "Outbox"): a PNG
returned and fetched by its URL, acceptedOutputModes, and entries that are not
regular files (symlink, FIFO, folder) neither followed nor hung on."""

import time

import harness
from harness import check, contains, eq, expect, expect_error
from turnlib import call, make_agent, new_turn, ok

TIMEOUT = 90
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _write_png(name="chart.png"):
    return ("python3 -c \"import sys; open('%s/%s', 'wb').write(bytes.fromhex('%s'))\""
            % ("$OUTBOX", name, PNG.hex()))


def test_png_returned_and_fetched_by_url(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], _write_png())
    eq(len(out["files"]), 1, "files of %r" % out)
    f = out["files"][0]
    eq((f["name"], f["mediaType"], f["size"]), ("chart.png", "image/png", len(PNG)), "file")
    check(f["url"].startswith("http://"), "absolute url %r" % f["url"])
    contains(" ".join(out["notes"]), "attached chart.png", "notes")
    r = expect(srv.get(f["url"]), 200)
    eq(r.body, PNG, "bytes served")
    eq(r.header("Content-Type"), "image/png", "content type")


def test_outbox_is_emptied_after_each_call(srv):
    t = new_turn(srv)
    ok(srv, t["id"], _write_png())
    eq(ok(srv, t["id"], "ls -A $OUTBOX")["stdout"], "", "outbox at the next call")


def test_returned_file_gone_with_the_turn(srv):
    t = new_turn(srv)
    f = ok(srv, t["id"], _write_png())["files"][0]
    expect(srv.delete("/v1/turns/%s" % t["id"]), 204)
    expect_error(srv.get(f["url"]), 410, "gone")


def test_unknown_returned_file_is_404(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], _write_png())
    expect_error(srv.get("/v1/turns/%s/files/%s/other.png" % (t["id"], out["callId"])),
                 404, "not_found")


def test_returned_file_path_traversal_is_404(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], _write_png())
    r = srv.get("/v1/turns/%s/files/%s/..%%2F..%%2Fws" % (t["id"], out["callId"]))
    check(r.status in (400, 404), "status %d" % r.status)


def test_sse_file_event(srv):
    from turnlib import stream_call
    t = new_turn(srv)
    events = stream_call(srv, t["id"], {"command": _write_png()})
    files = [d for e, d in events if e == "file"]
    eq([f["name"] for f in files], ["chart.png"], "file events")
    check(files[0]["url"].startswith("http://"), "absolute url")
    eq(events[-1][0], "exit", "last event")


def test_accepted_output_modes_filter(srv):
    aid = make_agent(srv)
    t = new_turn(srv, aid, acceptedOutputModes=["text/csv"])
    out = ok(srv, t["id"], _write_png() + "; printf 'a,b\\n1,2\\n' > $OUTBOX/t.csv")
    eq([f["name"] for f in out["files"]], ["t.csv"], "files")


def test_agent_output_setting_filter(srv):
    aid = make_agent(srv, output={"files": ["csv"]})
    t = new_turn(srv, aid)
    out = ok(srv, t["id"], _write_png() + "; printf 'a,b\\n' > $OUTBOX/t.csv")
    eq([f["name"] for f in out["files"]], ["t.csv"], "files")


def test_symlink_in_outbox_not_followed(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "ln -s /etc/passwd $OUTBOX/p.csv")
    eq(out["files"], [], "files")
    check(any("p.csv" in n for n in out["notes"]), "a note names it: %r" % out["notes"])


def test_fifo_in_outbox_not_hung_on(srv):
    t = new_turn(srv)
    started = time.time()
    out = ok(srv, t["id"], "mkfifo $OUTBOX/f.csv")
    check(time.time() - started < 20 * harness.SCALE, "answered")
    eq(out["files"], [], "files")
    check(any("f.csv" in n for n in out["notes"]), "a note names it: %r" % out["notes"])


def test_fifo_with_a_writer_left_running_not_hung_on(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "mkfifo $OUTBOX/g.csv; (echo x > $OUTBOX/g.csv &)")
    eq(out["files"], [], "files")


def test_folder_in_outbox_not_returned(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "mkdir $OUTBOX/d.png && cp /dev/null $OUTBOX/d.png/x.png")
    eq(out["files"], [], "files")
    check(any("d.png" in n for n in out["notes"]), "a note names it: %r" % out["notes"])
    eq(ok(srv, t["id"], "ls -A $OUTBOX")["stdout"], "", "outbox emptied")


def test_outbox_replaced_by_a_symlink(srv):
    t = new_turn(srv)
    out = ok(srv, t["id"], "rmdir $OUTBOX && ln -s /etc $OUTBOX")
    eq(out["files"], [], "files")
    ok(srv, t["id"], "test -d $OUTBOX && test ! -L $OUTBOX")


def test_breach_returns_no_files(srv):
    aid = make_agent(srv, sandbox={"scratch": "16m", "turnDisk": "1m", "userDisk": "1m"})
    t = new_turn(srv, aid)
    out = call(srv, t["id"], _write_png() + "; dd if=/dev/zero of=big bs=64k count=40")
    eq(out.get("limit"), "turn_disk", "limit")
    eq(out["files"], [], "files of a breached call")


def test_concurrent_calls_share_the_turn_file_budget(srv):
    # calls of one turn share $OUTBOX and the 8-file budget of the turn: three
    # calls finishing together, each leaving 4 PNGs, return at most 8 in all
    import threading
    t = new_turn(srv)
    answers = []

    def run(k):
        names = " ".join("c%d_%d.png" % (k, i) for i in range(4))
        cmd = ("for n in %s; do printf '\\211PNG\\r\\n\\032\\nx' > $OUTBOX/$n; done; sleep 0.3"
               % names)
        answers.append(call(srv, t["id"], cmd))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    eq(len(answers), 3, "answers")
    files = [f["name"] for a in answers for f in a["files"]]
    eq(len(files), len(set(files)), "no file returned twice: %r" % files)
    check(len(files) <= 8, "at most 8 files per turn, got %d: %r" % (len(files), files))
    for a in answers:
        check(len(a["files"]) <= 4, "at most 4 files per call: %r" % a["files"])
