"""test_hold.py - a tensor the user still holds never changes under them
(issue 28, item 1): the default lifetime (hold="gc") against the patterns
that broke the lending one: a prefetcher that keeps one batch while taking
the next, tensors kept after close() and after `del loader`."""

import gc
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
import ringfeed  # noqa: E402

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
SMALL = dict(resize=40, crop=32, threads=2, batch_size=4, seed=9)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "128", "--classes", "4",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def test_a_batch_kept_ahead_never_changes(data):
    """timm's PrefetchLoader: hold batch k while batch k + 1 is taken."""
    with ringfeed.Loader(data, **SMALL) as loader:
        it = iter(loader)
        ahead = next(it)
        snap = [t.clone() for t in ahead]
        changed = 0
        for batch in it:
            changed += sum(not torch.equal(a, b) for a, b in zip(ahead, snap))
            ahead, snap = batch, [t.clone() for t in batch]
        assert changed == 0, f"{changed} tensors changed while held"


def test_tensors_kept_after_close_and_del_stay_intact(data):
    loader = ringfeed.Loader(data, **SMALL)
    it = iter(loader)
    kept = [next(it)[0] for _ in range(3)]
    snaps = [t.clone() for t in kept]
    loader.close()
    assert all(torch.equal(a, b) for a, b in zip(kept, snaps))
    loader = ringfeed.Loader(data, **SMALL)
    images, _ = next(iter(loader))
    snap = images.clone()
    del loader
    gc.collect()
    other = ringfeed.Loader(data, **dict(SMALL, seed=10))   # reuses freed memory, if any
    for _ in zip(range(8), other):
        pass
    other.close()
    assert torch.equal(images, snap)


def test_the_default_keeps_going_while_two_batches_are_held(data):
    with ringfeed.Loader(data, **SMALL) as loader:
        it = iter(loader)
        held = [next(it), next(it)]
        n = sum(1 for _ in it)
        assert n == 128 // 4 - 2
        del held


def test_lending_is_still_there_on_request(data):
    """hold="next": the slot goes back at the next step (debug=True faults
    on a later use: test_loader.py)."""
    with ringfeed.Loader(data, hold="next", **SMALL) as loader:
        assert sum(1 for _ in loader) == 128 // 4


def test_a_for_after_a_break_goes_on_with_the_same_epoch(data):
    """Decided (README): the rest of the epoch, not the epoch again as a
    DataLoader would: every sample once per epoch across the two loops."""
    with ringfeed.Loader(data, with_ids=True, **SMALL) as loader:
        ids = []
        for i, (_, _, batch_ids) in enumerate(loader):
            ids += batch_ids.tolist()
            if i == 9:
                break
        assert loader.epoch == 0
        for _, _, batch_ids in loader:
            ids += batch_ids.tolist()
        assert sorted(ids) == list(range(128)), "the epoch once, across both loops"
        assert loader.epoch == 1
        loader.set_epoch(1)
        again = [batch for _, batch in zip(range(3), loader)]
        assert loader.epoch == 1 and len(again) == 3


def test_the_example_resumed_ends_where_a_straight_run_does(data, tmp_path):
    """examples/train_torch.py: 6 steps straight, and 3 steps, stopped, then
    resumed to 6 from its checkpoint: the same final weights."""
    pytest.importorskip("torchvision", reason="torchvision is not installed for this python "
                        "(Debian: python3-torchvision, installed by scripts/deps.sh)")
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_torch.py")
    env = dict(os.environ, OMP_NUM_THREADS="1")

    def train(steps, ckpt, out):
        subprocess.run([sys.executable, example, data, "--steps", str(steps), "--batch", "8",
                        "--crop", "32", "--threads", "1", "--device", "cpu", "--save-every",
                        "3", "--checkpoint", str(ckpt), "--weights-out", str(out)],
                       check=True, env=env, stdout=subprocess.DEVNULL, timeout=300)

    train(6, tmp_path / "straight.pt", tmp_path / "straight.w")
    train(3, tmp_path / "resumed.pt", tmp_path / "half.w")
    train(6, tmp_path / "resumed.pt", tmp_path / "resumed.w")
    straight = torch.load(tmp_path / "straight.w")
    resumed = torch.load(tmp_path / "resumed.w")
    half = torch.load(tmp_path / "half.w")
    assert straight.keys() == resumed.keys()
    for k in straight:
        assert torch.equal(straight[k], resumed[k]), f"{k} differs after the resume"
    assert any(not torch.equal(straight[k], half[k]) for k in straight), "it trained on"


def test_keeping_every_batch_says_what_to_do_in_python_terms(data):
    """Issue 38: list(loader) holds every slot; the error says why (the
    tensors view the slots) and what to do (copy=True, .clone(), prefetch=),
    with its code and name as attributes and a sentence for str()."""
    import errno
    loader = ringfeed.Loader(data, prefetch=3, **SMALL)
    with pytest.raises(ringfeed.Error) as e:
        list(loader)
    err = e.value
    assert err.code == -errno.EDEADLK and err.name == "EDEADLK"
    assert err.args == (err.code, err.message)
    text = str(err)
    assert text == err.message and not text.startswith("(")
    for advice in ("all 3 batch slots are held", "list(loader)", "copy=True", ".clone()",
                   "prefetch="):
        assert advice in text, (advice, text)
    loader.close()
    # the advice works: copies keep every batch
    with ringfeed.Loader(data, prefetch=3, copy=True, **SMALL) as loader:
        assert len(list(loader)) == 128 // 4
