//! Verifying `conformance-cases/SHA256SUMS` before anything is run.
//!
//! Invariant: a run only starts on a corpus whose generated files are byte for byte the ones
//! the checksum file lists, no more and no fewer, so a verdict always refers to the published
//! corpus and never to a hand-edited or truncated copy. A mismatch is a runner error (exit 2),
//! not a verdict on the reader.

use std::collections::BTreeMap;
use std::path::Path;

use crate::corpus::CaseDir;
use crate::generate::{SUMS_FILE, sums};

/// Compares the checksum file under `root` with the files on disk; returns one line per
/// problem (empty when they agree).
pub fn verify(root: &Path, cases: &[CaseDir]) -> Result<Vec<String>, String> {
    let listed = std::fs::read_to_string(root.join(SUMS_FILE))
        .map_err(|e| format!("{}: {e}", root.join(SUMS_FILE).display()))?;
    let actual = sums(root, cases).map_err(|e| format!("{e:#}"))?;
    Ok(differences(&listed, &actual))
}

fn parse(text: &str) -> BTreeMap<&str, &str> {
    text.lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(hash, path)| (path, hash))
        .collect()
}

/// The differences between a listed and an actual `sha256sum`-format text, by path.
pub fn differences(listed: &str, actual: &str) -> Vec<String> {
    let (want, have) = (parse(listed), parse(actual));
    let mut out = Vec::new();
    for (path, hash) in &want {
        match have.get(path) {
            None => out.push(format!("missing: {path}")),
            Some(h) if h != hash => out.push(format!("content differs: {path}")),
            Some(_) => {}
        }
    }
    for path in have.keys().filter(|p| !want.contains_key(*p)) {
        out.push(format!("not listed in {SUMS_FILE}: {path}"));
    }
    let malformed = listed
        .lines()
        .filter(|l| !l.is_empty() && l.split_once("  ").is_none())
        .count();
    if malformed > 0 {
        out.push(format!("{malformed} malformed line(s) in {SUMS_FILE}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_difference_is_named() {
        let listed = "aa  x/a\nbb  x/b\ncc  x/c\n";
        let actual = "aa  x/a\nbX  x/b\ndd  x/d\n";
        assert_eq!(
            differences(listed, actual),
            [
                "content differs: x/b",
                "missing: x/c",
                "not listed in SHA256SUMS: x/d"
            ]
        );
        assert!(differences(listed, listed).is_empty());
    }
}
