"""test_lists.py - the package covers the one list each of rf_config's
fields, rf_stats' counters and the error codes (src/lists/rf_lists.h, as
the extension exports them: CONFIG_FIELDS, STATS_FIELDS, ERROR_CODES):
every field a user sets is a keyword with a description, every counter a
key of stats(), every code a constant with a sentence. tests/test_lists.c
checks the lists against the header. Needs no torch."""

import subprocess
import os

import ringfeed
from ringfeed import _keywords, _ringfeed

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")


def test_every_keyword_field_is_a_keyword_with_a_description():
    keywords = {p.name for p in ringfeed.Loader.__init__.__signature__.parameters.values()}
    to_keyword = {field: key for key, field in _keywords.RENAMED.items()}
    for field, python, _ in _ringfeed.CONFIG_FIELDS:
        key = to_keyword.get(field, field)
        if python == "keyword":
            assert key in keywords, f"{field}: no Loader keyword"
            assert key in _keywords.HELP, f"{key}: no description in _keywords.HELP"
            assert field in _ringfeed.defaults()
        elif python == "package":   # through the config dict, from the package's own
            assert field in _ringfeed.defaults() and field in _keywords.INTERNAL
        else:
            assert field not in _ringfeed.defaults(), field


def test_source_kind_is_taken(tmp_path):
    root = tmp_path / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "4", "--classes", "2",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    with ringfeed.Loader(str(root), source_kind="files", batch_size=2, resize=32, crop=32) as l:
        assert len(l) == 2
    try:
        ringfeed.Loader(str(root), source_kind="tar", batch_size=2)
    except ringfeed.Error as e:
        assert e.name in ("EINDEX", "EEMPTY"), e
    else:
        raise AssertionError("source_kind='tar' on a folder of loose files")


def test_every_counter_is_a_key_of_stats(tmp_path):
    root = tmp_path / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "4", "--classes", "2",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    with ringfeed.Loader(str(root), batch_size=2, resize=32, crop=32) as loader:
        st = loader.stats()
    for field, key, kind in _ringfeed.STATS_FIELDS:
        if kind != "reserved":
            assert key in st, f"rf_stats.{field}: no stats()[{key!r}]"


def test_every_code_is_a_constant_with_a_sentence():
    for name, code in ringfeed.ERROR_CODES.items():
        assert getattr(ringfeed, name) == code and name in ringfeed.__all__
        assert _ringfeed.strerror(code) != "unknown error", name
