"""test_errors.py - ringfeed.Error as a user reads it (issue 38): .code,
.name and .message beside args (code, message), str() the message alone;
every error code of ringfeed.h exported (ringfeed.ECONFIG, ...,
ringfeed.ERROR_CODES). Needs no torch and no data."""

import errno
import pickle
import re

import pytest

import ringfeed
from ringfeed import _ringfeed

HEADER_CODES = ("EOF", "EBADSAMPLE", "ETOOMANYBAD", "ENOIOURING", "ECONFIG", "EEMPTY",
                "EINDEX", "ESTATE", "ESTATEVERSION", "ESTATEMISMATCH", "EFORKED", "EABI",
                "ELOST")


def test_every_code_of_the_header_is_exported():
    assert sorted(ringfeed.ERROR_CODES) == sorted(HEADER_CODES)
    for name, code in ringfeed.ERROR_CODES.items():
        assert getattr(ringfeed, name) == getattr(_ringfeed, name) == code
        assert name in ringfeed.__all__
    assert ringfeed.EOF == 1
    assert all(code < -4096 for name, code in ringfeed.ERROR_CODES.items() if name != "EOF")
    assert len(set(ringfeed.ERROR_CODES.values())) == len(HEADER_CODES)


def test_the_header_has_no_other_code():
    """include/ringfeed.h's RF_E* enum, read from the source tree when it is there."""
    import os
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "ringfeed.h")
    if not os.path.exists(header):
        pytest.skip("include/ringfeed.h is not beside the tests (an installed package)")
    text = open(header).read()
    names = set(re.findall(r"^\s*RF_(E[A-Z]+) = -?\d+,", text, re.M))
    assert names == set(HEADER_CODES), names ^ set(HEADER_CODES)


def test_an_error_has_code_name_and_message():
    e = ringfeed.Error(ringfeed.ECONFIG, "batch_size: 0 is out of range")
    assert e.code == ringfeed.ECONFIG and e.name == "ECONFIG"
    assert e.message == str(e) == "batch_size: 0 is out of range"
    assert e.args == (ringfeed.ECONFIG, "batch_size: 0 is out of range")
    assert isinstance(e, RuntimeError)
    errno_error = ringfeed.Error(-errno.EDEADLK, "held")
    assert errno_error.name == "EDEADLK"
    assert ringfeed.Error(-errno.ENOENT, "x").name == "ENOENT"
    # a code alone: the library's words for it
    assert str(ringfeed.Error(ringfeed.EFORKED)) == _ringfeed.strerror(ringfeed.EFORKED)
    # neither code nor message: as RuntimeError
    plain = ringfeed.Error("text")
    assert str(plain) == "text" and plain.code is None and plain.name is None


def test_an_error_survives_pickling():
    """multiprocessing sends exceptions between processes pickled."""
    e = pickle.loads(pickle.dumps(ringfeed.Error(ringfeed.ESTATE, "truncated")))
    assert (e.code, e.name, str(e)) == (ringfeed.ESTATE, "ESTATE", "truncated")


def test_a_library_error_reads_as_a_sentence(tmp_path):
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.Loader(str(tmp_path / "missing"))
    assert e.value.code == -errno.ENOENT and e.value.name == "ENOENT"
    assert "missing" in str(e.value) and not str(e.value).startswith("(")
    with pytest.raises(ringfeed.Error) as e:
        ringfeed.state_parse(b"not a state")
    assert e.value.code == ringfeed.ESTATE and e.value.name == "ESTATE"
