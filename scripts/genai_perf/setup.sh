#!/usr/bin/env bash
# Installs NVIDIA's GenAI-Perf (PyPI `genai-perf`, pure Python) and pandas/matplotlib into
# .venv-gp, pinned by scripts/genai_perf/requirements.txt, for the tests that check ttftbench
# against GenAI-Perf's own parser and the perf guide's pandas snippet
# (tests/engines/genai_perf_crosscheck.rs, tests/engines/perf_guide_snippet.rs). Measured: 65 s and 950 MB on a
# fresh venv; nothing when the venv already has the pinned versions. It needs only PyPI: the
# tests give GenAI-Perf a local tokenizer directory (the built-in GPT-2), never the model hub.
# Prints the venv's python on success.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv-gp
req=scripts/genai_perf/requirements.txt
stamp="$venv/.installed-$(sha256sum "$req" | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
  touch "$stamp"
fi
"$venv/bin/python" -c "import genai_perf, pandas, matplotlib" >&2
echo "$PWD/$venv/bin/python"
