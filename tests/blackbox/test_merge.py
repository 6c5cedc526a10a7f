"""Merge (issue 37 item 1; API.md "Merge, history, who changed what, revert"; docs/api.md
"Merge"): POST /v1/volumes/{id}/merge brings `from`'s changes since the common base (fork
point, last merge or `base`) into this volume per path as one change: one side only, the
same on both, text merged by lines (libgit2), conflicts (content, remove-change, type) with
markers, 409 with nothing changed, resolutions of each kind, strategy, dryRun, ifSeq 412,
merging again brings only what is new, limits at their edges, read-only keys and tenancy.
A model-based test checks random edits on both sides of a fork against a reference, and
random (overlapping too) line edits against `git merge-file`."""

import base64
import random

import harness
from harness import check, eq, expect, expect_error, sha256

TIMEOUT = 600
BIG = 300 * 1024  # in the blob store, not inline


def fork(srv, vid, **body):
    return expect(srv.post("/v1/volumes/%s/fork" % vid, json=body), 201).json()["id"]


def merge(srv, vid, key=None, timeout=None, **body):
    """POST .../merge with `body`; `timeout` (s, times SCALE) for the merges of tens of
    MiB of text, which a loaded machine (both test passes at once) can take past the
    default 30 s over."""
    kw = {} if key is None else {"key": key}
    return srv.post("/v1/volumes/%s/merge" % vid, json=body, timeout=timeout, **kw)


def merged(srv, vid, timeout=None, **body):
    return expect(merge(srv, vid, timeout=timeout, **body), 200).json()


def content(srv, vid):
    """{path: bytes} of the volume now."""
    out = {}
    for f in srv.list_files(vid)["files"]:
        out[f["path"]] = expect(srv.get_file(vid, f["path"]), 200).body
    return out


def rm(srv, vid, path):
    expect(srv.delete(srv.file_path(vid, path)), 200, 204)


def lines(n, tag):
    return "".join("%s line %d\n" % (tag, i) for i in range(n)).encode()


def edit_line(data, i, text):
    ls = data.decode().splitlines(True)
    ls[i] = text + "\n"
    return "".join(ls).encode()


def pair(srv, files):
    """A volume holding `files` and a fork of it: (ours, theirs)."""
    ours = srv.create_volume()["id"]
    for p, d in files.items():
        srv.put_ok(ours, p, d)
    return ours, fork(srv, ours)


def by_path(answer):
    return {m["path"]: m["from"] for m in answer["merged"]}


def test_clean_merge_both_directions_one_change(srv):
    ours, theirs = pair(srv, {"a.txt": b"a", "b.txt": b"b", "big.bin": b"\0" * BIG,
                              "gone.txt": b"g"})
    srv.put_ok(ours, "a.txt", b"ours a")
    srv.put_ok(theirs, "b.txt", b"theirs b")
    srv.put_ok(theirs, "new/t.txt", b"new")
    srv.put_ok(theirs, "big.bin", b"\1" * BIG)
    rm(srv, theirs, "gone.txt")
    before = srv.seq(ours)
    r = merged(srv, ours, **{"from": theirs})
    eq(r["seq"], before + 1, "the merge is one change")
    eq(r["conflicts"], [], "no conflicts")
    eq(by_path(r), {"b.txt": "theirs", "new/t.txt": "theirs", "big.bin": "theirs",
                    "gone.txt": "theirs"}, "merged paths")
    eq(content(srv, ours), {"a.txt": b"ours a", "b.txt": b"theirs b", "new/t.txt": b"new",
                            "big.bin": b"\1" * BIG}, "merged volume")
    ch = expect(srv.get("/v1/volumes/%s/changes" % ours, query={"since": before}), 200).json()
    seqs = {c["seq"] for c in ch["changes"]}
    eq(seqs, {before + 1}, "one seq in the feed")
    eq(sorted(c["path"] for c in ch["changes"]), ["b.txt", "big.bin", "gone.txt", "new/t.txt"],
       "the feed names each path, the removal too")
    # the other way: the parent's change into the fork
    r = merged(srv, theirs, **{"from": ours})
    eq(by_path(r), {"a.txt": "theirs"}, "fork takes the parent's change")
    eq(content(srv, theirs)["a.txt"], b"ours a", "fork has it")


def test_same_change_on_both_and_nothing_new(srv):
    ours, theirs = pair(srv, {"a.txt": b"a"})
    srv.put_ok(ours, "a.txt", b"same")
    srv.put_ok(theirs, "a.txt", b"same")
    seq = srv.seq(ours)
    r = merged(srv, ours, **{"from": theirs})
    eq((r["seq"], r["conflicts"], by_path(r)), (seq, [], {}),
       "the same change on both: ours has it, nothing written")
    eq(srv.seq(ours), seq, "no change made")


def test_text_merge_and_overlap_conflict(srv):
    base = lines(20, "base")
    ours, theirs = pair(srv, {"t.txt": base, "o.txt": base})
    srv.put_ok(ours, "t.txt", edit_line(base, 1, "ours edit"))
    srv.put_ok(theirs, "t.txt", edit_line(base, 15, "theirs edit"))
    r = merged(srv, ours, **{"from": theirs})
    eq(by_path(r), {"t.txt": "merged"}, "text merged")
    eq(content(srv, ours)["t.txt"], edit_line(edit_line(base, 1, "ours edit"), 15, "theirs edit"),
       "both line edits")
    # overlapping edit: 409 with markers, nothing changed
    srv.put_ok(ours, "o.txt", edit_line(base, 3, "ours three"))
    srv.put_ok(theirs, "o.txt", edit_line(base, 3, "theirs three"))
    srv.put_ok(theirs, "clean.txt", b"would come")
    seq = srv.seq(ours)
    e = expect_error(merge(srv, ours, **{"from": theirs}), 409, mentions="conflict")
    eq(len(e["conflicts"]), 1, "one conflict: %r" % e)
    c = e["conflicts"][0]
    eq((c["path"], c["kind"]), ("o.txt", "content"), "conflict path and kind")
    for side, data in (("base", base), ("ours", edit_line(base, 3, "ours three")),
                       ("theirs", edit_line(base, 3, "theirs three"))):
        eq((c[side]["sha256"], c[side]["size"]), (sha256(data), len(data)), side)
        check(c[side]["version"] > 0, "version of " + side)
    for m in ("<<<<<<< ours", "ours three", "=======", "theirs three", ">>>>>>> theirs"):
        check(m in c["merged"], "markers: %r in %r" % (m, c["merged"]))
    eq(srv.seq(ours), seq, "nothing changed on a conflict")
    check("clean.txt" not in content(srv, ours), "not even the clean paths")


def test_resolutions_each_kind_and_strategy(srv):
    base = lines(5, "b")
    files = {p: base for p in ("o", "t", "b", "x", "d")}
    ours, theirs = pair(srv, files)
    for p in files:
        srv.put_ok(ours, p, edit_line(base, 2, "O" + p))
        srv.put_ok(theirs, p, edit_line(base, 2, "T" + p))
    e = expect_error(merge(srv, ours, **{"from": theirs}), 409)
    eq(sorted(c["path"] for c in e["conflicts"]), sorted(files), "five conflicts")
    # a partial resolution still leaves conflicts
    e = expect_error(merge(srv, ours, **{"from": theirs, "resolutions": {"o": "ours"}}), 409)
    eq(len(e["conflicts"]), 4, "four left")
    expect_error(merge(srv, ours, **{"from": theirs, "resolutions": {"nope": "ours"}}), 400,
                 mentions="nope")
    expect_error(merge(srv, ours, **{"from": theirs, "resolutions": {"o": "mine"}}), 400,
                 mentions="resolutions")
    res = {"o": "ours", "t": "theirs", "b": "base", "x": {"text": "by hand\n"},
           "d": {"data": base64.b64encode(b"\0bytes").decode()}}
    r = merged(srv, ours, **{"from": theirs, "resolutions": res})
    eq(by_path(r), {"o": "ours", "t": "theirs", "b": "merged", "x": "merged", "d": "merged"},
       "from of each")
    got = content(srv, ours)
    eq(got, {"o": edit_line(base, 2, "Oo"), "t": edit_line(base, 2, "Tt"), "b": base,
             "x": b"by hand\n", "d": b"\0bytes"}, "each resolution applied")
    # strategy: theirs, then (new edits) ours
    for p in ("o", "t"):
        srv.put_ok(ours, p, b"O2 " + p.encode())
        srv.put_ok(theirs, p, b"T2 " + p.encode())
    r = merged(srv, ours, **{"from": theirs, "strategy": "theirs", "resolutions": {"o": "ours"}})
    eq(by_path(r), {"o": "ours", "t": "theirs"}, "resolution before strategy")
    eq((content(srv, ours)["o"], content(srv, ours)["t"]), (b"O2 o", b"T2 t"), "applied")
    srv.put_ok(ours, "t", b"O3")
    srv.put_ok(theirs, "t", b"T3")
    merged(srv, ours, **{"from": theirs, "strategy": "ours"})
    eq(content(srv, ours)["t"], b"O3", "strategy ours")
    expect_error(merge(srv, ours, **{"from": theirs, "strategy": "both"}), 400,
                 mentions="strategy")


def test_dry_run_and_if_seq(srv):
    ours, theirs = pair(srv, {"a": b"a", "c": b"c"})
    srv.put_ok(theirs, "a", b"A")
    srv.put_ok(ours, "c", b"oc")
    srv.put_ok(theirs, "c", b"tc")
    seq = srv.seq(ours)
    r = merged(srv, ours, **{"from": theirs, "dryRun": True})
    eq((r["seq"], by_path(r), [c["path"] for c in r["conflicts"]]), (seq, {"a": "theirs"}, ["c"]),
       "dry run tells")
    eq(srv.seq(ours), seq, "dry run changes nothing")
    e = expect_error(merge(srv, ours, **{"from": theirs, "strategy": "theirs", "ifSeq": seq - 1}),
                     412, mentions="ifSeq")
    eq(e["current"], {"seq": seq}, "412 tells the seq")
    eq(srv.seq(ours), seq, "nothing changed")
    r = merged(srv, ours, **{"from": theirs, "strategy": "theirs", "ifSeq": seq})
    eq(r["seq"], seq + 1, "ifSeq that holds")


def test_merging_again_brings_only_what_is_new(srv):
    ours, theirs = pair(srv, {"a": b"a", "b": b"b"})
    fork_seq = srv.seq(theirs)
    srv.put_ok(theirs, "a", b"A1")
    merged(srv, ours, **{"from": theirs})
    # ours changes a after taking it: not a conflict next time, theirs did not touch it again
    srv.put_ok(ours, "a", b"ours after")
    srv.put_ok(theirs, "b", b"B1")
    r = merged(srv, ours, **{"from": theirs})
    eq(by_path(r), {"b": "theirs"}, "only b is new")
    eq(content(srv, ours), {"a": b"ours after", "b": b"B1"}, "ours keeps its later a")
    seq = srv.seq(ours)
    r = merged(srv, ours, **{"from": theirs})
    eq((r["seq"], r["merged"], r["conflicts"]), (seq, [], []), "nothing new: nothing to do")
    # an explicit base brings again what came before
    r = merged(srv, ours, **{"from": theirs, "dryRun": True, "base": fork_seq})
    check("a" in [c["path"] for c in r["conflicts"]], "the fork point sees a as a conflict: %r" % r)
    # before the fork, `from`'s history is its parent's: not kept as the fork's
    e = expect_error(merge(srv, ours, **{"from": theirs, "base": fork_seq - 1}), 410)
    eq(e["oldest"], fork_seq, "410 tells the oldest base")


def test_remove_change_type_and_binary_conflicts(srv):
    ours, theirs = pair(srv, {"r1": b"r1", "r2": b"r2", "bin": b"\0\1\2", "ln": b"x"})
    rm(srv, ours, "r1")
    srv.put_ok(theirs, "r1", b"changed")
    srv.put_ok(ours, "r2", b"changed")
    rm(srv, theirs, "r2")
    srv.put_ok(ours, "bin", b"\0ours")
    srv.put_ok(theirs, "bin", b"\0theirs")
    srv.put_ok(ours, "ln", b"y")
    expect(srv.put_file(theirs, "ln", b"", headers={"X-Coffer-Symlink": "target"}), 200, 201)
    e = expect_error(merge(srv, ours, **{"from": theirs}), 409)
    kinds = {c["path"]: c["kind"] for c in e["conflicts"]}
    eq(kinds, {"r1": "remove-change", "r2": "remove-change", "bin": "content", "ln": "type"},
       "kinds")
    c = {c["path"]: c for c in e["conflicts"]}
    eq((c["r1"]["ours"], c["r2"]["theirs"]), (None, None), "the removed side is null")
    check("merged" not in c["bin"], "no markers for binary")
    merged(srv, ours, **{"from": theirs, "strategy": "theirs"})
    got = content(srv, ours)
    eq((got.get("r1"), "r2" in got, got["bin"]), (b"changed", False, b"\0theirs"), "theirs won")


def test_unrelated_tenancy_read_only_and_bad_bodies(srv):
    a = srv.create_volume()["id"]
    b = srv.create_volume()["id"]
    srv.put_ok(b, "x", b"x")
    expect_error(merge(srv, a, **{"from": b}), 400, mentions=["common base", b])
    r = merged(srv, a, **{"from": b, "base": 0})
    eq(by_path(r), {"x": "theirs"}, "an explicit base merges unrelated volumes")
    expect_error(merge(srv, a, **{"from": a}), 400, mentions="from")
    expect_error(merge(srv, a, **{"from": b, "base": 99}), 400, mentions="base")
    expect_error(merge(srv, a), 400, mentions="from")
    expect_error(merge(srv, a, **{"from": "vol_nope"}), 404)
    ro = expect(srv.post("/v1/keys", json={"readOnly": True}), 201).json()["key"]
    expect_error(merge(srv, a, key=ro, **{"from": b, "base": 0}), 403, mentions="read-only")
    other = expect(srv.post("/v1/keys", json={"org": "merge-other"}), 200, 201).json()["key"]
    expect_error(merge(srv, a, key=other, **{"from": b, "base": 0}), 404)
    ov = srv.create_volume(key=other)["id"]
    expect_error(merge(srv, ov, key=other, **{"from": b, "base": 0}), 404)


def test_fork_past_the_depth_bound_merges_too(srv):
    """A fork 8 deep copies its rows and names no parent: its base is recorded."""
    chain = [srv.create_volume()["id"]]
    srv.put_ok(chain[0], "a", b"a")
    for _ in range(9):
        chain.append(fork(srv, chain[-1]))
    parent, last = chain[-2], chain[-1]
    srv.put_ok(last, "a", b"deep")
    srv.put_ok(parent, "b", b"parent's")
    r = merged(srv, parent, **{"from": last})
    eq(by_path(r), {"a": "theirs"}, "the copied fork's change only")
    r = merged(srv, last, **{"from": parent})
    eq(by_path(r), {"b": "theirs"}, "and the parent's into it")
    eq(content(srv, last), {"a": b"deep", "b": b"parent's"}, "both")


def test_from_snapshot(srv):
    ours, theirs = pair(srv, {"a": b"a"})
    srv.put_ok(theirs, "a", b"A1")
    snap = srv.snapshot(theirs)["id"]
    srv.put_ok(theirs, "a", b"A2")
    srv.put_ok(theirs, "later", b"l")
    r = merged(srv, ours, **{"from": theirs, "fromSnapshot": snap})
    eq(content(srv, ours), {"a": b"A1"}, "as the snapshot had it")
    r = merged(srv, ours, **{"from": theirs})
    eq(by_path(r), {"a": "theirs", "later": "theirs"}, "the rest after the snapshot")


BIG = 120  # s (times SCALE): one request's wait in the merges of tens of MiB below


@harness.timeout(600)
def test_limits_at_their_edges(srv):
    # text up to 8 MiB merges by lines; one byte more is a binary conflict
    mib8 = 8 << 20
    for size, clean in ((mib8, True), (mib8 + 1, False)):
        line = b"x" * 1023 + b"\n"
        base = line * (size // 1024) + b"y" * (size % 1024)
        eq(len(base), size, "size")
        o = b"OURS" + base[4:]
        t = base[:-2048] + b"T" * 4 + base[-2044:]
        ours, theirs = pair(srv, {"big.txt": base})
        srv.put_ok(ours, "big.txt", o)
        srv.put_ok(theirs, "big.txt", t)
        r = merge(srv, ours, timeout=BIG, **{"from": theirs})
        if clean:
            expect(r, 200)
            got = expect(srv.get_file(ours, "big.txt"), 200).body
            eq(sha256(got), sha256(b"OURS" + t[4:]), "8 MiB text merged")
        else:
            e = expect_error(r, 409)
            eq([(c["path"], c["kind"], "merged" in c) for c in e["conflicts"]],
               [("big.txt", "content", False)], "past 8 MiB: binary conflict")
    # the merged texts of one merge: at most 32 MiB together
    line = b"x" * 1023 + b"\n"
    base = line * (mib8 // 1024)
    o, t = b"OURS" + base[4:], base[:-2048] + b"T" * 4 + base[-2044:]
    ours, theirs = pair(srv, {"%d.txt" % i: base for i in range(4)})
    for i in range(4):
        srv.put_ok(ours, "%d.txt" % i, o)
        srv.put_ok(theirs, "%d.txt" % i, t)
    r = merged(srv, ours, timeout=BIG, **{"from": theirs, "dryRun": True})
    eq(sorted(by_path(r).values()), ["merged"] * 4, "4 x 8 MiB = 32 MiB merge")
    srv.put_ok(ours, "z.txt", b"ours z")
    srv.put_ok(theirs, "z.txt", b"theirs z")
    expect_error(merge(srv, ours, timeout=BIG, **{"from": theirs, "dryRun": True}), 413,
                 mentions=["32 MiB", "z.txt"])
    # at most 10,000 changed paths
    ours, theirs = pair(srv, {})
    srv.put_many(theirs, {"p/%05d" % i: b"%d" % i for i in range(10000)}, threads=8)
    r = merged(srv, ours, timeout=BIG, **{"from": theirs, "dryRun": True})
    eq(len(r["merged"]), 10000, "10,000 paths merge")
    srv.put_ok(theirs, "p/10000", b"one more")
    expect_error(merge(srv, ours, timeout=BIG, **{"from": theirs}), 413,
                 mentions=["10000", "paths"])


# ------------------------------------------------------------------ model-based

def _text(tag):
    return "".join("%s %d\n" % (tag, i) for i in range(10)).encode()


def _is_text(d):
    return b"\0" not in d


def _merge3(b, o, t):
    """The reference rule table: ('keep'|'take', data) or ('conflict', None)."""
    if t == b:
        return "keep", o
    if o == b:
        return "take", t
    if o == t:
        return "keep", o
    if o is None or t is None or b is None:
        return "conflict", None
    if _is_text(b) and _is_text(o) and _is_text(t):
        bl, ol, tl = (x.decode().splitlines(True) for x in (b, o, t))
        if len(bl) == len(ol) == len(tl):
            res = []
            for x, y, z in zip(bl, ol, tl):
                check(y == x or z == x, "model edits never overlap")
                res.append(y if y != x else z)
            return "take", "".join(res).encode()
    return "conflict", None


def _edit(srv, vid, state, rnd, side, tag, fresh):
    """Random edits on one side; text edits touch lines 0-2 (ours) or 6-9 (theirs) only."""
    for p in sorted(state):
        k = rnd.random()
        if k < 0.45:
            continue
        if k < 0.55:
            rm(srv, vid, p)
            del state[p]
        elif p.startswith("t/") and _is_text(state[p]) and len(state[p].splitlines()) == 10:
            i = rnd.randint(0, 2) if side == "ours" else rnd.randint(6, 9)
            state[p] = edit_line(state[p], i, "%s %s" % (side, tag))
            srv.put_ok(vid, p, state[p])
        else:
            state[p] = b"\0%s %s" % (side.encode(), tag.encode())
            srv.put_ok(vid, p, state[p])
    for _ in range(rnd.randint(0, 2)):
        p = "%s/%s-%d" % (rnd.choice("tb"), side, next(fresh))
        state[p] = _text(p) if p.startswith("t/") else b"\0" + p.encode()
        srv.put_ok(vid, p, state[p])
    if rnd.random() < 0.15:  # the same new file on both sides sometimes
        p = "t/both-%s" % tag
        state[p] = _text("both " + tag)
        srv.put_ok(vid, p, state[p])


def test_model_random_edits_on_both_sides(srv):
    rnd = random.Random(37)
    fresh = iter(range(10**6))
    seen = {"merged": 0, "conflict": 0, "theirs": 0, "409": 0}
    for rnd_no in range(30):
        start = {"t/%d" % i: _text("base %d %d" % (rnd_no, i)) for i in range(4)}
        start.update({"b/%d" % i: b"\0bin %d %d" % (rnd_no, i) for i in range(2)})
        ours, theirs = pair(srv, start)
        o_state, t_state, base = dict(start), dict(start), dict(start)
        for gen in range(2):
            tag = "%d.%d" % (rnd_no, gen)
            _edit(srv, ours, o_state, rnd, "ours", tag, fresh)
            _edit(srv, theirs, t_state, rnd, "theirs", tag, fresh)
            strategy = rnd.choice([None, "ours", "theirs"])
            expected, conflicts = dict(o_state), []
            for p in sorted(set(base) | set(o_state) | set(t_state)):
                act, data = _merge3(base.get(p), o_state.get(p), t_state.get(p))
                if act == "take" and base.get(p) != o_state.get(p):
                    seen["merged"] += 1
                elif act == "take":
                    seen["theirs"] += 1
                if act == "conflict":
                    seen["conflict"] += 1
                    conflicts.append(p)
                    if strategy == "theirs":
                        act, data = "take", t_state.get(p)
                    elif strategy == "ours":
                        act = "keep"
                if act == "take":
                    if data is None:
                        expected.pop(p, None)
                    else:
                        expected[p] = data
            body = {"from": theirs}
            if strategy:
                body["strategy"] = strategy
            seq = srv.seq(ours)
            r = merge(srv, ours, **body)
            what = "round %d gen %d (strategy %s)" % (rnd_no, gen, strategy)
            if conflicts and not strategy:
                e = expect_error(r, 409)
                seen["409"] += 1
                eq(sorted(c["path"] for c in e["conflicts"]), conflicts, what + " conflicts")
                eq(srv.seq(ours), seq, what + ": nothing changed")
                # settle them as theirs to go on
                r = merge(srv, ours, **dict(body, strategy="theirs"))
                for p in conflicts:
                    if t_state.get(p) is None:
                        expected.pop(p, None)
                    else:
                        expected[p] = t_state[p]
            expect(r, 200)
            got = content(srv, ours)
            eq(sorted(got), sorted(expected), what + " paths")
            for p in expected:
                eq(got[p], expected[p], what + " " + p)
            o_state = dict(got)
            base = dict(t_state)  # the next merge's base: theirs as merged
    check(all(seen.values()), "the model reached every case: %r" % seen)


def _git_merge_file(tmp, b, o, t):
    """(clean, output) of `git merge-file -p` on the three versions."""
    import os
    import subprocess
    paths = []
    for name, data in (("ours", o), ("base", b), ("theirs", t)):
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
    r = subprocess.run(["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs"]
                       + paths, capture_output=True)
    check(r.returncode >= 0, "git merge-file ran: %r" % r.stderr)
    return r.returncode == 0, r.stdout


def test_text_merge_matches_git_merge_file(srv):
    """Random line edits (overlapping ones too) on both sides of a text: the merge is clean
    exactly when `git merge-file` is, with the same result."""
    import tempfile
    rnd = random.Random(3737)
    clean_n = conflict_n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(30):
            base = [b"line %d\n" % i for i in range(rnd.randint(3, 25))]

            def edited(side):
                ls = list(base)
                for _ in range(rnd.randint(1, 3)):
                    i = rnd.randrange(len(ls))
                    k = rnd.random()
                    if k < 0.6:
                        ls[i] = b"%s %d edit %d\n" % (side, case, i)
                    elif k < 0.8:
                        ls.insert(i, b"%s %d insert\n" % (side, case))
                    elif len(ls) > 1:
                        del ls[i]
                return b"".join(ls)
            b, o, t = b"".join(base), edited(b"ours"), edited(b"theirs")
            if o == b or t == b or o == t:
                continue
            clean, out = _git_merge_file(tmp, b, o, t)
            ours, theirs = pair(srv, {"f.txt": b})
            srv.put_ok(ours, "f.txt", o)
            srv.put_ok(theirs, "f.txt", t)
            r = merge(srv, ours, **{"from": theirs})
            if clean:
                clean_n += 1
                expect(r, 200)
                eq(expect(srv.get_file(ours, "f.txt"), 200).body, out, "case %d as git" % case)
            else:
                conflict_n += 1
                e = expect_error(r, 409)
                eq(e["conflicts"][0]["merged"].encode(), out, "case %d markers as git" % case)
    check(clean_n and conflict_n, "both outcomes reached: %d clean, %d conflicts" % (
        clean_n, conflict_n))
