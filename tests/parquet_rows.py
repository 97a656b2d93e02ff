"""parquet_rows.py OUTDIR - writes the Parquet files tests/test_parquet_access.c
reads, with the real pyarrow (the venv scripts/parquet_venv.sh makes): rows
whose `label` is the row's number over all the files (0, 1, ... in file
order) and whose `blob` is binary bytes of 1,200 to 5,200 bytes drawn from a
seeded generator (read raw: no image), so that every row delivered is told
by its label and its bytes.

  seq/part-K.parquet  4 files of 150, 210, 90 and 250 rows, uncompressed,
                      no dictionary, pages of about 5 rows (data_page_size
                      16 KiB), row groups of 64 rows, page index written
  pages.parquet       the 700 rows of those in one file, pages of about 20
                      rows (64 KiB), one row group: random access reads a
                      row's page
  bigpages.parquet    the same, pages of about 125 rows (400 KiB): pages near
                      a chunk's size
OUTDIR/rows.txt: the rows' count."""
import os
import random
import sys

import pyarrow as pa
import pyarrow.parquet as pq

COUNTS = [150, 210, 90, 250]


def table(first, n, rng):
    blobs = [rng.randbytes(rng.randint(1200, 5200)) for _ in range(n)]
    return pa.table({"label": pa.array(range(first, first + n), pa.int64()),
                     "blob": pa.array(blobs, pa.binary())})


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "seq"), exist_ok=True)
    rng = random.Random(39)
    parts, first = [], 0
    for k, n in enumerate(COUNTS):
        t = table(first, n, rng)
        parts.append(t)
        first += n
        pq.write_table(t, os.path.join(out, "seq", "part-%d.parquet" % k), compression="none",
                       use_dictionary=False, data_page_size=16 << 10, row_group_size=64, write_batch_size=4,
                       write_page_index=True)
    pq.write_table(pa.concat_tables(parts), os.path.join(out, "pages.parquet"),
                   compression="none", use_dictionary=False, data_page_size=64 << 10, write_batch_size=4,
                   row_group_size=1 << 20)
    pq.write_table(pa.concat_tables(parts), os.path.join(out, "bigpages.parquet"),
                   compression="none", use_dictionary=False, data_page_size=400 << 10,
                   write_batch_size=4, row_group_size=1 << 20)
    with open(os.path.join(out, "rows.txt"), "w") as f:
        f.write("%d\n" % first)


if __name__ == "__main__":
    main()
