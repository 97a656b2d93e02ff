#!/usr/bin/python3
"""The torch peer on a GPU: ImageFolder + PIL, the same transform, DataLoader
with pin_memory=True, each batch sent with .to(device, non_blocking=True)
(with --f16: then normalized to float16 on the GPU, as ringfeed's float16
CHW output). Reports images/s and the CPU cores the process tree used (CPU
time / wall; the workers' counted while they live, with psutil when present).

Timing starts after --warmup batches (the workers started, their queues
full), as ringfeed's steady rate leaves its start-up out.

  torch_gpu.py --source DIR [--workers N] [--batch B] [--batches K] [--warmup W]
               [--rrc] [--f16] [--json]
"""
import argparse, json, os, sys, time

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batches", type=int, default=200, help="timed batches")
    ap.add_argument("--warmup", type=int, default=10, help="batches before timing")
    ap.add_argument("--rrc", action="store_true", help="RandomResizedCrop(224) + flip")
    ap.add_argument("--f16", action="store_true", help="normalize to float16 on the GPU")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    if not torch.cuda.is_available():
        print("torch_gpu: no CUDA device", file=sys.stderr)
        return 1
    t = ([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip()] if a.rrc
         else [transforms.Resize(256), transforms.CenterCrop(224)])
    ds = datasets.ImageFolder(a.source, transforms.Compose(t + [transforms.PILToTensor()]))
    dl = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                    pin_memory=True, persistent_workers=a.workers > 0,
                    prefetch_factor=4 if a.workers > 0 else None)
    dev = torch.device("cuda:0")
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1)
    try:
        import psutil
    except ImportError:
        psutil = None

    def tree_cpu():
        if psutil is None:
            t = os.times()
            return t.user + t.system + t.children_user + t.children_system
        me = psutil.Process()
        total = 0.0
        for p in [me] + me.children(recursive=True):
            try:
                c = p.cpu_times()
                total += c.user + c.system
            except psutil.Error:
                pass
        return total

    n = k = 0
    c0 = t0 = None
    while k < a.warmup + a.batches:
        for x, y in dl:
            x = x.to(dev, non_blocking=True)
            if a.f16:
                x = ((x.float() / 255 - mean) / std).half()
            k += 1
            if k == a.warmup:  # the timed part starts here
                torch.cuda.synchronize()
                c0, t0 = tree_cpu(), time.perf_counter()
            elif k > a.warmup:
                n += x.shape[0]
            if k >= a.warmup + a.batches:
                break
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    cpu = tree_cpu() - c0
    r = {"loader": "torch_gpu", "workers": a.workers, "images": n, "seconds": round(secs, 4),
         "images_per_s": round(n / secs, 1), "cores_used": round(cpu / secs, 2)}
    print(json.dumps(r) if a.json else r)
    return 0

if __name__ == "__main__":
    sys.exit(main())
