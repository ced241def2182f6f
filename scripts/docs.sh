#!/usr/bin/env bash
# Builds the user guide (docs/, mdBook) into target/book and fails on a broken internal link or
# anchor. mdBook is pinned and installed once, from crates.io with its lock file, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/ttftbench/mdbook-<version>/ (4 min 53 s on the 2-core VM on
# 2026-12-03, 12 MB; the `serve` and `watch` features are left out, search is kept). No network
# after that; a build then takes under a second.
#
#   scripts/docs.sh          build target/book and check its links (open target/book/index.html)
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
"$mdbook" build docs --dest-dir "$PWD/$out"
python3 scripts/check_links.py "$out"
echo "book: $out/index.html"
