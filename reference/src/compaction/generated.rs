//! Random but valid snapshots for the compaction property tests (test-only).
//!
//! Invariant: every snapshot built here passes [`Snapshot::validate`], and every index's
//! `entries` are exactly what a build at its `dataset_version` would have seen: the indexed
//! field resolved with only the overlays committed at or before that version. That is what
//! lets a test check "no index trusts a value it did not see" after a compaction.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::model::{
    Coverage, DataFile, DataType, Field, FieldId, Fragment, Index, IndexEntry, IndexKind, Lineage,
    LineageSequence, Overlay, Schema, Snapshot, Value, cols,
};
use crate::resolve::resolve_column;

/// `a`: int32.
pub(crate) const A: FieldId = 0;
/// `b`: utf8.
pub(crate) const B: FieldId = 1;
/// `v`: fixed_size_list<float32, 2>.
pub(crate) const V: FieldId = 2;
/// `s`: struct.
pub(crate) const S: FieldId = 3;
/// `s.x`: int32.
pub(crate) const SX: FieldId = 4;
/// The snapshot's version: overlays are committed at 1..=VERSION.
pub(crate) const VERSION: u64 = 5;

/// A small deterministic generator (splitmix64), seeded by proptest.
pub(crate) struct Gen(u64);

impl Gen {
    /// A generator for `seed`.
    pub(crate) fn new(seed: u64) -> Gen {
        Gen(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability 1/n.
    pub(crate) fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

/// The schema: `a`, `b`, `v`, `s { x }`.
pub(crate) fn schema() -> Schema {
    Schema::new(vec![
        Field::new(A, "a", DataType::Int32),
        Field::new(B, "b", DataType::Utf8),
        Field::new(V, "v", DataType::FixedSizeList { dimension: 2 }),
        Field::new(S, "s", DataType::Struct),
        Field::child(SX, S, "x", DataType::Int32),
    ])
    .unwrap()
}

fn value(g: &mut Gen, field: FieldId) -> Value {
    if g.one_in(6) {
        return Value::Null;
    }
    let n = g.below(20) as i32;
    match field {
        A | SX => Value::Int32(n),
        B => Value::Utf8(format!("s{n}")),
        V => Value::Vector(vec![Some(n as f32), Some(g.below(4) as f32)]),
        _ => Value::Struct(vec![]),
    }
}

fn overlay(g: &mut Gen, fragment: u64, n: usize, rows: u64) -> Overlay {
    let mut fields = Vec::new();
    for f in [A, B, V, SX] {
        if g.one_in(2) {
            fields.push(f);
        }
    }
    if fields.is_empty() {
        fields.push(A);
    }
    if g.one_in(8) {
        fields.push(crate::model::TOMBSTONE_FIELD_ID);
    }
    let dense = g.one_in(2);
    let shared: RoaringBitmap = (0..rows)
        .filter(|_| g.one_in(2))
        .map(|o| o as u32)
        .collect();
    let mut bitmaps = Vec::new();
    let mut columns = Vec::new();
    for &f in &fields {
        let b = if dense {
            shared.clone()
        } else {
            (0..rows)
                .filter(|_| g.one_in(2))
                .map(|o| o as u32)
                .collect()
        };
        columns.push(b.iter().map(|_| value(g, f)).collect::<Vec<Value>>());
        bitmaps.push(b);
    }
    Overlay {
        file: DataFile {
            path: format!("ovl-{fragment}-{n}.lance"),
            fields,
            columns: cols(columns),
        },
        coverage: if dense {
            Coverage::Dense(shared)
        } else {
            Coverage::Sparse(bitmaps)
        },
        committed_version: 1 + g.below(VERSION),
    }
}

fn fragment(g: &mut Gen, id: u64, next_row_id: &mut u64, stable: bool) -> Fragment {
    let rows = g.below(7);
    let mut fields = vec![A, B, V, S, SX];
    if g.one_in(4) {
        fields.retain(|&f| f != B); // `b` added later: no base column, reads NULL
    }
    let columns = fields
        .iter()
        .map(|&f| {
            (0..rows)
                .map(|_| {
                    if f == S && g.one_in(5) {
                        Value::Null
                    } else {
                        value(g, f)
                    }
                })
                .collect()
        })
        .collect::<Vec<Vec<Value>>>();
    let mut f = Fragment::new(id, &format!("base-{id}.lance"), fields, cols(columns));
    f.physical_rows = rows;
    f.deletions = (0..rows)
        .filter(|_| g.one_in(4))
        .map(|o| o as u32)
        .collect();
    let count = g.below(5) as usize;
    for n in 0..count {
        f.overlays.push(overlay(g, id, n, rows));
    }
    f.overlays.sort_by_key(|o| o.committed_version);
    let versions = |g: &mut Gen| {
        if g.one_in(3) {
            LineageSequence::Absent
        } else {
            LineageSequence::Inline((0..rows).map(|_| 1 + g.below(VERSION)).collect())
        }
    };
    let row_ids = if stable {
        // Carried-over ids need not be sequential: leave gaps now and then.
        let ids = (0..rows)
            .map(|_| {
                *next_row_id += 1 + g.below(3);
                *next_row_id
            })
            .collect();
        LineageSequence::Inline(ids)
    } else {
        LineageSequence::Absent
    };
    f.lineage = Lineage {
        row_ids,
        created_at: versions(g),
        last_updated_at: versions(g),
    };
    f
}

/// What an index built at `dataset_version` over `fragments` holds for `field`.
pub(crate) fn entries_as_of(
    schema: &Schema,
    fragments: &[Fragment],
    bitmap: Option<&RoaringBitmap>,
    field: FieldId,
    dataset_version: u64,
) -> Vec<IndexEntry> {
    let mut out = Vec::new();
    for f in fragments {
        // No bitmap covers no fragment (OVL-IDX-6).
        if !bitmap.is_some_and(|b| b.contains(f.id as u32)) {
            continue;
        }
        let mut then = f.clone();
        then.overlays
            .retain(|o| o.committed_version <= dataset_version);
        for (offset, v) in resolve_column(schema, &then, field)
            .unwrap()
            .into_iter()
            .enumerate()
        {
            if let Some(value) = v {
                // A vector index holds no NULL vector and no vector with a NULL item.
                let is_vector = matches!(
                    schema.field(field).map(|x| &x.data_type),
                    Some(crate::model::DataType::FixedSizeList { .. })
                );
                let rankless = match &value {
                    Value::Null => true,
                    Value::Vector(items) => items.iter().any(Option::is_none),
                    _ => false,
                };
                if is_vector && rankless {
                    continue;
                }
                out.push(IndexEntry {
                    fragment: f.id,
                    offset: offset as u32,
                    value,
                });
            }
        }
    }
    out
}

/// A valid snapshot at [`VERSION`] with one to three fragments and up to three indices.
pub(crate) fn snapshot(seed: u64) -> Snapshot {
    let g = &mut Gen::new(seed);
    let schema = schema();
    let stable = g.one_in(2);
    let mut next_row_id = 0;
    let count = 1 + g.below(3);
    let fragments: Vec<Fragment> = (0..count)
        .map(|id| fragment(g, id, &mut next_row_id, stable))
        .collect();
    let mut indices = Vec::new();
    for (name, field, kind) in [
        ("a_idx", A, IndexKind::BTree),
        ("s_idx", S, IndexKind::BTree),
        ("v_idx", V, IndexKind::Vector),
    ] {
        if g.one_in(4) {
            continue;
        }
        let dataset_version = 1 + g.below(VERSION);
        let bitmap: Option<RoaringBitmap> = if g.one_in(3) {
            None
        } else {
            Some(
                (0..count)
                    .filter(|_| !g.one_in(4))
                    .map(|id| id as u32)
                    .collect(),
            )
        };
        let entries = entries_as_of(&schema, &fragments, bitmap.as_ref(), field, dataset_version);
        indices.push(Index {
            name: name.into(),
            fields: vec![field],
            dataset_version,
            fragment_bitmap: bitmap,
            kind,
            entries,
        });
    }
    let config: BTreeMap<String, String> = BTreeMap::new();
    let s = Snapshot {
        version: VERSION,
        schema,
        fragments,
        indices,
        config,
        stable_row_ids: stable,
        next_row_id: next_row_id + 1,
        reader_flags: 0,
        writer_flags: 0,
    };
    s.validate().unwrap();
    s
}
