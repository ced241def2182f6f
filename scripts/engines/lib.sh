# Shared helpers for scripts/engines/*/{install,start,stop}.sh (sourced, not run).
# Callers set `tag` (the prefix of every message) before sourcing.

# The user cache: everything big (venvs, builds, models) lives here, keyed by version.
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/ttftbench

say() { echo "${tag:-engines}: $*" >&2; }
# Running and not a zombie (an exited background server can linger as one).
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null | tr -d ' ' || true)
  [[ -n $state && $state != Z* ]]
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# One free loopback port (bound, read, released: a small race with other starters, as usual).
free_port() {
  "${1:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# The value of `export NAME=VALUE` in an env file (empty when absent).
env_value() { sed -n "s/^export $2=//p" "$1" 2>/dev/null | tail -n 1; }

# All descendants of a pid (children first found, deepest last), for stop scripts.
descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$c"
    descendants "$c"
  done
}

# Stops pid $1 and its whole tree: SIGTERM to the pid, wait up to $2 s (default 30), then SIGKILL
# to its process group (start scripts use setsid, so the group is the server's own) and to any
# descendant left.
stop_tree() {
  local pid=$1 wait_s=${2:-30} kids i
  kids=$(descendants "$pid")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < wait_s * 5; i++)); do
    alive "$pid" || break
    sleep 0.2
  done
  if alive "$pid"; then
    say "pid $pid still running after ${wait_s}s: killing its process group"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  # Children that outlived the parent (vLLM's engine core and workers are in the same group).
  kill -TERM -- "-$pid" 2>/dev/null || true
  for i in $kids; do
    alive "$i" && kill -KILL "$i" 2>/dev/null || true
  done
  return 0
}

# The whole of a stop script: `stop_main ENGINE "$@"` for ENGINE vllm or llamacpp stops the
# variants its arguments name ([--variant generate|embed|rerank | --all]; generate by default),
# each from its env file (target/ENGINE[-variant].env; TTFTBENCH_<ENGINE>_ENV overrides it when
# one variant is named), and removes the env files.
stop_main() {
  local engine=$1 upper variants variant prefix suffix env_file pid t0
  shift
  upper=$(echo "$engine" | tr a-z A-Z)
  variants=(generate)
  case "${1:-}" in
    "") ;;
    --all) variants=(generate embed rerank) ;;
    --variant) variants=("${2:-}") ;;
    --variant=*) variants=("${1#--variant=}") ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) say "unknown argument '$1' (try --help)"; exit 2 ;;
  esac
  for variant in "${variants[@]}"; do
    case "$variant" in
      generate) prefix=TTFTBENCH_$upper; suffix="" ;;
      embed|rerank) prefix=TTFTBENCH_${upper}_$(echo "$variant" | tr a-z A-Z); suffix=-$variant ;;
      *) say "unknown variant '$variant'"; exit 2 ;;
    esac
    env_file=$repo/target/$engine$suffix.env
    if [[ ${#variants[@]} == 1 ]]; then
      local override=TTFTBENCH_${upper}_ENV
      env_file=${!override:-$env_file}
    fi
    if [[ ! -f $env_file ]]; then
      say "no env file at $env_file: nothing to stop"
      continue
    fi
    pid=$(env_value "$env_file" "${prefix}_PID")
    if [[ -z $pid ]] || ! alive "$pid"; then
      say "server (pid ${pid:-?}) is not running"
      rm -f "$env_file"
      continue
    fi
    t0=$(now)
    stop_tree "$pid" 30
    rm -f "$env_file"
    say "stopped $variant server pid $pid in $(since "$t0")s"
  done
}
