//! IVF_PQ indices as pylance 14.0.2 builds them (written by
//! `tests/interop/make_ivf_pq_fixtures.py`, which stored the row ids of each partition as
//! pylance's own file reader decodes them): the reference reads every version of each dataset,
//! its row ids are Lance's, and damage to the PQ files or to the row ids they store is refused
//! with the code the rules give, never with a panic.
#![allow(clippy::unwrap_used, clippy::panic, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lance_reference::index_build::entries;
use lance_reference::model::{IndexKind, Value};
use lance_reference_io::index_file::{
    IVF_INDEX, IVF_STORAGE, StoredEntries, read_ivf, read_ivf_pq, read_vector_index,
};
use lance_reference_io::{Dataset, DatasetError};
use serde_json::Value as Json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lance14_ivf_pq")
        .join(name)
}

/// What pylance reported about fixture `name`'s index (`lance.json`).
fn lance_says(name: &str) -> Json {
    let all: Json =
        serde_json::from_str(&std::fs::read_to_string(fixture("lance.json")).unwrap()).unwrap();
    all[name].clone()
}

/// The fixture's one index directory.
fn index_dir(root: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("_indices"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{}", root.display());
    dirs.remove(0)
}

fn index_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir = index_dir(root);
    [IVF_INDEX, IVF_STORAGE]
        .iter()
        .map(|n| (n.to_string(), std::fs::read(dir.join(n)).unwrap()))
        .collect()
}

/// A copy of fixture `name` that a test may damage.
fn copy(name: &str) -> tempfile::TempDir {
    crate::copy_dir(&fixture(name))
}

/// Replaces the only occurrence of `from` in `bytes` by `to` (same length, so every offset and
/// size the file records stays true).
fn replace_once(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let at: Vec<usize> = bytes
        .windows(from.len())
        .enumerate()
        .filter(|(_, w)| *w == from)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "{from:?} occurs {} times", at.len());
    bytes[at[0]..at[0] + to.len()].copy_from_slice(to);
}

fn dimension(name: &str) -> u32 {
    lance_says(name)["sub_index"]["dimension"].as_u64().unwrap() as u32
}

#[test]
fn lance_written_ivf_pq_files_read_back_lances_row_ids() {
    // covers: IDX-READ-10, IDX-READ-2
    for name in ["ivf-pq-8bit", "ivf-pq-4bit-stable"] {
        let files = index_files(&fixture(name));
        let lance = lance_says(name);
        let want: Vec<u64> = lance["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p.as_array().unwrap().iter().map(|id| id.as_u64().unwrap()))
            .collect();
        assert!(lance["partitions"].as_array().unwrap().len() >= 2, "{name}");
        let ids = read_ivf_pq(&files, dimension(name)).unwrap();
        assert_eq!(ids, want, "{name}");
        assert_eq!(
            read_vector_index(&files, dimension(name)).unwrap(),
            StoredEntries::Quantized(want),
            "{name}"
        );
        // The IVF_FLAT reader does not take a PQ index for a flat one.
        let err = read_ivf(&files, dimension(name)).unwrap_err();
        assert_eq!(err.code(), "index_file_layout", "{name}: {err}");
        // Nor does the PQ reader take it for another dimension.
        let err = read_ivf_pq(&files, dimension(name) + 1).unwrap_err();
        assert_eq!(err.code(), "index_file_layout", "{name}: {err}");
    }
}

#[test]
fn every_version_of_a_lance_written_ivf_pq_dataset_reads_with_one_entry_per_indexed_row() {
    // covers: IDX-READ-10, IDX-READ-3, IDX-FILE-5
    for name in ["ivf-pq-8bit", "ivf-pq-4bit-stable"] {
        let read = Dataset::open(&fixture(name)).unwrap().read_all().unwrap();
        let indexed: usize = lance_says(name)["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_array().unwrap().len())
            .sum();
        let (last, _) = read.last().unwrap();
        assert_eq!(read.len(), 3, "{name}");
        let index = &last.indices[0];
        assert_eq!(index.kind, IndexKind::Vector);
        // Lance records the version the build read, the one before its commit.
        assert_eq!(index.dataset_version, 1, "{name}");
        // Entries are the rows at dataset_version, NULL and partly NULL vectors left out; each
        // takes the row's vector, for which its code stands.
        assert_eq!(index.entries.len(), indexed, "{name}");
        let (at_build, _) = &read[0];
        assert_eq!(index.entries, entries(at_build, index).unwrap(), "{name}");
        assert!(
            index
                .entries
                .iter()
                .all(|e| matches!(&e.value, Value::Vector(v) if v.iter().all(Option::is_some)))
        );
    }
}

/// Damages the fixture's index files with `edit` (`(file, from, to)` replacements) and returns
/// the reader's refusal when it reads version 3.
fn refusal(name: &str, edits: &[(&str, &[u8], &[u8])]) -> DatasetError {
    let dir = copy(name);
    let idx = index_dir(dir.path());
    for (file, from, to) in edits {
        let path = idx.join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        replace_once(&mut bytes, from, to);
        std::fs::write(&path, bytes).unwrap();
    }
    Dataset::open(dir.path())
        .unwrap()
        .read_version(3)
        .map(|_| ())
        .unwrap_err()
}

fn index_code(err: &DatasetError) -> &'static str {
    match err {
        DatasetError::IndexFile { error, .. } => error.code(),
        other => panic!("not an index refusal: {other}"),
    }
}

/// A named in-place damage of one index file (`file`, bytes `from` -> `to`) and the code it gets.
type Damage = (
    &'static str,
    &'static str,
    &'static [u8],
    &'static [u8],
    &'static str,
);

#[test]
fn damaged_pq_metadata_and_codebooks_are_refused_by_name() {
    // covers: IDX-READ-10, IDX-READ-2
    let cases: &[Damage] = &[
        // 5-bit codes: Lance writes 4 and 8.
        (
            "nbits",
            IVF_STORAGE,
            br#""nbits\":8"#,
            br#""nbits\":5"#,
            "index_unsupported",
        ),
        // 4-bit codes would take one byte per entry; the code column has two.
        (
            "code width",
            IVF_STORAGE,
            br#""nbits\":8"#,
            br#""nbits\":4"#,
            "index_file_layout",
        ),
        // Sub-vectors that do not divide the dimension.
        (
            "sub-vectors",
            IVF_STORAGE,
            br#""num_sub_vectors\":2"#,
            br#""num_sub_vectors\":3"#,
            "index_file_layout",
        ),
        // A dimension other than the field's.
        (
            "dimension",
            IVF_STORAGE,
            br#""dimension\":4"#,
            br#""dimension\":5"#,
            "index_file_layout",
        ),
        // A codebook in a global buffer the file lacks.
        (
            "codebook position",
            IVF_STORAGE,
            br#""codebook_position\":2"#,
            br#""codebook_position\":7"#,
            "index_file_layout",
        ),
        // A codebook of 256 x 5 floats for vectors of 4 items (the tensor's shape varint).
        (
            "codebook shape",
            IVF_STORAGE,
            b"\x08\x02\x12\x03\x80\x02\x04",
            b"\x08\x02\x12\x03\x80\x02\x05",
            "index_file_layout",
        ),
        // Another index type in index.idx.
        (
            "index type",
            IVF_INDEX,
            b"IVF_PQ",
            b"IVF_SQ",
            "index_unsupported",
        ),
        // Another metric.
        (
            "distance",
            IVF_STORAGE,
            b"\x02l2",
            b"\x02ip",
            "index_unsupported",
        ),
    ];
    for (what, file, from, to, code) in cases {
        let err = refusal("ivf-pq-8bit", &[(file, from, to)]);
        assert_eq!(index_code(&err), *code, "{what}: {err}");
    }
}

/// The little-endian bytes of the `_rowid` run `ids` in the 8-bit fixture's storage file (a
/// v2.0 flat page of uint64).
fn le(ids: &[u64]) -> Vec<u8> {
    ids.iter().flat_map(|id| id.to_le_bytes()).collect()
}

#[test]
fn pq_row_ids_are_judged_by_the_rules_for_any_index() {
    // covers: IDX-READ-10, IDX-READ-3, IDX-READ-2
    let name = "ivf-pq-8bit";
    let ids = read_ivf_pq(&index_files(&fixture(name)), 4).unwrap();
    let (a, b) = (ids[0], ids[1]);
    let pair = le(&[a, b]);
    // An id stored twice.
    let err = refusal(name, &[(IVF_STORAGE, &pair, &le(&[a, a]))]);
    assert_eq!(index_code(&err), "index_duplicate_id", "{err}");
    // An id naming an offset past the end of a covered fragment.
    let err = refusal(name, &[(IVF_STORAGE, &pair, &le(&[a, (1 << 32) | 999]))]);
    assert_eq!(index_code(&err), "index_entry_unknown_row", "{err}");
    // Row 7's vector is NULL, so the index has no entry for it; naming it instead of `b`
    // leaves `b` without an entry.
    assert!(!ids.contains(&7));
    let err = refusal(name, &[(IVF_STORAGE, &pair, &le(&[a, 7]))]);
    assert_eq!(index_code(&err), "index_entry_missing", "{err}");
}

#[test]
fn partition_tables_that_do_not_cover_the_stored_rows_are_refused() {
    // covers: IDX-READ-10, IDX-READ-2
    let name = "ivf-pq-8bit";
    let lengths: Vec<usize> = lance_says(name)["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_array().unwrap().len())
        .collect();
    assert_eq!(lengths, [327, 271]);
    // IVF.lengths (field 3, packed): [327, 271] -> [327, 272].
    let err = refusal(
        name,
        &[(
            IVF_STORAGE,
            b"\x1a\x04\xc7\x02\x8f\x02",
            b"\x1a\x04\xc7\x02\x90\x02",
        )],
    );
    assert_eq!(index_code(&err), "index_file_layout", "{err}");
}

#[test]
fn truncated_or_flipped_pq_files_get_typed_errors() {
    // covers: IDX-READ-1, IDX-READ-10
    for name in ["ivf-pq-8bit", "ivf-pq-4bit-stable"] {
        let files = index_files(&fixture(name));
        let dimension = dimension(name);
        for file in [IVF_INDEX, IVF_STORAGE] {
            let whole = files[file].clone();
            let step = (whole.len() / 97).max(1);
            for cut in (0..whole.len()).step_by(step) {
                let mut damaged = files.clone();
                damaged.insert(file.to_string(), whole[..cut].to_vec());
                let err = read_vector_index(&damaged, dimension).unwrap_err();
                assert!(!err.code().is_empty());
            }
            for at in (0..whole.len()).step_by(step) {
                let mut damaged = files.clone();
                let mut bytes = whole.clone();
                bytes[at] ^= 0x5a;
                damaged.insert(file.to_string(), bytes);
                // Ok or a typed error: the point is that nothing panics.
                if let Err(err) = read_vector_index(&damaged, dimension) {
                    assert!(!err.code().is_empty());
                }
            }
        }
    }
}

#[test]
fn entries_of_rows_deleted_and_compacted_away_since_the_build_are_ignored() {
    // covers: IDX-READ-9, IDX-READ-10
    // Stable row ids: optimize_indices took the appended fragment in (row ids 600..700), a
    // delete removed every seventh row, and the compaction dropped them; the index keeps its
    // row ids, so it names rows no fragment holds. Row ids are never reused, so such an id,
    // assigned after the build, names a row deleted since.
    let name = "ivf-pq-stable-compacted";
    let root = fixture(name);
    let read = Dataset::open(&root).unwrap().read_all().unwrap();
    let (last, layout) = read.last().unwrap();
    assert_eq!(last.version, 7);
    // The index of v7 (optimize_indices wrote it under a new uuid, beside the build's).
    let current = lance_reference_io::index_file::index_dir(&layout.indices[0].uuid);
    let files: BTreeMap<String, Vec<u8>> = [IVF_INDEX, IVF_STORAGE]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                std::fs::read(root.join(&current).join(n)).unwrap(),
            )
        })
        .collect();
    let stored = read_ivf_pq(&files, 4).unwrap();
    let deleted_appended: Vec<u64> = (600..700).filter(|id| id % 7 == 0).collect();
    assert!(deleted_appended.iter().all(|id| stored.contains(id)));
    let index = &last.indices[0];
    // The compaction rewrote every fragment, so the whole table is covered after the build:
    // one entry per live row with a whole vector, holding that vector ([IDX-READ-9]).
    assert_eq!(index.entries, entries(last, index).unwrap(), "{name}");
    assert!(index.entries.len() < stored.len());
    // An id assigned after the build that names no row is still refused once it is beyond
    // every id the table assigned.
    let dir = copy(name);
    let path = dir.path().join(&current).join(IVF_STORAGE);
    let mut bytes = std::fs::read(&path).unwrap();
    replace_once(&mut bytes, &le(&[602]), &le(&[100_000]));
    std::fs::write(&path, bytes).unwrap();
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(7)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(index_code(&err), "index_entry_unknown_row", "{err}");
}
