//! Reading lineage: where each sequence comes from (inline arm, hidden column), what `_rowid`
//! means with and without stable row ids, and what makes a hidden column unreadable.

use lance_conformance_test_support::dataset_scenarios::columns as cols;
use lance_reference::model::{
    CREATED_AT_FIELD_ID, DataFile, LAST_UPDATED_AT_FIELD_ID, LineageSequence, ROW_ID_FIELD_ID,
    Snapshot, Value,
};
use lance_reference::scan::{row_address, scan};
use lance_reference::worked_example;

fn u64s(v: &[u64]) -> Vec<Value> {
    v.iter().copied().map(Value::UInt64).collect()
}

/// The worked example's version 1 with its three sequences moved to a lineage-only file.
fn spilled() -> Snapshot {
    let mut s = worked_example::version_1();
    let f = &mut s.fragments[0];
    f.files.push(DataFile {
        path: "lineage.lance".into(),
        fields: vec![
            ROW_ID_FIELD_ID,
            CREATED_AT_FIELD_ID,
            LAST_UPDATED_AT_FIELD_ID,
        ],
        columns: cols(vec![u64s(&[0, 1, 2, 3]), u64s(&[1; 4]), u64s(&[1; 4])]),
    });
    f.lineage.row_ids = LineageSequence::Column;
    f.lineage.created_at = LineageSequence::Column;
    f.lineage.last_updated_at = LineageSequence::Column;
    s.reader_flags |= 2048;
    s.writer_flags |= 2048;
    s
}

#[test]
fn inline_and_spilled_sequences_read_the_same_rows() {
    // covers: LIN-READ-4, LIN-READ-3, LIN-COL-1
    let inline = worked_example::version_1();
    let spilled = spilled();
    spilled.validate().unwrap();
    assert_eq!(scan(&inline, None).unwrap(), scan(&spilled, None).unwrap());
    assert_eq!(scan(&spilled, None).unwrap()[2].row_id, 2);
}

#[test]
fn hidden_columns_are_never_user_columns() {
    // covers: LIN-COL-4
    let s = spilled();
    let rows = scan(&s, None).unwrap();
    assert_eq!(
        rows[0].values.len(),
        4,
        "only the four schema fields are projected"
    );
}

#[test]
fn the_arm_that_is_set_decides_where_a_sequence_is_read() {
    // covers: LIN-COL-6
    let mut s = spilled();
    // last-updated-at brought back inline; the old hidden column is still in the file.
    s.fragments[0].lineage.last_updated_at = LineageSequence::Inline(vec![1, 7, 1, 7]);
    let rows = scan(&s, None).unwrap();
    assert_eq!(
        rows.iter().map(|r| r.last_updated_at).collect::<Vec<_>>(),
        vec![1, 7, 1, 7]
    );
}

#[test]
fn column_arm_needs_exactly_one_file_holding_the_reserved_id() {
    // covers: LIN-COL-2
    let mut none = spilled();
    none.fragments[0].files.pop();
    let err = none.validate().unwrap_err();
    assert_eq!(err.code(), "missing_lineage_column", "{err}");
    assert!(err.to_string().contains("-3"), "{err}");
    assert!(scan(&none, None).is_err());
    let mut two = spilled();
    let again = two.fragments[0].files[1].clone();
    two.fragments[0].files.push(DataFile {
        path: "again.lance".into(),
        ..again
    });
    let err = two.validate().unwrap_err();
    assert_eq!(err.code(), "duplicate_field", "{err}");
    assert!(err.to_string().contains("again.lance"), "{err}");
}

#[test]
fn hidden_column_with_nulls_wrong_type_or_wrong_count_is_rejected() {
    // covers: LIN-COL-3
    for damage in 0..3 {
        let mut s = spilled();
        let column = &mut s.fragments[0].files[1].columns[0];
        *column = match damage {
            0 => column.replaced(1, Value::Null).unwrap(),
            // A stored column has one type: the same numbers as int64.
            1 => cols(vec![
                column
                    .values()
                    .iter()
                    .map(|v| match v {
                        Value::UInt64(x) => Value::Int64(*x as i64),
                        other => other.clone(),
                    })
                    .collect(),
            ])
            .remove(0),
            _ => column.truncated(column.len() - 1),
        };
        let err = s.validate().unwrap_err();
        assert!(
            ["type_mismatch", "base_length_mismatch"].contains(&err.code()),
            "damage {damage}: {err}"
        );
    }
}

#[test]
fn without_stable_row_ids_rowid_is_the_row_address() {
    // covers: LIN-READ-2
    let mut s = worked_example::version_1();
    s.stable_row_ids = false;
    s.reader_flags = 0;
    s.writer_flags = 0;
    s.fragments[0].id = 3;
    let rows = scan(&s, None).unwrap();
    assert_eq!(rows[2].row_id, (3 << 32) | 2);
    assert_eq!(rows[2].row_id, row_address(3, 2));
}

#[test]
fn table_config_never_changes_what_is_read() {
    // covers: LIN-CFG-4
    let mut configured = spilled();
    configured
        .config
        .insert("lance.row_lineage.spill".into(), "false".into());
    configured.config.insert(
        "lance.row_lineage.inline_max_bytes".into(),
        "not a number".into(),
    );
    assert_eq!(
        scan(&configured, None).unwrap(),
        scan(&spilled(), None).unwrap()
    );
}
