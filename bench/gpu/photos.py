#!/usr/bin/env python3
"""A set of real photographs for the GPU decode benchmark, made where there
is no network: the colour photographs that ship inside scikit-image
(skimage.data), each cut into many random crops around 500x375 (ImageNet's
typical size), flipped at random, saved with PIL as baseline JPEG 4:2:0 at
quality 75-95 in ImageFolder layout. A share (--odd) is saved the way some
files of real collections are: progressive, or grayscale; the GPU's engines
refuse those and the loader routes them to the CPU.

--size: the landscape width (a portrait's height) before the +-15% draw,
500 by default; several, comma-separated, are drawn from at random. Sizes
past the sources' (at most 741 pixels wide) are enlargements, smooth at the
pixel scale; --grain SIGMA adds sensor-like noise (per pixel, mostly
luminance, SIGMA in 0-255 units) after the resize to give them detail there.

  photos.py --out DIR [--count 1000] [--classes 10] [--odd 0.05] [--seed 0]
            [--size 500[,W...]] [--grain 0]
"""
import argparse, os, random, sys
from multiprocessing import Pool

# The colour photographs of skimage.data (not the micrographs, the deep
# field, the retina or the colour wheel: their statistics are not a camera's).
# stereo_motorcycle() returns a pair (and a disparity map): both views.
NAMES = ["astronaut", "coffee", "chelsea", "rocket", "stereo_motorcycle"]

def photos(n, data):
    img = getattr(data, n)()
    if n == "stereo_motorcycle":
        return [("motorcycle_left", img[0]), ("motorcycle_right", img[1])]
    return [(n, img)]

def sources():
    import numpy as np
    from skimage import data
    out = []
    for n in NAMES:
        try:
            imgs = photos(n, data)
        except Exception:  # not bundled with this version (would need a download)
            continue
        for n, img in imgs:
            if img.ndim == 3 and img.shape[2] >= 3 and min(img.shape[:2]) >= 256:
                out.append((n, np.ascontiguousarray(img[:, :, :3])))
    return out

SRC = None

def make(job):
    from PIL import Image
    i, path, seed, odd, size, grain = job
    r = random.Random(seed)
    name, img = SRC[i % len(SRC)]
    h, w = img.shape[:2]
    # a crop of 40-100% of the shorter side, landscape or portrait 4:3
    side = int(min(h, w) * r.uniform(0.4, 1.0))
    cw, ch = (side, int(side * 0.75)) if r.random() < 0.75 else (int(side * 0.75), side)
    cw, ch = min(cw, w), min(ch, h)
    x, y = r.randrange(0, w - cw + 1), r.randrange(0, h - ch + 1)
    im = Image.fromarray(img[y:y + ch, x:x + cw])
    tw = int(size * r.uniform(0.85, 1.15)) if cw >= ch else int(size * 0.75 * r.uniform(0.85, 1.15))
    im = im.resize((tw, max(1, round(tw * ch / cw))), Image.BICUBIC)
    if grain > 0:
        import numpy as np
        g = np.random.default_rng(seed)
        a = np.asarray(im, dtype=np.float32)
        noise = g.normal(0, grain, a.shape[:2])[:, :, None] + g.normal(0, grain / 3, a.shape)
        im = Image.fromarray(np.clip(a + noise + 0.5, 0, 255).astype(np.uint8))
    if r.random() < 0.5:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    q = r.randint(75, 95)
    kind = "baseline"
    if odd:
        kind = "progressive" if r.random() < 0.6 else "gray"
    if kind == "gray":
        im = im.convert("L")
    im.save(path, "JPEG", quality=q, subsampling=2, progressive=kind == "progressive")
    return os.path.getsize(path), kind

def main():
    global SRC
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--odd", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", default="500")
    ap.add_argument("--grain", type=float, default=0.0)
    a = ap.parse_args()
    sizes = [int(v) for v in a.size.split(",")]
    SRC = sources()
    if len(SRC) < 3:
        print("photos.py: scikit-image ships fewer than 3 colour photographs here", file=sys.stderr)
        return 1
    r = random.Random(a.seed)
    jobs = []
    for i in range(a.count):
        d = os.path.join(a.out, "c%02d" % (i % a.classes))
        os.makedirs(d, exist_ok=True)
        job = (r.randrange(1 << 30), os.path.join(d, "p%06d.jpg" % i), r.randrange(1 << 62),
               r.random() < a.odd)
        # the default draws as before, so that a set made earlier is made again
        size = sizes[0] if len(sizes) == 1 else sizes[r.randrange(len(sizes))]
        jobs.append(job + (size, a.grain))
    with Pool(os.cpu_count()) as p:
        res = p.map(make, jobs, chunksize=16)
    kb = sum(s for s, _ in res) / len(res) / 1024
    odd = sum(k != "baseline" for _, k in res)
    print("photos.py: %d images from %d photographs (%s), %.1f KiB mean, %d (%.1f%%) progressive or gray"
          % (len(res), len(SRC), ", ".join(n for n, _ in SRC), kb, odd, 100.0 * odd / len(res)))
    return 0

if __name__ == "__main__":
    sys.exit(main())
