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

stop_main llamacpp "$@"
