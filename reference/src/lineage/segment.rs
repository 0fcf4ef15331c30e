//! `U64Segment`: one run of u64 values in one of five encodings, and the rule Lance 14 uses to
//! pick the encoding for a list of values.
//!
//! Invariant: a segment that passed [`U64Segment::from_proto`] (or came from
//! [`U64Segment::from_values`]) describes its values exactly: ranges have `start <= end`, holes
//! and sorted arrays are strictly increasing, holes lie inside their range, a bitmap has exactly
//! `ceil((end - start) / 8)` bytes with zero padding bits. The variants are public so tests and
//! golden cases can build any shape; a hand-built segment that breaks the invariant never
//! panics here, it just describes garbage, and [`U64Segment::validate`] names what is wrong.
//!
//! Encoder choice ([`U64Segment::from_values`], Lance 14 `U64Segment::from_slice`):
//!
//! 1. not ascending → `Array` (input order kept);
//! 2. empty → `Range(0..0)`;
//! 3. `max == u64::MAX` → `SortedArray` (no exclusive end exists);
//! 4. contiguous → `Range(min..max+1)`;
//! 5. otherwise the cheapest of `holes = 24 + 4·n_holes`, `bitmap = 24 + ceil(span/8)`,
//!    `sorted = 24 + 2·count` (`span = max - min + 1`, costs in u128); ties prefer holes, then
//!    bitmap, then sorted.
//!
//! One deliberate difference: Lance assumes unique values and counts a repeated value as
//! "sorted", which makes its hole count underflow. Here a list with a repeated value is not
//! strictly ascending and is stored as an `Array`, which round-trips it exactly.

use crate::proto::lance::table as pb;
use pb::u64_segment::{Range as PbRange, RangeWithBitmap, RangeWithHoles, Segment as PbSegment};

use super::LineageError;
use super::encoded_array::EncodedU64Array;

/// One run of u64 values (see the module docs for the encodings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum U64Segment {
    /// Every value in `start..end`.
    Range {
        /// First value.
        start: u64,
        /// One past the last value.
        end: u64,
    },
    /// Every value in `start..end` except `holes` (absolute values, strictly increasing).
    RangeWithHoles {
        /// Range start.
        start: u64,
        /// Range end (exclusive).
        end: u64,
        /// The missing values.
        holes: EncodedU64Array,
    },
    /// The values `start + i` whose bit `i` is set (LSB-first within each byte).
    RangeWithBitmap {
        /// Range start.
        start: u64,
        /// Range end (exclusive).
        end: u64,
        /// `ceil((end - start) / 8)` bytes of presence bits.
        bitmap: Vec<u8>,
    },
    /// Strictly increasing values, stored explicitly.
    SortedArray(EncodedU64Array),
    /// Values in any order, stored explicitly.
    Array(EncodedU64Array),
}

const HOLES_FIELD: &str = "U64Segment.range_with_holes.holes";
const BITMAP_FIELD: &str = "U64Segment.range_with_bitmap.bitmap";

/// Whether bit `i` of an LSB-first bitmap is set; bytes past the end read as zero.
fn bit(bitmap: &[u8], i: u64) -> bool {
    let byte = usize::try_from(i / 8)
        .ok()
        .and_then(|b| bitmap.get(b))
        .copied()
        .unwrap_or(0);
    byte & (1 << (i % 8)) != 0
}

impl U64Segment {
    /// The encoding Lance 14 chooses for `values` (see the module docs).
    pub fn from_values(values: &[u64]) -> U64Segment {
        let ascending = values.windows(2).all(|w| w[0] < w[1]);
        if !ascending {
            return U64Segment::Array(EncodedU64Array::from_values(values));
        }
        let (Some(&min), Some(&max)) = (values.first(), values.last()) else {
            return U64Segment::Range { start: 0, end: 0 };
        };
        let Some(end) = max.checked_add(1) else {
            return U64Segment::SortedArray(EncodedU64Array::from_values(values));
        };
        let count = values.len() as u64;
        let span = end - min;
        if span == count {
            return U64Segment::Range { start: min, end };
        }
        let n_holes = u128::from(span - count);
        let holes_cost = 24 + 4 * n_holes;
        let bitmap_cost = 24 + u128::from(span).div_ceil(8);
        let sorted_cost = 24 + 2 * u128::from(count);
        if holes_cost <= bitmap_cost && holes_cost <= sorted_cost {
            let mut holes = Vec::new();
            let mut present = values.iter().peekable();
            for v in min..end {
                if present.next_if_eq(&&v).is_none() {
                    holes.push(v);
                }
            }
            U64Segment::RangeWithHoles {
                start: min,
                end,
                holes: EncodedU64Array::from_values(&holes),
            }
        } else if bitmap_cost <= sorted_cost {
            // bitmap_cost <= sorted_cost means ceil(span / 8) <= 2 * count: O(count) bytes.
            let mut bitmap = vec![0u8; span.div_ceil(8) as usize];
            for &v in values {
                let i = v - min;
                if let Some(byte) = bitmap.get_mut((i / 8) as usize) {
                    *byte |= 1 << (i % 8);
                }
            }
            U64Segment::RangeWithBitmap {
                start: min,
                end,
                bitmap,
            }
        } else {
            U64Segment::SortedArray(EncodedU64Array::from_values(values))
        }
    }

    /// Number of values. Never panics; meaningless for a segment that fails `validate`.
    pub fn len(&self) -> u64 {
        match self {
            U64Segment::Range { start, end } => end.saturating_sub(*start),
            U64Segment::RangeWithHoles { start, end, holes } => end
                .saturating_sub(*start)
                .saturating_sub(holes.len() as u64),
            U64Segment::RangeWithBitmap { start, end, bitmap } => {
                let span = end.saturating_sub(*start);
                let full_bytes = (span / 8) as usize;
                let ones: u64 = bitmap
                    .iter()
                    .take(full_bytes)
                    .map(|b| u64::from(b.count_ones()))
                    .sum();
                let tail: u64 = (full_bytes as u64 * 8..span)
                    .filter(|&i| bit(bitmap, i))
                    .count() as u64;
                ones + tail
            }
            U64Segment::SortedArray(a) | U64Segment::Array(a) => a.len() as u64,
        }
    }

    /// Whether the segment holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether this kind stores ascending values (every kind but `Array`).
    pub fn is_sorted_kind(&self) -> bool {
        !matches!(self, U64Segment::Array(_))
    }

    /// The values in order, lazily (a decoded `Range` can be enormous: never collect one whose
    /// length has not been checked against a row count).
    pub fn iter(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match self {
            U64Segment::Range { start, end } => Box::new(*start..*end),
            U64Segment::RangeWithHoles { start, end, holes } => {
                let mut holes = holes.iter().peekable();
                Box::new((*start..*end).filter(move |v| {
                    while holes.next_if(|h| h < v).is_some() {}
                    holes.next_if_eq(v).is_none()
                }))
            }
            U64Segment::RangeWithBitmap { start, end, bitmap } => {
                let start = *start;
                Box::new(
                    (0..end.saturating_sub(start))
                        .filter(|&i| bit(bitmap, i))
                        .map(move |i| start + i),
                )
            }
            U64Segment::SortedArray(a) | U64Segment::Array(a) => a.iter(),
        }
    }

    /// The segment without the values at the given local positions (ascending, each below
    /// `len()`), re-encoded the way Lance 14's `U64Segment::mask` does: nothing masked → the
    /// segment unchanged; everything masked → `Range(0..0)`; an `Array` stays an `Array` (with
    /// the remaining values in order); any sorted kind goes through [`U64Segment::from_values`].
    pub fn mask(&self, positions: &[u64]) -> U64Segment {
        if positions.is_empty() {
            return self.clone();
        }
        let mut masked = positions.iter().peekable();
        let remaining: Vec<u64> = self
            .iter()
            .enumerate()
            .filter(|(i, _)| masked.next_if_eq(&&(*i as u64)).is_none())
            .map(|(_, v)| v)
            .collect();
        if remaining.is_empty() {
            U64Segment::Range { start: 0, end: 0 }
        } else if self.is_sorted_kind() {
            U64Segment::from_values(&remaining)
        } else {
            U64Segment::Array(EncodedU64Array::from_values(&remaining))
        }
    }

    /// The protobuf message.
    pub fn to_proto(&self) -> pb::U64Segment {
        let segment = match self {
            U64Segment::Range { start, end } => PbSegment::Range(PbRange {
                start: *start,
                end: *end,
            }),
            U64Segment::RangeWithHoles { start, end, holes } => {
                PbSegment::RangeWithHoles(RangeWithHoles {
                    start: *start,
                    end: *end,
                    holes: Some(holes.to_proto()),
                })
            }
            U64Segment::RangeWithBitmap { start, end, bitmap } => {
                PbSegment::RangeWithBitmap(RangeWithBitmap {
                    start: *start,
                    end: *end,
                    bitmap: bitmap.clone(),
                })
            }
            U64Segment::SortedArray(a) => PbSegment::SortedArray(a.to_proto()),
            U64Segment::Array(a) => PbSegment::Array(a.to_proto()),
        };
        pb::U64Segment {
            segment: Some(segment),
        }
    }

    /// Decodes and validates a protobuf segment; `location` names it in errors
    /// (e.g. `RowIdSequence.segments[3]`).
    pub fn from_proto(msg: &pb::U64Segment, location: &str) -> Result<U64Segment, LineageError> {
        let segment = match &msg.segment {
            None => {
                return Err(LineageError::MissingField {
                    location: location.to_string(),
                    field: "U64Segment.segment",
                });
            }
            Some(PbSegment::Range(r)) => U64Segment::Range {
                start: r.start,
                end: r.end,
            },
            Some(PbSegment::RangeWithHoles(r)) => {
                let Some(holes) = &r.holes else {
                    return Err(LineageError::MissingField {
                        location: location.to_string(),
                        field: HOLES_FIELD,
                    });
                };
                let holes = EncodedU64Array::from_proto(holes, location, HOLES_FIELD)?;
                U64Segment::RangeWithHoles {
                    start: r.start,
                    end: r.end,
                    holes,
                }
            }
            Some(PbSegment::RangeWithBitmap(r)) => U64Segment::RangeWithBitmap {
                start: r.start,
                end: r.end,
                bitmap: r.bitmap.clone(),
            },
            Some(PbSegment::SortedArray(a)) => U64Segment::SortedArray(
                EncodedU64Array::from_proto(a, location, "U64Segment.sorted_array")?,
            ),
            Some(PbSegment::Array(a)) => U64Segment::Array(EncodedU64Array::from_proto(
                a,
                location,
                "U64Segment.array",
            )?),
        };
        segment.validate(location)?;
        Ok(segment)
    }

    /// Checks the invariant in the module docs; `location` names the segment in errors.
    pub fn validate(&self, location: &str) -> Result<(), LineageError> {
        let loc = || location.to_string();
        let check_range = |field: &'static str, start: u64, end: u64| {
            if start > end {
                Err(LineageError::RangeReversed {
                    location: loc(),
                    field,
                    start,
                    end,
                })
            } else {
                Ok(())
            }
        };
        match self {
            U64Segment::Range { start, end } => check_range("U64Segment.range", *start, *end),
            U64Segment::RangeWithHoles { start, end, holes } => {
                check_range("U64Segment.range_with_holes", *start, *end)?;
                strictly_increasing(holes, location, HOLES_FIELD)?;
                match holes.iter().find(|h| h < start || h >= end) {
                    Some(hole) => Err(LineageError::HoleOutsideRange {
                        location: loc(),
                        field: HOLES_FIELD,
                        hole,
                        start: *start,
                        end: *end,
                    }),
                    None => Ok(()),
                }
            }
            U64Segment::RangeWithBitmap { start, end, bitmap } => {
                check_range("U64Segment.range_with_bitmap", *start, *end)?;
                let range_len = end - start;
                let expected = range_len.div_ceil(8);
                if bitmap.len() as u64 != expected {
                    return Err(LineageError::BitmapLength {
                        location: loc(),
                        field: BITMAP_FIELD,
                        len: bitmap.len(),
                        expected,
                        range_len,
                    });
                }
                let used_bits = range_len % 8;
                match bitmap.last() {
                    Some(&last) if used_bits != 0 && last >> used_bits != 0 => {
                        Err(LineageError::BitmapPadding {
                            location: loc(),
                            field: BITMAP_FIELD,
                            last_byte: last,
                        })
                    }
                    _ => Ok(()),
                }
            }
            U64Segment::SortedArray(a) => {
                strictly_increasing(a, location, "U64Segment.sorted_array")
            }
            U64Segment::Array(_) => Ok(()),
        }
    }
}

fn strictly_increasing(
    a: &EncodedU64Array,
    location: &str,
    field: &'static str,
) -> Result<(), LineageError> {
    let mut previous: Option<u64> = None;
    for (index, next) in a.iter().enumerate() {
        if let Some(previous) = previous {
            if next <= previous {
                return Err(LineageError::NotIncreasing {
                    location: location.to_string(),
                    field,
                    index,
                    previous,
                    next,
                });
            }
        }
        previous = Some(next);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::lineage::ArrayWidth;

    fn bytes(s: &U64Segment) -> Vec<u8> {
        s.to_proto().encode_to_vec()
    }

    fn decode(b: &[u8]) -> Result<U64Segment, LineageError> {
        U64Segment::from_proto(&pb::U64Segment::decode(b).unwrap(), "seg")
    }

    #[test]
    fn encoder_picks_each_kind_by_cost() {
        // covers: LIN-ENC-6
        assert_eq!(
            U64Segment::from_values(&[]),
            U64Segment::Range { start: 0, end: 0 }
        );
        assert_eq!(
            U64Segment::from_values(&[7, 8, 9]),
            U64Segment::Range { start: 7, end: 10 }
        );
        // 1000 slots, 1 hole: holes 28 < bitmap 149 < sorted 2022.
        let v: Vec<u64> = (0..1000).filter(|&x| x != 100).collect();
        assert!(matches!(
            U64Segment::from_values(&v),
            U64Segment::RangeWithHoles { .. }
        ));
        // every other value: holes 24+4*499, bitmap 24+125, sorted 24+1000.
        let v: Vec<u64> = (0..1000).filter(|x| x % 2 == 0).collect();
        assert!(matches!(
            U64Segment::from_values(&v),
            U64Segment::RangeWithBitmap {
                start: 0,
                end: 999,
                ..
            }
        ));
        let s = U64Segment::from_values(&[1, 7000, 24000]);
        assert!(matches!(&s, U64Segment::SortedArray(a) if a.width() == ArrayWidth::U16));
        assert!(matches!(
            U64Segment::from_values(&[7000, 1, 24000]),
            U64Segment::Array(_)
        ));
        assert!(matches!(
            U64Segment::from_values(&[5, 5]),
            U64Segment::Array(_)
        ));
        assert!(matches!(
            U64Segment::from_values(&[u64::MAX - 1, u64::MAX]),
            U64Segment::SortedArray(_)
        ));
    }

    #[test]
    fn cost_ties_prefer_holes_then_bitmap() {
        // covers: LIN-ENC-6
        // span 32 with one hole: holes 28 == bitmap 28 < sorted 86 -> holes.
        let v: Vec<u64> = (0..32).filter(|&x| x != 5).collect();
        assert!(matches!(
            U64Segment::from_values(&v),
            U64Segment::RangeWithHoles { .. }
        ));
        // values 0 and 31: holes 144, bitmap 28 == sorted 28 -> bitmap.
        assert!(matches!(
            U64Segment::from_values(&[0, 31]),
            U64Segment::RangeWithBitmap { .. }
        ));
        // span 33 (5 bytes) with 2 values: sorted 28 < bitmap 29.
        assert!(matches!(
            U64Segment::from_values(&[0, 32]),
            U64Segment::SortedArray(_)
        ));
    }

    #[test]
    fn known_bytes_for_each_kind() {
        // covers: LIN-ENC-2, LIN-ENC-3
        // 100..110 without 102: bitmap fb 03 (facts sheet; Lance serde test).
        let s = U64Segment::RangeWithBitmap {
            start: 100,
            end: 110,
            bitmap: vec![0xfb, 0x03],
        };
        assert_eq!(
            bytes(&s),
            [0x1a, 0x08, 0x08, 0x64, 0x10, 0x6e, 0x1a, 0x02, 0xfb, 0x03]
        );
        assert_eq!(
            decode(&bytes(&s)).unwrap().iter().collect::<Vec<_>>(),
            [100, 101, 103, 104, 105, 106, 107, 108, 109]
        );
        // {end:100, holes:u16{base:10, offsets:[0,10,85]}} = holes 10, 20, 95 (observed in Lance).
        let b = [
            0x12, 0x10, 0x10, 0x64, 0x1a, 0x0c, 0x0a, 0x0a, 0x08, 0x0a, 0x12, 0x06, 0, 0, 0x0a, 0,
            0x55, 0,
        ];
        let s = decode(&b).unwrap();
        let expected: Vec<u64> = (0..100).filter(|v| ![10, 20, 95].contains(v)).collect();
        assert_eq!(s.iter().collect::<Vec<_>>(), expected);
        assert_eq!(s.len(), 97);
        assert_eq!(U64Segment::from_values(&expected), s);
        assert_eq!(bytes(&s), b);
    }

    #[test]
    fn decode_rejects_each_broken_invariant() {
        // covers: LIN-DEC-1, LIN-DEC-2, LIN-DEC-3, LIN-DEC-5
        let code = |s: U64Segment| decode(&bytes(&s)).unwrap_err().code();
        assert_eq!(
            code(U64Segment::Range { start: 5, end: 4 }),
            "lineage_range_reversed"
        );
        let holes = |h: &[u64]| U64Segment::RangeWithHoles {
            start: 10,
            end: 20,
            holes: EncodedU64Array::from_values(h),
        };
        assert_eq!(code(holes(&[12, 11])), "lineage_not_increasing");
        assert_eq!(code(holes(&[12, 12])), "lineage_not_increasing");
        assert_eq!(code(holes(&[12, 20])), "lineage_hole_outside_range");
        assert_eq!(code(holes(&[9])), "lineage_hole_outside_range");
        let bm = |b: Vec<u8>| U64Segment::RangeWithBitmap {
            start: 0,
            end: 10,
            bitmap: b,
        };
        assert_eq!(code(bm(vec![0xff])), "lineage_bitmap_length");
        assert_eq!(code(bm(vec![0xff, 0x03, 0])), "lineage_bitmap_length");
        assert_eq!(code(bm(vec![0xff, 0x07])), "lineage_bitmap_padding");
        assert!(decode(&bytes(&bm(vec![0xff, 0x03]))).is_ok());
        assert_eq!(
            code(U64Segment::SortedArray(EncodedU64Array::from_values(&[
                3, 2
            ]))),
            "lineage_not_increasing"
        );
        assert!(
            decode(&bytes(&U64Segment::Array(EncodedU64Array::from_values(&[
                3, 2
            ]))))
            .is_ok()
        );
        let e = decode(&[]).unwrap_err();
        assert_eq!(
            (e.code(), e.class()),
            ("lineage_missing_field", crate::ErrorClass::Malformed)
        );
        // range_with_holes without its holes message
        let e = decode(&[0x12, 0x02, 0x10, 0x05]).unwrap_err();
        assert_eq!(
            e,
            LineageError::MissingField {
                location: "seg".into(),
                field: HOLES_FIELD
            }
        );
    }

    #[test]
    fn mask_keeps_array_unsorted_and_reencodes_sorted_kinds() {
        let a = U64Segment::Array(EncodedU64Array::from_values(&[9, 3, 4, 5]));
        assert_eq!(
            a.mask(&[0]),
            U64Segment::Array(EncodedU64Array::from_values(&[3, 4, 5]))
        );
        let r = U64Segment::Range { start: 0, end: 10 };
        assert_eq!(r.mask(&[]), r);
        assert_eq!(
            r.mask(&(0..10).collect::<Vec<_>>()),
            U64Segment::Range { start: 0, end: 0 }
        );
        assert_eq!(r.mask(&[0, 9]), U64Segment::Range { start: 1, end: 9 });
        assert_eq!(
            r.mask(&[2]),
            U64Segment::from_values(&[0, 1, 3, 4, 5, 6, 7, 8, 9])
        );
    }
}
