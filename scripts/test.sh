#!/usr/bin/env bash
# The test command (README, CI): every unit, integration and CLI test against the built-in
# simulator, plus the real-engine tests against a PyTriton server, vLLM (CPU build) and
# llama.cpp's llama-server that this script starts (installing or building them once into the
# user cache, keyed by version: scripts/engines/README.md) and stops again. If an engine
# cannot be installed (no network), its tests print why and skip — unless
# TTFTBENCH_REQUIRE_TRITON=1 / TTFTBENCH_REQUIRE_ENGINES=1 (CI), where they fail.
# TTFTBENCH_SKIP_TRITON=1 / TTFTBENCH_SKIP_ENGINES=1 leave those servers out.
# Extra arguments go to `cargo test` (e.g. `scripts/test.sh --test sim profile_sim::`).
set -euo pipefail
cd "$(dirname "$0")/.."

triton_started=0
engines_started=()
stop_servers() {
  if [ "$triton_started" = 1 ]; then scripts/triton/stop.sh || true; fi
  # Each variant from its default env file: TTFTBENCH_<ENGINE>_ENV (the generate server's,
  # exported below) would point every variant's stop at that one file.
  for e in "${engines_started[@]}"; do
    env -u "TTFTBENCH_$(echo "${e%%:*}" | tr a-z A-Z)_ENV" \
      scripts/engines/"${e%%:*}"/stop.sh --variant "${e#*:}" || true
  done
}
trap stop_servers EXIT

if [ "${TTFTBENCH_SKIP_TRITON:-0}" = 1 ]; then
  echo "TTFTBENCH_SKIP_TRITON=1: not starting a Triton server" >&2
elif scripts/triton/start.sh; then
  triton_started=1
  export TTFTBENCH_TRITON_ENV="$PWD/target/triton.env"
else
  echo "could not start a Triton server (see above); the real-Triton tests will report it" >&2
fi

# vLLM and llama-server, each with a tiny random-weight model made here. Cold: vLLM's venv
# ~8 min, llama-server's build ~12 min on 2 cores; cached: seconds (then ~1 min for vLLM to
# come up). Their env files are where the real-engine tests find them.
if [ "${TTFTBENCH_SKIP_ENGINES:-0}" = 1 ]; then
  echo "TTFTBENCH_SKIP_ENGINES=1: not starting vLLM or llama-server" >&2
else
  # llama-server's embeddings and rerank servers start in ~1-2 s each (tests/engines/engines_apis.rs).
  # vLLM's pooling servers (embed, rerank) take ~50-75 s and ~4.5 GiB each, so they start only
  # with TTFTBENCH_VLLM_POOLING=1 (their tests skip otherwise, even in CI).
  variants=(llamacpp:generate llamacpp:embed llamacpp:rerank vllm:generate)
  if [ "${TTFTBENCH_VLLM_POOLING:-0}" = 1 ]; then variants+=(vllm:embed vllm:rerank); fi
  for ev in "${variants[@]}"; do
    e=${ev%%:*} v=${ev#*:}
    name=$e; [ "$v" = generate ] || name=$e-$v
    if env -u "TTFTBENCH_$(echo "$e" | tr a-z A-Z)_ENV" scripts/engines/"$e"/start.sh --variant "$v"; then
      engines_started+=("$ev")
      export "TTFTBENCH_$(echo "$name" | tr a-z- A-Z_)_ENV=$PWD/target/$name.env"
    else
      echo "could not start $name (see above); its real-engine tests will report it" >&2
    fi
  done
fi

# GenAI-Perf (pure Python, from PyPI) for tests/engines/genai_perf_crosscheck.rs and
# tests/engines/perf_guide_snippet.rs: 65 s to install the first time, a few seconds after.
if gp_python=$(scripts/genai_perf/setup.sh); then
  export TTFTBENCH_GENAI_PERF_PYTHON="$gp_python"
else
  echo "could not install GenAI-Perf (see above); the GenAI-Perf cross-check tests will report it" >&2
fi

# Every test binary runs even after one fails, so one run names every failure.
cargo test --no-fail-fast "$@"
