//! The `validate` command: judges a dataset directory on disk, written by anyone, against
//! every requirement its bytes and its version history decide (`spec/validate.md`).
//!
//! Invariant: versions are judged one at a time in ascending order, each alone
//! ([`version`]) and each commit against the version before it ([`history`]); at most two
//! versions' snapshots are held at once, so memory follows the largest two versions, not the
//! history. A version the reader refuses is one finding, with the reader's class and code, and
//! the commits on either side of it are not judged (nothing readable to compare); a refusal
//! that is a limit of the kit (a file it cannot decode) is not a finding, and the version is
//! still judged at the level below it (without its index files, or by its manifest alone),
//! and so are the commits around it, by the rules that level can decide. Exit codes
//! mirror `run`: 0 when nothing is found, 1 on any finding, 2 when validate cannot judge (the
//! directory does not exist, `--version` names no listed version).
//!
//! | module | concept |
//! |---|---|
//! | [`finding`] | a finding, and the codes of the rules only a writer or a commit can break |
//! | [`version`] | each version alone |
//! | [`history`] | each commit against the version before |
//! | [`report`] | human and JSON output |

pub mod finding;
pub mod history;
pub mod report;
pub mod version;

use std::path::{Path, PathBuf};

use clap::Args;
use lance_reference_io::Dataset;
use lance_reference_io::version_names::parse_manifest_name;

use crate::runner::output::Format;
use finding::Finding;
use report::Report;

/// Arguments of `validate`.
#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// The dataset directory (the one holding `_versions/`).
    pub dataset: PathBuf,
    /// Judge only this version (and its commit against the version before it).
    #[arg(long)]
    pub version: Option<u64>,
    /// Output format (`junit` is not offered).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// Why validate cannot judge at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// The path is not a directory.
    #[error("{0}: not a directory")]
    NotADirectory(String),
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
}

/// Runs `validate`; returns the exit code.
pub fn command(args: &ValidateArgs) -> u8 {
    if args.format == Format::Junit {
        eprintln!("lance-conformance validate: {}", SetupError::Format);
        return 2;
    }
    match validate(&args.dataset, args.version) {
        Ok(report) => {
            match args.format {
                Format::Json => print!("{}", report::json(&report)),
                _ => print!("{}", report::human(&report)),
            }
            report.exit_code()
        }
        Err(e) => {
            eprintln!("lance-conformance validate: {e}");
            2
        }
    }
}

/// Judges the dataset at `root` (every attached version, or only `only`).
pub fn validate(root: &Path, only: Option<u64>) -> Result<Report, SetupError> {
    let name = root.display().to_string();
    if !root.is_dir() {
        return Err(SetupError::NotADirectory(name));
    }
    let mut report = Report {
        dataset: name.clone(),
        ..Report::default()
    };
    let dataset = match Dataset::open(root) {
        Ok(d) => d,
        Err(e) => {
            let newest = newest_listed(root);
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
    let mut prev = selected
        .first()
        .and_then(|first| listed.iter().rev().find(|v| *v < first))
        .and_then(|v| version::check(&dataset, *v).0);
    for v in selected {
        let (cur, findings) = version::check(&dataset, v);
        report.versions.push((v, cur.as_ref().map(|c| c.level)));
        report.findings.extend(findings);
        if let (Some(p), Some(c)) = (&prev, &cur) {
            let judged = history::check_commit(p, c);
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
fn newest_listed(root: &Path) -> u64 {
    let Ok(dir) = std::fs::read_dir(root.join("_versions")) else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            parse_manifest_name(&name).ok().flatten()
        })
        .map(|e| e.version)
        .max()
        .unwrap_or(0)
}
