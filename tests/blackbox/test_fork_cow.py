"""Copy-on-write forks (docs/design.md, "Forks"): a fork refers to its parent at a seq.
Forks of forks with writes and deletes on every level, compared with plain volumes holding
copies of the same files (listings paged and by prefix, reads, changes, counts); a chain
deeper than the bound (copied there); GC after deletes in a parent and after deleting the
parent itself (content a fork still names stays, then goes with the last fork); fsck clean;
restore of a fork to a seq before and after a parent write; versions and conditional writes
of inherited files; archive and read-all of a fork at a snapshot."""

import io
import os
import random
import tarfile

import harness
from harness import check, eq, expect, expect_error, sha256

SERVER_OPTS = {"gc_grace": 1}
TIMEOUT = 180
BIG = 300 * 1024  # stored in the blob store, not inline


def fork(srv, vid, **body):
    return expect(srv.post("/v1/volumes/%s/fork" % vid, json=body), 201).json()


def listing(srv, vid, page=7, **q):
    """{path: (sha256, size, version)} read in pages of `page` with the cursor."""
    out, cursor = {}, None
    while True:
        query = dict(q, limit=page)
        if cursor:
            query["cursor"] = cursor
        r = srv.list_files(vid, **query)
        for f in r["files"]:
            check(f["path"] not in out, "path listed twice across pages: %s" % f["path"])
            out[f["path"]] = (f["sha256"], f["size"], f["version"])
        check(len(r["files"]) <= page, "a page holds at most `limit` files")
        cursor = r.get("cursor")
        if not cursor:
            return out


def plain(files):
    return {p: (s, n) for p, (s, n, _) in files.items()}


def model_view(model):
    return {p: (sha256(d), len(d)) for p, d in model.items()}


def changes(srv, vid, since):
    r = expect(srv.get("/v1/volumes/%s/changes" % vid, query={"since": since}), 200).json()
    return [(c["op"], c["path"], c.get("sha256")) for c in r["changes"]]


def edit(srv, vid, model, rnd, tag, n=6):
    """n random writes (new paths and overwrites) and removes on `vid` and its model."""
    for _ in range(n):
        paths = sorted(model)
        if paths and rnd.random() < 0.4:
            p = rnd.choice(paths)
            expect(srv.delete(srv.file_path(vid, p)), 200, 204)
            del model[p]
        else:
            p = rnd.choice(paths) if paths and rnd.random() < 0.5 else \
                "d%d/f%03d.txt" % (rnd.randrange(3), rnd.randrange(200))
            data = ("%s %s %d" % (tag, p, rnd.randrange(10 ** 9))).encode()
            srv.put_ok(vid, p, data)
            model[p] = data


def check_same(srv, vid, ref, model, what):
    got = listing(srv, vid)
    eq(plain(got), model_view(model), "%s: listing as the model" % what)
    eq(plain(got), plain(listing(srv, ref, page=1000)), "%s: listing as its copy's" % what)
    for pre in ("d1/", "d2/f1"):
        eq(plain(listing(srv, vid, page=3, prefix=pre)),
           {p: v for p, v in model_view(model).items() if p.startswith(pre)},
           "%s: listing under %r" % (what, pre))
    for p, d in model.items():
        eq(expect(srv.get_file(vid, p), 200).body, d, "%s: read of %s" % (what, p))
    v = srv.volume(vid)
    eq((v["files"], v["bytes"]), (len(model), sum(len(d) for d in model.values())),
       "%s: the volume's files and bytes" % what)


def edit_both(srv, vid, ref, model, rnd, tag, n=6):
    """The same random edits on `vid` and on `ref` (its copy); the model follows."""
    before = dict(model)
    state = rnd.getstate()
    edit(srv, vid, model, rnd, tag, n)
    rnd.setstate(state)
    edit(srv, ref, before, rnd, tag, n)
    eq(before, model, "the copy got the same edits")


def test_forks_of_forks_match_copies(srv):
    rnd = random.Random(13)
    root = srv.create_volume("cow-root")["id"]
    ref0 = srv.create_volume("cow-ref-0")["id"]
    model = {}
    edit_both(srv, root, ref0, model, rnd, "root", n=25)
    vols = [(root, ref0, model)]
    since = {}
    for level in range(1, 5):
        parent, pref, pmodel = vols[-1]
        at_fork = listing(srv, parent, page=1000)
        f = fork(srv, parent, name="cow-%d" % level)
        eq((f["files"], f["bytes"]), (len(pmodel), sum(len(d) for d in pmodel.values())),
           "level %d: the fork's counts at fork time" % level)
        eq(listing(srv, f["id"]), at_fork,
           "level %d: a new fork lists its parent's files with their versions" % level)
        ref = srv.create_volume("cow-ref-%d" % level)["id"]
        srv.put_many(ref, dict(pmodel))
        since[f["id"]], since[ref] = f["seq"], srv.seq(ref)
        vols.append((f["id"], ref, dict(pmodel)))
        # the parent moves on after the fork: the fork does not see it
        edit_both(srv, parent, pref, pmodel, rnd, "after-fork-%d" % level)
        check_same(srv, f["id"], ref, vols[-1][2], "level %d after a parent write" % level)
    for rnd_no in range(3):
        for level, (vid, ref, m) in enumerate(vols):
            edit_both(srv, vid, ref, m, rnd, "r%d-l%d" % (rnd_no, level))
        for level, (vid, ref, m) in enumerate(vols):
            check_same(srv, vid, ref, m, "round %d level %d" % (rnd_no, level))
    # a fork's feed holds its own changes only, as its copy's does after the copy
    for level, (vid, ref, m) in enumerate(vols[1:], 1):
        mine = changes(srv, vid, since[vid])
        # 3 rounds of 6 edits, and 6 more as the parent of the next level
        eq(len(mine), 18 + (6 if level < len(vols) - 1 else 0),
           "level %d: the fork's own changes are in its feed" % level)
        eq(mine, changes(srv, ref, since[ref]), "level %d: the fork's feed as its copy's"
           % level)
        expect_error(srv.get("/v1/volumes/%s/changes" % vid,
                             query={"since": since[vid] - 1}), 410)


def test_chain_past_the_depth_bound(srv):
    vid = srv.create_volume("deep")["id"]
    srv.put_ok(vid, "keep.txt", b"root")
    srv.put_ok(vid, "gone.txt", b"removed at level 4")
    model = {"keep.txt": b"root", "gone.txt": b"removed at level 4"}
    chain = [vid]
    for level in range(1, 13):   # past COF_FORK_DEPTH (8): one fork there is a copy
        f = fork(srv, chain[-1])["id"]
        srv.put_ok(f, "l%02d.txt" % level, b"level %d" % level)
        model["l%02d.txt" % level] = b"level %d" % level
        if level == 4:
            expect(srv.delete(srv.file_path(f, "gone.txt")), 200, 204)
            del model["gone.txt"]
        if level == 6:
            srv.put_ok(f, "keep.txt", b"six")
            model["keep.txt"] = b"six"
        # the parent writes over what the child inherited: no effect on the child
        srv.put_ok(chain[-1], "keep.txt", b"parent after fork %d" % level)
        chain.append(f)
    last = chain[-1]
    eq(plain(listing(srv, last)), model_view(model), "a fork 12 deep lists its chain")
    for p, d in model.items():
        eq(expect(srv.get_file(last, p), 200).body, d, "read of %s 12 deep" % p)
    expect_error(srv.get_file(last, "gone.txt"), 404)


def test_fork_listing_across_the_stores_pages(srv):
    """A fork's listing is read in pages of 512 rows a level (meta_read.c): a chain of
    two forks over 1,300 files, with overwrites, whiteouts and new paths on every
    level on both sides of each page's end, lists as its model whole, in API pages
    and under a prefix. (Listings at a seq: test_files_seq; this module's grace is 1 s.)"""
    root = srv.create_volume("pages-root")["id"]
    model = {"d/f%04d.txt" % i: b"root %d" % i for i in range(1300)}
    srv.put_many(root, model)
    f1 = fork(srv, root)
    eq(plain(listing(srv, f1["id"], page=1000)), model_view(model), "a new fork lists its parent")
    srv.put_many(f1["id"], {"d/f%04d.txt" % i: b"one %d" % i for i in range(0, 1300, 7)})
    srv.put_many(f1["id"], {"d/f%04da.txt" % i: b"new %d" % i for i in range(0, 1300, 11)})
    for i in range(3, 1300, 5):
        expect(srv.delete(srv.file_path(f1["id"], "d/f%04d.txt" % i)), 200, 204)
    m1 = dict(model)
    m1.update({"d/f%04d.txt" % i: b"one %d" % i for i in range(0, 1300, 7)})
    m1.update({"d/f%04da.txt" % i: b"new %d" % i for i in range(0, 1300, 11)})
    for i in range(3, 1300, 5):
        del m1["d/f%04d.txt" % i]
    f2 = fork(srv, f1["id"])["id"]
    m2 = dict(m1)
    for i in range(0, 1300, 13):   # overwrite, restore a whiteout, or remove
        p = "d/f%04d.txt" % i
        if i % 2:
            srv.put_ok(f2, p, b"two %d" % i)
            m2[p] = b"two %d" % i
        elif p in m2:
            expect(srv.delete(srv.file_path(f2, p)), 200, 204)
            del m2[p]
    for vid, m, what in ((f1["id"], m1, "a fork"), (f2, m2, "a fork of a fork")):
        eq(plain(listing(srv, vid, page=1000)), model_view(m), "%s lists its model" % what)
        eq(plain(listing(srv, vid, page=97)), model_view(m), "%s in pages of 97" % what)
        eq(plain(listing(srv, vid, page=50, prefix="d/f09")),
           {p: v for p, v in model_view(m).items() if p.startswith("d/f09")},
           "%s under a prefix" % what)


def test_conditional_writes_and_versions_on_a_fork(srv):
    src = srv.create_volume()["id"]
    v1 = srv.put_ok(src, "f.txt", b"one")["version"]
    srv.put_ok(src, "g.txt", b"gee")
    f = fork(srv, src)["id"]
    eq(expect(srv.get_file(f, "f.txt"), 200).header("ETag"), '"%d"' % v1,
       "an inherited file keeps its version")
    expect(srv.put_file(f, "g.txt", b"x", headers={"If-None-Match": "*"}), 412)
    expect(srv.put_file(f, "f.txt", b"stale", headers={"If-Match": '"%d"' % (v1 + 50)}), 412)
    v2 = expect(srv.put_file(f, "f.txt", b"two", headers={"If-Match": '"%d"' % v1}),
                200).json()["version"]
    check(v2 > v1, "the fork's write has a new version")
    eq(expect(srv.get_file(src, "f.txt"), 200).body, b"one", "the parent keeps its version")
    expect(srv.delete(srv.file_path(f, "g.txt")), 200, 204)
    expect_error(srv.get_file(f, "g.txt"), 404)
    expect_error(srv.delete(srv.file_path(f, "g.txt")), 404)
    expect(srv.put_file(f, "g.txt", b"again", headers={"If-None-Match": "*"}), 200, 201)
    eq(expect(srv.get_file(src, "g.txt"), 200).body, b"gee", "the parent keeps g.txt")
    # a move of an inherited file
    expect(srv.post("/v1/volumes/%s/move" % f, json={"from": "f.txt", "to": "m/f.txt"}), 200)
    eq(sorted(listing(srv, f)), ["g.txt", "m/f.txt"], "the fork after a move")
    eq(sorted(listing(srv, src)), ["f.txt", "g.txt"], "the parent after the fork's move")


def test_restore_fork_to_a_seq_before_and_after_a_parent_write(srv):
    src = srv.create_volume()["id"]
    srv.put_ok(src, "a.txt", b"a1")
    srv.put_ok(src, "b.txt", b"b1")
    f = fork(srv, src)["id"]
    at_fork = srv.snapshot(f)              # the fork as forked: all inherited
    srv.put_ok(src, "a.txt", b"a2 parent")  # a parent write after the fork
    srv.put_ok(f, "b.txt", b"b2 fork")
    expect(srv.delete(srv.file_path(f, "a.txt")), 200, 204)
    srv.put_ok(f, "c.txt", b"c fork")
    later = srv.snapshot(f)
    srv.put_ok(src, "b.txt", b"b3 parent")
    srv.put_ok(f, "c.txt", b"c2 fork")
    r = expect(srv.post("/v1/volumes/%s/restore" % f, json={"snapshot": at_fork["id"]}),
               200).json()
    eq((r["written"], r["removed"]), (2, 1), "restore to the fork point: a, b back; c gone")
    eq({p: expect(srv.get_file(f, p), 200).body for p in listing(srv, f)},
       {"a.txt": b"a1", "b.txt": b"b1"}, "the fork as at its fork point")
    r = expect(srv.post("/v1/volumes/%s/restore" % f, json={"snapshot": later["id"]}),
               200).json()
    eq({p: expect(srv.get_file(f, p), 200).body for p in listing(srv, f)},
       {"b.txt": b"b2 fork", "c.txt": b"c fork"}, "the fork as at its later snapshot")
    eq({p: expect(srv.get_file(src, p), 200).body for p in listing(srv, src)},
       {"a.txt": b"a2 parent", "b.txt": b"b3 parent"}, "the parent untouched by restores")
    # a fork of the fork's snapshot, and reads at the snapshot
    g = fork(srv, f, snapshot=at_fork["id"])
    eq((g["files"], g["bytes"]), (2, 4), "a fork from a snapshot of a fork: its counts")
    eq(expect(srv.get_file(g["id"], "a.txt"), 200).body, b"a1", "fork of a fork's snapshot")
    eq(expect(srv.get_file(f, "b.txt", query={"snapshot": later["id"]}), 200).body,
       b"b2 fork", "read of a fork at its snapshot")


def test_archive_and_read_all_of_a_fork(srv):
    src = srv.create_volume()["id"]
    srv.put_many(src, {"t/%d.txt" % i: b"file %d" % i for i in range(20)})
    f = fork(srv, src)["id"]
    expect(srv.delete(srv.file_path(f, "t/3.txt")), 200, 204)
    srv.put_ok(f, "t/5.txt", b"five in the fork")
    snap = srv.snapshot(f)
    srv.put_ok(f, "t/6.txt", b"after the snapshot")
    want = {"t/%d.txt" % i: b"file %d" % i for i in range(20) if i != 3}
    want["t/5.txt"] = b"five in the fork"
    r = expect(srv.get("/v1/volumes/%s/archive" % f, query={"snapshot": snap["id"]}), 200)
    with tarfile.open(fileobj=io.BytesIO(r.body), mode="r:gz") as t:
        got = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    eq(got, want, "the archive of a fork at its snapshot")
    r = srv.list_files(f, snapshot=snap["id"], content="true")
    eq(len(r["files"]), len(want), "read-all of a fork at its snapshot: the files")


def _run_gc(srv):
    import time
    time.sleep(2.1)
    exe = harness.coffer_binary()
    if not exe:
        harness.skip("needs build/coffer for gc and fsck")
    import subprocess
    p = subprocess.run([exe, "gc", "--data", srv.data, "--grace", "1"], capture_output=True,
                       timeout=60 * harness.SCALE)
    check(p.returncode == 0, "coffer gc: %s" % p.stderr.decode(errors="replace")[-2000:])


def _fsck_ok(srv):
    import json
    import subprocess
    p = subprocess.run([harness.coffer_binary(), "fsck", "--data", srv.data, "--json"],
                       capture_output=True, timeout=120 * harness.SCALE)
    j = json.loads(p.stdout.decode() or "{}")
    eq(j.get("ok"), True, "fsck clean: %r" % j)


def _blobs(srv):
    """The stored content files, on either blob store (harness blob_files)."""
    return {os.path.basename(f) for f in srv.blob_files()}


def test_gc_keeps_what_forks_name_and_frees_it_with_them(srv):
    src = srv.create_volume()["id"]
    big = {"k%d.bin" % i: os.urandom(BIG) for i in range(3)}
    srv.put_many(src, big)
    f1 = fork(srv, src)["id"]
    f2 = fork(srv, f1)["id"]
    # deletes and overwrites in the parent, after the forks
    expect(srv.delete(srv.file_path(src, "k0.bin")), 200, 204)
    srv.put_ok(src, "k1.bin", os.urandom(BIG))
    expect(srv.delete(srv.file_path(f1, "k2.bin")), 200, 204)
    _run_gc(srv)
    for name, data in big.items():
        eq(sha256(expect(srv.get_file(f2, name), 200).body), sha256(data),
           "content a fork of a fork names survives GC: %s" % name)
    _fsck_ok(srv)
    # the parent and the middle fork deleted: the leaf still reads everything, and
    # what only the parent named after the forks (its new k1.bin) goes
    stored = _blobs(srv)
    expect(srv.delete("/v1/volumes/%s" % src), 200, 204)
    expect(srv.delete("/v1/volumes/%s" % f1), 200, 204)
    expect_error(srv.get("/v1/volumes/%s" % src), 404)
    expect_error(srv.get_file(f1, "k1.bin"), 404)
    ids = [v["id"] for v in expect(srv.get("/v1/volumes"), 200).json()["volumes"]]
    check(src not in ids and f1 not in ids, "deleted parents are not listed")
    _run_gc(srv)
    for name, data in big.items():
        eq(sha256(expect(srv.get_file(f2, name), 200).body), sha256(data),
           "after deleting its parents, a fork keeps %s" % name)
    eq(len(stored - _blobs(srv)), 1,
       "a deleted parent's content no fork reads is collected")
    _fsck_ok(srv)
    # the last fork goes: its content goes too
    before = _blobs(srv)
    expect(srv.delete("/v1/volumes/%s" % f2), 200, 204)
    _run_gc(srv)
    _run_gc(srv)
    eq(len(before - _blobs(srv)), len(big),
       "the content only the deleted chain named is collected (and nothing else)")
    _fsck_ok(srv)


def test_fork_of_a_files_snapshot_outlives_it(srv):
    vid = srv.create_volume()["id"]
    srv.put_ok(vid, "live.txt", b"live")
    given = expect(srv.post("/v1/volumes/%s/snapshots" % vid,
                            json={"files": {"g/a.txt": "given a", "g/b.txt": "given b"}}),
                   201).json()
    f = fork(srv, vid, snapshot=given["id"])
    eq((f["files"], f["bytes"]), (2, 14), "a fork of a files-snapshot: its counts")
    expect(srv.delete(srv.file_path(f["id"], "g/a.txt")), 200, 204)
    g = fork(srv, f["id"])
    # the snapshot (its hidden volume) and then the volume deleted: the forks live on
    expect(srv.delete("/v1/volumes/%s/snapshots/%s" % (vid, given["id"])), 200, 204)
    eq(expect(srv.get_file(f["id"], "g/b.txt"), 200).body, b"given b", "after the snapshot")
    expect(srv.delete("/v1/volumes/%s" % vid), 200, 204)
    _run_gc(srv)
    eq(sorted(listing(srv, g["id"])), ["g/b.txt"], "a fork of the fork after both went")
    eq(expect(srv.get_file(g["id"], "g/b.txt"), 200).body, b"given b", "read after GC")
    _fsck_ok(srv)
    expect(srv.delete("/v1/volumes/%s" % f["id"]), 200, 204)
    expect(srv.delete("/v1/volumes/%s" % g["id"]), 200, 204)
    _fsck_ok(srv)
