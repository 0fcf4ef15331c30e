//! Building an index: what an index holds, and the commit that adds it.
//!
//! Invariant: an index records the resolved values of the version it read, and its
//! `dataset_version` is that version, not the version its commit lands at. An overlay committed
//! in between is therefore newer than the index (`committed_version > dataset_version`) and its
//! cells are excluded from the index's answers ([`crate::exclusion`]): the index never saw
//! them. The index covers the fragments of the version it read, except those whose base files
//! changed, or that were removed, by the time it commits.
//!
//! Why the exception: a build that reads version `r` and commits after a fold (an overlay →
//! base column rewrite) of one of its fragments would otherwise be stale with nothing to say so.
//! The fold removed the overlays committed after `r`, which were the only exclusion signal for
//! the cells they changed. Such a fragment is left out of the index's coverage, so its rows
//! fall to the flat path, the same remedy the fold rule prescribes for an index that already
//! existed. A fragment whose files are unchanged only gained overlays and deletions after `r`,
//! and those the exclusion set and the deletion vector already handle.

use crate::error::{Error, Result};
use crate::model::{FieldId, Index, IndexEntry, IndexKind, Snapshot, Value};
use crate::resolve::resolve_column;

/// The entries an index over `snapshot` holds: for every live row of every fragment it covers,
/// the resolved value of its first field (the key; for a vector index, the vector). For a
/// BTree, NULL values are entries too: the index records what the row held. A vector index
/// holds no NULL vector and no vector with a NULL or NaN item ([IDX-FILE-5]): such a row has
/// no distance and never ranks ([IDX-READ-13]), and Lance's vector index leaves it out too.
pub fn entries(snapshot: &Snapshot, index: &Index) -> Result<Vec<IndexEntry>> {
    let Some(&key) = index.fields.first() else {
        return Ok(Vec::new());
    };
    let mut entries = Vec::new();
    for fragment in snapshot.fragments.iter().filter(|f| index.covers(f.id)) {
        let rows = fragment.offset_count()?;
        let column = resolve_column(&snapshot.schema, fragment, key)?;
        for (offset, value) in (0..rows).zip(column) {
            let Some(value) = value else { continue };
            entries.extend(entry(index.kind, fragment.id, offset, value));
        }
    }
    Ok(entries)
}

/// The entry an index of `kind` holds for the live row at `offset` of fragment `fragment`,
/// whose key resolved to `value` ([`entries`]): none for a vector index's NULL vector or
/// vector with a NULL or NaN item.
pub fn entry(kind: IndexKind, fragment: u64, offset: u32, value: Value) -> Option<IndexEntry> {
    let rankless = match &value {
        Value::Null => true,
        Value::Vector(items) => items.iter().any(|x| x.is_none_or(f32::is_nan)),
        _ => false,
    };
    if kind == IndexKind::Vector && rankless {
        return None;
    }
    Some(IndexEntry {
        fragment,
        offset,
        value,
    })
}

/// Builds index `name` on `fields` from the version `read`, and commits it onto `onto` (the
/// newest version, which may be newer than `read`) as version `commit_version`.
///
/// Refused: an index name already in use, an empty field list, a field not in the schema, a
/// vector index whose key is not a `fixed_size_list`, a commit version not newer than `onto`,
/// or a fragment whose indexed data was rewritten (folded) between `read` and `onto`.
pub fn build_index(
    read: &Snapshot,
    onto: &Snapshot,
    name: &str,
    fields: &[FieldId],
    kind: IndexKind,
    commit_version: u64,
) -> Result<Snapshot> {
    let invalid = |problem: String| Error::InvalidIndex {
        index: name.to_string(),
        problem,
    };
    if onto.index(name).is_some() {
        return Err(invalid("an index of that name already exists".into()));
    }
    if commit_version <= onto.version || read.version > onto.version {
        return Err(invalid(format!(
            "read version {} and commit version {commit_version} must satisfy read <= {} < commit",
            read.version, onto.version
        )));
    }
    let Some(&key) = fields.first() else {
        return Err(invalid("an index needs at least one field".into()));
    };
    for &field in fields {
        if read.schema.field(field).is_none() {
            return Err(Error::UnknownField {
                field,
                context: format!("index {name}"),
            });
        }
    }
    let key_type = read.schema.field(key).map(|f| f.data_type.clone());
    if kind == IndexKind::Vector
        && !matches!(key_type, Some(crate::model::DataType::FixedSizeList { .. }))
    {
        return Err(invalid("a vector index needs a fixed_size_list key".into()));
    }
    let mut index = Index {
        name: name.to_string(),
        fields: fields.to_vec(),
        dataset_version: read.version,
        fragment_bitmap: Some(
            read.fragments
                .iter()
                .filter(|f| unchanged_since_read(f, onto))
                .filter_map(|f| u32::try_from(f.id).ok())
                .collect(),
        ),
        kind,
        entries: Vec::new(),
    };
    index.entries = entries(read, &index)?;
    let mut next = onto.clone();
    next.version = commit_version;
    next.indices.push(index);
    Ok(next)
}

/// Whether fragment `read_fragment` (as the build read it) still has the same base files in
/// `onto`. A fragment gone from `onto` is not covered: its rows no longer exist, and the
/// index's files (written at the commit) hold nothing for it.
fn unchanged_since_read(read_fragment: &crate::model::Fragment, onto: &Snapshot) -> bool {
    match onto.fragments.iter().find(|f| f.id == read_fragment.id) {
        None => false,
        Some(now) => {
            now.files.len() == read_fragment.files.len()
                && now
                    .files
                    .iter()
                    .zip(&read_fragment.files)
                    .all(|(a, b)| a.path == b.path && a.fields == b.fields)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exclusion::exclusion_set;
    use crate::lineage::PendingCommit;
    use crate::model::Value;
    use crate::worked_example::{self, AGE};

    #[test]
    fn an_index_read_before_a_fold_does_not_cover_the_folded_fragment() {
        // covers: OVL-IDX-2, OVL-FOLD-1
        // Found by the `history` fuzz target: the fold removes the overlay that would have
        // excluded the changed age, so covering the fragment would trust a stale value.
        let mut v1 = worked_example::version_1();
        v1.indices.clear();
        let v2 = PendingCommit {
            overlays: vec![(0, vec![worked_example::step_1_overlay()])],
            appended: vec![],
        }
        .apply(&v1, 2)
        .unwrap();
        let plan = crate::compaction::FoldPlan::new();
        let v3 = crate::compaction::fold(&v2, 0, &plan, 3, "folded.lance").unwrap();
        let v4 = build_index(&v1, &v3, "age", &[AGE], IndexKind::BTree, 4).unwrap();
        assert!(
            !v4.index("age").unwrap().covers(0),
            "the folded fragment takes the flat path"
        );
        let q = crate::query::reconcile(
            &v4,
            "age",
            &crate::query::Predicate::Eq(AGE, Value::Int32(26)),
        )
        .unwrap();
        assert_eq!(
            q.final_rows.len(),
            1,
            "Bob is found through his folded value"
        );
        // Read after the fold, the same build covers the fragment.
        let fresh = build_index(&v3, &v3, "age", &[AGE], IndexKind::BTree, 4).unwrap();
        assert!(fresh.index("age").unwrap().covers(0));
    }

    #[test]
    fn an_index_built_before_a_concurrent_overlay_excludes_its_cells() {
        // covers: OVL-IDX-2, OVL-VER-1
        // The spec's race: the index reads version 2, an overlay commits at 3, the index
        // commits at 4 with dataset_version 2.
        let mut v1 = worked_example::version_1();
        v1.indices.clear();
        let v2 = PendingCommit::default().apply(&v1, 2).unwrap();
        let v3 = PendingCommit {
            overlays: vec![(0, vec![worked_example::step_1_overlay()])],
            appended: vec![],
        }
        .apply(&v2, 3)
        .unwrap();
        let v4 = build_index(&v2, &v3, "age", &[AGE], IndexKind::BTree, 4).unwrap();
        let index = v4.index("age").unwrap();
        assert_eq!(index.dataset_version, 2);
        assert_eq!(
            index.entries[1].value,
            Value::Int32(25),
            "the index saw the old age"
        );
        let set = exclusion_set(&v4.schema, index, &v4.fragments[0]);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![1, 3]);
        v4.validate().unwrap();
    }

    #[test]
    fn a_build_that_read_before_a_fold_leaves_the_folded_fragment_to_the_flat_path() {
        // covers: OVL-QRY-3, OVL-FOLD-5, OVL-IDX-6
        // The index reads version 1; an overlay commits at 2 and a fold removes it at 3; the
        // index commits at 4. Covering fragment 0 would serve Bob's age 25 with no overlay left
        // to exclude it.
        let mut v1 = worked_example::version_1();
        v1.indices.clear();
        let v2 = PendingCommit {
            overlays: vec![(0, vec![worked_example::step_1_overlay()])],
            appended: vec![],
        }
        .apply(&v1, 2)
        .unwrap();
        let v3 = crate::compaction::fold(&v2, 0, &Default::default(), 3, "folded.lance").unwrap();
        let v4 = build_index(&v1, &v3, "age", &[AGE], IndexKind::BTree, 4).unwrap();
        let index = v4.index("age").unwrap();
        assert!(
            !index.covers(0),
            "the folded fragment falls to the flat path"
        );
        assert!(index.entries.is_empty());
        let stale = crate::query::Predicate::Eq(AGE, Value::Int32(25));
        let found = crate::query::reconcile(&v4, "age", &stale).unwrap();
        assert!(found.final_rows.is_empty(), "Bob is 26 now");
        v4.validate().unwrap();
        // Without the fold in between, the fragment stays covered and the overlay excludes.
        let v3 = PendingCommit::default().apply(&v2, 3).unwrap();
        let v4 = build_index(&v1, &v3, "age", &[AGE], IndexKind::BTree, 4).unwrap();
        assert!(v4.index("age").unwrap().covers(0));
    }

    #[test]
    fn bad_index_requests_are_refused() {
        let v1 = worked_example::version_1();
        let err = build_index(&v1, &v1, "age_idx", &[AGE], IndexKind::BTree, 2).unwrap_err();
        assert_eq!(err.code(), "invalid_index");
        let err = build_index(&v1, &v1, "x", &[AGE], IndexKind::Vector, 2).unwrap_err();
        assert_eq!(err.code(), "invalid_index");
        let err = build_index(&v1, &v1, "x", &[77], IndexKind::BTree, 2).unwrap_err();
        assert_eq!(err.code(), "unknown_field");
        let err = build_index(&v1, &v1, "x", &[AGE], IndexKind::BTree, 1).unwrap_err();
        assert_eq!(err.code(), "invalid_index");
    }
}
