"""metadata_server.py - the places short-lived AWS credentials come from,
as one stdlib HTTP server on 127.0.0.1 that hands out keys which expire in
a few seconds, for the tests of their refresh (python/tests/test_s3.py).
Each endpoint answers as the documented service does:

- EC2 instance metadata, IMDSv2: PUT /latest/api/token (with
  X-aws-ec2-metadata-token-ttl-seconds) gives a session token; GET
  /latest/meta-data/iam/security-credentials/ the role's name, and
  .../ROLE its keys as JSON (AccessKeyId, SecretAccessKey, Token,
  Expiration); a GET without the token is answered 401.
- A container's endpoint (ECS, EKS Pod Identity): GET /v1/credentials
  with an Authorization header equal to the token in auth_file (the server
  writes a new token there after each answer, as the agent rotates it), the
  same JSON.
- STS AssumeRoleWithWebIdentity: a POST of the form (Action, Version,
  RoleArn, RoleSessionName, WebIdentityToken) whose token equals the one in
  token_file (rotated the same way), the keys in STS's XML.

Each answer hands out the next of `keys` (dicts id, secret, token: sets the
caller made, e.g. moto's assumed-role keys, so that a server that checks
signatures accepts them), expiring `lifetime` seconds later. `issued` is
the key ids handed out, in order; `served` counts answers by kind
("imds", "container", "sts"), `refused` the credential requests answered
with an error; with `failing` set each credential request is answered 500.
wait_for(pred) waits, bounded, for a condition on the server's state.
"""

import datetime
import json
import os
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROLE = "ringfeed-role"


class MetadataServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, keys, lifetime=4, token_file=None, auth_file=None):
        super().__init__(("127.0.0.1", 0), Handler)
        self.keys = list(keys)
        self.lifetime = lifetime
        self.token_file = token_file
        self.auth_file = auth_file
        self.imds_token = "imds-" + secrets.token_hex(16)
        self.issued = []
        self.served = {"imds": 0, "container": 0, "sts": 0}
        self.refused = 0
        self.failing = False
        self.cond = threading.Condition()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        for path in (token_file, auth_file):
            if path:
                self.rotate(path)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()

    @staticmethod
    def rotate(path):
        """A new token in path, written whole (a rename), as kubelet does."""
        with open(path + ".new", "w") as f:
            f.write("tok-" + secrets.token_hex(24) + "\n")
        os.replace(path + ".new", path)

    def wait_for(self, pred, timeout=60):
        """Waits until pred(self) holds, at most timeout seconds; returns it."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def issue(self, kind):
        """The next keys, with their expiry; None when failing (or none left)."""
        with self.cond:
            if self.failing or len(self.issued) >= len(self.keys):
                self.refused += 1
                self.cond.notify_all()
                return None
            k = self.keys[len(self.issued)]
            self.issued.append(k["id"])
            self.served[kind] += 1
            self.cond.notify_all()
        expires = (datetime.datetime.now(datetime.timezone.utc)
                   + datetime.timedelta(seconds=self.lifetime))
        return dict(k, expiration=expires.strftime("%Y-%m-%dT%H:%M:%SZ"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def keys_json(self, kind, rotate=None):
        k = self.server.issue(kind)
        if k is None:
            return self.reply(500, b'{"message": "unavailable"}')
        if rotate:      # before the answer: the next request must bring the new token
            self.server.rotate(rotate)
        self.reply(200, json.dumps({
            "Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": k["id"],
            "SecretAccessKey": k["secret"], "Token": k["token"],
            "Expiration": k["expiration"]}, indent=2).encode())

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_PUT(self):
        self.body()
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        if self.path != "/latest/api/token" or not ttl or not ttl.isdigit():
            return self.reply(400)
        self.reply(200, self.server.imds_token.encode(), "text/plain")

    def do_GET(self):
        s = self.server
        if self.path == "/v1/credentials":
            with open(s.auth_file) as f:
                want = f.read().strip()
            if self.headers.get("Authorization") != want:
                return self.reply(401, b'{"message": "bad authorization token"}')
            return self.keys_json("container", rotate=s.auth_file)
        if self.headers.get("X-aws-ec2-metadata-token") != s.imds_token:
            return self.reply(401)
        base = "/latest/meta-data/iam/security-credentials/"
        if self.path == base:
            return self.reply(200, ROLE.encode(), "text/plain")
        if self.path == base + ROLE:
            return self.keys_json("imds")
        self.reply(404)

    def do_POST(self):
        s = self.server
        form = urllib.parse.parse_qs(self.body().decode())
        one = {k: v[0] for k, v in form.items()}
        if (self.path != "/" or one.get("Action") != "AssumeRoleWithWebIdentity"
                or not one.get("RoleArn") or not one.get("RoleSessionName")):
            return self.reply(400, b"<ErrorResponse><Error><Code>InvalidAction</Code>"
                              b"</Error></ErrorResponse>", "text/xml")
        with open(s.token_file) as f:
            want = f.read().strip()
        if one.get("WebIdentityToken") != want:
            return self.reply(400, b"<ErrorResponse><Error><Code>InvalidIdentityToken</Code>"
                              b"<Message>not the current token</Message></Error>"
                              b"</ErrorResponse>", "text/xml")
        k = s.issue("sts")
        if k is None:
            return self.reply(500, b"<ErrorResponse><Error><Code>ServiceUnavailable</Code>"
                              b"</Error></ErrorResponse>", "text/xml")
        s.rotate(s.token_file)
        self.reply(200, f"""<AssumeRoleWithWebIdentityResponse \
xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>{k["id"]}</AccessKeyId>
      <SecretAccessKey>{k["secret"]}</SecretAccessKey>
      <SessionToken>{k["token"]}</SessionToken>
      <Expiration>{k["expiration"]}</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>""".encode(), "text/xml")
