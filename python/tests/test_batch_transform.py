"""test_batch_transform.py - Loader(batch_transform=fn): fn gets each
batch's images tensor (token rows for token shards) before the batch is
returned, and what it returns is what the loop sees (a flip, noise, a new
dtype); labels and ids stay as they were; an error in fn propagates and the
batch is given back (the next call returns it again); with copy=True fn
works on the copy, so the slot stays as the loader wrote it; a new tensor fn
returns outlives the step under hold="next"; raw batches and non-callables
are refused at construction. On a CUDA machine, fn runs on the device."""

import os
import struct
import subprocess

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
import ringfeed  # noqa: E402

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
SMALL = dict(resize=40, crop=32, threads=2, batch_size=4, seed=9, shuffle=0, with_ids=True)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("transform") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "24", "--classes", "3",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def batches(loader):
    return [tuple(t.clone() for t in b) for b in loader]


def test_a_flip_reaches_the_loop(data):
    plain = batches(ringfeed.Loader(data, **SMALL))
    seen = []

    def flip(images):
        seen.append((images.shape, images.dtype))
        return torch.flip(images, dims=[2])   # HWC: the width

    flipped = batches(ringfeed.Loader(data, batch_transform=flip, **SMALL))
    assert len(flipped) == len(plain) == 6
    assert seen == [(torch.Size([4, 32, 32, 3]), torch.uint8)] * 6, "once per batch, the images"
    for (a, la, ia), (b, lb, ib) in zip(plain, flipped):
        assert torch.equal(torch.flip(a, dims=[2]), b)
        assert not torch.equal(a, b)
        assert torch.equal(la, lb) and torch.equal(ia, ib), "labels and ids untouched"


def test_noise_and_a_new_dtype(data):
    opts = dict(SMALL, dtype="float32", layout="chw", mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    plain = batches(ringfeed.Loader(data, **opts))

    def noise(images):
        g = torch.Generator().manual_seed(4)   # the same noise each batch: checkable
        return (images + 0.1 * torch.randn(images.shape, generator=g)).half()

    noisy = batches(ringfeed.Loader(data, batch_transform=noise, **opts))
    for (a, _, _), (b, _, _) in zip(plain, noisy):
        assert b.dtype == torch.float16 and b.shape == a.shape == (4, 3, 32, 32)
        g = torch.Generator().manual_seed(4)
        want = (a + 0.1 * torch.randn(a.shape, generator=g)).half()
        assert torch.equal(b, want)


def test_an_error_propagates_and_the_batch_comes_again(data):
    calls = []

    def fails_once(images):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("augmentation broke")
        return images

    loader = ringfeed.Loader(data, batch_transform=fails_once, **SMALL)
    _, _, first_ids = next(loader)
    with pytest.raises(ValueError, match="augmentation broke"):
        next(loader)
    _, _, again_ids = next(loader)   # the batch that failed, given back
    plain = ringfeed.Loader(data, **SMALL)
    next(plain)
    _, _, want_ids = next(plain)
    assert torch.equal(again_ids, want_ids)
    assert not torch.equal(again_ids, first_ids)
    loader.close()
    plain.close()


def test_with_copy_it_works_on_the_copy(data):
    """An in-place transform that then raises leaves the slot as it was: the
    batch handed out again is the loader's; without copy it is not."""
    want, _, _ = next(ringfeed.Loader(data, **SMALL))
    assert want.any()
    for copy, intact in ((True, True), (False, False)):
        mode = {"fail": True}

        def zero_then_fail(images):
            if mode["fail"]:
                images.zero_()
                raise RuntimeError("after the in-place step")
            return images

        loader = ringfeed.Loader(data, batch_transform=zero_then_fail, copy=copy, **SMALL)
        with pytest.raises(RuntimeError):
            next(loader)
        mode["fail"] = False
        images, _, _ = next(loader)   # the same batch, given back
        assert torch.equal(images, want) == intact, f"copy={copy}"
        loader.close()
    # and the result is the transform's
    loader = ringfeed.Loader(data, batch_transform=lambda x: x.zero_(), copy=True, **SMALL)
    images, _, _ = next(loader)
    assert not images.any()
    loader.close()


def test_a_new_tensor_outlives_the_step_under_hold_next(data):
    loader = ringfeed.Loader(data, hold="next", batch_transform=lambda x: x.flip(1), **SMALL)
    it = iter(loader)
    kept, _, _ = next(it)
    snap = kept.clone()
    for _ in it:   # every slot is reused meanwhile
        pass
    assert torch.equal(kept, snap)
    loader.close()


def test_token_rows_are_transformed(tmp_path):
    n, T = 2000, 31
    header = [0] * 256
    header[0], header[1], header[2] = 20240520, 1, n
    (tmp_path / "tok.bin").write_bytes(struct.pack("<256i", *header) +
                                       struct.pack(f"<{n}H", *[j % 1000 for j in range(n)]))
    opts = dict(seq_len=T, batch_size=8, shuffle=0)
    plain = [rows.clone() for rows, _ in ringfeed.Loader(str(tmp_path / "tok.bin"), **opts)]
    shifted = [rows.clone() for rows, _ in ringfeed.Loader(
        str(tmp_path / "tok.bin"), batch_transform=lambda rows: rows + 1, **opts)]
    assert len(plain) == len(shifted) > 0
    assert all(torch.equal(a + 1, b) for a, b in zip(plain, shifted))


def test_refused_at_construction(data):
    with pytest.raises(TypeError, match="batch_transform"):
        ringfeed.Loader(data, batch_transform="flip")
    with pytest.raises(ringfeed.Error, match="raw"):
        ringfeed.Loader(data, raw=1, batch_transform=lambda x: x)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device for this torch")
def test_it_runs_on_the_device(data):
    where = []

    def on_device(images):
        where.append(images.device.type)
        return images.float().flip(2)

    dev = ringfeed.Loader(data, device="cuda", batch_transform=on_device, **SMALL)
    host = ringfeed.Loader(data, **SMALL)
    for (a, la, _), (b, lb, _) in zip(host, dev):
        assert b.device.type == "cuda"
        assert torch.equal(a.float().flip(2), b.cpu())
    assert where and set(where) == {"cuda"}
    dev.close()
    host.close()
