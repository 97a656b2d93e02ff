"""parquet_fixtures.py OUTDIR - writes the Parquet files tests/test_parquet.c
reads, with the real pyarrow (the venv scripts/parquet_venv.sh makes), and
beside each NAME.parquet a NAME.expect that says what pyarrow wrote: one
line a cell, "COLUMN<TAB>ROW<TAB>VALUE", VALUE "-" for a null, "i:N" for an
integer or a boolean, "b:HEX" for bytes. COLUMN is the leaf's dotted path
("img.bytes"). The files cover every codec, data pages v1 and v2,
dictionaries on and off, each encoding pyarrow writes, the page index on
and off, nullable columns, a `datasets` Image struct, a ClassLabel's names
in the `huggingface` metadata, and several row groups with several pages."""
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

ROWS = 300


def image(i):
    return bytes((i * 7 + j * 13) % 256 for j in range(i % 57 + 1))


def table():
    nulls = [i % 7 == 3 for i in range(ROWS)]
    t = pa.table({
        "label": pa.array([i % 10 for i in range(ROWS)], pa.int64()),
        "small": pa.array([None if i % 5 == 1 else (i * 37) % 1000 - 500 for i in range(ROWS)],
                          pa.int32()),
        "flag": pa.array([i % 3 == 0 for i in range(ROWS)], pa.bool_()),
        "image": pa.array([image(i) for i in range(ROWS)], pa.binary()),
        "caption": pa.array([None if nulls[i] else "https://example.org/img/%05d/%s.jpg"
                             % (i // 4, "x" * (i % 9)) for i in range(ROWS)], pa.string()),
        "fixed": pa.array([bytes([i % 256, 1, 2, 3]) for i in range(ROWS)], pa.binary(4)),
        "img": pa.array([None if i % 11 == 5 else
                         {"bytes": None if i % 13 == 2 else image(i + 1),
                          "path": None if i % 4 == 0 else "p%d.png" % i}
                         for i in range(ROWS)],
                        pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
    })
    # REQUIRED columns (no definition levels at all)
    t = t.append_column(pa.field("req", pa.binary(), nullable=False),
                        pa.array([image(i * 3) for i in range(ROWS)], pa.binary()))
    return t.append_column(pa.field("req_int", pa.int32(), nullable=False),
                           pa.array([(i * 7919) % 65536 - 30000 for i in range(ROWS)], pa.int32()))


def leaves(t):
    """(dotted path, list of python values) for every leaf of t."""
    out = []
    for name in t.column_names:
        col = t.column(name).to_pylist()
        if pa.types.is_struct(t.schema.field(name).type):
            for f in t.schema.field(name).type:
                out.append((name + "." + f.name, [None if v is None else v[f.name] for v in col]))
        else:
            out.append((name, col))
    return out


def cell(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "i:%d" % int(v)
    if isinstance(v, int):
        return "i:%d" % v
    if isinstance(v, str):
        v = v.encode()
    return "b:" + v.hex()


def write(outdir, name, t, **kw):
    kw.setdefault("row_group_size", 100)
    kw.setdefault("data_page_size", 512)
    pq.write_table(t, os.path.join(outdir, name + ".parquet"), **kw)
    with open(os.path.join(outdir, name + ".expect"), "w") as f:
        for path, vals in leaves(t):
            for i, v in enumerate(vals):
                f.write("%s\t%d\t%s\n" % (path, i, cell(v)))


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    t = table()
    for codec in ["none", "snappy", "zstd", "gzip", "lz4", "brotli"]:
        write(outdir, "codec_" + codec, t, compression=codec)
    for v in ["1.0", "2.0"]:
        for d in [True, False]:
            for idx in [True, False]:
                write(outdir, "page%s_dict%d_index%d" % (v[0], d, idx), t, compression="snappy",
                      data_page_version=v, use_dictionary=d, write_page_index=idx)
    enc = {"label": "DELTA_BINARY_PACKED", "small": "DELTA_BINARY_PACKED",
           "image": "DELTA_LENGTH_BYTE_ARRAY", "caption": "DELTA_BYTE_ARRAY",
           "fixed": "DELTA_BYTE_ARRAY", "flag": "RLE", "img.bytes": "DELTA_LENGTH_BYTE_ARRAY",
           "img.path": "DELTA_BYTE_ARRAY", "req": "DELTA_BYTE_ARRAY",
           "req_int": "DELTA_BINARY_PACKED"}
    for v in ["1.0", "2.0"]:
        write(outdir, "delta_page" + v[0], t, compression="zstd", use_dictionary=False,
              column_encoding=enc, data_page_version=v)
    write(outdir, "plain_uncompressed", t, compression="none", use_dictionary=False,
          column_encoding={k: "PLAIN" for k in enc})
    # the `datasets` layout: an Image struct and a ClassLabel, its names in
    # the schema's metadata under "huggingface"
    features = {"info": {"features": {
        "img": {"_type": "Image"},
        "label": {"names": ["cat", "dog", "bird", "fish", "frog", "horse", "ship", "truck",
                            "plane", "car"], "_type": "ClassLabel"}}}}
    hf = t.select(["img", "label"]).replace_schema_metadata(
        {"huggingface": json.dumps(features)})
    write(outdir, "hf_image", hf, compression="snappy", row_group_size=64)
    write(outdir, "one_group", t, compression="snappy", row_group_size=ROWS,
          data_page_size=1 << 20)


if __name__ == "__main__":
    main()
