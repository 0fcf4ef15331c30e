//! `EncodedU64Array`: a list of u64 values stored as `base + offset` with 2- or 4-byte offsets,
//! or as plain 8-byte values.
//!
//! Invariant: `base + offset` fits in u64 for every stored offset, so reading a value can never
//! overflow. The representation is private: values enter only through [`EncodedU64Array::from_values`]
//! (which chooses the width the way Lance 14 does) or through the checked decoder
//! [`EncodedU64Array::from_proto`].
//!
//! Width choice (Lance 14, `EncodedU64Array::from(Vec<u64>)`): empty → u64 with no values; else
//! with `range = max - min`: `range <= 65535` → u16 offsets from `base = min`; `range <=
//! u32::MAX` → u32 offsets from `min`; otherwise u64 values. Offsets keep the input order.

use crate::proto::lance::table as pb;
use pb::encoded_u64_array::{Array as PbArray, U16Array, U32Array, U64Array};

use super::LineageError;

/// The element width of an [`EncodedU64Array`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArrayWidth {
    /// 2-byte offsets from a base.
    U16,
    /// 4-byte offsets from a base.
    U32,
    /// 8-byte values, no base.
    U64,
}

impl ArrayWidth {
    /// Bytes per element.
    pub fn bytes(self) -> usize {
        match self {
            ArrayWidth::U16 => 2,
            ArrayWidth::U32 => 4,
            ArrayWidth::U64 => 8,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    U16 { base: u64, offsets: Vec<u16> },
    U32 { base: u64, offsets: Vec<u32> },
    U64(Vec<u64>),
}

/// A list of u64 values in one of three fixed widths (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedU64Array(Repr);

impl EncodedU64Array {
    /// Encodes `values` in the narrowest width Lance 14 would choose, keeping their order.
    pub fn from_values(values: &[u64]) -> EncodedU64Array {
        let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
            return EncodedU64Array(Repr::U64(Vec::new()));
        };
        let range = max - min;
        if range <= u64::from(u16::MAX) {
            // Every v - min <= range fits the width: the casts are exact.
            let offsets = values.iter().map(|&v| (v - min) as u16);
            EncodedU64Array(Repr::U16 {
                base: min,
                offsets: offsets.collect(),
            })
        } else if range <= u64::from(u32::MAX) {
            let offsets = values.iter().map(|&v| (v - min) as u32);
            EncodedU64Array(Repr::U32 {
                base: min,
                offsets: offsets.collect(),
            })
        } else {
            EncodedU64Array(Repr::U64(values.to_vec()))
        }
    }

    /// The width this array is stored in.
    pub fn width(&self) -> ArrayWidth {
        match &self.0 {
            Repr::U16 { .. } => ArrayWidth::U16,
            Repr::U32 { .. } => ArrayWidth::U32,
            Repr::U64(_) => ArrayWidth::U64,
        }
    }

    /// The base added to every offset (0 for the u64 width).
    pub fn base(&self) -> u64 {
        match &self.0 {
            Repr::U16 { base, .. } | Repr::U32 { base, .. } => *base,
            Repr::U64(_) => 0,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::U16 { offsets, .. } => offsets.len(),
            Repr::U32 { offsets, .. } => offsets.len(),
            Repr::U64(values) => values.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values in stored order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        // Saturating adds never saturate: the invariant guarantees base + offset fits.
        match &self.0 {
            Repr::U16 { base, offsets } => Box::new(
                offsets
                    .iter()
                    .map(move |&o| base.saturating_add(u64::from(o))),
            ),
            Repr::U32 { base, offsets } => Box::new(
                offsets
                    .iter()
                    .map(move |&o| base.saturating_add(u64::from(o))),
            ),
            Repr::U64(values) => Box::new(values.iter().copied()),
        }
    }

    /// The values in stored order (allocates `len()` values, bounded by the array's own size).
    pub fn values(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The protobuf message (offsets little-endian).
    pub fn to_proto(&self) -> pb::EncodedU64Array {
        let array = match &self.0 {
            Repr::U16 { base, offsets } => PbArray::U16Array(U16Array {
                base: *base,
                offsets: offsets.iter().flat_map(|o| o.to_le_bytes()).collect(),
            }),
            Repr::U32 { base, offsets } => PbArray::U32Array(U32Array {
                base: *base,
                offsets: offsets.iter().flat_map(|o| o.to_le_bytes()).collect(),
            }),
            Repr::U64(values) => PbArray::U64Array(U64Array {
                values: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            }),
        };
        pb::EncodedU64Array { array: Some(array) }
    }

    /// Decodes and checks a protobuf message: an arm must be set, byte lengths must be multiples
    /// of the width, and `base + offset` must not overflow. `location` and `field` name the
    /// message field in errors (e.g. `RowIdSequence.segments[1]`, `U64Segment.sorted_array`).
    pub fn from_proto(
        msg: &pb::EncodedU64Array,
        location: &str,
        field: &'static str,
    ) -> Result<EncodedU64Array, LineageError> {
        let Some(array) = &msg.array else {
            return Err(LineageError::MissingField {
                location: location.to_string(),
                field,
            });
        };
        let check_len = |len: usize, width: usize| {
            if len % width == 0 {
                Ok(())
            } else {
                Err(LineageError::ByteLength {
                    location: location.to_string(),
                    field,
                    len,
                    width,
                })
            }
        };
        let check_overflow = |base: u64, max: Option<u64>| match max {
            Some(offset) if base.checked_add(offset).is_none() => {
                Err(LineageError::OffsetOverflow {
                    location: location.to_string(),
                    field,
                    base,
                    offset,
                })
            }
            _ => Ok(()),
        };
        let repr = match array {
            PbArray::U16Array(a) => {
                check_len(a.offsets.len(), 2)?;
                let offsets: Vec<u16> = a
                    .offsets
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                check_overflow(a.base, offsets.iter().max().map(|&o| u64::from(o)))?;
                Repr::U16 {
                    base: a.base,
                    offsets,
                }
            }
            PbArray::U32Array(a) => {
                check_len(a.offsets.len(), 4)?;
                let offsets: Vec<u32> = a
                    .offsets
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                check_overflow(a.base, offsets.iter().max().map(|&o| u64::from(o)))?;
                Repr::U32 {
                    base: a.base,
                    offsets,
                }
            }
            PbArray::U64Array(a) => {
                check_len(a.values.len(), 8)?;
                let values = a
                    .values
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect();
                Repr::U64(values)
            }
        };
        Ok(EncodedU64Array(repr))
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    fn bytes(a: &EncodedU64Array) -> Vec<u8> {
        a.to_proto().encode_to_vec()
    }

    #[test]
    fn width_follows_the_value_range_not_the_magnitude() {
        // covers: LIN-ENC-5
        let a = EncodedU64Array::from_values(&[1_000_000, 1_065_535]);
        assert_eq!((a.width(), a.base()), (ArrayWidth::U16, 1_000_000));
        let a = EncodedU64Array::from_values(&[5, 5 + 65_536]);
        assert_eq!(a.width(), ArrayWidth::U32);
        let a = EncodedU64Array::from_values(&[0, u64::from(u32::MAX)]);
        assert_eq!(a.width(), ArrayWidth::U32);
        let a = EncodedU64Array::from_values(&[0, u64::from(u32::MAX) + 1]);
        assert_eq!(a.width(), ArrayWidth::U64);
        assert_eq!(EncodedU64Array::from_values(&[]).width(), ArrayWidth::U64);
    }

    #[test]
    fn offsets_keep_input_order_with_base_at_the_minimum() {
        // covers: LIN-ENC-4, LIN-ENC-5
        let a = EncodedU64Array::from_values(&[30, 10, 20]);
        assert_eq!(a.base(), 10);
        assert_eq!(a.values(), vec![30, 10, 20]);
        // u16_array{base:10, offsets: 14 00 00 00 0a 00}
        assert_eq!(
            bytes(&a),
            [0x0a, 0x0a, 0x08, 0x0a, 0x12, 0x06, 0x14, 0, 0, 0, 0x0a, 0]
        );
    }

    #[test]
    fn each_width_has_known_bytes() {
        // covers: LIN-ENC-5
        // u32: base 0 omitted (proto3 zero), offsets 00000000 a0860100 (100000)
        let a = EncodedU64Array::from_values(&[0, 100_000]);
        assert_eq!(
            bytes(&a),
            [0x12, 0x0a, 0x12, 0x08, 0, 0, 0, 0, 0xa0, 0x86, 0x01, 0]
        );
        // u64: field 3 holding values at field number 2.
        let big = 1u64 << 40;
        let a = EncodedU64Array::from_values(&[0, big]);
        let mut expected = vec![0x1a, 0x12, 0x12, 0x10];
        expected.extend(0u64.to_le_bytes());
        expected.extend(big.to_le_bytes());
        assert_eq!(bytes(&a), expected);
        // empty: u64 arm present, holding an empty message.
        assert_eq!(bytes(&EncodedU64Array::from_values(&[])), [0x1a, 0x00]);
    }

    #[test]
    fn decode_rejects_missing_arm_odd_lengths_and_overflow() {
        // covers: LIN-DEC-4, LIN-DEC-5
        let none = pb::EncodedU64Array { array: None };
        let e = EncodedU64Array::from_proto(&none, "x", "U64Segment.array").unwrap_err();
        assert_eq!(e.code(), "lineage_missing_field");
        let odd = pb::EncodedU64Array {
            array: Some(PbArray::U32Array(U32Array {
                base: 0,
                offsets: vec![0; 6],
            })),
        };
        let e = EncodedU64Array::from_proto(&odd, "x", "U64Segment.array").unwrap_err();
        assert_eq!(
            e,
            LineageError::ByteLength {
                location: "x".into(),
                field: "U64Segment.array",
                len: 6,
                width: 4
            }
        );
        let over = pb::EncodedU64Array {
            array: Some(PbArray::U16Array(U16Array {
                base: u64::MAX - 1,
                offsets: vec![2, 0],
            })),
        };
        let e = EncodedU64Array::from_proto(&over, "x", "U64Segment.array").unwrap_err();
        assert_eq!(e.code(), "lineage_offset_overflow");
        let edge = pb::EncodedU64Array {
            array: Some(PbArray::U16Array(U16Array {
                base: u64::MAX - 1,
                offsets: vec![1, 0],
            })),
        };
        let a = EncodedU64Array::from_proto(&edge, "x", "f").unwrap();
        assert_eq!(a.values(), vec![u64::MAX]);
    }
}
