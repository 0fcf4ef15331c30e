#!/usr/bin/env bash
# Fails when `cargo build` (README command 1: the kit's binary, no dev-dependencies) and
# `cargo test --workspace` (README command 2) would compile a shared dependency with different
# features. Any such difference makes the test build compile that crate, and everything above it
# (arrow, the reference crates, the kit), a second time. Fix a reported line by turning the
# feature on among the feature-parity dependencies of the root Cargo.toml.
#
# Usage: tools/feature_parity.sh        (cargo tree only: resolves, compiles nothing)
set -euo pipefail
cd "$(dirname "$0")/.."

features() {
  cargo tree "$@" -f '{p} [{f}]' --prefix none | sed 's/ (\*)$//' | grep -v '^$' | sort -u
}
normal=$(mktemp) test=$(mktemp)
trap 'rm -f "$normal" "$test"' EXIT
features -p lance-conformance -e normal,build >"$normal"
features --workspace -e normal,build,dev >"$test"
# Every package of the normal build must appear with the same features in the test build.
diff=$(comm -23 "$normal" "$test")
if [ -n "$diff" ]; then
  echo "feature_parity: these packages get other features in cargo test --workspace:" >&2
  while IFS= read -r line; do
    name=${line%% v*}
    echo "  build: $line" >&2
    grep "^$name v" "$test" | sed 's/^/  test:  /' >&2
  done <<<"$diff"
  exit 1
fi
echo "feature parity: the $(wc -l <"$normal") packages of cargo build have the same features in cargo test --workspace"
