"""test_loader.py - the ringfeed package against the C API and its promises:
same batches as rf_loader_next(), exact resume through state_dict(), batch
lifetimes, errors, ranks from the environment, no leaks, Ctrl-C."""

import ctypes
import errno
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
import ringfeed  # noqa: E402

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
C_DUMP = os.environ.get("RINGFEED_C_DUMP", "build/python/c_dump")
SMALL = dict(resize=72, crop=64, threads=2)


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "120", "--classes", "4",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


@pytest.fixture(scope="session")
def bad_data(tmp_path_factory, data):
    """The same tree plus one file that is not a JPEG."""
    root = tmp_path_factory.mktemp("bad") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "40", "--classes", "2",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    bad = root / "class_000" / "broken.jpg"
    bad.write_bytes(b"this is not a jpeg" * 10)
    return str(root), str(bad)


def as_bytes(t):
    """A CPU tensor's bytes (without numpy, which pip's torch does not require)."""
    t = t.contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def epoch_batches(loader):
    return [(x.clone(), y.clone()) for x, y in loader]


@pytest.mark.parametrize("rrc,flip,dtype,layout", [
    (0, 0.0, "uint8", "hwc"),
    (1, 0.5, "float16", "chw"),
    (1, 0.5, "float32", "hwc"),
])
def test_same_batches_as_the_c_api(data, tmp_path, rrc, flip, dtype, layout):
    out = tmp_path / "c.bin"
    codes = {"uint8": 0, "float32": 1, "float16": 2}
    subprocess.run([C_DUMP, data, str(out), "16", "72", "64", str(rrc), str(flip),
                    str(codes[dtype]), "1" if layout == "chw" else "0", "7", "2"], check=True)
    norm = {} if dtype == "uint8" else dict(mean=(0.45,) * 3, std=(0.25,) * 3)
    loader = ringfeed.Loader(data, batch_size=16, random_resized_crop=bool(rrc), flip=flip,
                             dtype=dtype, layout=layout, seed=7, **norm, **SMALL)
    blob = bytearray()
    for images, labels in loader:
        assert images.dtype == {"uint8": torch.uint8, "float16": torch.float16,
                                "float32": torch.float32}[dtype]
        if layout == "chw":
            assert tuple(images.shape[1:]) == (3, 64, 64)
        else:
            assert tuple(images.shape[1:]) == (64, 64, 3)
        assert labels.dtype == torch.int64
        blob += as_bytes(images)
        blob += as_bytes(labels.to(torch.int32))
    assert bytes(blob) == out.read_bytes()


def test_len_epoch_and_set_epoch(data):
    loader = ringfeed.Loader(data, batch_size=16, **SMALL)
    assert len(loader) == 8          # 120 samples, last batch partial
    assert loader.epoch == 0
    first = epoch_batches(loader)
    assert len(first) == 8 and loader.epoch == 1
    second = epoch_batches(loader)
    assert len(second) == 8 and loader.epoch == 2
    assert not all(torch.equal(a[1], b[1]) for a, b in zip(first, second))  # reshuffled
    loader.set_epoch(1)
    assert loader.epoch == 1
    again = epoch_batches(loader)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
               for a, b in zip(second, again))
    loader.set_epoch(2)              # already there: nothing moves
    assert loader.epoch == 2


def test_set_epoch_after_load_state_dict_keeps_the_position(data):
    """The DistributedSampler habit: load a mid-epoch state, then
    set_epoch(e) for that epoch in the loop; the rest of the epoch is
    delivered, the same ids an uninterrupted run gives, none again."""
    opts = dict(batch_size=8, seed=5, with_ids=True, **SMALL)   # 15 batches an epoch
    with ringfeed.Loader(data, **opts) as a:
        for _ in a:                          # epoch 0
            pass
        for _ in zip(range(4), a):           # 4 batches into epoch 1
            pass
        state = a.state_dict()
        rest = [i for _, _, ids in a for i in ids.tolist()]
    assert len(rest) == 120 - 4 * 8
    with ringfeed.Loader(data, **opts) as b:
        b.load_state_dict(state)
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # keeping the position warns of nothing
            b.set_epoch(1)
        got = [i for _, _, ids in b for i in ids.tolist()]
        assert got == rest, (len(got), len(rest))
        # a later set_epoch of the same epoch starts it again, as before
        b.set_epoch(1)
        assert len([i for _, _, ids in b for i in ids.tolist()]) == 120


def test_set_epoch_to_another_epoch_after_a_load_warns(data):
    opts = dict(batch_size=8, seed=5, with_ids=True, **SMALL)
    with ringfeed.Loader(data, **opts) as a:
        for _ in zip(range(3), a):
            pass
        state = a.state_dict()
        a.set_epoch(2)
        epoch2 = [i for _, _, ids in a for i in ids.tolist()]
    with ringfeed.Loader(data, **opts) as b:
        b.load_state_dict(state)
        with pytest.warns(RuntimeWarning, match=r"batch 3 of epoch 0; epoch 2 starts from its "
                          r"first batch and that position is dropped"):
            b.set_epoch(2)
        assert b.epoch == 2
        assert [i for _, _, ids in b for i in ids.tolist()] == epoch2


def test_epochs_keyword_ends_the_stream(data):
    loader = ringfeed.Loader(data, batch_size=32, epochs=1, **SMALL)
    assert len(epoch_batches(loader)) == 4
    assert epoch_batches(loader) == []


def test_exact_resume_through_a_checkpoint(data):
    opts = dict(batch_size=16, random_resized_crop=True, flip=0.5, seed=3, **SMALL)
    a = ringfeed.Loader(data, **opts)
    for _ in a:                      # epoch 0
        pass
    for _ in zip(range(3), a):       # 3 batches into epoch 1
        pass
    buf = io.BytesIO()
    torch.save({"model": {}, "loader": a.state_dict()}, buf)
    expected = [(x.clone(), y.clone()) for _, (x, y) in zip(range(7), a)]
    buf.seek(0)
    b = ringfeed.Loader(data, **dict(opts, threads=1))
    b.load_state_dict(torch.load(buf)["loader"])
    assert b.epoch == 1
    got = [(x.clone(), y.clone()) for _, (x, y) in zip(range(7), b)]
    assert len(got) == len(expected) == 5   # the rest of epoch 1
    for (x0, y0), (x1, y1) in zip(expected, got):
        assert torch.equal(x0, x1) and torch.equal(y0, y1)


def test_a_held_batch_stays_valid_while_ten_more_are_read(data):
    # a held batch keeps its slot while the loader goes on with the others
    loader = ringfeed.Loader(data, batch_size=8, hold="gc", prefetch=3, **SMALL)
    it = iter(loader)
    held, held_labels = next(it)
    snapshot = held.clone()
    for _ in range(10):
        x, _ = next(it)
        del x
    assert torch.equal(held, snapshot)
    del held                          # its slot goes back: the loader keeps going
    assert sum(1 for _ in it) == 15 - 11


def test_holding_every_slot_raises_instead_of_hanging(data):
    loader = ringfeed.Loader(data, batch_size=8, hold="gc", prefetch=3, **SMALL)
    kept = []
    with pytest.raises(ringfeed.Error) as e:
        for x, _ in loader:
            kept.append(x)
    assert len(kept) == 3 and e.value.args[0] == -errno.EDEADLK


def test_copy_true_tensors_outlive_the_slot(data):
    loader = ringfeed.Loader(data, batch_size=8, copy=True, **SMALL)
    batches = [x for x, _ in loader]      # all 15 kept: copies never stall the loader
    assert len(batches) == 15
    ref = [x.clone() for x, _ in ringfeed.Loader(data, batch_size=8, **SMALL)]
    assert all(torch.equal(a, b) for a, b in zip(batches, ref))


def test_debug_mode_catches_a_use_after_the_next_step(data):
    code = textwrap.dedent(f"""
        import ringfeed, torch
        loader = ringfeed.Loader({data!r}, batch_size=8, hold="next", debug=True, resize=72,
                                 crop=64)
        it = iter(loader)
        stale, _ = next(it)
        stale.float().sum()           # valid until the next step
        next(it)
        print("read", float(stale.float().sum()), flush=True)   # must fault
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGSEGV, r.stdout + r.stderr
    assert "read" not in r.stdout


def test_errors_raise_ringfeed_error(data, bad_data, tmp_path):
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(str(tmp_path / "missing"))
    assert e.value.args[0] < 0 and "missing" in e.value.args[1]
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(data, batch_size=0)
    assert e.value.args[0] == ringfeed._ringfeed.ECONFIG and "batch_size" in e.value.args[1]
    with pytest.raises(ringfeed.Error):
        ringfeed.Loader(data, dtype="float64")
    with pytest.raises(TypeError):
        ringfeed.Loader(data, batchsize=8)
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(tmp_path)         # an empty folder
    assert e.value.args[0] == ringfeed._ringfeed.EEMPTY
    # a corrupt file with on_error="fail" names the file
    root, bad = bad_data
    loader = ringfeed.Loader(root, batch_size=41, on_error="fail", **SMALL)
    with pytest.raises(ringfeed.Error) as e:
        for _ in loader:
            pass
    assert e.value.args[0] == ringfeed._ringfeed.EBADSAMPLE and "broken.jpg" in e.value.args[1]
    # states: garbage, and one from other output settings
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(data, **SMALL).load_state_dict({"ringfeed_state": b"x" * 152})
    assert e.value.args[0] == ringfeed._ringfeed.ESTATE
    state = ringfeed.Loader(data, batch_size=16, **SMALL).state_dict()
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(data, batch_size=16, **dict(SMALL, crop=32)).load_state_dict(state)
    assert e.value.args[0] == ringfeed._ringfeed.ESTATEMISMATCH and "crop" in e.value.args[1]


def test_bad_samples_reach_the_callback(bad_data):
    root, bad = bad_data
    seen = []
    loader = ringfeed.Loader(root, batch_size=8, on_bad_sample=lambda p, err, why:
                             seen.append((p, err, why)), **SMALL)
    batches = epoch_batches(loader)
    assert sum(len(y) for _, y in batches) == 41     # replaced: batches stay full
    assert len(seen) == 1 and seen[0][0].endswith("broken.jpg") and seen[0][1] < 0
    assert loader.stats()["bad_samples"] == 1


def test_ranks_come_from_the_torchrun_environment(data, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    r1 = ringfeed.Loader(data, batch_size=10, shuffle=False, **SMALL)
    assert r1._c.order()["rank"] == 1 and r1._c.order()["rank_source"] == "RANK/WORLD_SIZE"
    assert len(r1) == 6
    monkeypatch.setenv("RANK", "0")
    r0 = ringfeed.Loader(data, batch_size=10, shuffle=False, **SMALL)
    ids0 = {int(i) for x, y in r0 for i in y}
    monkeypatch.setenv("WORLD_SIZE", "zero")
    with pytest.raises(ringfeed.Error):
        ringfeed.Loader(data, **SMALL)


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


def test_no_leaks_over_1000_loaders(data):
    def cycle():
        with ringfeed.Loader(data, batch_size=8, threads=1, prefetch=2, io_depth=8,
                             read_pool_bytes=1 << 20, resize=72, crop=64) as loader:
            next(iter(loader))
    for _ in range(50):
        cycle()
    fds, rss = len(os.listdir("/proc/self/fd")), _rss_kib()
    for _ in range(1000):
        cycle()
    assert len(os.listdir("/proc/self/fd")) == fds
    assert _rss_kib() - rss < 8 * 1024, "RSS grew by more than 8 MiB over 1,000 loaders"


def test_ctrl_c_stops_the_loop_cleanly(data):
    code = textwrap.dedent(f"""
        import ringfeed
        loader = ringfeed.Loader({data!r}, batch_size=8, resize=72, crop=64, threads=1)
        try:
            while True:
                for images, labels in loader:
                    print("step", flush=True)
        except KeyboardInterrupt:
            loader.close()
            print("interrupted", flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "step"     # the loop is running
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0 and out.rstrip().endswith("interrupted")


def test_plain_training_step_on_cpu(data):
    loader = ringfeed.Loader(data, batch_size=16, dtype="float32", layout="chw",
                             mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), **SMALL)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=4), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 16 * 16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for images, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert torch.isfinite(loss)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_device_batches_match_host_batches(data):
    opts = dict(batch_size=16, dtype="float16", layout="chw", mean=(0.45,) * 3,
                std=(0.25,) * 3, **SMALL)
    host = epoch_batches(ringfeed.Loader(data, **opts))
    dev = ringfeed.Loader(data, device="cuda:0", **opts)
    for (hx, hy), (dx, dy) in zip(host, dev):
        assert dx.is_cuda and dy.is_cuda
        assert torch.equal(hx, dx.cpu()) and torch.equal(hy, dy.cpu())


def test_the_training_example_checkpoints_and_resumes(data, tmp_path):
    pytest.importorskip("torchvision", reason="torchvision is not installed for this python")
    ckpt = tmp_path / "ckpt.pt"
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_torch.py")
    cmd = [sys.executable, example, data, "--batch", "8", "--crop", "32", "--threads", "1",
           "--device", "cpu", "--checkpoint", str(ckpt), "--save-every", "3"]
    first = subprocess.run(cmd + ["--steps", "3"], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert ckpt.exists()
    state = ringfeed.state_parse(torch.load(ckpt)["loader"]["ringfeed_state"])
    assert state["next_batch"] == 3
    second = subprocess.run(cmd + ["--steps", "5"], capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "resumed at step 3, epoch 0" in second.stdout and "done: 5 steps" in second.stdout


def test_shards_give_the_tree_batches_and_read_sequentially(data, tmp_path):
    pack = tmp_path / "pack"
    subprocess.run([RINGFEED, "pack", data, "-o", str(pack), "--shard-size", "1M",
                    "--compress", "zstd"], check=True, stdout=subprocess.DEVNULL)
    opts = dict(batch_size=16, seed=5, **SMALL)
    tree = epoch_batches(ringfeed.Loader(data, epochs=1, **opts))
    shards = epoch_batches(ringfeed.Loader(str(pack), epochs=1, **opts))
    assert len(tree) == len(shards) == 8
    for (x0, y0), (x1, y1) in zip(tree, shards):
        assert torch.equal(x0, x1) and torch.equal(y0, y1)
    seq = ringfeed.Loader(str(pack), epochs=1, shard_access="sequential", shuffle_block=8,
                          **opts)
    labels = sorted(int(v) for _, y in epoch_batches(seq) for v in y)
    assert labels == sorted(int(v) for _, y in tree for v in y)
    with pytest.raises(ringfeed.Error):
        ringfeed.Loader(data, shard_access="sequential", **opts)


def write_token_shards(folder, counts, llama3=False):
    """llm.c's write_datafile layout: 256 int32 header words, then the tokens."""
    import struct
    folder.mkdir(parents=True, exist_ok=True)
    magic, version, fmt = (20240801, 7, "I") if llama3 else (20240520, 1, "H")
    shards = []
    for i, n in enumerate(counts):
        toks = [(i * 7919 + j * 31 + j // 5) % 50257 for j in range(n)]
        header = [0] * 256
        header[0], header[1], header[2] = magic, version, n
        path = folder / f"train_{i:06d}.bin"
        path.write_bytes(struct.pack("<256i", *header) + struct.pack(f"<{n}{fmt}", *toks))
        shards.append(toks)
    return shards


def test_token_rows_match_the_shards_and_resume(tmp_path):
    shards = write_token_shards(tmp_path / "tok", [3000, 70, 2000])
    T = 63
    windows = []   # window id -> (shard, first token)
    for s, toks in enumerate(shards):
        windows += [(s, k * T) for k in range((len(toks) - T - 1) // T + 1)] if len(toks) > T else []
    loader = ringfeed.Loader(str(tmp_path / "tok" / "train_*.bin"), seq_len=T, batch_size=8,
                             epochs=1, seed=3)
    seen = []
    for rows, ids in loader:
        assert rows.dtype == torch.int32 and rows.shape[1] == T + 1
        for row, w in zip(rows, ids):
            s, t = windows[int(w)]
            assert row.tolist() == shards[s][t:t + T + 1]
            seen.append(int(w))
    assert sorted(seen) == list(range(len(windows)))
    # resume in the middle of the epoch: the same rows after it
    a = ringfeed.Loader(str(tmp_path / "tok"), seq_len=T, batch_size=8, seed=3)
    it = iter(a)
    for _ in range(5):
        next(it)
    state = a.state_dict()
    rest = [(r.clone(), i.clone()) for r, i in it]
    b = ringfeed.Loader(str(tmp_path / "tok"), seq_len=T, batch_size=8, seed=3, threads=1)
    b.load_state_dict(state)
    again = [(r.clone(), i.clone()) for r, i in b]
    assert len(rest) == len(again) > 0
    for (r0, i0), (r1, i1) in zip(rest, again):
        assert torch.equal(r0, r1) and torch.equal(i0, i1)
    with pytest.raises(ringfeed.Error):
        ringfeed.Loader(str(tmp_path / "tok"), seq_len=T, token_dtype="float32")


def test_options_are_checked_not_truncated(data, tmp_path):
    # integers stay integers, unsigned fields refuse negatives, paths refuse
    # NUL; every error names the option
    with pytest.raises(ValueError, match="source.*null"):
        ringfeed.Loader(data + "\0ignored", **SMALL)
    with pytest.raises(ValueError, match="index_cache.*null"):
        ringfeed.Loader(data, index_cache=str(tmp_path / "i\0x"), **SMALL)
    with pytest.raises(TypeError, match="batch_size.*float"):
        ringfeed.Loader(data, batch_size=8.7, **SMALL)
    with pytest.raises(TypeError, match="epochs.*float"):
        ringfeed.Loader(data, epochs=1.5, **SMALL)
    with pytest.raises(TypeError, match="threads.*str"):
        ringfeed.Loader(data, batch_size=8, threads="2")
    with pytest.raises(TypeError, match="on_error.*float"):
        ringfeed.Loader(data, on_error=1.0, **SMALL)
    for key in ("seq_len", "stride", "shuffle_block", "seed", "max_pixels", "read_pool_bytes"):
        with pytest.raises(ValueError, match=f"{key}: -1 is negative"):
            ringfeed.Loader(data, **{key: -1}, **SMALL)
    with pytest.raises(ValueError, match="batch_size.*out of range"):
        ringfeed.Loader(data, batch_size=1 << 40, **SMALL)
    with pytest.raises(TypeError, match="source: expected str, bytes or os.PathLike"):
        ringfeed.Loader(123, **SMALL)
    with pytest.raises(TypeError, match="zstd_dict: expected str, bytes or os.PathLike"):
        ringfeed.Loader(data, zstd_dict=1.0, **SMALL)
    # paths as str, bytes or os.PathLike: the same loader; bools are integers
    import pathlib
    ref = epoch_batches(ringfeed.Loader(data, batch_size=40, epochs=1, **SMALL))
    for source in (os.fsencode(data), pathlib.Path(data)):
        got = epoch_batches(ringfeed.Loader(source, batch_size=40, epochs=1, shuffle=True,
                                            index_cache=pathlib.Path(tmp_path / "idx"),
                                            **SMALL))
        assert len(got) == len(ref) == 3
        assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
                   for a, b in zip(ref, got))


# ---- nothing lost in silence (issue 23): Ctrl-C, threads, warnings ----

def _test_hooks():
    """Whether this build has the test hooks (RINGFEED_TEST_READ_DELAY_US)."""
    hooks = getattr(ringfeed._ringfeed, "TEST_HOOKS", None)
    if hooks is None:   # an extension from before the constant: the build's config
        cfg = os.path.join(os.path.dirname(os.path.abspath(RINGFEED)), "rf_config.h")
        hooks = os.path.exists(cfg) and "#define RF_TEST_HOOKS 1" in open(cfg).read()
    if not hooks:
        pytest.skip("needs the read delay of test builds (meson -Dtest_hooks=true)")


WAIT_PRELUDE = textwrap.dedent('''
    import inspect, os, signal, sys, threading, time
    import ringfeed

    def slow_loader(source, delay_us, **opts):
        """A loader whose every read lands delay_us late: next() waits."""
        os.environ["RINGFEED_TEST_READ_DELAY_US"] = str(delay_us)
        try:
            return ringfeed.Loader(source, **opts)
        finally:
            del os.environ["RINGFEED_TEST_READ_DELAY_US"]

    def when_waiting(thread, action, timeout=30):
        """Runs action() on a helper thread once `thread` is inside the C
        next() (its Python frame stands at the call in Loader._next, three
        looks in a row); bounded."""
        lines, first = inspect.getsourcelines(ringfeed.Loader._next)
        line = first + next(i for i, text in enumerate(lines) if "self._c.next()" in text)
        code = ringfeed.Loader._next.__code__
        def run():
            deadline, seen = time.monotonic() + timeout, 0
            while time.monotonic() < deadline:
                f = sys._current_frames().get(thread.ident)
                seen = seen + 1 if f is not None and f.f_code is code and f.f_lineno == line else 0
                if seen == 3:
                    action()
                    return
                time.sleep(0.005)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t
''')


def run_script(body, timeout=120):
    r = subprocess.run([sys.executable, "-c", WAIT_PRELUDE + textwrap.dedent(body)],
                       capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, PYTHONFAULTHANDLER="1"))
    return r, r.stdout + r.stderr


SLOW = dict(batch_size=2, prefetch=2, io_depth=2, resize=72, crop=64, threads=1, seed=11)


def test_ctrl_c_while_next_waits_loses_no_batch(data):
    # the `except KeyboardInterrupt: save()` pattern: the batch next() was
    # waiting for is neither consumed nor skipped by state_dict()
    _test_hooks()
    ns = {}
    exec(WAIT_PRELUDE, ns)
    ref = [x.clone() for _, (x, _) in zip(range(2), ringfeed.Loader(data, **SLOW))]
    loader = ns["slow_loader"](data, 300000, **SLOW)
    main = threading.main_thread()
    helper = ns["when_waiting"](main, lambda: signal.pthread_kill(main.ident, signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        next(loader)
    helper.join(30)
    state = loader.state_dict()
    assert ringfeed.state_parse(state["ringfeed_state"])["next_batch"] == 0
    assert loader.epoch == 0 and loader.stats()["batches"] == 0
    x, _ = next(loader)                      # the batch it waited for
    assert torch.equal(x, ref[0])
    loader.close()
    resumed = ringfeed.Loader(data, **SLOW)
    resumed.load_state_dict(state)
    assert torch.equal(next(resumed)[0], ref[0])


def test_a_batch_taken_as_ctrl_c_comes_is_held_back(data):
    # the signal lands after the C library handed the batch out, while the
    # package builds its tensors: the batch is kept for the next call
    loader = ringfeed.Loader(data, batch_size=16, **SMALL)
    ref = [x.clone() for _, (x, _) in zip(range(2), ringfeed.Loader(data, batch_size=16,
                                                                    **SMALL))]
    tensors = loader._tensors
    calls = []

    def interrupted(batch):
        calls.append(batch)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return tensors(batch)
    loader._tensors = interrupted
    with pytest.raises(KeyboardInterrupt):
        next(loader)
    assert ringfeed.state_parse(loader.state_dict()["ringfeed_state"])["next_batch"] == 0
    assert loader.epoch == 0
    assert torch.equal(next(loader)[0], ref[0])
    assert torch.equal(next(loader)[0], ref[1])
    assert ringfeed.state_parse(loader.state_dict()["ringfeed_state"])["next_batch"] == 2


def test_two_threads_share_one_loader(data):
    # both threads take batches until the stream ends: every batch once, no hang
    loader = ringfeed.Loader(data, batch_size=16, epochs=3, copy=True, **SMALL)
    got, errors = [[], []], []

    def consume(i):
        try:
            for _, labels in iter(lambda: next(loader, None), None):
                got[i].append(labels)
        except BaseException as e:   # noqa: B902 - reported by the test
            errors.append(e)
    threads = [threading.Thread(target=consume, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread hangs in next()"
    assert errors == []
    assert len(got[0]) + len(got[1]) == 3 * len(loader)
    assert sum(len(y) for g in got for y in g) == 3 * 120


def test_close_from_another_thread_wakes_next(data):
    _test_hooks()
    r, out = run_script(f"""
        loader = slow_loader({data!r}, 2000000, batch_size=2, prefetch=2, io_depth=2,
                             resize=72, crop=64, threads=1)
        helper = when_waiting(threading.main_thread(), loader.close)
        try:
            next(loader)
            print("no error")
        except ringfeed.Error as e:
            print("raised:", e.args[1])
        helper.join(30)
        try:
            next(loader)
        except ringfeed.Error as e:
            print("then:", e.args[1])
        print("done", flush=True)
    """, timeout=60)
    assert r.returncode == 0, out
    assert "raised: the loader was closed while next() waited" in out
    assert "then: the loader is closed" in out and out.rstrip().endswith("done")


def test_restart_from_another_thread_while_next_waits(data):
    # load_state_dict() and set_epoch() from another thread take their turn:
    # the waiting next() gets its batch, then the loader restarts
    _test_hooks()
    r, out = run_script(f"""
        import torch
        opts = dict(batch_size=2, prefetch=2, io_depth=2, resize=72, crop=64, threads=1,
                    seed=4)
        ref = ringfeed.Loader({data!r}, **opts)
        first = next(ref)[0].clone()
        ref.set_epoch(1)
        epoch1 = next(ref)[0].clone()
        for restart in ("set_epoch", "load_state_dict"):
            loader = slow_loader({data!r}, 300000, **opts)
            state = ref.state_dict()          # epoch 1, batch 1
            action = (lambda: loader.set_epoch(1)) if restart == "set_epoch" else (
                lambda: loader.load_state_dict(state))
            helper = when_waiting(threading.main_thread(), action)
            x, _ = next(loader)
            helper.join(30)
            assert not helper.is_alive(), restart + " hangs"
            assert torch.equal(x, first), restart
            assert loader.epoch == 1, restart
            y, _ = next(loader)
            if restart == "set_epoch":
                assert torch.equal(y, epoch1)
            loader.close()
            print(restart, "ok", flush=True)
    """, timeout=120)
    assert r.returncode == 0, out
    assert "set_epoch ok" in out and "load_state_dict ok" in out


def test_bad_samples_warn_once_without_a_callback(bad_data):
    root, bad = bad_data
    loader = ringfeed.Loader(root, batch_size=8, epochs=2, **SMALL)
    with pytest.warns(ringfeed.SampleLossWarning, match="could not be read") as w:
        batches = epoch_batches(loader) + epoch_batches(loader)
    assert len([x for x in w if issubclass(x.category, ringfeed.SampleLossWarning)]) == 1
    assert len(batches) == 12 and loader.stats()["bad_samples"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a callback means no warning
        epoch_batches(ringfeed.Loader(root, batch_size=8, epochs=1,
                                      on_bad_sample=lambda *a: None, **SMALL))


def two_bad_tree(tmp_path, names):
    root = tmp_path / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "40", "--classes", "2",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    for name in names:
        (root / name).write_bytes(b"this is not a jpeg" * 10)
    return str(root)


def wait_found(loader, bad):
    """Until the loader's read-ahead has found `bad` bad samples (bounded):
    batches read ahead then hold bad samples no delivered batch holds."""
    for _ in range(400):
        if loader._c.stats()["bad_samples"] >= bad:
            return
        time.sleep(0.025)


def test_loss_warning_count_is_what_stats_says(tmp_path):
    """Two bad files in batches 0 and 2: the warning comes with batch 0 and
    its count is stats()['replaced'] at that step, not the bad samples found
    in batches read ahead."""
    root = two_bad_tree(tmp_path, ["class_000/broken.jpg", "class_001/broken.jpg"])
    with ringfeed.Loader(root, batch_size=8, epochs=1, shuffle=False, **SMALL) as loader:
        wait_found(loader, 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for step in range(6):
                next(loader)
                losses = [x for x in w if issubclass(x.category, ringfeed.SampleLossWarning)]
                if losses:
                    break
            assert len(losses) == 1, [str(x.message) for x in w]
            n = int(str(losses[0].message).split(" ", 1)[0])
            assert n == loader.stats()["replaced"] == 1, (str(losses[0].message), step)


def test_loss_warning_under_on_error_fail_does_not_advise_it(tmp_path):
    """A bad file in the last batch with on_error='fail': the batches before
    it come without advice to set on_error='fail', and its batch raises."""
    root = two_bad_tree(tmp_path, ["class_001/zz_broken.jpg"])
    with ringfeed.Loader(root, batch_size=8, epochs=1, shuffle=False, on_error="fail",
                         **SMALL) as loader:
        wait_found(loader, 1)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with pytest.raises(ringfeed.Error) as e:
                for _ in range(7):
                    next(loader)
        assert e.value.args[0] == ringfeed._ringfeed.EBADSAMPLE and "zz_broken" in e.value.args[1]
        said = [str(x.message) for x in w if issubclass(x.category, ringfeed.SampleLossWarning)]
        assert not any("on_error='fail' to stop" in m for m in said), said


def test_a_forked_child_gets_the_forked_error(data):
    """order(), stats() and the rest raise Error(EFORKED) in a fork()ed
    child instead of reading a loader that stayed in the parent."""
    loader = ringfeed.Loader(data, batch_size=8, **SMALL)
    next(loader)
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: report through the pipe, never return into pytest
        os.close(r)
        said = []
        for call in (loader._c.order, loader._c.stats, loader._c.next, loader._c.state_save,
                     loader._c.take_bad_samples, loader.stats, lambda: loader.epoch):
            try:
                call()
                said.append("no error")
            except ringfeed.Error as e:
                said.append("forked" if e.args[0] == ringfeed._ringfeed.EFORKED and
                            "fork" in e.args[1] else repr(e))
            except BaseException as e:  # noqa: B036 (reported to the parent)
                said.append(repr(e))
        os.write(wfd, ",".join(said).encode())
        os._exit(0)
    os.close(wfd)
    with os.fdopen(r, "rb") as f:
        said = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert said.split(",") == ["forked"] * 7, said
    next(loader)   # the parent's loader goes on
    loader.close()


def test_damaged_shard_warns_of_its_lost_span(data, tmp_path):
    """A tar shard with a corrupt header: the rest of it is delivered, and
    without a callback the lost span is a warning of its own kind."""
    import tarfile
    jpgs = sorted(os.path.join(d, f) for d, _, fs in os.walk(data) for f in fs)[:12]
    shard = tmp_path / "shards" / "s-000000.tar"
    shard.parent.mkdir()
    with tarfile.open(shard, "w", format=tarfile.GNU_FORMAT) as t:
        for i, p in enumerate(jpgs):
            t.add(p, arcname="%04d.jpg" % i)
            cls = tarfile.TarInfo("%04d.cls" % i)
            cls.size = 1
            t.addfile(cls, io.BytesIO(b"1"))
    with tarfile.open(shard) as t:
        at = t.getmembers()[6].offset    # sample 3's JPEG header
    raw = bytearray(shard.read_bytes())
    raw[at + 3] ^= 0x20
    shard.write_bytes(bytes(raw))
    loader = ringfeed.Loader(str(shard.parent), batch_size=4, epochs=1, shuffle=False, **SMALL)
    with pytest.warns(ringfeed.SampleLossWarning) as w:
        batches = epoch_batches(loader)
    kinds = [str(x.message) for x in w if issubclass(x.category, ringfeed.SampleLossWarning)]
    assert any("damaged or cut span" in k for k in kinds), kinds
    stats = loader.stats()
    # 12 samples: sample 3 lost its image (a bad one), the span is an entry
    # of its own; everything after the damage is delivered
    assert stats["lost_spans"] == 1 and stats["lost_bytes"] > 0
    assert stats["samples_total"] == 13 and stats["bad_samples"] == 2
    assert sum(len(y) for _, y in batches) == 13 and stats["replaced"] == 2
