#!/usr/bin/env bash
# How fast is the load generator itself? Measures, in one run on this machine, the client-speed
# targets, each server in its own process on loopback (client and server share the cores, as
# they do when you benchmark on one box). wrk is the reference for the cost of an HTTP request
# (it reads the bytes and parses nothing). Three kinds of server send the same 100-token chat
# stream:
#
#   one-write   nginx serving the stream from a file: the whole response in one write
#               (the client is the bottleneck);
#   per-write   `ttftbench serve --instant`: every token in its own write;
#   python      scripts/sse_per_write.py, an independent server writing each event separately
#               (server-bound; CPU per request is what counts there);
#   gRPC        ModelStreamInfer against the simulator's gRPC port (no wrk equivalent: compared
#               with ttftbench's own HTTP SSE figure on the same simulator).
#
# Every ttftbench run uses the default flags (what a user runs: requests.jsonl, timeline,
# histograms, no raw export); the opt-in raw export (--raw-export full) is measured beside them,
# labelled. Each figure is a median of ROUNDS alternations of wrk and ttftbench at concurrency
# 64. CPU per request is user + sys time of the client process over its run divided by its
# requests (token counting, requests.jsonl, histograms and timeline included): robust to other
# load on the machine, unlike requests/s. Targets:
#
#   1. CPU/request <= 2x wrk's on every HTTP server kind; <= 100 us; with --raw-export full
#      <= 3x wrk's on the one-write server;
#   2. requests/s >= 0.7x wrk's on the one-write server (>= 0.9x on the simulator), the median
#      of each round's ratio;
#   3. gRPC CPU/request <= 1.5x HTTP SSE's on the same simulator;
#   4. client overhead on TTFT at concurrency 1: ttftbench's TTFT p50 minus the simulator's own
#      first-response p50 (ttftbench_sim_first_response_us) <= 0.3 ms;
#   5. 10 000 concurrent streams: zero errors and 10 000 actually overlapping;
#   6. peak RSS of a 1 000 000-request run on the defaults <= 100 MB and within 10% of a
#      100 000-request run's; artifacts <= 1 KB per 100-token request; with --raw-export full,
#      peak RSS of a FULL_REQUESTS run within 10% of a quarter as long one's;
#   7. all cores used at concurrency 256 (one-write server): no single client thread does more
#      than 60% of the client's CPU (the per-thread split is printed).
#
# TLS=1 runs only the HTTPS comparison instead (about 2 minutes): CPU per streamed request over
# HTTPS against plain HTTP from the same server, nginx (one listener each, a CA made here with
# openssl signs the certificate; sessions kept alive as in every run) and the simulator (a plain
# and a TLS instance). Target: HTTPS CPU/request <= 1.5x plain HTTP's on both; wrk's own ratio is
# printed for reference (it verifies nothing).
#
# TRITON=1 runs only gRPC against HTTP on a real Triton server instead (about 2 minutes; start one
# with scripts/triton/start.sh, whose env file is read from TTFTBENCH_TRITON_ENV or
# target/triton.env): the PyTriton model `trtllm_stream` streams 100 tokens 5 ms apart, so tokens
# trickle in one at a time and each is its own wake-up. ROUNDS alternations of `--endpoint-type
# kserve` and `generate` at concurrency 32 for 2 x DURATION seconds; prints the client's CPU
# seconds per run and per request (fixed start-up costs included, the same for both). No target:
# the figures say what gRPC costs beside HTTP where the server, not the client, sets the pace.
#
# LIVE=1 runs only the live view's cost instead (about 3 minutes): CPU per request of the same
# run with `--ui none`, with the default view on a pipe (plain lines, as every other run of this
# script), and with `--ui compact` and `--ui dashboard` drawn on a pseudo-terminal (the script
# reads it, as a terminal would, outside the measured process), alternated ROUNDS times (at
# least 2) against nginx and the simulator. Target: each view's median within 5% of `--ui none`'s
# (the spread of one view's own rounds on a shared 2-core machine is about that, more on the
# simulator, which shares the cores with the client).
#
# EXPORT=1 runs only the one-write comparison instead (about 1 minute a round): wrk, the
# defaults and --raw-export full against nginx, with the CPU targets of both.
#
# Usage: scripts/bench_client.sh            (about 4 minutes)
#        TLS=1 scripts/bench_client.sh      (HTTPS vs HTTP only; needs openssl)
#        LIVE=1 scripts/bench_client.sh     (the live view's cost only)
#        TRITON=1 scripts/bench_client.sh   (gRPC vs HTTP on a running Triton)
#        QUICK=1 scripts/bench_client.sh    (one round, 200 000 requests for the RSS check: ~2 min)
# The RSS check with --raw-export full writes FULL_REQUESTS x ~23 KB to a temporary directory
# (4.6 GB by default, removed after).
#        ROUNDS=5 DURATION=10 STREAMS=10000 RSS_REQUESTS=1000000 scripts/bench_client.sh
# Needs wrk and nginx (apt-get install -y wrk nginx-light), python3 and curl. Exits 1 if a target
# is missed. Other load on the machine skews requests/s first; the load average is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${QUICK:-}" ]; then
    ROUNDS=${ROUNDS:-1}
    RSS_REQUESTS=${RSS_REQUESTS:-200000}
    FULL_REQUESTS=${FULL_REQUESTS:-40000}
fi
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
STREAMS=${STREAMS:-10000}
RSS_REQUESTS=${RSS_REQUESTS:-1000000}
FULL_REQUESTS=${FULL_REQUESTS:-200000}
BIN=${TTFTBENCH_BIN:-target/release/ttftbench}

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "nginx is missing: apt-get install -y nginx-light" >&2; exit 2; }
command -v curl >/dev/null || { echo "curl is missing" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }
if [ -z "${TTFTBENCH_BIN:-}" ]; then cargo build --release --quiet; fi

# Every stream holds a socket on both sides.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((STREAMS + 200)) ]; then
    echo "open-file limit $(ulimit -n) < $((STREAMS + 200)): raise the hard limit (ulimit -Hn) to hold $STREAMS streams" >&2
    exit 2
fi

WORK=$(mktemp -d)
chmod 755 "$WORK" # nginx's workers run as another user and read the stream file from here
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_sim NAME ARGS...: runs `ttftbench serve` on free loopback ports; sets NAME_HTTP, NAME_METRICS.
start_sim() {
    local name=$1
    shift
    "$BIN" serve --address 127.0.0.1 --http-port 0 --grpc-port 0 --metrics-port 0 "$@" \
        >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do
        grep -q '^models:' "$WORK/$name.log" 2>/dev/null && break
        sleep 0.1
    done
    local http metrics
    http=$(sed -n 's/^HTTP .* listening on //p' "$WORK/$name.log")
    metrics=$(sed -n 's/^metrics .* listening on //p' "$WORK/$name.log")
    [ -n "$http" ] || { cat "$WORK/$name.log" >&2; exit 2; }
    printf -v "${name}_HTTP" %s "$http"
    printf -v "${name}_METRICS" %s "$metrics"
}

# rusage OUT CMD...: runs CMD with its output in OUT; prints "cpu_seconds max_rss_kb" of CMD.
rusage() {
    local out=$1
    shift
    python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    rc = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.3f} {r.ru_maxrss}")
sys.exit(rc)' "$out" "$@"
}

# rusage_pty OUT CMD...: as rusage, with CMD's stdout and stderr on a pseudo-terminal of 160x40
# (so the live view redraws), whose output this script reads into OUT outside CMD's rusage.
rusage_pty() {
    local out=$1
    shift
    python3 -c '
import fcntl, os, pty, resource, struct, subprocess, sys, termios
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
with open(sys.argv[1], "wb") as out:
    p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not b:
            break
        out.write(b)
    rc = p.wait()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.3f} {r.ru_maxrss}")
sys.exit(rc)' "$out" "$@"
}

# json FILE EXPR: evaluates a Python expression over the parsed JSON file `d`.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# The workload's flags only: everything else is the default.
CHAT=(-m gpt2 --endpoint-type chat --streaming --output-tokens-mean 100
    --extra-inputs ignore_eos:true --synthetic-input-tokens-mean 8
    --synthetic-input-tokens-stddev 0)

echo "== machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
start_sim INSTANT --instant
GRPC=$(sed -n 's/^gRPC .* listening on //p' "$WORK/INSTANT.log")
cat >"$WORK/chat.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"gpt2","messages":[{"role":"user","content":"hello there how are you today"}],"max_tokens":100,"min_tokens":100,"ignore_eos":true,"stream":true}'
LUA

# The simulator's own 100-token stream, served by the other servers byte for byte.
mkdir -p "$WORK/ng/html/v1/chat" "$WORK/ng/logs"
curl -s -X POST -H 'Content-Type: application/json' -d @<(sed -n "s/^wrk.body = '\(.*\)'$/\1/p" "$WORK/chat.lua") \
    "http://$INSTANT_HTTP/v1/chat/completions" >"$WORK/ng/html/v1/chat/completions"
chmod -R a+rX "$WORK/ng"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NGINX_PORT=$(free_port)
NGINX_TLS=""
if [ -n "${TLS:-}" ]; then
    command -v openssl >/dev/null || { echo "openssl is missing: apt-get install -y openssl" >&2; exit 2; }
    # A CA and a certificate it signs for 127.0.0.1 (rustls refuses a self-signed leaf as its
    # own anchor, as browsers do).
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=bench_client CA" -keyout "$WORK/ca.key" -out "$WORK/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$WORK/tls.key" -out "$WORK/tls.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' \
        >"$WORK/tls.ext"
    openssl x509 -req -in "$WORK/tls.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" \
        -CAcreateserial -days 2 -extfile "$WORK/tls.ext" -out "$WORK/tls.pem" 2>/dev/null
    chmod a+r "$WORK/tls.key"
    NGINX_TLS_PORT=$(free_port)
    NGINX_TLS="server {
    listen 127.0.0.1:$NGINX_TLS_PORT ssl;
    ssl_certificate $WORK/tls.pem;
    ssl_certificate_key $WORK/tls.key;
    root $WORK/ng/html;
    location / { default_type text/event-stream; error_page 405 =200 \$uri; }
  }"
fi
cat >"$WORK/ng/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $WORK/ng/nginx.pid;
error_log $WORK/ng/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  sendfile off;
  output_buffers 1 64k;
  open_file_cache max=16;
  open_file_cache_valid 3600s;
  client_body_temp_path $WORK/ng/body;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $WORK/ng/html;
    # A POST to a static file is refused with 405; answer it with the file instead.
    location / { default_type text/event-stream; error_page 405 =200 \$uri; }
  }
  $NGINX_TLS
}
NGINX
"$NGINX" -e "$WORK/ng/logs/error.log" -p "$WORK/ng" -c "$WORK/ng/nginx.conf" >"$WORK/nginx.log" 2>&1 &
PIDS+=($!)
PY_PORT=$(free_port)
python3 scripts/sse_per_write.py "$WORK/ng/html/v1/chat/completions" "$PY_PORT" >"$WORK/py.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do
    curl -s -o /dev/null -X POST -d '{}' "http://127.0.0.1:$NGINX_PORT/v1/chat/completions" &&
        curl -s -o /dev/null -X POST -d '{}' "http://127.0.0.1:$PY_PORT/v1/chat/completions" && break
    sleep 0.1
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
per_req() { python3 -c "print(f'{$1 / $2 * 1e6:.1f}')"; }

# tb NAME ARGS...: one ttftbench run (under TB_RUNNER: rusage, or rusage_pty); sets TB_RPS,
# TB_US (CPU us per request) and TB_INFO.
TB_RUNNER=rusage
tb() {
    local name=$1
    shift
    local cpu n f
    rm -rf "$WORK/$name"
    read -r cpu _ < <("$TB_RUNNER" "$WORK/$name.txt" "$BIN" profile -m gpt2 --output-tokens-mean 100 \
        --synthetic-input-tokens-mean 8 --synthetic-input-tokens-stddev 0 --concurrency 64 \
        --duration "$DURATION" --artifact-dir "$WORK/$name" "$@")
    f="$WORK/$name/profile_export_genai_perf.json"
    n=$(json "$f" "d['request_count']['avg'] + d['error_count']['avg']")
    TB_RPS=$(json "$f" "round(d['request_throughput']['avg'], 1)")
    TB_US=$(per_req "$cpu" "$n")
    TB_KB=$(python3 -c "print(f'{$(du -sb "$WORK/$name" | cut -f1) / $n / 1024:.2f}')")
    TB_INFO="$(json "$f" "round(d['output_sequence_length']['avg'], 1)") tokens/req counted, $(json "$f" "int(d['error_count']['avg'])") errors"
}

# versus NAME HOSTPORT [full]: ROUNDS alternations of wrk and ttftbench against one server; sets
# NAME_WRK_RPS, NAME_WRK_US, NAME_TB_RPS, NAME_TB_US (medians) and NAME_RPS_X (the median of each
# round's ttftbench / wrk requests/s: a pair run back to back shares the machine's state of the
# moment, which on a shared host moves wrk's rate alone by 1.7x between rounds). With `full`,
# each round also runs ttftbench with the opt-in raw export and sets NAME_FULL_RPS, NAME_FULL_US,
# NAME_FULL_KB (its artifacts per request). Both tools run once for 2 s first, uncounted: a
# host that was idle runs the first seconds after slowly (ttftbench 65 000 req/s in a first run
# after 20 s idle, 85 000-87 000 in the two after it; nginx slower per request too).
versus() {
    local name=$1 hp=$2 full=${3:-} cpu n rps
    local wrk_rps=() wrk_us=() tb_rps=() tb_us=() full_rps=() full_us=() full_kb=() rps_x=()
    wrk -t2 -c64 -d2s -s "$WORK/chat.lua" "http://$hp/v1/chat/completions" >/dev/null 2>&1 || true
    DURATION=2 tb "$name" --endpoint-type chat --streaming --extra-inputs ignore_eos:true -u "$hp"
    for r in $(seq "$ROUNDS"); do
        local load
        load=$(cut -d' ' -f1 /proc/loadavg)
        read -r cpu _ < <(rusage "$WORK/wrk.txt" wrk -t2 -c64 -d"${DURATION}s" -s "$WORK/chat.lua" \
            "http://$hp/v1/chat/completions")
        rps=$(sed -n 's/^Requests\/sec: *//p' "$WORK/wrk.txt")
        n=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$WORK/wrk.txt")
        wrk_rps+=("$rps")
        wrk_us+=("$(per_req "$cpu" "$n")")
        tb "$name" --endpoint-type chat --streaming --extra-inputs ignore_eos:true -u "$hp"
        tb_rps+=("$TB_RPS")
        tb_us+=("$TB_US")
        rps_x+=("$(ratio "$TB_RPS" "$rps")")
        echo "   round $r (load $load): wrk ${wrk_rps[-1]} req/s, ${wrk_us[-1]} us CPU/req | ttftbench defaults $TB_RPS req/s (${rps_x[-1]}x), $TB_US us CPU/req ($TB_INFO)"
        if [ -n "$full" ]; then
            tb "$name" --endpoint-type chat --streaming --extra-inputs ignore_eos:true -u "$hp" --raw-export full
            full_rps+=("$TB_RPS")
            full_us+=("$TB_US")
            full_kb+=("$TB_KB")
            echo "      opt-in --raw-export full: $TB_RPS req/s, $TB_US us CPU/req, $TB_KB KB of artifacts per request ($TB_INFO)"
        fi
    done
    if [ -n "$full" ]; then
        printf -v "${name}_FULL_RPS" %s "$(median "${full_rps[@]}")"
        printf -v "${name}_FULL_US" %s "$(median "${full_us[@]}")"
        printf -v "${name}_FULL_KB" %s "$(median "${full_kb[@]}")"
    fi
    printf -v "${name}_WRK_RPS" %s "$(median "${wrk_rps[@]}")"
    printf -v "${name}_WRK_US" %s "$(median "${wrk_us[@]}")"
    printf -v "${name}_TB_RPS" %s "$(median "${tb_rps[@]}")"
    printf -v "${name}_TB_US" %s "$(median "${tb_us[@]}")"
    printf -v "${name}_RPS_X" %s "$(median "${rps_x[@]}")"
}

# tls_versus NAME HTTP_HOSTPORT HTTPS_HOSTPORT: ROUNDS alternations of plain and TLS runs of wrk
# and ttftbench against one server; sets NAME_HTTP_US, NAME_HTTPS_US (ttftbench) and
# NAME_WRK_HTTP_US, NAME_WRK_HTTPS_US (medians of CPU us per request).
tls_versus() {
    local name=$1 plain=$2 tls=$3 cpu n
    local http_us=() https_us=() wrk_http=() wrk_https=()
    for r in $(seq "$ROUNDS"); do
        for url in "http://$plain" "https://$tls"; do
            read -r cpu _ < <(rusage "$WORK/wrk.txt" wrk -t2 -c64 -d"${DURATION}s" \
                -s "$WORK/chat.lua" "$url/v1/chat/completions")
            n=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$WORK/wrk.txt")
            case $url in http:*) wrk_http+=("$(per_req "$cpu" "$n")") ;; *) wrk_https+=("$(per_req "$cpu" "$n")") ;; esac
        done
        tb "$name" --endpoint-type chat --streaming --extra-inputs ignore_eos:true -u "http://$plain"
        http_us+=("$TB_US")
        local info="$TB_RPS req/s, $TB_US us CPU/req ($TB_INFO)"
        tb "$name" --endpoint-type chat --streaming --extra-inputs ignore_eos:true \
            -u "https://$tls" --cacert "$WORK/ca.pem"
        https_us+=("$TB_US")
        echo "   round $r: http $info | https $TB_RPS req/s, $TB_US us CPU/req ($TB_INFO) | wrk ${wrk_http[-1]} / ${wrk_https[-1]} us CPU/req"
    done
    printf -v "${name}_HTTP_US" %s "$(median "${http_us[@]}")"
    printf -v "${name}_HTTPS_US" %s "$(median "${https_us[@]}")"
    printf -v "${name}_WRK_HTTP_US" %s "$(median "${wrk_http[@]}")"
    printf -v "${name}_WRK_HTTPS_US" %s "$(median "${wrk_https[@]}")"
}

if [ -n "${TLS:-}" ]; then
    start_sim TLSSIM --instant --tls-cert "$WORK/tls.pem" --tls-key "$WORK/tls.key"
    for _ in $(seq 50); do
        curl -s -o /dev/null --cacert "$WORK/ca.pem" -X POST -d '{}' \
            "https://127.0.0.1:$NGINX_TLS_PORT/v1/chat/completions" && break
        sleep 0.1
    done
    echo "== TLS 1. nginx (one write): http 127.0.0.1:$NGINX_PORT vs https 127.0.0.1:$NGINX_TLS_PORT, concurrency 64, ${DURATION}s x $ROUNDS"
    tls_versus NGX "127.0.0.1:$NGINX_PORT" "127.0.0.1:$NGINX_TLS_PORT"
    echo "== TLS 2. simulator --instant (per write): http $INSTANT_HTTP vs https $TLSSIM_HTTP"
    tls_versus TSIM "$INSTANT_HTTP" "$TLSSIM_HTTP"
    echo
    echo "== summary (medians of $ROUNDS rounds; load now $(cut -d' ' -f1-3 /proc/loadavg))"
    printf '  %-12s %14s %14s %8s %14s %14s %8s\n' server "http us/req" "https us/req" "x" "wrk http" "wrk https" "wrk x"
    fail=0
    for k in NGX TSIM; do
        h=${k}_HTTP_US s=${k}_HTTPS_US wh=${k}_WRK_HTTP_US ws=${k}_WRK_HTTPS_US
        x=$(ratio "${!s}" "${!h}")
        printf '  %-12s %14s %14s %8s %14s %14s %8s\n' "$(case $k in NGX) echo nginx;; TSIM) echo simulator;; esac)" \
            "${!h}" "${!s}" "$x" "${!wh}" "${!ws}" "$(ratio "${!ws}" "${!wh}")"
        python3 -c "import sys; sys.exit(0 if $x <= 1.5 else 1)" || { echo "  MISSED: $k HTTPS CPU/request $x x plain HTTP's (target <= 1.5)"; fail=1; }
    done
    exit $fail
fi

# live_cost NAME HOSTPORT: ROUNDS alternations of the four views against one server; sets
# NAME_<VIEW>_US (medians of CPU us per request) for VIEW in NONE PLAIN COMPACT DASHBOARD.
live_cost() {
    local name=$1 hp=$2 v
    local none=() plain=() compact=() dash=()
    for r in $(seq "$ROUNDS"); do
        local line="   round $r (load $(cut -d' ' -f1 /proc/loadavg)):"
        for v in none plain compact dashboard; do
            case $v in
            none) TB_RUNNER=rusage tb "$name" "${STREAM[@]}" -u "$hp" --ui none ;;
            plain) TB_RUNNER=rusage tb "$name" "${STREAM[@]}" -u "$hp" ;;
            *) TB_RUNNER=rusage_pty tb "$name" "${STREAM[@]}" -u "$hp" --ui "$v" ;;
            esac
            case $v in none) none+=("$TB_US") ;; plain) plain+=("$TB_US") ;; compact) compact+=("$TB_US") ;; *) dash+=("$TB_US") ;; esac
            line+=" $v $TB_US us ($TB_RPS req/s)"
        done
        echo "$line"
    done
    grep -q $'\e\[K' "$WORK/$name.txt" || { echo "   the dashboard drew no frame:" >&2; head -c 2000 "$WORK/$name.txt" >&2; exit 1; }
    printf -v "${name}_NONE_US" %s "$(median "${none[@]}")"
    printf -v "${name}_PLAIN_US" %s "$(median "${plain[@]}")"
    printf -v "${name}_COMPACT_US" %s "$(median "${compact[@]}")"
    printf -v "${name}_DASHBOARD_US" %s "$(median "${dash[@]}")"
}

if [ -n "${TRITON:-}" ]; then
    env_file=${TTFTBENCH_TRITON_ENV:-target/triton.env}
    [ -f "$env_file" ] || { echo "no Triton env file at $env_file: run scripts/triton/start.sh" >&2; exit 2; }
    # shellcheck disable=SC1090
    . "$env_file"
    echo "== TRITON: trtllm_stream, gRPC $TTFTBENCH_TRITON_GRPC vs HTTP $TTFTBENCH_TRITON_HTTP, concurrency 32, $((2 * DURATION))s x $ROUNDS"
    for r in $(seq "$ROUNDS"); do
        line="   round $r (load $(cut -d' ' -f1 /proc/loadavg)):"
        for ep in kserve generate; do
            case $ep in kserve) url=$TTFTBENCH_TRITON_GRPC ;; *) url=$TTFTBENCH_TRITON_HTTP ;; esac
            rm -rf "$WORK/tr"
            read -r cpu _ < <(rusage "$WORK/tr.txt" "$BIN" profile -m trtllm_stream --endpoint-type "$ep" \
                --streaming -u "$url" --concurrency 32 --duration $((2 * DURATION)) \
                --output-tokens-mean 100 --output-tokens-mean-deterministic \
                --synthetic-input-tokens-mean 8 --synthetic-input-tokens-stddev 0 \
                --artifact-dir "$WORK/tr")
            f="$WORK/tr/profile_export_genai_perf.json"
            n=$(json "$f" "d['request_count']['avg'] + d['error_count']['avg']")
            line+=" $ep ${cpu}s CPU, $(per_req "$cpu" "$n") us/req ($n requests, $(json "$f" "int(d['error_count']['avg'])") errors);"
        done
        echo "$line"
    done
    exit 0
fi

if [ -n "${LIVE:-}" ]; then
    [ "$ROUNDS" -ge 2 ] || ROUNDS=2
    # The streamed chat of `versus`, on top of tb's 100-token, concurrency-64 run.
    STREAM=(--endpoint-type chat --streaming --extra-inputs ignore_eos:true)
    echo "== LIVE 1. nginx (one write) at 127.0.0.1:$NGINX_PORT: concurrency 64, ${DURATION}s x $ROUNDS per view"
    live_cost LNGX "127.0.0.1:$NGINX_PORT"
    echo "== LIVE 2. simulator --instant (per write) at $INSTANT_HTTP"
    live_cost LSIM "$INSTANT_HTTP"
    echo
    echo "== summary: CPU us per request, medians of $ROUNDS rounds (load now $(cut -d' ' -f1-3 /proc/loadavg))"
    printf '  %-12s %10s %16s %16s %16s\n' server "ui none" "plain (pipe)" "compact (pty)" "dashboard (pty)"
    fail=0
    for k in LNGX LSIM; do
        n=${k}_NONE_US p=${k}_PLAIN_US c=${k}_COMPACT_US d=${k}_DASHBOARD_US
        printf '  %-12s %10s %9s %5sx %9s %5sx %9s %5sx\n' "$(case $k in LNGX) echo nginx;; LSIM) echo simulator;; esac)" \
            "${!n}" "${!p}" "$(ratio "${!p}" "${!n}")" "${!c}" "$(ratio "${!c}" "${!n}")" "${!d}" "$(ratio "${!d}" "${!n}")"
        for v in PLAIN COMPACT DASHBOARD; do
            x=${k}_${v}_US
            python3 -c "import sys; sys.exit(0 if ${!x} <= 1.05 * ${!n} else 1)" ||
                { echo "  MISSED: $k $v view ${!x} us/req > 1.05 x --ui none's ${!n}"; fail=1; }
        done
    done
    exit $fail
fi

echo "== 1. one-write server (nginx at 127.0.0.1:$NGINX_PORT): concurrency 64, 100-token streams, ${DURATION}s x $ROUNDS"
versus ONE "127.0.0.1:$NGINX_PORT" full
if [ -n "${EXPORT:-}" ]; then
    echo "== summary: medians of $ROUNDS rounds (load now $(cut -d' ' -f1-3 /proc/loadavg))"
    echo "   wrk $ONE_WRK_US us/req; defaults $ONE_TB_US us/req ($(ratio "$ONE_TB_US" "$ONE_WRK_US")x)," \
        "requests/s ${ONE_RPS_X}x wrk's (median of rounds);" \
        "--raw-export full $ONE_FULL_US us/req ($(ratio "$ONE_FULL_US" "$ONE_WRK_US")x, $ONE_FULL_KB KB/req)"
    python3 -c "import sys; sys.exit(0 if $ONE_TB_US <= 2 * $ONE_WRK_US and $ONE_FULL_US <= 3 * $ONE_WRK_US else 1)" ||
        { echo "   MISSED: defaults <= 2x and --raw-export full <= 3x wrk's CPU per request"; exit 1; }
    exit 0
fi
echo "== 2. per-write server (simulator --instant at $INSTANT_HTTP)"
versus SIM "$INSTANT_HTTP"
echo "== 3. per-write server, independent (python at 127.0.0.1:$PY_PORT; server-bound)"
versus PY "127.0.0.1:$PY_PORT"
echo "== 4. gRPC ModelStreamInfer (simulator --instant at $GRPC)"
grpc_us=()
for r in $(seq "$ROUNDS"); do
    tb GRPC --endpoint-type kserve --streaming --output-tokens-mean-deterministic -u "$GRPC"
    grpc_us+=("$TB_US")
    echo "   round $r (load $(cut -d' ' -f1 /proc/loadavg)): ttftbench $TB_RPS req/s, $TB_US us CPU/req ($TB_INFO)"
done
GRPC_US=$(median "${grpc_us[@]}")

start_sim TIMED
echo "== 5. TTFT overhead at concurrency 1 (simulator with its default timing at $TIMED_HTTP)"
"$BIN" profile -m vllm_model --endpoint-type chat --streaming --output-tokens-mean 2 \
    --extra-inputs ignore_eos:true --synthetic-input-tokens-mean 8 --synthetic-input-tokens-stddev 0 \
    -u "$TIMED_HTTP" --concurrency 1 --request-count 500 --warmup-request-count 20 \
    --artifact-dir "$WORK/c1" >"$WORK/c1.txt" 2>&1
CLIENT_P50=$(json "$WORK/c1/profile_export_genai_perf.json" "round(d['time_to_first_token']['p50'], 3)")
# The warm-up requests are in the simulator's summary too; they are as many as 4% of the
# samples, so they move its median by at most a few percentiles of a narrow distribution.
SIM_P50_US=$(curl -s "http://$TIMED_METRICS/metrics" |
    sed -n 's/^ttftbench_sim_first_response_us{model="vllm_model",version="1",quantile="0.5"} //p')
OVERHEAD=$(python3 -c "print(f'{$CLIENT_P50 - $SIM_P50_US / 1000:.3f}')")
echo "   ttftbench TTFT p50 $CLIENT_P50 ms, simulator first response p50 $SIM_P50_US us"
# What of that is the client's: one request at a time against nginx (the whole stream in one
# write, so a request's latency is one round trip), ttftbench's latency median against wrk's,
# ROUNDS alternations (on a virtual machine a wake-up's cost moves between runs, 30 to 350 us
# seen). The rest of the overhead above is wake-ups and the simulator's own HTTP work.
rt_tb=() rt_wrk=()
for r in $(seq "$ROUNDS"); do
    "$BIN" profile "${CHAT[@]}" -u "127.0.0.1:$NGINX_PORT" --concurrency 1 --request-count 2000 \
        --artifact-dir "$WORK/rt$r" >"$WORK/rt$r.txt" 2>&1
    rt_tb+=("$(json "$WORK/rt$r/profile_export_genai_perf.json" "round(d['request_latency']['p50'] * 1000, 1)")")
    rt_wrk+=("$(wrk -t1 -c1 -d1s --latency -s "$WORK/chat.lua" "http://127.0.0.1:$NGINX_PORT/v1/chat/completions" |
        python3 -c '
import re, sys
m = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", sys.stdin.read(), re.M)
print(round(float(m[1]) * {"us": 1, "ms": 1e3, "s": 1e6}[m[2]], 1))')")
done
echo "   round trip at c=1 against nginx, p50 per round: ttftbench ${rt_tb[*]} us, wrk ${rt_wrk[*]} us"

start_sim SLOW --max-batch "$STREAMS" --prefill-base-us 0 --prefill-us-per-token 0 \
    --decode-base-us 100000 --decode-us-per-seq 0
echo "== 6. $STREAMS concurrent streams (30 tokens at 100 ms each, 2 per slot)"
read -r _ STREAM_RSS < <(rusage "$WORK/10k.txt" "$BIN" profile -m gpt2 --endpoint-type chat \
    --streaming --output-tokens-mean 30 --extra-inputs ignore_eos:true \
    --synthetic-input-tokens-mean 8 --synthetic-input-tokens-stddev 0 -u "$SLOW_HTTP" \
    --concurrency "$STREAMS" --request-count $((STREAMS * 2)) --request-timeout 120 \
    --artifact-dir "$WORK/10k")
STREAM_ERRORS=$(json "$WORK/10k/profile_export_genai_perf.json" "d['error_count']['avg']")
STREAM_OK=$(json "$WORK/10k/profile_export_genai_perf.json" "d['request_count']['avg']")
# The most requests in flight at once, from each request's send and end times.
STREAM_PEAK=$(python3 -c '
import json, sys
ev = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    ev.append((r["sent_ns"], 1))
    ev.append((r["end_ns"], -1))
ev.sort()
cur = peak = 0
for _, d in ev:
    cur += d
    peak = max(peak, cur)
print(peak)' "$WORK/10k/requests.jsonl")
echo "   $STREAM_OK ok, $STREAM_ERRORS errors, $STREAM_PEAK in flight at the peak, client RSS $((STREAM_RSS / 1024)) MB"

# rss NAME REQUESTS ARGS...: one run of REQUESTS against the simulator; sets RSS_MB, RSS_DISK_KB
# (artifacts per request) and prints them. The artifacts are removed afterwards (the raw
# export's are large).
rss() {
    local name=$1 count=$2 cpu kb ok
    shift 2
    rm -rf "$WORK/$name"
    read -r cpu kb < <(rusage "$WORK/$name.txt" "$BIN" profile "${CHAT[@]}" -u "$INSTANT_HTTP" \
        --concurrency 64 --request-count "$count" --artifact-dir "$WORK/$name" "$@")
    ok=$(json "$WORK/$name/profile_export_genai_perf.json" "d['request_count']['avg']")
    RSS_MB=$(python3 -c "print(f'{$kb / 1024:.1f}')")
    RSS_DISK_KB=$(python3 -c "print(f'{$(du -sb "$WORK/$name" | cut -f1) / $count / 1024:.2f}')")
    RSS_TRUST=$(json "$WORK/$name/profile_export_genai_perf.json" "d['validity']['trustworthy']")
    echo "   $name: $ok requests, peak RSS $RSS_MB MB, ${cpu}s CPU, $RSS_DISK_KB KB of artifacts per request, trustworthy $RSS_TRUST"
    rm -rf "$WORK/$name"
}
echo "== 7. peak RSS on the defaults: $((RSS_REQUESTS / 10)) then $RSS_REQUESTS requests (concurrency 64, --instant)"
rss small $((RSS_REQUESTS / 10))
RSS_SMALL=$RSS_MB
rss large "$RSS_REQUESTS"
RSS_LARGE=$RSS_MB
RSS_DISK=$RSS_DISK_KB
echo "   with --raw-export full: $((FULL_REQUESTS / 4)) then $FULL_REQUESTS requests"
rss full_small $((FULL_REQUESTS / 4)) --raw-export full
FULL_SMALL=$RSS_MB
rss full_large "$FULL_REQUESTS" --raw-export full
FULL_LARGE=$RSS_MB

echo "== 8. per-thread CPU at concurrency 256 (nginx, ${DURATION}s)"
# Samples every thread's user+sys ticks from /proc while the run lasts (threads vanish at exit,
# so the last sample before it is the end) and prints each thread's share of the client's CPU.
THREAD_MAX=$(python3 - "$WORK/t256" "$BIN" profile "${CHAT[@]}" -u "127.0.0.1:$NGINX_PORT" \
    --concurrency 256 --duration "$DURATION" --artifact-dir "$WORK/t256" <<'PY'
import os, subprocess, sys, time
out = open(sys.argv[1] + ".txt", "w")
p = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)
tck = os.sysconf("SC_CLK_TCK")
def sample():
    s = {}
    try:
        tids = os.listdir(f"/proc/{p.pid}/task")
    except FileNotFoundError:
        return s
    for t in tids:
        try:
            st = open(f"/proc/{p.pid}/task/{t}/stat").read()
        except FileNotFoundError:
            continue
        name = st[st.index("(") + 1 : st.rindex(")")]
        f = st[st.rindex(")") + 2 :].split()
        s[t] = (name, (int(f[11]) + int(f[12])) / tck)
    return s
time.sleep(1.0)
first, t0 = sample(), time.time()
last, t1 = first, t0
while p.poll() is None:
    s = sample()
    if s:
        last, t1 = s, time.time()
    time.sleep(0.2)
rows = sorted(((last[t][1] - first.get(t, (None, 0.0))[1], last[t][0], t) for t in last), reverse=True)
total = sum(r[0] for r in rows) or 1e-9
wall = max(t1 - t0, 1e-9)
for cpu, name, tid in rows[:6]:
    if cpu > 0:
        print(f"   thread {tid:>7} {name:<18} {cpu / wall:5.2f} cores  {cpu / total * 100:5.1f}% of the client's CPU", file=sys.stderr)
print(f"   client total {total / wall:.2f} cores over {wall:.1f}s", file=sys.stderr)
print(f"{rows[0][0] / total:.2f}")
PY
)
THREAD_RPS=$(json "$WORK/t256/profile_export_genai_perf.json" "round(d['request_throughput']['avg'], 1)")
echo "   $THREAD_RPS req/s; busiest thread ${THREAD_MAX} of the client's CPU"

echo
echo "== summary (medians of $ROUNDS rounds; load now $(cut -d' ' -f1-3 /proc/loadavg))"
fail=0
check() { # NAME VALUE OP TARGET
    if python3 -c "import sys; sys.exit(0 if $2 $3 $4 else 1)"; then
        printf '  %-58s %10s   target %s %s   ok\n' "$1" "$2" "$3" "$4"
    else
        printf '  %-58s %10s   target %s %s   MISSED\n' "$1" "$2" "$3" "$4"
        fail=1
    fi
}
printf '  %-12s %14s %14s %12s %12s %10s %10s\n' server "wrk req/s" "ttftb req/s" "wrk us/req" "ttftb us/req" "req/s x" "CPU x"
for k in ONE SIM PY; do
    wr=${k}_WRK_RPS tr=${k}_TB_RPS wu=${k}_WRK_US tu=${k}_TB_US rx=${k}_RPS_X
    printf '  %-12s %14s %14s %12s %12s %10s %10s\n' "$(case $k in ONE) echo one-write;; SIM) echo per-write;; PY) echo python;; esac)" \
        "${!wr}" "${!tr}" "${!wu}" "${!tu}" "${!rx}" "$(ratio "${!tu}" "${!wu}")"
done
printf '  %-12s %14s %14s %12s %12s %10s %10s\n' gRPC - - - "$GRPC_US" - "$(ratio "$GRPC_US" "$SIM_TB_US")x SSE"
check "one-write: ttftbench / wrk requests/s (median of rounds)" "$ONE_RPS_X" ">=" 0.7
check "one-write: ttftbench / wrk CPU per request" "$(ratio "$ONE_TB_US" "$ONE_WRK_US")" "<=" 2
check "one-write, --raw-export full: ttftbench / wrk CPU per request" "$(ratio "$ONE_FULL_US" "$ONE_WRK_US")" "<=" 3
printf '  %-58s %10s   (no target)\n' "one-write, --raw-export full: requests/s x wrk, KB/request" \
    "$(ratio "$ONE_FULL_RPS" "$ONE_WRK_RPS") / $ONE_FULL_KB"
check "per-write (simulator): ttftbench / wrk requests/s (median of rounds)" "$SIM_RPS_X" ">=" 0.9
check "per-write (simulator): ttftbench / wrk CPU per request" "$(ratio "$SIM_TB_US" "$SIM_WRK_US")" "<=" 2
check "per-write (python): ttftbench / wrk CPU per request" "$(ratio "$PY_TB_US" "$PY_WRK_US")" "<=" 2
check "ttftbench CPU us per request (simulator, tokens counted)" "$SIM_TB_US" "<=" 100
check "gRPC / HTTP SSE CPU per request (simulator)" "$(ratio "$GRPC_US" "$SIM_TB_US")" "<=" 1.5
check "TTFT overhead at c=1, ms (client p50 - server p50)" "$OVERHEAD" "<=" 0.3
printf '  %-58s %10s   (no target: what the client adds)\n' "round trip at c=1 against nginx, us: ttftbench / wrk" \
    "$(median "${rt_tb[@]}") / $(median "${rt_wrk[@]}")"
check "concurrent streams held ($STREAM_ERRORS errors)" "$STREAM_PEAK" ">=" "$STREAMS"
check "errors among $STREAMS concurrent streams" "$STREAM_ERRORS" "==" 0
check "peak RSS MB, $RSS_REQUESTS requests (defaults)" "$RSS_LARGE" "<=" 100
check "peak RSS, $RSS_REQUESTS / $((RSS_REQUESTS / 10)) requests (defaults)" "$(ratio "$RSS_LARGE" "$RSS_SMALL")" "<=" 1.1
check "artifacts KB per request, $RSS_REQUESTS requests (defaults)" "$RSS_DISK" "<=" 1
check "peak RSS, --raw-export full, $FULL_REQUESTS / $((FULL_REQUESTS / 4)) requests" "$(ratio "$FULL_LARGE" "$FULL_SMALL")" "<=" 1.1
check "busiest client thread's share of its CPU at c=256" "$THREAD_MAX" "<=" 0.6
exit $fail
