//! `lance-conformance explain <case>`: how the reference decides a corpus case, read from the
//! case's own dataset directory.
//!
//! Invariant: everything printed comes from the reference reading `dataset/` at the chosen
//! version (the same read the built-in reader does), so the trail explains exactly what
//! `expected/` records: a version's layout (fragments, overlays in precedence order, lineage
//! placement, indices and exclusion sets), one cell's resolution ([`resolve::explain`]), or a
//! query's reconciliation with each re-evaluated row's current value. On the damaged version
//! of a negative case it prints the error the reference raises and the one the case requires.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lance_reference::model::Snapshot;
use lance_reference::query::{self, RowRef};
use lance_reference::resolve::{self, precedence, resolve_column};

use super::execute::load_expected;
use super::kit_fault::KitFault;
use super::reference::read_checked;
use crate::case::cell::CellError;
use crate::case::names::{dotted_name, field_id};
use crate::case::{Case, CaseError, QuerySpec};

/// Why a case cannot be explained: the command exits 2.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The corpus directory cannot be listed.
    #[error("listing {}: {source}", corpus.display())]
    Listing {
        /// The corpus root.
        corpus: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No case of that id.
    #[error("no case {id:?} under {}", corpus.display())]
    NoCase {
        /// The id asked for.
        id: String,
        /// The corpus root.
        corpus: PathBuf,
    },
    /// The case's `case.toml` does not load.
    #[error(transparent)]
    Case(#[from] CaseError),
    /// The case's `expected/` does not load.
    #[error(transparent)]
    Expected(#[from] KitFault),
    /// The case has no generated version to explain.
    #[error("the case has no generated versions")]
    NoVersions,
    /// `--cell` is not `FRAGMENT:OFFSET:FIELD` with numbers and a field of the version.
    #[error("--cell {cell:?}: {problem}")]
    Cell {
        /// The argument.
        cell: String,
        /// What is wrong with it.
        problem: String,
    },
    /// `--query` names no query of the case.
    #[error("no query {name:?}; the case declares {declared:?}")]
    NoQuery {
        /// The name asked for.
        name: String,
        /// The case's query names.
        declared: Vec<String>,
    },
    /// The query cannot be run at this version.
    #[error("query {name:?}: {problem}")]
    Query {
        /// The query's name.
        name: String,
        /// What stops it.
        problem: String,
    },
    /// The query's predicate does not fit the schema.
    #[error(transparent)]
    Predicate(#[from] CellError),
    /// The reference refuses the cell or the query.
    #[error(transparent)]
    Reference(#[from] lance_reference::Error),
}

type Result<T, E = ExplainError> = std::result::Result<T, E>;

/// What to explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Focus {
    /// The version's layout.
    Version,
    /// One cell: `FRAGMENT:OFFSET:FIELD`.
    Cell(String),
    /// One declared query, by name.
    Query(String),
}

/// Finds `<corpus>/<area>/<id>/` for a case id (or `area/id`).
pub fn case_dir(corpus: &Path, id: &str) -> Result<PathBuf> {
    if let Some((area, case)) = id.split_once('/') {
        let dir = corpus.join(area).join(case);
        if dir.join("case.toml").is_file() {
            return Ok(dir);
        }
    }
    let mut areas: Vec<_> = std::fs::read_dir(corpus)
        .map_err(|source| ExplainError::Listing {
            corpus: corpus.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(id).join("case.toml").is_file())
        .collect();
    areas.sort();
    match areas.first() {
        Some(area) => Ok(area.join(id)),
        None => Err(ExplainError::NoCase {
            id: id.to_string(),
            corpus: corpus.to_path_buf(),
        }),
    }
}

/// The explanation text.
pub fn explain(corpus: &Path, id: &str, version: Option<u64>, focus: &Focus) -> Result<String> {
    let dir = case_dir(corpus, id)?;
    let case = Case::load(&dir.join("case.toml"))?;
    let expected = load_expected(&dir)?;
    let newest = expected.versions.last().map(|v| v.version);
    let version = version
        .or(newest)
        .or(expected.error.as_ref().map(|e| e.version))
        .ok_or(ExplainError::NoVersions)?;
    let mut out = String::new();
    let _ = writeln!(out, "case {} — {}", case.id, case.title);
    let dataset = dir.join("dataset");
    let snapshot = match read_checked(&dataset, version) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(
                out,
                "v{version}: the reference refuses it: {}/{}\n  {}",
                e.class,
                e.code.as_deref().unwrap_or("-"),
                e.message
            );
            match &expected.error {
                Some(want) if want.version == version => {
                    let _ = writeln!(
                        out,
                        "the case requires class {}{}",
                        want.class,
                        want.code
                            .as_ref()
                            .map(|c| format!(", code {c}"))
                            .unwrap_or_default()
                    );
                }
                _ => {
                    let _ = writeln!(out, "(this version has no expected error: it should read)");
                }
            }
            return Ok(out);
        }
    };
    match focus {
        Focus::Version => layout(&mut out, &snapshot, &case),
        Focus::Cell(cell) => {
            let bad = |problem: String| ExplainError::Cell {
                cell: cell.clone(),
                problem,
            };
            let parts: Vec<&str> = cell.split(':').collect();
            let [fragment, offset, field] = parts.as_slice() else {
                return Err(bad("takes FRAGMENT:OFFSET:FIELD".into()));
            };
            let fragment: u64 = fragment
                .parse()
                .map_err(|_| bad("FRAGMENT must be a number".into()))?;
            let offset: u64 = offset
                .parse()
                .map_err(|_| bad("OFFSET must be a number".into()))?;
            let field = match field.parse::<i32>() {
                Ok(id) => id,
                Err(_) => field_id(&snapshot.schema, field)
                    .ok_or_else(|| bad(format!("no field named {field:?}")))?,
            };
            let f = snapshot.fragment(fragment)?;
            let _ = writeln!(out, "v{version}:");
            let _ = write!(
                out,
                "{}",
                resolve::explain(&snapshot.schema, f, offset, field)?
            );
        }
        Focus::Query(name) => {
            let spec = case
                .queries
                .iter()
                .find(|q| q.name == *name)
                .ok_or_else(|| ExplainError::NoQuery {
                    name: name.clone(),
                    declared: case.queries.iter().map(|q| q.name.clone()).collect(),
                })?;
            query_trail(&mut out, &snapshot, spec)?;
        }
    }
    Ok(out)
}

/// One version: the snapshot as `snapshots/` renders it ([`crate::render::snapshot::version`], the one
/// renderer), then what resolution and queries derive from it: each fragment's overlays in the
/// order resolution tries them, each index's exclusion sets, and the queries declared here.
fn layout(out: &mut String, s: &Snapshot, case: &Case) {
    let _ = writeln!(out, "v{}:", s.version);
    crate::render::snapshot::version(out, s);
    for f in s.fragments.iter().filter(|f| !f.overlays.is_empty()) {
        let order: Vec<String> = precedence(f)
            .iter()
            .map(|&p| {
                format!(
                    "#{p} (committed_version {})",
                    f.overlays[p].committed_version
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "fragment {}: overlays in precedence order, the first that covers a cell wins: {}",
            f.id,
            order.join(", ")
        );
    }
    for index in &s.indices {
        for e in crate::expected::exclusion_sets(s)
            .iter()
            .filter(|e| e.index == index.name)
        {
            let _ = writeln!(
                out,
                "index {}: exclusion set of fragment {}: {:?} (rows an overlay newer than the index may have changed)",
                index.name, e.fragment, e.offsets
            );
        }
    }
    let at: Vec<&str> = case
        .queries
        .iter()
        .filter(|q| q.at.contains(&s.version))
        .map(|q| q.name.as_str())
        .collect();
    if !at.is_empty() {
        let _ = writeln!(
            out,
            "queries at this version (explain with --query): {at:?}"
        );
    }
}

fn rows(v: &[RowRef]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|r| format!("{}:{}", r.fragment, r.offset))
        .collect();
    format!("[{}]", parts.join(", "))
}

fn query_trail(out: &mut String, s: &Snapshot, spec: &QuerySpec) -> Result<()> {
    let schema = &s.schema;
    let problem = |problem: String| ExplainError::Query {
        name: spec.name.clone(),
        problem,
    };
    let index = s
        .index(&spec.index)
        .ok_or_else(|| problem(format!("v{} has no index {:?}", s.version, spec.index)))?;
    let key = index
        .fields
        .first()
        .copied()
        .ok_or_else(|| problem(format!("the index {:?} has no field", spec.index)))?;
    let _ = writeln!(
        out,
        "v{}: query {:?} through index {} on {} (built from v{})",
        s.version,
        spec.name,
        index.name,
        dotted_name(schema, key),
        index.dataset_version
    );
    let current = |r: &RowRef| -> String {
        s.fragment(r.fragment)
            .ok()
            .and_then(|f| resolve_column(schema, f, key).ok())
            .and_then(|col| col.get(r.offset as usize).cloned().flatten())
            .map_or_else(|| "deleted".to_string(), |v| v.to_string())
    };
    if let Some(p) = &spec.predicate {
        let predicate = p.to_predicate(schema, &|n| field_id(schema, n))?;
        let r = query::reconcile(s, &spec.index, &predicate)?;
        let _ = writeln!(out, "1. the index returns       {}", rows(&r.candidates));
        let _ = writeln!(
            out,
            "2. of those, excluded      {}  (in the exclusion set: the indexed value may be stale)",
            rows(&r.excluded)
        );
        let _ = writeln!(
            out,
            "3. re-evaluated on current values (exclusion sets, and fragments the index does not cover):"
        );
        for row in &r.reevaluated {
            let hit = if r.rematched.contains(row) {
                "matches"
            } else {
                "does not match"
            };
            let _ = writeln!(
                out,
                "     {}:{} = {} -> {hit}",
                row.fragment,
                row.offset,
                current(row)
            );
        }
        let _ = writeln!(
            out,
            "4. final = (index − excluded) ∪ matches = {}",
            rows(&r.final_rows)
        );
    } else if let (Some(vector), Some(k)) = (&spec.vector, spec.k) {
        let r = query::reconcile_vector(s, &spec.index, vector, k)?;
        let scored = |v: &[query::Scored]| -> String {
            let parts: Vec<String> = v
                .iter()
                .map(|x| format!("{}:{} (d²={})", x.row.fragment, x.row.offset, x.distance))
                .collect();
            format!("[{}]", parts.join(", "))
        };
        let _ = writeln!(
            out,
            "1. prefilter keeps out     {}  (exclusion set)",
            rows(&r.excluded)
        );
        let _ = writeln!(out, "2. the index's top {k}      {}", scored(&r.candidates));
        let _ = writeln!(
            out,
            "3. re-scored on current vectors {}",
            scored(&r.rescored)
        );
        let _ = writeln!(
            out,
            "4. final top {k} (distance, then row address) {}",
            scored(&r.final_rows)
        );
    } else {
        return Err(problem("has neither `where` nor `vector` and `k`".into()));
    }
    Ok(())
}
