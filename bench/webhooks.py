#!/usr/bin/env python3
"""Writes with webhooks (issue 37 item 5): does a slow receiver slow writes?

    bench/webhooks.py [--writes 2000] [--runs 3] [--engines embedded]

For each engine: one cofferd (--webhook-allow-private), one volume, 8 writers PUTting
4 KiB files over keep-alive connections (benchlib.put_load), --runs times each of: no
webhook; a webhook for volume.changed whose receiver sleeps 10 s before answering
(so every send runs into the 10 s timeout and is retried). Reports the median writes/s
of each and the deliveries queued meanwhile; writes a section of bench/results.md with the
machine's load at start and end.
"""
import argparse
import datetime
import http.server
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import harness  # noqa: E402
from benchlib import put_load, write_section  # noqa: E402

HEADING = "Webhooks: writes with a slow receiver (issue 37 item 5; bench/webhooks.py)"


def log(*a):
    print("[webhooks %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


class Sleeper:
    """A receiver that holds every POST 10 s, then answers 200."""

    def __init__(self):
        self.n = 0
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                rec.n += 1
                time.sleep(10)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d/" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def run_engine(engine, writes, runs):
    srv = harness.Server(engine=engine, args=["--webhook-allow-private", "--log", "none",
                                              "--gc-interval", "0"])
    rec = Sleeper()
    res = {"none": [], "slow": []}
    try:
        hook = harness.expect(srv.post("/v1/webhooks", json={
            "url": rec.url, "events": ["volume.changed"]}), 201).json()
        # the two modes alternate, so the machine's drift hits both alike
        for r in range(runs):
            for mode in ("none", "slow"):
                harness.expect(srv.patch("/v1/webhooks/" + hook["id"], json={
                    "disabled": mode == "none"}), 200)
                vid = srv.create_volume("b-%s-%d" % (mode, r))["id"]
                res[mode].append(put_load([srv], vid, writes, 8))
                log(engine, mode, "run", r, "%.0f writes/s" % res[mode][-1])
        dl = harness.expect(srv.get("/v1/webhooks/%s/deliveries" % hook["id"]),
                            200).json()["deliveries"]
        res["queued"] = len(dl)
        res["sent"] = rec.n
    finally:
        srv.close()
        rec.httpd.shutdown()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--engines", default="embedded")
    ap.add_argument("--heading", default=HEADING)
    args = ap.parse_args()
    load0, t0 = os.getloadavg(), time.time()
    res = {e: run_engine(e, args.writes, args.runs) for e in args.engines.split(",")}
    load1 = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    out = ["## " + args.heading, "",
           "bench/webhooks.py, %s, commit %s, %d cores shared with another helper and the "
           "lead's test runs (load average %.1f/%.1f/%.1f at start, %.1f/%.1f/%.1f at end; "
           "%.0f s). One cofferd, 8 writers each on a keep-alive connection PUTting 4 KiB "
           "files into one volume, %d writes a run, %d runs each (a new volume a run, the two "
           "modes alternating; the webhook is disabled for \"none\"). "
           "\"slow\": a webhook for volume.changed whose receiver holds every POST 10 s "
           "(each send runs into the 10 s timeout and is retried)." % (
               datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), commit,
               os.cpu_count(), *load0, *load1, time.time() - t0, args.writes, args.runs), "",
           "| engine | no webhook, writes/s (median) | slow receiver, writes/s (median) | "
           "slow / none | runs (none; slow) | deliveries queued / POSTs the receiver got |",
           "|---|---|---|---|---|---|"]
    for e, r in res.items():
        a, b = statistics.median(r["none"]), statistics.median(r["slow"])
        out.append("| %s | %.0f | %.0f | %.2f | %s; %s | %d / %d |" % (
            e, a, b, b / a, ", ".join("%.0f" % x for x in r["none"]),
            ", ".join("%.0f" % x for x in r["slow"]), r.get("queued", 0), r.get("sent", 0)))
    out += ["", "A write queues at most one volume.changed a second per volume (coalesced in "
            "memory; one INSERT ... SELECT when it is due) and never waits for a send: "
            "the senders are their own threads, so a receiver that never answers in time "
            "costs a write nothing but that one insert a second."]
    text = "\n".join(out) + "\n"
    print(text)
    write_section(os.path.join(ROOT, "bench", "results.md"), args.heading, text)


if __name__ == "__main__":
    main()
