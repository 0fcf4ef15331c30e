//! How a cell gets its value: the heart of data overlay files.
//!
//! Invariant: for a fragment, a field and a physical offset, exactly one of these holds, checked
//! in this order:
//!
//! 1. the offset is **deleted**: the row does not exist, whatever any overlay says;
//! 2. some overlay **covers** (offset, field): among those, the one with the highest
//!    `committed_version` wins, and among equal versions the later position in the fragment's
//!    overlay list wins. Its value is the one at the offset's **rank** in that field's coverage
//!    bitmap (the number of covered offsets below it). A covered NULL makes the cell NULL;
//! 3. otherwise the cell **falls through** to the base data file holding the field, or is NULL
//!    when no base file holds it.
//!
//! Coverage decides whether an overlay applies, never the nullness of its value. Tombstoned
//! (`-2`) and other negative ids in an overlay's field list are never matched, and a struct
//! field is a container: its validity comes from the base (a v2.0 struct column, or the
//! struct's layer in a v2.1+ leaf column; present when no base file holds it or a leaf below
//! it), its children resolve one by one.
//!
//! Every rule above is coded in this file and nowhere else: overlay order ([`precedence`]),
//! which bitmap and value column apply to a field ([`coverage_of`], [`covered_values`]),
//! tombstone matching and base lookup ([`file_column`], [`base_column`]). Compaction, queries
//! and the kit call these functions rather than restating them.
//!
//! Resolution decides the [`Winner`] of every offset first ([`plan_column`]), as maximal
//! [`Run`]s of consecutive offsets that one source decides, and then builds its output by
//! copying each run's values, as `Value`s ([`resolve_column`]) or as an Arrow array
//! ([`crate::columnar`]); the gathers restate no rule. Runs are decided 64 offsets at a time
//! ([`ColumnPlan::for_each_run`]): one word of the deletion bitmap, then one word of each
//! overlay's coverage, newest first, each claiming what is still unclaimed; so a plan costs
//! O(physical_rows / 64 × overlays + covered cells + runs), ranks come from counting each
//! bitmap's members in order, never from a search, and a long stretch from one source is one
//! run. [`explain`] answers the same question for one cell and
//! records every step, for people and for `lance-conformance explain`.

use std::fmt;

use crate::error::{Error, Result};
use arrow_buffer::NullBuffer;
use roaring::RoaringBitmap;

use crate::model::{
    Column, DataFile, DataType, FieldId, Fragment, Overlay, Schema, StructLayer,
    TOMBSTONE_FIELD_ID, Value,
};

/// Overlay positions in the order resolution tries them, newest first: a higher
/// `committed_version` wins, and among equal versions the later position in the stored list
/// wins. The first overlay in this order that covers a cell decides it.
pub fn precedence(fragment: &Fragment) -> Vec<usize> {
    let mut order: Vec<usize> = (0..fragment.overlays.len()).collect();
    order.sort_by(|&a, &b| {
        let (va, vb) = (
            fragment.overlays[a].committed_version,
            fragment.overlays[b].committed_version,
        );
        vb.cmp(&va).then(b.cmp(&a))
    });
    order
}

/// The position of `field` in a data file's field list and its column; a tombstone (`-2`)
/// never matches, so a folded-away column is never read as the field.
pub fn file_column(file: &DataFile, field: FieldId) -> Option<(usize, &Column)> {
    let pos = file
        .fields
        .iter()
        .position(|&f| f == field && f != TOMBSTONE_FIELD_ID)?;
    file.columns.get(pos).map(|c| (pos, c))
}

/// The base column of a live field: the index of the base file holding it, and its values.
pub fn base_column(fragment: &Fragment, field: FieldId) -> Option<(usize, &Column)> {
    fragment
        .files
        .iter()
        .enumerate()
        .find_map(|(i, f)| file_column(f, field).map(|(_, c)| (i, c)))
}

/// The position and coverage of the live user field `field` in `overlay`, if it carries it.
/// Negative ids (tombstones, lineage) are never matched; a sparse overlay's bitmap is the one
/// at the field's position, a dense overlay's the shared one.
pub fn coverage_of(overlay: &Overlay, field: FieldId) -> Option<(usize, &RoaringBitmap)> {
    if field < 0 {
        return None;
    }
    let pos = overlay.file.fields.iter().position(|&f| f == field)?;
    Some((pos, overlay.coverage.at(pos)?))
}

/// The coverage of the live user field `field` in `overlay` and its value column (value `k`
/// belongs to the `k`-th covered offset), if the overlay carries the field. A value column
/// whose length differs from the coverage's cardinality is an error: nothing could be looked
/// up by rank. An overlay without a column at the field's position provides no value, which
/// is the same error unless it covers nothing.
pub fn covered_values(
    overlay: &Overlay,
    fragment: u64,
    field: FieldId,
) -> Result<Option<(&RoaringBitmap, &Column)>> {
    let Some((position, bitmap)) = coverage_of(overlay, field) else {
        return Ok(None);
    };
    let values = overlay.file.columns.get(position);
    let count = values.map_or(0, Column::len) as u64;
    if count != bitmap.len() {
        return Err(Error::ValueCountMismatch {
            fragment,
            file: overlay.file.path.clone(),
            field,
            values: count,
            covered: bitmap.len(),
        });
    }
    Ok(values.map(|values| (bitmap, values)))
}

/// Where a resolved cell's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The row is deleted; it has no value.
    Deleted,
    /// The overlay at `position` in the fragment's overlay list won.
    Overlay {
        /// Position in `DataFragment.overlays`.
        position: usize,
        /// Its `committed_version`.
        committed_version: u64,
        /// The offset's rank in the field's coverage bitmap: the index into the value column.
        rank: u64,
    },
    /// No overlay covers the cell; the base file at `file` (index into `Fragment::files`) holds it.
    Base {
        /// Index into the fragment's data files.
        file: usize,
    },
    /// No overlay covers the cell and no base file holds the field.
    NoBase,
    /// A struct cell: its validity came from the base and its children resolved separately.
    Struct,
}

/// What happened to one overlay while resolving a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverlayStep {
    /// The overlay's fields do not include the (live) field.
    FieldNotCarried,
    /// The overlay carries the field but its coverage does not include the offset.
    NotCovered,
    /// The overlay covers the cell, at this rank.
    Covers {
        /// Rank of the offset in the field's coverage.
        rank: u64,
    },
}

/// One line of an explanation: an overlay, considered in precedence order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Considered {
    /// Position in the fragment's overlay list.
    pub position: usize,
    /// Its `committed_version`.
    pub committed_version: u64,
    /// Its data file path.
    pub path: String,
    /// What it said about the cell.
    pub step: OverlayStep,
}

/// The decision trail for one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// Fragment id.
    pub fragment: u64,
    /// Physical offset.
    pub offset: u64,
    /// Field id.
    pub field: FieldId,
    /// Overlays in precedence order, up to and including the winner (all of them when none
    /// wins). For a deleted row every overlay is listed, to show which values are dead.
    pub considered: Vec<Considered>,
    /// The deciding source.
    pub source: Source,
    /// The value; `None` for a deleted row.
    pub value: Option<Value>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "cell fragment {} offset {} field {}",
            self.fragment, self.offset, self.field
        )?;
        for c in &self.considered {
            let what = match &c.step {
                OverlayStep::FieldNotCarried => "does not carry the field".to_string(),
                OverlayStep::NotCovered => "carries the field, offset not covered".to_string(),
                OverlayStep::Covers { rank } => format!("covers it at rank {rank}"),
            };
            writeln!(
                f,
                "  overlay #{} (committed_version {}, {}): {}",
                c.position, c.committed_version, c.path, what
            )?;
        }
        let value = self
            .value
            .as_ref()
            .map_or("no row".to_string(), Value::to_string);
        let verdict = match &self.source {
            Source::Deleted => "deleted: deletions beat overlays".to_string(),
            Source::Overlay {
                position,
                committed_version,
                rank,
            } => format!(
                "overlay #{position} wins (committed_version {committed_version}), value at rank {rank}"
            ),
            Source::Base { file } => format!("falls through to base file #{file}"),
            Source::NoBase => "falls through; no base file holds the field: NULL".to_string(),
            Source::Struct => "struct: base validity, children resolved one by one".to_string(),
        };
        writeln!(f, "  => {verdict} = {value}")
    }
}

/// Resolves one cell and records how.
pub fn explain(
    schema: &Schema,
    fragment: &Fragment,
    offset: u64,
    field: FieldId,
) -> Result<Explanation> {
    let schema_field = schema.field(field).ok_or_else(|| Error::UnknownField {
        field,
        context: "explain".into(),
    })?;
    let offset32 = row_offset(fragment, offset)?;
    let deleted = fragment.deletions.contains(offset32);
    let mut considered = Vec::new();
    let mut winner = None;
    if schema_field.data_type != DataType::Struct {
        for position in precedence(fragment) {
            let overlay = &fragment.overlays[position];
            let step = match coverage_of(overlay, field) {
                None => OverlayStep::FieldNotCarried,
                Some((_, bitmap)) if !bitmap.contains(offset32) => OverlayStep::NotCovered,
                Some((_, bitmap)) => OverlayStep::Covers {
                    rank: bitmap.rank(offset32) - 1,
                },
            };
            considered.push(Considered {
                position,
                committed_version: overlay.committed_version,
                path: overlay.file.path.clone(),
                step: step.clone(),
            });
            if let OverlayStep::Covers { rank } = step {
                winner = Some((position, rank));
                if !deleted {
                    break;
                }
            }
        }
    }
    let (source, value) = if deleted {
        (Source::Deleted, None)
    } else if schema_field.data_type == DataType::Struct {
        let column = resolve_column(schema, fragment, field)?;
        (
            Source::Struct,
            column.into_iter().nth(offset as usize).flatten(),
        )
    } else if let Some((position, rank)) = winner {
        let overlay = &fragment.overlays[position];
        let value = overlay_value(fragment, position, field, rank)?;
        (
            Source::Overlay {
                position,
                committed_version: overlay.committed_version,
                rank,
            },
            Some(value),
        )
    } else {
        match base_column(fragment, field) {
            Some((file, column)) => (
                Source::Base { file },
                Some(base_value(fragment, file, field, column, offset)?),
            ),
            None => (Source::NoBase, Some(Value::Null)),
        }
    };
    Ok(Explanation {
        fragment: fragment.id,
        offset,
        field,
        considered,
        source,
        value,
    })
}

/// The base column of `field` (with its file's index) when it is the winner of every offset,
/// known without deciding them one by one: no row is deleted, a base file holds the field,
/// and no overlay carries it.
pub fn base_everywhere(fragment: &Fragment, field: FieldId) -> Option<(usize, &Column)> {
    let no_overlay = fragment
        .overlays
        .iter()
        .all(|o| coverage_of(o, field).is_none());
    (fragment.deletions.is_empty() && no_overlay)
        .then(|| base_column(fragment, field))
        .flatten()
}

/// The winner of one cell: where the value at an offset comes from. Resolution first decides
/// the winners of every offset ([`plan_column`]), as runs of consecutive offsets, then builds
/// its output by copying each run's values, as `Value`s ([`resolve_column`]) or as an Arrow
/// array ([`crate::columnar`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Winner {
    /// The row is deleted: it has no value.
    Deleted,
    /// The overlay at `position` of the fragment's overlay list won; the value is the one at
    /// `rank` in its value column.
    Overlay {
        /// Position in `DataFragment.overlays`.
        position: u32,
        /// Rank of the offset in the field's coverage: the index into the value column.
        rank: u32,
    },
    /// No overlay covers the cell: the base column's value at the same offset.
    Base,
    /// No overlay covers the cell and no base file holds the field: NULL.
    Null,
}

/// Consecutive offsets `start..start + len` that one source decides: the winner of offset
/// `start + i` is `winner`, with the rank advanced by `i` for an overlay (consecutive covered
/// offsets of one bitmap have consecutive ranks). A run is never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// First offset of the run.
    pub start: u32,
    /// Number of offsets, at least 1.
    pub len: u32,
    /// The winner of the first offset.
    pub winner: Winner,
}

impl Run {
    /// The winner of offset `start + i` of this run (`i < len`).
    pub fn winner_at(&self, i: u32) -> Winner {
        match self.winner {
            Winner::Overlay { position, rank } => Winner::Overlay {
                position,
                rank: rank + i,
            },
            other => other,
        }
    }

    /// The run of `len` more offsets after this one, when it continues it: the same source,
    /// and for an overlay the next ranks.
    fn continues_with(&self, next: &Run) -> bool {
        next.start == self.start + self.len
            && match (self.winner, next.winner) {
                (
                    Winner::Overlay { position, rank },
                    Winner::Overlay {
                        position: p,
                        rank: r,
                    },
                ) => p == position && r == rank + self.len,
                (a, b) => a == b,
            }
    }
}

/// The winners of every offset of one non-struct field, and the columns they read.
#[derive(Debug, Clone)]
pub struct ColumnPlan<'a> {
    /// Physical rows: the plan decides offsets `0..rows`.
    pub rows: u32,
    /// The deleted offsets (all below `rows`).
    pub deleted: &'a RoaringBitmap,
    /// The overlays carrying the field, newest first (the order in which they claim offsets):
    /// each one's position in the fragment's overlay list and its coverage of the field (all
    /// below `rows`, as many members as its value column has values).
    pub claims: Vec<(u32, &'a RoaringBitmap)>,
    /// The winner of an offset nobody claims: [`Winner::Base`], or [`Winner::Null`] when no
    /// base file holds the field.
    pub fall_through: Winner,
    /// The base column [`Winner::Base`] reads (at the cell's own offset), with the index of
    /// its file in `Fragment::files`; `None` when no base file holds the field.
    pub base: Option<(usize, &'a Column)>,
    /// By overlay position: the value column [`Winner::Overlay`] reads by rank, `None` for an
    /// overlay that does not carry the field.
    pub overlays: Vec<Option<&'a Column>>,
}

impl ColumnPlan<'_> {
    /// The winners as maximal runs, in offset order; together they cover offsets `0..rows`
    /// once each.
    pub fn runs(&self) -> Vec<Run> {
        let mut runs = Vec::new();
        self.for_each_run(|run| runs.push(run));
        runs
    }

    /// The winner of every offset, one entry per physical row (the runs expanded).
    pub fn winners(&self) -> Vec<Winner> {
        let mut winners = Vec::with_capacity(self.rows as usize);
        self.for_each_run(|run| winners.extend((0..run.len).map(|i| run.winner_at(i))));
        winners
    }

    /// Offsets whose winner is not [`Winner::Deleted`]: the rows of the output.
    pub fn live_rows(&self) -> usize {
        (u64::from(self.rows) - self.deleted.len()) as usize
    }

    /// Calls `f` with each of [`ColumnPlan::runs`] in offset order, deciding them 64 offsets
    /// at a time (one word of each bitmap) by the module's rule: a deleted offset is claimed
    /// first; then each overlay, newest first, claims the offsets it covers that nothing has
    /// claimed yet, at their rank in its coverage; what nobody claimed falls through.
    pub fn for_each_run(&self, f: impl FnMut(Run)) {
        let mut runs = Joined { pending: None, f };
        let deleted = Words::new(self.deleted, self.rows);
        let mut coverage: Vec<(u32, Words)> = self
            .claims
            .iter()
            .map(|&(position, bitmap)| (position, Words::new(bitmap, self.rows)))
            .collect();
        // The winner of each offset of the block that some overlay claimed.
        let mut claimed_by = [Winner::Deleted; 64];
        for block in (0..self.rows).step_by(64) {
            let width = (self.rows - block).min(64);
            let deleted = deleted.next_word(block);
            let mut claimed = deleted;
            for (position, words) in &mut coverage {
                let covered = words.next_word(block);
                let mut wins = covered & !claimed;
                claimed |= covered;
                while wins != 0 {
                    let bit = wins.trailing_zeros();
                    let below = covered & ((1u64 << bit) - 1);
                    claimed_by[bit as usize] = Winner::Overlay {
                        position: *position,
                        rank: words.rank + below.count_ones(),
                    };
                    wins &= wins - 1;
                }
                words.rank += covered.count_ones();
            }
            // Offsets claimed by nobody fall through; a claimed one takes its claimant.
            let mut from = 0;
            let mut rest = claimed;
            while rest != 0 {
                let bit = rest.trailing_zeros();
                if bit > from {
                    runs.push(block + from, bit - from, self.fall_through);
                }
                let winner = if deleted & (1u64 << bit) != 0 {
                    Winner::Deleted
                } else {
                    claimed_by[bit as usize]
                };
                runs.push(block + bit, 1, winner);
                rest &= rest - 1;
                from = bit + 1;
            }
            if from < width {
                runs.push(block + from, width - from, self.fall_through);
            }
        }
        runs.finish();
    }
}

/// Pieces of runs, joined into maximal runs before they are handed to `f`.
struct Joined<F: FnMut(Run)> {
    pending: Option<Run>,
    f: F,
}

impl<F: FnMut(Run)> Joined<F> {
    fn push(&mut self, start: u32, len: u32, winner: Winner) {
        let run = Run { start, len, winner };
        match self.pending.as_mut() {
            Some(pending) if pending.continues_with(&run) => pending.len += len,
            Some(pending) => (self.f)(std::mem::replace(pending, run)),
            None => self.pending = Some(run),
        }
    }

    fn finish(mut self) {
        if let Some(run) = self.pending.take() {
            (self.f)(run);
        }
    }
}

/// Decides the winner of every offset of the non-struct field `field` (the module's rule,
/// in its order: deleted, newest covering overlay, base, NULL). Every lookup a gather makes
/// through the plan is in bounds: each value column holds one value per covered offset and
/// the base column one per physical row, or this is an error.
pub fn plan_column<'a>(fragment: &'a Fragment, field: FieldId) -> Result<ColumnPlan<'a>> {
    let rows = fragment.offset_count()?;
    let base = base_column(fragment, field);
    let fall_through = if base.is_some() {
        Winner::Base
    } else {
        Winner::Null
    };
    if let Some(offset) = first_at_or_above(&fragment.deletions, rows) {
        return Err(deletion_out_of_range(fragment, offset));
    }
    let mut overlays = vec![None; fragment.overlays.len()];
    let mut claims: Vec<(u32, &RoaringBitmap)> = Vec::new();
    for position in precedence(fragment) {
        let overlay = &fragment.overlays[position];
        let Some((bitmap, values)) = covered_values(overlay, fragment.id, field)? else {
            continue;
        };
        overlays[position] = Some(values);
        let position32 = u32::try_from(position).map_err(|_| Error::OffsetOutOfRange {
            fragment: fragment.id,
            file: overlay.file.path.clone(),
            what: "overlay position".into(),
            offset: position as u64,
            physical_rows: u64::from(u32::MAX),
        })?;
        if let Some(offset) = first_at_or_above(bitmap, rows) {
            return Err(Error::OffsetOutOfRange {
                fragment: fragment.id,
                file: overlay.file.path.clone(),
                what: format!("coverage of field {field}"),
                offset: u64::from(offset),
                physical_rows: fragment.physical_rows,
            });
        }
        claims.push((position32, bitmap));
    }
    if let Some((file, column)) = base {
        fragment.check_base_length(file, field, column)?;
    }
    Ok(ColumnPlan {
        rows,
        deleted: &fragment.deletions,
        claims,
        fall_through,
        base,
        overlays,
    })
}

/// The smallest member of `bitmap` at or above `limit`, if any.
fn first_at_or_above(bitmap: &RoaringBitmap, limit: u32) -> Option<u32> {
    let below = match limit.checked_sub(1) {
        Some(last) => bitmap.rank(last),
        None => 0,
    };
    (below < bitmap.len())
        .then(|| bitmap.select(below as u32))
        .flatten()
}

/// The members of a bitmap below `rows`, one 64-offset word at a time, in increasing blocks,
/// with the count of members before the current block (the rank of its first member). The
/// words are laid out once, from one pass over the members (a bitmap of a fragment's offsets,
/// `rows / 8` bytes), so that taking a word costs an index, not a walk of the bitmap.
struct Words {
    words: Vec<u64>,
    /// Members below the block of the next word.
    rank: u32,
}

impl Words {
    fn new(bitmap: &RoaringBitmap, rows: u32) -> Self {
        let mut words = vec![0u64; (rows as usize).div_ceil(64)];
        // `for_each`, not a `for` loop: roaring walks its containers inside (`fold`), which
        // is what makes one pass over the members cheap.
        bitmap.iter().for_each(|member| {
            if member < rows {
                words[(member / 64) as usize] |= 1u64 << (member % 64);
            }
        });
        Words { words, rank: 0 }
    }

    /// The members in `block..block + 64` as bits (bit `i` = offset `block + i`); `block` is a
    /// multiple of 64 below `rows`.
    fn next_word(&self, block: u32) -> u64 {
        self.words.get((block / 64) as usize).copied().unwrap_or(0)
    }
}

/// Resolves every physical row of one field. Entry `i` is the value at offset `i`, or `None`
/// when offset `i` is deleted.
pub fn resolve_column(
    schema: &Schema,
    fragment: &Fragment,
    field: FieldId,
) -> Result<Vec<Option<Value>>> {
    let schema_field = schema.field(field).ok_or_else(|| Error::UnknownField {
        field,
        context: "resolve".into(),
    })?;
    if schema_field.data_type == DataType::Struct {
        return resolve_struct(schema, fragment, field);
    }
    let plan = plan_column(fragment, field)?;
    // The sources as values, each converted once; then the gather: one pass over the runs in
    // offset order, each winning value cloned once. A winner the plan's bounds do not back
    // cannot occur; it would read as NULL.
    let base = plan
        .base
        .map_or_else(Vec::new, |(_, column)| column.values());
    let overlays: Vec<Vec<Value>> = plan
        .overlays
        .iter()
        .map(|values| values.map_or_else(Vec::new, Column::values))
        .collect();
    let mut out = Vec::with_capacity(base.len().max(plan.live_rows()));
    for run in plan.runs() {
        let (start, len) = (run.start as usize, run.len as usize);
        let from: Option<&[Value]> = match run.winner {
            Winner::Deleted => {
                out.extend(std::iter::repeat_n(None, len));
                continue;
            }
            Winner::Overlay { position, rank } => overlays
                .get(position as usize)
                .and_then(|values| values.get(rank as usize..rank as usize + len)),
            Winner::Base => base.get(start..start + len),
            Winner::Null => None,
        };
        match from {
            Some(values) => out.extend(values.iter().cloned().map(Some)),
            None => out.extend(std::iter::repeat_n(Some(Value::Null), len)),
        }
    }
    Ok(out)
}

/// A struct column: present where [`struct_presence`] says so, each present row assembled
/// from its children.
fn resolve_struct(
    schema: &Schema,
    fragment: &Fragment,
    field: FieldId,
) -> Result<Vec<Option<Value>>> {
    let children: Vec<Vec<Option<Value>>> = schema
        .children(field)
        .map(|child| resolve_column(schema, fragment, child.id))
        .collect::<Result<_>>()?;
    let rows = fragment.offset_count()?;
    let presence = struct_presence(fragment, field)?;
    let mut out = Vec::with_capacity(rows as usize);
    for offset in 0..rows {
        if fragment.deletions.contains(offset) {
            out.push(None);
            continue;
        }
        let at = offset as usize;
        let present = presence.as_ref().is_none_or(|p| p.is_valid(at));
        out.push(Some(if present {
            Value::Struct(
                children
                    .iter()
                    .map(|c| c.get(at).cloned().flatten().unwrap_or(Value::Null))
                    .collect(),
            )
        } else {
            Value::Null
        }));
    }
    Ok(out)
}

/// Where a struct field is present, one bit per physical row, or `None` when it is present
/// everywhere: the base's validity decides [OVL-SHAPE-5], [OVL-SHAPE-8]. A v2.0 base file
/// holds it in a column of the struct's own; a v2.1+ base file in the struct's layer of any
/// leaf below it [DS-LEAF-1] (`Fragment::validate` has checked that every source agrees,
/// [DS-LEAF-3]). With no base column for the struct or a leaf below it (a struct added after
/// the fragment was written) the struct is present and its children may still be NULL
/// [OVL-NULL-6]. A column of NULLs only holds no present struct.
pub fn struct_presence(fragment: &Fragment, field: FieldId) -> Result<Option<NullBuffer>> {
    if let Some((file, column)) = base_column(fragment, field) {
        fragment.check_base_length(file, field, column)?;
        return Ok(column.array().logical_nulls());
    }
    let Some((file, leaf, column, layer)) = base_struct_layers(fragment, field).next() else {
        return Ok(None);
    };
    fragment.check_base_length(file, leaf, column)?;
    Ok(layer.validity.clone())
}

/// Every layer of struct `field` that the fragment's base files carry, in file order and then
/// field order: the base file's index, the leaf whose column carries it, that column and the
/// layer. Only live user fields count (a tombstone or a lineage id never holds a struct).
pub fn base_struct_layers(
    fragment: &Fragment,
    field: FieldId,
) -> impl Iterator<Item = (usize, FieldId, &Column, &StructLayer)> {
    fragment
        .files
        .iter()
        .enumerate()
        .flat_map(move |(i, file)| {
            file.fields
                .iter()
                .zip(&file.columns)
                .filter(|(leaf, _)| **leaf >= 0)
                .filter_map(move |(&leaf, column)| {
                    column
                        .struct_layer(field)
                        .map(|layer| (i, leaf, column, layer))
                })
        })
}

fn overlay_value(fragment: &Fragment, position: usize, field: FieldId, rank: u64) -> Result<Value> {
    let overlay = &fragment.overlays[position];
    let (column_pos, bitmap) = coverage_of(overlay, field).ok_or_else(|| Error::UnknownField {
        field,
        context: overlay.file.path.clone(),
    })?;
    let column = overlay.file.columns.get(column_pos);
    column
        .and_then(|c| c.value(rank as usize))
        .ok_or_else(|| Error::ValueCountMismatch {
            fragment: fragment.id,
            file: overlay.file.path.clone(),
            field,
            values: column.map_or(0, |c| c.len() as u64),
            covered: bitmap.len(),
        })
}

/// The base value at `offset` of `column` (the field's column in base file `file`), or the
/// length mismatch that leaves it missing.
pub(crate) fn base_value(
    fragment: &Fragment,
    file: usize,
    field: FieldId,
    column: &Column,
    offset: u64,
) -> Result<Value> {
    column
        .value(offset as usize)
        .ok_or_else(|| Error::BaseLengthMismatch {
            fragment: fragment.id,
            file: fragment.files[file].path.clone(),
            field,
            values: column.len() as u64,
            physical_rows: fragment.physical_rows,
        })
}

fn row_offset(fragment: &Fragment, offset: u64) -> Result<u32> {
    match u32::try_from(offset) {
        Ok(o) if offset < fragment.physical_rows => Ok(o),
        _ => Err(Error::OffsetOutOfRange {
            fragment: fragment.id,
            file: "(request)".into(),
            what: "requested cell".into(),
            offset,
            physical_rows: fragment.physical_rows,
        }),
    }
}

fn deletion_out_of_range(fragment: &Fragment, offset: u32) -> Error {
    Error::OffsetOutOfRange {
        fragment: fragment.id,
        file: "_deletions".into(),
        what: "deletion".into(),
        offset: u64::from(offset),
        physical_rows: fragment.physical_rows,
    }
}
