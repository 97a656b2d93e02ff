#!/usr/bin/env python3
"""hub_server.py - a stand-in for the Hugging Face Hub, for ringfeed's hf://
tests (issue 39): the Hub cannot be reached from the machines the tests run
on, so this answers the Hub's documented endpoints the way the Hub does, on
127.0.0.1, from a folder. Python's standard library only.

    hub_server.py ROOT [--lifetime 120] [--page 2] [--expires 3600]
                  [--cdn-uses 0] [--every429 0] [--first429 0] [--retry-after 1]
                  [--retry-after-date]
                  [--private ORG/NAME] [--token TOKEN] [--log FILE]

ROOT/ORG/NAME/ holds dataset ORG/NAME's files at revision main;
ROOT/ORG/NAME@REV/ at revision REV, its '/' written '~'
(ROOT/ORG/NAME@refs~convert~parquet/: the Parquet conversion).

Two servers, two ports: the Hub ("hub port N" printed) and its CDN ("cdn
port M"). The Hub answers
  GET /api/datasets/ORG/NAME/revision/REV       {"id", "sha"} (the dataset's info)
  GET /api/datasets/ORG/NAME/tree/REV[/PATH]?recursive=true
      a JSON array of {"type": "file"|"directory", "oid", "size", "path"
      (and "lfs" for files)}, --page entries a page, the next page's URL in
      a Link header (<URL>; rel="next", with a cursor, as the Hub's), the
      entries in reverse name order (the client sorts)
  GET /datasets/ORG/NAME/resolve/REV/PATH
      302 to the CDN: http://127.0.0.1:M/cdn/ORG/NAME/REV/PATH?Expires=E&
      Signature=S (E: now + --expires; S: an HMAC of the path and E), with
      X-Linked-Size and X-Linked-Etag as the Hub sends them
A dataset named by --private answers 401 to requests without
"Authorization: Bearer TOKEN" (--token), as the Hub answers a private or
gated one. --every429 N answers every N-th Hub request 429 with
"Retry-After: --retry-after" (the N-th, 2N-th...); --first429 N the
first N of them. --retry-after-date sends that wait as an HTTP-date (RFC
9110: "Retry-After: Fri, 31 Dec 1999 23:59:59 GMT", now + the seconds)
instead, with a Date line of the same second.

The CDN serves the bytes (200, 206 for a Range, 416 past the end, an ETag)
only at a URL the Hub signed whose Expires has not passed: else 403 (an
expired or forged signature, as CloudFront/S3 answer). --cdn-uses U makes
each signed URL good for U requests only (then 403: expired early), so a
client that keeps one must resolve again.

Every request is written to --log as a JSON line: {"server": "hub"|"cdn",
"path", "auth": true/false, "status", "t": its arrival, monotonic s}. It prints its ports once it
listens and stops by itself after --lifetime seconds (or when killed): a
test never leaves it behind.
"""
import argparse
import email.utils
import hashlib
import hmac
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = os.urandom(16)
LOCK = threading.Lock()
STATE = {"hub_requests": 0, "uses": {}}


def log(args, server, path, auth, status):
    if not args.log:
        return
    with LOCK, open(args.log, "a") as f:
        f.write(json.dumps({"server": server, "path": path.split("?")[0], "auth": auth,
                            "status": status, "t": time.monotonic()}) + "\n")


def repo_dir(args, repo, rev):
    d = os.path.join(args.root, repo if rev == "main" else repo + "@" + rev.replace("/", "~"))
    return d if os.path.isdir(d) else None


def files_under(base):
    out = []
    for dirpath, dirnames, names in os.walk(base):
        rel = os.path.relpath(dirpath, base)
        for d in dirnames:
            out.append(("directory", os.path.normpath(os.path.join(rel, d))))
        for n in names:
            out.append(("file", os.path.normpath(os.path.join(rel, n))))
    return out


def sign(path, expires):
    return hmac.new(KEY, ("%s|%d" % (path, expires)).encode(), hashlib.sha256).hexdigest()


class Server(BaseHTTPRequestHandler):
    """What the Hub and the CDN answer alike: each response logged with
    whether it carried Authorization (the tests check where the token went)."""
    protocol_version = "HTTP/1.1"
    args = None
    role = None

    def log_message(self, *a):
        pass

    def answer(self, status, body=b"", headers=()):
        auth = self.headers.get("Authorization") is not None
        log(self.args, self.role, self.path, auth, status)
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Hub(Server):
    role = "hub"
    pinned = None

    def date_time_string(self, timestamp=None):
        return super().date_time_string(timestamp if timestamp is not None else self.pinned)

    def error(self, status, msg):
        self.answer(status, json.dumps({"error": msg}).encode(),
                    [("Content-Type", "application/json"), ("X-Error-Message", msg)])

    def do_GET(self):
        a = self.args
        self.pinned = None  # a kept-alive connection's handler answers again
        with LOCK:
            STATE["hub_requests"] += 1
            n = STATE["hub_requests"]
        if n <= a.first429 or (a.every429 and n % a.every429 == 0):
            wait = str(a.retry_after)
            if a.retry_after_date:
                # the Date line (send_response's) and the Retry-After date
                # from one clock reading: the wait is exactly --retry-after
                self.pinned = time.time()
                wait = email.utils.formatdate(int(self.pinned) + a.retry_after, usegmt=True)
            return self.answer(429, b"rate limited", [("Retry-After", wait)])
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")]
        if parts[1:3] == ["api", "datasets"] and len(parts) >= 7:
            repo, what, rev, rest = parts[3] + "/" + parts[4], parts[5], parts[6], parts[7:]
        elif parts[1] == "datasets" and len(parts) >= 7 and parts[4] == "resolve":
            repo, what, rev, rest = parts[2] + "/" + parts[3], "resolve", parts[5], parts[6:]
        else:
            return self.error(404, "no such endpoint")
        if repo in a.private and self.headers.get("Authorization") != "Bearer " + a.token:
            return self.error(401, "Invalid username or password.")
        d = repo_dir(a, repo, rev)
        if d is None:
            return self.error(404, "Repository or revision not found")
        if what == "revision":
            return self.answer(200, json.dumps({"id": repo, "sha": "0" * 40}).encode(),
                               [("Content-Type", "application/json")])
        if what == "tree":
            return self.tree(d, repo, rev, "/".join(rest), url)
        if what == "resolve":
            return self.resolve(d, repo, rev, "/".join(rest))
        return self.error(404, "no such endpoint")

    def tree(self, d, repo, rev, path, url):
        q = urllib.parse.parse_qs(url.query)
        base = os.path.join(d, path) if path else d
        if not os.path.isdir(base):
            return self.error(404, "no such folder")
        entries = []
        for kind, rel in files_under(base):
            full = os.path.join(base, rel)
            p = os.path.join(path, rel) if path else rel
            e = {"type": kind, "oid": hashlib.sha1(p.encode()).hexdigest(), "path": p}
            if kind == "file":
                e["size"] = os.path.getsize(full)
                e["lfs"] = {"oid": "sha256:" + "0" * 64, "size": e["size"], "pointerSize": 134}
            else:
                e["size"] = 0
            entries.append(e)
        entries.sort(key=lambda e: e["path"], reverse=True)
        cursor = int(q.get("cursor", ["0"])[0])
        page = entries[cursor:cursor + self.args.page]
        headers = [("Content-Type", "application/json")]
        if cursor + self.args.page < len(entries):
            nxt = "http://127.0.0.1:%d%s?recursive=true&cursor=%d" % (
                self.server.server_port, url.path, cursor + self.args.page)
            headers.append(("Link", '<%s>; rel="next"' % nxt))
        self.answer(200, json.dumps(page).encode(), headers)

    def resolve(self, d, repo, rev, path):
        full = os.path.join(d, path)
        if not path or not os.path.isfile(full):
            return self.error(404, "Entry not found")
        expires = int(time.time()) + self.args.expires
        with LOCK:  # each resolve's URL its own (its uses counted apart)
            STATE["resolves"] = STATE.get("resolves", 0) + 1
            nonce = STATE["resolves"]
        cdn_path = "/cdn/%s/%s/%s" % (repo, urllib.parse.quote(rev, safe=""),
                                      urllib.parse.quote(path))
        loc = "http://127.0.0.1:%d%s?Expires=%d&n=%d&Signature=%s" % (
            self.args.cdn_port, cdn_path, expires, nonce, sign(cdn_path, expires))
        self.answer(302, b"", [("Location", loc), ("X-Linked-Size", str(os.path.getsize(full))),
                               ("X-Linked-Etag", '"%d"' % os.path.getsize(full))])


class Cdn(Server):
    role = "cdn"

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        try:
            expires, sig = int(q["Expires"][0]), q["Signature"][0]
        except (KeyError, ValueError):
            return self.answer(403, b"<Error><Code>AccessDenied</Code></Error>")
        with LOCK:
            uses = STATE["uses"][self.path] = STATE["uses"].get(self.path, 0) + 1
        if (not hmac.compare_digest(sig, sign(url.path, expires)) or expires < time.time() or
                (self.args.cdn_uses and uses > self.args.cdn_uses)):
            return self.answer(403, b"<Error><Code>AccessDenied</Code>"
                                    b"<Message>Request has expired</Message></Error>")
        parts = url.path.split("/")  # "", "cdn", ORG, NAME, REV, PATH...
        repo, rev = parts[2] + "/" + parts[3], urllib.parse.unquote(parts[4])
        d = repo_dir(self.args, repo, rev)
        full = os.path.join(d or "/nonexistent", urllib.parse.unquote("/".join(parts[5:])))
        if not os.path.isfile(full):
            return self.answer(404, b"<Error><Code>NoSuchKey</Code></Error>")
        with open(full, "rb") as f:
            data = f.read()
        etag = '"%s"' % hashlib.md5(data).hexdigest()
        rng = self.headers.get("Range")
        if not rng:
            return self.answer(200, data, [("ETag", etag)])
        a, _, b = rng.split("=", 1)[1].partition("-")
        if a == "":  # a suffix range: the last b bytes
            a, b = str(max(len(data) - int(b), 0)), ""
        start, end = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
        if start >= len(data):
            return self.answer(416, b"", [("Content-Range", "bytes */%d" % len(data))])
        self.answer(206, data[start:end + 1], [
            ("ETag", etag), ("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--lifetime", type=float, default=120)
    ap.add_argument("--page", type=int, default=2)
    ap.add_argument("--expires", type=int, default=3600)
    ap.add_argument("--cdn-uses", type=int, default=0)
    ap.add_argument("--every429", type=int, default=0)
    ap.add_argument("--first429", type=int, default=0)
    ap.add_argument("--retry-after", type=int, default=1)
    ap.add_argument("--retry-after-date", action="store_true")
    ap.add_argument("--private", action="append", default=[])
    ap.add_argument("--token", default="")
    ap.add_argument("--log")
    args = ap.parse_args()
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), type("C", (Cdn,), {"args": args}))
    args.cdn_port = cdn.server_port
    hub = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Hub,), {"args": args}))
    for s in (cdn, hub):
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("hub port %d" % hub.server_port, flush=True)
    print("cdn port %d" % cdn.server_port, flush=True)
    time.sleep(args.lifetime)


if __name__ == "__main__":
    sys.exit(main())
