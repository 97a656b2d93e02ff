#!/usr/bin/env bash
# trust_soak.sh - issue 36's soak: SOAK_SECONDS (1800) of epochs over http
# and s3 through tests/fault_proxy.py, which mixes every hostile answer of
# the issue at FAULT_P (0.01) each, two processes a transport sharing one
# node-local cache; every delivered sample compared with the local copy's
# bytes (bench/trust_soak.c), then every output and every file the runs
# wrote searched for the secrets they were given. Prints one summary line a
# transport and a line of secrets found; exits 1 when a sample was wrong or
# a secret was found.
#
# Servers, all on 127.0.0.1 and stopped on exit: nginx serving the shards
# (http; the URL carries a password in its userinfo, which nginx ignores)
# and moto (scripts/moto_venv.sh; authenticating, signed requests with a
# session token from an assumed role), each behind its own fault proxy.
# The http shards have no ringfeed.index (the scan reads them through the
# faults); the s3 ones have theirs (fetched) and are found by listing.
# FAULT_ONLY (a comma-separated list of fault_proxy.py's faults) draws only
# those; TRANSPORTS ("http s3") picks the transports.
# Data: RAW_COUNT (2,000) random files of 1-40 KB (`ringfeed gen --raw`)
# packed into 5 MB shards, made once under bench/data/trust-soak.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${SOAK_SECONDS:-1800}
fault_p=${FAULT_P:-0.01}
count=${RAW_COUNT:-2000}
only=${FAULT_ONLY:+--only $FAULT_ONLY}
transports=${TRANSPORTS:-http s3}
scripts/build.sh build -Dbench=enabled
data=bench/data/trust-soak
if [ ! -f "$data/pack/ringfeed.index" ]; then
	rm -rf "$data"
	mkdir -p "$data"
	build/ringfeed gen --raw --out "$data/files" --count "$count" --min-size 1000 \
		--max-size 40000 >/dev/null
	build/ringfeed pack --raw "$data/files" -o "$data/pack" --shard-size 5M >/dev/null
fi
work=$(mktemp -d /tmp/trust-soak.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
mkdir -p "$work/www" "$work/nginx/tmp" "$work/out"
cp "$data"/pack/shard-*.tar "$work/www/" # no ringfeed.index: scanned
nshards=$(ls "$work/www" | wc -l)
last=$(printf '%06d' $((nshards - 1)))

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # the port accepts within 60 s
	for _ in $(seq 600); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "trust_soak.sh: nothing listens on port $1" >&2
	return 1
}
proxy_port() { # the port line a fault_proxy printed
	for _ in $(seq 600); do
		if p=$(grep -om1 '^port [0-9]*' "$1" 2>/dev/null); then echo "${p#port }"; return 0; fi
		sleep 0.1
	done
	echo "trust_soak.sh: the fault proxy did not start ($1)" >&2
	return 1
}

has() { case " $transports " in *" $1 "*) return 0 ;; esac; return 1; }

password="soak-pw-$RANDOM$RANDOM" secret=none token=none
# http: nginx, and its proxy
if has http; then
nport=$(free_port)
cat >"$work/nginx/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1;
pid $work/nginx/nginx.pid; error_log $work/nginx/error.log;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path $work/nginx/tmp; proxy_temp_path $work/nginx/tmp;
  fastcgi_temp_path $work/nginx/tmp; uwsgi_temp_path $work/nginx/tmp; scgi_temp_path $work/nginx/tmp;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$nport; root $work/www; } }
EOF
/usr/sbin/nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
pids+=($!)
wait_port "$nport"
python3 tests/fault_proxy.py "http://127.0.0.1:$nport" --p "$fault_p" --seed 1 $only \
	--lifetime $((seconds + 600)) --counts "$work/out/proxy-http.json" >"$work/out/proxy-http.log" 2>&1 &
pids+=($!)
hport=$(proxy_port "$work/out/proxy-http.log")
http_src="http://soak:$password@127.0.0.1:$hport/shard-{000000..$last}.tar"
fi

# s3: moto with authentication, a user, a bucket, the shards and their index
if has s3; then
moto_py=$(scripts/moto_venv.sh)
mport=$(free_port)
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN INITIAL_NO_AUTH_ACTION_COUNT=3 \
	"$moto_py" -m moto.server -H 127.0.0.1 -p "$mport" >"$work/out/moto.log" 2>&1 &
pids+=($!)
wait_port "$mport"
creds=$("$moto_py" - "http://127.0.0.1:$mport" "$data/pack" <<'PY'
import glob, json, os, sys
import boto3
ep, pack = sys.argv[1], sys.argv[2]
def client(svc, key, secret, token=None):
    return boto3.client(svc, endpoint_url=ep, region_name="us-east-1", aws_access_key_id=key,
                        aws_secret_access_key=secret, aws_session_token=token)
iam = client("iam", "bootstrap", "bootstrap")
iam.create_user(UserName="soak")
allow = json.dumps({"Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
iam.put_user_policy(UserName="soak", PolicyName="all", PolicyDocument=allow)
k = iam.create_access_key(UserName="soak")["AccessKey"]
s3 = client("s3", k["AccessKeyId"], k["SecretAccessKey"])
s3.create_bucket(Bucket="soak")
for path in sorted(glob.glob(os.path.join(pack, "*"))):
    s3.upload_file(path, "soak", "shards/" + os.path.basename(path))
iam2 = client("iam", k["AccessKeyId"], k["SecretAccessKey"])
iam2.create_role(RoleName="soak-role", AssumeRolePolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"},
                                             "Action": "sts:AssumeRole"}]}))
iam2.put_role_policy(RoleName="soak-role", PolicyName="all", PolicyDocument=allow)
c = client("sts", k["AccessKeyId"], k["SecretAccessKey"]).assume_role(
    RoleArn="arn:aws:iam::123456789012:role/soak-role", RoleSessionName="soak")["Credentials"]
print(c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])
PY
)
read -r key_id secret token <<<"$creds"
python3 tests/fault_proxy.py "http://127.0.0.1:$mport" --p "$fault_p" --seed 2 $only \
	--lifetime $((seconds + 600)) --counts "$work/out/proxy-s3.json" >"$work/out/proxy-s3.log" 2>&1 &
pids+=($!)
sport=$(proxy_port "$work/out/proxy-s3.log")
fi

# two processes a transport, one cache each transport, for SOAK_SECONDS
runs=()
for i in 1 2; do
	if has http; then
		build/bench/trust_soak "$data/pack" "$http_src" "$seconds" "$work/cache-http" \
			"$((i * 1000))" >"$work/out/http-$i.out" 2>"$work/out/http-$i.err" &
		runs+=($!)
	fi
	has s3 || continue
	AWS_ENDPOINT_URL="http://127.0.0.1:$sport" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID="$key_id" \
	AWS_SECRET_ACCESS_KEY="$secret" AWS_SESSION_TOKEN="$token" AWS_EC2_METADATA_DISABLED=true \
	HOME="$work" build/bench/trust_soak "$data/pack" "s3://soak/shards/" "$seconds" \
		"$work/cache-s3" "$((i * 1000 + 1))" >"$work/out/s3-$i.out" 2>"$work/out/s3-$i.err" &
	runs+=($!)
done
status=0
for p in "${runs[@]}"; do wait "$p" || status=1; done
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()

for t in $transports; do
	python3 - "$t" "$work/out" <<'PY'
import json, re, sys
t, out = sys.argv[1], sys.argv[2]
tot = {}
for i in (1, 2):
    line = open(f"{out}/{t}-{i}.out").read()
    for k, v in re.findall(r"(\w+) (\d+)", line.split(":", 1)[1] if ":" in line else ""):
        tot[k] = tot.get(k, 0) + int(v)
faults = json.load(open(f"{out}/proxy-{t}.json"))
print(f"{t}: " + " ".join(f"{k} {v}" for k, v in tot.items()))
print(f"{t} proxy: " + " ".join(f"{k} {v}" for k, v in sorted(faults.items())))
PY
done
# the secrets: in every output and every file the runs wrote
found=0
for s in "$password" "$secret" "$token"; do
	[ "$s" != none ] || continue
	n=$(grep -rlaF -- "$s" "$work/out" "$work"/cache-* 2>/dev/null | wc -l || true)
	found=$((found + n))
done
leaked=$(python3 -c 'import json,sys; print(sum(json.load(open(f))["leaked"] for f in sys.argv[1:]))' \
	"$work"/out/proxy-*.json)
files=$(find "$work/out" "$work"/cache-* -type f 2>/dev/null | wc -l)
echo "secrets: $found files of $files hold the password, secret key or session token;" \
	"$leaked requests carried a credential to the redirect host"
[ "$found" -eq 0 ] && [ "$leaked" -eq 0 ] || status=1
echo "trust_soak.sh: outputs in $work/out"
exit $status
