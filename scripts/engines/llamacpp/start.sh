#!/usr/bin/env bash
# Starts a real llama.cpp llama-server (built from the llama-cpp-python 0.3.36 sdist, CPU only)
# serving a tiny random-weight GPT-2 GGUF made locally, for tests against a real engine.
#
#   scripts/engines/llamacpp/start.sh [--restart] [--variant generate|embed|rerank]
#   source target/llamacpp.env && curl -s http://$TTFTBENCH_LLAMACPP_URL/v1/models
#   scripts/engines/llamacpp/stop.sh [--variant ...|--all]
#
# Steps: install.sh (build in the user cache, a no-op once its stamp is there); make_model.py
# (${XDG_CACHE_HOME:-$HOME/.cache}/ttftbench/models/<recipe>.gguf, a no-op once written); pick a
# free loopback port; start `llama-server -m MODEL --alias tiny-gpt2 --parallel 4 --metrics
# --slots -c 16384 --host 127.0.0.1 --port P` in its own process group (log in
# target/llamacpp-server.log); wait (bounded) until GET /health is 200 and GET /v1/models lists
# the alias; write an env file (target/llamacpp.env) with `export` lines: TTFTBENCH_LLAMACPP_URL
# (127.0.0.1:PORT), _MODEL (the alias), _PID, _GGUF (model file), _LOG, _ARGS, _VERSION. A server
# already running from the env file with the same arguments is reused unless --restart is given.
#
# Variants (each its own server, port, env file and variable prefix; they can run side by side):
#   generate (default)  target/llamacpp.env         TTFTBENCH_LLAMACPP_*
#   embed               target/llamacpp-embed.env   TTFTBENCH_LLAMACPP_EMBED_*   --embeddings --pooling mean
#   rerank              target/llamacpp-rerank.env  TTFTBENCH_LLAMACPP_RERANK_*  --reranking
#
# Settings (environment): TTFTBENCH_LLAMACPP_ARGS (extra server arguments, word-split, e.g.
# "--parallel 2"; later flags win), TTFTBENCH_LLAMACPP_ALIAS (tiny-gpt2), TTFTBENCH_LLAMACPP_ENV
# (env file path), TTFTBENCH_LLAMACPP_LOG, TTFTBENCH_LLAMACPP_START_TIMEOUT (s, default 60),
# PYTHON and TTFTBENCH_LLAMACPP_JOBS (for install.sh).
#
# Exit codes: 0 ready; 2 bad usage or missing prerequisite (python, curl, compiler); 3 install
# failed (e.g. no network to PyPI): CI may decide to skip; 4 the build failed or the server did
# not start in time (log tail printed). Measured on the 2-core machine with other builds running
# (scripts/engines/README.md): build 39 min cold under nice, 0.01 s cached; model 6 s once; start
# to ready 0.5-1.7 s.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tag=llamacpp/start.sh
# shellcheck source=../lib.sh
source "$here/../lib.sh"

restart=0
variant=generate
while (($#)); do
  case "$1" in
    --restart) restart=1 ;;
    --variant) variant=${2:-}; (($# > 1)) && shift ;;
    --variant=*) variant=${1#--variant=} ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) say "unknown argument '$1' (try --help)"; exit 2 ;;
  esac
  shift
done
case "$variant" in
  generate) prefix=TTFTBENCH_LLAMACPP; suffix=""; variant_args=() ;;
  embed) prefix=TTFTBENCH_LLAMACPP_EMBED; suffix=-embed; variant_args=(--embeddings --pooling mean) ;;
  rerank) prefix=TTFTBENCH_LLAMACPP_RERANK; suffix=-rerank; variant_args=(--reranking) ;;
  *) say "unknown variant '$variant' (generate, embed or rerank)"; exit 2 ;;
esac

env_file=${TTFTBENCH_LLAMACPP_ENV:-$repo/target/llamacpp$suffix.env}
log=${TTFTBENCH_LLAMACPP_LOG:-$repo/target/llamacpp$suffix-server.log}
timeout_s=${TTFTBENCH_LLAMACPP_START_TIMEOUT:-60}
alias_name=${TTFTBENCH_LLAMACPP_ALIAS:-tiny-gpt2}
base_args=(--alias "$alias_name" --parallel 4 --metrics --slots -c 16384)
# shellcheck disable=SC2206
user_args=(${TTFTBENCH_LLAMACPP_ARGS:-})
all_args=("${base_args[@]}" "${variant_args[@]}" "${user_args[@]}")
args_key="${all_args[*]}"

command -v curl >/dev/null || { say "curl is needed (apt-get install curl)"; exit 2; }

# Reuse a running server started by an earlier call with the same arguments.
if [[ $restart == 0 && -f $env_file ]]; then
  old_pid=$(env_value "$env_file" "${prefix}_PID")
  old_url=$(env_value "$env_file" "${prefix}_URL")
  old_key=$(sed -n "s/^# args: //p" "$env_file")
  if [[ -n $old_pid ]] && alive "$old_pid" && [[ $old_key == "$args_key" ]] &&
     curl -sf -o /dev/null --max-time 2 "http://$old_url/health"; then
    say "reusing the running server (pid $old_pid, $old_url); env file $env_file (--restart for a fresh one)"
    exit 0
  fi
fi
if [[ -f $env_file ]]; then
  "$here/stop.sh" --variant "$variant" || true
fi
mkdir -p "$(dirname "$env_file")" "$(dirname "$log")"

# --- 1. build (cached) ----------------------------------------------------------------------------
t0=$(now)
set +e
bin=$("$here/install.sh")
rc=$?
set -e
((rc == 0)) || exit "$rc"
install_s=$(since "$t0")
dir=$(dirname "$bin")

# --- 2. the model (cached) ------------------------------------------------------------------------
t1=$(now)
recipe=$(sed -n 's/^RECIPE = "\(.*\)"$/\1/p' "$here/make_model.py")
model=$cache_root/models/$recipe.gguf
if [[ ! -f $model ]]; then
  mkdir -p "$(dirname "$model")"
  "$dir/tools-venv/bin/python" "$here/make_model.py" "$dir/src/vendor/llama.cpp" "$model" ||
    { say "make_model.py failed"; exit 4; }
fi
model_s=$(since "$t1")

# --- 3. start --------------------------------------------------------------------------------------
port=$(free_port "$dir/tools-venv/bin/python")
version=$(LD_LIBRARY_PATH="$bin" "$bin/llama-server" --version 2>&1 | sed -n 's/^version: //p' | head -n 1)
t_start=$(now)
say "starting llama-server ($variant, $version) on 127.0.0.1:$port, model $model as $alias_name; log $log"
# setsid: its own process group, so stop.sh can end it (and anything it spawned) by this one id.
LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" setsid "$bin/llama-server" \
  -m "$model" --host 127.0.0.1 --port "$port" "${all_args[@]}" \
  </dev/null >"$log" 2>&1 &
pid=$!

fail() {
  say "$1"
  echo "----- last lines of $log -----" >&2
  tail -n 40 "$log" >&2 || true
  echo "------------------------------" >&2
  alive "$pid" && stop_tree "$pid" 10
  exit 4
}

# --- 4. wait: /health (503 while loading), then /v1/models naming the alias ------------------------
deadline=$(( $(date +%s) + timeout_s ))
base="http://127.0.0.1:$port"
while :; do
  alive "$pid" || fail "llama-server exited during startup"
  if curl -sf -o /dev/null --max-time 2 "$base/health" &&
     curl -sf --max-time 2 "$base/v1/models" | grep -q "\"id\":\"$alias_name\""; then
    break
  fi
  (( $(date +%s) < deadline )) || fail "not ready after ${timeout_s}s"
  sleep 0.2
done
startup_s=$(since "$t_start")

# --- 5. env file -------------------------------------------------------------------------------------
tmp="$env_file.tmp.$$"
cat >"$tmp" <<EOT
# written by scripts/engines/llamacpp/start.sh at $(date -u +%Y-%m-%dT%H:%M:%SZ); stop with scripts/engines/llamacpp/stop.sh --variant $variant
# args: $args_key
export ${prefix}_URL=127.0.0.1:$port
export ${prefix}_MODEL=$alias_name
export ${prefix}_PID=$pid
export ${prefix}_GGUF=$model
export ${prefix}_LOG=$log
export ${prefix}_ARGS='$args_key'
export ${prefix}_VERSION='$version'
EOT
mv "$tmp" "$env_file"
say "ready: llama-server $version ($variant) at 127.0.0.1:$port (pid $pid); build ${install_s}s, model ${model_s}s, start to ready ${startup_s}s"
say "env file: $env_file"
