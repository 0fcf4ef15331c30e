//! Whole dataset directories: write → read round trips for every feature, byte-identical
//! rewrites, time travel, version naming, path confinement, manifest framing and decoding
//! errors, and a property test that mutated manifests never panic the reader.
#![allow(clippy::unwrap_used, clippy::panic, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lance_conformance_test_support::dataset_scenarios::{self as scenarios, Scenario, bitmap};
use lance_reference::error::ErrorClass;
use lance_reference::model::{LineageSequence, Value};
use lance_reference::proto::lance::table::Manifest;
use lance_reference::scan::scan;
use lance_reference_io::deletion::DeletionFileType;
use lance_reference_io::manifest_file::{decode_manifest_file, encode_manifest_file};
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};
use lance_reference_io::write::FlagPolicy;
use lance_reference_io::{Dataset, WriteOptions, write_version};

fn write_all(root: &Path, s: &Scenario) {
    for v in &s.versions {
        write_version(root, v, &s.options).unwrap();
    }
}

fn files_under(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn manifest_path(root: &Path, version: u64) -> PathBuf {
    root.join(VERSIONS_DIR).join(manifest_name(version))
}

/// Decodes version `v`'s manifest, lets `edit` change it, and writes it back.
fn edit_manifest(root: &Path, version: u64, edit: impl FnOnce(&mut Manifest)) {
    let path = manifest_path(root, version);
    let mf = decode_manifest_file(&std::fs::read(&path).unwrap(), "m").unwrap();
    let mut manifest = mf.manifest;
    edit(&mut manifest);
    let bytes = encode_manifest_file(&manifest, mf.index_section.as_ref()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn written(s: &Scenario) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), s);
    dir
}

#[test]
fn every_scenario_round_trips_at_every_version() {
    // covers: OVL-LAYOUT-6, OVL-SHAPE-1, OVL-SHAPE-2, LIN-COL-1, LIN-COL-2, LIN-COL-5, LIN-COL-6, FLG-WRITE-1, FLG-WRITE-2, FLG-WRITE-3, FLG-WRITE-4
    for s in scenarios::all() {
        let dir = written(&s);
        let ds = Dataset::open(dir.path()).unwrap();
        let expected: Vec<u64> = s.versions.iter().map(|v| v.version).collect();
        assert_eq!(ds.versions(), expected, "{}", s.name);
        for v in &s.versions {
            let (read, layout) = ds.read_version(v.version).unwrap();
            assert_eq!(&read, v, "{} v{}", s.name, v.version);
            assert_eq!(layout.fragments.len(), v.fragments.len());
            assert_eq!(scan(&read, None).unwrap(), scan(v, None).unwrap());
        }
    }
}

#[test]
fn the_full_scenario_uses_both_deletion_forms_and_both_lineage_placements() {
    let s = scenarios::full();
    let dir = written(&s);
    let (snap, layout) = Dataset::open(dir.path()).unwrap().read_version(2).unwrap();
    let forms: Vec<_> = layout
        .fragments
        .iter()
        .filter_map(|f| f.deletion.as_ref().map(|d| d.form))
        .collect();
    assert_eq!(
        forms,
        [DeletionFileType::ArrowArray, DeletionFileType::Bitmap]
    );
    assert!(
        layout.fragments[0]
            .deletion
            .as_ref()
            .unwrap()
            .path
            .ends_with(".arrow")
    );
    // Fragment 1 holds its lineage columns in its main data file, fragment 2 in a lineage-only
    // file; fragment 1's last-updated-at came back inline after the overlay commit.
    assert_eq!(snap.fragments[1].files.len(), 1);
    assert_eq!(snap.fragments[1].lineage.row_ids, LineageSequence::Column);
    assert_eq!(
        snap.fragments[1].lineage.last_updated_at,
        LineageSequence::Inline(vec![2, 1, 2, 1, 2])
    );
    assert_eq!(snap.fragments[2].files[1].fields, [-3, -4]);
    assert_eq!(
        snap.fragments[2].lineage_values(-3).unwrap().unwrap(),
        [11, 12, 13, 14]
    );
    assert_eq!(snap.reader_flags, 1 | 2 | 64 | 2048);
    assert_eq!(snap.writer_flags, 1 | 2 | 8 | 64 | 2048);
    let w = layout.writer_version.unwrap();
    assert_eq!(
        (w.library.as_str(), w.version.is_empty()),
        ("lance-conformance", false)
    );
    assert_eq!(layout.data_format.unwrap().version, "2.0");
    assert_eq!(layout.timestamp, None);
    assert!(
        layout
            .fragments
            .iter()
            .flat_map(|f| &f.files)
            .all(|f| f.file_size_bytes > 0)
    );
}

#[test]
fn index_entries_are_the_values_at_dataset_version() {
    let s = scenarios::full();
    let dir = written(&s);
    let ds = Dataset::open(dir.path()).unwrap();
    let (v3, _) = ds.read_version(3).unwrap();
    let id_idx = v3.index("id_idx").unwrap();
    assert_eq!(id_idx.dataset_version, 1);
    // Built at v1 over fragments 0..2: all 15 rows (no deletions at v1), ids as written.
    assert_eq!(id_idx.entries.len(), 15);
    assert_eq!(id_idx.entries[7].value, Value::Int64(101)); // fragment 1, offset 1
    // The vector index at v2 skips the rows deleted at v2 (fragment 0 offset 5, fragment 1
    // offsets 0 and 1) and sees fragment 1's overlay vector at offset 4.
    let emb = v3.index("emb_idx").unwrap();
    assert_eq!(emb.entries.len(), 6 + 5 + 4 + 3 - 3);
    let e = emb
        .entries
        .iter()
        .find(|e| e.fragment == 1 && e.offset == 4)
        .unwrap();
    assert_eq!(
        e.value,
        Value::Vector(vec![Some(9.0), Some(9.5), Some(-1.0)])
    );
}

#[test]
fn rewriting_gives_byte_identical_directories() {
    for s in scenarios::all() {
        let a = written(&s);
        let b = written(&s);
        assert_eq!(files_under(a.path()), files_under(b.path()), "{}", s.name);
        // Writing the same versions again into the same directory changes nothing.
        let before = files_under(a.path());
        write_all(a.path(), &s);
        assert_eq!(files_under(a.path()), before);
    }
}

#[test]
fn lance_layout_details() {
    let s = scenarios::plain();
    let dir = written(&s);
    let names: Vec<String> = std::fs::read_dir(dir.path().join(VERSIONS_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.contains(&"18446744073709551614.manifest".to_string()));
    let hint =
        std::fs::read_to_string(dir.path().join("_versions/latest_version_hint.json")).unwrap();
    assert_eq!(hint, "{\"version\":3}");
    for name in files_under(&dir.path().join("data")).keys() {
        let n = name.to_str().unwrap();
        assert!(n.len() == 64 + 6 && n.ends_with(".lance"), "{n}");
    }
}

#[test]
fn an_existing_file_with_other_content_is_refused() {
    let s = scenarios::plain();
    let dir = written(&s);
    let mut v1 = s.versions[0].clone();
    let column = &mut v1.fragments[0].files[0].columns[1];
    *column = column.replaced(0, Value::Int32(99)).unwrap();
    let err = write_version(dir.path(), &v1, &WriteOptions::default()).unwrap_err();
    assert_eq!(err.code(), "existing_file_differs");
}

#[test]
fn writes_are_checked_before_anything_is_written() {
    let s = scenarios::full();
    let dir = tempfile::tempdir().unwrap();
    let mut v1 = s.versions[0].clone();
    v1.reader_flags = 0; // lacks the bits its content requires
    let options = WriteOptions {
        flags: FlagPolicy::AsStored,
        ..WriteOptions::default()
    };
    let err = write_version(dir.path(), &v1, &options).unwrap_err();
    assert_eq!(err.code(), "missing_flag");
    assert!(!dir.path().join("data").exists());
    let mut bad = s.versions[0].clone();
    bad.fragments[0].deletions = bitmap(&[99]);
    let err = write_version(dir.path(), &bad, &WriteOptions::default()).unwrap_err();
    assert_eq!(err.code(), "offset_out_of_range");
}

#[test]
fn mixing_naming_schemes_is_refused_and_v1_alone_reads() {
    // covers: DS-NAME-1
    let s = scenarios::plain();
    let dir = written(&s);
    // Rename every manifest to its V1 name: a V1-only directory reads the same.
    for v in 1..=3u64 {
        std::fs::rename(
            manifest_path(dir.path(), v),
            dir.path().join(VERSIONS_DIR).join(format!("{v}.manifest")),
        )
        .unwrap();
    }
    let ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.read_version(3).unwrap().0, s.versions[2]);
    // Adding a V2 name makes the directory mixed.
    std::fs::copy(
        dir.path().join("_versions/3.manifest"),
        manifest_path(dir.path(), 3),
    )
    .unwrap();
    assert_eq!(
        Dataset::open(dir.path()).unwrap_err().code(),
        "mixed_naming_schemes"
    );
    // The writer refuses to add V2 names to a V1 directory.
    std::fs::remove_file(manifest_path(dir.path(), 3)).unwrap();
    let mut v4 = s.versions[2].clone();
    v4.version = 4;
    assert_eq!(
        write_version(dir.path(), &v4, &WriteOptions::default())
            .unwrap_err()
            .code(),
        "mixed_naming_schemes"
    );
}

#[test]
fn the_inner_version_must_match_the_name() {
    // covers: DS-NAME-2
    let s = scenarios::plain();
    let dir = written(&s);
    edit_manifest(dir.path(), 2, |m| m.version = 7);
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(2)
        .unwrap_err();
    assert_eq!(err.code(), "version_mismatch");
    assert_eq!(err.class(), ErrorClass::Invalid);
}

#[test]
fn a_fragment_id_above_32_bits_is_refused_naming_the_field() {
    // covers: DS-FRAG-1
    let s = scenarios::plain();
    let dir = written(&s);
    // With no stored max_fragment_id, the id itself is the only thing wrong.
    edit_manifest(dir.path(), 1, |m| {
        m.fragments[1].id = 1 << 32;
        m.max_fragment_id = None;
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(
        (err.code(), err.class()),
        ("invalid_field", ErrorClass::Invalid)
    );
    assert!(err.to_string().contains("fragments[1].id"), "{err}");
    // u32::MAX itself is a valid id.
    edit_manifest(dir.path(), 1, |m| m.fragments[1].id = u64::from(u32::MAX));
    Dataset::open(dir.path()).unwrap().read_version(1).unwrap();
    // The writer refuses to write such an id rather than truncate it.
    let mut v = s.versions[0].clone();
    v.fragments[1].id = 1 << 32;
    let other = tempfile::tempdir().unwrap();
    let err = write_version(other.path(), &v, &s.options).unwrap_err();
    assert_eq!(err.code(), "unwritable", "{err}");
}

#[test]
fn paths_escaping_the_root_are_refused_naming_the_field() {
    // covers: DS-PATH-1, DS-PATH-2, DS-PATH-3, DS-PATH-4
    for (bad, problem) in [
        ("../outside.lance", "path_escape"),
        ("/etc/passwd", "path_escape"),
        ("a\\b.lance", "path_escape"),
    ] {
        let s = scenarios::plain();
        let dir = written(&s);
        edit_manifest(dir.path(), 1, |m| m.fragments[1].files[0].path = bad.into());
        let err = Dataset::open(dir.path())
            .unwrap()
            .read_version(1)
            .unwrap_err();
        assert_eq!(err.code(), problem);
        assert!(
            err.to_string().contains("fragments[1].files[0].path"),
            "{err}"
        );
    }
    let s = scenarios::plain();
    let dir = written(&s);
    edit_manifest(dir.path(), 2, |m| {
        m.fragments[0].overlays[0].data_file.as_mut().unwrap().path = "x/../../y".into()
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(2)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("fragments[0].overlays[0].data_file.path"),
        "{err}"
    );
    // base_id: unsupported when declared, invalid otherwise.
    edit_manifest(dir.path(), 1, |m| m.fragments[0].files[0].base_id = Some(3));
    assert_eq!(
        Dataset::open(dir.path())
            .unwrap()
            .read_version(1)
            .unwrap_err()
            .code(),
        "invalid_field"
    );
    edit_manifest(dir.path(), 1, |m| {
        m.base_paths
            .push(lance_reference::proto::lance::table::BasePath {
                id: 3,
                ..Default::default()
            })
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(
        (err.code(), err.class()),
        ("unsupported", ErrorClass::UnsupportedFeature)
    );
}

#[test]
fn overlays_without_data_file_or_coverage_are_malformed() {
    // covers: OVL-LAYOUT-6
    use lance_reference::proto::lance::table::data_overlay_file::Coverage;
    let s = scenarios::plain();
    for (edit, field) in [
        (
            Box::new(|m: &mut Manifest| m.fragments[0].overlays[0].data_file = None)
                as Box<dyn Fn(&mut Manifest)>,
            "data_file",
        ),
        (
            Box::new(|m: &mut Manifest| m.fragments[0].overlays[0].coverage = None),
            "coverage",
        ),
        (
            Box::new(|m: &mut Manifest| {
                m.fragments[0].overlays[0].coverage =
                    Some(Coverage::SharedOffsetBitmap(vec![1, 2, 3]))
            }),
            "shared_offset_bitmap",
        ),
    ] {
        let dir = written(&s);
        edit_manifest(dir.path(), 2, edit);
        let err = Dataset::open(dir.path())
            .unwrap()
            .read_version(2)
            .unwrap_err();
        assert_eq!(err.class(), ErrorClass::Malformed, "{err}");
        assert!(
            err.to_string()
                .contains(&format!("fragments[0].overlays[0].{field}")),
            "{err}"
        );
    }
}

#[test]
fn column_lineage_needs_exactly_one_holder_file() {
    // covers: LIN-COL-2, FLG-CONS-1
    let s = scenarios::full();
    let dir = written(&s);
    // Fragment 2's lineage-only file dropped: its column arms now have no holder.
    edit_manifest(dir.path(), 1, |m| {
        m.fragments[2].files.pop();
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(err.code(), "missing_lineage_column", "{err}");
    // Flag 2048 cleared while column arms are present.
    let dir = written(&s);
    edit_manifest(dir.path(), 1, |m| m.reader_feature_flags &= !2048);
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(err.code(), "missing_flag", "{err}");
}

#[test]
fn unknown_reader_flags_are_refused_before_files_are_read() {
    // covers: FLG-READ-1, FLG-READ-2
    let s = scenarios::plain();
    let dir = written(&s);
    edit_manifest(dir.path(), 1, |m| m.reader_feature_flags |= 1 << 18);
    std::fs::remove_dir_all(dir.path().join("data")).unwrap();
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::UnsupportedFeature, "{err}");
}

#[test]
fn missing_and_oversized_files_are_typed() {
    // covers: DS-FILE-1, DS-FILE-2
    let s = scenarios::plain();
    let dir = written(&s);
    let small = lance_reference_io::ReadOptions {
        max_file_bytes: 64,
        ..Default::default()
    };
    let err = Dataset::open_with(dir.path(), small)
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(err.code(), "file_too_large");
    std::fs::remove_dir_all(dir.path().join("data")).unwrap();
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(err.code(), "missing_file");
    assert!(
        err.to_string().contains("fragments[0].files[0].path"),
        "{err}"
    );
}

#[test]
fn an_index_from_a_vanished_version_is_an_error() {
    let s = scenarios::full();
    let dir = written(&s);
    std::fs::remove_file(manifest_path(dir.path(), 1)).unwrap();
    let ds = Dataset::open(dir.path()).unwrap();
    let err = ds.read_version(2).unwrap_err();
    assert_eq!(err.code(), "version_not_found");
    assert!(
        err.to_string().contains("indices[0].dataset_version"),
        "{err}"
    );
}

#[test]
fn a_huge_physical_rows_is_refused_before_expansion() {
    // covers: LIN-DEC-6
    let s = scenarios::full();
    let dir = written(&s);
    edit_manifest(dir.path(), 1, |m| m.fragments[0].physical_rows = 1 << 40);
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::UnsupportedFeature, "{err}");
}

mod mutation {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

        /// Flipping, truncating or overwriting manifest bytes never panics the reader.
        #[test]
        fn mutated_manifests_never_panic(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cut in proptest::option::of(any::<usize>()),
        ) {
            let s = scenarios::full();
            let dir = tempfile::tempdir().unwrap();
            write_version(dir.path(), &s.versions[0], &s.options).unwrap();
            write_version(dir.path(), &s.versions[1], &s.options).unwrap();
            let path = manifest_path(dir.path(), 2);
            let mut bytes = std::fs::read(&path).unwrap();
            for (at, value) in edits {
                let n = bytes.len();
                bytes[at % n] ^= value | 1;
            }
            if let Some(cut) = cut {
                let n = bytes.len();
                bytes.truncate(cut % n);
            }
            std::fs::write(&path, &bytes).unwrap();
            let _ = decode_manifest_file(&bytes, "m");
            if let Ok(ds) = Dataset::open(dir.path()) {
                let _ = ds.read_version(2);
            }
        }
    }
}

#[test]
fn a_data_file_whose_size_disagrees_with_the_manifest_is_refused() {
    // covers: DS-FILE-1
    let s = scenarios::plain();
    let dir = written(&s);
    let (_, layout) = Dataset::open(dir.path()).unwrap().read_version(1).unwrap();
    let rel = layout.fragments[0].files[0].path.clone();
    let bytes = std::fs::read(dir.path().join(&rel)).unwrap();
    std::fs::write(dir.path().join(&rel), &bytes[..bytes.len() - 1]).unwrap();
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(
        (err.class(), err.code()),
        (ErrorClass::Invalid, "invalid_field")
    );
    assert!(err.to_string().contains("file_size_bytes"), "{err}");
    // With the size unknown (0), the truncated file itself is found broken.
    edit_manifest(dir.path(), 1, |m| {
        m.fragments[0].files[0].file_size_bytes = 0
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Malformed, "{err}");
}

#[test]
fn each_data_file_is_read_by_its_own_version_and_others_are_unsupported() {
    // covers: DS-FILE-3, DS-FILE-6, FLG-READ-5, FLG-CONS-7
    let s = scenarios::plain();
    let flags = |m: &mut Manifest| {
        m.reader_feature_flags |= 256;
        m.writer_feature_flags |= 256;
    };
    // (pair, set bit 256) -> outcome. The kit's files are v2.0 (footer (0, 3)).
    type Outcome = Option<(ErrorClass, &'static str, &'static str)>;
    let cases: [((u32, u32), bool, Outcome); 8] = [
        ((2, 0), false, None),
        ((0, 3), false, None),
        // Bit 256 alone is no reason to refuse.
        ((2, 0), true, None),
        // A readable version whose footer disagrees with the manifest.
        (
            (2, 1),
            true,
            Some((ErrorClass::Invalid, "invalid_field", "footer says 0.3")),
        ),
        (
            (2, 2),
            true,
            Some((ErrorClass::Invalid, "invalid_field", "footer says 0.3")),
        ),
        // The same without bit 256: the versions are mixed (data_format is 2.0).
        (
            (2, 2),
            false,
            Some((
                ErrorClass::Invalid,
                "missing_flag",
                "is version 2.2 but data_format is 2.0",
            )),
        ),
        // Not read, named: 2.3 is unstable, 3.0 does not exist.
        (
            (2, 3),
            true,
            Some((
                ErrorClass::UnsupportedFeature,
                "unsupported",
                "data file version 2.3 (2.0, 2.1 and 2.2 are read, and 2.3 is unstable",
            )),
        ),
        (
            (3, 0),
            true,
            Some((
                ErrorClass::UnsupportedFeature,
                "unsupported",
                "data file version 3.0",
            )),
        ),
    ];
    for (pair, bit, outcome) in cases {
        let dir = written(&s);
        edit_manifest(dir.path(), 1, |m| {
            let f = &mut m.fragments[0].files[0];
            (f.file_major_version, f.file_minor_version) = pair;
            if bit {
                flags(m);
            }
        });
        let read = Dataset::open(dir.path()).unwrap().read_version(1);
        match (read, outcome) {
            (Ok((snap, _)), None) => {
                let mut expected = s.versions[0].clone();
                if bit {
                    expected.reader_flags |= 256;
                    expected.writer_flags |= 256;
                }
                assert_eq!(snap, expected, "{pair:?}");
            }
            (Err(err), Some((class, code, text))) => {
                assert_eq!((err.class(), err.code()), (class, code), "{pair:?}: {err}");
                assert!(err.to_string().contains(text), "{pair:?}: {err}");
            }
            (read, outcome) => panic!("{pair:?} bit {bit}: {read:?}, expected {outcome:?}"),
        }
    }
}

#[test]
fn a_struct_listed_in_a_v2_2_file_is_refused() {
    // covers: DS-LEAF-2
    let s = scenarios::nested();
    // v3's overlay lists the struct (1) and its child (2): as a v2.2 value file it is invalid,
    // before its bytes are read; as v2.0 it reads.
    let dir = written(&s);
    assert!(Dataset::open(dir.path()).unwrap().read_version(3).is_ok());
    edit_manifest(dir.path(), 3, |m| {
        let f = m.fragments[0].overlays[0].data_file.as_mut().unwrap();
        (f.file_major_version, f.file_minor_version) = (2, 2);
        m.reader_feature_flags |= 256;
        m.writer_feature_flags |= 256;
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
    let text = err.to_string();
    assert!(
        text.contains("fragments[0].overlays[0].data_file.fields[0]"),
        "{text}"
    );
    assert!(text.contains("field 1 is a struct"), "{text}");
    // The same for a base file listing the struct.
    edit_manifest(dir.path(), 1, |m| {
        let f = &mut m.fragments[0].files[0];
        (f.file_major_version, f.file_minor_version) = (2, 1);
        m.reader_feature_flags |= 256;
        m.writer_feature_flags |= 256;
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert!(
        err.to_string().contains("fragments[0].files[0].fields[1]"),
        "{err}"
    );
}

#[test]
fn a_hidden_lineage_column_stored_with_another_type_is_refused() {
    // covers: LIN-COL-3
    use lance_reference::model::{DataType, Field};
    use lance_reference_io::data_file::{ColumnData, write_data_file};
    let s = scenarios::full();
    let dir = written(&s);
    let (_, layout) = Dataset::open(dir.path()).unwrap().read_version(1).unwrap();
    // Fragment 2's lineage-only file holds -3 (row ids 11..15) and -4; store -3 as int64.
    let rel = layout.fragments[2].files[1].path.clone();
    let column = |id: i32, data_type: DataType, values: Vec<Value>| {
        let field = Field {
            id,
            parent_id: -1,
            name: format!("c{id}"),
            data_type,
            nullable: false,
        };
        ColumnData::new(field, values)
    };
    let bytes = write_data_file(&[
        column(-3, DataType::Int64, (11..15).map(Value::Int64).collect()),
        column(-4, DataType::UInt64, vec![Value::UInt64(1); 4]),
    ])
    .unwrap();
    std::fs::write(dir.path().join(&rel), bytes).unwrap();
    edit_manifest(dir.path(), 1, |m| {
        m.fragments[2].files[1].file_size_bytes = 0
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(
        (err.class(), err.code()),
        (ErrorClass::Invalid, "invalid_field"),
        "{err}"
    );
    assert!(
        err.to_string().contains("fragments[2].files[1].fields[0]"),
        "{err}"
    );
    assert!(err.to_string().contains("int64"), "{err}");
}

/// Rewrites file `k` of fragment `f` (version 1 of `dir`) with its columns stored in `order`
/// (`order[c]` = the `fields` position stored as column `c`), and sets `column_indices` to
/// `indices`.
fn store_columns_in_order(
    dir: &Path,
    s: &Scenario,
    (f, k): (usize, usize),
    order: &[usize],
    indices: Vec<i32>,
) {
    use lance_reference::model::DataFile;
    use lance_reference_io::write::data_file_bytes;
    let model = &s.versions[0].fragments[f].files[k];
    let permuted = DataFile {
        path: model.path.clone(),
        fields: order.iter().map(|&p| model.fields[p]).collect(),
        columns: order.iter().map(|&p| model.columns[p].clone()).collect(),
    };
    let bytes = data_file_bytes(&s.versions[0].schema, &permuted).unwrap();
    let (_, layout) = Dataset::open(dir).unwrap().read_version(1).unwrap();
    std::fs::write(dir.join(&layout.fragments[f].files[k].path), &bytes).unwrap();
    edit_manifest(dir, 1, |m| {
        let df = &mut m.fragments[f].files[k];
        df.file_size_bytes = bytes.len() as u64;
        df.column_indices = indices;
    });
}

#[test]
fn columns_are_found_through_column_indices_not_positions() {
    // covers: DS-FILE-4, LIN-COL-2
    let s = scenarios::full();
    // Fragment 0's base file stores its six user columns in reverse; fragment 2's lineage-only
    // file stores -4 before -3. Both read exactly as written.
    let dir = written(&s);
    store_columns_in_order(
        dir.path(),
        &s,
        (0, 0),
        &[5, 4, 3, 2, 1, 0],
        vec![5, 4, 3, 2, 1, 0],
    );
    store_columns_in_order(dir.path(), &s, (2, 1), &[1, 0], vec![1, 0]);
    let (read, layout) = Dataset::open(dir.path()).unwrap().read_version(1).unwrap();
    assert_eq!(read, s.versions[0]);
    assert_eq!(layout.fragments[2].files[1].column_indices, vec![1, 0]);
    // The same bytes with column_indices 0..n would put -4's values in the row ids.
    let dir = written(&s);
    store_columns_in_order(dir.path(), &s, (2, 1), &[1, 0], vec![0, 1]);
    let (read, _) = Dataset::open(dir.path()).unwrap().read_version(1).unwrap();
    assert_eq!(
        read.fragments[2].lineage_values(-3).unwrap(),
        Some(vec![1; 4])
    );
}

#[test]
fn a_user_column_stored_with_another_type_is_refused() {
    // covers: OVL-LAYOUT-9
    use lance_reference::model::{DataType, Field};
    use lance_reference_io::data_file::{ColumnData, write_data_file};
    let s = scenarios::full();
    let dir = written(&s);
    let model = &s.versions[0].fragments[0].files[0];
    let columns: Vec<ColumnData> = model
        .fields
        .iter()
        .zip(&model.columns)
        .map(|(&id, values)| {
            let mut field = s.versions[0].schema.field(id).unwrap().clone();
            let mut values = values.values();
            if id == 5 {
                // `n` is int32 in the schema: store it as int64.
                field.data_type = DataType::Int64;
                for v in &mut values {
                    if let Value::Int32(x) = v {
                        *v = Value::Int64(i64::from(*x));
                    }
                }
            }
            ColumnData::new(Field { ..field }, values)
        })
        .collect();
    let bytes = write_data_file(&columns).unwrap();
    let (_, layout) = Dataset::open(dir.path()).unwrap().read_version(1).unwrap();
    std::fs::write(dir.path().join(&layout.fragments[0].files[0].path), bytes).unwrap();
    edit_manifest(dir.path(), 1, |m| {
        m.fragments[0].files[0].file_size_bytes = 0
    });
    let err = Dataset::open(dir.path())
        .unwrap()
        .read_version(1)
        .unwrap_err();
    assert_eq!(
        (err.class(), err.code()),
        (ErrorClass::Invalid, "invalid_field"),
        "{err}"
    );
    assert!(err.to_string().contains("fields[5]"), "{err}");
}
