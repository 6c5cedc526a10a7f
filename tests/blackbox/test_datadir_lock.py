"""The data dir shared by processes (docs/design.md "Processes sharing a data dir"):
`coffer fsck` and `coffer gc` beside a live cofferd leave its uploads in flight alone
(each holds a lock on its temp file) while leftovers of a crash are still swept, and a
second cofferd on the same data dir is refused, naming the first one's pid."""

import os
import subprocess
import threading
import time

import harness
from harness import check, contains, eq, expect, sha256

TIMEOUT = 90


def _tool(srv, *args):
    exe = harness.coffer_binary()
    if not exe:
        harness.skip("build/coffer does not exist")
    p = subprocess.run([exe] + list(args), capture_output=True, timeout=60 * harness.SCALE)
    return p.returncode, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


def test_fsck_and_gc_leave_an_upload_in_flight(srv):
    vol = srv.create_volume()
    tmp = os.path.join(srv.data, "tmp")
    # a leftover of a crash: unlocked and old, so the tools sweep it (named as the
    # blob store in use names its temp files: S3's spool files on the pg pass)
    stale = os.path.join(tmp, ("s3up_" if srv.s3 else "up_") + "left_by_a_crash")
    with open(stale, "wb") as f:
        f.write(b"x" * 1000)
    old = time.time() - 3600
    os.utime(stale, (old, old))
    chunk = os.urandom(256 * 1024)
    go_on = threading.Event()

    def body():
        for i in range(8):
            if i == 4:
                go_on.wait(60)  # paused half way while the tools run
            yield chunk
    res = {}
    th = threading.Thread(target=lambda: res.update(r=srv.put_file(vol["id"], "big.bin",
                                                                   body())))
    th.start()
    try:
        deadline = time.time() + 20
        live = []
        while time.time() < deadline:
            live = [n for n in os.listdir(tmp) if n != os.path.basename(stale) and
                    os.path.getsize(os.path.join(tmp, n)) >= 3 * len(chunk)]
            if live:
                break
            time.sleep(0.05)
        check(live, "the upload's temp file in DATA/tmp (saw %r)" % os.listdir(tmp))
        # as old as the leftover, so only its writer's lock keeps it
        os.utime(os.path.join(tmp, live[0]), (old, old))
        rc, out = _tool(srv, "fsck", "--data", srv.data)
        eq(rc, 0, "coffer fsck beside the server:\n" + out)
        rc, out = _tool(srv, "gc", "--data", srv.data, "--grace", "1")
        eq(rc, 0, "coffer gc beside the server:\n" + out)
        check(os.path.exists(os.path.join(tmp, live[0])), "the upload's temp file kept")
        check(not os.path.exists(stale), "the crash's leftover swept")
    finally:
        go_on.set()
        th.join(60)
    expect(res["r"], 201)
    r = expect(srv.get_file(vol["id"], "big.bin"), 200)
    eq(sha256(r.body), sha256(chunk * 8), "the file as uploaded")


def test_second_server_refused(srv):
    exe = harness.bin_path("cofferd")
    p = subprocess.run([exe, "--data", srv.data, "--listen", "127.0.0.1:0"],
                       capture_output=True, timeout=30 * harness.SCALE)
    check(p.returncode != 0, "a second cofferd on the data dir exited %d" % p.returncode)
    contains(p.stderr.decode(errors="replace"), "in use by another cofferd (pid %d)" %
             srv.proc.pid, "its message")
    eq(srv.get("/v1/volumes").status, 200, "the first one serves on")
