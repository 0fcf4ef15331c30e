//! `conformance-cases/SHA256SUMS`: which files a case generates, their checksums, and
//! verifying them before anything is run.
//!
//! Invariant: a run only starts on a corpus whose generated files are byte for byte the ones
//! the checksum file lists, no more and no fewer, so a verdict always refers to the published
//! corpus and never to a hand-edited or truncated copy. A mismatch is a runner error (exit 2),
//! not a verdict on the reader. The generator writes the file with the same [`sums`] the runner
//! verifies with; this module links neither the scenario engine nor the store, so the judge
//! does not carry the builder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::corpus::CaseDir;

/// The generated subdirectories of a case directory.
/// The generated subdirectories of a case directory: the dataset, the expected results, and a
/// negative case's undamaged twin.
pub const GENERATED_DIRS: [&str; 3] = ["dataset", "expected", "undamaged"];

/// The checksum file at the corpus root.
pub const SUMS_FILE: &str = "SHA256SUMS";

/// Every generated file of a case directory: path relative to `base` (with `/`) → bytes.
pub fn generated_files(dir: &Path, base: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for sub in GENERATED_DIRS {
        collect(&dir.join(sub), base, &mut out)?;
    }
    Ok(out)
}

fn collect(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, base, out)?;
        } else {
            let rel = path.strip_prefix(base).unwrap_or(&path);
            let key = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.insert(
                key,
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
            );
        }
    }
    Ok(())
}

/// `SHA256SUMS` text for every generated file of `cases` as they are on disk under `root`:
/// `<hex>  <path>` lines sorted by path (the `sha256sum` format).
pub fn sums(root: &Path, cases: &[CaseDir]) -> Result<String> {
    let mut all = BTreeMap::new();
    for c in cases {
        all.extend(generated_files(&c.dir, root)?);
    }
    let mut text = String::new();
    for (path, bytes) in &all {
        let digest = Sha256::digest(bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        text.push_str(&format!("{hex}  {path}\n"));
    }
    Ok(text)
}

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
