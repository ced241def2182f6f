#!/usr/bin/env bash
# Stops the server started by scripts/triton/start.sh (the pid in its env file), then removes the
# env file. SIGTERM lets server.py stop tritonserver and clean PyTriton's workspace; after 30 s the
# process group start.sh created (server.py, tritonserver, python backend stubs) is killed.
# Normally it takes 3-10 s: server.py stops tritonserver, which waits at most 5 s
# (--exit-timeout-secs) for the models to unload.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
env_file=${TTFTBENCH_TRITON_ENV:-$repo/target/triton.env}

if [[ ! -f $env_file ]]; then
  echo "triton/stop.sh: no env file at $env_file: nothing to stop" >&2
  exit 0
fi
pid=$(sed -n 's/^export TTFTBENCH_TRITON_PID=//p' "$env_file")
# Running, and not a zombie: start.sh's shell is gone, so the exited server may linger as one
# until the machine's init reaps it.
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null | tr -d ' ' || true)
  [[ -n $state && $state != Z* ]]
}
if [[ -z $pid ]] || ! alive "$pid"; then
  echo "triton/stop.sh: server (pid ${pid:-?}) is not running" >&2
  rm -f "$env_file"
  exit 0
fi
kill -TERM "$pid" 2>/dev/null || true
for _ in $(seq 1 60); do
  alive "$pid" || break
  sleep 0.5
done
if alive "$pid"; then
  echo "triton/stop.sh: pid $pid still running after 30 s: killing its process group" >&2
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
fi
# tritonserver and the stubs are in the same group: make sure none outlives the server.
kill -TERM -- "-$pid" 2>/dev/null || true
rm -f "$env_file"
echo "triton/stop.sh: stopped pid $pid" >&2
