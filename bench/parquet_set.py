"""parquet_set.py PHOTOS OUT.parquet [--codec snappy|library] - an ImageNet-like Parquet file written
by the Hugging Face `datasets` library, for bench/parquet.sh: the JPEGs of
an ImageFolder tree PHOTOS (PHOTOS/CLASS/NAME.jpg) as the `Image` feature
(struct<bytes, path>, each file's bytes as they are, not decoded) and their
folder as a `ClassLabel`, in the tree's name order (as
load_dataset("imagefolder") lists it), written with Dataset.to_parquet and
the library's defaults: its row groups (sized by its
get_writer_batch_size_*: about 100 MB of rows uncompressed for images),
its page options (PLAIN, no dictionary for the image, the page index).
Codec: datasets 5.x writes the columns of media it embeds uncompressed
(arrow_writer.get_parquet_column_options: "none" for Image, snappy for
the rest: --codec library); earlier versions, and most image sets on the
Hub, have snappy on every column, pyarrow's default: --codec snappy (the
default) keeps the library's other options and makes every column snappy,
as those. Run with scripts/datasets_venv.sh's python. Prints one
JSON line: rows, bytes, row groups, rows per group, the codec, the
datasets and pyarrow versions."""
import json
import os
import sys

import datasets
import pyarrow
import pyarrow.parquet as pq


def snappy_everywhere():
    """datasets' per-column options, with snappy for every column."""
    import datasets.io.parquet as dsp
    library = dsp.get_parquet_column_options

    def options(features, schema):
        o = library(features, schema)
        o["compression"] = {leaf: "snappy" for leaf in o["compression"]}
        return o
    dsp.get_parquet_column_options = options


def main(photos, out, codec):
    if codec == "snappy":
        snappy_everywhere()
    classes = sorted(d for d in os.listdir(photos) if os.path.isdir(os.path.join(photos, d)))
    images, labels = [], []
    for label, c in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(photos, c))):
            with open(os.path.join(photos, c, name), "rb") as f:
                images.append({"bytes": f.read(), "path": name})
            labels.append(label)
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=classes)})
    ds = datasets.Dataset.from_dict({"image": images, "label": labels}, features=features)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    ds.to_parquet(out)
    md = pq.ParquetFile(out).metadata
    print(json.dumps({
        "rows": md.num_rows, "bytes": os.path.getsize(out), "row_groups": md.num_row_groups,
        "rows_per_group": [md.row_group(g).num_rows for g in range(md.num_row_groups)],
        "codecs": sorted({md.row_group(0).column(c).compression for c in range(md.num_columns)}),
        "image_codec": md.row_group(0).column(0).compression,
        "datasets": datasets.__version__, "pyarrow": pyarrow.__version__}))


if __name__ == "__main__":
    args = sys.argv[1:]
    codec = "snappy"
    if len(args) == 4 and args[2] == "--codec" and args[3] in ("snappy", "library"):
        codec = args[3]
        args = args[:2]
    if len(args) != 2:
        sys.exit(__doc__)
    main(args[0], args[1], codec)
