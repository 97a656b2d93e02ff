"""test_elastic.py - elastic resume from Python (issue 28, item 5): a job
checkpointed on W ranks resumes on W' ranks with load_state_dict() on every
rank (rank 0's state_dict), and the epoch is covered once across both runs;
the same for token windows; set_epoch() on the resumed epoch keeps its rest."""

import os
import subprocess

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
import ringfeed  # noqa: E402

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
SMALL = dict(resize=40, crop=32, threads=1, batch_size=4, seed=5, with_ids=True)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "60", "--classes", "3",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def take(loader, k):
    """ids of the first k batches of an iteration over loader."""
    ids = []
    for i, batch in enumerate(loader):     # ids come last: (images, labels, ids), (rows, ids)
        ids += batch[-1].tolist()
        if i + 1 == k:
            break
    return ids


def elastic(source, world, k, world2, **kw):
    """world ranks take k batches; world2 ranks resume from rank 0's state
    and finish the epoch. Returns every id delivered in the epoch."""
    ids, state = [], None
    for r in range(world):
        with ringfeed.Loader(source, rank=r, world_size=world, **kw) as loader:
            ids += take(loader, k)
            if r == 0:
                state = loader.state_dict()
    for r in range(world2):
        with ringfeed.Loader(source, rank=r, world_size=world2, **kw) as loader:
            loader.load_state_dict(state)
            assert loader.epoch == 0
            for batch in loader:            # the rest of epoch 0, then the loop ends
                ids += batch[-1].tolist()
    return ids


@pytest.mark.parametrize("world,k,world2", [(2, 3, 3), (4, 1, 1), (3, 2, 2)])
def test_ranks_resume_on_another_world_size(data, world, k, world2):
    ids = elastic(data, world, k, world2, **SMALL)
    assert sorted(ids) == list(range(60))


def test_another_batch_size(data):
    ids, state = [], None
    for r in range(2):
        with ringfeed.Loader(data, rank=r, world_size=2, **SMALL) as loader:
            ids += take(loader, 3)
            state = state or loader.state_dict()
    for r in range(2):
        with ringfeed.Loader(data, rank=r, world_size=2, **dict(SMALL, batch_size=6)) as loader:
            loader.load_state_dict(state)
            ids += [i for b in loader for i in b[-1].tolist()]
    assert sorted(ids) == list(range(60))


def test_set_epoch_on_the_resumed_epoch_keeps_its_rest(data):
    with ringfeed.Loader(data, rank=0, world_size=2, **SMALL) as loader:
        take(loader, 3)
        state = loader.state_dict()
    with ringfeed.Loader(data, rank=0, world_size=1, **SMALL) as loader:
        loader.load_state_dict(state)
        first = [b[-1].tolist() for b in loader]
        loader.set_epoch(0)                 # back to the start of the resumed epoch
        again = [b[-1].tolist() for b in loader]
        assert first == again
        assert sum(map(len, first)) == 60 - 2 * 3 * 4


def test_token_windows(tmp_path):
    out = tmp_path / "tokens"
    subprocess.run([RINGFEED, "gen", "--tokens", "--out", str(out), "--shards", "2",
                    "--shard-tokens", "161"], check=True, stdout=subprocess.DEVNULL)
    kw = dict(seq_len=8, batch_size=2, threads=1, seed=2, with_ids=True)
    with ringfeed.Loader(str(out), **kw) as loader:
        n = int(loader._order["dataset_samples"])
    ids = elastic(str(out), 2, 1, 3, **kw)
    assert sorted(ids) == list(range(n))
