"""Group commit (docs/design.md "Durability", issue 13 part 2): concurrent writes share a
commit, so one fsync of SQLite's WAL acknowledges many of them, and each write keeps its
own result (a 412 in a batch fails only itself; its error names its own file).

cofferd runs with tests/blackbox/fsynclog preloaded, which logs every fsync and makes
each take 20 ms (a slow disk): writers that arrive during one commit's fsync queue for
the next one, so batches form whatever the machine's load. No timing is measured; the
WAL fsyncs are counted. (That an acknowledged write survives a power cut with many
writers is test_powerloss.py's.)"""

import os
import shutil
import subprocess
import tempfile
import threading

import harness
from harness import check, contains, eq, expect, expect_error, sha256

HERE = os.path.dirname(os.path.abspath(__file__))
DELAY_MS = "20"


def _shim(tmp):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        harness.skip("no C compiler for the fsync shim (build-essential)")
    so = os.path.join(tmp, "fsynclog.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", so,
                    os.path.join(HERE, "fsynclog", "fsynclog.c")], check=True,
                   capture_output=True)
    return so


class _Slow:
    """A server whose fsyncs are logged and slowed; wal_fsyncs() counts those of the
    WAL since mark()."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="coffer-gcommit-")
        self.log = os.path.join(self.tmp, "fsync.log")
        env = None
        if harness.ENGINE != "pg":   # on pg the metadata commits in PostgreSQL's process
            env = {"LD_PRELOAD": _shim(self.tmp), "COFFER_FSYNC_LOG": self.log,
                   "COFFER_FSYNC_DELAY_MS": DELAY_MS,
                   "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
                   ":verify_asan_link_order=0"}
        self.s = harness.server(env=env)
        self.start = 0

    def mark(self):
        self.start = os.path.getsize(self.log) if os.path.exists(self.log) else 0

    def wal_fsyncs(self):
        wal = "fsync " + os.path.realpath(os.path.join(self.s.data, "meta.db")) + "-wal"
        with open(self.log) as f:
            f.seek(self.start)
            return sum(1 for l in f if l.rstrip("\n") == wal)

    def close(self):
        self.s.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _together(n, fn):
    """Runs fn(i) for i < n on n threads released at once; returns their results (an
    exception's repr in place of a result)."""
    out, gate = [None] * n, threading.Barrier(n)

    def run(i):
        try:
            gate.wait(30)
            out[i] = fn(i)
        except Exception as e:  # reported by the caller's checks
            out[i] = repr(e)
    ths = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120 * harness.SCALE)
    return out


def _data(i, j):
    seed = ("writer %d file %d;" % (i, j)).encode()
    return (seed * (4096 // len(seed) + 1))[:4096]


def test_concurrent_writes_share_wal_fsyncs():
    if harness.ENGINE == "pg":
        harness.skip("embedded store only: on PostgreSQL the commits group in its own WAL")
    slow = _Slow()
    try:
        s = slow.s
        vid = s.create_volume()["id"]
        writers, each = 16, 6

        def write(i):
            return [s.put_file(vid, "w%d/f%d.txt" % (i, j), _data(i, j), timeout=60).status
                    for j in range(each)]
        slow.mark()
        statuses = _together(writers, write)
        eq(statuses, [[201] * each] * writers, "every write acknowledged")
        n = slow.wal_fsyncs()
        check(n <= writers * each // 2,
              "%d concurrent writes of 4 KiB took %d WAL fsyncs: commits are not grouped"
              % (writers * each, n))
        check(n >= 1, "the writes commit (no WAL fsync logged)")
        for i in range(writers):
            for j in range(each):
                r = expect(s.get_file(vid, "w%d/f%d.txt" % (i, j)), 200)
                eq(sha256(r.body), sha256(_data(i, j)), "w%d/f%d.txt reads back" % (i, j))
        eq(s.seq(vid), writers * each, "one change each")
    finally:
        slow.close()


def test_refused_writes_in_a_batch_fail_only_themselves():
    slow = _Slow()
    try:
        s = slow.s
        vid = s.create_volume()["id"]
        n = 12
        ver = [s.put_ok(vid, "p%d.txt" % i, b"base %d" % i)["version"] for i in range(n)]

        # per path: one write that holds (If-Match its version), one with a version it
        # never had, one If-None-Match: * on a file that exists, and a new file
        def req(k):
            i, kind = k // 4, k % 4
            if kind == 0:
                r = s.put_file(vid, "p%d.txt" % i, b"won %d" % i,
                               headers={"If-Match": '"%d"' % ver[i]}, timeout=60)
            elif kind == 1:
                r = s.put_file(vid, "p%d.txt" % i, b"stale %d" % i,
                               headers={"If-Match": '"%d"' % (ver[i] + 1000)}, timeout=60)
            elif kind == 2:
                r = s.put_file(vid, "p%d.txt" % i, b"exists %d" % i,
                               headers={"If-None-Match": "*"}, timeout=60)
            else:
                r = s.put_file(vid, "new%d.txt" % i, b"new %d" % i,
                               headers={"If-None-Match": "*"}, timeout=60)
            return r
        slow.mark()
        out = _together(4 * n, req)
        seqs = []
        for k, r in enumerate(out):
            i, kind = k // 4, k % 4
            check(not isinstance(r, str), "request %d: %s" % (k, r))
            if kind in (1, 2):
                expect_error(r, 412, "precondition_failed")
                contains(r.error["message"], "'p%d.txt'" % i, "the 412 names its own file")
                won = out[4 * i].json().get("version") if out[4 * i].status == 200 else None
                check(r.error["current"]["version"] in (ver[i], won),
                      "p%d.txt's current version %r: %d before, %r after the write that "
                      "holds" % (i, r.error["current"], ver[i], won))
            else:
                body = expect(r, 200 if kind == 0 else 201).json()
                seqs.append(body["seq"])
        eq(len(set(seqs)), 2 * n, "each acknowledged write has a seq of its own")
        for i in range(n):
            eq(expect(s.get_file(vid, "p%d.txt" % i), 200).body, b"won %d" % i,
               "p%d.txt holds the write whose precondition held" % i)
            eq(expect(s.get_file(vid, "new%d.txt" % i), 200).body, b"new %d" % i,
               "new%d.txt stored" % i)
        eq(s.seq(vid), n + 2 * n, "the refused writes made no change")
        if harness.ENGINE != "pg":
            check(slow.wal_fsyncs() < 2 * n,
                  "%d acknowledged writes in %d WAL fsyncs: the refusals did not share a "
                  "batch with them" % (2 * n, slow.wal_fsyncs()))
    finally:
        slow.close()


def test_concurrent_conditional_writers_get_sequential_results():
    """8 writers of one volume through one node (on PostgreSQL one batch, its members
    each under a savepoint) get what the same writes one after the other would: of 8
    If-None-Match: * creates of one path, one 201 and seven 412s; of 8 to paths of their
    own, 8 201s with dense, distinct seqs, each listed once in the changes feed."""
    s = harness.server()
    try:
        vid = s.create_volume()["id"]
        writers = 8
        for rnd in range(3):
            path = "same%d.txt" % rnd
            out = _together(writers, lambda i: s.put_file(
                vid, path, b"writer %d" % i, headers={"If-None-Match": "*"}, timeout=60))
            for r in out:
                check(not isinstance(r, str), "request: %s" % (r,))
            won = [i for i, r in enumerate(out) if r.status == 201]
            eq(len(won), 1, "round %d: one create of %s wins (statuses %s)"
               % (rnd, path, [r.status for r in out]))
            for i, r in enumerate(out):
                if i != won[0]:
                    expect_error(r, 412, "precondition_failed")
            eq(expect(s.get_file(vid, path), 200).body, b"writer %d" % won[0],
               "%s holds the winner's bytes" % path)
        base = s.seq(vid)
        eq(base, 3, "the refused creates made no change")

        for rnd in range(3):
            before = s.seq(vid)
            out = _together(writers, lambda i: s.put_file(
                vid, "r%d/w%d.txt" % (rnd, i), b"round %d writer %d" % (rnd, i),
                headers={"If-None-Match": "*"}, timeout=60))
            seqs = []
            for i, r in enumerate(out):
                check(not isinstance(r, str), "request %d: %s" % (i, r))
                seqs.append(expect(r, 201).json()["seq"])
            eq(sorted(seqs), list(range(before + 1, before + writers + 1)),
               "round %d: dense, distinct seqs" % rnd)
            j = expect(s.get("/v1/volumes/%s/changes" % vid, query={"since": before}),
                       200).json()
            got = [(c["seq"], c["path"]) for c in j["changes"]]
            eq(sorted(got), sorted((seqs[i], "r%d/w%d.txt" % (rnd, i))
                                   for i in range(writers)),
               "round %d: the feed lists each write once, at its seq" % rnd)
            eq([c["seq"] for c in j["changes"]], sorted(seqs), "the feed in seq order")
            for i in range(writers):
                eq(expect(s.get_file(vid, "r%d/w%d.txt" % (rnd, i)), 200).body,
                   b"round %d writer %d" % (rnd, i), "r%d/w%d.txt reads back" % (rnd, i))
        eq(s.seq(vid), base + 3 * writers, "one change each")
    finally:
        s.close()


def test_concurrent_writers_past_the_ceiling_refused_alone():
    """8 writers of 200 KiB to a volume with a 1 MiB ceiling, at once, in three rounds
    that each overwrite their own files: the writes that fit are stored, the rest are
    refused (400, the ceiling) after their change wrote (each undoes itself alone, the
    others of its batch kept), and the volume's counts are exactly what was kept."""
    s = harness.server()
    try:
        r = s.post("/v1/volumes", json={"name": "small", "ceiling": 1048576})
        vid = expect(r, 201).json()["id"]
        writers, size = 8, 200 * 1024
        datas = [os.urandom(size) for _ in range(writers)]
        out = _together(writers, lambda i: s.put_file(vid, "big%d.bin" % i, datas[i],
                                                      timeout=60))
        kept = []
        for i, r in enumerate(out):
            check(not isinstance(r, str), "request %d: %s" % (i, r))
            if r.status == 201:
                kept.append(i)
            else:
                expect_error(r, 400, "validation_error", mentions="ceiling")
        eq(len(kept), 1048576 // size, "the writes that fit are kept (statuses %s)"
           % [r.status for r in out])
        v = s.volume(vid)
        eq((v["files"], v["bytes"], v["seq"]), (len(kept), len(kept) * size, len(kept)),
           "files, bytes, seq count the kept writes only")
        for i in range(writers):
            if i in kept:
                eq(sha256(expect(s.get_file(vid, "big%d.bin" % i), 200).body),
                   sha256(datas[i]), "big%d.bin reads back" % i)
            else:
                expect_error(s.get_file(vid, "big%d.bin" % i), 404)
        # overwrites of the kept files in place still fit, all at once
        out = _together(len(kept), lambda j: s.put_file(
            vid, "big%d.bin" % kept[j], datas[kept[j]][::-1], timeout=60))
        for r in out:
            check(not isinstance(r, str), "request: %s" % (r,))
            expect(r, 200)
        v = s.volume(vid)
        eq((v["files"], v["bytes"], v["seq"]), (len(kept), len(kept) * size, 2 * len(kept)),
           "overwrites keep the counts")
    finally:
        s.close()


def test_concurrent_writers_of_a_fork_and_of_a_deleted_volume():
    """A batch's writers of a fork (whose checks read its chain) and of a volume being
    deleted (its row lock finds it gone). 8 writers of a fork at once, in rounds: the files of the fork
    and of its parent read right, overwrites of the parent's files included, seqs
    dense. Then 8 writers while the volume is deleted: each gets 201 or 404, nothing
    else, and what answered 201 before the delete is what the volume held."""
    s = harness.server()
    try:
        vid = s.create_volume()["id"]
        for i in range(4):
            s.put_ok(vid, "d/base%d.txt" % i, b"parent %d" % i)
        fid = expect(s.post("/v1/volumes/%s/fork" % vid, json={}), 201).json()["id"]
        writers = 8
        for rnd in range(3):
            before = s.seq(fid)
            # half overwrite the parent's files (a conditional create of them fails),
            # half create files of their own
            out = _together(writers, lambda i: s.put_file(
                fid, "d/base%d.txt" % (i % 4) if i < 4 else "d/r%d/w%d.txt" % (rnd, i),
                b"fork round %d writer %d" % (rnd, i),
                headers={"If-None-Match": "*"} if (i < 4 and rnd == 0) else {},
                timeout=60))
            seqs = []
            for i, r in enumerate(out):
                check(not isinstance(r, str), "request %d: %s" % (i, r))
                if i < 4 and rnd == 0:
                    expect_error(r, 412, "precondition_failed")
                else:
                    seqs.append(expect(r, 200 if i < 4 else 201).json()["seq"])
            eq(sorted(seqs), list(range(before + 1, before + len(seqs) + 1)),
               "round %d: dense, distinct seqs in the fork" % rnd)
            for i in range(writers):
                path = "d/base%d.txt" % (i % 4) if i < 4 else "d/r%d/w%d.txt" % (rnd, i)
                want = (b"parent %d" % i if rnd == 0 else b"fork round %d writer %d"
                        % (rnd, i)) if i < 4 else b"fork round %d writer %d" % (rnd, i)
                eq(expect(s.get_file(fid, path), 200).body, want,
                   "round %d: %s reads back in the fork" % (rnd, path))
        for i in range(4):
            eq(expect(s.get_file(vid, "d/base%d.txt" % i), 200).body, b"parent %d" % i,
               "the parent's d/base%d.txt is its own" % i)

        gone = s.create_volume()["id"]
        s.put_ok(gone, "first.txt", b"first")
        gate = threading.Event()

        def write(i):
            st = []
            for j in range(6):
                if i == 0 and j == 2:
                    st.append(("delete", s.delete("/v1/volumes/%s" % gone).status))
                    gate.set()
                    continue
                st.append(("put", s.put_file(gone, "w%d/f%d.txt" % (i, j), b"x",
                                             timeout=60).status))
            return st
        out = _together(writers, write)
        for i, st in enumerate(out):
            check(not isinstance(st, str), "writer %d: %s" % (i, st))
            for kind, code in st:
                check(code in ((204,) if kind == "delete" else (201, 404)),
                      "writer %d: a %s answered %d: %s" % (i, kind, code, st))
        check(gate.is_set(), "the volume was deleted")
        expect_error(s.get("/v1/volumes/%s" % gone), 404)
        expect_error(s.put_file(gone, "after.txt", b"x"), 404)
    finally:
        s.close()
