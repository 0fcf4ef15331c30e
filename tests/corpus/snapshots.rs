//! One insta snapshot per conformance case: every manifest version rendered readably, a
//! negative case's undamaged twin and the version a prepared refusal stands for included
//! (`snapshots/<case-id>.snap`). A change to the reference, the scenario engine or a case that
//! alters any manifest fact shows up here for review (`cargo insta test`).
//!
//! The directory holds exactly one reviewed `.snap` per case: a snapshot whose case was renamed
//! or removed, or a pending `.snap.new`, fails here, so plain `cargo test` is the whole check
//! and CI needs no `cargo insta` install.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;

use lance_conformance::case::RequirementIndex;
use lance_conformance::{build, corpus, render};

#[test]
fn every_case_renders_as_its_reviewed_snapshot() {
    // covers: OVL-PREC-1
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let index = RequirementIndex::load(&root.join("spec/requirements.toml")).unwrap();
    let cases = corpus::load(&root.join("conformance-cases"), &index).unwrap();
    assert!(!cases.is_empty(), "no cases found");
    // A twin reads as the case it shares `expected/` with (the generator checks it byte for
    // byte), so its snapshot would repeat that case's: twins have none.
    let rendered: Vec<_> = cases.iter().filter(|c| c.twin_of.is_none()).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(root.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: BTreeSet<String> = rendered
        .iter()
        .map(|c| format!("{}.snap", c.case.id))
        .collect();
    let stray: Vec<&String> = on_disk.difference(&expected).collect();
    assert!(
        stray.is_empty(),
        "snapshots/ holds files no case renders (a renamed or removed case, or a pending \
         .snap.new to review with `cargo insta review`): {stray:?}"
    );
    for c in rendered {
        let built = build::case(&c.case, None).unwrap_or_else(|e| panic!("{e}"));
        let mut text = render::case(&c.case, &built.execution.records, &built.read);
        if let Some(twin) = &built.read.undamaged {
            text.push_str(&format!(
                "\n=== version {} (undamaged twin, in undamaged/) ===\n",
                twin.version
            ));
            render::version(&mut text, twin);
        }
        for refused in &built.execution.refused {
            text.push_str(&format!(
                "\n=== version {} (refused: a caller's merge a committer must refuse, in refused/) ===\n",
                refused.version
            ));
            render::version(&mut text, refused);
        }
        insta::with_settings!({
            snapshot_path => root.join("snapshots"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => format!("{}/{}", c.area, c.case.id),
        }, {
            insta::assert_snapshot!(c.case.id.as_str(), text);
        });
    }
}
