//! Running one case against a reader: the checks it consists of, in order, and their
//! verdicts.
//!
//! Invariant: every check compares the reader's answer with the case's generated `expected/`
//! files (never with another run of the reference), and is sent only when the reader declares
//! what it needs ([`super::capability`]). A readable version is checked in this order:
//! `open`, full `scan`, a `scan` projecting the columns in reverse order (two or more columns),
//! `lineage` of every fragment, `exclusion`, then each query declared at that version. A
//! negative case checks its earlier versions in the same way wherever the reference still
//! reads them in the damaged directory (so a reader that refuses everything cannot pass it),
//! then the damaged version: `open`, then a full `scan` if `open` accepted it. That check
//! passes only with the required error class, and with the required code when the case pins
//! one and the reader declares `error-codes`. Once a reader breaks ([`Refusal::Broken`]) the
//! rest of the case is not run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::capability::{self, ERROR_CODES, EXCLUSION, LINEAGE_PLACEMENT, SCALAR_QUERY};
use super::compare;
use super::conformance_reader::{ConformanceReader, Refusal};
use super::protocol::{Literal, Predicate, QueryRequest, ReadError, ScanRequest, VersionRef};
use super::reference::{manifest_schema, read_checked};
use super::report::{CheckResult, Verdict};
use crate::case::{Cell, PredicateSpec, QuerySpec};
use crate::corpus::CaseDir;
use crate::expected::tagged::{Tagged, tag, tag_scalar};
use crate::expected::{self, ExpectedError, ExpectedVersion, QueryKind};

/// What a case's `expected/` directory holds.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Every readable version, oldest first.
    pub versions: Vec<ExpectedVersion>,
    /// The damaged version's required error (negative cases).
    pub error: Option<ExpectedError>,
}

/// Reads `expected/v<N>.json` (in version order) and `expected/error.json`.
pub fn load_expected(case_dir: &Path) -> Result<Expected, String> {
    let dir = case_dir.join("expected");
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut numbered: Vec<(u64, PathBuf)> = Vec::new();
    let mut error = None;
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == "error.json" {
            let parsed = expected::parse_error(&read(&path)?)
                .map_err(|e| format!("{}: {e}", path.display()))?;
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
        versions.push(
            expected::parse_version(&read(&path)?)
                .map_err(|e| format!("{}: {e}", path.display()))?,
        );
    }
    Ok(Expected { versions, error })
}

/// Collects a case's checks; stops sending requests once the reader broke.
struct Checks<'a> {
    reader: &'a mut dyn ConformanceReader,
    declared: &'a BTreeSet<String>,
    out: Vec<CheckResult>,
    broken: bool,
}

impl Checks<'_> {
    fn push(&mut self, name: String, verdict: Verdict, message: Option<String>) {
        self.out.push(CheckResult {
            name,
            verdict,
            message,
        });
    }

    /// Records a refusal as a check verdict (`what_error` judges a data error).
    fn refusal(
        &mut self,
        name: String,
        refusal: Refusal,
        what_error: &dyn Fn(&ReadError) -> String,
    ) {
        match refusal {
            Refusal::Error(e) => self.push(name, Verdict::Fail, Some(what_error(&e))),
            Refusal::Unsupported(r) => self.push(name, Verdict::Unsupported, Some(r)),
            Refusal::Skipped(r) => self.push(name, Verdict::Skip, Some(r)),
            Refusal::Broken(r) => {
                self.broken = true;
                self.push(name, Verdict::Error, Some(r));
            }
        }
    }

    /// Whether the capabilities are declared; records `unsupported` when not.
    fn can(&mut self, name: &str, needs: &[&str]) -> bool {
        let missing = capability::missing(needs, self.declared);
        if missing.is_empty() {
            return true;
        }
        self.push(
            name.to_string(),
            Verdict::Unsupported,
            Some(format!("needs {}", missing.join(", "))),
        );
        false
    }
}

fn refused_readable(e: &ReadError) -> String {
    format!(
        "refused a readable version: {}/{}: {}",
        e.class,
        e.code.as_deref().unwrap_or("-"),
        e.message
    )
}

/// Runs every check of `case` (with its generated `expected`) against `reader`.
pub fn run_case(
    reader: &mut dyn ConformanceReader,
    declared: &BTreeSet<String>,
    case: &CaseDir,
    expected: &Expected,
) -> Vec<CheckResult> {
    let mut checks = Checks {
        reader,
        declared,
        out: Vec::new(),
        broken: false,
    };
    let missing = capability::missing_data(&case.case.requires, declared);
    if !missing.is_empty() {
        checks.push(
            "case".into(),
            Verdict::Unsupported,
            Some(format!("needs {}", missing.join(", "))),
        );
        return checks.out;
    }
    let dataset = absolute(&case.dir.join("dataset"));
    for v in &expected.versions {
        if checks.broken {
            return checks.out;
        }
        // A negative case's damage can make earlier versions unreadable too (mixed manifest
        // names): those are checked only where the reference still reads them.
        let readable =
            expected.error.is_none() || read_checked(Path::new(&dataset), v.version).is_ok();
        if readable {
            version(&mut checks, &dataset, case, v);
        }
    }
    if let Some(error) = &expected.error {
        if !checks.broken {
            negative(&mut checks, &dataset, case, error);
        }
    }
    checks.out
}

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

fn negative(checks: &mut Checks, dataset: &str, case: &CaseDir, error: &ExpectedError) {
    let at = VersionRef {
        dataset: dataset.to_string(),
        version: error.version,
    };
    let wanted = match &error.code {
        Some(code) => format!("{}/{code}", error.class),
        None => error.class.clone(),
    };
    let name = format!("v{} refuses ({wanted})", error.version);
    let refusal = match checks.reader.open(&at) {
        Err(r) => r,
        Ok(_) => match checks.reader.scan(&ScanRequest {
            at: at.clone(),
            columns: None,
        }) {
            Err(r) => r,
            Ok(_) => match damaged_queries(checks, dataset, case, error.version) {
                (_, Some(r)) => r,
                (queried, None) => {
                    let what = if queried > 0 {
                        "opened, scanned and queried"
                    } else {
                        "opened and scanned"
                    };
                    checks.push(
                        name,
                        Verdict::Fail,
                        Some(format!("{what} the damaged version without an error")),
                    );
                    return;
                }
            },
        },
    };
    let Refusal::Error(got) = refusal else {
        checks.refusal(name, refusal, &|_| String::new());
        return;
    };
    let shown = format!(
        "{}/{}: {}",
        got.class,
        got.code.as_deref().unwrap_or("-"),
        got.message
    );
    if got.class != error.class {
        checks.push(
            name,
            Verdict::Fail,
            Some(format!("wrong error class: expected {wanted}, got {shown}")),
        );
        return;
    }
    let codes = checks.declared.contains(ERROR_CODES);
    match (&error.code, codes) {
        (Some(code), true) if got.code.as_deref() != Some(code.as_str()) => checks.push(
            name,
            Verdict::Fail,
            Some(format!(
                "right class, wrong code: expected {wanted}, got {shown}"
            )),
        ),
        _ => checks.push(name, Verdict::Pass, None),
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
) -> (usize, Option<Refusal>) {
    let mut queried = 0;
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
        queried += 1;
        if let Err(r) = checks.reader.query(&at, &request) {
            return (queried, Some(r));
        }
    }
    (queried, None)
}

/// Whether a reader with indices should answer `spec` at this version through its index:
/// the index covers a fragment the version holds, and no leaf compares with a NULL literal (no
/// index can answer `x = NULL`; it is UNKNOWN for every row). `None` when that cannot be told.
fn index_expected(dataset: &Path, version: u64, spec: &QuerySpec) -> Option<bool> {
    let snapshot = read_checked(dataset, version).ok()?;
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

fn version(checks: &mut Checks, dataset: &str, case: &CaseDir, v: &ExpectedVersion) {
    let at = VersionRef {
        dataset: dataset.to_string(),
        version: v.version,
    };
    let n = v.version;
    match checks.reader.open(&at) {
        Ok(opened) if opened.version == n => checks.push(format!("v{n} open"), Verdict::Pass, None),
        Ok(opened) => checks.push(
            format!("v{n} open"),
            Verdict::Fail,
            Some(format!("opened version {} instead", opened.version)),
        ),
        Err(r) => {
            checks.refusal(format!("v{n} open"), r, &refused_readable);
            return;
        }
    }
    let all: Vec<usize> = (0..v.columns.len()).collect();
    let mut scans = vec![(format!("v{n} scan"), None, all.clone())];
    if v.columns.len() >= 2 {
        let reversed: Vec<usize> = all.iter().rev().copied().collect();
        let names: Vec<String> = reversed
            .iter()
            .filter_map(|i| v.columns.get(*i).map(|c| c.name.clone()))
            .collect();
        scans.push((
            format!("v{n} scan [{}]", names.join(", ")),
            Some(names),
            reversed,
        ));
    }
    for (name, columns, projection) in scans {
        if checks.broken {
            return;
        }
        let request = ScanRequest {
            at: at.clone(),
            columns,
        };
        match checks.reader.scan(&request) {
            Ok(got) => match compare::scan(&v.columns, &v.rows, &projection, &got) {
                Ok(()) => checks.push(name, Verdict::Pass, None),
                Err(m) => checks.push(name, Verdict::Fail, Some(m)),
            },
            Err(r) => checks.refusal(name, r, &refused_readable),
        }
    }
    let name = format!("v{n} lineage");
    if !checks.broken && checks.can(&name, &[LINEAGE_PLACEMENT]) {
        let mut problem = None;
        for f in &v.fragments {
            match checks.reader.lineage(&at, f.fragment) {
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
            None => checks.push(name, Verdict::Pass, None),
            Some(Ok(m)) => checks.push(name, Verdict::Fail, Some(m)),
            Some(Err(r)) => checks.refusal(name, r, &refused_readable),
        }
    }
    let name = format!("v{n} exclusion");
    if !checks.broken && checks.can(&name, &[EXCLUSION]) {
        match checks.reader.exclusion(&at) {
            Ok(got) => match compare::exclusion(&v.exclusion_sets, &got.exclusion_sets) {
                Ok(()) => checks.push(name, Verdict::Pass, None),
                Err(m) => checks.push(name, Verdict::Fail, Some(m)),
            },
            Err(r) => checks.refusal(name, r, &refused_readable),
        }
    }
    for q in &v.queries {
        if checks.broken {
            return;
        }
        let name = format!("v{n} query {:?}", q.name);
        let needs = match q.kind {
            QueryKind::Scalar => SCALAR_QUERY,
            QueryKind::Vector => capability::VECTOR_QUERY,
        };
        if !checks.can(&name, &[needs]) {
            continue;
        }
        let Some(spec) = case.case.queries.iter().find(|s| s.name == q.name) else {
            checks.push(
                name,
                Verdict::Error,
                Some("the case declares no query of that name (corpus problem)".into()),
            );
            continue;
        };
        let request = match query_request(Path::new(dataset), n, spec) {
            Ok(r) => r,
            Err(m) => {
                checks.push(name, Verdict::Error, Some(format!("runner: {m}")));
                continue;
            }
        };
        let with_lists = checks.declared.contains(EXCLUSION);
        match checks.reader.query(&at, &request) {
            Ok(got) => match compare::query(q, &got, with_lists) {
                Ok(()) => {
                    let expected = index_expected(Path::new(dataset), n, spec);
                    let (verdict, detail) = plan_verdict(got.plan.as_ref(), expected);
                    checks.push(name, verdict, detail);
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
                    checks.push(name, Verdict::Fail, Some(format!("{m}{plan}")));
                }
            },
            Err(r) => checks.refusal(name, r, &refused_readable),
        }
    }
}

/// The protocol form of a declared query at `version`: literals typed by their field in that
/// version's schema (read with the reference).
pub fn query_request(
    dataset: &Path,
    version: u64,
    spec: &QuerySpec,
) -> Result<QueryRequest, String> {
    query_request_with(None, dataset, version, spec)
}

/// [`query_request`] typing literals with `schema` when given (else the version's, read with
/// the reference).
fn query_request_with(
    schema: Option<&lance_reference::model::Schema>,
    dataset: &Path,
    version: u64,
    spec: &QuerySpec,
) -> Result<QueryRequest, String> {
    let predicate = match (&spec.predicate, schema) {
        (None, _) => None,
        (Some(p), Some(schema)) => Some(typed(schema, p)?),
        (Some(p), None) => {
            let snapshot = read_checked(dataset, version)
                .map_err(|e| format!("reading the schema of v{version}: {}", e.message))?;
            Some(typed(&snapshot.schema, p)?)
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

fn typed(schema: &lance_reference::model::Schema, p: &PredicateSpec) -> Result<Predicate, String> {
    Ok(match p {
        PredicateSpec::And { and } => Predicate::And {
            and: and
                .iter()
                .map(|p| typed(schema, p))
                .collect::<Result<_, _>>()?,
        },
        PredicateSpec::Or { or } => Predicate::Or {
            or: or
                .iter()
                .map(|p| typed(schema, p))
                .collect::<Result<_, _>>()?,
        },
        PredicateSpec::Leaf { field, op, value } => {
            let id = crate::case::names::field_id(schema, field)
                .ok_or_else(|| format!("no field {field:?}"))?;
            let one = |c: &Cell| -> Result<Tagged, String> {
                let v = c.to_value(schema, id).map_err(|e| e.to_string())?;
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
