#!/usr/bin/env bash
# How fast is the load generator itself? Measures, in one run on this machine, the client-speed
# targets of the load-fidelity work, each against `ttftbench serve` started here in its own
# process (so client and server share the cores, as they do when you benchmark on one box):
#
#   1. requests/s at concurrency 64, 100-token chat streams: ttftbench vs wrk (raw HTTP, parses
#      nothing), alternated ROUNDS times; target ttftbench >= 0.9 x wrk;
#   2. CPU time (user + sys) per request, token counting and artifacts included; target <= 100 us;
#   3. client overhead on TTFT at concurrency 1: ttftbench's TTFT p50 minus the simulator's own
#      first-response p50 (ttftbench_sim_first_response_us); target <= 0.3 ms;
#   4. 10 000 concurrent streams: zero errors and 10 000 actually overlapping;
#   5. peak RSS of a 1 000 000-request run; target <= 50 MB.
#
# Usage: scripts/bench_client.sh            (about 4 minutes)
#        ROUNDS=5 DURATION=15 STREAMS=10000 RSS_REQUESTS=1000000 scripts/bench_client.sh
# Needs wrk (apt-get install -y wrk) and python3 (for getrusage of a child). Exits 1 if a target
# is missed. The machine must be otherwise idle: other load skews the wrk ratio first.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
STREAMS=${STREAMS:-10000}
RSS_REQUESTS=${RSS_REQUESTS:-1000000}
BIN=${TTFTBENCH_BIN:-target/release/ttftbench}

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }
if [ -z "${TTFTBENCH_BIN:-}" ]; then cargo build --release --quiet; fi

# Every stream holds a socket on both sides.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((STREAMS + 200)) ]; then
    echo "open-file limit $(ulimit -n) < $((STREAMS + 200)): raise the hard limit (ulimit -Hn) to hold $STREAMS streams" >&2
    exit 2
fi

WORK=$(mktemp -d)
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

# json FILE EXPR: evaluates a Python expression over the parsed JSON file `d`.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# Maximum-rate runs: no raw per-request export (it adds ~36 us of CPU and 25 KB per 100-token
# request; README "Files").
CHAT=(-m gpt2 --endpoint-type chat --streaming --output-tokens-mean 100
    --extra-inputs ignore_eos:true --synthetic-input-tokens-mean 8
    --synthetic-input-tokens-stddev 0 --raw-export none)

echo "== machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
start_sim INSTANT --instant
echo "== 1-2. concurrency 64, 100-token streams, ${DURATION}s each, $ROUNDS rounds (simulator --instant at $INSTANT_HTTP)"
cat >"$WORK/chat.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"gpt2","messages":[{"role":"user","content":"hello there how are you today"}],"max_tokens":100,"min_tokens":100,"ignore_eos":true,"stream":true}'
LUA
wrk_rps=()
tb_rps=()
tb_us=()
wrk_us=()
for r in $(seq "$ROUNDS"); do
    read -r cpu _ < <(rusage "$WORK/wrk.txt" wrk -t2 -c64 -d"${DURATION}s" -s "$WORK/chat.lua" \
        "http://$INSTANT_HTTP/v1/chat/completions")
    rps=$(sed -n 's/^Requests\/sec: *//p' "$WORK/wrk.txt")
    n=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$WORK/wrk.txt")
    wrk_rps+=("$rps")
    wrk_us+=("$(python3 -c "print(f'{$cpu / $n * 1e6:.1f}')")")
    read -r cpu _ < <(rusage "$WORK/tb.txt" "$BIN" profile "${CHAT[@]}" -u "$INSTANT_HTTP" \
        --concurrency 64 --duration "$DURATION" --artifact-dir "$WORK/c64")
    f="$WORK/c64/profile_export_genai_perf.json"
    rps=$(json "$f" "round(d['request_throughput']['avg'], 1)")
    n=$(json "$f" "d['request_count']['avg'] + d['error_count']['avg']")
    osl=$(json "$f" "round(d['output_sequence_length']['avg'], 1)")
    tb_rps+=("$rps")
    tb_us+=("$(python3 -c "print(f'{$cpu / $n * 1e6:.1f}')")")
    echo "   round $r: wrk ${wrk_rps[-1]} req/s (${wrk_us[-1]} us CPU/req) | ttftbench $rps req/s (${tb_us[-1]} us CPU/req, $osl tokens/req counted, $(json "$f" "d['error_count']['avg']") errors)"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
WRK_RPS=$(median "${wrk_rps[@]}")
TB_RPS=$(median "${tb_rps[@]}")
TB_US=$(median "${tb_us[@]}")
WRK_US=$(median "${wrk_us[@]}")
RATIO=$(python3 -c "print(f'{$TB_RPS / $WRK_RPS:.3f}')")

start_sim TIMED
echo "== 3. TTFT overhead at concurrency 1 (simulator with its default timing at $TIMED_HTTP)"
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

start_sim SLOW --max-batch "$STREAMS" --prefill-base-us 0 --prefill-us-per-token 0 \
    --decode-base-us 100000 --decode-us-per-seq 0
echo "== 4. $STREAMS concurrent streams (30 tokens at 100 ms each, 2 per slot)"
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

echo "== 5. peak RSS over $RSS_REQUESTS requests (concurrency 64, --instant)"
read -r RSS_CPU RSS_KB < <(rusage "$WORK/1m.txt" "$BIN" profile "${CHAT[@]}" -u "$INSTANT_HTTP" \
    --concurrency 64 --request-count "$RSS_REQUESTS" --artifact-dir "$WORK/1m")
RSS_OK=$(json "$WORK/1m/profile_export_genai_perf.json" "d['request_count']['avg']")
echo "   $RSS_OK requests, peak RSS $((RSS_KB / 1024)) MB, ${RSS_CPU}s CPU, requests.jsonl $(du -m "$WORK/1m/requests.jsonl" | cut -f1) MB"

echo
echo "== summary (medians of $ROUNDS rounds)"
fail=0
check() { # NAME VALUE OP TARGET
    if python3 -c "import sys; sys.exit(0 if $2 $3 $4 else 1)"; then
        printf '  %-52s %12s   target %s %s   ok\n' "$1" "$2" "$3" "$4"
    else
        printf '  %-52s %12s   target %s %s   MISSED\n' "$1" "$2" "$3" "$4"
        fail=1
    fi
}
printf '  %-52s %12s\n' "wrk requests/s (c=64, 100-token streams)" "$WRK_RPS"
printf '  %-52s %12s\n' "ttftbench requests/s" "$TB_RPS"
check "ttftbench / wrk requests/s" "$RATIO" ">=" 0.9
printf '  %-52s %12s\n' "wrk CPU us per request (parses nothing)" "$WRK_US"
check "ttftbench CPU us per request (tokens counted)" "$TB_US" "<=" 100
check "TTFT overhead at c=1, ms (client p50 - server p50)" "$OVERHEAD" "<=" 0.3
check "concurrent streams held ($STREAM_ERRORS errors)" "$STREAM_PEAK" ">=" "$STREAMS"
check "errors among $STREAMS concurrent streams" "$STREAM_ERRORS" "==" 0
check "peak RSS MB, $RSS_REQUESTS requests" "$((RSS_KB / 1024))" "<=" 50
exit $fail
