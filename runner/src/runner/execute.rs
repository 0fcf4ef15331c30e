//! Running one case against a reader: the checks it consists of, in order, and their
//! verdicts.
//!
//! Invariant: every check compares the reader's answer with the case's generated `expected/`
//! files (never with another run of the reference), and is sent only when the reader declares
//! what it needs ([`super::capability`]). Which versions a reader must read and which it must
//! refuse follows from each version's content ([`super::needs`]): a version that needs a data
//! capability the reader does not declare must be refused (its refusal profile), every other
//! version must be read. A readable version is checked in this order: `open`, full `scan`, a
//! `scan` projecting the columns in reverse order (two or more columns), `lineage` of every
//! fragment, `exclusion`, then each query declared at that version. A negative case checks
//! its earlier versions in the same way wherever the reference still reads them in the damaged
//! directory (so a reader that refuses everything cannot pass it), then the undamaged twin of
//! the damaged version (`undamaged/`), then the damaged version: `open`, then a full `scan` if
//! `open` accepted it. Refusing it is the case's MUST, and it counts only when the same reader
//! read the twin correctly (otherwise the refusal is inconclusive); the refusal's class and
//! code are checks of their own, at the levels the spec gives them. Once a reader breaks
//! ([`Refusal::Broken`]) or the kit cannot judge a check (a corpus or runner problem, recorded
//! as a [`KitFault`], never as the reader's failure) the rest of the case is not run.
//!
//! Each check is one function, named by the check it records ([`Check`]): `open`, `scan`,
//! `lineage`, `exclusion`, `query` for a readable version (run in order by `version`); `twin`,
//! `read_damaged` or `refused`, `read_as_twin`, `refusal_class`, `refusal_code` for a damaged
//! one (run in order by `negative`); `refuse_for_feature` for the refusal profile.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::arrow_reader::CheckedScan;
use super::capability::{self, ERROR_CODES, EXCLUSION, LINEAGE_PLACEMENT, SCALAR_QUERY};
use super::check::Check;
use super::compare;
use super::conformance_reader::{ConformanceReader, Refusal};
use super::kit_fault::KitFault;
use super::needs;
use super::protocol::{
    Literal, Predicate, QueryAnswer, QueryRequest, ReadError, ScanRequest, ScanResult, VersionRef,
};
use super::reference::{manifest_schema, read_checked};
use super::report::{CheckResult, FailureKind, Verdict};
use crate::case::{
    Capability, Cell, ContentCorruption, Corruption, FileBytesCorruption, Level, PredicateSpec, QuerySpec, RequirementIndex, Step,
};
use crate::corpus::{CaseDir, UNDAMAGED_DIR, UNDAMAGED_EXPECTED};
use crate::expected::tagged::{Tagged, tag, tag_scalar};
use crate::expected::{self, ExpectedError, ExpectedVersion, QueryKind};
use lance_reference::model::Snapshot;

/// What a case's `expected/` directory holds.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Every readable version, oldest first.
    pub versions: Vec<ExpectedVersion>,
    /// The damaged version's required error (negative cases).
    pub error: Option<ExpectedError>,
    /// What the damaged version's undamaged twin reads (negative cases).
    pub undamaged: Option<ExpectedVersion>,
}

/// Reads `expected/v<N>.json` (in version order), `expected/error.json` and
/// `expected/undamaged.json`; a file that cannot be read or parsed is a kit fault.
pub fn load_expected(case_dir: &Path) -> Result<Expected, KitFault> {
    let dir = case_dir.join("expected");
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| KitFault::ExpectedUnreadable { path, source }
    };
    let malformed = |path: &Path| {
        let path = path.to_path_buf();
        move |e: serde_json::Error| KitFault::ExpectedMalformed {
            path,
            message: e.to_string(),
        }
    };
    let read = |p: &Path| std::fs::read_to_string(p).map_err(unreadable(p));
    let mut numbered: Vec<(u64, PathBuf)> = Vec::new();
    let mut error = None;
    let entries = std::fs::read_dir(&dir).map_err(unreadable(&dir))?;
    for entry in entries {
        let path = entry.map_err(unreadable(&dir))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == "error.json" {
            let parsed = expected::parse_error(&read(&path)?).map_err(malformed(&path))?;
            error = Some(parsed);
        } else if let Some(n) = name
            .strip_prefix('v')
            .and_then(|r| r.strip_suffix(".json"))
            .and_then(|n| n.parse().ok())
        {
            numbered.push((n, path));
        }
    }
    numbered.sort();
    let mut versions = Vec::new();
    for (_, path) in numbered {
        versions.push(expected::parse_version(&read(&path)?).map_err(malformed(&path))?);
    }
    let twin = case_dir.join(UNDAMAGED_EXPECTED);
    let undamaged = if twin.exists() {
        Some(expected::parse_version(&read(&twin)?).map_err(malformed(&twin))?)
    } else {
        None
    };
    if error.is_some() && undamaged.is_none() {
        return Err(KitFault::TwinMissing { path: twin });
    }
    Ok(Expected {
        versions,
        error,
        undamaged,
    })
}

/// The level a negative case's refusal class is judged at, and the requirement that gives
/// it: MUST when a MUST requirement of the case that is not a clarification names the class
/// ("refuses as malformed"); otherwise the source documents only say "refuse" and the class is
/// SHOULD. Never above the case's own level.
pub fn class_level(case: &crate::case::Case, index: &RequirementIndex) -> (Level, Option<String>) {
    let Some(spec) = &case.expect_error else {
        return (Level::Should, None);
    };
    let phrase = match spec.class.as_str() {
        "malformed" => "as malformed",
        "invalid" => "as invalid",
        _ => "as an unsupported feature",
    };
    let named = case.requirements.iter().find(|r| {
        index.levels.get(*r).is_some_and(|l| l == "MUST")
            && !index.clarification.get(*r).copied().unwrap_or(true)
            && index.bodies.get(*r).is_some_and(|b| b.contains(phrase))
    });
    match named {
        Some(r) => (case.level, Some(r.clone())),
        None => (Level::Should, None),
    }
}

/// The weaker of two levels.
fn weaker(a: Level, b: Level) -> Level {
    a.max(b)
}

/// Collects a case's checks; stops sending requests once the reader broke or the kit faulted.
struct Checks<'a> {
    reader: &'a mut dyn ConformanceReader,
    declared: &'a BTreeSet<String>,
    level: Level,
    out: Vec<CheckResult>,
    /// The reader broke, or the kit could not judge a check: nothing more is sent.
    broken: bool,
}

impl Checks<'_> {
    fn add(
        &mut self,
        name: Check,
        verdict: Verdict,
        level: Level,
        kind: Option<FailureKind>,
        message: Option<String>,
    ) {
        self.out
            .push(CheckResult::new(name, verdict, level, kind, message));
    }

    /// A check at the case's level.
    fn push(
        &mut self,
        name: Check,
        verdict: Verdict,
        kind: Option<FailureKind>,
        message: Option<String>,
    ) {
        let level = self.level;
        self.add(name, verdict, level, kind, message);
    }

    /// Records a check the kit could not judge; the rest of the case is not run (what it
    /// would judge rests on the same corpus or runner problem).
    fn kit_fault(&mut self, name: Check, fault: &KitFault) {
        self.broken = true;
        self.out
            .push(CheckResult::kit_fault(name, self.level, fault));
    }

    /// Records a refusal of a readable version as a check verdict.
    fn refused_readable(&mut self, name: Check, refusal: Refusal, level: Level) {
        match refusal {
            Refusal::Error(e) => self.add(
                name,
                Verdict::Fail,
                level,
                Some(FailureKind::RefusedReadable),
                Some(refused_readable(&e)),
            ),
            other => self.not_an_answer(name, other, level),
        }
    }

    /// Records a refusal that is not a data error (unsupported, skipped, broken).
    fn not_an_answer(&mut self, name: Check, refusal: Refusal, level: Level) {
        match refusal {
            Refusal::Error(e) => self.add(name, Verdict::Fail, level, None, Some(shown(&e))),
            Refusal::Unsupported(r) => self.add(name, Verdict::Unsupported, level, None, Some(r)),
            Refusal::Skipped(r) => self.add(name, Verdict::Skip, level, None, Some(r)),
            Refusal::Broken(r) => {
                self.broken = true;
                self.add(
                    name,
                    Verdict::Error,
                    level,
                    Some(FailureKind::Crash),
                    Some(r),
                );
            }
        }
    }

    /// Whether the capabilities are declared; records `unsupported` when not.
    fn can(&mut self, name: &Check, needs: &[&str]) -> bool {
        let missing = capability::missing(needs, self.declared);
        if missing.is_empty() {
            return true;
        }
        self.push(
            name.clone(),
            Verdict::Unsupported,
            None,
            Some(format!("needs {}", missing.join(", "))),
        );
        false
    }

    /// `open`, then a full `scan` if `open` accepted: the scan, or the first refusal.
    fn open_and_scan(&mut self, at: &VersionRef) -> Result<ScanResult, Refusal> {
        self.reader.open(at)?;
        self.reader.scan(&ScanRequest {
            at: at.clone(),
            columns: None,
        })
    }
}

/// A refusal in one line: `class/code: message`.
pub(super) fn shown(e: &ReadError) -> String {
    format!(
        "{}/{}: {}",
        e.class,
        e.code.as_deref().unwrap_or("-"),
        e.message
    )
}

fn refused_readable(e: &ReadError) -> String {
    format!("refused a readable version: {}", shown(e))
}

/// How the undamaged twin went.
enum Twin {
    /// Read correctly: a refusal of the damaged version is about the damage.
    Read,
    /// Needs data capabilities the reader does not declare, and was refused, as it must be.
    RefusedForFeature(Vec<Capability>),
    /// Not read correctly (refused, read wrongly, crashed, not answered): why.
    NotRead(String),
}

/// Runs every check of `case` (with its generated `expected`) against `reader`; the class of
/// a refusal is judged at `class_level`. Returns the checks and the data capabilities the
/// reader lacks that some version needed (the versions judged by the refusal profile).
pub fn run_case(
    reader: &mut dyn ConformanceReader,
    declared: &BTreeSet<String>,
    case: &CaseDir,
    expected: &Expected,
    class_level: Level,
) -> (Vec<CheckResult>, BTreeSet<Capability>) {
    let mut checks = Checks {
        reader,
        declared,
        level: case.case.level,
        out: Vec::new(),
        broken: false,
    };
    let mut profile = BTreeSet::new();
    let dataset = absolute(&case.dir.join("dataset"));
    for v in &expected.versions {
        if checks.broken {
            return (checks.out, profile);
        }
        // A negative case's damage can make earlier versions unreadable too (mixed manifest
        // names): those are checked only where the reference still reads them.
        let readable =
            expected.error.is_none() || read_checked(Path::new(&dataset), v.version).is_ok();
        if !readable {
            continue;
        }
        let at = VersionRef {
            dataset: dataset.clone(),
            version: v.version,
        };
        match missing(&mut checks, &at, false) {
            Some(lacking) if lacking.is_empty() => version(&mut checks, &dataset, case, v),
            Some(lacking) => {
                refuse_for_feature(&mut checks, &at, false, &lacking);
                profile.extend(lacking);
            }
            None => {}
        }
    }
    if let (Some(error), Some(twin)) = (&expected.error, &expected.undamaged) {
        if !checks.broken {
            negative(
                &mut checks,
                case,
                &dataset,
                error,
                twin,
                class_level,
                &mut profile,
            );
        }
    }
    (checks.out, profile)
}

/// The data capabilities version `at` (of the undamaged twin when `twin`) needs that the
/// reader does not declare; `None` (and a kit fault) when the runner cannot tell.
fn missing(checks: &mut Checks, at: &VersionRef, twin: bool) -> Option<Vec<Capability>> {
    match needs::of_version(Path::new(&at.dataset), at.version) {
        Ok(n) => Some(needs::missing(&n, checks.declared)),
        Err(e) => {
            checks.kit_fault(
                Check::Needs {
                    version: at.version,
                    twin,
                },
                &KitFault::Needs {
                    dataset: PathBuf::from(&at.dataset),
                    version: at.version,
                    message: e.to_string(),
                },
            );
            None
        }
    }
}

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// The refusal profile of one version: the reader does not declare `lacking`, which the
/// version needs, so it must refuse it (MUST where the spec makes refusing a rule, else
/// SHOULD), preferably as an unsupported feature (SHOULD). Returns whether it refused.
fn refuse_for_feature(
    checks: &mut Checks,
    at: &VersionRef,
    twin: bool,
    lacking: &[Capability],
) -> bool {
    let words = needs::words(lacking);
    let rules: Vec<&str> = lacking
        .iter()
        .filter_map(|c| needs::refusal_rule(*c))
        .collect();
    let level = if rules.is_empty() {
        Level::Should
    } else {
        checks.level
    };
    let name = Check::RefusesForFeature {
        version: at.version,
        twin,
        needs: words.clone(),
    };
    let refusal = match checks.open_and_scan(at) {
        Ok(_) => {
            let rule = if rules.is_empty() {
                String::new()
            } else {
                format!(" [{}]", rules.join(", "))
            };
            checks.add(
                name,
                Verdict::Fail,
                level,
                Some(FailureKind::ReadUnsupported),
                Some(format!(
                    "opened and scanned a version that needs {words}, which the reader does not declare; it must refuse it{rule}"
                )),
            );
            return false;
        }
        Err(r) => r,
    };
    let Refusal::Error(got) = refusal else {
        checks.not_an_answer(name, refusal, level);
        return false;
    };
    checks.add(
        name,
        Verdict::Pass,
        level,
        None,
        Some(format!("refused: {}", shown(&got))),
    );
    let class_name = Check::RefusalClass {
        version: at.version,
        twin,
        class: "unsupported_feature".into(),
    };
    if got.class == "unsupported_feature" {
        checks.add(class_name, Verdict::Pass, Level::Should, None, None);
    } else {
        checks.add(
            class_name,
            Verdict::Fail,
            Level::Should,
            Some(FailureKind::WrongClass),
            Some(format!(
                "a version needing {words} is refused as unsupported_feature; got {}",
                shown(&got)
            )),
        );
    }
    true
}

/// The undamaged twin: read and compared with `expected/undamaged.json`, or, when it needs a
/// capability the reader lacks, refused by the refusal profile.
fn twin(
    checks: &mut Checks,
    case: &CaseDir,
    expected: &ExpectedVersion,
    profile: &mut BTreeSet<Capability>,
) -> Twin {
    let n = expected.version;
    let at = VersionRef {
        dataset: absolute(&case.dir.join(UNDAMAGED_DIR)),
        version: n,
    };
    let lacking = match missing(checks, &at, true) {
        Some(l) => l,
        None => return Twin::NotRead("could not be judged".into()),
    };
    if !lacking.is_empty() {
        profile.extend(lacking.iter().copied());
        return if refuse_for_feature(checks, &at, true, &lacking) {
            Twin::RefusedForFeature(lacking)
        } else {
            Twin::NotRead(format!(
                "needs {}, which the reader does not declare, and was not refused",
                needs::words(&lacking)
            ))
        };
    }
    let name = Check::Scan {
        version: n,
        twin: true,
    };
    let all: Vec<usize> = (0..expected.columns.len()).collect();
    let level = checks.level;
    match checks.open_and_scan(&at) {
        Ok(got) => match compare::scan(&expected.columns, &expected.rows, &all, &got) {
            Ok(()) => {
                checks.push(name, Verdict::Pass, None, None);
                Twin::Read
            }
            Err(m) => {
                checks.push(
                    name,
                    Verdict::Fail,
                    Some(FailureKind::WrongValue),
                    Some(m.to_string()),
                );
                Twin::NotRead(format!("was read wrongly ({m})"))
            }
        },
        Err(Refusal::Error(e)) => {
            let why = format!("was refused too ({})", shown(&e));
            checks.refused_readable(name, Refusal::Error(e), level);
            Twin::NotRead(why)
        }
        Err(other) => {
            let why = match &other {
                Refusal::Broken(m) => format!("crashed the reader ({m})"),
                Refusal::Unsupported(m) => format!("was not answered ({m})"),
                Refusal::Skipped(m) => format!("was skipped ({m})"),
                Refusal::Error(e) => shown(e),
            };
            checks.not_an_answer(name, other, level);
            Twin::NotRead(why)
        }
    }
}

/// The checks of a negative case's damaged version, after its undamaged twin's: `v<n>
/// refuses` (and, where the case lets a reader read it, `v<n> read as its twin`), then the
/// refusal's class and code.
fn negative(
    checks: &mut Checks,
    case: &CaseDir,
    dataset: &str,
    error: &ExpectedError,
    undamaged: &ExpectedVersion,
    class_level: Level,
    profile: &mut BTreeSet<Capability>,
) {
    let n = error.version;
    let twin = twin(checks, case, undamaged, profile);
    if checks.broken {
        return;
    }
    let at = VersionRef {
        dataset: dataset.to_string(),
        version: n,
    };
    // Damage to index files surfaces only in queries for a reader that reads them lazily: a
    // refusal by one of the damaged version's declared queries counts as the refusal.
    let read = match checks.open_and_scan(&at) {
        Ok(scanned) => match damaged_queries(checks, dataset, case, n) {
            Err(refusal) => Err(refusal),
            Ok(answers) => Ok((scanned, answers)),
        },
        Err(r) => Err(r),
    };
    let got = match read {
        Ok((scanned, answers)) => {
            return read_damaged(checks, n, case, undamaged, &twin, &scanned, &answers);
        }
        Err(Refusal::Error(got)) => got,
        Err(other) => {
            let level = checks.level;
            checks.not_an_answer(Check::Refuses { version: n }, other, level);
            return;
        }
    };
    let Some(lacking) = refused(checks, n, &twin, &got) else {
        return;
    };
    refusal_class(checks, n, error, class_level, lacking.is_some(), &got);
    if let (Some(code), None) = (&error.code, &lacking) {
        refusal_code(checks, n, code, &got);
    }
}

/// `v<n> refuses` when the reader read the damaged version: a pass only for a reader
/// implementing the feature the case names (`unless_implemented`) that reads it as its twin;
/// where the case lets a reader read it (`may_read`), a failure at the case's level and `v<n>
/// read as its twin` at MUST; else accepted damage.
fn read_damaged(
    checks: &mut Checks,
    n: u64,
    case: &CaseDir,
    undamaged: &ExpectedVersion,
    twin: &Twin,
    scanned: &ScanResult,
    answers: &[(String, QueryAnswer)],
) {
    let name = Check::Refuses { version: n };
    let spec = case.case.expect_error.as_ref();
    let implemented = spec.and_then(|e| e.unless_implemented.as_deref());
    let may_read = spec.is_some_and(|e| e.may_read);
    let ignorable = ignorable_index_damage(checks.declared, case, n);
    let all: Vec<usize> = (0..undamaged.columns.len()).collect();
    match (implemented, twin) {
        (Some(feature), Twin::Read) => {
            match compare::scan(&undamaged.columns, &undamaged.rows, &all, scanned) {
                Ok(()) => checks.push(
                    name,
                    Verdict::Pass,
                    None,
                    Some(format!(
                        "read it as its undamaged twin reads, as a reader implementing {feature} may"
                    )),
                ),
                Err(m) => checks.push(
                    name,
                    Verdict::Fail,
                    Some(FailureKind::WrongValue),
                    Some(format!(
                        "read it (a reader implementing {feature} may), but not as its undamaged twin reads: {m}"
                    )),
                ),
            }
        }
        (None, Twin::Read) if ignorable.is_some() => {
            // Damage confined to an index the reader does not declare it uses (§3): ignoring
            // the index is allowed, so the refusal is not judged, and what the read returns is
            // judged at MUST.
            let (word, index) = ignorable.unwrap_or_default();
            checks.push(
                name,
                Verdict::Unsupported,
                None,
                Some(format!(
                    "needs {word}: the damage is to index {index:?}, which a reader without {word} may ignore; read the damaged version"
                )),
            );
            read_as_twin(checks, n, undamaged, scanned, answers);
        }
        (None, Twin::Read) if may_read => {
            // Refusing is recommended (the case's level); reading is allowed, and what the
            // read returns is judged at MUST.
            checks.push(
                name,
                Verdict::Fail,
                Some(FailureKind::AcceptedDamage),
                Some("read the damaged version; refusing it is recommended".into()),
            );
            read_as_twin(checks, n, undamaged, scanned, answers);
        }
        _ => checks.push(
            name,
            Verdict::Fail,
            Some(FailureKind::AcceptedDamage),
            Some(if !answers.is_empty() {
                "opened, scanned and queried the damaged version without an error".into()
            } else {
                "opened and scanned the damaged version without an error".into()
            }),
        ),
    }
}

/// `v<n> read as its twin` (MUST): a damaged version a reader may read, read as its undamaged
/// twin reads, rows and query answers.
fn read_as_twin(
    checks: &mut Checks,
    n: u64,
    undamaged: &ExpectedVersion,
    scanned: &ScanResult,
    answers: &[(String, QueryAnswer)],
) {
    let name = Check::ReadAsTwin { version: n };
    let all: Vec<usize> = (0..undamaged.columns.len()).collect();
    let read = compare::scan(&undamaged.columns, &undamaged.rows, &all, scanned)
        .and_then(|()| answered_as_twin(undamaged, answers));
    match read {
        Ok(()) => checks.add(
            name,
            Verdict::Pass,
            Level::Must,
            None,
            Some("read it as its undamaged twin reads".into()),
        ),
        Err(m) => checks.add(
            name,
            Verdict::Fail,
            Level::Must,
            Some(FailureKind::WrongValue),
            Some(format!(
                "read it (a reader may), but not as its undamaged twin reads: {m}"
            )),
        ),
    }
}

/// The index word and name when the damage of `case` (version `n`) is confined to indices
/// whose kind the reader does not declare (their files or their coverage, §3), which it may
/// ignore; `None` otherwise.
/// The kind is the undamaged twin's (the damaged manifest points at a damaged copy).
fn ignorable_index_damage(
    declared: &BTreeSet<String>,
    case: &CaseDir,
    n: u64,
) -> Option<(&'static str, String)> {
    let mut damaged = Vec::new();
    for step in &case.case.steps {
        match step {
            Step::Corrupt(what) => match what {
                Corruption::FileBytes(FileBytesCorruption::DamageIndexFiles { index, .. })
                | Corruption::Content(ContentCorruption::SetIndexCoverage { index, .. }) => {
                    damaged.push(index.clone())
                }
                _ => return None,
            },
            _ => continue,
        }
    }
    let twin = read_checked(&case.dir.join(UNDAMAGED_DIR), n).ok()?;
    let mut found = None;
    for name in damaged {
        let word = capability::index_word(twin.index(name.as_str())?.kind);
        if declared.contains(word) {
            return None;
        }
        found = Some((word, name));
    }
    found
}

/// `v<n> refuses` when the reader refused the damaged version with `got`: a pass when the twin
/// was read (or refused by the refusal profile), inconclusive when it was not. Returns, when it
/// passed, the capabilities the twin needed and the reader lacks (`Some(None)`: none).
fn refused(
    checks: &mut Checks,
    n: u64,
    twin: &Twin,
    got: &ReadError,
) -> Option<Option<Vec<Capability>>> {
    let name = Check::Refuses { version: n };
    let lacking = match twin {
        Twin::Read => None,
        Twin::RefusedForFeature(lacking) => Some(lacking.clone()),
        Twin::NotRead(why) => {
            checks.push(
                name,
                Verdict::Inconclusive,
                Some(FailureKind::Inconclusive),
                Some(format!(
                    "inconclusive: refused ({}), but the undamaged twin {why}, so the refusal says nothing about the damage",
                    shown(got)
                )),
            );
            return None;
        }
    };
    let message = match &lacking {
        None => format!("refused: {}", shown(got)),
        Some(l) => format!(
            "refused ({}); its undamaged twin needs {}, which the reader does not declare, and was refused too: judged by the refusal profile, not on the damage",
            shown(got),
            needs::words(l)
        ),
    };
    checks.push(name, Verdict::Pass, None, Some(message));
    Some(lacking)
}

/// `v<n> refusal class (<class>)`, at `class_level` or the case's level if weaker: the spec's
/// class, or, for a reader refusing a feature its twin needs (`for_feature`),
/// `unsupported_feature` too.
fn refusal_class(
    checks: &mut Checks,
    n: u64,
    error: &ExpectedError,
    class_level: Level,
    for_feature: bool,
    got: &ReadError,
) {
    let name = Check::RefusalClass {
        version: n,
        twin: false,
        class: error.class.clone(),
    };
    let level = weaker(class_level, checks.level);
    if got.class == error.class || (for_feature && got.class == "unsupported_feature") {
        checks.add(name, Verdict::Pass, level, None, None);
    } else {
        checks.add(
            name,
            Verdict::Fail,
            level,
            Some(FailureKind::WrongClass),
            Some(format!(
                "expected class {}, got {}",
                error.class,
                shown(got)
            )),
        );
    }
}

/// `v<n> refusal code (<code>)` (SHOULD), for a reader declaring error codes.
fn refusal_code(checks: &mut Checks, n: u64, code: &str, got: &ReadError) {
    let name = Check::RefusalCode {
        version: n,
        code: code.to_string(),
    };
    if !checks.declared.contains(ERROR_CODES) {
        checks.add(
            name,
            Verdict::Unsupported,
            Level::Should,
            None,
            Some(format!("needs {ERROR_CODES}")),
        );
    } else if got.code.as_deref() == Some(code) {
        checks.add(name, Verdict::Pass, Level::Should, None, None);
    } else {
        checks.add(
            name,
            Verdict::Fail,
            Level::Should,
            Some(FailureKind::WrongCode),
            Some(format!("expected code {code}, got {}", shown(got))),
        );
    }
}

/// Runs the case's declared queries at the damaged `version` (damage to index files surfaces
/// only there for a reader that does not read index files at open); returns how many ran and
/// the first refusal. Queries the reader cannot send (capabilities) are skipped.
fn damaged_queries(
    checks: &mut Checks,
    dataset: &str,
    case: &CaseDir,
    version: u64,
) -> Result<Vec<(String, QueryAnswer)>, Refusal> {
    let mut answers = Vec::new();
    let at = VersionRef {
        dataset: dataset.to_string(),
        version,
    };
    for spec in case.case.queries.iter().filter(|q| q.at.contains(&version)) {
        let needs = if spec.vector.is_some() {
            capability::VECTOR_QUERY
        } else {
            SCALAR_QUERY
        };
        if !capability::missing(&[needs], checks.declared).is_empty() {
            continue;
        }
        let Ok(request) = query_request_with(
            manifest_schema(Path::new(dataset), version).ok().as_ref(),
            Path::new(dataset),
            version,
            spec,
        ) else {
            continue;
        };
        answers.push((spec.name.clone(), checks.reader.query(&at, &request)?));
    }
    Ok(answers)
}

/// Whether the damaged version's query answers are the twin's: a reader that reads through
/// damage it may read through (for an index, one whose content it does not check: [IDX-READ-3])
/// still answers as a flat scan of the twin does. Only `final` is compared: the reconciliation
/// lists describe the damaged index's own candidates.
fn answered_as_twin(
    undamaged: &ExpectedVersion,
    answers: &[(String, QueryAnswer)],
) -> Result<(), compare::Difference> {
    for (name, got) in answers {
        if let Some(want) = undamaged.queries.iter().find(|q| &q.name == name) {
            compare::query(want, got, false).map_err(|m| m.in_query(name))?;
        }
    }
    Ok(())
}

/// Whether a reader with indices should answer `spec` at `snapshot` (the version as the
/// reference reads it) through its index:
/// the index covers a fragment the version holds, and no leaf compares with a NULL literal (no
/// index can answer `x = NULL`; it is UNKNOWN for every row). `None` when that cannot be told.
fn index_expected(snapshot: Option<&Snapshot>, spec: &QuerySpec) -> Option<bool> {
    let snapshot = snapshot?;
    let index = snapshot.index(spec.index.as_str())?;
    let covered = snapshot.fragments.iter().any(|f| index.covers(f.id));
    Some(covered && !spec.predicate.as_ref().is_some_and(null_literal))
}

fn null_literal(p: &PredicateSpec) -> bool {
    match p {
        PredicateSpec::And { and } => and.iter().any(null_literal),
        PredicateSpec::Or { or } => or.iter().any(null_literal),
        PredicateSpec::Leaf { op, value, .. } => {
            !matches!(op, crate::case::Op::IsNull | crate::case::Op::IsNotNull)
                && match value {
                    None => true,
                    Some(Cell::Null(_)) => true,
                    Some(Cell::List(items)) => items.iter().any(|c| matches!(c, Cell::Null(_))),
                    Some(_) => false,
                }
        }
    }
}

/// The verdict of a query whose final rows matched, given the reader's plan.
fn plan_verdict(
    plan: Option<&super::protocol::QueryPlan>,
    expected: Option<bool>,
) -> (Verdict, Option<String>) {
    let Some(plan) = plan else {
        return (Verdict::Pass, None);
    };
    let path = if plan.index { "index" } else { "flat" };
    let text = if plan.text.is_empty() {
        String::new()
    } else {
        format!("\n{}", plan.text.trim_end())
    };
    if !plan.index && expected == Some(true) {
        return (
            Verdict::Fail,
            Some(format!(
                "index not used: the answer is right but came from the flat path{text}"
            )),
        );
    }
    (Verdict::Pass, Some(format!("plan: {path}{text}")))
}

/// The checks of one readable version (§4: open, scans, lineage, exclusion, queries) of the
/// directory `dataset`, against `reader`, each at `level`; and whether the reader broke
/// or the kit faulted.
pub fn version_checks(
    reader: &mut dyn ConformanceReader,
    declared: &BTreeSet<String>,
    level: Level,
    dataset: &str,
    case: &CaseDir,
    v: &ExpectedVersion,
) -> (Vec<CheckResult>, bool) {
    let mut checks = Checks {
        reader,
        declared,
        level,
        out: Vec::new(),
        broken: false,
    };
    version(&mut checks, dataset, case, v);
    (checks.out, checks.broken)
}

/// The checks of one readable version, in the order §4 gives them: open, the scans, lineage,
/// exclusion, the queries; each stops the rest when the reader broke or the kit faulted.
fn version(checks: &mut Checks, dataset: &str, case: &CaseDir, v: &ExpectedVersion) {
    let at = VersionRef {
        dataset: dataset.to_string(),
        version: v.version,
    };
    if !open(checks, &at) {
        return;
    }
    for (name, columns, projection) in scans(v) {
        if checks.broken {
            return;
        }
        scan(checks, &at, v, name, columns, &projection);
    }
    if !checks.broken {
        lineage(checks, &at, v);
    }
    if !checks.broken {
        exclusion(checks, &at, v);
    }
    // The version as the reference reads it (typing the queries' literals, telling whether an
    // index should answer), read once for all its queries.
    let mut reference: Option<Result<Snapshot, ReadError>> = None;
    for q in &v.queries {
        if checks.broken {
            return;
        }
        query(checks, dataset, case, &at, q, &mut reference);
    }
}

/// `v<n> open`: the reader opens the version asked for. Returns whether it opened one (a
/// refusal ends the version's checks).
fn open(checks: &mut Checks, at: &VersionRef) -> bool {
    let n = at.version;
    let name = Check::Open { version: n };
    let level = checks.level;
    match checks.reader.open(at) {
        Ok(opened) if opened.version == n => checks.push(name, Verdict::Pass, None, None),
        Ok(opened) => checks.push(
            name,
            Verdict::Fail,
            Some(FailureKind::WrongValue),
            Some(format!("opened version {} instead", opened.version)),
        ),
        Err(r) => {
            checks.refused_readable(name, r, level);
            return false;
        }
    }
    true
}

/// The scans of a version: every column in schema order (`v<n> scan`), and with two columns
/// or more the columns reversed by name (`v<n> scan [b, a]`). Each is its check, the columns
/// asked for (`None`: all) and the expected columns' positions in the answer's order.
fn scans(v: &ExpectedVersion) -> Vec<(Check, Option<Vec<String>>, Vec<usize>)> {
    let n = v.version;
    let all: Vec<usize> = (0..v.columns.len()).collect();
    let mut scans = vec![(
        Check::Scan {
            version: n,
            twin: false,
        },
        None,
        all.clone(),
    )];
    if v.columns.len() >= 2 {
        let reversed: Vec<usize> = all.iter().rev().copied().collect();
        let names: Vec<String> = reversed
            .iter()
            .filter_map(|i| v.columns.get(*i).map(|c| c.name.clone()))
            .collect();
        scans.push((
            Check::ProjectedScan {
                version: n,
                columns: names.clone(),
            },
            Some(names),
            reversed,
        ));
    }
    scans
}

/// `v<n> scan` or `v<n> scan [..]`: the rows, in the projection asked for.
fn scan(
    checks: &mut Checks,
    at: &VersionRef,
    v: &ExpectedVersion,
    name: Check,
    columns: Option<Vec<String>>,
    projection: &[usize],
) {
    let level = checks.level;
    let request = ScanRequest {
        at: at.clone(),
        columns,
    };
    // Batches, when the reader answers with them, are compared in place.
    let compared = match checks.reader.scan_batches(&request) {
        Some(batches) => batches.and_then(|batches| {
            let got = CheckedScan::check(&request, &batches)?;
            Ok(compare::scan(&v.columns, &v.rows, projection, &got))
        }),
        None => checks
            .reader
            .scan(&request)
            .map(|got| compare::scan(&v.columns, &v.rows, projection, &got)),
    };
    match compared {
        Ok(Ok(())) => checks.push(name, Verdict::Pass, None, None),
        Ok(Err(m)) => checks.push(
            name,
            Verdict::Fail,
            Some(FailureKind::WrongValue),
            Some(m.to_string()),
        ),
        Err(r) => checks.refused_readable(name, r, level),
    }
}

/// `v<n> lineage`: every fragment's lineage, for a reader declaring lineage placement; the
/// first fragment that differs or is refused decides.
fn lineage(checks: &mut Checks, at: &VersionRef, v: &ExpectedVersion) {
    let name = Check::Lineage {
        version: at.version,
    };
    if !checks.can(&name, &[LINEAGE_PLACEMENT]) {
        return;
    }
    let level = checks.level;
    let mut problem = None;
    for f in &v.fragments {
        match checks.reader.lineage(at, f.fragment) {
            Ok(got) => {
                if let Err(m) = compare::lineage(f, &got) {
                    problem = Some(Ok(m));
                    break;
                }
            }
            Err(r) => {
                problem = Some(Err(r));
                break;
            }
        }
    }
    match problem {
        None => checks.push(name, Verdict::Pass, None, None),
        Some(Ok(m)) => checks.push(
            name,
            Verdict::Fail,
            Some(FailureKind::WrongValue),
            Some(m.to_string()),
        ),
        Some(Err(r)) => checks.refused_readable(name, r, level),
    }
}

/// `v<n> exclusion`: every index's exclusion sets, for a reader declaring them.
fn exclusion(checks: &mut Checks, at: &VersionRef, v: &ExpectedVersion) {
    let name = Check::Exclusion {
        version: at.version,
    };
    if !checks.can(&name, &[EXCLUSION]) {
        return;
    }
    let level = checks.level;
    match checks.reader.exclusion(at) {
        Ok(got) => match compare::exclusion(&v.exclusion_sets, &got.exclusion_sets) {
            Ok(()) => checks.push(name, Verdict::Pass, None, None),
            Err(m) => checks.push(
                name,
                Verdict::Fail,
                Some(FailureKind::WrongValue),
                Some(m.to_string()),
            ),
        },
        Err(r) => checks.refused_readable(name, r, level),
    }
}

/// `v<n> query "<name>"`: one declared query, its request typed by the version's schema as
/// the reference reads it (`reference`, read on the first query and kept), its answer compared
/// and, when the rows are right, its plan judged.
fn query(
    checks: &mut Checks,
    dataset: &str,
    case: &CaseDir,
    at: &VersionRef,
    q: &expected::QueryResult,
    reference: &mut Option<Result<Snapshot, ReadError>>,
) {
    let n = at.version;
    let name = Check::Query {
        version: n,
        name: q.name.clone(),
    };
    let needs = match q.kind {
        QueryKind::Scalar => SCALAR_QUERY,
        QueryKind::Vector => capability::VECTOR_QUERY,
    };
    if !checks.can(&name, &[needs]) {
        return;
    }
    let Some(spec) = case.case.queries.iter().find(|s| s.name == q.name) else {
        let fault = KitFault::UndeclaredQuery {
            name: q.name.clone(),
        };
        return checks.kit_fault(name, &fault);
    };
    let snapshot = reference
        .get_or_insert_with(|| read_checked(Path::new(dataset), n))
        .as_ref();
    let request = match snapshot {
        Ok(s) => query_request_with(Some(&s.schema), Path::new(dataset), n, spec),
        Err(e) => Err(QueryRequestError::Schema {
            version: n,
            message: e.message.clone(),
        }),
    };
    let request = match request {
        Ok(r) => r,
        Err(error) => {
            let fault = KitFault::QueryRequest {
                name: q.name.clone(),
                version: n,
                message: error.to_string(),
            };
            return checks.kit_fault(name, &fault);
        }
    };
    let with_lists = checks.declared.contains(EXCLUSION);
    let level = checks.level;
    match checks.reader.query(at, &request) {
        Ok(got) => match compare::query(q, &got, with_lists) {
            Ok(()) => {
                let expected = index_expected(snapshot.ok(), spec);
                let (mut verdict, mut detail) = plan_verdict(got.plan.as_ref(), expected);
                // A reader may ignore an index of a kind it does not declare (§3): its right
                // answer from the flat path is not judged on the path.
                let word = snapshot
                    .ok()
                    .and_then(|s| s.index(spec.index.as_str()))
                    .map(|i| capability::index_word(i.kind));
                if let Some(word) =
                    word.filter(|w| verdict == Verdict::Fail && !checks.declared.contains(*w))
                {
                    verdict = Verdict::Unsupported;
                    detail = detail.map(|d| {
                        d.replacen(
                            "index not used: the answer is right but came from the flat path",
                            &format!(
                                "needs {word} to judge the plan: the answer is right and came from the flat path, and a reader without {word} may ignore the index"
                            ),
                            1,
                        )
                    });
                }
                let kind = (verdict == Verdict::Fail).then_some(FailureKind::IndexNotUsed);
                checks.push(name, verdict, kind, detail);
            }
            Err(m) => {
                let plan = got
                    .plan
                    .as_ref()
                    .map(|p| {
                        format!(
                            "\nplan: {}\n{}",
                            if p.index { "index" } else { "flat" },
                            p.text.trim_end()
                        )
                    })
                    .unwrap_or_default();
                checks.push(
                    name,
                    Verdict::Fail,
                    Some(FailureKind::WrongValue),
                    Some(format!("{m}{plan}")),
                );
            }
        },
        Err(r) => checks.refused_readable(name, r, level),
    }
}

/// The protocol form of a declared query at `version`: literals typed by their field in that
/// version's schema (read with the reference).
pub fn query_request(
    dataset: &Path,
    version: u64,
    spec: &QuerySpec,
) -> Result<QueryRequest, QueryRequestError> {
    query_request_with(None, dataset, version, spec)
}

/// [`query_request`] typing literals with `schema` when given (else the version's, read with
/// the reference).
fn query_request_with(
    schema: Option<&lance_reference::model::Schema>,
    dataset: &Path,
    version: u64,
    spec: &QuerySpec,
) -> Result<QueryRequest, QueryRequestError> {
    let predicate = match (&spec.predicate, schema) {
        (None, _) => None,
        (Some(p), Some(schema)) => Some(typed_predicate(schema, p)?),
        (Some(p), None) => {
            let snapshot =
                read_checked(dataset, version).map_err(|e| QueryRequestError::Schema {
                    version,
                    message: e.message,
                })?;
            Some(typed_predicate(&snapshot.schema, p)?)
        }
    };
    let vector = spec.vector.as_ref().map(|v| {
        tag_scalar(&lance_reference::model::Value::Vector(
            v.iter().copied().map(Some).collect(),
        ))
    });
    Ok(QueryRequest {
        name: spec.name.clone(),
        index: spec.index.clone(),
        predicate,
        vector,
        k: spec.k.map(|k| k as u64),
    })
}

/// Why a declared query could not be put as a request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryRequestError {
    /// The version's schema, which types the literals, could not be read.
    #[error("reading the schema of v{version}: {message}")]
    Schema {
        /// The version.
        version: u64,
        /// The reference's refusal.
        message: String,
    },
    /// A literal does not fit its field.
    #[error(transparent)]
    Literal(#[from] LiteralError),
}

/// Why a predicate literal could not be typed by its field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiteralError {
    /// The predicate names a field the schema does not have.
    #[error("no field {0:?}")]
    NoField(String),
    /// The literal does not fit the field's type.
    #[error(transparent)]
    Cell(#[from] crate::case::cell::CellError),
}

/// The protocol form of a case predicate: every literal tagged with its field's type in
/// `schema`.
pub fn typed_predicate(
    schema: &lance_reference::model::Schema,
    p: &PredicateSpec,
) -> Result<Predicate, LiteralError> {
    Ok(match p {
        PredicateSpec::And { and } => Predicate::And {
            and: and
                .iter()
                .map(|p| typed_predicate(schema, p))
                .collect::<Result<_, _>>()?,
        },
        PredicateSpec::Or { or } => Predicate::Or {
            or: or
                .iter()
                .map(|p| typed_predicate(schema, p))
                .collect::<Result<_, _>>()?,
        },
        PredicateSpec::Leaf { field, op, value } => {
            let id = crate::case::names::field_id(schema, field)
                .ok_or_else(|| LiteralError::NoField(field.clone()))?;
            let one = |c: &Cell| -> Result<Tagged, LiteralError> {
                let v = c.to_value(schema, id)?;
                Ok(tag(schema, id, &v))
            };
            let value = match (op, value) {
                (_, None) => None,
                (crate::case::Op::In, Some(Cell::List(items))) => Some(Literal::List(
                    items.iter().map(one).collect::<Result<_, _>>()?,
                )),
                (_, Some(c)) => Some(Literal::One(one(c)?)),
            };
            Predicate::Leaf {
                field: field.clone(),
                op: *op,
                value,
            }
        }
    })
}
