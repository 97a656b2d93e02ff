#!/usr/bin/env bash
# remote.sh - tar shards over http against the link's limit and their
# peers, side by side in one run (issue 25's target). Needs root: the
# server lives in a network namespace of its own (ringfeed-bench-remote,
# 10.77.25.2) on a veth pair from the host (10.77.25.1), its end of the
# link limited by `tc tbf` (this kernel has no netem: no added latency);
# nginx serves DATA_DIR there, bound to that address only, as
# http://10.77.25.2:8080/bench/... (GET, HEAD, Range; path-style S3, bucket
# "bench"). All of it is set up here and torn down on exit (a namespace
# left by an interrupted run first); nothing talks to anything outside the
# machine. The server's files are warm in its page cache: the link is the
# limit, not its disk. Parts (PARTS), each round running them in turn:
#   link    IMAGES (8,000) `ringfeed gen` JPEGs (~60 KB) packed into SHARDS
#           (10) tar shards, the link at RATE_MBIT (400), epoch 1 with
#           nothing cached on the client. The limit: curl fetching every
#           shard at once (MB/s). ringfeed bench (Resize 256 + CenterCrop
#           224, threads = cores) on the URLs' brace pattern: random access
#           (a ranged GET a sample) at its default --io-depth (256) and at
#           LINK_IO_DEPTH (64), and --shard-access sequential (1 MiB chunks,
#           --shuffle-block SHUFFLE_BLOCK); the shards' bytes over the whole
#           run, set-up included (the index: the ringfeed.index `ringfeed
#           pack` writes beside the shards, fetched; a pack made by an older
#           ringfeed, without one, is packed again). webdataset (PyPI; its
#           curl pipes, DataLoader with num_workers = cores, the same
#           transform) on the same URLs. Once first: ringfeed on the same
#           shards from local disk, warm (the decode limit: the link must be
#           the slower).
#   s3      the same samples through nginx as S3, at RATE_MBIT, epoch 1,
#           empty caches: ringfeed on s3:// URLs (AWS_ENDPOINT_URL, path
#           style, SigV4 with dummy keys; --io-depth LINK_IO_DEPTH) and the
#           S3 peers of bench/peers/remote_s3.py: mosaicml-streaming (MDS
#           shards), litdata (its chunks; 0.2.20, the last that imports
#           with Debian's torch 1.13: later ones want torch >= 2.4) and
#           s3torchconnector (the tar shards as objects; it asks for torch
#           >= 2.0.1 and runs on 1.13, installed --no-deps), converted once
#           where they have a format of their own, in a venv (S3_VENV) with
#           --system-site-packages (Debian's torch). A peer that cannot be
#           installed is reported as skipped with pip's words.
#   faults  the JPEG shards from tests/fault_server.py (bound to the
#           namespace's address by bench/peers/remote_fault_server.py), at
#           RATE_MBIT: clean, then 5% 503 and 1% resets (--pshort 0);
#           ringfeed random access (defaults) with --ids: every sample id
#           exactly once in each run, the faulty run's rate against the
#           clean one's.
#   random  the raw set of bench/small_files.sh (COUNT 200,000 files of 1-16
#           KiB, DATA_DIR/raw-200k) packed --align 4096 (raw-200k.pack), the
#           link at RANDOM_RATE_MBIT (0: no tbf; at 400 Mbit the link would
#           cap both sides near 5,400 requests/s of these sizes, and the
#           target is the request rate). For each D of IO_DEPTHS ("64
#           256"): wrk (threads = cores, D connections, WRK_SECONDS) sending
#           a ranged GET per packed sample's (offset, length), shuffled
#           (bench/peers/remote_wrk_ranges.lua; wrk, not h2load: h2load's
#           headers are the same for every URI, so no per-request Range),
#           against ringfeed bench --raw, random access, --io-depth D
#           --prefetch PREFETCH (requests/s after set-up). Both: CPU per
#           request (the process; ringfeed's ring thread apart), connections
#           the server accepted.
#   cache   the node-local cache (issue 26, --cache-dir), on the JPEG shards
#           of `link` and the raw set of `random`, in folders (jpeg, raw,
#           ranks) the script makes in CACHE_DIR (DATA_DIR/remote-cache: the
#           disk of DATA_DIR) and deletes at the end. Epoch 1: random access
#           over the URLs at RATE_MBIT, --io-depth CACHE_IO_DEPTH (256,
#           ringfeed's default), with an empty --cache-dir and without, which
#           first alternating by round; the run with the cache fills it.
#           Epoch 2 (another seed): a run over the URLs from that cache (all
#           hits: its misses and requests shown) against the same flags on
#           the shards on local disk, which first alternating; page cache
#           warm for both, but ringfeed reads O_DIRECT: both read the disk.
#           Storage-bound: the raw set over the URLs (RANDOM_RATE_MBIT) into
#           a cache once, then for each D of CACHE_RAW_IO_DEPTHS ("64 256")
#           --raw random access at --io-depth D from the cache against the
#           local pack, `sync; echo 3 > /proc/sys/vm/drop_caches` before
#           each, which first alternating. Ranks: CACHE_RANKS (4) processes
#           started at once (--rank i --world CACHE_RANKS, one seed,
#           CACHE_EPOCHS (2) epochs, --threads CACHE_RANK_THREADS (1), one
#           empty cache) on the JPEG URLs at RATE_MBIT: the shards' bytes
#           nginx sent ($body_bytes_sent in an access log written by this
#           part's server alone, the same files on port 8082, so that the
#           other parts' server logs nothing; the host's veth rx bytes,
#           headers and resends in, beside) against the samples' bytes (the
#           shards' .jpg members: what a ranged read a sample fetches), each
#           rank's hits, misses and waits, the wall time. CACHE_SIZE:
#           --cache-size (default ringfeed's, 10G: both sets fit).
#           CACHE_CASES ("epoch1 epoch2 ranks raw"): which of the four to
#           run (epoch2 runs epoch1's run with the cache first: it fills the
#           cache).
# TBF_LATENCY_MS (50): tbf's queue, in time at the rate (2.5 MB at 400 Mbit);
# many flows through a shallow queue lose packets, and reads in flight
# (connections) then matter: see bench/RESULTS.md.
# SHUFFLE_BLOCK (1024, ringfeed's default): a block of 1,024 ~60 KB samples
# spans about 60 chunks; the read pool grows to hold them (since df4181f;
# before, a 64 MiB pool kept 32 and each chunk was fetched about 8 times).
# Out: every run, medians of ROUNDS, then the ratios the issue sets.
# Settings by environment: ROUNDS (3), PARTS ("link s3 faults random
# cache"), IMAGES, SHARDS, RATE_MBIT, TBF_LATENCY_MS, RANDOM_RATE_MBIT, COUNT,
# LINK_IO_DEPTH, IO_DEPTHS, PREFETCH (16), WRK_SECONDS (10), SHUFFLE_BLOCK,
# CACHE_DIR, CACHE_CASES, CACHE_IO_DEPTH, CACHE_RAW_IO_DEPTHS, CACHE_RANKS,
# CACHE_EPOCHS, CACHE_RANK_THREADS, CACHE_SIZE, CACHE_TIMEOUT (600 s: a cache
# run that takes longer is killed and reported as failed), DATA_DIR
# (bench/data), RINGFEED (build/ringfeed, built by scripts/build.sh when it
# is that one), S3_VENV (/root/.cache/ringfeed-s3peers), OUT_JSON (one JSON
# line a run).
# Usage: bench/remote.sh [--help]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-link s3 faults random cache}
IMAGES=${IMAGES:-8000}
SHARDS=${SHARDS:-10}
RATE_MBIT=${RATE_MBIT:-400}
TBF_LATENCY_MS=${TBF_LATENCY_MS:-50}
RANDOM_RATE_MBIT=${RANDOM_RATE_MBIT:-0}
COUNT=${COUNT:-200000}
IO_DEPTHS=${IO_DEPTHS:-64 256}
LINK_IO_DEPTH=${LINK_IO_DEPTH:-64}
PREFETCH=${PREFETCH:-16}
WRK_SECONDS=${WRK_SECONDS:-10}
SHUFFLE_BLOCK=${SHUFFLE_BLOCK:-1024}
DATA_DIR=${DATA_DIR:-$ROOT/bench/data}
CACHE_DIR=${CACHE_DIR:-$DATA_DIR/remote-cache}
CACHE_IO_DEPTH=${CACHE_IO_DEPTH:-256}
CACHE_RAW_IO_DEPTHS=${CACHE_RAW_IO_DEPTHS:-64 256}
CACHE_RANKS=${CACHE_RANKS:-4}
CACHE_EPOCHS=${CACHE_EPOCHS:-2}
CACHE_RANK_THREADS=${CACHE_RANK_THREADS:-1}
CACHE_SIZE=${CACHE_SIZE:-}
CACHE_TIMEOUT=${CACHE_TIMEOUT:-600}
CACHE_CASES=${CACHE_CASES:-epoch1 epoch2 ranks raw}
RF=${RINGFEED:-$ROOT/build/ringfeed}
S3_VENV=${S3_VENV:-/root/.cache/ringfeed-s3peers}
PY=/usr/bin/python3
CORES=$(nproc)
OUT_JSON=${OUT_JSON:-$(mktemp "${TMPDIR:-/tmp}/ringfeed-remote.XXXXXX")}
NS=ringfeed-bench-remote
VETH_HOST=rfbr0 # the host's end (10.77.25.1); rfbr1 is the namespace's
VETH_NS=rfbr1
HOST_IP=10.77.25.1
SERVER_IP=10.77.25.2
PORT=8080       # nginx
FAULT_PORT=8081 # fault_server.py
CACHE_PORT=8082 # nginx again, with an access log: the cache part's
URL=http://$SERVER_IP:$PORT
IMG=$DATA_DIR/jpeg-$IMAGES
JPACK=$DATA_DIR/jpeg-$IMAGES.remote-$SHARDS
RAW=$DATA_DIR/raw-$((COUNT / 1000))k
[ "$COUNT" -eq 200000 ] || RAW=$DATA_DIR/raw-$COUNT
PACK=$RAW.pack
has() { [[ " $PARTS " == *" $1 "* ]]; }
cases() { has cache && [[ " $CACHE_CASES " == *" $1 "* ]]; }
[ "$(id -u)" -eq 0 ] || { echo "remote.sh: needs root (a network namespace, tc)" >&2; exit 1; }

"$ROOT/scripts/deps.sh" nginx-light curl wrk iproute2 python3-torch python3-torchvision
[ "$RF" != "$ROOT/build/ringfeed" ] || "$ROOT/scripts/build.sh" build
if has link && ! "$PY" -c 'import webdataset' 2>/dev/null; then
	"$PY" -m pip install --quiet --break-system-packages webdataset
fi
mkdir -p "$DATA_DIR"
: > "$OUT_JSON"

# ---- the S3 peers' venv ------------------------------------------------------
S3_PEERS=()
declare -A S3_SKIP=()
if has s3; then
	[ -x "$S3_VENV/bin/python" ] || "$PY" -m venv --system-site-packages "$S3_VENV"
	VPY=$S3_VENV/bin/python
	# s3_install NAME MODULE "PIP ARGS" ["PIP ARGS" ...]: installs (each
	# argument one pip call) unless MODULE imports; else a skip with why
	s3_install() {
		local name=$1 mod=$2 err a
		shift 2
		if ! "$VPY" -c "import $mod" 2>/dev/null; then
			err=$(mktemp)
			for a in "$@"; do
				# shellcheck disable=SC2086 # the arguments of one pip call
				"$VPY" -m pip install --quiet $a >> "$err" 2>&1 || break
			done
			if ! "$VPY" -c "import $mod" >> "$err" 2>&1; then
				S3_SKIP[$name]="$(grep -v '^[[:space:]]*$' "$err" | tail -2 | tr '\n' ' ')"
				rm -f "$err"
				return 0
			fi
			rm -f "$err"
		fi
		S3_PEERS+=("$name")
	}
	s3_install streaming streaming "mosaicml-streaming"
	# litdata's deps but torch (it asks for none, or >= 2.4 from 0.2.21 on)
	s3_install litdata litdata "--no-deps litdata==0.2.20" \
		"lightning-utilities filelock boto3 requests tifffile"
	s3_install s3torch s3torchconnector "--no-deps s3torchconnector s3torchconnectorclient"
fi

# ---- data ------------------------------------------------------------------
# A pack from a ringfeed that wrote no ringfeed.index beside its shards is
# packed again (the same shards, byte for byte): a remote source fetches that
# index instead of scanning every shard's headers over the link.
WRITES_INDEX=0
"$RF" pack --help 2>&1 | grep -q 'ringfeed.index' && WRITES_INDEX=1
stale_pack() { [ -d "$1" ] && [ "$WRITES_INDEX" = 1 ] && [ ! -f "$1/ringfeed.index" ] && rm -rf "$1"; return 0; }
index_says() { [ -f "$1/ringfeed.index" ] && echo "ringfeed.index beside them" || echo "no ringfeed.index: scanned over the link"; }
if has link || has s3 || has faults || has cache; then
	[ -d "$IMG" ] || "$RF" gen --out "$IMG" --count "$IMAGES" --classes 10
	stale_pack "$JPACK"
	if [ ! -d "$JPACK" ]; then
		# SHARDS shards: the total over SHARDS, with room for each sample's
		# tar headers and its cls member
		total=$(find "$IMG" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
		"$RF" pack "$IMG" -o "$JPACK" --shard-size $(( (total + IMAGES * 2048) / SHARDS + (1 << 20) )) >/dev/null
	fi
	NJ=$(find "$JPACK" -name 'shard-*.tar' | wc -l)
	JBYTES=$(find "$JPACK" -name 'shard-*.tar' -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
	JURLS="$URL/bench/$(basename "$JPACK")/shard-{000000..$(printf '%06d' $((NJ - 1)))}.tar"
	echo "data: $JPACK: $IMAGES JPEGs in $NJ shards, $JBYTES bytes; $(index_says "$JPACK")"
fi
if has s3; then
	for f in mds litdata; do
		want=streaming; [ $f = mds ] || want=litdata
		[[ " ${S3_PEERS[*]} " == *" $want "* ]] || continue
		[ -d "$JPACK.$f" ] || "$VPY" "$ROOT/bench/peers/remote_s3.py" convert --format $f \
			--shards "$JPACK" --out "$JPACK.$f" --shard-bytes $(( JBYTES / NJ )) 2>/dev/null
	done
fi
if has random || has cache; then
	[ -d "$RAW" ] || "$RF" gen --raw --out "$RAW" --count "$COUNT" --classes 100 --min-size 1024 --max-size 16384
	stale_pack "$PACK"
	[ -d "$PACK" ] || "$RF" pack --raw "$RAW" -o "$PACK" --align 4096 >/dev/null
	NP=$(find "$PACK" -name 'shard-*.tar' | wc -l)
	PURLS="$URL/bench/$(basename "$PACK")/shard-{000000..$(printf '%06d' $((NP - 1)))}.tar"
	# every packed sample's (shard, offset, length), for wrk
	RANGES=$PACK.ranges
	if [ ! -f "$RANGES" ]; then
		"$PY" - "$PACK" "$RANGES" <<'PY'
import glob, os, sys, tarfile
with open(sys.argv[2] + ".tmp", "w") as out:
    for p in sorted(glob.glob(os.path.join(sys.argv[1], "shard-*.tar"))):
        with tarfile.open(p) as t:
            for m in t:
                if m.isfile() and m.name.endswith(".bin"):
                    out.write("%s %d %d\n" % (os.path.basename(p), m.offset_data, m.size))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
PY
	fi
	echo "data: $PACK: $(wc -l < "$RANGES") samples in $NP shards, $(find "$PACK" -name 'shard-*.tar' -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}') bytes; $(index_says "$PACK")"
fi

SAMPLE_BYTES=0
if has cache; then
	# the samples' bytes: the shards' .jpg members, what a ranged read a
	# sample fetches (a no-cache epoch's http_bytes, its index aside)
	SAMPLE_BYTES=$("$PY" - "$JPACK" <<'PY'
import glob, os, sys, tarfile
n = 0
for p in sorted(glob.glob(os.path.join(sys.argv[1], "shard-*.tar"))):
    with tarfile.open(p) as t:
        n += sum(m.size for m in t if m.isfile() and m.name.endswith(".jpg"))
print(n)
PY
)
	mkdir -p "$CACHE_DIR"
	echo "cache: $CACHE_DIR/{jpeg,raw,ranks} on $(df --output=source "$CACHE_DIR" | tail -1) ($(stat -c %d "$(realpath "$CACHE_DIR")" | grep -qx "$(stat -c %d "$(realpath "$DATA_DIR")")" && echo "DATA_DIR's disk" || echo "NOT DATA_DIR's disk")); JPEG samples' bytes $SAMPLE_BYTES"
fi
# fresh DIR: DIR, empty (a cache folder the script makes and deletes)
fresh() { rm -rf "$1"; mkdir -p "$1"; }

# ---- the namespace, the link, the server -------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringfeed-remote.XXXXXX")
chmod 755 "$WORK" # nginx's workers (nobody) go through it
NGINX_PID=
FAULT_PID=
teardown() {
	local p
	for p in $NGINX_PID $FAULT_PID; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
	done
	if ip netns list | grep -q "^$NS\b"; then
		for p in $(ip netns pids "$NS"); do kill "$p" 2>/dev/null || true; done
		ip netns del "$NS"
	fi
	ip link del "$VETH_HOST" 2>/dev/null || true
	rm -rf "$WORK"
	if has cache; then
		rm -rf "$CACHE_DIR/jpeg" "$CACHE_DIR/raw" "$CACHE_DIR/ranks"
		rmdir "$CACHE_DIR" 2>/dev/null || true
	fi
}
# a namespace left by an interrupted run: what runs in it was started there
# by this script
teardown
trap teardown EXIT
trap 'exit 130' INT TERM
ip netns add "$NS"
ip link add "$VETH_HOST" type veth peer name "$VETH_NS"
ip link set "$VETH_NS" netns "$NS"
ip addr add "$HOST_IP/30" dev "$VETH_HOST"
ip link set "$VETH_HOST" up
ip -n "$NS" addr add "$SERVER_IP/30" dev "$VETH_NS"
ip -n "$NS" link set "$VETH_NS" up
ip -n "$NS" link set lo up
# the link's rate, server to client (the namespace's end of the veth); 0: none
shape() {
	if [ "$1" -gt 0 ]; then
		tc -n "$NS" qdisc replace dev "$VETH_NS" root tbf rate "${1}mbit" burst 256kb \
			latency "${TBF_LATENCY_MS}ms"
	else
		tc -n "$NS" qdisc del dev "$VETH_NS" root 2>/dev/null || true
	fi
}
mkdir -p "$WORK/nginx/tmp" "$WORK/www"
ln -s "$(realpath "$DATA_DIR")" "$WORK/www/bench" # the URL path /bench/..., the S3 bucket "bench"
N=$WORK/nginx
# the cache part's server, on CACHE_PORT, logs what it sent a request
# ($body_bytes_sent: the body alone, no headers, no TCP resends); the other
# parts' (PORT) logs nothing, as before
CACHE_SERVER=
if has cache; then
	CACHE_SERVER="log_format rfbytes '\$request_method \$uri \$status \$body_bytes_sent \$bytes_sent';
  server { listen $SERVER_IP:$CACHE_PORT; root $WORK/www; access_log $N/access.log rfbytes; }"
fi
cat > "$N/nginx.conf" <<EOF
daemon off; worker_processes $CORES;
pid $N/nginx.pid; error_log $N/error.log;
events { worker_connections 8192; }
http { access_log off; client_body_temp_path $N/tmp; proxy_temp_path $N/tmp;
  fastcgi_temp_path $N/tmp; uwsgi_temp_path $N/tmp; scgi_temp_path $N/tmp;
  sendfile on; tcp_nopush on; keepalive_requests 1000000; keepalive_timeout 300s;
  open_file_cache max=1024;
  server { listen $SERVER_IP:$PORT; root $WORK/www; }
  $CACHE_SERVER }
EOF
ip netns exec "$NS" /usr/sbin/nginx -p "$N" -c "$N/nginx.conf" < /dev/null > "$N/out" 2>&1 &
NGINX_PID=$!
for _ in $(seq 1 100); do
	curl -s -o /dev/null "$URL/" && break
	sleep 0.1
done
curl -s -o /dev/null "$URL/" || { echo "remote.sh: nginx did not start:" >&2; cat "$N/error.log" "$N/out" >&2; exit 1; }

# ---- runs ------------------------------------------------------------------
record() { printf '{"case":"%s","round":%d,"result":%s}\n' "$1" "$2" "$3" >> "$OUT_JSON"; }
# connections the server accepted so far (TCP PassiveOpens in the namespace:
# only this script's traffic)
accepted() { ip netns exec "$NS" awk '$1 == "Tcp:" && $2 ~ /^[0-9]/ {print $7}' /proc/net/snmp; }
# timed CMD...: CMD's last line of stdout (a JSON object) with added: the
# CPU seconds of the whole process tree (user + system), the connections the
# server accepted meanwhile, the machine's CPU seconds meanwhile, every
# process's (machine_cpu_s: what is not cpu_s is nginx, the kernel's network
# work and whatever else runs on this shared machine), DATA_DIR's disk's
# reads and bytes read (disk_reads, disk_read_bytes), and with the cache
# part's access log what nginx served (server_gets, server_heads,
# server_body_bytes)
busy() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
# DATA_DIR's disk's reads and sectors read so far (its /sys/class/block stat)
DISK_STAT=/sys/class/block/$(basename "$(df --output=source "$DATA_DIR" | tail -1)")/stat
disk_reads() { if [ -r "$DISK_STAT" ]; then awk '{print $1, $3}' "$DISK_STAT"; else echo 0 0; fi; }
timed() {
	local c0 out l0=-1 b0 k0
	c0=$(accepted)
	[ ! -f "$N/access.log" ] || l0=$(stat -c %s "$N/access.log")
	b0=$(busy)
	k0=$(disk_reads)
	out=$(/usr/bin/time -f '%U %S' -o "$WORK/time" "$@" | tail -1) || return 1
	[ -n "$out" ] || return 1
	"$PY" - "$out" "$WORK/time" "$c0" "$(accepted)" "$N/access.log" "$l0" "$b0" "$(busy)" \
		"$(getconf CLK_TCK)" "$k0" "$(disk_reads)" <<'PY'
import json, sys, time
a = sys.argv
d = json.loads(a[1])
u, s = open(a[2]).read().split()[-2:]
d["cpu_s"] = float(u) + float(s)
d["server_connections"] = int(a[4]) - int(a[3])
d["machine_cpu_s"] = (float(a[8]) - float(a[7])) / int(a[9])
(r0, s0), (r1, s1) = (map(int, x.split()) for x in (a[10], a[11]))
d["disk_reads"], d["disk_read_bytes"] = r1 - r0, (s1 - s0) * 512
if int(a[6]) >= 0:
    time.sleep(0.2)  # nginx logs a request once its response is sent
    g = h = b = 0
    with open(a[5], "rb") as f:
        f.seek(int(a[6]))
        for line in f.read().decode().splitlines():
            method, _, _, body, _ = line.split()
            h += method == "HEAD"
            g += method == "GET"
            b += int(body)
    d["server_gets"], d["server_heads"], d["server_body_bytes"] = g, h, b
print(json.dumps(d))
PY
}
FAILED=()
# run CASE LABEL ROUND CMD...: records the last line of CMD's stdout (its
# stderr shown when it fails)
run() {
	local case=$1 label=$2 round=$3 err x
	shift 3
	err=$(mktemp)
	if x=$("$@" 2>"$err" | tail -1) && [ -n "$x" ]; then
		record "$case" "$round" "$x"
		show "$label" "$x"
	else
		echo "  $label: FAILED: $*" >&2
		tail -5 "$err" | sed 's/^/    /' >&2
		FAILED+=("$case")
	fi
	rm -f "$err"
}
show() {
	"$PY" - "$1" "$2" <<'PY'
import json, sys
label, d = sys.argv[1], json.loads(sys.argv[2])
if "ids" in d or d.get("mb_per_s_run", 0) > 0:   # ringfeed on the JPEG shards
    print("  %-26s %7.1f MB/s, %6.0f images/s (whole run); after set-up %6.0f images/s; "
          "%d requests, %d connections%s" % (
        label, d["mb_per_s_run"], d["samples_per_s"], d.get("steady_samples_per_s", 0),
        d.get("http_requests", 0), d.get("server_connections", 0),
        ("; ids " + d["ids"]) if "ids" in d else ""))
elif "requests_per_s" in d:
    n = d.get("http_requests", d.get("requests", 0))
    print("  %-26s %9.0f requests/s, %.1f us CPU a request (process)%s, %d connections" % (
        label, d["requests_per_s"], 1e6 * d.get("cpu_s", 0) / max(n, 1),
        ("; ring thread %.1f us" % d["ring_cpu_us_per_request"]) if "ring_cpu_us_per_request" in d else "",
        d.get("server_connections", 0)))
elif "samples_per_s" in d:
    print("  %-26s %6.0f images/s" % (label, d.get("steady_samples_per_s", d["samples_per_s"])))
else:
    print("  %-26s %7.1f MB/s" % (label, d["mb_per_s"]))
PY
}
# ringfeed's JSON with its MB/s over the whole run (the shards' bytes over
# its seconds, its set-up included) and, given an --ids file, whether
# every one of N ids came exactly once
rf_json() {
	"$PY" - "$@" <<'PY'
import collections, json, sys
d = json.loads(sys.argv[1])
d["mb_per_s_run"] = int(sys.argv[2]) / 1e6 / d["seconds"]
after = d["seconds"] - d["create_s"]
d["requests_per_s"] = d.get("http_requests", 0) / after if after > 0 else 0
if len(sys.argv) > 4:
    n, seen = int(sys.argv[4]), collections.Counter()
    for line in open(sys.argv[3]):
        seen.update(int(x) for x in line.split())
    missing = sum(1 for i in range(n) if i not in seen)
    dup = sum(c - 1 for c in seen.values() if c > 1)
    extra = sum(1 for i in seen if not 0 <= i < n)
    d["ids_missing"], d["ids_duplicated"], d["ids_unknown"] = missing, dup, extra
    d["ids"] = ("every one of %d exactly once" % n if not (missing or dup or extra)
                else "%d missing, %d duplicated, %d unknown" % (missing, dup, extra))
    del d["requests_per_s"]
print(json.dumps(d))
PY
}
rf() { # CASE LABEL ROUND BYTES CMD... (ringfeed bench --json)
	local case=$1 label=$2 round=$3 bytes=$4 x
	shift 4
	if x=$(timed "$@" 2>"$WORK/err") && [ -n "$x" ]; then
		x=$(rf_json "$x" "$bytes")
		record "$case" "$round" "$x"
		"${SHOW:-show}" "$label" "$x"
	else
		echo "  $label: FAILED: $*" >&2
		tail -5 "$WORK/err" | sed 's/^/    /' >&2
		FAILED+=("$case")
	fi
}
# every shard at once through the link: its limit
curl_all() {
	local t0 t1 bytes
	t0=$(date +%s.%N)
	bytes=$(for i in $(seq 0 $((NJ - 1))); do
		curl -s -o /dev/null -w '%{size_download}\n' \
			"$URL/bench/$(basename "$JPACK")/shard-$(printf '%06d' "$i").tar" &
	done | awk '{s += $1} END {printf "%.0f", s}')
	t1=$(date +%s.%N)
	"$PY" -c 'import json,sys; b,t0,t1=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); print(json.dumps({"bytes": b, "seconds": t1-t0, "mb_per_s": b/1e6/(t1-t0)}))' "$bytes" "$t0" "$t1"
}
wrk_ranges() { # CONNECTIONS
	local x
	x=$(RANGES_FILE=$RANGES RANGES_PREFIX=/bench/$(basename "$PACK")/ timed wrk -t "$CORES" \
		-c "$1" -d "${WRK_SECONDS}s" -s "$ROOT/bench/peers/remote_wrk_ranges.lua" "$URL/") || return 1
	"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); d["requests_per_s"]=d["requests"]/(d["duration_us"]/1e6); d["in_flight"]=int(sys.argv[2]); print(json.dumps(d))' "$x" "$1"
}
fault_server() { # P503 PRESET: starts it in the namespace, on FAULT_PORT
	ip netns exec "$NS" "$PY" "$ROOT/bench/peers/remote_fault_server.py" --bind "$SERVER_IP" \
		"$DATA_DIR" --port "$FAULT_PORT" --p503 "$1" --preset "$2" --pshort 0 --p429 0 \
		--seed "$3" --lifetime 3600 > "$WORK/fault.out" 2> "$WORK/fault.err" &
	FAULT_PID=$!
	for _ in $(seq 1 100); do
		grep -q '^port' "$WORK/fault.out" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "remote.sh: fault_server.py did not start" >&2
	return 1
}
fault_stop() {
	kill "$FAULT_PID" 2>/dev/null && wait "$FAULT_PID" 2>/dev/null || true
	FAULT_PID=
	sed -n 's/^faults: /    server: /p' "$WORK/fault.err"
}

# ---- the cache part's runs -----------------------------------------------------
CSIZE=()
[ -z "$CACHE_SIZE" ] || CSIZE=(--cache-size "$CACHE_SIZE")
# the same URLs on the cache part's server
CJURLS=${JURLS:-}
CJURLS=${CJURLS/#"$URL"/"http://$SERVER_IP:$CACHE_PORT"}
CPURLS=${PURLS:-}
CPURLS=${CPURLS/#"$URL"/"http://$SERVER_IP:$CACHE_PORT"}
CACHE_PART_S=0
# cshow LABEL JSON: a ringfeed run, with its cache's counters when it had one
cshow() {
	"$PY" - "$1" "$2" <<'PY'
import json, sys
label, d = sys.argv[1], json.loads(sys.argv[2])
s = "  %-34s %7.0f samples/s whole run, %7.0f after set-up (%.2f s)" % (
    label, d["samples_per_s"], d["steady_samples_per_s"], d["create_s"])
if "cache_hits" in d:
    s += "; cache: %d hits (%.1f MB), %d misses, %.1f MB written, %d waits, %d evictions" % (
        d["cache_hits"], d["cache_hit_bytes"] / 1e6, d["cache_misses"],
        d["cache_written_bytes"] / 1e6, d["cache_waits"], d["cache_evictions"])
if "http_requests" in d:
    s += "; %d requests, %.1f MB" % (d["http_requests"], d["http_bytes"] / 1e6)
if d.get("server_gets"):
    s += "; nginx %d GETs, %.1f MB" % (d["server_gets"], d["server_body_bytes"] / 1e6)
s += "; CPU %.1f s, others' %.1f s" % (d["cpu_s"], d["machine_cpu_s"] - d["cpu_s"])
if d.get("disk_read_bytes"):
    s += "; disk %d reads, %.0f MB" % (d["disk_reads"], d["disk_read_bytes"] / 1e6)
print(s)
PY
}
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# crf CASE LABEL ROUND BYTES ARGS...: ringfeed bench ARGS --json, killed
# past CACHE_TIMEOUT (then a failed run)
crf() {
	local c=$1 l=$2 r=$3 b=$4
	shift 4
	SHOW=cshow rf "$c" "$l" "$r" "$b" timeout "$CACHE_TIMEOUT" "$RF" bench "$@" --json
}
# cache_info CASE ROUND DIR: what `ringfeed cache DIR --json` says, recorded
cache_info() {
	local x
	if x=$("$RF" cache "$3" --json 2>&1 | tail -1) && "$PY" -c 'import json,sys; json.loads(sys.argv[1])' "$x" 2>/dev/null; then
		record "$1" "$2" "$x"
		CACHE_RANGES=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["ranges"])' "$x")
		echo "  ringfeed cache $(basename "$3"): $x"
	else
		echo "  ringfeed cache $3: FAILED: $x" >&2
		FAILED+=("$1")
	fi
}
host_rx() { cat "/sys/class/net/$VETH_HOST/statistics/rx_bytes"; }
# cache_ranks ROUND: CACHE_RANKS processes at once on the JPEG URLs, one
# empty cache; the bytes nginx sent meanwhile (its access log) and the
# host's veth received, each rank's JSON
cache_ranks() {
	local r=$1 d=$CACHE_DIR/ranks i ok=1 t0 t1 log0 rx0 rx1 x rc
	local pids=()
	fresh "$d"
	log0=$(stat -c %s "$N/access.log")
	rx0=$(host_rx)
	t0=$(date +%s.%N)
	for i in $(seq 0 $((CACHE_RANKS - 1))); do
		timeout "$CACHE_TIMEOUT" "$RF" bench --source "$CJURLS" --rank "$i" --world "$CACHE_RANKS" \
			--seed "$r" --epochs "$CACHE_EPOCHS" --threads "$CACHE_RANK_THREADS" \
			--io-depth "$CACHE_IO_DEPTH" --cache-dir "$d" "${CSIZE[@]}" --json \
			> "$WORK/rank$i.json" 2> "$WORK/rank$i.err" &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		rc=0
		wait "${pids[$i]}" || rc=$?
		if [ $rc != 0 ]; then
			ok=0
			echo "  rank $i: FAILED (exit $rc$([ $rc = 124 ] && echo ": past CACHE_TIMEOUT"))" >&2
			tail -5 "$WORK/rank$i.err" | sed 's/^/    /' >&2
		fi
	done
	t1=$(date +%s.%N)
	sleep 0.5 # nginx's last lines
	rx1=$(host_rx)
	if [ $ok = 0 ]; then
		FAILED+=(cache_ranks)
		return 0
	fi
	x=$("$PY" - "$N/access.log" "$log0" "$(basename "$JPACK")" "$t0" "$t1" "$rx0" "$rx1" \
		"$SAMPLE_BYTES" "$WORK" "$CACHE_RANKS" <<'PY'
import json, sys
a = sys.argv
pack, t0, t1, rx0, rx1 = a[3], float(a[4]), float(a[5]), int(a[6]), int(a[7])
d = {"wall_s": t1 - t0, "sample_bytes": int(a[8]), "host_rx_bytes": rx1 - rx0,
     "server_shard_bytes": 0, "server_shard_gets": 0, "server_index_bytes": 0,
     "server_index_gets": 0, "server_heads": 0, "server_other": 0, "server_bytes_sent": 0,
     "server_status": {}}
with open(a[1], "rb") as f:
    f.seek(int(a[2]))
    for line in f.read().decode().splitlines():
        method, uri, status, body, sent = line.split()
        d["server_status"][status] = d["server_status"].get(status, 0) + 1
        d["server_bytes_sent"] += int(sent)
        if method == "HEAD":
            d["server_heads"] += 1
        elif uri.startswith("/bench/%s/shard-" % pack):
            d["server_shard_bytes"] += int(body)
            d["server_shard_gets"] += 1
        elif uri == "/bench/%s/ringfeed.index" % pack:
            d["server_index_bytes"] += int(body)
            d["server_index_gets"] += 1
        else:
            d["server_other"] += 1
keep = ("samples", "seconds", "samples_per_s", "steady_samples_per_s", "create_s", "bad_samples",
        "http_requests", "http_bytes", "http_retries", "http_errors", "cache_hits",
        "cache_hit_bytes", "cache_misses", "cache_written_bytes", "cache_waits", "cache_evictions")
d["ranks"] = []
for i in range(int(a[10])):
    r = json.loads(open("%s/rank%d.json" % (a[9], i)).read().strip().splitlines()[-1])
    d["ranks"].append({k: r[k] for k in keep if k in r})
print(json.dumps(d))
PY
) || { echo "  ranks: FAILED: their figures" >&2; FAILED+=(cache_ranks); return 0; }
	record cache_ranks "$r" "$x"
	"$PY" - "$x" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
print("  %d ranks at once, %.1f s wall: the server sent %.1f MB of shards in %d GETs = %.3fx the "
      "samples' %.1f MB (index %.1f MB in %d GETs, %d HEADs; veth %.1f MB in all)" % (
    len(d["ranks"]), d["wall_s"], d["server_shard_bytes"] / 1e6, d["server_shard_gets"],
    d["server_shard_bytes"] / d["sample_bytes"], d["sample_bytes"] / 1e6,
    d["server_index_bytes"] / 1e6, d["server_index_gets"], d["server_heads"],
    d["host_rx_bytes"] / 1e6))
for i, r in enumerate(d["ranks"]):
    print("    rank %d: %d samples in %.1f s (%.0f/s), %d hits, %d misses, %d waits, "
          "%.1f MB written, %d requests, %.1f MB fetched, %d bad" % (
        i, r["samples"], r["seconds"], r["samples_per_s"], r.get("cache_hits", 0),
        r.get("cache_misses", 0), r.get("cache_waits", 0), r.get("cache_written_bytes", 0) / 1e6,
        r.get("http_requests", 0), r.get("http_bytes", 0) / 1e6, r["bad_samples"]))
PY
}
# altern ROUND A B: "A B" in odd rounds, "B A" in even ones
altern() { if [ $(($1 % 2)) = 1 ]; then echo "$2 $3"; else echo "$3 $2"; fi; }

echo "machine: $CORES cores, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg); link: veth + tbf ${RATE_MBIT} Mbit, queue ${TBF_LATENCY_MS} ms (random part: $([ "$RANDOM_RATE_MBIT" -gt 0 ] && echo "${RANDOM_RATE_MBIT} Mbit" || echo "no tbf"))"
if has s3; then
	echo "S3 peers: ${S3_PEERS[*]:-none}"
	for k in "${!S3_SKIP[@]}"; do echo "  $k: skipped: ${S3_SKIP[$k]}"; done
fi
if has link; then
	# the decode limit: the same shards from local disk, warm (no link)
	cat "$JPACK"/*.tar > /dev/null
	run decode_local "ringfeed, local disk (warm)" 0 "$RF" bench --source "$JPACK" \
		--threads "$CORES" --json
fi
if cases raw; then
	# the raw set over the URLs into a cache, once (the storage-bound case
	# reads it back in every round)
	t_part=$SECONDS
	shape "$RANDOM_RATE_MBIT"
	fresh "$CACHE_DIR/raw"
	# a range fetched while the cache's writes are behind is not kept (by
	# design: ringfeed's staging memory is bounded): passes until all are
	NRAW=$(wc -l < "$RANGES")
	for pass in 1 2 3 4; do
		CACHE_RANGES=0
		crf cache_raw_fill "raw set into the cache, pass $pass" "$pass" 0 --raw --raw-max 16 \
			--source "$CPURLS" --io-depth "${CACHE_RAW_IO_DEPTHS%% *}" --prefetch "$PREFETCH" \
			--seed "$pass" --cache-dir "$CACHE_DIR/raw" "${CSIZE[@]}"
		cache_info cache_raw_info "$pass" "$CACHE_DIR/raw"
		[ "$CACHE_RANGES" -lt "$NRAW" ] || break
	done
	[ "$CACHE_RANGES" -ge "$NRAW" ] || echo "  the raw cache holds $CACHE_RANGES of $NRAW samples after $pass passes" >&2
	CACHE_PART_S=$((CACHE_PART_S + SECONDS - t_part))
fi
for r in $(seq 1 "$ROUNDS"); do
	echo "round $r/$ROUNDS"
	if has link || has s3 || has faults; then
		cat "$JPACK"/*.tar > /dev/null # the server's page cache
		shape "$RATE_MBIT"
	fi
	if has link; then
		run curl "curl, all shards at once" "$r" curl_all
		rf rf_random "ringfeed, random (default)" "$r" "$JBYTES" "$RF" bench --source "$JURLS" \
			--threads "$CORES" --seed "$r" --json
		rf rf_random_d "ringfeed, random, depth $LINK_IO_DEPTH" "$r" "$JBYTES" "$RF" bench \
			--source "$JURLS" --io-depth "$LINK_IO_DEPTH" --threads "$CORES" --seed "$r" --json
		rf rf_seq "ringfeed, sequential" "$r" "$JBYTES" "$RF" bench --source "$JURLS" \
			--shard-access sequential --shuffle-block "$SHUFFLE_BLOCK" --threads "$CORES" \
			--seed "$r" --json
		run webdataset "webdataset" "$r" "$PY" "$ROOT/bench/peers/webdataset_loader.py" \
			--shards "$JURLS" --workers "$CORES" --json
	fi
	if has s3; then
		# ringfeed itself through the S3 endpoint: s3:// URLs, path-style to
		# AWS_ENDPOINT_URL, SigV4-signed with dummy keys (nginx ignores them)
		rf s3_ringfeed "ringfeed (s3://)" "$r" "$JBYTES" env AWS_ENDPOINT_URL="$URL" \
			AWS_ACCESS_KEY_ID=ringfeed-bench AWS_SECRET_ACCESS_KEY=ringfeed-bench \
			AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true "$RF" bench \
			--source "s3://bench/$(basename "$JPACK")/shard-{000000..$(printf '%06d' $((NJ - 1)))}.tar" \
			--io-depth "$LINK_IO_DEPTH" --threads "$CORES" --seed "$r" --json
		for p in "${S3_PEERS[@]}"; do
			case $p in
			streaming) pre=$(basename "$JPACK").mds ;;
			litdata) pre=$(basename "$JPACK").litdata ;;
			*) pre=$(basename "$JPACK") ;;
			esac
			run "s3_$p" "$p (S3)" "$r" "$VPY" "$ROOT/bench/peers/remote_s3.py" read --peer "$p" \
				--endpoint "$URL" --bucket bench --prefix "$pre" --shards "$NJ" \
				--workers "$CORES" --seed "$r" --json
		done
	fi
	if has faults; then
		FURLS="http://$SERVER_IP:$FAULT_PORT/$(basename "$JPACK")/shard-{000000..$(printf '%06d' $((NJ - 1)))}.tar"
		for f in clean faulty; do
			if [ $f = clean ]; then fault_server 0 0 "$r"; else fault_server 0.05 0.01 "$r"; fi
			rm -f "$WORK/ids"
			if x=$(timed "$RF" bench --source "$FURLS" --threads "$CORES" --seed "$r" \
				--ids "$WORK/ids" --json 2>"$WORK/err") && [ -n "$x" ]; then
				x=$(rf_json "$x" "$JBYTES" "$WORK/ids" "$IMAGES")
				record "faults_$f" "$r" "$x"
				show "ringfeed, $f server" "$x"
			else
				echo "  ringfeed, $f server: FAILED" >&2
				tail -5 "$WORK/err" | sed 's/^/    /' >&2
				FAILED+=("faults_$f")
			fi
			fault_stop
		done
	fi
	if has random; then
		cat "$PACK"/*.tar > /dev/null
		shape "$RANDOM_RATE_MBIT"
		for d in $IO_DEPTHS; do
			run "wrk_$d" "wrk, $d connections" "$r" wrk_ranges "$d"
			rf "rf_raw_$d" "ringfeed --raw, depth $d" "$r" 0 "$RF" bench --raw --raw-max 16 \
				--source "$PURLS" --io-depth "$d" --prefetch "$PREFETCH" --seed "$r" --json
		done
	fi
	if has cache; then
		t_part=$SECONDS
		cat "$JPACK"/*.tar > /dev/null # the server's page cache, and the local shards'
		shape "$RATE_MBIT"
		JFLAGS=(--io-depth "$CACHE_IO_DEPTH" --threads "$CORES")
		# epoch 1: an empty cache (which it fills) and none
		fresh "$CACHE_DIR/jpeg"
		for w in $( (cases epoch1 || cases epoch2) && altern "$r" none cache); do
			[ "$w" = cache ] || cases epoch1 || continue
			if [ "$w" = none ]; then
				crf cache_e1_none "epoch 1, no cache" "$r" "$JBYTES" --source "$CJURLS" \
					"${JFLAGS[@]}" --seed "$r"
			else
				crf cache_e1_cache "epoch 1, empty cache" "$r" "$JBYTES" --source "$CJURLS" \
					"${JFLAGS[@]}" --seed "$r" --cache-dir "$CACHE_DIR/jpeg" "${CSIZE[@]}"
			fi
		done
		if cases epoch1 || cases epoch2; then
			cache_info cache_jpeg_info "$r" "$CACHE_DIR/jpeg"
		fi
		# epoch 2 (another order) from that cache, and from local disk
		for w in $(cases epoch2 && altern "$r" local cache); do
			if [ "$w" = local ]; then
				crf cache_e2_local "epoch 2, local shards" "$r" "$JBYTES" --source "$JPACK" \
					"${JFLAGS[@]}" --seed $((r + 1000))
			else
				crf cache_e2_cache "epoch 2, from the cache" "$r" "$JBYTES" --source "$CJURLS" \
					"${JFLAGS[@]}" --seed $((r + 1000)) --cache-dir "$CACHE_DIR/jpeg" "${CSIZE[@]}"
			fi
		done
		cases ranks && cache_ranks "$r"
		# storage-bound: the raw set, cold, from the cache and from the local pack
		shape "$RANDOM_RATE_MBIT"
		for d in $(cases raw && echo "$CACHE_RAW_IO_DEPTHS"); do
			for w in $(altern "$r" local cache); do
				drop_caches
				if [ "$w" = local ]; then
					crf "cache_raw_local_$d" "raw, depth $d, local pack, cold" "$r" 0 --raw \
						--raw-max 16 --source "$PACK" --io-depth "$d" --prefetch "$PREFETCH" \
						--seed "$r"
				else
					crf "cache_raw_cache_$d" "raw, depth $d, from the cache, cold" "$r" 0 --raw \
						--raw-max 16 --source "$CPURLS" --io-depth "$d" --prefetch "$PREFETCH" \
						--seed "$r" --cache-dir "$CACHE_DIR/raw" "${CSIZE[@]}"
				fi
			done
		done
		CACHE_PART_S=$((CACHE_PART_S + SECONDS - t_part))
	fi
done

"$PY" - "$OUT_JSON" "${JBYTES:-0}" "$IMAGES" "$LINK_IO_DEPTH" "$CACHE_PART_S" "$CACHE_IO_DEPTH" <<'PY'
import json, statistics, sys
by = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    by.setdefault(r["case"], []).append(r["result"])
jbytes, images, link_depth = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def med(case, f):
    return statistics.median(f(x) for x in by[case]) if case in by else None
mbs = lambda x: x.get("mb_per_s_run", x.get("mb_per_s"))
ips = lambda x: x["samples_per_s"]
steady = lambda x: x.get("steady_samples_per_s", x["samples_per_s"])
rps = lambda x: x["requests_per_s"]
print()
if any(not k.startswith("cache_") for k in by):
    print("medians of %d rounds" % max(len(v) for k, v in by.items() if not k.startswith("cache_")))
for k, v in by.items():
    if k.startswith("cache_"):
        continue
    f = (rps if k.startswith(("wrk", "rf_raw")) else mbs if k == "curl"
         else steady if k == "decode_local" else ips)
    unit = "requests/s" if f is rps else "MB/s" if f is mbs else "images/s"
    print("  %-16s %s   median %9.1f %s" % (k, " ".join("%9.1f" % f(x) for x in v), med(k, f), unit))
print()
def ratio(name, a, b, target):
    if a is not None and b is not None:
        print("%-64s %6.2fx  (target %s)" % (name, a / b, target))
LINK = (("rf_random", "random, default depth"), ("rf_random_d", "random, depth %d" % link_depth),
        ("rf_seq", "sequential"))
if "curl" in by:
    link = med("curl", mbs)
    per = jbytes / images
    print("link limit: %.1f MB/s (parallel curl) = %.0f images/s of %.0f KB" % (link, link * 1e6 / per, per / 1e3))
    if "decode_local" in by:
        d = by["decode_local"][0]
        print("decode limit (ringfeed, local shards, warm): %.0f images/s = %.1f MB/s: link %s than decode" % (
            steady(d), steady(d) * per / 1e6, "slower" if link * 1e6 / per < steady(d) else "NOT slower"))
    for case, name in LINK:
        ratio("ringfeed %s, epoch 1 / link (whole run, set-up in):" % name, med(case, mbs), link,
              ">= 0.9x")
    for case, name in LINK:
        ratio("ringfeed %s / webdataset (images/s, epoch 1):" % name, med(case, ips),
              med("webdataset", ips), ">= 2x")
    if "webdataset" in by:
        print("webdataset / link: %.2fx" % (med("webdataset", ips) * per / 1e6 / link))
    for case, name in LINK:
        if case in by:
            print("ringfeed %s: ring thread %.2f ms CPU a MB, %.0f us a request; %.0f connections "
                  "for %.0f requests" % (
                name, med(case, lambda x: x["ring_cpu_ms_per_mb"]),
                med(case, lambda x: x["ring_cpu_us_per_request"]),
                med(case, lambda x: x.get("server_connections", 0)),
                med(case, lambda x: x.get("http_requests", 0))))
for p in ("streaming", "litdata", "s3torch"):
    for case, name in (("s3_ringfeed", "s3://, depth %d" % link_depth),) + LINK:
        ratio("ringfeed %s / %s (S3, images/s, epoch 1):" % (name, p), med(case, ips),
              med("s3_" + p, ips), "reported")
if "faults_clean" in by:
    ratio("faults: 5% 503 + 1% reset / clean (images/s, whole run):",
          med("faults_faulty", ips), med("faults_clean", ips), ">= 0.8x")
    for f in ("clean", "faulty"):
        for i, x in enumerate(by.get("faults_" + f, [])):
            print("  %s round %d: ids %s; %d requests, %d retries, %d errors" % (
                f, i + 1, x["ids"], x["http_requests"], x["http_retries"], x["http_errors"]))
depths = sorted(int(k[4:]) for k in by if k.startswith("wrk_"))
best = max((med("wrk_%d" % d, rps), d) for d in depths) if depths else None
for d in depths:
    rf, wrk = "rf_raw_%d" % d, "wrk_%d" % d
    ratio("random small samples, %d in flight: ringfeed / wrk (requests/s):" % d, med(rf, rps),
          med(wrk, rps), ">= 0.8x")
    if rf in by:
        print("  ringfeed: ring thread %.1f us CPU a request (%.2f ms a MB), process %.1f us; "
              "wrk %.1f us; connections: ringfeed %.0f for %.0f requests, wrk %.0f" % (
                  med(rf, lambda x: x["ring_cpu_us_per_request"]),
                  med(rf, lambda x: x["ring_cpu_ms_per_mb"]),
                  med(rf, lambda x: 1e6 * x["cpu_s"] / x["http_requests"]),
                  med(wrk, lambda x: 1e6 * x["cpu_s"] / x["requests"]),
                  med(rf, lambda x: x["server_connections"]),
                  med(rf, lambda x: x["http_requests"]),
                  med(wrk, lambda x: x["server_connections"])))
if best and len(depths) > 1:
    top = max((med("rf_raw_%d" % d, rps), d) for d in depths if "rf_raw_%d" % d in by)
    ratio("random small samples, best / best (ringfeed depth %d, wrk %d):" % (top[1], best[1]),
          top[0], best[0], ">= 0.8x")
if any(k.startswith("cache_") for k in by):
    sps = lambda x: x["samples_per_s"]
    print()
    print("node-local cache (issue 26), samples/s: whole run | after set-up, per round; medians"
          " (JPEG: --io-depth %s)" % sys.argv[6])
    raw = sorted({int(k.rsplit("_", 1)[1]) for k in by if k.startswith("cache_raw_local_")})
    names = [("cache_e1_none", "epoch 1, no cache"), ("cache_e1_cache", "epoch 1, empty cache"),
             ("cache_e2_local", "epoch 2, local shards"), ("cache_e2_cache", "epoch 2, from the cache")]
    for dd in raw:
        names += [("cache_raw_local_%d" % dd, "raw, depth %d, local, cold" % dd),
                  ("cache_raw_cache_%d" % dd, "raw, depth %d, cache, cold" % dd)]
    for k, name in names:
        if k in by:
            print("  %-28s %s   median %8.0f | %8.0f" % (name, "  ".join(
                "%7.0f | %7.0f" % (sps(x), steady(x)) for x in by[k]), med(k, sps), med(k, steady)))
            print("  %-28s %s" % ("  CPU s: its own | others'", "  ".join(
                "%7.1f | %7.1f" % (x["cpu_s"], x["machine_cpu_s"] - x["cpu_s"]) for x in by[k])))
            if k.startswith(("cache_raw", "cache_e2")):
                print("  %-28s %s" % ("  disk: reads | MB read", "  ".join(
                    "%7d | %7.0f" % (x["disk_reads"], x["disk_read_bytes"] / 1e6) for x in by[k])))
    def paired(a, b, f):
        return " ".join("%.2f" % (f(x) / f(y)) for x, y in zip(by.get(a, []), by.get(b, [])))
    def both(name, a, b, target):
        if a in by and b in by:
            print("%-64s %6.2fx  (target %s; whole run %.2fx; per round %s)" % (
                name, med(a, steady) / med(b, steady), target, med(a, sps) / med(b, sps),
                paired(a, b, steady)))
    print()
    if "cache_e1_cache" in by and "cache_e1_none" in by:
        print("%-64s %6.2fx  (target >= 0.95x; after set-up %.2fx; per round %s)" % (
            "epoch 1 with an empty cache / without (whole run):",
            med("cache_e1_cache", sps) / med("cache_e1_none", sps),
            med("cache_e1_cache", steady) / med("cache_e1_none", steady),
            paired("cache_e1_cache", "cache_e1_none", sps)))
    both("epoch 2 from the cache / local shards, JPEG (after set-up):", "cache_e2_cache",
         "cache_e2_local", ">= 0.95x")
    def hits(case):
        for x in by.get(case, []):
            print("  from the cache: %d hits, %d misses%s; ringfeed's http_requests %d (%d B); "
                  "nginx: %d GETs, %d HEADs, %d B of bodies" % (
                x["cache_hits"], x["cache_misses"], "" if x["cache_misses"] == 0 else " (NOT all hits)",
                x.get("http_requests", 0), x.get("http_bytes", 0), x.get("server_gets", -1),
                x.get("server_heads", -1), x.get("server_body_bytes", -1)))
    if "cache_e1_cache" in by:
        print("  epoch 1 fills: %s ranges written (MB: %s), of %d samples" % (
            " ".join(str(x["cache_misses"]) for x in by["cache_e1_cache"]),
            " ".join("%.1f" % (x["cache_written_bytes"] / 1e6) for x in by["cache_e1_cache"]),
            by["cache_e1_cache"][0]["samples"]))
    hits("cache_e2_cache")
    if "cache_raw_fill" in by:
        print("  raw fill: %s (pass: ranges fetched / written MB / samples/s); cached after each: %s ranges" % (
            ", ".join("%d / %.1f / %.0f" % (x["cache_misses"], x["cache_written_bytes"] / 1e6,
                                            x["samples_per_s"]) for x in by["cache_raw_fill"]),
            " ".join(str(x["ranges"]) for x in by.get("cache_raw_info", []))))
    for dd in raw:
        both("raw 1-16 KiB, depth %d, cold: from the cache / local pack (after set-up):" % dd,
             "cache_raw_cache_%d" % dd, "cache_raw_local_%d" % dd, ">= 0.95x")
        hits("cache_raw_cache_%d" % dd)
    if "cache_ranks" in by:
        rk = by["cache_ranks"]
        print("%-64s %6.3fx  (target <= 1.05x; per round %s)" % (
            "%d ranks, one cache: shards' bytes sent / samples' bytes:" % len(rk[0]["ranks"]),
            med("cache_ranks", lambda x: x["server_shard_bytes"] / x["sample_bytes"]),
            " ".join("%.3f" % (x["server_shard_bytes"] / x["sample_bytes"]) for x in rk)))
        print("  wall %s s; per rank hits / misses / waits: %s" % (
            " ".join("%.1f" % x["wall_s"] for x in rk), "; ".join(
                " ".join("%d/%d/%d" % (q.get("cache_hits", 0), q.get("cache_misses", 0),
                                       q.get("cache_waits", 0)) for q in x["ranks"]) for x in rk)))
        if "cache_e1_none" in by:
            print("  a no-cache epoch fetched %s B (http_bytes: the ranged sample reads, set-up's"
                  " index and probes not counted), the samples are %d B" % (
                " ".join(str(x["http_bytes"]) for x in by["cache_e1_none"]), rk[0]["sample_bytes"]))
    print("cache part: %d s" % int(sys.argv[5]))
print("raw runs: %s" % sys.argv[1])
PY
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "remote.sh: failed runs: ${FAILED[*]}" >&2
	exit 1
fi
