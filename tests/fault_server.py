#!/usr/bin/env python3
"""fault_server.py - an HTTP/1.1 server of a folder's files with Range
support that answers some requests with a fault, for ringfeed's remote
tests (issue 25: "faults are ordinary"). Python's standard library only.
Files carry an ETag as nginx makes it (mtime and size) and If-Match is
honoured (412 for another ETag), as a real server's are.

    fault_server.py ROOT [--port 0] [--p503 0.05] [--preset 0.01]
                    [--pshort 0.01] [--p429 0] [--seed 1] [--lifetime 600]
                    [--stall-path TEXT] [--short-window P] [--eof-at BYTES]
                    [--busy-seconds S] [--busy-from BYTES] [--trickle-path TEXT]
                    [--s3-list-bug repeat-token|repeat-keys|unordered]

Each GET or HEAD draws (seeded, so a run repeats) one of: a 503 SlowDown
(with a small XML body, as S3 sends it), a 429, a connection reset (RST,
nothing sent), a short body (the headers promise the range, half of it
comes, then the connection closes), or the file's bytes (200, or 206 for a
satisfiable Range, 416 past the end). A GET of a path containing
--stall-path for a range that does not start at 0 stalls: its headers
come, its body never does (the connection stays open until the client
gives up), and "stalled N" is printed (stdout) as the N-th begins.

Issue 36's servers that answer without an error and without progress:
--short-window P answers a ranged GET of more than one byte, with
probability P, with a 206 for its first bytes only (at most 256, at most
half), Content-Range and Content-Length honestly saying that shorter range;
--eof-at BYTES answers as if every file ended at BYTES while its size
(Content-Range's total, HEAD) says more: a 416 for a range starting at or
past BYTES, a range across it cut there; --busy-seconds S answers every
request 503 SlowDown for S seconds from its first request (with
--busy-from BYTES, only GETs of ranges starting at or past BYTES, from the
first of them: a scan's first windows answered, its later ones not); a GET
of a path containing --trickle-path sends its body 16 bytes at a time, 0.5 s apart
(never stalled, minutes long: a KiB in 32 s). With --s3-list-bug (or --s3-page) the
server is an S3-compatible store, path-style: ROOT/BUCKET/KEY is object
KEY of BUCKET, and GET /BUCKET?list-type=2 (or /BUCKET/?...) lists its keys
under prefix=, --s3-page keys a page (default 2), with a continuation token;
the bug: repeat-token (every truncated page's NextContinuationToken is the
same, the same page again forever), repeat-keys (each page after the first
starts again at the previous page's last key) or unordered (keys in
descending order); "none" lists honestly.

--lie-once KIND@N lies once to the N-th ranged GET of each file (1: its
first): KIND empty416 answers 416 with Content-Range "bytes */START" (the
file ends where the range starts: at 0, an empty file), etag answers with
another ETag and other bytes (If-Match ignored), as --new-etag-after does;
redirect answers 307 as --redirect-to does, that request alone.

It prints "port N" once it listens,
then the fault counts to stderr when it stops, by itself after --lifetime
seconds (or when killed): a test never leaves it behind.

Responses that lie (issue 36: what a broken proxy or store sends), drawn
with the faults above (--lie-range, --gzip, --huge-header: probabilities):
  --lie-range P     a 206 whose Content-Range and body are another range of
                    the file than the one asked, of its length: the bytes
                    512 before it (512 after, for a range that starts below
                    512); its Content-Range says honestly which
  --gzip P          a 206 whose body is the range gzip-compressed, with
                    Content-Encoding: gzip (a proxy compressing on the fly)
  --huge-header P   a response with one header line over 100 KiB (libcurl's
                    limit for one)
  --new-etag-after N  after N requests every file answers with another ETag
                    and other bytes (each byte XOR 0x5a, the same size), and
                    If-Match is ignored: a shard replaced on a server that
                    does not honour If-Match
  --redirect-to PORT  a request whose path is not under /moved/ is answered
                    307 to the same path under /moved/ on 127.0.0.1:PORT
                    (0: this server); a path under /moved/ is served as the
                    path without it (by any instance of this server)
  --grow-after N    files carry no ETag (a server that sends none), and after N
                    requests every file is 4096 bytes longer (zeros appended):
                    a file that changes size between two requests
  --log-headers FILE  each request's line and header lines are appended to
                    FILE (a blank line after each): what a client sent
"""

import argparse
import gzip
import os
import random
import socket
import struct
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_DOWN = (b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate."
             b"</Message></Error>")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--p503", type=float, default=0.05)
    p.add_argument("--p429", type=float, default=0.0)
    p.add_argument("--preset", type=float, default=0.01)
    p.add_argument("--pshort", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lifetime", type=float, default=600)
    p.add_argument("--stall-path", default=None)
    # --forbid-ranges: a GET or HEAD whose Range does not start at 0 is
    # answered 403 AccessDenied (as S3 answers a key the credentials may not
    # read): a shard's scan (from byte 0) works, every sample's read is refused
    p.add_argument("--forbid-ranges", action="store_true")
    p.add_argument("--lie-range", type=float, default=0.0)
    p.add_argument("--gzip", type=float, default=0.0)
    p.add_argument("--huge-header", type=float, default=0.0)
    p.add_argument("--new-etag-after", type=int, default=-1)
    p.add_argument("--grow-after", type=int, default=-1)
    p.add_argument("--redirect-to", type=int, default=-1)
    p.add_argument("--log-headers", default=None)
    p.add_argument("--short-window", type=float, default=0.0)
    p.add_argument("--eof-at", type=int, default=None)
    p.add_argument("--busy-seconds", type=float, default=0.0)
    p.add_argument("--busy-from", type=int, default=0)
    p.add_argument("--trickle-path", default=None)
    p.add_argument("--s3-list-bug", choices=("none", "repeat-token", "repeat-keys", "unordered"),
                   default=None)
    p.add_argument("--s3-page", type=int, default=2)
    p.add_argument("--lie-once", default=None, metavar="KIND@N")
    a = p.parse_args(argv)
    lie_kind, _, lie_at = (a.lie_once or "@0").partition("@")
    if lie_kind not in ("", "empty416", "etag", "redirect"):
        p.error("--lie-once: KIND is empty416, etag or redirect")
    lie_at = int(lie_at)
    ranged_gets = {}  # path -> ranged GETs so far (--lie-once)
    busy_since = [None]  # when the busy seconds began (the first counted request)
    root = os.path.realpath(a.root)
    rng = random.Random(a.seed)
    lock = threading.Lock()
    counts = {"503": 0, "429": 0, "reset": 0, "short": 0, "stall": 0, "ok": 0,
              "lie-range": 0, "gzip": 0, "huge-header": 0, "new-etag": 0, "redirect": 0,
              "busy": 0, "short_window": 0, "eof_416": 0, "trickle": 0, "list": 0}
    served = [0]  # requests so far (--new-etag-after)

    def draw():
        with lock:
            x = rng.random()
        for name, prob in (("503", a.p503), ("429", a.p429), ("reset", a.preset),
                           ("short", a.pshort), ("lie-range", a.lie_range), ("gzip", a.gzip),
                           ("huge-header", a.huge_header)):
            if x < prob:
                return name
            x -= prob
        return "ok"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_HEAD(self):
            self.serve(body=False)

        def do_GET(self):
            self.serve(body=True)

        def busy(self, body):
            with lock:
                counts["busy"] += 1
            self.send_xml(503, SLOW_DOWN, body)

        def send_xml(self, status, data, body):
            """A whole answer: status, an XML document (sent when body)."""
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def listing(self, body):
            """ListObjectsV2 of ROOT/BUCKET, path-style, with --s3-list-bug's bug."""
            path, _, query = self.path.partition("?")
            q = urllib.parse.parse_qs(query, keep_blank_values=True)
            bucket = os.path.realpath(os.path.join(root, path.strip("/")))
            if not bucket.startswith(root + os.sep) or not os.path.isdir(bucket):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            prefix = q.get("prefix", [""])[0]
            keys = []
            for d, _, files in os.walk(bucket):
                for f in files:
                    k = os.path.relpath(os.path.join(d, f), bucket)
                    if k.startswith(prefix):
                        keys.append(k)
            keys.sort(key=lambda k: k.encode())
            bug = a.s3_list_bug
            if bug == "unordered":
                keys.reverse()
            token = q.get("continuation-token", [""])[0]
            first = int(token[1:]) if token.startswith("t") and token[1:].isdigit() else 0
            if bug == "repeat-token" and token:
                first = a.s3_page  # the same page, whatever the token said
            start = first - 1 if bug == "repeat-keys" and first else first
            page = keys[start:start + a.s3_page + (1 if start < first else 0)]
            after = first + a.s3_page
            truncated = after < len(keys)
            nxt = "t%d" % (a.s3_page if bug == "repeat-token" else after)
            with lock:
                counts["list"] += 1
            doc = ['<?xml version="1.0" encoding="UTF-8"?>',
                   '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
                   "<Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount>"
                   "<MaxKeys>%d</MaxKeys><IsTruncated>%s</IsTruncated>"
                   % (escape(os.path.basename(bucket)), escape(prefix), len(page), a.s3_page,
                      "true" if truncated else "false")]
            if token:
                doc.append("<ContinuationToken>%s</ContinuationToken>" % escape(token))
            if truncated:
                doc.append("<NextContinuationToken>%s</NextContinuationToken>" % nxt)
            for k in page:
                doc.append("<Contents><Key>%s</Key><Size>%d</Size></Contents>"
                           % (escape(k), os.path.getsize(os.path.join(bucket, k))))
            doc.append("</ListBucketResult>")
            self.send_xml(200, "".join(doc).encode(), body)

        def trickle(self, data):
            """The body 16 bytes at a time, 0.5 s apart, until the client goes."""
            with lock:
                counts["trickle"] += 1
            for i in range(0, len(data), 16):
                self.wfile.write(data[i:i + 16])
                self.wfile.flush()
                time.sleep(0.5)

        def serve(self, body):
            rng_start = self.headers.get("Range", "bytes=0-")[6:].partition("-")[0]
            if a.busy_seconds and int(rng_start or 0) >= a.busy_from:
                with lock:
                    if busy_since[0] is None:
                        busy_since[0] = time.monotonic()
                if time.monotonic() - busy_since[0] < a.busy_seconds:
                    return self.busy(body)
            if a.s3_list_bug and "list-type=2" in self.path.partition("?")[2]:
                return self.listing(body)
            fault = draw()
            with lock:
                counts[fault] += 1
                served[0] += 1
                replaced = 0 <= a.new_etag_after < served[0]
                if a.log_headers:
                    with open(a.log_headers, "a") as log:
                        log.write("%s\n%s\n" % (self.requestline, self.headers.as_string()))
            lie = None
            if lie_at and body and (self.headers.get("Range") or "").startswith("bytes="):
                key = self.path.split("?")[0]
                with lock:
                    ranged_gets[key] = ranged_gets.get(key, 0) + 1
                    lie = lie_kind if ranged_gets[key] == lie_at else None
            moved = self.path.startswith("/moved/")
            if a.redirect_to >= 0 and not moved and (lie_kind != "redirect" or lie):
                with lock:
                    counts["redirect"] += 1
                port = a.redirect_to or self.server.server_address[1]
                self.send_response(307)
                self.send_header("Location", "http://127.0.0.1:%d/moved%s" % (port, self.path))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if moved:
                self.path = self.path[len("/moved"):]
            if fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            if fault in ("503", "429"):
                return self.send_xml(int(fault), SLOW_DOWN, body)
            if a.forbid_ranges and not (self.headers.get("Range") or "bytes=0-").startswith("bytes=0-"):
                return self.send_xml(403, b"<Error><Code>AccessDenied</Code><Message>Access "
                                     b"Denied</Message></Error>", body)
            path = os.path.realpath(os.path.join(root, self.path.split("?")[0].lstrip("/")))
            if not path.startswith(root + os.sep) or not os.path.isfile(path):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            st = os.stat(path)
            size = st.st_size
            etag = '"%x-%x"' % (int(st.st_mtime), size)  # as nginx makes it
            grown = a.grow_after >= 0 and served[0] > a.grow_after
            if a.grow_after >= 0:
                etag = None
            if grown:
                size += 4096
            if lie == "empty416":
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%s" % rng_start)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if lie == "etag":
                replaced = True
            if replaced:  # another object now, and If-Match not honoured
                with lock:
                    counts["new-etag"] += 1
                etag = '"%x-%x-new"' % (int(st.st_mtime), size)
            match = None if replaced else self.headers.get("If-Match")
            if match and etag and match.strip() != "*" and etag not in [m.strip() for m in match.split(",")]:
                self.send_response(412)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end, status = 0, size - 1, 200
            rng_hdr = self.headers.get("Range")
            if rng_hdr and rng_hdr.startswith("bytes="):
                lo, _, hi = rng_hdr[6:].partition("-")
                if lo == "":  # a suffix range: the last hi bytes
                    lo, hi = str(max(size - int(hi), 0)), ""
                start = int(lo)
                end = min(int(hi), size - 1) if hi else size - 1
                status = 206
                if a.eof_at is not None and start >= a.eof_at:
                    # the file "ends" here, though its size says more
                    with lock:
                        counts["eof_416"] += 1
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % size)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if a.eof_at is not None:
                    end = min(end, a.eof_at - 1)
                if a.short_window and end > start:
                    with lock:
                        cut = rng.random() < a.short_window
                    if cut:  # an honest 206 of fewer bytes than asked
                        with lock:
                            counts["short_window"] += 1
                        end = start + min(256, (end - start + 1) // 2) - 1
                if start >= size:
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % size)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            n = end - start + 1
            if body and a.stall_path and a.stall_path in self.path and start > 0:
                with lock:
                    counts["stall"] += 1
                    print("stalled %d" % counts["stall"], flush=True)
                self.send_response(status)
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
                self.send_header("Content-Length", str(n))
                self.end_headers()
                self.wfile.flush()
                self.connection.settimeout(a.lifetime)
                try:  # until the client closes the connection
                    while self.connection.recv(4096):
                        pass
                except OSError:
                    pass
                self.close_connection = True
                return
            if fault == "lie-range" and status == 206:
                # another range of the same length, said honestly
                start = start - 512 if start >= 512 else min(start + 512, size - 1)
                end = min(start + n - 1, size - 1)
                n = end - start + 1
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read(n)
            if grown:
                data = data.ljust(n, b"\0")
            if replaced:
                data = bytes(b ^ 0x5a for b in data)
            encoded = fault == "gzip" and status == 206
            if encoded:
                data = gzip.compress(data)
            self.send_response(status)
            if status == 206:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
            if etag:
                self.send_header("ETag", etag)
            if encoded:
                self.send_header("Content-Encoding", "gzip")
            if fault == "huge-header":
                self.send_header("X-Padding", "p" * (110 << 10))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not body:
                return
            if a.trickle_path and a.trickle_path in self.path:
                self.trickle(data)
                return
            if fault == "short":
                self.wfile.write(data[:n // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(data)

    class Server(ThreadingHTTPServer):
        # a loader opens hundreds of connections at once: the default
        # backlog (5) would drop their SYNs, and a 1 s retransmit is no
        # fault this server means to make
        request_queue_size = 1024

        def handle_error(self, request, client_address):
            # a client that gave up on a transfer (a timeout, an engine torn
            # down) is no error of the server's
            if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    print("port %d" % server.server_address[1], flush=True)
    timer = threading.Timer(a.lifetime, server.shutdown)
    timer.daemon = True
    timer.start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        print("faults: %s" % counts, file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
