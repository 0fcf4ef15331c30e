//! The build compiles one major version of `syn`, the proc-macro parser every derive of the
//! workspace (serde, clap, thiserror, prost, arbitrary, zerocopy) goes through.
//!
//! Why a test: a second major costs README command 1 about 90 unit-seconds on two cores
//! (BENCHMARKS.md, "Build time on two cores"), and nothing else would notice it arrive. A
//! `cargo update`, or a dependency's minor release moving its derive to the next `syn`, brings
//! one back silently; this test fails then and says how to find who asked for it, so the
//! lock can be pinned again (`cargo update -p <package> --precise <version>`) or the whole
//! workspace moved to the new major at once.

#![allow(clippy::expect_used)] // test code: fail loudly

use std::collections::BTreeSet;
use std::process::Command;

/// The versions of `syn` in the package list `cargo tree` prints for `args`.
fn syn_versions(tree: &str) -> BTreeSet<String> {
    tree.lines()
        .filter_map(|line| line.strip_prefix("syn v"))
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// The majors among `versions`.
fn majors(versions: &BTreeSet<String>) -> BTreeSet<String> {
    versions
        .iter()
        .map(|version| version.split('.').next().unwrap_or_default().to_owned())
        .collect()
}

/// `cargo tree` of the workspace with `edges`, one package per line, resolved from the
/// checked-in `Cargo.lock` without the network (it compiles nothing).
fn tree(edges: &str) -> String {
    let output = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--workspace",
            "--locked",
            "--offline",
            "--prefix",
            "none",
        ])
        .args(["-e", edges, "-f", "{p}"])
        .output()
        .expect("run cargo tree");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("cargo tree prints UTF-8")
}

/// README command 2 builds the workspace with its dev-dependencies (command 1 is a part of
/// it), without optional features: the `object-store` feature's own tree (tokio's and
/// async-trait's derives) is built in its own CI step and is not asked to share the major.
#[test]
fn the_readme_commands_compile_one_major_of_syn() {
    let versions = syn_versions(&tree("normal,build,dev"));
    assert_eq!(
        majors(&versions).len(),
        1,
        "README commands 1 and 2 compile syn {versions:?}: `cargo tree --workspace -e \
         normal,build,dev -i syn@<major>` names the packages asking for each"
    );
}

#[test]
fn a_second_major_is_seen() {
    let tree = "lance-conformance v0.1.0 (/w)\nsyn v2.0.119\nserde_derive v1.0.229\nsyn v3.0.10\nsyn v2.0.119\n";
    let versions = syn_versions(tree);
    assert_eq!(versions.len(), 2);
    assert_eq!(majors(&versions).len(), 2);
    let one = syn_versions("syn v2.0.1\nsyn v2.0.119 (proc-macro)\n");
    assert_eq!(majors(&one).len(), 1);
}
