//! Index files through whole dataset directories: what the writer puts under `_indices/`, what
//! the manifest says about it, and every way the reader refuses an index it cannot trust.
#![allow(clippy::unwrap_used, clippy::panic, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use lance_reference::delete::delete_rows;
use lance_reference::flags::FLAG_COVERED_INDEX_METADATA;
use lance_reference::index_build::{build_index, entries};
use lance_reference::model::{IndexKind, Snapshot, Value};
use lance_reference::query::{Predicate, reconcile, reconcile_vector};
use lance_reference::worked_example::{self, AGE, AGE_INDEX, EMBEDDING, NAME};
use lance_reference_io::codec::{BTREE_DETAILS_URL, VECTOR_DETAILS_URL, index_uuid};
use lance_reference_io::index_file::{BTREE_DATA, BTREE_LOOKUP, btree_files, index_dir};
use lance_reference_io::manifest_file::decode_manifest_file;
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
use lance_reference_io::{Dataset, DatasetError, WriteOptions, write_version};

fn write(root: &Path, versions: &[&Snapshot]) {
    for v in versions {
        write_version(root, v, &WriteOptions::default()).unwrap();
    }
}

fn read(root: &Path, version: u64) -> Result<Snapshot, DatasetError> {
    Dataset::open(root)?.read_version(version).map(|(s, _)| s)
}

/// A named damage applied to an index directory.
type Damage = (&'static str, fn(&Path));

/// Damage to a BTree index's directory: its lookup file removed.
fn remove_lookup_file(dir: &Path) {
    std::fs::remove_file(dir.join(BTREE_LOOKUP)).unwrap();
}

/// Damage: the data file one byte longer than the index lists it.
fn grow_data_file(dir: &Path) {
    let mut b = std::fs::read(dir.join(BTREE_DATA)).unwrap();
    b.push(0);
    std::fs::write(dir.join(BTREE_DATA), b).unwrap();
}

/// Damage: the data file's last byte (its magic) overwritten.
fn break_data_file_magic(dir: &Path) {
    let mut b = std::fs::read(dir.join(BTREE_DATA)).unwrap();
    let n = b.len();
    b[n - 1] = b'X';
    std::fs::write(dir.join(BTREE_DATA), b).unwrap();
}

fn index_section(root: &Path, version: u64) -> lance_reference::proto::lance::table::IndexSection {
    let rel = format!("{VERSIONS_DIR}/{}", manifest_name(version));
    let bytes = std::fs::read(root.join(&rel)).unwrap();
    decode_manifest_file(&bytes, &rel)
        .unwrap()
        .index_section
        .unwrap()
}

fn age_dir(root: &Path) -> std::path::PathBuf {
    root.join(index_dir(&index_uuid(AGE_INDEX, 1)))
}

/// Version 1 with a second index, a vector index on the embedding.
fn with_vector_index() -> Snapshot {
    let v1 = worked_example::version_1();
    let mut read_at = v1.clone();
    read_at.indices.clear();
    let mut out =
        build_index(&read_at, &v1, "emb_idx", &[EMBEDDING], IndexKind::Vector, 2).unwrap();
    out.version = 2;
    out
}

#[test]
fn the_writer_lays_out_each_index_under_its_uuid_and_lists_its_files() {
    // covers: IDX-FILE-1, IDX-META-1, IDX-META-2, IDX-FILE-6
    let dir = tempfile::tempdir().unwrap();
    let v2 = with_vector_index();
    write(dir.path(), &[&worked_example::version_1(), &v2]);
    let section = index_section(dir.path(), 2);
    let mut seen = BTreeMap::new();
    for meta in &section.indices {
        let uuid: [u8; 16] = meta
            .uuid
            .as_ref()
            .unwrap()
            .uuid
            .as_slice()
            .try_into()
            .unwrap();
        let dir_name = dir.path().join(index_dir(&uuid));
        let details = meta.index_details.as_ref().unwrap();
        assert_eq!(meta.index_version, Some(1));
        let mut names: Vec<String> = std::fs::read_dir(&dir_name)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let listed: Vec<(String, u64)> = meta
            .files
            .iter()
            .map(|f| (f.path.clone(), f.size_bytes))
            .collect();
        let on_disk: Vec<(String, u64)> = names
            .iter()
            .map(|n| {
                (
                    n.clone(),
                    std::fs::metadata(dir_name.join(n)).unwrap().len(),
                )
            })
            .collect();
        assert_eq!(
            listed, on_disk,
            "files lists every file with its size, sorted"
        );
        seen.insert(meta.name.clone(), (details.type_url.clone(), names));
    }
    assert_eq!(
        seen[AGE_INDEX],
        (
            BTREE_DETAILS_URL.to_string(),
            vec![BTREE_DATA.to_string(), BTREE_LOOKUP.to_string()]
        )
    );
    assert_eq!(
        seen["emb_idx"],
        (
            VECTOR_DETAILS_URL.to_string(),
            vec!["auxiliary.idx".to_string(), "index.idx".to_string()]
        )
    );
    // The same versions written again give the same bytes.
    let again = tempfile::tempdir().unwrap();
    write(again.path(), &[&worked_example::version_1(), &v2]);
    for sub in [
        index_dir(&index_uuid(AGE_INDEX, 1)),
        index_dir(&index_uuid("emb_idx", 1)),
    ] {
        for name in std::fs::read_dir(dir.path().join(&sub)).unwrap() {
            let name = name.unwrap().file_name();
            assert_eq!(
                std::fs::read(dir.path().join(&sub).join(&name)).unwrap(),
                std::fs::read(again.path().join(&sub).join(&name)).unwrap()
            );
        }
    }
    // And the reader gets the entries back from the files.
    let back = read(dir.path(), 2).unwrap();
    assert_eq!(back.indices, v2.indices);
}

#[test]
fn a_missing_resized_or_unparsable_index_file_is_refused_when_the_version_is_read() {
    // covers: IDX-READ-1, IDX-READ-6
    let v1 = worked_example::version_1();
    let cases: [Damage; 3] = [
        ("missing_file", remove_lookup_file),
        ("index_file_size_mismatch", grow_data_file),
        ("data_file_bad_magic", break_data_file_magic),
    ];
    for (code, damage) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[&v1]);
        damage(&age_dir(dir.path()));
        let err = read(dir.path(), 1).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
    }
}

#[test]
fn entries_that_disagree_with_the_claimed_version_are_refused() {
    // covers: IDX-READ-3, IDX-FILE-2
    let v1 = worked_example::version_1();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&v1]);
    // The same number of int32 entries, so the file sizes stay as listed; one value lies.
    let lying: Vec<(u64, Value)> = [30, 99, 40, 22]
        .iter()
        .enumerate()
        .map(|(i, a)| (i as u64, Value::Int32(*a)))
        .collect();
    for (name, bytes) in
        btree_files(&lance_reference::model::DataType::Int32, &lying, 4096).unwrap()
    {
        let path = age_dir(dir.path()).join(name);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), bytes.len() as u64);
        std::fs::write(path, bytes).unwrap();
    }
    let err = read(dir.path(), 1).unwrap_err();
    assert_eq!(err.code(), "index_entry_mismatch", "{err}");
    // One entry short: the row has no entry.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&v1]);
    let short: Vec<(u64, Value)> = [30, 25, 40]
        .iter()
        .enumerate()
        .map(|(i, a)| (i as u64, Value::Int32(*a)))
        .collect();
    let section_sizes: Vec<(String, Vec<u8>)> =
        btree_files(&lance_reference::model::DataType::Int32, &short, 4096).unwrap();
    for (name, bytes) in &section_sizes {
        std::fs::write(age_dir(dir.path()).join(name), bytes).unwrap();
    }
    let err = read(dir.path(), 1).unwrap_err();
    assert!(
        ["index_entry_missing", "index_file_size_mismatch"].contains(&err.code()),
        "{err}"
    );
}

#[test]
fn coverage_of_a_fragment_the_index_never_saw_is_refused() {
    // covers: IDX-READ-4
    let v1 = worked_example::version_1();
    let mut v2 = v1.clone();
    v2.version = 2;
    let mut appended = v1.fragments[0].clone();
    appended.id = 1;
    appended.files[0].path = "file1.lance".into();
    appended.lineage.row_ids = lance_reference::model::LineageSequence::Inline(vec![4, 5, 6, 7]);
    v2.fragments.push(appended);
    v2.next_row_id = 8;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&v1, &v2]);
    read(dir.path(), 2).unwrap();
    let mut v3 = v2.clone();
    v3.version = 3;
    v3.indices[0].fragment_bitmap = Some([0u32, 1].into_iter().collect());
    write(dir.path(), &[&v3]);
    let err = read(dir.path(), 3).unwrap_err();
    assert_eq!(err.code(), "index_coverage_without_entries", "{err}");
}

#[test]
fn a_deleted_row_keeps_its_entry_but_never_matches_and_narrowed_coverage_ignores_entries() {
    // covers: IDX-READ-5, IDX-READ-7
    let v1 = with_vector_index();
    let v2 = delete_rows(&v1, 0, &[1u32].into_iter().collect(), 3).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&worked_example::version_1(), &v1, &v2]);
    let back = read(dir.path(), 3).unwrap();
    let age = back.index(AGE_INDEX).unwrap();
    assert!(
        age.entries.iter().any(|e| e.offset == 1),
        "the files still hold the deleted row"
    );
    let q = reconcile(&back, AGE_INDEX, &Predicate::Eq(AGE, Value::Int32(25))).unwrap();
    assert!(q.final_rows.is_empty(), "Bob (25) was deleted");
    let nearest = reconcile_vector(&back, "emb_idx", &[0.0, 0.0, 1.0], 3).unwrap();
    assert_eq!(
        nearest.final_rows.len(),
        3,
        "three live rows remain, so top 3 is full"
    );
    assert!(nearest.final_rows.iter().all(|h| h.row.offset != 1));
    // Coverage narrowed to nothing: the files keep their entries, the reader ignores them.
    let mut v4 = v2.clone();
    v4.version = 4;
    v4.indices[0].fragment_bitmap = Some(Default::default());
    v4.indices[0].entries.clear();
    write(dir.path(), &[&v4]);
    let back = read(dir.path(), 4).unwrap();
    assert!(back.index(AGE_INDEX).unwrap().entries.is_empty());
}

#[test]
fn a_multi_field_index_lists_covering_fields_and_sets_bit_128() {
    // covers: IDX-META-3, FLG-WRITE-7
    let v1 = worked_example::version_1();
    let mut read_at = v1.clone();
    read_at.indices.clear();
    let v2 = build_index(&read_at, &v1, "age_name", &[AGE, NAME], IndexKind::BTree, 2).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&v1, &v2]);
    let section = index_section(dir.path(), 2);
    let meta = section
        .indices
        .iter()
        .find(|i| i.name == "age_name")
        .unwrap();
    assert_eq!(meta.fields, vec![AGE, NAME]);
    assert_eq!(meta.covering_fields, vec![NAME]);
    let back = read(dir.path(), 2).unwrap();
    assert_ne!(back.reader_flags & FLAG_COVERED_INDEX_METADATA, 0);
    assert_ne!(back.writer_flags & FLAG_COVERED_INDEX_METADATA, 0);
    let one_field = read(dir.path(), 1).unwrap();
    assert_eq!(one_field.reader_flags & FLAG_COVERED_INDEX_METADATA, 0);
}

#[test]
fn a_vector_index_holds_no_null_vector() {
    // covers: IDX-FILE-5, IDX-FILE-4
    let mut v1 = worked_example::version_1();
    let position = v1.fragments[0].files[0]
        .fields
        .iter()
        .position(|f| *f == EMBEDDING)
        .unwrap();
    v1.fragments[0].files[0].columns[position] = v1.fragments[0].files[0].columns[position]
        .replaced(2, Value::Null)
        .unwrap();
    v1.fragments[0].files[0].columns[position] = v1.fragments[0].files[0].columns[position]
        .replaced(3, Value::Vector(vec![Some(1.0), None, Some(0.0)]))
        .unwrap();
    let mut read_at = v1.clone();
    read_at.indices.clear();
    let v2 = build_index(&read_at, &v1, "emb_idx", &[EMBEDDING], IndexKind::Vector, 2).unwrap();
    let index = v2.index("emb_idx").unwrap();
    assert_eq!(entries(&v1, index).unwrap().len(), 2);
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&v1, &v2]);
    let back = read(dir.path(), 2).unwrap();
    let offsets: Vec<u32> = back
        .index("emb_idx")
        .unwrap()
        .entries
        .iter()
        .map(|e| e.offset)
        .collect();
    assert_eq!(offsets, vec![0, 1]);
}

/// An edit of an index's entries.
type EditEntries = fn(&mut Vec<lance_reference::model::IndexEntry>);

/// Version 1 of the worked example, and a version 2 in which a compaction rewrote fragment 0's
/// rows into fragment 1 and remapped the age index into it, as Lance 14 does: new entries at
/// the new addresses, `fragment_bitmap` {1}, `dataset_version` still 1. `entries` edits the
/// remapped entries; the index is named `name` so that its files get a directory of their own.
fn remapped(
    name: &str,
    entries: impl FnOnce(&mut Vec<lance_reference::model::IndexEntry>),
) -> Snapshot {
    let v1 = worked_example::version_1();
    let mut v2 = v1.clone();
    v2.version = 2;
    let mut moved = v1.fragments[0].clone();
    moved.id = 1;
    moved.files[0].path = "file1.lance".into();
    v2.fragments = vec![moved];
    let mut index = v1.indices[0].clone();
    index.name = name.into();
    index.fragment_bitmap = Some([1u32].into_iter().collect());
    for e in &mut index.entries {
        e.fragment = 1;
    }
    entries(&mut index.entries);
    v2.indices = vec![index];
    v2
}

#[test]
fn an_index_remapped_into_rewritten_fragments_is_read_and_checked_against_them() {
    // covers: IDX-READ-9, IDX-READ-4
    let v1 = worked_example::version_1();
    let dir = tempfile::tempdir().unwrap();
    let fine = remapped("age_remapped", |_| {});
    write(dir.path(), &[&v1, &fine]);
    let back = read(dir.path(), 2).unwrap();
    let index = back.index("age_remapped").unwrap();
    assert_eq!(index.dataset_version, 1);
    assert_eq!(index.entries.len(), 4);
    assert!(index.entries.iter().all(|e| e.fragment == 1));
    let q = reconcile(&back, "age_remapped", &Predicate::Eq(AGE, Value::Int32(25))).unwrap();
    assert_eq!(
        q.final_rows.len(),
        1,
        "Bob (25) is found through the remapped index"
    );
    // Damaged remaps, each refused with its own code.
    let damaged: [(&str, EditEntries, &str); 3] = [
        (
            "age_short",
            |e| {
                e.pop();
            },
            "index_entry_missing",
        ),
        (
            "age_lying",
            |e| e[1].value = Value::Int32(99),
            "index_entry_mismatch",
        ),
        // Nothing for the fragment: coverage the index never had ([IDX-READ-4]).
        ("age_empty", |e| e.clear(), "index_coverage_without_entries"),
    ];
    for (name, edit, code) in damaged {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[&v1, &remapped(name, edit)]);
        let err = read(dir.path(), 2).unwrap_err();
        assert_eq!(err.code(), code, "{name}: {err}");
    }
}

/// The version check (which reads a BTree by parts, a page and a fragment at a time) accepts
/// `version` of the dataset at `root` exactly when the reader does, and refuses it with the
/// reader's first error.
fn assert_checked_as_read(root: &Path, version: u64) {
    use lance_reference_io::version_check::VersionCheck;
    let dataset = Dataset::open(root).unwrap();
    let read = dataset.read_version(version).map(|_| ());
    for workers in [1, 2] {
        let checked = VersionCheck::with_workers(&dataset, workers)
            .check(version, true)
            .map(|_| ());
        assert_eq!(checked, read, "version {version}, {workers} workers");
    }
}

#[test]
fn a_btree_checked_by_parts_is_refused_with_the_readers_first_error() {
    // covers: IDX-READ-1, IDX-READ-2, IDX-READ-3, IDX-READ-4, IDX-READ-9
    let v1 = worked_example::version_1();
    let damages: [Damage; 6] = [
        ("none", |_| {}),
        ("missing_file", remove_lookup_file),
        ("size", grow_data_file),
        ("magic", break_data_file_magic),
        ("lying", |d| {
            let lying: Vec<(u64, Value)> = [30, 99, 40, 22]
                .iter()
                .enumerate()
                .map(|(i, a)| (i as u64, Value::Int32(*a)))
                .collect();
            for (name, bytes) in
                btree_files(&lance_reference::model::DataType::Int32, &lying, 4096).unwrap()
            {
                std::fs::write(d.join(name), bytes).unwrap();
            }
        }),
        ("unknown_row", |d| {
            let far: Vec<(u64, Value)> = [30, 25, 40, 22]
                .iter()
                .enumerate()
                .map(|(i, a)| ((7 << 32) | i as u64, Value::Int32(*a)))
                .collect();
            for (name, bytes) in
                btree_files(&lance_reference::model::DataType::Int32, &far, 4096).unwrap()
            {
                std::fs::write(d.join(name), bytes).unwrap();
            }
        }),
    ];
    for (name, damage) in damages {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[&v1]);
        damage(&age_dir(dir.path()));
        assert_checked_as_read(dir.path(), 1);
        // Every byte of the data file flipped in turn.
        if name == "none" {
            let path = age_dir(dir.path()).join(BTREE_DATA);
            let bytes = std::fs::read(&path).unwrap();
            for i in 0..bytes.len() {
                let mut b = bytes.clone();
                b[i] ^= 0x55;
                std::fs::write(&path, &b).unwrap();
                assert_checked_as_read(dir.path(), 1);
            }
        }
    }
    // A remapped index, sound and damaged.
    let edits: [(&str, EditEntries); 4] = [
        ("age_fine", |_| {}),
        ("age_short", |e| {
            e.pop();
        }),
        ("age_lying", |e| e[1].value = Value::Int32(99)),
        ("age_empty", |e| e.clear()),
    ];
    for (name, edit) in edits {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[&v1, &remapped(name, edit)]);
        assert_checked_as_read(dir.path(), 2);
    }
    // Coverage of a fragment the index never saw, and a deleted row's entry.
    let v1v = with_vector_index();
    let v2 = delete_rows(&v1v, 0, &[1u32].into_iter().collect(), 3).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&worked_example::version_1(), &v1v, &v2]);
    for v in 1..=3 {
        assert_checked_as_read(dir.path(), v);
    }
}

/// Version 1 of the worked example with its fragment copied into `fragments` fragments (ids
/// `first_id..`, row ids running on), the age index covering `covered` and holding every row's
/// entry, edited by `edit` (which names the k-th fragment `k`).
fn copied(
    fragments: u64,
    first_id: u64,
    covered: &[u32],
    edit: impl FnOnce(&mut Vec<lance_reference::model::IndexEntry>),
) -> Snapshot {
    let v1 = worked_example::version_1();
    let mut out = v1.clone();
    out.fragments = (0..fragments)
        .map(|k| {
            let mut f = v1.fragments[0].clone();
            f.id = first_id + k;
            f.files[0].path = format!("file{}.lance", f.id);
            f.lineage.row_ids =
                lance_reference::model::LineageSequence::Inline((4 * k..4 * k + 4).collect());
            f
        })
        .collect();
    out.next_row_id = 4 * fragments;
    let index = &mut out.indices[0];
    index.fragment_bitmap = Some(covered.iter().copied().collect());
    let one = std::mem::take(&mut index.entries);
    // Edited by position (fragment k is the k-th), then named by id.
    index.entries = (0..fragments)
        .flat_map(|k| {
            one.iter().map(move |e| lance_reference::model::IndexEntry {
                fragment: k,
                ..e.clone()
            })
        })
        .collect();
    edit(&mut index.entries);
    for e in &mut index.entries {
        e.fragment += first_id;
    }
    out
}

/// The entry of `fragment`, `offset` among `entries`.
fn entry_of(
    entries: &mut [lance_reference::model::IndexEntry],
    fragment: u64,
    offset: u32,
) -> &mut lance_reference::model::IndexEntry {
    entries
        .iter_mut()
        .find(|e| e.fragment == fragment && e.offset == offset)
        .unwrap()
}

#[test]
fn a_btree_of_many_fragments_is_judged_alike_on_one_two_and_three_workers() {
    // covers: IDX-READ-3, IDX-READ-9
    use lance_reference_io::version_check::VersionCheck;
    let all: Vec<u32> = (0..6).collect();
    let edits: [(&str, EditEntries, Option<&str>); 5] = [
        ("none", |_| {}, None),
        (
            "lying_in_1_and_3",
            |e| {
                entry_of(e, 3, 0).value = Value::Int32(99);
                entry_of(e, 1, 2).value = Value::Int32(98);
            },
            Some("index_entry_mismatch"),
        ),
        (
            "missing_in_4_lying_in_2",
            |e| {
                e.retain(|x| !(x.fragment == 4 && x.offset == 1));
                entry_of(e, 2, 3).value = Value::Int32(97);
            },
            Some("index_entry_mismatch"),
        ),
        (
            "missing_in_5",
            |e| e.retain(|x| !(x.fragment == 5 && x.offset == 3)),
            Some("index_entry_missing"),
        ),
        (
            "lying_in_the_last",
            |e| entry_of(e, 5, 1).value = Value::Int32(96),
            Some("index_entry_mismatch"),
        ),
    ];
    for (name, edit, code) in edits {
        // Covered at the claimed version, and remapped into six new fragments.
        let claimed = copied(6, 0, &all, edit);
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[&claimed]);
        let read_claimed = Dataset::open(dir.path()).unwrap().read_version(1);
        assert_eq!(
            read_claimed.as_ref().err().map(|e| e.code()),
            code,
            "{name}"
        );
        let mut v1 = copied(6, 0, &all, |_| {});
        v1.indices.clear();
        let mut v2 = copied(6, 10, &(10..16).collect::<Vec<u32>>(), edit);
        v2.version = 2;
        v2.indices[0].name = format!("age_{name}");
        let dir2 = tempfile::tempdir().unwrap();
        write(dir2.path(), &[&v1, &v2]);
        for (root, version) in [(dir.path(), 1), (dir2.path(), 2)] {
            let dataset = Dataset::open(root).unwrap();
            let read = dataset.read_version(version).map(|_| ());
            for workers in [1, 2, 3] {
                let checked = VersionCheck::with_workers(&dataset, workers)
                    .check(version, true)
                    .map(|_| ());
                assert_eq!(
                    checked, read,
                    "{name}, version {version}, {workers} workers"
                );
            }
        }
    }
}

#[test]
fn a_passed_btree_is_not_checked_again_while_nothing_its_verdict_rested_on_changed() {
    // covers: IDX-READ-3, IDX-READ-4
    use lance_reference_io::version_check::VersionCheck;
    // Versions 2 and 3 list version 1's index unchanged; version 2 appends a fragment the
    // index does not cover, version 3 changes nothing.
    let v1 = copied(3, 0, &[0, 1, 2], |_| {});
    let mut v2 = copied(4, 0, &[0, 1, 2], |_| {});
    v2.version = 2;
    v2.indices = v1.indices.clone();
    let mut v3 = v2.clone();
    v3.version = 3;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&v1, &v2, &v3]);
    let dataset = Dataset::open(dir.path()).unwrap();
    for workers in [1, 2] {
        let check = VersionCheck::with_workers(&dataset, workers);
        for v in 1..=3 {
            let read = dataset.read_version(v).map(|_| ());
            assert!(read.is_ok());
            assert_eq!(check.check(v, true).map(|_| ()), read, "version {v}");
        }
        assert_eq!(check.reused_index_verdicts(), 2, "{workers} workers");
    }
    // The index covers fragment 3 from the start: version 1 has no such fragment and passes;
    // version 2 appends it, a covered fragment the index has no entry for, and is refused,
    // not answered by version 1's verdict.
    let v1 = copied(3, 0, &[0, 1, 2, 3], |_| {});
    let mut v2 = copied(4, 0, &[0, 1, 2, 3], |_| {});
    v2.version = 2;
    v2.indices = v1.indices.clone();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[&v1, &v2]);
    let dataset = Dataset::open(dir.path()).unwrap();
    let check = VersionCheck::with_workers(&dataset, 2);
    assert_eq!(check.check(1, true).map(|_| ()), Ok(()));
    let read = dataset.read_version(2).map(|_| ());
    assert_eq!(
        read.as_ref().err().map(|e| e.code()),
        Some("index_coverage_without_entries")
    );
    assert_eq!(check.check(2, true).map(|_| ()), read);
    assert_eq!(check.reused_index_verdicts(), 0);
}
