"""test_torch_args.py - torch's own types where the package takes names
(issue 28, item 3): torch.device and torch dtypes, mean/std as tensors,
sample ids of image batches, and errors that name their keyword."""

import os
import subprocess

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
import ringfeed  # noqa: E402

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
SMALL = dict(resize=40, crop=32, threads=1, batch_size=8)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "24", "--classes", "3",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def first(loader):
    with loader:
        return [t.clone() for t in next(iter(loader))]


def test_torch_device_and_dtype_are_the_names(data):
    by_name = first(ringfeed.Loader(data, device="cpu", dtype="float16", layout="chw",
                                    mean=(0.5, 0.4, 0.3), std=(0.2, 0.2, 0.2), **SMALL))
    by_type = first(ringfeed.Loader(data, device=torch.device("cpu"), dtype=torch.float16,
                                    layout="chw", mean=torch.tensor([0.5, 0.4, 0.3]),
                                    std=[0.2, 0.2, 0.2], **SMALL))
    assert by_type[0].dtype == torch.float16
    assert tuple(by_type[0].shape) == (8, 3, 32, 32)
    for a, b in zip(by_name, by_type):
        assert torch.equal(a, b)


def test_mean_and_std_need_three_numbers(data):
    with pytest.raises(ringfeed.Error, match="mean: 2 numbers, not 3"):
        ringfeed.Loader(data, dtype="float32", mean=(0.5, 0.5), **SMALL)
    with pytest.raises(TypeError, match="std: expected 3 numbers"):
        ringfeed.Loader(data, dtype="float32", std=0.5, **SMALL)


def test_mean_with_uint8_output_is_an_error(data):
    with pytest.raises(ringfeed.Error, match="with dtype = uint8 they would be ignored"):
        ringfeed.Loader(data, mean=(0.485, 0.456, 0.406), **SMALL)


def test_image_ids_on_request(data):
    with ringfeed.Loader(data, with_ids=True, seed=3, **SMALL) as loader:
        seen = []
        for images, labels, ids in loader:
            assert ids.dtype == torch.int64 and ids.shape == labels.shape
            seen += ids.tolist()
            if len(seen) >= 24:
                break
    assert sorted(seen[:24]) == list(range(24)), "one epoch: every sample once"
    with ringfeed.Loader(data, seed=3, **SMALL) as loader:
        assert len(next(iter(loader))) == 2, "(images, labels) unless asked"


def test_errors_name_their_keyword(data):
    cases = [(dict(device=1.5), TypeError, "device: expected"),
             (dict(device="gpu"), ringfeed.Error, "device: 'gpu'"),
             (dict(device=-1), ringfeed.Error, "device: -1"),
             (dict(on_bad_sample="print"), TypeError, "on_bad_sample: expected a callable"),
             (dict(hold=1), ringfeed.Error, "hold: "),
             (dict(batch_size="64"), TypeError, "batch_size"),
             (dict(batch_size=64.7), TypeError, "batch_size"),
             (dict(dtype=torch.int64), ringfeed.Error, "dtype: 'int64'")]
    for kw, kind, text in cases:
        opts = dict(SMALL, **kw)
        with pytest.raises(kind, match=text):
            ringfeed.Loader(data, **opts)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_says_so(data):
    for device in ("cuda:0", torch.device("cuda", 0), "cuda"):
        with pytest.raises(ringfeed.Error, match="no CUDA GPU"):
            ringfeed.Loader(data, device=device, **SMALL)


def test_int64_token_rows_feed_cross_entropy(tmp_path):
    shards = tmp_path / "tokens"
    subprocess.run([RINGFEED, "gen", "--tokens", "--out", str(shards), "--shards", "2",
                    "--shard-tokens", "5000", "--vocab", "100"], check=True,
                   stdout=subprocess.DEVNULL)
    opts = dict(seq_len=16, batch_size=4, seed=5)
    with ringfeed.Loader(str(shards), token_dtype="int32", **opts) as loader:
        rows32, ids32 = [t.clone() for t in next(iter(loader))]
    with ringfeed.Loader(str(shards), token_dtype=torch.int64, **opts) as loader:
        rows64, ids64 = [t.clone() for t in next(iter(loader))]
    assert rows64.dtype == torch.int64 and tuple(rows64.shape) == (4, 17)
    assert torch.equal(ids32, ids64) and torch.equal(rows32.long(), rows64)
    logits = torch.zeros(4, 16, 100)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 100), rows64[:, 1:].reshape(-1))
    assert torch.isfinite(loss)


def test_a_bad_sample_is_named_alike_in_the_callback_and_the_error(tmp_path):
    root = tmp_path / "tree"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "6", "--classes", "2",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    bad = root / "class_001" / "broken.jpg"
    bad.write_bytes(b"not a jpeg" * 20)
    seen = []
    with ringfeed.Loader(str(root), epochs=1, on_bad_sample=lambda p, e, r: seen.append(p),
                         **SMALL) as loader:
        for _ in loader:
            pass
    assert seen == [str(bad)], seen
    with pytest.raises(ringfeed.Error) as e:
        with ringfeed.Loader(str(root), epochs=1, on_error="fail", **SMALL) as loader:
            for _ in loader:
                pass
    assert str(bad) + ": " in str(e.value), str(e.value)
