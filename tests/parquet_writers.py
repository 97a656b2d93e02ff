"""parquet_writers.py TREE OUTDIR WRITER - writes, with the real writer
WRITER (the venv scripts/parquet_venv.sh makes), the Parquet files
tests/test_parquet_source.c's `parquet_writers` tests read, from an
ImageFolder tree of images (TREE/CLASS/NAME.jpg, classes labelled in name
order): one row an image, its encoded bytes in the image column, its class
number in `label`. OUTDIR/rows.txt says which image each row is (line N:
row N's path relative to TREE); every file below holds all the rows in that
order, except a layout cut into shards, whose file K holds the rows
`datasets`' contiguous shards give it. OUTDIR/files.txt lists the files
written (paths relative to OUTDIR, a folder for a sharded layout), each
with what it is. WRITER is one of:

  pyarrow   the grid tests/parquet_images.py leaves out at this level:
            data pages v1 and v2 x dictionary on and off x page index on
            and off; a row group a row (tiny) and one row group for all
            (huge, 1 MiB pages); the image column REQUIRED (no definition
            levels)
  datasets  a Dataset with the `Image` and `ClassLabel` features, saved
            with `Dataset.to_parquet` (images given as bytes), and as
            `push_to_hub` lays a split out in a repo (images given as paths,
            their bytes embedded as push_to_hub embeds them): the library's
            own steps, written to a local folder instead of uploaded:
            data/train-0000K-of-0000N.parquet
  duckdb    `COPY (SELECT ...) TO 'x.parquet' (FORMAT parquet, COMPRESSION
            C)` for each codec DuckDB writes; PARQUET_VERSION V2 (its
            binary column DELTA_LENGTH_BYTE_ARRAY). (DuckDB's row groups are
            at least its vector size, 2,048 rows: more rows than the test's.)
  polars    `DataFrame.write_parquet` with each compression Polars writes,
            statistics off, on and "full", small row groups and pages

Exits 3 saying why when WRITER cannot be imported (the test skips)."""
import os
import sys


def rows_of(tree):
    classes = sorted(d for d in os.listdir(tree) if os.path.isdir(os.path.join(tree, d)))
    rows = []
    for label, c in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(tree, c))):
            with open(os.path.join(tree, c, name), "rb") as f:
                rows.append((c + "/" + name, f.read(), label))
    return classes, rows


def by_pyarrow(tree, out, classes, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq
    t = pa.table({"label": pa.array([r[2] for r in rows], pa.int64()),
                  "image": pa.array([r[1] for r in rows], pa.binary())})
    made = []
    for v in ["1.0", "2.0"]:
        for d in [True, False]:
            for idx in [True, False]:
                name = "page%s_dict%d_index%d.parquet" % (v[0], d, idx)
                pq.write_table(t, os.path.join(out, name), compression="snappy",
                               data_page_version=v, use_dictionary=d, write_page_index=idx,
                               row_group_size=7, data_page_size=4096)
                made.append((name, "pages v%s, dictionary %s, page index %s" %
                             (v[0], ["off", "on"][d], ["off", "on"][idx])))
    pq.write_table(t, os.path.join(out, "tiny_groups.parquet"), row_group_size=1)
    made.append(("tiny_groups.parquet", "a row group a row"))
    pq.write_table(t, os.path.join(out, "huge_group.parquet"), row_group_size=1 << 20,
                   data_page_size=1 << 20)
    made.append(("huge_group.parquet", "one row group, 1 MiB pages"))
    req = pa.table([t.column("label"), t.column("image")],
                   schema=pa.schema([pa.field("label", pa.int64()),
                                     pa.field("image", pa.binary(), nullable=False)]))
    pq.write_table(req, os.path.join(out, "required.parquet"), data_page_size=4096)
    made.append(("required.parquet", "the image column REQUIRED"))
    return made


def by_datasets(tree, out, classes, rows):
    import datasets
    from datasets import ClassLabel, Dataset, Features, Image
    from datasets.arrow_writer import (get_writer_batch_size_from_data_size,
                                       get_writer_batch_size_from_features)
    from datasets.table import embed_table_storage
    datasets.disable_progress_bars()
    features = Features({"image": Image(), "label": ClassLabel(names=classes)})
    made = []
    ds = Dataset.from_dict({"image": [{"bytes": r[1], "path": os.path.basename(r[0])} for r in rows],
                            "label": [r[2] for r in rows]}, features=features)
    ds.to_parquet(os.path.join(out, "to_parquet.parquet"))
    made.append(("to_parquet.parquet", "Dataset.to_parquet, images as bytes"))
    # push_to_hub's layout (Dataset._push_parquet_shards_to_hub{,_single} in
    # datasets 5): the split cut into num_shards contiguous shards, each with
    # its external files' bytes embedded (embed_table_storage, in a map of
    # writer_batch_size rows) and written by shard.to_parquet(batch_size=
    # writer_batch_size) as data/{split}-{index:05d}-of-{num_shards:05d}.parquet;
    # there they are uploaded, here they stay
    ds = Dataset.from_dict({"image": [os.path.join(tree, r[0]) for r in rows],
                            "label": [r[2] for r in rows]}, features=features)
    num_shards = 3
    batch = (get_writer_batch_size_from_features(ds.features) or
             get_writer_batch_size_from_data_size(len(ds), ds._estimate_nbytes()))
    os.makedirs(os.path.join(out, "hub", "data"), exist_ok=True)
    for index in range(num_shards):
        shard = ds.shard(num_shards=num_shards, index=index, contiguous=True)
        fmt = shard.format
        shard = shard.with_format("arrow").map(embed_table_storage, batched=True,
                                               batch_size=batch, keep_in_memory=True)
        shard = shard.with_format(**fmt)
        shard.to_parquet(os.path.join(out, "hub", "data", "train-%05d-of-%05d.parquet"
                                      % (index, num_shards)), batch_size=batch)
    made.append(("hub/data", "push_to_hub's layout, %d shards, images as paths embedded"
                 % num_shards))
    return made


def by_duckdb(tree, out, classes, rows):
    import duckdb
    import pyarrow as pa
    t = pa.table({"label": pa.array([r[2] for r in rows], pa.int64()),
                  "image": pa.array([r[1] for r in rows], pa.binary()),
                  "i": pa.array(range(len(rows)), pa.int64())})
    con = duckdb.connect()
    con.register("t", t)
    made = []

    def copy(name, opts, what):
        con.execute("COPY (SELECT label, image FROM t ORDER BY i) TO '%s' (FORMAT parquet, %s)"
                    % (os.path.join(out, name), opts))
        made.append((name, what))
    for c in ["uncompressed", "snappy", "gzip", "zstd", "lz4_raw", "brotli"]:
        copy("codec_%s.parquet" % c, "COMPRESSION %s" % c, "COMPRESSION " + c)
    copy("v2.parquet", "COMPRESSION zstd, PARQUET_VERSION V2", "PARQUET_VERSION V2")
    return made


def by_polars(tree, out, classes, rows):
    import polars as pl
    df = pl.DataFrame({"label": pl.Series([r[2] for r in rows], dtype=pl.Int64),
                       "image": pl.Series([r[1] for r in rows], dtype=pl.Binary)})
    made = []
    for c in ["uncompressed", "snappy", "gzip", "lz4", "zstd", "brotli"]:
        df.write_parquet(os.path.join(out, "codec_%s.parquet" % c), compression=c)
        made.append(("codec_%s.parquet" % c, "compression=" + c))
    for s in [False, True, "full"]:
        name = "statistics_%s.parquet" % str(s).lower()
        df.write_parquet(os.path.join(out, name), statistics=s, row_group_size=4,
                         data_page_size=4096)
        made.append((name, "statistics=%r, row_group_size=4, data_page_size=4096" % (s,)))
    return made


WRITERS = {"pyarrow": by_pyarrow, "datasets": by_datasets, "duckdb": by_duckdb,
           "polars": by_polars}


def main():
    tree, out, writer = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        __import__(writer)
    except ImportError as e:
        print("parquet_writers.py: no %s in %s (%s; scripts/parquet_venv.sh installs it)"
              % (writer, sys.executable, e))
        sys.exit(3)
    os.makedirs(out, exist_ok=True)
    classes, rows = rows_of(tree)
    with open(os.path.join(out, "rows.txt"), "w") as f:
        f.writelines(r[0] + "\n" for r in rows)
    made = WRITERS[writer](tree, out, classes, rows)
    with open(os.path.join(out, "files.txt"), "w") as f:
        f.writelines("%s\t%s\n" % m for m in made)


if __name__ == "__main__":
    main()
