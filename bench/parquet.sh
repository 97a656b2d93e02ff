#!/usr/bin/env bash
# parquet.sh - Parquet as the `datasets` library writes it, against tar
# shards of the same photos and against the Python loops people use on it,
# side by side in one run (issue 39's target). Parts (PARTS):
#   local   COUNT (3,200) photos: crops of the colour photographs shipped in
#           scikit-image (astronaut, coffee, chelsea, rocket, the
#           motorcycle stereo pair: bench/gpu/photos.py --size 500 --grain
#           2, about 500x375 as ImageNet's, baseline JPEG q75-95, 5%
#           progressive or gray), 10 classes (ImageFolder). The Parquet
#           file: bench/parquet_set.py (datasets' Dataset.to_parquet, Image
#           + ClassLabel features, the library's row groups and pages,
#           CODEC snappy: every column snappy; library: as datasets 5.x
#           writes it, the image column uncompressed). The tar shards:
#           `ringfeed pack` of the same photos. Every run RandomResizedCrop
#           224 + flip 0.5, page cache dropped before each (cold: epoch 1 as
#           read from the disk), one epoch:
#             ringfeed (--threads THREADS, 2) on the Parquet file: random
#             access (a page read a sample), the sequential sampler (index
#             order, the file in chunks), --shard-access sequential (block
#             shuffle; "not available" where the build refuses it); on the
#             tar shards: random, the sequential sampler and
#             --shard-access sequential (index cache
#             from an untimed first run, as a job's later runs);
#             the `datasets` loop (bench/peers/datasets_loop.py:
#             load_dataset("parquet") + with_transform + DataLoader, workers
#             = cores; its Arrow cache made by the first run, untimed);
#             pyarrow iter_batches + PIL + torchvision in a DataLoader
#             (bench/peers/pyarrow_loop.py, workers = cores).
#           Rates are samples/s over the whole run (set-up and startup in),
#           with each run's storage reads (rusage inblock x 512: the
#           process and its waited-for children, O_DIRECT reads included)
#           and ringfeed's bytes_fetched counter (the bytes its reads brought
#           in, each read once: storage reads count the libraries loaded
#           cold too), against the file's bytes.
#   link    the Parquet file over http from nginx in a network namespace
#           behind `tc tbf` at RATE_MBIT (400) (as bench/remote.sh): curl's
#           MB/s (the link, every round) against ringfeed in sequential
#           access over LINK_COPIES (10) copies of the file (their bytes over
#           the run: one file alone is mostly set-up and the pipeline's fill
#           and drain); ringfeed's runs skipped,
#           "remote Parquet not in this build", where it refuses the URL at
#           create.
#   hub     the Parquet file as a Hub dataset (tests/hub_server.py, the
#           stand-in: data/train-*.parquet), hf://datasets/bench/photos/
#           data/*.parquet: the requests a file at set-up (the stand-in's
#           log of `ringfeed index`, the set-up alone: tree listing,
#           resolves, CDN reads;
#           where remote Parquet is refused, the listing's before it).
# Needs root (drop_caches, the namespace). Settings by environment: ROUNDS
# (3), PARTS ("local link hub"), COUNT, CODEC (snappy), THREADS (2),
# RATE_MBIT, LINK_COPIES, DATA_DIR (bench/data), RINGFEED (rel/ringfeed, built by
# scripts/build.sh rel --buildtype=release when it is that one), OUT_JSON.
# Usage: bench/parquet.sh [--help]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-local link hub}
COUNT=${COUNT:-3200}
CODEC=${CODEC:-snappy}
THREADS=${THREADS:-2}
RATE_MBIT=${RATE_MBIT:-400}
LINK_COPIES=${LINK_COPIES:-10}
DATA_DIR=${DATA_DIR:-$ROOT/bench/data}
RF=${RINGFEED:-$ROOT/rel/ringfeed}
PY=/usr/bin/python3
CORES=$(nproc)
OUT_JSON=${OUT_JSON:-$(mktemp "${TMPDIR:-/tmp}/ringfeed-parquet.XXXXXX")}
PHOTOS=$DATA_DIR/photos-pq-$COUNT
PQDIR=$DATA_DIR/photos-pq-$COUNT-parquet-$CODEC
PQ=$PQDIR/train-00000-of-00001.parquet
PACK=$DATA_DIR/photos-pq-$COUNT.pack
HFCACHE=$DATA_DIR/photos-pq-$COUNT-hf-cache-$CODEC
AUG="--random-resized-crop 224 --flip 0.5 --threads $THREADS"
has() { [[ " $PARTS " == *" $1 "* ]]; }
[ "$(id -u)" -eq 0 ] || { echo "parquet.sh: needs root (drop_caches, a network namespace)" >&2; exit 1; }

"$ROOT/scripts/deps.sh" python3-torch python3-torchvision python3-skimage nginx-light curl iproute2
[ "$RF" != "$ROOT/rel/ringfeed" ] || "$ROOT/scripts/build.sh" rel --buildtype=release
VPY=$("$ROOT/scripts/datasets_venv.sh") # datasets, pyarrow over Debian's torch
: > "$OUT_JSON"

# ---- data ------------------------------------------------------------------
[ -d "$PHOTOS" ] || "$PY" "$ROOT/bench/gpu/photos.py" --out "$PHOTOS" --count "$COUNT" \
	--classes 10 --size 500 --grain 2
if [ ! -f "$PQ" ]; then
	mkdir -p "$PQDIR"
	"$VPY" "$ROOT/bench/parquet_set.py" "$PHOTOS" "$PQ" --codec \
		"$([ "$CODEC" = library ] && echo library || echo snappy)" 2>/dev/null > "$PQDIR/set.json"
fi
[ -d "$PACK" ] || "$RF" pack "$PHOTOS" -o "$PACK" > /dev/null
"$RF" index "$PACK" -o "$PACK.idx" > /dev/null
PQBYTES=$(stat -c %s "$PQ")
TARBYTES=$(find "$PACK" -name '*.tar' -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
JPEGBYTES=$(find "$PHOTOS" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')

drop() { sync; echo 1 > /proc/sys/vm/drop_caches; }
record() { printf '{"case":"%s","round":%d,"result":%s}\n' "$1" "$2" "$3" >> "$OUT_JSON"; }
# a command's JSON line with its storage reads (rusage inblock, bytes) and
# CPU seconds (user + system, children waited for included) added
measured() {
	local t out
	t=$(mktemp)
	out=$(/usr/bin/time -f '%I %U %S' -o "$t" "$@" | tail -n 1)
	"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); i,u,s=open(sys.argv[2]).read().split()[-3:]; d["storage_bytes"]=int(i)*512; d["cpu_s"]=float(u)+float(s); print(json.dumps(d))' "$out" "$t"
	rm -f "$t"
}
show() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[2]); c=d.get("counters", {}); print("  %-26s %8.1f samples/s  storage %7.1f MB  fetched %7.1f MB  cpu %5.1f s" % (sys.argv[1], d["samples_per_s"], d.get("storage_bytes", 0)/1e6, c.get("bytes_fetched", 0)/1e6, d.get("cpu_s", 0)))' "$1" "$2"; }

echo "machine: $CORES cores, $(uname -r), $(findmnt -no SOURCE,FSTYPE -T "$DATA_DIR"), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ringfeed: $RF ($(cd "$ROOT" && git describe --always --dirty 2>/dev/null))"
echo "photos: $PHOTOS, $COUNT JPEGs, $JPEGBYTES bytes; Parquet $PQ: $PQBYTES bytes $(cat "$PQDIR/set.json" 2>/dev/null); tar $PACK: $TARBYTES bytes"

# --shard-access sequential on Parquet: another lane's; run where accepted
PQ_SEQ=1
if ! why=$("$RF" bench --source "$PQ" --shard-access sequential --batches 1 --threads 1 --json 2>&1 >/dev/null); then
	PQ_SEQ=0
	echo "ringfeed Parquet --shard-access sequential: not available in this build ($(head -c 300 <<<"$why"))"
fi

# ---- local -------------------------------------------------------------------
if has local; then
	for r in $(seq 1 "$ROUNDS"); do
		echo "round $r/$ROUNDS"
		drop; x=$(measured "$RF" bench --source "$PQ" $AUG --seed "$r" --json)
		record rf_pq_random "$r" "$x"; show "ringfeed parquet random" "$x"
		drop; x=$(measured "$RF" bench --source "$PQ" $AUG --sampler sequential --seed "$r" --json)
		record rf_pq_inorder "$r" "$x"; show "ringfeed parquet in order" "$x"
		if [ "$PQ_SEQ" = 1 ]; then
			drop; x=$(measured "$RF" bench --source "$PQ" $AUG --shard-access sequential --seed "$r" --json)
			record rf_pq_seq "$r" "$x"; show "ringfeed parquet sequential" "$x"
		fi
		drop; x=$(measured "$RF" bench --source "$PACK" --index-cache "$PACK.idx" $AUG --seed "$r" --json)
		record rf_tar_random "$r" "$x"; show "ringfeed tar random" "$x"
		drop; x=$(measured "$RF" bench --source "$PACK" --index-cache "$PACK.idx" $AUG \
			--shard-access sequential --seed "$r" --json)
		record rf_tar_seq "$r" "$x"; show "ringfeed tar sequential" "$x"
		drop; x=$(measured "$RF" bench --source "$PACK" --index-cache "$PACK.idx" $AUG \
			--sampler sequential --seed "$r" --json)
		record rf_tar_inorder "$r" "$x"; show "ringfeed tar in order" "$x"
		drop; x=$(measured "$VPY" "$ROOT/bench/peers/datasets_loop.py" --files "$PQ" \
			--cache-dir "$HFCACHE" --workers "$CORES" --json)
		record datasets "$r" "$x"; show "datasets loop" "$x"
		drop; x=$(measured "$VPY" "$ROOT/bench/peers/pyarrow_loop.py" --files "$PQ" --workers "$CORES" --json)
		record pyarrow "$r" "$x"; show "pyarrow iter_batches" "$x"
	done
fi

# ---- over the link -------------------------------------------------------------
NS=ringfeed-bench-parquet
VETH_HOST=rfbp0
VETH_NS=rfbp1
HOST_IP=10.77.39.1
SERVER_IP=10.77.39.2
URL=http://$SERVER_IP:8080
WORK=
HUB_PID=
teardown() {
	local p
	[ -z "$HUB_PID" ] || kill "$HUB_PID" 2>/dev/null || true
	if ip netns list | grep -q "^$NS\b"; then
		for p in $(ip netns pids "$NS"); do kill "$p" 2>/dev/null || true; done
		ip netns del "$NS"
	fi
	ip link del "$VETH_HOST" 2>/dev/null || true
	[ -z "$WORK" ] || rm -rf "$WORK"
}
teardown # a namespace left by an interrupted run
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ringfeed-parquet.XXXXXX")
chmod 755 "$WORK" # nginx's workers (nobody) go through it
trap teardown EXIT
trap 'exit 130' INT TERM
# refused PROBE-OUTPUT: did ringfeed refuse remote Parquet at create?
refused() { grep -qE "remote Parquet|not read yet|Operation not supported" <<<"$1"; }

if has link; then
	ip netns add "$NS"
	ip link add "$VETH_HOST" type veth peer name "$VETH_NS"
	ip link set "$VETH_NS" netns "$NS"
	ip addr add "$HOST_IP/30" dev "$VETH_HOST"
	ip link set "$VETH_HOST" up
	ip -n "$NS" addr add "$SERVER_IP/30" dev "$VETH_NS"
	ip -n "$NS" link set "$VETH_NS" up
	ip -n "$NS" link set lo up
	tc -n "$NS" qdisc replace dev "$VETH_NS" root tbf rate "${RATE_MBIT}mbit" burst 256kb latency 50ms
	N=$WORK/nginx
	mkdir -p "$N/tmp" "$WORK/www"
	ln -s "$(realpath "$DATA_DIR")" "$WORK/www/bench"
	cat > "$N/nginx.conf" <<EOF
daemon off; worker_processes $CORES;
pid $N/nginx.pid; error_log $N/error.log;
events { worker_connections 8192; }
http { access_log off; client_body_temp_path $N/tmp; proxy_temp_path $N/tmp;
  fastcgi_temp_path $N/tmp; uwsgi_temp_path $N/tmp; scgi_temp_path $N/tmp;
  sendfile on; keepalive_requests 1000000; keepalive_timeout 300s;
  server { listen $SERVER_IP:8080; root $WORK/www; } }
EOF
	ip netns exec "$NS" /usr/sbin/nginx -p "$N" -c "$N/nginx.conf" < /dev/null > "$N/out" 2>&1 &
	for _ in $(seq 1 100); do curl -s -o /dev/null "$URL/" && break; sleep 0.1; done
	REL=${PQ#"$(realpath "$DATA_DIR")"/}
	[ "$REL" != "$PQ" ] || REL=${PQ#"$DATA_DIR"/}
	PQURL=$URL/bench/$REL
	# ringfeed reads LINK_COPIES copies of the file (links to it), so that
	# a run lasts long enough for its fixed costs (set-up, the pipeline's
	# fill and the last shuffle block's drain: about half a second) not to
	# be what is measured: one 128 MB file is 2.7 s of a 400 Mbit link
	mkdir -p "$WORK/www/copies"
	for c in $(seq 0 $((LINK_COPIES - 1))); do
		ln -s "$(realpath "$PQ")" "$WORK/www/copies/part-$c.parquet"
	done
	PQURLS="$URL/copies/part-{0..$((LINK_COPIES - 1))}.parquet"
	cat "$PQ" > /dev/null # the server's side warm: the link is the limit
	# the link's rate: curl, every round, whatever ringfeed accepts
	probe=$("$RF" bench --source "$PQURL" --shard-access sequential --batches 1 --threads 1 --json 2>&1 >/dev/null) || true
	ok=1
	refused "$probe" && ok=0
	for r in $(seq 1 "$ROUNDS"); do
		t0=$(date +%s.%N)
		curl -s -o /dev/null "$PQURL"
		x=$("$PY" -c 'import json,sys,time; s=time.time()-float(sys.argv[1]); print(json.dumps({"samples_per_s": 0, "mb_per_s": int(sys.argv[2])/1e6/s}))' "$t0" "$PQBYTES")
		record curl_link "$r" "$x"; echo "  curl (the link)            $("$PY" -c 'import json,sys; print("%.1f MB/s" % json.loads(sys.argv[1])["mb_per_s"])' "$x")"
		[ "$ok" = 1 ] || continue
		x=$("$RF" bench --source "$PQURLS" $AUG --shard-access sequential --seed "$r" --json || echo '{}')
		x=$("$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); d["file_mb_per_s"]=int(sys.argv[2])/1e6/d["seconds"] if d.get("seconds") else 0; d.setdefault("samples_per_s", 0); print(json.dumps(d))' "$x" "$((PQBYTES * LINK_COPIES))")
		record rf_link_seq "$r" "$x"; show "ringfeed http sequential" "$x"
	done
	[ "$ok" = 1 ] || echo "link: ringfeed: remote Parquet not in this build ($(head -c 200 <<<"$probe"))"
fi

if has hub; then
	HUBROOT=$WORK/hub
	mkdir -p "$HUBROOT/bench/photos/data"
	ln -s "$(realpath "$PQ")" "$HUBROOT/bench/photos/data/train-00000-of-00001.parquet"
	"$PY" "$ROOT/tests/hub_server.py" "$HUBROOT" --lifetime 3600 --page 1000 --log "$WORK/hub.log" \
		> "$WORK/hub.out" 2>&1 &
	HUB_PID=$!
	for _ in $(seq 200); do grep -q '^cdn port' "$WORK/hub.out" 2>/dev/null && break; sleep 0.05; done
	EP="http://127.0.0.1:$(awk '/^hub port/{print $3}' "$WORK/hub.out")"
	# set-up's requests, by server and kind: `ringfeed index` does the
	# set-up alone (listing, resolves, footers, page locations, labels) and
	# writes what it found; no sample is read
	: > "$WORK/hub.log"
	probe=$(HF_ENDPOINT=$EP HF_TOKEN= "$RF" index "hf://datasets/bench/photos/data/*.parquet" \
		-o "$WORK/hub.idx" 2>&1 >/dev/null) || true
	sleep 0.3
	ok=1
	refused "$probe" && ok=0
	"$PY" - "$WORK/hub.log" "$ok" <<'PY' | tee -a "$OUT_JSON"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
hub = [r for r in rows if r["server"] == "hub"]
cdn = [r for r in rows if r["server"] == "cdn"]
out = {"case": "hub_setup", "files": 1, "read": sys.argv[2] == "1", "hub_requests": len(hub),
       "info": sum("/revision/" in r["path"] for r in hub),
       "tree": sum("/tree/" in r["path"] for r in hub),
       "resolves": sum("/resolve/" in r["path"] for r in hub),
       "cdn_requests": len(cdn), "statuses": sorted({r["status"] for r in rows})}
print(json.dumps(out))
PY
	[ "$ok" = 1 ] || echo "hub: remote Parquet not in this build: the requests above are the listing's before the refusal ($(head -c 200 <<<"$probe"))"
fi

# ---- medians and the targets ---------------------------------------------------
"$PY" - "$OUT_JSON" "$PQBYTES" "$TARBYTES" <<'PY'
import json, statistics as st, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if '"round"' in l]
pq_bytes, tar_bytes = int(sys.argv[2]), int(sys.argv[3])
by = {}
for r in runs:
    by.setdefault(r["case"], []).append(r["result"])
def med(case, key="samples_per_s"):
    # "bytes_fetched": the bytes ringfeed's reads brought in (each read once);
    # bytes_read counts a Parquet row's whole page for each row
    v = [x.get("counters", {}).get(key, 0) if key == "bytes_fetched" else x.get(key, 0)
         for x in by.get(case, [])]
    return st.median(v) if v else None
def spread(case):
    v = [x["samples_per_s"] for x in by.get(case, [])]
    return "%.0f-%.0f" % (min(v), max(v)) if v else "-"
print("medians (samples/s, %d rounds; storage MB per epoch):" % max(
    (len(v) for v in by.values()), default=0))
for case in ("rf_pq_random", "rf_pq_inorder", "rf_pq_seq", "rf_tar_random", "rf_tar_inorder",
             "rf_tar_seq", "datasets", "pyarrow"):
    if case in by:
        print("  %-15s %8.1f  (%s)  storage %8.1f MB  fetched %8.1f MB" % (
            case, med(case), spread(case), med(case, "storage_bytes") / 1e6,
            med(case, "bytes_fetched") / 1e6))
def ratio(name, a, b, target):
    if a is None or b is None or not b:
        print("  %-44s not available" % name)
    else:
        print("  %-44s %6.2fx  (target >= %sx: %s)" % (name, a / b, target,
              "met" if a / b >= target else "NOT met"))
print("targets:")
for pq in ("rf_pq_random", "rf_pq_inorder", "rf_pq_seq"):
    if pq in by:
        ratio(pq + " / datasets loop", med(pq), med("datasets"), 3)
        ratio(pq + " / pyarrow iter_batches", med(pq), med("pyarrow"), 3)
ratio("rf_pq_random / rf_tar_random", med("rf_pq_random"), med("rf_tar_random"), 0.95)
ratio("rf_pq_inorder / rf_tar_inorder", med("rf_pq_inorder"), med("rf_tar_inorder"), 0.95)
ratio("rf_pq_seq / rf_tar_seq", med("rf_pq_seq"), med("rf_tar_seq"), 0.95)
print("bytes per epoch against the file's (%d Parquet, %d tar):" % (pq_bytes, tar_bytes))
for case, size in (("rf_pq_random", pq_bytes), ("rf_pq_inorder", pq_bytes), ("rf_pq_seq", pq_bytes),
                   ("rf_tar_random", tar_bytes), ("rf_tar_inorder", tar_bytes),
                   ("rf_tar_seq", tar_bytes),
                   ("datasets", pq_bytes), ("pyarrow", pq_bytes)):
    if case in by:
        print("  %-15s storage %6.2fx  fetched (bytes_fetched) %6.2fx%s" % (
            case, med(case, "storage_bytes") / size, med(case, "bytes_fetched") / size,
            "  (target <= 1.05x: %s)" % ("met" if med(case, "bytes_fetched") <= 1.05 * size
                                         else "NOT met") if case == "rf_pq_seq" else ""))
if "curl_link" in by:
    link = med("curl_link", "mb_per_s")
    if "rf_link_seq" in by:
        rf = med("rf_link_seq", "file_mb_per_s")
        print("link: curl %.1f MB/s, ringfeed sequential %.1f MB/s of the file: %.2fx "
              "(target >= 0.9x)" % (link, rf, rf / link if link else 0))
    else:
        print("link: curl %.1f MB/s; ringfeed: remote Parquet not in this build" % link)
PY
echo "runs: $OUT_JSON"
