//! The case corpus on disk: `conformance-cases/<area>/<case-id>/case.toml`, and what each case
//! generates (`dataset/`, `expected/`).
//!
//! Invariant: cases are listed in path order, every listed case parsed and validated, its
//! directory name equals its id, and ids are unique across areas. This module only finds and
//! parses cases: what a case generates is [`crate::build`]'s, so the runner, which judges a
//! reader against the stored files, does not depend on the scenario and store code that
//! writes them.

use std::path::{Path, PathBuf};

use crate::case::{Case, CaseError, RequirementIndex};

/// One case directory.
#[derive(Debug, Clone)]
pub struct CaseDir {
    /// The area (parent directory name): `overlays`, `lineage`, `flags`, ...
    pub area: String,
    /// The case directory.
    pub dir: PathBuf,
    /// The parsed, validated case.
    pub case: Case,
}

/// Why a case could not be loaded or built.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// Listing or reading the corpus failed.
    #[error("{path}: {error}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        error: std::io::Error,
    },
    /// A case file is unusable.
    #[error(transparent)]
    Case(#[from] CaseError),
    /// The corpus breaks a layout rule.
    #[error("{0}")]
    Layout(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CorpusError + '_ {
    move |error| CorpusError::Io {
        path: path.display().to_string(),
        error,
    }
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, CorpusError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Loads and validates every case under `root` (see the module docs).
pub fn load(root: &Path, requirements: &RequirementIndex) -> Result<Vec<CaseDir>, CorpusError> {
    let mut cases: Vec<CaseDir> = Vec::new();
    for area_dir in sorted_dirs(root)? {
        for dir in sorted_dirs(&area_dir)? {
            let file = dir.join("case.toml");
            if !file.is_file() {
                continue;
            }
            let case = Case::load(&file)?;
            case.validate(requirements)?;
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name != case.id {
                return Err(CorpusError::Layout(format!(
                    "{}: directory name {name:?} differs from id {:?}",
                    file.display(),
                    case.id
                )));
            }
            if let Some(other) = cases.iter().find(|c| c.case.id == case.id) {
                return Err(CorpusError::Layout(format!(
                    "case id {:?} is used by {} and {}",
                    case.id,
                    other.dir.display(),
                    dir.display()
                )));
            }
            let area = area_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            cases.push(CaseDir { area, dir, case });
        }
    }
    Ok(cases)
}

/// The directory, beside a negative case's `dataset/`, that holds its undamaged twin: the same
/// steps written without the damage.
pub const UNDAMAGED_DIR: &str = "undamaged";

/// The expected results of a negative case's undamaged twin at the damaged version.
pub const UNDAMAGED_EXPECTED: &str = "expected/undamaged.json";
