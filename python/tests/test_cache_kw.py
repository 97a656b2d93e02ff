"""test_cache_kw.py - the node-local cache's keywords (cache_dir, cache_bytes,
cache_group) and counters as the package takes and reports them: paths as str, bytes or
os.PathLike, sizes as integers, every wrong type or value refused naming the
keyword, the eight cache counters in stats(). What the cache does with remote
shards is test_remote's business; here the source is local, which the cache
leaves alone. Needs no torch."""

import os
import pathlib
import subprocess

import pytest

import ringfeed

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
SMALL = dict(batch_size=4, resize=72, crop=64, threads=1)
COUNTERS = ("cache_hits", "cache_hit_bytes", "cache_misses", "cache_written_bytes",
            "cache_waits", "cache_evictions", "cache_fill_waits", "cache_fill_drops")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache_kw") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "8", "--classes", "2",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def test_defaults_are_no_cache():
    d = ringfeed.defaults()
    assert d["cache_dir"] is None
    assert d["cache_bytes"] == 0
    assert d["cache_group"] is None


@pytest.mark.parametrize("as_path", [str, os.fsencode, pathlib.Path])
def test_cache_keywords_are_taken(data, tmp_path, as_path):
    with ringfeed.Loader(data, cache_dir=as_path(str(tmp_path / "c")), cache_bytes=64 << 20,
                         **SMALL) as loader:
        stats = loader.stats()
    # a local source reads no remote byte: the counters are there, and zero
    for key in COUNTERS:
        assert stats[key] == 0, key
    with ringfeed.Loader(data, cache_dir=None, cache_bytes=0, **SMALL) as loader:
        assert all(loader.stats()[key] == 0 for key in COUNTERS)


def test_cache_keywords_are_checked(data, tmp_path):
    with pytest.raises(TypeError, match="cache_dir: expected str, bytes or os.PathLike, not float"):
        ringfeed.Loader(data, cache_dir=1.0, **SMALL)
    with pytest.raises(TypeError, match="cache_dir: expected str, bytes or os.PathLike, not int"):
        ringfeed.Loader(data, cache_dir=3, **SMALL)
    with pytest.raises(ValueError, match="cache_dir.*null"):
        ringfeed.Loader(data, cache_dir=str(tmp_path / "c\0x"), **SMALL)
    with pytest.raises(TypeError, match="cache_bytes: expected an integer, not str"):
        ringfeed.Loader(data, cache_bytes="10G", **SMALL)
    with pytest.raises(TypeError, match="cache_bytes: expected an integer, not float"):
        ringfeed.Loader(data, cache_bytes=1e9, **SMALL)
    with pytest.raises(ValueError, match="cache_bytes: -1 is negative"):
        ringfeed.Loader(data, cache_bytes=-1, **SMALL)
    with pytest.raises(ValueError, match="cache_bytes.*out of range"):
        ringfeed.Loader(data, cache_bytes=1 << 64, **SMALL)
    with pytest.raises(TypeError, match="unexpected keyword argument 'cache_size'"):
        ringfeed.Loader(data, cache_size=1 << 30, **SMALL)


def _a_group():
    """A group of this machine's (the running user's own), by name."""
    import grp
    return grp.getgrgid(os.getgid()).gr_name


def test_cache_group_is_taken(data, tmp_path):
    group = _a_group()
    with ringfeed.Loader(data, cache_dir=str(tmp_path / "c"), cache_group=group,
                         **SMALL) as loader:
        assert all(loader.stats()[key] == 0 for key in COUNTERS)
    with ringfeed.Loader(data, cache_dir=str(tmp_path / "c"), cache_group=None, **SMALL) as loader:
        assert all(loader.stats()[key] == 0 for key in COUNTERS)


def test_cache_group_is_checked(data, tmp_path):
    with pytest.raises(TypeError, match="cache_group: expected str, bytes or os.PathLike, not int"):
        ringfeed.Loader(data, cache_group=3, **SMALL)
    # a name that is no group here: refused at create, naming it
    with pytest.raises(ringfeed.Error, match="cache_group = 'no-such-group-here': no such group"):
        ringfeed.Loader(data, cache_dir=str(tmp_path / "c"), cache_group="no-such-group-here",
                        **SMALL)
