//! `conformance-cases/SHA256SUMS`: which files a case generates, their checksums, and
//! verifying them.
//!
//! Invariant: a verdict is only ever reported for a corpus whose generated files are byte for
//! byte the ones the checksum file lists, no more and no fewer, so a verdict always refers to
//! the published corpus and never to a hand-edited or truncated copy. A mismatch is a runner
//! error (exit 2), not a verdict on the reader, and no verdict of that run is reported. The
//! runner may judge cases while [`Verification`] hashes the corpus on a second thread, but it
//! returns a report only once that verification has finished clean. The generator writes the
//! file with the same [`sums`] the runner verifies with; this module links neither the scenario
//! engine nor the store, so the judge does not carry the builder.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

use crate::corpus::CaseDir;

/// The generated subdirectories of a case directory: the dataset, the expected results, a
/// negative case's undamaged twin, and the commits of a case's prepared refusals.
pub const GENERATED_DIRS: [&str; 4] = ["dataset", "expected", "undamaged", "refused"];

/// The checksum file at the corpus root.
pub const SUMS_FILE: &str = "SHA256SUMS";

/// A generated file or directory that could not be listed or read.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path}: {error}")]
pub struct ChecksumError {
    /// What was being done: `listing` or `reading`.
    pub what: &'static str,
    /// The path.
    pub path: String,
    /// The error.
    pub error: std::io::Error,
}

type Result<T, E = ChecksumError> = std::result::Result<T, E>;

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ChecksumError + 'a {
    move |error| ChecksumError {
        what,
        path: path.display().to_string(),
        error,
    }
}

/// Every generated file of a case directory: path relative to `base` (with `/`) → bytes.
pub fn generated_files(dir: &Path, base: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for sub in GENERATED_DIRS {
        collect(&dir.join(sub), base, &mut out)?;
    }
    Ok(out)
}

/// Walks the generated files under `dir`, keyed by their path relative to `base` (with `/`);
/// `each` is given the key and the path.
fn walk(
    dir: &Path,
    base: &Path,
    each: &mut dyn FnMut(String, PathBuf) -> Result<()>,
) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    // Whether each entry is a directory, from the listing itself where it says so (a symbolic
    // link is followed, as `Path::is_dir` follows it).
    let mut entries: Vec<(PathBuf, bool)> = std::fs::read_dir(dir)
        .map_err(io("listing", dir))?
        .map(|e| {
            let e = e?;
            let kind = e.file_type()?;
            let path = e.path();
            let is_dir = if kind.is_symlink() {
                path.is_dir()
            } else {
                kind.is_dir()
            };
            Ok((path, is_dir))
        })
        .collect::<std::io::Result<_>>()
        .map_err(io("listing", dir))?;
    entries.sort();
    for (path, is_dir) in entries {
        if is_dir {
            walk(&path, base, each)?;
        } else {
            let rel = path.strip_prefix(base).unwrap_or(&path);
            let key = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            each(key, path)?;
        }
    }
    Ok(())
}

fn collect(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> Result<()> {
    walk(dir, base, &mut |key, path| {
        let bytes = std::fs::read(&path).map_err(io("reading", &path))?;
        out.insert(key, bytes);
        Ok(())
    })
}

/// `SHA256SUMS` text for every generated file of `cases` as they are on disk under `root`:
/// `<hex>  <path>` lines sorted by path (the `sha256sum` format). Each file is hashed as it is
/// read, through one small buffer, so the corpus is never held in memory at once.
pub fn sums(root: &Path, cases: &[CaseDir]) -> Result<String> {
    let dirs: Vec<PathBuf> = cases.iter().map(|c| c.dir.clone()).collect();
    sums_of_dirs(root, &dirs)
}

fn sums_of_dirs(root: &Path, dirs: &[PathBuf]) -> Result<String> {
    let mut paths = BTreeMap::new();
    for dir in dirs {
        for sub in GENERATED_DIRS {
            walk(&dir.join(sub), root, &mut |key, path| {
                paths.insert(key, path);
                Ok(())
            })?;
        }
    }
    let mut text = String::new();
    for (key, path) in &paths {
        let mut hasher = Sha256::new();
        let mut file = std::fs::File::open(path).map_err(io("reading", path))?;
        std::io::copy(&mut file, &mut hasher).map_err(io("reading", path))?;
        for b in hasher.finalize() {
            let _ = write!(text, "{b:02x}");
        }
        text.push_str("  ");
        text.push_str(key);
        text.push('\n');
    }
    Ok(text)
}

/// Why [`verify`] could not compare the corpus with its checksum file: nothing was found wrong
/// or right, and the run reports no verdict (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The checksum file could not be read.
    #[error("{}: {error}", path.display())]
    SumsFile {
        /// The checksum file (`<root>/SHA256SUMS`).
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A generated file or directory could not be listed or read.
    #[error(transparent)]
    Generated(#[from] ChecksumError),
    /// The thread verifying the corpus ended without an answer.
    #[error("checksum verification stopped")]
    Stopped,
}

/// Compares the checksum file under `root` with the files on disk; returns one line per
/// problem (empty when they agree).
pub fn verify(root: &Path, cases: &[CaseDir]) -> Outcome {
    let dirs: Vec<PathBuf> = cases.iter().map(|c| c.dir.clone()).collect();
    verify_dirs(root, &dirs)
}

fn verify_dirs(root: &Path, dirs: &[PathBuf]) -> Outcome {
    let path = root.join(SUMS_FILE);
    let listed = std::fs::read_to_string(&path)
        .map_err(|error| VerifyError::SumsFile { path, error })?;
    let actual = sums_of_dirs(root, dirs)?;
    Ok(differences(&listed, &actual))
}

/// What [`verify`] answers: the problems found (none when the corpus is verified), or why it
/// could not look. It crosses from the verifying thread to the runner's.
pub type Outcome = Result<Vec<String>, VerifyError>;

/// A [`verify`] running on a second thread, so that hashing the corpus overlaps with judging
/// it. Nothing judged meanwhile may be reported before [`Verification::outcome`] says the
/// corpus is verified (see the module docs).
#[derive(Debug)]
pub struct Verification {
    state: State,
}

#[derive(Debug)]
enum State {
    /// Still hashing (or finished, its answer not yet taken).
    Running(Receiver<Outcome>, JoinHandle<()>),
    /// The answer, taken.
    Done(Outcome),
}

impl Verification {
    /// Starts verifying `cases` under `root` on a second thread (in this thread when no thread
    /// can be started).
    pub fn start(root: &Path, cases: &[CaseDir]) -> Verification {
        let root = root.to_path_buf();
        let dirs: Vec<PathBuf> = cases.iter().map(|c| c.dir.clone()).collect();
        let (send, receive) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("sha256sums".into())
            .spawn({
                let (root, dirs) = (root.clone(), dirs.clone());
                move || {
                    // The receiver is gone only when the run is over: nothing to tell.
                    let _ = send.send(verify_dirs(&root, &dirs));
                }
            });
        let state = match spawned {
            Ok(handle) => State::Running(receive, handle),
            Err(_) => State::Done(verify_dirs(&root, &dirs)),
        };
        Verification { state }
    }

    /// Whether the verification has already finished and found the corpus wrong (or could not
    /// look): the run can stop judging. Does not wait.
    pub fn failed(&mut self) -> bool {
        if let State::Running(receive, _) = &self.state {
            match receive.try_recv() {
                Ok(outcome) => self.state = State::Done(outcome),
                Err(TryRecvError::Empty) => return false,
                Err(TryRecvError::Disconnected) => {
                    self.state = State::Done(Err(VerifyError::Stopped));
                }
            }
        }
        !matches!(&self.state, State::Done(Ok(problems)) if problems.is_empty())
    }

    /// Waits for the verification: the problems found (none when the corpus is verified), or
    /// why it could not look.
    pub fn outcome(self) -> Outcome {
        match self.state {
            State::Done(outcome) => outcome,
            State::Running(receive, handle) => {
                let outcome = receive
                    .recv()
                    .unwrap_or(Err(VerifyError::Stopped));
                // The thread has sent its answer; joining only reaps it.
                let _ = handle.join();
                outcome
            }
        }
    }
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
