"""parquet_columns.py TREE OUTDIR - writes the Parquet files
tests/test_parquet_columns.c reads (cfg.columns, labels of every kind,
columns as fields), with the real pyarrow (the venv scripts/parquet_venv.sh
makes), from an ImageFolder tree (TREE/CLASS/NAME.jpg, classes labelled in
name order; parquet_images.py's rows). OUTDIR/rows.txt: row N's image,
relative to TREE. Every file's row N is the tree's image N:

  cols.parquet  `image` (row N's image) and `alt` (the image of row
                ROWS - 1 - N), labels as int8 `c8`, uint8 `u8`, int16 `c16`,
                dictionary-encoded int32 `cdict`, int64 `label`, string `name`
                (the class folder's name, dictionary-encoded), nullable string
                `name_null` (null every 4th row), int64 `neg` (-2 from row 5);
                fields: string `caption`, nullable string `note`, int64 `n`,
                nullable int32 `small`, bool `flag`, binary `blob`, nullable
                float64 `score`, float32 `f32`, uint32 `u32`, uint64 `u64`, a
                nullable struct `meta` {source: string, w: int32}, a list
                column `tags` (not read: refused as a field); snappy,
                row groups of 10, small pages, page index, dictionaries on
                the label and note columns only
  cols_v2.parquet  the same rows: data pages v2, zstd, every column
                dictionary-encoded, no page index (headers scanned)
  two/a.parquet, two/b.parquet  the rows cut in two; b lacks `note`
  fields.txt    what pyarrow reads of the fields, a line per row and field
                in FIELDS' order: "-" for a null, else the value's bytes in
                hex (integers as decimal text, floats as the shortest %g text
                that reads back the same, booleans true/false)"""
import os
import struct
import sys

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parquet_images import rows_of  # noqa: E402

FIELDS = ["caption", "note", "n", "small", "flag", "blob", "score", "f32", "u32", "u64",
          "meta.source", "meta.w"]


def table(classes, rows):
    n = len(rows)
    labels = [r[2] for r in rows]
    names = [classes[x] for x in labels]
    return pa.table({
        "image": pa.array([r[1] for r in rows], pa.binary()),
        "alt": pa.array([rows[n - 1 - i][1] for i in range(n)], pa.binary()),
        "c8": pa.array(labels, pa.int8()),
        "u8": pa.array(labels, pa.uint8()),
        "c16": pa.array(labels, pa.int16()),
        "cdict": pa.array(labels, pa.int32()),
        "label": pa.array(labels, pa.int64()),
        "name": pa.array(names, pa.string()),
        "name_null": pa.array([None if i % 4 == 3 else s for i, s in enumerate(names)],
                              pa.string()),
        "neg": pa.array([-2 if i >= 5 else x for i, x in enumerate(labels)], pa.int64()),
        "caption": pa.array(["a photo of %s, row %d, caf\u00e9 \u2713" % (names[i], i)
                             for i in range(n)], pa.string()),
        "note": pa.array([None if i % 3 == 1 else "note %d" % i for i in range(n)],
                         pa.string()),
        "n": pa.array([i * 1000 - 7 if i % 2 else -(2 ** 40) - i for i in range(n)],
                      pa.int64()),
        "small": pa.array([None if i % 5 == 2 else i - 3 for i in range(n)], pa.int32()),
        "flag": pa.array([i % 2 == 0 for i in range(n)], pa.bool_()),
        "blob": pa.array([bytes([i, 0, 255, i ^ 0x5a]) * (i % 4) for i in range(n)],
                         pa.binary()),
        "score": pa.array([None if i % 6 == 5 else [0.1, -2.5, 1e20, 3.0, 1 / 3, -0.0][i % 6] * i
                           for i in range(n)], pa.float64()),
        "f32": pa.array([i / 7 for i in range(n)], pa.float32()),
        "u32": pa.array([2 ** 32 - 1 - i for i in range(n)], pa.uint32()),
        "u64": pa.array([2 ** 64 - 1 - i * 3 for i in range(n)], pa.uint64()),
        "meta": pa.array([None if i % 7 == 6 else {"source": "src%d" % (i % 4), "w": i * 10}
                          for i in range(n)],
                         pa.struct([("source", pa.string()), ("w", pa.int32())])),
        "tags": pa.array([["t%d" % i, "x"] for i in range(n)], pa.list_(pa.string())),
    })


def shortest(x, single):
    """The shortest %g text that reads back as x (as ringfeed writes it)."""
    for prec in range(1, 18):
        s = "%.*g" % (prec, x)
        back = float(s)
        if single:
            back, x1 = (struct.unpack("f", struct.pack("f", v))[0] for v in (back, x))
        else:
            x1 = x
        if back == x1:
            return s
    return s


def text(v, single=False):
    if v is None:
        return "-"
    if isinstance(v, float):
        v = shortest(v, single)
    if isinstance(v, bool):
        v = "true" if v else "false"
    if isinstance(v, int):
        v = str(v)
    if isinstance(v, str):
        v = v.encode()
    return v.hex() if v else ""


def main():
    tree, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "two"), exist_ok=True)
    classes, rows = rows_of(tree)
    with open(os.path.join(out, "rows.txt"), "w") as f:
        f.writelines(r[0] + "\n" for r in rows)
    t = table(classes, rows)
    pq.write_table(t, os.path.join(out, "cols.parquet"), compression="snappy",
                   use_dictionary=["cdict", "name", "name_null", "note"], data_page_size=2048,
                   row_group_size=10, write_page_index=True)
    pq.write_table(t, os.path.join(out, "cols_v2.parquet"), compression="zstd",
                   use_dictionary=True, data_page_version="2.0", row_group_size=8)
    half = len(rows) // 2
    pq.write_table(t.slice(0, half), os.path.join(out, "two", "a.parquet"))
    pq.write_table(t.slice(half).drop(["note"]), os.path.join(out, "two", "b.parquet"))
    back = pq.read_table(os.path.join(out, "cols.parquet")).to_pylist()
    for row in back:  # a struct's leaves by their paths (a null struct: null leaves)
        for k in ("source", "w"):
            row["meta." + k] = row["meta"][k] if row["meta"] else None
    with open(os.path.join(out, "fields.txt"), "w") as f:
        for row in back:
            f.writelines(text(row[k], k == "f32") + "\n" for k in FIELDS)


if __name__ == "__main__":
    main()
