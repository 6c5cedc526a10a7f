"""What an agent was shown (read, presented) or sent (uploads) keeps its content until
the agent is deleted, even after the file is removed or overwritten (API.md Agents).
GC runs with `--gc-grace 1` through `coffer gc`, as in test_gc."""

import os

from harness import check, eq, expect
from test_gc import run_gc

SERVER_OPTS = {"gc_grace": 1}
BIG = 300 * 1024  # kept as a blob file, so its presence can be seen on disk


def _agent(srv, name):
    return expect(srv.put("/v1/agents/%s" % name, json={}), 201).json()


def _tool(srv, agent, tool, **args):
    return expect(srv.post("/v1/agents/%s/tools/%s" % (agent, tool), json=args), 200).json()


def _blob_of(srv, sha):
    return srv.blob_file(sha)


def test_read_content_kept_until_agent_deleted(srv):
    a = _agent(srv, "pin-read")
    text = ("line of text\n" * (BIG // 13 + 1)).encode()
    put = expect(srv.put("/v1/agents/pin-read/files/workspace/big.txt", body=text), 201).json()
    blob = _blob_of(srv, put["sha256"])
    check(os.path.exists(blob), "the big file is a blob file")
    eq(_tool(srv, "pin-read", "read", path="big.txt", limit=1)["ok"], True, "read ok")
    expect(srv.delete("/v1/agents/pin-read/files/workspace/big.txt"), 200)
    run_gc(srv)
    run_gc(srv)
    check(os.path.exists(blob), "content the agent was shown survives GC after the file "
          "was removed")
    expect(srv.delete("/v1/agents/pin-read"), 204)
    for _ in range(6):
        run_gc(srv)
        if not os.path.exists(blob):
            break
    check(not os.path.exists(blob), "content goes once the agent is deleted")
    check(a["workspaceVolumeId"], "agent had a workspace")


def test_upload_content_kept_after_overwrite(srv):
    _agent(srv, "pin-up")
    data = os.urandom(BIG)
    up = expect(srv.put("/v1/agents/pin-up/uploads/r1/data.bin", body=data), 201).json()
    blob = _blob_of(srv, up["sha256"])
    expect(srv.put("/v1/agents/pin-up/files/workspace/uploads/r1/data.bin",
                   body=os.urandom(BIG)), 200)
    run_gc(srv)
    run_gc(srv)
    check(os.path.exists(blob), "content the agent was sent survives an overwrite and GC")


def test_unpinned_content_still_collected(srv):
    _agent(srv, "pin-none")
    put = expect(srv.put("/v1/agents/pin-none/files/workspace/x.bin",
                         body=os.urandom(BIG)), 201).json()
    blob = _blob_of(srv, put["sha256"])
    expect(srv.delete("/v1/agents/pin-none/files/workspace/x.bin"), 200)
    for _ in range(6):
        run_gc(srv)
        if not os.path.exists(blob):
            break
    check(not os.path.exists(blob), "content nobody was shown is collected")


def test_presented_link_serves_content_as_presented(srv):
    _agent(srv, "pin-show")
    expect(srv.put("/v1/agents/pin-show/files/workspace/chart.csv", body=b"a,b\n1,2\n"), 201)
    r = _tool(srv, "pin-show", "present_file", path="chart.csv", caption="v1")
    check(r["ok"], "present ok")
    expect(srv.put("/v1/agents/pin-show/files/workspace/chart.csv", body=b"changed\n"), 200)
    expect(srv.delete("/v1/agents/pin-show/files/workspace/chart.csv"), 200)
    run_gc(srv)
    run_gc(srv)
    g = expect(srv.get(r["url"]), 200)
    eq(g.body, b"a,b\n1,2\n", "the link serves the content as it was presented")


def test_agent_links_by_agent_path(srv):
    """POST /v1/agents/{id}/links: a signed link by the agent's path (GET and PUT);
    a PUT link to a read-only mount is refused; paths outside the mounts are refused."""
    ro = srv.create_volume("ro")["id"]
    srv.put_ok(ro, "r.txt", b"read only")
    # the workspace first, so that the relative path below resolves there (seed 001:
    # the mounts given come first, the workspace after them unless placed)
    expect(srv.put("/v1/agents/links1", json={"mounts": [
        {"workspace": True}, {"volumeId": ro, "path": "/ro", "mode": "ro"}]}), 201)
    expect(srv.put("/v1/agents/links1/files/workspace/a.txt", body=b"hello"), 201)
    g = expect(srv.post("/v1/agents/links1/links", json={"path": "/workspace/a.txt"}), 201).json()
    eq(g["path"], "/workspace/a.txt", "agent path in the answer")
    eq(expect(srv.get(g["url"]), 200).body, b"hello", "GET link")
    p = expect(srv.post("/v1/agents/links1/links",
                        json={"path": "a-new.txt", "method": "PUT", "maxBytes": 10}), 201).json()
    expect(srv.put(p["url"], body=b"new!"), 200, 201)
    eq(expect(srv.get("/v1/agents/links1/files/workspace/a-new.txt"), 200).body, b"new!",
       "PUT link wrote through the agent path")
    eq(expect(srv.post("/v1/agents/links1/links", json={"path": "/ro/r.txt"}), 201).json()["path"],
       "/ro/r.txt", "GET link on a read-only mount")
    expect(srv.post("/v1/agents/links1/links", json={"path": "/ro/r.txt", "method": "PUT"}), 403)
    expect(srv.post("/v1/agents/links1/links", json={"path": "/elsewhere/x"}), 404)
    expect(srv.post("/v1/agents/links1/links", json={"path": "/workspace/../x"}), 400)
    expect(srv.post("/v1/agents/links1/links", json={"path": "/workspace/a.txt",
                                                     "expiresIn": 86401}), 400)
