//! Differential testing of any reader: random histories, written by the reference, read by the
//! reader under test, judged by the runner, and a disagreement shrunk to a `case.toml`.
//!
//! Invariant: history `i` of seed `S` is always the same case ([`history::History::draw`],
//! [`case::to_case`]); it is written and its expected answers computed by the same code that
//! generates the corpus ([`crate::build::case`]), and judged by the same runner that runs
//! the corpus ([`crate::runner::execute::run_case`]), so verdicts, capabilities and refusal
//! profiles are the runner's, never a second implementation. A time budget only decides when
//! to stop, never what is generated. A trial the kit cannot build or judge is a kit fault
//! ([`KitFaultTrial`]), recorded with its seed and index while the run goes on, so one generator
//! bug never costs a campaign its findings. A shrunk case's description holds the reader's
//! error message, without a testee's traceback and with the scratch directory's machine path
//! replaced by a placeholder ([`judge::Scratch::placeholders`]).
//!
//! | module | concept |
//! |---|---|
//! | [`history`] | a history as seeds, drawn from a seed |
//! | [`model`] | the model a history is resolved against |
//! | [`builder`] | seeds → steps of the case vocabulary |
//! | [`mod@case`] | a history (and its damage) as a [`crate::case::Case`] |
//! | [`mod@judge`] | one case written to a scratch directory and judged |
//! | [`shrink`] | a disagreement made small |
//! | [`timing`] | where a run's time goes |
//! | [`command`] | the `fuzz` subcommand: the loop, progress and summary |

pub mod builder;
pub mod case;
pub mod command;
pub mod history;
pub mod judge;
pub mod model;
pub mod shrink;
pub mod timing;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::build::BuildError;
use crate::case::{Case, CaseError, RequirementIndex};
use crate::runner::kit_fault::KitFault;
use crate::runner::{CheckResult, ConformanceReader, Description, Refusal, Verdict};
use crate::scenario::ScenarioError;
use crate::store::StoreError;
use case::Trial;
use judge::{Scratch, Signature, judge, judge_executed};
use timing::{Timed, Timing};

/// What to fuzz and how long.
#[derive(Debug, Clone)]
pub struct Options {
    /// The seed: trial `i` of a seed is always the same.
    pub seed: u64,
    /// Stop after this many trials.
    pub cases: Option<u64>,
    /// Stop at this instant (checked between trials; it never changes what is generated).
    pub deadline: Option<Instant>,
    /// The most operation seeds in one history.
    pub max_ops: usize,
    /// Damage every other trial's newest version with one corruption kind of the corpus.
    pub damage: bool,
    /// The most candidates judged while shrinking one disagreement.
    pub shrink_budget: usize,
    /// Where shrunk cases are written (`<out>/<id>/case.toml`); none: not written.
    pub out: Option<PathBuf>,
    /// Signatures ([`Signature::line`]) already known: reported, but not new.
    pub known: BTreeSet<String>,
    /// Print a progress line on stderr every this many trials (0: never).
    pub progress_every: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            seed: 0,
            cases: Some(100),
            deadline: None,
            max_ops: 12,
            damage: false,
            shrink_budget: 200,
            out: None,
            known: BTreeSet::new(),
            progress_every: 0,
        }
    }
}

/// One distinct disagreement, shrunk.
#[derive(Debug, Clone)]
pub struct Finding {
    /// What failed.
    pub signature: Signature,
    /// Whether the signature is in the known list.
    pub known: bool,
    /// The first trial that showed it.
    pub index: u64,
    /// How many trials showed it.
    pub occurrences: u64,
    /// The shrunk case, with a title and a description saying what differed.
    pub case: Case,
    /// The failing check of the shrunk case.
    pub check: CheckResult,
    /// Steps of the original and of the shrunk case.
    pub steps: (usize, usize),
    /// Candidates judged while shrinking.
    pub attempts: usize,
    /// Where the case was written.
    pub file: Option<PathBuf>,
}

/// What a fuzz run did.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Trials judged.
    pub cases: u64,
    /// Of them, damaged.
    pub damaged: u64,
    /// Trials skipped: damage that applied to nothing, or that the reference reads.
    pub skipped: u64,
    /// Trials with at least one disagreement (a trial can show several distinct ones).
    pub disagreeing: u64,
    /// Distinct disagreements, in the order found.
    pub findings: Vec<Finding>,
    /// Steps of every judged trial, summed.
    pub steps: u64,
    /// Trials the kit could not build or judge, in the order met.
    pub kit_faults: Vec<KitFaultTrial>,
    /// Where the time went.
    pub timing: Timing,
}

/// A trial the kit could not build or judge: a kit fault (its generator drew what its own store
/// cannot build, say), not a disagreement of the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KitFaultTrial {
    /// The seed.
    pub seed: u64,
    /// The trial.
    pub index: u64,
    /// What went wrong: `could not be built: …` or `could not be judged: …`.
    pub problem: String,
}

impl KitFaultTrial {
    /// The fault, as the runner words it ([`KitFault::Trial`]).
    pub fn fault(&self) -> KitFault {
        KitFault::Trial {
            seed: self.seed,
            index: self.index,
            problem: self.problem.clone(),
        }
    }
}

impl Summary {
    /// Distinct disagreements not in the known list.
    pub fn new_findings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| !f.known)
    }

    /// The closing line.
    pub fn line(&self, seed: u64) -> String {
        let new = self.new_findings().count();
        let faults = if self.kit_faults.is_empty() {
            String::new()
        } else {
            format!(
                "; the kit failed on {} trial(s) (not the reader's failure; exit 2)",
                self.kit_faults.len()
            )
        };
        format!(
            "fuzz: seed {seed}: {} case(s) ({} damaged, {} skipped), {} disagreeing, {} distinct disagreement(s) ({new} new, {} known){faults}",
            self.cases,
            self.damaged,
            self.skipped,
            self.disagreeing,
            self.findings.len(),
            self.findings.len() - new,
        )
    }
}

/// Why a fuzz run could not run.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// The reader did not describe itself.
    #[error("the reader did not start: {0}")]
    Start(String),
    /// The requirement index (`--requirements-file`) does not load.
    #[error(transparent)]
    Requirements(#[from] CaseError),
    /// The known-disagreement list (`--known`) could not be read.
    #[error("{}: {error}", path.display())]
    Known {
        /// The list.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A number option that must be positive is not (`--seconds`, `--timeout`).
    #[error("{option} must be a positive number")]
    NotPositive {
        /// The option, as spelt on the command line.
        option: &'static str,
    },
    /// The scratch directory the trials are written to could not be made
    /// ([`TrialError::Scratch`]).
    #[error(transparent)]
    Scratch(#[from] TrialError),
    /// A shrunk case could not be written.
    #[error(transparent)]
    WriteCase(#[from] WriteCaseError),
    /// A trial drawn with a disagreement has no failing check with its signature (the fuzzer
    /// contradicts itself).
    #[error("{id}: the drawn trial has no check with signature {signature}")]
    NoSuchCheck {
        /// The id of the finding's case.
        id: String,
        /// The signature ([`Signature::line`]).
        signature: String,
    },
}

/// Why a trial could not be built or judged: the kit's fault ([`KitFaultTrial`]), never the
/// reader's.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// A scratch directory could not be made.
    #[error("scratch directory: {0}")]
    Scratch(std::io::Error),
    /// The scenario engine could not run the case's steps (to learn the reference's refusal of
    /// a damaged trial).
    #[error("execute: {0}")]
    Execute(Box<ScenarioError>),
    /// The store could not write the steps' versions or read them back.
    #[error("store: {0}")]
    Store(Box<StoreError>),
    /// The case could not be written as the generator writes a corpus case.
    #[error(transparent)]
    Build(Box<BuildError>),
    /// The `expected/` just written could not be read back.
    #[error(transparent)]
    Expected(Box<KitFault>),
}

impl From<ScenarioError> for TrialError {
    fn from(e: ScenarioError) -> TrialError {
        TrialError::Execute(Box::new(e))
    }
}

impl From<StoreError> for TrialError {
    fn from(e: StoreError) -> TrialError {
        TrialError::Store(Box::new(e))
    }
}

impl From<BuildError> for TrialError {
    fn from(e: BuildError) -> TrialError {
        TrialError::Build(Box::new(e))
    }
}

impl From<KitFault> for TrialError {
    fn from(e: KitFault) -> TrialError {
        TrialError::Expected(Box::new(e))
    }
}

/// Why a case could not be written as a `case.toml` ([`write_case`]).
#[derive(Debug, thiserror::Error)]
pub enum WriteCaseError {
    /// The directory could not be made or the file written.
    #[error("{}: {error}", path.display())]
    File {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The case does not serialize as TOML.
    #[error("{}: {error}", path.display())]
    Toml {
        /// The file it was to be written to.
        path: PathBuf,
        /// Why.
        error: toml::ser::Error,
    },
}

/// Describes the reader.
pub fn describe(reader: &mut dyn ConformanceReader) -> Result<Description, FuzzError> {
    reader.describe().map_err(|r| {
        FuzzError::Start(match r {
            Refusal::Broken(m) | Refusal::Unsupported(m) | Refusal::Skipped(m) => m,
            Refusal::Error(e) => e.message,
        })
    })
}

/// Runs trials `0, 1, ...` of `options.seed` against `reader` until the case count or the
/// deadline, shrinking the first trial of every distinct disagreement.
pub fn run(
    reader: &mut dyn ConformanceReader,
    index: &RequirementIndex,
    options: &Options,
) -> Result<Summary, FuzzError> {
    let description = describe(reader)?;
    let declared = description.capabilities.clone();
    let mut timed = Timed::new(reader);
    let reader = &mut timed;
    let mut scratch = Scratch::new()?;
    let mut summary = Summary::default();
    let mut i = 0u64;
    loop {
        if options.cases.is_some_and(|n| i >= n)
            || options.deadline.is_some_and(|d| Instant::now() >= d)
        {
            break;
        }
        let damaged = options.damage && i % 2 == 1;
        let trial = Trial::draw(options.seed, i, options.max_ops, damaged);
        let id = format!("fuzz-s{}-{i}", options.seed);
        let started = Instant::now();
        let drawn = trial.drawn(&id, index);
        let drawn_in = started.elapsed();
        let (reader_before, judging_from) = (reader.spent, Instant::now());
        let built = drawn.and_then(|drawn| match drawn {
            Some((case, execution)) => {
                judge_executed(reader, &declared, (&case, execution), index, &mut scratch)
                    .map(|judged| Some((case, judged)))
            }
            None => Ok(None),
        });
        let answered = reader.spent - reader_before;
        let built_in = match &built {
            Ok(Some((_, judged))) => judged.built,
            _ => Duration::ZERO,
        };
        summary.timing.building += drawn_in + built_in;
        summary.timing.reader += answered;
        summary.timing.judging += judging_from.elapsed().saturating_sub(answered + built_in);
        let (case, judged) = match built {
            Ok(Some(built)) => built,
            Ok(None) => {
                summary.skipped += 1;
                i += 1;
                continue;
            }
            // The kit's fault, recorded with the trial that shows it; the campaign goes on.
            Err(problem) => {
                let fault = KitFaultTrial {
                    seed: options.seed,
                    index: i,
                    problem: format!("could not be built: {problem}"),
                };
                eprintln!("fuzz: kit fault: {}", fault.fault());
                summary.kit_faults.push(fault);
                i += 1;
                continue;
            }
        };
        // A check the kit could not judge is the kit's fault, not a disagreement.
        if let Some(k) = judged
            .checks
            .iter()
            .find(|c| c.verdict == Verdict::KitFault)
        {
            let fault = KitFaultTrial {
                seed: options.seed,
                index: i,
                problem: format!(
                    "could not be judged: {}: {}",
                    k.name,
                    k.message.as_deref().unwrap_or_default()
                ),
            };
            eprintln!("fuzz: kit fault: {}", fault.fault());
            summary.kit_faults.push(fault);
        }
        summary.cases += 1;
        summary.damaged += u64::from(damaged);
        summary.steps += case.steps.len() as u64;
        if judged.first_failure().is_some() {
            summary.disagreeing += 1;
        }
        // Every distinct disagreement of the trial: counted, or shrunk when it is new.
        let mut seen: Vec<&Signature> = Vec::new();
        for signature in &judged.signatures {
            if seen.contains(&signature) {
                continue;
            }
            seen.push(signature);
            if let Some(f) = summary
                .findings
                .iter_mut()
                .find(|f| f.signature == *signature)
            {
                f.occurrences += 1;
                continue;
            }
            let shrinking_from = Instant::now();
            let finding = shrunk(
                reader,
                &declared,
                index,
                options,
                &description,
                (i, &trial, &case, &judged),
                signature.clone(),
                &mut scratch,
                &mut summary.kit_faults,
            )?;
            summary.timing.shrinking += shrinking_from.elapsed();
            summary.findings.push(finding);
        }
        i += 1;
        if options.progress_every > 0 && i % options.progress_every == 0 {
            eprintln!(
                "fuzz: {i} trial(s), {} judged, {} disagreeing, {} distinct",
                summary.cases,
                summary.disagreeing,
                summary.findings.len()
            );
        }
    }
    Ok(summary)
}

/// Shrinks trial `i` (which failed with `signature`, judged as `drawn`) and writes it as a
/// case.
#[allow(clippy::too_many_arguments)]
fn shrunk(
    reader: &mut dyn ConformanceReader,
    declared: &BTreeSet<String>,
    index: &RequirementIndex,
    options: &Options,
    description: &Description,
    (i, trial, case, drawn): (u64, &Trial, &Case, &judge::Judged),
    signature: Signature,
    scratch: &mut Scratch,
    kit_faults: &mut Vec<KitFaultTrial>,
) -> Result<Finding, FuzzError> {
    // One trial can show several distinct disagreements: each gets a case of its own.
    let mut id = format!("{}-{}", case.id, signature.check_slug());
    id.truncate(80);
    let id = id.trim_end_matches('-').to_string();
    let deadline = options.deadline;
    let mut reproduces = |t: &Trial| match t.drawn(&id, index) {
        // Past the deadline no candidate is judged: the run stops with what it has.
        _ if deadline.is_some_and(|d| Instant::now() >= d) => false,
        Ok(Some((c, run))) => judge_executed(reader, declared, (&c, run), index, scratch)
            .map(|j| j.fails_with(&signature))
            .unwrap_or(false),
        _ => false,
    };
    // A known disagreement is reported as found: shrinking it again would only cost time.
    let known = options.known.contains(&signature.line());
    let budget = if known { 0 } else { options.shrink_budget };
    let result = shrink::shrink(trial.clone(), budget, &mut reproduces);
    // The shrunk trial reproduced when it was kept; judge it once more for its check. Should
    // that fail (the kit's fault), the trial as drawn, which was judged, stands for it.
    let again = result
        .trial
        .case(&id, index)
        .map(|c| c.unwrap_or_else(|| case.clone()))
        .and_then(|c| judge(reader, declared, &c, index, scratch).map(|j| (c, j)));
    let (mut small, judged) = match again {
        Ok(small) => small,
        Err(problem) => {
            kit_faults.push(KitFaultTrial {
                seed: options.seed,
                index: i,
                problem: format!("could not be built once shrunk: {problem}"),
            });
            let mut original = case.clone();
            original.id = id.clone();
            (original, drawn.clone())
        }
    };
    small.requires = judged.requires.clone();
    let again = judged
        .failing_with(&signature)
        .or(judged.first_failure().map(|(c, _)| c));
    let check = match again {
        Some(c) => c.clone(),
        // Not failing when judged again: the drawn trial's check (which has the signature:
        // it was computed from it) stands for it.
        None => {
            let drawn_check =
                drawn
                    .failing_with(&signature)
                    .ok_or_else(|| FuzzError::NoSuchCheck {
                        id: id.clone(),
                        signature: signature.line(),
                    })?;
            CheckResult {
                verdict: Verdict::Fail,
                level: small.level,
                kind: None,
                message: Some("(did not reproduce when judged again)".into()),
                ..drawn_check.clone()
            }
        }
    };
    let lines: Vec<&str> =
        crate::runner::report::message_lines(check.message.as_deref().unwrap_or_default())
            .collect();
    let message = scratch.placeholders(&lines.join("\n"));
    describe_finding(
        &mut small,
        &check,
        &message,
        description,
        (options.seed, i),
        case.steps.len(),
    );
    let file = match &options.out {
        Some(out) => Some(write_case(&small, &out.join(&small.id))?),
        None => None,
    };
    Ok(Finding {
        signature,
        known,
        index: i,
        occurrences: 1,
        steps: (case.steps.len(), small.steps.len()),
        case: small,
        check,
        attempts: result.attempts,
        file,
    })
}

/// Gives a shrunk case its title and a description saying what differed: `message`, the
/// check's message made fit for a case file (no traceback, no machine path).
fn describe_finding(
    case: &mut Case,
    check: &CheckResult,
    message: &str,
    description: &Description,
    (seed, index): (u64, u64),
    original_steps: usize,
) {
    let who = format!(
        "{} {}",
        description.implementation.name, description.implementation.version
    );
    let kind = check.kind.map_or("fail", |k| k.as_str());
    case.title = format!("fuzz: {who}: {kind} at {}", check.name);
    let mut message = message.to_string();
    if message.len() > 4000 {
        let mut cut = 4000;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push_str(" ...");
    }
    case.description = format!(
        "Found by `lance-conformance fuzz --seed {seed}` (trial {index}) and shrunk from {original_steps} to {} step(s).\n\
         {who} disagreed with the reference at check `{}` ({kind}, {}):\n{message}\n",
        case.steps.len(),
        check.name,
        check.level.as_str(),
    );
}

/// Writes `case` as `<dir>/case.toml`.
pub fn write_case(case: &Case, dir: &Path) -> Result<PathBuf, WriteCaseError> {
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |error| WriteCaseError::File { path, error }
    };
    std::fs::create_dir_all(dir).map_err(failed(dir))?;
    let file = dir.join("case.toml");
    let text = toml::to_string(case).map_err(|error| WriteCaseError::Toml {
        path: file.clone(),
        error,
    })?;
    std::fs::write(&file, text).map_err(failed(&file))?;
    Ok(file)
}
