//! The `validate` command: judges a dataset directory on disk, written by anyone, against
//! every requirement its bytes and its version history decide (`spec/validate.md`).
//!
//! Invariant: versions are judged one at a time in ascending order, each alone
//! ([`version`]) and each commit against the version before it ([`history`]). Memory is
//! bounded by fragments, not by the table: at most two versions are held, at their manifest
//! level (no columns; a manifest does hold its inline lineage, 8 bytes per row and sequence);
//! a version's fragments are read and checked on every core, one fragment's columns per
//! worker, then dropped ([`VersionCheck`]); a commit reads back only the fragments its rules
//! look into, a few at a time ([`history`], [`carried`]); an index check holds the index's
//! key column and entries ([`lance_reference_io::version_check`]). A version the reader refuses is one finding, with the reader's class and code, and
//! the commits on either side of it are not judged (nothing readable to compare); a refusal
//! that is a limit of the kit (a file it cannot decode) is not a finding, and the version is
//! still judged at the level below it (without its index files, or by its manifest alone),
//! and so are the commits around it, by the rules that level can decide. Exit codes
//! mirror `run`: 0 when nothing is found, 1 on any finding, 2 when validate cannot judge (no
//! table at the location, local or remote; `--version` names no listed version).
//!
//! | module | concept |
//! |---|---|
//! | [`finding`] | a finding, and the codes of the rules only a writer or a commit can break |
//! | [`version`] | each version alone |
//! | [`history`] | each commit against the version before |
//! | [`carried`] | the rows a commit may carry, followed by row id without holding them |
//! | [`report`] | human and JSON output |
//! | [`location`] | the table argument: a path, `file://`, or an object-store URI |
//! | `pinned` | (generated) the requirement ids the corpus pins to each error code |
//! | `object_storage` | (feature `object-store`) `s3://`, `gs://`, `az://` through `object_store` |

internal_api! { mod carried; }
pub mod finding;
internal_api! { mod history; }
pub mod location;
#[cfg(feature = "object-store")]
pub mod object_storage;
mod pinned;
pub mod report;
internal_api! { mod version; }

use std::path::Path;
use std::sync::Arc;

use lance_reference_io::version_check::VersionCheck;
use lance_reference_io::version_names::{VERSIONS_DIR, parse_manifest_name};
use lance_reference_io::{Dataset, ReadOptions, Storage, StorageError};

use finding::Finding;
pub use history::CommitKind;
use location::{Location, LocationError};
use report::Report;
pub use version::Level;

/// Why validate cannot judge at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// The path is not a directory.
    #[error("{0}: not a directory")]
    NotADirectory(String),
    /// Nothing is at the table's location: no directory, or no object under the prefix. A
    /// missing table is not a finding about a table; validate cannot judge (exit 2), wherever
    /// the table was to be.
    #[error("{0}: no table there (nothing at this location)")]
    NoTable(String),
    /// `--version` names a version the directory does not list.
    #[error("{dataset}: version {version} is not listed (versions: {listed})")]
    NoSuchVersion {
        /// The directory.
        dataset: String,
        /// The version asked for.
        version: u64,
        /// The versions listed.
        listed: String,
    },
    /// `--format junit`.
    #[error("--format junit is not offered by validate (human or json)")]
    Format,
    /// The table argument names no place validate can read.
    #[error(transparent)]
    Location(#[from] LocationError),
}

/// Judges the dataset directory at `root` (every attached version, or only `only`).
///
/// # Example
///
/// A corpus case's dataset as the reference wrote it conforms; the same case with a base
/// column one value short (a negative case's damaged version) is a finding naming the
/// version, the code and the requirement it breaks:
///
/// ```
/// # use std::path::Path;
/// use lance_conformance_runner::validate::validate;
///
/// let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance-cases/overlays");
/// let clean = validate(&cases.join("base-null-first-field/dataset"), None)?;
/// assert!(clean.conforming(), "{clean:?}");
///
/// let damaged = validate(&cases.join("base-column-short/dataset"), None)?;
/// let finding = &damaged.findings[0];
/// assert_eq!(finding.code, "base_length_mismatch");
/// assert!(finding.requirements.iter().any(|r| r == "OVL-LAYOUT-7"));
/// # Ok::<(), lance_conformance_runner::validate::SetupError>(())
/// ```
pub fn validate(root: &Path, only: Option<u64>) -> Result<Report, SetupError> {
    validate_at(&Location::Local(root.to_path_buf()), only)
}

/// Judges the table at `location` (every attached version, or only `only`).
pub fn validate_at(location: &Location, only: Option<u64>) -> Result<Report, SetupError> {
    validate_at_with(location, only, &mut |_| {})
}

/// [`validate_at`], telling `progress` of each version before it is judged.
pub fn validate_at_with(
    location: &Location,
    only: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, SetupError> {
    if let Some(root) = location.local_path() {
        if root.exists() && !root.is_dir() {
            return Err(SetupError::NotADirectory(root.display().to_string()));
        }
    }
    validate_in_with(location.storage()?, only, progress)
}

/// Where a validation is: the version about to be judged, and its place among the versions
/// selected (`position` counts from 1). What is judged does not depend on who listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The version about to be judged.
    pub version: u64,
    /// Its place among the selected versions, from 1.
    pub position: usize,
    /// How many versions are selected.
    pub total: usize,
}

/// Judges the table `storage` holds (every attached version, or only `only`).
pub fn validate_in(storage: Arc<dyn Storage>, only: Option<u64>) -> Result<Report, SetupError> {
    validate_in_with(storage, only, &mut |_| {})
}

/// [`validate_in`], telling `progress` of each version before it is judged.
pub fn validate_in_with(
    storage: Arc<dyn Storage>,
    only: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, SetupError> {
    let name = storage.describe();
    if storage.list("") == Err(StorageError::NotFound) {
        return Err(SetupError::NoTable(name));
    }
    let mut report = Report {
        dataset: name.clone(),
        ..Report::default()
    };
    let dataset = match Dataset::open_in(storage.clone(), ReadOptions::default()) {
        Ok(d) => d,
        Err(e) => {
            let newest = newest_listed(storage.as_ref());
            report
                .findings
                .push(Finding::read_refusal(newest, "_versions", &e));
            separate_kit_limits(&mut report);
            return Ok(report);
        }
    };
    let listed = dataset.versions();
    let selected: Vec<u64> = match only {
        None => listed.clone(),
        Some(v) if listed.contains(&v) => vec![v],
        Some(version) => {
            return Err(SetupError::NoSuchVersion {
                dataset: name,
                version,
                listed: listed
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    };
    // The version before the first one judged, read only to judge that commit.
    let checker = VersionCheck::new(&dataset);
    let mut prev = selected
        .first()
        .and_then(|first| listed.iter().rev().find(|v| *v < first))
        .and_then(|v| version::check(&checker, *v).0);
    let total = selected.len();
    for (k, v) in selected.into_iter().enumerate() {
        progress(Progress {
            version: v,
            position: k + 1,
            total,
        });
        let (cur, findings) = version::check(&checker, v);
        report.versions.push((v, cur.as_ref().map(|c| c.level)));
        report.findings.extend(findings);
        if let (Some(p), Some(c)) = (&prev, &cur) {
            let judged = history::check_commit(p, c, &checker);
            report.commits.push((v, judged.kinds.into_iter().collect()));
            report.findings.extend(judged.findings);
        }
        prev = cur;
    }
    separate_kit_limits(&mut report);
    Ok(report)
}

/// Moves the refusals that are limits of the kit out of the findings: they say the version
/// could not be judged, not that it breaks a requirement.
fn separate_kit_limits(report: &mut Report) {
    let (unjudged, findings) = std::mem::take(&mut report.findings)
        .into_iter()
        .partition(Finding::is_kit_limit);
    report.findings = findings;
    report.unjudged = unjudged;
}

/// The highest version any manifest name in `_versions/` denotes (0 when none parses): where a
/// listing refusal is reported, as the newest version is what a reader fails to open.
fn newest_listed(storage: &dyn Storage) -> u64 {
    let Ok(names) = storage.list(VERSIONS_DIR) else {
        return 0;
    };
    names
        .iter()
        .filter_map(|name| parse_manifest_name(name).ok().flatten())
        .map(|e| e.version)
        .max()
        .unwrap_or(0)
}
