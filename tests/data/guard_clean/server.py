"""A small TCP echo server with a health check that runs a command."""
import argparse
import base64
import os
import socket
import subprocess
import sys


def health():
    # Ask the local service whether it is up; the output goes to the log.
    out = subprocess.run(["systemctl", "is-active", "nginx"], capture_output=True, text=True)
    return out.stdout.strip() == "active"


def serve(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(5)
    while True:
        conn, addr = s.accept()
        data = conn.recv(4096)
        if data.startswith(b"b64:"):
            data = base64.b64decode(data[4:])
        conn.sendall(data)
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7000)
    args = ap.parse_args()
    if not health():
        print("nginx is not running; ignoring the previous state", file=sys.stderr)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    print(env.get("HOME"))
    serve(args.host, args.port)


if __name__ == "__main__":
    main()
