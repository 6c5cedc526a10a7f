"""The event-driven server (issue 13.1): many idle keep-alive connections and many
waiting long-polls are held at once without a thread each, other requests are served
meanwhile, a write wakes every long-poll on its volume, and a stop answers the
long-polls still waiting.

Structural, not timed: the count of cofferd's threads (/proc/PID/status) stays far
below the count of connections it holds (one thread per connection would need
thousands), and every answer is awaited within the harness's timeouts. The client
side is raw sockets and select(), one thread for all of them."""

import json
import resource
import select
import socket
import threading
import time

import harness
from harness import check, eq, expect

TIMEOUT = 240
IDLE = 2000          # idle keep-alive connections held
POLLS = 200          # long-polls waiting at once
THREADS_MAX = 200    # cofferd's threads while holding IDLE + POLLS connections


def _raise_nofile(need):
    """Raises this process's open-file limit to its hard limit; skips when even that
    is below `need` (cofferd raises its own the same way, at start)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    if soft < need:
        harness.skip("needs %d open files, the hard limit is %d" % (need, soft))


def _threads(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads: line for pid %d" % pid)


def _connect(srv):
    s = socket.create_connection((srv.host, srv.port), timeout=30 * harness.SCALE)
    return s


class Poll:
    """One long-poll on its own socket: sends GET .../changes?since=&wait=60 and reads
    the answer without blocking (feed() as bytes arrive)."""

    def __init__(self, srv, vid, since):
        self.srv, self.vid, self.since = srv, vid, since
        self.sock = _connect(srv)
        self.sock.setblocking(False)
        self.answers = []   # (status, json) in order
        self.buf = b""
        self.send()

    def send(self):
        req = ("GET /v1/volumes/%s/changes?since=%d&wait=60 HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Bearer %s\r\n\r\n" % (self.vid, self.since, self.srv.key))
        self.sock.setblocking(True)
        self.sock.sendall(req.encode())
        self.sock.setblocking(False)

    def feed(self):
        """Reads what there is; parses complete answers. False once the peer closed."""
        try:
            chunk = self.sock.recv(65536)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.buf += chunk
        self.parse()
        return True

    def parse(self):
        """Takes the complete answers out of the buffer."""
        while b"\r\n\r\n" in self.buf:
            head, rest = self.buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            clen = 0
            for l in lines[1:]:
                k, _, v = l.partition(":")
                if k.strip().lower() == "content-length":
                    clen = int(v.strip())
            if len(rest) < clen:
                return
            body, self.buf = rest[:clen], rest[clen:]
            self.answers.append((int(lines[0].split()[1]), json.loads(body) if body else None))

    def changed(self):
        """True once an answer carried a change; an empty one (the wait ended) is
        followed by the next long-poll, as a client does."""
        for st, body in self.answers:
            eq(st, 200, "a long-poll's status: %r" % (body,))
            if body["changes"]:
                return True
        if self.answers:
            self.answers = []
            self.send()
        return False


def _ready(polls, wait):
    """The polls whose socket is readable within `wait` seconds (poll(2): the
    descriptors are past select's 1,024)."""
    pl = select.poll()
    by_fd = {}
    for p in polls:
        pl.register(p.sock.fileno(), select.POLLIN)
        by_fd[p.sock.fileno()] = p
    return [by_fd[fd] for fd, _ in pl.poll(wait * 1000)]


def _pump(polls, until, what):
    """Feeds the polls until until(polls) is true; fails after the harness timeout."""
    deadline = time.time() + 120 * harness.SCALE
    while not until(polls):
        check(time.time() < deadline, what)
        for p in _ready(polls, 0.5):
            check(p.feed(), "a long-poll's connection stays open")


def test_many_idle_and_waiting_connections_without_threads():
    """2,000 idle keep-alive connections and 200 long-polls are held; meanwhile writes
    and reads on another volume are answered, cofferd runs far fewer threads than it
    holds connections, one write wakes all 200 long-polls with that change, and SIGTERM
    answers 200 long-polls waiting again and exits 0."""
    _raise_nofile(IDLE + POLLS + 200)
    with harness.server(args=["--max-conns", str(IDLE + POLLS + 100),
                              "--max-conns-per-ip", str(IDLE + POLLS + 100),
                              "--head-timeout", "600"]) as srv:
        quiet = srv.create_volume(name="waited-on")["id"]
        busy = srv.create_volume(name="busy")["id"]
        since = srv.seq(quiet)
        idle, polls = [], []
        try:
            # keep-alive connections: one request answered, then left open
            for i in range(IDLE):
                s = _connect(srv)
                idle.append(s)
                if i % 100 == 0:
                    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                    check(b"200" in s.recv(4096).split(b"\r\n")[0],
                          "health on kept connection %d" % i)
            polls = [Poll(srv, quiet, since) for _ in range(POLLS)]
            # other requests are served while all of that is held
            for i in range(20):
                expect(srv.put_file(busy, "f%d.txt" % i, b"x" * 4096), 201)
                r = expect(srv.get_file(busy, "f%d.txt" % i), 200)
                eq(len(r.body), 4096, "file %d read back" % i)
            # every long-poll is waiting (no answer with a change: nothing changed)
            _pump(polls, lambda ps: True, "")
            check(not any(p.changed() for p in polls), "no change answered before the write")
            threads = _threads(srv.proc.pid)
            check(threads < THREADS_MAX,
                  "cofferd holds %d connections with %d threads (under %d)"
                  % (IDLE + POLLS, threads, THREADS_MAX))
            # one write to the waited-on volume wakes every long-poll
            put = expect(srv.put_file(quiet, "woke.txt", b"now"), 201).json()
            _pump(polls, lambda ps: all(p.changed() for p in ps),
                  "all %d long-polls answered the write" % POLLS)
            for p in polls:
                st, body = p.answers[-1]
                paths = [c.get("path") for c in body["changes"]]
                check("woke.txt" in paths, "the long-poll's change names woke.txt: %r" % body)
                check(body["seq"] >= put.get("seq", 0), "the answer's seq: %r" % body)
            # the idle connections are still there and still serve
            for i in range(0, IDLE, 250):
                idle[i].sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                check(b"200" in idle[i].recv(4096).split(b"\r\n")[0],
                      "health on idle connection %d after the wake" % i)
            # long-polls waiting again are answered by a stop, which exits 0
            since2 = srv.seq(quiet)
            for p in polls:
                p.answers, p.since = [], since2
                p.send()
            _pump(polls, lambda ps: True, "")
            eq(srv.stop(), 0, "cofferd's exit code, stopped with 200 long-polls waiting")
            open_ = list(polls)
            deadline = time.time() + 60 * harness.SCALE
            while open_ and time.time() < deadline:
                for p in _ready(open_, 0.5):
                    if not p.feed() or p.answers:
                        open_.remove(p)
            for p in polls:
                check(p.answers, "a long-poll waiting at the stop was answered")
                eq(p.answers[0][0], 200, "the status of a long-poll answered at the stop")
        finally:
            for s in idle:
                s.close()
            for p in polls:
                p.sock.close()



@harness.timeout(TIMEOUT)
def test_exactly_a_full_batch_of_ready_connections_is_answered():
    """128 kept connections on one event loop turn ready at once (cofferd is stopped
    with SIGSTOP while each sends a request, then continued), and nothing else
    happens: every request is answered. libmicrohttpd 0.9.75's own epoll thread
    called epoll_wait again after a full batch of 128 events, before handling them,
    and slept there until the next connection timeout: none of the 128 was answered
    for 18 s. cofferd runs MHD's loops itself (evloops.c), whose wait is bounded.
    127 and 129 are checked beside it (they were answered before too)."""
    import os
    import signal
    _raise_nofile(400)
    for n in (127, 128, 129):
        with harness.server(args=["--threads", "1", "--max-conns-per-ip", "1000",
                                  "--head-timeout", "600"]) as srv:
            socks = []
            try:
                for i in range(n):
                    s = _connect(srv)
                    socks.append(s)
                    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                    check(b"200" in s.recv(4096).split(b"\r\n")[0],
                          "health on connection %d of %d" % (i, n))
                os.kill(srv.proc.pid, signal.SIGSTOP)
                try:
                    for s in socks:
                        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                    time.sleep(0.3)
                finally:
                    os.kill(srv.proc.pid, signal.SIGCONT)
                deadline = time.time() + 10 * harness.SCALE
                answered = 0
                for s in socks:
                    s.settimeout(max(0.05, deadline - time.time()))
                    try:
                        if s.recv(4096).startswith(b"HTTP/1.1 200"):
                            answered += 1
                    except socket.timeout:
                        pass
                eq(answered, n, "requests answered of %d sent at once on kept connections" % n)
            finally:
                for s in socks:
                    s.close()


def _cut_upload(srv, vid, name, head_extra, body):
    """Sends a PUT of `name` whose body stops short, then half-closes at once, so
    the last bytes and the FIN come together: the pattern the SDKs' retry tests
    make (a proxy cutting an upload). Returns the request id sent."""
    rid = "cut-%s" % name
    s = _connect(srv)
    head = ("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            "X-Request-Id: %s\r\nContent-Type: application/octet-stream\r\n%s\r\n") % (
        srv.file_path(vid, name), srv.key, rid, head_extra)
    s.sendall(head.encode() + body)
    s.shutdown(socket.SHUT_WR)
    return s, rid


@harness.timeout(TIMEOUT)
def test_upload_cut_by_the_client_ends_and_the_stop_is_prompt():
    """An upload whose client sends part of the body and closes (FIN with the last
    bytes) ends at once as aborted, not at the 300 s idle timeout: before, MHD's
    epoll loop took the last short read as "nothing more to read" and never saw
    the FIN, the request stayed counted in flight and the stop waited its 30 s
    drain. Both a Content-Length body and a chunked one; nothing is stored."""
    with harness.Server(args=["--threads", "2"]) as srv:
        vid = srv.create_volume()["id"]
        part = bytes(range(256)) * 1024                    # 256 KiB of a 1 MiB body
        socks, rids = [], []
        for i in range(4):
            s, rid = _cut_upload(srv, vid, "len%d.bin" % i,
                                 "Content-Length: %d\r\n" % (1 << 20), part)
            socks.append(s)
            rids.append(rid)
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(part[j:j + 65536]), part[j:j + 65536])
                              for j in range(0, len(part), 65536))
            s, rid = _cut_upload(srv, vid, "chunk%d.bin" % i,
                                 "Transfer-Encoding: chunked\r\n", chunks)
            socks.append(s)
            rids.append(rid)
        deadline = time.time() + 20 * harness.SCALE
        left = rids
        while left and time.time() < deadline:
            log = srv.log()
            left = [r for r in rids if '"requestId":"%s"' % r not in log]
            time.sleep(0.2)
        check(not left, "cut uploads still under way after 20 s (no request log "
              "line): %s\n%s" % (left, srv.log_tail()))
        for s in socks:
            s.close()
        eq(len(srv.list_files(vid)["files"]), 0,
           "files stored by cut uploads")
        t0 = time.time()
        eq(srv.stop(timeout=10), 0, "cofferd's exit code, stopped after cut uploads")
        check(time.time() - t0 < 10 * harness.SCALE, "the stop took its drain")


class StallProxy:
    """A TCP relay in front of the S3 peer that the test can stall: while stalled,
    bytes from cofferd are held, not passed on (so an S3 request waits, as on a
    stalled peer), and `held` is set once a request's bytes are held. release()
    passes them on; a stall also ends by itself after `bound` seconds, so a
    blocked cofferd is never left waiting for the whole test."""

    def __init__(self, port, bound):
        self.up_port, self.bound = port, bound
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.go = threading.Event()
        self.go.set()
        self.held = threading.Event()
        self.stalled_at = None
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self):
        self.held.clear()
        self.stalled_at = time.time()
        self.go.clear()

    def release(self):
        self.go.set()

    def stalled(self):
        return not self.go.is_set()

    def _accept(self):
        while not self.closing:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.up_port))
            threading.Thread(target=self._pump, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, False), daemon=True).start()

    def _pump(self, src, dst, from_cofferd):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if from_cofferd and not self.go.is_set():
                    self.held.set()
                    self.go.wait(max(0.0, self.stalled_at + self.bound - time.time()))
                    self.go.set()
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.closing = True
        self.go.set()
        self.lsock.close()


@harness.timeout(TIMEOUT)
def test_a_stalled_s3_read_does_not_hold_other_gets():
    """With content in S3, a GET waiting on a stalled S3 peer does not stop another
    connection's GET on the same event loop (--threads 1) from being answered:
    GETs on remote engines run on the workers (issue 13.1). Before, the loop ran
    the GET handler, so the second GET waited for the stalled read. Not timed:
    the second answer must come while the S3 request is still held by the test's
    relay (whose stall ends by itself after a bound, so the old code fails rather
    than hangs)."""
    import s3peer
    peer = s3peer.shared()
    proxy = StallProxy(peer["port"], bound=20 * harness.SCALE)
    url = s3peer.url_for(peer, "stall-%d" % proxy.port).replace(
        ":%d" % peer["port"], ":%d" % proxy.port)
    try:
        with harness.Server(args=["--threads", "1", "--blobs", url],
                            env=peer["env"]) as srv:
            vid = srv.create_volume()["id"]
            big = bytes(range(256)) * 256                 # 64 KiB: in S3, not inline
            srv.put_ok(vid, "big.bin", big)
            srv.put_ok(vid, "small.txt", b"small")        # inline: no S3 read
            expect(srv.get_file(vid, "small.txt"), 200)
            proxy.stall()
            got = {}

            def slow_get():
                got["r"] = srv.get_file(vid, "big.bin", timeout=60 * harness.SCALE)
            t = threading.Thread(target=slow_get, daemon=True)
            t.start()
            check(proxy.held.wait(10 * harness.SCALE),
                  "the GET of big.bin reached the S3 peer")
            r = srv.get_file(vid, "small.txt", timeout=60 * harness.SCALE)
            still = proxy.stalled()
            eq(r.body, b"small", "the other GET's body")
            check(still, "the other GET was answered while the S3 read of big.bin was "
                  "still stalled (it waited for the stall to end: the GET ran on the "
                  "event loop)")
            vols = expect(srv.get("/v1/volumes/%s" % vid, timeout=60 * harness.SCALE), 200)
            check(proxy.stalled(), "GET of the volume answered while S3 stalled")
            eq(vols.json()["id"], vid, "the volume's id")
            proxy.release()
            t.join(60 * harness.SCALE)
            eq(got["r"].status, 200, "the stalled GET's status once S3 answers")
            eq(got["r"].body, big, "the stalled GET's body")
    finally:
        proxy.close()


@harness.timeout(TIMEOUT)
def test_a_stalled_postgres_read_does_not_hold_other_requests():
    """On PostgreSQL a GET's key check and reads wait on the database, on a worker:
    while the test holds every byte cofferd sends PostgreSQL (a relay, stalled
    with a bound), a GET on one connection waits and another connection's
    /v1/health on the same event loop (--threads 1) is answered. Before, the key
    was read on the loop at MHD's first call, so /v1/health waited too."""
    if harness.ENGINE != "pg":
        harness.skip("a PostgreSQL test: the pg pass runs it")
    import pgpeer
    cluster = pgpeer.shared()
    url = cluster.new_database()
    port = int(url.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    proxy = StallProxy(port, bound=20 * harness.SCALE)
    try:
        with harness.Server(args=["--threads", "1", "--meta",
                                  url.replace(":%d/" % port, ":%d/" % proxy.port)]) as srv:
            vid = srv.create_volume()["id"]
            proxy.stall()
            got = {}

            def slow_get():
                got["r"] = srv.get("/v1/volumes/%s" % vid, timeout=60 * harness.SCALE)
            t = threading.Thread(target=slow_get, daemon=True)
            t.start()
            check(proxy.held.wait(10 * harness.SCALE),
                  "the GET of the volume reached PostgreSQL")
            r = expect(srv.get("/v1/health", key=None, timeout=60 * harness.SCALE), 200)
            check(proxy.stalled(), "/v1/health was answered while PostgreSQL was still "
                  "stalled (it waited: the key of the other GET was read on the loop)")
            eq(r.json().get("ok"), True, "/v1/health")
            proxy.release()
            t.join(60 * harness.SCALE)
            eq(got["r"].status, 200, "the stalled GET's status once PostgreSQL answers")
            eq(got["r"].json()["id"], vid, "the stalled GET's volume")
    finally:
        proxy.close()
        cluster.drop_database(url)
