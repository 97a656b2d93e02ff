#!/usr/bin/python3
"""WebDataset peer for ringfeed's shard benchmark (bench/shards.sh).

Reads tar shards with the PyPI `webdataset` package the way its README
does: WebDataset(urls, shardshuffle=100) -> shuffle(buffer) -> decode("pil")
-> to_tuple("jpg", "cls") -> Resize(resize) + CenterCrop(crop) +
PILToTensor() (uint8 CHW, the transform ringfeed's bench applies), batched
by torch.utils.data.DataLoader(num_workers=N), and reports how many images
per second arrive in the main process.

Image-caption shards (bench/imagetext.sh): --image "jpg;png;webp" takes
whichever of those a sample has; --text txt gives the caption (decoded to
str by webdataset, collated as a list of str, every one touched in the main
process: field_chars) in place of the label, the images then decoded with
"pilrgb" (RGBA and palette PNGs to RGB) and only the image and text members
decoded (decode(only=...)); --transform rrc is RandomResizedCrop(crop) +
RandomHorizontalFlip(flip) + PILToTensor() (torchvision's defaults: scale
0.08-1, ratio 3/4-4/3).

Shards over http (bench/remote.sh): --shards takes a brace pattern of URLs
('http://HOST:PORT/dir/shard-{000000..000009}.tar') as it takes one of
paths; webdataset expands it and reads each URL through a `curl` pipe (its
gopen for http), each DataLoader worker its share of the shards.

Run it with Debian's interpreter, /usr/bin/python3 (python3-torch and
python3-torchvision are installed for it; webdataset with
`/usr/bin/python3 -m pip install --break-system-packages webdataset`).

Timing: startup_s from creating the first epoch's iterator to its first
batch; seconds from there to the last batch of the last epoch (startup
included), as bench/peers/torch_imagefolder.py times. With --epochs > 1 the
steady rate of the epochs after the first is reported too (workers and
shard lists are set up again each epoch, as webdataset does).

Output: a short line, or with --json one JSON object:
  {"loader": "webdataset", "workers": N, "samples": ..., "seconds": ...,
   "samples_per_s": ..., "steady_samples_per_s": ..., "startup_s": ...}
(and "field_chars", the captions' characters, with --text)
"""

import argparse
import glob
import json
import os
import sys
import time


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", required=True,
                   help="a folder of *.tar, or a brace pattern (paths or http URLs)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--resize", type=int, default=256)
    p.add_argument("--crop", type=int, default=224)
    p.add_argument("--shuffle", type=int, default=1000,
                   help="shuffle buffer (samples; 0 = none)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--image", default="jpg",
                   help="the image member's extension(s), ';' between alternatives")
    p.add_argument("--text", default=None,
                   help="a text member (e.g. txt) yielded as str in place of the label")
    p.add_argument("--transform", choices=("center", "rrc"), default="center",
                   help="Resize + CenterCrop, or RandomResizedCrop(crop)")
    p.add_argument("--flip", type=float, default=0.0,
                   help="RandomHorizontalFlip probability (0 = none)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)

    import torch
    import webdataset as wds
    from torchvision import transforms

    if os.path.isdir(a.shards):
        urls = sorted(glob.glob(os.path.join(a.shards, "*.tar")))
    else:
        urls = a.shards
    if not urls:
        print("webdataset_loader: no shards in %s" % a.shards, file=sys.stderr)
        return 1
    if a.transform == "rrc":
        steps = [transforms.RandomResizedCrop(a.crop)]
    else:
        steps = [transforms.Resize(a.resize), transforms.CenterCrop(a.crop)]
    if a.flip > 0:
        steps.append(transforms.RandomHorizontalFlip(a.flip))
    tf = transforms.Compose(steps + [transforms.PILToTensor()])
    # shardshuffle: a buffer of shards (webdataset 1.0 wants a number)
    ds = wds.WebDataset(urls, shardshuffle=100, empty_check=False)
    if a.shuffle:
        ds = ds.shuffle(a.shuffle)
    if a.text:
        only = a.image.split(";") + [a.text]
        ds = ds.decode("pilrgb", only=only).to_tuple(a.image, a.text).map_tuple(tf, lambda c: c)
    else:
        ds = ds.decode("pil").to_tuple(a.image, "cls").map_tuple(tf, lambda c: c)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.workers)

    samples = 0
    chars = 0
    first_epoch_samples = 0
    t0 = time.perf_counter()
    startup = None
    t_epoch1 = None
    for e in range(a.epochs):
        for x, y in dl:
            if startup is None:
                startup = time.perf_counter() - t0
            samples += x.shape[0]
            if a.text:
                chars += sum(len(c) for c in y)   # a list of str
        if e == 0:
            t_epoch1 = time.perf_counter()
            first_epoch_samples = samples
    dt = time.perf_counter() - t0
    out = {"loader": "webdataset", "workers": a.workers, "samples": samples,
           "seconds": dt, "samples_per_s": samples / dt, "startup_s": startup or 0.0,
           "shards": len(urls) if isinstance(urls, list) else urls}
    if a.text:
        out["field_chars"] = chars
    if a.epochs > 1:
        out["steady_samples_per_s"] = (samples - first_epoch_samples) / (time.perf_counter() - t_epoch1)
    if a.json:
        print(json.dumps(out))
    else:
        print("webdataset: %d images in %.2f s: %.0f images/s (%d workers)" %
              (samples, dt, out["samples_per_s"], a.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
