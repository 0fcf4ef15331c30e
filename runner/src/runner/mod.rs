//! The runner: checks a reader, in process or in another process, against every case of the
//! corpus, and reports verdicts.
//!
//! Invariant: a run reports verdicts only for a verified corpus (`SHA256SUMS`, hashed while the
//! cases are judged and checked before any report is returned, [`crate::checksums`]), sends a
//! reader only what it declared it can do ([`capability`]), compares every answer with the
//! generated `expected/` files ([`compare`], [`execute`]), and turns verdicts into a run result
//! by fixed rules ([`report`], [`known_failures`]); what the kit itself cannot judge (a corpus
//! or runner problem) is a kit fault ([`kit_fault`]), never the reader's failure. The same [`run_suite`] drives the built-in
//! reference ([`mod@reference`]), any Rust reader implementing [`ConformanceReader`], and a testee
//! process speaking the JSON-lines protocol ([`process`], specified in `spec/conformance.md`).
//!
//! | module | concept |
//! |---|---|
//! | [`conformance_reader`] | the trait a reader under test implements |
//! | [`conformance_writer`] | the trait a writer under test implements |
//! | [`arrow_reader`] | a reader answering with Arrow record batches, converted once |
//! | [`protocol`] | the JSON-lines messages |
//! | [`capability`] | capability words and what each check needs |
//! | [`needs`] | what a version needs of a reader, from its content (refusal profiles) |
//! | [`mod@reference`] | the built-in reference reader |
//! | [`process`] | a reader in another process (timeouts, restarts, process groups) |
//! | [`serve`] | serving a reader over the protocol (`lance-conformance testee`) |
//! | [`unchanging`] | a stored corpus's files, what was decoded from them remembered during a run |
//! | [`check`] | the names of the checks, one spelling each |
//! | [`execute`] | one case's checks |
//! | [`writer`] | one case's checks of a writer: its steps replayed, each version judged |
//! | [`write_step`] | the wire form of a step (`write`, `prepare`) |
//! | [`compare`] | answer vs `expected/` |
//! | [`filter`] | selecting cases |
//! | [`known_failures`] | known-failure files |
//! | [`report`] | verdicts, outcomes, counts |
//! | [`kit_fault`] | what stops the kit from judging a check (a corpus or runner problem) |
//! | [`output`] | human, JSON and JUnit renderings |

pub mod arrow_reader;
pub mod capability;
pub mod check;
internal_api! { mod compare; }
pub mod conformance_reader;
pub mod conformance_writer;
internal_api! { mod execute; }
pub mod filter;
pub mod kit_fault;
pub mod known_failures;
internal_api! { mod needs; }
pub mod output;
internal_api! { mod prepared_commit; }
internal_api! { mod process; }
pub mod protocol;
internal_api! { mod reference; }
pub mod report;
internal_api! { mod serve; }
internal_api! { mod unchanging; }
internal_api! { mod write_step; }
internal_api! { mod writer; }

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, mpsc};

pub use check::Check;
// Why the corpus could not be verified against `SHA256SUMS` ([`RunnerError::Verify`]): public here
// because `RunnerError` is, while the checksums module itself is internal.
pub use crate::checksums::{ChecksumError, VerifyError};
pub use conformance_reader::{Answer, ConformanceReader, Description, Refusal};
pub use conformance_writer::ConformanceWriter;
pub use filter::Filters;
pub use known_failures::KnownFailures;
pub use reference::ReferenceReader;
pub use report::{CaseResult, CheckResult, FailureKind, Outcome, Report, Verdict};
pub use writer::run_writer_suite;

use crate::case::RequirementIndex;
use crate::checksums;
use crate::corpus::{self, CaseDir};
use kit_fault::KitFault;

/// A progress callback: (index, count, case id), called before each case (see
/// [`Options::progress`]).
pub type Progress = Box<dyn FnMut(usize, usize, &str)>;

/// What to run and how.
#[derive(Default)]
pub struct Options {
    /// The corpus root (`conformance-cases`).
    pub corpus: PathBuf,
    /// `spec/requirements.toml` (default: `<corpus>/../spec/requirements.toml`).
    pub requirements: Option<PathBuf>,
    /// Which cases.
    pub filters: Filters,
    /// The known-failure file, if any.
    pub known_failures: Option<KnownFailures>,
    /// Called before each case with (index, count, case id): a progress indicator. With
    /// [`run_suite_shared`], called for each case in case order once its verdict is in.
    pub progress: Option<Progress>,
    /// Extra case results to include (e.g. the reference's worked-example walk).
    pub extra: Vec<CaseResult>,
    /// What to call the run in reports (the reader and its set-up).
    pub label: Option<String>,
}

impl Options {
    /// Options for the corpus at `corpus`, everything else default.
    pub fn new(corpus: impl Into<PathBuf>) -> Options {
        Options {
            corpus: corpus.into(),
            ..Options::default()
        }
    }
}

/// Why a run could not judge the reader (exit code 2): the corpus, the options or the
/// reader's start are unusable.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The corpus does not load.
    #[error(transparent)]
    Corpus(#[from] corpus::CorpusError),
    /// The requirement index does not load.
    #[error(transparent)]
    Requirements(#[from] crate::case::CaseError),
    /// `SHA256SUMS` does not match the files on disk.
    #[error("the corpus does not match SHA256SUMS (regenerate it, or restore the published files):\n  {}", .0.join("\n  "))]
    Checksums(Vec<String>),
    /// `SHA256SUMS` could not be compared with the files on disk.
    #[error(transparent)]
    Verify(#[from] checksums::VerifyError),
    /// Some other problem with the inputs.
    #[error("{0}")]
    Input(String),
    /// The reader could not describe itself (the testee did not start).
    #[error("the reader did not start: {0}")]
    Start(String),
}

/// Loads the requirement index (`--requirements-file`, by default
/// `<corpus>/../spec/requirements.toml`).
pub fn load_requirements(options: &Options) -> Result<RequirementIndex, RunnerError> {
    let requirements = options.requirements.clone().unwrap_or_else(|| {
        options
            .corpus
            .join("..")
            .join("spec")
            .join("requirements.toml")
    });
    Ok(RequirementIndex::load(&requirements)?)
}

/// Loads the corpus and verifies its checksums.
pub fn load_corpus(options: &Options) -> Result<Vec<CaseDir>, RunnerError> {
    let index = load_requirements(options)?;
    let all = corpus::load(&options.corpus, &index)?;
    let problems = checksums::verify(&options.corpus, &all)?;
    if !problems.is_empty() {
        return Err(RunnerError::Checksums(problems));
    }
    Ok(all)
}

/// Runs the selected cases against `reader` and reports. No report is returned unless the
/// corpus is verified ([`checksums::Verification`]).
///
/// # Example
///
/// The built-in reference reader against one area of the corpus, printed as `run` prints it;
/// a filter that selects no case is an error of the inputs, not an empty pass:
///
/// ```
/// # use std::path::Path;
/// use lance_conformance_runner::runner::output::{Detail, human};
/// use lance_conformance_runner::runner::{Options, ReferenceReader, RunnerError, run_suite};
///
/// let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance-cases");
/// let mut options = Options::new(&corpus);
/// options.filters.areas = vec!["flags".into()];
/// options.label = Some("the reference, flags only".into());
/// let report = run_suite(&mut ReferenceReader::new(), options)?;
/// println!("{}", human(&report, Detail::Quiet));
/// assert!(report.passed() && report.summary.passed > 0);
/// assert_eq!(report.exit_code(), 0);
///
/// let mut typo = Options::new(&corpus);
/// typo.filters.areas = vec!["flag".into()];
/// let refused = run_suite(&mut ReferenceReader::new(), typo);
/// assert!(matches!(refused, Err(RunnerError::Input(_))));
/// # Ok::<(), RunnerError>(())
/// ```
pub fn run_suite(
    reader: &mut dyn ConformanceReader,
    options: Options,
) -> Result<Report, RunnerError> {
    let description = reader.describe();
    run_cases(options, description, |c, expected, index, declared| {
        judge_reader(reader, c, expected, index, declared)
    })
}

/// [`run_suite`] with the selected cases shared out among `readers`, each judging on a thread
/// of its own (the calling thread is the first reader's), and the verdicts reported in corpus
/// order: the report is the one [`run_suite`] with any one of them would return, whichever
/// reader judged which case. Each reader must answer as the others do (the same reader, one
/// instance per thread); the first one's `describe` is the run's. Fewer than two readers, or
/// no second thread, judge on the calling thread alone.
///
/// # Example
///
/// The built-in reference reader on every core, one reader each:
///
/// ```
/// # use std::path::Path;
/// use lance_conformance_runner::runner::{Options, ReferenceReader, RunnerError, run_suite_shared};
///
/// let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance-cases");
/// let mut options = Options::new(&corpus);
/// options.filters.areas = vec!["flags".into()];
/// let mut readers = [ReferenceReader::new(), ReferenceReader::new()];
/// let report = run_suite_shared(&mut readers, options)?;
/// assert!(report.passed() && report.summary.passed > 0);
/// # Ok::<(), RunnerError>(())
/// ```
pub fn run_suite_shared<R: ConformanceReader + Send>(
    readers: &mut [R],
    options: Options,
) -> Result<Report, RunnerError> {
    let Some(first) = readers.first_mut() else {
        return Err(RunnerError::Input("no reader to run".into()));
    };
    let description = first.describe();
    let judges: Vec<_> = readers
        .iter_mut()
        .map(|reader| {
            move |c: &CaseDir,
                  expected: &execute::Expected,
                  index: &RequirementIndex,
                  declared: &BTreeSet<String>| {
                judge_reader(reader, c, expected, index, declared)
            }
        })
        .collect();
    run_cases_shared(options, description, judges)
}

/// One case judged against `reader`: its checks and the refusal profile they found.
fn judge_reader(
    reader: &mut dyn ConformanceReader,
    c: &CaseDir,
    expected: &execute::Expected,
    index: &RequirementIndex,
    declared: &BTreeSet<String>,
) -> CaseResult {
    let (class_level, _) = execute::class_level(&c.case, index);
    let (checks, profile) = execute::run_case(reader, declared, c, expected, class_level);
    let mut result = CaseResult::of_case(c, checks);
    result.refusal_profile = profile
        .into_iter()
        .map(|p| capability::word(p).to_string())
        .collect();
    result
}

/// What judges one case: given the case, what its `expected/` holds, the requirement index and
/// the capabilities the reader declared, it returns the case's result.
pub(crate) trait Judge:
    FnMut(&CaseDir, &execute::Expected, &RequirementIndex, &BTreeSet<String>) -> CaseResult
{
}

impl<F> Judge for F where
    F: FnMut(&CaseDir, &execute::Expected, &RequirementIndex, &BTreeSet<String>) -> CaseResult
{
}

/// What a reader or writer run shares: the verified corpus, the filters (one matching no case
/// is an error), the handshake's `description`, the progress callback, and the report; `judge`
/// runs one selected case with its `expected/` and the capabilities declared.
pub(crate) fn run_cases(
    options: Options,
    description: Answer<Description>,
    mut judge: impl Judge,
) -> Result<Report, RunnerError> {
    run_verified(options, |options, all, index, verification| {
        judge_selected(options, all, index, description, &mut judge, verification)
    })
}

/// [`run_cases`] with the selected cases shared out among `judges`, one thread each (the
/// calling thread runs the first), verdicts in case order ([`judge_shared`]).
fn run_cases_shared<J>(
    options: Options,
    description: Answer<Description>,
    judges: Vec<J>,
) -> Result<Report, RunnerError>
where
    J: FnMut(&CaseDir, &execute::Expected, &RequirementIndex, &BTreeSet<String>) -> CaseResult
        + Send,
{
    run_verified(options, |options, all, index, verification| {
        judge_shared(options, all, index, description, judges, verification)
    })
}

/// The frame of every run: loads the requirement index and the corpus, verifies `SHA256SUMS`
/// while `judge` judges the selected cases, and makes the report only when the corpus is
/// verified.
fn run_verified(
    mut options: Options,
    judge: impl FnOnce(
        &mut Options,
        &[CaseDir],
        &RequirementIndex,
        &mut checksums::Verification,
    ) -> Result<(Description, Vec<CaseResult>), RunnerError>,
) -> Result<Report, RunnerError> {
    let index = load_requirements(&options)?;
    let all = corpus::load(&options.corpus, &index)?;
    // Hashing the corpus overlaps with judging it; the verdicts are kept back until the corpus
    // is verified, and dropped if it is not.
    let mut verification = checksums::Verification::start(&options.corpus, &all);
    let judged = judge(&mut options, &all, &index, &mut verification);
    let problems = verification.outcome()?;
    if !problems.is_empty() {
        return Err(RunnerError::Checksums(problems));
    }
    let (description, cases) = judged?;
    let ids: BTreeSet<String> = all.iter().map(|c| c.case.id.clone()).collect();
    let mut report = Report::new(
        description.implementation,
        description.capabilities.into_iter().collect(),
        cases,
        options.known_failures.as_ref(),
        &ids,
    );
    report.label = options.label.clone();
    Ok(report)
}

/// The cases the filters select, in corpus order, and the reader's description; a filter
/// matching no case, or a reader that could not describe itself, is an error of the run.
fn selection<'a>(
    options: &Options,
    all: &'a [CaseDir],
    description: Answer<Description>,
) -> Result<(Vec<&'a CaseDir>, Description), RunnerError> {
    let unmatched = options.filters.unmatched(all);
    if !unmatched.is_empty() {
        return Err(RunnerError::Input(format!(
            "filters matching no case: {}",
            unmatched.join(", ")
        )));
    }
    let selected: Vec<&CaseDir> = all.iter().filter(|c| options.filters.selects(c)).collect();
    let description = description.map_err(|r| {
        RunnerError::Start(match r {
            Refusal::Broken(m) | Refusal::Unsupported(m) | Refusal::Skipped(m) => m,
            Refusal::Error(e) => e.message,
        })
    })?;
    Ok((selected, description))
}

/// One case's result: `judge`'s verdicts on it, or the kit fault of an `expected/` the kit
/// could not load (the run goes on).
fn judged(
    judge: &mut impl Judge,
    c: &CaseDir,
    expected: Result<&execute::Expected, &KitFault>,
    index: &RequirementIndex,
    declared: &BTreeSet<String>,
) -> CaseResult {
    match expected {
        Ok(expected) => judge(c, expected, index, declared),
        Err(fault) => CaseResult::of_case(
            c,
            vec![CheckResult::kit_fault(Check::Expected, c.case.level, fault)],
        ),
    }
}

/// Judges the cases the filters select (the options' extra results first), stopping early
/// when `verification` has already failed (the caller then reports that, not these).
fn judge_selected(
    options: &mut Options,
    all: &[CaseDir],
    index: &RequirementIndex,
    description: Answer<Description>,
    judge: &mut impl Judge,
    verification: &mut checksums::Verification,
) -> Result<(Description, Vec<CaseResult>), RunnerError> {
    let (selected, description) = selection(options, all, description)?;
    let mut cases = std::mem::take(&mut options.extra);
    let progress = &mut options.progress;
    std::thread::scope(|scope| {
        let mut expected = ExpectedAhead::start(scope, &selected);
        for (i, c) in selected.iter().enumerate() {
            if verification.failed() {
                break;
            }
            if let Some(progress) = progress.as_mut() {
                progress(i, selected.len(), &c.case.id);
            }
            let loaded = expected.next(c);
            let result = judged(judge, c, loaded.as_ref(), index, &description.capabilities);
            cases.push(result);
        }
    });
    Ok((description, cases))
}

/// [`judge_selected`] with the cases shared out: each judge takes the next case not yet taken,
/// gets its `expected/` ([`SharedExpected`]) and judges it, the first judge on the
/// calling thread and each other one on a thread of its own (one that cannot be started is
/// left out, its share taken by the others). Every verdict is put in its case's place, so the
/// results are in case order whichever judge judged which case; the progress callback is told
/// of each case, in case order, as the cases before it are judged. Between its cases the
/// calling thread asks whether `verification` has failed, and then no judge takes another case.
fn judge_shared<J>(
    options: &mut Options,
    all: &[CaseDir],
    index: &RequirementIndex,
    description: Answer<Description>,
    judges: Vec<J>,
    verification: &mut checksums::Verification,
) -> Result<(Description, Vec<CaseResult>), RunnerError>
where
    J: FnMut(&CaseDir, &execute::Expected, &RequirementIndex, &BTreeSet<String>) -> CaseResult
        + Send,
{
    let (selected, description) = selection(options, all, description)?;
    let mut cases = std::mem::take(&mut options.extra);
    let mut judges = judges.into_iter();
    let Some(mut own) = judges.next() else {
        return Err(RunnerError::Input("no reader to run".into()));
    };
    let count = selected.len();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // The next case not yet taken, unless the run is stopping.
    let take = || {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let i = next.fetch_add(1, Ordering::Relaxed);
        (i < count).then_some(i)
    };
    let declared = &description.capabilities;
    let shared = SharedExpected::new(&selected);
    let mut places: Vec<Option<CaseResult>> = (0..count).map(|_| None).collect();
    let mut told = 0;
    let progress = &mut options.progress;
    let mut tell = |places: &[Option<CaseResult>], told: &mut usize| {
        while places.get(*told).is_some_and(Option::is_some) {
            if let Some(progress) = progress.as_mut() {
                progress(*told, count, &selected[*told].case.id);
            }
            *told += 1;
        }
    };
    std::thread::scope(|scope| {
        let (send, receive) = mpsc::channel::<(usize, CaseResult)>();
        for mut judge in judges {
            let (send, take, selected, shared) = (send.clone(), &take, &selected, &shared);
            // A thread that does not start leaves its share to the others.
            let _ = std::thread::Builder::new()
                .name("judge".into())
                .spawn_scoped(scope, move || {
                    while let Some(i) = take() {
                        let c = selected[i];
                        let result = shared.with(c.expected_dir(), |expected| {
                            judged(&mut judge, c, expected, index, declared)
                        });
                        // The receiver is gone only when the run is over.
                        if send.send((i, result)).is_err() {
                            break;
                        }
                    }
                });
        }
        drop(send);
        loop {
            if verification.failed() {
                stop.store(true, Ordering::Relaxed);
                break;
            }
            let Some(i) = take() else { break };
            let c = selected[i];
            places[i] = Some(shared.with(c.expected_dir(), |expected| {
                judged(&mut own, c, expected, index, declared)
            }));
            for (i, result) in receive.try_iter() {
                places[i] = Some(result);
            }
            tell(&places, &mut told);
        }
        // The other judges finish the case each has taken (and, unless stopping, the rest).
        for (i, result) in receive.iter() {
            places[i] = Some(result);
            tell(&places, &mut told);
        }
    });
    cases.extend(places.into_iter().flatten());
    Ok((description, cases))
}

/// The selected cases' `expected/` for judges sharing the cases out: each directory loaded
/// once ([`execute::load_expected`]), by the first judge that asks for it, for every selected
/// case that reads it (a twin reads the other case's), and let go when the last of them has
/// asked. Each case gets exactly what [`execute::load_expected`] answers for its directory.
struct SharedExpected<'a> {
    /// By directory: its load, once made, and how many selected cases have yet to ask for it.
    loads: Mutex<HashMap<&'a Path, (Arc<Loaded>, usize)>>,
}

/// One directory's `expected/`, loaded when first asked for.
type Loaded = OnceLock<Result<execute::Expected, KitFault>>;

impl<'a> SharedExpected<'a> {
    fn new(selected: &[&'a CaseDir]) -> SharedExpected<'a> {
        let mut loads: HashMap<&'a Path, (Arc<Loaded>, usize)> = HashMap::new();
        for c in selected {
            loads.entry(c.expected_dir()).or_default().1 += 1;
        }
        SharedExpected {
            loads: Mutex::new(loads),
        }
    }

    /// `use_it` given the `expected/` of the directory `dir`, loaded here if no judge has
    /// loaded it yet.
    fn with<T>(
        &self,
        dir: &'a Path,
        use_it: impl FnOnce(Result<&execute::Expected, &KitFault>) -> T,
    ) -> T {
        let load = {
            let mut loads = self.loads.lock().unwrap_or_else(PoisonError::into_inner);
            match loads.get_mut(dir) {
                Some((load, waiting)) => {
                    let load = Arc::clone(load);
                    *waiting = waiting.saturating_sub(1);
                    if *waiting == 0 {
                        loads.remove(dir);
                    }
                    load
                }
                None => Arc::default(),
            }
        };
        use_it(load.get_or_init(|| execute::load_expected(dir)).as_ref())
    }
}

/// The selected cases' `expected/` ([`execute::load_expected`]), loaded on a second thread one
/// case ahead of the judging (so reading and parsing them overlaps with judging, and at most
/// two cases' results are held at once), and handed over in case order. Each case gets exactly
/// what [`execute::load_expected`] answers for it, loaded in this thread when no second thread
/// can be started.
enum ExpectedAhead {
    /// Loaded by the second thread, in case order.
    Loader(mpsc::Receiver<Result<execute::Expected, KitFault>>),
    /// Loaded here, when asked.
    Inline,
}

impl ExpectedAhead {
    fn start<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        selected: &[&'scope CaseDir],
    ) -> ExpectedAhead {
        // A rendezvous: the next case's results are handed over only when they are asked for.
        let (send, receive) = mpsc::sync_channel(0);
        let dirs: Vec<&'scope Path> = selected.iter().map(|c| c.expected_dir()).collect();
        let spawned = std::thread::Builder::new()
            .name("expected".into())
            .spawn_scoped(scope, move || {
                for dir in dirs {
                    // The receiver is gone once the judging stopped early: nothing to load.
                    if send.send(execute::load_expected(dir)).is_err() {
                        break;
                    }
                }
            });
        match spawned {
            Ok(_) => ExpectedAhead::Loader(receive),
            Err(_) => ExpectedAhead::Inline,
        }
    }

    /// The `expected/` of `case`, the next selected case.
    fn next(&mut self, case: &CaseDir) -> Result<execute::Expected, KitFault> {
        match self {
            ExpectedAhead::Loader(receive) => receive.recv().unwrap_or_else(|_| {
                Err(KitFault::ExpectedLost {
                    path: case.dir.clone(),
                })
            }),
            ExpectedAhead::Inline => execute::load_expected(case.expected_dir()),
        }
    }
}
