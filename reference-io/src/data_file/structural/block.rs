//! The decoded values of one stream (a chunk, a page, a dictionary): fixed-width values,
//! variable-width values, or fixed-size lists of them.
//!
//! Invariant: a [`Block`] is always internally consistent: a `Fixed` block's bytes hold exactly
//! `len` values of `bits` bits, a `Variable` block has `len + 1` non-decreasing offsets starting
//! at 0 and ending at the length of its bytes, and a `List` block's items hold `len * dimension`
//! values with a validity bitmap of that many bits when present. Constructors check this;
//! [`Block::append`] keeps it.

use super::Site;
use crate::data_file::DataFileError;

/// Decoded values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// `len` little-endian values of `bits` bits each (1, 8, 16, 32 or 64; 1-bit values are an
    /// LSB-first bitmap).
    Fixed {
        /// Bits per value.
        bits: u32,
        /// Number of values.
        len: usize,
        /// The values' bytes (exactly `ceil(len * bits / 8)`).
        data: Vec<u8>,
    },
    /// Variable-width values: value `i` is `data[offsets[i]..offsets[i + 1]]`.
    Variable {
        /// `len + 1` offsets, the first 0, the last `data.len()`.
        offsets: Vec<u64>,
        /// The values' bytes.
        data: Vec<u8>,
    },
    /// Fixed-size lists of `dimension` items each.
    List {
        /// Items per list.
        dimension: usize,
        /// Number of lists.
        len: usize,
        /// Validity of the items (LSB-first, `len * dimension` bits), when stored.
        item_validity: Option<Vec<u8>>,
        /// The items.
        items: Box<Block>,
    },
}

impl Block {
    /// A fixed-width block of `len` values taken from the front of `bytes`.
    pub fn fixed(bits: u32, len: usize, bytes: &[u8], site: &Site) -> Result<Block, DataFileError> {
        if !matches!(bits, 1 | 8 | 16 | 32 | 64) {
            return Err(site.unsupported(format!("{bits}-bit values")));
        }
        let need = fixed_bytes(bits, len);
        let data = bytes.get(..need).ok_or_else(|| {
            site.oob(format!(
                "{len} values of {bits} bits need {need} bytes but the buffer holds {}",
                bytes.len()
            ))
        })?;
        Ok(Block::Fixed {
            bits,
            len,
            data: data.to_vec(),
        })
    }

    /// A variable-width block from `len + 1` offsets into `bytes` (the offsets need not start
    /// at 0; they must not decrease and must lie inside `bytes`).
    pub fn variable(offsets: &[u64], bytes: &[u8], site: &Site) -> Result<Block, DataFileError> {
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
            return Err(site.invalid("a variable-width stream needs at least one offset"));
        };
        if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
            return Err(site.invalid(format!(
                "offset {} is {} but offset {} is {}",
                i + 1,
                offsets[i + 1],
                i,
                offsets[i]
            )));
        }
        let data = usize::try_from(first)
            .ok()
            .zip(usize::try_from(last).ok())
            .and_then(|(a, b)| bytes.get(a..b))
            .ok_or_else(|| {
                site.oob(format!(
                    "offsets {first}..{last} lie outside the {} bytes of the buffer",
                    bytes.len()
                ))
            })?;
        Ok(Block::Variable {
            offsets: offsets.iter().map(|o| o - first).collect(),
            data: data.to_vec(),
        })
    }

    /// Number of values (lists for a `List`).
    pub fn len(&self) -> usize {
        match self {
            Block::Fixed { len, .. } | Block::List { len, .. } => *len,
            Block::Variable { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    /// True when the block holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A one-line description of the block's shape, for errors.
    pub fn shape(&self) -> String {
        match self {
            Block::Fixed { bits, .. } => format!("{bits}-bit values"),
            Block::Variable { .. } => "variable-width values".to_string(),
            Block::List {
                dimension, items, ..
            } => format!("lists of {dimension} {}", items.shape()),
        }
    }

    /// An empty block of the same shape.
    pub fn empty_like(&self) -> Block {
        match self {
            Block::Fixed { bits, .. } => Block::Fixed {
                bits: *bits,
                len: 0,
                data: Vec::new(),
            },
            Block::Variable { .. } => Block::Variable {
                offsets: vec![0],
                data: Vec::new(),
            },
            Block::List {
                dimension,
                item_validity,
                items,
                ..
            } => Block::List {
                dimension: *dimension,
                len: 0,
                item_validity: item_validity.as_ref().map(|_| Vec::new()),
                items: Box::new(items.empty_like()),
            },
        }
    }

    /// Appends `other` (same shape) after this block's values.
    pub fn append(&mut self, other: Block, site: &Site) -> Result<(), DataFileError> {
        let mismatch = |a: &Block, b: &Block| {
            site.invalid(format!(
                "chunks decode to different shapes: {} and {}",
                a.shape(),
                b.shape()
            ))
        };
        match (&mut *self, other) {
            (
                Block::Fixed { bits, len, data },
                Block::Fixed {
                    bits: b2,
                    len: l2,
                    data: d2,
                },
            ) if *bits == b2 => {
                if *bits == 1 {
                    append_bits(data, *len, &d2, l2);
                } else {
                    data.extend_from_slice(&d2);
                }
                *len += l2;
                Ok(())
            }
            (
                Block::Variable { offsets, data },
                Block::Variable {
                    offsets: o2,
                    data: d2,
                },
            ) => {
                let base = data.len() as u64;
                offsets.extend(o2.iter().skip(1).map(|o| o + base));
                data.extend_from_slice(&d2);
                Ok(())
            }
            (
                Block::List {
                    dimension,
                    len,
                    item_validity,
                    items,
                },
                Block::List {
                    dimension: dim2,
                    len: l2,
                    item_validity: v2,
                    items: i2,
                },
            ) if *dimension == dim2 => {
                let before = *len * *dimension;
                let added = l2 * dim2;
                match (item_validity.as_mut(), v2) {
                    (Some(v), Some(v2)) => append_bits(v, before, &v2, added),
                    (None, None) => {}
                    (Some(v), None) => append_bits(v, before, &all_set(added), added),
                    (None, Some(v2)) => {
                        let mut v = all_set(before);
                        append_bits(&mut v, before, &v2, added);
                        *item_validity = Some(v);
                    }
                }
                items.append(*i2, site)?;
                *len += l2;
                Ok(())
            }
            (a, b) => Err(mismatch(a, &b)),
        }
    }

    /// The values of a fixed-width block of 8 to 64 bits, widened to `u64`.
    pub fn unsigned_values(&self, site: &Site) -> Result<Vec<u64>, DataFileError> {
        match self {
            Block::Fixed { bits, data, .. } if *bits >= 8 => {
                let width = (*bits / 8) as usize;
                Ok(data
                    .chunks_exact(width)
                    .map(|c| super::le_uint(c, 0, width).unwrap_or(0))
                    .collect())
            }
            other => Err(site.mismatch("unsigned integers", other.shape())),
        }
    }
}

/// Bytes that `len` values of `bits` bits occupy.
pub fn fixed_bytes(bits: u32, len: usize) -> usize {
    // len <= MAX_DECODED_VALUES (2^22) and bits <= 64 on every path, so this cannot overflow.
    (len.saturating_mul(bits as usize)).div_ceil(8)
}

/// Bit `i` of an LSB-first bitmap.
pub fn bit(bitmap: &[u8], i: usize) -> bool {
    bitmap.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
}

/// A bitmap of `n` set bits.
pub fn all_set(n: usize) -> Vec<u8> {
    let mut v = vec![0xffu8; n.div_ceil(8)];
    if n % 8 != 0 {
        if let Some(last) = v.last_mut() {
            *last = (1u8 << (n % 8)) - 1;
        }
    }
    v
}

/// Appends the first `n` bits of `src` to the bitmap `dst` that holds `have` bits.
pub fn append_bits(dst: &mut Vec<u8>, have: usize, src: &[u8], n: usize) {
    dst.truncate(have.div_ceil(8));
    if have % 8 != 0 {
        if let Some(last) = dst.last_mut() {
            *last &= (1u8 << (have % 8)) - 1;
        }
    }
    dst.resize((have + n).div_ceil(8), 0);
    for i in 0..n {
        if bit(src, i) {
            let j = have + i;
            if let Some(b) = dst.get_mut(j / 8) {
                *b |= 1 << (j % 8);
            }
        }
    }
}
