#!/usr/bin/env python3
"""TLS client for the cc-egress interception tests: record shapes curl never makes.

intercept_client.py PROXY_PORT HOST PORT CA_FILE MODE

CONNECTs through the HTTP proxy on 127.0.0.1:PROXY_PORT to HOST:PORT, starts
TLS (trusting CA_FILE, asking for HOST), then by MODE:
  bytewise   one GET /pattern/70000, its head sent one byte per TLS record
  pipelined  GET /pattern/1000 and GET /hello in one record, both answers read
  tls12      one GET /pattern/70000 with the client held to TLS 1.2
Prints one JSON line: the TLS version, and for each answer its status line,
its body's length and whether the body is what the origin sends.
"""
import json
import socket
import ssl
import sys


def pattern(n):
    return (bytes(range(251)) * (n // 251 + 1))[:n]


def read_answer(t, pending):
    while b"\r\n\r\n" not in pending:
        more = t.recv(65536)
        if not more:
            raise SystemExit("connection closed before an answer")
        pending += more
    head, _, rest = pending.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    while len(rest) < length:
        more = t.recv(65536)
        if not more:
            break
        rest += more
    return lines[0], rest[:length], rest[length:]


def main():
    proxy, host, port, ca, mode = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    s = socket.create_connection(("127.0.0.1", proxy), timeout=20)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += s.recv(1)
    ctx = ssl.create_default_context(cafile=ca)
    if mode == "tls12":
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    t = ctx.wrap_socket(s, server_hostname=host)
    authority = f"{host}:{port}"
    asks = []
    if mode in ("bytewise", "tls12"):
        asks = [("/pattern/70000", pattern(70000))]
        req = f"GET /pattern/70000 HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode()
        if mode == "bytewise":
            for i in range(len(req)):
                t.sendall(req[i:i + 1])  # each call is a record of its own
        else:
            t.sendall(req)
    elif mode == "pipelined":
        asks = [("/pattern/1000", pattern(1000)), ("/hello", b"hello\n")]
        t.sendall(b"".join(f"GET {p} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode() for p, _ in asks))
    else:
        raise SystemExit("unknown mode " + mode)
    answers = []
    pending = b""
    for _, want in asks:
        status, body, pending = read_answer(t, pending)
        answers.append({"status": status, "length": len(body), "same": body == want})
    print(json.dumps({"version": t.version(), "answers": answers}), flush=True)


main()
