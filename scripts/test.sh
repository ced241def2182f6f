#!/usr/bin/env bash
# The test command (README, CI): every unit, integration and CLI test against the built-in
# simulator, plus the real-Triton tests against a PyTriton server that this script starts in
# a Python venv and stops again. If PyTriton cannot be installed (no network), the real-Triton
# tests print why and skip — unless TTFTBENCH_REQUIRE_TRITON=1 (CI), where they fail.
# Extra arguments go to `cargo test` (e.g. `scripts/test.sh --test profile_sim`).
set -euo pipefail
cd "$(dirname "$0")/.."

triton_started=0
stop_triton() {
  if [ "$triton_started" = 1 ]; then scripts/triton/stop.sh || true; fi
}
trap stop_triton EXIT

if [ "${TTFTBENCH_SKIP_TRITON:-0}" = 1 ]; then
  echo "TTFTBENCH_SKIP_TRITON=1: not starting a Triton server" >&2
elif scripts/triton/start.sh; then
  triton_started=1
  export TTFTBENCH_TRITON_ENV="$PWD/target/triton.env"
else
  echo "could not start a Triton server (see above); the real-Triton tests will report it" >&2
fi

# GenAI-Perf (pure Python, from PyPI) for tests/genai_perf_crosscheck.rs and
# tests/perf_guide_snippet.rs: 65 s to install the first time, a few seconds after.
if gp_python=$(scripts/genai_perf/setup.sh); then
  export TTFTBENCH_GENAI_PERF_PYTHON="$gp_python"
else
  echo "could not install GenAI-Perf (see above); the GenAI-Perf cross-check tests will report it" >&2
fi

cargo test "$@"
