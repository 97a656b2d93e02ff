#!/usr/bin/env bash
# cli_parquet_remote.sh - remote Parquet sources (issue 39 item 1 and 2):
# the files tests/parquet_images.py writes with pyarrow, served over http
# (tests/fault_server.py, honest), from the stand-in Hub (tests/hub_server.py:
# a dataset's folder, a glob, the dataset alone at refs/convert/parquet) and
# from an S3 API server (moto, when RINGFEED_MOTO_PYTHON names its venv's
# python), give the same batches (bench --json's checksum: pixels and
# labels) as the same files read locally, shuffled (a page a sample) and
# in index order (chunks); servers that lie (ranges other than asked,
# short windows, a file that changes, gzip, a file that ends early) are
# refused at create naming the file or give bad samples, never a crash; the
# requests each file costs at set-up over hf:// are counted (the Hub's own
# guidance is to make few) and printed as "hf set-up requests per file: N";
# --column and --fields (string labels of two files, a field one file
# lacks) over http as locally, and the index cache of a remote source kept
# for its columns only.
# usage: cli_parquet_remote.sh RINGFEED   (skips, exit 77, without python3,
# the parquet venv or libcurl)
set -uo pipefail
RF=$1
here=$(cd "$(dirname "$0")" && pwd)
PQPY=${RINGFEED_PARQUET_PYTHON:-/root/.cache/ringfeed-parquet-venv/bin/python}
command -v python3 >/dev/null || { echo "SKIP: python3 is missing (it runs the servers)"; exit 77; }
[ -x "$PQPY" ] || { echo "SKIP: no pyarrow venv at $PQPY (scripts/parquet_venv.sh)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-pqr.XXXXXX")
servers=()
cleanup() { for p in "${servers[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }
common="--batch 4 --resize 64 --crop 56 --threads 1"
export HF_HOME="$T/nohome" HF_TOKEN=
unset HF_TOKEN_PATH

"$RF" gen --out "$T/tree" --count 40 --classes 3 --threads 1 >/dev/null || { echo "gen failed"; exit 1; }
"$PQPY" "$here/parquet_images.py" "$T/tree" "$T/pq" >/dev/null || { echo "parquet_images.py failed"; exit 1; }
"$RF" bench --source "$T/pq/plain.parquet" $common >/dev/null 2>"$T/err" ||
	{ grep -q "libcurl\|remote" "$T/err" && { echo "SKIP: $(head -c 200 "$T/err")"; exit 77; }; }

# sum SOURCE [bench options...]: "CHECKSUM SAMPLES BAD" of one epoch, or FAILED: why
sum() {
	local src=$1 out
	shift
	if out=$(env $envs "$RF" bench --source "$src" $common --json "$@" 2>"$T/err"); then
		printf '%s\n' "$out" | python3 -c "import json,sys; j=json.loads(sys.stdin.read()); \
print(j['checksum'], j['samples'], j['bad_samples'])"
	else
		echo "FAILED($?): $(head -c 400 "$T/err")"
	fi
}
envs=
# serve NAME ROOT options...: fault_server.py on ROOT; sets $port
serve() {
	local name=$1 root=$2
	shift 2
	python3 "$here/fault_server.py" "$root" --p503 0 --preset 0 --pshort 0 --lifetime 300 \
		"$@" >"$T/$name.out" 2>&1 &
	servers+=($!)
	for _ in $(seq 200); do grep -q '^port' "$T/$name.out" 2>/dev/null && break; sleep 0.05; done
	port=$(awk '/^port/{print $2}' "$T/$name.out")
}

# 1. http: one file of each layout, shuffled and in order; a list; a brace pattern
serve honest "$T/pq"
url="http://127.0.0.1:$port"
for f in plain dict hf; do
	for order in "" --no-shuffle; do
		want=$(sum "$T/pq/$f.parquet" $order)
		got=$(sum "$url/$f.parquet" $order)
		check "http $f.parquet ${order:-shuffled}: '$got' vs local '$want'" \
			[ "$got" = "$want" -a "${want#FAILED}" = "$want" ]
	done
done
want=$(sum "$T/pq/split.list")
sed "s|^.*/\\(part-[0-9]*\\.parquet\\)$|$url/split/\\1|" "$T/pq/split.list" >"$T/urls.list"
got=$(sum "$T/urls.list")
check "a list of URLs: '$got' vs '$want'" [ "$got" = "$want" ]
got=$(sum "$url/split/part-{0..2}.parquet")
check "a brace pattern of URLs: '$got' vs '$want'" [ "$got" = "$want" ]
want_bad=$(sum "$T/pq/bad.parquet")
got=$(sum "$url/bad.parquet")
check "bad rows over http as locally: '$got' vs '$want_bad'" [ "$got" = "$want_bad" ]

# 2. servers that lie: refused at create naming the file, or bad samples;
# never a crash (a signal's exit status is 128 + N)
lie() {
	local name=$1 file=$2
	shift 2
	serve "$name" "$T/pq" "$@"
	got=$(sum "http://127.0.0.1:$port/$file")
	echo "$name: $got"
	case $got in
	FAILED\(1[3-9][0-9]\)* | FAILED\(2[0-9][0-9]\)*) bad "$name: a crash: $got" ;;
	FAILED*) check "$name: refused naming the file: $got" grep -q "$file" <<<"$got" ;;
	*) check "$name: delivered with bad samples or equal: '$got'" true ;;
	esac
	grep -q "AddressSanitizer\|runtime error" "$T/err" && bad "$name: a sanitizer report"
}
lie lie-range dict.parquet --lie-range 1
lie short-window dict.parquet --short-window 1
lie changed plain.parquet --new-etag-after 1
lie gzip hf.parquet --gzip 1
lie eof plain.parquet --eof-at 20000
# (request 1: the index object beside the files, none there; 2: the tail)
lie grow plain.parquet --grow-after 2
check "a file whose size changes between requests is refused saying so: $got" \
	grep -q "plain.parquet.*changed.*bytes, then" <<<"$got"
# lies to a page read of the run (set-up's requests answered honestly):
# bad samples or a failure naming the file, never a crash
lie run-etag plain.parquet --lie-once etag@20
lie run-416 plain.parquet --lie-once empty416@20
serve changed2 "$T/pq" --new-etag-after 2
got=$(sum "http://127.0.0.1:$port/dict.parquet")
check "a file that changes after its first answer is refused as changed: $got" \
	grep -q "dict.parquet.*changed" <<<"$got"

# 2b. the index cache of a remote source (and `ringfeed index`'s object):
# the second create makes no set-up request (every GET is a page read of
# the run: bench --json's http_requests)
serve cached "$T/pq" --log-headers "$T/cached.log"
src="http://127.0.0.1:$port/split/part-{0..2}.parquet"
want=$(sum "$T/pq/split")
got=$(sum "$src" --index-cache "$T/remote.idx")
check "http with an index cache (written): '$got' vs '$want'" [ "$got" = "$want" ]
: >"$T/cached.log"
reads=$("$RF" bench --source "$src" --index-cache "$T/remote.idx" $common --json 2>"$T/err" |
	python3 -c "import json,sys; j=json.loads(sys.stdin.read()); print(j['http_requests'], j['checksum'])")
gets=$(grep -c '^GET' "$T/cached.log")
check "the cache read again: no set-up request ($gets GETs, the run's: ${reads% *}), same batches" \
	[ "$gets" = "${reads% *}" -a "${reads#* }" = "${want%% *}" ]
"$RF" index "$src" -o "$T/object.idx" >/dev/null 2>"$T/err" || bad "ringfeed index of remote Parquet: $(cat "$T/err")"
got=$(sum "$src" --index-cache "$T/object.idx")
check "\`ringfeed index\`'s object: '$got' vs '$want'" [ "$got" = "$want" ]

# 2c. --column and --fields over http (tests/parquet_columns.py's files):
# the image column named, string labels (classes: every file's strings),
# fields kept in memory, a file without the optional field; the same
# checksum and field bytes as the same files read locally. The index cache
# keeps a table for its columns only: other columns build it again.
"$PQPY" "$here/parquet_columns.py" "$T/tree" "$T/cols" >/dev/null || bad "parquet_columns.py failed"
# sumf SOURCE [bench options...]: "CHECKSUM SAMPLES BAD FIELD_BYTES", or FAILED: why
sumf() {
	local src=$1 out
	shift
	if out=$("$RF" bench --source "$src" $common --json "$@" 2>"$T/err"); then
		printf '%s\n' "$out" | python3 -c "import json,sys; j=json.loads(sys.stdin.read()); \
c=j.get('counters', {}); print(j['checksum'], j['samples'], j['bad_samples'], \
j.get('field_bytes', c.get('field_bytes')))"
	else
		echo "FAILED($?): $(head -c 400 "$T/err")"
	fi
}
serve cols "$T/cols"
colopts="--column image=alt,label=name --fields caption,note?"
printf '%s\n' "$T/cols/two/a.parquet" "$T/cols/two/b.parquet" >"$T/two.list"
printf '%s\n' "http://127.0.0.1:$port/two/a.parquet" "http://127.0.0.1:$port/two/b.parquet" \
	>"$T/two_urls.list"
for src in cols.parquet two; do
	for order in "" --no-shuffle; do
		local_src=$T/cols/$src remote_src=http://127.0.0.1:$port/$src
		[ "$src" = two ] && local_src=$T/two.list remote_src=$T/two_urls.list
		want=$(sumf "$local_src" $colopts $order)
		got=$(sumf "$remote_src" $colopts $order)
		check "http $src --column --fields ${order:-shuffled}: '$got' vs local '$want'" \
			[ "$got" = "$want" -a "${want#FAILED}" = "$want" ]
	done
done
# (a pattern of URLs: its index object is the cache, adopted)
mkdir -p "$T/cols/parts"
cp "$T/cols/two/a.parquet" "$T/cols/parts/part-0.parquet"
cp "$T/cols/two/b.parquet" "$T/cols/parts/part-1.parquet"
src="http://127.0.0.1:$port/parts/part-{0..1}.parquet"
plain=$(sumf "$T/two.list")
want=$(sumf "$T/two.list" $colopts)
got=$(sumf "$src" --index-cache "$T/cols.idx")
check "http cache written (no columns): '$got' vs '$plain'" [ "$got" = "$plain" ]
got=$(sumf "$src" --index-cache "$T/cols.idx" $colopts --verbose)
check "http cache of other columns built again: '$got' vs '$want'" [ "$got" = "$want" ]
check "... saying so: $(grep "other columns" "$T/err")" grep -q "of other columns" "$T/err"
got=$(sumf "$src" --index-cache "$T/cols.idx" $colopts --verbose)
check "http cache of these columns, fields read after it: '$got' vs '$want'" [ "$got" = "$want" ]
check "... no footer read: $(grep "footers" "$T/err")" [ -z "$(grep "footers" "$T/err")" ]

# 3. the stand-in Hub: a folder (listed: the Parquet kind by its names), a
# glob, the dataset alone (its Parquet conversion)
mkdir -p "$T/root/org/pq/data" "$T/root/org/pq@refs~convert~parquet/default/train"
cp "$T"/pq/split/*.parquet "$T/root/org/pq/data/"
cp "$T"/pq/split/*.parquet "$T/root/org/pq@refs~convert~parquet/default/train/"
python3 "$here/hub_server.py" "$T/root" --lifetime 300 --page 100 --log "$T/hub.log" \
	>"$T/hub.out" 2>&1 &
servers+=($!)
for _ in $(seq 200); do grep -q '^cdn port' "$T/hub.out" 2>/dev/null && break; sleep 0.05; done
envs="HF_ENDPOINT=http://127.0.0.1:$(awk '/^hub port/{print $3}' "$T/hub.out")"
want=$(sum "$T/pq/split")
: >"$T/hub.log"
got=$(sum "hf://datasets/org/pq/data/")
check "hf:// folder of .parquet: '$got' vs '$want'" [ "$got" = "$want" ]
# set-up's requests per file: every logged request but the run's reads
# (bench --json's http_requests), over the 3 files
runreads=$(env $envs "$RF" bench --source "hf://datasets/org/pq/data/" $common --json 2>/dev/null |
	python3 -c "import json,sys; print(json.loads(sys.stdin.read())['http_requests'])")
total=$(grep -c . "$T/hub.log")
python3 - "$T/hub.log" "$runreads" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
half = len(lines) // 2  # two runs logged: the first one's
run = lines[:half]
hub = sum(1 for j in run if j["server"] == "hub")
cdn = sum(1 for j in run if j["server"] == "cdn")
setup_cdn = cdn - int(sys.argv[2])
print("hf set-up requests per file: %.2f (hub %d: listing and resolves; cdn at set-up %d; "
      "3 files)" % ((hub + setup_cdn) / 3.0, hub, setup_cdn))
EOF
got=$(sum "hf://datasets/org/pq/data/*.parquet")
check "hf:// glob: '$got' vs '$want'" [ "$got" = "$want" ]
got=$(sum "hf://datasets/org/pq")
check "hf:// the dataset alone (refs/convert/parquet): '$got' vs '$want'" [ "$got" = "$want" ]
got=$(sum "hf://datasets/org/pq/data/" --no-shuffle)
want=$(sum "$T/pq/split" --no-shuffle)
check "hf:// in order: '$got' vs '$want'" [ "$got" = "$want" ]
envs=

# 4. S3 (moto): a bucket's prefix, listed
MOTO=${RINGFEED_MOTO_PYTHON:-}
if [ -n "$MOTO" ] && [ -x "$MOTO" ] && "$MOTO" -c "import moto.server, boto3" 2>/dev/null; then
	mport=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
	env -u AWS_ENDPOINT_URL "$MOTO" -m moto.server -H 127.0.0.1 -p "$mport" >"$T/moto.log" 2>&1 &
	servers+=($!)
	for _ in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/$mport) 2>/dev/null && break; sleep 0.1; done
	"$MOTO" - "$mport" "$T/pq/split" <<'EOF' || bad "uploading to moto"
import os, sys, boto3
s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%s" % sys.argv[1], region_name="us-east-1",
                  aws_access_key_id="test", aws_secret_access_key="test")
s3.create_bucket(Bucket="pqbucket")
for n in sorted(os.listdir(sys.argv[2])):
    s3.upload_file(os.path.join(sys.argv[2], n), "pqbucket", "pq/" + n)
EOF
	envs="AWS_ENDPOINT_URL=http://127.0.0.1:$mport AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true HOME=$T"
	want=$(sum "$T/pq/split")
	got=$(sum "s3://pqbucket/pq/")
	check "s3:// prefix of .parquet: '$got' vs '$want'" [ "$got" = "$want" ]
	got=$(sum "s3://pqbucket/pq/part-{0..2}.parquet" --no-shuffle)
	want=$(sum "$T/pq/split" --no-shuffle)
	check "s3:// brace pattern in order: '$got' vs '$want'" [ "$got" = "$want" ]
	envs=
else
	echo "SKIP: s3:// (no moto: RINGFEED_MOTO_PYTHON names the venv's python)"
	skip=$((skip + 1))
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
