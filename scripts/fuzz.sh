#!/usr/bin/env bash
# Runs every fuzz target (src/fuzz.rs) for SECONDS each (default 60).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Coverage-guided with libFuzzer through cargo-fuzz when it is installed (`cargo install
# cargo-fuzz`; works on stable Rust with `-s none`, see fuzz/README.md); otherwise the stable
# mutation runner (examples/fuzz_stable.rs). FUZZ_ENGINE=stable forces the latter.
# Each target's corpus starts from fuzz/seeds/<target> and fuzz/regressions/<target>.
# Crashes: fuzz/artifacts/<target>/ (libFuzzer) or fuzz/crashes/<target>/ (stable runner).
# Exit code 1 when any target found a failing input.
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(sse events wire grpc_frames prometheus level_json genai_perf_json histograms perf_csv input_data prompts trace conversations scored_rows graders agentic)
fi

engine=${FUZZ_ENGINE:-}
if [ -z "$engine" ]; then
  if cargo fuzz --version >/dev/null 2>&1; then engine=libfuzzer; else engine=stable; fi
fi
echo "fuzz engine: $engine, ${secs}s per target"

if [ "$engine" = stable ]; then
  # FUZZ_PROFILE=dev reuses a test build (CI's smoke: no second, release build of everything).
  exec cargo run --quiet --profile "${FUZZ_PROFILE:-release}" --example fuzz_stable -- --seconds "$secs" "${targets[@]}"
fi

failed=0
(cd fuzz && cargo fuzz build -s none -O) || exit 1
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  cp -n fuzz/seeds/"$t"/* "fuzz/corpus/$t/" 2>/dev/null || true
  cp -n fuzz/regressions/"$t"/* "fuzz/corpus/$t/" 2>/dev/null || true
  log="fuzz/artifacts/$t.log"
  mkdir -p fuzz/artifacts
  # -s none: no sanitizer (safe Rust; nightly-only flags stay out). -O: release build.
  (cd fuzz && cargo fuzz run -s none -O "$t" -- -max_total_time="$secs" -max_len=65536 \
     -rss_limit_mb=2048 -print_final_stats=1) >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | awk '{print $2}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  status=ok
  if [ $rc -ne 0 ]; then status="FAILED (see $log, input in fuzz/artifacts/$t/)"; failed=1; fi
  printf '%-12s %12s inputs in %ss, coverage %s edges: %s\n' "$t" "${runs:-?}" "$secs" "${cov:-?}" "$status"
done
exit $failed
