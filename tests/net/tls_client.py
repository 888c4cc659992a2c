#!/usr/bin/env python3
"""Scripted TLS 1.3 client for the cc-egress tests: hand-made ClientHellos.

tls_client.py PROXY_PORT TARGET MODE SNI [SNI2] [P384_POINT_HEX]

Connects to 127.0.0.1:PROXY_PORT, sends "CONNECT TARGET" (TARGET "direct":
PROXY_PORT is the TLS server itself, no CONNECT), then:
  retry  first ClientHello names SNI with an x25519 key share only; the server
         (which has only secp384r1) answers with a HelloRetryRequest; the
         client sends change_cipher_spec and a second ClientHello naming SNI2
         with the secp384r1 key share P384_POINT_HEX (a valid point).
  alert  an alert record first, then a ClientHello naming SNI (secp384r1 share).
Prints one JSON line: the proxy's answer to CONNECT, whether a retry request
came, and what the server sent after the last ClientHello: "server_hello",
"alert", "closed" (connection closed with nothing), or "other".
"""
import json
import os
import socket
import struct
import sys


def u16(n):
    return struct.pack("!H", n)


def ext(t, body):
    return u16(t) + u16(len(body)) + body


def client_hello(sni, group, key, random, session):
    name = sni.encode()
    exts = ext(0, u16(len(name) + 3) + b"\x00" + u16(len(name)) + name)
    exts += ext(43, b"\x02\x03\x04")                           # supported_versions: TLS 1.3
    exts += ext(10, u16(4) + u16(0x001D) + u16(0x0018))        # supported_groups: x25519, secp384r1
    exts += ext(13, u16(6) + u16(0x0804) + u16(0x0403) + u16(0x0401))  # signature_algorithms
    exts += ext(51, u16(len(key) + 4) + u16(group) + u16(len(key)) + key)  # key_share
    body = b"\x03\x03" + random + bytes([len(session)]) + session + u16(2) + u16(0x1301) + b"\x01\x00"
    body += u16(len(exts)) + exts
    msg = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + u16(len(msg)) + msg


def read_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


def read_record(s):
    head = read_exact(s, 5)
    if head is None:
        return None, None
    body = read_exact(s, struct.unpack("!H", head[3:5])[0])
    return head[0], body


HRR = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")


def what_came(s):
    while True:
        t, body = read_record(s)
        if t is None:
            return "closed"
        if t == 0x14:
            continue
        if t == 0x15:
            return "alert"
        if t == 0x16 and body and body[0] == 2 and body[6:38] != HRR:
            return "server_hello"
        return "other"


def main():
    port, target, mode, sni = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    answer = b"HTTP/1.1 200 (direct)\r\n\r\n"
    if target != "direct":
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = s.recv(4096)
        if not chunk:
            break
        answer += chunk
    result = {"connect": answer.split(b"\r\n")[0].decode(errors="replace"), "retry": False}
    if not answer.startswith(b"HTTP/1.1 200"):
        print(json.dumps(result))
        return
    random, session = os.urandom(32), os.urandom(32)
    try:
        if mode == "retry":
            sni2, point = sys.argv[5], bytes.fromhex(sys.argv[6])
            s.sendall(client_hello(sni, 0x001D, os.urandom(32), random, session))
            t, body = read_record(s)
            result["retry"] = t == 0x16 and body is not None and body[0] == 2 and body[6:38] == HRR
            if not result["retry"]:
                result["after"] = "no retry request"
                print(json.dumps(result))
                return
            s.sendall(b"\x14\x03\x03\x00\x01\x01" + client_hello(sni2, 0x0018, point, random, session))
        else:
            point = bytes.fromhex(sys.argv[5])
            s.sendall(b"\x15\x03\x03\x00\x02\x01\x5a" + client_hello(sni, 0x0018, point, random, session))
        result["after"] = what_came(s)
    except (ConnectionResetError, socket.timeout) as e:
        result["after"] = "closed" if isinstance(e, ConnectionResetError) else "timeout"
    print(json.dumps(result))


main()
