#!/usr/bin/python3
"""reqdiff: request streams where two HTTP parsers may disagree.

  reqdiff.py send SEED COUNT PORT       send COUNT generated streams to the
                                        relay on 127.0.0.1:PORT (as a user)
  reqdiff.py show SEED INDEX            print one stream (repr) to rerun it
  reqdiff.py compare AUDIT SERVED [SEED]
                                        the relay's audit log against the
                                        requests Go's net/http served

Stream i is generated from random.Random("SEED:i") alone, so a failing
stream is rebuilt from its seed and index.  Every request line (also those
hidden in bodies, chunk sizes or folded lines) carries the path
/kh-diff/I/..., so each request either parser saw is attributed to its
stream.  Stream i dwells on one way of framing a request (KINDS[i %
len(KINDS)]) -- Content-Length and Transfer-Encoding variants, HTTP
versions, obs-fold, CR/LF variants, pipelining, Upgrade -- and mixes in
the others at random; it is sent in random pieces, half-closed, and read
until the relay closes it.

compare: per stream, the requests the relay forwarded (audit lines with no
"relay" note, or one saying the API server closed or failed) must be, in
order, the requests the Go server served (method and path), except a
forwarded request the Go server's own parser refused (a status other than
its handler's 200 and 101): such a request never reached the handler.  A
request served and not audited, or audited as served and not served,
fails.  Prints a summary line ("streams N forwarded F served S refused-
by-relay R refused-by-go G") and every mismatch; exits 1 on any.
"""
import concurrent.futures
import json
import random
import socket
import sys
import time

KINDS = ["plain", "cl_short", "cl_dup", "cl_odd", "te", "te_cl", "te_odd", "te_twice",
         "te10_smuggle", "te10", "name_space", "fold", "bare_lf", "bare_cr", "leading",
         "version", "request_line", "upgrade", "upgrade10", "host", "ctl", "trailer",
         "chunk_odd", "connection"]
HEXWORDS = ["ACE", "BAD", "ADD", "BED", "FED", "CAB", "DAD", "FAD"]   # 2.7k-4k
# Statuses of the Go server's handler: anything else comes from its parser.
SERVED = {200, 101}
# The relay's own answers: the request never left it.
RELAY_OWN = {"bad request head", "no session"}


class Gen:
    def __init__(self, seed, sid):
        self.r = random.Random("%s:%d" % (seed, sid))
        self.sid = sid
        self.kind = KINDS[sid % len(KINDS)]
        self.n = 0

    def path(self, tag=""):
        self.n += 1
        return "/kh-diff/%d/%d%s" % (self.sid, self.n, tag)

    def plain_get(self, version="HTTP/1.1"):
        return ("GET %s %s\r\nHost: relay\r\n\r\n" % (self.path("g"), version)).encode()

    def smuggled(self):
        return b"".join(self.plain_get() for _ in range(self.r.randint(1, 2)))

    def head(self, method, version, headers, eol=b"\r\n", path=None):
        line = ("%s %s %s" % (method, path or self.path(), version)).encode()
        out = line + eol
        for h in headers:
            out += (h.encode() if isinstance(h, str) else h) + eol
        return out + eol

    def chunks(self, data, hexword=None):
        r = self.r
        if hexword is not None:
            # A chunk-size line that Go, ignoring the framing, reads as a
            # request line: method ACE, its head in the chunk's data.
            size = int(hexword, 16)
            inner = b"Host: relay\r\n\r\n" + self.smuggled()
            pad = b"x" * max(0, size - len(inner))
            line = ("%s %s HTTP/1.1" % (hexword, self.path("h"))).encode()
            return line + b"\r\n" + (inner + pad)[:size] + b"\r\n0\r\n\r\n"
        out = b""
        while data:
            k = r.randint(1, max(1, len(data)))
            part, data = data[:k], data[k:]
            size = r.choice(["%x", "%X", "0%x", "%x;ext=1"]) % len(part)
            out += size.encode() + b"\r\n" + part + b"\r\n"
        return out + b"0\r\n\r\n"

    def body(self):
        if self.r.random() < 0.5:
            return self.smuggled()
        return b'{"kind":"Namespace","n":%d}' % self.r.randint(0, 999)

    def conn_header(self, version):
        if version == "HTTP/1.0":
            return ["Connection: keep-alive"] if self.r.random() < 0.85 else []
        return self.r.choice([[], [], ["Connection: keep-alive"], ["Connection: close"]])

    # One message of the stream's kind (or of a random kind, mixed in).
    def message(self, kind):
        r = self.r
        v11 = "HTTP/1.1"
        if kind == "plain":
            if r.random() < 0.5:
                return self.plain_get(r.choice([v11, v11, "HTTP/1.0"]))
            b = self.body()
            return self.head(r.choice(["POST", "PUT", "PATCH"]), v11,
                             ["Host: relay", "Content-Length: %d" % len(b)]) + b
        if kind == "cl_short":
            b = self.body()
            cut = r.randint(0, len(b))
            return self.head("POST", v11, ["Host: relay", "Content-Length: %d" % cut]) + b
        if kind == "cl_dup":
            b = self.body()
            n2 = r.choice([len(b), 0, len(b) // 2])
            return self.head("POST", v11, ["Host: relay", "Content-Length: %d" % len(b),
                                           "Content-Length: %d" % n2]) + b
        if kind == "cl_odd":
            b = self.body()
            v = r.choice(["+%d", " %d ", "0%d", "%d %d", "", "0x%x", "%d,%d", "-%d",
                          "00000000000000000000%d", "%d\t", "9223372036854775808"])
            v = v % ((len(b),) * v.count("%")) if "%" in v else v
            return self.head("POST", r.choice([v11, "HTTP/1.0"]),
                             ["Host: relay", "Content-Length: " + v]) + b
        if kind == "te":
            return self.head("POST", v11, ["Host: relay", "Transfer-Encoding: chunked"] +
                             self.conn_header(v11)) + self.chunks(self.body())
        if kind == "te_cl":
            b = self.chunks(self.body())
            hs = ["Transfer-Encoding: chunked", "Content-Length: %d" % r.randint(0, len(b))]
            r.shuffle(hs)
            return self.head("POST", r.choice([v11, "HTTP/1.0"]), ["Host: relay"] + hs) + b
        if kind == "te_odd":
            v = r.choice(["chunked, identity", "identity", "gzip, chunked", "chunked ",
                          " Chunked", "chunked\t", "xchunked", "chunked;q=1", "CHUNKED", ""])
            return self.head("POST", v11, ["Host: relay", "Transfer-Encoding:" + v]) + \
                self.chunks(self.body())
        if kind == "te_twice":
            return self.head("POST", v11, ["Host: relay", "Transfer-Encoding: chunked",
                                           r.choice(["Transfer-Encoding: chunked",
                                                     "Transfer-Encoding: identity"])]) + \
                self.chunks(self.body())
        if kind == "te10_smuggle":
            # The reproduction: HTTP/1.0 kept alive, chunked; Go ignores the
            # Transfer-Encoding and reads the body as requests.
            return self.head("POST", "HTTP/1.0", ["Host: relay", "Connection: keep-alive",
                                                  "Transfer-Encoding: chunked"]) + \
                self.chunks(b"", hexword=r.choice(HEXWORDS))
        if kind == "te10":
            return self.head("POST", "HTTP/1.0", ["Transfer-Encoding: chunked"] +
                             self.conn_header("HTTP/1.0")) + self.chunks(self.body())
        if kind == "name_space":
            b = self.body()
            h = r.choice(["Transfer-Encoding : chunked", "Transfer-Encoding\t: chunked",
                          "Content-Length : %d" % len(b), " Transfer-Encoding: chunked",
                          "Transfer_Encoding: chunked", "Transfer-Encoding:chunked"])
            framed = self.chunks(b) if "ncoding" in h else b
            return self.head("POST", v11, ["Host: relay", h] +
                             (["Content-Length: %d" % len(framed)] if r.random() < 0.5 else [])) + framed
        if kind == "fold":
            b = self.body()
            hs = r.choice([["X-A: a", " Transfer-Encoding: chunked"],
                           ["Transfer-Encoding: identity", "\tchunked"],
                           ["Content-Length: %d" % len(b), " 0"],
                           ["X-A: a", " b", "Content-Length: %d" % len(b)]])
            framed = self.chunks(b) if any("chunked" in h for h in hs) else b
            first = [" X-First: folded"] if r.random() < 0.3 else []
            return self.head("POST", v11, first + ["Host: relay"] + hs) + framed
        if kind == "bare_lf":
            b = self.body()
            hs = ["Host: relay", "Content-Length: %d" % len(b)]
            eol = r.choice([b"\n", b"\r\n"])
            m = self.head("POST", v11, hs, eol=eol) + b
            if eol == b"\r\n":
                pos = [i for i in range(len(m) - len(b)) if m[i:i + 2] == b"\r\n"]
                i = r.choice(pos)
                m = m[:i] + m[i + 1:]
            return m
        if kind == "bare_cr":
            b = self.chunks(self.body())
            return r.choice([
                self.head("POST", v11, ["Host: relay", "X-A: a\rTransfer-Encoding: chunked"]) + b,
                self.head("POST", v11, ["Host: relay", "Transfer-Encoding: chunked"],
                          eol=r.choice([b"\r", b"\r\r\n", b"\n\r"])) + b,
                self.head("POST", v11, ["Host: relay", "Transfer-Encoding: chunked\r"]) + b])
        if kind == "leading":
            return r.choice([b"\r\n", b"\n", b"\r\n\r\n", b" "]) + self.plain_get()
        if kind == "version":
            v = r.choice(["HTTP/1.2", "HTTP/1.01", "HTTP/0.9", "HTTP/2.0", "http/1.1",
                          "HTTP/1.1 ", "HTTP/1.10", "HTTP/11", "HTTP/1.1\t"])
            b = self.body()
            return self.head("POST", v, ["Host: relay", "Connection: keep-alive",
                                         "Transfer-Encoding: chunked"]) + self.chunks(b)
        if kind == "request_line":
            p = self.path()
            line = r.choice(["GET  %s HTTP/1.1", "GET %s  HTTP/1.1", "GET\t%s HTTP/1.1",
                             "GET %s x HTTP/1.1", "GET http://relay%s HTTP/1.1",
                             " GET %s HTTP/1.1", "GET %s?a b HTTP/1.1", "ACE %s HTTP/1.1",
                             "get %s HTTP/1.1"]) % p
            return line.encode() + b"\r\nHost: relay\r\n\r\n"
        if kind == "upgrade":
            hs = r.choice([["Connection: Upgrade", "Upgrade: kh-echo"],
                           ["Connection: keep-alive, Upgrade", "Upgrade: kh-echo"],
                           ["Connection: x-upgrade-please"],
                           ["Upgrade: kh-echo"],
                           ["Connection: upgrade"]])
            m = self.head("GET", v11, ["Host: relay"] + hs)
            # What follows an Upgrade is the other protocol's: requests here
            # must reach neither parser as requests.
            return m + self.smuggled()
        if kind == "upgrade10":
            return self.head("GET", "HTTP/1.0", ["Connection: keep-alive, Upgrade",
                                                 "Upgrade: kh-echo"]) + self.smuggled()
        if kind == "host":
            hs = r.choice([[], ["Host: relay", "Host: other"], ["Host:"], ["Host: a b"]])
            return self.head("GET", r.choice([v11, "HTTP/1.0"]), hs)
        if kind == "ctl":
            c = r.choice([b"\x00", b"\x01", b"\x0b", b"\x0c", b"\x7f", b"\x1b"])
            return self.head("GET", v11, ["Host: relay", b"X-A: a" + c + b"b"])
        if kind == "trailer":
            b = self.chunks(self.body())[:-2]
            t = r.choice([b"X-T: 1\r\n\r\n", b"X-T: 1\n\n", b"X-T: 1\r\n" + self.plain_get(),
                          b"Content-Length: 5\r\n\r\n"])
            return self.head("POST", v11, ["Host: relay", "Transfer-Encoding: chunked"]) + b + t
        if kind == "chunk_odd":
            b = self.body()
            size = r.choice(["%x ", "%x ;x", "0x%x", "%x\t", "+%x", "%x;a=\"\r\n\""]) % len(b)
            tail = r.choice([b"\r\n", b"XY", b"\n", b"\r\r"])
            eol = r.choice([b"\r\n", b"\n"])
            return self.head("POST", v11, ["Host: relay", "Transfer-Encoding: chunked"]) + \
                size.encode() + eol + b + tail + b"0\r\n\r\n"
        if kind == "connection":
            v = r.choice([v11, "HTTP/1.0"])
            hs = r.choice([["Connection: close"], ["Connection: keep-alive, close"], [],
                           ["Connection: Keep-Alive"], ["Connection: close", "Connection: keep-alive"]])
            return self.head("GET", v, (["Host: relay"] if v == v11 else []) + hs)
        raise ValueError(kind)

    def stream(self):
        r = self.r
        msgs = []
        if r.random() < 0.3:
            msgs.append(self.message("plain"))
        msgs.append(self.message(self.kind))
        for _ in range(r.randint(0, 2)):
            msgs.append(self.message(self.kind if r.random() < 0.3 else r.choice(KINDS)))
        msgs.append(self.plain_get())   # a request after: where does each parser see it?
        return b"".join(msgs)

    def pieces(self, data):
        r = self.r
        if r.random() < 0.5:
            return [data]
        out = []
        while data:
            k = r.randint(1, max(1, len(data) // 2))
            out.append(data[:k])
            data = data[k:]
        return out


def send_one(port, seed, sid):
    g = Gen(seed, sid)
    data = g.stream()
    # A client that half-closes before its Upgrade is answered leaves the
    # relay's tunnel open until relay.idle_timeout: those streams end by
    # closing instead, once the answers stop coming.
    half = b"pgrade" not in data
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        for p in g.pieces(data):
            s.sendall(p)
        if half:
            s.shutdown(socket.SHUT_WR)
        s.settimeout(3 if half else 1)
        while s.recv(65536):
            pass
    except (socket.timeout, ConnectionError):
        pass
    finally:
        s.close()


def send(seed, count, port):
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as ex:
        for f in [ex.submit(send_one, port, seed, i) for i in range(count)]:
            f.result()


def sid_of(path):
    parts = path.split("/")
    if len(parts) > 2 and parts[1] == "kh-diff" and parts[2].isdigit():
        return int(parts[2])
    return None


def compare(audit_path, served_path, seed=None):
    audited, served, strays = {}, {}, []
    own = 0
    with open(audit_path, encoding="utf-8") as f:
        for line in f:
            a = json.loads(line)
            sid = sid_of(a.get("path", ""))
            if sid is None:
                continue
            if a.get("relay") in RELAY_OWN:
                own += 1
                continue
            audited.setdefault(sid, []).append(a)
    with open(served_path, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            sid = sid_of(e["path"])
            if sid is None:
                strays.append(e)
            else:
                served.setdefault(sid, []).append(e)
    bad = []
    for e in strays:
        bad.append("served, not a stream's: %s %r" % (e["method"], e["path"]))
    refused_go = 0
    for sid in sorted(set(audited) | set(served)):
        a, g = audited.get(sid, []), served.get(sid, [])
        i = j = 0
        why = None
        while i < len(a):
            if j < len(g) and (a[i]["method"], a[i]["path"]) == (g[j]["method"], g[j]["path"]):
                i += 1
                j += 1
            elif a[i]["status"] not in SERVED:
                refused_go += 1
                i += 1
            else:
                why = "audited %s %s (status %d), Go served %s" % (
                    a[i]["method"], a[i]["path"], a[i]["status"],
                    "%s %s" % (g[j]["method"], g[j]["path"]) if j < len(g) else "nothing more")
                break
        if why is None and j < len(g):
            why = "served and never audited: " + ", ".join(
                "%s %s" % (e["method"], e["path"]) for e in g[j:])
        if why is not None:
            bad.append("stream %d (%s): %s%s" % (
                sid, KINDS[sid % len(KINDS)], why,
                "; rebuild: reqdiff.py show %s %d" % (seed, sid) if seed is not None else ""))
    nf = sum(len(v) for v in audited.values())
    ns = sum(len(v) for v in served.values())
    print("streams %d forwarded %d served %d refused-by-relay %d refused-by-go %d" %
          (len(set(audited) | set(served)), nf, ns, own, refused_go))
    for b in bad:
        print(b)
    return 1 if bad else 0


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "send" and len(sys.argv) == 5:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return 0
    if cmd == "show" and len(sys.argv) == 4:
        g = Gen(sys.argv[2], int(sys.argv[3]))
        print(g.kind, repr(g.stream()))
        return 0
    if cmd == "compare" and len(sys.argv) in (4, 5):
        return compare(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
