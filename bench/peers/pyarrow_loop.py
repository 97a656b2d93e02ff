"""pyarrow_loop.py - Parquet read the plain way, for bench/parquet.sh:
pyarrow.parquet.ParquetFile(...).iter_batches over the image and label
columns, each image's bytes (the `datasets` Image struct's `bytes`, or a
binary column) opened with PIL, converted to RGB, then torchvision
RandomResizedCrop(crop) + RandomHorizontalFlip + ToTensor, in a torch
IterableDataset under a DataLoader (--workers processes, default the cores,
--batch 64). Worker w of W reads the files front to back and takes record
batches (--record-batch 64 rows) k with k % W == w: every worker reads the
whole file (the columns' pages), each decodes its share; no shuffle beyond
that (iter_batches is sequential). Run with scripts/datasets_venv.sh's
python. Timing as bench/peers/datasets_loop.py's; one JSON line with
--json."""
import argparse
import io
import json
import os
import sys

from timed_loop import run_epochs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", required=True, nargs="+")
    ap.add_argument("--image", default="image")
    ap.add_argument("--label", default="label")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--record-batch", type=int, default=64)
    ap.add_argument("--crop", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    import pyarrow
    import pyarrow.parquet as pq
    import torch
    from PIL import Image
    from torchvision import transforms as T
    tf = T.Compose([T.RandomResizedCrop(a.crop), T.RandomHorizontalFlip(), T.ToTensor()])

    class Rows(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            w, nw = (info.id, info.num_workers) if info else (0, 1)
            k = 0
            for path in a.files:
                pf = pq.ParquetFile(path)
                for b in pf.iter_batches(batch_size=a.record_batch, columns=[a.image, a.label]):
                    k += 1
                    if (k - 1) % nw != w:
                        continue
                    col = b.column(0)
                    if pyarrow.types.is_struct(col.type):
                        col = col.field("bytes")
                    labels = b.column(1).to_pylist()
                    for j, v in enumerate(col.to_pylist()):
                        im = Image.open(io.BytesIO(v)).convert("RGB")
                        yield tf(im), labels[j]

    dl = torch.utils.data.DataLoader(Rows(), batch_size=a.batch, num_workers=a.workers,
                                     persistent_workers=a.workers > 0)
    run = run_epochs(dl, a.epochs)
    out = {"loader": "pyarrow", "workers": a.workers, **run, "pyarrow": pyarrow.__version__}
    print(json.dumps(out) if a.json else "pyarrow: %d samples in %.2f s, %.1f samples/s" % (
        run["samples"], run["seconds"], run["samples_per_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
