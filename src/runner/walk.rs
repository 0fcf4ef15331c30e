//! The reference's self-check: the specification's worked example, walked in memory.
//!
//! Invariant: every check states what the specification says and what the reference produced
//! from the in-memory worked example ([`lance_reference::worked_example`]), independent of
//! the corpus and its generator; a check about a cell also carries how that cell was decided
//! (which overlay won at which rank, or the base, or NULL, or a deletion). `lance-conformance
//! run` with the built-in reference reports it as the case `worked-example-walk` (area
//! `spec`), so a reference that drifted from the spec's own numbers fails the README command
//! even if the corpus was regenerated with the drift.

use lance_reference::model::{Column, Snapshot, Value};
use lance_reference::query::{Predicate, RowRef, reconcile};
use lance_reference::resolve::{explain, resolve_column};
use lance_reference::scan::scan;
use lance_reference::worked_example::{AGE, AGE_INDEX, EMBEDDING, NAME, versions};
use lance_reference::{exclusion, flags};

use super::check;
use super::report::{CaseResult, CheckResult, FailureKind, Verdict};
use crate::case::Level;

/// Why the reference could not walk its own example (a kit fault of the walk, never a
/// reader's failure).
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// A rule of the reference refused the example's data.
    #[error(transparent)]
    Reference(#[from] lance_reference::Error),
    /// The example is not shaped as the walk reads it.
    #[error("the worked example {0}")]
    Shape(&'static str),
}

type Result<T, E = WalkError> = std::result::Result<T, E>;

/// One claim of the walk.
pub struct Check {
    /// The worked example's step.
    pub step: &'static str,
    /// What the specification says.
    pub claim: String,
    /// Whether the reference agrees.
    pub ok: bool,
    /// How the reference decided.
    pub trail: Vec<String>,
}

fn column_check(
    step: &'static str,
    snapshot: &Snapshot,
    field: i32,
    expected: Vec<Value>,
) -> Result<Check> {
    let fragment = &snapshot.fragments[0];
    let got = resolve_column(&snapshot.schema, fragment, field)?;
    let name = snapshot
        .schema
        .field(field)
        .map_or("?", |f| f.name.as_str())
        .to_string();
    let mut trail = Vec::new();
    for offset in 0..fragment.physical_rows {
        trail.push(explain(&snapshot.schema, fragment, offset, field)?.to_string());
    }
    let shown: Vec<String> = expected.iter().map(Value::to_string).collect();
    Ok(Check {
        step,
        claim: format!("v{} {name} = [{}]", snapshot.version, shown.join(", ")),
        ok: got == expected.into_iter().map(Some).collect::<Vec<_>>(),
        trail,
    })
}

fn offsets(rows: &[RowRef]) -> Vec<u64> {
    rows.iter().map(|r| r.offset).collect()
}

fn query_check(
    step: &'static str,
    snapshot: &Snapshot,
    age: i32,
    candidates: &[u64],
    final_rows: &[u64],
) -> Result<Check> {
    let r = reconcile(snapshot, AGE_INDEX, &Predicate::Eq(AGE, Value::Int32(age)))?;
    Ok(Check {
        step,
        claim: format!(
            "v{} WHERE age = {age}: index candidates {candidates:?}, final {final_rows:?}",
            snapshot.version
        ),
        ok: offsets(&r.candidates) == candidates && offsets(&r.final_rows) == final_rows,
        trail: vec![format!(
            "candidates {:?}, excluded {:?}, re-evaluated {:?}, matched again {:?}, final {:?}",
            offsets(&r.candidates),
            offsets(&r.excluded),
            offsets(&r.reevaluated),
            offsets(&r.rematched),
            offsets(&r.final_rows)
        )],
    })
}

/// Every check of the walk.
pub fn checks() -> Result<Vec<Check>> {
    let [v1, v2, v3, v4]: [Snapshot; 4] = versions()?
        .try_into()
        .map_err(|_| WalkError::Shape("does not have four versions"))?;
    let ints = |v: &[i32]| v.iter().map(|x| Value::Int32(*x)).collect::<Vec<_>>();
    let texts = |v: &[&str]| {
        v.iter()
            .map(|x| Value::Utf8((*x).into()))
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    for v in [&v1, &v2, &v3, &v4] {
        let ok = v.validate().is_ok() && flags::check_consistency(v).is_ok();
        out.push(Check {
            step: "all",
            claim: format!("v{} is valid and its flags match its content", v.version),
            ok,
            trail: vec![format!(
                "reader flags {}, writer flags {}",
                v.reader_flags, v.writer_flags
            )],
        });
    }
    let overlay = &v2.fragments[0].overlays[0];
    out.push(Check {
        step: "1 write an overlay",
        claim: "the age overlay is stamped committed_version 2".into(),
        ok: overlay.committed_version == 2,
        trail: vec![format!("overlay file {}", overlay.file.path)],
    });
    let updated = v2.fragments[0].lineage_values(-5)?;
    out.push(Check {
        step: "1 write an overlay",
        claim: "last_updated_at_version = [1, 2, 1, 2]".into(),
        ok: updated.as_deref() == Some(&[1, 2, 1, 2][..]),
        trail: vec![format!("{updated:?}")],
    });
    out.push(column_check("2 read", &v2, AGE, ints(&[30, 26, 40, 23]))?);
    let index = v2
        .index(AGE_INDEX)
        .ok_or(WalkError::Shape("has no age index at v2"))?;
    let set = exclusion::exclusion_set(&v2.schema, index, &v2.fragments[0]);
    out.push(Check {
        step: "3 index query",
        claim: "exclusion set of the age index is {1, 3}".into(),
        ok: set.iter().collect::<Vec<_>>() == [1, 3],
        trail: vec![format!(
            "index dataset_version {} < committed_version 2",
            index.dataset_version
        )],
    });
    out.push(query_check("3 index query", &v2, 26, &[], &[1])?);
    out.push(query_check("3 index query", &v2, 25, &[1], &[])?);
    let sparse = &v3.fragments[0].overlays[1];
    out.push(Check {
        step: "4 sparse overlay",
        claim: "committed_version 3, value columns of lengths 2 and 1".into(),
        ok: sparse.committed_version == 3
            && sparse
                .file
                .columns
                .iter()
                .map(Column::len)
                .collect::<Vec<_>>()
                == [2, 1],
        trail: vec![format!("fields {:?}", sparse.file.fields)],
    });
    out.push(column_check(
        "5 read",
        &v3,
        NAME,
        texts(&["Alice", "Bob", "Caroline", "David"]),
    )?);
    out.push(column_check("5 read", &v3, AGE, ints(&[30, 26, 40, 23]))?);
    let mut embeddings: Vec<Value> = resolve_column(&v1.schema, &v1.fragments[0], EMBEDDING)?
        .into_iter()
        .flatten()
        .collect();
    embeddings[1] = Value::Vector(vec![Some(0.5); 3]);
    out.push(column_check("5 read", &v3, EMBEDDING, embeddings)?);
    let f4 = &v4.fragments[0];
    out.push(Check {
        step: "6 fold",
        claim:
            "overlays cleared, old fields tombstoned, values unchanged, age index drops fragment 0"
                .into(),
        ok: f4.overlays.is_empty()
            && f4.files[0].fields == [1, -2, -2, -2]
            && scan(&v4, None)? == scan(&v3, None)?
            && !v4
                .index(AGE_INDEX)
                .ok_or(WalkError::Shape("has no age index at v4"))?
                .covers(0),
        trail: f4
            .files
            .iter()
            .map(|f| format!("{}: fields {:?}", f.path, f.fields))
            .collect(),
    });
    Ok(out)
}

/// The walk as a case result: id `worked-example-walk`, area `spec`, one check per claim (its
/// decision trail as the message of a failing check).
pub fn as_case() -> CaseResult {
    let checks = match checks() {
        Ok(list) => list
            .into_iter()
            .map(|c| CheckResult {
                name: check::Check::WalkStep {
                    step: c.step.to_string(),
                    claim: c.claim.clone(),
                },
                verdict: if c.ok { Verdict::Pass } else { Verdict::Fail },
                level: Level::Must,
                kind: (!c.ok).then_some(FailureKind::WrongValue),
                message: (!c.ok).then(|| c.trail.join("\n")),
            })
            .collect(),
        // The reference could not walk its own example: the kit's fault, not the reader's.
        Err(e) => vec![CheckResult::kit_fault(
            check::Check::Walk,
            Level::Must,
            &super::kit_fault::KitFault::Walk {
                message: e.to_string(),
            },
        )],
    };
    CaseResult::new(
        "worked-example-walk",
        "spec",
        Level::Must,
        vec!["OVL-PREC-1".into(), "OVL-QRY-1".into(), "OVL-FOLD-1".into()],
        vec!["self-check".into()],
        checks,
    )
}
