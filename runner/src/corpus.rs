//! The case corpus on disk: `conformance-cases/<area>/<case-id>/case.toml`, and what each case
//! generates (`dataset/`, `expected/`).
//!
//! Invariant: cases are listed in path order, every listed case parsed and validated, its
//! directory name equals its id, and ids are unique across areas. A twin (a `case.toml` with
//! `twin_of`, [`crate::case::TwinSpec`]) is listed as the full case it stands for, and its
//! `expected/` is the other case's: [`CaseDir::expected_dir`], never a copy. This module only finds and
//! parses cases: what a case generates is `lance_conformance_generate::build`'s, so the runner, which judges a
//! reader against the stored files, does not depend on the scenario and store code that
//! writes them.

use std::path::{Path, PathBuf};

use crate::case::{Case, CaseError, RequirementIndex, TwinSpec};

/// One case directory.
#[derive(Debug, Clone)]
pub struct CaseDir {
    /// The area (parent directory name): `overlays`, `lineage`, `flags`, ...
    pub area: String,
    /// The case directory.
    pub dir: PathBuf,
    /// The parsed, validated case.
    pub case: Case,
    /// For a twin: the directory of the case whose `expected/` it shares (and whose id its
    /// expected files name).
    pub twin_of: Option<PathBuf>,
}

impl CaseDir {
    /// The directory whose `expected/` holds this case's expected results: its own, or for a
    /// twin the other case's.
    pub fn expected_dir(&self) -> &Path {
        self.twin_of.as_deref().unwrap_or(&self.dir)
    }

    /// The id the case's expected files carry: its own, or for a twin the other case's.
    pub fn expected_id(&self) -> String {
        match &self.twin_of {
            Some(dir) => dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            None => self.case.id.clone(),
        }
    }
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
    let mut twins: Vec<(usize, TwinSpec)> = Vec::new();
    for area_dir in sorted_dirs(root)? {
        for dir in sorted_dirs(&area_dir)? {
            let file = dir.join("case.toml");
            if !file.is_file() {
                continue;
            }
            let shown = file.display().to_string();
            let text = std::fs::read_to_string(&file).map_err(io(&file))?;
            let (case, twin) = match TwinSpec::parse(&text, &shown)? {
                // Resolved below, once the case it names is loaded; a placeholder meanwhile.
                Some(twin) => (placeholder(&twin), Some(twin)),
                None => (Case::parse(&text, &shown)?, None),
            };
            if twin.is_none() {
                case.validate(requirements)?;
            }
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
            if let Some(twin) = twin {
                twins.push((cases.len(), twin));
            }
            cases.push(CaseDir {
                area,
                dir,
                case,
                twin_of: None,
            });
        }
    }
    for (at, twin) in twins {
        let source = cases
            .iter()
            .find(|c| c.case.id == twin.twin_of && c.twin_of.is_none())
            .filter(|c| !c.case.steps.is_empty())
            .ok_or_else(|| {
                CorpusError::Layout(format!(
                    "twin {}: twin_of {:?} names no case that is not a twin",
                    twin.id, twin.twin_of
                ))
            })?;
        let case = twin.resolve(&source.case)?;
        case.validate(requirements)?;
        let source_dir = source.dir.clone();
        cases[at].case = case;
        cases[at].twin_of = Some(source_dir);
    }
    Ok(cases)
}

/// A stand-in for a twin until the case it names is loaded: no steps, so no twin can name it.
fn placeholder(twin: &TwinSpec) -> Case {
    Case {
        id: twin.id.clone(),
        title: String::new(),
        requirements: Vec::new(),
        level: crate::case::Level::Should,
        tags: Vec::new(),
        requires: Vec::new(),
        description: String::new(),
        expect_error: None,
        queries: Vec::new(),
        data_file_version: twin.data_file_version,
        step_data_file_versions: Default::default(),
        writer_from: None,
        steps: Vec::new(),
    }
}

/// The directory, beside a negative case's `dataset/`, that holds its undamaged twin: the same
/// steps written without the damage.
pub const UNDAMAGED_DIR: &str = "undamaged";

/// The directory, beside a case's `dataset/`, that holds the commits its `prepared` refusals
/// stand for: for each, the manifest of the version it would have created (under `_versions/`)
/// and the files it adds (under `data/`), as a caller hands them to a committer. Never a
/// dataset a reader is sent.
pub const REFUSED_DIR: &str = "refused";

/// The expected results of a negative case's undamaged twin at the damaged version.
pub const UNDAMAGED_EXPECTED: &str = "expected/undamaged.json";
