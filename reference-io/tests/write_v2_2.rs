//! The dataset writer in data file formats v2.2 and v2.1 ([`WriteOptions::data_file_version`]): what the
//! manifest records and what the data files hold, on the interop scenario with a struct and a
//! sparse overlay over its children (`dataset_scenarios::nested`). Values are checked by
//! pylance in `tests/interop/check_reference_datasets.py` (part 1b).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lance_conformance_test_support::dataset_scenarios;
use lance_reference::model::{Coverage, DataType};
use lance_reference_io::codec::decode_manifest;
use lance_reference_io::data_file::DataFileVersion;
use lance_reference_io::layout::Layout;
use lance_reference_io::manifest_file::decode_manifest_file;
use lance_reference_io::write_version;

/// Writes every version of `nested` in `version` and returns each version's layout as read
/// back from its manifest, with the manifest's sparse-coverage lengths per overlay.
fn written(version: DataFileVersion) -> (tempfile::TempDir, Vec<Layout>) {
    let dir = tempfile::tempdir().unwrap();
    let s = dataset_scenarios::nested();
    let mut options = s.options.clone();
    options.data_file_version = version;
    let mut layouts = Vec::new();
    for v in &s.versions {
        let layout = write_version(dir.path(), v, &options).unwrap();
        let bytes = std::fs::read(dir.path().join(&layout.manifest)).unwrap();
        let file = decode_manifest_file(&bytes, &layout.manifest).unwrap();
        let (_, read) = decode_manifest(&file, &layout.manifest, u64::MAX).unwrap();
        layouts.push(read);
    }
    (dir, layouts)
}

#[test]
fn v2_2_files_are_recorded_as_2_2_and_hold_one_column_per_leaf() {
    files_are_recorded_in_their_version_and_hold_one_column_per_leaf(DataFileVersion::V2_2);
}

#[test]
fn v2_1_files_are_recorded_as_2_1_and_hold_one_column_per_leaf() {
    files_are_recorded_in_their_version_and_hold_one_column_per_leaf(DataFileVersion::V2_1);
}

fn files_are_recorded_in_their_version_and_hold_one_column_per_leaf(version: DataFileVersion) {
    let (dir, layouts) = written(version);
    let s = dataset_scenarios::nested();
    let (major, minor) = version.manifest_numbers();
    for layout in &layouts {
        assert_eq!(
            layout.data_format.as_ref().map(|d| d.version.as_str()),
            Some(version.name())
        );
        for fragment in &layout.fragments {
            for f in fragment.files.iter().chain(&fragment.overlays) {
                assert_eq!((f.file_major_version, f.file_minor_version), (major, minor));
                let bytes = std::fs::read(dir.path().join(&f.path)).unwrap();
                // The footer's last 12 bytes: u32 columns, u16 major, u16 minor, `LANC`.
                let tail = &bytes[bytes.len() - 12..];
                let num_columns = u32::from_le_bytes(tail[0..4].try_into().unwrap());
                let footer_major = u16::from_le_bytes(tail[4..6].try_into().unwrap());
                let footer_minor = u16::from_le_bytes(tail[6..8].try_into().unwrap());
                assert_eq!(
                    (u32::from(footer_major), u32::from(footer_minor), &tail[8..]),
                    (major, minor, &b"LANC"[..])
                );
                assert_eq!(
                    num_columns as usize,
                    f.column_indices.len(),
                    "{}: one column per manifest position",
                    f.path
                );
            }
        }
    }
    // The struct (field 1) has a position in the 2.0 snapshot and none in the manifest.
    let struct_ids: Vec<i32> = s
        .versions
        .last()
        .unwrap()
        .schema
        .fields()
        .iter()
        .filter(|f| f.data_type == DataType::Struct)
        .map(|f| f.id)
        .collect();
    assert!(!struct_ids.is_empty());
    let had_struct_positions = s.versions.iter().any(|v| {
        v.fragments.iter().any(|f| {
            f.files
                .iter()
                .chain(f.overlays.iter().map(|o| &o.file))
                .any(|d| d.fields.iter().any(|id| struct_ids.contains(id)))
        })
    });
    assert!(
        had_struct_positions,
        "the scenario lists its struct in files"
    );
    for (v, layout) in s.versions.iter().zip(&layouts) {
        let bytes = std::fs::read(dir.path().join(&layout.manifest)).unwrap();
        let file = decode_manifest_file(&bytes, &layout.manifest).unwrap();
        let (snapshot, _) = decode_manifest(&file, &layout.manifest, u64::MAX).unwrap();
        for (fragment, original) in snapshot.fragments.iter().zip(&v.fragments) {
            for d in fragment
                .files
                .iter()
                .chain(fragment.overlays.iter().map(|o| &o.file))
            {
                assert!(
                    !d.fields.iter().any(|id| struct_ids.contains(id)),
                    "v{}: {:?} lists a struct",
                    v.version,
                    d.fields
                );
            }
            for (o, original) in fragment.overlays.iter().zip(&original.overlays) {
                if let (Coverage::Sparse(ours), Coverage::Sparse(theirs)) =
                    (&o.coverage, &original.coverage)
                {
                    assert_eq!(ours.len(), o.file.fields.len());
                    let leaves: Vec<_> = original
                        .file
                        .fields
                        .iter()
                        .zip(theirs)
                        .filter(|(id, _)| !struct_ids.contains(id))
                        .map(|(_, b)| b.clone())
                        .collect();
                    assert_eq!(ours, &leaves, "the leaves keep their own bitmaps");
                }
            }
        }
    }
}

#[test]
fn default_writes_2_0_with_struct_columns() {
    let (_dir, layouts) = written(DataFileVersion::V2_0);
    for layout in &layouts {
        assert_eq!(
            layout.data_format.as_ref().map(|d| d.version.as_str()),
            Some("2.0")
        );
        for fragment in &layout.fragments {
            for f in fragment.files.iter().chain(&fragment.overlays) {
                assert_eq!((f.file_major_version, f.file_minor_version), (2, 0));
            }
        }
    }
}

#[test]
fn writing_a_v2_2_history_twice_is_idempotent() {
    let (dir, _) = written(DataFileVersion::V2_2);
    let s = dataset_scenarios::nested();
    let mut options = s.options.clone();
    options.data_file_version = DataFileVersion::V2_2;
    for v in &s.versions {
        write_version(dir.path(), v, &options).unwrap();
    }
}

/// The reader and writer words of version `n`'s manifest in `dir`.
fn words(dir: &std::path::Path, layout: &Layout) -> (u64, u64) {
    let bytes = std::fs::read(dir.join(&layout.manifest)).unwrap();
    let file = decode_manifest_file(&bytes, &layout.manifest).unwrap();
    let (snapshot, _) = decode_manifest(&file, &layout.manifest, u64::MAX).unwrap();
    (snapshot.reader_flags, snapshot.writer_flags)
}

#[test]
fn recomputed_flags_set_bit_256_for_mixed_files_and_keep_it() {
    // covers: FLG-WRITE-8, FLG-WRITE-9
    let dir = tempfile::tempdir().unwrap();
    let s = dataset_scenarios::nested();
    let mut options = s.options.clone();
    options.data_file_version = DataFileVersion::V2_0;
    // The first version in 2.0 only: not mixed, no bit 256.
    let first = &s.versions[0];
    let layout = write_version(dir.path(), first, &options).unwrap();
    let (reader, writer) = words(dir.path(), &layout);
    assert_eq!((reader & 256, writer & 256), (0, 0));
    // Every overlay value file of every later version in 2.2: mixed, bit 256 in both words.
    let mut saw_overlay = false;
    let mut saw_mixed = false;
    for v in &s.versions[1..] {
        for f in &v.fragments {
            for o in &f.overlays {
                options
                    .file_versions
                    .insert(o.file.path.clone(), DataFileVersion::V2_2);
                saw_overlay = true;
            }
        }
        let layout = write_version(dir.path(), v, &options).unwrap();
        let mixed = layout.mixed_versions().is_some();
        let (reader, writer) = words(dir.path(), &layout);
        saw_mixed |= mixed;
        if mixed {
            assert_eq!((reader & 256, writer & 256), (256, 256), "{}", v.version);
        }
    }
    assert!(saw_overlay, "the scenario writes no overlay");
    assert!(saw_mixed, "no version was mixed");
    // A snapshot whose words already set bit 256 keeps it although its files are uniform.
    let fresh = tempfile::tempdir().unwrap();
    let mut sticky = first.clone();
    sticky.reader_flags |= 256;
    sticky.writer_flags |= 256;
    let plain = s.options.clone();
    let layout = write_version(fresh.path(), &sticky, &plain).unwrap();
    assert_eq!(layout.mixed_versions(), None);
    let (reader, writer) = words(fresh.path(), &layout);
    assert_eq!((reader & 256, writer & 256), (256, 256));
}

#[test]
fn every_file_in_one_version_other_than_data_format_sets_bit_256() {
    // covers: FLG-WRITE-8
    // A v2.0 dataset (data_format "2.0") whose every data file is v2.2: no file agrees with
    // data_format, so the files are mixed, however few they are.
    let dir = tempfile::tempdir().unwrap();
    let s = dataset_scenarios::nested();
    let mut options = s.options.clone();
    options.data_file_version = DataFileVersion::V2_0;
    let first = &s.versions[0];
    for f in &first.fragments {
        for file in &f.files {
            options
                .file_versions
                .insert(file.path.clone(), DataFileVersion::V2_2);
        }
    }
    assert!(
        !options.file_versions.is_empty(),
        "the scenario writes no file"
    );
    let layout = write_version(dir.path(), first, &options).unwrap();
    let mixed = layout.mixed_versions().expect("mixed");
    assert!(
        mixed.ends_with("is version 2.2 but data_format is 2.0"),
        "{mixed}"
    );
    let (reader, writer) = words(dir.path(), &layout);
    assert_eq!((reader & 256, writer & 256), (256, 256));
}
