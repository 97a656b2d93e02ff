#!/usr/bin/python3
"""DALI peer for ringfeed's image-caption benchmark (bench/imagetext.sh).

Reads image-caption tar shards (img2dataset's layout: KEY.jpg|png|webp,
KEY.txt, KEY.json) with NVIDIA DALI's webdataset reader on the CPU, from the
PyPI wheel (`/usr/bin/python3 -m pip install --break-system-packages
nvidia-dali-cuda120`; its CPU operators need no GPU or driver):

  fn.readers.webdataset(paths=the .tar files, index_paths=wds2idx's files,
                        ext=["jpg;png;webp", "txt"], random_shuffle=True,
                        pad_last_batch=True)
  -> fn.decoders.image(device="cpu", output_type=RGB)
  -> fn.random_resized_crop(size=crop)    (DALI's defaults: area 0.08-1,
                                           aspect 3/4-4/3, linear, antialias)
  -> fn.flip(horizontal=fn.random.coin_flip(probability=flip))

in a pipeline of device_id=None (CPU only), num_threads=N, batches of 64.
Images come out uint8 HWC (DALI's layout; no transpose to CHW is made).
--fused uses DALI's own ImageNet path instead: fn.decoders.image_random_crop
(the decoder crops while it decodes) then fn.resize to crop x crop.
Each caption arrives as a uint8 array; the Python loop turns every one into
a str (bytes(...).decode("utf-8")) and sums their lengths (field_chars).

Epochs: the reader's epoch size (pipe.epoch_size) is the dataset; with
pad_last_batch=True the last batch of an epoch is padded with its last
sample (dropped here, as DALI's iterators with LastBatchPolicy.PARTIAL do)
and the next epoch starts on a fresh batch, so that each epoch counts every
sample exactly once.

The index files are made beforehand, untimed, with the wheel's wds2idx
(`wds2idx SHARD.tar SHARD.idx`), in --index-dir under the shards' names; a
shard without one is indexed by DALI itself at start (timed then).

Timing: from building the pipeline to the last batch of the last epoch
(startup_s: to the first batch); with --epochs > 1 the steady rate of the
epochs after the first as well.

Output: a short line, or with --json one JSON object with the keys of
webdataset_loader.py:
  {"loader": "dali", "threads": N, "samples": ..., "seconds": ...,
   "samples_per_s": ..., "steady_samples_per_s": ..., "startup_s": ...,
   "shards": ..., "field_chars": ...}
"""

import argparse
import glob
import json
import os
import sys
import time


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", required=True, help="a folder of *.tar")
    p.add_argument("--index-dir", default=None,
                   help="wds2idx's index files, SHARD.idx for each SHARD.tar (default: none)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--crop", type=int, default=224)
    p.add_argument("--flip", type=float, default=0.5)
    p.add_argument("--image", default="jpg;png;webp",
                   help="the image member's extension(s), ';' between alternatives")
    p.add_argument("--text", default="txt", help="the caption member's extension")
    p.add_argument("--shuffle", type=int, default=1024,
                   help="the reader's shuffle buffer (initial_fill; 0 = no shuffle)")
    p.add_argument("--fused", action="store_true",
                   help="decoders.image_random_crop + resize instead of decode + random_resized_crop")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)

    from nvidia.dali import fn, pipeline_def, types

    urls = sorted(glob.glob(os.path.join(a.shards, "*.tar")))
    if not urls:
        print("dali_webdataset: no shards in %s" % a.shards, file=sys.stderr)
        return 1
    index = None
    if a.index_dir:
        index = [os.path.join(a.index_dir, os.path.basename(u)[:-4] + ".idx") for u in urls]
        missing = [i for i in index if not os.path.exists(i)]
        if missing:
            print("dali_webdataset: no index %s (make it with wds2idx)" % missing[0], file=sys.stderr)
            return 1

    @pipeline_def(batch_size=a.batch, num_threads=a.threads, device_id=None, seed=a.seed + 1)
    def pipe_def():
        jpegs, texts = fn.readers.webdataset(
            paths=urls, index_paths=index, ext=[a.image, a.text],
            missing_component_behavior="error", random_shuffle=a.shuffle > 0,
            initial_fill=max(a.shuffle, 1), pad_last_batch=True, name="Reader")
        if a.fused:
            images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB)
            images = fn.resize(images, size=[a.crop, a.crop])
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.random_resized_crop(images, size=[a.crop, a.crop])
        if a.flip > 0:
            images = fn.flip(images, horizontal=fn.random.coin_flip(probability=a.flip))
        return images, texts

    t0 = time.perf_counter()
    pipe = pipe_def()
    pipe.build()
    per_epoch = pipe.epoch_size("Reader")
    batches_per_epoch = (per_epoch + a.batch - 1) // a.batch
    samples = chars = first_epoch_samples = 0
    startup = t_epoch1 = None
    shape = None
    for e in range(a.epochs):
        for i in range(batches_per_epoch):
            images, texts = pipe.run()
            if startup is None:
                startup = time.perf_counter() - t0
            # the padded tail of the epoch's last batch is not a sample
            n = min(a.batch, per_epoch - i * a.batch)
            shape = images.as_array().shape   # uniform after the crop: one (B, H, W, 3) array
            for j in range(n):
                chars += len(bytes(texts.at(j)).decode("utf-8"))
            samples += n
        if e == 0:
            t_epoch1 = time.perf_counter()
            first_epoch_samples = samples
    dt = time.perf_counter() - t0
    out = {"loader": "dali", "threads": a.threads, "samples": samples, "seconds": dt,
           "samples_per_s": samples / dt, "startup_s": startup or 0.0, "shards": len(urls),
           "field_chars": chars, "epoch_size": per_epoch, "batch_shape": list(shape),
           "fused": a.fused}
    if a.epochs > 1:
        out["steady_samples_per_s"] = (samples - first_epoch_samples) / (time.perf_counter() - t_epoch1)
    if a.json:
        print(json.dumps(out))
    else:
        print("dali: %d images in %.2f s: %.0f images/s (%d threads)" %
              (samples, dt, out["samples_per_s"], a.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
