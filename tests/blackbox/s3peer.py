"""s3peer — an S3 peer for the tests: s3rver (tests/s3, which checks SigV4 signatures)
on 127.0.0.1 over a temp dir, with one bucket and one key pair.

    import s3peer
    with s3peer.peer() as p:        # or: p = s3peer.start(); ...; s3peer.stop(p)
        harness.server(args=["--blobs", p["url"]], env=p["env"])

start(bucket="coffer", prefix="blobs", region="us-east-1") -> dict:
    endpoint    "http://127.0.0.1:PORT"
    bucket, region, prefix
    access_key, secret_key
    url         "s3://BUCKET/PREFIX?endpoint=ENDPOINT&region=REGION" (cofferd --blobs)
    env         {"AWS_ACCESS_KEY_ID": ..., "AWS_SECRET_ACCESS_KEY": ...} for cofferd
    dir         where s3rver keeps the objects (removed by stop)
stop(p)          stops it (SIGTERM, then SIGKILL) and removes its dir.
pause(p) / resume(p)   stop s3rver and start it again on the same port and dir (an
                 outage: requests meanwhile find nothing listening).
url_for(p, prefix) -> the --blobs URL of another prefix in the same bucket (servers over
                 their own data dirs must not share a prefix: each one's GC would take
                 the others' objects for leftovers).
shared() -> the peer of the run's PostgreSQL + S3 pass ($COFFER_TEST_S3, started and
                 stopped by tests/run.py), or one started for this process (stopped at
                 exit) when the variable is not set (a module run by hand).
to_env(p) -> the string run.py exports in $COFFER_TEST_S3 for its workers.
requests(p) -> ["METHOD URL", ...]: every request s3rver got so far, in order.
keys(p, prefix=None) -> sorted object keys in the bucket, listed by s3rver's own files.
The first start installs s3rver with `npm ci` (harness.npm_ready).
"""

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import harness

PEER_JS = os.path.join(harness.ROOT, "tests", "s3", "peer.js")
_FIELDS = ("bucket", "prefix", "region", "access_key", "secret_key", "root", "dir", "log",
           "port", "endpoint", "url", "env")
_lock = threading.Lock()
_shared = None


def _launch(p, port=0):
    node = harness.npm_ready("s3", "@20minutes/s3rver")
    proc = subprocess.Popen([node, "--openssl-legacy-provider", PEER_JS, p["dir"], p["bucket"], p["access_key"],
                             p["secret_key"], str(port)], stdout=subprocess.PIPE,
                            stderr=open(p["log"], "ab"), stdin=subprocess.DEVNULL,
                            start_new_session=True)
    line = proc.stdout.readline()  # s3rver prints its port once it listens
    try:
        got = json.loads(line)["port"]
    except (ValueError, KeyError):
        proc.kill()
        proc.wait()
        with open(p["log"], "rb") as f:
            raise AssertionError("s3rver did not start (%r):\n%s" % (
                line, f.read().decode("utf-8", "replace")[-2000:]))
    p["proc"] = proc
    return got


def start(bucket="coffer", prefix="blobs", region="us-east-1"):
    """Starts s3rver with a new bucket and key pair; see the module docstring."""
    root = tempfile.mkdtemp(prefix="coffer-s3-")
    p = {"bucket": bucket, "prefix": prefix, "region": region,
         "access_key": "AK" + secrets.token_hex(8).upper(),
         "secret_key": secrets.token_hex(20), "root": root,
         "dir": os.path.join(root, "objects"), "log": os.path.join(root, "s3rver.log")}
    os.mkdir(p["dir"])
    port = _launch(p)
    p["port"] = port
    p["endpoint"] = "http://127.0.0.1:%d" % port
    p["url"] = url_for(p, prefix)
    p["env"] = {"AWS_ACCESS_KEY_ID": p["access_key"],
                "AWS_SECRET_ACCESS_KEY": p["secret_key"]}
    return p


def url_for(p, prefix):
    """The --blobs URL of `prefix` in p's bucket."""
    return "s3://%s/%s?endpoint=%s&region=%s" % (p["bucket"], prefix, p["endpoint"],
                                                 p["region"])


def _halt(p):
    proc = p.get("proc")
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()


def pause(p):
    """Stops s3rver, keeping its objects: the endpoint refuses connections."""
    _halt(p)


def resume(p, wait=10):
    """Starts s3rver again on the same port and objects (retrying while the port is
    still held by the old listener)."""
    deadline = time.time() + wait * harness.SCALE
    while True:
        try:
            _launch(p, p["port"])
            return
        except AssertionError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def stop(p):
    """Stops s3rver and removes its temp dir."""
    _halt(p)
    shutil.rmtree(p["root"], ignore_errors=True)


def to_env(p):
    """p as the JSON that shared() reads back in another process."""
    return json.dumps({k: p[k] for k in _FIELDS})


def shared():
    """The run's peer ($COFFER_TEST_S3: attached, never stopped here), or one of this
    process's own, stopped at exit."""
    global _shared
    with _lock:
        if _shared is None:
            env = os.environ.get("COFFER_TEST_S3")
            if env:
                _shared = json.loads(env)
            else:
                _shared = start()
                atexit.register(stop, _shared)
        return _shared


@contextlib.contextmanager
def peer(**kw):
    """start() as a context manager: stop() at the end."""
    p = start(**kw)
    try:
        yield p
    finally:
        stop(p)


def requests(p):
    """Every request s3rver got so far, as "METHOD URL" (its log holds them)."""
    with open(p["log"], "rb") as f:
        return [l for l in f.read().decode("utf-8", "replace").splitlines()
                if l.split(" ", 1)[0] in ("GET", "PUT", "HEAD", "POST", "DELETE")]


def keys(p, prefix=None):
    """Object keys in the bucket (from s3rver's files, not through the S3 API, so a
    test sees what is stored whatever cofferd says), optionally under `prefix`."""
    base = os.path.join(p["dir"], p["bucket"])
    suffix = "._S3rver_object"
    out = []
    for d, _, files in os.walk(base):
        for f in files:
            if f.endswith(suffix):
                k = os.path.relpath(os.path.join(d, f[:-len(suffix)]), base)
                if prefix is None or k.startswith(prefix):
                    out.append(k)
    return sorted(out)
