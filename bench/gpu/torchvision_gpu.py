#!/usr/bin/env python3
"""The torchvision GPU pipeline peer: files read with torchvision.io.read_file,
decoded in batches by decode_jpeg(list, device="cuda") (nvJPEG through
torchvision), then Resize(256, antialias) + CenterCrop(224) and a float16
normalization on the GPU, as `ringfeed bench --decode gpu` delivers. Files
the GPU decoder refuses (progressive or grayscale in some versions) are
decoded on the CPU and counted. Images/s over the timed passes (one warm-up
pass first) and the CPU cores the process used.

  torchvision_gpu.py --source DIR [--batch 256] [--passes 3] [--json]
"""
import argparse, json, os, sys, time

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    import torch
    import torchvision
    from torchvision.io import decode_jpeg, read_file, ImageReadMode
    from torchvision.transforms import functional as F
    if not torch.cuda.is_available():
        print("torchvision_gpu: no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda:0")
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(a.source) for f in fs
                   if f.lower().endswith((".jpg", ".jpeg")))
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(3, 1, 1)
    # which files the GPU decoder takes (not timed)
    on_gpu = []
    for f in files:
        try:
            decode_jpeg(read_file(f), mode=ImageReadMode.RGB, device=dev)
            on_gpu.append(True)
        except RuntimeError:
            on_gpu.append(False)
    torch.cuda.synchronize()

    def one_pass():
        n = 0
        for b in range(0, len(files), a.batch):
            part = range(b, min(b + a.batch, len(files)))
            datas = [read_file(files[i]) for i in part]
            g = [d for d, i in zip(datas, part) if on_gpu[i]]
            imgs = decode_jpeg(g, mode=ImageReadMode.RGB, device=dev) if g else []
            imgs += [decode_jpeg(d, mode=ImageReadMode.RGB).to(dev, non_blocking=True)
                     for d, i in zip(datas, part) if not on_gpu[i]]
            out = torch.stack([F.center_crop(F.resize(x, 256, antialias=True), 224) for x in imgs])
            out = ((out.float() / 255 - mean) / std).half()
            n += out.shape[0]
        torch.cuda.synchronize()
        return n

    one_pass()  # warm-up
    c0, t0 = os.times(), time.perf_counter()
    n = sum(one_pass() for _ in range(a.passes))
    secs = time.perf_counter() - t0
    c1 = os.times()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    r = {"loader": "torchvision_gpu", "torchvision": torchvision.__version__, "images": n,
         "cpu_decoded_per_pass": on_gpu.count(False), "seconds": round(secs, 4),
         "images_per_s": round(n / secs, 1), "cores_used": round(cpu / secs, 2)}
    print(json.dumps(r) if a.json else r)
    return 0

if __name__ == "__main__":
    sys.exit(main())
