#!/usr/bin/env python3
"""pack_check.py - reads a `ringfeed pack` folder with Python's tarfile and
checks it against its source, which it lists on its own (the order the
loader numbers samples in, from the ImageFolder rules, not from the pack):
member names and order (KEY.ext then KEY.cls, keys 0, 1, 2, ... across the
shards in name order), every member's bytes equal to its source file (zstd
members through `zstd -d`, with the pack's dictionary if it has one), labels,
--align offsets, and shard sizes. Exits 1 with the first problems found.

usage: pack_check.py PACK SOURCE [--raw] [--hidden] [--align N]
                     [--shard-size N] [--zstd] [--webdataset]
SOURCE: an ImageFolder (or raw) folder, or a manifest (path<TAB>label).
"""
import argparse
import glob
import os
import subprocess
import sys
import tarfile


def source_samples(source, raw, hidden):
    """[(path, label)] in sample-id order: what src/source/files_walk.c and
    files_manifest.c document (root files first in raw mode, label -1; then the
    classes in sorted order, each one's files in sorted path order)."""
    if os.path.isfile(source):
        out = []
        base = os.path.dirname(os.path.abspath(source))
        for line in open(source, encoding="utf-8"):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            path, label = line.rsplit("\t", 1)
            out.append((os.path.join(base, path), int(label)))
        return out

    def shown(name):
        return hidden or not name.startswith(".")

    def wanted(name):
        return raw or os.path.splitext(name)[1].lower() in (".jpg", ".jpeg")

    names = sorted(n for n in os.listdir(source) if shown(n))
    out = []
    if raw:
        out += [(os.path.join(source, n), -1) for n in names
                if os.path.isfile(os.path.join(source, n))]
    classes = [n for n in names if os.path.isdir(os.path.join(source, n))]
    for label, c in enumerate(classes):
        files = []
        for d, dirs, fs in os.walk(os.path.join(source, c), followlinks=True):
            dirs[:] = [x for x in dirs if shown(x)]
            files += [os.path.join(d, f) for f in fs if shown(f) and wanted(f)]
        files.sort(key=lambda p: os.path.relpath(p, source).encode())
        out += [(p, label) for p in files]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pack")
    ap.add_argument("source")
    ap.add_argument("--raw", action="store_true")
    ap.add_argument("--hidden", action="store_true")
    ap.add_argument("--align", type=int, default=0)
    ap.add_argument("--shard-size", type=int, default=0)
    ap.add_argument("--zstd", action="store_true")
    ap.add_argument("--webdataset", action="store_true",
                    help="read it with webdataset.WebDataset too")
    a = ap.parse_args()

    want = source_samples(a.source, a.raw, a.hidden)
    ext = ("bin" if a.raw else "jpg") + (".zst" if a.zstd else "")
    width = max(9, len(str(len(want) - 1)))
    dict_path = os.path.join(a.pack, "zstd.dict")
    dict_args = ["-D", dict_path] if os.path.exists(dict_path) else []
    shards = sorted(glob.glob(os.path.join(a.pack, "shard-*.tar")))
    errors = []

    def check(ok, what):
        if not ok and len(errors) < 10:
            errors.append(what)

    names, got = [], {}
    for shard in shards:
        first = len(names)
        with tarfile.open(shard) as t:
            for m in t:
                names.append(m.name)
                data = t.extractfile(m).read()
                got[m.name] = data
                if a.align and m.name.endswith("." + ext):
                    check(m.offset_data % a.align == 0,
                          f"{shard}: {m.name} data at {m.offset_data}, not a multiple of {a.align}")
                check(m.mode == 0o644 and m.uid == 0 and m.gid == 0 and m.mtime == 0,
                      f"{m.name}: mode {m.mode:o} uid {m.uid} gid {m.gid} mtime {m.mtime}")
        size = os.path.getsize(shard)
        samples = sum(1 for n in names[first:] if n.endswith("." + ext))
        if a.shard_size:
            check(size <= a.shard_size or samples == 1,
                  f"{shard}: {size} bytes > --shard-size {a.shard_size} with {samples} samples")
        check(size % 512 == 0, f"{shard}: {size} bytes, not whole blocks")

    expect = []
    for i, (_, label) in enumerate(want):
        key = f"{i:0{width}d}"
        expect.append(f"{key}.{ext}")
        if label >= 0:
            expect.append(f"{key}.cls")
    check(names == expect, f"member names differ: first {names[:4]}, want {expect[:4]} "
          f"({len(names)} members, want {len(expect)})")

    for i, (path, label) in enumerate(want):
        key = f"{i:0{width}d}"
        data = got.get(f"{key}.{ext}")
        if data is not None and a.zstd:
            data = subprocess.run(["zstd", "-d", "-q", "-c"] + dict_args, input=data,
                                  capture_output=True, check=True).stdout
        check(data == open(path, "rb").read(), f"{key}.{ext}: bytes differ from {path}")
        if label >= 0:
            check(got.get(f"{key}.cls") == str(label).encode(),
                  f"{key}.cls: {got.get(key + '.cls')!r}, want {label}")

    if a.webdataset:
        import webdataset as wds
        seen = []
        for s in wds.WebDataset(shards, shardshuffle=False):
            seen.append(s["__key__"])
            i = int(s["__key__"])
            check(s.get(ext) == got.get(f"{s['__key__']}.{ext}"), f"webdataset {i}: bytes")
            if want[i][1] >= 0:
                check(s.get("cls") == str(want[i][1]).encode(), f"webdataset {i}: cls {s.get('cls')}")
        check(seen == [f"{i:0{width}d}" for i in range(len(want))],
              f"webdataset keys: {seen[:3]}... ({len(seen)}), want {len(want)} in order")

    for e in errors:
        print("pack_check:", e, file=sys.stderr)
    print(f"pack_check: {len(want)} samples, {len(shards)} shards: "
          f"{'ok' if not errors else 'FAILED'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
