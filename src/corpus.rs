//! The case corpus on disk: `conformance-cases/<area>/<case-id>/case.toml`, and what each case
//! generates (`dataset/`, `expected/`).
//!
//! Invariant: cases are listed in path order, every listed case parsed and validated, its
//! directory name equals its id, and ids are unique across areas. [`build`] is the one place a
//! case's generated files are produced, so the generator, `--check` and the snapshot test all
//! see the same bytes and the same read-back versions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::case::{Case, CaseError, RequirementIndex};
use crate::expected::{self, ExpectedFailure};
use crate::scenario::{self, Execution, ScenarioError};
use crate::store::{self, ReadBack, StoreError};

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
    /// The scenario failed.
    #[error("case {id}: {error}")]
    Scenario {
        /// Case id.
        id: String,
        /// The error.
        error: Box<ScenarioError>,
    },
    /// The store failed.
    #[error("case {id}: {error}")]
    Store {
        /// Case id.
        id: String,
        /// The error.
        error: Box<StoreError>,
    },
    /// Expected results could not be computed.
    #[error("case {id}: {error}")]
    Expected {
        /// Case id.
        id: String,
        /// The error.
        error: Box<ExpectedFailure>,
    },
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

/// Everything one case generates.
#[derive(Debug, Clone)]
pub struct Built {
    /// The scenario run.
    pub execution: Execution,
    /// The versions as read back from the store.
    pub read: ReadBack,
    /// Generated files by path relative to the case directory (`expected/v1.json`, ...),
    /// excluding `dataset/`, which the store writes itself.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// The directory, beside a negative case's `dataset/`, that holds its undamaged twin: the same
/// steps written without the damage.
pub const UNDAMAGED_DIR: &str = "undamaged";

/// The expected results of a negative case's undamaged twin at the damaged version.
pub const UNDAMAGED_EXPECTED: &str = "expected/undamaged.json";

/// Runs `case`, writes its dataset into `dataset_dir` (when given; a negative case's undamaged
/// twin goes into [`UNDAMAGED_DIR`] beside it) and computes its expected results from the
/// read-back versions.
pub fn build(case: &Case, dataset_dir: Option<&Path>) -> Result<Built, CorpusError> {
    let id = || case.id.clone();
    let execution = scenario::execute(&case.steps).map_err(|error| CorpusError::Scenario {
        id: id(),
        error: Box::new(error),
    })?;
    let read = store::write_and_read_back(dataset_dir, &execution).map_err(|error| {
        CorpusError::Store {
            id: id(),
            error: Box::new(error),
        }
    })?;
    let mut files = BTreeMap::new();
    for v in &read.versions {
        let e = expected::compute(case, v).map_err(|error| CorpusError::Expected {
            id: id(),
            error: Box::new(error),
        })?;
        files.insert(
            format!("expected/v{}.json", v.version),
            expected::to_json(&e).into_bytes(),
        );
    }
    if let (Some(dir), true) = (dataset_dir, read.undamaged.is_some()) {
        let twin = dir.with_file_name(UNDAMAGED_DIR);
        store::write_undamaged(&twin, &execution).map_err(|error| CorpusError::Store {
            id: id(),
            error: Box::new(error),
        })?;
    }
    if let Some(twin) = &read.undamaged {
        let e = expected::compute(case, twin).map_err(|error| CorpusError::Expected {
            id: id(),
            error: Box::new(error),
        })?;
        files.insert(
            UNDAMAGED_EXPECTED.into(),
            expected::to_json(&e).into_bytes(),
        );
    }
    if let Some(damaged) = &read.corrupted {
        let e = expected::compute_error(case, damaged).map_err(|error| CorpusError::Expected {
            id: id(),
            error: Box::new(error),
        })?;
        files.insert(
            "expected/error.json".into(),
            expected::to_json(&e).into_bytes(),
        );
    }
    for q in &case.queries {
        // A negative case may name its damaged version: the query has no expected answer
        // there, it is sent to a reader that opened and scanned the damaged version without
        // refusing, which must then refuse it (damage to index files shows only there).
        let damaged = read.corrupted.as_ref().map(|d| d.version);
        let known = |v: &u64| read.versions.iter().any(|s| s.version == *v) || damaged == Some(*v);
        if let Some(v) = q.at.iter().find(|v| !known(v)) {
            return Err(CorpusError::Expected {
                id: id(),
                error: Box::new(ExpectedFailure::Query {
                    name: q.name.clone(),
                    version: *v,
                    problem: "no readable version with that number".into(),
                }),
            });
        }
    }
    Ok(Built {
        execution,
        read,
        files,
    })
}
