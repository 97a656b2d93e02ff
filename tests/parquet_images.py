"""parquet_images.py TREE OUTDIR - writes the Parquet files
tests/test_parquet_source.c reads as a source, with the real pyarrow (the
venv scripts/parquet_venv.sh makes), from an ImageFolder tree of images
(TREE/CLASS/NAME.jpg, classes labelled in name order): one row an image,
its encoded bytes in the image column, its class number in `label`.
OUTDIR/rows.txt says which image each row is (line N: row N's path
relative to TREE), the same for every file below whose rows are the
tree's:

  plain.parquet  binary `image`, int64 `label`, snappy, no dictionary,
                 small pages (several per row group), page index
  dict.parquet   the image column dictionary-encoded, zstd, data pages v2,
                 no page index (pages found by their headers)
  hf.parquet     the `datasets` layout: `image` a struct<bytes, path>, the
                 label a ClassLabel (its names in the `huggingface`
                 metadata), gzip
  split/part-K.parquet  the rows cut into 3 files (a folder, a pattern, a list)
  bad.parquet    the rows plus a null image (row N), an image whose bytes are
                 damaged (row N + 1) and a row with no label (N + 2): N in
                 bad.txt
  lzo.parquet    plain.parquet with its image column's codec said to be LZO
                 (no ringfeed reads it)
  codec_C.parquet  one per codec pyarrow writes (none snappy gzip brotli lz4 zstd)"""
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def rows_of(tree):
    classes = sorted(d for d in os.listdir(tree) if os.path.isdir(os.path.join(tree, d)))
    rows = []
    for label, c in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(tree, c))):
            with open(os.path.join(tree, c, name), "rb") as f:
                rows.append((c + "/" + name, f.read(), label))
    return classes, rows


def plain(rows):
    return pa.table({"label": pa.array([r[2] for r in rows], pa.int64()),
                     "image": pa.array([r[1] for r in rows], pa.binary())})


def hf(rows, classes):
    img = pa.array([{"bytes": r[1], "path": r[0]} for r in rows],
                   pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    t = pa.table({"image": img, "label": pa.array([r[2] for r in rows], pa.int64())})
    info = {"info": {"features": {"image": {"_type": "Image"},
                                  "label": {"_type": "ClassLabel", "names": classes}}}}
    return t.replace_schema_metadata({"huggingface": json.dumps(info)})


def lzo(src, dst):
    """src with its image column's codec (SNAPPY) said to be LZO: in each
    ColumnMetaData, path_in_schema ["image"] (list header 0x18, the string)
    is followed by field 4, codec (0x15, zigzag(1) = 0x02); LZO is 3 (0x06)."""
    with open(src, "rb") as f:
        data = f.read()
    pat = b"\x18\x05image\x15\x02"
    if pat not in data:
        sys.exit("parquet_images.py: the image column's codec field was not found")
    with open(dst, "wb") as f:
        f.write(data.replace(pat, pat[:-1] + b"\x06"))


def main():
    tree, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "split"), exist_ok=True)
    classes, rows = rows_of(tree)
    with open(os.path.join(out, "rows.txt"), "w") as f:
        f.writelines(r[0] + "\n" for r in rows)
    t = plain(rows)
    pq.write_table(t, os.path.join(out, "plain.parquet"), compression="snappy",
                   use_dictionary=False, data_page_size=4096, row_group_size=10,
                   write_page_index=True)
    pq.write_table(t, os.path.join(out, "dict.parquet"), compression="zstd",
                   use_dictionary=True, data_page_version="2.0", row_group_size=9)
    pq.write_table(hf(rows, classes), os.path.join(out, "hf.parquet"), compression="gzip",
                   data_page_size=8192)
    third = (len(rows) + 2) // 3
    for k in range(3):
        pq.write_table(t.slice(k * third, third), os.path.join(out, "split", "part-%d.parquet" % k),
                       compression="snappy", use_dictionary=False)
    with open(os.path.join(out, "split.list"), "w") as f:
        f.writelines(os.path.join(out, "split", "part-%d.parquet\n" % k) for k in range(3))
    n = len(rows)
    bad = pa.table({
        "label": pa.array([r[2] for r in rows] + [0, 1, None], pa.int64()),
        "image": pa.array([r[1] for r in rows] + [None, rows[0][1][:3] + b"\x00" * 300,
                                                  rows[1][1]], pa.binary())})
    pq.write_table(bad, os.path.join(out, "bad.parquet"), compression="snappy",
                   use_dictionary=False, data_page_size=4096)
    with open(os.path.join(out, "bad.txt"), "w") as f:
        f.write("%d\n" % n)
    pq.write_table(t, os.path.join(out, "snappy_one.parquet"), compression="snappy",
                   use_dictionary=False)
    lzo(os.path.join(out, "snappy_one.parquet"), os.path.join(out, "lzo.parquet"))
    for codec in ["none", "snappy", "gzip", "brotli", "lz4", "zstd"]:
        pq.write_table(t, os.path.join(out, "codec_%s.parquet" % codec), compression=codec,
                       use_dictionary=False)


if __name__ == "__main__":
    main()
