#!/usr/bin/env python3
"""Test origin for cc-egress: HTTP/1.1 with keep-alive on 127.0.0.1.

GET  /hello          -> "hello\n"
GET  /size/N         -> N bytes of 'x' (Content-Length)
GET  /chunked        -> "a\nb\nc\n" as a chunked response
GET  /headers        -> the request headers it saw, one per line
GET  /pattern/N      -> N bytes of 0..250 repeated (Content-Length): a lost,
                        doubled or reordered piece shows
GET  /close/N        -> the same N bytes with no length, ended by closing the
                        connection (over TLS without close_notify)
POST /echo           -> "got N bytes" (Content-Length or chunked request body)
POST /sha256         -> the body's SHA-256 in hex
Prints its port on stdout once listening (argv[1] = port, 0 for ephemeral;
argv[2], optional: seconds after which an idle keep-alive connection is closed,
0 for never). With ORIGIN_TLS_CERT and ORIGIN_TLS_KEY set, it speaks HTTPS
with that certificate (ORIGIN_TLS_MAX=1.2: TLS 1.2 at most); with ORIGIN_LOG set, it appends each request line
("METHOD PATH") to that file, with ORIGIN_AUTH_LOG the same and the
Authorization header ("METHOD PATH VALUE", "-" for none), with ORIGIN_TLS_LOG
whether the request's TLS connection resumed a session ("PATH resumed|full").
"""
import hashlib
import os
import ssl
import http.server
import socketserver
import sys


def pattern(n):
    return (bytes(range(251)) * (n // 251 + 1))[:n]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_body(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_request(self, code="-", size="-"):
        log = os.environ.get("ORIGIN_LOG")
        if log:
            with open(log, "a") as f:
                f.write(f"{self.command} {self.path}\n")
        tls = os.environ.get("ORIGIN_TLS_LOG")
        if tls:
            with open(tls, "a") as f:
                f.write(f"{self.path} {'resumed' if self.connection.session_reused else 'full'}\n")
        auth = os.environ.get("ORIGIN_AUTH_LOG")
        if auth:
            with open(auth, "a") as f:
                f.write(f"{self.command} {self.path} {self.headers.get('Authorization', '-')}\n")

    def do_GET(self):
        if self.path == "/hello":
            self.send_body(b"hello\n")
        elif self.path.startswith("/size/"):
            self.send_body(b"x" * int(self.path[6:]))
        elif self.path.startswith("/pattern/"):
            self.send_body(pattern(int(self.path[9:])), "application/octet-stream")
        elif self.path.startswith("/close/"):
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(pattern(int(self.path[7:])))
            self.wfile.flush()
            self.close_connection = True
            # No unwrap: the TLS stream ends without close_notify.
            self.connection.shutdown(2)
        elif self.path == "/headers":
            self.send_body("".join(f"{k.lower()}: {v}\n" for k, v in self.headers.items()).encode())
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"a\n", b"b\n", b"c\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_error(404)

    do_HEAD = do_GET

    def do_POST(self):
        body = hashlib.sha256()
        n = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                part = self.rfile.read(size)
                body.update(part)
                n += len(part)
                self.rfile.readline()
        else:
            part = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body.update(part)
            n = len(part)
        if self.path == "/sha256":
            self.send_body(body.hexdigest().encode() + b"\n")
        else:
            self.send_body(f"got {n} bytes\n".encode())


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog is 5: a test dialling it a thousand
    # times in a row overflowed it now and then, and each dropped SYN cost
    # a one-second retransmission.
    request_queue_size = 128


if len(sys.argv) > 2 and float(sys.argv[2]) > 0:
    Handler.timeout = float(sys.argv[2])
srv = Server(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Handler)
if os.environ.get("ORIGIN_TLS_CERT"):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.environ["ORIGIN_TLS_CERT"], os.environ["ORIGIN_TLS_KEY"])
    if os.environ.get("ORIGIN_TLS_MAX") == "1.2":
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
