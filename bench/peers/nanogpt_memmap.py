"""nanogpt_memmap.py - a peer for bench/tokens.sh: nanoGPT's get_batch
(train.py), random windows through numpy.memmap:

    data = np.memmap(path, dtype=np.uint16, mode='r')   # a new memmap per batch
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy((data[i:i+block_size]).astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy((data[i+1:i+1+block_size]).astype(np.int64)) for i in ix])

nanoGPT reads one train.bin of bare tokens; here the data are llm.c shards
(a 1,024-byte header, then the tokens: offset=1024, uint32 for Llama-3
shards), and each batch picks a shard at random, then its windows. A window
is one row of T+1 tokens (x and its y); nanoGPT's starts are any token, not
multiples of T. No pin_memory().to(device): ringfeed's bench keeps its batches
on the host too. Page cache: memmap reads through it; the script drops it
before a cold run. One thread, as nanoGPT's loop. Prints one JSON line:
windows/s, tokens/s, MB/s of token bytes, seconds, CPU s.

usage: nanogpt_memmap.py --seq T --batch B --batches K [--seed S] SHARD...
"""

import argparse
import json
import resource
import struct
import time

import numpy as np
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--batches", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("shards", nargs="+")
    a = ap.parse_args()
    shards = []
    for path in a.shards:
        with open(path, "rb") as f:
            magic, version, count = struct.unpack("<3i", f.read(12))
        # any other header would be read as uint32 tokens, silently
        if (magic, version) not in ((20240520, 1), (20240801, 7)):
            raise SystemExit("nanogpt_memmap.py: %s: not an llm.c token shard" % path)
        dtype = np.uint16 if magic == 20240520 else np.uint32
        shards.append((path, dtype))
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    T, B = a.seq, a.batch
    t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    nbytes = 0
    checksum = 0
    for _ in range(a.batches):
        path, dtype = shards[rng.integers(len(shards))]
        data = np.memmap(path, dtype=dtype, mode="r", offset=1024)
        ix = torch.randint(len(data) - T, (B,))
        x = torch.stack([torch.from_numpy((data[i:i + T]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + T]).astype(np.int64)) for i in ix])
        checksum += int(x[0, 0]) + int(y[-1, -1])
        nbytes += B * (T + 1) * np.dtype(dtype).itemsize
    secs = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    windows = a.batches * B
    print(json.dumps({"loader": "nanogpt_memmap", "batches": a.batches, "samples": windows,
                      "seconds": secs, "windows_per_s": windows / secs,
                      "samples_per_s": windows / secs, "tokens_per_s": windows * (T + 1) / secs,
                      "mb_per_s": nbytes / secs / 1e6, "cpu_s": cpu, "checksum": checksum}))


if __name__ == "__main__":
    main()
