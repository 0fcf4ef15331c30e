//! Building a case: its steps executed by the scenario engine, its dataset written and read
//! back by the store, and its expected results computed from the read-back versions.
//!
//! Invariant: [`case`] is the one place a case's generated files are produced, and [`write()`]
//! the one place they are written into a case directory, so the generator, `generate
//! --check`, the fuzz loop and the snapshot and traceability tests all see the same bytes and
//! the same read-back versions. The runner never calls it: it judges a reader
//! against the files stored in the corpus.

use std::collections::BTreeMap;
use std::path::Path;

use crate::case::Case;
use crate::corpus::{REFUSED_DIR, UNDAMAGED_DIR, UNDAMAGED_EXPECTED};
use crate::expected::{self, ExpectedError, ExpectedFailure};
use crate::reader;
use crate::scenario::{self, Execution, ScenarioError};
use crate::store::{self, Damaged, ReadBack, StoreError};
use lance_reference::error::CodedError;

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

/// Why a case could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
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
    /// A generated file could not be written.
    #[error("case {id}: writing {path}: {error}")]
    Write {
        /// Case id.
        id: String,
        /// The file or directory.
        path: String,
        /// The error.
        error: std::io::Error,
    },
}

/// Builds `case` ([`case()`]) into the case directory `dir`: the store writes `dataset/` (and a
/// negative case's `undamaged/`), and every other generated file (`expected/`) is written
/// below `dir`. Generated directories left from an earlier build are not cleared.
pub fn write(case: &Case, dir: &Path) -> Result<Built, BuildError> {
    write_executed(case, None, dir)
}

/// [`write()`], with the scenario's run of `case.steps` when the caller already has it
/// (`None`: the steps are run here). The fuzz loop runs a damaged trial's steps once to learn
/// the reference's refusal, and builds from that same run.
pub fn write_executed(
    case: &Case,
    execution: Option<Execution>,
    dir: &Path,
) -> Result<Built, BuildError> {
    let built = self::case_executed(case, execution, Some(&dir.join("dataset")))?;
    let failed = |path: &Path, error| BuildError::Write {
        id: case.id.clone(),
        path: path.display().to_string(),
        error,
    };
    for (rel, bytes) in &built.files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| failed(parent, e))?;
        }
        std::fs::write(&path, bytes).map_err(|e| failed(&path, e))?;
    }
    Ok(built)
}

/// Runs `case`, writes its dataset into `dataset_dir` (when given; a negative case's undamaged
/// twin goes into [`UNDAMAGED_DIR`] beside it) and computes its expected results from the
/// read-back versions.
pub fn case(case: &Case, dataset_dir: Option<&Path>) -> Result<Built, BuildError> {
    case_executed(case, None, dataset_dir)
}

/// [`case()`], from `execution`, the scenario's run of `case.steps`, when given.
pub fn case_executed(
    case: &Case,
    execution: Option<Execution>,
    dataset_dir: Option<&Path>,
) -> Result<Built, BuildError> {
    let id = || case.id.clone();
    let execution = match execution {
        Some(e) => e,
        None => scenario::execute(&case.steps).map_err(|error| BuildError::Scenario {
            id: id(),
            error: Box::new(error),
        })?,
    };
    let options = store::write_options(case, &execution);
    let read =
        store::write_and_read_back_with(dataset_dir, &execution, &options).map_err(|error| {
            BuildError::Store {
                id: id(),
                error: Box::new(error),
            }
        })?;
    let mut files = BTreeMap::new();
    for v in &read.versions {
        let e = expected::compute(case, v).map_err(|error| BuildError::Expected {
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
        store::write_undamaged(&twin, &execution, &options).map_err(|error| BuildError::Store {
            id: id(),
            error: Box::new(error),
        })?;
    }
    if let Some(dir) = dataset_dir.filter(|_| !execution.refused.is_empty()) {
        let refused = dir.with_file_name(REFUSED_DIR);
        store::write_refused(&refused, dir, &execution, &options).map_err(|error| {
            BuildError::Store {
                id: id(),
                error: Box::new(error),
            }
        })?;
    }
    if let Some(twin) = &read.undamaged {
        let e = expected::compute(case, twin).map_err(|error| BuildError::Expected {
            id: id(),
            error: Box::new(error),
        })?;
        files.insert(
            UNDAMAGED_EXPECTED.into(),
            expected::to_json(&e).into_bytes(),
        );
    }
    if let Some(damaged) = &read.corrupted {
        let e = compute_error(case, damaged).map_err(|error| BuildError::Expected {
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
            return Err(BuildError::Expected {
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

/// The expected error of a negative case: what the store's reader made of the damaged
/// version (an error, or a snapshot the scan must then refuse), checked against the declared
/// class (and code, when given).
fn compute_error(case: &Case, damaged: &Damaged) -> Result<ExpectedError, ExpectedFailure> {
    let Some(spec) = &case.expect_error else {
        return Err(ExpectedFailure::Negative(
            "the case declares no expect_error".into(),
        ));
    };
    let refused = |e: &dyn CodedError| (e.class().as_str(), e.code(), e.to_string());
    let (class, code, error) = match &damaged.read {
        Err(e) => refused(&**e),
        Ok(snapshot) => match reader::read(snapshot) {
            Err(e) => refused(&e),
            Ok(_) => {
                return Err(ExpectedFailure::Negative(format!(
                    "version {} reads without error after the corruption",
                    damaged.version
                )));
            }
        },
    };
    if class != spec.class || spec.code.as_deref().is_some_and(|c| c != code) {
        return Err(ExpectedFailure::Negative(format!(
            "declared {}/{}, the reference fails with {class}/{code}: {error}",
            spec.class,
            spec.code.as_deref().unwrap_or("*"),
        )));
    }
    Ok(ExpectedError {
        case: case.id.clone(),
        version: damaged.version,
        class: spec.class.clone(),
        code: spec.code.clone(),
    })
}
