#!/usr/bin/env bash
# mutate_real.sh RINGFEED MUTATE [MUTATE ARGS...] - the mutation harness on
# shards written by real writers: `ringfeed pack` (plain and --align 4096),
# Python's tarfile (PAX, long names) and GNU tar (GNU format, long names),
# all of the same small JPEGs with cls labels, in one folder; then
# `MUTATE --shards DIR ARGS...` damages and checks them (tests/fuzz/mutate.c).
# Writers that are missing (python3, tar) are left out, saying so.
set -euo pipefail
RF=$1 MUTATE=$2
shift 2
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-mutate-real.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$RF" gen --out "$T/jpg" --count 24 --classes 3 --quality 40 --threads 1 > /dev/null
mkdir "$T/real"
"$RF" pack "$T/jpg" -o "$T/p1" > /dev/null
cp "$T/p1/shard-000000.tar" "$T/real/pack.tar"
"$RF" pack "$T/jpg" -o "$T/p2" --align 4096 > /dev/null
cp "$T/p2/shard-000000.tar" "$T/real/pack-align.tar"
if command -v python3 > /dev/null; then
	python3 - "$T/jpg" "$T/real/tarfile-pax.tar" << 'PY'
import io, os, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
long = "a/folder/name/long/enough/that/ustar/cannot/hold/it/and/a/pax/header/carries/it/"
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for ci, c in enumerate(sorted(os.listdir(src))):
        for f in sorted(os.listdir(os.path.join(src, c))):
            key = long + c + "-" + f.split(".")[0]
            t.add(os.path.join(src, c, f), arcname=key + ".jpg")
            ti = tarfile.TarInfo(key + ".cls"); ti.size = len(str(ci))
            t.addfile(ti, io.BytesIO(str(ci).encode()))
PY
else
	echo "mutate_real: no python3: no tarfile shard"
fi
if tar --version 2> /dev/null | grep -q GNU; then
	mkdir -p "$T/g/$(printf 'd%.0s' $(seq 110))"
	long="$T/g/$(printf 'd%.0s' $(seq 110))"
	i=0
	for f in "$T"/jpg/class_*/*.jpg; do
		cp "$f" "$long/s$i.jpg"
		echo $((i % 3)) > "$long/s$i.cls"
		i=$((i + 1))
	done
	(cd "$T/g" && tar --format=gnu -cf "$T/real/gnutar.tar" --sort=name "$(basename "$long")")
else
	echo "mutate_real: no GNU tar: no GNU-format shard"
fi
${MUTATE_WRAP:-} "$MUTATE" --shards "$T/real" "$@"
