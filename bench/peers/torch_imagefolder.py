#!/usr/bin/python3
"""PyTorch peer for the ringfeed benchmark: time an ImageFolder DataLoader.

Loads an ImageFolder tree with torchvision's default PIL loader and the
transform Resize(resize) -> CenterCrop(crop) -> PILToTensor() (uint8 CHW, no
normalisation; --output float16: ToTensor() -> Normalize(ImageNet's mean and
std) -> ConvertImageDtype(float16), float16 CHW), batched by torch.utils.data.DataLoader with shuffling, and
reports how many images per second arrive in the main process.

Run it with Debian's interpreter, /usr/bin/python3: python3-torch and
python3-torchvision are installed for that one, not for other pythons on PATH.

Timing:
  startup_s  from creating the first epoch's DataLoader iterator (this is
             when worker processes are started) until its first batch is
             received.
  seconds    from creating the first epoch's DataLoader iterator until the
             last batch of the last epoch is received (startup included).
Batches are only touched (their shape is read); nothing is copied to a GPU.

Output: a short human line, or with --json exactly one JSON object on stdout:
  {"loader": "torch", "workers": N, "samples": ..., "seconds": ...,
   "samples_per_s": ..., "batches": ..., "startup_s": ...}
Errors go to stderr with a non-zero exit status.
"""

import argparse
import json
import os
import sys
import time


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Time torchvision ImageFolder + torch DataLoader "
                    "(PyTorch peer for ringfeed's bench).")
    parser.add_argument("--source", required=True, metavar="DIR",
                        help="ImageFolder root (DIR/<class>/<image>)")
    parser.add_argument("--workers", type=non_negative_int,
                        default=os.cpu_count() or 1, metavar="N",
                        help="DataLoader num_workers; 0 loads in the main "
                             "process (default: os.cpu_count() = %(default)s)")
    parser.add_argument("--batch", type=positive_int, default=64, metavar="N",
                        help="batch size (default: %(default)s)")
    parser.add_argument("--resize", type=positive_int, default=256,
                        metavar="PX",
                        help="Resize: shorter side in pixels "
                             "(default: %(default)s)")
    parser.add_argument("--crop", type=positive_int, default=224, metavar="PX",
                        help="CenterCrop size in pixels (default: %(default)s)")
    parser.add_argument("--epochs", type=positive_int, default=1, metavar="N",
                        help="epochs to run (default: %(default)s)")
    parser.add_argument("--transform", choices=("center", "rrc"), default="center",
                        help="center: Resize(resize) + CenterCrop(crop); rrc: "
                             "RandomResizedCrop(crop) (default: %(default)s)")
    parser.add_argument("--flip", type=float, default=0.0, metavar="P",
                        help="RandomHorizontalFlip(P) after the crop (default: 0)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed for the shuffle order (default: %(default)s)")
    parser.add_argument("--output", choices=("uint8", "float16"), default="uint8",
                        help="uint8 CHW (PILToTensor), or float16 CHW normalized with "
                             "ImageNet's mean and std")
    parser.add_argument("--pin-memory", action="store_true",
                        help="DataLoader pin_memory=True (batches copied to page-locked memory)")
    parser.add_argument("--json", action="store_true",
                        help="print exactly one JSON object on stdout")
    return parser.parse_args(argv)


def run(args):
    if not os.path.isdir(args.source):
        raise RuntimeError(f"source folder not found: {args.source}")

    # Imported here so that --help and argument errors do not pay for it.
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    # One intra-op thread in the main process: the transforms run in the
    # worker processes (or, with --workers 0, are PIL code that does not use
    # torch's thread pool anyway), and on a small machine (2 cores) torch's
    # default per-core thread pool would only compete with the workers.
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    if args.transform == "rrc":
        steps = [transforms.RandomResizedCrop(args.crop)]
    else:
        steps = [transforms.Resize(args.resize), transforms.CenterCrop(args.crop)]
    if args.flip > 0:
        steps.append(transforms.RandomHorizontalFlip(args.flip))
    if args.output == "float16":
        steps += [transforms.ToTensor(),
                  transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
                  transforms.ConvertImageDtype(torch.float16)]
    else:
        steps.append(transforms.PILToTensor())
    transform = transforms.Compose(steps)
    dataset = datasets.ImageFolder(args.source, transform=transform)
    if len(dataset) == 0:
        raise RuntimeError(f"no images found under {args.source}")

    generator = torch.Generator()
    generator.manual_seed(args.seed)
    loader_kwargs = {}
    if args.workers > 0:
        loader_kwargs = {"persistent_workers": True, "prefetch_factor": 4}
    loader = DataLoader(dataset, batch_size=args.batch, shuffle=True,
                        num_workers=args.workers, generator=generator,
                        pin_memory=args.pin_memory, **loader_kwargs)

    samples = 0
    batches = 0
    startup_s = None
    start = time.perf_counter()
    for _ in range(args.epochs):
        # iter(loader) starts the workers on the first epoch; with
        # persistent_workers they are reused by later epochs.
        for images, _labels in loader:
            if startup_s is None:
                startup_s = time.perf_counter() - start
            # Minimal touch: read the shape so the batch is really consumed.
            samples += images.shape[0]
            batches += 1
    seconds = time.perf_counter() - start

    return {
        "loader": "torch",
        "workers": args.workers,
        "transform": args.transform,
        "output": args.output,
        "flip": args.flip,
        "samples": samples,
        "seconds": round(seconds, 6),
        "samples_per_s": round(samples / seconds, 3) if seconds > 0 else 0.0,
        "batches": batches,
        "startup_s": round(startup_s if startup_s is not None else 0.0, 6),
    }


def main(argv=None):
    args = parse_args(argv)
    try:
        result = run(args)
    except KeyboardInterrupt:
        print("torch_imagefolder: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # report any failure as one line + exit status
        print(f"torch_imagefolder: error: {exc}", file=sys.stderr)
        return 1

    if args.json:
        print(json.dumps(result))
    else:
        print(f"torch workers={result['workers']}: {result['samples']} images "
              f"in {result['batches']} batches, {result['seconds']:.3f} s "
              f"({result['samples_per_s']:.1f} images/s, "
              f"startup {result['startup_s']:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
