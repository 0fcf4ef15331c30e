//! Traceability of the conformance cases: every `case.toml` parses and follows the format
//! rules, ids are unique, every named requirement id exists, the published JSON Schema knows
//! the same vocabulary as the code, metamorphic twins read the same, and (reported, not yet
//! enforced) which requirement ids no case covers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lance_conformance::case::{Case, RequirementIndex, Step};
use lance_conformance::corpus::{self, CaseDir};
use lance_conformance::{build, expected};

/// Every requirement id is named by at least one case, except these, which no dataset small
/// enough for the corpus can exercise (each is covered by reference unit tests instead).
const NOT_EXPRESSIBLE_AS_CASES: &[(&str, &str)] = &[
    (
        "IDX-READ-9",
        "the reference compactor uncovers an index instead of remapping it, so the corpus cannot \
         build a remapped index; pinned by reference-io/tests/index_files.rs and the Lance-written \
         compaction histories of tests/interop/validate_lance_written.py",
    ),
    (
        "DS-FILE-2",
        "a file over the reader's size limit would make the corpus gigabytes large",
    ),
    (
        "IDX-READ-10",
        "the kit's writer writes no IVF_PQ index (Lance's PQ training is not reproducible byte \
         for byte); pinned by reference-io/tests/ivf_pq.rs over Lance-written fixtures and the \
         ivf-pq histories of tests/interop/validate_lance_written.py",
    ),
];

/// Requirements of data files of v2.1 and later that wait for corpus cases. Empty: the last one,
/// DS-LEAF-3, is pinned by `dataset/struct-leaves-disagree` since the store can write a leaf
/// whose struct layer disagrees with its siblings' (`damage_page` `struct_layer`). The list is
/// not to be grown: a new v2.1+ requirement lands with its case.
const AWAITING_V2_2_CASES: &[&str] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn requirements() -> RequirementIndex {
    RequirementIndex::load(&root().join("spec/requirements.toml")).unwrap()
}

fn cases() -> Vec<CaseDir> {
    corpus::load(&root().join("conformance-cases"), &requirements())
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_case_parses_validates_and_has_a_unique_id() {
    let all = cases();
    assert!(all.len() >= 10, "only {} cases", all.len());
    let ids: BTreeSet<&str> = all.iter().map(|c| c.case.id.as_str()).collect();
    assert_eq!(ids.len(), all.len(), "duplicate case ids");
    for c in &all {
        assert_eq!(c.dir.file_name().unwrap().to_string_lossy(), c.case.id);
        assert!(!c.area.is_empty());
    }
}

#[test]
fn every_case_names_only_existing_requirement_ids() {
    let index = requirements();
    for c in cases() {
        for r in &c.case.requirements {
            assert!(
                index.levels.contains_key(r),
                "case {} names unknown requirement {r}",
                c.case.id
            );
        }
    }
}

#[test]
fn validation_rejects_what_the_format_forbids() {
    let index = requirements();
    let base = std::fs::read_to_string(
        root().join("conformance-cases/flags/unknown-reader-flag/case.toml"),
    )
    .unwrap();
    let ok = Case::parse(&base, "base").unwrap();
    ok.validate(&index).unwrap();
    for (what, text) in [
        ("unknown requirement", base.replace("\"FLG-BITS-2\"", "\"FLG-NOPE-9\"")),
        ("id with capitals", base.replace("id = \"unknown-reader-flag\"", "id = \"Unknown\"")),
        ("corrupt without expect_error", base.replace("expect_error = { class = \"unsupported_feature\", code = \"unknown_reader_flag\" }", "")),
        ("bad class", base.replace("class = \"unsupported_feature\"", "class = \"refused\"")),
        (
            "v1 names before damage",
            base.replace("[[steps]]\nop = \"corrupt\"", "[[steps]]\nop = \"reencode\"\nform = \"v1_manifest_names\"\n\n[[steps]]\nop = \"corrupt\""),
        ),
    ] {
        let parsed = Case::parse(&text, what);
        assert!(parsed.is_err() || parsed.unwrap().validate(&index).is_err(), "{what} was accepted");
    }
    for (what, text) in [
        (
            "unknown key",
            base.replace("title =", "titel = \"x\"\ntitle ="),
        ),
        (
            "unknown op",
            base.replace("op = \"corrupt\"", "op = \"explode\""),
        ),
    ] {
        assert!(Case::parse(&text, what).is_err(), "{what} parsed");
    }
}

fn strings_at<'a>(json: &'a serde_json::Value, pointer: &str) -> BTreeSet<&'a str> {
    json.pointer(pointer)
        .unwrap_or_else(|| panic!("{pointer} missing from case.schema.json"))
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn the_published_case_schema_knows_the_same_vocabulary() {
    let text = std::fs::read_to_string(root().join("spec/schemas/case.schema.json")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ops = strings_at(&schema, "/$defs/step/properties/op/enum");
    let all_ops: BTreeSet<&str> = [
        "create",
        "append",
        "overlay",
        "delete",
        "build_index",
        "compact_overlays",
        "fold",
        "rewrite_rows",
        "commit_retry",
        "set_config",
        "add_fields",
        "drop_fields",
        "corrupt",
        "reorder_overlays",
        "set_writer_flag",
        "expect_refusal",
        "update_rows",
        "update",
        "rewrite_columns",
        "merge_insert",
        "restore",
        "reserve_row_ids",
        "clear_lineage",
        "clear_index_coverage",
        "add_system_column",
        "reencode",
    ]
    .into_iter()
    .collect();
    assert_eq!(ops, all_ops);
    // Every op a case uses must be one the schema lists, and must parse as that op.
    for c in cases() {
        for s in &c.case.steps {
            assert!(ops.contains(s.op()), "{} uses {}", c.case.id, s.op());
        }
    }
    let whats = strings_at(&schema, "/$defs/corruption/properties/what/enum");
    for w in &whats {
        let toml = format!("what = \"{w}\"");
        // Each name is a Corruption variant: parsing fails on missing fields, never on the name.
        let err = toml::from_str::<lance_conformance::case::Corruption>(&toml)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_none_or(|e| !e.contains("unknown variant")),
            "{w}: {err:?}"
        );
    }
    // The other direction: every corruption and re-encoding a case uses is one the schema
    // lists, so the published schema accepts the whole corpus (tools/check_case_schema.py
    // validates every case.toml against it in CI).
    for c in cases() {
        for s in &c.case.steps {
            if let lance_conformance::case::Step::Corrupt(x) = s {
                assert!(
                    whats.contains(x.name().as_str()),
                    "{}: {}",
                    c.case.id,
                    x.name()
                );
            }
        }
    }
    let capabilities = strings_at(&schema, "/$defs/capability/enum");
    for c in cases() {
        for r in &c.case.requires {
            let name = serde_json::to_value(r).unwrap();
            assert!(capabilities.contains(name.as_str().unwrap()));
        }
    }
}

#[test]
fn metamorphic_twins_read_the_same_at_every_version() {
    // covers: LIN-READ-4
    let mut groups: BTreeMap<String, Vec<CaseDir>> = BTreeMap::new();
    for c in cases() {
        for tag in c.case.tags.iter().filter_map(|t| t.strip_prefix("twin:")) {
            groups.entry(tag.to_string()).or_default().push(c.clone());
        }
    }
    assert!(!groups.is_empty(), "no twin cases");
    for (group, members) in groups {
        assert!(members.len() >= 2, "twin group {group} has one member");
        let read = |c: &CaseDir| -> Vec<expected::ExpectedVersion> {
            let built = build::case(&c.case, None).unwrap();
            built
                .read
                .versions
                .iter()
                .map(|v| expected::compute(&c.case, v).unwrap())
                .collect()
        };
        let first = read(&members[0]);
        for other in &members[1..] {
            let versions = read(other);
            assert_eq!(
                versions.len(),
                first.len(),
                "{group}: version counts differ"
            );
            for (a, b) in first.iter().zip(&versions) {
                assert_eq!(
                    a.rows, b.rows,
                    "{group}: rows differ at version {}",
                    a.version
                );
                assert_eq!(a.columns, b.columns);
                assert_eq!(a.exclusion_sets, b.exclusion_sets);
            }
        }
    }
}

#[test]
fn requirement_coverage_by_cases() {
    let index = requirements();
    let covered: BTreeSet<String> = cases()
        .iter()
        .flat_map(|c| c.case.requirements.clone())
        .collect();
    let uncovered: Vec<&String> = index
        .levels
        .keys()
        .filter(|id| !covered.contains(*id))
        .filter(|id| !NOT_EXPRESSIBLE_AS_CASES.iter().any(|(x, _)| x == id))
        .filter(|id| !AWAITING_V2_2_CASES.contains(&id.as_str()))
        .collect();
    // A waiting id that a case now covers leaves the list.
    let stale: Vec<&&str> = AWAITING_V2_2_CASES
        .iter()
        .filter(|id| covered.contains(**id) || !index.levels.contains_key(**id))
        .collect();
    assert!(
        stale.is_empty(),
        "remove from AWAITING_V2_2_CASES: {stale:?}"
    );
    if !uncovered.is_empty() {
        eprintln!(
            "{} of {} requirement ids are covered by no case:",
            uncovered.len(),
            index.levels.len()
        );
        for id in &uncovered {
            eprintln!("  {id}");
        }
    }
    assert!(uncovered.is_empty(), "uncovered: {uncovered:?}");
    for (id, why) in NOT_EXPRESSIBLE_AS_CASES {
        assert!(
            index.levels.contains_key(*id),
            "{id} is not a requirement ({why})"
        );
        assert!(
            !covered.contains(*id),
            "{id} is covered by a case now: drop it from the list"
        );
    }
}

#[test]
fn negative_cases_damage_only_the_newest_version() {
    for c in cases() {
        let corrupt_steps = c
            .case
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Corrupt(_)))
            .count();
        assert_eq!(corrupt_steps > 0, c.case.is_negative(), "{}", c.case.id);
        // A twin's expected files are the case's it shares them with.
        let dir: &Path = c.expected_dir();
        let error = dir.join("expected/error.json");
        assert_eq!(
            error.is_file(),
            c.case.is_negative(),
            "{}: error.json",
            c.case.id
        );
        if c.case.is_negative() {
            let e = expected::parse_error(&std::fs::read_to_string(&error).unwrap()).unwrap();
            assert!(["malformed", "invalid", "unsupported_feature"].contains(&e.class.as_str()));
            assert!(!dir.join(format!("expected/v{}.json", e.version)).exists());
            for v in 1..e.version {
                assert!(
                    dir.join(format!("expected/v{v}.json")).is_file(),
                    "{} v{v}",
                    c.case.id
                );
            }
        }
    }
}

#[test]
fn requires_names_exactly_what_the_content_needs() {
    // covers: OVL-FLAG-1, FLG-READ-1
    // The data capabilities of every version a reader is sent, and the check capabilities
    // the case gates (`needs::of_case`, the rule `lance-conformance fuzz` writes too).
    use lance_conformance::runner::execute::load_expected;
    use lance_conformance::runner::needs;
    let mut problems = Vec::new();
    for c in cases() {
        let expected =
            load_expected(c.expected_dir()).unwrap_or_else(|e| panic!("{}: {e}", c.case.id));
        let content = needs::of_case(&c.dir, &c.case, &expected);
        let declared: BTreeSet<_> = c.case.requires.iter().copied().collect();
        if declared != content {
            problems.push(format!(
                "{}: requires {:?}, the content needs {:?}",
                c.case.id, declared, content
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
