"""benchlib — what the bench scripts share: a cofferd on a free port over a fresh
data dir with JSON calls to it, and writing one section of bench/results.md."""

import http.client
import json
import os
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results.md")


class Cofferd:
    """`build/cofferd --data DATA --listen 127.0.0.1:0 ARGS...`; .url, .host, .port,
    .key, .p (the process). call() uses one keep-alive connection; request() any."""

    def __init__(self, data, *args, build=None, timeout=300):
        exe = os.path.join(build or os.path.join(ROOT, "build"), "cofferd")
        # no request log unless asked: the anchors run with access logs off too, and
        # stderr is a pipe here that nobody drains while the benchmark runs
        if "--log" not in args:
            args = ("--log", "none") + tuple(args)
        self.p = subprocess.Popen([exe, "--data", data, "--listen", "127.0.0.1:0", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.banner = []
        for line in self.p.stdout:
            self.banner.append(line.rstrip())
            if line.startswith("cofferd listening on http://"):
                self.url = "http://" + line.split("http://")[1].strip()
                self.host, self.port = self.url[7:].rsplit(":", 1)
                break
        else:
            raise RuntimeError("cofferd did not start: %s" % self.p.stderr.read()[-2000:])
        # keep reading its output so that it never blocks on a full pipe
        threading.Thread(target=self.p.stdout.read, daemon=True).start()
        threading.Thread(target=self.p.stderr.read, daemon=True).start()
        self.key = open(os.path.join(data, "admin.key")).read().strip()
        self.c = self.conn(timeout)

    def conn(self, timeout=300):
        return http.client.HTTPConnection(self.host, int(self.port), timeout=timeout)

    def request(self, c, method, path, body=None, ok=True):
        """(status, body): JSON bodies parsed, others as bytes. Raises on >= 300
        unless ok=False."""
        hdr = {"Authorization": "Bearer " + self.key}
        if body is not None:
            body = json.dumps(body)
            hdr["Content-Type"] = "application/json"
        c.request(method, path, body=body, headers=hdr)
        r = c.getresponse()
        data = r.read()
        if ok and r.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:300]))
        ctype = r.getheader("Content-Type") or ""
        return r.status, (json.loads(data) if data and "json" in ctype else data or None)

    def call(self, method, path, body=None):
        """The JSON answer of a call that must succeed."""
        return self.request(self.c, method, path, body)[1]

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def put_load(nodes, vid, n, threads, timeout=120):
    """n 4 KiB PUTs to files w/I.bin of volume `vid` over `threads` keep-alive
    clients, client t on node t % len(nodes) (each has .host, .port and .key: a
    Cofferd or a harness.Server); returns writes/s."""
    body = os.urandom(4096)

    def run(t):
        srv = nodes[t % len(nodes)]
        hdr = {"Authorization": "Bearer " + srv.key,
               "Content-Type": "application/octet-stream"}
        c = http.client.HTTPConnection(srv.host, int(srv.port), timeout=timeout)
        for i in range(t, n, threads):
            c.request("PUT", "/v1/volumes/%s/files/w/%d.bin" % (vid, i),
                      body=body[:-8] + i.to_bytes(8, "big"), headers=hdr)
            r = c.getresponse()
            r.read()
            assert r.status in (200, 201), r.status
        c.close()
    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return n / (time.perf_counter() - t0)


def write_section(path, heading, text):
    """Puts `text` (which starts with `## heading`) into the results file in
    place of an earlier section of that heading, or at the end; so a rerun
    replaces its figures instead of adding a second copy."""
    old = open(path).read() if os.path.exists(path) else ""
    mark = "\n## " + heading + "\n"
    text = text.strip("\n") + "\n"
    start = old.find(mark)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        end = old.find("\n## ", start + len(mark))
        new = old[:start + 1] + text + ("\n" + old[end + 1:] if end >= 0 else "")
    with open(path, "w") as f:
        f.write(new)


GNU_TIME = "/usr/bin/time"


def run_child(argv, env=None, timeout=None):
    """Runs argv as a child to its end: (the last line of its stdout, its peak RSS in
    MiB, its own alone). Not wait4's ru_maxrss of the child itself: Linux carries the
    high-water mark of the mm a process had before exec over, so a child of this
    Python process would count the caller's RSS as its floor. So the child is started
    by GNU time (a small C process: `%M`, the exec'd child's maxrss), or, without it,
    its VmHWM in /proc/PID/status is read every 5 ms while it runs (a high-water mark,
    reset by exec). Raises if it fails; its stderr passes through."""
    hwm = tempfile.NamedTemporaryFile(prefix="coffer-bench-rss-", mode="r")
    timed = os.access(GNU_TIME, os.X_OK)
    if timed:
        argv = [GNU_TIME, "-f", "%M", "-o", hwm.name] + list(argv)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    out, peak_kib = [], [0]
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)
    reader.start()
    t0 = time.monotonic()
    while p.poll() is None:
        if timeout and time.monotonic() - t0 > timeout:
            p.kill()
        if not timed:
            peak_kib[0] = max(peak_kib[0], _vmhwm_kib(p.pid))
        time.sleep(0.005)
    reader.join()
    out = out[0] if out else ""
    if p.returncode:
        raise RuntimeError("%s: exit %d\n%s" % (" ".join(argv[:5]), p.returncode, out[-2000:]))
    if timed:
        peak_kib[0] = int(hwm.read().split()[-1])
    hwm.close()
    lines = out.strip().splitlines()
    return (lines[-1] if lines else ""), peak_kib[0] / 1024


def _vmhwm_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_stamp():
    """The date (UTC), the commit (short hash, `+` when the work tree differs outside
    bench/results.md) and the load average, for a section's first line."""
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    # results.md itself is left changed by a run before this one: not the code measured
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no",
                            "--", ".", ":!bench/results.md"],
                           capture_output=True, text=True).stdout.strip()
    return (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), head + ("+" if dirty else ""),
            " ".join("%.2f" % x for x in os.getloadavg()))
