"""test_observe.py - what a user sees of a loader (issue 38, item 6):
stats() gives every rf_stats counter, the times in seconds under the names
`ringfeed bench --json` uses, io_path and decode by name; classes and
class_to_idx as torchvision's ImageFolder, sample_path(id) the name errors
give a sample (a file, a shard's member, a token window); state_parse()
takes what state_dict() returns. Iterating needs torch; the rest does not."""

import os
import re
import struct
import subprocess

import pytest

import ringfeed

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
SMALL = dict(resize=40, crop=32, threads=1, batch_size=4, seed=3)
HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "ringfeed.h")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("observe") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "24", "--classes", "3",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def test_classes_and_class_to_idx_are_imagefolders(data):
    names = sorted(os.listdir(data))
    with ringfeed.Loader(data, **SMALL) as loader:
        assert loader.classes == names
        assert loader.class_to_idx == {name: i for i, name in enumerate(names)}


def test_each_id_names_its_file_in_its_labels_class_folder(data):
    pytest.importorskip("torch", reason="torch is not installed (iterating makes tensors)")
    seen = set()
    with ringfeed.Loader(data, with_ids=True, epochs=1, **SMALL) as loader:
        classes = loader.classes
        for _, labels, ids in loader:
            for label, sample in zip(labels.tolist(), ids):
                path = loader.sample_path(sample)   # a 0-d tensor, as ids[i] is
                assert path == loader.sample_path(int(sample))
                assert os.path.isfile(path), path
                assert os.path.dirname(path) == os.path.join(data, classes[label]), path
                seen.add(path)
    assert len(seen) == 24


def test_an_id_past_the_index_is_an_index_error(data):
    with ringfeed.Loader(data, **SMALL) as loader:
        with pytest.raises(IndexError, match="24 is not a sample"):
            loader.sample_path(24)
        with pytest.raises(IndexError):
            loader.sample_path(-1)
        with pytest.raises(TypeError):
            loader.sample_path(1.5)
        assert loader.sample_path(0).startswith(data + os.sep)


def test_a_manifest_names_no_class(data, tmp_path):
    first = os.path.join(data, sorted(os.listdir(data))[0])
    files = sorted(os.listdir(first))[:2]
    manifest = tmp_path / "list.tsv"
    manifest.write_text("".join(f"{os.path.join(first, f)}\t{i}\n" for i, f in enumerate(files)))
    with ringfeed.Loader(str(manifest), **dict(SMALL, batch_size=2)) as loader:
        assert loader.classes == [] and loader.class_to_idx == {}
        assert loader.sample_path(1) == os.path.join(first, files[1])


def test_tar_shard_members_are_named_shard_colon_member(data, tmp_path):
    out = tmp_path / "shards"
    subprocess.run([RINGFEED, "pack", data, "-o", str(out)], check=True, capture_output=True)
    with ringfeed.Loader(str(out), **SMALL) as loader:
        names = [loader.sample_path(i) for i in range(24)]
    assert all(re.fullmatch(re.escape(str(out)) + r"/[^/:]+\.tar:[^/]+\.jpg", n) for n in names), \
        names[:3]
    assert len(set(names)) == 24


def test_token_windows_are_named_by_shard_and_tokens(tmp_path):
    shard = tmp_path / "train_000000.bin"
    header = [0] * 256
    header[0], header[1], header[2] = 20240520, 1, 100   # llm.c's GPT-2 shard, 100 tokens
    shard.write_bytes(struct.pack("<256i", *header) + struct.pack("<100H", *range(100)))
    with ringfeed.Loader(str(shard), seq_len=10, batch_size=2) as loader:
        assert loader.classes == []
        name = loader.sample_path(3)
    assert "train_000000.bin" in name and name.endswith(":tokens 30..40 (window 3)"), name


def test_stats_give_times_in_seconds_and_paths_by_name(data):
    pytest.importorskip("torch", reason="torch is not installed (iterating makes tensors)")
    with ringfeed.Loader(data, epochs=1, io_path="pread", **SMALL) as loader:
        for _ in loader:
            pass
        st = loader.stats()
    assert st["samples"] == 24 and st["batches"] == 6
    assert st["io_path"] == "pread" and st["decode"] == "cpu"
    for key in ("read_wait_s", "decode_s", "transform_s", "collate_s", "ring_cpu_s",
                "consumer_wait_s", "device_copy_s", "gpu_busy_s", "gpu_host_s"):
        assert isinstance(st[key], float) and st[key] >= 0, key
    assert st["decode_s"] > 0 and st["cpu_decodes"] == 24   # 24 JPEGs were decoded
    assert st["consumer_wait_s"] == pytest.approx(st["ns_consumer_wait"] * 1e-9)


def test_stats_hold_every_counter_of_rf_stats(data):
    """Each field of the header's rf_stats is in stats(): under its own name,
    a time (ns_X) as X_s (the GPU decode's as bench --json's gpu_busy_s,
    gpu_host_s), decode_path as decode."""
    if not os.path.exists(HEADER):
        pytest.skip("include/ringfeed.h is not beside the tests (an installed package)")
    text = open(HEADER).read()
    body = text[text.index("typedef struct rf_stats {"):text.index("} rf_stats;")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = []
    for decl in re.findall(r"uint(?:32|64)_t\s+([^;]+);", body):
        fields += [f.strip() for f in decl.split(",")]
    renamed = {"ns_gpu_decode": "gpu_busy_s", "ns_gpu_host": "gpu_host_s",
               "decode_path": "decode"}
    with ringfeed.Loader(data, **SMALL) as loader:
        st = loader.stats()
    missing = []
    for field in fields:
        if field.startswith("reserved"):
            continue
        key = renamed.get(field) or (field[3:] + "_s" if field.startswith("ns_") else field)
        if key not in st:
            missing.append(f"{field} (as {key})")
    assert not missing, missing
    assert st["io_path"] in ringfeed._ringfeed.ENUM_VALUES["io_path"]


def test_state_parse_takes_what_state_dict_returns(data):
    with ringfeed.Loader(data, **SMALL) as loader:
        state = loader.state_dict()
    parsed = ringfeed.state_parse(state)
    assert parsed == ringfeed.state_parse(state["ringfeed_state"])
    assert parsed["next_batch"] == 0 and parsed["batches_per_epoch"] == 6
    with pytest.raises(TypeError, match="ringfeed_state"):
        ringfeed.state_parse({"epoch": 0})
