#!/usr/bin/env python3
"""pixels.py - how far ringfeed's Resize 256 + CenterCrop 224 (uint8 HWC) is
from torchvision's on real photographs: each file opened with PIL
(.convert("RGB"), as ImageFolder's loader), then
torchvision.transforms.Resize(256) + CenterCrop(224) (PIL backend, its
default antialias: PIL's bilinear filter, widened on every downscale).

Three sets from bench/gpu/photos.py (scikit-image's colour photographs):
  photos  COUNT (500) cut to about 500x375 (ImageNet's typical size; its
          defaults: 5% progressive or gray);
  mid     MID (500) with photos.py --size 600,700 --grain 2: shorter sides
          of about 380 to 600 pixels, across 512, where the DCT scale 1/2 is
          first possible (a window of 448 decoded at 224: no shrink left);
  large   LARGE (200) with photos.py --size 700,1000,1400,2000,2800 --grain 2:
          longer sides of 595 to 3220 pixels (shorter sides 446 to 2415,
          shrinks of 1.7x to 9.4x), enlarged from the sources and given
          sensor-like grain, so that the DCT scales 1/2, 1/4 and 1/8 occur.
--seed S (default 0) draws other photographs (photos.py --seed; folders
named -sS): held-out sets, not those the filter was tuned on (seed 0).
Each set is loaded twice, with ringfeed's DCT-scaled decode on (the default)
and off (no_scaled_decode=1). Printed per set, decode and DCT scale (the one
ringfeed picks for the photo's size, rule of rfi_denom_for_window, whether or
not it is used in the run): photos, the mean absolute difference over all
values (0-255, each channel value counts), the worst photo's mean and its
largest single difference; then one JSON line with everything.

  PYTHONPATH=build/python /usr/bin/python3 bench/pixels.py [--data DIR]
      [--count 500] [--mid 500] [--large 200] [--seed 0] [--threads 2] [--json FILE]

(bench/pixels.sh installs what it needs and runs it on a build folder.)
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESIZE, CROP = 256, 224
SHRINK_LEFT = 1.25  # RF_SCALED_SHRINK_LEFT (resample.h); 1.0 before issue 38


def denom_for(w, h):
    """rfi_denom_for_window for Resize(RESIZE) + CenterCrop(CROP) (window.c):
    the largest of 8, 4, 2 that keeps the window's shorter side at 1/d
    >= SHRINK_LEFT * CROP."""
    if w <= h:
        rw, rh = RESIZE, RESIZE * h // w
    else:
        rw, rh = RESIZE * w // h, RESIZE
    m = min(CROP * w / rw, CROP * h / rh)
    for d in (8, 4, 2):
        if m / d >= SHRINK_LEFT * CROP:
            return d
    return 1


def make_set(root, count, extra):
    if os.path.isdir(root):
        return
    subprocess.run([sys.executable, os.path.join(HERE, "gpu", "photos.py"), "--out", root,
                    "--count", str(count), "--classes", "10"] + extra, check=True)


def references(root):
    """torchvision's pixels of every sample, in ImageFolder order (ringfeed's
    sample ids), with the file's path and size."""
    import numpy as np
    from PIL import Image
    from torchvision import datasets, transforms
    t = transforms.Compose([transforms.Resize(RESIZE), transforms.CenterCrop(CROP)])
    out = []
    for path, _ in datasets.ImageFolder(root).samples:
        with Image.open(path) as im:
            size = im.size
            ref = np.asarray(t(im.convert("RGB")), dtype=np.int16)
        out.append((path, size, ref))
    return out


def compare(root, refs, scaled, threads):
    """Per-sample (mean, max) absolute difference, by sample id."""
    import numpy as np
    import ringfeed
    diffs = [None] * len(refs)
    with ringfeed.Loader(root, batch_size=50, resize=RESIZE, crop=CROP, dtype="uint8",
                         layout="hwc", shuffle=0, threads=threads, with_ids=True,
                         no_scaled_decode=0 if scaled else 1, copy=True) as loader:
        for images, _, ids in loader:
            a = images.numpy().astype(np.int16)
            for k, i in enumerate(ids.tolist()):
                d = np.abs(a[k] - refs[i][2])
                diffs[i] = (float(d.mean()), int(d.max()))
    assert all(d is not None for d in diffs), "every sample once"
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="/tmp/ringfeed-pixels")
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--mid", type=int, default=500)
    ap.add_argument("--large", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="write the JSON line here instead of stdout")
    a = ap.parse_args()
    import ringfeed
    # seed 0 keeps the folder names (and the sets) made before --seed existed
    tail = "-s%d" % a.seed if a.seed else ""
    seed = ["--seed", str(a.seed)] if a.seed else []
    sets = [("photos", os.path.join(a.data, "photos-%d%s" % (a.count, tail)), a.count, seed),
            ("mid", os.path.join(a.data, "mid-%d%s" % (a.mid, tail)), a.mid,
             seed + ["--size", "600,700", "--grain", "2"]),
            ("large", os.path.join(a.data, "large-%d%s" % (a.large, tail)), a.large,
             seed + ["--size", "700,1000,1400,2000,2800", "--grain", "2"])]
    for name, root, count, extra in sets:
        if count > 0:
            make_set(root, count, extra)
    rows = []
    print("ringfeed (%s) vs torchvision Resize(%d) + CenterCrop(%d) on PIL images"
          % (os.path.dirname(ringfeed.__file__), RESIZE, CROP))
    print("%-7s %-6s %-5s %6s %11s %9s %8s  %s" % ("set", "decode", "scale", "photos", "mean |d|",
                                                   "worst", "max |d|", "worst photo (w x h)"))
    for name, root, count, extra in sets:
        if count <= 0:
            continue
        refs = references(root)
        sizes = [s for _, s, _ in refs]
        lo, hi = min(min(s) for s in sizes), max(min(s) for s in sizes)
        for scaled in (True, False):
            diffs = compare(root, refs, scaled, a.threads)
            for d in (0, 1, 2, 4, 8):
                idx = [i for i, s in enumerate(sizes) if d == 0 or denom_for(*s) == d]
                if not idx:
                    continue
                w = max(idx, key=lambda i: diffs[i][0])
                row = dict(set=name, scaled_decode=scaled, scale="all" if d == 0 else "1/%d" % d,
                           photos=len(idx), mean=sum(diffs[i][0] for i in idx) / len(idx),
                           worst=diffs[w][0], max=max(diffs[i][1] for i in idx),
                           worst_photo=os.path.relpath(refs[w][0], root), worst_size=sizes[w],
                           shorter_sides=[lo, hi])
                rows.append(row)
                print("%-7s %-6s %-5s %6d %11.3f %9.3f %8d  %s (%d x %d)"
                      % (name, "scaled" if scaled else "full", row["scale"].replace("1/1", "1"),
                         row["photos"], row["mean"], row["worst"], row["max"], row["worst_photo"],
                         *sizes[w]))
        print("%-7s shorter sides %d..%d pixels" % (name, lo, hi))
    line = json.dumps({"pixels": rows})
    if a.json:
        with open(a.json, "w") as f:
            f.write(line + "\n")
    else:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
