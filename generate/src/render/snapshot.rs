//! One manifest version rendered as text: the snapshot files' per-version sections and
//! `explain`'s layout view share it, so the two cannot drift.
//!
//! Invariant: the rendering is a deterministic function of one snapshot, shows every manifest
//! fact a reader acts on (fragments, files with field ids, overlays with coverage as ranges,
//! committed versions, deletions, lineage placement and inline sizes, the encoding of a row-id
//! sequence that is not a plain range, indices, flags by name, config), and never validates: a
//! damaged version renders as faithfully as a sound one. It depends on nothing that builds a
//! case, so the runner can use it.

use std::fmt::Write;

use lance_reference::lineage::{
    ArrayWidth, EncodedU64Array, RowDatasetVersionSequence, RowIdSequence, U64Segment,
};
use lance_reference::model::{
    Coverage, DataFile, FieldId, Fragment, IndexKind, LineageSequence, Schema, Snapshot,
};
use roaring::RoaringBitmap;

use crate::case::cell::type_name;
use crate::case::names::dotted_name;

/// Named feature-flag bits (Lance 14 meanings; see `spec/feature-flags.md`).
const FLAG_NAMES: [(u64, &str); 18] = [
    (1, "deletion_files"),
    (2, "stable_row_ids"),
    (4, "v2_format_deprecated"),
    (8, "table_config"),
    (16, "base_paths"),
    (32, "disable_transaction_file"),
    (64, "data_overlay_files"),
    (128, "covered_index_metadata"),
    (256, "mixed_data_file_versions"),
    (512, "frag_reuse_with_stable_row_ids"),
    (1024, "fragment_reuse_index"),
    (2048, "spilled_row_lineage"),
    (4096, "reserved_4096"),
    (8192, "reserved_8192"),
    (16384, "managed_blobs"),
    (32768, "non_reusable_field_ids"),
    (65536, "reserved_65536"),
    (131072, "reserved_131072"),
];

/// `66 [stable_row_ids, data_overlay_files]`; unnamed bits appear as `bit_<value>`.
pub fn flags(word: u64) -> String {
    let mut names = Vec::new();
    for bit in 0..64 {
        let value = 1u64 << bit;
        if word & value != 0 {
            match FLAG_NAMES.iter().find(|(v, _)| *v == value) {
                Some((_, n)) => names.push((*n).to_string()),
                None => names.push(format!("unknown_{value}")),
            }
        }
    }
    format!("{word} [{}]", names.join(", "))
}

/// The most runs [`ranges`] writes out; longer lists keep their first and last runs.
const MAX_RUNS: usize = 24;

/// Offsets as ranges: `1..=3, 7`; `{}` when empty. More than `MAX_RUNS` runs are shortened to
/// the first 16 and the last 4 around `… (N offsets in M runs) …`.
pub fn ranges(bitmap: &RoaringBitmap) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    let flush = |run: (u32, u32), parts: &mut Vec<String>| {
        parts.push(if run.0 == run.1 {
            run.0.to_string()
        } else {
            format!("{}..={}", run.0, run.1)
        });
    };
    for x in bitmap {
        run = match run {
            Some((a, b)) if b.checked_add(1) == Some(x) => Some((a, x)),
            Some(r) => {
                flush(r, &mut parts);
                Some((x, x))
            }
            None => Some((x, x)),
        };
    }
    if let Some(r) = run {
        flush(r, &mut parts);
    }
    if parts.is_empty() {
        "{}".into()
    } else if parts.len() > MAX_RUNS {
        format!(
            "{}, … ({} offsets in {} runs) …, {}",
            parts[..16].join(", "),
            bitmap.len(),
            parts.len(),
            parts[parts.len() - 4..].join(", ")
        )
    } else {
        parts.join(", ")
    }
}

fn field_label(schema: &Schema, id: FieldId) -> String {
    match id {
        -2 => "-2 (tombstone)".into(),
        -3 => "-3 _rowid".into(),
        -4 => "-4 _row_created_at_version".into(),
        -5 => "-5 _row_last_updated_at_version".into(),
        _ if schema.field(id).is_some() => format!("{id} {}", dotted_name(schema, id)),
        _ => format!("{id} (not in schema)"),
    }
}

fn file_fields(schema: &Schema, file: &DataFile) -> String {
    file.fields
        .iter()
        .map(|f| field_label(schema, *f))
        .collect::<Vec<_>>()
        .join(", ")
}

fn lineage(fragment: &Fragment, seq: &LineageSequence, field: FieldId, row_ids: bool) -> String {
    match seq {
        LineageSequence::Absent => "absent".into(),
        LineageSequence::Inline(values) => {
            let bytes = if row_ids {
                let seq = RowIdSequence::from_values(values);
                if let Some(kind) = seq.segments.iter().find_map(segment_kind) {
                    return format!("inline {} B, {kind}", seq.encode().len());
                }
                seq.encode().len()
            } else {
                RowDatasetVersionSequence::from_versions(values)
                    .encode()
                    .len()
            };
            format!("inline {bytes} B")
        }
        LineageSequence::Column => {
            match fragment.files.iter().find(|f| f.fields.contains(&field)) {
                Some(f) => format!("column in data/{}", f.path),
                None => "column (no file holds it)".into(),
            }
        }
    }
}

/// The encoding of a row-id segment that is not a plain `range` (those are left unnamed):
/// its kind, and the width of its array if it has one.
fn segment_kind(segment: &U64Segment) -> Option<String> {
    let width = |a: &EncodedU64Array| match a.width() {
        ArrayWidth::U16 => "u16",
        ArrayWidth::U32 => "u32",
        ArrayWidth::U64 => "u64",
    };
    match segment {
        U64Segment::Range { .. } => None,
        U64Segment::RangeWithHoles { holes, .. } => {
            Some(format!("range_with_holes ({} holes)", width(holes)))
        }
        U64Segment::RangeWithBitmap { .. } => Some("range_with_bitmap".into()),
        U64Segment::SortedArray(a) => Some(format!("sorted_array ({})", width(a))),
        U64Segment::Array(a) => Some(format!("array ({})", width(a))),
    }
}

/// Renders one version.
pub fn version(out: &mut String, snapshot: &Snapshot) {
    let s = &snapshot.schema;
    let _ = writeln!(out, "schema:");
    for f in s.fields() {
        let indent = "  ".repeat(s.ancestry(f.id).len());
        let null = if f.nullable { "" } else { " not null" };
        let _ = writeln!(
            out,
            "{indent}{} {}: {}{null}",
            f.id,
            f.name,
            type_name(&f.data_type)
        );
    }
    let _ = writeln!(out, "reader flags: {}", flags(snapshot.reader_flags));
    let _ = writeln!(out, "writer flags: {}", flags(snapshot.writer_flags));
    if snapshot.config.is_empty() {
        let _ = writeln!(out, "config: {{}}");
    } else {
        let _ = writeln!(out, "config:");
        for (k, v) in &snapshot.config {
            let _ = writeln!(out, "  {k} = {v:?}");
        }
    }
    let _ = writeln!(
        out,
        "stable row ids: {}, next_row_id: {}",
        snapshot.stable_row_ids, snapshot.next_row_id
    );
    for f in &snapshot.fragments {
        let _ = writeln!(
            out,
            "fragment {}: physical_rows {}, deleted {}",
            f.id,
            f.physical_rows,
            ranges(&f.deletions)
        );
        for file in &f.files {
            let _ = writeln!(out, "  file data/{}: [{}]", file.path, file_fields(s, file));
        }
        for (i, o) in f.overlays.iter().enumerate() {
            let _ = writeln!(
                out,
                "  overlay #{i} data/{}: committed_version {}",
                o.file.path, o.committed_version
            );
            match &o.coverage {
                Coverage::Dense(b) => {
                    let _ = writeln!(
                        out,
                        "    dense [{}] covers {}",
                        file_fields(s, &o.file),
                        ranges(b)
                    );
                }
                Coverage::Sparse(bs) => {
                    let _ = writeln!(out, "    sparse");
                    for (pos, field) in o.file.fields.iter().enumerate() {
                        let cov = bs
                            .get(pos)
                            .map_or_else(|| "(no bitmap)".to_string(), ranges);
                        let _ = writeln!(out, "      {} covers {cov}", field_label(s, *field));
                    }
                    if bs.len() > o.file.fields.len() {
                        let _ = writeln!(
                            out,
                            "      ({} extra bitmaps)",
                            bs.len() - o.file.fields.len()
                        );
                    }
                }
            }
        }
        let _ = writeln!(
            out,
            "  lineage: row_ids {}; created_at {}; last_updated_at {}",
            lineage(f, &f.lineage.row_ids, -3, true),
            lineage(f, &f.lineage.created_at, -4, false),
            lineage(f, &f.lineage.last_updated_at, -5, false),
        );
    }
    for index in &snapshot.indices {
        let kind = match index.kind {
            IndexKind::BTree => "btree",
            IndexKind::Vector => "vector",
        };
        let fields = index
            .fields
            .iter()
            .map(|f| field_label(s, *f))
            .collect::<Vec<_>>()
            .join(", ");
        let coverage = index
            .fragment_bitmap
            .as_ref()
            .map_or_else(|| "none recorded (covers no fragment)".to_string(), ranges);
        let _ = writeln!(
            out,
            "index {} ({kind}): fields [{fields}], dataset_version {}, fragments {coverage}, {} entries",
            index.name,
            index.dataset_version,
            index.entries.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_collapse_runs() {
        let b: RoaringBitmap = [1u32, 2, 3, 7, 9, 10].into_iter().collect();
        assert_eq!(ranges(&b), "1..=3, 7, 9..=10");
        assert_eq!(ranges(&RoaringBitmap::new()), "{}");
        let edge: RoaringBitmap = [u32::MAX - 1, u32::MAX].into_iter().collect();
        assert_eq!(ranges(&edge), format!("{}..={}", u32::MAX - 1, u32::MAX));
        let odd: RoaringBitmap = (1u32..100).step_by(2).collect();
        assert_eq!(
            ranges(&odd),
            "1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, \
             … (50 offsets in 50 runs) …, 93, 95, 97, 99"
        );
    }

    #[test]
    fn flags_are_named() {
        assert_eq!(flags(66), "66 [stable_row_ids, data_overlay_files]");
        assert_eq!(flags(1 << 20), "1048576 [unknown_1048576]");
        assert_eq!(flags(0), "0 []");
    }
}
