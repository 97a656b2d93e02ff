"""datasets_loop.py - the Hugging Face `datasets` library's own training
loop over Parquet, as its documentation writes it, for bench/parquet.sh:
load_dataset("parquet", data_files=FILES, split="train") (which converts the
files into the library's Arrow cache once, then memory-maps it: later runs
read the cache, not the Parquet), .with_transform(torchvision
RandomResizedCrop(crop) + RandomHorizontalFlip + ToTensor on each image,
decoded by the Image feature with PIL, converted to RGB), a torch
DataLoader (shuffle, --workers processes, default the cores, --batch 64).
Run with scripts/datasets_venv.sh's python (Debian's torch 1.13 under
it).

Timing as bench/peers/torch_imagefolder.py's: seconds from creating the
first epoch's iterator (workers start) to the last batch of the last epoch;
startup_s to the first batch; load_s the load_dataset call (the cache made
on a first run). One JSON line on stdout with --json."""
import argparse
import json
import os
import sys
import time

from timed_loop import run_epochs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", required=True, nargs="+")
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--crop", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    import datasets
    import torch
    from torchvision import transforms as T
    datasets.disable_progress_bars()
    t0 = time.perf_counter()
    ds = datasets.load_dataset("parquet", data_files=a.files, split="train", cache_dir=a.cache_dir)
    load_s = time.perf_counter() - t0
    tf = T.Compose([T.RandomResizedCrop(a.crop), T.RandomHorizontalFlip(), T.ToTensor()])

    def transform(batch):
        return {"pixel_values": [tf(im.convert("RGB")) for im in batch["image"]],
                "label": batch["label"]}

    def collate(rows):
        return (torch.stack([r["pixel_values"] for r in rows]),
                torch.tensor([r["label"] for r in rows]))

    ds = ds.with_transform(transform)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                     collate_fn=collate, persistent_workers=a.workers > 0)
    run = run_epochs(dl, a.epochs)
    cache = sum(os.path.getsize(f["filename"]) for f in ds.cache_files)
    out = {"loader": "datasets", "workers": a.workers, **run,
           "load_s": round(load_s, 3), "arrow_cache_bytes": cache,
           "datasets": datasets.__version__}
    print(json.dumps(out) if a.json else "datasets: %d samples in %.2f s, %.1f samples/s" % (
        run["samples"], run["seconds"], run["samples_per_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
