#!/usr/bin/python3
"""PyTorch peer for the small-file benchmark: a DataLoader that reads bytes.

A Dataset over a list of files whose __getitem__ returns the file's bytes
(open / read / close), batched by torch.utils.data.DataLoader (batch 64,
num_workers N, persistent workers, prefetch_factor 4) with a collate that
keeps the batch a list of bytes objects. Reports files/s in the main process.
Run with /usr/bin/python3 (Debian's python3-torch).

  torch_bytes.py --list LIST [--workers N] [--json]
"""
import argparse
import json
import os
import sys
import time


class Files:
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return f.read()


def keep(batch):
    return batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", required=True, help="one path per line")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with open(args.list) as f:
        paths = [line.rstrip("\n") for line in f if line.strip()]
    if not paths:
        print("torch_bytes: error: empty list", file=sys.stderr)
        return 1
    import torch
    from torch.utils.data import DataLoader
    torch.set_num_threads(1)
    kw = {"persistent_workers": True, "prefetch_factor": 4} if args.workers > 0 else {}
    loader = DataLoader(Files(paths), batch_size=args.batch, shuffle=True,
                        num_workers=args.workers, collate_fn=keep, **kw)
    files = nbytes = 0
    t0 = time.perf_counter()
    for batch in loader:
        files += len(batch)
        nbytes += sum(len(b) for b in batch)
    secs = time.perf_counter() - t0
    out = {"loader": "torch_bytes", "workers": args.workers, "files": files,
           "seconds": round(secs, 6), "files_per_s": round(files / secs, 1),
           "mb_per_s": round(nbytes / secs / 1e6, 2)}
    print(json.dumps(out) if args.json else
          "torch bytes workers=%d: %d files in %.3f s: %.1f files/s" %
          (args.workers, files, secs, files / secs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
