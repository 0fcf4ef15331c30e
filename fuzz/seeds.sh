#!/usr/bin/env bash
# Derives fuzz corpora from the kit's test data and from bytes the reference writes.
#
#   fuzz/seeds.sh            -> fuzz/corpus/<target>/ (gitignored): every seed, any size
#   fuzz/seeds.sh --small    -> fuzz/seeds/<target>/ (committed): the curated set CI starts from
#
# Golden inputs come from reference/tests/data/ and, when present, conformance-cases/ (files
# are classified by name: *.lance, *.manifest, *.bin, *.arrow, lance14_samples.json); the
# rest is written by reference-io/examples/fuzz_seeds.rs (bitmaps, deletion files, data files,
# lineage sequences, and the worked example written as a dataset). fuzz/lance-written/ (data files
# Lance 14 wrote in versions 2.1 and 2.2, from fuzz/lance_written.py) is passed as a curated
# origin: its files become lance-* seeds of data_file, all of them, in both modes.
set -euo pipefail
cd "$(dirname "$0")/.."
goldens=(reference/tests/data reference-io/tests/data)
[[ -d conformance-cases ]] && goldens+=(conformance-cases)
# Data files pylance 14.0.2 writes in versions 2.1 and 2.2 (fuzz/lance_written.py), kept whole.
goldens+=(lance=fuzz/lance-written)
if [[ "${1:-}" == "--small" ]]; then
  # Keep grown-* seeds: inputs the fuzzer grew for the structured targets, copied by hand
  # from fuzz/corpus/ (random bytes are poor starting points for an Arbitrary decoder).
  find fuzz/seeds -type f ! -name 'grown-*' -delete 2>/dev/null || true
  cargo run --quiet -p lance-reference-io --example fuzz_seeds -- fuzz/seeds --small "${goldens[@]}"
else
  cargo run --quiet -p lance-reference-io --example fuzz_seeds -- fuzz/corpus "${goldens[@]}"
fi
