#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build: every cargo-fuzz target, with its seeds and dictionary.
cd "$SRC/lance-conformance/fuzz"
cargo fuzz build -O --debug-assertions
release=target/x86_64-unknown-linux-gnu/release
declare -A DICT=(
  [manifest]=protobuf.dict [lineage_sequence]=protobuf.dict
  [coverage_bitmap]=roaring.dict [data_file]=data_file.dict [deletion_file]=deletion_file.dict
  [testee_response]=protocol.dict
)
for source in fuzz_targets/*.rs; do
  target="$(basename "$source" .rs)"
  [[ "$target" == trivial ]] && continue
  cp "$release/$target" "$OUT/"
  if [[ -d "seeds/$target" ]]; then
    (cd "seeds/$target" && zip -q -r "$OUT/${target}_seed_corpus.zip" .)
  fi
  [[ -n "${DICT[$target]:-}" ]] && cp "dict/${DICT[$target]}" "$OUT/$target.dict"
  printf '[libfuzzer]\nrss_limit_mb = 2048\nmalloc_limit_mb = 1024\n' >"$OUT/$target.options"
done
