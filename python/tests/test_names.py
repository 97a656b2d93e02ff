"""test_names.py - the names of enum values come from the C library's table
(exported by the extension, not copied into the package), every name the
package took before still means what it meant, and set_epoch()'s state
moves go through the public rf_state_seek(). Needs no torch."""

import os
import subprocess

import pytest

import ringfeed
from ringfeed import _ringfeed

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")

# What ringfeed/__init__.py spelled out by hand before the table (issue 24).
BEFORE = {
    "dtype": {"uint8": 0, "float32": 1, "float16": 2},
    "layout": {"hwc": 0, "chw": 1},
    "on_error": {"skip": 0, "fail": 1},
    "sampler": {"shuffle": 0, "sequential": 1, "weighted": 2, "balanced": 3},
    "rank_tail": {"pad": 0, "drop": 1},
    "io_path": {"auto": 0, "uring_fixed": 1, "uring_plain": 2, "pread": 3},
    "log_level": {"none": 0, "error": 1, "warn": 2, "info": 3},
    "decode": {"cpu": 0, "gpu": 1, "auto": 2},
    "shard_access": {"random": 0, "sequential": 1},
    "token_dtype": {"stored": 0, "uint16": 3, "uint32": 4, "int32": 5},
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("names") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "24", "--classes", "2",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def test_every_name_the_package_took_still_means_the_same():
    for field, names in BEFORE.items():
        for name, value in names.items():
            assert _ringfeed.ENUM_VALUES[field][name] == value, (field, name)
    # the command's spellings are taken too, and name the values
    assert _ringfeed.ENUM_VALUES["io_path"]["fixed"] == 1
    assert _ringfeed.ENUM_NAMES["io_path"][1] == "fixed"
    assert _ringfeed.ENUM_NAMES["layout"] == {0: "hwc", 1: "chw"}


def test_the_two_tables_agree():
    assert set(_ringfeed.ENUM_VALUES) == set(_ringfeed.ENUM_NAMES)
    for field, names in _ringfeed.ENUM_VALUES.items():
        by_value = _ringfeed.ENUM_NAMES[field]
        assert set(names.values()) == set(by_value), field
        for value, name in by_value.items():
            assert names[name] == value, (field, name)
    # each enum field of rf_config has its names (source_kind is not a
    # keyword of the package yet, but its names are exported all the same)
    fields = set(ringfeed.defaults())
    assert set(BEFORE) <= fields and set(BEFORE) <= set(_ringfeed.ENUM_VALUES)


def test_the_package_takes_the_c_names(data):
    for io_path in ("pread", "PREAD", "uring_plain", _ringfeed.ENUM_VALUES["io_path"]["pread"]):
        loader = ringfeed.Loader(data, batch_size=8, resize=32, crop=32, threads=1,
                                 io_path=io_path, layout="chw", dtype="float16",
                                 sampler="sequential", rank_tail="drop", on_error="fail")
        assert loader._config["layout"] == _ringfeed.ENUM_VALUES["layout"]["chw"]
        if io_path != "uring_plain":   # io_uring may be missing: AUTO falls back, a path fails
            assert loader.stats()["io_path"] == "pread"   # by name (issue 38)
        loader.close()
    with pytest.raises(ringfeed.Error, match="dtype: 'float64' is not one of"):
        ringfeed.Loader(data, dtype="float64")


def test_set_epoch_moves_the_state_with_rf_state_seek(data):
    loader = ringfeed.Loader(data, batch_size=8, resize=32, crop=32, threads=1)
    state = loader.state_dict()["ringfeed_state"]
    info = ringfeed.state_parse(state)
    assert info["next_batch"] == 0 and info["batches_per_epoch"] == 3
    moved = ringfeed.state_at_epoch(state, 5)
    assert len(moved) == len(state) and moved != state
    info = ringfeed.state_parse(moved)
    assert (info["next_batch"], info["epoch"], info["batch_in_epoch"]) == (15, 5, 0)
    loader.set_epoch(2)
    assert loader.epoch == 2 and loader._c.order()["next_batch"] == 6
    loader.close()
    broken = bytearray(state)
    broken[100] ^= 1
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.state_at_epoch(bytes(broken), 1)
    assert e.value.args[0] == _ringfeed.ESTATE and "corrupted" in e.value.args[1]
