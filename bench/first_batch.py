#!/usr/bin/env python3
"""first_batch.py - time to first batch and bytes read from storage, cold,
for two builds side by side (issue 37 item 6: a pack with ringfeed.index
beside it loads the index instead of scanning its shards).

    bench/first_batch.py BEFORE AFTER SOURCE [ROUNDS]

BEFORE and AFTER are ringfeed commands; each round drops the page cache and
the file system's metadata (sync; echo 3 > /proc/sys/vm/drop_caches: run as
root) before each run of `ringfeed bench --source SOURCE --raw --batches 1`,
alternating the builds. First batch is bench's own "first batch after X s";
bytes read are the child's rusage ru_inblock x 512 (what it read from
storage, its binary and libraries included). Prints each run, the medians
and the ratio, and the share of SOURCE's bytes read."""
import os
import re
import statistics
import subprocess
import sys


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.lstat(os.path.join(root, f)).st_size
    return total


def one_run(rf, source):
    subprocess.run("sync; echo 3 > /proc/sys/vm/drop_caches", shell=True, check=True)
    p = subprocess.Popen([rf, "bench", "--source", source, "--raw", "--batches", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    m = re.search(r"first batch after ([0-9.]+) s", out)
    if status != 0 or not m:
        sys.exit(f"first_batch: {rf} failed (status {status}):\n{out}")
    return float(m.group(1)), ru.ru_inblock * 512


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    before, after, source = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) == 5 else 5
    size = du(source)
    runs = {before: [], after: []}
    for r in range(rounds):
        for rf in (before, after):
            fb, rb = one_run(rf, source)
            runs[rf].append((fb, rb))
            print(f"round {r + 1} {'before' if rf == before else 'after '}: "
                  f"first batch {fb:.3f} s, read {rb / 1e6:.1f} MB", flush=True)
    med = {rf: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for rf, v in runs.items()}
    for name, rf in (("before", before), ("after", after)):
        fb, rb = med[rf]
        print(f"{name}: median first batch {fb:.3f} s, read {rb / 1e6:.1f} MB "
              f"({100 * rb / size:.1f}% of the source's {size / 1e6:.1f} MB)")
    print(f"first batch after/before: {med[after][0] / med[before][0]:.3f}")


if __name__ == "__main__":
    main()
