//! Row rewrite (RewriteRows): adjacent fragments become new fragments of their live rows.
//!
//! Invariant: the new snapshot's scan lists the same rows, in the same order, with the same
//! values, the same stable row ids and the same created-at / last-updated-at versions. Only
//! physical placement changes: row addresses are new, deleted rows are gone, overlays are folded
//! into the new base, and lineage is carried over row by row.
//!
//! The new fragments hold every live row of the inputs, fragments in manifest order and rows in
//! physical order, cut into consecutive pieces ([`rewrite_rows`] makes one piece,
//! [`rewrite_rows_into`] as many as asked), so the inputs must be adjacent in the fragment list
//! (otherwise a fragment in between would change places with their rows, which readers would
//! see). Each new fragment has ONE base file holding every schema field that has data in any
//! input (a base column, or a live overlay column), in schema order; a struct keeps its validity column (present or NULL), plus a
//! lineage-only file when spilled lineage is placed per fragment. No overlays, no deletions.
//!
//! Lineage is carried over, never reassigned: row ids come from the inputs' sequences (and stay
//! absent when stable row ids are off), and an absent version sequence reads as version 1, the
//! value [`crate::scan`] reports for it. Lance's compaction defaults a missing last-updated-at
//! to the row's created-at instead; the kit follows the scan so the rewrite stays invisible.
//! Because carried values are fixed before the commit, this is the one writer that may spill
//! lineage out of the manifest; [`place_carried_lineage`] (one output) and
//! `place_carried_lineage_over` (several) are where that decision is made.
//!
//! Indices: rows moved to new addresses are no longer where any index recorded them. Every
//! index therefore loses the input fragments from its coverage (an absent bitmap becomes an
//! explicit bitmap of the remaining old fragments) and does not cover the new fragment; its
//! rows fall to the flat path until the index is rebuilt. This is the kit's rule: Lance remaps
//! addresses through fragment reuse, which is outside the kit's model.

use std::collections::BTreeMap;

use super::{CompactionError, carried_value_fields, check_newer, path_in_use, uncover};
use crate::error::{Error, Result};
use crate::lineage::{
    CompactionPlacement, EncodedLengths, RowDatasetVersionSequence, RowIdSequence, SpillConfig,
    plan_compaction,
};
use crate::model::{
    CREATED_AT_FIELD_ID, Column, DataFile, DataType, FieldId, Fragment, LAST_UPDATED_AT_FIELD_ID,
    Lineage, LineageSequence, ROW_ID_FIELD_ID, Snapshot, Value,
};
use crate::resolve::resolve_column;
use crate::scan::DEFAULT_ROW_VERSION;

/// The lineage of the new fragment's rows, one value per row, carried over from the inputs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RewriteLineage {
    /// Stable row ids; `None` when stable row ids are off.
    pub row_ids: Option<Vec<u64>>,
    /// Created-at versions.
    pub created_at: Vec<u64>,
    /// Last-updated-at versions.
    pub last_updated_at: Vec<u64>,
}

/// One output fragment of a row rewrite: its id, the path of its main data file, and how many
/// of the inputs' live rows (taken in scan order) it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewriteOutput {
    /// The new fragment's id.
    pub fragment_id: u64,
    /// Its main data file's path (relative to `data/`).
    pub path: String,
    /// How many rows it holds.
    pub rows: u64,
}

impl RewriteOutput {
    /// The path of the output's lineage-only file, used when the placement plan gives each
    /// output its own file ([`crate::lineage::CompactionPlacement::PerFragment`]).
    pub fn lineage_path(&self) -> String {
        let stem = self.path.strip_suffix(".lance").unwrap_or(&self.path);
        format!("{stem}-lineage.lance")
    }
}

/// Rewrites the live rows of `fragment_ids` into one new fragment `new_fragment_id` with base
/// file `new_file_path`, as the commit of version `new_version` ([`rewrite_rows_into`] with
/// one output holding every live row).
pub fn rewrite_rows(
    snapshot: &Snapshot,
    fragment_ids: &[u64],
    new_fragment_id: u64,
    new_version: u64,
    new_file_path: &str,
) -> Result<Snapshot> {
    let live = snapshot
        .fragments
        .iter()
        .filter(|f| fragment_ids.contains(&f.id))
        .map(|f| f.physical_rows.saturating_sub(f.deletions.len()))
        .sum();
    let output = RewriteOutput {
        fragment_id: new_fragment_id,
        path: new_file_path.to_string(),
        rows: live,
    };
    rewrite_rows_into(snapshot, fragment_ids, &[output], new_version)
}

/// Rewrites the live rows of `fragment_ids` into the fragments `outputs`, in order, as the
/// commit of version `new_version`: the first output takes the first `rows` live rows in scan
/// order, the next one the following rows, and so on. The outputs replace the inputs at their
/// place in the fragment list. Carried lineage is placed over all outputs at once
/// ([`crate::lineage::plan_compaction`]).
///
/// Refused ([`CompactionError`]): no fragments, a repeated fragment, inputs that are not
/// adjacent in the fragment list, an output id or path already in use (or used twice), outputs
/// whose rows do not add up to the live rows (or, with several outputs, an empty one), and a
/// version that is not newer. An unknown fragment or an invalid snapshot is the corresponding
/// [`Error`].
pub fn rewrite_rows_into(
    snapshot: &Snapshot,
    fragment_ids: &[u64],
    outputs: &[RewriteOutput],
    new_version: u64,
) -> Result<Snapshot> {
    check_newer(snapshot, new_version)?;
    snapshot.validate()?;
    let span = input_span(snapshot, fragment_ids)?;
    check_outputs(snapshot, outputs)?;
    let inputs = snapshot.fragments.get(span.clone()).unwrap_or(&[]);
    let fields = fields_with_data(snapshot, inputs);

    let mut columns: Vec<Vec<Value>> = vec![Vec::new(); fields.len()];
    let mut carried = RewriteLineage {
        row_ids: snapshot.stable_row_ids.then(Vec::new),
        ..RewriteLineage::default()
    };
    for fragment in inputs {
        let resolved: Vec<Vec<Option<Value>>> = fields
            .iter()
            .map(|&f| resolve_column(&snapshot.schema, fragment, f))
            .collect::<Result<_>>()?;
        let row_ids = match snapshot.stable_row_ids {
            true => Some(fragment.lineage_slice(ROW_ID_FIELD_ID)?.ok_or_else(|| {
                Error::UnknownField {
                    field: ROW_ID_FIELD_ID,
                    context: format!(
                        "fragment {} has no row id sequence but stable row ids are on",
                        fragment.id
                    ),
                }
            })?),
            false => None,
        };
        let created = fragment.lineage_slice(CREATED_AT_FIELD_ID)?;
        let updated = fragment.lineage_slice(LAST_UPDATED_AT_FIELD_ID)?;
        for offset in 0..fragment.physical_rows {
            let offset32 = u32::try_from(offset).map_err(|_| Error::OffsetOutOfRange {
                fragment: fragment.id,
                file: "(manifest)".into(),
                what: "physical_rows".into(),
                offset,
                physical_rows: fragment.physical_rows,
            })?;
            if fragment.deletions.contains(offset32) {
                continue;
            }
            let at = offset as usize;
            for ((&field, column), out) in fields.iter().zip(&resolved).zip(&mut columns) {
                let value = column.get(at).cloned().flatten().unwrap_or(Value::Null);
                out.push(stored_form(snapshot, field, value));
            }
            if let (Some(ids), Some(out)) = (row_ids, &mut carried.row_ids) {
                out.push(lineage_at(fragment, ids, ROW_ID_FIELD_ID, at)?);
            }
            carried
                .created_at
                .push(version_at(fragment, created, CREATED_AT_FIELD_ID, at)?);
            carried.last_updated_at.push(version_at(
                fragment,
                updated,
                LAST_UPDATED_AT_FIELD_ID,
                at,
            )?);
        }
    }
    let live = carried.created_at.len() as u64;
    let total = outputs.iter().map(|o| o.rows).sum::<u64>();
    let smallest = outputs.iter().map(|o| o.rows).min().unwrap_or(0);
    if total != live || (outputs.len() > 1 && smallest == 0) {
        return Err(CompactionError::OutputRowsMismatch {
            outputs: total,
            smallest,
            live,
        }
        .into());
    }

    // Cut the rows into the outputs, in order.
    let mut pieces = Vec::with_capacity(outputs.len());
    let mut rest_columns = columns;
    let mut rest_carried = carried;
    for output in outputs {
        let n = output.rows as usize; // <= live, which is a Vec length
        let tail_columns: Vec<Vec<Value>> =
            rest_columns.iter_mut().map(|c| c.split_off(n)).collect();
        let tail_carried = RewriteLineage {
            row_ids: rest_carried.row_ids.as_mut().map(|ids| ids.split_off(n)),
            created_at: rest_carried.created_at.split_off(n),
            last_updated_at: rest_carried.last_updated_at.split_off(n),
        };
        let values = std::mem::replace(&mut rest_columns, tail_columns);
        let file = DataFile {
            path: output.path.clone(),
            fields: fields.clone(),
            columns: stored_columns(snapshot, output, &fields, &values)?,
        };
        pieces.push((file, std::mem::replace(&mut rest_carried, tail_carried)));
    }
    let placed = place_carried_lineage_over(&snapshot.config, pieces, outputs)?;
    let new_fragments: Vec<Fragment> = outputs
        .iter()
        .zip(placed)
        .map(|(output, (files, lineage))| Fragment {
            id: output.fragment_id,
            physical_rows: output.rows,
            files,
            deletions: Default::default(),
            overlays: Vec::new(),
            lineage,
        })
        .collect();

    let mut next = snapshot.clone();
    next.version = new_version;
    let removed: Vec<u64> = inputs.iter().map(|f| f.id).collect();
    next.fragments.splice(span, new_fragments);
    for index in &mut next.indices {
        uncover(index, &removed);
    }
    crate::flags::set_commit_flags(&mut next);
    Ok(next)
}

/// Refuses output ids or paths (main or lineage-only) already used by the snapshot or used
/// twice among the outputs.
fn check_outputs(snapshot: &Snapshot, outputs: &[RewriteOutput]) -> Result<()> {
    for (i, output) in outputs.iter().enumerate() {
        let earlier = outputs.get(..i).unwrap_or(&[]);
        if snapshot
            .fragments
            .iter()
            .any(|f| f.id == output.fragment_id)
            || earlier.iter().any(|o| o.fragment_id == output.fragment_id)
        {
            return Err(CompactionError::FragmentIdInUse {
                fragment: output.fragment_id,
            }
            .into());
        }
        for path in [output.path.clone(), output.lineage_path()] {
            let used_earlier = earlier
                .iter()
                .any(|o| o.path == path || o.lineage_path() == path);
            if used_earlier || path_in_use(snapshot.fragments.iter(), &path) {
                return Err(CompactionError::PathInUse { path }.into());
            }
        }
    }
    Ok(())
}

/// The encoded inline lengths of one output's carried sequences.
fn encoded_lengths(carried: &RewriteLineage) -> EncodedLengths {
    EncodedLengths {
        row_ids: carried
            .row_ids
            .as_deref()
            .map_or(0, |ids| RowIdSequence::from_values(ids).encode().len()),
        created_at: RowDatasetVersionSequence::from_versions(&carried.created_at)
            .encode()
            .len(),
        last_updated_at: RowDatasetVersionSequence::from_versions(&carried.last_updated_at)
            .encode()
            .len(),
    }
}

/// Places the carried lineage of every output at once (see [`place_carried_lineage`] for the
/// rule): the plan either appends the spilled columns to every output's main data file, or
/// gives each output with an over-budget sequence a lineage-only file
/// ([`RewriteOutput::lineage_path`]) holding just those columns. Returns each output's files
/// and lineage.
fn place_carried_lineage_over(
    config: &BTreeMap<String, String>,
    pieces: Vec<(DataFile, RewriteLineage)>,
    outputs: &[RewriteOutput],
) -> Result<Vec<(Vec<DataFile>, Lineage)>> {
    let spill = SpillConfig::from_table_config(config)?;
    let lengths: Vec<EncodedLengths> = pieces.iter().map(|(_, c)| encoded_lengths(c)).collect();
    let plan = plan_compaction(&spill, &lengths);
    let separate = matches!(plan, CompactionPlacement::PerFragment { .. });
    let mut placed = Vec::with_capacity(pieces.len());
    for (i, ((mut main, carried), output)) in pieces.into_iter().zip(outputs).enumerate() {
        let spilled = plan.lineage_fields(i);
        let mut lineage_file = DataFile {
            path: output.lineage_path(),
            fields: Vec::new(),
            columns: Vec::new(),
        };
        let target = if separate {
            &mut lineage_file
        } else {
            &mut main
        };
        let lineage = place_sequences(carried, &spilled, target);
        let mut files = vec![main];
        if !lineage_file.fields.is_empty() {
            files.push(lineage_file);
        }
        placed.push((files, lineage));
    }
    Ok(placed)
}

/// Puts each carried sequence inline, or (when its reserved id is in `spilled`) as a hidden
/// `uint64` column appended to `file` with the arm set to [`LineageSequence::Column`].
fn place_sequences(carried: RewriteLineage, spilled: &[FieldId], file: &mut DataFile) -> Lineage {
    let mut place = |field: FieldId, values: Vec<u64>| {
        if spilled.contains(&field) {
            file.fields.push(field);
            file.columns.push(Column::uint64(values));
            LineageSequence::Column
        } else {
            LineageSequence::Inline(values)
        }
    };
    let row_ids = match carried.row_ids {
        Some(ids) => place(ROW_ID_FIELD_ID, ids),
        None => LineageSequence::Absent,
    };
    let created_at = place(CREATED_AT_FIELD_ID, carried.created_at);
    let last_updated_at = place(LAST_UPDATED_AT_FIELD_ID, carried.last_updated_at);
    Lineage {
        row_ids,
        created_at,
        last_updated_at,
    }
}

/// Decides where each carried lineage sequence of a rewritten fragment lives: inline in the
/// manifest, or (spilled) as a hidden `uint64` column appended to `file`, the fragment's main
/// data file, with the arm set to [`LineageSequence::Column`].
///
/// Compaction is the one writer that may spill: every value here was fixed before the commit.
/// The rule is the lineage module's ([`crate::lineage::plan_compaction`]): with
/// `lance.row_lineage.spill` on, a sequence spills iff its inline encoding is strictly longer
/// than the budget. For one output fragment the plan always puts the spilled columns in that
/// fragment's main data file, in the order -3, -4, -5. Row ids are only placed when stable row
/// ids are on (otherwise there is no row id sequence to place).
pub fn place_carried_lineage(
    config: &BTreeMap<String, String>,
    carried: RewriteLineage,
    file: &mut DataFile,
) -> Result<Lineage> {
    let spill = SpillConfig::from_table_config(config)?;
    let spilled = plan_compaction(&spill, &[encoded_lengths(&carried)]).lineage_fields(0);
    Ok(place_sequences(carried, &spilled, file))
}

/// The positions of the inputs in the fragment list, as one range; refuses an empty, repeated,
/// unknown or non-adjacent set.
fn input_span(snapshot: &Snapshot, fragment_ids: &[u64]) -> Result<std::ops::Range<usize>> {
    if fragment_ids.is_empty() {
        return Err(CompactionError::NoFragments.into());
    }
    let mut positions = Vec::with_capacity(fragment_ids.len());
    for (i, &id) in fragment_ids.iter().enumerate() {
        if fragment_ids.get(..i).is_some_and(|seen| seen.contains(&id)) {
            return Err(CompactionError::DuplicateFragment { fragment: id }.into());
        }
        let position = snapshot
            .fragments
            .iter()
            .position(|f| f.id == id)
            .ok_or_else(|| Error::UnknownFragment {
                fragment: id,
                context: "row rewrite input".into(),
            })?;
        positions.push(position);
    }
    let first = positions.iter().copied().min().unwrap_or(0);
    let last = positions.iter().copied().max().unwrap_or(0);
    for position in first..=last {
        if !positions.contains(&position) {
            let fragment = snapshot.fragments.get(position).map_or(0, |f| f.id);
            return Err(CompactionError::NotAdjacent { fragment }.into());
        }
    }
    Ok(first..last + 1)
}

/// Schema fields (in schema order) that some input holds data for: a base column or a live
/// overlay column. Every other field reads NULL in the inputs and reads NULL without a column.
fn fields_with_data(snapshot: &Snapshot, inputs: &[Fragment]) -> Vec<FieldId> {
    let has_data = |id: FieldId| {
        inputs.iter().any(|f| {
            crate::resolve::base_column(f, id).is_some()
                || f.overlays
                    .iter()
                    .any(|o| carried_value_fields(&snapshot.schema, o).any(|c| c == id))
        })
    };
    snapshot
        .schema
        .fields()
        .iter()
        .map(|f| f.id)
        .filter(|&id| has_data(id))
        .collect()
}

/// The stored columns of `fields` holding `values` (column by column), for output `output`.
fn stored_columns(
    snapshot: &Snapshot,
    output: &RewriteOutput,
    fields: &[FieldId],
    values: &[Vec<Value>],
) -> Result<Vec<Column>> {
    fields
        .iter()
        .zip(values)
        .map(|(&field, values)| {
            Column::for_field(
                &snapshot.schema,
                field,
                values,
                output.fragment_id,
                &output.path,
            )
        })
        .collect()
}

/// What a base column stores for a resolved value: a struct column holds only validity.
fn stored_form(snapshot: &Snapshot, field: FieldId, value: Value) -> Value {
    let is_struct = snapshot
        .schema
        .field(field)
        .is_some_and(|f| f.data_type == DataType::Struct);
    match value {
        Value::Struct(_) if is_struct => Value::Struct(Vec::new()),
        other => other,
    }
}

fn lineage_at(fragment: &Fragment, values: &[u64], field: FieldId, at: usize) -> Result<u64> {
    values
        .get(at)
        .copied()
        .ok_or_else(|| Error::BaseLengthMismatch {
            fragment: fragment.id,
            file: "(lineage)".into(),
            field,
            values: values.len() as u64,
            physical_rows: fragment.physical_rows,
        })
}

fn version_at(
    fragment: &Fragment,
    values: Option<&[u64]>,
    field: FieldId,
    at: usize,
) -> Result<u64> {
    match values {
        None => Ok(DEFAULT_ROW_VERSION),
        Some(v) => lineage_at(fragment, v, field, at),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::ErrorClass;
    use crate::compaction::generated;
    use crate::scan::{ScanRow, scan};
    use crate::worked_example::{step_1_overlay, version_1};

    /// The parts of a scan row a row rewrite must keep (everything but the physical address).
    fn kept(rows: Vec<ScanRow>, stable: bool) -> Vec<(Option<u64>, u64, u64, Vec<Value>)> {
        rows.into_iter()
            .map(|r| {
                (
                    stable.then_some(r.row_id),
                    r.created_at,
                    r.last_updated_at,
                    r.values,
                )
            })
            .collect()
    }

    #[test]
    fn rewriting_the_worked_example_drops_deleted_rows_and_folds_the_overlay() {
        // covers: OVL-RWR-1, OVL-RWR-2, OVL-RWR-3, LIN-STAMP-5
        let mut v2 = version_1();
        let mut overlay = step_1_overlay();
        overlay.committed_version = 2;
        v2.version = 2;
        v2.fragments[0].overlays.push(overlay);
        v2.fragments[0].deletions.insert(0);
        if let LineageSequence::Inline(v) = &mut v2.fragments[0].lineage.last_updated_at {
            v[1] = 2;
            v[3] = 2;
        }
        let v3 = rewrite_rows(&v2, &[0], 1, 3, "file2.lance").unwrap();
        v3.validate().unwrap();
        let f = &v3.fragments[0];
        assert_eq!((f.id, f.physical_rows), (1, 3));
        assert!(f.overlays.is_empty() && f.deletions.is_empty());
        assert_eq!(f.files.len(), 1);
        assert_eq!(f.files[0].fields, vec![1, 2, 3, 4]);
        assert_eq!(
            f.files[0].columns[2].values(),
            [26, 40, 23].map(Value::Int32).to_vec()
        );
        assert_eq!(f.lineage.row_ids, LineageSequence::Inline(vec![1, 2, 3]));
        assert_eq!(
            f.lineage.last_updated_at,
            LineageSequence::Inline(vec![2, 1, 2])
        );
        let idx = &v3.indices[0];
        assert!(!idx.covers(0) && !idx.covers(1));
        assert!(idx.entries.is_empty());
        assert_eq!(scan(&v3, None).unwrap().len(), 3);
        assert_eq!(
            kept(scan(&v3, None).unwrap(), true),
            kept(scan(&v2, None).unwrap(), true)
        );
    }

    #[test]
    fn bad_requests_are_refused() {
        let mut s = generated::snapshot(0);
        while s.fragments.len() < 3 {
            let mut extra = s.fragments[0].clone();
            extra.id = s.fragments.len() as u64;
            extra.lineage.row_ids = LineageSequence::Absent;
            for file in &mut extra.files {
                file.path = format!("extra-{}-{}", extra.id, file.path);
            }
            for o in &mut extra.overlays {
                o.file.path = format!("extra-{}-{}", extra.id, o.file.path);
            }
            s.fragments.push(extra);
        }
        s.stable_row_ids = false;
        for f in &mut s.fragments {
            f.lineage.row_ids = LineageSequence::Absent;
        }
        let code = |ids: &[u64], new_id: u64, version: u64, path: &str| {
            let err = rewrite_rows(&s, ids, new_id, version, path).unwrap_err();
            (err.class(), err.code())
        };
        let refused = |c| (ErrorClass::Refused, c);
        assert_eq!(code(&[], 9, 6, "n.lance"), refused("no_fragments"));
        assert_eq!(
            code(&[0, 0], 9, 6, "n.lance"),
            refused("duplicate_fragment")
        );
        assert_eq!(code(&[0, 2], 9, 6, "n.lance"), refused("not_adjacent"));
        assert_eq!(
            code(&[0, 1], 2, 6, "n.lance"),
            refused("fragment_id_in_use")
        );
        assert_eq!(
            code(&[0, 1], 0, 6, "n.lance"),
            refused("fragment_id_in_use")
        );
        assert_eq!(code(&[0, 1], 9, 5, "n.lance"), refused("version_not_newer"));
        assert_eq!(code(&[0, 1], 9, 6, "base-0.lance"), refused("path_in_use"));
        assert_eq!(code(&[0, 7], 9, 6, "n.lance").1, "unknown_fragment");
        // Order of the ids does not matter: rows follow the fragment list.
        let a = rewrite_rows(&s, &[1, 0], 9, 6, "n.lance").unwrap();
        let b = rewrite_rows(&s, &[0, 1], 9, 6, "n.lance").unwrap();
        assert_eq!(a, b);
    }

    /// Six rows with ids 0..6 in one fragment, rows 1 and 4 deleted, spilling on at `budget`.
    fn six_rows(budget: &str) -> Snapshot {
        let mut s = version_1();
        let f = &mut s.fragments[0];
        let extra = 6 - f.physical_rows as usize;
        for file in &mut f.files {
            for column in &mut file.columns {
                let mut values = column.values();
                let last = values.last().cloned().unwrap();
                values.extend(std::iter::repeat_n(last, extra));
                *column = column.with_values(&values).unwrap();
            }
        }
        f.physical_rows = 6;
        f.lineage.row_ids = LineageSequence::Inline((0..6).collect());
        f.lineage.created_at = LineageSequence::Inline(vec![1; 6]);
        f.lineage.last_updated_at = LineageSequence::Inline(vec![1; 6]);
        f.deletions = [1u32, 4].into_iter().collect();
        s.next_row_id = 6;
        s.config
            .insert(crate::lineage::SPILL_KEY.into(), "true".into());
        s.config
            .insert(crate::lineage::INLINE_MAX_BYTES_KEY.into(), budget.into());
        crate::flags::set_commit_flags(&mut s);
        s.validate().unwrap();
        s
    }

    fn out(id: u64, rows: u64) -> RewriteOutput {
        RewriteOutput {
            fragment_id: id,
            path: format!("out{id}.lance"),
            rows,
        }
    }

    #[test]
    fn several_outputs_split_rows_and_place_lineage_per_fragment_or_in_file() {
        // covers: LIN-PLACE-3, LIN-COL-5, LIN-STAMP-5
        // Live ids [0, 2, 3, 5] cut into [0] and [2, 3, 5]. The first piece's row ids are one
        // range (6 bytes), the second a range with a bitmap (11 bytes), and every version
        // sequence is one run (10 bytes): with a 10-byte budget only the second row id sequence
        // spills, so the plan is per fragment and only the second output gets a lineage-only
        // file.
        let s = six_rows("10");
        let next = rewrite_rows_into(&s, &[0], &[out(7, 1), out(8, 3)], 2).unwrap();
        next.validate().unwrap();
        let [a, b] = [&next.fragments[0], &next.fragments[1]];
        assert_eq!((a.id, a.physical_rows, b.id, b.physical_rows), (7, 1, 8, 3));
        assert_eq!(a.files.len(), 1);
        assert_eq!(a.lineage.row_ids, LineageSequence::Inline(vec![0]));
        assert_eq!(b.files.len(), 2);
        assert_eq!(b.files[1].path, "out8-lineage.lance");
        assert_eq!(b.files[1].fields, vec![ROW_ID_FIELD_ID]);
        assert_eq!(b.lineage.row_ids, LineageSequence::Column);
        assert_eq!(
            b.lineage_values(ROW_ID_FIELD_ID).unwrap().unwrap(),
            [2, 3, 5]
        );
        assert_eq!(b.lineage.created_at, LineageSequence::Inline(vec![1; 3]));
        assert_eq!(
            kept(scan(&next, None).unwrap(), true),
            kept(scan(&s, None).unwrap(), true)
        );
        // A budget of 0 puts every sequence of every output over: one plan for all, in file.
        let s = six_rows("0");
        let next = rewrite_rows_into(&s, &[0], &[out(7, 3), out(8, 1)], 2).unwrap();
        for f in &next.fragments {
            assert_eq!(f.files.len(), 1);
            assert_eq!(
                f.files[0].fields[f.files[0].fields.len() - 3..],
                [-3, -4, -5]
            );
        }
    }

    #[test]
    fn outputs_must_hold_exactly_the_live_rows() {
        let s = six_rows("10");
        for outputs in [
            vec![out(7, 3)],
            vec![out(7, 4), out(8, 1)],
            vec![out(7, 4), out(8, 0)],
        ] {
            let err = rewrite_rows_into(&s, &[0], &outputs, 2).unwrap_err();
            assert_eq!(err.code(), "output_rows_mismatch", "{outputs:?}");
        }
        let err = rewrite_rows_into(&s, &[0], &[out(7, 2), out(7, 2)], 2).unwrap_err();
        assert_eq!(err.code(), "fragment_id_in_use");
        let mut clash = out(8, 2);
        clash.path = "out7-lineage.lance".into();
        let err = rewrite_rows_into(&s, &[0], &[out(7, 2), clash], 2).unwrap_err();
        assert_eq!(err.code(), "path_in_use");
    }

    proptest! {
        #[test]
        fn a_row_rewrite_keeps_rows_lineage_and_values_in_order(
            seed in any::<u64>(),
            start in 0usize..3,
            len in 1usize..4,
        ) {
            // covers: OVL-RWR-1, OVL-RWR-2, OVL-RWR-3, LIN-STAMP-5, LIN-READ-1
            let before = generated::snapshot(seed);
            let n = before.fragments.len();
            let start = start % n;
            let end = (start + len).min(n);
            let ids: Vec<u64> = before.fragments[start..end].iter().map(|f| f.id).collect();
            let after = rewrite_rows(&before, &ids, 100, generated::VERSION + 1, "rewritten.lance").unwrap();
            prop_assert!(after.validate().is_ok());
            let stable = before.stable_row_ids;
            prop_assert_eq!(kept(scan(&after, None).unwrap(), stable), kept(scan(&before, None).unwrap(), stable));

            prop_assert_eq!(after.fragments.len(), n - ids.len() + 1);
            let new = &after.fragments[start];
            prop_assert_eq!(new.id, 100);
            prop_assert!(new.overlays.is_empty() && new.deletions.is_empty());
            prop_assert_eq!(new.files.len(), 1);
            let live: u64 = before.fragments[start..end]
                .iter()
                .map(|f| f.physical_rows - f.deletions.len())
                .sum();
            prop_assert_eq!(new.physical_rows, live);
            prop_assert_eq!(new.lineage.row_ids == LineageSequence::Absent, !stable);
            prop_assert_eq!(after.next_row_id, before.next_row_id);
            for (old, index) in before.indices.iter().zip(&after.indices) {
                prop_assert!(!index.covers(100));
                for f in &after.fragments {
                    if f.id != 100 {
                        prop_assert_eq!(index.covers(f.id), old.covers(f.id));
                    }
                }
                prop_assert!(index.entries.iter().all(|e| !ids.contains(&e.fragment)));
                prop_assert_eq!(index.dataset_version, old.dataset_version);
            }
        }
    }
}
