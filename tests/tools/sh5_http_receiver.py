#!/usr/bin/python3
"""Small local HTTP receiver for the sh5 stream tests.

    sh5_http_receiver.py [--tls CERT KEY] DIR   record requests
    sh5_http_receiver.py --hang DIR             accept TCP connections,
                                                never answer

Listens on 127.0.0.1 on a free port and writes the port to DIR/port once
it is listening (and its pid to DIR/pid).  In record mode each request is
appended as one JSON line to DIR/requests.jsonl:
{"method", "path", "peer" (the client's port), "headers" (lower-case
names), "body", "status"}; the
answer is 204, or the status code written in DIR/status when that file
exists (to simulate a failing server; the request is still recorded).
With --tls it serves HTTPS with the given certificate and key (PEM).
In --hang mode connections are accepted and held open, never read from or
answered, until the process is terminated.
"""
import http.server
import json
import os
import socket
import ssl
import sys
import threading


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def hang(d):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    write_atomic(os.path.join(d, "pid"), "%d\n" % os.getpid())
    write_atomic(os.path.join(d, "port"), "%d\n" % s.getsockname()[1])
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)


def record(d, tls=None):
    lock = threading.Lock()
    log = os.path.join(d, "requests.jsonl")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n).decode("utf-8", "replace")
            status = 204
            try:
                with open(os.path.join(d, "status")) as f:
                    status = int(f.read().strip())
            except (OSError, ValueError):
                pass
            rec = {"method": "POST", "path": self.path,
                   "peer": self.client_address[1],
                   "headers": {k.lower(): v for k, v in self.headers.items()},
                   "body": body, "status": status}
            with lock:
                with open(log, "a") as f:
                    f.write(json.dumps(rec) + "\n")
            msg = b"" if status == 204 else b'{"error":"simulated failure"}'
            self.send_response(status)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            if msg:
                self.wfile.write(msg)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls[0], tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    write_atomic(os.path.join(d, "pid"), "%d\n" % os.getpid())
    write_atomic(os.path.join(d, "port"), "%d\n" % srv.server_address[1])
    srv.serve_forever()


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--hang":
        hang(args[1])
    elif len(args) == 1 and not args[0].startswith("-"):
        record(args[0])
    elif len(args) == 4 and args[0] == "--tls":
        record(args[3], (args[1], args[2]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
