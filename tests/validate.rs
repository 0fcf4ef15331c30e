//! `validate` over the stored corpus and over hand-built bad histories.
//!
//! Every positive case's `dataset/` and every undamaged twin is accepted (a case that breaks a
//! writer rule on purpose says so with a `breaks:<ID>` tag, and only those ids may be found);
//! every negative case's `dataset/` is refused with exactly its `expected/error.json` version,
//! class and code. The hand-built histories are the reference's worked example written with
//! the reference writer, one commit tampered with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use lance_conformance::validate::history::CommitKind;
use lance_conformance::validate::validate;
use lance_reference::compaction::{merge_overlays, rewrite_rows};
use lance_reference::flags::set_commit_flags;
use lance_reference::lineage::{AppendedFragment, PendingCommit};
use lance_reference::model::{Fragment, LineageSequence, Snapshot, Value};
use lance_reference::worked_example;
use lance_reference_io::{WriteOptions, write_version};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance-cases")
}

/// Every case directory with the directory holding its `expected/` and `case.toml` content
/// (its own, or for a twin the case it is a twin of), sorted.
fn cases() -> Vec<(PathBuf, PathBuf)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let index =
        lance_conformance::case::RequirementIndex::load(&root.join("spec/requirements.toml"))
            .unwrap();
    let mut out: Vec<(PathBuf, PathBuf)> = lance_conformance::corpus::load(&corpus(), &index)
        .unwrap()
        .into_iter()
        .map(|c| (c.dir.clone(), c.expected_dir().to_path_buf()))
        .collect();
    out.sort();
    out
}

fn declared_breaks(case: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(case.join("case.toml")).unwrap();
    let value: toml::Value = toml::from_str(&text).unwrap();
    value
        .get("tags")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str()?.strip_prefix("breaks:").map(str::to_string))
        .collect()
}

#[test]
fn validate_accepts_and_refuses_the_corpus_as_the_cases_say() {
    // covers: OVL-PREC-5
    let mut problems = Vec::new();
    let (mut accepted, mut refused) = (0, 0);
    for (case, source) in cases() {
        let name = case.strip_prefix(corpus()).unwrap().display().to_string();
        let error = source.join("expected/error.json");
        if error.is_file() {
            let want: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&error).unwrap()).unwrap();
            let report = validate(&case.join("dataset"), None).unwrap();
            // A refusal the kit cannot judge past (`unsupported`) is reported apart from the
            // findings; either way it is the case's refusal.
            let got: Vec<(u64, &str, &str)> = report
                .findings
                .iter()
                .chain(&report.unjudged)
                .map(|f| (f.version, f.class.as_str(), f.code))
                .collect();
            let expected = vec![(
                want["version"].as_u64().unwrap(),
                want["class"].as_str().unwrap(),
                want["code"].as_str().unwrap(),
            )];
            if got == expected {
                refused += 1;
            } else {
                problems.push(format!(
                    "{name}: refused with {got:?}, the case says {expected:?}"
                ));
            }
            let twin = validate(&case.join("undamaged"), None).unwrap();
            if twin.conforming() {
                accepted += 1;
            } else {
                problems.push(format!("{name}/undamaged: {:?}", twin.findings));
            }
        } else {
            let breaks = declared_breaks(&source);
            let report = validate(&case.join("dataset"), None).unwrap();
            let unexpected: Vec<_> = report
                .findings
                .iter()
                .filter(|f| !f.requirements.iter().any(|r| breaks.contains(r)))
                .collect();
            if unexpected.is_empty() {
                accepted += 1;
            } else {
                problems.push(format!("{name}: {unexpected:?}"));
            }
            for id in &breaks {
                if !report.findings.iter().any(|f| f.requirements.contains(id)) {
                    problems.push(format!(
                        "{name}: declares breaks:{id}, validate did not find it"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        accepted > 100 && refused > 50,
        "{accepted} accepted, {refused} refused"
    );
}

/// Writes `versions` with the reference writer into a fresh directory.
fn written(versions: &[Snapshot]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for s in versions {
        write_version(dir.path(), s, &WriteOptions::default()).unwrap();
    }
    dir
}

/// The requirement ids of every finding of `versions` written to disk.
fn found(versions: &[Snapshot]) -> Vec<String> {
    let dir = written(versions);
    let report = validate(dir.path(), None).unwrap();
    report
        .findings
        .iter()
        .flat_map(|f| f.requirements.clone())
        .collect()
}

#[test]
fn the_worked_example_is_conforming() {
    let versions = worked_example::versions().unwrap();
    assert_eq!(found(&versions), Vec::<String>::new());
}

#[test]
fn an_added_overlay_must_carry_its_commits_version() {
    // covers: OVL-VER-1
    let mut versions = worked_example::versions().unwrap();
    versions.truncate(3);
    versions[2].fragments[0].overlays[1].committed_version = 2;
    let ids = found(&versions);
    assert!(ids.contains(&"OVL-VER-1".to_string()), "{ids:?}");
}

#[test]
fn an_overlay_commit_must_bump_the_covered_rows() {
    // covers: OVL-LIN-1
    let mut versions = worked_example::versions().unwrap();
    versions.truncate(3);
    versions[2].fragments[0].lineage.last_updated_at =
        versions[1].fragments[0].lineage.last_updated_at.clone();
    let ids = found(&versions);
    assert!(ids.contains(&"OVL-LIN-1".to_string()), "{ids:?}");
}

#[test]
fn an_overlay_commit_that_also_deletes_must_still_bump_the_covered_rows() {
    // covers: OVL-LIN-1
    let with_delete = |bumped: bool| {
        let mut versions = worked_example::versions().unwrap();
        versions.truncate(3);
        let live: Vec<u32> = (0..versions[2].fragments[0].physical_rows as u32)
            .filter(|o| !versions[2].fragments[0].deletions.contains(*o))
            .collect();
        versions[2].fragments[0].deletions.insert(live[0]);
        if !bumped {
            versions[2].fragments[0].lineage.last_updated_at =
                versions[1].fragments[0].lineage.last_updated_at.clone();
        }
        set_commit_flags(&mut versions[2]);
        versions
    };
    assert_eq!(found(&with_delete(true)), Vec::<String>::new());
    let ids = found(&with_delete(false));
    assert!(ids.contains(&"OVL-LIN-1".to_string()), "{ids:?}");
}

#[test]
fn a_fold_must_not_change_a_resolved_cell() {
    // covers: OVL-FOLD-1
    let mut versions = worked_example::versions().unwrap();
    let folded = versions[3].fragments[0].files.last_mut().unwrap();
    let column = folded
        .columns
        .iter_mut()
        .find(|c| c.values().iter().any(|v| matches!(v, Value::Int32(_))))
        .unwrap();
    *column = column.replaced(1, Value::Int32(99)).unwrap();
    let ids = found(&versions);
    assert!(ids.contains(&"OVL-FOLD-1".to_string()), "{ids:?}");
}

#[test]
fn a_fold_must_not_leave_a_covering_index_stale() {
    // covers: OVL-FOLD-5
    let mut versions = worked_example::versions().unwrap();
    versions[3].indices = versions[2].indices.clone();
    let ids = found(&versions);
    assert!(ids.contains(&"OVL-FOLD-5".to_string()), "{ids:?}");
}

#[test]
fn a_fold_must_not_change_lineage() {
    // covers: OVL-FOLD-4
    let mut versions = worked_example::versions().unwrap();
    if let LineageSequence::Inline(v) = &mut versions[3].fragments[0].lineage.created_at {
        v[0] = 3;
    } else {
        versions[3].fragments[0].lineage.created_at = LineageSequence::Inline(vec![3, 1, 1, 1]);
    }
    let ids = found(&versions);
    assert!(ids.contains(&"OVL-FOLD-4".to_string()), "{ids:?}");
}

#[test]
fn what_the_kit_cannot_read_is_not_a_finding() {
    // A data file version the reference does not decode: the version is not judged, nothing is
    // found, and the exit code is 2 ("cannot judge"), not 1 ("findings").
    let case = corpus().join("dataset/data-file-v2-3");
    let report = validate(&case.join("dataset"), None).unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.unjudged.len(), 1, "{:?}", report.unjudged);
    assert_eq!(report.unjudged[0].code, "unsupported");
    assert!(!report.conforming());
    assert_eq!(report.exit_code(), 2);
    let text = lance_conformance::validate::report::human(&report);
    assert!(
        text.contains(" CANNOT JUDGE unsupported_feature/unsupported "),
        "{text}"
    );
    assert!(text.contains(", 1 not judged"), "{text}");
    // Its undamaged twin is judged in full and is clean.
    let twin = validate(&case.join("undamaged"), None).unwrap();
    assert_eq!(twin.exit_code(), 0, "{:?}", twin.unjudged);
}

/// A store holding nothing, as an object store answers for a prefix without objects.
#[derive(Debug)]
struct EmptyStore;

impl lance_reference_io::Storage for EmptyStore {
    fn describe(&self) -> String {
        "s3://bucket/missing".into()
    }
    fn list(&self, _: &str) -> Result<Vec<String>, lance_reference_io::StorageError> {
        Err(lance_reference_io::StorageError::NotFound)
    }
    fn size(&self, _: &str) -> Result<u64, lance_reference_io::StorageError> {
        Err(lance_reference_io::StorageError::NotFound)
    }
    fn read_range(
        &self,
        _: &str,
        _: std::ops::Range<u64>,
    ) -> Result<Vec<u8>, lance_reference_io::StorageError> {
        Err(lance_reference_io::StorageError::NotFound)
    }
}

#[test]
fn a_missing_table_cannot_be_judged_wherever_it_was_to_be() {
    // A missing table is not a finding (exit 1) but a table validate cannot judge (exit 2),
    // whether the location is a directory or an object-store prefix.
    use lance_conformance::validate::{SetupError, validate_in};
    let local = validate(Path::new("/nonexistent/lance-conformance"), None);
    assert!(matches!(local, Err(SetupError::NoTable(_))), "{local:?}");
    let remote = validate_in(std::sync::Arc::new(EmptyStore), None);
    assert_eq!(
        remote,
        Err(SetupError::NoTable("s3://bucket/missing".into()))
    );
    let args = lance_conformance::validate::ValidateArgs {
        dataset: "/nonexistent/lance-conformance".into(),
        version: None,
        format: lance_conformance::runner::command::Format::Json,
    };
    assert_eq!(lance_conformance::validate::command(&args), 2);
}

#[test]
fn validate_cannot_judge_a_missing_directory_or_version() {
    assert!(validate(Path::new("/nonexistent/lance-conformance"), None).is_err());
    let dir = written(&worked_example::versions().unwrap());
    assert!(validate(dir.path(), Some(9)).is_err());
    let one = validate(dir.path(), Some(4)).unwrap();
    assert_eq!(one.versions.len(), 1);
    assert_eq!(
        one.commits,
        vec![(4, vec![CommitKind::Fold, CommitKind::Index])]
    );
}

/// The worked example's first three versions and a fourth made by `next` from the third.
fn with_fourth(next: impl FnOnce(&Snapshot) -> Snapshot) -> Vec<Snapshot> {
    let mut versions = worked_example::versions().unwrap();
    versions.truncate(3);
    let fourth = next(&versions[2]);
    versions.push(fourth);
    versions
}

fn merged(v3: &Snapshot) -> Snapshot {
    let fragment = merge_overlays(&v3.schema, &v3.fragments[0], &[0, 1], "merged.lance").unwrap();
    let mut next = v3.clone();
    next.version = 4;
    next.fragments[0] = fragment;
    set_commit_flags(&mut next);
    next
}

#[test]
fn a_merge_is_conforming_and_must_take_its_inputs_newest_version() {
    // covers: OVL-MERGE-3
    assert_eq!(found(&with_fourth(merged)), Vec::<String>::new());
    let versions = with_fourth(|v3| {
        let mut next = merged(v3);
        next.fragments[0].overlays[0].committed_version = 2;
        next
    });
    let ids = found(&versions);
    assert!(ids.contains(&"OVL-MERGE-3".to_string()), "{ids:?}");
}

#[test]
fn a_merge_must_not_change_a_resolved_cell() {
    // covers: OVL-MERGE-4
    let versions = with_fourth(|v3| {
        let mut next = merged(v3);
        let o = &mut next.fragments[0].overlays[0];
        let column = o
            .file
            .columns
            .iter_mut()
            .find(|c| c.values().iter().any(|v| matches!(v, Value::Int32(_))))
            .unwrap();
        *column = column.replaced(0, Value::Int32(-7)).unwrap();
        next
    });
    let ids = found(&versions);
    assert!(ids.contains(&"OVL-MERGE-4".to_string()), "{ids:?}");
}

fn rewritten(v3: &Snapshot) -> Snapshot {
    rewrite_rows(v3, &[0], 1, 4, "rewritten.lance").unwrap()
}

#[test]
fn a_rewrite_is_conforming_and_must_keep_every_resolved_value() {
    // covers: OVL-RWR-1
    assert_eq!(found(&with_fourth(rewritten)), Vec::<String>::new());
    let versions = with_fourth(|v3| {
        let mut next = rewritten(v3);
        let file = &mut next.fragments[0].files[0];
        let column = file
            .columns
            .iter_mut()
            .find(|c| c.values().iter().any(|v| matches!(v, Value::Int32(_))))
            .unwrap();
        *column = column.replaced(2, Value::Int32(-7)).unwrap();
        next
    });
    let ids = found(&versions);
    assert!(ids.contains(&"OVL-RWR-1".to_string()), "{ids:?}");
}

#[test]
fn appended_rows_must_be_stamped_with_the_commits_version() {
    // covers: LIN-STAMP-2
    let versions = with_fourth(|v3| {
        let columns = v3.fragments[0].files[0]
            .columns
            .iter()
            .map(|c| c.truncated(1))
            .collect();
        let fields = v3.fragments[0].files[0].fields.clone();
        let fragment = Fragment::new(1, "appended.lance", fields, columns);
        let mut next = PendingCommit {
            overlays: Vec::new(),
            appended: vec![AppendedFragment {
                fragment,
                carried: None,
            }],
        }
        .apply(v3, 4)
        .unwrap();
        next.fragments[1].lineage.created_at = LineageSequence::Inline(vec![3]);
        next
    });
    let ids = found(&versions);
    assert!(ids.contains(&"LIN-STAMP-2".to_string()), "{ids:?}");
}

#[test]
fn json_output_has_the_schemas_keys() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("spec/schemas/validate.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        k.sort();
        k
    };
    let sorted = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let case = corpus().join("overlays/committed-version-zero/dataset");
    let report = validate(&case, None).unwrap();
    let out = lance_conformance::validate::report::to_json(&report);
    assert_eq!(sorted(&out), keys(&schema));
    let finding = &out["findings"][0];
    assert_eq!(
        sorted(finding),
        keys(&schema["properties"]["findings"]["items"])
    );
    let twin = validate(
        &corpus().join("overlays/committed-version-zero/undamaged"),
        None,
    )
    .unwrap();
    let out = lance_conformance::validate::report::to_json(&twin);
    let commit = &out["commits"][0];
    assert_eq!(
        sorted(commit),
        keys(&schema["properties"]["commits"]["items"])
    );
}

#[test]
fn a_rewrite_places_carried_lineage_by_the_config_in_force() {
    // covers: LIN-PLACE-3, LIN-CFG-1
    let spilling = |v3: &Snapshot| {
        let mut v3 = v3.clone();
        v3.config
            .insert(lance_reference::lineage::SPILL_KEY.into(), "true".into());
        v3.config.insert(
            lance_reference::lineage::INLINE_MAX_BYTES_KEY.into(),
            "0".into(),
        );
        v3
    };
    let conforming = with_fourth(|v3| {
        let mut next = rewritten(&spilling(v3));
        next.config = spilling(v3).config;
        next
    });
    let mut conforming = conforming;
    conforming[2].config = conforming[3].config.clone();
    assert_eq!(found(&conforming), Vec::<String>::new());
    // The same spilled output, but the config in force says spilling is off.
    let versions = with_fourth(|v3| {
        let mut next = rewritten(&spilling(v3));
        next.config = v3.config.clone();
        next
    });
    let ids = found(&versions);
    assert!(ids.contains(&"LIN-CFG-1".to_string()), "{ids:?}");
    // Inline output although its stored encoding is over the 0-byte budget in force.
    let mut versions = with_fourth(|v3| {
        let mut next = rewritten(v3);
        next.config = spilling(v3).config;
        next
    });
    versions[2].config = versions[3].config.clone();
    let ids = found(&versions);
    assert!(ids.contains(&"LIN-PLACE-3".to_string()), "{ids:?}");
}

#[test]
fn a_spill_the_writers_own_encoding_may_explain_is_not_a_finding() {
    // covers: LIN-ENC-6
    // Spilled output where the reference's encoding would fit the budget: a writer whose own
    // encoding is longer spills rightly, and bytes cannot tell the two apart.
    let mut versions = with_fourth(|v3| {
        let mut v3 = v3.clone();
        v3.config
            .insert(lance_reference::lineage::SPILL_KEY.into(), "true".into());
        v3.config.insert(
            lance_reference::lineage::INLINE_MAX_BYTES_KEY.into(),
            "0".into(),
        );
        let mut next = rewritten(&v3);
        next.config.insert(
            lance_reference::lineage::INLINE_MAX_BYTES_KEY.into(),
            "1000".into(),
        );
        next
    });
    versions[2].config = versions[3].config.clone();
    assert_eq!(found(&versions), Vec::<String>::new());
}

/// The worked example's third version with spilling on and a 0-byte budget, and a fourth made
/// from it by a row-moving update of fragment 0's offset 2: the row is deleted there and
/// carried into a new fragment 1 with its row id and created-at, its last-updated-at stamped
/// with version 4 and inline (commit-assigned, [LIN-PLACE-1]).
fn spilled_update(last_updated_spilled: bool) -> Vec<Snapshot> {
    use lance_reference::lineage::{CarriedLineage, INLINE_MAX_BYTES_KEY, SPILL_KEY};
    use lance_reference::model::{
        CREATED_AT_FIELD_ID, Column, LAST_UPDATED_AT_FIELD_ID, ROW_ID_FIELD_ID,
    };
    let mut versions = with_fourth(|v3| {
        let mut v3 = v3.clone();
        v3.config.insert(SPILL_KEY.into(), "true".into());
        v3.config.insert(INLINE_MAX_BYTES_KEY.into(), "0".into());
        let old = &v3.fragments[0];
        let at = |field| old.lineage_values(field).unwrap().unwrap()[2];
        let file = &old.files[0];
        let columns = file
            .columns
            .iter()
            .map(|c| Column::infer(&[c.value(2).unwrap()]).unwrap())
            .collect();
        let fragment = Fragment::new(1, "updated.lance", file.fields.clone(), columns);
        let mut next = PendingCommit {
            overlays: Vec::new(),
            appended: vec![AppendedFragment {
                fragment,
                carried: Some(CarriedLineage {
                    row_ids: LineageSequence::Inline(vec![at(ROW_ID_FIELD_ID)]),
                    created_at: LineageSequence::Inline(vec![at(CREATED_AT_FIELD_ID)]),
                }),
            }],
        }
        .apply(&v3, 4)
        .unwrap();
        next.fragments[0].deletions.insert(2);
        if last_updated_spilled {
            let moved = &mut next.fragments[1];
            moved.files[0].fields.push(LAST_UPDATED_AT_FIELD_ID);
            moved.files[0].columns.push(Column::uint64(vec![4]));
            moved.lineage.last_updated_at = LineageSequence::Column;
        }
        set_commit_flags(&mut next);
        next
    });
    versions[2].config = versions[3].config.clone();
    versions
}

#[test]
fn a_row_moving_update_keeps_its_stamps_inline_whatever_the_budget() {
    // covers: LIN-PLACE-1, LIN-PLACE-2
    // Lance 14 writes exactly this under `lance.row_lineage.spill=true`: the carried row id and
    // created-at are short enough to stay inline (or may spill, [LIN-PLACE-2]), and the stamped
    // last-updated-at is inline although the budget is 0 bytes. [LIN-PLACE-3] is a compactor's
    // rule and does not apply to an update.
    let versions = spilled_update(false);
    let dir = written(&versions);
    let report = validate(dir.path(), None).unwrap();
    assert_eq!(report.findings, Vec::new(), "{report:?}");
    assert!(
        report
            .commits
            .iter()
            .any(|(v, k)| *v == 4 && k.contains(&CommitKind::Update)),
        "{:?}",
        report.commits
    );
    // The same update with its stamps spilled breaks [LIN-PLACE-1].
    let ids = found(&spilled_update(true));
    assert_eq!(ids, vec!["LIN-PLACE-1".to_string()]);
}

/// Rewrites the footer of every file under `dir` whose name ends with `name` to format version
/// 2.3, which no Lance release writes and this kit does not decode: its reads refuse them as
/// unsupported (a kit limit) before comparing the footer with the manifest.
fn undecodable(dir: &Path, name: &str) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !p.file_name().unwrap().to_string_lossy().ends_with(name) {
            continue;
        }
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        bytes[n - 8..n - 4].copy_from_slice(&[2, 0, 3, 0]); // major 2, minor 3 (LE u16s)
        std::fs::write(&p, bytes).unwrap();
    }
}

#[test]
fn a_version_whose_data_the_kit_cannot_decode_is_judged_by_its_manifest() {
    // covers: OVL-VER-1
    use lance_conformance::validate::version::Level;
    // The worked example with every data file in a format the kit does not decode: each
    // version is not judged in full (exit 2), but its manifest is, and so are the commits.
    let dir = written(&worked_example::versions().unwrap());
    undecodable(&dir.path().join("data"), ".lance");
    let report = validate(dir.path(), None).unwrap();
    assert_eq!(report.findings, Vec::new(), "{report:?}");
    assert_eq!(report.exit_code(), 2);
    assert!(
        report
            .versions
            .iter()
            .all(|(_, level)| *level == Some(Level::Manifest)),
        "{:?}",
        report.versions
    );
    assert_eq!(report.commits.len(), report.versions.len() - 1);
    assert!(
        report
            .unjudged
            .iter()
            .all(|f| f.code == "unsupported_file_version"),
        "{:?}",
        report.unjudged
    );
    let text = lance_conformance::validate::report::human(&report);
    assert!(text.contains("read at the manifest level"), "{text}");
    // A manifest-level breach is still found: an added overlay that does not carry its
    // commit's version ([OVL-VER-1]) needs no cell to be seen.
    let mut versions = worked_example::versions().unwrap();
    versions.truncate(3);
    versions[2].fragments[0].overlays[1].committed_version = 2;
    let dir = written(&versions);
    undecodable(&dir.path().join("data"), ".lance");
    let report = validate(dir.path(), None).unwrap();
    let ids: Vec<&String> = report
        .findings
        .iter()
        .flat_map(|f| &f.requirements)
        .collect();
    assert!(ids.contains(&&"OVL-VER-1".to_string()), "{report:?}");
    assert_eq!(report.exit_code(), 1);
}

#[test]
fn a_version_whose_index_the_kit_cannot_read_is_judged_without_it() {
    // covers: IDX-READ-1
    use lance_conformance::validate::version::Level;
    use lance_reference::index_build::build_index;
    use lance_reference::model::IndexKind;
    use lance_reference::worked_example::EMBEDDING;
    // The worked example with a vector index built at version 4 and a fifth version deleting
    // a row; the index's `lance:index` then names a type the kit does not read.
    let mut versions = worked_example::versions().unwrap();
    let v4 = versions.last().unwrap().clone();
    let mut read_at = v4.clone();
    read_at.indices.clear();
    let mut v5 = build_index(&read_at, &v4, "emb_idx", &[EMBEDDING], IndexKind::Vector, 5).unwrap();
    v5.version = 5;
    let mut v6 = v5.clone();
    v6.version = 6;
    v6.fragments[0].deletions.insert(0);
    set_commit_flags(&mut v6);
    versions.push(v5);
    versions.push(v6);
    let dir = written(&versions);
    let idx = std::fs::read_dir(dir.path().join("_indices"))
        .unwrap()
        .map(|e| e.unwrap().path().join("index.idx"))
        .find(|p| p.is_file())
        .expect("the vector index's directory");
    let bytes = std::fs::read(&idx).unwrap();
    let text = b"\"type\":\"IVF_FLAT\"";
    let at = bytes
        .windows(text.len())
        .position(|w| w == text)
        .expect("the lance:index metadata");
    let mut patched = bytes.clone();
    patched[at..at + text.len()].copy_from_slice(b"\"type\":\"IVF_HNSW\"");
    std::fs::write(&idx, patched).unwrap();
    let report = validate(dir.path(), None).unwrap();
    assert_eq!(report.findings, Vec::new(), "{report:?}");
    assert_eq!(report.exit_code(), 2);
    let levels: Vec<Option<Level>> = report.versions.iter().map(|(_, l)| *l).collect();
    assert_eq!(
        &levels[4..],
        &[Some(Level::Data), Some(Level::Data)],
        "{levels:?}"
    );
    assert!(
        report
            .unjudged
            .iter()
            .all(|f| f.code == "index_unsupported")
    );
    // The commits around the versions read without their index are judged in full.
    assert_eq!(report.commits.last(), Some(&(6, vec![CommitKind::Delete])));
}

/// `scan` prints what the reference reads at a location: a path and its `file://` URI give the
/// same bytes, every live row of the version in scan order with its lineage; a version the
/// reference refuses exits 1, one not listed exits 2.
#[test]
fn scan_prints_the_rows_the_reference_reads_wherever_the_table_is() {
    let versions = worked_example::versions().unwrap();
    let dir = written(&versions);
    let bin = env!("CARGO_BIN_EXE_lance-conformance");
    let run = |args: &[&str]| std::process::Command::new(bin).args(args).output().unwrap();
    let path = dir.path().to_str().unwrap();
    let uri = format!("file://{path}");
    for v in &versions {
        let at = v.version.to_string();
        let by_path = run(&["scan", path, "--version", &at, "--format", "json"]);
        let by_uri = run(&["scan", &uri, "--version", &at, "--format", "json"]);
        assert_eq!(by_path.status.code(), Some(0), "version {at}");
        assert_eq!(by_path.stdout, by_uri.stdout, "version {at}");
        let printed: serde_json::Value = serde_json::from_slice(&by_path.stdout).unwrap();
        assert_eq!(printed["version"], v.version);
        let rows = printed["rows"].as_array().unwrap();
        let scanned = lance_reference::scan::scan(v, None).unwrap();
        assert_eq!(rows.len(), scanned.len(), "version {at}");
        for (row, want) in rows.iter().zip(&scanned) {
            assert_eq!(row["fragment"], want.fragment);
            assert_eq!(row["offset"], want.offset);
            assert_eq!(row["_rowid"]["value"], want.row_id.to_string());
        }
    }
    assert_eq!(
        run(&["scan", path, "--version", "99"]).status.code(),
        Some(2)
    );
    let damaged = corpus().join("overlays/base-column-short/dataset");
    let refused = run(&["scan", damaged.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty());
}
