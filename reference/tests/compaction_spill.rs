//! Row rewrites are the one writer that spills carried-over lineage: checked at the budget
//! boundary, with the hidden columns in the new fragment's main data file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use lance_reference::compaction::rewrite_rows;
use lance_reference::flags::FLAG_SPILLED_ROW_LINEAGE;
use lance_reference::lineage::{RowDatasetVersionSequence, RowIdSequence};
use lance_reference::model::LineageSequence;
use lance_reference::scan::scan;
use lance_reference::worked_example;

fn with_config(pairs: &[(&str, &str)]) -> lance_reference::model::Snapshot {
    let mut s = worked_example::version_1();
    s.config = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect::<BTreeMap<_, _>>();
    s
}

fn rewritten(pairs: &[(&str, &str)]) -> lance_reference::model::Snapshot {
    rewrite_rows(&with_config(pairs), &[0], 1, 2, "rewritten.lance").unwrap()
}

#[test]
fn without_opt_in_every_sequence_stays_inline() {
    // covers: LIN-CFG-1
    let next = rewritten(&[("lance.row_lineage.inline_max_bytes", "0")]);
    let f = &next.fragments[0];
    assert!(matches!(f.lineage.row_ids, LineageSequence::Inline(_)));
    assert!(matches!(f.lineage.created_at, LineageSequence::Inline(_)));
    assert_eq!(f.files[0].fields, vec![1, 2, 3, 4]);
}

#[test]
fn spilling_is_decided_by_strictly_greater_than_the_budget() {
    // covers: LIN-PLACE-2, LIN-PLACE-3, LIN-PLACE-4, LIN-CFG-2
    let ids = RowIdSequence::from_values(&[0, 1, 2, 3]).encode().len();
    let versions = RowDatasetVersionSequence::from_versions(&[1; 4])
        .encode()
        .len();
    // Each sequence at budget - 1 (spills), budget (stays) and budget + 1 (stays).
    for budget in [ids - 1, ids, ids + 1, versions - 1, versions, versions + 1] {
        let text = budget.to_string();
        let next = rewritten(&[
            ("lance.row_lineage.spill", "TRUE"),
            ("lance.row_lineage.inline_max_bytes", &text),
        ]);
        let f = &next.fragments[0];
        let column = |s: &LineageSequence| matches!(s, LineageSequence::Column);
        assert_eq!(
            column(&f.lineage.row_ids),
            ids > budget,
            "row ids, budget {budget}"
        );
        assert_eq!(
            column(&f.lineage.created_at),
            versions > budget,
            "created-at, budget {budget}"
        );
        assert_eq!(
            column(&f.lineage.last_updated_at),
            versions > budget,
            "budget {budget}"
        );
        let mut expected_fields = vec![1, 2, 3, 4];
        if ids > budget {
            expected_fields.push(-3);
        }
        if versions > budget {
            expected_fields.extend([-4, -5]);
        }
        assert_eq!(f.files[0].fields, expected_fields, "budget {budget}");
        let spilled_any = ids > budget || versions > budget;
        assert_eq!(
            next.reader_flags & FLAG_SPILLED_ROW_LINEAGE != 0,
            spilled_any
        );
        next.validate().unwrap();
        lance_reference::flags::check_consistency(&next).unwrap();
    }
}

#[test]
fn spilled_and_inline_twins_scan_equal() {
    // covers: LIN-COL-1, LIN-READ-1
    let inline = rewritten(&[]);
    let spilled = rewritten(&[
        ("lance.row_lineage.spill", "true"),
        ("lance.row_lineage.inline_max_bytes", "0"),
    ]);
    assert!(matches!(
        spilled.fragments[0].lineage.created_at,
        LineageSequence::Column
    ));
    assert_eq!(scan(&inline, None).unwrap(), scan(&spilled, None).unwrap());
    assert_eq!(
        scan(&spilled, None).unwrap(),
        scan(&worked_example::version_1(), None)
            .unwrap()
            .into_iter()
            .map(|mut r| {
                r.fragment = 1;
                r
            })
            .collect::<Vec<_>>()
    );
}

#[test]
fn malformed_budget_is_refused_when_spilling_is_on() {
    // covers: LIN-CFG-3
    let err = rewrite_rows(
        &with_config(&[
            ("lance.row_lineage.spill", "true"),
            ("lance.row_lineage.inline_max_bytes", "20KiB"),
        ]),
        &[0],
        1,
        2,
        "rewritten.lance",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("lance.row_lineage.inline_max_bytes"),
        "{err}"
    );
}
