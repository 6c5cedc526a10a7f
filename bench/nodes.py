#!/usr/bin/env python3
"""Scale-out (issue 12), side by side in one run:

    bench/nodes.py [--writes N] [--reads N] [--threads T] [--polls N] [--files N]
                   [--forward-mib N] [--forward-only] [--fast-pg] [--writes-only]
                   [--pg durable|fast|both] [--statements] [--waits]

1. 4 KiB PUTs per second from T keep-alive clients and GET p50/p99 from one client, on
   (a) the embedded store (SQLite + DATA/blobs), (b) one node on PostgreSQL + S3, and
   (c) three nodes on one PostgreSQL + S3 dataset, the same client load spread over them
   (client t talks to node t % 3; the GETs go round the nodes).
2. Long-poll wake-up latency: `changes?wait=` on one node, the write on another (c), vs
   the poll and the write on one embedded node (a); from the writer's acknowledgement
   to the poll's answer, p50 and p99.
3. Snapshot and fork of a volume of N files (default 100,000) on PostgreSQL, next to
   the same at 1,000: the volume is filled embedded by bench/populate.c and moved with
   `coffer migrate` (its time is reported too), then a node on the copy snapshots and
   forks it over HTTP; metadata only (no S3 request is made by either).

4. A turn's file read through the node that does not hold it (carried, src/http/carry.c)
   vs from its holding node: --forward-mib MiB (default 100) read as repeated GETs of
   the largest file a turn may return (4 MB, API.md), MB/s each way, and the carrying
   node's RSS before and its peak during (sampled every 20 ms). --forward-only runs
   just this part and prints its table (to be put in results.md's nodes section).

PostgreSQL 15 (tests/blackbox/pgpeer.py; fsync and synchronous_commit on as its users run
it, off with --fast-pg as in the tests) and s3rver
(tests/blackbox/s3peer.py, a Node.js peer over a local dir) are started for the run and
stopped at the end, also on error. 4 KiB content is kept inline in the metadata (16 KiB
or less is), so (1) measures the metadata path; s3rver is a test peer, not a real S3.
Appends a section to bench/results.md.

--writes-only runs part 1 alone (embedded, 1 node, 3 nodes) and prints its table, with
the CPU time per PUT of the client, the nodes and PostgreSQL, and PostgreSQL's WAL flushes
(pg_stat_wal: wal_sync, the fdatasyncs of the WAL, by the committing backends and the WAL
writer) and WAL records per PUT beside each PostgreSQL row; with --pg both the 1- and
3-node rows are run on a durable cluster and then on a fast one, in one run and one table
(issue 38 item 9). --statements also prints what PostgreSQL runs for one 4 KiB PUT of a
new file, one overwrite and one GET (log_statement=all on a database of its own, a node
alone on it). --waits samples what the database's backends wait on during the PUTs
(pg_stat_activity every 20 ms: the writers queued on the volume's row lock, and the
holder's round trips, statements and WAL flush).
"""
import argparse
import datetime
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
import harness  # noqa: E402
import pgpeer  # noqa: E402
import s3peer  # noqa: E402
import re  # noqa: E402
from benchlib import put_load  # noqa: E402

BUILD = os.environ.get("COFFER_BUILD") or os.path.join(ROOT, "build")


def client(srv):
    return http.client.HTTPConnection(srv.host, srv.port, timeout=120)


def pct(lat, p):
    lat = sorted(lat)
    return lat[max(0, int(round(len(lat) * p)) - 1)]


def get_lat(nodes, vid, n, files):
    """GET latency of one client going round the nodes (a connection to each)."""
    conns = [client(s) for s in nodes]
    lat = []
    for i in range(n):
        k = i % len(nodes)
        t0 = time.perf_counter()
        conns[k].request("GET", "/v1/volumes/%s/files/w/%d.bin" % (vid, i % files),
                         headers={"Authorization": "Bearer " + nodes[k].key})
        r = conns[k].getresponse()
        r.read()
        lat.append((time.perf_counter() - t0) * 1000)
        assert r.status == 200, r.status
    for c in conns:
        c.close()
    return statistics.median(lat), pct(lat, 0.99)


def wake_lat(poller, writer, n):
    """Wake-up latency (ms) of a long-poll on `poller` for a write on `writer`."""
    vid = writer.create_volume()["id"]
    writer.put_ok(vid, "w/0.txt", b"0")
    lat, whole = [], []
    for i in range(1, n + 1):
        seq = writer.seq(vid)
        res = {}

        def poll():
            c = client(poller)
            c.request("GET", "/v1/volumes/%s/changes?since=%d&wait=30" % (vid, seq),
                      headers={"Authorization": "Bearer " + poller.key})
            r = c.getresponse()
            r.read()
            res["at"] = time.perf_counter()
            c.close()
        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.15)   # the poll is waiting
        assert "at" not in res, "the poll answered before the write"
        sent = time.perf_counter()
        writer.put_ok(vid, "w/%d.txt" % i, b"%d" % i)
        acked = time.perf_counter()
        t.join(60)
        lat.append((res["at"] - acked) * 1000)
        whole.append((res["at"] - sent) * 1000)
    return (statistics.median(lat), pct(lat, 0.99), statistics.median(whole),
            pct(whole, 0.99))


def node(url, first=None):
    """A node on the PostgreSQL dataset `url` over the run's S3 (the first's prefix)."""
    s = harness.Server(args=["--meta", url, "--log", "none"], engine="pg", start=False)
    if first is not None:
        s.args = ["--meta", url, "--log", "none"]
        s.use_s3(first.blobs_prefix, first.s3)
        s.key = first.key
    return s.start()


def proc_ms(pids):
    """User + system CPU time of the processes `pids` so far (those gone count 0), ms."""
    tck, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                v = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(v[11]) + int(v[12])
    return total * 1000.0 / tck


def pg_children(pg):
    """PostgreSQL's postmaster's children now (the backends, the WAL writer, the
    checkpointer)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pg.proc.pid:
                        pids.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return pids


def bench_pids(nodes, pg):
    """This process (the clients), the nodes, and PostgreSQL's postmaster and its
    children (pg_children)."""
    pids = [os.getpid()] + [s.proc.pid for s in nodes]
    if pg is not None:
        pids += [pg.proc.pid] + pg_children(pg)
    return pids


def pg_ms(pg):
    """PostgreSQL's whole CPU time so far, ms: the postmaster's own and that of its
    children it has reaped (a backend that ended), and each live child's. Children
    listed once, before a run, missed the backends the pool opened during it and
    took back the time of those that ended in it (issue 36, task pgcost)."""
    tck, total = os.sysconf("SC_CLK_TCK"), 0
    try:
        with open("/proc/%d/stat" % pg.proc.pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        total += sum(int(x) for x in v[11:15])
    except OSError:
        pass
    return total * 1000.0 / tck + proc_ms(pg_children(pg))


def measure(nodes, args, cpu=None, pg=None):
    """(writes/s, GET p50, GET p99); with cpu a list, the CPU ms per PUT of the client,
    the nodes and PostgreSQL (pg_ms) during the writes is appended to it."""
    vid = nodes[0].create_volume()["id"]
    pids = [os.getpid()] + [s.proc.pid for s in nodes]
    b0 = proc_ms(pids) + (pg_ms(pg) if pg else 0)
    waits = Waits(pg, nodes[0].meta_url or nodes[0].args[1]) if args.waits and pg else None
    wps = put_load(nodes, vid, args.writes, args.threads)
    if cpu is not None:
        cpu.append((proc_ms(pids) + (pg_ms(pg) if pg else 0) - b0) / args.writes)
    if waits:
        args.wait_tables.append(waits.stop())
    p50, p99 = get_lat(nodes, vid, args.reads, args.writes)
    return wps, p50, p99


class Waits:
    """What the database's client backends are doing while the PUTs run: one psql
    samples pg_stat_activity every 20 ms (\\watch); stop() gives the mean number of
    backends in each state and wait event, most first."""

    def __init__(self, pg, url):
        db = url.rsplit("/", 1)[1]
        q = ("SELECT state, coalesce(wait_event_type || ':' || wait_event, 'on CPU'), "
             "now() FROM pg_stat_activity WHERE datname = '%s' AND backend_type = "
             "'client backend' AND pid <> pg_backend_pid() \\watch 0.02\n" % db)
        self.p = subprocess.Popen(["psql", "-X", "-q", "-At", "-h", pg.host, "-p",
                                   str(pg.port), "-U", "postgres", "-d", db],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.p.stdin.write(q)
        self.p.stdin.flush()

    def stop(self):
        self.p.terminate()
        out = self.p.communicate(timeout=30)[0]
        counts, samples = {}, set()
        for ln in out.splitlines():
            f = ln.split("|")
            if len(f) != 3:
                continue
            samples.add(f[2])
            counts[f[0] + ", " + f[1]] = counts.get(f[0] + ", " + f[1], 0) + 1
        n = max(1, len(samples))
        return n, sorted(((v / n, k) for k, v in counts.items()), reverse=True)


def wal(pg):
    """(WAL records, WAL fdatasyncs) of the whole cluster so far (pg_stat_wal). A
    backend reports its counts at most once a second while busy and at its exit, so
    read this after the nodes are closed."""
    out = pg.psql("SELECT wal_records, wal_sync FROM pg_stat_wal").stdout.decode()
    return tuple(int(x) for x in out.strip().split("|"))


def pg_rows(pg, label, args):
    """Part 1 on `pg`: 1 node and 3 nodes, each on a database of its own; rows of
    (name, writes/s, GET p50, GET p99, WAL records per PUT, WAL flushes per PUT). The
    GETs write no WAL (read-only transactions), so the WAL counts are the PUTs'."""
    rows = []
    for n in (1, 3):
        url = pg.new_database()
        nodes = [node(url)]
        nodes += [node(url, nodes[0]) for _ in range(n - 1)]
        try:
            before = wal(pg)
            cpu = []
            r = measure(nodes, args, cpu, pg)
        finally:
            for s in nodes:
                s.close()
        after = wal(pg)
        rows.append(("%d node%s, PostgreSQL %s + S3" % (n, "s" if n > 1 else "", label),) +
                    r + (cpu[0], (after[0] - before[0]) / args.writes,
                         (after[1] - before[1]) / args.writes))
        print("%-44s %7.0f writes/s  GET p50 %.2f ms  p99 %.2f ms  CPU/PUT %.2f ms"
              "  WAL records/PUT %.1f  WAL flushes/PUT %.2f" % rows[-1], flush=True)
        if args.waits:
            n, top = args.wait_tables[-1]
            args.wait_rows.append((rows[-1][0], n, top))
            print("  backends (mean of %d samples): %s" % (n, "; ".join(
                "%.2f %s" % t for t in top[:6])), flush=True)
        pg.drop_database(url)
    return rows


def statements(pg):
    """What PostgreSQL runs for one 4 KiB PUT of a new file, an overwrite and a GET, a node
    alone on its database with log_statement=all (the first PUT warms the connection's
    prepared statements and is not shown). Returns {what: [log lines]}."""
    url = pg.new_database()
    db = url.rsplit("/", 1)[1]
    pg.psql("ALTER DATABASE %s SET log_statement = 'all'" % db)
    n = node(url)
    out = {}
    try:
        vid = n.create_volume()["id"]
        n.put_ok(vid, "w/0.bin", os.urandom(4096))
        for what, path in (("PUT of a new file", "w/1.bin"), ("PUT of the same path, an "
                                                               "overwrite", "w/1.bin"),
                           ("GET", "w/1.bin")):
            time.sleep(0.5)
            at = os.path.getsize(pg.logf)
            if what == "GET":
                r = n.get("/v1/volumes/%s/files/%s" % (vid, path))
                assert r.status == 200, r.status
            else:
                n.put_ok(vid, path, os.urandom(4096))
            time.sleep(0.5)  # the log is written by the backend, after its answer
            with open(pg.logf, "rb") as f:
                f.seek(at)
                text = f.read().decode("utf-8", "replace")
            # not the PUT's: the node's webhook poller (src/http/webhooks.c) runs beside it
            out[what] = [re.sub(r"^\S+ \S+ \S+ \[\d+\] ", "", ln) for ln in text.splitlines()
                         if ("statement:" in ln or "execute" in ln) and
                         "hook_deliveries" not in ln]
    finally:
        n.close()
        pg.drop_database(url)
    return out


def writes_only(args, load0):
    """Part 1 alone, on the PostgreSQL modes of --pg; prints its section."""
    modes = {"durable": [True], "fast": [False], "both": [True, False]}[args.pg]
    rows, stm = [], None
    s3 = s3peer.shared()
    try:
        with harness.Server(engine="embedded", args=["--log", "none"]) as e:
            cpu = []
            rows.append(("embedded (SQLite + local dir)",) + measure([e], args, cpu) +
                        (cpu[0], None, None))
            print("%-44s %7.0f writes/s  GET p50 %.2f ms  p99 %.2f ms  CPU/PUT %.2f ms" %
                  rows[-1][:5], flush=True)
        for durable in modes:
            pg = pgpeer.Cluster(durable=durable)
            try:
                rows += pg_rows(pg, "fsync on" if durable else "fsync off", args)
                if args.statements and stm is None:
                    stm = statements(pg)
            finally:
                pg.stop()
    finally:
        s3peer.stop(s3)
    load1 = os.getloadavg()[0]
    e = rows[0]
    out = ["", "%s, %d cores, load average %.1f at the start and %.1f at the end; one run; "
           "%d 4 KiB PUTs to one volume from %d keep-alive clients (client t on node t %% N), "
           "then %d GETs from one client going round the nodes. PostgreSQL 15 on 127.0.0.1: "
           "fsync on = fsync, synchronous_commit and full_page_writes on (as its users run "
           "it), fsync off = all three off (as in the tests); a cluster of its own for each, "
           "a database of its own for each row. WAL counts from pg_stat_wal around the "
           "PUTs (flushes = wal_sync, the WAL's fdatasyncs); CPU / PUT = the CPU time "
           "of the client process, the nodes and PostgreSQL's processes during the PUTs "
           "over their number (both cores together; other users' work not in it)." % (
               datetime.date.today().isoformat(), os.cpu_count(), load0, load1,
               args.writes, args.threads, args.reads), "",
           "| engines | 4 KiB writes/s | GET p50 | GET p99 | CPU / PUT | WAL records / PUT | "
           "WAL flushes / PUT |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %.0f | %.2f ms | %.2f ms | %.2f ms | %s | %s |" % (
            r[0], r[1], r[2], r[3], r[4], "" if r[5] is None else "%.1f" % r[5],
            "" if r[6] is None else "%.2f" % r[6]))
    for r in rows[1:]:
        out.append("| %s / embedded | %.2fx | %.2fx | %.2fx | %.2fx | | |" % (
            r[0].replace(" + S3", ""), r[1] / e[1], r[2] / e[2], r[3] / e[3], r[4] / e[4]))
    if args.waits:
        out += ["", "What the database's client backends were doing during the PUTs "
                "(pg_stat_activity sampled every 20 ms; mean number of backends in each "
                "state, wait event; `on CPU` = no wait event):", "",
                "| engines | samples | backends: mean number, state, wait event |",
                "|---|---|---|"]
        for name, n, top in args.wait_rows:
            out.append("| %s | %d | %s |" % (name, n, "; ".join(
                "%.2f %s" % t for t in top[:6])))
    for what, lines in (stm or {}).items():
        out += ["", "One 4 KiB %s, as PostgreSQL logs it (log_statement=all):" % what,
                "", "```"] + lines + ["```"]
    print("\n".join(out))


def timed(srv, method, path, body):
    t0 = time.perf_counter()
    r = srv.request(method, path, json=body, timeout=600)
    ms = (time.perf_counter() - t0) * 1000
    assert r.status in (200, 201), (r.status, r.body[:300])
    return ms, r.json()


def big_volume(pg, s3, files):
    """A node on PostgreSQL + S3 with a volume of `files` files: filled embedded by
    populate.c, moved by coffer migrate. Returns (node, vid, migrate seconds, url)."""
    work = tempfile.mkdtemp(prefix="coffer-bench-nodes-")
    pop = os.path.join(work, "populate")
    pkgs = subprocess.run(["make", "-s", "--no-print-directory", "pkgs"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()
    cflags = subprocess.run("pkg-config --cflags --libs " + pkgs, shell=True, check=True,
                            capture_output=True, text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-std=c11", "-D_GNU_SOURCE", "-Iinclude", "-Isrc",
                    "bench/populate.c", os.path.join(BUILD, "libcoffer.a")] + cflags +
                   ["-lmagic", "-lpthread", "-lm", "-o", pop], cwd=ROOT, check=True)
    data = os.path.join(work, "data")
    filled = json.loads(subprocess.run([pop, "fill", data, "big", str(files), "100"],
                                       env=dict(os.environ, COFFER_BENCH_NOSYNC="1"),
                                       check=True, capture_output=True, text=True).stdout)
    url = pg.new_database()
    prefix = "bench-big-%d" % files
    t0 = time.perf_counter()
    p = subprocess.run([os.path.join(BUILD, "coffer"), "--json", "migrate", "--from", data,
                        "--to-meta", url, "--to-blobs", s3peer.url_for(s3, prefix)],
                       capture_output=True, text=True, env=dict(os.environ, **s3["env"]))
    mig = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    n = harness.Server(args=["--meta", url, "--log", "none"], engine="pg", start=False)
    n.args = ["--meta", url, "--log", "none"]
    n.use_s3(prefix, s3)
    n.key = open(os.path.join(data, "admin.key")).read().strip()
    n.start()
    subprocess.run(["rm", "-rf", work])
    return n, filled["id"], mig


def snap_fork(pg, s3, files):
    n, vid, mig = big_volume(pg, s3, files)
    try:
        before = len(s3peer.requests(s3))
        snap_ms, snap = timed(n, "POST", "/v1/volumes/%s/snapshots" % vid, {})
        fork_ms, fork = timed(n, "POST", "/v1/volumes/%s/fork" % vid,
                              {"snapshot": snap["id"], "name": "fork"})
        live_ms, _ = timed(n, "POST", "/v1/volumes/%s/fork" % vid, {"name": "fork-live"})
        s3_reqs = len(s3peer.requests(s3)) - before
        assert n.volume(fork["id"])["files"] == files, n.volume(fork["id"])
        return {"files": files, "migrate_s": mig, "snapshot_ms": snap_ms,
                "fork_ms": fork_ms, "fork_live_ms": live_ms, "s3_requests": s3_reqs}
    finally:
        n.close()


def rss_kb(srv):
    with open("/proc/%d/status" % srv.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def read_rate(srv, path, total):
    """GETs of `path` on one keep-alive client until `total` bytes: MB/s."""
    c = client(srv)
    hdr = {"Authorization": "Bearer " + srv.key}
    got = 0
    t0 = time.perf_counter()
    while got < total:
        c.request("GET", path, headers=hdr)
        r = c.getresponse()
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            got += len(b)
        assert r.status == 200, r.status
    c.close()
    return got / 1e6 / (time.perf_counter() - t0)


def forwarded_read(pg, mib):
    """A turn's 4 MB file read `mib` MiB worth from its node A and through node B."""
    url = pg.new_database()
    a = harness.Server(args=["--meta", url, "--log", "none", "--node", "n0"], engine="pg",
                       start=False)
    a.start()
    b = harness.Server(args=["--meta", url, "--log", "none", "--node", "n1"], engine="pg",
                       start=False)
    b.args = ["--meta", url, "--log", "none", "--node", "n1"]
    b.use_s3(a.blobs_prefix, a.s3)
    b.key = a.key
    b.start()
    try:
        aid = "bench-fwd-%d" % os.getpid()
        r = a.put("/v1/agents/" + aid, json={"output": {"files": ["csv"]}})
        assert r.status == 201, r.body
        t = a.post("/v1/turns", json={"agent": aid, "user": "u", "deadlineSeconds": 3600})
        assert t.status == 201, t.body
        tid = t.json()["id"]
        r = a.post("/v1/turns/%s/calls" % tid, json={
            "command": "yes 'a,b,c,d' | head -n 500000 > $OUTBOX/big.csv"}, timeout=300)
        out = r.json()
        assert r.status == 200 and len(out["files"]) == 1, r.body[:300]
        path = "/v1/turns/%s/files/%s/big.csv" % (tid, out["callId"])
        total = mib << 20
        read_rate(b, path, 4 << 20)  # warm both paths once
        held = read_rate(a, path, total)
        base, peak, stop = rss_kb(b), [0], []

        def sample():
            while not stop:
                peak[0] = max(peak[0], rss_kb(b))
                time.sleep(0.02)
        th = threading.Thread(target=sample)
        th.start()
        try:
            carried = read_rate(b, path, total)
        finally:
            stop.append(1)
            th.join()
        return {"mib": mib, "held": held, "carried": carried, "rss0": base,
                "rss_peak": max(peak[0], base)}
    finally:
        b.close()
        a.close()
        pg.drop_database(url)


def forward_table(fw, load0, load1):
    return ["", "Forwarded reads (src/http/carry.c), %s, load average %.1f / %.1f, one run: "
            "%d MiB of a turn's 4 MB file (the largest a turn returns) as repeated GETs on "
            "one keep-alive client, from the holding node A and carried through node B "
            "(two nodes on PostgreSQL + S3; the file is in A's workspace):" % (
                datetime.date.today().isoformat(), load0, load1, fw["mib"]), "",
            "| read | MB/s | node B's RSS before | node B's peak RSS during |",
            "|---|---|---|---|",
            "| from the holding node A | %.0f | | |" % fw["held"],
            "| through node B (carried) | %.0f | %.1f MiB | %.1f MiB |" % (
                fw["carried"], fw["rss0"] / 1024, fw["rss_peak"] / 1024),
            "| through B / from A | %.2fx | | +%.1f MiB |" % (
                fw["carried"] / fw["held"], (fw["rss_peak"] - fw["rss0"]) / 1024)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=2000)
    ap.add_argument("--reads", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--polls", type=int, default=40)
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--forward-mib", type=int, default=100)
    ap.add_argument("--forward-only", action="store_true")
    ap.add_argument("--fast-pg", action="store_true",
                    help="PostgreSQL with fsync and synchronous_commit off, as in the tests"
                    " (default: on, as its users run it)")
    ap.add_argument("--writes-only", action="store_true",
                    help="only part 1 (writes/s and GET latency), printed, not appended")
    ap.add_argument("--pg", choices=("durable", "fast", "both"),
                    help="with --writes-only: PostgreSQL durable (the default), fast (as"
                    " --fast-pg) or both, one after the other in one run and one table")
    ap.add_argument("--waits", action="store_true",
                    help="with --writes-only: sample what PostgreSQL's backends wait on"
                    " during the PUTs (pg_stat_activity every 20 ms)")
    ap.add_argument("--statements", action="store_true",
                    help="with --writes-only: print the statements of one PUT and one GET")
    args = ap.parse_args()
    args.wait_tables, args.wait_rows = [], []
    if args.pg is None:
        args.pg = "fast" if args.fast_pg else "durable"
    harness.set_build(BUILD)
    load0 = os.getloadavg()[0]
    if args.writes_only:
        writes_only(args, load0)
        return
    pg = pgpeer.Cluster(durable=not args.fast_pg)
    s3 = s3peer.shared()
    rows, wake, sf = [], [], []
    if args.forward_only:
        try:
            fw = forwarded_read(pg, args.forward_mib)
        finally:
            pg.stop()
            s3peer.stop(s3)
        print("\n".join(forward_table(fw, load0, os.getloadavg()[0])))
        return
    try:
        with harness.Server(engine="embedded", args=["--log", "none"]) as e:
            rows.append(("embedded (SQLite + local dir)",) + measure([e], args))
            print("%-32s %7.0f writes/s  GET p50 %.2f ms  p99 %.2f ms" % rows[-1], flush=True)
            wake.append(("embedded, poll and write on one node",) + wake_lat(e, e, args.polls))
            print("%-40s wake p50 %.2f ms  p99 %.2f ms (from the send %.2f, %.2f)" %
                  wake[-1], flush=True)
        url = pg.new_database()
        one = node(url)
        try:
            rows.append(("1 node, PostgreSQL + S3",) + measure([one], args))
            print("%-32s %7.0f writes/s  GET p50 %.2f ms  p99 %.2f ms" % rows[-1], flush=True)
        finally:
            one.close()
        url = pg.new_database()
        three = [node(url)]
        three += [node(url, three[0]) for _ in range(2)]
        try:
            rows.append(("3 nodes, PostgreSQL + S3",) + measure(three, args))
            print("%-32s %7.0f writes/s  GET p50 %.2f ms  p99 %.2f ms" % rows[-1], flush=True)
            wake.append(("3 nodes, poll on B, write on A",) + wake_lat(three[1], three[0],
                                                                       args.polls))
            print("%-40s wake p50 %.2f ms  p99 %.2f ms (from the send %.2f, %.2f)" %
                  wake[-1], flush=True)
        finally:
            for s in three:
                s.close()
        for files in (1000, args.files):
            sf.append(snap_fork(pg, s3, files))
            print(sf[-1], flush=True)
        fw = forwarded_read(pg, args.forward_mib)
        print(fw, flush=True)
    finally:
        pg.stop()
        s3peer.stop(s3)
    load1 = os.getloadavg()[0]
    e = rows[0]
    out = ["", "## Several nodes: PostgreSQL + S3 vs embedded (issue 12; bench/nodes.py)", "",
           "%s, %d cores, load average %.1f at the start and %.1f at the end (other "
           "engineers' builds and tests share the machine); one run; %d 4 KiB PUTs from "
           "%d keep-alive clients (spread over the nodes: client t on node t %% 3), then "
           "%d GETs from one client going round the nodes. PostgreSQL 15 on 127.0.0.1 "
           "with fsync %s; S3 is s3rver (Node.js, a test peer). 4 KiB "
           "content is inline in the metadata, so the blob store is not on this path." % (
               datetime.date.today().isoformat(), os.cpu_count(), load0, load1,
               args.writes, args.threads, args.reads,
               "off (--fast-pg, as in the tests)" if args.fast_pg else
               "and synchronous_commit on (as its users run it)"), "",
           "| engines | 4 KiB writes/s | GET p50 | GET p99 |", "|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %.0f | %.2f ms | %.2f ms |" % r)
    for r in rows[1:]:
        out.append("| %s / embedded | %.2fx | %.2fx | %.2fx |" % (
            r[0].split(",")[0], r[1] / e[1], r[2] / e[2], r[3] / e[3]))
    out += ["", "Long-poll wake-up (`changes?wait=30`), %d rounds: the poll's answer after "
            "the writer's acknowledgement, and after the write was sent (the write's own "
            "time included):" % args.polls, "",
            "| where | p50 after the ack | p99 after the ack | p50 after the send | "
            "p99 after the send |", "|---|---|---|---|---|"]
    for w in wake:
        out.append("| %s | %.2f ms | %.2f ms | %.2f ms | %.2f ms |" % w)
    out += ["", "Snapshot and fork on PostgreSQL (a node on the copy; the volume filled "
            "embedded by bench/populate.c, 100-byte files, and moved by `coffer migrate`):",
            "", "| files | migrate | snapshot | fork of the snapshot | fork of live | "
            "S3 requests |", "|---|---|---|---|---|---|"]
    for r in sf:
        out.append("| %d | %.1f s | %.1f ms | %.1f ms | %.1f ms | %d |" % (
            r["files"], r["migrate_s"], r["snapshot_ms"], r["fork_ms"], r["fork_live_ms"],
            r["s3_requests"]))
    out += forward_table(fw, load0, load1)
    with open(os.path.join(ROOT, "bench", "results.md"), "a") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
