//! Judging one case: written into a scratch directory exactly as the generator writes a
//! corpus case, then run against a reader by the runner.
//!
//! Invariant: the dataset, the expected answers and the verdicts are those of
//! [`crate::build::write`] and [`crate::runner::execute::run_case`], and what a case
//! `requires` is [`crate::runner::needs::of_case`] of the files written; this module adds
//! only where the files go and what counts as a disagreement (a check that fails, errors or is
//! inconclusive), named by a [`Signature`] that survives shrinking.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::TrialError;
use crate::case::{Capability, Case, PredicateSpec, QuerySpec, RequirementIndex, Step};
use crate::corpus::CaseDir;
use crate::runner::execute::{self, Expected};
use crate::runner::{Check, CheckResult, ConformanceReader, FailureKind, needs};
use crate::scenario::Execution;

/// What a disagreement is, independent of seeds, version numbers, fragment ids and
/// projections: its failure kind, its check name with every number replaced by `#`, a
/// projection list dropped, a damaged case's undamaged twin read as any version and a query
/// named by its kind ([`query_kind`]) (`v# scan`, `v# query (scalar)`), for a check of the damaged version itself (`v# refuses`,
/// its refusal's class and code; not an inconclusive one, nor a refusal for a capability the
/// reader lacks) the corruption kind
/// (`accepted-damage v# refuses [mixed_manifest_names]`), and for a crash how the reader broke
/// (`crash v# refuses [truncate_manifest] (panic)`), so that a known hang never hides a new
/// panic on the same damage.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Signature {
    /// The failure kind (`wrong-value`, `crash`, ...).
    pub kind: String,
    /// The check name, numbers masked, projection dropped.
    pub check: String,
    /// The corruption kind, for a check of the damaged version.
    pub damage: Option<String>,
    /// How a crash broke ([`crash_cause`]), for a crash.
    pub cause: Option<&'static str>,
}

/// What a query is: `vector`, `scalar on a struct child` (a predicate naming a dotted field),
/// or `scalar`.
pub fn query_kind(q: &QuerySpec) -> &'static str {
    fn nested(p: &PredicateSpec) -> bool {
        match p {
            PredicateSpec::Leaf { field, .. } => field.contains('.'),
            PredicateSpec::And { and: parts } | PredicateSpec::Or { or: parts } => {
                parts.iter().any(nested)
            }
        }
    }
    if q.vector.is_some() {
        "vector"
    } else if q.predicate.as_ref().is_some_and(nested) {
        "scalar on a struct child"
    } else {
        "scalar"
    }
}

/// How a reader broke, from its crash message: `hang` (no answer in time), `panic`,
/// `internal-error` (the reader's own words for a bug of its own), or `other`.
pub fn crash_cause(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("no response within") {
        "hang"
    } else if m.contains("panicked") || m.contains("task was aborted") {
        "panic"
    } else if m.contains("internal error") {
        "internal-error"
    } else {
        "other"
    }
}

impl Signature {
    /// The signature of a failing check of `case`.
    pub fn of(case: &Case, check: &CheckResult) -> Signature {
        let damage = case.steps.iter().find_map(|s| match s {
            Step::Corrupt(c) => Some(c.name()),
            _ => None,
        });
        // A query is named by what it is, not by its name (which carries the field the
        // generator drew): a struct child's query fails where a top-level field's does not
        // (INTEROP.md 1), a field's name says nothing more.
        let query = match &check.name {
            Check::Query { name, .. } => case.queries.iter().find(|q| &q.name == name),
            _ => None,
        };
        Signature::named(damage, check, query.map(query_kind))
    }

    /// The signature of a failing check of a case damaged with `damage` (a corruption kind).
    pub fn of_check(damage: Option<String>, check: &CheckResult) -> Signature {
        Signature::named(damage, check, None)
    }

    /// The signature of `check`, a query of kind `query` named by it.
    fn named(damage: Option<String>, check: &CheckResult, query: Option<&str>) -> Signature {
        // `v2 scan [b, a]` is the scan projecting the columns in reverse order: the same
        // reading as the full scan, and its column list changes with the schema. The undamaged
        // twin (`v3 twin scan`) is read as any version is: the same reading, the same
        // disagreement.
        let general = match check.name.clone() {
            Check::ProjectedScan { version, .. } | Check::Scan { version, .. } => Check::Scan {
                version,
                twin: false,
            },
            Check::Needs { version, .. } => Check::Needs {
                version,
                twin: false,
            },
            Check::RefusesForFeature { version, needs, .. } => Check::RefusesForFeature {
                version,
                twin: false,
                needs,
            },
            Check::RefusalClass { version, class, .. } => Check::RefusalClass {
                version,
                twin: false,
                class,
            },
            other => other,
        };
        let name = match (&general, query) {
            (Check::Query { version, .. }, Some(kind)) => format!("v{version} query ({kind})"),
            _ => general.to_string(),
        };
        let mut masked = String::new();
        for c in name.chars() {
            if c.is_ascii_digit() {
                if !masked.ends_with('#') {
                    masked.push('#');
                }
            } else {
                masked.push(c);
            }
        }
        // An inconclusive refusal follows from a twin that was not read correctly: that
        // failure is the disagreement, whatever the damage.
        // A refusal for a capability the reader lacks (`v# refuses (needs spilled-lineage)`)
        // is asked whatever the damage: the damage says nothing about it either.
        let of_damaged = matches!(
            general,
            Check::Refuses { .. }
                | Check::RefusalClass { .. }
                | Check::RefusalCode { .. }
                | Check::RefusesWrite { .. }
                | Check::RefusesPrepared { .. }
        ) && check.kind != Some(FailureKind::Inconclusive);
        Signature {
            kind: check.kind.map_or("fail", FailureKind::as_str).to_string(),
            check: masked,
            damage: damage.filter(|_| of_damaged),
            cause: (check.kind == Some(FailureKind::Crash))
                .then(|| crash_cause(check.message.as_deref().unwrap_or_default())),
        }
    }

    /// The signature as a case-id suffix: lower-case letters and digits, `-` between words
    /// (`wrong-value-v-scan`).
    pub fn check_slug(&self) -> String {
        let mut slug = String::new();
        let words = [
            self.kind.as_str(),
            &self.check,
            self.damage.as_deref().unwrap_or(""),
            self.cause.unwrap_or(""),
        ];
        for c in words.join(" ").chars() {
            if c.is_ascii_alphanumeric() {
                slug.push(c.to_ascii_lowercase());
            } else if !slug.ends_with('-') {
                slug.push('-');
            }
        }
        slug.trim_matches('-').to_string()
    }

    /// `kind check [damage] (cause)`, the form known-disagreement lists use.
    pub fn line(&self) -> String {
        let mut line = format!("{} {}", self.kind, self.check);
        if let Some(d) = &self.damage {
            line.push_str(&format!(" [{d}]"));
        }
        if let Some(c) = self.cause {
            line.push_str(&format!(" ({c})"));
        }
        line
    }
}

/// One case's verdicts.
#[derive(Debug, Clone)]
pub struct Judged {
    /// Every check, in the runner's order.
    pub checks: Vec<CheckResult>,
    /// Every failing check's signature, in check order.
    pub signatures: Vec<Signature>,
    /// What the case's content needs and the checks it gates: its `requires`
    /// ([`needs::of_case`] of the files judged).
    pub requires: Vec<Capability>,
    /// How long writing the dataset and its `expected/` took ([`super::timing`]).
    pub built: Duration,
}

impl Judged {
    /// The first check that fails, errors or is inconclusive, with its signature.
    pub fn first_failure(&self) -> Option<(&CheckResult, &Signature)> {
        let first = self.checks.iter().find(|c| c.verdict.is_failure())?;
        Some((first, self.signatures.first()?))
    }

    /// The first failing check with signature `s`.
    pub fn failing_with(&self, s: &Signature) -> Option<&CheckResult> {
        let failing = self.checks.iter().filter(|c| c.verdict.is_failure());
        failing
            .zip(&self.signatures)
            .find(|(_, g)| *g == s)
            .map(|(c, _)| c)
    }

    /// Whether some failing check has signature `s`.
    pub fn fails_with(&self, s: &Signature) -> bool {
        self.signatures.contains(s)
    }
}

/// Scratch directories, a new one for every judged case: a reader may cache what it read at a
/// path, so no path is ever used for two different datasets.
#[derive(Debug)]
pub struct Scratch {
    root: tempfile::TempDir,
    next: u64,
}

impl Scratch {
    /// A fresh scratch root.
    pub fn new() -> Result<Scratch, TrialError> {
        Ok(Scratch {
            root: tempfile::tempdir().map_err(TrialError::Scratch)?,
            next: 0,
        })
    }

    /// `text` with this machine's paths replaced by placeholders, so that it can go into a case
    /// file: a judged case's directory (`<scratch root>/c<N>`) by `<case>`, the scratch root by
    /// `<scratch>`, the working directory by `<cwd>` and the home directory by `~` (each also in
    /// its canonical form, which a reader may report instead); and a Rust source location in an
    /// error message (`/home/runner/work/…/lance-file/src/reader.rs:249:13`, the machine that
    /// built the reader) cut to its crate (`lance-file/src/reader.rs:249:13`).
    pub fn placeholders(&self, text: &str) -> String {
        let mut out = source_locations(text);
        let with_canonical = |p: &Path| {
            let mut forms = vec![p.display().to_string()];
            if let Ok(c) = p.canonicalize() {
                let c = c.display().to_string();
                if !forms.contains(&c) {
                    forms.push(c);
                }
            }
            forms
        };
        for root in with_canonical(self.root.path()) {
            out = case_dirs(&out, &root);
            out = out.replace(&root, "<scratch>");
        }
        // An object store names a local path without its leading `/` (Lance's "corrupt file
        // tmp/.tmpXYZ/c241/dataset"): once every full form is replaced, what is left of the
        // root in that form is such a name.
        for root in with_canonical(self.root.path()) {
            if let Some(relative) = root.strip_prefix('/').filter(|r| !r.is_empty()) {
                out = case_dirs(&out, relative);
                out = out.replace(relative, "<scratch>");
            }
        }
        let mut others: Vec<(String, &str)> = Vec::new();
        if let Ok(cwd) = std::env::current_dir() {
            others.extend(with_canonical(&cwd).into_iter().map(|p| (p, "<cwd>")));
        }
        if let Some(home) = std::env::var_os("HOME").filter(|h| h.len() > 1) {
            others.extend(
                with_canonical(Path::new(&home))
                    .into_iter()
                    .map(|p| (p, "~")),
            );
        }
        // The longest first: a working directory under the home directory keeps its own name.
        others.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        for (path, placeholder) in others.into_iter().filter(|(p, _)| p.len() > 1) {
            out = out.replace(&path, placeholder);
        }
        out
    }

    /// A path not used before.
    fn fresh(&mut self) -> PathBuf {
        self.next += 1;
        self.root.path().join(format!("c{}", self.next))
    }
}

/// `text` with every absolute path of a Rust source file (`/…/<crate>/src/….rs:<line>…`) cut
/// to the crate's directory and what follows.
fn source_locations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('/') {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let starts_token = before
            .chars()
            .last()
            .is_none_or(|c| c.is_whitespace() || "\"'(,[=".contains(c));
        let len = from
            .find(|c: char| c.is_whitespace() || "\"'),]".contains(c))
            .unwrap_or(from.len());
        let token = &from[..len];
        let source = token.contains(".rs:") && token.contains("/src/");
        match token.rfind("/src/").filter(|_| starts_token && source) {
            Some(src) => {
                let crate_start = token[..src].rfind('/').map_or(0, |i| i + 1);
                out.push_str(&token[crate_start..]);
            }
            None => out.push_str(token),
        }
        rest = &from[len..];
    }
    out.push_str(rest);
    out
}

/// `text` with every `<root>/c<N>` (a judged case's directory) replaced by `<case>`.
fn case_dirs(text: &str, root: &str) -> String {
    let prefix = format!("{root}/c");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&prefix) {
        let after = &rest[at + prefix.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&rest[..at]);
        if digits > 0 {
            out.push_str("<case>");
            rest = &after[digits..];
        } else {
            out.push_str(&prefix);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Writes `case` into a fresh scratch directory (`dataset/`, `expected/`, a negative case's
/// `undamaged/`), judges `reader` on it and removes it. `Err` when the case cannot be built
/// (a generator problem, not the reader's).
pub fn judge(
    reader: &mut dyn ConformanceReader,
    declared: &BTreeSet<String>,
    case: &Case,
    index: &RequirementIndex,
    scratch: &mut Scratch,
) -> Result<Judged, TrialError> {
    judge_executed(reader, declared, (case, None), index, scratch)
}

/// [`judge`], built from `execution`, the scenario's run of `case.steps`, when given
/// ([`super::case::Trial::drawn`]).
pub fn judge_executed(
    reader: &mut dyn ConformanceReader,
    declared: &BTreeSet<String>,
    (case, execution): (&Case, Option<Execution>),
    index: &RequirementIndex,
    scratch: &mut Scratch,
) -> Result<Judged, TrialError> {
    let dir = scratch.fresh();
    let judged = judge_in(reader, declared, (case, execution), index, &dir);
    // Best effort: a leftover directory is removed with the scratch root.
    let _ = std::fs::remove_dir_all(&dir);
    judged
}

/// What `case` `requires`: it is written into a fresh scratch directory, and
/// [`needs::of_case`] reads the files (the directory is removed again).
pub fn requires(case: &Case, scratch: &mut Scratch) -> Result<Vec<Capability>, TrialError> {
    let dir = scratch.fresh();
    let requires = write(case, None, &dir).map(|expected| of_case(&dir, case, &expected));
    // Best effort: a leftover directory is removed with the scratch root.
    let _ = std::fs::remove_dir_all(&dir);
    requires
}

/// Writes `case` into `dir` as the generator writes a corpus case, and reads its `expected/`.
fn write(case: &Case, execution: Option<Execution>, dir: &Path) -> Result<Expected, TrialError> {
    crate::build::write_executed(case, execution, dir)?;
    Ok(execute::load_expected(dir)?)
}

fn of_case(dir: &Path, case: &Case, expected: &Expected) -> Vec<Capability> {
    needs::of_case(dir, case, expected).into_iter().collect()
}

fn judge_in(
    reader: &mut dyn ConformanceReader,
    declared: &BTreeSet<String>,
    (case, execution): (&Case, Option<Execution>),
    index: &RequirementIndex,
    dir: &Path,
) -> Result<Judged, TrialError> {
    let started = Instant::now();
    let expected = write(case, execution, dir)?;
    let built = started.elapsed();
    let (class_level, _) = execute::class_level(case, index);
    let case_dir = CaseDir {
        area: "fuzz".into(),
        dir: dir.to_path_buf(),
        case: case.clone(),
        twin_of: None,
    };
    let (checks, _) = execute::run_case(reader, declared, &case_dir, &expected, class_level);
    let signatures = checks
        .iter()
        .filter(|c| c.verdict.is_failure())
        .map(|c| Signature::of(case, c))
        .collect();
    Ok(Judged {
        checks,
        signatures,
        requires: of_case(dir, case, &expected),
        built,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Level;
    use crate::runner::Verdict;

    fn failing(name: &str, kind: FailureKind, message: &str) -> CheckResult {
        CheckResult {
            name: name.parse().unwrap(),
            verdict: Verdict::Fail,
            level: Level::Must,
            kind: Some(kind),
            message: Some(message.into()),
        }
    }

    #[test]
    fn a_twin_reads_as_any_version_and_a_crash_says_how_it_broke() {
        let twin = Signature::of_check(None, &failing("v3 twin scan", FailureKind::WrongValue, ""));
        let plain = Signature::of_check(
            None,
            &failing("v12 scan [b, a]", FailureKind::WrongValue, ""),
        );
        assert_eq!(twin, plain);
        assert_eq!(plain.line(), "wrong-value v# scan");
        let hang = failing(
            "v2 refuses",
            FailureKind::Crash,
            "request 7: no response within 60.0 s (hang?)",
        );
        let panic = failing(
            "v2 refuses",
            FailureKind::Crash,
            "Lance panicked: range end",
        );
        let damage = || Some("truncate_manifest".to_string());
        let (hang, panic) = (
            Signature::of_check(damage(), &hang),
            Signature::of_check(damage(), &panic),
        );
        assert_ne!(hang, panic, "a known hang must not hide a panic");
        assert_eq!(hang.line(), "crash v# refuses [truncate_manifest] (hang)");
        assert_eq!(
            panic.check_slug(),
            "crash-v-refuses-truncate-manifest-panic"
        );
        assert_eq!(
            crash_cause("Lance internal error: Encountered internal error. Please file"),
            "internal-error"
        );
        assert_eq!(crash_cause("RuntimeError: Task was aborted"), "panic");
        let lacking = failing(
            "v4 twin refuses (needs spilled-lineage)",
            FailureKind::Crash,
            "Lance internal error: Encountered internal error. All fragments must have row ids",
        );
        assert_eq!(
            Signature::of_check(damage(), &lacking).line(),
            "crash v# refuses (needs spilled-lineage) (internal-error)",
            "a refusal for a lacking capability is not about the damage"
        );
        assert_eq!(crash_cause("exited with status 1"), "other");
    }

    #[test]
    fn a_query_is_named_by_its_kind_not_its_field() {
        let query = |text: &str| toml::from_str::<QuerySpec>(text).unwrap();
        let child = query(
            "name = \"idx3: st.b\"\nindex = \"idx3\"\nat = [2]\nwhere = { or = [{ field = \"st.b\", op = \"is_null\" }] }",
        );
        let top = query(
            "name = \"idx0: n\"\nindex = \"idx0\"\nat = [2]\nwhere = { field = \"n\", op = \"=\", value = 1 }",
        );
        let vector =
            query("name = \"idx1: v\"\nindex = \"idx1\"\nat = [2]\nvector = [1.0, 0.5]\nk = 1");
        assert_eq!(query_kind(&child), "scalar on a struct child");
        assert_eq!(query_kind(&top), "scalar");
        assert_eq!(query_kind(&vector), "vector");
    }
}
