"""Agents: create/update/get/delete, mounts (forms, validation, remount, PUT .../mounts),
the agent's files by the path it sees (GET/PUT/DELETE/list), read-only mounts, subpaths,
org isolation and agent-bound keys (API.md Agents)."""

import os

import agentlib
import harness
from agentlib import agent_url, files_url, new_id
from harness import check, contains, eq, expect, expect_error


def make_agent(srv, aid=None, key=harness._ABSENT, **body):
    return agentlib.make_agent(srv, aid or new_id(), key, **body)


def get_agent(srv, aid, key=harness._ABSENT):
    return expect(srv.get(agent_url(aid), key=key), 200).json()


def tool(srv, aid, name, key=harness._ABSENT, **args):
    r = expect(srv.post(agent_url(aid, "/tools/" + name), json=args, key=key), 200)
    j = r.json()
    check(isinstance(j.get("ok"), bool), "tool answer has a boolean ok\n" + r.describe())
    check(isinstance(j.get("output"), str), "tool answer has a string output\n" + r.describe())
    return j


def mounts_of(agent):
    m = agent.get("mounts")
    check(isinstance(m, list), "agent.mounts should be a list: %r" % (agent,))
    return m


def vol_mounts(agent):
    """The volume mounts of a GET answer as {path: (volumeId, mode, subpath)}."""
    out = {}
    for m in mounts_of(agent):
        if m.get("volumeId"):
            out[m["path"]] = (m["volumeId"], m.get("mode"), m.get("subpath") or None)
    return out


# ------------------------------------------------------------------ create / get / delete

def test_create_then_get(srv):
    aid = new_id()
    r = expect(srv.put(agent_url(aid), json={}), 201)
    j = r.json()
    check(r.header("Content-Type", ).startswith("application/json"), "JSON answer")
    eq(j.get("id"), aid, "id")
    ws = j.get("workspaceVolumeId")
    check(isinstance(ws, str) and ws, "workspaceVolumeId in the PUT answer: %r" % j)
    g = get_agent(srv, aid)
    eq(g.get("id"), aid, "GET id")
    eq(g.get("workspaceVolumeId"), ws, "GET workspaceVolumeId")
    eq(g.get("fileTools"), True, "fileTools defaults to true")
    mounts_of(g)
    # the workspace is a real volume of the same org
    v = srv.volume(ws)
    eq(v["id"], ws, "workspace volume")


def test_update_200_keeps_workspace(srv):
    a = make_agent(srv)
    r = expect(srv.put(agent_url(a["id"]), json={"fileTools": False}), 200).json()
    eq(r.get("workspaceVolumeId"), a["workspaceVolumeId"], "workspace kept on update")
    eq(get_agent(srv, a["id"]).get("fileTools"), False, "fileTools updated")
    r = expect(srv.put(agent_url(a["id"]), json={}), 200).json()
    eq(r.get("workspaceVolumeId"), a["workspaceVolumeId"], "workspace kept on empty update")


def test_other_fields_accepted_and_stored(srv):
    body = {"exclude": ["*.log", "node_modules/**"], "defaultExclusions": False}
    a = make_agent(srv, **body)
    g = get_agent(srv, a["id"])
    eq(g.get("exclude"), body["exclude"], "exclude stored")
    eq(g.get("defaultExclusions"), False, "defaultExclusions stored")


def test_agent_bad_bodies(srv):
    aid = new_id()
    for body in (b"[]", b"{", b'"x"'):
        expect_error(srv.put(agent_url(aid), body=body,
                             headers={"Content-Type": "application/json"}), 400)
    expect_error(srv.put(agent_url(aid), json={"fileTools": "yes"}), 400)
    expect_error(srv.put(agent_url(aid), json={"mounts": {"path": "/a"}}), 400)
    expect_error(srv.put(agent_url(aid), json={"remount": 1}), 400)
    # nothing was created by the refused bodies
    expect_error(srv.get(agent_url(aid)), 404)


def test_agent_id_validated(srv):
    for bad in ("x" * 300, "a%20b", "x%2Fy", "caf%C3%A9", "a%00b"):
        expect_error(srv.put(agent_url(bad), json={}), 400)
    # "." and ".." are path segments, not names: a client or proxy would rewrite the URL
    taken = {}
    for bad in (".", "..", "%2E", "%2E%2E"):
        r = srv.put(agent_url(bad), json={})
        if r.status not in (400, 404):
            taken[bad] = r.status
    eq(taken, {}, "agent ids '.' and '..' refused with 400/404 (id -> status given)")
    ok_id = "A-z_0.9-%d" % os.getpid()
    make_agent(srv, aid=ok_id)
    eq(get_agent(srv, ok_id)["id"], ok_id, "letters, digits, '.', '_', '-'")
    expect_error(srv.put(agent_url(new_id()), json={"bogus": 1}), 400)


def test_get_unknown_404(srv):
    expect_error(srv.get(agent_url("nosuchagent")), 404, "not_found")
    expect_error(srv.delete(agent_url("nosuchagent")), 404, "not_found")
    expect_error(srv.put(agent_url("nosuchagent", "/mounts"), json=[]), 404)
    expect_error(srv.get(files_url("nosuchagent", "/workspace/a.txt")), 404)
    expect_error(srv.post(agent_url("nosuchagent", "/tools/ls"), json={}), 404)


def test_delete_removes_workspace_keeps_mounted(srv):
    shared = srv.create_volume()["id"]
    srv.put_ok(shared, "keep.txt", b"keep me")
    a = make_agent(srv, mounts=[{"workspace": True},
                                {"volumeId": shared, "path": "/shared", "mode": "rw"}])
    ws = a["workspaceVolumeId"]
    expect(srv.put(files_url(a["id"], "/workspace/w.txt"), body=b"w"), 201)
    expect(srv.put(files_url(a["id"], "/shared/s.txt"), body=b"s"), 201)
    r = expect(srv.delete(agent_url(a["id"])), 204)
    eq(r.body, b"", "204 has no body")
    expect_error(srv.get(agent_url(a["id"])), 404)
    expect_error(srv.get("/v1/volumes/%s" % ws), 404)
    eq(expect(srv.get_file(shared, "keep.txt"), 200).body, b"keep me", "mounted volume kept")
    eq(expect(srv.get_file(shared, "s.txt"), 200).body, b"s", "file written via the agent kept")
    expect_error(srv.delete(agent_url(a["id"])), 404)
    # the id can be used again, with a new workspace
    b = make_agent(srv, aid=a["id"])
    check(b["workspaceVolumeId"] != ws, "a re-created agent gets a new workspace")
    expect_error(srv.get(files_url(a["id"], "/workspace/w.txt")), 404)


# ------------------------------------------------------------------ mounts

def test_default_mount_is_workspace(srv):
    a = make_agent(srv)
    r = expect(srv.put(files_url(a["id"], "/workspace/hello.txt"), body=b"hi"), 201)
    eq(expect(srv.get_file(a["workspaceVolumeId"], "hello.txt"), 200).body, b"hi",
       "a file at /workspace/hello.txt lives at hello.txt in the workspace volume")
    check(isinstance(r.json(), dict), "PUT answers JSON")


def test_mount_forms_round_trip(srv):
    v1 = srv.create_volume()["id"]
    v2 = srv.create_volume()["id"]
    mounts = [{"workspace": True, "path": "/home/work"},
              {"volumeId": v1, "path": "/data", "mode": "ro"},
              {"volumeId": v2, "path": "/proj", "mode": "rw", "subpath": "src", "notify": True}]
    a = make_agent(srv, mounts=mounts)
    g = get_agent(srv, a["id"])
    vm = vol_mounts(g)
    eq(vm, {"/data": (v1, "ro", None), "/proj": (v2, "rw", "src")}, "volume mounts shown")
    ws = [m for m in mounts_of(g) if m.get("workspace")]
    eq(len(ws), 1, "one workspace mount shown: %r" % (g["mounts"],))
    eq(ws[0].get("path"), "/home/work", "workspace mount path")
    # the workspace is where it was put
    expect(srv.put(files_url(a["id"], "/home/work/x.txt"), body=b"x"), 201)
    eq(expect(srv.get_file(a["workspaceVolumeId"], "x.txt"), 200).body, b"x", "workspace file")
    expect_error(srv.get(files_url(a["id"], "/workspace/x.txt")), 404)


def test_workspace_false(srv):
    v = srv.create_volume()["id"]
    a = make_agent(srv, mounts=[{"workspace": False},
                                {"volumeId": v, "path": "/data", "mode": "rw"}])
    r = srv.put(files_url(a["id"], "/workspace/x.txt"), body=b"x")
    check(r.status in (400, 404), "no workspace mounted: /workspace/x.txt refused (400/404)\n"
          + r.describe())
    expect(srv.put(files_url(a["id"], "/data/x.txt"), body=b"x"), 201)
    eq(srv.list_files(a["workspaceVolumeId"])["files"] if a.get("workspaceVolumeId") else [],
       [], "nothing written to the workspace volume")
    # no mount at all: the tools refuse, the model is told why
    b = make_agent(srv, mounts=[{"workspace": False}])
    for t, args in (("ls", {}), ("write", {"path": "a.txt", "content": "x"})):
        j = tool(srv, b["id"], t, **args)
        eq(j["ok"], False, "%s with no mounts" % t)


def test_workspace_implicit_beside_mounts(srv):
    v = srv.create_volume()["id"]
    a = make_agent(srv, mounts=[{"volumeId": v, "path": "/data", "mode": "rw"}])
    expect(srv.put(files_url(a["id"], "/workspace/w.txt"), body=b"w"), 201)
    eq(expect(srv.get_file(a["workspaceVolumeId"], "w.txt"), 200).body, b"w",
       "without a workspace entry the workspace is still at /workspace")
    expect(srv.put(files_url(a["id"], "/data/d.txt"), body=b"d"), 201)
    # seed 001, docs/api.md: the implicit workspace comes after the mounts given, and
    # relative paths go to the first mount, here /data
    eq([m["path"] for m in a["mounts"]], ["/data", "/workspace"], "the order")
    j = tool(srv, a["id"], "write", path="rel.txt", content="r")
    eq(j["ok"], True, "relative write")
    eq(expect(srv.get_file(v, "rel.txt"), 200).body, b"r",
       "relative path resolved against the first mount, /data")


def test_mount_at_workspace_takes_its_place(srv):
    v = srv.create_volume()["id"]
    srv.put_ok(v, "mine.txt", b"from volume")
    a = make_agent(srv, mounts=[{"volumeId": v, "path": "/workspace", "mode": "rw"}])
    eq(expect(srv.get(files_url(a["id"], "/workspace/mine.txt")), 200).body, b"from volume",
       "/workspace is the mounted volume")


def _bad_mounts(srv, mounts, what, status=400):
    aid = new_id()
    r = srv.put(agent_url(aid), json={"mounts": mounts})
    check(r.status == status, "%s: expected %s\n%s" % (what, status, r.describe()))
    expect_error(r, status)
    expect_error(srv.get(agent_url(aid)), 404)


def test_mount_paths_validated(srv):
    v = srv.create_volume()["id"]
    w = srv.create_volume()["id"]

    def m(path, vid=v, **kw):
        d = {"volumeId": vid, "path": path, "mode": "rw"}
        d.update(kw)
        return d
    _bad_mounts(srv, [m("/a"), m("/a/b", w)], "overlapping /a and /a/b")
    _bad_mounts(srv, [m("/a/b"), m("/a", w)], "overlapping /a/b and /a (other order)")
    _bad_mounts(srv, [m("/a"), m("/a", w)], "the same path twice")
    _bad_mounts(srv, [m("/"), m("/b", w)], "/ overlaps everything")
    _bad_mounts(srv, [m("/")], "/ itself")
    _bad_mounts(srv, [m("/a/../b")], "not normalised (..)")
    _bad_mounts(srv, [m("/a/./b")], "not normalised (.)")
    _bad_mounts(srv, [m("/a//b")], "not normalised (//)")
    _bad_mounts(srv, [m("/a/")], "not normalised (trailing /)")
    _bad_mounts(srv, [m("/a/..")], "not normalised (trailing ..)")
    _bad_mounts(srv, [m("rel")], "not absolute")
    _bad_mounts(srv, [m("")], "empty path")
    _bad_mounts(srv, [m("/a\u0000b")], "NUL in path")
    _bad_mounts(srv, [{"workspace": True, "path": "/data"}, m("/data/x")],
                "workspace overlapping a volume mount")
    _bad_mounts(srv, [{"workspace": True, "path": "rel"}], "relative workspace path")
    # a volume mount at /workspace next to {workspace:true} at /workspace
    _bad_mounts(srv, [{"workspace": True}, m("/workspace")], "two mounts at /workspace")
    # prefixes that are not path prefixes do not overlap
    a = make_agent(srv, mounts=[m("/ab"), m("/a", w)])
    eq(sorted(vol_mounts(get_agent(srv, a["id"]))), ["/a", "/ab"], "/a and /ab both mounted")


def test_mount_fields_validated(srv):
    v = srv.create_volume()["id"]
    _bad_mounts(srv, [{"volumeId": v, "path": "/a", "mode": "rx"}], "mode rx")
    _bad_mounts(srv, [{"volumeId": v, "path": "/a", "mode": 1}], "mode not a string")
    _bad_mounts(srv, [{"path": "/a", "mode": "rw"}], "no volumeId, no workspace")
    _bad_mounts(srv, [{"volumeId": v, "mode": "rw"}], "volume mount without path")
    _bad_mounts(srv, [{"volumeId": 5, "path": "/a", "mode": "rw"}], "volumeId not a string")
    _bad_mounts(srv, [{"volumeId": v, "path": "/a", "mode": "rw", "subpath": "../x"}],
                "subpath with ..")
    _bad_mounts(srv, [{"volumeId": v, "path": "/a", "mode": "rw", "notify": "yes"}],
                "notify not a boolean")
    _bad_mounts(srv, ["/a"], "a mount that is not an object")
    _bad_mounts(srv, [{"workspace": True}, {"workspace": True, "path": "/w2"}],
                "the workspace twice")
    _bad_mounts(srv, [{"volumeId": v, "path": "/a", "mode": "rw", "subpath": "a//b"}],
                "subpath with an empty segment")
    _bad_mounts(srv, [{"volumeId": v, "path": "/a", "mode": "rw", "bogus": 1}],
                "unknown mount field")
    _bad_mounts(srv, [{"volumeId": v, "path": "/d%d" % i, "mode": "ro"} for i in range(200)],
                "200 mounts")


def test_mount_unknown_or_other_org_volume_404(srv):
    _bad_mounts(srv, [{"volumeId": "nosuchvolume", "path": "/a", "mode": "ro"}],
                "unknown volume", 404)
    other = expect(srv.post("/v1/keys", json={"org": "o-%d" % os.getpid()}), 201).json()["key"]
    ov = srv.create_volume(key=other)["id"]
    _bad_mounts(srv, [{"volumeId": ov, "path": "/a", "mode": "ro"}], "other org's volume", 404)
    a = make_agent(srv)
    expect_error(srv.put(agent_url(a["id"], "/mounts"),
                         json=[{"volumeId": ov, "path": "/a", "mode": "ro"}]), 404)
    expect_error(srv.put(agent_url(a["id"]),
                         json={"remount": True,
                               "mounts": [{"volumeId": ov, "path": "/a", "mode": "ro"}]}), 404)


def test_change_mounts_needs_remount(srv):
    v1 = srv.create_volume()["id"]
    v2 = srv.create_volume()["id"]
    m1 = [{"volumeId": v1, "path": "/data", "mode": "rw"}]
    m2 = [{"volumeId": v2, "path": "/data", "mode": "rw"}]
    a = make_agent(srv, mounts=m1)
    # the same mounts again, or no mounts field at all: not a change
    expect(srv.put(agent_url(a["id"]), json={"mounts": m1}), 200)
    expect(srv.put(agent_url(a["id"]), json={"fileTools": True}), 200)
    eq(vol_mounts(get_agent(srv, a["id"])), {"/data": (v1, "rw", None)},
       "mounts unchanged by an update without mounts")
    expect_error(srv.put(agent_url(a["id"]), json={"mounts": m2}), 409, "conflict")
    expect_error(srv.put(agent_url(a["id"]), json={"mounts": m2, "remount": False}), 409)
    # a mode change is a change too
    expect_error(srv.put(agent_url(a["id"]),
                         json={"mounts": [dict(m1[0], mode="ro")]}), 409)
    eq(vol_mounts(get_agent(srv, a["id"])), {"/data": (v1, "rw", None)}, "mounts after 409s")
    expect(srv.put(agent_url(a["id"]), json={"mounts": m2, "remount": True}), 200)
    eq(vol_mounts(get_agent(srv, a["id"])), {"/data": (v2, "rw", None)}, "after remount")
    # invalid mounts are 400 even with remount
    expect_error(srv.put(agent_url(a["id"]), json={"remount": True, "mounts": [
        {"volumeId": v1, "path": "/a"}, {"volumeId": v2, "path": "/a/b", "mode": "rw"}]}), 400)


def test_put_mounts_replaces_now(srv):
    v1 = srv.create_volume()["id"]
    v2 = srv.create_volume()["id"]
    srv.put_ok(v1, "f.txt", b"one")
    srv.put_ok(v2, "f.txt", b"two")
    a = make_agent(srv, mounts=[{"volumeId": v1, "path": "/data", "mode": "ro"}])
    eq(expect(srv.get(files_url(a["id"], "/data/f.txt")), 200).body, b"one", "before")
    r = expect(srv.put(agent_url(a["id"], "/mounts"),
                       json=[{"volumeId": v2, "path": "/data", "mode": "rw"}]), 200)
    check(isinstance(r.json(), (dict, list)), "JSON answer")
    eq(vol_mounts(get_agent(srv, a["id"])), {"/data": (v2, "rw", None)}, "mounts replaced")
    eq(expect(srv.get(files_url(a["id"], "/data/f.txt")), 200).body, b"two", "after")
    expect(srv.put(files_url(a["id"], "/data/g.txt"), body=b"g"), 201)
    # validation as for PUT /v1/agents/{id}
    for bad in ({"mounts": []}, [{"volumeId": v1, "path": "rel", "mode": "ro"}],
                [{"volumeId": v1, "path": "/x", "mode": "ro"},
                 {"volumeId": v2, "path": "/x/y", "mode": "ro"}]):
        expect_error(srv.put(agent_url(a["id"], "/mounts"), json=bad), 400)
    expect_error(srv.put(agent_url(a["id"], "/mounts"),
                         json=[{"volumeId": "nosuchvolume", "path": "/x", "mode": "ro"}]), 404)
    eq(vol_mounts(get_agent(srv, a["id"])), {"/data": (v2, "rw", None)}, "after refusals")
    # an empty list: back to the default, the workspace at /workspace
    expect(srv.put(agent_url(a["id"], "/mounts"), json=[]), 200)
    expect(srv.put(files_url(a["id"], "/workspace/d.txt"), body=b"d"), 201)
    eq(expect(srv.get_file(a["workspaceVolumeId"], "d.txt"), 200).body, b"d", "workspace file")


# ------------------------------------------------------------------ the agent's files

def test_files_round_trip_and_volume_api(srv):
    v = srv.create_volume()["id"]
    a = make_agent(srv, mounts=[{"workspace": True},
                                {"volumeId": v, "path": "/data", "mode": "rw"}])
    aid, ws = a["id"], a["workspaceVolumeId"]
    r = expect(srv.put(files_url(aid, "/workspace/out/chart.txt"), body=b"v1"), 201)
    j = r.json()
    check(isinstance(j, dict), "PUT answer is an object")
    eq(j.get("path"), "/workspace/out/chart.txt", "PUT answer names the agent path")
    eq(j.get("size"), 2, "PUT answer size")
    expect(srv.put(files_url(aid, "/workspace/out/chart.txt"), body=b"v2"), 200)
    g = expect(srv.get(files_url(aid, "/workspace/out/chart.txt"),
                       headers={"Range": "bytes=1-"}), 206)
    eq(g.body, b"2", "Range on an agent file")
    etag = expect(srv.get(files_url(aid, "/workspace/out/chart.txt")), 200).header("ETag")
    check(etag, "ETag on an agent file GET")
    expect(srv.get(files_url(aid, "/workspace/out/chart.txt"),
                   headers={"If-None-Match": etag}), 304)
    eq(expect(srv.get(files_url(aid, "/workspace/out/chart.txt")), 200).body, b"v2", "GET")
    eq(expect(srv.get_file(ws, "out/chart.txt"), 200).body, b"v2", "in the workspace volume")
    # the volume API's writes show through the agent's paths, and back
    srv.put_ok(v, "docs/readme.md", b"# readme")
    eq(expect(srv.get(files_url(aid, "/data/docs/readme.md")), 200).body, b"# readme",
       "volume write seen by the agent")
    expect(srv.put(files_url(aid, "/data/docs/new.md"), body=b"new"), 201)
    eq(expect(srv.get_file(v, "docs/new.md"), 200).body, b"new", "agent write seen in volume")
    # delete
    d = expect(srv.delete(files_url(aid, "/data/docs/new.md")), 200, 204)
    check(d.status == 204 or isinstance(d.json(), dict), "DELETE answer")
    expect_error(srv.get_file(v, "docs/new.md"), 404)
    expect_error(srv.get(files_url(aid, "/data/docs/new.md")), 404)
    expect_error(srv.delete(files_url(aid, "/data/docs/new.md")), 404)
    expect_error(srv.get(files_url(aid, "/workspace/missing.txt")), 404)


def test_files_list(srv):
    a = make_agent(srv)
    aid = a["id"]
    for p, b in (("/workspace/b.txt", b"bb"), ("/workspace/a.txt", b"a"),
                 ("/workspace/sub/c.txt", b"ccc"), ("/workspace/sub/deep/d.txt", b"d")):
        expect(srv.put(files_url(aid, p), body=b), 201)
    r = expect(srv.get(agent_url(aid, "/files"), query={"path": "/workspace"}), 200).json()
    eq(r.get("path"), "/workspace", "listing path")
    ents = r.get("entries")
    check(isinstance(ents, list), "entries list: %r" % r)
    got = [(e.get("name"), e.get("path"), e.get("type")) for e in ents]
    eq(sorted(got), [("a.txt", "/workspace/a.txt", "file"), ("b.txt", "/workspace/b.txt", "file"),
                     ("sub", "/workspace/sub", "dir")], "entries")
    sizes = {e["name"]: e.get("size") for e in ents if e.get("type") == "file"}
    eq(sizes, {"a.txt": 1, "b.txt": 2}, "file sizes")
    r = expect(srv.get(agent_url(aid, "/files"), query={"path": "/workspace/sub"}), 200).json()
    eq(sorted((e["name"], e["type"]) for e in r["entries"]),
       [("c.txt", "file"), ("deep", "dir")], "sub entries")
    eq(r.get("path"), "/workspace/sub", "sub listing path")
    # a file is not a folder
    r = srv.get(agent_url(aid, "/files"), query={"path": "/workspace/a.txt"})
    check(r.status in (400, 404, 409), "listing a file: 400/404/409, not an empty folder\n"
          + r.describe())
    # an empty workspace lists empty; a path with .. is refused
    b = make_agent(srv)
    r = expect(srv.get(agent_url(b["id"], "/files"), query={"path": "/workspace"}), 200).json()
    eq(r.get("entries"), [], "empty workspace")
    expect_error(srv.get(agent_url(aid, "/files"), query={"path": "/workspace/sub/../.."}), 400)
    r = srv.get(agent_url(aid, "/files"), query={"path": "/elsewhere"})
    check(r.status in (400, 404), "listing outside every mount: 400/404\n" + r.describe())
    expect_error(r, r.status)


def test_files_outside_mounts_and_dotdot(srv):
    v = srv.create_volume()["id"]
    srv.put_ok(v, "a.txt", b"a")
    a = make_agent(srv, mounts=[{"workspace": True},
                                {"volumeId": v, "path": "/data", "mode": "rw"}])
    aid = a["id"]
    for p in ("/etc/passwd", "/dat/a.txt", "/dataa/a.txt"):
        r = srv.get(files_url(aid, p))
        check(r.status in (400, 404), "GET %s outside mounts: 400/404\n%s" % (p, r.describe()))
        expect_error(r, r.status)
        r = srv.put(files_url(aid, p), body=b"x")
        check(r.status in (400, 404), "PUT %s outside mounts: 400/404\n%s" % (p, r.describe()))
    # '..' segments: 400 (sent raw and percent-encoded)
    for raw in ("/workspace/../data/a.txt", "/data/../data/a.txt", "/data/x/../a.txt",
                "/data/%2E%2E/data/a.txt"):
        url = agent_url(aid, "/files" + raw)
        expect_error(srv.get(url), 400)
        expect_error(srv.put(url, body=b"evil"), 400)
        expect_error(srv.delete(url), 400)
    eq(expect(srv.get_file(v, "a.txt"), 200).body, b"a", "unchanged")
    eq(srv.seq(v), 1, "no write happened")


def test_ro_mount_refuses_writes(srv):
    v = srv.create_volume()["id"]
    srv.put_ok(v, "r.txt", b"read me")
    a = make_agent(srv, mounts=[{"workspace": True},
                                {"volumeId": v, "path": "/ref", "mode": "ro"}])
    aid = a["id"]
    eq(expect(srv.get(files_url(aid, "/ref/r.txt")), 200).body, b"read me", "ro read")
    r = expect(srv.get(agent_url(aid, "/files"), query={"path": "/ref"}), 200).json()
    eq([e["name"] for e in r["entries"]], ["r.txt"], "ro listing")
    expect_error(srv.put(files_url(aid, "/ref/r.txt"), body=b"x"), 403, "forbidden")
    expect_error(srv.put(files_url(aid, "/ref/new.txt"), body=b"x"), 403, "forbidden")
    expect_error(srv.delete(files_url(aid, "/ref/r.txt")), 403, "forbidden")
    eq(srv.seq(v), 1, "ro volume untouched")
    # the same volume stays writable through the volume API
    srv.put_ok(v, "r.txt", b"changed")
    eq(expect(srv.get(files_url(aid, "/ref/r.txt")), 200).body, b"changed", "ro sees changes")


def test_subpath_confines(srv):
    v = srv.create_volume()["id"]
    srv.put_many(v, {"proj/a.txt": b"inside", "proj/lib/b.txt": b"deep",
                     "secret.txt": b"outside", "projx/c.txt": b"sibling"})
    a = make_agent(srv, mounts=[{"workspace": True},
                                {"volumeId": v, "path": "/proj", "mode": "rw", "subpath": "proj"}])
    aid = a["id"]
    eq(expect(srv.get(files_url(aid, "/proj/a.txt")), 200).body, b"inside", "inside subpath")
    eq(expect(srv.get(files_url(aid, "/proj/lib/b.txt")), 200).body, b"deep", "deeper")
    expect_error(srv.get(files_url(aid, "/proj/secret.txt")), 404)
    expect_error(srv.get(files_url(aid, "/proj/proj/a.txt")), 404)
    expect_error(srv.get(agent_url(aid, "/files/proj/../secret.txt")), 400)
    expect_error(srv.get(agent_url(aid, "/files/proj/%2E%2E/secret.txt")), 400)
    expect_error(srv.get(agent_url(aid, "/files/proj/..%2Fsecret.txt")), 400)
    r = expect(srv.get(agent_url(aid, "/files"), query={"path": "/proj"}), 200).json()
    eq(sorted((e["name"], e["type"]) for e in r["entries"]), [("a.txt", "file"), ("lib", "dir")],
       "listing of the subpath mount")
    expect(srv.put(files_url(aid, "/proj/new.txt"), body=b"n"), 201)
    eq(expect(srv.get_file(v, "proj/new.txt"), 200).body, b"n", "write lands under the subpath")
    expect_error(srv.put(agent_url(aid, "/files/proj/../escape.txt"), body=b"e"), 400)
    expect_error(srv.get_file(v, "escape.txt"), 404)
    eq(sorted(f["path"] for f in srv.list_files(v)["files"]),
       ["proj/a.txt", "proj/lib/b.txt", "proj/new.txt", "projx/c.txt", "secret.txt"],
       "volume files")


def test_agent_file_bad_paths(srv):
    a = make_agent(srv)
    aid = a["id"]
    expect(srv.put(files_url(aid, "/workspace/dir/f.txt"), body=b"f"), 201)
    expect_error(srv.put(files_url(aid, "/workspace/dir"), body=b"x"), 409)
    expect_error(srv.put(files_url(aid, "/workspace/dir/f.txt/g"), body=b"x"), 409)
    r = srv.put(files_url(aid, "/workspace"), body=b"x")
    check(r.status in (400, 409), "PUT onto a mount's folder: 400/409\n" + r.describe())
    expect_error(srv.get(files_url(aid, "/workspace/dir")), 404)
    expect_error(srv.put(agent_url(aid, "/files/workspace/a%00b"), body=b"x"), 400)
    expect_error(srv.put(agent_url(aid, "/files/workspace//a"), body=b"x"), 400)
    expect_error(srv.put(agent_url(aid, "/files/workspace/./a"), body=b"x"), 400)
    eq(srv.seq(a["workspaceVolumeId"]), 1, "nothing written but the first file")


# ------------------------------------------------------------------ fileTools, keys, orgs

def test_file_tools_false(srv):
    a = make_agent(srv, fileTools=False)
    aid = a["id"]
    eq(get_agent(srv, aid).get("fileTools"), False, "fileTools false shown")
    for t, args in (("read", {"path": "/workspace/a.txt"}), ("write", {"path": "a", "content": "x"}),
                    ("ls", {}), ("glob", {"pattern": "*"}), ("grep", {"pattern": "x"}),
                    ("edit", {"path": "a", "oldString": "x", "newString": "y"})):
        expect_error(srv.post(agent_url(aid, "/tools/" + t), json=args), 404)
    eq(srv.seq(a["workspaceVolumeId"]), 0, "no tool wrote")
    # the application's own file calls still work
    expect(srv.put(files_url(aid, "/workspace/a.txt"), body=b"app"), 201)
    eq(expect(srv.get(files_url(aid, "/workspace/a.txt")), 200).body, b"app", "files API")
    # turning them on
    expect(srv.put(agent_url(aid), json={"fileTools": True}), 200)
    j = tool(srv, aid, "read", path="/workspace/a.txt")
    eq(j["ok"], True, "read after fileTools:true")
    contains(j["output"], "app", "read output")


def test_unknown_tool_404(srv):
    a = make_agent(srv)
    expect_error(srv.post(agent_url(a["id"], "/tools/nosuchtool"), json={}), 404)
    expect_error(srv.post(agent_url(a["id"], "/tools/rm"), json={"path": "/workspace"}), 404)


def test_agent_key_reaches_only_its_agent(srv):
    a = make_agent(srv)
    b = make_agent(srv)
    vol = srv.create_volume()["id"]
    r = expect(srv.post("/v1/keys", json={"agent": a["id"]}), 201).json()
    k = r["key"]
    eq(r.get("agent"), a["id"], "key answer names the agent")
    eq(get_agent(srv, a["id"], key=k).get("id"), a["id"], "its own agent")
    expect(srv.put(files_url(a["id"], "/workspace/k.txt"), body=b"k", key=k), 201)
    eq(expect(srv.get(files_url(a["id"], "/workspace/k.txt"), key=k), 200).body, b"k", "file")
    expect(srv.get(agent_url(a["id"], "/files"), query={"path": "/workspace"}, key=k), 200)
    j = tool(srv, a["id"], "read", key=k, path="/workspace/k.txt")
    eq(j["ok"], True, "tool through the agent key")
    # everything else: 403
    expect_error(srv.get(agent_url(b["id"]), key=k), 403, "forbidden")
    expect_error(srv.get(files_url(b["id"], "/workspace/x"), key=k), 403)
    expect_error(srv.put(files_url(b["id"], "/workspace/x"), body=b"x", key=k), 403)
    expect_error(srv.post(agent_url(b["id"], "/tools/ls"), json={}, key=k), 403)
    expect_error(srv.put(agent_url(b["id"]), json={}, key=k), 403)
    expect_error(srv.delete(agent_url(b["id"]), key=k), 403)
    expect_error(srv.put(agent_url(new_id()), json={}, key=k), 403)
    # nor change its own agent (it could mount any volume of the org)
    expect_error(srv.put(agent_url(a["id"]), json={"fileTools": False}, key=k), 403)
    expect_error(srv.delete(agent_url(a["id"]), key=k), 403)
    eq(get_agent(srv, a["id"]).get("fileTools"), True, "own agent unchanged")
    expect_error(srv.get("/v1/volumes/%s" % vol, key=k), 403)
    expect_error(srv.get("/v1/volumes/%s" % a["workspaceVolumeId"], key=k), 403)
    expect_error(srv.get_file(a["workspaceVolumeId"], "k.txt", key=k), 403)
    expect_error(srv.post("/v1/volumes", json={"name": "x"}, key=k), 403)
    # it may not remount its own agent onto other volumes either
    expect_error(srv.put(agent_url(a["id"], "/mounts"),
                         json=[{"volumeId": vol, "path": "/x", "mode": "rw"}], key=k), 403)
    eq(srv.seq(b["workspaceVolumeId"]), 0, "other agent untouched")


def test_org_isolation(srv):
    a = make_agent(srv)
    srv.put(files_url(a["id"], "/workspace/s.txt"), body=b"secret")
    other = expect(srv.post("/v1/keys", json={"org": "oo-%d" % os.getpid()}), 201).json()["key"]
    expect_error(srv.get(agent_url(a["id"]), key=other), 404, "not_found")
    expect_error(srv.get(files_url(a["id"], "/workspace/s.txt"), key=other), 404)
    expect_error(srv.post(agent_url(a["id"], "/tools/read"), json={"path": "/workspace/s.txt"},
                          key=other), 404)
    expect_error(srv.delete(agent_url(a["id"]), key=other), 404)
    expect_error(srv.put(agent_url(a["id"], "/mounts"), json=[], key=other), 404)
    # the same id in the other org is another agent
    b = make_agent(srv, aid=a["id"], key=other)
    check(b["workspaceVolumeId"] != a["workspaceVolumeId"], "separate workspaces")
    expect_error(srv.get(files_url(a["id"], "/workspace/s.txt"), key=other), 404)
    eq(expect(srv.get(files_url(a["id"], "/workspace/s.txt")), 200).body, b"secret", "own org")


def test_no_key_401(srv):
    expect_error(srv.put(agent_url(new_id()), json={}, key=None), 401)
    expect_error(srv.get(agent_url("x"), key=None), 401)
    expect_error(srv.post(agent_url("x", "/tools/ls"), json={}, key=None), 401)


# ------------------------------------------------------------------ the list

def _page(srv, key=None, **query):
    kw = {} if key is None else {"key": key}
    return expect(srv.get("/v1/agents", query=query, **kw), 200).json()


def test_list_pages_by_id(srv):
    base = new_id("ls")
    ids = sorted("%s-%s" % (base, s) for s in ("b", "a", "B", "c-1", "c-0"))
    for aid in ids:
        expect(srv.put(agent_url(aid), json={}), 201)
    got, cursor, pages = [], None, 0
    while True:
        q = {"prefix": base + "-", "limit": 2}
        if cursor:
            q["cursor"] = cursor
        page = _page(srv, **q)
        check(len(page["agents"]) <= 2, "a page holds at most limit: %r" % page)
        got += page["agents"]
        pages += 1
        cursor = page.get("cursor")
        if not cursor:
            break
    # bytewise: "B" (0x42) before "a" (0x61), on both engines
    eq([a["id"] for a in got], ids, "every agent once, bytewise by id")
    eq(pages, 3, "5 agents in pages of 2")
    one = expect(srv.get(agent_url(ids[0])), 200).json()
    eq(got[0]["workspaceVolumeId"], one["workspaceVolumeId"], "workspace as GET says")
    eq(got[0]["createdAt"], one["createdAt"], "createdAt as GET says")
    eq(_page(srv, prefix=base + "-c-")["agents"][0]["id"], base + "-c-0", "prefix")
    eq(_page(srv, prefix=base + "-zzz"), {"agents": []}, "no match: an empty page")
    eq(len(_page(srv, prefix=base + "-", limit=5)["agents"]), 5, "limit 5 holds all five")
    check("cursor" not in _page(srv, prefix=base + "-", limit=5), "no cursor on the last page")
    expect(srv.delete(agent_url(ids[0])), 204)
    check(ids[0] not in [a["id"] for a in _page(srv, prefix=base + "-")["agents"]],
          "a deleted agent is not listed")


def test_list_limits_and_bad_input(srv):
    for q, what in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"),
                    ({"limit": "x"}, "limit"), ({"cursor": "a/b"}, "cursor"),
                    ({"prefix": "p" * 121}, "prefix")):
        r = expect_error(srv.get("/v1/agents", query=q), 400, "validation_error")
        contains(r["message"], what, "the message names %s" % what)
    expect(srv.get("/v1/agents", query={"limit": 1000}), 200)
    expect(srv.get("/v1/agents", query={"limit": 1}), 200)


def test_list_sees_only_its_organization_and_refuses_bound_keys(srv):
    mine = new_id("own")
    expect(srv.put(agent_url(mine), json={}), 201)
    other = expect(srv.post("/v1/keys", json={"org": "org-list-%d" % os.getpid()}), 201).json()
    theirs = new_id("their")
    expect(srv.put(agent_url(theirs), json={}, key=other["key"]), 201)
    ids = [a["id"] for a in _page(srv, key=other["key"])["agents"]]
    eq(ids, [theirs], "another organization lists only its own")
    check(theirs not in [a["id"] for a in _page(srv, prefix="their")["agents"]],
          "and is not listed here")
    bound = expect(srv.post("/v1/keys", json={"agent": mine}), 201).json()
    expect_error(srv.get("/v1/agents", key=bound["key"]), 403, "forbidden")
