#!/usr/bin/env python3
"""fault_proxy.py - a reverse proxy in front of a real server (nginx, moto)
that answers some requests as lying servers, proxies and S3-compatible
stores do (issue 36), for bench/trust_soak.sh. Python's standard library only.

    fault_proxy.py UPSTREAM [--p 0.01] [--seed 1] [--lifetime 3600]
                   [--port 0] [--counts FILE] [--only KIND,KIND...]

UPSTREAM is http://HOST:PORT of the real server. Each request is sent on
to it (method, path, query and headers as they came, Host included, so a
SigV4 signature still holds), and its answer comes back, except that each
draws (seeded) one fault with probability P each, where it applies:

  503        a 503 SlowDown, as S3 sends it
  reset      the connection reset (RST), nothing sent
  cut        the headers promise the range, half the body comes, then close
  lie_range  a 206 for the range 512 bytes before the one asked, and saying
             so in its Content-Range (a ranged GET starting at 512 or more)
  gzip       the body gzip-compressed, Content-Encoding: gzip
  new_etag   another ETag and other bytes (every byte inverted), If-Match
             ignored: an object replaced on a server that ignores If-Match
  short      a 206 honestly shorter than asked (its Content-Range says so)
  eof416     a 416 whose Content-Range says the object ends where the range
             starts (a store that lost the object's tail)
  trickle    the right answer, its body in 256-byte pieces 50 ms apart for
             at most 2 s, then the rest
  huge_header one header of 120 KiB (over libcurl's 100 KiB limit)
  redirect   a 307 to the same path on the proxy's second port, which
             answers honestly and counts what credentials it was sent
  list_loop  (a ListObjectsV2 page) truncated with a continuation token
             that leads to the same page again, forever
  list_dup   (a ListObjectsV2 page) each key listed twice

--only draws only the faults named. It prints "port N redirect_port M" once it listens, and on exit (after
--lifetime seconds, or SIGTERM) writes its counts as JSON to --counts
(or stderr): requests, each fault, and `leaked`: requests that reached the
redirect port carrying Authorization, x-amz-security-token or
X-Amz-Security-Token (a credential that left its host).
"""

import argparse
import gzip
import http.client
import json
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = ("503", "reset", "cut", "lie_range", "gzip", "new_etag", "short", "eof416",
          "trickle", "huge_header", "redirect", "list_loop", "list_dup")
HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
       "transfer-encoding", "upgrade", "content-length"}
CREDENTIAL_HEADERS = ("authorization", "x-amz-security-token")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("upstream")
    p.add_argument("--p", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lifetime", type=float, default=3600)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--counts", default=None)
    p.add_argument("--only", default=",".join(FAULTS))
    a = p.parse_args(argv)
    only = set(a.only.split(","))
    if only - set(FAULTS):
        p.error("--only: no fault %s (faults: %s)" % (",".join(sorted(only - set(FAULTS))),
                                                     ",".join(FAULTS)))
    up = urllib.parse.urlsplit(a.upstream)
    rng = random.Random(a.seed)
    lock = threading.Lock()
    counts = {"requests": 0, "redirected_requests": 0, "leaked": 0, "ok": 0}
    counts.update({f: 0 for f in FAULTS})
    local = threading.local()
    loop_pages = {}  # list_loop: a listing's path -> the page that began the loop

    def upstream():
        c = getattr(local, "conn", None)
        if c is None:
            c = local.conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
        return c

    def forward(method, path, headers):
        """The real server's answer: (status, [(name, value)], body)."""
        for attempt in (0, 1):  # a kept connection the server closed: once more
            c = upstream()
            try:
                c.request(method, path, headers=headers)
                r = c.getresponse()
                body = r.read()
                return r.status, r.getheaders(), body
            except (http.client.HTTPException, OSError):
                c.close()
                local.conn = None
                if attempt:
                    raise

    def listing_key(path):
        """A listing's path and query, its continuation token left out."""
        base, _, query = path.partition("?")
        return base, tuple(sorted(q for q in query.split("&")
                                  if not q.startswith("continuation-token=")))

    def draw(applies):
        with lock:
            x = rng.random()
        for name in FAULTS:
            if name not in applies or name not in only:
                continue
            if x < a.p:
                return name
            x -= a.p
        return "ok"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        redirect_side = False

        def log_message(self, fmt, *args):
            pass

        def do_HEAD(self):
            self.serve()

        def do_GET(self):
            self.serve()

        def send(self, status, headers, body, send_body=True):
            self.send_response_only(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if send_body and self.command != "HEAD":
                self.wfile.write(body)

        def serve(self):
            with lock:
                counts["requests"] += 1
                if self.redirect_side:
                    counts["redirected_requests"] += 1
                    if any(h.lower() in CREDENTIAL_HEADERS for h in self.headers.keys()):
                        counts["leaked"] += 1
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            rng_hdr = self.headers.get("Range", "")
            m = re.fullmatch(r"bytes=(\d+)-(\d+)", rng_hdr.strip())
            ranged = m is not None and self.command == "GET"
            listing = "list-type=2" in self.path
            applies = {"503", "reset"}
            if not self.redirect_side:
                applies |= {"redirect", "huge_header", "trickle"}
            if ranged:
                applies |= {"cut", "gzip", "new_etag", "short", "eof416"}
                if int(m.group(1)) >= 512:
                    applies.add("lie_range")
            if listing:
                applies |= {"list_loop", "list_dup"}
            fault = "ok" if self.redirect_side else draw(applies)
            with lock:
                counts[fault] += 1
            if fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            if fault == "503":
                self.send(503, [("Content-Type", "application/xml")],
                          b"<Error><Code>SlowDown</Code><Message>Reduce your request rate."
                          b"</Message></Error>")
                return
            if fault == "redirect":
                self.send(307, [("Location", "http://127.0.0.1:%d%s" % (redirect_port, self.path))],
                          b"")
                return
            if "continuation-token=ringfeed-loop" in self.path:
                # a looping store answers its own token with the page that
                # gave it, again (kept: the request, signed as it is, is
                # not the real server's to answer)
                with lock:
                    page = loop_pages.get(listing_key(self.path))
                if page is not None:
                    self.send(200, [("Content-Type", "application/xml")], page)
                    return
            if fault == "lie_range":
                start, end = int(m.group(1)) - 512, int(m.group(2)) - 512
                headers["Range"] = "bytes=%d-%d" % (start, end)
                status, hdrs, body = forward(self.command, self.path, headers)
            else:
                status, hdrs, body = forward(self.command, self.path, headers)
            hdrs = [(k, v) for k, v in hdrs if k.lower() not in HOP]
            if status not in (200, 206):
                fault = "ok"  # nothing to lie about in an error
            if fault == "list_loop":
                body = re.sub(rb"<IsTruncated>false</IsTruncated>",
                              b"<IsTruncated>true</IsTruncated>"
                              b"<NextContinuationToken>ringfeed-loop</NextContinuationToken>", body)
                with lock:
                    loop_pages[listing_key(self.path)] = body
            elif fault == "list_dup":
                body = re.sub(rb"(<Contents>.*?</Contents>)", rb"\1\1", body, flags=re.S)
            elif fault == "gzip":
                body = gzip.compress(body)
                hdrs.append(("Content-Encoding", "gzip"))
            elif fault == "new_etag":
                body = bytes(b ^ 0xFF for b in body)
                hdrs = [(k, v) for k, v in hdrs if k.lower() != "etag"]
                hdrs.append(("ETag", '"replaced-%d"' % rng.randrange(1 << 30)))
            elif fault == "short" and status == 206 and len(body) > 1:
                half = len(body) // 2
                start = int(m.group(1))
                body = body[:half]
                hdrs = [(k, re.sub(r"bytes \d+-\d+/", "bytes %d-%d/" % (start, start + half - 1), v))
                        if k.lower() == "content-range" else (k, v) for k, v in hdrs]
            elif fault == "eof416":
                start = int(m.group(1))
                self.send(416, [("Content-Range", "bytes */%d" % start)], b"")
                return
            elif fault == "huge_header":
                hdrs.append(("X-Padding", "x" * (120 << 10)))
            if fault == "cut":
                self.send_response_only(status)
                for k, v in hdrs:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            if fault == "trickle" and self.command == "GET":
                self.send_response_only(status)
                for k, v in hdrs:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                sent, t0 = 0, time.monotonic()
                while sent < len(body) and time.monotonic() - t0 < 2.0:
                    self.wfile.write(body[sent:sent + 256])
                    self.wfile.flush()
                    sent += 256
                    time.sleep(0.05)
                self.wfile.write(body[sent:])
                return
            self.send(status, hdrs, body)

    class RedirectHandler(Handler):
        redirect_side = True

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def handle_error(self, request, client_address):
            pass  # a client that gave up mid-answer is ordinary here

    srv = Server(("127.0.0.1", a.port), Handler)
    side = Server(("127.0.0.1", 0), RedirectHandler)
    redirect_port = side.server_address[1]
    for s in (srv, side):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("port %d redirect_port %d" % (srv.server_address[1], redirect_port), flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait(a.lifetime)
    with lock:
        text = json.dumps(counts, sort_keys=True)
    if a.counts:
        with open(a.counts, "w") as f:
            f.write(text + "\n")
    else:
        print(text, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
