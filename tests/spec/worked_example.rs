//! The specification's worked example, all six steps, as one readable test.
//!
//! Each step performs the example's operation with the reference (commit, read, query, fold)
//! and checks every result the example states.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lance_reference::model::{Coverage, LineageSequence, ROW_ID_FIELD_ID, Value};
use lance_reference::query::{Predicate, RowRef, reconcile};
use lance_reference::resolve::{Source, explain, resolve_column};
use lance_reference::scan::scan;
use lance_reference::worked_example::{
    AGE, AGE_INDEX, EMBEDDING, ID, NAME, NEW_BOB_EMBEDDING, versions,
};
use lance_reference::{exclusion, flags};

fn ints32(v: &[i32]) -> Vec<Option<Value>> {
    v.iter().map(|x| Some(Value::Int32(*x))).collect()
}

fn rows(offsets: &[u64]) -> Vec<RowRef> {
    offsets
        .iter()
        .map(|&offset| RowRef {
            fragment: 0,
            offset,
        })
        .collect()
}

#[test]
fn worked_example_all_six_steps() {
    // covers: OVL-VER-1, OVL-VER-4, OVL-LIN-1, OVL-IDX-1, OVL-QRY-1, OVL-QRY-2, OVL-SHAPE-2, OVL-FOLD-1, OVL-FOLD-2, OVL-VER-3, OVL-PREC-5
    let [v1, v2, v3, v4]: [_; 4] = versions().unwrap().try_into().unwrap();
    for v in [&v1, &v2, &v3, &v4] {
        v.validate().unwrap();
        flags::check_consistency(v).unwrap();
    }
    let schema = &v1.schema;

    // Step 1: a dense overlay on age for offsets {1, 3}, committed as version 2.
    let f2 = &v2.fragments[0];
    assert_eq!(f2.overlays.len(), 1);
    let overlay = &f2.overlays[0];
    assert_eq!(overlay.committed_version, 2);
    assert_eq!(overlay.file.fields, vec![AGE]);
    assert_eq!(
        overlay.coverage,
        Coverage::Dense([1u32, 3].into_iter().collect())
    );
    assert_eq!(
        overlay.file.columns[0].values(),
        vec![Value::Int32(26), Value::Int32(23)]
    );
    assert_eq!(
        f2.lineage.last_updated_at,
        LineageSequence::Inline(vec![1, 2, 1, 2])
    );
    assert_eq!(
        f2.lineage.created_at,
        LineageSequence::Inline(vec![1, 1, 1, 1])
    );
    assert_ne!(v2.reader_flags & flags::FLAG_UNSTABLE_DATA_OVERLAY_FILES, 0);

    // Step 2: read: ages [30, 26, 40, 23]; offset 3 comes from rank 1 of {1, 3}.
    assert_eq!(
        resolve_column(schema, f2, AGE).unwrap(),
        ints32(&[30, 26, 40, 23])
    );
    assert_eq!(
        explain(schema, f2, 3, AGE).unwrap().source,
        Source::Overlay {
            position: 0,
            committed_version: 2,
            rank: 1
        }
    );
    assert_eq!(
        explain(schema, f2, 0, AGE).unwrap().source,
        Source::Base { file: 0 }
    );

    // Step 3: WHERE age = 26 through the index built at version 1.
    let index = v2.index(AGE_INDEX).unwrap();
    assert_eq!(
        exclusion::exclusion_set(schema, index, f2),
        [1u32, 3].into_iter().collect()
    );
    let q26 = reconcile(&v2, AGE_INDEX, &Predicate::Eq(AGE, Value::Int32(26))).unwrap();
    assert_eq!(
        q26.candidates,
        rows(&[]),
        "the index still holds Bob's old age 25"
    );
    assert_eq!(
        q26.reevaluated,
        rows(&[1, 3]),
        "the whole exclusion set is re-evaluated"
    );
    assert_eq!(
        q26.final_rows,
        rows(&[1]),
        "Bob is found through his new value"
    );
    // The mirror case: WHERE age = 25 must not return Bob's stale entry.
    let q25 = reconcile(&v2, AGE_INDEX, &Predicate::Eq(AGE, Value::Int32(25))).unwrap();
    assert_eq!(q25.candidates, rows(&[1]));
    assert_eq!(q25.excluded, rows(&[1]));
    assert_eq!(q25.final_rows, rows(&[]));

    // Step 4: a sparse overlay: name for {2, 3}, embedding for {1}, committed as version 3.
    let f3 = &v3.fragments[0];
    assert_eq!(
        f3.overlays[0].committed_version, 2,
        "the step-1 overlay keeps its version"
    );
    let versions_in_order: Vec<u64> = f3.overlays.iter().map(|o| o.committed_version).collect();
    assert_eq!(
        versions_in_order,
        vec![2, 3],
        "stored in non-decreasing committed_version"
    );
    let sparse = &f3.overlays[1];
    assert_eq!(sparse.committed_version, 3);
    assert_eq!(sparse.file.fields, vec![NAME, EMBEDDING]);
    assert_eq!(
        sparse.coverage,
        Coverage::Sparse(vec![
            [2u32, 3].into_iter().collect(),
            [1u32].into_iter().collect()
        ])
    );
    assert_eq!(
        sparse.file.columns[0].len(),
        2,
        "columns of different lengths in one file"
    );
    assert_eq!(sparse.file.columns[1].len(), 1);

    // Step 5: each field resolves independently, newest overlay first.
    let names: Vec<_> = ["Alice", "Bob", "Caroline", "David"]
        .iter()
        .map(|n| Some(Value::Utf8((*n).into())))
        .collect();
    assert_eq!(resolve_column(schema, f3, NAME).unwrap(), names);
    assert_eq!(
        resolve_column(schema, f3, AGE).unwrap(),
        ints32(&[30, 26, 40, 23])
    );
    let embeddings = resolve_column(schema, f3, EMBEDDING).unwrap();
    assert_eq!(
        embeddings[1],
        Some(Value::Vector(NEW_BOB_EMBEDDING.map(Some).to_vec()))
    );
    assert_eq!(
        embeddings[0],
        resolve_column(schema, &v1.fragments[0], EMBEDDING).unwrap()[0]
    );

    // Step 6: fold both overlays into a new base file at version 4.
    let f4 = &v4.fragments[0];
    assert!(f4.overlays.is_empty());
    assert_eq!(
        f4.files[0].fields,
        vec![ID, -2, -2, -2],
        "old columns tombstoned in place"
    );
    assert_eq!(f4.files[1].fields, vec![NAME, AGE, EMBEDDING]);
    assert_eq!(
        scan(&v4, None).unwrap(),
        scan(&v3, None).unwrap(),
        "a fold changes no value"
    );
    assert_eq!(
        f4.lineage_values(ROW_ID_FIELD_ID).unwrap(),
        f3.lineage_values(ROW_ID_FIELD_ID).unwrap(),
        "row addresses and stable row ids are preserved"
    );
    assert!(
        !v4.index(AGE_INDEX).unwrap().covers(0),
        "age queries fall to the flat path"
    );
    assert_eq!(v4.reader_flags & flags::FLAG_UNSTABLE_DATA_OVERLAY_FILES, 0);
}
