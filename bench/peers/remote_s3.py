#!/usr/bin/python3
"""S3 peers for ringfeed's remote benchmark (bench/remote.sh): the same JPEG
samples read through an S3 endpoint (nginx serving GET and HEAD, path-style
/BUCKET/KEY) by the PyPI loaders that speak S3, each with the transform
ringfeed's bench applies (PIL decode to RGB, Resize(256) + CenterCrop(224)
+ PILToTensor: uint8 CHW), batches of 64 through
torch.utils.data.DataLoader(num_workers=N), epoch 1 with nothing cached.

  streaming  mosaicml-streaming: StreamingDataset(remote="s3://BUCKET/PREFIX",
             local=<a fresh folder>, shuffle=True), its MDS shards (the
             samples converted once: `convert --format mds`), downloaded
             whole by boto3 (S3_ENDPOINT_URL)
  litdata    litdata: StreamingDataset("s3://BUCKET/PREFIX", shuffle=True,
             storage_options={"endpoint_url": ...}), its optimized chunks
             (`convert --format litdata`), downloaded whole by boto3 (s5cmd
             where installed)
  s3torch    s3torchconnector: S3IterableDataset.from_objects(the tar
             shards' s3:// URIs, enable_sharding=True) with
             S3ClientConfig(force_path_style=True, unsigned=True), each
             object's sequential S3Reader read as a tar stream (the shards
             ringfeed and webdataset read, no conversion); shard order
             shuffled, samples in shard order

Run it with a Python that has the peer (bench/remote.sh makes a venv with
--system-site-packages, so that Debian's torch and torchvision are used).

  remote_s3.py convert --format mds|litdata --shards DIR --out DIR [--shard-bytes N]
  remote_s3.py read --peer streaming|litdata|s3torch --endpoint URL --bucket B
               --prefix P [--shards N] [--workers N] [--batch 64] [--json]

convert reads the tar shards (KEY.jpg + KEY.cls, as `ringfeed pack` writes
them) and writes the same samples, in the same order, as {"jpg": bytes,
"cls": int} in the peer's format, in pieces of about --shard-bytes.

Timing (read): from creating the DataLoader's iterator to its last batch,
as bench/peers/webdataset_loader.py times its first epoch. Output: a short
line, or with --json one JSON object:
  {"loader": PEER, "workers": N, "samples": ..., "seconds": ...,
   "samples_per_s": ..., "startup_s": ...}
"""

import argparse
import glob
import io
import json
import os
import random
import shutil
import sys
import tarfile
import tempfile
import time


def tar_stream(f):
    """(key, jpg bytes, cls) of every sample of a tar stream, in order."""
    cur, jpg, cls = None, None, -1
    with tarfile.open(fileobj=f, mode="r|") as t:
        for m in t:
            if not m.isfile():
                continue
            key, _, ext = m.name.partition(".")
            if key != cur:
                if jpg is not None:
                    yield cur, jpg, cls
                cur, jpg, cls = key, None, -1
            data = t.extractfile(m).read()
            if ext == "jpg":
                jpg = data
            elif ext == "cls":
                cls = int(data)
    if jpg is not None:
        yield cur, jpg, cls


def tar_samples(shards):
    for path in shards:
        with open(path, "rb") as f:
            yield from tar_stream(f)


def convert(a):
    shards = sorted(glob.glob(os.path.join(a.shards, "*.tar")))
    if not shards:
        print("remote_s3: no shards in %s" % a.shards, file=sys.stderr)
        return 1
    tmp = a.out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    n = 0
    if a.format == "mds":
        from streaming import MDSWriter
        with MDSWriter(out=tmp, columns={"jpg": "bytes", "cls": "int"},
                       size_limit=a.shard_bytes) as w:
            for _, jpg, cls in tar_samples(shards):
                w.write({"jpg": jpg, "cls": cls})
                n += 1
    else:
        from litdata.streaming.writer import BinaryWriter
        w = BinaryWriter(tmp, chunk_bytes=a.shard_bytes)
        for _, jpg, cls in tar_samples(shards):
            w[n] = {"jpg": jpg, "cls": cls}
            n += 1
        w.done()
        w.merge()
    os.rename(tmp, a.out)
    print("remote_s3: %d samples as %s in %s" % (n, a.format, a.out))
    return 0


def transform(resize, crop):
    from torchvision import transforms
    return transforms.Compose([transforms.Resize(resize), transforms.CenterCrop(crop),
                               transforms.PILToTensor()])


def decode(jpg):
    from PIL import Image
    return Image.open(io.BytesIO(jpg)).convert("RGB")


def dataset(a, cache):
    """The peer's dataset of (image tensor, label) over the endpoint."""
    tf = transform(a.resize, a.crop)
    if a.peer == "streaming":
        os.environ["S3_ENDPOINT_URL"] = a.endpoint
        from streaming import StreamingDataset
        from streaming.base.util import clean_stale_shared_memory
        clean_stale_shared_memory()

        class Images(StreamingDataset):
            def __getitem__(self, i):
                s = super().__getitem__(i)
                return tf(decode(s["jpg"])), s["cls"]

        return Images(remote="s3://%s/%s" % (a.bucket, a.prefix), local=cache, shuffle=True,
                      batch_size=a.batch)
    if a.peer == "litdata":
        from litdata import StreamingDataset
        from litdata.streaming.resolver import Dir

        class Images(StreamingDataset):
            def __getitem__(self, i):
                s = super().__getitem__(i)
                return tf(decode(s["jpg"])), s["cls"]

        return Images(Dir(path=cache, url="s3://%s/%s" % (a.bucket, a.prefix)), shuffle=True,
                      storage_options={"endpoint_url": a.endpoint})
    import torch
    from s3torchconnector import S3ClientConfig, S3IterableDataset
    uris = ["s3://%s/%s/shard-%06d.tar" % (a.bucket, a.prefix, i) for i in range(a.shards)]
    random.Random(a.seed).shuffle(uris)
    cfg = S3ClientConfig(force_path_style=True, unsigned=True)
    objects = S3IterableDataset.from_objects(uris, region="us-east-1", endpoint=a.endpoint,
                                             s3client_config=cfg, enable_sharding=True)

    class Images(torch.utils.data.IterableDataset):
        def __iter__(self):
            for reader in objects:   # this worker's share of the objects
                for _, jpg, cls in tar_stream(reader):
                    yield tf(decode(jpg)), cls

    return Images()


def read(a):
    # dummy credentials: requests are signed (boto3 wants keys), and nginx
    # ignores the signature
    for k, v in (("AWS_ACCESS_KEY_ID", "ringfeed-bench"), ("AWS_SECRET_ACCESS_KEY", "ringfeed-bench"),
                 ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(k, v)
    import torch
    cache = tempfile.mkdtemp(prefix="ringfeed-remote-%s-" % a.peer)
    try:
        ds = dataset(a, cache)
        dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.workers)
        samples, startup = 0, None
        t0 = time.perf_counter()
        for x, y in dl:
            if startup is None:
                startup = time.perf_counter() - t0
            samples += x.shape[0]
        dt = time.perf_counter() - t0
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    out = {"loader": a.peer, "workers": a.workers, "samples": samples, "seconds": dt,
           "samples_per_s": samples / dt, "startup_s": startup or 0.0}
    if a.json:
        print(json.dumps(out))
    else:
        print("%s: %d images in %.2f s: %.0f images/s (%d workers)" %
              (a.peer, samples, dt, out["samples_per_s"], a.workers))
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--format", choices=("mds", "litdata"), required=True)
    c.add_argument("--shards", required=True, help="a folder of *.tar")
    c.add_argument("--out", required=True)
    c.add_argument("--shard-bytes", type=int, default=64 << 20)
    r = sub.add_parser("read")
    r.add_argument("--peer", choices=("streaming", "litdata", "s3torch"), required=True)
    r.add_argument("--endpoint", required=True, help="http://HOST:PORT")
    r.add_argument("--bucket", required=True)
    r.add_argument("--prefix", required=True, help="the folder of the data in the bucket")
    r.add_argument("--shards", type=int, default=0,
                   help="s3torch: the tar shards' count (shard-000000.tar, ...)")
    r.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    r.add_argument("--batch", type=int, default=64)
    r.add_argument("--resize", type=int, default=256)
    r.add_argument("--crop", type=int, default=224)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    return convert(a) if a.cmd == "convert" else read(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
