//! The fuzz loop (`lance-conformance fuzz`) against the built-in reference, which must never
//! disagree with itself, and against a reference with an injected resolution bug, which it
//! must find and shrink to a case of a few steps.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use lance_conformance::case::{Case, RequirementIndex};
use lance_conformance::expected;
use lance_conformance::fuzz::history::{ConfigSeed, History, OpSeed, OverlaySeed};
use lance_conformance::fuzz::{self, Options};
use lance_conformance::runner::protocol::{
    ExclusionResult, OpenResult, QueryAnswer, QueryRequest, ScanRequest, ScanResult, VersionRef,
};
use lance_conformance::runner::reference::{read_checked, read_error};
use lance_conformance::runner::{Answer, ConformanceReader, Description, ReferenceReader, Refusal};
use lance_reference::model::FieldId;

fn index() -> RequirementIndex {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    RequirementIndex::load(&root.join("spec/requirements.toml")).unwrap()
}

#[test]
fn a_fixed_seed_run_against_the_reference_finds_nothing() {
    let mut reader = ReferenceReader::new();
    let options = Options {
        seed: 20261201,
        cases: Some(60),
        damage: true,
        ..Options::default()
    };
    let summary = fuzz::run(&mut reader, &index(), &options).unwrap();
    assert_eq!(summary.cases + summary.skipped, 60);
    assert!(summary.damaged >= 20, "{summary:?}");
    assert!(
        summary.findings.is_empty(),
        "the reference disagrees with itself: {:?}",
        summary
            .findings
            .iter()
            .map(|f| (f.signature.line(), f.check.message.clone()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn the_same_seed_draws_the_same_cases() {
    let index = index();
    for i in 0..8 {
        let a = fuzz::case::Trial::draw(5, i, 12, i % 2 == 1)
            .case("x", &index)
            .unwrap();
        let b = fuzz::case::Trial::draw(5, i, 12, i % 2 == 1)
            .case("x", &index)
            .unwrap();
        assert_eq!(a, b, "trial {i}");
    }
}

/// The reference with a resolution bug: the oldest overlay of a fragment wins instead of the
/// newest (the overlay list read in reverse, every `committed_version` made equal, so
/// precedence falls to list position).
struct OldestOverlayWins(ReferenceReader);

impl ConformanceReader for OldestOverlayWins {
    fn describe(&mut self) -> Answer<Description> {
        self.0.describe()
    }
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        self.0.open(at)
    }
    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
        let at = &request.at;
        let mut s = read_checked(Path::new(&at.dataset), at.version).map_err(Refusal::Error)?;
        for f in &mut s.fragments {
            f.overlays.reverse();
            let oldest = f.overlays.iter().map(|o| o.committed_version).min();
            for o in &mut f.overlays {
                o.committed_version = oldest.unwrap_or(o.committed_version);
            }
        }
        let fields: Vec<FieldId> = match &request.columns {
            None => s.schema.top_level().map(|f| f.id).collect(),
            Some(names) => names
                .iter()
                .filter_map(|n| s.schema.top_level().find(|f| f.name == *n).map(|f| f.id))
                .collect(),
        };
        let rows = lance_reference::scan::scan(&s, Some(&fields))
            .map_err(|e| Refusal::Error(read_error(&e)))?;
        Ok(ScanResult {
            columns: expected::columns(&s.schema, &fields),
            rows: rows
                .iter()
                .map(|r| expected::row(&s.schema, &fields, r))
                .collect(),
        })
    }
    fn lineage(
        &mut self,
        at: &VersionRef,
        fragment: u64,
    ) -> Answer<lance_conformance::expected::FragmentLineage> {
        self.0.lineage(at, fragment)
    }
    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        self.0.exclusion(at)
    }
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer> {
        self.0.query(at, query)
    }
}

#[test]
fn an_injected_resolution_bug_is_found_and_shrunk_to_a_few_steps() {
    let out = tempfile::tempdir().unwrap();
    let mut reader = OldestOverlayWins(ReferenceReader::new());
    let options = Options {
        seed: 3,
        cases: Some(40),
        out: Some(out.path().to_path_buf()),
        ..Options::default()
    };
    let summary = fuzz::run(&mut reader, &index(), &options).unwrap();
    let scan = summary
        .findings
        .iter()
        .find(|f| f.signature.line() == "wrong-value v# scan")
        .unwrap_or_else(|| panic!("not found: {summary:?}"));
    assert!(
        scan.steps.1 <= 4,
        "shrunk to {} steps: {:#?}",
        scan.steps.1,
        scan.case.steps
    );
    assert!(scan.steps.1 < scan.steps.0 || scan.steps.0 <= 4);
    // The written case loads, validates, and says what differed.
    let file = scan.file.as_ref().unwrap();
    let loaded = Case::load(file).unwrap();
    loaded.validate(&index()).unwrap();
    assert_eq!(loaded, scan.case);
    assert!(
        loaded.description.contains("wrong-value"),
        "{}",
        loaded.description
    );
    assert!(loaded.title.contains("scan"), "{}", loaded.title);
    // It requires what its content needs: overlays at least, for an overlay precedence bug.
    let mut scratch = fuzz::judge::Scratch::new().unwrap();
    let needs = fuzz::judge::requires(&loaded, &mut scratch).unwrap();
    assert_eq!(loaded.requires, needs);
    assert!(
        needs.contains(&lance_conformance::case::Capability::Overlays),
        "{needs:?}"
    );
}

/// A history: the `create` commit's rows and indices, then `ops`, with no config change.
fn history(
    schema: u8,
    stable: bool,
    rows: usize,
    indices: Vec<(u16, bool)>,
    ops: Vec<OpSeed>,
) -> History {
    History {
        schema,
        stable,
        config: ConfigSeed::default(),
        rows: (0..rows).map(|i| [i as u8 + 1; 8]).collect(),
        indices,
        ops,
        query_seed: 7,
    }
}

/// `h` as the case the fuzz loop writes, with the `requires` its written content needs.
fn written(h: History) -> Case {
    let trial = fuzz::case::Trial {
        history: h,
        damage: None,
    };
    let mut case = trial.case("requires", &index()).unwrap().unwrap();
    let mut scratch = fuzz::judge::Scratch::new().unwrap();
    case.requires = fuzz::judge::requires(&case, &mut scratch).unwrap();
    case
}

#[test]
fn a_fuzz_written_case_requires_what_its_content_needs() {
    use lance_conformance::case::{Capability as C, Shape, Step};
    // A sparse overlay, then a deletion, on a table with stable row ids, a struct and a BTree.
    let sparse = OverlaySeed {
        frag: 0,
        shape: 1,
        cells: vec![(0, 0, 3), (1, 1, 4)],
        tombstone: 0,
        reverse: false,
    };
    let case = written(history(
        1 | 16,
        true,
        3,
        vec![(0, false)],
        vec![
            OpSeed::Overlay(vec![sparse]),
            OpSeed::Delete {
                frag: 0,
                offsets: vec![1],
            },
        ],
    ));
    let sparse_step = |s: &Step| match s {
        Step::Overlay {
            shape, overlays, ..
        } => *shape == Some(Shape::Sparse) || overlays.iter().any(|o| o.shape == Shape::Sparse),
        _ => false,
    };
    assert!(case.steps.iter().any(sparse_step), "{:#?}", case.steps);
    assert!(case.steps.iter().any(|s| matches!(s, Step::Delete { .. })));
    assert!(
        matches!(&case.steps[0], Step::Create { indices, .. } if indices.len() == 1),
        "{:#?}",
        case.steps[0]
    );
    assert_eq!(
        case.requires,
        [
            C::Overlays,
            C::SparseOverlays,
            C::StableRowIds,
            C::Deletions,
            C::NestedFields,
            C::Exclusion
        ]
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );

    // Appends only, without stable row ids, no struct, no index: the content needs nothing
    // (not even overlays), so the case requires nothing.
    let plain = written(history(
        1,
        false,
        2,
        Vec::new(),
        vec![OpSeed::Append(vec![[9; 8]])],
    ));
    assert!(
        plain
            .steps
            .iter()
            .all(|s| matches!(s, Step::Create { .. } | Step::Append { .. })),
        "{:#?}",
        plain.steps
    );
    assert_eq!(plain.requires, Vec::<C>::new());
}

/// Whether trial `index` of `seed` builds as the fuzz loop builds it: drawn, its damage
/// resolved by the reference, then written by the corpus generator's store (in memory) with its
/// expected results.
fn builds(index: &RequirementIndex, seed: u64, trial: u64) -> Result<(), String> {
    let drawn = fuzz::case::Trial::draw(seed, trial, 12, trial % 2 == 1);
    match drawn.case("p", index).map_err(|e| e.to_string())? {
        Some(case) => lance_conformance::build::case(&case, None)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

#[test]
fn every_drawn_history_builds() {
    // Many seeds, an undamaged and a damaged trial of each: the generator never draws a history
    // (or a damage) its own store cannot build. (Kept to a few seconds; `fuzz` itself records
    // any trial that still cannot be built as a kit fault.)
    let index = index();
    let mut built = 0;
    for seed in 0..32u64 {
        let seed = fuzz::history::mix(seed);
        let trial = 2 * (seed % 500);
        for trial in [trial, trial + 1] {
            builds(&index, seed, trial)
                .unwrap_or_else(|e| panic!("seed {seed} trial {trial}: {e}"));
            built += 1;
        }
    }
    assert_eq!(built, 64);
    // A draw that could not be built before: a malformed lineage sequence the fragment's row
    // count cannot carry (offset_overflow on one row).
    builds(&index, 7920, 135).unwrap_or_else(|e| panic!("seed 7920 trial 135: {e}"));
}

#[test]
fn a_drawn_lineage_damage_always_fits_its_fragment() {
    use lance_conformance::case::corruption::LineageProblem;
    use lance_conformance::case::{Corruption, ManifestBytesCorruption};
    use lance_conformance::fuzz::case::{DamageSeed, damage};
    // Every damage seed against many histories: a malformed lineage sequence is drawn only
    // where the fragment's row count can carry it (the rule the store builds by).
    let (mut drawn, mut constrained) = (0, 0);
    for i in 0..2000u64 {
        let history = History::draw(11, i, 12);
        let built = fuzz::builder::concretize(&history);
        let Some(newest) = built.versions.last() else {
            continue;
        };
        for kind in 0..24u16 {
            for value in 0..10u16 {
                let seed = DamageSeed {
                    kind,
                    target: (i % 7) as u16,
                    value,
                };
                if let Some(Corruption::ManifestBytes(
                    ManifestBytesCorruption::MalformedLineage {
                        fragment, problem, ..
                    },
                )) = damage(&built, seed)
                {
                    let rows = newest.frag(fragment).unwrap().rows.len() as u64;
                    assert_eq!(problem.fits(rows), Ok(()), "history {i}, {seed:?}");
                    drawn += 1;
                    if LineageProblem::ALL.iter().any(|p| p.fits(rows).is_err()) {
                        constrained += 1;
                    }
                }
            }
        }
    }
    assert!(drawn > 100, "only {drawn} lineage damages drawn");
    // Fragments some rule cannot be broken in were drawn on: an unfiltered draw fails here.
    assert!(constrained > 0, "{constrained} of {drawn}");
}

/// A reader that answers as the oldest-overlay-wins reader until it has seen `after` datasets,
/// then replaces the fuzz loop's scratch directory with a file: every later trial cannot be
/// written, the kit's fault.
struct PullsTheScratchAway {
    inner: OldestOverlayWins,
    seen: std::collections::BTreeSet<String>,
    after: usize,
    root: Option<PathBuf>,
}

impl PullsTheScratchAway {
    fn saw(&mut self, at: &VersionRef) {
        self.seen.insert(at.dataset.clone());
        if self.seen.len() == self.after && self.root.is_none() {
            let root = Path::new(&at.dataset).parent().unwrap().parent().unwrap();
            std::fs::remove_dir_all(root).unwrap();
            std::fs::write(root, "not a directory").unwrap();
            self.root = Some(root.to_path_buf());
        }
    }
}

impl ConformanceReader for PullsTheScratchAway {
    fn describe(&mut self) -> Answer<Description> {
        self.inner.describe()
    }
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        self.saw(at);
        self.inner.open(at)
    }
    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
        self.inner.scan(request)
    }
    fn lineage(
        &mut self,
        at: &VersionRef,
        fragment: u64,
    ) -> Answer<lance_conformance::expected::FragmentLineage> {
        self.inner.lineage(at, fragment)
    }
    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        self.inner.exclusion(at)
    }
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer> {
        self.inner.query(at, query)
    }
}

#[test]
fn a_trial_the_kit_cannot_build_is_a_kit_fault_and_the_run_goes_on() {
    let mut reader = PullsTheScratchAway {
        inner: OldestOverlayWins(ReferenceReader::new()),
        seen: std::collections::BTreeSet::new(),
        after: 30,
        root: None,
    };
    let options = Options {
        seed: 3,
        cases: Some(40),
        shrink_budget: 0,
        ..Options::default()
    };
    let summary = fuzz::run(&mut reader, &index(), &options).unwrap();
    let root = reader
        .root
        .clone()
        .expect("the scratch directory was pulled away");
    std::fs::remove_file(&root).unwrap();
    // Every trial is accounted for: judged, skipped, or a kit fault naming seed and trial.
    let trial_faults: Vec<&fuzz::KitFaultTrial> = summary
        .kit_faults
        .iter()
        .filter(|f| f.problem.starts_with("could not be built: "))
        .collect();
    assert!(!trial_faults.is_empty(), "{summary:?}");
    assert_eq!(
        summary.cases + summary.skipped + trial_faults.len() as u64,
        40,
        "{summary:?}"
    );
    let first_fault = trial_faults[0].index;
    for (n, f) in trial_faults.iter().enumerate() {
        assert_eq!(f.seed, 3);
        assert_eq!(f.index, first_fault + n as u64, "one fault per later trial");
        let line = f.fault().to_string();
        assert!(
            line.starts_with(&format!("trial {} of seed 3 could not be built: ", f.index)),
            "{line}"
        );
    }
    // What was found before the fault is kept.
    assert!(
        summary
            .findings
            .iter()
            .any(|f| f.signature.line() == "wrong-value v# scan" && f.index < first_fault),
        "{summary:?}"
    );
    assert!(
        summary.line(3).ends_with(&format!(
            "; the kit failed on {} trial(s) (not the reader's failure; exit 2)",
            summary.kit_faults.len()
        )),
        "{}",
        summary.line(3)
    );
}

/// The reference, except that every scan breaks as a Python testee breaks: an error of its own
/// naming the dataset's absolute path, with a traceback from this machine.
struct BreaksWithATraceback(ReferenceReader);

impl ConformanceReader for BreaksWithATraceback {
    fn describe(&mut self) -> Answer<Description> {
        self.0.describe()
    }
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        self.0.open(at)
    }
    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
        let cwd = std::env::current_dir().unwrap();
        Err(Refusal::Broken(format!(
            "the testee reports an error of its own: OSError: cannot open {}/_versions/x.manifest, \
             /home/runner/work/lance/lance/rust/lance-file/src/reader.rs:249:13; \
             Encountered corrupt file {}\n\
             Traceback (most recent call last):\n  File \"{}/adapters/pylance/testee.py\", line 556, in handle\n\
             OSError: cannot open",
            request.at.dataset,
            // An object store names a local path without its leading `/`.
            request.at.dataset.trim_start_matches('/'),
            cwd.display()
        )))
    }
    fn lineage(
        &mut self,
        at: &VersionRef,
        fragment: u64,
    ) -> Answer<lance_conformance::expected::FragmentLineage> {
        self.0.lineage(at, fragment)
    }
    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        self.0.exclusion(at)
    }
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer> {
        self.0.query(at, query)
    }
}

#[test]
fn a_shrunk_case_holds_the_error_message_without_traceback_or_machine_paths() {
    let out = tempfile::tempdir().unwrap();
    let mut reader = BreaksWithATraceback(ReferenceReader::new());
    let options = Options {
        seed: 1,
        cases: Some(2),
        shrink_budget: 3,
        out: Some(out.path().to_path_buf()),
        ..Options::default()
    };
    let summary = fuzz::run(&mut reader, &index(), &options).unwrap();
    let crash = summary
        .findings
        .iter()
        .find(|f| f.signature.line() == "crash v# scan (other)")
        .unwrap_or_else(|| panic!("not found: {summary:?}"));
    let loaded = Case::load(crash.file.as_ref().unwrap()).unwrap();
    let text = &loaded.description;
    assert!(
        text.contains("OSError: cannot open <case>/dataset/_versions/x.manifest"),
        "{text}"
    );
    assert!(
        text.contains("x.manifest, lance-file/src/reader.rs:249:13"),
        "a source location keeps its crate, not the building machine's path: {text}"
    );
    assert!(
        text.contains("Encountered corrupt file <case>/dataset"),
        "a path an object store names without its leading `/` is a placeholder too: {text}"
    );
    assert!(!text.contains("/home/runner"), "{text}");
    assert!(!text.contains("Traceback"), "{text}");
    assert!(!text.contains("testee.py"), "{text}");
    let cwd = std::env::current_dir().unwrap().display().to_string();
    let tmp = std::env::temp_dir().display().to_string();
    let tmp = tmp.trim_end_matches('/');
    for machine in [cwd.as_str(), tmp, tmp.trim_start_matches('/')] {
        assert!(!text.contains(machine), "{machine} in {text}");
    }
    // The check keeps the whole message for the JSON report; only the case file is cleaned.
    assert!(
        crash
            .check
            .message
            .as_deref()
            .unwrap()
            .contains("Traceback")
    );
}
