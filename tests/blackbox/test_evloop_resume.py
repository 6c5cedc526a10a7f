"""A kept-alive connection whose request ran on a worker (suspended, then resumed by
the worker: every GET on the PostgreSQL pass, every PUT on either) answers the next
request on it, whether that request is sent once the answer is in, or pipelined
behind the first so that its bytes arrive while the connection is suspended."""
import socket

import harness
from harness import check, eq

ROUNDS = 300


def _read_answer(s, buf):
    """(status line, rest of buf) of one answer read from s after buf."""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise AssertionError("the connection closed before an answer")
        buf += d
    head, buf = buf.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(buf) < n:
        d = s.recv(65536)
        if not d:
            raise AssertionError("the connection closed in an answer's body")
        buf += d
    return head.split(b"\r\n")[0], buf[n:]


def _req(srv, method, path, body=b""):
    return (("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Length: %d\r\n\r\n") % (method, path, srv.key, len(body))).encode() + body


def _rounds(srv, first, second, pipelined):
    s = socket.create_connection((srv.host, srv.port))
    s.settimeout(20 * harness.SCALE)
    buf = b""
    try:
        for i in range(ROUNDS):
            try:
                if pipelined:
                    s.sendall(first + second)
                    st1, buf = _read_answer(s, buf)
                else:
                    s.sendall(first)
                    st1, buf = _read_answer(s, buf)
                    s.sendall(second)
                st2, buf = _read_answer(s, buf)
            except socket.timeout:
                raise AssertionError("round %d of %d (pipelined=%s): no answer to the %s"
                                     " request on the kept connection"
                                     % (i, ROUNDS, pipelined,
                                        "first or second"))
            check(st1.split(b" ")[1] in (b"200", b"201"), "round %d: the first answer: %r"
                  % (i, st1))
            eq(st2.split(b" ")[1], b"200", "round %d: the second answer" % i)
    finally:
        s.close()


def test_get_after_a_worker_run_get_on_a_kept_connection(srv):
    vid = srv.create_volume(name="resume-get")["id"]
    srv.put_ok(vid, "a.bin", b"a" * 4096)
    get = _req(srv, "GET", srv.file_path(vid, "a.bin"))
    _rounds(srv, get, get, pipelined=False)
    _rounds(srv, get, get, pipelined=True)


def test_get_after_a_put_on_a_kept_connection(srv):
    vid = srv.create_volume(name="resume-put")["id"]
    srv.put_ok(vid, "a.bin", b"a" * 4096)
    put = _req(srv, "PUT", srv.file_path(vid, "b.bin"), b"b" * 100)
    get = _req(srv, "GET", srv.file_path(vid, "a.bin"))
    _rounds(srv, put, get, pipelined=False)
    _rounds(srv, put, get, pipelined=True)
