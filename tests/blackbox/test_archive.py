"""Archive: a tar.gz of the files at one seq, names relative to `path`, glob, ?snapshot=."""

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import unicodedata

import harness
from harness import check, eq, expect, expect_error, sha256


def _tar(resp):
    ct = resp.header("Content-Type") or ""
    check(ct.startswith("application/gzip"), "archive Content-Type application/gzip, got %r" % ct)
    try:
        tf = tarfile.open(fileobj=io.BytesIO(resp.body), mode="r:gz")
        out = {}
        for m in tf.getmembers():
            if m.isfile():
                out[m.name] = tf.extractfile(m).read()
            else:
                check(m.isdir(), "only files and directories in the archive: %r" % m.name)
        return out
    except (tarfile.TarError, EOFError, OSError) as e:
        raise AssertionError("archive does not parse as tar.gz: %s\n%s" % (e, resp.describe(300)))


def _vol(srv):
    vid = srv.create_volume()["id"]
    files = {"proj/readme.md": b"# readme\n", "proj/src/main.c": b"int main(void){}\n",
             "proj/src/lib/util.c": os.urandom(70_000), "proj/notes.txt": b"notes",
             "other/x.txt": b"x", "top.txt": b"top"}
    for p, d in files.items():
        srv.put_ok(vid, p, d)
    return vid, files


def test_archive_whole_volume(srv):
    vid, files = _vol(srv)
    r = expect(srv.get("/v1/volumes/%s/archive" % vid), 200)
    eq(r.header("X-Volume-Seq"), str(len(files)), "X-Volume-Seq")
    got = _tar(r)
    eq(sorted(got), sorted(files), "names in the archive")
    for p, d in files.items():
        eq(sha256(got[p]), sha256(d), "bytes of " + p)


def test_archive_path_relative_names(srv):
    vid, files = _vol(srv)
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "proj"}), 200))
    eq(sorted(got), ["notes.txt", "readme.md", "src/lib/util.c", "src/main.c"],
       "names relative to path=proj")
    eq(got["src/main.c"], files["proj/src/main.c"], "bytes")
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "proj/src"}), 200))
    eq(sorted(got), ["lib/util.c", "main.c"], "names relative to path=proj/src")
    for n in got:
        check(not n.startswith("/") and ".." not in n.split("/"), "safe tar name %r" % n)


def test_archive_glob(srv):
    vid, files = _vol(srv)
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid,
                              query={"path": "proj", "glob": "**/*.c"}), 200))
    eq(sorted(got), ["src/lib/util.c", "src/main.c"], "glob **/*.c under proj")
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid, query={"glob": "*.txt"}), 200))
    eq(sorted(got), ["top.txt"], "glob *.txt at the top")


def test_archive_at_snapshot(srv):
    vid, files = _vol(srv)
    snap = srv.snapshot(vid)
    srv.put_ok(vid, "top.txt", b"changed")
    srv.put_ok(vid, "new.txt", b"new")
    r = expect(srv.get("/v1/volumes/%s/archive" % vid, query={"snapshot": snap["id"]}), 200)
    eq(r.header("X-Volume-Seq"), str(snap["seq"]), "X-Volume-Seq of a snapshot archive")
    got = _tar(r)
    eq(sorted(got), sorted(files), "names at the snapshot")
    eq(got["top.txt"], b"top", "bytes at the snapshot")


def test_archive_empty_and_errors(srv):
    vid = srv.create_volume()["id"]
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid), 200))
    eq(got, {}, "archive of an empty volume")
    expect_error(srv.get("/v1/volumes/%s/archive" % vid, query={"snapshot": "nosuch"}), 404)
    expect_error(srv.get("/v1/volumes/nosuch/archive"), 404)
    expect_error(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "../x"}), 400)


@harness.timeout(900)
def test_archive_over_10000_files_413(srv):
    harness.slow("writes 10,001 files")
    vid = srv.create_volume()["id"]
    srv.put_many(vid, {"f/%05d" % i: b"x" for i in range(10001)}, threads=8)
    r = srv.get("/v1/volumes/%s/archive" % vid)
    expect_error(r, 413, "too_large")
    check(not (r.header("Content-Type") or "").startswith("application/gzip"),
          "413 comes before any byte of the archive")
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid, query={"glob": "f/0*"}), 200))
    eq(len(got), 10000, "exactly 10,000 files is fine")


@harness.timeout(120)
def test_archive_at_one_seq_under_writes(srv):
    import threading
    vid = srv.create_volume()["id"]
    log, stop = [], threading.Event()

    def writer():
        r = 0
        while not stop.is_set():
            for i in range(10):
                data = ("round %d file %d" % (r, i)).encode()
                a = srv.put_ok(vid, "w/f%d.txt" % i, data)
                log.append((a["seq"], "f%d.txt" % i, data))
            r += 1
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    got = []
    try:
        import time
        deadline = time.time() + 3
        while time.time() < deadline:
            r = expect(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "w"}), 200)
            got.append((int(r.header("X-Volume-Seq")), _tar(r)))
    finally:
        stop.set()
        t.join(60)
    for seq, files in got:
        want = {}
        for s, p, d in sorted(log):
            if s <= seq:
                want[p] = d
        eq(files, want, "archive with X-Volume-Seq %d holds the files as at that seq" % seq)


@harness.timeout(300)
def test_archive_over_1gib_413_and_capacity_grows(srv):
    """1,025 files of the same 1 MiB (stored once) would make a 1 GiB + 1 MiB archive:
    413 before any byte. The volume's capacity has doubled past its usage meanwhile."""
    vid = srv.create_volume()["id"]
    block = os.urandom(1 << 20)
    answers = srv.put_many(vid, {"big/%04d.bin" % k: block for k in range(1025)}, threads=8)
    eq({a["sha256"] for a in answers.values()}, {sha256(block)}, "sha256 of every copy")
    v = srv.volume(vid)
    eq(v["bytes"], 1025 << 20, "volume bytes")
    check(v["bytes"] <= v["capacity"] <= v["ceiling"],
          "capacity grew past usage, within the ceiling: %r" % v)
    check(v["capacity"] in (2 << 30, 4 << 30),
          "capacity doubles from 512 MiB past 1 GiB of usage: %r" % v["capacity"])
    r = srv.get("/v1/volumes/%s/archive" % vid, timeout=120)
    err = expect_error(r, 413, "too_large")
    check("GiB" in err["message"] or "1073741824" in err["message"],
          "the 413 names the 1 GiB limit: %r" % err["message"])
    # a glob that leaves out enough is fine
    r = expect(srv.get("/v1/volumes/%s/archive" % vid, query={"glob": "big/000*.bin"},
                       timeout=120), 200)
    eq(sorted(_tar(r)), ["big/%04d.bin" % k for k in range(10)], "names under the limit")


# ---- names as stored, byte for byte, through GNU tar, bsdtar and Python's tarfile

def _nasty_names():
    """{path: bytes} of names an archive must carry exactly; (names that may be
    refused at PUT with 400, as control characters will be)."""
    nfc = unicodedata.normalize("NFC", "café.txt")
    nfd = unicodedata.normalize("NFD", "café.txt")
    assert nfc != nfd
    long_seg = "s" * 200 + "é" * 20                      # one 240-byte segment
    long_path = "/".join(["p%02d" % i + "x" * 240 for i in range(8)]) + "/end.txt"
    assert len(long_path.encode()) >= 1900
    long_uni = "/".join(["ü" * 120 for _ in range(8)]) + "/ende.txt"   # 240-byte segments
    assert len(long_uni.encode()) >= 1900
    deep = "/".join("d%d" % i for i in range(60)) + "/leaf.txt"
    files = {
        nfc: b"composed", "dir/" + nfc: b"composed in a folder",
        nfd: b"decomposed", "dir/" + nfd: b"decomposed in a folder",
        "日本語/ファイル.md": "日本語のテキスト\n".encode(),
        "emoji/\U0001F600 smile.txt": b"smile",
        "ascii/" + "a" * 90 + "/" + "b" * 90 + ".txt": b"ustar prefix and name",  # 187 bytes
        "ascii/" + "c" * 200: b"one ascii segment past 100 bytes",
        long_seg: b"long segment",
        long_path: os.urandom(3000),
        long_uni: b"long unicode path",
        deep: b"sixty folders deep",
        "empty.txt": b"",
        "leer/\u00e4.txt": b"",
        'quote/say "hi".txt': b"double quote",
        "quote/it's.txt": b"single quote",
        "back\\slash.txt": b"backslash",
        "odd/%41 #? * [x].txt": b"percent, hash, question mark, star, brackets",
        "sp ace/ lead and trail .txt": b"spaces",
    }
    maybe_refused = {"ctl/tab\there.txt": b"tab", "ctl/new\nline.txt": b"newline",
                     "ctl/del\x7f.txt": b"delete"}
    return files, maybe_refused


def _nasty_volume(srv):
    """A volume holding _nasty_names(); control-character names that the server
    refuses (400) are left out. Returns (vid, {path bytes: data})."""
    vid = srv.create_volume()["id"]
    files, maybe = _nasty_names()
    for p, d in files.items():
        srv.put_ok(vid, p, d)
    for p, d in maybe.items():
        r = srv.put_file(vid, p, d)
        if r.status == 400:
            continue
        expect(r, 201)
        files[p] = d
    listed = {f["path"] for f in srv.list_files(vid, limit=1000)["files"]}
    eq(sorted(listed), sorted(files), "the volume lists the names as they were written")
    return vid, {p.encode(): d for p, d in files.items()}


def _tree(root):
    """{relative path as bytes: contents} of every file under root; fails on
    anything that is neither a file nor a folder."""
    out = {}
    broot = os.fsencode(root)
    for d, dirs, names in os.walk(broot):
        for n in names:
            full = os.path.join(d, n)
            check(os.path.isfile(full) and not os.path.islink(full),
                  "only regular files extracted: %r" % full)
            with open(full, "rb") as f:
                out[os.path.relpath(full, broot)] = f.read()
    return out


def _same_tree(got, want, tool):
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    check(not missing and not extra,
          "%s extracted other paths than the volume has:\n  missing %r\n  extra %r"
          % (tool, missing[:10], extra[:10]))
    for p, d in want.items():
        eq(sha256(got[p]), sha256(d), "%s: bytes of %r" % (tool, p))


def _extract_with(tool, argv, tgz, want, locale):
    with tempfile.TemporaryDirectory() as tmp:
        arch = os.path.join(tmp, "a.tar.gz")
        with open(arch, "wb") as f:
            f.write(tgz)
        dest = os.path.join(tmp, "x")
        os.mkdir(dest)
        env = dict(os.environ, LC_ALL=locale, LANG=locale)
        r = subprocess.run(argv + [arch, "-C", dest], env=env, capture_output=True,
                           timeout=60 * harness.SCALE)
        check(r.returncode == 0, "%s (LC_ALL=%s) exit %d: %s"
              % (tool, locale, r.returncode, r.stderr.decode(errors="replace")[-800:]))
        _same_tree(_tree(dest), want, "%s (LC_ALL=%s)" % (tool, locale))


def _extract_tarfile(tgz, want):
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz", encoding="utf-8",
                          errors="surrogateescape") as tf:
            names = {m.name.encode("utf-8", "surrogateescape") for m in tf.getmembers()
                     if m.isfile()}
            eq(sorted(names), sorted(want), "member names Python's tarfile reads")
            if hasattr(tarfile, "data_filter"):
                tf.extractall(tmp, filter="data")
            else:
                tf.extractall(tmp)
        _same_tree(_tree(tmp), want, "Python tarfile")


def _health(srv):
    r = expect(srv.get("/v1/health", key=None), 200)
    eq(r.json().get("ok"), True, "health after the archive")
    check(srv.proc.poll() is None, "cofferd still running")


def test_archive_unicode_name_does_not_crash(srv):
    """The bug: one non-ASCII name killed cofferd (SIGSEGV in strlen under
    archive_write_header: libarchive could not convert it to the C locale)."""
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "café.txt", b"x")
    got = _tar(expect(srv.get("/v1/volumes/%s/archive" % vid), 200))
    eq(got, {"café.txt": b"x"}, "archive of one non-ASCII name")
    _health(srv)


@harness.timeout(180)
def test_archive_names_exact_gnu_tar(srv):
    if not shutil.which("tar"):
        harness.skip("GNU tar is not installed (Debian package 'tar')")
    vid, want = _nasty_volume(srv)
    tgz = expect(srv.get("/v1/volumes/%s/archive" % vid), 200).body
    for loc in ("C", "C.UTF-8"):
        _extract_with("GNU tar", ["tar", "-xzf"], tgz, want, loc)
    _health(srv)


@harness.timeout(180)
def test_archive_names_exact_bsdtar(srv):
    if not shutil.which("bsdtar"):
        harness.skip("bsdtar is not installed (Debian package 'libarchive-tools')")
    vid, want = _nasty_volume(srv)
    tgz = expect(srv.get("/v1/volumes/%s/archive" % vid), 200).body
    for loc in ("C", "C.UTF-8"):
        _extract_with("bsdtar", ["bsdtar", "-xf"], tgz, want, loc)
    _health(srv)


def test_archive_names_exact_python_tarfile(srv):
    vid, want = _nasty_volume(srv)
    r = expect(srv.get("/v1/volumes/%s/archive" % vid), 200)
    _extract_tarfile(r.body, want)
    # names relative to path= keep their bytes too
    r = expect(srv.get("/v1/volumes/%s/archive" % vid, query={"path": "dir"}), 200)
    nfc = unicodedata.normalize("NFC", "café.txt").encode()
    nfd = unicodedata.normalize("NFD", "café.txt").encode()
    _extract_tarfile(r.body, {nfc: b"composed in a folder", nfd: b"decomposed in a folder"})
    _health(srv)


def test_archive_ascii_names_have_no_hdrcharset(srv):
    """hdrcharset=BINARY only when a name needs it: GNU tar warns about the keyword
    once per entry, so an all-ASCII archive stays plain (and tar says nothing)."""
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "a.txt", b"a")
    srv.put_ok(vid, "x/" + "y" * 200, b"long")
    raw = _tar_bytes(expect(srv.get("/v1/volumes/%s/archive" % vid), 200).body)
    check(b"hdrcharset" not in raw, "no hdrcharset in an all-ASCII archive")
    srv.put_ok(vid, "ü.txt", b"u")
    raw = _tar_bytes(expect(srv.get("/v1/volumes/%s/archive" % vid), 200).body)
    check(b"hdrcharset=BINARY" in raw, "hdrcharset=BINARY once a name is not ASCII")


def _tar_bytes(tgz):
    import gzip
    return gzip.decompress(tgz)


def test_archive_cli_unicode_volume(srv):
    """`coffer archive` of such a volume: to a file and to a pipe."""
    vid, want = _nasty_volume(srv)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "v.tar.gz")
        r = srv.cli("archive", vid, "-o", out)
        eq(r.returncode, 0, "coffer archive -o exit code (stderr %r)" % r.stderr[-300:])
        with open(out, "rb") as f:
            _extract_tarfile(f.read(), want)
    r = srv.cli("archive", vid)
    eq(r.returncode, 0, "coffer archive to a pipe exit code (stderr %r)" % r.stderr[-300:])
    _extract_tarfile(r.stdout, want)
    _health(srv)


def test_archive_failure_mid_stream_cuts_it_and_cofferd_goes_on():
    """Content shorter than recorded (a truncated blob) fails the archive after the
    headers went out: the stream is cut short (never a whole-looking tar.gz), the
    failure is logged, and cofferd answers the next request."""
    import http.client
    with harness.server() as s:
        vid = s.create_volume()["id"]
        data = os.urandom(300_000)
        s.put_ok(vid, "ok/first.txt", b"first")
        s.put_ok(vid, "zz/big.bin", data)
        blob = s.blob_of_size(len(data))
        os.truncate(blob, 1000)
        try:
            r = s.get("/v1/volumes/%s/archive" % vid)
            body, status = r.body, r.status
        except (http.client.HTTPException, OSError) as e:
            body, status = None, "cut: %s" % type(e).__name__
        if body is not None:
            eq(status, 200, "the archive began")
            try:
                _tar(r)
                whole = True
            except AssertionError:
                whole = False
            check(not whole, "a stream with a failed entry must not look whole")
        _health(s)
        check("archive stream cut" in s.log(), "the failure is logged:\n%s" % s.log()[-2000:])
        got = _tar(expect(s.get("/v1/volumes/%s/archive" % vid, query={"path": "ok"}), 200))
        eq(got, {"first.txt": b"first"}, "an archive without the damaged file still works")
