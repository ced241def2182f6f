#!/usr/bin/env bash
# Builds the user guide (docs/, mdBook) into target/book and fails on a broken internal link or
# anchor. mdBook is pinned and installed once, from crates.io with its lock file, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/ttftbench/mdbook-<version>/ (about 3 minutes on 2 cores; the
# `serve` and `watch` features are left out, search is kept). No network after that.
#
#   scripts/docs.sh          build and check
#   scripts/docs.sh serve    the same, then print where the book is (open target/book/index.html)
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.5.4
root="${XDG_CACHE_HOME:-$HOME/.cache}/ttftbench/mdbook-$MDBOOK_VERSION"
mdbook="$root/bin/mdbook"

if ! [ -x "$mdbook" ] || ! "$mdbook" --version 2>/dev/null | grep -qx "mdbook v$MDBOOK_VERSION"; then
  echo "installing mdbook $MDBOOK_VERSION into $root" >&2
  mkdir -p "$root"
  cargo install mdbook --version "=$MDBOOK_VERSION" --locked --root "$root" \
    --no-default-features --features search
fi

out=target/book
rm -rf "$out"
"$mdbook" build docs --dest-dir "../$out"
python3 scripts/check_links.py "$out"
echo "book: $out/index.html"
