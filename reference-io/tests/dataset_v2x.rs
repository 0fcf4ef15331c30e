//! Datasets that pylance 14.0.2 wrote with data files of format v2.2 (written by
//! `tests/interop/make_v2x_dataset_fixtures.py`, which also stored what pylance scans from
//! every version): the reference reads every version and returns the same rows, lineage
//! included; damage that only v2.1+ files can carry is refused while the undamaged dataset
//! reads.
#![allow(clippy::unwrap_used, clippy::panic, clippy::expect_used)]

use std::path::{Path, PathBuf};

use lance_reference::error::ErrorClass;
use lance_reference::flags::FLAG_MIXED_DATA_FILE_VERSIONS;
use lance_reference::model::{LineageSequence, Value};
use lance_reference::proto::lance::table::Manifest;
use lance_reference::scan::scan;
use lance_reference_io::Dataset;
use lance_reference_io::manifest_file::{decode_manifest_file, encode_manifest_file};
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
use serde_json::{Value as Json, json};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lance14_v2x_datasets")
        .join(name)
}

/// A copy of fixture `name` that a test may damage.
fn copy(name: &str) -> tempfile::TempDir {
    crate::copy_dir(&fixture(name))
}

fn edit_manifest(root: &Path, version: u64, edit: impl FnOnce(&mut Manifest)) {
    let path = root.join(VERSIONS_DIR).join(manifest_name(version));
    let mf = decode_manifest_file(&std::fs::read(&path).unwrap(), "m").unwrap();
    let mut manifest = mf.manifest;
    edit(&mut manifest);
    let bytes = encode_manifest_file(&manifest, mf.index_section.as_ref()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A value as pylance's JSON dump writes it (a struct as the list of its children).
fn json_of(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int32(i) => json!(i),
        Value::Int64(i) => json!(i),
        Value::UInt64(i) => json!(i),
        Value::Float32(f) => json!(f),
        Value::Float64(f) => json!(f),
        Value::Utf8(s) => json!(s),
        Value::Vector(items) => json!(items),
        Value::Struct(children) => Json::Array(children.iter().map(json_of).collect()),
    }
}

/// Reads every version of fixture `name` and compares each scan with pylance's.
fn agrees_with_pylance(
    name: &str,
) -> Vec<(lance_reference::model::Snapshot, lance_reference_io::Layout)> {
    let expected: Json =
        serde_json::from_str(&std::fs::read_to_string(fixture(&format!("{name}.json"))).unwrap())
            .unwrap();
    let read = Dataset::open(&fixture(name)).unwrap().read_all().unwrap();
    let versions = expected.as_array().unwrap();
    assert_eq!(read.len(), versions.len(), "{name}");
    for ((snapshot, _), want) in read.iter().zip(versions) {
        assert_eq!(json!(snapshot.version), want["version"], "{name}");
        let rows: Vec<Json> = scan(snapshot, None)
            .unwrap()
            .iter()
            .map(|r| {
                json!({
                    "values": r.values.iter().map(json_of).collect::<Vec<_>>(),
                    "row_id": r.row_id,
                    "created_at": r.created_at,
                    "last_updated_at": r.last_updated_at,
                })
            })
            .collect();
        assert_eq!(
            Json::Array(rows),
            want["rows"],
            "{name} v{}",
            snapshot.version
        );
    }
    read
}

#[test]
fn struct_children_overlaid_in_v2_2_files_read_as_lance_reads_them() {
    // covers: DS-FILE-3, DS-LEAF-1, DS-LEAF-4, OVL-SHAPE-2, OVL-SHAPE-7, OVL-SHAPE-8
    let read = agrees_with_pylance("struct-overlays-2.2");
    let (v3, layout) = &read[2];
    // Lance lists the leaves only: the base file holds id, st.x, st.y; the overlays st.x and
    // (sparse) st.x, st.y, one bitmap each.
    let f = &v3.fragments[0];
    assert_eq!(f.files[0].fields, vec![0, 2, 3]);
    assert_eq!(layout.fragments[0].files[0].version().to_string(), "2.2");
    assert_eq!(f.overlays[0].file.fields, vec![2]);
    assert_eq!(f.overlays[1].file.fields, vec![2, 3]);
    // The struct's validity is the base leaves' layer: NULL at offset 1 only, even where an
    // overlay covers a child there.
    let layer = f.files[0].columns[1].struct_layer(1).unwrap();
    assert_eq!(
        (0..4).map(|i| layer.is_present(i)).collect::<Vec<_>>(),
        vec![true, false, true, true]
    );
}

#[test]
fn a_v2_2_overlay_on_a_v2_0_dataset_sets_bit_256_and_reads() {
    // covers: FLG-READ-5, FLG-WRITE-8, DS-FILE-3
    let read = agrees_with_pylance("mixed-2.0-base-2.2-overlay");
    let (v2, layout) = &read[1];
    assert_eq!(
        layout.mixed_versions().as_deref(),
        Some("fragments[0].overlays[0].data_file is version 2.2 but data_format is 2.0")
    );
    assert_ne!(v2.reader_flags & FLAG_MIXED_DATA_FILE_VERSIONS, 0);
    assert_ne!(v2.writer_flags & FLAG_MIXED_DATA_FILE_VERSIONS, 0);
    assert_eq!(read[0].1.mixed_versions(), None);
}

#[test]
fn lineage_spilled_into_a_v2_2_file_reads() {
    // covers: LIN-COL-7, LIN-COL-2, LIN-COL-3
    let read = agrees_with_pylance("spilled-lineage-2.2");
    let (last, layout) = read.last().unwrap();
    let spilled: Vec<_> = last
        .fragments
        .iter()
        .filter(|f| f.lineage.row_ids == LineageSequence::Column)
        .collect();
    assert!(!spilled.is_empty(), "the compaction spilled nothing");
    for (i, f) in last.fragments.iter().enumerate() {
        for (j, file) in f.files.iter().enumerate() {
            if file.fields.iter().any(|&id| id < 0) {
                assert_eq!(layout.fragments[i].files[j].version().to_string(), "2.2");
            }
        }
    }
}

#[test]
fn a_struct_parent_listed_in_a_v2_2_overlay_is_refused() {
    // covers: DS-LEAF-2
    let dir = copy("struct-overlays-2.2");
    assert!(Dataset::open(dir.path()).unwrap().read_version(3).is_ok());
    // List the struct st (1) before its children in the sparse overlay, with a bitmap of its
    // own (the v2.0 form): invalid in a v2.2 file.
    edit_manifest(dir.path(), 3, |m| {
        use lance_reference::proto::lance::table::data_overlay_file::Coverage;
        let o = &mut m.fragments[0].overlays[1];
        let df = o.data_file.as_mut().unwrap();
        df.fields.insert(0, 1);
        df.column_indices.push(2);
        if let Some(Coverage::FieldCoverage(c)) = &mut o.coverage {
            let first = c.offset_bitmaps[0].clone();
            c.offset_bitmaps.insert(0, first);
        } else {
            panic!("the v3 overlay is sparse");
        }
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(3)
        .unwrap_err();
    assert_eq!(
        (err.class(), err.code()),
        (ErrorClass::Invalid, "invalid_field"),
        "{err}"
    );
    assert!(
        err.to_string().contains("overlays[1].data_file.fields[0]"),
        "{err}"
    );
}

#[test]
fn mixed_versions_without_bit_256_are_refused() {
    // covers: FLG-CONS-7
    let dir = copy("mixed-2.0-base-2.2-overlay");
    edit_manifest(dir.path(), 2, |m| {
        m.reader_feature_flags &= !FLAG_MIXED_DATA_FILE_VERSIONS;
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(2)
        .unwrap_err();
    assert_eq!(
        (err.class(), err.code()),
        (ErrorClass::Invalid, "missing_flag"),
        "{err}"
    );
    assert!(
        err.to_string().contains("reader flag 256 is clear"),
        "{err}"
    );
    // The writer word alone binds writers only.
    let dir = copy("mixed-2.0-base-2.2-overlay");
    edit_manifest(dir.path(), 2, |m| {
        m.writer_feature_flags &= !FLAG_MIXED_DATA_FILE_VERSIONS;
    });
    assert!(Dataset::open(dir.path()).unwrap().read_version(2).is_ok());
}
