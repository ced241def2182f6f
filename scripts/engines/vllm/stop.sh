#!/usr/bin/env bash
# Stops a server started by scripts/engines/vllm/start.sh (the pid in its env file) and its whole
# process tree (API server, engine core, worker), then removes the env file. SIGTERM ends the
# tree in ~3 s; after 30 s the process group is killed.
#
#   scripts/engines/vllm/stop.sh [--variant generate|embed|rerank | --all]
#
# Settings (environment): TTFTBENCH_VLLM_ENV (env file path; with one variant only).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tag=vllm/stop.sh
# shellcheck source=../lib.sh
source "$here/../lib.sh"

stop_main vllm "$@"
