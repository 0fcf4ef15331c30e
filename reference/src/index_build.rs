//! Building an index: what an index holds, and the commit that adds it.
//!
//! Invariant: an index records the resolved values of the version it read, and its
//! `dataset_version` is that version, not the version its commit lands at. An overlay committed
//! in between is therefore newer than the index (`committed_version > dataset_version`) and its
//! cells are excluded from the index's answers ([`crate::exclusion`]): the index never saw
//! them. The index covers exactly the fragments of the version it read. A fold between the
//! read and the commit would erase that signal (the overlays are gone, their values moved into
//! a new base column), so such a commit is refused and the build must read again.

use crate::error::{Error, Result};
use crate::model::{FieldId, Index, IndexEntry, IndexKind, Snapshot};
use crate::resolve::resolve_column;

/// The entries an index over `snapshot` holds: for every live row of every fragment it covers,
/// the resolved value of its first field (the key; for a vector index, the vector). NULL values
/// are entries too: the index records what the row held.
pub fn entries(snapshot: &Snapshot, index: &Index) -> Result<Vec<IndexEntry>> {
    let Some(&key) = index.fields.first() else {
        return Ok(Vec::new());
    };
    let mut entries = Vec::new();
    for fragment in snapshot.fragments.iter().filter(|f| index.covers(f.id)) {
        for (offset, value) in resolve_column(&snapshot.schema, fragment, key)?
            .into_iter()
            .enumerate()
        {
            let Some(value) = value else { continue };
            let offset = u32::try_from(offset).map_err(|_| Error::OffsetOutOfRange {
                fragment: fragment.id,
                file: "(manifest)".into(),
                what: "physical_rows".into(),
                offset: fragment.physical_rows,
                physical_rows: u64::from(u32::MAX),
            })?;
            entries.push(IndexEntry {
                fragment: fragment.id,
                offset,
                value,
            });
        }
    }
    Ok(entries)
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
    check_no_rewrite_between(read, onto, name, fields)?;
    let mut index = Index {
        name: name.to_string(),
        fields: fields.to_vec(),
        dataset_version: read.version,
        fragment_bitmap: Some(
            read.fragments
                .iter()
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

/// Refuses the commit when a fragment the index reads had an indexed (or related) field's base
/// column rewritten between `read` and `onto` (a fold). The fold removed the overlays whose
/// `committed_version` would have excluded the cells that changed after `read`, so the index
/// would trust values it never saw. The builder must read again from the newer version.
fn check_no_rewrite_between(
    read: &Snapshot,
    onto: &Snapshot,
    name: &str,
    fields: &[FieldId],
) -> Result<()> {
    let related: Vec<FieldId> = onto
        .schema
        .fields()
        .iter()
        .map(|f| f.id)
        .filter(|&g| fields.iter().any(|&f| onto.schema.related(f, g)))
        .collect();
    for before in &read.fragments {
        let Ok(after) = onto.fragment(before.id) else {
            continue; // removed since: the index's coverage of it is never used
        };
        let base_path = |fragment: &crate::model::Fragment, field: FieldId| {
            fragment
                .base_column(field)
                .map(|(file, _)| fragment.files[file].path.clone())
        };
        if let Some(&field) = related
            .iter()
            .find(|&&g| base_path(before, g) != base_path(after, g))
        {
            return Err(Error::InvalidIndex {
                index: name.to_string(),
                problem: format!(
                    "fragment {}'s base column of field {field} was rewritten after version {} \
                     the index read (a fold removed the overlays that would exclude its \
                     changed cells); read again from version {}",
                    before.id, read.version, onto.version
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exclusion::exclusion_set;
    use crate::lineage::PendingCommit;
    use crate::model::Value;
    use crate::worked_example::{self, AGE};

    #[test]
    fn an_index_read_before_a_fold_cannot_commit_after_it() {
        // covers: OVL-IDX-2, OVL-FOLD-1
        // Found by the `history` fuzz target: the fold removes the overlay that would have
        // excluded the changed age, so the stale index would be trusted.
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
        let err = build_index(&v1, &v3, "age", &[AGE], IndexKind::BTree, 4).unwrap_err();
        assert!(err.to_string().contains("rewritten"), "{err}");
        // Read after the fold, the same build commits.
        build_index(&v3, &v3, "age", &[AGE], IndexKind::BTree, 4).unwrap();
        // Read after the overlay but before the fold: still refused (conservative, as a
        // conflicting rewrite).
        assert!(build_index(&v2, &v3, "age", &[AGE], IndexKind::BTree, 4).is_err());
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
