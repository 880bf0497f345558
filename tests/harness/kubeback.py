#!/usr/bin/python3
"""kubeback PORTFILE: the streaming half of the Kubernetes API stand-in.

nginx (tests/harness/kubeapi.sh) terminates mTLS and proxies these paths here,
plain HTTP/1.1 on a loopback port this server picks and writes to PORTFILE:

  GET /api/v1/namespaces                 a NamespaceList
  GET /api/v1/namespaces?watch=1         a chunked watch: one MODIFIED event
                                         every 0.2 s until the client leaves
  GET /api/v1/namespaces/default/pods/kh-test-pod        the pod
  GET|POST .../pods/kh-test-pod/exec     WebSocket, v5/v4.channel.k8s.io:
                                         stdin comes back on stdout; the
                                         exit status when stdin closes
  GET /kh-echo  (Upgrade: kh-echo)       101, then every byte back
  GET /kh-stream?bytes=N                 N bytes (Content-Length), fast
  GET /kh-whoami-slow?ms=N               waits N ms, then 200 "ok"

It parses just enough HTTP for that; it is a test fixture, not a server.
"""
import asyncio
import base64
import hashlib
import json
import os
import struct
import sys
import urllib.parse

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
BLOCK = b"kubehsm-relay-stream-" * 3120   # ~64 KiB


def ns(rv):
    return {"kind": "Namespace", "apiVersion": "v1",
            "metadata": {"name": "default", "uid": "00000000-0000-0000-0000-00000000000a",
                         "resourceVersion": str(rv),
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Active"}}


POD = {"kind": "Pod", "apiVersion": "v1",
       "metadata": {"name": "kh-test-pod", "namespace": "default", "resourceVersion": "1",
                    "uid": "00000000-0000-0000-0000-000000000001",
                    "creationTimestamp": "2026-01-01T00:00:00Z"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]},
       "status": {"phase": "Running",
                  "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                         "image": "busybox", "imageID": "",
                                         "state": {"running": {}}}]}}


async def read_head(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return method, target, headers


def respond(writer, code, body, ctype="application/json", extra=""):
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    writer.write(b"HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n" %
                 (code, ctype.encode(), len(body), extra.encode()) + body)


async def watch(writer):
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    rv = 11
    while True:
        ev = json.dumps({"type": "MODIFIED", "object": ns(rv)}).encode() + b"\n"
        writer.write(b"%x\r\n%s\r\n" % (len(ev), ev))
        await writer.drain()
        rv += 1
        await asyncio.sleep(0.2)


async def stream(writer, n):
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                 b"Content-Length: %d\r\n\r\n" % n)
    while n > 0:
        chunk = BLOCK[:min(n, len(BLOCK))]
        writer.write(chunk)
        n -= len(chunk)
        await writer.drain()


async def echo(reader, writer):
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: kh-echo\r\n"
                 b"Connection: Upgrade\r\n\r\n")
    while True:
        data = await reader.read(65536)
        if not data:
            break
        writer.write(data)
        await writer.drain()


async def ws_read(reader):
    b0, b1 = await reader.readexactly(2)
    op, n = b0 & 0x0f, b1 & 0x7f
    if n == 126:
        n = struct.unpack(">H", await reader.readexactly(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", await reader.readexactly(8))[0]
    mask = await reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
    data = bytearray(await reader.readexactly(n))
    for i in range(n):
        data[i] ^= mask[i % 4]
    return op, bytes(data)


def ws_frame(op, data):
    n = len(data)
    if n < 126:
        head = struct.pack(">BB", 0x80 | op, n)
    elif n < 65536:
        head = struct.pack(">BBH", 0x80 | op, 126, n)
    else:
        head = struct.pack(">BBQ", 0x80 | op, 127, n)
    return head + data


async def exec_ws(reader, writer, headers):
    offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",")]
    proto = next((p for p in ("v5.channel.k8s.io", "v4.channel.k8s.io") if p in offered), None)
    if headers.get("upgrade", "").lower() != "websocket" or proto is None:
        respond(writer, 400, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "message": "kubeback speaks WebSocket v5/v4 only", "code": 400})
        return
    accept = base64.b64encode(hashlib.sha1(headers["sec-websocket-key"].encode() +
                                           WS_GUID).digest())
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                 b"Sec-WebSocket-Protocol: %s\r\n\r\n" % (accept, proto.encode()))
    await writer.drain()
    while True:
        try:
            op, data = await ws_read(reader)
        except asyncio.IncompleteReadError:
            return
        if op == 8:        # close
            writer.write(ws_frame(8, data[:2]))
            return
        if op == 9:        # ping
            writer.write(ws_frame(10, data))
            continue
        if op not in (1, 2) or not data:
            continue
        ch, payload = data[0], data[1:]
        if ch == 0 and payload:                    # stdin -> stdout
            writer.write(ws_frame(2, b"\x01" + payload))
        elif ch == 255 and payload[:1] == b"\x00":  # v5: stdin closed
            writer.write(ws_frame(2, b"\x03" + json.dumps(
                {"metadata": {}, "status": "Success"}).encode()))
            writer.write(ws_frame(8, struct.pack(">H", 1000)))
            await writer.drain()
            return
        await writer.drain()


async def handle(reader, writer):
    try:
        while True:
            try:
                method, target, headers = await read_head(reader)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                return
            url = urllib.parse.urlsplit(target)
            q = urllib.parse.parse_qs(url.query)
            n = int(headers.get("content-length", "0") or 0)
            if n:
                await reader.readexactly(n)
            if url.path == "/api/v1/namespaces":
                if q.get("watch", ["0"])[0] in ("1", "true"):
                    await watch(writer)
                    return
                respond(writer, 200, {"kind": "NamespaceList", "apiVersion": "v1",
                                      "metadata": {"resourceVersion": "10"}, "items": [ns(10)]})
            elif url.path == "/api/v1/namespaces/default/pods/kh-test-pod":
                respond(writer, 200, POD)
            elif url.path == "/api/v1/namespaces/default/pods/kh-test-pod/exec":
                await exec_ws(reader, writer, headers)
                return
            elif url.path == "/kh-echo" and headers.get("upgrade") == "kh-echo":
                await echo(reader, writer)
                return
            elif url.path == "/kh-stream":
                await stream(writer, int(q.get("bytes", ["0"])[0]))
            elif url.path == "/kh-whoami-slow":
                await asyncio.sleep(int(q.get("ms", ["0"])[0]) / 1000)
                respond(writer, 200, b"ok\n", "text/plain")
            else:
                respond(writer, 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                      "reason": "NotFound", "code": 404})
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, sys.argv[1])
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
