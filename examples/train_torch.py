#!/usr/bin/python3
"""train_torch.py - a complete small training script on ringfeed's Python
package: a torchvision ResNet-18 trained on an ImageFolder tree, with a
checkpoint every --save-every steps and an exact resume from it.

Run (Debian: python3-torch and python3-torchvision; the package from the
build tree or `pip install .`):
    build/ringfeed gen --out /tmp/train --count 2000 --classes 10
    PYTHONPATH=build/python python3 examples/train_torch.py /tmp/train --steps 300
    # stopped? the same command resumes from /tmp/ringfeed-ckpt.pt
Add --device cuda:0 on a machine with a GPU: batches then arrive on the
device, ordered on PyTorch's current stream.
"""

import argparse
import os
import time

import torch
import torchvision

import ringfeed

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", help="ImageFolder directory (class folders of JPEGs)")
    p.add_argument("--steps", type=int, default=300, help="training steps in all")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--crop", type=int, default=112)
    p.add_argument("--threads", type=int, default=0, help="decode threads (0: cores - 1)")
    p.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    p.add_argument("--checkpoint", default="/tmp/ringfeed-ckpt.pt")
    p.add_argument("--save-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=0,
                   help="seeds torch (the model's initial weights) and the loader's order")
    p.add_argument("--weights-out", help="write the final model weights here (to check that "
                   "a stopped and resumed run ends where a straight one does)")
    args = p.parse_args()
    # Everything random is seeded, so that a run stopped and resumed from its
    # checkpoint ends with the weights of a run that went straight through:
    # the loader resumes at the batch that came next, the model and the
    # optimizer at their saved state, and the initial weights are the seed's.
    torch.manual_seed(args.seed)

    loader = ringfeed.Loader(args.data, batch_size=args.batch, crop=args.crop,
                             threads=args.threads, random_resized_crop=True, flip=0.5,
                             dtype="float32", layout="chw", mean=MEAN, std=STD,
                             device=args.device, seed=args.seed)
    classes = len(next(os.walk(args.data))[1])
    model = torchvision.models.resnet18(num_classes=classes).to(args.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)

    step = 0
    if os.path.exists(args.checkpoint):
        ckpt = torch.load(args.checkpoint, map_location=args.device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        loader.load_state_dict(ckpt["loader"])   # the very batch that came next
        step = ckpt["step"]
        print(f"resumed at step {step}, epoch {loader.epoch}", flush=True)

    model.train()
    t0 = time.perf_counter()
    while step < args.steps:
        for images, labels in loader:   # one epoch; tensors valid until the next batch
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if step % 10 == 0:
                rate = 10 * args.batch / (time.perf_counter() - t0)
                print(f"step {step} epoch {loader.epoch} loss {loss.item():.3f} "
                      f"{rate:.0f} img/s", flush=True)
                t0 = time.perf_counter()
            if step % args.save_every == 0 or step == args.steps:
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                            "loader": loader.state_dict(), "step": step}, args.checkpoint)
            if step == args.steps:
                break
    loader.close()
    if args.weights_out:
        torch.save(model.state_dict(), args.weights_out)
    print(f"done: {step} steps", flush=True)


if __name__ == "__main__":
    main()
