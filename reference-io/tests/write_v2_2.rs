//! The dataset writer in data file format v2.2 ([`WriteOptions::data_file_version`]): what the
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
    let (dir, layouts) = written(DataFileVersion::V2_2);
    let s = dataset_scenarios::nested();
    for layout in &layouts {
        assert_eq!(
            layout.data_format.as_ref().map(|d| d.version.as_str()),
            Some("2.2")
        );
        for fragment in &layout.fragments {
            for f in fragment.files.iter().chain(&fragment.overlays) {
                assert_eq!((f.file_major_version, f.file_minor_version), (2, 2));
                let bytes = std::fs::read(dir.path().join(&f.path)).unwrap();
                // The footer's last 12 bytes: u32 columns, u16 major, u16 minor, `LANC`.
                let tail = &bytes[bytes.len() - 12..];
                let num_columns = u32::from_le_bytes(tail[0..4].try_into().unwrap());
                let major = u16::from_le_bytes(tail[4..6].try_into().unwrap());
                let minor = u16::from_le_bytes(tail[6..8].try_into().unwrap());
                assert_eq!((major, minor, &tail[8..]), (2, 2, &b"LANC"[..]));
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
