#!/usr/bin/env bash
# Starts a real Triton Inference Server (PyTriton's bundled tritonserver, CPU only) hosting the
# models of scripts/triton/server.py, for tests/engines/triton_real.rs.
#
#   scripts/triton/start.sh [--restart]
#   source target/triton.env && cargo test --test engines triton_real::
#   scripts/triton/stop.sh
#
# Steps: create or reuse a venv (default .venv-triton in the repo), pip install the pinned
# nvidia-pytriton and numpy, pick free loopback ports, start server.py in the background (its log
# in target/triton-server.log), wait (bounded) until the server is live AND every model's own
# ready endpoint answers 200 (PyTriton's server is ready before its models are), then write an
# env file (target/triton.env) with the addresses, access token, pid and the models' delays.
# A server already running from the env file is reused unless --restart is given.
#
# Settings (environment): TTFTBENCH_TRITON_VENV, TTFTBENCH_TRITON_ENV (env file path),
# TTFTBENCH_TRITON_LOG, TTFTBENCH_TRITON_START_TIMEOUT (s, default 180), PYTHON (python3),
# TTFTBENCH_TRITON_FIRST_TOKEN_DELAY_MS (40), TTFTBENCH_TRITON_ITL_MS (5).
#
# Exit codes: 0 ready; 2 bad usage or missing prerequisite (python, curl, shared libpython);
# 3 pip install failed (e.g. no network to PyPI): CI may decide to skip; 4 the server did not
# start or its models did not become ready in time (log tail printed).
set -euo pipefail

PYTRITON_VERSION=0.7.0
NUMPY_VERSION=1.26.4
MODELS=(trtllm_stream trtllm_unary vllm_stream images yolov8s text_classifier)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${TTFTBENCH_TRITON_VENV:-$repo/.venv-triton}
env_file=${TTFTBENCH_TRITON_ENV:-$repo/target/triton.env}
log=${TTFTBENCH_TRITON_LOG:-$repo/target/triton-server.log}
timeout_s=${TTFTBENCH_TRITON_START_TIMEOUT:-180}
first_ms=${TTFTBENCH_TRITON_FIRST_TOKEN_DELAY_MS:-40}
itl_ms=${TTFTBENCH_TRITON_ITL_MS:-5}
python=${PYTHON:-python3}

restart=0
for a in "$@"; do
  case "$a" in
    --restart) restart=1 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "start.sh: unknown argument '$a' (try --help)" >&2; exit 2 ;;
  esac
done

say() { echo "triton/start.sh: $*" >&2; }
# Running and not a zombie (an exited background server can linger as one).
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null | tr -d ' ' || true)
  [[ -n $state && $state != Z* ]]
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

command -v curl >/dev/null || { say "curl is needed (apt-get install curl)"; exit 2; }
command -v "$python" >/dev/null || { say "$python not found (set PYTHON=...)"; exit 2; }

# Reuse a running server started by an earlier call.
if [[ $restart == 0 && -f $env_file ]]; then
  old_pid=$(sed -n 's/^export TTFTBENCH_TRITON_PID=//p' "$env_file")
  old_http=$(sed -n 's/^export TTFTBENCH_TRITON_HTTP=//p' "$env_file")
  if [[ -n $old_pid ]] && alive "$old_pid"; then
    ok=1
    for m in "${MODELS[@]}"; do
      curl -sf -o /dev/null --max-time 2 "http://$old_http/v2/models/$m/ready" || ok=0
    done
    if [[ $ok == 1 ]]; then
      say "reusing the running server (pid $old_pid, http $old_http); env file $env_file (--restart for a fresh one)"
      exit 0
    fi
  fi
fi
if [[ -f $env_file ]]; then
  "$here/stop.sh" || true
fi

mkdir -p "$(dirname "$env_file")" "$(dirname "$log")"

# --- 1. venv + pinned packages ------------------------------------------------------------------
t_install=$(now)
stamp="$venv/.ttftbench-triton"
want="nvidia-pytriton==$PYTRITON_VERSION numpy==$NUMPY_VERSION"
if [[ ! -x $venv/bin/python ]]; then
  say "creating venv $venv with $($python --version 2>&1)"
  if ! "$python" -m venv "$venv"; then
    say "cannot create a venv with $python (Debian: apt-get install python3-venv)"; exit 2
  fi
fi
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  say "pip install $want (into $venv)"
  pip_log=$(mktemp)
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check --retries 2 --timeout 30 \
      "nvidia-pytriton==$PYTRITON_VERSION" "numpy==$NUMPY_VERSION" >"$pip_log" 2>&1; then
    say "pip install failed; last lines:"
    tail -n 15 "$pip_log" >&2
    rm -f "$pip_log"
    say "cannot install PyTriton (no network to PyPI?): exit 3"
    exit 3
  fi
  rm -f "$pip_log"
  echo "$want" >"$stamp"
fi
install_s=$(since "$t_install")
say "packages ready in ${install_s}s"

# --- 2. the libpython fix -----------------------------------------------------------------------
# PyTriton's python backend stub links libpython3.X.so.1.0 by soname; without this it finds no
# libpython, or (on Debian with libpython3.11 installed) the system one, which does not match the
# venv's interpreter. Point it at the running interpreter's own copy.
libdir=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR') or '')")
ldlib=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_config_var('INSTSONAME') or '')")
if [[ -z $libdir || -z $ldlib || ! -e $libdir/$ldlib ]]; then
  say "the interpreter has no shared libpython ($libdir/$ldlib); PyTriton's python backend needs one (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared)"
  exit 2
fi
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# --- 3. free ports ------------------------------------------------------------------------------
read -r http_port grpc_port metrics_port < <("$venv/bin/python" - <<'EOF'
import socket
socks = []
for _ in range(3):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
)

token=$("$venv/bin/python" -c "import secrets; print(secrets.token_urlsafe(24))")

# --- 4. start -----------------------------------------------------------------------------------
t_start=$(now)
say "starting server.py: http $http_port, grpc $grpc_port, metrics $metrics_port; log $log"
# setsid: the server (and tritonserver, and the python backend stubs) get their own process group,
# so stop.sh can end all of them by this one id.
TTFTBENCH_TRITON_TOKEN=$token PYTHONUNBUFFERED=1 setsid "$venv/bin/python" "$here/server.py" \
  --http-port "$http_port" --grpc-port "$grpc_port" --metrics-port "$metrics_port" \
  --first-token-delay-ms "$first_ms" --itl-ms "$itl_ms" </dev/null >"$log" 2>&1 &
pid=$!

fail() {
  say "$1"
  echo "----- last lines of $log -----" >&2
  tail -n 40 "$log" >&2 || true
  echo "------------------------------" >&2
  if alive "$pid"; then
    # SIGTERM first, so that server.py stops tritonserver and removes PyTriton's workspace.
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do alive "$pid" || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  exit 4
}

# --- 5. wait: server live, then each model's own ready endpoint ---------------------------------
deadline=$(( $(date +%s) + timeout_s ))
base="http://127.0.0.1:$http_port"
pending=("${MODELS[@]}")
live=0
while :; do
  alive "$pid" || fail "server.py exited during startup"
  if [[ $live == 0 ]] && curl -sf -o /dev/null --max-time 2 "$base/v2/health/live"; then
    live=1
    say "server live after $(since "$t_start")s; waiting for the models"
  fi
  if [[ $live == 1 ]]; then
    still=()
    for m in "${pending[@]}"; do
      curl -sf -o /dev/null --max-time 2 "$base/v2/models/$m/ready" || still+=("$m")
    done
    pending=("${still[@]+"${still[@]}"}")
    [[ ${#pending[@]} == 0 ]] && break
  fi
  (( $(date +%s) < deadline )) || fail "not ready after ${timeout_s}s (live=$live, models not ready: ${pending[*]:-})"
  sleep 0.5
done
startup_s=$(since "$t_start")
version=$(curl -sf --max-time 2 "$base/v2" | "$venv/bin/python" -c "import json,sys; print(json.load(sys.stdin).get('version',''))" || true)

# --- 6. env file --------------------------------------------------------------------------------
tmp="$env_file.tmp.$$"
(
  umask 077
  cat >"$tmp" <<EOF
# written by scripts/triton/start.sh at $(date -u +%Y-%m-%dT%H:%M:%SZ); stop with scripts/triton/stop.sh
export TTFTBENCH_TRITON_HTTP=127.0.0.1:$http_port
export TTFTBENCH_TRITON_GRPC=127.0.0.1:$grpc_port
export TTFTBENCH_TRITON_METRICS=http://127.0.0.1:$metrics_port/metrics
export TTFTBENCH_TRITON_TOKEN=$token
export TTFTBENCH_TRITON_PID=$pid
export TTFTBENCH_TRITON_FIRST_TOKEN_DELAY_MS=$first_ms
export TTFTBENCH_TRITON_ITL_MS=$itl_ms
export TTFTBENCH_TRITON_LOG=$log
export TTFTBENCH_TRITON_SERVER_VERSION=$version
export TTFTBENCH_TRITON_PYTRITON_VERSION=$PYTRITON_VERSION
EOF
)
mv "$tmp" "$env_file"
say "ready: Triton $version (PyTriton $PYTRITON_VERSION), models ${MODELS[*]}; install ${install_s}s, startup ${startup_s}s"
say "env file: $env_file (source it, or set TTFTBENCH_TRITON_ENV=$env_file)"
