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

use crate::case::{Capability, Case, RequirementIndex, Step};
use crate::corpus::CaseDir;
use crate::runner::execute::{self, Expected};
use crate::runner::{CheckResult, ConformanceReader, FailureKind, needs};

/// What a disagreement is, independent of version numbers, fragment ids and projections: its
/// failure kind, its check name with every number replaced by `#` and a projection list
/// dropped (`v# scan`, `v# query "idx#: n"`), and, for a check of the damaged version itself
/// (`v# refuses`, its refusal's class and code; not an inconclusive one), the corruption kind
/// (`accepted-damage v# refuses [mixed_manifest_names]`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Signature {
    /// The failure kind (`wrong-value`, `crash`, ...).
    pub kind: String,
    /// The check name, numbers masked, projection dropped.
    pub check: String,
    /// The corruption kind, for a check of the damaged version.
    pub damage: Option<String>,
}

impl Signature {
    /// The signature of a failing check of `case`.
    pub fn of(case: &Case, check: &CheckResult) -> Signature {
        // `v2 scan [b, a]` is the scan projecting the columns in reverse order: the same
        // reading as the full scan, and its column list changes with the schema.
        let name = match (check.name.find(" ["), check.name.ends_with(']')) {
            (Some(at), true) => &check.name[..at],
            _ => check.name.as_str(),
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
        let of_damaged = (masked.contains("refuses") || masked.contains("refusal"))
            && check.kind != Some(FailureKind::Inconclusive);
        Signature {
            kind: check.kind.map_or("fail", FailureKind::as_str).to_string(),
            check: masked,
            damage: case
                .steps
                .iter()
                .find_map(|s| match s {
                    Step::Corrupt(c) => Some(c.name()),
                    _ => None,
                })
                .filter(|_| of_damaged),
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

    /// `kind check [damage]`, the form known-disagreement lists use.
    pub fn line(&self) -> String {
        match &self.damage {
            Some(d) => format!("{} {} [{d}]", self.kind, self.check),
            None => format!("{} {}", self.kind, self.check),
        }
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
    pub fn new() -> Result<Scratch, String> {
        Ok(Scratch {
            root: tempfile::tempdir().map_err(|e| format!("scratch directory: {e}"))?,
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
) -> Result<Judged, String> {
    let dir = scratch.fresh();
    let judged = judge_in(reader, declared, case, index, &dir);
    // Best effort: a leftover directory is removed with the scratch root.
    let _ = std::fs::remove_dir_all(&dir);
    judged
}

/// What `case` `requires`: it is written into a fresh scratch directory, and
/// [`needs::of_case`] reads the files (the directory is removed again).
pub fn requires(case: &Case, scratch: &mut Scratch) -> Result<Vec<Capability>, String> {
    let dir = scratch.fresh();
    let requires = write(case, &dir).map(|expected| of_case(&dir, case, &expected));
    // Best effort: a leftover directory is removed with the scratch root.
    let _ = std::fs::remove_dir_all(&dir);
    requires
}

/// Writes `case` into `dir` as the generator writes a corpus case, and reads its `expected/`.
fn write(case: &Case, dir: &Path) -> Result<Expected, String> {
    crate::build::write(case, dir).map_err(|e| e.to_string())?;
    execute::load_expected(dir).map_err(|e| e.to_string())
}

fn of_case(dir: &Path, case: &Case, expected: &Expected) -> Vec<Capability> {
    needs::of_case(dir, case, expected).into_iter().collect()
}

fn judge_in(
    reader: &mut dyn ConformanceReader,
    declared: &BTreeSet<String>,
    case: &Case,
    index: &RequirementIndex,
    dir: &Path,
) -> Result<Judged, String> {
    let expected = write(case, dir)?;
    let (class_level, _) = execute::class_level(case, index);
    let case_dir = CaseDir {
        area: "fuzz".into(),
        dir: dir.to_path_buf(),
        case: case.clone(),
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
    })
}
