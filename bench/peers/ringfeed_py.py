#!/usr/bin/python3
"""ringfeed's Python package timed the way torch_imagefolder.py times the
DataLoader: a Python loop that only touches each batch (reads its shape).
Output uint8 CHW (as PILToTensor) or, with --output float16, float16 CHW
normalized with ImageNet's mean and std (as ToTensor + Normalize + a cast).

With --fields txt[,json...] (image-caption shards, bench/imagetext.sh) the
loader is made with fields=(...): each batch b still unpacks as (images,
labels) and b["txt"] is a list of str; the loop touches every one (the sum
of their lengths, field_chars), so that each caption is really decoded.

Needs the package importable (PYTHONPATH=build/python, or pip-installed) and
torch for that interpreter. Prints one JSON object with --json:
  {"loader": "ringfeed-python", "threads": N, "samples": ..., "seconds": ...,
   "samples_per_s": ..., "batches": ...}
(with "steady_samples_per_s" when --epochs > 1: the epochs after the first;
with --fields, "fields" and "field_chars").
seconds runs from creating the loader to the last batch (index walk and
thread start-up included, as the C bench includes its create).
"""

import argparse
import json
import sys
import time

# The two outputs bench/python.sh compares, as torch_imagefolder.py makes them.
OUTPUTS = {"uint8": dict(dtype="uint8"),
           "float16": dict(dtype="float16", mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", required=True)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--resize", type=int, default=256)
    p.add_argument("--crop", type=int, default=224)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--transform", choices=("center", "rrc"), default="center")
    p.add_argument("--flip", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fields", default="",
                   help="comma-separated sample fields to load beside the images (e.g. txt)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--output", choices=("uint8", "float16"), default="uint8",
                   help="uint8 CHW, or float16 CHW normalized with ImageNet's mean and std")
    p.add_argument("--hold", choices=("gc", "next"), default=None,
                   help="the package's hold= (default: the package's default)")
    args = p.parse_args(argv)

    import torch  # noqa: F401  (imported before the clock starts, as the peer does)
    import ringfeed

    fields = tuple(f for f in args.fields.split(",") if f)

    start = time.perf_counter()
    loader = ringfeed.Loader(args.source, batch_size=args.batch, threads=args.threads,
                             resize=args.resize, crop=args.crop, seed=args.seed,
                             random_resized_crop=args.transform == "rrc", flip=args.flip,
                             epochs=args.epochs, layout="chw", **OUTPUTS[args.output],
                             **({"hold": args.hold} if args.hold else {}),
                             **({"fields": fields} if fields else {}))
    samples = batches = chars = first_epoch_samples = 0
    t_epoch1 = None
    for e in range(args.epochs):
        if fields:
            for b in loader:
                images, _labels = b[0], b[1]
                samples += images.shape[0]
                batches += 1
                for f in fields:
                    chars += sum(len(s) for s in b[f])   # a list of str
        else:
            for images, _labels in loader:
                samples += images.shape[0]
                batches += 1
        if e == 0:
            t_epoch1 = time.perf_counter()
            first_epoch_samples = samples
    seconds = time.perf_counter() - start
    loader.close()
    result = {"loader": "ringfeed-python", "hold": args.hold or "default", "threads": args.threads,
              "transform": args.transform, "output": args.output, "samples": samples,
              "seconds": round(seconds, 6), "samples_per_s": round(samples / seconds, 3),
              "batches": batches}
    if args.epochs > 1:
        result["steady_samples_per_s"] = round((samples - first_epoch_samples) /
                                               (start + seconds - t_epoch1), 3)
    if fields:
        result["fields"] = list(fields)
        result["field_chars"] = chars
    print(json.dumps(result) if args.json else
          f"ringfeed-python: {samples} samples in {seconds:.2f} s = {samples / seconds:.0f}/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
