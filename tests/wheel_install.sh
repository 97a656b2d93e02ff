#!/usr/bin/env bash
# wheel_install.sh - the Python package installed as a user gets it: the
# wheel scripts/wheel.sh builds is a manylinux wheel that carries the
# libraries its extension links (every library ldd lists is in the wheel's
# ringfeed.libs/ or one that every manylinux system has: glibc's, libstdc++,
# libgcc_s, and zlib (libspng's; manylinux's policy counts it as the base
# system's, so auditwheel leaves it out, as in PyPI's wheels); no NVIDIA
# library), installs with pip into a fresh venv (made with
# --system-site-packages from /usr/bin/python3, so that Debian's
# python3-torch satisfies the torch requirement: pip runs with --no-index),
# and from a folder outside the tree runs an epoch (shapes, ids covering
# the dataset), with ringfeed.__version__ the wheel's and py.typed and the
# stubs installed. The command the wheel carries inside the package
# (ringfeed/_bin/ringfeed) runs as the venv's `ringfeed` script and as
# `python -m ringfeed` (--version, gen, bench; its exit status passed on),
# its libraries the wheel's own as the extension's. The wheel reads URLs: tar shards (`ringfeed pack` of the
# epoch's images) served by an nginx this script starts on 127.0.0.1 (a
# free port, waited for with a deadline; killed when the script ends,
# whatever ends it) give the same batches (sha256 of each batch's pixels,
# labels and ids) as the same shards read from files, in both shard access
# modes (a skip, with the reason, without nginx). Its libcurl is
# scripts/wheel.sh's own, for http and https only: no LDAP, Kerberos,
# libssh2, librtmp or GnuTLS in the wheel. Then the same without the
# system's liburing, libjpeg, libturbojpeg, libzstd, libspng, libwebp,
# libcurl, libnghttp2, libssl and libcrypto: in a private mount namespace
# an empty file is bind-mounted over each, and the installed package still
# loads, runs an epoch (and `python -m ringfeed bench` one) and reads the
# shards over http (without torch, which Debian's build links to libjpeg and
# libzstd itself). Also: the sdist builds a wheel, and `pip install -e .`
# works (its `ringfeed` script too).
# Needs PyPI (the build tools come from there, as pip gets them): skips
# (77) with the reason without it, or without python3-venv. The first
# scripts/wheel.sh on a machine also needs Debian's archive (apt-get source
# curl, for the wheel's own libcurl; cached after that).
# usage (meson does this): wheel_install.sh SOURCE_ROOT RINGFEED VERSION
set -uo pipefail
src=$(realpath "$1")
RF=$2
version=$3
py=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-wheel-test.XXXXXX")
ngx_pid=
cleanup() {
	if [ -n "$ngx_pid" ]; then kill "$ngx_pid" 2>/dev/null; wait "$ngx_pid" 2>/dev/null; fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
skipped() { echo "SKIP: $1"; skip=$((skip + 1)); }
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }
finish() { echo "$pass passed, $fail failed, $skip skipped"; exit $((fail > 0)); }
skip_all() { echo "SKIP: $1"; echo "0 passed, 0 failed, 1 skipped"; exit 77; }

"$py" -c 'import venv, ensurepip' 2>/dev/null ||
	skip_all "no venv/ensurepip for $py (scripts/deps.sh installs python3-venv)"
index=${PIP_INDEX_URL:-https://pypi.org/simple}
"$py" - "$index" <<'PY' 2>/dev/null || skip_all "the package index ($index) cannot be reached: the wheel's build tools come from it"
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/meson-python/", timeout=30).read(1)
PY
have_torch=1
"$py" -c 'import torch' 2>/dev/null || have_torch=0

# ---- the wheel and the sdist ------------------------------------------------------
"$src/scripts/wheel.sh" "$T/dist" > "$T/wheel.log" 2>&1 ||
	{ tail -40 "$T/wheel.log"; bad "scripts/wheel.sh failed (log above)"; finish; }
whl=$(ls "$T"/dist/ringfeed-"$version"-*.whl 2>/dev/null)
sdist=$T/dist/ringfeed-$version.tar.gz
check "one wheel of version $version: $(ls "$T/dist")" [ "$(echo "$whl" | wc -w)" = 1 ]
check "the wheel's name has a manylinux tag: $whl" eval 'echo "$(basename "$whl")" | grep -Eq -- "-manylinux_2_[0-9]+_x86_64\.whl$"'
# auditwheel show (wrapped over lines) names the same tag
shown=$(sed -n '/== auditwheel show/,/== ldd/p' "$T/wheel.log" | tr -s ' \n' '  ')
check "auditwheel show names a manylinux tag: $shown" \
	eval 'echo "$shown" | grep -Eq "consistent with the following platform tag: \"manylinux_2_[0-9]+_x86_64\""'
"$py" -m zipfile -l "$whl" | awk 'NR > 1 {print $1}' > "$T/wheel.files"
for f in ringfeed/__init__.py ringfeed/__main__.py ringfeed/_keywords.py ringfeed/__init__.pyi \
	ringfeed/py.typed ringfeed/_bin/ringfeed; do
	check "the wheel holds $f" grep -qx "$f" "$T/wheel.files"
done
for lib in liburing libjpeg libzstd libspng libwebp libcurl libnghttp2 libssl libcrypto; do
	check "the wheel carries $lib in ringfeed.libs/" grep -q "^ringfeed.libs/$lib-" "$T/wheel.files"
done
# scripts/wheel.sh's libcurl (http and https), not Debian's with every protocol
# (libbrotli is not among them: it is ringfeed's own, Parquet's BROTLI codec)
extra='libldap|liblber|libsasl|libgssapi|libkrb5|libk5crypto|libssh|librtmp|libgnutls|libnettle|libhogweed|libgmp|libp11-kit|libidn2|libunistring|libpsl'
check "the wheel carries none of what Debian's libcurl links beside OpenSSL and nghttp2: $(grep -E "$extra" "$T/wheel.files" | tr '\n' ' ')" \
	eval '! grep -Eq "$extra" "$T/wheel.files"'

check "the wheel carries no NVIDIA library: $(grep -E 'libcuda|libnv|libcudart' "$T/wheel.files")" \
	eval '! grep -Eq "libcuda|libnv|libcudart" "$T/wheel.files"'
check "an sdist $sdist" [ -f "$sdist" ]
tar tzf "$sdist" > "$T/sdist.files" 2>/dev/null
for f in PKG-INFO pyproject.toml meson.build meson_options.txt include/ringfeed.h \
	python/ringfeed/_ringfeed.c python/ringfeed/__init__.pyi scripts/wheel.sh; do
	check "the sdist holds $f" grep -qx "ringfeed-$version/$f" "$T/sdist.files"
done

# ---- installed into a fresh venv ----------------------------------------------------
"$py" -m venv --system-site-packages "$T/venv" || { bad "venv"; finish; }
vpy=$T/venv/bin/python
if [ $have_torch = 1 ]; then
	# --no-index: nothing is downloaded; torch is Debian's python3-torch
	check "pip installs the wheel with torch from the system: $(tail -3 "$T/pip.log" 2>/dev/null)" \
		eval '"$vpy" -m pip install --no-index "$whl" > "$T/pip.log" 2>&1'
else
	skipped "torch as the wheel's dependency: $py has no torch (scripts/deps.sh installs python3-torch); installed with --no-deps"
	"$vpy" -m pip install --no-index --no-deps "$whl" > "$T/pip.log" 2>&1 || bad "pip install --no-deps: $(tail -3 "$T/pip.log")"
fi
mkdir -p "$T/run"
"$RF" gen --out "$T/data" --count 20 --classes 2 --threads 1 > /dev/null || { bad "ringfeed gen"; finish; }
cat > "$T/loop.py" <<'PY'
"""loop.py DATA VERSION torch|c: the installed package, an epoch of 20 samples."""
import importlib.metadata, os, struct, sys

data, version, mode = sys.argv[1:]
import ringfeed
where = os.path.dirname(ringfeed.__file__)
assert where.startswith(sys.prefix), f"ringfeed from {where}, not the venv {sys.prefix}"
assert ringfeed.__version__ == version == importlib.metadata.version("ringfeed"), \
    (ringfeed.__version__, version, importlib.metadata.version("ringfeed"))
for f in ("py.typed", "__init__.pyi"):
    assert os.path.isfile(os.path.join(where, f)), f"{f} not installed"
assert ringfeed.defaults()["dtype"] == "uint8"
seen = []
if mode == "torch":
    import torch
    loader = ringfeed.Loader(data, batch_size=8, resize=32, crop=32, threads=1, with_ids=True)
    assert len(loader) == 3
    for images, labels, ids in loader:
        n = images.shape[0]
        assert images.shape == (n, 32, 32, 3) and images.dtype == torch.uint8, images.shape
        assert labels.shape == (n,) and ids.shape == (n,)
        seen += ids.tolist()
    loader.close()
else:   # the extension alone: no torch to make tensors with
    from ringfeed import _ringfeed
    c = _ringfeed.Loader({"source": data, "epochs": 1, "batch_size": 8, "resize": 32,
                          "crop": 32, "threads": 1}, None, False)
    while (b := c.next()) is not None:
        n = b.count
        assert len(memoryview(b).cast("B")) == n * 32 * 32 * 3, len(memoryview(b))
        seen += struct.unpack(f"{n}q", bytes(b.ids))
        b.release(0)
    c.close()
assert sorted(seen) == list(range(20)), seen
print(f"{mode}: {len(seen)} samples, ids 0..19")
PY
mode=c
[ $have_torch = 1 ] && mode=torch
(cd "$T/run" && env -u PYTHONPATH "$vpy" "$T/loop.py" "$T/data" "$version" $mode) > "$T/loop.log" 2>&1
check "an epoch from outside the tree ($mode): $(tail -5 "$T/loop.log")" grep -q "20 samples" "$T/loop.log"

# the command inside the package: the venv's `ringfeed` script and
# `python -m ringfeed` run it (ringfeed/_bin/ringfeed), from outside the tree
vrf=$T/venv/bin/ringfeed
out=$(cd "$T/run" && env -u PYTHONPATH "$vrf" --version 2>&1)
check "the venv's ringfeed script runs the command: ringfeed --version said: $out" \
	eval 'case "$out" in "ringfeed $version "* | "ringfeed $version") true ;; *) false ;; esac'
out=$(cd "$T/run" && env -u PYTHONPATH "$vpy" -m ringfeed --version 2>&1)
check "python -m ringfeed --version said: $out" \
	eval 'case "$out" in "ringfeed $version "* | "ringfeed $version") true ;; *) false ;; esac'
(cd "$T/run" && env -u PYTHONPATH "$vpy" -m ringfeed gen --out "$T/gen" --count 20 --classes 2 \
	--threads 1) > "$T/gen.log" 2>&1
check "python -m ringfeed gen makes a dataset: $(tail -3 "$T/gen.log")" \
	eval '[ "$(find "$T/gen" -name "*.jpg" | wc -l)" = 20 ]'
(cd "$T/run" && env -u PYTHONPATH "$vrf" bench --source "$T/gen" --batch 4 --epochs 1 \
	--threads 1 --json) > "$T/bench.log" 2>&1
check "the venv's ringfeed bench reads it: $(tail -3 "$T/bench.log")" \
	eval 'grep -q "\"samples\":20," "$T/bench.log"'
(cd "$T/run" && env -u PYTHONPATH "$vrf" no-such-command) > /dev/null 2>&1
rc=$?
check "the script passes the command's exit status on: rc $rc for an unknown command" [ $rc = 2 ]

# every library the installed extension and command need is in ringfeed.libs
# or the system's base
ext=$(cd "$T/run" && env -u PYTHONPATH "$vpy" -c 'import ringfeed._ringfeed as m; print(m.__file__)')
libs=$(dirname "$(dirname "$ext")")/ringfeed.libs
cmd=$(dirname "$ext")/_bin/ringfeed
check "the installed command is executable: $cmd" [ -x "$cmd" ]
for what in extension command; do
	elf=$ext
	[ $what = command ] && elf=$cmd
	ldd "$elf" > "$T/ldd" 2>&1
	check "ldd of the installed $what" [ -s "$T/ldd" ]
	outside=
	: > "$T/ldd.real"   # NAME PATH, the path without $ORIGIN's ringfeed/../
	while read -r name arrow path _; do
		[ "$arrow" = "=>" ] || continue
		[ "$path" = "not" ] || path=$(realpath -m "$path")
		echo "$name $path" >> "$T/ldd.real"
		case "$path" in
		"$libs"/*) ;;
		*) case "$name" in
			libc.so.6 | libm.so.6 | libdl.so.2 | librt.so.1 | libpthread.so.0 | \
				libstdc++.so.6 | libgcc_s.so.1 | libz.so.1 | ld-linux-*) ;;
			*) outside="$outside $name=>$path" ;;
			esac ;;
		esac
	done < "$T/ldd"
	check "$what: every library but glibc's, libstdc++, libgcc_s and zlib is the wheel's own:$outside" \
		[ -z "$outside" ]
	for lib in liburing libjpeg libzstd libspng libwebp libcurl libnghttp2 libssl libcrypto; do
		check "$what: $lib resolves inside ringfeed.libs: $(grep "$lib" "$T/ldd.real")" \
			eval 'grep "^$lib" "$T/ldd.real" | grep -q " $libs/$lib-"'
	done
	check "the $what needs no CUDA library" \
		eval '! readelf -d "$elf" | grep NEEDED | grep -Eq "libcuda|libcudart|libnvjpeg"'
	echo "ldd of the installed $what:"
	sed 's/ (0x[0-9a-f]*)//' "$T/ldd"
done

# ---- http reads: tar shards from an nginx on 127.0.0.1 ------------------------------
cat > "$T/remote.py" <<'PY'
"""remote.py SHARDS URL: the installed package reads the tar shards over http
and from files; each batch (pixels, labels, ids) hashes the same, in both
shard access modes. The extension alone (no torch), so that it runs with the
system's libraries hidden too."""
import hashlib, struct, sys
from ringfeed import _ringfeed

shards, url = sys.argv[1:]


def epoch(source, access):
    c = _ringfeed.Loader({"source": source, "epochs": 1, "batch_size": 8, "resize": 32,
                          "crop": 32, "threads": 1, "seed": 7, "in_order": 1,
                          "shard_access": access}, None, False)
    digests, ids = [], []
    while (b := c.next()) is not None:
        h = hashlib.sha256(memoryview(b).cast("B"))
        h.update(bytes(b.labels))
        h.update(bytes(b.ids))
        digests.append(h.hexdigest())
        ids += struct.unpack(f"{b.count}q", bytes(b.ids))
        b.release(0)
    requests = c.stats()["http_requests"]
    c.close()
    return digests, sorted(ids), requests


for access, name in ((0, "random"), (1, "sequential")):   # rf_shard_access
    remote, remote_ids, remote_requests = epoch(url, access)
    local, local_ids, local_requests = epoch(shards, access)
    assert remote_ids == local_ids == list(range(20)), (name, remote_ids, local_ids)
    assert remote_requests > 0 and local_requests == 0, (name, remote_requests, local_requests)
    assert remote == local, (name, remote, local)
    print(f"{name}: {len(remote)} batches, the same sha256 over http "
          f"({remote_requests} requests) as from files")
PY
# nginx_start ROOT: an nginx serving ROOT on a free port of 127.0.0.1 (sets
# port and ngx_pid; cleanup kills it), listening within 30 s or a failure
ngx=
for n in /usr/sbin/nginx /usr/bin/nginx /usr/local/sbin/nginx; do
	if [ -x "$n" ]; then ngx=$n; break; fi
done
# a SIGKILL of this script (no trap runs) takes nginx with it too
pdeath=()
if setpriv --pdeathsig KILL true 2>/dev/null; then pdeath=(setpriv --pdeathsig KILL --); fi
nginx_start() {
	local root=$1 d=$T/nginx try deadline
	mkdir -p "$d/tmp"
	for try in 1 2 3; do   # another try where the free port was taken meanwhile
		port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		cat > "$d/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1;
pid $d/nginx.pid; error_log $d/error.log;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $d/tmp; proxy_temp_path $d/tmp;
  fastcgi_temp_path $d/tmp; uwsgi_temp_path $d/tmp; scgi_temp_path $d/tmp;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$port; root $root; } }
CONF
		"${pdeath[@]}" "$ngx" -p "$d" -c "$d/nginx.conf" 2>> "$d/error.log" &
		ngx_pid=$!
		deadline=$((SECONDS + 30))
		while kill -0 "$ngx_pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
			if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
			sleep 0.1
		done
		kill "$ngx_pid" 2>/dev/null
		wait "$ngx_pid" 2>/dev/null
		ngx_pid=
	done
	return 1
}
url=
if [ -z "$ngx" ]; then
	skipped "http reads through the installed wheel: no nginx (scripts/deps.sh installs nginx-light)"
elif ! "$RF" pack "$T/data" -o "$T/shards" --shard-size 256K > "$T/pack.log" 2>&1; then
	bad "ringfeed pack: $(tail -3 "$T/pack.log")"
elif ! nginx_start "$T/shards"; then
	bad "nginx did not listen on 127.0.0.1 within 30 s: $(tail -3 "$T/nginx/error.log" 2>/dev/null)"
else
	n=$(ls "$T"/shards/shard-*.tar | wc -l)
	check "ringfeed pack wrote more than one shard: $n" [ "$n" -gt 1 ]
	url="http://127.0.0.1:$port/shard-{000000..$(printf %06d $((n - 1)))}.tar"
	(cd "$T/run" && env -u PYTHONPATH "$vpy" "$T/remote.py" "$T/shards" "$url") > "$T/remote.log" 2>&1
	check "the installed wheel reads $n shards over http ($url): the same batches as from files: $(tail -5 "$T/remote.log")" \
		eval '[ "$(grep -c "the same sha256 over http" "$T/remote.log")" = 2 ]'
	cat "$T/remote.log"
fi

# ---- without the system's liburing, libjpeg-turbo, zstd, libcurl, OpenSSL, ... ------
ns=
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	ns="unshare -m"
elif unshare -rm true 2>/dev/null; then
	ns="unshare -rm"
fi
masked=$(/sbin/ldconfig -p 2>/dev/null |
	awk '$1 ~ /^lib(uring|jpeg|turbojpeg|zstd|spng|webp|curl|nghttp2|ssl|crypto)\.so/ {print $NF}' |
	xargs -r realpath 2>/dev/null | sort -u)
if [ -z "$ns" ]; then
	skipped "loading without the system's libraries: no mount namespace here (unshare -m as root, or -rm)"
elif [ -z "$masked" ]; then
	skipped "loading without the system's libraries: ldconfig lists none of them to hide"
else
	: > "$T/empty"
	$ns sh -c '
		empty=$1 vpy=$2 loop=$3 data=$4 version=$5 run=$6 remote=$7 shards=$8 url=$9
		shift 9
		for f in "$@"; do mount --bind "$empty" "$f" || exit 3; done
		# the system copies are gone: each fails to load
		"$vpy" -c "
import ctypes, sys
for name in (\"liburing.so.2\", \"libjpeg.so.62\", \"libzstd.so.1\", \"libspng.so.0\", \"libwebp.so.7\",
             \"libcurl.so.4\", \"libnghttp2.so.14\", \"libssl.so.3\", \"libcrypto.so.3\"):
    try:
        ctypes.CDLL(name)
    except OSError as e:
        print(\"hidden:\", name, \"-\", e)
    else:
        sys.exit(name + \" still loads\")
" || exit 4
		cd "$run" || exit 5
		env -u PYTHONPATH "$vpy" "$loop" "$data" "$version" c || exit 6
		# the command inside the package too
		env -u PYTHONPATH "$vpy" -m ringfeed bench --source "$data" --batch 4 --epochs 1 \
			--threads 1 --json || exit 7
		[ -z "$url" ] || exec env -u PYTHONPATH "$vpy" "$remote" "$shards" "$url"
	' sh "$T/empty" "$vpy" "$T/loop.py" "$T/data" "$version" "$T/run" \
		"$T/remote.py" "$T/shards" "$url" $masked > "$T/masked.log" 2>&1
	rc=$?
	hidden="liburing, libjpeg, libzstd, libspng, libwebp, libcurl, libnghttp2, libssl, libcrypto"
	check "loads and runs an epoch with $hidden hidden (rc $rc): $(tail -6 "$T/masked.log")" \
		eval '[ $rc = 0 ] && grep -q "20 samples" "$T/masked.log"'
	check "python -m ringfeed bench runs with $hidden hidden (rc $rc): $(tail -6 "$T/masked.log")" \
		eval '[ $rc = 0 ] && grep -q "\"samples\":20," "$T/masked.log"'
	if [ -n "$url" ]; then
		check "reads the shards over http with $hidden hidden: $(tail -4 "$T/masked.log")" \
			eval '[ $rc = 0 ] && [ "$(grep -c "the same sha256 over http" "$T/masked.log")" = 2 ]'
	else
		skipped "http reads with the system's libraries hidden: no nginx (above)"
	fi
	check "the hidden libraries did not load: $(grep -c hidden: "$T/masked.log")" \
		[ "$(grep -c "^hidden:" "$T/masked.log")" = 9 ]
	grep "^hidden:" "$T/masked.log"
fi

# ---- the sdist builds; pip install -e . -------------------------------------------
"$vpy" -m pip wheel --no-deps -w "$T/from-sdist" "$sdist" > "$T/sdist-wheel.log" 2>&1
check "pip wheel builds the sdist: $(tail -3 "$T/sdist-wheel.log")" \
	eval 'ls "$T"/from-sdist/ringfeed-"$version"-*.whl > /dev/null 2>&1'
# editable: the build tools in the venv (no isolation: the install rebuilds
# on import with them), the build folder outside the tree
"$py" -m venv --system-site-packages "$T/edit" || { bad "venv"; finish; }
epy=$T/edit/bin/python
if "$epy" -m pip install -q meson-python meson ninja > "$T/edit.log" 2>&1 &&
	"$epy" -m pip install --no-build-isolation --no-deps \
		--config-settings=build-dir="$T/edit-build" -e "$src" >> "$T/edit.log" 2>&1; then
	out=$(cd "$T/run" && env -u PYTHONPATH "$epy" -c 'import ringfeed; print(ringfeed.__file__, ringfeed.__version__)' 2>&1)
	check "pip install -e: ringfeed imports from the source tree: $out" \
		[ "$out" = "$src/python/ringfeed/__init__.py $version" ]
	out=$(cd "$T/run" && env -u PYTHONPATH "$T/edit/bin/ringfeed" --version 2>&1)
	check "pip install -e: the ringfeed script runs the build folder's command: $out" \
		eval 'case "$out" in "ringfeed $version "* | "ringfeed $version") true ;; *) false ;; esac'
else
	bad "pip install -e: $(tail -5 "$T/edit.log")"
fi
finish
