"""test_parquet_columns.py - Parquet files through the Python package:
Loader(columns=...) says which column is the image and the label (a
string label column: the classes are its sorted distinct values, as a
folder's class names are), and fields=(...) names other columns, each
value the bytes pyarrow reads (integers and floats as their text, a null
None when optional). The files are written by tests/parquet_columns.py
with the parquet venv's pyarrow (scripts/parquet_venv.sh; this python
need not have pyarrow); without it the tests skip saying so."""

import os
import subprocess

import pytest

pytest.importorskip("torch", reason="torch is not installed for this python "
                    "(Debian: python3-torch, installed by scripts/deps.sh)")
import ringfeed  # noqa: E402

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
PYARROW = os.environ.get("RINGFEED_PARQUET_PYTHON",
                         "/root/.cache/ringfeed-parquet-venv/bin/python")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                      "parquet_columns.py")
FIELDS = ["caption", "note", "n", "small", "flag", "blob", "score", "f32", "u32", "u64",
          "meta.source", "meta.w"]  # parquet_columns.py's, in its order
ROWS = 27


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    if not os.access(PYARROW, os.X_OK) or subprocess.run(
            [PYARROW, "-c", "import pyarrow"], capture_output=True).returncode:
        pytest.skip(f"no python with pyarrow at {PYARROW} (scripts/parquet_venv.sh makes it)")
    d = tmp_path_factory.mktemp("pqcols")
    subprocess.run([RINGFEED, "gen", "--out", str(d / "tree"), "--count", str(ROWS),
                    "--classes", "3", "--threads", "1"], check=True, capture_output=True)
    subprocess.run([PYARROW, SCRIPT, str(d / "tree"), str(d / "out")], check=True)
    lines = (d / "out" / "fields.txt").read_text().split("\n")
    want = [{k: (None if lines[r * len(FIELDS) + i] == "-"
                 else bytes.fromhex(lines[r * len(FIELDS) + i]))
             for i, k in enumerate(FIELDS)} for r in range(ROWS)]
    return {"dir": d, "want": want}


def test_columns_and_fields(files):
    src = str(files["dir"] / "out" / "cols.parquet")
    tree = str(files["dir"] / "tree")
    with ringfeed.Loader(tree, epochs=1, shuffle=0) as t:
        tree_classes = t.classes
    with ringfeed.Loader(src, columns="image=alt,label=name", fields=("caption", "note?", "n",
                                                                     "score?"),
                         epochs=1, with_ids=True, batch_size=5, resize=32, crop=32) as loader:
        assert loader.classes == tree_classes
        seen = 0
        for b in loader:
            ids = b[-1].tolist()
            labels = b[1].tolist()
            for i, row in enumerate(ids):
                assert labels[i] == row // 9  # class folders of 9, in name order
                for name in ("caption", "note", "n", "score"):
                    assert b[name][i] == files["want"][row][name], (row, name)
            seen += len(ids)
        assert seen == ROWS


def test_unknown_column_names_the_file_and_its_columns(files):
    src = str(files["dir"] / "out" / "cols.parquet")
    with pytest.raises(ringfeed.Error, match=r"no column 'jpg'.*its columns: image, alt"):
        ringfeed.Loader(src, columns="image=jpg")
    with pytest.raises(ringfeed.Error, match=r"no column 'title'"):
        ringfeed.Loader(src, fields=("title",))
