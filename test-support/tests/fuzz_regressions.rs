//! Replays the fuzz corpus under a plain `cargo test`: every committed seed
//! (`fuzz/seeds/<target>/`) and every minimized crash (`fuzz/regressions/<target>/`) runs
//! through the same check function as the libFuzzer target (see `src/fuzz_checks/mod.rs`).
//!
//! A regression file is a crash that was fixed in the reference: it stays here so the bug
//! cannot come back. No libFuzzer, no nightly: this is an ordinary test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lance_conformance_test_support::fuzz_checks;

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Files directly in `dir`, sorted by name; none when the directory does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep"))
        .collect();
    files.sort();
    files
}

/// Runs `target`'s check over every file under `fuzz/<kind>/<target>/`; returns the count.
fn replay(kind: &str, target: &str, check: fn(&[u8])) -> usize {
    let files = inputs(&fuzz_dir().join(kind).join(target));
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&bytes));
        assert!(
            outcome.is_ok(),
            "{target}: {} fails its check",
            file.display()
        );
    }
    files.len()
}

#[test]
fn every_fuzz_target_has_a_check_and_seeds() {
    for (target, _) in fuzz_checks::TARGETS {
        let source = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        assert!(source.is_file(), "no fuzz target for check {target}");
        assert!(
            !inputs(&fuzz_dir().join("seeds").join(target)).is_empty(),
            "no committed seeds for {target}"
        );
    }
}

#[test]
fn committed_seeds_pass_their_checks() {
    // covers: OVL-PREC-1, OVL-PREC-2, OVL-PREC-3, OVL-NULL-1, OVL-DEL-1, OVL-TOMB-1, LIN-ENC-1
    for (target, check) in fuzz_checks::TARGETS {
        replay("seeds", target, *check);
    }
}

#[test]
fn fuzz_regressions_stay_fixed() {
    let mut total = 0;
    for (target, check) in fuzz_checks::TARGETS {
        total += replay("regressions", target, *check);
    }
    println!("replayed {total} regression inputs");
}
