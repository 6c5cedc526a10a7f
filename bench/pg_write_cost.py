#!/usr/bin/env python3
"""Where one PostgreSQL node's CPU a PUT goes (issue 36, task pgcost):

    COFFER_BUILD=DIR bench/pg_write_cost.py [--writes N] [--threads T] [--warm N]
        [--embedded] [--perf OUT] [--stat] [--statements] [--callgrind OUT]

One cofferd on a durable PostgreSQL (tests/blackbox/pgpeer.py, fsync on) and s3rver,
N 4 KiB PUTs of new files to one volume from T keep-alive clients (bench/benchlib.py
put_load, as bench/nodes.py --writes-only does; --warm N PUTs to another volume
first, so the pool's connections and their prepared statements exist). Prints the
CPU time a PUT of cofferd, of PostgreSQL's processes and of this client apart, where
nodes.py's "CPU / PUT" is their sum.

--perf OUT     perf record -g (DWARF stacks) of cofferd during the PUTs, into OUT
--stat         perf stat of cofferd and the backends: syscalls, context switches
--statements   pg_stat_statements during the PUTs: each statement's calls, planning
               and execution time a PUT, and the batches (COMMITs)
--callgrind OUT  cofferd under valgrind --tool=callgrind, instrumented during the
               PUTs only (callgrind_control): OUT.PID.1 holds its instructions (slow:
               use --writes 1000). Deterministic where CPU times are not: the
               machine's load moves those by more than the differences looked for.

Prints only; writes no results file.
"""
import argparse
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import harness  # noqa: E402
import pgpeer  # noqa: E402
import s3peer  # noqa: E402
import nodes  # noqa: E402
from benchlib import put_load  # noqa: E402

BUILD = os.environ.get("COFFER_BUILD") or os.path.join(ROOT, "build")


def postgres_with(extra):
    """pgpeer starts postgres with these settings too."""
    popen = subprocess.Popen

    def run(argv, *a, **kw):
        if isinstance(argv, list) and argv and argv[0].endswith("/postgres"):
            argv = argv + extra
        return popen(argv, *a, **kw)
    pgpeer.subprocess.Popen = run


def callgrind_build(out):
    """A build dir whose cofferd is BUILD's under callgrind, not instrumenting."""
    d = tempfile.mkdtemp(prefix="coffer-cg-")
    exe = os.path.join(d, "cofferd")
    with open(exe, "w") as f:
        f.write("#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no "
                "--callgrind-out-file=%s.%%p %s/cofferd \"$@\"\n" % (out, BUILD))
    os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR)
    return d


def perf_stat(pids, path):
    return subprocess.Popen(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter,"
                             "context-switches", "-o", path, "-p", ",".join(map(str, pids))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def perf_stat_end(p, path, writes):
    p.send_signal(signal.SIGINT)
    p.wait()
    vals = []
    for ln in open(path):
        v = ln.strip().split(",")
        if len(v) > 3 and v[0].replace(".", "").isdigit():
            vals.append("%s %.1f" % (v[2], float(v[0]) / writes))
    return "  ".join(vals)


def statements(pg, db, writes):
    q = ("SELECT calls, round((total_plan_time * 1000 / %d)::numeric, 1), plans, "
         "round((total_exec_time * 1000 / %d)::numeric, 1), left(regexp_replace(query, "
         "'\\s+', ' ', 'g'), 100) FROM pg_stat_statements ORDER BY total_plan_time + "
         "total_exec_time DESC LIMIT 20" % (writes, writes))
    print("calls | planning us / PUT | plans | execution us / PUT | statement")
    print(pg.psql(q, db=db).stdout.decode().rstrip())
    tot = pg.psql("SELECT round((sum(total_plan_time + total_exec_time) * 1000 / %d)::numeric,"
                  " 1), sum(calls) FILTER (WHERE query = 'COMMIT') FROM pg_stat_statements" %
                  writes, db=db).stdout.decode().strip().split("|")
    print("statements: %s us a PUT; batches (COMMITs): %s" % tuple(tot))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writes", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--warm", type=int, default=0)
    ap.add_argument("--embedded", action="store_true", help="the embedded store instead")
    ap.add_argument("--perf", metavar="OUT")
    ap.add_argument("--stat", action="store_true")
    ap.add_argument("--statements", action="store_true")
    ap.add_argument("--callgrind", metavar="OUT")
    args = ap.parse_args()
    build = callgrind_build(os.path.abspath(args.callgrind)) if args.callgrind else BUILD
    harness.set_build(build)
    if args.statements:
        postgres_with(["-c", "shared_preload_libraries=pg_stat_statements",
                       "-c", "pg_stat_statements.track_planning=on"])
    s3 = s3peer.shared()
    pg = db = None
    try:
        if args.embedded:
            srv = harness.Server(engine="embedded", args=["--log", "none"])
        else:
            pg = pgpeer.Cluster(durable=True)
            url = pg.new_database()
            db = url.rsplit("/", 1)[1]
            srv = nodes.node(url)
        try:
            if args.warm:
                put_load([srv], srv.create_volume()["id"], args.warm, args.threads)
            vid = srv.create_volume()["id"]
            pid = srv.proc.pid
            backends = [p for p in nodes.bench_pids([srv], pg)
                        if p not in (pid, os.getpid())] if pg else []
            if args.statements:
                pg.psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", db=db)
                pg.psql("SELECT pg_stat_statements_reset()", db=db)
            rec = stats = None
            if args.perf:
                rec = subprocess.Popen(["perf", "record", "-F", "2999", "-g", "--call-graph",
                                        "dwarf,16384", "-o", args.perf, "-p", str(pid)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if args.stat:
                tmp = tempfile.mkdtemp(prefix="coffer-stat-")
                stats = [(who, os.path.join(tmp, who), ps) for who, ps in
                         (("cofferd", [pid]), ("PostgreSQL", backends)) if ps]
                stats = [(who, f, perf_stat(ps, f)) for who, f, ps in stats]
            if rec or stats:
                time.sleep(1)
            if args.callgrind:
                subprocess.run(["callgrind_control", "-i", "on", str(pid)], check=True,
                               stdout=subprocess.DEVNULL)
            def cpu_now():
                return [nodes.proc_ms([pid]), nodes.pg_ms(pg) if pg else 0,
                        nodes.proc_ms([os.getpid()])]
            c0 = cpu_now()
            wps = put_load([srv], vid, args.writes, args.threads)
            c1 = cpu_now()
            if args.callgrind:
                subprocess.run(["callgrind_control", "-d", str(pid)], check=True,
                               stdout=subprocess.DEVNULL)
                subprocess.run(["callgrind_control", "-i", "off", str(pid)], check=True,
                               stdout=subprocess.DEVNULL)
            if rec:
                rec.send_signal(signal.SIGINT)
                rec.wait()
            for who, f, p in stats or []:
                print("%s a PUT: %s" % (who, perf_stat_end(p, f, args.writes)))
            if args.statements:
                statements(pg, db, args.writes)
            cpu = [(b - a) / args.writes for a, b in zip(c0, c1)]
            print("%.0f writes/s; CPU a PUT: cofferd %.3f ms, PostgreSQL %.3f ms, client "
                  "%.3f ms, sum %.3f ms; load %.1f" % (
                      wps, cpu[0], cpu[1], cpu[2], sum(cpu), os.getloadavg()[0]))
        finally:
            srv.close()
    finally:
        if pg:
            pg.stop()
        s3peer.stop(s3)


if __name__ == "__main__":
    main()
