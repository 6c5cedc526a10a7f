#!/usr/bin/env python3
"""coffer's test runner (Python 3 standard library only).

    tests/run.py [--build DIR] [-k SUBSTR] [--unit-only | --blackbox-only] [-j N]
                 [--engines embedded,pg]

1. Every cmocka binary in DIR/tests/ runs with CMOCKA_MESSAGE_OUTPUT=TAP; each `ok` /
   `not ok` line is one case. A binary that crashes, times out or exits non-zero without
   reporting a failure counts as one more failure.
2. Every tests/blackbox/test_*.py module runs in its own process (N at a time, default
   the number of cores, at least 2; modules with `SERIAL = True` run alone afterwards);
   each `test_*` function is one case. See tests/blackbox/harness.py.

Not as root, the run first caps RLIMIT_NPROC (soft and hard) at the user's current
number of tasks plus $COFFER_TEST_NPROC (default 4096), so that nothing a test starts can
take the machine's PIDs: tests of guarantees that need root skip themselves
(harness.needs_root), and this cap holds anything else. Root is exempt from RLIMIT_NPROC;
there cofferd gives each turn a uid of its own with RLIMIT_NPROC on it.

3. Both run once per engine pass (--engines, or $COFFER_TEST_ENGINES; default both):
   `embedded` (SQLite and a local blob dir, the default of cofferd) and `pg` (a real
   PostgreSQL 15 that this run starts once, tests/blackbox/pgpeer.py, and stops at the
   end; every cofferd gets a database of its own, $COFFER_TEST_ENGINE=pg tells the
   harness). On the pg pass the black-box suite runs again whole, and of the unit tests
   the metadata conformance test runs again on a PostgreSQL database
   ($COFFER_TEST_META_URL). The pg pass keeps content in S3 as well: one s3rver for
   the pass (tests/blackbox/s3peer.py, started here, stopped at the end, handed to the
   workers in $COFFER_TEST_S3), each cofferd under a prefix of its own. Cases of the pg pass are named `pg:module::test`. The two
   passes share the -j N workers.

Failures are printed with their details, skips with their reasons; the last line is
exactly `N passed, N failed` over every pass, after one
`pass ENGINE: N passed, N failed, N skipped` line per pass, and the exit status is 1 when anything failed. Cases are named `binary::test` and
`module::test`; -k keeps the cases whose name contains SUBSTR.

Each module runs with $TMPDIR set to a folder of its own (mode 1777, as /tmp), which is
removed when the module ends, mounts left in it detached first: tests need not clean up
after themselves to leave /tmp as it was.
"""

import argparse
import concurrent.futures
import glob
import inspect
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

PASS_PREFIX = "pg:"   # the names of the second pass's cases start with it
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BLACKBOX = os.path.join(HERE, "blackbox")


def scale_for(build):
    s = os.environ.get("COFFER_TEST_SCALE")
    if s:
        return float(s)
    return 3 if "asan" in os.path.basename(os.path.abspath(build)) else 1


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.passed = 0
        self.failed = []   # (name, details)
        self.skipped = []  # (name, why)

        self.per_pass = {}  # engine -> [passed, failed, skipped]

    def add(self, name, status, details="", duration=None, quiet=False):
        with self.lock:
            engine = name.split(":", 1)[0] if name.startswith(PASS_PREFIX) else "embedded"
            counts = self.per_pass.setdefault(engine, [0, 0, 0])
            counts[{"pass": 0, "skip": 2}.get(status, 1)] += 1
            if status == "pass":
                self.passed += 1
            elif status == "skip":
                self.skipped.append((name, details))
            else:
                self.failed.append((name, details))
            if not quiet:
                tag = {"pass": "ok  ", "skip": "skip", "fail": "FAIL"}.get(status, "FAIL")
                extra = " (%.1fs)" % duration if duration is not None else ""
                if status == "skip" and details:
                    extra += ": " + details
                print("%s %s%s" % (tag, name, extra), flush=True)


# ------------------------------------------------------------------ unit tests

TAP_LINE = re.compile(r"^(not ok|ok)\s+(\d+)\s*(?:-\s*)?(.*?)\s*(?:#\s*(SKIP|TODO).*)?$")


def run_unit(path, args, results, scale, extra_env=None, prefix=""):
    """Runs one cmocka binary in TAP mode and records its cases."""
    name = prefix + os.path.basename(path)
    env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT="TAP", **(extra_env or {}))
    t0 = time.time()
    try:
        p = subprocess.run([path], cwd=ROOT, env=env, capture_output=True,
                           timeout=300 * scale)
        out, err, code = p.stdout.decode("utf-8", "replace"), \
            p.stderr.decode("utf-8", "replace"), p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        err = (e.stderr or b"").decode("utf-8", "replace")
        code = "timeout after %ss" % (300 * scale)
    lines = out.splitlines()
    plan = None
    seen = matched = 0
    failed_any = False
    for i, line in enumerate(lines):
        m = re.match(r"^1\.\.(\d+)", line)
        if m:
            plan = int(m.group(1))
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        seen += 1
        case = "%s::%s" % (name, m.group(3) or m.group(2))
        if args.k and args.k not in case:
            continue
        matched += 1
        # cmocka writes a skipped case as `not ok N # SKIP name`
        if m.group(1) == "ok" or m.group(4) == "SKIP":
            results.add(case, "skip" if m.group(4) == "SKIP" else "pass", quiet=not args.verbose)
        else:
            failed_any = True
            # cmocka prints the diagnostics as `# ...` lines after `not ok`.
            diag = []
            for nxt in lines[i + 1:]:
                if TAP_LINE.match(nxt) or re.match(r"^1\.\.\d+", nxt):
                    break
                diag.append(nxt)
            results.add(case, "fail", "\n".join(diag + [err[-2000:]]).strip())
    if args.k and args.k not in name and not matched:
        return
    problem = None
    if isinstance(code, str):
        problem = code
    elif code < 0:
        problem = "killed by signal %d (%s)" % (-code, signal.Signals(-code).name)
    elif code != 0 and not failed_any:
        problem = "exit code %d with no failing case reported" % code
    elif plan is not None and seen < plan:
        problem = "ran %d of %d planned cases" % (seen, plan)
    elif plan is None and seen == 0:
        problem = "no TAP output (exit code %s)" % code
    if problem:
        results.add("%s::<binary>" % name, "fail",
                    "%s\n--- stdout (tail)\n%s\n--- stderr (tail)\n%s" % (
                        problem, out[-3000:], err[-3000:]), time.time() - t0)


def run_units(args, results, scale):
    d = os.path.join(args.build, "tests")
    bins = sorted(p for p in glob.glob(os.path.join(d, "*"))
                  if os.path.isfile(p) and os.access(p, os.X_OK))
    if not bins:
        print("note: no unit test binaries in %s/" % d, flush=True)
    jobs = [lambda b=b: run_unit(b, args, results, scale) for b in bins]
    if args.pg:
        # The metadata tests (test_meta_*) again, on a PostgreSQL database each.
        def on_pg(b):
            try:
                url = args.pg.new_database(args.build)
            except Exception as e:
                results.add(PASS_PREFIX + os.path.basename(b) + "::<setup>", "fail", str(e))
                return
            run_unit(b, args, results, scale, prefix=PASS_PREFIX,
                     extra_env={"COFFER_TEST_META_URL": url})
        for b in bins:
            if os.path.basename(b).startswith("test_meta_"):
                jobs.append(lambda b=b: on_pg(b))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        list(ex.map(lambda job: job(), jobs))


# ------------------------------------------------------------------ black-box tests

def module_is_serial(path):
    with open(path, encoding="utf-8") as f:
        return re.search(r"^SERIAL\s*=\s*True", f.read(), re.M) is not None


def run_blackbox(args, results, scale):
    mods = sorted(glob.glob(os.path.join(BLACKBOX, "test_*.py")))
    passes = [e for e in args.engines if e in ("embedded", "pg")]
    # Both passes interleaved, so the two share the workers to the end.
    parallel = [(m, e) for m in mods if not module_is_serial(m) for e in passes]
    serial = [(m, e) for m in mods if module_is_serial(m) for e in passes]

    def one(job):
        run_module_process(job[0], args, results, scale, job[1])

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        list(ex.map(one, parallel))
    for job in serial:
        one(job)


def run_module_process(mod, args, results, scale, engine="embedded"):
    """Runs one module in a worker process on `engine` and records what it reports."""
    prefix = PASS_PREFIX if engine == "pg" else ""
    modname = prefix + os.path.splitext(os.path.basename(mod))[0]
    env = dict(os.environ, COFFER_TEST_ENGINE=engine)
    if engine == "pg":
        env["COFFER_TEST_PG"] = args.pg.env()
        env["COFFER_TEST_S3"] = args.s3env
    fd, resfile = tempfile.mkstemp(prefix="coffer-res-")
    os.close(fd)
    # Everything the module and what it starts put in $TMPDIR goes in a folder of the
    # module's own, removed when it ends: a failed or killed test leaves nothing in /tmp.
    tmp = tempfile.mkdtemp(prefix="coffer-t-")
    os.chmod(tmp, 0o1777)   # as /tmp is: a turn's uid may make its own folders there
    env["TMPDIR"] = tmp
    cmd = [sys.executable, "-B", os.path.abspath(__file__), "--worker", mod, "--build",
           args.build, "--results", resfile]
    if args.k:
        cmd += ["-k", args.k]
    limit = 900 * scale
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=limit, env=env)
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        code = p.returncode
    except subprocess.TimeoutExpired as e:
        out = ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", "replace")
        code = "timeout after %ss" % limit
    reported = 0
    with open(resfile, encoding="utf-8") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            reported += 1
            results.add(prefix + r["name"], r["status"], r.get("details", ""),
                        r.get("duration"))
    os.unlink(resfile)
    remove_tmp(tmp)
    if code != 0:
        results.add("%s::<worker>" % modname, "fail",
                    "worker exited with %s after %.0fs\n%s" % (code, time.time() - t0,
                                                               out[-6000:]))


def remove_tmp(tmp):
    """Removes a module's $TMPDIR; a mount a failed test left in it is detached first
    (lazily, so a FUSE server that is gone cannot hang the removal, and rmtree never
    descends into a volume)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            points = [line.split()[4] for line in f]
    except OSError:
        points = []
    for mp in sorted((m for m in points if m == tmp or m.startswith(tmp + "/")),
                     key=len, reverse=True):
        for cmd in (["fusermount3", "-uz", mp], ["umount", "-l", mp]):
            try:
                if subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0:
                    break
            except (OSError, subprocess.TimeoutExpired):
                pass
    shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------ worker

class TestTimeout(Exception):
    pass


def worker(args):
    """Runs the test functions of one module; one JSON line per case to --results."""
    sys.path.insert(0, BLACKBOX)
    os.environ["COFFER_BUILD"] = args.build
    import faulthandler
    import harness
    harness.set_build(args.build)
    scale = harness.SCALE
    modname = os.path.splitext(os.path.basename(args.worker))[0]
    out = open(args.results, "a", encoding="utf-8")

    def report(name, status, details="", duration=None):
        out.write(json.dumps({"name": "%s::%s" % (modname, name), "status": status,
                              "details": details, "duration": duration}) + "\n")
        out.flush()

    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location(modname, args.worker)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except Exception:
        report("<import>", "fail", traceback.format_exc())
        return 0
    tests = [(n, f) for n, f in vars(mod).items()
             if n.startswith("test_") and inspect.isfunction(f) and f.__module__ == modname]
    tests.sort(key=lambda nf: nf[1].__code__.co_firstlineno)
    tests = [(n, f) for n, f in tests if not args.k or args.k in "%s::%s" % (modname, n)]
    if not tests:
        print("no test matches")
        return 0
    opts = getattr(mod, "SERVER_OPTS", {})
    default_timeout = getattr(mod, "TIMEOUT", 60)
    shared = [None]

    def get_shared():
        if shared[0] is None or not shared[0].alive():
            shared[0] = harness.Server(**opts)
        return shared[0]

    def on_alarm(signum, frame):
        raise TestTimeout("test timed out")

    signal.signal(signal.SIGALRM, on_alarm)
    for name, fn in tests:
        params = inspect.signature(fn).parameters
        t = getattr(fn, "timeout", default_timeout) * scale
        buf = io.StringIO()
        t0 = time.time()
        status, details = "pass", ""
        srv = None
        faulthandler.dump_traceback_later(t + 30, exit=True)
        signal.alarm(int(t) + 1)
        try:
            kwargs = {}
            if "srv" in params:
                srv = kwargs["srv"] = get_shared()
            old_out, old_err = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = buf
            try:
                fn(**kwargs)
            finally:
                sys.stdout, sys.stderr = old_out, old_err
        except harness.Skip as e:
            status, details = "skip", str(e)
        except TestTimeout:
            status = "fail"
            details = "timed out after %ss\n%s" % (t, "".join(traceback.format_exc()[-4000:]))
        except BaseException:
            status = "fail"
            details = traceback.format_exc()
        finally:
            signal.alarm(0)
            faulthandler.cancel_dump_traceback_later()
        if srv is not None:
            if not srv.alive():
                status = "fail"
                code = srv.proc.returncode if srv.proc else None
                details += "\ncofferd died during this test (exit %s)\n%s" % (
                    code, srv.log_tail())
                try:
                    srv.close(check_exit=False)
                except Exception:
                    pass
                shared[0] = None
            else:
                rep = srv.sanitizer_reports()
                if rep:
                    status = "fail"
                    details += "\nsanitizer report in cofferd's log:\n" + rep
        captured = buf.getvalue()
        if status == "fail" and captured.strip():
            details += "\n--- output\n" + captured[-4000:]
        report(name, status, details.strip(), round(time.time() - t0, 2))
    if shared[0] is not None:
        t0 = time.time()
        try:
            shared[0].close()
            report("cofferd shutdown", "pass", "", round(time.time() - t0, 2))
        except Exception as e:
            report("cofferd shutdown", "fail", str(e), round(time.time() - t0, 2))
    out.close()
    return 0


# ------------------------------------------------------------------ bounds

def user_tasks(uid):
    """Tasks (threads included, as RLIMIT_NPROC counts them) of real uid `uid`."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/status" % pid) as f:
                st = f.read()
        except OSError:
            continue
        m_uid = re.search(r"^Uid:\s+(\d+)", st, re.M)
        m_thr = re.search(r"^Threads:\s+(\d+)", st, re.M)
        if m_uid and int(m_uid.group(1)) == uid:
            n += int(m_thr.group(1)) if m_thr else 1
    return n


def cap_processes():
    """Not root: caps RLIMIT_NPROC for this run and all it starts; returns a note or None."""
    import resource
    if os.geteuid() == 0:
        return None
    margin = int(os.environ.get("COFFER_TEST_NPROC") or 4096)
    cap = user_tasks(os.getuid()) + margin
    for have in resource.getrlimit(resource.RLIMIT_NPROC):
        if have != resource.RLIM_INFINITY and have < cap:
            cap = have   # never raises a limit already lower
    resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))
    return "note: not root: RLIMIT_NPROC %d (tests that need root are skipped)" % cap


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="build dir (default build)")
    ap.add_argument("-k", default=None, help="run only cases whose name contains this")
    ap.add_argument("--unit-only", action="store_true")
    ap.add_argument("--blackbox-only", action="store_true")
    ap.add_argument("-j", "--jobs", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("-v", "--verbose", action="store_true", help="list passing unit cases")
    ap.add_argument("--engines", default=os.environ.get("COFFER_TEST_ENGINES") or
                    "embedded,pg", help="the passes: embedded, pg (default both)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--results", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    os.chdir(ROOT)
    # SIGTERM ends the run as an exception would, so the PostgreSQL cluster's dir
    # is removed too (atexit; the postmaster itself dies with us either way).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    note = cap_processes()
    if note:
        print(note, flush=True)
    scale = scale_for(args.build)
    results = Results()
    t0 = time.time()
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    args.pg = None
    if "pg" in args.engines:
        sys.path.insert(0, BLACKBOX)
        import pgpeer
        try:
            args.pg = pgpeer.Cluster()
            print("note: pg pass: PostgreSQL on %s:%d" % (args.pg.host, args.pg.port),
                  flush=True)
        except Exception as e:
            results.add(PASS_PREFIX + "<setup>", "fail", "cannot start PostgreSQL: %s" % e)
            args.engines.remove("pg")
    args.s3 = None
    if "pg" in args.engines and not args.unit_only:
        os.environ["COFFER_BUILD"] = args.build
        import s3peer
        try:
            args.s3 = s3peer.start(prefix="")
            import atexit
            atexit.register(s3peer.stop, args.s3)
            args.s3env = s3peer.to_env(args.s3)
            print("note: pg pass: S3 (s3rver) on %s" % args.s3["endpoint"], flush=True)
        except Exception as e:
            results.add(PASS_PREFIX + "<setup>", "fail", "cannot start s3rver: %s" % e)
            args.engines.remove("pg")
    if not args.blackbox_only:
        run_units(args, results, scale)
    if not args.unit_only:
        if not os.path.exists(os.path.join(args.build, "cofferd")):
            results.add("blackbox::<setup>", "fail",
                        "%s/cofferd does not exist: run make first" % args.build)
        else:
            run_blackbox(args, results, scale)
    if results.failed:
        print("\n" + "=" * 70 + "\nFAILURES\n" + "=" * 70)
        for name, details in sorted(results.failed):
            print("\n--- FAIL %s\n%s" % (name, details))
    if results.skipped:
        print("\nskipped:")
        for name, why in sorted(results.skipped):
            print("  %s: %s" % (name, why))
    if args.pg:
        args.pg.stop()
    if args.s3:
        import s3peer
        s3peer.stop(args.s3)
    print("\n(%.0fs, %d skipped)" % (time.time() - t0, len(results.skipped)))
    for engine, (np, nf, ns) in sorted(results.per_pass.items()):
        print("pass %s: %d passed, %d failed, %d skipped" % (engine, np, nf, ns))
    print("%d passed, %d failed" % (results.passed, len(results.failed)))
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
