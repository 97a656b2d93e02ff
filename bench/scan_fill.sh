#!/usr/bin/env bash
# scan_fill.sh BEFORE AFTER [ROUNDS] - bytes a server sends in epoch 1 of an
# un-indexed remote shard source read through a fresh node cache, over the
# shards' own bytes (issue 37 item 6: the scan's streamed windows fill the
# cache, so epoch 1 moves ~1.0x the shards; before, the scan streamed them
# and then fetched the samples again, 1.81x).
#
# Data, made once into DATA_DIR (default bench/data/scan-fill): 20,000 raw
# samples of 1-16 KiB packed into 7 shards of 32 MB, no ringfeed.index
# beside them (the source scans). nginx (deps.sh nginx-light) serves them on
# 127.0.0.1:PORT (18093) with an access log of each response's body bytes;
# each round clears the cache and the log, runs
#   RF bench --source 'http://127.0.0.1:PORT/shard-{000000..000006}.tar' --raw --epochs 1 --cache-dir CACHE
# for BEFORE then AFTER (ringfeed commands), and prints the bytes sent over
# the shards' bytes.
set -euo pipefail
[ $# -ge 2 ] || { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2; }
BEFORE=$1 AFTER=$2 ROUNDS=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=${DATA_DIR:-$ROOT/bench/data/scan-fill} PORT=${PORT:-18093}
"$ROOT/scripts/deps.sh" nginx-light >/dev/null
if [ ! -e "$D/www/.done" ]; then
	rm -rf "$D" && mkdir -p "$D"
	"$AFTER" gen --raw --out "$D/raw" --count 20000 --classes 10 --min-size 1024 --max-size 16384 >/dev/null
	"$AFTER" pack "$D/raw" -o "$D/www" --raw --shard-size 32M >/dev/null
	rm -f "$D/www/ringfeed.index" && touch "$D/www/.done"
fi
chmod -R a+rX "$D" # nginx's worker may run as nobody
N=$(mktemp -d) && chmod 755 "$N" && mkdir -p "$N/tmp"
cat > "$N/nginx.conf" <<C
daemon off; master_process off; worker_processes 1;
pid $N/nginx.pid; error_log $N/error.log;
events { worker_connections 4096; }
http { log_format b '\$status \$body_bytes_sent \$uri'; access_log $N/access.log b;
  client_body_temp_path $N/tmp; proxy_temp_path $N/tmp; fastcgi_temp_path $N/tmp;
  uwsgi_temp_path $N/tmp; scgi_temp_path $N/tmp; keepalive_requests 1000000;
  server { listen 127.0.0.1:$PORT; root $D/www; } }
C
/usr/sbin/nginx -p "$N" -c "$N/nginx.conf" & NG=$!
trap 'kill $NG 2>/dev/null; rm -rf "$N"' EXIT
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
last=$(printf %06d $(($(ls "$D"/www/shard-*.tar | wc -l) - 1)))
SRC="http://127.0.0.1:$PORT/shard-{000000..$last}.tar"
SH=$(cat "$D"/www/shard-*.tar | wc -c)
for r in $(seq "$ROUNDS"); do
	for rf in "$BEFORE" "$AFTER"; do
		rm -rf "$N/cache" && mkdir -p "$N/cache" && : > "$N/access.log"
		"$rf" bench --source "$SRC" --raw --epochs 1 --cache-dir "$N/cache" > "$N/out.txt" 2>&1 ||
			{ echo "scan_fill.sh: $rf failed:" >&2; cat "$N/out.txt" >&2; exit 1; }
		sleep 0.2 # nginx logs a response once it is sent
		awk -v sh="$SH" -v who="$rf" -v r="$r" '{ s += $2 } END {
			printf "round %d %s: %.0f bytes sent, %.3fx the shards (%d)\n", r, who, s, s / sh, sh }' "$N/access.log"
	done
done
