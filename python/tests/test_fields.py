"""test_fields.py - image-text samples: a sample's other members (its
caption KEY.txt, its metadata KEY.json) delivered beside its pixels, as
img2dataset writes them.

The shards are written here as img2dataset writes them (Python's tarfile,
members in webdataset TarWriter's order: per key, its members sorted by
extension): JPEG, PNG and WebP images, captions with multi-byte UTF-8 and
empty ones, JSON metadata, and one sample without its caption. The same
samples as a loose tree in img2dataset's "files" layout (00000/KEY.jpg,
KEY.txt, KEY.json) and as that tree's `ringfeed pack`.

Checked: every field value is byte-identical to its member (by sample id:
the samples' index order is the shards' member order); a missing required
field is a bad sample naming the member (skipped and replaced, or failing
the run with on_error="fail"), an optional one ('txt?') is None; the loose
tree and its pack give identical batches and fields; fields follow their
samples through every sampler, ranks, an exact resume, sequential shard
access and raw mode; captions are str, other fields bytes, packed() the
same bytes in one tensor."""

import io
import json
import os
import subprocess
import tarfile

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
pytest.importorskip("PIL", reason="PIL is not installed for this python (Debian: python3-pil)")
import ringfeed  # noqa: E402
from PIL import Image  # noqa: E402

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
PER_SHARD = 12
SHARDS = 3
MISSING_TXT = 7          # the sample without a caption
CAPTIONS = ["a photo of a cat", "", "café au lait, naïve façade", "東京の夜景",
            "emoji 🙂🚀 and ß", "x" * 300, "tab\tand\nnewline"]


def formats_built():
    return ringfeed.formats()


def image_bytes(k):
    """JPEG, PNG or WebP (where built) of a small gradient, per k."""
    fmts = [f for f in ("jpeg", "png", "webp") if f in formats_built()]
    fmt = fmts[k % len(fmts)]
    w, h = 40 + k % 7 * 6, 30 + k % 5 * 4
    im = Image.new("RGB", (w, h))
    im.putdata([((x * 7 + k) % 256, (y * 9) % 256, (x + y + 3 * k) % 256)
                for y in range(h) for x in range(w)])
    out = io.BytesIO()
    im.save(out, {"jpeg": "JPEG", "png": "PNG", "webp": "WEBP"}[fmt], quality=90)
    return {"jpeg": "jpg", "png": "png", "webp": "webp"}[fmt], out.getvalue()


def sample_members(k):
    """The members of sample k, as img2dataset writes them (ext -> bytes)."""
    key = f"{k:09d}"
    ext, img = image_bytes(k)
    caption = CAPTIONS[k % len(CAPTIONS)]
    members = {ext: img, "json": json.dumps({"key": key, "caption": caption, "status": "success",
                                              "width": 0}, ensure_ascii=False).encode()}
    if k != MISSING_TXT:
        members["txt"] = caption.encode()
    return key, members


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """{"shards": dir, "tree": dir, "pack": dir, "members": [dict per sample id]}."""
    root = tmp_path_factory.mktemp("fields")
    shards, tree = root / "shards", root / "tree"
    shards.mkdir()
    members = []
    for s in range(SHARDS):
        (tree / f"{s:05d}").mkdir(parents=True)
        with tarfile.open(shards / f"{s:05d}.tar", "w", format=tarfile.USTAR_FORMAT) as t:
            for j in range(PER_SHARD):
                key, m = sample_members(s * PER_SHARD + j)
                members.append(m)
                for ext in sorted(m):   # webdataset's TarWriter: sorted by extension
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(m[ext])
                    t.addfile(info, io.BytesIO(m[ext]))
                    (tree / f"{s:05d}" / f"{key}.{ext}").write_bytes(m[ext])
    (tree / "00000_stats.json").write_text("{}")   # img2dataset's, beside the folders
    pack = root / "pack"
    subprocess.run([RINGFEED, "pack", str(tree), "-o", str(pack)], check=True,
                   capture_output=True)
    return {"shards": str(shards), "tree": str(tree), "pack": str(pack), "members": members}


def run(source, **kw):
    """Every batch of one epoch: a list of FieldBatch (ids included)."""
    kw.setdefault("batch_size", 5)
    kw.setdefault("fields", ("txt?", "json"))
    with ringfeed.Loader(source, epochs=1, with_ids=True, copy=True, **kw) as loader:
        return list(loader)


def check_values(batches, members, fields=("txt", "json")):
    """Each field value is its member's bytes (None where it has none)."""
    seen = 0
    for b in batches:
        ids = b[-1].tolist()
        for name in fields:
            values = b[name]
            data, offsets = b.packed(name)
            present = b.present(name).tolist()
            assert len(values) == len(ids) and offsets.numel() == len(ids) + 1
            for i, sid in enumerate(ids):
                want = members[sid].get(name)
                got = bytes(data[offsets[i]:offsets[i + 1]].tolist())
                if want is None:
                    assert values[i] is None and not present[i] and got == b""
                    continue
                assert present[i]
                assert got == want
                assert values[i] == (want.decode() if name == "txt" else want)
        seen += len(ids)
    return seen


def test_shard_fields_are_the_members_bytes(data):
    batches = run(data["shards"], seed=3)
    assert check_values(batches, data["members"]) == SHARDS * PER_SHARD
    b = batches[0]
    assert b.field_names == ("txt", "json")
    images, labels, ids = b               # unpacks as without fields
    assert images.shape[0] == labels.shape[0] == ids.shape[0]
    assert isinstance(b["txt"][0], (str, type(None))) and isinstance(b["json"][0], bytes)
    with pytest.raises(KeyError, match="no field 'cls'"):
        b["cls"]


def test_the_loose_tree_and_its_pack_give_the_same_batches_and_fields(data):
    for kw in ({"seed": 1}, {"shuffle": 0}, {"sampler": "sequential"}):
        loose = run(data["tree"], **kw)
        packed = run(data["pack"], **kw)
        assert len(loose) == len(packed)
        for a, b in zip(loose, packed):
            for x, y in zip(a, b):
                assert torch.equal(x, y)
            assert a["txt"] == b["txt"] and a["json"] == b["json"]
        assert check_values(loose, data["members"]) == SHARDS * PER_SHARD


def test_a_missing_required_field_is_a_bad_sample_naming_the_member(data):
    reports = []
    batches = run(data["shards"], fields=("txt",), seed=5,
                  on_bad_sample=lambda path, err, reason: reports.append((path, reason)))
    assert any(path.endswith(f"{MISSING_TXT:09d}.{image_bytes(MISSING_TXT)[0]}") and
               "no 'txt' member" in reason for path, reason in reports)
    ids = [i for b in batches for i in b[-1].tolist()]
    assert MISSING_TXT not in ids and len(ids) == SHARDS * PER_SHARD   # replaced
    check_values(batches, data["members"], fields=("txt",))
    with pytest.raises(ringfeed.Error, match="no 'txt' member"):
        run(data["shards"], fields=("txt",), on_error="fail", shuffle=0, batch_size=4,
            on_bad_sample=lambda *report: None)


def test_a_field_no_sample_has_is_refused_at_create(data):
    with pytest.raises(ringfeed.Error, match="no sample .* has a member 'caption'.*json, txt"):
        ringfeed.Loader(data["shards"], fields=("caption",))
    with ringfeed.Loader(data["shards"], fields="caption?,txt?", epochs=1) as loader:
        b = next(iter(loader))
        assert b["caption"] == [None] * len(b["caption"])
    for bad in (("txt", "TXT"), ("txt", ""), "txt,", ("a/b",), tuple("abcdefghi")):
        with pytest.raises(ringfeed.Error, match="fields"):
            ringfeed.Loader(data["shards"], fields=bad)


def test_a_field_over_field_max_is_a_bad_sample(data):
    reports = []
    batches = run(data["shards"], fields=("txt?",), field_max=200, shuffle=0,
                  on_bad_sample=lambda path, err, reason: reports.append(reason))
    assert any("more than field_max" in r for r in reports)   # the 300-byte caption
    assert all(len(v) <= 200 for b in batches for v in b["txt"] if v is not None)


def test_fields_follow_their_samples_through_ranks_resume_and_access_modes(data):
    whole = {}
    for rank in range(3):
        for b in run(data["shards"], seed=2, rank=rank, world_size=3):
            for sid, cap in zip(b[-1].tolist(), b["txt"]):
                whole[sid] = cap
    assert len(whole) == SHARDS * PER_SHARD
    for sid, cap in whole.items():
        want = data["members"][sid].get("txt")
        assert cap == (want.decode() if want is not None else None)

    seq = run(data["shards"], seed=4, shard_access="sequential", shuffle_block=4)
    assert check_values(seq, data["members"]) == SHARDS * PER_SHARD

    weighted = run(data["shards"], seed=4, sampler="balanced", samples_per_epoch=20)
    check_values(weighted, data["members"])

    # exact resume: the batches after a saved state, fields included
    with ringfeed.Loader(data["shards"], fields=("txt?", "json"), batch_size=4, seed=9,
                         epochs=1, copy=True) as loader:
        it = iter(loader)
        next(it), next(it)
        state = loader.state_dict()
        rest = [(b["txt"], b["json"], b[0]) for b in it]
    with ringfeed.Loader(data["shards"], fields=("txt?", "json"), batch_size=4, seed=9,
                         epochs=1, copy=True) as loader:
        loader.load_state_dict(state)
        again = [(b["txt"], b["json"], b[0]) for b in loader]
    assert len(rest) == len(again)
    for (t1, j1, x1), (t2, j2, x2) in zip(rest, again):
        assert t1 == t2 and j1 == j2 and torch.equal(x1, x2)


def test_raw_mode_delivers_fields_beside_the_bytes(data):
    with ringfeed.Loader(data["shards"], raw=True, fields=("txt?", "json"), batch_size=6,
                         epochs=1, shuffle=0, with_ids=True) as loader:
        n = 0
        for b in loader:
            ids = b[-1].tolist()
            for i, sid in enumerate(ids):
                want = data["members"][sid].get("txt")
                assert b["txt"][i] == (want.decode() if want is not None else None)
                assert b["json"][i] == data["members"][sid]["json"]
            n += len(ids)
    assert n == SHARDS * PER_SHARD


def test_a_caption_that_is_not_utf8_names_the_field(tmp_path):
    with tarfile.open(tmp_path / "s.tar", "w") as t:
        for k, cap in enumerate([b"fine", b"\xff\xfe broken"]):
            for ext, body in (("jpg", image_bytes(0)[1]), ("txt", cap)):
                info = tarfile.TarInfo(f"{k:03d}.{ext}")
                info.size = len(body)
                t.addfile(info, io.BytesIO(body))
    with ringfeed.Loader(str(tmp_path / "s.tar"), fields="txt", batch_size=2, shuffle=0,
                         epochs=1) as loader:
        b = next(iter(loader))
        with pytest.raises(UnicodeDecodeError, match="field 'txt' of sample 1"):
            b["txt"]
        data, offsets = b.packed("txt")
        assert bytes(data[offsets[1]:offsets[2]].tolist()) == b"\xff\xfe broken"


def test_the_cli_counts_the_fields_bytes(data):
    out = subprocess.run([RINGFEED, "bench", "--source", data["shards"], "--fields", "txt?,json",
                          "--batch", "6", "--json"], check=True, capture_output=True, text=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    want = sum(len(m.get("txt", b"")) + len(m["json"]) for m in data["members"])
    assert got["field_bytes"] == want and got["bad_samples"] == 0


def test_a_manifest_names_a_caption_column(data, tmp_path):
    """#columns: path label txt: the caption is the column's text (escapes
    undone); its pack holds it as KEY.txt and gives the same batches."""
    tree = data["tree"]
    lines = ["#columns: path label txt"]
    want = {}
    for k in range(SHARDS * PER_SHARD):
        ext = image_bytes(k)[0]
        cap = f"caption {k}: tab\there, newline\nthere, back\\slash, 東京"
        esc = cap.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
        lines.append(f"{tree}/{k // PER_SHARD:05d}/{k:09d}.{ext}\t{k % 3}\t{esc}")
        want[k] = cap
    manifest = tmp_path / "list.tsv"
    manifest.write_text("\n".join(lines) + "\n")
    batches = run(str(manifest), fields=("txt",), shuffle=0)
    got = {sid: cap for b in batches for sid, cap in zip(b[-1].tolist(), b["txt"])}
    assert got == want
    pack = tmp_path / "pack"
    subprocess.run([RINGFEED, "pack", str(manifest), "-o", str(pack)], check=True,
                   capture_output=True)
    packed = run(str(pack), fields=("txt",), shuffle=0)
    for a, b in zip(batches, packed):
        assert a["txt"] == b["txt"] and torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    bad = tmp_path / "bad.tsv"
    bad.write_text("#columns: path label txt\n" + lines[1].rsplit("\t", 1)[0] + "\n")
    with pytest.raises(ringfeed.Error, match="line 2: expected 3 tab-separated columns"):
        ringfeed.Loader(str(bad), fields="txt")
