//! `spec/error-codes.md` is the error vocabulary every negative case pins and every testee
//! emits: it must match the `error_codes!` declarations, list each code once, and hold every
//! code a case expects, with the class the case expects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use lance_conformance::case::RequirementIndex;
use lance_conformance::{corpus, error_codes};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cases() -> Vec<corpus::CaseDir> {
    let index = RequirementIndex::load(&root().join("spec/requirements.toml")).unwrap();
    corpus::load(&root().join("conformance-cases"), &index).unwrap()
}

#[test]
fn the_table_matches_the_declarations() {
    let cases = cases();
    let on_disk = std::fs::read_to_string(root().join("spec").join(error_codes::FILE)).unwrap();
    assert!(
        on_disk == error_codes::render(&cases),
        "spec/{} is stale: run `cargo run --release -- generate`",
        error_codes::FILE
    );
}

#[test]
fn the_runner_crates_copy_of_the_requirement_column_is_current() {
    // `validate` names requirements from this copy (the runner crate packages without `spec/`).
    let on_disk = std::fs::read_to_string(root().join(error_codes::PINNED_FILE)).unwrap();
    assert!(
        on_disk == error_codes::render_pinned(&cases()),
        "{} is stale: run `cargo run --release -- generate`",
        error_codes::PINNED_FILE
    );
    assert!(on_disk.contains("(\"base_length_mismatch\", &["));
}

#[test]
fn codes_are_unique_and_every_case_code_is_declared() {
    let problems = error_codes::problems(&cases());
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_table_is_not_vacuous() {
    // Every class appears, and the codes the corpus pins are a real subset.
    let codes = error_codes::codes();
    for class in ["malformed", "invalid", "unsupported_feature", "refused"] {
        assert!(
            codes.iter().any(|(_, i)| i.class.as_str() == class),
            "no {class} code"
        );
    }
    assert!(codes.len() > 100, "{} codes", codes.len());
}
