//! A concretized history (and, with `--damage`, one corruption of its newest version) as a
//! [`Case`]: the struct a `case.toml` parses to.
//!
//! Invariant: the case holds the history's steps unchanged, a query per index at every version
//! the index exists (a predicate or a query vector drawn from the history's query seed), and
//! requirement ids picked by the operations it uses (only ids the index knows). A damage seed
//! is resolved against the model's newest version like every other seed, so it always names
//! something that exists; whether the damage is refusable is the reference's word
//! ([`reference_refusal`]), never the generator's. What the case `requires` is never guessed
//! from its operations: it is what the written content needs ([`super::judge::requires`],
//! [`crate::runner::needs::of_case`], the rule the corpus is held to), filled in from the files
//! the case is judged on.

use lance_reference::error::CodedError;
use lance_reference::flags;

use super::TrialError;
use super::builder::{Built, concretize, pick};
use super::history::{History, Stream, mix};
use super::model::{Arm, ITEMS, MENU, MState, Ty, predicate};
use crate::case::corruption::LineageProblem;
use crate::case::step::{FlagWordSpec, SequenceSpec};
use crate::case::{
    Case, ContentCorruption, Corruption, ExpectErrorSpec, FileBytesCorruption, Level,
    ManifestBytesCorruption, QuerySpec, RequirementIndex, Step,
};
use crate::scenario::Execution;
use crate::{reader, scenario, store};

/// Which damage to apply, as selectors resolved against the newest version's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamageSeed {
    /// Selects the corruption kind among those that apply.
    pub kind: u16,
    /// Selects the fragment, overlay or field it acts on.
    pub target: u16,
    /// Selects a value (an offset, a version, a byte count).
    pub value: u16,
}

/// The corruption `seed` stands for at the newest version of `built` (`None` when no kind
/// applies, e.g. an empty table for a fragment-level kind and no other kind left).
pub fn damage(built: &Built, seed: DamageSeed) -> Option<Corruption> {
    let s = built.versions.last()?;
    let t = u64::from(seed.target);
    let v = u64::from(seed.value);
    let mut kinds: Vec<Corruption> = vec![
        ContentCorruption::SetFlag {
            word: FlagWordSpec::Reader,
            bit: flags::FLAG_UNKNOWN,
        }
        .into(),
        ManifestBytesCorruption::TruncateManifest {
            keep: 1 + (v % 64) as usize,
        }
        .into(),
        ManifestBytesCorruption::BadManifestLength.into(),
        FileBytesCorruption::MixedManifestNames.into(),
    ];
    let frags: Vec<u64> = s.frags.iter().map(|f| f.id).collect();
    if let Some(id) = pick(&frags, t) {
        let f = s.frag(id)?;
        kinds.push(
            ContentCorruption::TruncateBaseColumn {
                fragment: id,
                field: "id".into(),
            }
            .into(),
        );
        kinds.push(
            ContentCorruption::DeletionPastEnd {
                fragment: id,
                offset: f.rows.len() as u32 + (v % 3) as u32,
            }
            .into(),
        );
        if f.live() < f.rows.len() {
            kinds.push(
                ManifestBytesCorruption::SetNumDeletedRows {
                    fragment: id,
                    count: (f.rows.len() - f.live()) as u64 + 1 + v % 2,
                }
                .into(),
            );
        }
        // Only a rule a sequence of this fragment's length can break (the store builds no
        // other): the rule the value selects among all, else among those that fit, so that
        // every draw that could be built before is drawn as before.
        let rows = f.rows.len() as u64;
        let fitting: Vec<LineageProblem> = LineageProblem::ALL
            .into_iter()
            .filter(|p| p.fits(rows).is_ok())
            .collect();
        let problem = pick(&LineageProblem::ALL, v)
            .filter(|p| p.fits(rows).is_ok())
            .or_else(|| pick(&fitting, v));
        if let (true, Arm::Inline, Some(problem)) = (s.stable, f.arms[0], problem) {
            kinds.push(
                ManifestBytesCorruption::MalformedLineage {
                    fragment: id,
                    sequence: SequenceSpec::RowIds,
                    problem,
                }
                .into(),
            );
        }
        if let Some(seq) = [
            SequenceSpec::RowIds,
            SequenceSpec::CreatedAt,
            SequenceSpec::LastUpdatedAt,
        ]
        .into_iter()
        .zip(f.arms)
        .find(|(_, a)| *a == Arm::Column)
        .map(|(q, _)| q)
        {
            kinds.push(
                ContentCorruption::DropLineageColumn {
                    fragment: id,
                    sequence: seq,
                }
                .into(),
            );
        }
    }
    if s.frags.iter().any(|f| !f.overlays.is_empty()) {
        kinds.push(
            ContentCorruption::ClearFlag {
                word: FlagWordSpec::Reader,
                bit: flags::FLAG_UNSTABLE_DATA_OVERLAY_FILES,
            }
            .into(),
        );
    }
    // (fragment, overlay position, a live field of it) for every overlay with live fields.
    let overlays: Vec<(u64, usize, Option<&'static str>)> = s
        .frags
        .iter()
        .flat_map(|f| {
            f.overlays.iter().enumerate().map(move |(p, o)| {
                let field = o
                    .fields
                    .iter()
                    .find(|fg| s.live(**fg))
                    .map(|(name, _)| *name);
                (f.id, p, field)
            })
        })
        .collect();
    if let Some((fragment, overlay, field)) = pick(&overlays, t / 7) {
        let rows = s.frag(fragment).map_or(0, |f| f.rows.len() as u32);
        kinds.extend([
            ContentCorruption::SetCommittedVersion {
                fragment,
                overlay,
                committed_version: if v % 2 == 0 { 0 } else { s.version + 1 + v % 5 },
            }
            .into(),
            ManifestBytesCorruption::MalformedRoaring { fragment, overlay }.into(),
            ManifestBytesCorruption::PathEscapesRoot { fragment, overlay }.into(),
            FileBytesCorruption::TruncateOverlayFile { fragment, overlay }.into(),
            ManifestBytesCorruption::DropOverlayDataFile { fragment, overlay }.into(),
            ManifestBytesCorruption::DropOverlayCoverage { fragment, overlay }.into(),
        ]);
        if let Some(field) = field {
            kinds.extend([
                ContentCorruption::CoveragePastEnd {
                    fragment,
                    overlay,
                    field: field.into(),
                    offset: rows + (v % 3) as u32,
                }
                .into(),
                ContentCorruption::DropOverlayValue {
                    fragment,
                    overlay,
                    field: field.into(),
                }
                .into(),
                ContentCorruption::DuplicateOverlayField { fragment, overlay }.into(),
            ]);
        }
    }
    let i = usize::from(seed.kind) % kinds.len();
    Some(kinds.swap_remove(i))
}

/// The requirement ids a history's operations exercise.
fn wanted(steps: &[Step]) -> Vec<&'static str> {
    let mut wanted = vec!["OVL-PREC-1", "OVL-COV-1"];
    let visit = |step: &Step, wanted: &mut Vec<&'static str>| match step {
        Step::Overlay { .. } => wanted.extend(["OVL-LIN-1", "OVL-SHAPE-1", "OVL-SHAPE-2"]),
        Step::Delete { .. } => wanted.extend(["OVL-DEL-1"]),
        Step::BuildIndex { .. } => wanted.extend(["OVL-IDX-2", "OVL-QRY-1"]),
        Step::CompactOverlays { .. } => wanted.extend(["OVL-MERGE-1"]),
        Step::Fold { .. } => wanted.extend(["OVL-FOLD-1"]),
        Step::RewriteRows { .. } => wanted.extend(["OVL-RWR-1", "LIN-PLACE-2"]),
        Step::CommitRetry { .. } => wanted.extend(["OVL-VER-2"]),
        _ => {}
    };
    for step in steps {
        visit(step, &mut wanted);
        if let Step::CommitRetry { write, conflict } = step {
            visit(write, &mut wanted);
            visit(conflict, &mut wanted);
        }
    }
    wanted
}

/// The queries of a history: one per index, at every version it exists.
fn queries(built: &Built) -> Vec<QuerySpec> {
    let mut names: Vec<(String, &'static str, bool)> = Vec::new();
    for m in &built.versions {
        for ix in &m.indices {
            if !names.iter().any(|(n, _, _)| n == &ix.name) {
                names.push((ix.name.clone(), ix.field, ix.vector));
            }
        }
    }
    let has = |m: &MState, name: &str| m.indices.iter().any(|i| i.name == name);
    names
        .into_iter()
        .enumerate()
        .map(|(n, (name, field, vector))| {
            let r = mix(built.query_seed ^ n as u64);
            let ty = MENU
                .iter()
                .find(|f| f.name == field)
                .map_or(Ty::I64, |f| f.ty);
            let at = built
                .versions
                .iter()
                .filter(|m| has(m, &name))
                .map(|m| m.version)
                .collect();
            QuerySpec {
                name: format!("{name}: {field}"),
                index: name,
                predicate: (!vector).then(|| predicate(field, ty, r).to_spec()),
                vector: vector.then(|| vec![ITEMS[(r % 4) as usize], ITEMS[(r / 4 % 4) as usize]]),
                k: vector.then_some(1 + (r / 16 % 4) as usize),
                at,
            }
        })
        .collect()
}

/// `built` as a case named `id`, damaged by `corruption` when given (its `expect_error` is
/// left for [`reference_refusal`] to fill in, and its `requires` empty, for the files it is
/// written to to decide: [`super::judge::Judged::requires`], [`super::judge::requires`]).
pub fn to_case(
    built: &Built,
    corruption: Option<Corruption>,
    id: &str,
    index: &RequirementIndex,
) -> Case {
    let mut steps = built.steps.clone();
    let damaged = corruption.is_some();
    if let Some(c) = corruption {
        steps.push(Step::Corrupt(c));
    }
    let mut requirements: Vec<String> = Vec::new();
    for id in wanted(&built.steps) {
        if index.levels.contains_key(id) && !requirements.iter().any(|r| r == id) {
            requirements.push(id.to_string());
        }
    }
    let binding = requirements
        .iter()
        .any(|r| index.levels.get(r).is_some_and(|l| l.starts_with("MUST")));
    Case {
        id: id.into(),
        title: "A random history".into(),
        requirements,
        level: if binding { Level::Must } else { Level::Should },
        tags: vec!["fuzz".into()],
        requires: Vec::new(),
        description: "Generated by `lance-conformance fuzz`.\n".into(),
        expect_error: damaged.then(|| ExpectErrorSpec {
            class: String::new(),
            code: None,
            unless_implemented: None,
            may_read: false,
        }),
        queries: queries(built),
        data_file_version: Default::default(),
        step_data_file_versions: Default::default(),
        writer_from: None,
        steps,
    }
}

/// How the reference refuses a damaged case's newest version: `Some((class, code))`, or
/// `None` when it reads the version (the damage is not one a reader must refuse there).
pub fn reference_refusal(case: &Case) -> Result<Option<(String, String)>, TrialError> {
    let execution = scenario::execute(&case.steps)?;
    refusal_of(&execution)
}

/// How the reference refuses the damaged version of `execution` (a run of a case's steps).
fn refusal_of(execution: &Execution) -> Result<Option<(String, String)>, TrialError> {
    let read = store::write_and_read_back(None, execution)?;
    let Some(damaged) = read.corrupted else {
        return Ok(None);
    };
    let refused = |e: &dyn CodedError| Some((e.class().as_str().to_string(), e.code().to_string()));
    Ok(match &damaged.read {
        Err(e) => refused(&**e),
        Ok(snapshot) => match reader::read(snapshot) {
            Err(e) => refused(&e),
            Ok(_) => None,
        },
    })
}

/// One trial of the fuzz loop: a history, and with `--damage` the damage of its newest
/// version.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The history.
    pub history: History,
    /// The damage, if any.
    pub damage: Option<DamageSeed>,
}

impl Trial {
    /// Trial `index` of `seed`: [`History::draw`], and a damage seed from the same stream when
    /// `damaged`.
    pub fn draw(seed: u64, index: u64, max_ops: usize, damaged: bool) -> Trial {
        let history = History::draw(seed, index, max_ops);
        let damage = damaged.then(|| {
            let mut s = Stream::new(seed ^ 0x00da_4a6e, index);
            DamageSeed {
                kind: s.bits() as u16,
                target: s.bits() as u16,
                value: s.bits() as u16,
            }
        });
        Trial { history, damage }
    }

    /// The trial as a case named `id`; `Ok(None)` when its damage applies to nothing, or the
    /// reference reads the damaged version (then there is nothing a reader must refuse).
    pub fn case(&self, id: &str, index: &RequirementIndex) -> Result<Option<Case>, TrialError> {
        Ok(self.drawn(id, index)?.map(|(case, _)| case))
    }

    /// [`Trial::case`], with the scenario's run of its steps when it was needed to learn the
    /// reference's refusal (a damaged trial), for [`crate::build::write_executed`] to build
    /// from instead of running the steps again.
    pub fn drawn(
        &self,
        id: &str,
        index: &RequirementIndex,
    ) -> Result<Option<(Case, Option<Execution>)>, TrialError> {
        let built = concretize(&self.history);
        let corruption = match self.damage {
            None => None,
            Some(seed) => match damage(&built, seed) {
                Some(c) => Some(c),
                None => return Ok(None),
            },
        };
        let mut case = to_case(&built, corruption, id, index);
        let mut execution = None;
        if case.expect_error.is_some() {
            let run = scenario::execute(&case.steps)?;
            let Some((class, code)) = refusal_of(&run)? else {
                return Ok(None);
            };
            case.expect_error = Some(ExpectErrorSpec {
                class,
                code: Some(code),
                unless_implemented: None,
                may_read: false,
            });
            execution = Some(run);
        }
        Ok(Some((case, execution)))
    }
}
