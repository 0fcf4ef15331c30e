//! The constant page layout (`ConstantLayout`): every row holds the same value, NULL (no
//! `inline_value`) or, in v2.2, one inline fixed-width scalar of at most 32 bytes.
//!
//! Page buffers: none when every row is valid, or every row is a NULL item; otherwise two,
//! repetition levels (empty: the kit has no lists) and definition levels, raw u16 in v2.1 and,
//! in v2.2, optionally compressed (`def_compression`, `num_def_values`).
//!
//! Invariant: the page yields one definition level per row whenever some row is NULL, and a
//! value block only when `inline_value` is set; a row the levels call valid in an all-NULL page,
//! a level count other than the row count, or a level past the layers' maximum is an error.

use super::block::Block;
use super::compressive;
use super::mini_block::PageValues;
use super::rep_def::{Layers, levels_from};
use super::{Site, le_uint};
use crate::data_file::DataFileError;
use lance_reference::proto::lance::encodings21 as pb;

/// The largest inline value (bytes).
pub const MAX_INLINE_VALUE: usize = 32;

/// Decodes a constant page of `rows` rows from its `buffers`.
pub fn decode(
    layout: &pb::ConstantLayout,
    buffers: &[&[u8]],
    rows: usize,
    site: &Site,
) -> Result<PageValues, DataFileError> {
    let layers = Layers::parse(&layout.layers, site)?;
    if layout.rep_compression.is_some()
        || layout.num_rep_values > 0
        || buffers.first().is_some_and(|b| !b.is_empty())
    {
        return Err(site.unsupported("repetition levels (lists; the kit has no lists)"));
    }
    let def_bytes = match buffers {
        [] => None,
        [_, def] => Some(*def),
        _ => {
            return Err(site.invalid(format!(
                "{} page buffers, expected none or 2 (repetition, definition)",
                buffers.len()
            )));
        }
    };
    let ds = site.at("def");
    let def = match (def_bytes, &layout.def_compression) {
        (None, Some(_)) => return Err(ds.invalid("def_compression without a definition buffer")),
        (None, None) => None,
        (Some(bytes), Some(enc)) => {
            if layout.num_def_values != rows as u64 {
                return Err(ds.invalid(format!(
                    "num_def_values is {} but the page has {rows} rows",
                    layout.num_def_values
                )));
            }
            let block = compressive::block(enc, bytes, rows, &ds)?;
            Some(levels_from(block.unsigned_values(&ds)?, &ds)?)
        }
        (Some(bytes), None) => {
            if bytes.len() != rows.saturating_mul(2) {
                return Err(ds.invalid(format!(
                    "{} bytes of raw u16 definition levels for {rows} rows",
                    bytes.len()
                )));
            }
            Some(
                (0..rows)
                    .map(|i| le_uint(bytes, 2 * i, 2).unwrap_or(0) as u16)
                    .collect(),
            )
        }
    };
    if let Some(d) = &def {
        layers.check_levels(d, &ds)?;
    }
    match &layout.inline_value {
        Some(value) => {
            let vs = site.at("inline_value");
            if value.len() > MAX_INLINE_VALUE {
                return Err(vs.invalid(format!(
                    "{} bytes (at most {MAX_INLINE_VALUE})",
                    value.len()
                )));
            }
            let values: Block = compressive::constant_block(value, rows, &vs)?;
            Ok(PageValues {
                values: Some(values),
                def,
                layers,
            })
        }
        None => {
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
            Ok(PageValues {
                values: None,
                def: Some(def),
                layers,
            })
        }
    }
}
