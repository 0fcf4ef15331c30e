#!/usr/bin/env bash
# Builds every cargo-fuzz target on the stable toolchain (no sanitizer) and runs each one for
# a fixed budget, starting from the committed seeds and dictionaries. Fails on any crash,
# leak of the memory bounds, or timeout; prints exec/s per target.
#
# Environment:
#   FUZZ_SECONDS  seconds per target (default 20)
#   FUZZ_JOBS     targets run at once (default: number of cores, at most 4)
#   FUZZ_TARGETS  space-separated subset of targets (default: all)
#
# Outputs (gitignored): fuzz/corpus/<target>/ (grown corpus), fuzz/artifacts/<target>/
# (crashing inputs), fuzz/artifacts/<target>.log (libFuzzer's log).
set -euo pipefail
cd "$(dirname "$0")"

FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
cores="$(nproc 2>/dev/null || echo 2)"
FUZZ_JOBS="${FUZZ_JOBS:-$((cores < 4 ? cores : 4))}"

# target -> "max_len dictionary [libFuzzer flags...]" (dictionary "-" for none)
#
# history: entropic's rare features are those seen at most 16 times instead of 255. Every run
# of history reaches thousands of features, and libFuzzer's entropic bookkeeping walks the whole
# corpus for each new feature while the rare set holds every feature seen fewer than 255 times:
# half of a 60 s run from the seeds went there (BENCHMARKS.md, "The fuzzer off the disk, third
# round"). The schedule stays entropic; the other targets showed no gain and keep the default.
declare -A SETTINGS=(
  [trivial]="4096 -"
  [manifest]="16384 protobuf.dict"
  [coverage_bitmap]="16384 roaring.dict"
  [data_file]="16384 data_file.dict"
  [deletion_file]="16384 deletion_file.dict"
  [lineage_sequence]="4096 protobuf.dict"
  [lineage_values]="4096 -"
  [resolve_differential]="4096 -"
  [history]="4096 - -entropic_feature_frequency_threshold=16"
  [testee_response]="8192 protocol.dict"
)
ALL_TARGETS="trivial manifest coverage_bitmap data_file deletion_file lineage_sequence lineage_values resolve_differential history testee_response"
TARGETS="${FUZZ_TARGETS:-$ALL_TARGETS}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

start=$SECONDS
# The fuzz workspace's lock file is committed: a build must not change it.
cargo metadata --locked --format-version 1 >/dev/null

# Registry crates are compiled without coverage instrumentation (rustc-kit-coverage.sh says
# why); the kit's own crates keep all of it.
echo "== cargo fuzz build -s none --release"
RUSTC_WRAPPER="$PWD/rustc-kit-coverage.sh" cargo fuzz build -s none --release
echo "build: $((SECONDS - start)) s"

# Where cargo put the binaries (CARGO_TARGET_DIR, if set, moves them out of fuzz/target).
target_dir="$(cargo metadata --locked --format-version 1 --no-deps |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
bin_dir="${target_dir:-target}/x86_64-unknown-linux-gnu/release"
mkdir -p artifacts corpus

run_target() {
  local target="$1" max_len dict extra
  read -r max_len dict extra <<<"${SETTINGS[$target]}"
  local args=(
    "-max_total_time=$FUZZ_SECONDS"
    "-rss_limit_mb=2048"
    "-malloc_limit_mb=1024"
    "-max_len=$max_len"
    "-timeout=10"
    "-print_final_stats=1"
    "-artifact_prefix=artifacts/$target/"
  )
  [[ "$dict" != "-" ]] && args+=("-dict=dict/$dict")
  # shellcheck disable=SC2206 # the settings' flags are words without spaces
  [[ -n "$extra" ]] && args+=($extra)
  mkdir -p "corpus/$target" "artifacts/$target"
  local seeds=()
  [[ -d "seeds/$target" ]] && seeds=("seeds/$target")
  local rc=0
  "$bin_dir/$target" "${args[@]}" "corpus/$target" "${seeds[@]}" >"artifacts/$target.log" 2>&1 || rc=$?
  echo "$rc" >"artifacts/$target.rc"
}

fuzz_start=$SECONDS
failed=()
for target in $TARGETS; do
  if [[ -z "${SETTINGS[$target]:-}" ]]; then
    echo "unknown target: $target" >&2
    exit 2
  fi
  while (( $(jobs -rp | wc -l) >= FUZZ_JOBS )); do
    wait -n || true
  done
  echo "-- $target (${FUZZ_SECONDS} s)"
  rm -f "artifacts/$target.rc"
  run_target "$target" &
done
wait
for target in $TARGETS; do
  if [[ "$(cat "artifacts/$target.rc" 2>/dev/null)" != 0 ]]; then
    failed+=("$target")
  fi
done

echo
stat() { awk -v k="stat::$2:" '$1 == k { print $2 }' "artifacts/$1.log"; }
printf '%-22s %12s %10s %8s %8s\n' target execs exec/s rss_mb corpus
for target in $TARGETS; do
  size="$(find "corpus/$target" -type f | wc -l)"
  printf '%-22s %12s %10s %8s %8s\n' "$target" "$(stat "$target" number_of_executed_units)" \
    "$(stat "$target" average_exec_per_sec)" "$(stat "$target" peak_rss_mb)" "$size"
done
echo "fuzzing: $((SECONDS - fuzz_start)) s, total: $((SECONDS - start)) s"

if (( ${#failed[@]} > 0 )); then
  for target in "${failed[@]}"; do
    echo
    echo "== $target FAILED; last lines of artifacts/$target.log:"
    tail -n 40 "artifacts/$target.log"
    ls -1 "artifacts/$target/" 2>/dev/null | sed 's/^/   artifact: /'
  done
  echo
  echo "Minimize with: cargo fuzz tmin -s none --release <target> fuzz/artifacts/<target>/<file>"
  echo "then commit it under fuzz/regressions/<target>/ (replayed by cargo test)."
  exit 1
fi
echo "all ${TARGETS// /, } ran without crashes"
