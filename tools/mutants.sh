#!/usr/bin/env bash
# Mutation testing of the reference's read path, with the stored corpus as the test.
#
# Each mutant is one small change to a reader-path function of lance-reference or
# lance-reference-io (a condition flipped, a value replaced, a body removed). The test is the
# in-process run of the whole stored corpus against the mutated reference, read twice: by the
# reference reader (`the_reference_passes_every_case_in_process` of runner/tests/corpus.rs, the
# same check as `cargo run --release -- run`) and by the row scan that computed `expected/`
# (`the_row_scan_passes_every_case_in_process`): a mutant is caught when some case fails. The
# tests live in the runner crate so that a mutant rebuilds only the two reference crates, the
# runner and one small test binary (not the generator, the command line and the workspace's big
# test binary). A missed mutant is a
# reader bug that the whole corpus lets through.
#
# Usage: tools/mutants.sh [--tree DIR] [--out DIR] [--list] [cargo-mutants options...]
#
#   --tree DIR  where the copy under test lives (default target/mutants-tree). The working tree
#               (uncommitted changes included, target/ and .git/ left out) is copied there on
#               every run; its own target/ is kept, so builds after the first are incremental.
#               The mutants are applied in that copy (cargo mutants --in-place), never here.
#   --out DIR   where cargo-mutants writes mutants.out/ (default target/mutants-out)
#   --list      list the mutants that would be tested, and stop
#   --resume    skip the mutants tools/mutants-outcomes/ records as caught or unviable (the
#               committed outcomes of earlier runs; cargo-mutants --iterate): a mutant whose
#               line moved or changed has another name there, so it is tested again
#   anything else is passed to cargo mutants (e.g. --shard 1/4, -F REGEX, --iterate, -j 2).
#
# Needs cargo-mutants (cargo install cargo-mutants --locked). Not run by CI: a full run builds
# several hundred mutants (about 10 s each, incremental, on two cores) and takes hours.
# Figures of the last run and the explanation of every missed mutant: conformance-cases/STRENGTH.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tree="$root/target/mutants-tree"
out="$root/target/mutants-out"
list=false
resume=false
pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tree) tree=$(realpath -m "$2"); shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --list) list=true; shift ;;
    --resume) resume=true; shift ;;
    *) pass+=("$1"); shift ;;
  esac
done

command -v cargo-mutants >/dev/null 2>&1 || {
  echo "mutants.sh: cargo-mutants is not installed (cargo install cargo-mutants --locked)" >&2
  exit 2
}

# The read path: every file a read of a stored version goes through, from the manifest bytes
# to scans, lineage, exclusion sets and query answers. Left out: the writers (reference-io
# write.rs, the compaction, overlay-writing, index-building and stamping modules of the
# reference, lineage placement) and the byte decoders below the dataset reader (data file
# pages, Arrow and flatbuffer deletion files, roaring), which their own unit tests and the fuzz
# targets check: the corpus is not meant to enumerate their malformed inputs.
files=(
  reference/src/resolve.rs
  reference/src/columnar.rs
  reference/src/scan.rs
  reference/src/exclusion.rs
  'reference/src/query/*.rs'
  reference/src/readable.rs
  reference/src/flags.rs
  'reference/src/model/*.rs'
  reference/src/lineage/encoded_array.rs
  reference/src/lineage/segment.rs
  reference/src/lineage/row_ids.rs
  reference/src/lineage/version.rs
  reference-io/src/read.rs
  reference-io/src/codec.rs
  reference-io/src/manifest_file.rs
  reference-io/src/paths.rs
  reference-io/src/version_names.rs
  reference-io/src/deletion.rs
)

# Functions in those files that only writers call: encoders, the encoder's choice of segment
# kind, masking and rechunking (compaction), the flags a commit sets and checks, manifest
# encoding. A mutant there cannot change what a reader returns.
writer_only=(
  set_commit_flags required_flags check_written_flags check_for_write check_writer_flags
  check_writer_flags_supporting check_paired_flags check_field_id_high_water_mark check_consistency
  'EncodedU64Array::from_values' 'EncodedU64Array::to_proto'
  'U64Segment::from_values' 'U64Segment::to_proto' 'U64Segment::mask'
  'RowIdSequence::new_fragment' 'RowIdSequence::from_values' 'RowIdSequence::encode'
  'RowIdSequence::extend' 'RowIdSequence::mask' rechunk compact 'Unit::[a-z_]+' fold
  'fold::flush' mask_units local_positions rechunk_units
  'RowDatasetVersionSequence::uniform' 'RowDatasetVersionSequence::from_versions'
  'RowDatasetVersionSequence::encode' 'RowDatasetVersionSequence::mask'
  # The mixed-versions bit a commit sets (reference-io write.rs and the generator's store).
  set_mixed_versions_flag
  # Helpers only masking calls (is_sorted_kind, values), or no read calls at all (the is_empty
  # beside each len, which clippy's len_without_is_empty asks for).
  'EncodedU64Array::is_empty' 'EncodedU64Array::values' 'U64Segment::is_empty'
  'U64Segment::is_sorted_kind' 'RowIdSequence::is_empty' 'RowDatasetVersionSequence::is_empty'
  'Overlay::with_path'
  encode_manifest schema_to_proto index_uuid encode_data_file index_layout deletion_layout
  encode_manifest_file encode_manifest_file_with_transaction frame manifest_name version_hint
  write_deletion_file write_arrow_offsets write_arrow_int32_offsets lance_file_type
  # Only `lance-conformance explain` calls these (one cell's resolution trail); the corpus
  # run never does, so a mutant there is never caught (16 of resolve.rs's 17 missed).
  explain row_offset '<impl fmt::Display for Explanation>::fmt'
  # Text of error messages only: the runner judges a refusal by its class and code, never by
  # its message, so no case can tell these apart (the unit tests of flags.rs pin the texts).
  'FlagWord::as_str' '<impl std::fmt::Display for FlagWord>::fmt' bit_list lowest_bit
  # The kind a misfit value is named by, and the lineage file an error names; Debug output.
  'Column::kind' 'Fragment::lineage_file_path' '<impl std::fmt::Debug for Column>::fmt'
  '<impl std::fmt::Debug for StructLayer>::fmt'
  '<impl std::fmt::Display for FileFormatVersion>::fmt'
  'Value::kind' '<impl std::fmt::Display for Value>::fmt'
  # The index details this kit writes for a vector index.
  vector_details_value
  # Columns built from `Value`s: overlay writing, compaction, merge, the generator and unit
  # tests build them (`Column::of` and what it calls); a read builds every column from the
  # Arrow array the decoder gave (`Column::new`). Also `Fragment::lineage_values`, the lineage
  # the stamping and the writer read back (a read goes through `scan::RowLineage`), and the
  # `is_empty` beside `Column::len` (only reference-io's writer calls it).
  'Column::of' 'Column::infer' 'Column::for_field' 'Column::with_values' 'Column::replaced'
  'Column::truncated' build 'Column::is_empty' 'Fragment::lineage_values'
  # The winners of a plan expanded offset by offset: only the property test of
  # reference/tests/resolve_runs.rs calls it, to compare the runs with the rule applied one
  # offset at a time; reads copy runs.
  "ColumnPlan<'_>::winners" 'Run::winner_at'
  # validate's judgement of a version at manifest level, when a file cannot be decoded by this
  # kit (`Dataset::read_manifest_level`), and its per-fragment check (reference-io
  # version_check.rs): the tests of validate cover them; no read calls them.
  check_readable_manifest 'Snapshot::validate_manifest' 'Fragment::validate_manifest'
  check_readable_with
  # The rows tied with the k-th beyond place k: `expected/` lists them as the other rows a
  # reader may return at the last places; the reference reader's answer does not carry them,
  # and `generate --check` pins them.
  flat_tied_past_k
  # Column comparison and the struct-layer accessors: snapshot comparisons in tests, validate,
  # and the reference-io tests of v2.1+ struct layers call them; a read never compares columns
  # nor asks a layer by position (checked on 2026-12-06: each made to panic, both corpus tests
  # still pass). The resolution reads a layer's validity buffer itself.
  '<impl PartialEq for Column>::eq' 'Column::only_nulls' 'StructLayer::is_present'
  'Column::struct_layers'
  # Reached by validate, the generator or unit tests, never by a read of the corpus (checked on
  # 2026-12-06 the same way: each made to panic, the three corpus tests pass): validate's
  # fragment rows (`FragmentScan`), its walk over a dataset's versions and files (`Dataset::
  # versions`, `entries`, `read_all`, `read_file`, `options`), its manifest-level holding of a
  # version (`drop_lineage_values`, `decode_fragment_at`), the question validate asks of a
  # column position (`reads_position`), and the lineage encoder's width and base.
  "FragmentScan<'f>::[a-z_]+" 'Dataset::versions' 'Dataset::entries' 'Dataset::read_all'
  'Dataset::read_file' 'Dataset::options' drop_lineage_values decode_fragment_at reads_position
  'ArrayWidth::bytes' 'EncodedU64Array::base'
  # Which word an error's text uses for a column (a hidden lineage column or a field).
  is_lineage
  # Called by unit tests only, or only by the writer run (runner/src/runner/writer.rs).
  'ExclusionSets::get' 'Dataset::latest_version'
  # Checks of the query a caller asks, not of stored data: the runner sends only the queries of
  # case files, and a case whose query is ill-formed (a literal not of its field's type, a
  # vector not of its field's dimension, k = 0) is refused when it is generated, by the typed
  # cells of runner/src/case/cell.rs and by these checks themselves, so the stored corpus holds no
  # query they would refuse. Their unit tests in query/mod.rs cover them.
  'Predicate::check' 'Predicate::literals' check_vector_query
  # Whether a caller's value fits a field: a query literal (for Predicate::check above) or a
  # value to write (overlay writing, the data-file writer); stored data is never checked with it.
  'Value::fits'
  # Listing a local directory's versions by path: no caller in the workspace (a read lists
  # through its storage, list_versions_in).
  list_versions
)
exclude_re="(^| )(in|replace|delete) ($(IFS='|'; echo "${writer_only[*]}"))( |$)"
# Mutants no read can tell apart from the original, by their text:
# - the module-level constants of flags.rs (`1 << n`, `A | B`): each names a bit value or a set
#   of bits. The unit tests of flags.rs pin every value against bit positions written out
#   independently (reader_word_single_bits_exhaustive and its writer twin); the corpus judges
#   the decisions made with them. Most such mutants are equivalent anyway: `1 << 0` is `1 >> 0`,
#   `|` is `^` on disjoint bits, and an unimplemented bit set to 0 is still refused as unknown;
# - the text of the reason a missing bit 2 gives (the guard picks one of two messages);
# - the arm of Truth::and that makes FALSE AND x FALSE, and the arm of Truth::or that makes
#   FALSE OR FALSE FALSE: without them the answer is UNKNOWN, and a row whose predicate is
#   UNKNOWN is left out exactly as one whose predicate is FALSE. The query language has no NOT,
#   so nothing above them can tell the two apart.
# - the typed arms of value_at (one element as a Value): a read turns a column into Values by
#   Column::values, whose own typed arms come first, and resolves a struct child by child; the
#   arms are reached by validate's fragment rows and by tests only (checked as above: made to
#   panic, both corpus tests pass). The arm for fixed-size lists (vectors) is reached.
equivalent=(
  'delete match arm ArrowType::(Boolean|Int32|Int64|UInt64|Float32|Float64|Utf8|Struct\(_\)) in value_at$'
  '^reference/src/flags\.rs:[0-9]+:[0-9]+: (replace [^ ]+ with [^ ]+|delete [^ ]+)$'
  'delete match arm \(false, Some\(f\)\) in requirements$'
  'delete match arm \(Truth::False, _\) \|\(_, Truth::False\) in Truth::and$'
  'delete match arm \(Truth::False, Truth::False\) in Truth::or$'
)
exclude_re="$exclude_re|$(IFS='|'; echo "${equivalent[*]}")"
# cargo-mutants 27.1.0 applies --exclude-re to every mutant but "delete field X from struct Y
# expression": the 35 such mutants of encode_manifest and schema_to_proto (writer-only: only
# encoders build protobuf messages) are tested anyway and land in missed.txt. Leave them out
# of the figures (conformance-cases/STRENGTH.md, Mutation testing).

args=(--workspace --in-place --test-package lance-conformance-runner --timeout 120 --build-timeout 900
      --exclude-re "$exclude_re" -o "$out")
for f in "${files[@]}"; do args+=(-f "$f"); done
# Both corpus tests: the reference reader (record batches) and the row scan, which computed
# `expected/` and which validate, compaction and the generator read with.
test_args=(-- --test main -- corpus::the_)

mkdir -p "$tree" "$out"
if $resume; then
  mkdir -p "$out/mutants.out"
  for kind in caught unviable; do
    sort -u "$root/tools/mutants-outcomes/$kind.txt" > "$out/mutants.out/$kind.txt"
  done
  pass+=(--iterate)
fi
# Refresh the copy: remove its sources (keep its target/), then copy the working tree, every
# file dated now (-m), so cargo rebuilds whatever changed since the last run (build scripts too).
find "$tree" -mindepth 1 -maxdepth 1 ! -name target -exec rm -rf {} +
(cd "$root" && tar --exclude=./target --exclude=./.git --exclude=./fuzz/target --exclude=./fuzz/corpus --exclude=./fuzz/artifacts -cf - .) | (cd "$tree" && tar -xmf -)

cd "$tree"
# The copy's own cargo settings: no debug info (never read here; without it each mutant builds
# and links faster), and the dependencies (arrow, roaring, prost, serde, ...) optimised once, so
# the corpus run of each mutant is quick while the workspace's crates stay incremental builds.
mkdir -p .cargo
cat > .cargo/config.toml <<'TOML'
[profile.dev]
debug = 0
[profile.dev.package."*"]
opt-level = 2
TOML
if $list; then
  exec cargo mutants --list "${args[@]}" "${pass[@]}"
fi
# The unmutated tree must pass first. cargo-mutants' own baseline would run the tests of the
# mutated packages (lance-reference, lance-reference-io) instead of --test-package, so the
# baseline is run here and cargo-mutants is told to skip its own.
nice cargo test -p lance-conformance-runner "${test_args[@]:1}" || {
  echo "mutants.sh: the corpus run fails on the unmutated tree; nothing to measure" >&2
  exit 2
}
exec nice cargo mutants --baseline skip "${args[@]}" "${pass[@]}" "${test_args[@]}"
