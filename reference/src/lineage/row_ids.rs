//! `RowIdSequence`: a fragment's stable row ids as a list of segments, and the ways Lance 14
//! builds one.
//!
//! Invariant: a decoded sequence has only segments that pass [`U64Segment::validate`] and a
//! total length that fits in u64; decoding allocates in proportion to the input bytes only.
//! Per-row values are produced only through [`RowIdSequence::values`], which first checks the
//! length against the row count the caller expects.
//!
//! Builders, each reproducing what Lance 14 writes:
//!
//! - [`RowIdSequence::new_fragment`]: an appended fragment gets one `Range(next_row_id..+n)`.
//! - [`RowIdSequence::from_values`]: ids gathered in one go (merge-insert's partial ids) are
//!   one segment chosen by [`U64Segment::from_values`].
//! - [`RowIdSequence::extend`]: concatenation that merges a trailing `Range` with a leading
//!   `Range` only when they touch (`a.end == b.start`).
//! - [`rechunk`]: re-cut in-memory sequences (e.g. ids captured by a row-moving update, one
//!   segment per scanned piece) to fragment sizes; every piece is re-encoded with
//!   `from_values` and appended with `extend`.
//! - [`RowIdSequence::mask`] and [`compact`]: compaction, which removes deleted rows and then
//!   rechunks. Both act on the sequence *as Lance holds it after reading the manifest*: Lance's
//!   reader folds each run of two or more consecutive, non-empty, ascending plain `Range`
//!   segments (touching ones merged) spanning less than 2^32 into one in-memory unit, and
//!   masking and slicing re-encode such a unit as ONE segment. `compact` keeps those units from
//!   the mask through the rechunk, as Lance does; `mask` on its own writes untouched units back
//!   as their `Range` segments.

use prost::Message;
use roaring::RoaringBitmap;

use super::LineageError;
use super::segment::U64Segment;
use crate::proto::lance::table as pb;

/// A fragment's stable row ids: the concatenation of the segments' values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowIdSequence {
    /// The segments, in row-offset order, exactly as they are (or will be) on the wire.
    pub segments: Vec<U64Segment>,
}

impl RowIdSequence {
    /// The row ids Lance assigns to a fragment appended at commit: `next_row_id..next_row_id+rows`.
    pub fn new_fragment(next_row_id: u64, rows: u64) -> RowIdSequence {
        let end = next_row_id.saturating_add(rows);
        RowIdSequence {
            segments: vec![U64Segment::Range {
                start: next_row_id,
                end,
            }],
        }
    }

    /// One segment holding `values`, encoded by [`U64Segment::from_values`].
    pub fn from_values(values: &[u64]) -> RowIdSequence {
        RowIdSequence {
            segments: vec![U64Segment::from_values(values)],
        }
    }

    /// Decodes and validates a serialized `RowIdSequence` (see the module docs).
    pub fn decode(bytes: &[u8]) -> Result<RowIdSequence, LineageError> {
        let msg = pb::RowIdSequence::decode(bytes).map_err(|e| LineageError::Protobuf {
            message: "RowIdSequence",
            problem: e.to_string(),
        })?;
        let mut segments = Vec::with_capacity(msg.segments.len());
        let mut total = 0u64;
        for (i, s) in msg.segments.iter().enumerate() {
            // The location is spelled only when the segment is refused (see `version.rs`).
            let segment = U64Segment::from_proto(s, "")
                .or_else(|_| U64Segment::from_proto(s, &format!("RowIdSequence.segments[{i}]")))?;
            total = total
                .checked_add(segment.len())
                .ok_or(LineageError::LengthOverflow {
                    message: "RowIdSequence",
                })?;
            segments.push(segment);
        }
        Ok(RowIdSequence { segments })
    }

    /// The protobuf bytes (prost: zero scalars omitted, empty sub-messages kept).
    pub fn encode(&self) -> Vec<u8> {
        let msg = pb::RowIdSequence {
            segments: self.segments.iter().map(U64Segment::to_proto).collect(),
        };
        msg.encode_to_vec()
    }

    /// Number of row ids (saturating; exact for a decoded or built sequence).
    pub fn len(&self) -> u64 {
        self.segments
            .iter()
            .fold(0u64, |acc, s| acc.saturating_add(s.len()))
    }

    /// Whether the sequence holds no row ids.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row ids, lazily.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.segments.iter().flat_map(|s| s.iter())
    }

    /// The row ids, one per physical row, after checking that there are exactly
    /// `physical_rows` of them (so the allocation is bounded by what the caller vouches for).
    pub fn values(&self, physical_rows: u64) -> Result<Vec<u64>, LineageError> {
        let len = self.len();
        if len != physical_rows {
            return Err(LineageError::LengthMismatch {
                sequence: "row ids",
                len,
                expected: physical_rows,
            });
        }
        // Sized once: a collect would double its way up to the length, holding up to twice it.
        let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        out.extend(self.iter());
        Ok(out)
    }

    /// Appends `other`, merging a trailing `Range` with a leading `Range` when they touch.
    pub fn extend(&mut self, other: RowIdSequence) {
        let mut rest = other.segments.into_iter();
        let mut first = rest.next();
        if let (
            Some(U64Segment::Range { end: a_end, .. }),
            Some(U64Segment::Range {
                start: b_start,
                end: b_end,
            }),
        ) = (self.segments.last_mut(), &first)
        {
            if *a_end == *b_start {
                *a_end = *b_end;
                first = None;
            }
        }
        self.segments.extend(first);
        self.segments.extend(rest);
    }

    /// The sequence without the rows at `deleted` (physical offsets), as Lance's compaction
    /// masks a sequence it read from a manifest: only the units holding a deleted offset are
    /// re-encoded, and units left empty are dropped (see the module docs on folding).
    pub fn mask(&self, deleted: &RoaringBitmap) -> Result<RowIdSequence, LineageError> {
        let units = mask_units(fold(&self.segments), deleted)?;
        Ok(RowIdSequence {
            segments: units.into_iter().flat_map(Unit::into_segments).collect(),
        })
    }
}

/// Re-cuts in-memory `sequences` (concatenated) into consecutive chunks of `sizes` rows, as
/// Lance's `rechunk_sequences` does: every piece is re-encoded with
/// [`U64Segment::from_values`] and appended with [`RowIdSequence::extend`]. The sizes must add
/// up to exactly the rows available.
pub fn rechunk(
    sequences: &[RowIdSequence],
    sizes: &[u64],
) -> Result<Vec<RowIdSequence>, LineageError> {
    let units: Vec<Unit> = sequences
        .iter()
        .flat_map(|s| s.segments.iter().cloned().map(Unit::Segment))
        .collect();
    rechunk_units(&units, sizes)
}

/// Compaction of row ids: each source sequence (as read from the manifest) is masked by its
/// fragment's deleted offsets, then all are rechunked to the output fragments' `sizes`.
pub fn compact(
    sources: &[(RowIdSequence, RoaringBitmap)],
    sizes: &[u64],
) -> Result<Vec<RowIdSequence>, LineageError> {
    let mut units = Vec::new();
    for (sequence, deleted) in sources {
        units.extend(mask_units(fold(&sequence.segments), deleted)?);
    }
    rechunk_units(&units, sizes)
}

/// One segment as Lance holds it in memory: a wire segment, or a folded run of plain ranges.
#[derive(Debug, Clone)]
enum Unit {
    Segment(U64Segment),
    /// Two or more ascending, disjoint, non-touching, non-empty ranges.
    Ranges(Vec<(u64, u64)>),
}

impl Unit {
    fn len(&self) -> u64 {
        match self {
            Unit::Segment(s) => s.len(),
            Unit::Ranges(r) => r.iter().map(|(a, b)| b - a).sum(),
        }
    }

    fn values(&self) -> Vec<u64> {
        match self {
            Unit::Segment(s) => s.iter().collect(),
            Unit::Ranges(r) => r.iter().flat_map(|&(a, b)| a..b).collect(),
        }
    }

    fn mask(&self, positions: &[u64]) -> Unit {
        match self {
            Unit::Segment(s) => Unit::Segment(s.mask(positions)),
            Unit::Ranges(_) if positions.is_empty() => self.clone(),
            Unit::Ranges(_) => {
                // A run of ranges is a sorted kind: the remainder is re-encoded from its values.
                let mut masked = positions.iter().peekable();
                let remaining: Vec<u64> = self
                    .values()
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| masked.next_if_eq(&&(*i as u64)).is_none())
                    .map(|(_, v)| v)
                    .collect();
                Unit::Segment(U64Segment::from_values(&remaining))
            }
        }
    }

    fn into_segments(self) -> Vec<U64Segment> {
        match self {
            Unit::Segment(s) => vec![s],
            Unit::Ranges(r) => r
                .into_iter()
                .map(|(start, end)| U64Segment::Range { start, end })
                .collect(),
        }
    }
}

/// Lance 14's read-time folding of plain `Range` segments (see the module docs).
fn fold(segments: &[U64Segment]) -> Vec<Unit> {
    fn flush(pending: &mut Vec<(u64, u64)>, out: &mut Vec<Unit>) {
        let fits = match (pending.first(), pending.last()) {
            (Some(first), Some(last)) => {
                pending.len() >= 2 && last.1 - first.0 <= u64::from(u32::MAX)
            }
            _ => false,
        };
        if fits {
            out.push(Unit::Ranges(std::mem::take(pending)));
        } else {
            out.extend(
                pending
                    .drain(..)
                    .map(|(start, end)| Unit::Segment(U64Segment::Range { start, end })),
            );
        }
    }
    let mut out = Vec::new();
    let mut pending: Vec<(u64, u64)> = Vec::new();
    for segment in segments {
        match segment {
            U64Segment::Range { start, end } if start < end => match pending.last_mut() {
                Some(last) if last.1 == *start => last.1 = *end,
                Some(last) if last.1 > *start => {
                    flush(&mut pending, &mut out);
                    pending.push((*start, *end));
                }
                _ => pending.push((*start, *end)),
            },
            other => {
                flush(&mut pending, &mut out);
                out.push(Unit::Segment(other.clone()));
            }
        }
    }
    flush(&mut pending, &mut out);
    out
}

/// Masks each unit by the deleted offsets that fall in it; drops units left empty.
fn mask_units(units: Vec<Unit>, deleted: &RoaringBitmap) -> Result<Vec<Unit>, LineageError> {
    let total: u64 = units.iter().map(Unit::len).sum();
    if let Some(max) = deleted.max() {
        if u64::from(max) >= total {
            return Err(LineageError::OffsetOutOfRange {
                what: "mask: deleted row".into(),
                offset: u64::from(max),
                physical_rows: total,
            });
        }
    }
    let mut out = Vec::with_capacity(units.len());
    let mut offset = 0u64;
    for unit in units {
        let len = unit.len();
        let positions = local_positions(deleted, offset, len);
        offset += len;
        let masked = unit.mask(&positions);
        if masked.len() > 0 {
            out.push(masked);
        }
    }
    Ok(out)
}

/// The offsets of `deleted` inside `offset..offset+len`, relative to `offset`.
pub(crate) fn local_positions(deleted: &RoaringBitmap, offset: u64, len: u64) -> Vec<u64> {
    let Ok(first) = u32::try_from(offset) else {
        return Vec::new(); // deletion offsets are u32: none reach this far
    };
    deleted
        .range(first..)
        .map(u64::from)
        .take_while(|&p| p < offset.saturating_add(len))
        .map(|p| p - offset)
        .collect()
}

fn rechunk_units(units: &[Unit], sizes: &[u64]) -> Result<Vec<RowIdSequence>, LineageError> {
    let available: u64 = units.iter().map(Unit::len).sum();
    let requested = sizes.iter().fold(0u64, |a, &b| a.saturating_add(b));
    if available != requested {
        return Err(LineageError::ChunkMismatch {
            requested,
            available,
        });
    }
    let mut out = Vec::with_capacity(sizes.len());
    let mut pieces = units.iter().filter(|u| u.len() > 0).map(Unit::values);
    let (mut current, mut used) = (Vec::new(), 0usize);
    for &size in sizes {
        let mut chunk = RowIdSequence::default();
        let mut remaining = size;
        while remaining > 0 {
            if used == current.len() {
                // The sizes add up to the rows available, so a piece is always left here.
                let Some(values) = pieces.next() else { break };
                (current, used) = (values, 0);
            }
            let take = (current.len() - used).min(remaining as usize);
            chunk.extend(RowIdSequence::from_values(&current[used..used + take]));
            used += take;
            remaining -= take as u64;
        }
        out.push(chunk);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: u64) -> U64Segment {
        U64Segment::Range { start, end }
    }

    #[test]
    fn new_fragment_is_one_range_with_known_bytes() {
        // covers: LIN-ENC-1, LIN-STAMP-1
        assert_eq!(
            RowIdSequence::new_fragment(10, 5).encode(),
            [0x0a, 0x06, 0x0a, 0x04, 0x08, 0x0a, 0x10, 0x0f]
        );
        assert_eq!(
            RowIdSequence::new_fragment(0, 10).encode(),
            [0x0a, 0x04, 0x0a, 0x02, 0x10, 0x0a]
        );
    }

    #[test]
    fn extend_merges_only_touching_ranges() {
        // covers: LIN-ENC-1
        let mut s = RowIdSequence {
            segments: vec![range(0, 5)],
        };
        s.extend(RowIdSequence {
            segments: vec![range(5, 8), range(8, 9)],
        });
        assert_eq!(s.segments, vec![range(0, 8), range(8, 9)]);
        s.extend(RowIdSequence {
            segments: vec![range(10, 12)],
        });
        assert_eq!(s.segments.len(), 3);
        s.extend(RowIdSequence::from_values(&[12, 14]));
        assert_eq!(s.segments.len(), 4);
    }

    #[test]
    fn values_checks_the_row_count_before_expanding() {
        // covers: LIN-DEC-6, LIN-SEQ-1
        let huge = RowIdSequence {
            segments: vec![range(0, u64::MAX)],
        };
        assert_eq!(
            huge.values(10).unwrap_err().code(),
            "lineage_length_mismatch"
        );
        assert_eq!(
            RowIdSequence::new_fragment(3, 2).values(2).unwrap(),
            vec![3, 4]
        );
    }

    #[test]
    fn decode_rejects_total_length_overflow() {
        // covers: LIN-DEC-6
        let s = RowIdSequence {
            segments: vec![range(0, u64::MAX), range(0, 2)],
        };
        assert_eq!(
            RowIdSequence::decode(&s.encode()).unwrap_err().code(),
            "lineage_length_overflow"
        );
    }

    #[test]
    fn mask_reencodes_only_the_affected_segment_and_drops_empty_ones() {
        let s = RowIdSequence {
            segments: vec![range(0, 10), U64Segment::from_values(&[20, 40])],
        };
        let deleted: RoaringBitmap = [3u32, 10, 11].into_iter().collect();
        let m = s.mask(&deleted).unwrap();
        assert_eq!(
            m.segments,
            vec![U64Segment::from_values(&[0, 1, 2, 4, 5, 6, 7, 8, 9])]
        );
        let out_of_range: RoaringBitmap = [12u32].into_iter().collect();
        assert_eq!(
            s.mask(&out_of_range).unwrap_err().code(),
            "lineage_offset_out_of_range"
        );
    }

    #[test]
    fn mask_treats_a_folded_run_of_ranges_as_one_unit() {
        // [0..5, 7..9] fold into one unit; masking offset 0 re-encodes the remainder as one segment.
        let s = RowIdSequence {
            segments: vec![range(0, 5), range(7, 9)],
        };
        let m = s.mask(&[0u32].into_iter().collect()).unwrap();
        assert_eq!(
            m.segments,
            vec![U64Segment::from_values(&[1, 2, 3, 4, 7, 8])]
        );
        // untouched, the run is written back as its ranges
        assert_eq!(s.mask(&RoaringBitmap::new()).unwrap(), s);
    }

    #[test]
    fn rechunk_slices_and_merges_touching_pieces() {
        let seqs = [
            RowIdSequence {
                segments: vec![range(0, 10)],
            },
            RowIdSequence {
                segments: vec![range(10, 14)],
            },
        ];
        let out = rechunk(&seqs, &[6, 8]).unwrap();
        assert_eq!(out[0].segments, vec![range(0, 6)]);
        assert_eq!(out[1].segments, vec![range(6, 14)]);
        assert_eq!(
            rechunk(&seqs, &[6, 7]).unwrap_err().code(),
            "lineage_chunk_mismatch"
        );
        assert_eq!(
            rechunk(&seqs, &[6, 9]).unwrap_err().code(),
            "lineage_chunk_mismatch"
        );
    }

    #[test]
    fn compact_keeps_folded_units_through_the_rechunk() {
        // Lance: [0..5, 7..9] is one unit; [20, 30] masked at 30 becomes Range(20..21).
        let a = RowIdSequence {
            segments: vec![range(0, 5), range(7, 9), U64Segment::from_values(&[20, 30])],
        };
        let out = compact(&[(a.clone(), [8u32].into_iter().collect())], &[8]).unwrap();
        assert_eq!(
            out[0].segments,
            vec![
                U64Segment::from_values(&[0, 1, 2, 3, 4, 7, 8]),
                range(20, 21)
            ]
        );
        // mask then rechunk without the units re-derives nothing: the ranges are separate pieces.
        let two_step = rechunk(&[a.mask(&[8u32].into_iter().collect()).unwrap()], &[8]).unwrap();
        assert_eq!(
            two_step[0].segments,
            vec![range(0, 5), range(7, 9), range(20, 21)]
        );
    }
}
