#!/usr/bin/env bash
# RUSTC_WRAPPER for `cargo fuzz build` (set by ci.sh): compiles a crate from a registry (or a
# git dependency) without libFuzzer's coverage instrumentation, and every other crate (the
# kit's own: the reference, reference-io, the runner, test-support and the fuzz targets) as
# cargo fuzz asks.
#
# Why: cargo fuzz puts its `-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-*` flags in
# RUSTFLAGS, which cargo hands to every crate alike, and neither cargo nor stable rustc can
# leave a crate out (`[profile.release.package.X]` sets codegen options, not RUSTFLAGS; profile
# `rustflags` is nightly-only). The passes are LLVM's and run per compiled crate, so the one
# stable place to choose them per crate is the rustc command line, which a wrapper sees.
# Generic code of a dependency (prost's varint loops, arrow's builders) is instantiated in the
# crate that uses it and stays instrumented there; what goes is the counters and comparison
# hooks in the dependencies' own compiled code (sha2, roaring, arrow, serde_json, ruzstd, ...),
# which is not what any target tests.
#
# Usage (cargo calls it): rustc-kit-coverage.sh RUSTC ARGS...
set -euo pipefail
rustc="$1"
shift
registry="${CARGO_HOME:-$HOME/.cargo}"
dependency=0
for arg in "$@"; do
  case "$arg" in
    "$registry"/registry/* | "$registry"/git/*) dependency=1 ;;
  esac
done
if ((dependency == 0)); then
  exec "$rustc" "$@"
fi
args=()
for arg in "$@"; do
  case "$arg" in
    -Cpasses=sancov-module | -Cllvm-args=-sanitizer-coverage-*) ;;
    *) args+=("$arg") ;;
  esac
done
exec "$rustc" "${args[@]}"
