"""test_s3.py - s3:// sources against a real S3 API server: moto's
(moto_server, from the venv scripts/moto_venv.sh makes; RINGFEED_MOTO_PYTHON
names its python), started here on a free 127.0.0.1 port with
authentication on (INITIAL_NO_AUTH_ACTION_COUNT: the first three requests,
which make an IAM user with an allow-all policy and its access key, are the
only ones it takes unsigned). Nothing on ringfeed's side is mocked: the
loader finds the endpoint, region and credentials as it would on a
machine, signs with SigV4 and reads over HTTP.

Shards are written here with tarfile (JPEG + cls + txt per sample, as
test_remote.py writes them) and uploaded. Each s3:// source (a brace
pattern, s3://bucket/prefix/ listed with ListObjectsV2 over more than one
page, a list file of s3:// URLs) gives batches identical to the same shards
read from local files with the same loader settings: pixels, labels, ids
and captions, with shard_access 'random' and 'sequential', and in raw
mode (each sample's bytes, which are also checked against the member).

Keys with a space, UTF-8 and reserved characters read as plain ones; the
endpoint and region come from AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL and
AWS_REGION / AWS_DEFAULT_REGION (the signature's scope, seen by a recording
relay between loader and server). Credentials come from the environment
(with a session token too), from a shared credentials file (a named
profile, env keys unset; or ~/.aws/credentials), from a config file (its
region and endpoint_url too), and from IMDSv2 (a stdlib server here: a
token PUT first, then every GET carrying it; a GET without it is answered
401), in that order. A wrong secret, an unknown key id, a session token
the server rejects, a missing bucket and a missing key each fail create
with a message naming the bucket and key and the server's error code, and
the secret is in no message (nor in a `ringfeed bench --verbose` run's
output). A shard replaced on the server after create is read as bad
samples naming it ("changed on the server": If-Match, HTTP 412), never as
mixed bytes; with on_error='fail' the stream stops naming it. With no
credentials anywhere the requests go unsigned and read a public bucket
(objects with ACL public-read) of a moto without authentication: moto
with it on answers every unsigned request with HTTP 500.

An s3:// folder's layout is a local folder's: shards in class folders are
labelled by class, shards both in the folder and below it are refused.
"""

import base64
import ctypes
import http.client
import io
import json
import os
import re
import secrets
import select
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
pytest.importorskip("PIL", reason="PIL is not installed for this python (Debian: python3-pil)")
import ringfeed  # noqa: E402
from PIL import Image  # noqa: E402

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
DEFAULT_VENV_PY = os.path.join(os.environ.get("RINGFEED_MOTO_VENV",
                                              "/root/.cache/ringfeed-moto-venv"), "bin", "python")
SHARDS, PER_SHARD = 4, 12
N = SHARDS * PER_SHARD
BUCKET = "data"
FILLERS = 1100            # non-shard objects under the prefix: ListObjectsV2 pages hold 1000
ODD = "odd keys/ä+b=c&d~(1)/"   # a prefix with a space, UTF-8, and characters SigV4 encodes
STARTUP_S = 60            # moto_server's start, at most (a loaded machine)


# ---- the shards ----------------------------------------------------------

def jpeg(k):
    w = 40 + k % 7
    im = Image.new("RGB", (w, 32))
    im.putdata([((x * 5 + k) % 256, (y * 7) % 256, (x + y + k) % 256)
                for y in range(32) for x in range(w)])
    out = io.BytesIO()
    im.save(out, "JPEG", quality=90)
    return out.getvalue()


def caption(k):
    return f"caption {k:03d} 東京"


def members(k):
    return {"cls": str(k % 3).encode(), "jpg": jpeg(k), "txt": caption(k).encode()}


def write_tar(path, samples):
    """samples: [(key, {ext: bytes})], members in sorted extension order."""
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
        for key, m in samples:
            for ext in sorted(m):
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(m[ext])
                info.mtime = 1700000000
                t.addfile(info, io.BytesIO(m[ext]))


def shard_samples(s):
    return [(f"{k:06d}", members(k)) for k in range(s * PER_SHARD, (s + 1) * PER_SHARD)]


def changed_samples(s):
    """Shard s with the same layout and sizes (so the same offsets), other
    bytes: each JPEG's entropy-coded middle and each caption altered."""
    out = []
    for key, m in shard_samples(s):
        img = bytearray(m["jpg"])
        mid = len(img) // 2
        for i in range(mid, mid + 16):
            img[i] = 0x55 if img[i] != 0x55 else 0x2A   # no 0xFF: no new markers
        cap = m["txt"].replace(b"caption", b"CHANGED")
        assert len(cap) == len(m["txt"])
        out.append((key, {"cls": m["cls"], "jpg": bytes(img), "txt": cap}))
    return out


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The shards as local files: {"dir", "pattern", "list"}."""
    root = tmp_path_factory.mktemp("s3-local")
    for s in range(SHARDS):
        write_tar(root / f"train-{s:05d}.tar", shard_samples(s))
    write_tar(root / f"changed-{SHARDS - 1:05d}.tar", changed_samples(SHARDS - 1))
    listing = root / "shards.txt"
    listing.write_text("".join(f"{root}/train-{s:05d}.tar\n" for s in range(SHARDS)))
    shards = root / "shards"
    shards.mkdir()
    for s in range(SHARDS):
        os.link(root / f"train-{s:05d}.tar", shards / f"train-{s:05d}.tar")
    return {"root": root, "dir": str(shards),
            "pattern": f"{root}/train-{{00000..{SHARDS - 1:05d}}}.tar", "list": str(listing)}


# ---- moto: the server, and an admin process (boto3) in its venv ------------

def die_with_parent():
    """preexec_fn: the child is killed if this process dies (even by SIGKILL)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except Exception:
        pass


def moto_python():
    why = os.environ.get("RINGFEED_MOTO_UNAVAILABLE")
    if why:
        pytest.skip(f"no moto server: {why}")
    py = os.environ.get("RINGFEED_MOTO_PYTHON") or DEFAULT_VENV_PY
    if not os.access(py, os.X_OK):
        pytest.skip(f"no moto server: {py} does not exist (scripts/moto_venv.sh makes the venv "
                    "with moto[server]; RINGFEED_MOTO_PYTHON names its python)")
    r = subprocess.run([py, "-c", "import moto.server, boto3"], capture_output=True, text=True,
                       timeout=120)
    if r.returncode:
        pytest.skip(f"no moto server: {py} cannot import moto.server and boto3: "
                    f"{r.stderr.strip().splitlines()[-1:]}")
    return py


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Moto:
    """A moto_server process on 127.0.0.1; stop() kills it (the module's
    fixture calls it whatever happens; PR_SET_PDEATHSIG if pytest dies)."""

    def __init__(self, py, log_path, auth):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOTO_"))}
        if auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
        for _ in range(5):      # the port taken between free_port() and its bind: another
            self.port = free_port()
            self.log = open(log_path, "w")
            # its request log goes to a file: an unread pipe fills and stops the server
            self.proc = subprocess.Popen([py, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                                          str(self.port)], env=env, stdin=subprocess.DEVNULL,
                                         stdout=self.log, stderr=subprocess.STDOUT,
                                         preexec_fn=die_with_parent)
            deadline = time.monotonic() + STARTUP_S
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:    # a TCP connect only: an HTTP request would spend a no-auth action
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    self.url = f"http://127.0.0.1:{self.port}"
                    return
                except OSError:
                    time.sleep(0.05)
            exited = self.proc.poll() is not None
            self.stop()
            if not exited:
                break
        raise RuntimeError(f"moto_server did not start in {STARTUP_S} s:\n"
                           f"{open(log_path).read()[-2000:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


ADMIN = r'''
import base64, json, sys, threading
import boto3, botocore.config
cfg = botocore.config.Config(connect_timeout=5, read_timeout=60, retries={"max_attempts": 2})
ALLOW = json.dumps({"Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
clients = {}

def client(svc, ep, creds):
    key = (svc, ep, creds["id"], creds["secret"])
    if key not in clients:
        clients[key] = boto3.client(svc, endpoint_url=ep, region_name="us-east-1",
                                    aws_access_key_id=creds["id"],
                                    aws_secret_access_key=creds["secret"], config=cfg)
    return clients[key]

def bootstrap(ep):
    """The server's three unsigned actions: a user, its policy, its key."""
    iam = client("iam", ep, {"id": "bootstrap", "secret": "bootstrap"})
    iam.create_user(UserName="ringfeed-test")
    iam.put_user_policy(UserName="ringfeed-test", PolicyName="all", PolicyDocument=ALLOW)
    k = iam.create_access_key(UserName="ringfeed-test")["AccessKey"]
    return {"id": k["AccessKeyId"], "secret": k["SecretAccessKey"]}

def create_bucket(ep, creds, bucket):
    client("s3", ep, creds).create_bucket(Bucket=bucket)

def put(ep, creds, bucket, key, path=None, data=None, acl=None):
    body = open(path, "rb").read() if path else base64.b64decode(data)
    extra = {"ACL": acl} if acl else {}
    return client("s3", ep, creds).put_object(Bucket=bucket, Key=key, Body=body, **extra)["ETag"]

def put_many(ep, creds, bucket, keys, data):
    body = base64.b64decode(data)
    cs = [boto3.client("s3", endpoint_url=ep, region_name="us-east-1",
                       aws_access_key_id=creds["id"], aws_secret_access_key=creds["secret"],
                       config=cfg) for _ in range(4)]
    errors = []
    def work(j):
        try:
            for key in keys[j::4]:
                cs[j].put_object(Bucket=bucket, Key=key, Body=body)
        except Exception as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=work, args=(j,)) for j in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    if errors:
        raise RuntimeError(errors[0])
    return len(keys)

def key_count(ep, creds, bucket, prefix):
    pages = client("s3", ep, creds).get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix)
    return sum(p.get("KeyCount", 0) for p in pages)

def role_credentials(ep, creds):
    """Temporary credentials (an assumed role's: key, secret, session token)."""
    iam = client("iam", ep, creds)
    try:
        iam.create_role(RoleName="ringfeed-role", AssumeRolePolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
             "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}))
        iam.put_role_policy(RoleName="ringfeed-role", PolicyName="all", PolicyDocument=ALLOW)
    except iam.exceptions.EntityAlreadyExistsException:
        pass
    c = client("sts", ep, creds).assume_role(
        RoleArn="arn:aws:iam::123456789012:role/ringfeed-role",
        RoleSessionName="ringfeed-test")["Credentials"]
    return {"id": c["AccessKeyId"], "secret": c["SecretAccessKey"],
            "token": c["SessionToken"], "expiration": c["Expiration"].isoformat()}

OPS = {f.__name__: f for f in (bootstrap, create_bucket, put, put_many, key_count,
                               role_credentials)}
for line in sys.stdin:
    req = json.loads(line)
    try:
        out = {"ok": OPS[req.pop("op")](**req)}
    except Exception as e:
        out = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out), flush=True)
'''


class Admin:
    """boto3 in moto's venv, one process, a JSON line per call."""

    def __init__(self, py):
        self.proc = subprocess.Popen([py, "-c", ADMIN], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=die_with_parent)

    def __call__(self, op, **kw):
        self.proc.stdin.write(json.dumps(dict(kw, op=op)) + "\n")
        self.proc.stdin.flush()
        # a deadline: a server that stops answering fails the test, not the suite's timeout
        if not select.select([self.proc.stdout], [], [], 300)[0]:
            raise RuntimeError(f"{op}: no answer from the admin process in 300 s")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the admin process died: {self.proc.stderr.read()}")
        out = json.loads(line)
        if "error" in out:
            raise RuntimeError(f"{op}: {out['error']}")
        return out["ok"]

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def b64(data):
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def moto(tmp_path_factory, local):
    """The authenticating server with the bucket filled: {"url", "creds",
    "admin", "role"}. Under data/: laion/train-0000S.tar and FILLERS
    non-shard objects between shards 1 and 2 (so the listing's second page
    holds shards 2 and 3), other prefixes that share laion/'s first letters."""
    try:    # a closed port: refused at once where ringfeed has libcurl
        ringfeed.Loader("http://127.0.0.1:1/x.tar", raw=True)
    except ringfeed.Error as e:
        if "without libcurl" in str(e):
            pytest.skip("this ringfeed was built without libcurl (meson feature 'remote')")
    py = moto_python()
    logs = tmp_path_factory.mktemp("moto")
    server = Moto(py, logs / "moto.log", auth=True)
    admin = None
    try:
        admin = Admin(py)
        creds = admin("bootstrap", ep=server.url)
        admin("create_bucket", ep=server.url, creds=creds, bucket=BUCKET)
        root = local["root"]
        for s in range(SHARDS):
            admin("put", ep=server.url, creds=creds, bucket=BUCKET, key=f"laion/train-{s:05d}.tar",
                  path=str(root / f"train-{s:05d}.tar"))
            # beside the prefix, not in it: never listed
            admin("put", ep=server.url, creds=creds, bucket=BUCKET,
                  key=f"laion-extra/train-{s:05d}.tar", data=b64(b"not a tar" * 100))
            admin("put", ep=server.url, creds=creds, bucket=BUCKET, key=f"{ODD}train-{s:05d}.tar",
                  path=str(root / f"train-{s:05d}.tar"))
        fillers = [f"laion/train-00001.x{j:04d}.json" for j in range(FILLERS)]
        fillers += ["laion/README.md", "laion/train-00003.tar.json", "laion/train-00002.tarx"]
        admin("put_many", ep=server.url, creds=creds, bucket=BUCKET, keys=fillers,
              data=b64(b'{"not": "a shard"}'))
        assert admin("key_count", ep=server.url, creds=creds, bucket=BUCKET,
                     prefix="laion/") == SHARDS + len(fillers)
        role = admin("role_credentials", ep=server.url, creds=creds)
        yield {"url": server.url, "creds": creds, "admin": admin, "role": role}
    finally:
        if admin:
            admin.close()
        server.stop()


# ---- the environment each test starts from --------------------------------

@pytest.fixture
def aws(monkeypatch, tmp_path, moto):
    """No AWS setting from outside: HOME empty, IMDS off, no AWS_* variable.
    Returns a setter for the user's credentials in the environment."""
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    def use(endpoint=None, creds=None, **extra):
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint or moto["url"])
        creds = moto["creds"] if creds is None else creds
        if creds:
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", creds["id"])
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", creds["secret"])
            if creds.get("token"):
                monkeypatch.setenv("AWS_SESSION_TOKEN", creds["token"])
        for k, v in extra.items():
            monkeypatch.setenv(k, v)
    use.home = home
    return use


# ---- loading and comparing -------------------------------------------------

CONFIGS = {
    "random": {"shard_access": "random", "fields": ("txt",)},
    "sequential": {"shard_access": "sequential", "shuffle_block": 4, "fields": ("txt",)},
    "raw-random": {"raw": True, "shard_access": "random"},
    "raw-sequential": {"raw": True, "shard_access": "sequential", "shuffle_block": 4},
}


def load(source, **kw):
    """Every batch of one epoch (ids included), the bad-sample reports, stats."""
    kw = {"batch_size": 5, "seed": 3, "epochs": 1, **kw}
    bad = []
    with ringfeed.Loader(source, with_ids=True, copy=True,
                         on_bad_sample=lambda *r: bad.append(r), **kw) as loader:
        batches = list(loader)
        stats = loader.stats()
    return batches, bad, stats


def check_members(batches, raw):
    """Each sample's bytes (raw) and caption are its members'; every sample once."""
    seen = []
    for b in batches:
        ids = b[2].tolist()
        seen += ids
        for i, sid in enumerate(ids):
            assert int(b[1][i]) == sid % 3
            if raw:
                assert b[0][i] == jpeg(sid), f"sample {sid}: not its JPEG's bytes"
            else:
                assert b["txt"][i] == caption(sid)
    assert sorted(seen) == list(range(N))


def assert_same(remote, local_batches, raw):
    assert len(remote) == len(local_batches)
    for a, b in zip(remote, local_batches):
        if raw:
            assert a[0] == b[0]
        else:
            assert a[0].dtype == b[0].dtype and torch.equal(a[0], b[0])
            assert a["txt"] == b["txt"]
        assert torch.equal(a[1], b[1]) and torch.equal(a[2], b[2])


_local_runs = {}


def local_run(source, config):
    key = (source, config)
    if key not in _local_runs:
        batches, bad, stats = load(source, **CONFIGS[config])
        assert bad == [] and stats["http_requests"] == 0
        check_members(batches, CONFIGS[config].get("raw", False))
        _local_runs[key] = batches
    return _local_runs[key]


def remote_equals_local(remote_source, local_source, config):
    batches, bad, stats = load(remote_source, **CONFIGS[config])
    assert bad == []
    assert stats["http_requests"] > 0 and stats["http_errors"] == 0
    raw = CONFIGS[config].get("raw", False)
    check_members(batches, raw)
    assert_same(batches, local_run(local_source, config), raw)


def small_read(source=f"s3://{BUCKET}/laion/train-{{00000..{SHARDS - 1:05d}}}.tar"):
    """One epoch in raw mode, each sample its JPEG's bytes."""
    batches, bad, _ = load(source, raw=True, shuffle=0)
    assert bad == []
    check_members(batches, raw=True)


def secret_free(text, *creds):
    for c in creds:
        for field in ("secret", "token"):
            if c.get(field):
                assert c[field] not in text, f"the {field} is in a message"


# ---- a recording relay (the signature's scope, unsigned requests, pages) ---

class Relay(ThreadingHTTPServer):
    """Forwards each request to upstream as it came (its Host header too, so
    a SigV4 signature still verifies) and records method, path, headers."""
    daemon_threads = True

    def __init__(self, upstream_port):
        super().__init__(("127.0.0.1", 0), RelayHandler)
        self.upstream = upstream_port
        self.seen = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


class RelayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        self.server.seen.append((self.command, self.path,
                                 {k.lower(): v for k, v in self.headers.items()}))
        up = http.client.HTTPConnection("127.0.0.1", self.server.upstream, timeout=60)
        try:
            up.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for k, v in self.headers.items():
                up.putheader(k, v)
            up.endheaders(body)
            r = up.getresponse()
            data = r.read()
            self.send_response_only(r.status, r.reason)
            for k, v in r.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(k, v)
            length = r.getheader("Content-Length") if self.command == "HEAD" else len(data)
            self.send_header("Content-Length", str(length or 0))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            up.close()

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = relay


# ---- the sources -----------------------------------------------------------

@pytest.mark.parametrize("config", list(CONFIGS))
def test_brace_pattern_reads_as_the_local_shards(moto, aws, local, config):
    aws()
    remote_equals_local(f"s3://{BUCKET}/laion/train-{{00000..{SHARDS - 1:05d}}}.tar",
                        local["pattern"], config)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_prefix_listing_reads_as_the_local_folder(moto, aws, local, config):
    aws()
    remote_equals_local(f"s3://{BUCKET}/laion/", local["dir"], config)


def test_prefix_listing_follows_every_page_and_keeps_to_the_prefix(moto, aws):
    """More than 1000 keys: a second ListObjectsV2 page, asked for with the
    first's continuation token, holds shards 2 and 3; objects that are not
    tar shards, and laion-extra/ (which shares the prefix's letters but not
    its '/'), are not shards."""
    with Relay(int(moto["url"].rsplit(":", 1)[1])) as relay:
        aws(endpoint=relay.url)
        batches, bad, _ = load(f"s3://{BUCKET}/laion/", raw=True, shuffle=0)
    assert bad == []
    check_members(batches, raw=True)
    lists = [p for m, p, _ in relay.seen if "list-type=2" in p]
    assert len(lists) == 2, lists
    assert "continuation-token=" not in lists[0] and "continuation-token=" in lists[1]
    assert all("prefix=laion%2F" in p for p in lists)
    gets = {p.split("?")[0] for m, p, _ in relay.seen if "list-type" not in p}
    assert not any("laion-extra" in p or p.endswith(".json") or p.endswith(".md")
                   for p in gets), gets


@pytest.mark.parametrize("config", list(CONFIGS))
def test_list_file_of_s3_urls_reads_as_the_local_list(moto, aws, local, tmp_path, config):
    aws()
    listing = tmp_path / "s3-shards.txt"
    listing.write_text("# the shards, in S3\n" + "".join(
        f"s3://{BUCKET}/laion/train-{s:05d}.tar\n" for s in range(SHARDS)))
    remote_equals_local(str(listing), local["list"], config)


def test_a_list_file_with_two_buckets_is_refused(moto, aws, tmp_path):
    aws()
    listing = tmp_path / "two.txt"
    listing.write_text(f"s3://{BUCKET}/laion/train-00000.tar\ns3://other/train-00001.tar\n")
    with pytest.raises(ringfeed.Error, match=r"s3://other/train-00001.tar.*not in bucket data"):
        ringfeed.Loader(str(listing), raw=True)


@pytest.mark.parametrize("form", ["listing", "pattern", "list-file", "one-shard"])
def test_keys_with_spaces_utf8_and_reserved_characters(moto, aws, local, tmp_path, form):
    """Keys percent-encoded in the URL and in the signature alike."""
    aws()
    if form == "listing":
        source, ref = f"s3://{BUCKET}/{ODD}", local["dir"]
    elif form == "pattern":
        source = f"s3://{BUCKET}/{ODD}train-{{00000..{SHARDS - 1:05d}}}.tar"
        ref = local["pattern"]
    elif form == "list-file":
        source, ref = tmp_path / "odd.txt", local["list"]
        source.write_text("".join(f"s3://{BUCKET}/{ODD}train-{s:05d}.tar\n"
                                  for s in range(SHARDS)))
    else:
        source = f"s3://{BUCKET}/{ODD}train-00001.tar"
        batches, bad, _ = load(source, raw=True, shuffle=0)
        got = {i: raw for b in batches for raw, i in zip(b[0], b[2].tolist())}
        # ids count from 0 in this one shard, shard 1 (its samples 12 to 23)
        assert bad == [] and got == {i: jpeg(PER_SHARD + i) for i in range(PER_SHARD)}
        return
    remote_equals_local(str(source), ref, "raw-random")


def test_endpoint_and_region_from_the_environment(moto, aws, monkeypatch):
    """AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL; AWS_REGION before
    AWS_DEFAULT_REGION, which is the signature's scope without it."""
    with Relay(int(moto["url"].rsplit(":", 1)[1])) as relay:
        aws(endpoint="http://127.0.0.1:9", AWS_ENDPOINT_URL_S3=relay.url,
            AWS_DEFAULT_REGION="sa-east-1")
        small_read()
        scopes = {re.search(r"/(\w+-\w+-\d)/s3/", h["authorization"]).group(1)
                  for _, _, h in relay.seen}
        assert scopes == {"sa-east-1"}
        relay.seen.clear()
        monkeypatch.setenv("AWS_REGION", "eu-north-1")
        small_read()
        scopes = {re.search(r"/(\w+-\w+-\d)/s3/", h["authorization"]).group(1)
                  for _, _, h in relay.seen}
        assert scopes == {"eu-north-1"}


def class_folder_shards(root, admin, moto, prefix, extra=None):
    """Shards without cls members in class folders (cat/, dog/) locally and
    under prefix; extra: (name, samples) of a shard in the folder itself."""
    for c, (lo, hi) in (("cat", (0, 5)), ("dog", (5, 10))):
        (root / c).mkdir(parents=True)
        write_tar(root / c / f"{c}-00000.tar", [(f"{k:06d}", {"jpg": jpeg(k)})
                                                for k in range(lo, hi)])
    if extra:
        write_tar(root / extra[0], extra[1])
    for f in sorted(root.rglob("*.tar")):
        admin("put", ep=moto["url"], creds=moto["creds"], bucket=BUCKET,
              key=f"{prefix}/{f.relative_to(root)}", path=str(f))


def test_class_folders_of_shards_label_as_a_local_folder(moto, aws, tmp_path):
    aws()
    class_folder_shards(tmp_path / "classes", moto["admin"], moto, "classes")
    kw = {"raw": True, "shuffle": 0}
    local_labels = [lb for b in load(str(tmp_path / "classes"), **kw)[0] for lb in b[1].tolist()]
    assert local_labels == [0] * 5 + [1] * 5
    remote_labels = [lb for b in load(f"s3://{BUCKET}/classes/", **kw)[0] for lb in b[1].tolist()]
    assert remote_labels == local_labels


def test_shards_both_in_the_folder_and_in_sub_folders_are_refused_as_locally(moto, aws, tmp_path):
    aws()
    class_folder_shards(tmp_path / "mixed", moto["admin"], moto, "mixed",
                        extra=("top-00000.tar", [("000100", {"jpg": jpeg(100)})]))
    with pytest.raises(ringfeed.Error, match="not where shards go"):
        ringfeed.Loader(str(tmp_path / "mixed"), raw=True)
    with pytest.raises(ringfeed.Error, match="not where shards go"):
        ringfeed.Loader(f"s3://{BUCKET}/mixed/", raw=True)


# ---- where the credentials come from --------------------------------------

def test_credentials_from_the_environment_with_a_session_token(moto, aws):
    """An assumed role's key, secret and token in AWS_*: the token goes with
    every request (the server refuses the key without it)."""
    role = moto["role"]
    with Relay(int(moto["url"].rsplit(":", 1)[1])) as relay:
        aws(endpoint=relay.url, creds=role, AWS_REGION="ap-south-1")
        small_read()
    assert relay.seen
    for method, path, h in relay.seen:
        assert h.get("x-amz-security-token") == role["token"], (method, path)
        assert f"Credential={role['id']}/" in h["authorization"]
        assert "/ap-south-1/s3/aws4_request" in h["authorization"]


def write_profile(home, moto, *, creds_in="credentials", endpoint=None, nested=False,
                  region="eu-west-2", profile="ringfeed", default_paths=False):
    """A shared credentials file (wrong keys in [default], the user's in the
    profile) and a config file with the profile's region and endpoint_url."""
    aws_dir = home / ".aws" if default_paths else home / "elsewhere"
    aws_dir.mkdir(parents=True, exist_ok=True)
    c = moto["creds"]
    keys = f"aws_access_key_id = {c['id']}\naws_secret_access_key = {c['secret']}\n"
    wrong = "aws_access_key_id = AKIAWRONGWRONGWRONG0\naws_secret_access_key = wrong\n"
    section = "default" if profile == "default" else f"profile {profile}"
    credentials = "[default]\n" + wrong + "\n" if profile != "default" else ""
    config = f"[{section}]\n# a comment\nregion = {region}\n"
    if endpoint:
        config += (f"s3 =\n    addressing_style = path\n    endpoint_url = {endpoint}\n"
                   if nested else f"endpoint_url = {endpoint}\n")
    if creds_in == "credentials":
        credentials += f"[{profile}]\n" + keys
    else:
        config += keys
    (aws_dir / "credentials").write_text(credentials)
    (aws_dir / "config").write_text(config)
    return aws_dir


@pytest.mark.parametrize("where", ["named-profile", "default-paths"])
def test_credentials_from_the_shared_credentials_file(moto, aws, where, monkeypatch):
    """Env keys unset: the profile's keys from AWS_SHARED_CREDENTIALS_FILE
    (AWS_PROFILE names it; [default] holds wrong ones), or ~/.aws/credentials
    [default]; the endpoint from AWS_ENDPOINT_URL."""
    aws(creds={})
    if where == "named-profile":
        d = write_profile(aws.home, moto)
        monkeypatch.setenv("AWS_PROFILE", "ringfeed")
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(d / "credentials"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(d / "config"))
    else:
        write_profile(aws.home, moto, profile="default", default_paths=True)
    small_read(f"s3://{BUCKET}/laion/")


@pytest.mark.parametrize("form", ["endpoint_url", "s3-section", "keys-in-config"])
def test_region_and_endpoint_from_the_config_file(moto, aws, monkeypatch, form):
    """No AWS_ENDPOINT_URL, no AWS_REGION: the profile's endpoint_url (or its
    s3 section's) is where the requests go, its region is the signature's
    scope; the keys from the credentials file or the config file itself."""
    aws(creds={})
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    with Relay(int(moto["url"].rsplit(":", 1)[1])) as relay:
        d = write_profile(aws.home, moto, endpoint=relay.url, nested=form == "s3-section",
                          creds_in="config" if form == "keys-in-config" else "credentials")
        monkeypatch.setenv("AWS_PROFILE", "ringfeed")
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(d / "credentials"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(d / "config"))
        small_read(f"s3://{BUCKET}/laion/")
    assert relay.seen
    for method, path, h in relay.seen:
        assert re.search(rf"Credential={moto['creds']['id']}/\d{{8}}/eu-west-2/s3/aws4_request",
                         h.get("authorization", "")), (method, path, h.get("authorization"))


def test_the_environment_comes_before_the_shared_files(moto, aws, monkeypatch):
    d = write_profile(aws.home, moto, profile="default", default_paths=True)
    (d / "credentials").write_text("[default]\naws_access_key_id = AKIAWRONGWRONGWRONG0\n"
                                   "aws_secret_access_key = wrong\n")
    aws()
    small_read()


class Imds(ThreadingHTTPServer):
    """EC2 instance metadata, IMDSv2: PUT /latest/api/token gives a token;
    a GET without it is answered 401. The role's credentials are creds."""
    daemon_threads = True
    ROLE = "ringfeed-role"

    def __init__(self, creds):
        super().__init__(("127.0.0.1", 0), ImdsHandler)
        self.creds = creds
        self.token = "imds-" + secrets.token_hex(16)
        self.seen = []     # (method, path, status)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


class ImdsHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b""):
        self.server.seen.append((self.command, self.path, status))
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        if self.path != "/latest/api/token" or not ttl or not ttl.isdigit():
            return self.reply(400)
        self.reply(200, self.server.token.encode())

    def do_GET(self):
        if self.headers.get("X-aws-ec2-metadata-token") != self.server.token:
            return self.reply(401)
        base = "/latest/meta-data/iam/security-credentials/"
        c = self.server.creds
        if self.path == base:
            return self.reply(200, Imds.ROLE.encode())
        if self.path == base + Imds.ROLE:
            return self.reply(200, json.dumps({
                "Code": "Success", "LastUpdated": "2024-01-01T00:00:00Z", "Type": "AWS-HMAC",
                "AccessKeyId": c["id"], "SecretAccessKey": c["secret"], "Token": c["token"],
                "Expiration": c["expiration"]}, indent=2).encode())
        self.reply(404)


def test_credentials_from_instance_metadata(moto, aws, monkeypatch):
    """No keys anywhere else: IMDSv2 (a token first, every GET with it; this
    server answers 401 without it) gives the role's temporary credentials,
    whose session token the bucket's requests carry."""
    aws(creds={})
    with Imds(moto["role"]) as imds:
        monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url + "/")
        small_read(f"s3://{BUCKET}/laion/")
    assert imds.seen[0] == ("PUT", "/latest/api/token", 200)
    base = "/latest/meta-data/iam/security-credentials/"
    assert ("GET", base, 200) in imds.seen and ("GET", base + Imds.ROLE, 200) in imds.seen
    assert all(status == 200 for *_, status in imds.seen), imds.seen


def test_instance_metadata_comes_last_and_can_be_disabled(moto, aws, monkeypatch):
    """Keys in the environment or the shared files: IMDS is not asked.
    AWS_EC2_METADATA_DISABLED=true: not asked either, and with no other
    credentials the requests go unsigned (refused by this server)."""
    with Imds(moto["role"]) as imds:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
        aws()
        small_read()
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        write_profile(aws.home, moto, profile="default", default_paths=True)
        small_read()
        assert imds.seen == []
        os.remove(aws.home / ".aws" / "credentials")
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        with pytest.raises(ringfeed.Error, match=r"s3://data/laion/.*HTTP [45]\d\d"):
            ringfeed.Loader(f"s3://{BUCKET}/laion/", raw=True)
        assert imds.seen == []


# ---- credentials that expire: refreshed during a run ------------------------
#
# The sources of short-lived keys (IMDSv2, a container's endpoint, a web
# identity exchanged with STS, a profile's credential_process) hand out
# moto's assumed-role keys that expire LIFETIME seconds later, a new set at
# each fetch (tests/metadata_server.py; a script for credential_process).
# A run that outlives several sets reads every sample, and the requests
# moto receives (seen by the recording relay, moto checking each
# signature) are signed with each new key in turn. A refresh that fails
# keeps the keys in hand with one warning; a profile that does not exist
# is refused as the AWS CLI refuses it.

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from metadata_server import MetadataServer  # noqa: E402

LIFETIME = 4        # seconds a set of keys lives: refreshed at about half of it
REFRESHES = 3       # new sets a run must have signed with
ROLE_SETS = 8       # sets made: more than a run asks for


@pytest.fixture(scope="module")
def roles(moto):
    """ROLE_SETS sets of assumed-role keys that moto accepts, each other."""
    return [moto["admin"]("role_credentials", ep=moto["url"], creds=moto["creds"])
            for _ in range(ROLE_SETS)]


def key_of(headers):
    m = re.search(r"Credential=([^/]+)/", headers.get("authorization", ""))
    return m.group(1) if m else None


def read_through_refreshes(issued, count, relay, want=REFRESHES, **kw):
    """Reads (raw, every sample checked) epoch after epoch until requests
    signed with want + 1 sets of keys came, each the newest issued when it
    began: after a batch whose requests carry the newest key, waits for
    the next fetch (count() growing), bounded. Returns the key ids in the
    order the requests came and the loader's stats."""
    deadline = time.monotonic() + 120
    bad = []
    with ringfeed.Loader(f"s3://{BUCKET}/laion/train-{{00000..{SHARDS - 1:05d}}}.tar",
                         raw=True, shuffle=0, batch_size=4, io_depth=2, prefetch=2,
                         with_ids=True, copy=True, epochs=0,
                         on_bad_sample=lambda *r: bad.append(r), **kw) as loader:
        for _ in range(200):                     # epochs, bounded
            assert time.monotonic() < deadline, "no new keys in the time allowed"
            for b in loader:
                for i, sid in enumerate(b[2].tolist()):
                    assert b[0][i] == jpeg(sid), f"sample {sid}: not its JPEG's bytes"
                used = {key_of(h) for _, _, h in relay.seen}
                newest = issued()[-1]
                if newest in used:
                    if len(used) > want:
                        break
                    n = count()
                    assert wait(lambda: count() > n, 30), "keys not fetched again in 30 s"
            else:
                continue
            break
        stats = loader.stats()
    assert bad == [] and stats["http_errors"] == 0
    return [key_of(h) for _, _, h in relay.seen], stats


def wait(pred, timeout):
    """Polls pred (every 10 ms) until it holds or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def assert_rotated(keys, issued, want=REFRESHES):
    """Every request signed with a key handed out; more than want of them
    used; each request's key at most one set older than the newest used
    before it (a read in flight when new keys came finishes with its own)."""
    order = {k: i for i, k in enumerate(issued)}
    assert set(keys) <= set(order), f"requests signed with keys never handed out: {set(keys)}"
    assert len(set(keys)) > want, f"{len(set(keys))} sets of keys used, of {len(issued)} fetched"
    newest = 0
    for k in keys:
        assert order[k] >= newest - 1, f"a request signed with key {order[k]} after key {newest}"
        newest = max(newest, order[k])


@pytest.fixture
def relayed(moto, aws):
    """aws() with the endpoint a recording relay to moto and no keys."""
    with Relay(int(moto["url"].rsplit(":", 1)[1])) as relay:
        aws(endpoint=relay.url, creds={})
        yield relay


def test_instance_metadata_keys_are_refreshed_during_a_run(relayed, roles, monkeypatch):
    with MetadataServer(roles, lifetime=LIFETIME) as md:
        monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", md.url)
        keys, _ = read_through_refreshes(lambda: md.issued, lambda: md.served["imds"], relayed)
        assert_rotated(keys, md.issued)


def test_container_keys_are_refreshed_with_the_rotated_authorization(relayed, roles, monkeypatch,
                                                                      tmp_path):
    """AWS_CONTAINER_CREDENTIALS_FULL_URI with its token in a file the
    agent rewrites after each answer: each fetch reads the file again."""
    auth = tmp_path / "eks-pod-identity-token"
    with MetadataServer(roles, lifetime=LIFETIME, auth_file=str(auth)) as md:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", md.url + "/v1/credentials")
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", str(auth))
        keys, _ = read_through_refreshes(lambda: md.issued, lambda: md.served["container"],
                                         relayed)
        assert_rotated(keys, md.issued)
        assert md.refused == 0


def test_web_identity_keys_are_refreshed_with_the_rotated_token(relayed, roles, monkeypatch,
                                                                tmp_path):
    """AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN: AssumeRoleWithWebIdentity
    at AWS_ENDPOINT_URL_STS, the token file (rotated after each exchange)
    read again at each refresh. A session name of our own."""
    token = tmp_path / "token"
    with MetadataServer(roles, lifetime=LIFETIME, token_file=str(token)) as md:
        monkeypatch.setenv("AWS_ENDPOINT_URL_STS", md.url)
        monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token))
        monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ringfeed-role")
        monkeypatch.setenv("AWS_ROLE_SESSION_NAME", "rf-test")
        keys, _ = read_through_refreshes(lambda: md.issued, lambda: md.served["sts"], relayed)
        assert_rotated(keys, md.issued)
        assert md.refused == 0


PROCESS = r'''#!/usr/bin/env python3
# credential_process: the next of the sets in KEYS, expiring LIFETIME s from now
import datetime, json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
count = os.path.join(here, "count")
n = int(open(count).read()) if os.path.exists(count) else 0
keys = json.load(open(os.path.join(here, "keys.json")))
if n >= len(keys):
    print("no more keys", file=sys.stderr)
    sys.exit(1)
k = keys[n]
exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=LIFETIME)
print(json.dumps({"Version": 1, "AccessKeyId": k["id"], "SecretAccessKey": k["secret"],
                  "SessionToken": k["token"], "Expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ")}))
sys.stdout.flush()
with open(count + ".new", "w") as f:
    f.write(str(n + 1))
os.replace(count + ".new", count)
'''


def test_credential_process_keys_are_refreshed_during_a_run(relayed, roles, monkeypatch, aws,
                                                            tmp_path):
    """A profile's credential_process (a script here, its JSON with an
    Expiration) is run again before its keys expire."""
    bin_dir = tmp_path / "proc"
    bin_dir.mkdir()
    (bin_dir / "keys.json").write_text(json.dumps(roles))
    script = bin_dir / "creds.py"
    script.write_text(PROCESS.replace("LIFETIME)", f"{LIFETIME})"))
    script.chmod(0o755)
    aws_dir = aws.home / ".aws"
    aws_dir.mkdir()
    (aws_dir / "config").write_text(f"[profile batch]\ncredential_process = "
                                    f"{sys.executable} {script}\n")
    monkeypatch.setenv("AWS_PROFILE", "batch")

    def count():
        c = bin_dir / "count"
        return int(c.read_text()) if c.exists() else 0
    issued = lambda: [k["id"] for k in roles[:count()]]  # noqa: E731
    keys, _ = read_through_refreshes(issued, count, relayed)
    assert_rotated(keys, issued())


HELD = r'''#!/usr/bin/env python3
# credential_process: keys expiring LIFETIME s from now; from its second run
# on it holds its answer until the file "release" exists (a minute at most)
import datetime, json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
count = os.path.join(here, "count")
n = int(open(count).read()) if os.path.exists(count) else 0
with open(count, "w") as f:
    f.write(str(n + 1))
if n:
    open(os.path.join(here, "running"), "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(here, "release")) and time.monotonic() < deadline:
        time.sleep(0.01)
k = json.load(open(os.path.join(here, "keys.json")))[n]
exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=LIFETIME)
print(json.dumps({"Version": 1, "AccessKeyId": k["id"], "SecretAccessKey": k["secret"],
                  "SessionToken": k["token"], "Expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ")}))
sys.stdout.flush()
if n:
    open(os.path.join(here, "done"), "w").close()
'''


def test_reads_go_on_and_close_returns_while_a_refresh_is_held(relayed, roles, monkeypatch, aws,
                                                              tmp_path):
    """A refresh that does not answer (a credential_process holding its
    output) stops neither the reads (a whole epoch comes meanwhile, with
    the keys in hand) nor the loader's close (the refresh is left to end on
    its own thread)."""
    d = tmp_path / "proc"
    d.mkdir()
    (d / "keys.json").write_text(json.dumps(roles))
    (d / "creds.py").write_text(HELD.replace("LIFETIME)", f"{LIFETIME})"))
    (aws.home / ".aws").mkdir()
    (aws.home / ".aws" / "config").write_text(f"[profile held]\ncredential_process = "
                                              f"{sys.executable} {d / 'creds.py'}\n")
    monkeypatch.setenv("AWS_PROFILE", "held")
    try:
        with ringfeed.Loader(f"s3://{BUCKET}/laion/train-{{00000..{SHARDS - 1:05d}}}.tar",
                             raw=True, shuffle=0, batch_size=4, with_ids=True, copy=True,
                             epochs=0) as loader:
            assert wait(lambda: (d / "running").exists(), 60), "no refresh began"
            for _ in range(2):
                seen = [sid for b in loader for sid in b[2].tolist()]
                assert sorted(seen) == list(range(N))
            assert not (d / "done").exists()
        assert not (d / "done").exists(), "close waited for the refresh"
        assert {key_of(h) for _, _, h in relayed.seen} == {roles[0]["id"]}
    finally:
        (d / "release").touch()
        assert wait(lambda: (d / "done").exists(), 60)


def test_a_failed_refresh_keeps_the_keys_with_one_warning(relayed, roles, monkeypatch, capfd):
    """IMDS answers once, then 500 to every request: the run reads on with
    the first keys (this server does not check their expiry), tries again
    with a backoff and says so once, naming the source."""
    with MetadataServer(roles, lifetime=LIFETIME) as md:
        monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", md.url)
        bad = []
        with ringfeed.Loader(f"s3://{BUCKET}/laion/train-{{00000..{SHARDS - 1:05d}}}.tar",
                             raw=True, shuffle=0, batch_size=4, with_ids=True, copy=True,
                             epochs=0, log_level="warn",
                             on_bad_sample=lambda *r: bad.append(r)) as loader:
            md.failing = True
            # three refreshes refused (each tried twice by its request)
            assert md.wait_for(lambda s: s.refused >= 6, timeout=60), md.refused
            for _ in range(2):
                small = [sid for b in loader for sid in b[2].tolist()]
                assert sorted(small) == list(range(N))
            stats = loader.stats()
        assert bad == [] and stats["http_errors"] == 0
        assert md.issued == [roles[0]["id"]]
        assert {key_of(h) for _, _, h in relayed.seen} == {roles[0]["id"]}
    err = capfd.readouterr().err
    warnings = [line for line in err.splitlines() if "refreshing them failed" in line]
    assert len(warnings) == 1, err
    assert f"instance metadata at {md.url}" in warnings[0] and "HTTP 500" in warnings[0]
    secret_free(err, *roles)


def test_a_source_that_fails_at_create_is_named_and_no_secret_told(relayed, roles, monkeypatch,
                                                                   aws, tmp_path):
    """A source that is set up and fails fails create naming it and what it
    did (never going on unsigned): a credential_process that exits 1, or
    prints another Version; STS refusing a token that is not the current
    one; a container endpoint refusing the authorization, or named over
    plain http to another machine."""
    def refused(pattern):
        with pytest.raises(ringfeed.Error) as e:
            ringfeed.Loader(f"s3://{BUCKET}/laion/", raw=True)
        message = e.value.args[-1]
        assert re.search(pattern, message), message
        secret_free(message, *roles)

    aws_dir = aws.home / ".aws"
    aws_dir.mkdir()
    for script, why in (("import sys; sys.exit(1)", "the command exited with status 1"),
                        ("import json; print(json.dumps({'Version': 2, 'AccessKeyId': 'A', "
                         "'SecretAccessKey': 'S'}))", r'the command.s output is not JSON with "Version": 1')):
        (tmp_path / "p.py").write_text(script)
        (aws_dir / "config").write_text(f"[profile batch]\ncredential_process = "
                                        f"{sys.executable} {tmp_path / 'p.py'}\n")
        monkeypatch.setenv("AWS_PROFILE", "batch")
        refused(rf"profile batch's credential_process: {why}")
    monkeypatch.delenv("AWS_PROFILE")

    token, auth = tmp_path / "token", tmp_path / "auth"
    with MetadataServer(roles, lifetime=LIFETIME, token_file=str(token),
                        auth_file=str(auth)) as md:
        (tmp_path / "stale").write_text("tok-stale\n")
        monkeypatch.setenv("AWS_ENDPOINT_URL_STS", md.url)
        monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(tmp_path / "stale"))
        monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ringfeed-role")
        refused(rf"web identity \(role arn:aws:iam::123456789012:role/ringfeed-role, STS at "
                rf"{md.url}\): AssumeRoleWithWebIdentity: HTTP 400 \(InvalidIdentityToken")
        monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE")
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", md.url + "/v1/credentials")
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "tok-not-the-agents")
        refused(rf"the container endpoint {md.url}/v1/credentials: HTTP 401")
        assert md.issued == []
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://192.0.2.1/v1/credentials")
    refused(r"AWS_CONTAINER_CREDENTIALS_FULL_URI 'http://192.0.2.1/v1/credentials': not https")
    assert relayed.seen == []


def test_a_profile_that_does_not_exist_is_refused(aws, moto, monkeypatch):
    """AWS_PROFILE naming no profile (a typo) fails create with the AWS
    CLI's words, even with keys elsewhere; never unsigned requests."""
    aws()
    write_profile(aws.home, moto, profile="ringfeed", default_paths=True)
    monkeypatch.setenv("AWS_PROFILE", "ringfed")
    with pytest.raises(ringfeed.Error,
                       match=r"The config profile \(ringfed\) could not be found"):
        ringfeed.Loader(f"s3://{BUCKET}/laion/", raw=True)
    monkeypatch.setenv("AWS_PROFILE", "ringfeed")
    small_read()


# ---- failures: create fails, saying what the server said -------------------

FAILURES = {
    # name: (creds change, source, pattern the message matches)
    "wrong-secret": ({"secret": "wrong" + "x" * 35}, "laion/", "SignatureDoesNotMatch"),
    "unknown-key-id": ({"id": "AKIAUNKNOWNUNKNOWN00"}, "laion/", "InvalidAccessKeyId"),
    "rejected-session-token": ({"token": "FwoGZXIvYXdzEXPIRED" + "A" * 60}, "laion/",
                               "InvalidToken"),
    "missing-bucket": ({}, "s3://no-such-bucket/laion/", "NoSuchBucket"),
}


def failure_case(moto, name):
    change, source, code = FAILURES[name]
    creds = dict(moto["creds"], **change)
    source = source if source.startswith("s3://") else f"s3://{BUCKET}/{source}"
    return creds, source, code


@pytest.mark.parametrize("name", list(FAILURES))
@pytest.mark.parametrize("form", ["listing", "pattern"])
def test_refused_requests_fail_create_naming_the_bucket_and_the_code(moto, aws, name, form):
    creds, source, code = failure_case(moto, name)
    aws(creds=creds)
    bucket = source[5:].split("/")[0]
    if form == "pattern":
        source += "train-{00000..00001}.tar"
        where = rf"{bucket}/laion/train-0000[01]\.tar"   # scanned at once: the first to fail
    else:
        where = rf"s3://{bucket}/laion/"
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(source, raw=True)
    msg = str(e.value)
    assert re.search(where, msg) and re.search(rf"HTTP 4\d\d \({code}", msg), msg
    secret_free(msg, creds, moto["creds"])


def test_a_missing_key_of_a_pattern_fails_create_naming_it(moto, aws):
    aws()
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(f"s3://{BUCKET}/laion/train-{{00000..{SHARDS:05d}}}.tar", raw=True)
    msg = str(e.value)
    assert re.search(rf"{BUCKET}/laion/train-{SHARDS:05d}\.tar: HTTP 404 \(NoSuchKey", msg), msg
    secret_free(msg, moto["creds"])


@pytest.mark.parametrize("name", ["wrong-secret", "rejected-session-token", "environment",
                                  "instance-metadata"])
def test_the_cli_never_prints_the_secret(moto, aws, monkeypatch, name):
    """`ringfeed bench --verbose` (set-up choices and bad samples on stderr),
    refused or not, keys from the environment or from IMDS: neither the
    secret nor the session token is in anything it prints."""
    with Imds(moto["role"]) as imds:
        if name in FAILURES:
            creds, _, code = failure_case(moto, name)
            aws(creds=creds)
        else:
            creds, code = moto["role"], None
            aws(creds=creds if name == "environment" else {})
            if name == "instance-metadata":
                monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
                monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        r = subprocess.run([RINGFEED, "bench", "--source", f"s3://{BUCKET}/laion/", "--raw",
                            "--epochs", "1", "--verbose", "--json"], capture_output=True,
                           text=True, timeout=120)
    out = r.stdout + r.stderr
    secret_free(out, creds, moto["creds"])
    assert imds.token not in out
    if code:
        assert r.returncode != 0 and f"({code}" in r.stderr and "s3://data/laion/" in r.stderr, out
    else:
        assert r.returncode == 0, out
        assert json.loads(r.stdout.strip().splitlines()[-1])["samples"] == N
        assert (name == "instance-metadata") == bool(imds.seen)


# ---- a shard replaced on the server after create ---------------------------

@pytest.mark.parametrize("mode", ["raw-random", "raw-sequential", "random", "sequential"])
def test_a_shard_replaced_after_create_is_bad_samples_never_mixed_bytes(moto, aws, local, mode):
    """Shard 3 put again under its key, the same size and layout, other
    bytes: its reads are answered 412 (If-Match: the ETag indexed) and are
    bad samples naming it, "changed on the server"; nothing delivered is
    any byte of the new object."""
    aws()
    prefix = f"changed-{mode}"
    admin, root = moto["admin"], local["root"]
    for s in range(SHARDS):
        admin("put", ep=moto["url"], creds=moto["creds"], bucket=BUCKET,
              key=f"{prefix}/train-{s:05d}.tar", path=str(root / f"train-{s:05d}.tar"))
    cfg = dict(CONFIGS[mode], batch_size=4, prefetch=2, shuffle=0)
    raw = cfg.get("raw", False)
    bad = []
    got, got_images = {}, {}
    with ringfeed.Loader(f"s3://{BUCKET}/{prefix}/", with_ids=True, copy=True, epochs=1,
                         on_bad_sample=lambda *r: bad.append(r), **cfg) as loader:
        admin("put", ep=moto["url"], creds=moto["creds"], bucket=BUCKET,
              key=f"{prefix}/train-{SHARDS - 1:05d}.tar",
              path=str(root / f"changed-{SHARDS - 1:05d}.tar"))
        for b in loader:
            for i, sid in enumerate(b[2].tolist()):
                got.setdefault(sid, []).append(b[0][i] if raw else b["txt"][i])
                if not raw:
                    got_images.setdefault(sid, []).append(b[0][i])
        stats = loader.stats()
    shard = f"{BUCKET}/{prefix}/train-{SHARDS - 1:05d}.tar"
    changed_ids = range((SHARDS - 1) * PER_SHARD, N)
    # each of its samples (read after the put: prefetch holds 8 of shard 0's)
    assert {path for path, _, _ in bad} == {f"s3://{shard}:{k:06d}.jpg" for k in changed_ids}, \
        (bad, stats)
    for path, err, reason in bad:
        assert "changed on the server" in reason, (path, reason)
        secret_free(path + reason, moto["creds"])
    assert not set(got) & set(changed_ids) and stats["bad_samples"] == len(bad)
    for sid, values in got.items():
        for v in values:
            assert v == (jpeg(sid) if raw else caption(sid)), f"sample {sid}: other bytes"
    if not raw:     # and the pixels are the original JPEGs'
        ref = {}
        for b in load(local["dir"], **cfg)[0]:
            for i, sid in enumerate(b[2].tolist()):
                ref[sid] = b[0][i]
        for sid, images in got_images.items():
            assert all(torch.equal(im, ref[sid]) for im in images), f"sample {sid}: other pixels"

    # on_error='fail': the stream stops, naming the shard
    with ringfeed.Loader(f"s3://{BUCKET}/{prefix}/", epochs=1, copy=True, on_error="fail",
                         on_bad_sample=lambda *r: None, **cfg) as loader:
        # the loader indexed the new object: it reads fine; change it back
        admin("put", ep=moto["url"], creds=moto["creds"], bucket=BUCKET,
              key=f"{prefix}/train-{SHARDS - 1:05d}.tar",
              path=str(root / f"train-{SHARDS - 1:05d}.tar"))
        with pytest.raises(ringfeed.Error) as e:
            for _ in loader:
                pass
    msg = str(e.value)
    assert shard in msg and "changed on the server" in msg, msg
    secret_free(msg, moto["creds"])


# ---- no credentials: unsigned requests -------------------------------------

def test_a_public_bucket_reads_without_credentials(moto, aws, local, tmp_path):
    """No key in the environment, no shared files, IMDS off: the requests go
    unsigned (no Authorization header, no token) and read objects anyone
    may read (ACL public-read: the same batches as the local shards); a
    private object of the same bucket is refused, naming it.

    On a server without authentication: moto with it on (5.x) answers every
    unsigned request with HTTP 500 (its access control reads the
    Authorization header unconditionally), public bucket or not; without
    it, its S3 still judges an unsigned request by the object's ACL."""
    py = moto_python()
    server = Moto(py, tmp_path / "moto-open.log", auth=False)
    try:
        admin, anyone = moto["admin"], {"id": "anyone", "secret": "anyone"}
        admin("create_bucket", ep=server.url, creds=anyone, bucket="open")
        for s in range(SHARDS):
            admin("put", ep=server.url, creds=anyone, bucket="open", acl="public-read",
                  key=f"laion/train-{s:05d}.tar", path=str(local["root"] / f"train-{s:05d}.tar"))
        admin("put", ep=server.url, creds=anyone, bucket="open", key="private/train-00000.tar",
              path=str(local["root"] / "train-00000.tar"))
        with Relay(server.port) as relay:
            aws(endpoint=relay.url, creds={})
            batches, bad, _ = load("s3://open/laion/", **CONFIGS["raw-random"])
            assert bad == []
            assert_same(batches, local_run(local["dir"], "raw-random"), raw=True)
            assert relay.seen and not any("authorization" in h or "x-amz-security-token" in h
                                          for _, _, h in relay.seen)
            # (moto's 403 here has no body: no S3 error code to pass on)
            with pytest.raises(ringfeed.Error, match=r"open/private/train-00000\.tar: HTTP 403"):
                ringfeed.Loader("s3://open/private/train-{00000..00000}.tar", raw=True)
    finally:
        server.stop()
