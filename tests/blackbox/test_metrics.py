"""GET /metrics (API.md General; docs/api.md "Metrics"): who may read it, the Prometheus
text format as promtool checks it, counters that move as calls are made, and the
unauthenticated --metrics-listen address."""

import http.client
import os
import re
import shutil
import subprocess
import time

import harness
from harness import check, contains, eq, expect, expect_error
from test_relay import _op, _session
from test_relay_guard import GUARD_CASES   # the payloads live in one carrier file

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')


def _scrape(srv, key=None):
    kw = {} if key is None else {"key": key}
    r = expect(srv.get("/metrics", **kw), 200)
    check((r.header("Content-Type") or "").startswith("text/plain; version=0.0.4"),
          "Content-Type %r" % r.header("Content-Type"))
    return r.body.decode()


def _value(text, name, **labels):
    """The sample `name` whose labels include `labels` (summed when several)."""
    total, seen = 0.0, False
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(4))
            seen = True
    return total if seen else 0.0


def test_who_may_read(srv):
    expect_error(srv.get("/metrics", key=None), 401, "unauthorized")
    other = expect(srv.post("/v1/keys", json={"org": "metrics-%d" % os.getpid()}), 201).json()
    r = expect_error(srv.get("/metrics", key=other["key"]), 403, "forbidden")
    contains(r["message"], "admin", "message")
    bound = expect(srv.post("/v1/keys", json={"agent": "m-%d" % os.getpid()}), 201).json()
    expect_error(srv.get("/metrics", key=bound["key"]), 403, "forbidden")
    # any key of the admin's organization, read-only ones too
    ro = expect(srv.post("/v1/keys", json={"readOnly": True}), 201).json()
    _scrape(srv, key=ro["key"])


def test_promtool_accepts_it(srv):
    vol = srv.create_volume()
    srv.put_ok(vol["id"], "a.txt", b"x")
    expect_error(srv.get("/v1/volumes/vol_nosuch"), 404)
    expect_error(srv.get("/no/such"), 404)
    text = _scrape(srv)
    promtool = shutil.which("promtool")
    if not promtool:
        harness.skip("promtool is not installed (Debian package prometheus; scripts/deps --test)")
    p = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=60)
    eq(p.returncode, 0, "promtool check metrics exit (stdout %r stderr %r)"
       % (p.stdout.decode()[-2000:], p.stderr.decode()[-2000:]))


def test_request_counters_move(srv):
    before = _scrape(srv)
    b_post = _value(before, "coffer_http_requests_total", route="/v1/volumes", method="POST",
                    status="201")
    b_put = _value(before, "coffer_http_requests_total", route="/v1/volumes/{}/files/{+}",
                   method="PUT", status="201")
    b_dur = _value(before, "coffer_http_request_duration_seconds_count",
                   route="/v1/volumes/{}/files/{+}", method="PUT")
    b_in = _value(before, "coffer_http_request_bytes_total", route="/v1/volumes/{}/files/{+}")
    b_commits = _value(before, "coffer_store_commits_total")
    b_404 = _value(before, "coffer_http_requests_total", route="unmatched", status="404")
    vol = srv.create_volume()
    r = srv.put_file(vol["id"], "b.bin", b"y" * 1000)
    expect(r, 201)
    expect_error(srv.get("/v1/no/such/thing"), 404)
    # a request is counted when MHD reports it complete, which may come just after its
    # client has the whole answer (the event loop finishes it), and each connection's
    # requests on their own loop: look again a while, until all three are counted
    deadline = time.time() + 10 * harness.SCALE
    while True:
        after = _scrape(srv)
        counted = (
            _value(after, "coffer_http_requests_total", route="/v1/volumes", method="POST",
                   status="201") > b_post and
            _value(after, "coffer_http_requests_total", route="/v1/volumes/{}/files/{+}",
                   method="PUT", status="201") > b_put and
            _value(after, "coffer_http_requests_total", route="unmatched", status="404") >
            b_404)
        if counted or time.time() > deadline:
            break
        time.sleep(0.05)
    eq(_value(after, "coffer_http_requests_total", route="/v1/volumes", method="POST",
              status="201") - b_post, 1.0, "volume creations counted")
    eq(_value(after, "coffer_http_requests_total", route="/v1/volumes/{}/files/{+}",
              method="PUT", status="201") - b_put, 1.0, "file writes counted")
    eq(_value(after, "coffer_http_request_duration_seconds_count",
              route="/v1/volumes/{}/files/{+}", method="PUT") - b_dur, 1.0, "latency observed")
    check(_value(after, "coffer_http_request_bytes_total",
                 route="/v1/volumes/{}/files/{+}") - b_in >= 1000, "bytes in counted")
    check(_value(after, "coffer_store_commits_total") - b_commits >= 1, "commits counted")
    eq(_value(after, "coffer_http_requests_total", route="unmatched", status="404") - b_404,
       1.0, "a request no route matched, under route=\"unmatched\"")
    check("/v1/no/such/thing" not in after, "paths never become labels")


def test_relay_and_guard_counters_move(srv):
    before = _scrape(srv)
    b_block = _value(before, "coffer_guard_blocks_total", category="reverse-shell")
    b_active = _value(before, "coffer_relay_sessions", status="active")
    s, c, root = _session(srv)
    try:
        mid = _scrape(srv)
        eq(_value(mid, "coffer_relay_sessions", status="active") - b_active, 1.0,
           "an active session")
        _, path, content = [g for g in GUARD_CASES if g[0] == "reverse-shell"][0]
        expect_error(_op(srv, s["uid"], op="write_file", path=path, content=content), 422,
                     "blocked")
        after = _scrape(srv)
        eq(_value(after, "coffer_guard_blocks_total", category="reverse-shell") - b_block, 1.0,
           "the guard's refusal counted by category")
    finally:
        c.close()


def test_gc_counters_move():
    with harness.server(gc_grace=1, args=["--gc-interval", "1"]) as s:
        vol = s.create_volume()
        s.put_ok(vol["id"], "big.bin", b"z" * 200000)
        expect(s.delete(s.file_path(vol["id"], "big.bin")), 200)
        expect(s.delete("/v1/volumes/" + vol["id"]), 204)
        deadline = time.monotonic() + 60 * harness.SCALE
        while True:
            text = _scrape(s)
            if _value(text, "coffer_gc_freed_bytes_total") >= 200000:
                break
            check(time.monotonic() < deadline, "the gc freed the content within a minute:\n"
                  + "\n".join(l for l in text.splitlines() if "gc" in l))
            time.sleep(0.5)
        check(_value(text, "coffer_gc_runs_total") >= 1, "gc runs counted")
        check(_value(text, "coffer_gc_freed_blobs_total") >= 1, "blobs freed counted")


def test_metrics_listen_needs_no_key():
    with harness.server(args=["--metrics-listen", "127.0.0.1:0"]) as s:
        m = re.search(r"cofferd metrics on http://127\.0\.0\.1:(\d+)/metrics", s.log())
        check(m, "the metrics address is printed:\n" + s.log())
        port = int(m.group(1))
        expect(s.post("/v1/volumes", json={"name": "m"}), 201)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        # the POST is counted when MHD reports it complete, which may come just after
        # its client has the answer (as in test_request_counters_move): look again a while
        deadline = time.time() + 10 * harness.SCALE
        while True:
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            body = r.read().decode()
            eq(r.status, 200, "GET /metrics without a key")
            if (_value(body, "coffer_http_requests_total", route="/v1/volumes",
                       method="POST", status="201") or time.time() > deadline):
                break
            time.sleep(0.05)
        eq(_value(body, "coffer_http_requests_total", route="/v1/volumes", method="POST",
                  status="201"), 1.0, "the same counters")
        for method, path in (("GET", "/v1/volumes"), ("POST", "/metrics"), ("GET", "/")):
            conn.request(method, path)
            r = conn.getresponse()
            r.read()
            eq(r.status, 404, "%s %s on the metrics address" % (method, path))
        conn.close()


def test_bad_metrics_listen_is_refused():
    exe = os.path.join(harness.ROOT, harness.BUILD, "cofferd")
    p = subprocess.run([exe, "--data", "/nonexistent/x", "--metrics-listen", "nope"],
                       capture_output=True, timeout=30)
    eq(p.returncode, 2, "exit code of a bad --metrics-listen")
    contains(p.stderr.decode(), "--metrics-listen", "message")


def _families(text):
    """{family: (type, [(name, labels, value)])} of an exposition; every sample must
    belong to a family announced by a TYPE line (histograms: _bucket, _sum, _count)."""
    fams, order = {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            check(name not in fams, "family %s announced once" % name)
            fams[name] = (typ, [])
            order.append(name)
        elif line and not line.startswith("#"):
            m = SAMPLE.match(line)
            check(m, "a sample line: %r" % line)
            name = m.group(1)
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            fam = name if name in fams else base
            check(fam in fams and fam == order[-1],
                  "sample %s comes under its own TYPE line" % name)
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            fams[fam][1].append((name, labels, float(m.group(4))))
    return fams


def test_process_and_build_info(srv):
    """Issue 39.6: the process_* families of the Prometheus client libraries (read from
    /proc) and coffer_build_info, each with its TYPE and a sane value."""
    first = _families(_scrape(srv))
    vol = srv.create_volume()
    srv.put_ok(vol["id"], "p.bin", b"p" * 100000)
    fams = _families(_scrape(srv))
    want = {"process_cpu_seconds_total": "counter", "process_resident_memory_bytes": "gauge",
            "process_virtual_memory_bytes": "gauge", "process_open_fds": "gauge",
            "process_max_fds": "gauge", "process_start_time_seconds": "gauge",
            "coffer_build_info": "gauge"}
    v = {}
    for name, typ in want.items():
        check(name in fams, "family %s is served" % name)
        eq(fams[name][0], typ, "TYPE of %s" % name)
        eq(len(fams[name][1]), 1, "one sample of %s" % name)
        v[name] = fams[name][1][0]
    cpu = v["process_cpu_seconds_total"][2]
    check(0 <= first["process_cpu_seconds_total"][1][0][2] <= cpu, "cpu seconds only grow")
    rss, vm = v["process_resident_memory_bytes"][2], v["process_virtual_memory_bytes"][2]
    check(0 < rss <= vm, "0 < rss %d <= virtual %d" % (rss, vm))
    fds, maxfds = v["process_open_fds"][2], v["process_max_fds"][2]
    # the scrape's own connection and the data dir's files at least
    check(3 <= fds <= maxfds, "3 <= open fds %d <= max fds %d" % (fds, maxfds))
    pid = srv.proc.pid
    start = v["process_start_time_seconds"][2]
    check(1.5e9 < start <= time.time() + 1, "start time %f is a past epoch time" % start)
    # the same start as the kernel says (clock ticks after boot), to a tick
    with open("/proc/%d/stat" % pid) as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    btime = int([l for l in open("/proc/stat") if l.startswith("btime ")][0].split()[1])
    check(abs(start - (btime + ticks / os.sysconf("SC_CLK_TCK"))) < 0.02,
          "start time %f is cofferd's (pid %d)" % (start, pid))
    exe = os.path.join(harness.ROOT, harness.BUILD, "cofferd")
    version = subprocess.run([exe, "--version"], capture_output=True,
                             timeout=30).stdout.decode().split()[1]
    eq(v["coffer_build_info"][1:], ({"version": version}, 1.0), "coffer_build_info")
    # latency buckets reach minutes (slow PUTs, archives), cumulative, +Inf last
    buckets = [(s[1]["le"], s[2]) for s in fams["coffer_http_request_duration_seconds"][1]
               if s[0].endswith("_bucket") and s[1].get("method") == "PUT" and
               s[1].get("route") == "/v1/volumes/{}/files/{+}"]
    les = [b[0] for b in buckets]
    eq(les[-1], "+Inf", "the last bucket")
    bounds = [float(x) for x in les[:-1]]
    eq(bounds, sorted(bounds), "bucket bounds ascend")
    check(max(bounds) >= 60, "a bucket of 60 s or more: %r" % les)
    counts = [b[1] for b in buckets]
    eq(counts, sorted(counts), "bucket counts are cumulative")
