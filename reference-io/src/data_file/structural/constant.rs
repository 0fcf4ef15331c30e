//! The constant page layout (`ConstantLayout`): every row holds one value or is NULL.
//!
//! Lance 14.0.2 tells the forms apart by `inline_value` and the number of page buffers
//! (`lance-encoding` `encodings/logical/primitive/field.rs`, `constant.rs`, `all_null.rs`):
//!
//! | `inline_value` | page buffers | form |
//! |---|---|---|
//! | set | none | the inline scalar (v2.2) in every row |
//! | set | 2: repetition, definition | the inline scalar in every row whose level is 0 |
//! | absent | 1: value | the scalar of the value buffer in every row |
//! | absent | 3: value, repetition, definition | that scalar in every row whose level is 0 |
//! | absent | none | every row NULL (layers must allow a NULL item) |
//! | absent | 2: repetition, definition | every row NULL, the levels saying at which layer |
//!
//! Any other count is invalid. A *value buffer* holds the Arrow buffers of a one-value array:
//! a u32 buffer count, one u32 length per buffer, then the buffers' bytes, nothing after them.
//! Lance writes one for a value an inline scalar cannot hold: a string (two buffers, a pair of
//! i32 offsets and the bytes) or a fixed-width value over 32 bytes (one buffer). The kit's
//! types need only the string form and the 1-, 2-, 4- and 8-byte one.
//!
//! Levels of a page with a value are raw little-endian u16 (Lance writes and reads them so and
//! ignores `rep_compression` / `def_compression` there; a page that sets either is refused,
//! since Lance would read the compressed bytes as raw levels). Levels of an all-NULL page are
//! raw u16 or, in v2.2, compressed as those fields say. An empty level buffer stores no levels.
//!
//! Repetition levels on a column without lists (the only columns this reader decodes; list
//! layers are refused in [`super::rep_def`]): the highest repetition level is then 0, every
//! row starts at a level equal to it and the next 0 starts the next row, so the buffer holds
//! exactly one 0 per row and says nothing the row count does not. Lance writes such a buffer
//! empty; a non-empty one is accepted when it is one 0 per row, and any other level or count
//! is [`DataFileError::InvalidPageData`].
//!
//! Invariant: the page yields one definition level per row whenever some row is NULL, and a
//! value block of one value per row only when a value is stored (NULL rows hold an empty or
//! zeroed slot); a row the levels call valid in an all-NULL page, a level count other than the
//! row count, a level past the layers' maximum, a malformed value buffer, or a repeated value
//! larger than [`MAX_DECOMPRESSED_BYTES`] in all is an error.

use super::block::Block;
use super::buffer_compression::MAX_DECOMPRESSED_BYTES;
use super::compressive;
use super::mini_block::PageValues;
use super::rep_def::{Layers, levels_from};
use super::{Site, le_uint};
use crate::data_file::DataFileError;
use lance_reference::proto::lance::encodings21 as pb;

/// The largest inline value (bytes).
pub const MAX_INLINE_VALUE: usize = 32;

/// Where a constant page keeps its value.
enum Scalar<'a> {
    /// `inline_value`.
    Inline(&'a [u8]),
    /// A value buffer (page buffer 0).
    Buffer(&'a [u8]),
    /// No value: every row is NULL.
    AllNull,
}

/// Decodes a constant page of `rows` rows from its `buffers`.
pub fn decode(
    layout: &pb::ConstantLayout,
    buffers: &[&[u8]],
    rows: usize,
    site: &Site,
) -> Result<PageValues, DataFileError> {
    let layers = Layers::parse(&layout.layers, site)?;
    let (scalar, level_buffers) = match (&layout.inline_value, buffers) {
        (Some(v), []) => (Scalar::Inline(v), None),
        (Some(v), [rep, def]) => (Scalar::Inline(v), Some((*rep, *def))),
        (None, [value]) => (Scalar::Buffer(value), None),
        (None, [value, rep, def]) => (Scalar::Buffer(value), Some((*rep, *def))),
        (None, []) => (Scalar::AllNull, None),
        (None, [rep, def]) => (Scalar::AllNull, Some((*rep, *def))),
        (Some(_), _) => {
            return Err(site.invalid(format!(
                "an inline value with {} page buffers, expected none or 2 (repetition, definition)",
                buffers.len()
            )));
        }
        (None, _) => {
            return Err(site.invalid(format!(
                "{} page buffers, expected none or 2 (repetition, definition) for an all-NULL \
                 page, or 1 or 3 (value, repetition, definition) for a value buffer",
                buffers.len()
            )));
        }
    };
    let has_value = !matches!(scalar, Scalar::AllNull);
    if has_value && (layout.rep_compression.is_some() || layout.def_compression.is_some()) {
        return Err(site.invalid(
            "compressed levels on a page with a value (Lance reads a constant value's levels \
             as raw u16)",
        ));
    }
    let (rep_bytes, def_bytes) = match level_buffers {
        Some((rep, def)) => (Some(rep), Some(def)),
        None => (None, None),
    };
    if let Some(bytes) = rep_bytes.filter(|b| !b.is_empty()) {
        let rs = site.at("rep");
        let rep = read_levels(
            bytes,
            layout.rep_compression.as_ref(),
            layout.num_rep_values,
            rows,
            &rs,
        )?;
        if let Some((i, r)) = rep.iter().enumerate().find(|(_, r)| **r != 0) {
            return Err(rs.invalid(format!(
                "repetition level {r} at slot {i} on a column without lists (the highest \
                 repetition level is 0)"
            )));
        }
    } else if layout.rep_compression.is_some() && rows > 0 {
        return Err(site
            .at("rep")
            .invalid("rep_compression without repetition levels"));
    }
    let ds = site.at("def");
    let def = match def_bytes.filter(|b| !b.is_empty()) {
        Some(bytes) => Some(read_levels(
            bytes,
            layout.def_compression.as_ref(),
            layout.num_def_values,
            rows,
            &ds,
        )?),
        None if layout.def_compression.is_some() && rows > 0 => {
            return Err(ds.invalid("def_compression without definition levels"));
        }
        None => None,
    };
    if let Some(d) = &def {
        layers.check_levels(d, &ds)?;
    }
    let values = match scalar {
        Scalar::Inline(value) => {
            let vs = site.at("inline_value");
            if value.len() > MAX_INLINE_VALUE {
                return Err(vs.invalid(format!(
                    "{} bytes (at most {MAX_INLINE_VALUE})",
                    value.len()
                )));
            }
            compressive::constant_block(value, rows, &vs)?
        }
        Scalar::Buffer(bytes) => {
            let vs = site.at("value");
            let valid = def
                .as_ref()
                .map_or(rows, |d| d.iter().filter(|l| **l == 0).count());
            value_buffer_block(bytes, rows, valid, def.as_deref(), &vs)?
        }
        Scalar::AllNull => {
            let def = match def {
                Some(d) => {
                    if let Some(row) = d.iter().position(|l| *l == 0) {
                        return Err(ds.invalid(format!(
                            "row {row} is valid in an all-NULL page without a value"
                        )));
                    }
                    d
                }
                None => {
                    // No levels: every row is a NULL item, at the inner-most nullable layer.
                    if rows > 0 && !layers.has_nulls() {
                        return Err(site.invalid(
                            "an all-NULL page whose layers allow no NULL and store no levels",
                        ));
                    }
                    vec![1; rows]
                }
            };
            return Ok(PageValues {
                values: None,
                def: Some(def),
                layers,
                scalar: false,
            });
        }
    };
    Ok(PageValues {
        values: Some(values),
        def,
        layers,
        scalar: true,
    })
}

/// One level per row: raw u16 without `compression`, else decoded from it (`declared` levels,
/// which must equal `rows`).
fn read_levels(
    bytes: &[u8],
    compression: Option<&pb::CompressiveEncoding>,
    declared: u64,
    rows: usize,
    site: &Site,
) -> Result<Vec<u16>, DataFileError> {
    match compression {
        Some(enc) => {
            if declared != rows as u64 {
                return Err(site.invalid(format!(
                    "{declared} levels declared but the page has {rows} rows"
                )));
            }
            let block = compressive::block(enc, bytes, rows, site)?;
            levels_from(block.unsigned_values(site)?, site)
        }
        None => {
            if declared != 0 && declared != rows as u64 {
                return Err(site.invalid(format!(
                    "{declared} levels declared but the page has {rows} rows"
                )));
            }
            if bytes.len() != rows.saturating_mul(2) {
                return Err(site.invalid(format!(
                    "{} bytes of raw u16 levels for {rows} rows",
                    bytes.len()
                )));
            }
            Ok((0..rows)
                .map(|i| le_uint(bytes, 2 * i, 2).unwrap_or(0) as u16)
                .collect())
        }
    }
}

/// The Arrow buffers of a value buffer (a u32 count, a u32 length each, then the bytes).
fn value_buffers<'a>(bytes: &'a [u8], site: &Site) -> Result<Vec<&'a [u8]>, DataFileError> {
    let count = le_uint(bytes, 0, 4)
        .ok_or_else(|| site.oob(format!("{} bytes hold no buffer count", bytes.len())))?;
    // Each buffer takes a 4-byte length, so the count is bounded by the bytes that hold it.
    if count > (bytes.len() as u64 - 4) / 4 {
        return Err(site.oob(format!(
            "{count} buffers declared but {} bytes cannot hold their lengths",
            bytes.len()
        )));
    }
    let mut at = 4 + 4 * count as usize;
    let mut out = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        let len = le_uint(bytes, 4 + 4 * i, 4).unwrap_or(0) as usize;
        let buffer = at
            .checked_add(len)
            .and_then(|end| bytes.get(at..end))
            .ok_or_else(|| {
                site.oob(format!(
                    "buffer {i} of {len} bytes at {at} runs past the {} bytes",
                    bytes.len()
                ))
            })?;
        at += len;
        out.push(buffer);
    }
    if at != bytes.len() {
        return Err(site.invalid(format!(
            "{} bytes after the buffers, which end at {at}",
            bytes.len() - at
        )));
    }
    Ok(out)
}

/// The value of a value buffer in each of `rows` rows (`valid` of them valid: those whose level
/// in `def` is 0, or all without levels; the others get an empty or zeroed slot).
fn value_buffer_block(
    bytes: &[u8],
    rows: usize,
    valid: usize,
    def: Option<&[u16]>,
    site: &Site,
) -> Result<Block, DataFileError> {
    let too_big = |len: usize| -> Result<(), DataFileError> {
        let total = (len as u64).saturating_mul(valid as u64);
        if total > MAX_DECOMPRESSED_BYTES {
            return Err(site.invalid(format!(
                "a {len}-byte value in {valid} rows takes {total} bytes (limit \
                 {MAX_DECOMPRESSED_BYTES})"
            )));
        }
        Ok(())
    };
    match value_buffers(bytes, site)?.as_slice() {
        [fixed] => {
            too_big(fixed.len())?;
            compressive::constant_block(fixed, rows, site)
        }
        [offsets, data] => {
            if offsets.len() != 8 {
                return Err(site.unsupported(format!(
                    "a {}-byte offsets buffer in a value buffer (only a pair of 32-bit offsets, \
                     a string, is read)",
                    offsets.len()
                )));
            }
            let start = le_uint(offsets, 0, 4).unwrap_or(0);
            let end = le_uint(offsets, 4, 4).unwrap_or(0);
            let value = Block::variable(&[start, end], data, site)?;
            let Block::Variable { data: value, .. } = value else {
                return Err(site.invalid("a string value that is not variable-width"));
            };
            too_big(value.len())?;
            let mut out_offsets = Vec::with_capacity(rows + 1);
            let mut out = Vec::with_capacity(value.len() * valid);
            out_offsets.push(0u64);
            for row in 0..rows {
                if def.is_none_or(|d| d.get(row) == Some(&0)) {
                    out.extend_from_slice(&value);
                }
                out_offsets.push(out.len() as u64);
            }
            Ok(Block::Variable {
                offsets: out_offsets,
                data: out,
            })
        }
        other => Err(site.unsupported(format!(
            "a value buffer of {} Arrow buffers (one fixed-width value or a string is read)",
            other.len()
        ))),
    }
}
