#!/usr/bin/env python3
"""A smart-HTTP git upstream that streams every request body into
git-http-backend as it arrives, chunked and gzip-encoded bodies included
(lighttpd answers a chunked upload to a CGI with 411 before reading it).

Usage: stream_upstream.py PORT_FILE REPOS_ROOT
Listens on 127.0.0.1 (a free port, written to PORT_FILE once listening);
serves /git/<repo>.git/... with no authentication (REMOTE_USER is set, so
receive-pack is on). For tests only.
"""
import http.server
import os
import subprocess
import sys
import threading

ROOT = sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.cgi()

    def do_POST(self):
        self.cgi()

    def cgi(self):
        path, _, query = self.path.partition("?")
        if not path.startswith("/git/"):
            self.send_error(404)
            return
        env = {
            "GIT_PROJECT_ROOT": ROOT,
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": ROOT,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PATH_INFO": path[len("/git"):],
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "GATEWAY_INTERFACE": "CGI/1.1",
        }
        # Every request header as CGI gives it (HTTP_GIT_PROTOCOL asks for
        # protocol v2, HTTP_CONTENT_ENCODING for a gzip body).
        for name, value in self.headers.items():
            env["HTTP_" + name.upper().replace("-", "_")] = value
        if self.headers.get("Content-Type"):
            env["CONTENT_TYPE"] = self.headers["Content-Type"]
        chunked = "chunked" in (self.headers.get("Transfer-Encoding") or "").lower()
        length = self.headers.get("Content-Length")
        if length is not None and not chunked:
            env["CONTENT_LENGTH"] = length
        proc = subprocess.Popen(["git", "http-backend"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        out = []
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
        reader.start()
        # The body goes on to git as it comes, piece by piece.
        def copy(left):
            while left:
                piece = self.rfile.read1(min(left, 4096))
                if not piece:
                    raise EOFError
                proc.stdin.write(piece)
                proc.stdin.flush()
                left -= len(piece)

        try:
            if chunked:
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    copy(size)
                    self.rfile.readline()
            elif length:
                copy(int(length))
        except (BrokenPipeError, EOFError, ValueError):
            pass
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        reader.join()
        proc.wait()
        raw = out[0] if out else b""
        sep = b"\r\n\r\n" if b"\r\n\r\n" in raw else b"\n\n"
        head, _, body = raw.partition(sep)
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
