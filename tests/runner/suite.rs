//! The in-process runner's vacuous-pass guard: deliberately broken readers must fail the suite.
//! (The reference passing the whole corpus in process, which is all an implementer writes for
//! their own reader, is the runner crate's own test: `runner/tests/corpus.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use lance_conformance::case::Level;
use lance_conformance::expected::tagged::Tagged;
use lance_conformance::expected::{FragmentLineage, Hit, QueryKind};
use lance_conformance::runner::protocol::{
    ExclusionResult, OpenResult, QueryAnswer, QueryPlan, QueryRequest, ReadError, ScanRequest,
    ScanResult, VersionRef,
};
use lance_conformance::runner::{
    Answer, ConformanceReader, Description, FailureKind, Filters, Options, Outcome,
    ReferenceReader, Refusal, Report, Verdict, run_suite,
};

use super::corpus;

fn run(reader: &mut dyn ConformanceReader) -> Report {
    run_suite(reader, Options::new(corpus())).unwrap()
}

fn negative_ids() -> BTreeSet<String> {
    // a twin is negative when the case it is a twin of is (it shares that case's `expected/`)
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let index =
        lance_conformance::case::RequirementIndex::load(&root.join("spec/requirements.toml"))
            .unwrap();
    lance_conformance::corpus::load(&corpus(), &index)
        .unwrap()
        .into_iter()
        .filter(|c| c.expected_dir().join("expected/error.json").is_file())
        .map(|c| c.case.id.clone())
        .collect()
}

/// A reader wrapping the reference, broken in one declared way.
struct Broken {
    inner: ReferenceReader,
    how: How,
}

#[derive(Clone, Copy, PartialEq)]
enum How {
    /// Scans drop their last row.
    WrongRows,
    /// Flips one value of the first row of each scan.
    WrongValue,
    /// Turns every refusal of the data into an empty, successful answer.
    NeverErrors,
    /// Refuses every version as `invalid`.
    AlwaysErrors,
    /// Answers every query with no rows.
    EmptyQueries,
    /// Reports every exclusion set empty.
    NoExclusions,
    /// Declares no capability at all, and reads everything anyway.
    DeclaresNothing,
    /// Refuses every undamaged twin (`undamaged/`) as invalid.
    RefusesTwins,
    /// Reports every refusal with class `invalid`.
    InvalidClass,
    /// Answers queries rightly but reports a plan without the index.
    FlatPlan,
    /// Does not declare `btree-index` and ignores BTree indices as a reader that cannot read
    /// them does: scalar queries answered on the flat path, damage to a BTree's files unseen
    /// (a damaged version's scalar query is answered as the twin's flat scan answers it).
    IgnoresBTree,
    /// As `IgnoresBTree`, but a damaged version's scalar query is answered with no rows.
    IgnoresBTreeWrongly,
}

fn invalid() -> Refusal {
    Refusal::Error(ReadError {
        class: "invalid".into(),
        code: None,
        message: "always".into(),
    })
}

impl ConformanceReader for Broken {
    fn describe(&mut self) -> Answer<Description> {
        let mut d = self.inner.describe()?;
        if self.how == How::DeclaresNothing {
            d.capabilities.clear();
        }
        if matches!(self.how, How::IgnoresBTree | How::IgnoresBTreeWrongly) {
            d.capabilities.remove("btree-index");
        }
        Ok(d)
    }
    fn open(&mut self, at: &VersionRef) -> Answer<OpenResult> {
        if self.ignores(at) {
            return self.inner.open(&twin_of(at));
        }
        if self.how == How::RefusesTwins && at.dataset.ends_with("/undamaged") {
            return Err(invalid());
        }
        match (self.how, self.inner.open(at)) {
            (How::AlwaysErrors, _) => Err(invalid()),
            (How::InvalidClass, Err(Refusal::Error(mut e))) => {
                e.class = "invalid".into();
                Err(Refusal::Error(e))
            }
            (How::NeverErrors, Err(Refusal::Error(_))) => Ok(OpenResult {
                version: at.version,
            }),
            (_, r) => r,
        }
    }
    fn scan(&mut self, request: &ScanRequest) -> Answer<ScanResult> {
        if self.ignores(&request.at) {
            return self.inner.scan(&ScanRequest {
                at: twin_of(&request.at),
                ..request.clone()
            });
        }
        let r = self.inner.scan(request);
        match (self.how, r) {
            (How::AlwaysErrors, _) => Err(invalid()),
            (How::InvalidClass, Err(Refusal::Error(mut e))) => {
                e.class = "invalid".into();
                Err(Refusal::Error(e))
            }
            (How::NeverErrors, Err(Refusal::Error(_))) => Ok(ScanResult {
                columns: vec![],
                rows: vec![],
            }),
            (How::WrongRows, Ok(mut s)) => {
                s.rows.pop();
                Ok(s)
            }
            (How::WrongValue, Ok(mut s)) => {
                if let Some(v) = s.rows.first_mut().and_then(|r| r.values.first_mut()) {
                    *v = Tagged {
                        data_type: v.data_type.clone(),
                        value: if v.value.is_null() {
                            serde_json::json!("1")
                        } else {
                            serde_json::Value::Null
                        },
                    };
                }
                Ok(s)
            }
            (_, r) => r,
        }
    }
    fn lineage(&mut self, at: &VersionRef, fragment: u64) -> Answer<FragmentLineage> {
        self.inner.lineage(at, fragment)
    }
    fn exclusion(&mut self, at: &VersionRef) -> Answer<ExclusionResult> {
        let mut r = self.inner.exclusion(at)?;
        if self.how == How::NoExclusions {
            r.exclusion_sets.iter_mut().for_each(|s| s.offsets.clear());
        }
        Ok(r)
    }
    fn query(&mut self, at: &VersionRef, query: &QueryRequest) -> Answer<QueryAnswer> {
        let ignores = matches!(self.how, How::IgnoresBTree | How::IgnoresBTreeWrongly);
        if ignores && query.vector.is_none() {
            let answer = if self.ignores(at) {
                let mut a = self.inner.query(&twin_of(at), query)?;
                if self.how == How::IgnoresBTreeWrongly {
                    a.final_rows.clear();
                }
                a
            } else {
                self.inner.query(at, query)?
            };
            return Ok(QueryAnswer {
                plan: Some(QueryPlan {
                    index: false,
                    text: "a full scan".into(),
                }),
                ..answer
            });
        }
        let mut r = match (self.how, self.inner.query(at, query)) {
            // A query at a damaged version is answered too (with nothing).
            (How::NeverErrors, Err(Refusal::Error(_))) => QueryAnswer {
                kind: if query.vector.is_some() {
                    QueryKind::Vector
                } else {
                    QueryKind::Scalar
                },
                final_rows: Vec::new(),
                reconciliation: None,
                plan: None,
            },
            (_, r) => r?,
        };
        if self.how == How::EmptyQueries {
            r.final_rows = Vec::<Hit>::new();
        }
        if self.how == How::FlatPlan {
            r.plan = Some(QueryPlan {
                index: false,
                text: "a full scan".into(),
            });
        }
        Ok(r)
    }
}

impl Broken {
    /// Whether this reader never sees the damage of the damaged version `at`: it ignores
    /// BTree indices, and the case's only damage is to BTree indices (their files or coverage),
    /// so it reads what the undamaged twin holds.
    fn ignores(&self, at: &VersionRef) -> bool {
        use lance_conformance::case::{
            Case, ContentCorruption, Corruption, FileBytesCorruption, IndexKindSpec, Step,
        };
        if !matches!(self.how, How::IgnoresBTree | How::IgnoresBTreeWrongly)
            || !at.dataset.ends_with("/dataset")
        {
            return false;
        }
        let dir = std::path::Path::new(&at.dataset).parent().unwrap();
        let Ok(case) = Case::load(&dir.join("case.toml")) else {
            return false;
        };
        let mut btrees = BTreeSet::new();
        let mut damaged = Vec::new();
        for step in &case.steps {
            match step {
                Step::Create { indices, .. } => btrees.extend(
                    indices
                        .iter()
                        .filter(|i| i.kind == IndexKindSpec::Btree)
                        .map(|i| i.name.clone()),
                ),
                Step::BuildIndex { name, kind, .. } if *kind == IndexKindSpec::Btree => {
                    btrees.insert(name.clone());
                }
                Step::Corrupt(
                    Corruption::FileBytes(FileBytesCorruption::DamageIndexFiles { index, .. })
                    | Corruption::Content(ContentCorruption::SetIndexCoverage { index, .. }),
                ) => damaged.push(index.clone()),
                Step::Corrupt(_) => return false,
                _ => {}
            }
        }
        !damaged.is_empty() && damaged.iter().all(|i| btrees.contains(i))
    }
}

fn twin_of(at: &VersionRef) -> VersionRef {
    VersionRef {
        dataset: format!("{}/undamaged", at.dataset.trim_end_matches("/dataset")),
        version: at.version,
    }
}

fn broken(how: How) -> Report {
    run(&mut Broken {
        inner: ReferenceReader::new(),
        how,
    })
}

fn verdict(report: &Report, id: &str) -> Verdict {
    report.cases.iter().find(|c| c.id == id).unwrap().verdict
}

#[test]
fn a_reader_returning_wrong_rows_fails_every_readable_case() {
    // covers: OVL-PREC-1
    let negatives = negative_ids();
    for how in [How::WrongRows, How::WrongValue] {
        let report = broken(how);
        assert!(!report.passed());
        for c in &report.cases {
            // Negative cases scan their earlier versions too, unless the damage made them
            // unreadable; the only case left is a single-version negative case.
            let scans = c.checks.iter().any(|k| k.name.to_string().contains("scan"));
            if scans {
                assert_eq!(c.verdict, Verdict::Fail, "{} passed a broken scan", c.id);
            } else {
                assert!(negatives.contains(&c.id), "{} ran no scan", c.id);
            }
        }
    }
}

#[test]
fn a_right_answer_from_the_flat_path_fails_where_the_index_should_answer() {
    // covers: IDX-READ-6
    let report = broken(How::FlatPlan);
    let case = report
        .cases
        .iter()
        .find(|c| c.id == "stale-hit-dropped")
        .unwrap();
    assert_eq!(case.verdict, Verdict::Fail);
    assert!(case.checks.iter().any(|k| {
        k.verdict == Verdict::Fail
            && k.message
                .as_deref()
                .is_some_and(|m| m.contains("index not used"))
    }));
}

#[test]
fn a_reader_ignoring_an_index_it_does_not_declare_is_not_judged_on_it() {
    // A reader without `btree-index` that ignores BTree indices (as pylance before 14.0.0
    // does) answers rightly on the flat path: neither the plan nor the damage it never reads
    // counts against it, and every answer is still judged.
    let report = broken(How::IgnoresBTree);
    let check = |case: &str, name: &str| {
        let c = report.cases.iter().find(|c| c.id == case).unwrap();
        c.checks
            .iter()
            .find(|k| k.name.to_string() == name)
            .unwrap_or_else(|| panic!("{case}: no check {name}"))
            .clone()
    };
    let plan = check("stale-hit-dropped", "v1 query \"age = 25\"");
    assert_eq!(plan.verdict, Verdict::Unsupported);
    assert!(
        plan.message
            .as_deref()
            .unwrap()
            .contains("needs btree-index")
    );
    for case in [
        "damaged-index-truncated-data",
        "damaged-index-lookup-batch-size",
    ] {
        assert_eq!(check(case, "v1 refuses").verdict, Verdict::Unsupported);
        assert_eq!(check(case, "v1 read as its twin").verdict, Verdict::Pass);
    }
    let failing: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.verdict.is_failure())
        .map(|c| (c.id.clone(), c.first_problem()))
        .collect();
    assert!(failing.is_empty(), "{failing:?}");
    // The damaged read is still judged: answering a damaged version's query wrongly fails.
    let report = broken(How::IgnoresBTreeWrongly);
    let c = report
        .cases
        .iter()
        .find(|c| c.id == "damaged-index-missing-lookup")
        .unwrap();
    assert!(c.verdict.is_failure());
    assert!(
        c.checks
            .iter()
            .any(|k| k.name.to_string() == "v2 read as its twin" && k.verdict == Verdict::Fail)
    );
}

#[test]
fn the_html_report_scores_areas_and_marks_changed_verdicts() {
    use lance_conformance::runner::html;
    let good = run(&mut ReferenceReader::new());
    let flat = broken(How::FlatPlan);
    let mut other = flat.clone();
    other.implementation.name = "another reader".into();
    let reports = [good, flat, other];
    let scores = html::area_scores(&reports);
    let indices = &scores.iter().find(|(a, _)| a == "indices").unwrap().1;
    // The reference passes the whole area; the flat-plan reader fails the index-path cases.
    assert_eq!(indices[0].passed, indices[0].total);
    assert_eq!(indices[0].percent(), 100);
    assert!(indices[1].passed < indices[1].total);
    assert!(indices[1].percent() < 100);
    for (area, per_run) in &scores {
        let cases = reports[0].cases.iter().filter(|c| &c.area == area).count();
        assert!(per_run.iter().all(|s| s.total == cases), "{area}");
    }
    // Same implementation, verdict moved: marked with the earlier run and its verdict.
    assert_eq!(
        html::changed(&reports, 1, "stale-hit-dropped"),
        Some((0, Verdict::Pass))
    );
    assert_eq!(html::changed(&reports, 1, "direct-overlay"), None);
    assert_eq!(html::changed(&reports, 0, "stale-hit-dropped"), None);
    // Another implementation is never compared with the reference's runs.
    assert_eq!(html::previous_run(&reports, 2), None);
    assert_eq!(html::changed(&reports, 2, "stale-hit-dropped"), None);
    let index = lance_conformance::case::RequirementIndex::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("spec/requirements.toml"),
    )
    .unwrap();
    let page = html::render(&reports, &index, ".", "scores");
    assert!(page.contains("<table class=\"scores\">"));
    let marks = page.matches("<span class=\"delta\" title=").count();
    let moved = reports[1]
        .cases
        .iter()
        .filter(|c| html::changed(&reports, 1, &c.id).is_some())
        .count();
    assert!(moved > 0);
    assert_eq!(marks, moved);
}

#[test]
fn a_reader_that_never_errors_fails_every_negative_case() {
    // covers: OVL-COV-3, OVL-SHAPE-3, OVL-LAYOUT-6, FLG-READ-1
    let report = broken(How::NeverErrors);
    assert!(!report.passed());
    let negatives = negative_ids();
    assert!(negatives.len() >= 4);
    for c in &report.cases {
        let expected = if negatives.contains(&c.id) {
            Verdict::Fail
        } else {
            Verdict::Pass
        };
        assert_eq!(c.verdict, expected, "{}", c.id);
    }
}

#[test]
fn a_reader_that_always_errors_fails_every_case() {
    let report = broken(How::AlwaysErrors);
    assert!(!report.passed());
    assert_eq!(report.summary.passed, 0, "{:?}", report.summary);
    // Every negative case has an undamaged twin, which such a reader refuses: its refusal of
    // the damaged version is inconclusive, so no negative case passes, not even one whose
    // only version is the damaged one.
    for c in &report.cases {
        assert!(c.verdict.is_failure(), "{}", c.id);
        let counted = match c.level {
            Level::Must => Outcome::Failed,
            Level::Should => Outcome::Advisory,
        };
        assert_eq!(c.outcome, counted, "{}", c.id);
    }
}

#[test]
fn a_refusal_counts_only_when_the_twin_reads() {
    let report = broken(How::RefusesTwins);
    let negatives = negative_ids();
    for c in &report.cases {
        if !negatives.contains(&c.id) {
            assert_eq!(c.verdict, Verdict::Pass, "{}", c.id);
            continue;
        }
        let refuses = c
            .checks
            .iter()
            .find(|k| k.name.to_string().ends_with(" refuses"))
            .unwrap();
        assert_eq!(refuses.verdict, Verdict::Inconclusive, "{}", c.id);
        assert!(
            refuses
                .message
                .as_deref()
                .unwrap()
                .starts_with("inconclusive: "),
            "{}",
            c.id
        );
        let twin = c
            .checks
            .iter()
            .find(|k| k.name.to_string().ends_with(" twin scan"))
            .unwrap();
        assert_eq!(twin.kind, Some(FailureKind::RefusedReadable), "{}", c.id);
        if c.level == Level::Must {
            assert_eq!(c.outcome, Outcome::Failed, "{}", c.id);
        }
    }
}

#[test]
fn the_refusal_class_is_a_check_of_its_own_at_the_level_the_spec_gives() {
    // covers: DS-FRAME-1, LIN-COL-2
    let report = broken(How::InvalidClass);
    let case = |id: &str| report.cases.iter().find(|c| c.id == id).unwrap();
    // DS-FRAME-1 says "refuses as malformed": the class is MUST.
    let tiny = case("tiny-manifest");
    let class = tiny
        .checks
        .iter()
        .find(|k| k.name.to_string().contains("refusal class"))
        .unwrap();
    assert_eq!((class.verdict, class.level), (Verdict::Fail, Level::Must));
    assert_eq!(class.kind, Some(FailureKind::WrongClass));
    assert_eq!(tiny.outcome, Outcome::Failed);
    // Refusing is the MUST, and passes whatever the class.
    let refuses = tiny
        .checks
        .iter()
        .find(|k| k.name.to_string() == "v1 refuses")
        .unwrap();
    assert_eq!(refuses.verdict, Verdict::Pass);
    // FLG-READ-1 only says "refuses": the class is SHOULD and its failure advisory.
    let flag = case("unknown-reader-flag");
    let class = flag
        .checks
        .iter()
        .find(|k| k.name.to_string().contains("refusal class"))
        .unwrap();
    assert_eq!((class.verdict, class.level), (Verdict::Fail, Level::Should));
    assert_eq!(flag.outcome, Outcome::Advisory);
    // A class that was right stays right.
    let cov = case("coverage-past-end");
    assert_eq!(cov.outcome, Outcome::Passed, "{:?}", cov.checks);
}

#[test]
fn a_reader_without_a_feature_is_judged_by_its_refusal_profile() {
    // covers: OVL-FLAG-1, FLG-READ-1
    let without = |drop: &[&str]| {
        let caps: BTreeSet<String> = ReferenceReader::capabilities()
            .into_iter()
            .filter(|c| !drop.contains(&c.as_str()))
            .collect();
        run(&mut ReferenceReader::with_capabilities(caps))
    };
    // The reference limited to no overlays refuses every version that needs them and reads
    // the others: it passes every case, and the overlay cases only through the profile.
    let report = without(&["overlays", "sparse-overlays", "spilled-lineage"]);
    assert!(report.passed(), "{:?}", report.summary);
    assert_eq!(report.summary.skipped, 0);
    let precedence = report
        .cases
        .iter()
        .find(|c| c.id == "precedence-dense")
        .unwrap();
    assert_eq!(precedence.refusal_profile, ["overlays"]);
    assert!(
        precedence
            .checks
            .iter()
            .any(|k| k.name.to_string() == "v1 scan" && k.verdict == Verdict::Pass)
    );
    assert!(
        precedence
            .checks
            .iter()
            .any(|k| k.name.to_string() == "v2 refuses (needs overlays)"
                && k.verdict == Verdict::Pass)
    );
    let spilled = report
        .cases
        .iter()
        .find(|c| c.id == "rewrite-lineage-spilled")
        .unwrap();
    assert!(
        spilled
            .refusal_profile
            .contains(&"spilled-lineage".to_string())
    );
    // The same declaration from a reader that reads overlays anyway fails those cases: the
    // first rule of both features is a case family any reader can fail.
    let report = broken(How::DeclaresNothing);
    let overlay = report
        .cases
        .iter()
        .find(|c| c.id == "precedence-dense")
        .unwrap();
    assert_eq!(overlay.kind, Some(FailureKind::ReadUnsupported));
    assert_eq!(overlay.outcome, Outcome::Failed);
}

#[test]
fn wrong_query_answers_and_exclusion_sets_fail_the_cases_that_check_them() {
    // covers: OVL-QRY-1, OVL-IDX-1
    let report = broken(How::EmptyQueries);
    assert_eq!(verdict(&report, "worked-example"), Verdict::Fail);
    assert_eq!(verdict(&report, "fold-rebuild-indices"), Verdict::Fail);
    let report = broken(How::NoExclusions);
    assert_eq!(verdict(&report, "null-cover"), Verdict::Fail);
    assert_eq!(verdict(&report, "worked-example"), Verdict::Fail);
}

#[test]
fn a_reader_declaring_nothing_is_sent_everything_and_never_sent_checks_it_lacks() {
    let report = broken(How::DeclaresNothing);
    for c in &report.cases {
        // Every version that needs a data capability must be refused, and this reader reads
        // them all: a case fails exactly when some version needs something.
        let profiled = c
            .checks
            .iter()
            .any(|k| k.name.to_string().contains("(needs "));
        assert_eq!(c.verdict.is_failure(), profiled, "{}", c.id);
        assert_eq!(profiled, !c.refusal_profile.is_empty(), "{}", c.id);
        // Whatever ran, no check needing a check capability was sent.
        assert!(
            c.checks
                .iter()
                .filter(|k| k.name.to_string().ends_with("exclusion")
                    || k.name.to_string().contains("query")
                    || k.name.to_string().ends_with("lineage"))
                .all(|k| k.verdict == Verdict::Unsupported),
            "{}",
            c.id
        );
    }
    assert!(
        report
            .cases
            .iter()
            .filter(|c| !c.refusal_profile.is_empty())
            .count()
            > report.cases.len() / 2
    );
}

#[test]
fn missing_check_capabilities_leave_the_scans_judged() {
    let caps: BTreeSet<String> = ["overlays", "sparse-overlays", "stable-row-ids", "deletions"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut reader = ReferenceReader::with_capabilities(caps);
    let report = run(&mut reader);
    for id in ["worked-example", "precedence-dense"] {
        let c = report.cases.iter().find(|c| c.id == id).unwrap();
        assert_eq!(c.verdict, Verdict::Pass, "{id}");
        let unsupported: Vec<String> = c
            .checks
            .iter()
            .filter(|k| k.verdict == Verdict::Unsupported)
            .map(|k| k.name.to_string())
            .collect();
        assert!(
            unsupported.iter().any(|n| n.ends_with("exclusion")),
            "{unsupported:?}"
        );
        assert!(
            unsupported.iter().any(|n| n.ends_with("lineage")),
            "{unsupported:?}"
        );
        assert!(
            c.checks
                .iter()
                .any(|k| k.name.to_string().ends_with("scan") && k.verdict == Verdict::Pass)
        );
    }
    // A version needing an undeclared data capability is refused, by the refusal profile.
    let c = report
        .cases
        .iter()
        .find(|c| c.id == "rewrite-lineage-spilled")
        .unwrap();
    assert_eq!(c.verdict, Verdict::Pass);
    assert_eq!(c.refusal_profile, ["spilled-lineage"]);
}

#[test]
fn filters_select_by_id_area_requirement_and_tag() {
    let ids = |filters: Filters| -> Vec<String> {
        let mut options = Options::new(corpus());
        options.filters = filters;
        let report = run_suite(&mut ReferenceReader::new(), options).unwrap();
        report.cases.into_iter().map(|c| c.id).collect()
    };
    // The expected selections come from reading the corpus directly, so the test keeps
    // holding as cases are added.
    let index = lance_conformance::case::RequirementIndex::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("spec/requirements.toml"),
    )
    .unwrap();
    let all = lance_conformance::corpus::load(&corpus(), &index).unwrap();
    let expect = |keep: &dyn Fn(&lance_conformance::corpus::CaseDir) -> bool| -> BTreeSet<String> {
        all.iter()
            .filter(|c| keep(c))
            .map(|c| c.case.id.clone())
            .collect()
    };
    let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();

    let by_id = ids(Filters {
        cases: vec!["null-*".into()],
        ..Filters::default()
    });
    assert!(by_id.contains(&"null-cover".to_string()), "{by_id:?}");
    assert_eq!(set(by_id), expect(&|c| c.case.id.starts_with("null-")));
    let lineage = ids(Filters {
        areas: vec!["lineage".into()],
        ..Filters::default()
    });
    assert!(!lineage.is_empty());
    assert_eq!(set(lineage), expect(&|c| c.area == "lineage"));
    let cov = ids(Filters {
        requirements: vec!["OVL-COV-3".into()],
        ..Filters::default()
    });
    assert!(cov.contains(&"coverage-past-end".to_string()), "{cov:?}");
    assert_eq!(
        set(cov),
        expect(&|c| c.case.requirements.iter().any(|r| r == "OVL-COV-3"))
    );
    let both = ids(Filters {
        areas: vec!["overlays".into()],
        tags: vec!["dense".into()],
        ..Filters::default()
    });
    assert!(both.contains(&"null-cover".to_string()), "{both:?}");
    assert_eq!(
        set(both),
        expect(&|c| c.area == "overlays" && c.case.tags.iter().any(|t| t == "dense"))
    );
    let typo = run_suite(
        &mut ReferenceReader::new(),
        Options {
            filters: Filters {
                areas: vec!["overlay".into()],
                ..Filters::default()
            },
            ..Options::new(corpus())
        },
    );
    assert!(typo.unwrap_err().to_string().contains("--area overlay"));
}

#[test]
fn cases_shared_among_readers_are_reported_as_one_reader_reports_them() {
    use lance_conformance::runner::output::{Detail, human, json, junit};
    use lance_conformance::runner::run_suite_shared;
    let same = |one: &Report, shared: &Report, what: &str| {
        assert_eq!(json(one), json(shared), "{what}: JSON");
        assert_eq!(junit(one), junit(shared), "{what}: JUnit");
        for detail in [Detail::Quiet, Detail::Normal, Detail::Verbose] {
            assert_eq!(
                human(one, detail),
                human(shared, detail),
                "{what}: {detail:?}"
            );
        }
    };
    // The reference, passing: one reader, against two readers of the stored corpus.
    let one = run(&mut ReferenceReader::new());
    let mut two = [
        ReferenceReader::of_stored_corpus(),
        ReferenceReader::of_stored_corpus(),
    ];
    let shared = run_suite_shared(&mut two, Options::new(corpus())).unwrap();
    assert!(shared.passed());
    same(&one, &shared, "the reference");
    // A broken reader fails the same cases with the same words, in the same order.
    let broken_one = broken(How::WrongValue);
    let mut three: Vec<Broken> = (0..3)
        .map(|_| Broken {
            inner: ReferenceReader::new(),
            how: How::WrongValue,
        })
        .collect();
    let broken_shared = run_suite_shared(&mut three, Options::new(corpus())).unwrap();
    assert!(!broken_shared.passed());
    same(&broken_one, &broken_shared, "a wrong value");
    // No reader is an error of the inputs, not an empty pass.
    let none: &mut [ReferenceReader] = &mut [];
    assert!(run_suite_shared(none, Options::new(corpus())).is_err());
}
