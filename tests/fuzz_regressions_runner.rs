//! Replays the `testee_response` fuzz target's committed seeds and regressions under a plain
//! `cargo test` (the reference's targets are replayed by
//! `reference/tests/fuzz_regressions.rs`; this one needs the runner, which lives here).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fuzz_checks_runner/testee_response.rs"]
mod testee_response;

use std::path::Path;

fn replay(kind: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join("testee_response");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(|| testee_response::check(&bytes));
        assert!(outcome.is_ok(), "{} fails its check", file.display());
    }
    files.len()
}

#[test]
fn testee_response_seeds_and_regressions_pass() {
    assert!(
        replay("seeds") > 0,
        "no committed seeds for testee_response"
    );
    replay("regressions");
}
