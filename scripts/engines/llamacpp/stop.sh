#!/usr/bin/env bash
# Stops a server started by scripts/engines/llamacpp/start.sh (the pid in its env file) and its
# process group, then removes the env file. SIGTERM ends llama-server in well under a second;
# after 30 s the process group is killed.
#
#   scripts/engines/llamacpp/stop.sh [--variant generate|embed|rerank | --all]
#
# Settings (environment): TTFTBENCH_LLAMACPP_ENV (env file path; with one variant only).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tag=llamacpp/stop.sh
# shellcheck source=../lib.sh
source "$here/../lib.sh"

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
    generate) prefix=TTFTBENCH_LLAMACPP; suffix="" ;;
    embed) prefix=TTFTBENCH_LLAMACPP_EMBED; suffix=-embed ;;
    rerank) prefix=TTFTBENCH_LLAMACPP_RERANK; suffix=-rerank ;;
    *) say "unknown variant '$variant'"; exit 2 ;;
  esac
  env_file=$repo/target/llamacpp$suffix.env
  [[ ${#variants[@]} == 1 ]] && env_file=${TTFTBENCH_LLAMACPP_ENV:-$env_file}
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
