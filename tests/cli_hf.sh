#!/usr/bin/env bash
# cli_hf.sh - hf:// sources (issue 39) against tests/hub_server.py, a
# stand-in for the Hugging Face Hub on 127.0.0.1 (the Hub itself cannot be
# reached from the test machines): tar shards served as a Hub dataset give
# the same batches (bench --json's checksum) as the same shards read from
# the folder, listed through the tree endpoint page by page (Link
# rel="next") and by a glob; the token goes to the Hub's port only, never
# to the CDN's; each file is resolved once while its CDN URL lives, and
# again when the CDN refuses a kept URL (expired); 429s are waited out,
# Retry-After honoured (seconds or an HTTP-date); hf://models/ and
# hf://spaces/ refused (datasets only); a private dataset is refused at create naming it,
# and read with HF_TOKEN or the token file (a token file writable by
# others, or a symbolic link, is refused); the dataset alone is read at
# its Parquet conversion's revision, and @REVISION url-encoded too.
# usage: cli_hf.sh RINGFEED   (skips, exit 77, without python3 or libcurl)
set -uo pipefail
RF=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 is missing (it runs the stand-in Hub)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-hf.XXXXXX")
servers=()
cleanup() { for p in "${servers[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }
common="--batch 4 --resize 64 --crop 56 --threads 1"
export HF_HOME="$T/nohome" HF_TOKEN= # no token of the user's is read
unset HF_TOKEN_PATH

"$RF" gen --out "$T/jpg" --count 40 --classes 2 --threads 1 >/dev/null || { echo "gen failed"; exit 1; }
mkdir -p "$T/root/org/ds/data" "$T/root/org/ds@refs~convert~parquet"
"$RF" pack "$T/jpg" -o "$T/root/org/ds/data" --shard-size 100K >/dev/null || { echo "pack failed"; exit 1; }
rm -f "$T/root/org/ds/data/ringfeed.index" # read through the Hub, scanned
nshards=$(ls "$T/root/org/ds/data" | grep -c '\.tar$')
# the conversion's revision: tar shards where the tar kind looks for them
# (a real one holds default/train/0000.parquet: the Parquet kind's)
cp "$T"/root/org/ds/data/shard-00000[0-2].tar "$T/root/org/ds@refs~convert~parquet/"
cp -r "$T/root/org/ds" "$T/root/org/private"

# hub NAME options...: starts a stand-in Hub logging to $T/NAME.log; sets $ep
hub() {
	local name=$1
	shift
	python3 "$here/hub_server.py" "$T/root" --lifetime 120 --log "$T/$name.log" "$@" \
		>"$T/$name.out" 2>&1 &
	servers+=($!)
	for _ in $(seq 200); do grep -q '^cdn port' "$T/$name.out" 2>/dev/null && break; sleep 0.05; done
	ep="http://127.0.0.1:$(awk '/^hub port/{print $3}' "$T/$name.out")"
}

# sum SOURCE [env...]: "CHECKSUM SAMPLES" of one epoch, or FAILED
sum() {
	local src=$1 out
	shift
	if out=$(env "$@" "$RF" bench --source "$src" $common --json 2>"$T/err"); then
		printf '%s\n' "$out" | sed -n 's/.*"samples":\([0-9]*\).*"checksum":\([0-9]*\).*/\2 \1/p'
	else
		echo "FAILED: $(head -c 400 "$T/err")"
	fi
}

# count LOG PYTHON-CONDITION-ON-j: how many logged requests match
count() {
	python3 -c "import json,sys; print(sum(1 for j in map(json.loads, open(sys.argv[1])) if $2))" "$1"
}

local_all=$(sum "$T/root/org/ds/data/")
local_some=$(sum "$T/root/org/ds/data/shard-00000[0-4].tar")
local_three=$(sum "$T/root/org/ds/data/shard-00000[0-2].tar")
case $local_all in FAILED*) echo "the local run failed: $local_all"; exit 1 ;; esac

# 1. the dataset's folder, paged 2 entries at a time, with a token
hub plain --page 2
got=$(sum "hf://datasets/org/ds/data/" HF_ENDPOINT="$ep" HF_TOKEN=hf_SeCrEt)
check "the folder over hf:// gives the local batches: '$got' vs '$local_all'" [ "$got" = "$local_all" ]
pages=$(count "$T/plain.log" "'/tree/' in j['path']")
check "the listing was paged ($pages tree requests for $nshards files, 2 a page)" [ "$pages" -ge $((nshards / 2)) ]
check "the token reached the Hub's port: $(count "$T/plain.log" "j['server']=='hub' and j['auth']") of its requests" \
	[ "$(count "$T/plain.log" "j['server']=='hub' and not j['auth']")" = 0 ]
check "the token never reached the CDN's port" \
	[ "$(count "$T/plain.log" "j['server']=='cdn' and j['auth']")" = 0 ]
resolves=$(count "$T/plain.log" "'/resolve/' in j['path'] and j['status']==302")
cdn=$(count "$T/plain.log" "j['server']=='cdn' and j['status']==206")
check "each file resolved about once ($resolves resolves, $nshards files, $cdn CDN reads)" \
	[ "$resolves" -ge "$nshards" -a "$resolves" -lt "$cdn" ]
grep -q hf_SeCrEt "$T/err" && bad "the token is in the messages"

# 2. a glob over the tree; @REVISION; the dataset alone (its Parquet conversion)
got=$(sum "hf://datasets/org/ds/data/shard-00000[0-4].tar" HF_ENDPOINT="$ep")
check "a glob over the tree: '$got' vs '$local_some'" [ "$got" = "$local_some" ]
got=$(sum "hf://datasets/org/ds" HF_ENDPOINT="$ep")
check "the dataset alone reads refs/convert/parquet: '$got' vs '$local_three'" [ "$got" = "$local_three" ]
got=$(sum "hf://datasets/org/ds@refs%2Fconvert%2Fparquet/*.tar" HF_ENDPOINT="$ep")
check "@refs%2Fconvert%2Fparquet: '$got' vs '$local_three'" [ "$got" = "$local_three" ]
got=$(sum "hf://datasets/org/ds@refs/convert/parquet/" HF_ENDPOINT="$ep")
check "@refs/convert/parquet/: '$got' vs '$local_three'" [ "$got" = "$local_three" ]
got=$(sum "hf://datasets/org/ds/data/**-00000[0-4].tar" HF_ENDPOINT="$ep")
check "**: '$got' vs '$local_some'" [ "$got" = "$local_some" ]
got=$(sum "hf://datasets/org/ds/data/shard-000001.tar" HF_ENDPOINT="$ep")
check "one file: '$got'" [ "${got#FAILED}" = "$got" ]
got=$(sum "hf://datasets/org/nothere/data/" HF_ENDPOINT="$ep")
check "a dataset the Hub lacks is refused naming it: $got" grep -q "hf://datasets/org/nothere: no such" <<<"$got"

# 3. kept CDN URLs refused after one use (expired early): resolved again
hub expiring --cdn-uses 1 --page 100
got=$(sum "hf://datasets/org/ds/data/" HF_ENDPOINT="$ep")
check "refused CDN URLs resolved again, same batches: '$got' vs '$local_all'" [ "$got" = "$local_all" ]
refused=$(count "$T/expiring.log" "j['server']=='cdn' and j['status']==403")
resolves=$(count "$T/expiring.log" "'/resolve/' in j['path'] and j['status']==302")
check "a refused URL is resolved again ($refused refused, $resolves resolves, $nshards files)" \
	[ "$refused" -gt 0 -a "$resolves" -gt "$nshards" ]

# a URL whose Expires= is within the client's margin (30 s) is not kept:
# every read resolves (the expiry is read from the URL)
hub short --expires 10 --page 100
got=$(sum "hf://datasets/org/ds/data/" HF_ENDPOINT="$ep")
check "short-lived CDN URLs, same batches: '$got' vs '$local_all'" [ "$got" = "$local_all" ]
resolves=$(count "$T/short.log" "'/resolve/' in j['path'] and j['status']==302")
cdn=$(count "$T/short.log" "j['server']=='cdn'")
check "a URL about to expire is not kept ($resolves resolves, $cdn CDN reads)" [ "$resolves" = "$cdn" ]

# 4. 429s waited out: the first two requests (set-up's), and every 7th after
hub busy --first429 2 --every429 7 --retry-after 1 --page 100
got=$(sum "hf://datasets/org/ds/data/" HF_ENDPOINT="$ep")
check "429s waited out, same batches: '$got' vs '$local_all'" [ "$got" = "$local_all" ]
gap=$(python3 -c "
import json,sys
t=[j['t'] for j in map(json.loads, open(sys.argv[1])) if j['server']=='hub']
print(int(t[1]-t[0] >= 0.95 and t[2]-t[1] >= 0.95))" "$T/busy.log")
check "Retry-After: 1 was honoured between set-up's requests" [ "$gap" = 1 ]
check "429s were answered during the run ($(count "$T/busy.log" "j['status']==429"))" \
	[ "$(count "$T/busy.log" "j['status']==429")" -gt 2 ]

# Retry-After as an HTTP-date (RFC 9110), 2 s after the 429's Date line:
# waited out like its seconds form
hub busydate --first429 2 --retry-after 2 --retry-after-date --page 100
got=$(sum "hf://datasets/org/ds/data/" HF_ENDPOINT="$ep")
check "429s with a dated Retry-After waited out, same batches: '$got' vs '$local_all'" \
	[ "$got" = "$local_all" ]
gap=$(python3 -c "
import json,sys
t=[j['t'] for j in map(json.loads, open(sys.argv[1])) if j['server']=='hub']
print(int(t[1]-t[0] >= 1.9 and t[2]-t[1] >= 1.9))" "$T/busydate.log")
check "Retry-After: DATE (2 s on) was honoured between set-up's requests" [ "$gap" = 1 ]

# only datasets are read: a model's or a Space's location is refused at
# create, saying so
for kind in models spaces; do
	got=$(sum "hf://$kind/org/ds/data/" HF_ENDPOINT="$ep")
	check "hf://$kind/ is refused: $got" grep -q "ringfeed reads only datasets" <<<"$got"
done

# 5. a private dataset: refused naming it; read with HF_TOKEN or the token file
hub private --private org/private --token hf_PrIvAtE --page 100
got=$(sum "hf://datasets/org/private/data/" HF_ENDPOINT="$ep")
check "a private dataset is refused naming it: $got" \
	grep -q "hf://datasets/org/private: the Hub refuses it (HTTP 401).*private or gated" <<<"$got"
got=$(sum "hf://datasets/org/private/data/" HF_ENDPOINT="$ep" HF_TOKEN=hf_wrong)
check "a wrong token is refused too: $got" grep -q "the token sent has no access" <<<"$got"
got=$(sum "hf://datasets/org/private/data/" HF_ENDPOINT="$ep" HF_TOKEN=hf_PrIvAtE)
check "HF_TOKEN reads it: '$got' vs '$local_all'" [ "$got" = "$local_all" ]
mkdir -p "$T/hfhome"
printf 'hf_PrIvAtE\n' >"$T/hfhome/token"
chmod 600 "$T/hfhome/token"
got=$(sum "hf://datasets/org/private/data/" HF_ENDPOINT="$ep" HF_HOME="$T/hfhome")
check "\$HF_HOME/token reads it: '$got' vs '$local_all'" [ "$got" = "$local_all" ]
chmod 622 "$T/hfhome/token"
got=$(sum "hf://datasets/org/private/data/" HF_ENDPOINT="$ep" HF_HOME="$T/hfhome")
check "a token file writable by others is refused: $got" grep -q "writable by others" <<<"$got"
chmod 600 "$T/hfhome/token"
mv "$T/hfhome/token" "$T/hfhome/real" && ln -s real "$T/hfhome/token"
got=$(sum "hf://datasets/org/private/data/" HF_ENDPOINT="$ep" HF_HOME="$T/hfhome")
check "a token file that is a symbolic link is refused: $got" grep -q "symbolic link" <<<"$got"
check "no token reached the CDN in any run" \
	[ "$(cat "$T"/*.log | grep '"server": "cdn"' | grep -c '"auth": true')" = 0 ]

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
