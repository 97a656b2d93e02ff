#!/usr/bin/env bash
# mutate_parquet.sh RINGFEED MUTATE_PARQUET [ARGS...] - the mutation harness
# on Parquet files written by the real writers (tests/fuzz/mutate_parquet.c),
# small JPEGs with labels, in two folders of one layout each (a source's
# files share their columns):
#   plain/    a binary `image` column, by pyarrow: page index, no dictionary,
#             snappy, a page or two a row; dictionary, zstd, data pages v2, no page
#             index (the headers scanned); dictionary, uncompressed (flips
#             land on the dictionary indices themselves), page index
#   datasets/ the `datasets` layout (the Image struct, a ClassLabel): by
#             Dataset.to_parquet, and by pyarrow with a dictionary, gzip,
#             data pages v2, no page index
#   others/   DuckDB (PARQUET_VERSION V2: DELTA_LENGTH_BYTE_ARRAY) and Polars
#             (a dictionary, statistics), both uncompressed (flips land on
#             lengths and indices), where the python has them
# then `MUTATE_PARQUET --files DIR ARGS...` damages and checks each folder.
# Skips (77) saying why without the writers' venv (scripts/parquet_venv.sh;
# RINGFEED_PARQUET_PYTHON names another python).
set -euo pipefail
RF=$1 MUTATE=$2
shift 2
PY=${RINGFEED_PARQUET_PYTHON:-/root/.cache/ringfeed-parquet-venv/bin/python}
if ! "$PY" -c 'import pyarrow.parquet, datasets' 2> /dev/null; then
	echo "mutate_parquet: no python with pyarrow and datasets at $PY (scripts/parquet_venv.sh makes it): skipped"
	echo "0 passed, 0 failed, 1 skipped"
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-mutate-parquet.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$RF" gen --out "$T/jpg" --count 24 --classes 3 --quality 40 --threads 1 > /dev/null
mkdir -p "$T/plain" "$T/datasets" "$T/others"
"$PY" - "$T/jpg" "$T" << 'PY'
import os, sys
import pyarrow as pa, pyarrow.parquet as pq
src, out = sys.argv[1], sys.argv[2]
classes = sorted(os.listdir(src))
rows = [(open(os.path.join(src, c, f), "rb").read(), ci, f)
        for ci, c in enumerate(classes) for f in sorted(os.listdir(os.path.join(src, c)))]
t = pa.table({"label": pa.array([r[1] for r in rows], pa.int64()),
              "image": pa.array([r[0] for r in rows], pa.binary())})
pq.write_table(t, os.path.join(out, "plain", "a-index.parquet"), compression="snappy",
               use_dictionary=False, data_page_size=2048, row_group_size=10, write_batch_size=2,
               write_page_index=True)
pq.write_table(t, os.path.join(out, "plain", "b-dict.parquet"), compression="zstd",
               use_dictionary=True, data_page_version="2.0", data_page_size=4096,
               row_group_size=9, write_batch_size=3)
pq.write_table(t, os.path.join(out, "plain", "c-dict-none.parquet"), compression="none",
               use_dictionary=True, data_page_size=1024, row_group_size=12,
               write_batch_size=4, write_page_index=True)
import datasets
from datasets import ClassLabel, Dataset, Features, Image
datasets.disable_progress_bars()
ds = Dataset.from_dict({"image": [{"bytes": r[0], "path": r[2]} for r in rows],
                        "label": [r[1] for r in rows]},
                       features=Features({"image": Image(), "label": ClassLabel(names=classes)}))
ds.to_parquet(os.path.join(out, "datasets", "a-to-parquet.parquet"))
pq.write_table(ds.data.table, os.path.join(out, "datasets", "b-dict.parquet"), compression="gzip",
               use_dictionary=True, data_page_version="2.0", data_page_size=4096,
               row_group_size=8, write_batch_size=2)
try: # the other writers, where this python has them
    import duckdb
    con = duckdb.connect()
    con.register("t", t)
    con.execute("COPY t TO '%s' (FORMAT parquet, COMPRESSION uncompressed, PARQUET_VERSION V2)"
                % os.path.join(out, "others", "a-duckdb-v2.parquet"))
except ImportError:
    print("mutate_parquet: no duckdb: no DuckDB file")
try:
    import polars as pl
    pl.from_arrow(t).write_parquet(os.path.join(out, "others", "b-polars.parquet"),
                                   compression="uncompressed", row_group_size=8,
                                   data_page_size=2048)
except ImportError:
    print("mutate_parquet: no polars: no Polars file")
PY
status=0
for set in plain datasets others; do
	[ -n "$(ls "$T/$set")" ] || continue
	${MUTATE_WRAP:-} "$MUTATE" --files "$T/$set" "$@" || status=1
done
exit $status
