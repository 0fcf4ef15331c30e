//! The `fuzz` subcommand: random histories against a reader, a progress line, a summary, and
//! every distinct disagreement shrunk and written as a `case.toml`.
//!
//! Invariant: the exit code is 0 when no disagreement outside the known list was found, 1
//! when one was, 2 when the fuzzer itself could not run or the kit failed on some trial (each
//! named by seed and trial at the end, after every finding of the run); what is generated
//! depends only on `--seed` (and `--max-ops`, `--damage`), never on `--seconds`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;

use super::{FuzzError, Options, Summary};
use crate::case::RequirementIndex;
use crate::runner::ConformanceReader;
use crate::runner::ReferenceReader;
use crate::runner::process::{ProcessOptions, ProcessReader};

/// Arguments of `fuzz`.
#[derive(Debug, Clone, Args)]
pub struct FuzzArgs {
    /// The testee command (run with `sh -c`); default: the built-in reference reader.
    #[arg(long, value_name = "CMD")]
    pub reader_cmd: Option<String>,
    /// Stop after about this many seconds (checked between cases).
    #[arg(long, value_name = "N")]
    pub seconds: Option<f64>,
    /// Stop after this many cases (default 100 when `--seconds` is not given).
    #[arg(long, value_name = "N")]
    pub cases: Option<u64>,
    /// The seed: case `i` of a seed is always the same.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Damage every other case's newest version with a corruption kind of the corpus: the
    /// reader must refuse it while reading its undamaged twin.
    #[arg(long)]
    pub damage: bool,
    /// The most operations in one history.
    #[arg(long, default_value_t = 12)]
    pub max_ops: usize,
    /// The most candidates judged while shrinking one disagreement.
    #[arg(long, default_value_t = 200)]
    pub shrink_budget: usize,
    /// Where shrunk cases are written, one `<id>/case.toml` each.
    #[arg(long, default_value = "target/fuzz-findings")]
    pub out: PathBuf,
    /// Known disagreements, one `KIND CHECK [DAMAGE]` line each, as the summary prints them
    /// (a comment after ` # `): reported, not shrunk, and they do not fail the run.
    #[arg(long, value_name = "FILE")]
    pub known: Option<PathBuf>,
    /// Seconds one testee request may take before the testee is killed and restarted.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// The requirement index.
    #[arg(long, default_value = "spec/requirements.toml")]
    pub requirements_file: PathBuf,
}

/// Runs `fuzz`; returns the exit code.
pub fn fuzz(args: &FuzzArgs) -> u8 {
    match fuzz_inner(args) {
        Ok(summary) if !summary.kit_faults.is_empty() => 2,
        Ok(summary) => u8::from(summary.new_findings().next().is_some()),
        Err(e) => {
            eprintln!("lance-conformance fuzz: {e}");
            2
        }
    }
}

/// Parses a known-disagreement list: one signature line each, a comment after ` # ` (a `#`
/// inside a check name, as in `v# scan`, has no space before it), `#` lines are comments.
pub fn parse_known(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.split(" # ").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

fn fuzz_inner(args: &FuzzArgs) -> Result<Summary, FuzzError> {
    let index = RequirementIndex::load(&args.requirements_file)?;
    let known = match &args.known {
        Some(p) => parse_known(
            &std::fs::read_to_string(p).map_err(|error| FuzzError::Known {
                path: p.clone(),
                error,
            })?,
        ),
        None => BTreeSet::new(),
    };
    let deadline = match args.seconds {
        Some(s) if s.is_finite() && s > 0.0 => Some(Instant::now() + Duration::from_secs_f64(s)),
        Some(_) => {
            return Err(FuzzError::NotPositive {
                option: "--seconds",
            });
        }
        None => None,
    };
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(FuzzError::NotPositive {
            option: "--timeout",
        });
    }
    let options = Options {
        seed: args.seed,
        cases: args.cases.or(deadline.is_none().then_some(100)),
        deadline,
        max_ops: args.max_ops,
        damage: args.damage,
        shrink_budget: args.shrink_budget,
        out: Some(args.out.clone()),
        known,
        progress_every: 25,
    };
    let mut reference;
    let mut process: Option<ProcessReader> = None;
    let reader: &mut dyn ConformanceReader = match &args.reader_cmd {
        None => {
            reference = ReferenceReader::new();
            &mut reference
        }
        Some(cmd) => process.insert(ProcessReader::new(ProcessOptions {
            command: cmd.clone(),
            timeout: Duration::from_secs_f64(args.timeout),
        })),
    };
    let started = Instant::now();
    let summary = super::run(reader, &index, &options)?;
    let elapsed = started.elapsed().as_secs_f64();
    for f in &summary.findings {
        println!(
            "  [{}] {}: first at case {}, {} case(s); shrunk from {} to {} step(s) in {} attempt(s){}",
            if f.known { "known" } else { "new" },
            f.signature.line(),
            f.index,
            f.occurrences,
            f.steps.0,
            f.steps.1,
            f.attempts,
            f.file
                .as_ref()
                .map(|p| format!(": {}", p.display()))
                .unwrap_or_default()
        );
    }
    for f in &summary.kit_faults {
        println!("  [kit fault] {}", f.fault());
    }
    if let Some(p) = process.as_ref().filter(|p| p.starts > 1) {
        println!(
            "  the testee broke and was restarted {} time(s)",
            p.starts - 1
        );
    }
    eprintln!(
        "fuzz: {:.1} s, {:.2} case(s)/s",
        elapsed,
        summary.cases as f64 / elapsed.max(1e-9)
    );
    eprintln!("fuzz: time: {}", summary.timing.line());
    println!("{}", summary.line(args.seed));
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_lines_keep_masked_numbers() {
        let known = parse_known(
            "# a comment\naccepted-damage v# refuses [clear_flag]  # recorded deviation\n\nwrong-value v# scan\n",
        );
        assert_eq!(
            known.into_iter().collect::<Vec<_>>(),
            [
                "accepted-damage v# refuses [clear_flag]",
                "wrong-value v# scan"
            ]
        );
    }
}
