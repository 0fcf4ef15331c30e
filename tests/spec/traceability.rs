//! Traceability between the spec and the tests: every requirement id in
//! `spec/requirements.toml` is checked by at least one test, and every id a test claims to cover
//! exists. A test claims ids with a comment line `// covers: ID, ID` inside its body.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(serde::Deserialize)]
struct Index {
    requirement: Vec<Requirement>,
}

#[derive(serde::Deserialize)]
struct Requirement {
    id: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn requirement_ids() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("spec/requirements.toml")).unwrap();
    let index: Index = toml::from_str(&text).unwrap();
    index.requirement.into_iter().map(|r| r.id).collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `covers:` claim in the workspace's Rust sources: id -> files claiming it.
fn claims() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    for dir in [
        "reference/src",
        "reference/tests",
        "reference-io/src",
        "reference-io/tests",
        "test-support/src",
        "test-support/tests",
        "src",
        "tests",
        "runner/src",
        "runner/tests",
        "generate/src",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    let mut claims: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(root()).unwrap().display().to_string();
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("// covers:") else {
                continue;
            };
            for id in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                claims
                    .entry(id.to_string())
                    .or_default()
                    .insert(name.clone());
            }
        }
    }
    claims
}

#[test]
fn every_requirement_is_covered_by_a_test() {
    let claims = claims();
    let missing: Vec<String> = requirement_ids()
        .into_iter()
        .filter(|id| !claims.contains_key(id))
        .collect();
    assert!(
        missing.is_empty(),
        "requirements no test covers ({}): {missing:?}",
        missing.len()
    );
}

#[test]
fn every_covered_id_is_a_requirement() {
    let ids = requirement_ids();
    let unknown: Vec<String> = claims()
        .into_iter()
        .filter(|(id, _)| !ids.contains(id))
        .map(|(id, files)| format!("{id} in {files:?}"))
        .collect();
    assert!(
        unknown.is_empty(),
        "tests cite ids the spec does not define: {unknown:?}"
    );
}
