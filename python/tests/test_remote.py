"""test_remote.py - tar shards over HTTP from Python, through a server that
answers some requests with a fault (tests/fault_server.py, started here on
127.0.0.1): with 10% of requests answered 503 SlowDown, 3% 429, 3% reset
and 3% cut short, an epoch still delivers every sample exactly once, with
its caption, and the same pixels as the local copy of the shards; no
sample is reported bad (each fault is tried again after a backoff). A
shard whose reads stall past remote_timeout_ms gives bad samples named by
their URL, "timed out", and the epoch goes on with the other shards.
A loader closed with thousands of requests in flight (every one stalled)
returns at once. `ringfeed bench --diagnose` of a remote source in raw mode (nothing to
decode: the reads are the bound) says network-bound, with its requests."""

import io
import os
import subprocess
import sys
import tarfile

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
pytest.importorskip("PIL", reason="PIL is not installed for this python (Debian: python3-pil)")
import ringfeed  # noqa: E402
from PIL import Image  # noqa: E402

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                      "fault_server.py")
SHARDS, PER_SHARD = 4, 15


def jpeg(k):
    im = Image.new("RGB", (48 + k % 9, 40))
    im.putdata([((x * 5 + k) % 256, (y * 7) % 256, (x + y + k) % 256)
                for y in range(40) for x in range(48 + k % 9)])
    out = io.BytesIO()
    im.save(out, "JPEG", quality=90)
    return out.getvalue()


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote")
    for s in range(SHARDS):
        with tarfile.open(root / f"shard-{s:02d}.tar", "w", format=tarfile.USTAR_FORMAT) as t:
            for j in range(PER_SHARD):
                k = s * PER_SHARD + j
                for ext, body in (("cls", str(k % 3).encode()), ("jpg", jpeg(k)),
                                  ("txt", f"caption {k} 東京".encode())):
                    info = tarfile.TarInfo(f"{k:06d}.{ext}")
                    info.size = len(body)
                    t.addfile(info, io.BytesIO(body))
    return root


@pytest.fixture
def server(shards):
    proc = subprocess.Popen([sys.executable, SERVER, str(shards), "--p503", "0.10", "--p429",
                             "0.03", "--preset", "0.03", "--pshort", "0.03", "--seed", "7",
                             "--lifetime", "300"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("port "), line + proc.stderr.read()
    yield f"http://127.0.0.1:{int(line.split()[1])}"
    proc.terminate()
    proc.wait(timeout=30)


def epoch(source, **kw):
    bad = []
    with ringfeed.Loader(source, fields=("txt",), epochs=1, batch_size=8, seed=5, with_ids=True,
                         copy=True, on_bad_sample=lambda *r: bad.append(r), **kw) as loader:
        got = {}
        for b in loader:
            images, labels, ids = b
            for i, sid in enumerate(ids.tolist()):
                assert sid not in got, f"sample {sid} delivered twice"
                got[sid] = (images[i], int(labels[i]), b["txt"][i])
        stats = loader.stats()
    return got, bad, stats


@pytest.mark.parametrize("access", ["random", "sequential"])
def test_faults_lose_nothing(shards, server, access):
    url = f"{server}/shard-{{00..{SHARDS - 1:02d}}}.tar"
    try:
        remote, bad, stats = epoch(url, shard_access=access)
    except ringfeed.Error as e:
        if "without libcurl" in str(e):
            pytest.skip("this ringfeed was built without libcurl (meson feature 'remote')")
        raise
    assert bad == []
    assert sorted(remote) == list(range(SHARDS * PER_SHARD))
    # the faults were met, and tried again (the loader's reads; the scan has its own)
    assert stats["http_retries"] > 0 and stats["http_errors"] == 0
    assert stats["http_requests"] > stats["http_retries"]
    local, _, local_stats = epoch(str(shards), shard_access=access)
    assert local_stats["http_requests"] == 0
    for sid, (img, label, cap) in remote.items():
        assert cap == f"caption {sid} 東京"
        assert label == sid % 3
        assert torch.equal(img, local[sid][0])


def test_stalled_reads_are_bad_samples_named_by_url(shards):
    proc = subprocess.Popen([sys.executable, SERVER, str(shards), "--p503", "0", "--preset", "0",
                             "--pshort", "0", "--stall-path", "shard-01", "--lifetime", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("port "), line + proc.stderr.read()
        url = f"http://127.0.0.1:{int(line.split()[1])}/shard-{{00..{SHARDS - 1:02d}}}.tar"
        bad = []
        try:
            with ringfeed.Loader(url, epochs=1, batch_size=8, seed=5, with_ids=True,
                                 remote_timeout_ms=1500,
                                 on_bad_sample=lambda *r: bad.append(r)) as loader:
                got = {sid for _, _, ids in loader for sid in ids.tolist()}
                stats = loader.stats()
        except ringfeed.Error as e:
            if "without libcurl" in str(e):
                pytest.skip("this ringfeed was built without libcurl (meson feature 'remote')")
            raise
        # every sample of shard 01 stalled: each reported once, by its URL,
        # and replaced (by others: delivered twice); every other one came
        assert [r for r in bad if "/shard-01.tar" not in str(r[0])] == [] and len(bad) == PER_SHARD
        assert all("timed out" in r[2] for r in bad), bad
        assert got == {s for s in range(SHARDS * PER_SHARD) if s // PER_SHARD != 1}
        assert stats["http_errors"] >= PER_SHARD and stats["http_retry_stalled"] == 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_diagnose_says_network_bound(shards, server):
    import json
    cli = os.environ.get("RINGFEED")
    if not cli:
        pytest.skip("RINGFEED (the CLI's path) is not set")
    url = f"{server}/shard-{{00..{SHARDS - 1:02d}}}.tar"
    out = subprocess.run([cli, "bench", "--source", url, "--raw", "--diagnose", "--json",
                          "--batch", "8", "--batches", "12"], capture_output=True,
                         text=True, timeout=300)
    if "without libcurl" in out.stderr:
        pytest.skip("this ringfeed was built without libcurl (meson feature 'remote')")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout.strip().splitlines()[-1])
    assert d["verdict"] == "network-bound", d
    assert "requests/s" in d["why"] and "tried again" in d["why"], d["why"]


def test_close_with_thousands_of_requests_in_flight_returns(tmp_path):
    import threading
    cli = os.environ.get("RINGFEED")
    if not cli:
        pytest.skip("RINGFEED (the CLI's path) is not set")
    n = 3000
    with tarfile.open(tmp_path / "many.tar", "w", format=tarfile.USTAR_FORMAT) as t:
        for k in range(n):
            info = tarfile.TarInfo(f"{k:06d}.bin")
            body = bytes([k % 251]) * 64
            info.size = len(body)
            t.addfile(info, io.BytesIO(body))
    # the index object beside the shard: the source takes it, and scans
    # nothing (the scan's reads past byte 0 would stall too)
    subprocess.run([cli, "index", str(tmp_path / "many.tar"), "--raw", "-o",
                    str(tmp_path / "ringfeed.index")], check=True, capture_output=True)
    proc = subprocess.Popen([sys.executable, SERVER, str(tmp_path), "--p503", "0", "--preset", "0",
                             "--pshort", "0", "--stall-path", "many", "--lifetime", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("port "), line + proc.stderr.read()
        url = f"http://127.0.0.1:{int(line.split()[1])}/many.tar"
        try:
            loader = ringfeed.Loader(url, raw=True, batch_size=250, prefetch=12, io_depth=4096,
                                     epochs=1)
        except ringfeed.Error as e:
            if "without libcurl" in str(e):
                pytest.skip("this ringfeed was built without libcurl (meson feature 'remote')")
            raise
        assert loader.stats()["http_requests"] < n  # no scan: the index object's
        # every sample's read stalls: thousands in flight, as the server counts them
        stalled = 0
        while stalled < 2000:
            line = proc.stdout.readline()
            assert line.startswith("stalled "), line + proc.stderr.read()
            stalled = int(line.split()[1])
        done = threading.Event()
        closer = threading.Thread(target=lambda: (loader.close(), done.set()), daemon=True)
        closer.start()
        # promptly: long before a stalled transfer would give up (15 s
        # without a byte) or the server's lifetime ends
        assert done.wait(10), "close() did not return with 2000+ requests in flight"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_node_local_cache_serves_the_second_run(server, shards, tmp_path):
    """cache_dir: the first run through the faulty server fills the cache,
    the second reads every sample from it (no request to the server) and
    gives the same samples, pixels and captions."""
    source = server + f"/shard-{{00..{SHARDS - 1:02d}}}.tar"
    cache = tmp_path / "cache"
    first, bad1, st1 = epoch(source, cache_dir=cache)
    second, bad2, st2 = epoch(source, cache_dir=str(cache), cache_bytes=64 << 20)
    assert not bad1 and not bad2
    assert st1["cache_misses"] == SHARDS * PER_SHARD and st1["cache_hits"] == 0
    assert st2["cache_hits"] == SHARDS * PER_SHARD and st2["cache_misses"] == 0
    assert st2["http_requests"] == 0, "the second run asked the server"
    assert sorted(first) == sorted(second)
    for sid, (image, label, txt) in first.items():
        assert torch.equal(image, second[sid][0]) and label == second[sid][1]
        assert txt == second[sid][2]
    out = subprocess.run([os.environ.get("RINGFEED", "ringfeed"), "cache", str(cache), "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f'"ranges":{SHARDS * PER_SHARD}' in out.stdout.replace(" ", ""), out.stdout
