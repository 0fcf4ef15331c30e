//! The reference's refusals of the stored datasets of the cases that target the strict rules
//! added for corpus power: each is refused with its rule's code when the reference reads the
//! golden directory itself (not through the runner), and the detached manifest of DS-NAME-3,
//! which must be accepted, reads and joins no version history.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use lance_reference_io::{Dataset, DatasetError};

fn dataset(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("conformance-cases")
        .join(case)
        .join("dataset")
}

/// Opens the case's dataset and reads every listed version, stopping at the first refusal.
fn read_all(case: &str) -> Result<usize, DatasetError> {
    let d = Dataset::open(&dataset(case))?;
    for v in d.versions() {
        d.read_version(v)?;
    }
    Ok(d.versions().len())
}

#[test]
fn each_strict_rule_refuses_its_case_with_its_code() {
    // covers: DS-FILE-5, DS-FRAG-2, DS-NAME-4, DS-PATH-5, DS-PATH-6, IDX-READ-8
    for (case, code) in [
        ("dataset/fewer-column-indices", "invalid_field"),
        ("dataset/max-fragment-id-below-fragment", "invalid_field"),
        ("dataset/detached-name-without-bit-63", "bad_version_name"),
        ("indices/index-file-name-escapes", "path_escape"),
        ("indices/covering-field-outside-fields", "invalid_field"),
        ("indices/covering-fields-not-after-key", "unsupported"),
    ] {
        match read_all(case) {
            Err(e) => assert_eq!(e.code(), code, "{case}: {e}"),
            Ok(n) => panic!("{case}: all {n} versions read"),
        }
    }
}

#[test]
fn a_detached_manifest_is_accepted_and_joins_no_history() {
    // covers: DS-NAME-3
    let case = "dataset/detached-manifest";
    let detached = dataset(case).join("_versions/d9223372036854775810.manifest");
    assert!(detached.is_file(), "the case holds no detached manifest");
    let d = Dataset::open(&dataset(case)).unwrap();
    assert_eq!(d.versions(), vec![1, 2]);
    assert_eq!(read_all(case).unwrap(), 2);
}

#[test]
fn an_index_built_over_no_rows_has_no_files_and_reads() {
    // covers: IDX-FILE-7, IDX-READ-11
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("conformance-cases/indices/empty-index-without-files/dataset");
    assert!(
        !root.join("_indices").exists(),
        "the reference writer wrote files for an index over no rows"
    );
    let dataset = lance_reference_io::Dataset::open(&root).unwrap();
    for version in [2, 3] {
        let (snapshot, layout) = dataset.read_version(version).unwrap();
        let index = snapshot.index("v_idx").unwrap();
        assert!(index.covers_no_fragment(), "v{version}");
        assert!(index.entries.is_empty(), "v{version}");
        assert!(
            layout.indices.iter().all(|il| il.files.is_empty()),
            "v{version}"
        );
    }
}
