#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the sources that the PyPI sdist of llama-cpp-python
# (pinned) vendors, once, into the user cache.
#
#   scripts/engines/llamacpp/install.sh     # prints the directory holding llama-server on stdout
#
# Steps: a small venv with CMake (and numpy, pyyaml for make_model.py) from PyPI; `pip download --no-deps
# --no-binary llama-cpp-python llama-cpp-python==0.3.36` (the sdist; not --no-binary :all:, which
# would also build CMake from source for pip's metadata step); unpack it; configure
# vendor/llama.cpp with -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
# -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF; build `--target llama-server` under
# `nice -n 15` with -j2 (TTFTBENCH_LLAMACPP_JOBS); copy llama-server and its shared libraries into
# bin/ (start.sh puts bin/ on LD_LIBRARY_PATH); write a stamp. With the stamp in place a second
# run does nothing.
#
# Where: ${XDG_CACHE_HOME:-$HOME/.cache}/ttftbench/llama.cpp-0.3.36/{tools-venv,sdist,src,build,bin}.
# The unpacked sources stay: make_model.py uses their gguf-py and models/ggml-vocab-gpt-2.gguf.
# Settings (environment): PYTHON (python3), TTFTBENCH_LLAMACPP_CACHE (the directory above),
# TTFTBENCH_LLAMACPP_JOBS (2), TTFTBENCH_LLAMACPP_CMAKE_ARGS (extra configure arguments).
#
# Exit codes: 0 built; 2 missing prerequisite (python, venv module, a C++ compiler); 3 pip failed
# (e.g. no network to PyPI); 4 the build failed (log tail printed).
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
CMAKE_VERSION=4.1.2
NUMPY_VERSION=2.2.6
PYYAML_VERSION=6.0.3

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tag=llamacpp/install.sh
# shellcheck source=../lib.sh
source "$here/../lib.sh"
dir=${TTFTBENCH_LLAMACPP_CACHE:-$cache_root/llama.cpp-$LLAMA_CPP_PYTHON_VERSION}
jobs=${TTFTBENCH_LLAMACPP_JOBS:-2}
python=${PYTHON:-python3}
venv=$dir/tools-venv
stamp=$dir/bin/.ttftbench-llamacpp
flags=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_OPENSSL=OFF)
# shellcheck disable=SC2206
extra=(${TTFTBENCH_LLAMACPP_CMAKE_ARGS:-})
tools="cmake==$CMAKE_VERSION numpy==$NUMPY_VERSION pyyaml==$PYYAML_VERSION"
want="llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION $tools ${flags[*]} ${extra[*]:-}"

if [[ -f $stamp && $(cat "$stamp") == "$want" && -x $dir/bin/llama-server ]]; then
  echo "$dir/bin"
  exit 0
fi

command -v "$python" >/dev/null || { say "$python not found (set PYTHON=...)"; exit 2; }
command -v c++ >/dev/null || { say "no C++ compiler (apt-get install g++)"; exit 2; }
t0=$(now)
mkdir -p "$dir"
log=$dir/install.log
: >"$log"
pip_fail() {
  say "$1 failed; last lines of $log:"
  tail -n 15 "$log" >&2
  say "cannot fetch from PyPI (no network?): exit 3"
  exit 3
}

# 1. CMake (and numpy + pyyaml for make_model.py's gguf-py) in a small venv
if [[ ! -x $venv/bin/python ]]; then
  "$python" -m venv "$venv" || { say "cannot create a venv with $python (Debian: apt-get install python3-venv)"; exit 2; }
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check --retries 2 --timeout 60)
if [[ ! -f $venv/.ttftbench-tools || $(cat "$venv/.ttftbench-tools") != "$tools" ]]; then
  say "pip install $tools (into $venv)"
  # shellcheck disable=SC2086
  "${pip[@]}" install $tools >>"$log" 2>&1 || pip_fail "pip install $tools"
  echo "$tools" >"$venv/.ttftbench-tools"
fi

# 2. the sdist, unpacked
src=$dir/src
if [[ ! -f $src/vendor/llama.cpp/CMakeLists.txt ]]; then
  mkdir -p "$dir/sdist"
  sdist=$(ls "$dir"/sdist/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION".tar.gz 2>/dev/null || true)
  if [[ -z $sdist ]]; then
    say "pip download the llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist"
    "${pip[@]}" download --no-deps --no-binary llama-cpp-python -d "$dir/sdist" \
      "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >>"$log" 2>&1 || pip_fail "pip download"
    sdist=$(ls "$dir"/sdist/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION".tar.gz)
  fi
  rm -rf "$src" "$src.tmp"
  mkdir -p "$src.tmp"
  tar -xzf "$sdist" -C "$src.tmp" --strip-components=1
  mv "$src.tmp" "$src"
fi
t_fetch=$(since "$t0")
say "CMake and sources ready in ${t_fetch}s"

# 3. configure + build llama-server
t1=$(now)
cmake=$venv/bin/cmake
say "building llama-server (nice -n 15, -j$jobs); log $log"
if ! nice -n 15 "$cmake" -S "$src/vendor/llama.cpp" -B "$dir/build" "${flags[@]}" "${extra[@]}" >>"$log" 2>&1 ||
   ! nice -n 15 "$cmake" --build "$dir/build" --target llama-server -j "$jobs" >>"$log" 2>&1; then
  say "the build failed; last lines of $log:"
  tail -n 30 "$log" >&2
  exit 4
fi
build_s=$(since "$t1")

# 4. the binary and its shared libraries side by side
rm -rf "$dir/bin"
mkdir -p "$dir/bin"
cp -a "$dir/build/bin/llama-server" "$dir/bin/"
find "$dir/build" -name '*.so*' \( -type f -o -type l \) -exec cp -a {} "$dir/bin/" \;
LD_LIBRARY_PATH="$dir/bin" "$dir/bin/llama-server" --version >>"$log" 2>&1 || true
echo "$want" >"$stamp"
say "built in ${build_s}s (total ${t_fetch}s + ${build_s}s); $(sed -n 's/^version: /version /p' "$log" | tail -n 1)"
say "bin/ $(du -sh "$dir/bin" | cut -f1), whole cache $(du -sh "$dir" | cut -f1)"
echo "$dir/bin"
