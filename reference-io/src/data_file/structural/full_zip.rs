//! The full-zip page layout (`FullZipLayout`): large values stored row by row.
//!
//! Page buffer 0 holds, for each row, a control word and then the row's value; buffer 1 (when
//! present) is a repetition index that a full scan does not need. The control word holds the
//! definition level in `bits_def` bits (the repetition level above it, absent without lists),
//! and is 0, 1, 2 or 4 bytes wide for up to 0, 8, 16 or 32 bits. Fixed-width values
//! (`bits_per_value`) follow every control word, NULL rows included; a fixed-size list with
//! `has_validity` stores its items' validity bitmap (whole bytes) before its items. Variable-
//! width values (`bits_per_offset` 32 or 64) follow only the control word of a valid row, as a
//! 4- or 8-byte little-endian length and that many bytes, each compressed on its own when the
//! value compression is `general`.
//!
//! Invariant: the rows consume buffer 0 exactly; every length and value lies inside it; the
//! decoded values total at most [`super::buffer_compression::MAX_DECOMPRESSED_BYTES`].

use super::block::{Block, append_bits};
use super::buffer_compression::{self, MAX_DECOMPRESSED_BYTES};
use super::compressive;
use super::mini_block::PageValues;
use super::rep_def::Layers;
use super::{Site, le_uint};
use crate::data_file::DataFileError;
use lance_reference::proto::lance::encodings21 as pb;
use pb::compressive_encoding::Compression as C;
use pb::full_zip_layout::Details;

/// Decodes a full-zip page of `rows` rows from its `buffers`.
pub fn decode(
    layout: &pb::FullZipLayout,
    buffers: &[&[u8]],
    rows: usize,
    site: &Site,
) -> Result<PageValues, DataFileError> {
    let layers = Layers::parse(&layout.layers, site)?;
    if layout.bits_rep != 0 {
        return Err(site.unsupported("repetition levels (lists; the kit has no lists)"));
    }
    for (name, n) in [
        ("num_items", layout.num_items),
        ("num_visible_items", layout.num_visible_items),
    ] {
        if n as usize != rows {
            return Err(site.invalid(format!("{name} is {n} but the page has {rows} rows")));
        }
    }
    let cw = match layout.bits_def {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        17..=32 => 4,
        b => return Err(site.invalid(format!("bits_def is {b} (at most 32)"))),
    };
    if layers.has_nulls() && cw == 0 {
        return Err(site.invalid("nullable layers but bits_def is 0"));
    }
    let data = match buffers {
        [data] | [data, _] => *data,
        _ => {
            return Err(site.invalid(format!(
                "{} page buffers, expected 1 or 2 (rows, repetition index)",
                buffers.len()
            )));
        }
    };
    let enc = layout
        .value_compression
        .as_ref()
        .ok_or_else(|| site.missing("value_compression"))?;
    let ds = site.at("rows");
    let mask = if cw == 0 {
        0
    } else {
        (1u64 << layout.bits_def) - 1
    };
    let mut def: Vec<u16> = Vec::with_capacity(if cw == 0 { 0 } else { rows });
    let values = match layout.details {
        None => return Err(site.missing("details")),
        Some(Details::BitsPerValue(bits)) => {
            if bits == 0 || bits % 8 != 0 {
                return Err(site.unsupported(format!("{bits}-bit full-zip values")));
            }
            let vb = (bits / 8) as usize;
            let need = rows.saturating_mul(cw + vb);
            if data.len() != need {
                return Err(ds.oob(format!(
                    "{rows} rows of {cw}-byte control words and {vb}-byte values need {need} bytes, the buffer holds {}",
                    data.len()
                )));
            }
            let mut zipped = Vec::with_capacity(rows.saturating_mul(vb));
            for row in data.chunks_exact(cw + vb) {
                if cw > 0 {
                    def.push((le_uint(row, 0, cw).unwrap_or(0) & mask) as u16);
                }
                zipped.extend_from_slice(&row[cw..]);
            }
            fixed_values(enc, u64::from(bits), &zipped, rows, &site.at("values"))?
        }
        Some(Details::BitsPerOffset(bits)) => {
            let lw = match bits {
                32 => 4,
                64 => 8,
                b => return Err(site.unsupported(format!("{b}-bit full-zip lengths"))),
            };
            let (general, symbols) = match &enc.compression {
                Some(C::Variable(v)) if v.values.is_none() => (None, None),
                Some(C::Fsst(f))
                    if f.values.as_deref().is_some_and(
                        |v| matches!(&v.compression, Some(C::Variable(v)) if v.values.is_none()),
                    ) =>
                {
                    (None, Some(f.symbol_table.as_slice()))
                }
                Some(C::General(g)) => (
                    Some(g.compression.as_ref().ok_or_else(|| {
                        site.at("value_compression.general").missing("compression")
                    })?),
                    None,
                ),
                _ => {
                    return Err(site.at("value_compression").unsupported(format!(
                        "{} for full-zip variable-width values",
                        compressive::describe(enc)
                    )));
                }
            };
            let mut offsets = Vec::with_capacity(rows + 1);
            offsets.push(0u64);
            let mut bytes = Vec::new();
            let mut at = 0usize;
            for r in 0..rows {
                let rs = ds.at(format!("[{r}]"));
                let d = if cw > 0 {
                    let w = le_uint(data, at, cw)
                        .ok_or_else(|| rs.oob("the buffer ends before the control word"))?;
                    at += cw;
                    (w & mask) as u16
                } else {
                    0
                };
                if cw > 0 {
                    def.push(d);
                }
                if d == 0 {
                    let len = le_uint(data, at, lw)
                        .ok_or_else(|| rs.oob("the buffer ends before the value's length"))?;
                    at += lw;
                    let value = usize::try_from(len)
                        .ok()
                        .and_then(|len| data.get(at..at.checked_add(len)?))
                        .ok_or_else(|| {
                            rs.oob(format!(
                                "a {len}-byte value at {at} runs past the buffer's {} bytes",
                                data.len()
                            ))
                        })?;
                    at += value.len();
                    match general {
                        None => bytes.extend_from_slice(value),
                        Some(c) => bytes.extend(buffer_compression::decompress(c, value, &rs)?),
                    }
                    if bytes.len() as u64 > MAX_DECOMPRESSED_BYTES {
                        return Err(rs.invalid(format!(
                            "the values add up to more than {MAX_DECOMPRESSED_BYTES} bytes"
                        )));
                    }
                }
                offsets.push(bytes.len() as u64);
            }
            if at != data.len() {
                return Err(ds.invalid(format!(
                    "the {rows} rows end at byte {at} but the buffer holds {}",
                    data.len()
                )));
            }
            let block = Block::Variable {
                offsets,
                data: bytes,
            };
            match symbols {
                None => block,
                Some(table) => {
                    compressive::fsst_block(table, block, &site.at("value_compression.fsst"))?
                }
            }
        }
    };
    let def = (cw > 0).then_some(def);
    if let Some(d) = &def {
        layers.check_levels(d, &site.at("def"))?;
    }
    Ok(PageValues {
        values: Some(values),
        def,
        layers,
        scalar: false,
    })
}

/// The fixed-width values of `rows` rows of `bits` bits each (`zipped`, control words removed).
fn fixed_values(
    enc: &pb::CompressiveEncoding,
    bits: u64,
    zipped: &[u8],
    rows: usize,
    site: &Site,
) -> Result<Block, DataFileError> {
    match &enc.compression {
        Some(C::Flat(f)) if f.data.is_none() => {
            if f.bits_per_value != bits {
                return Err(site.invalid(format!(
                    "the layout says {bits}-bit values, the encoding flat({})",
                    f.bits_per_value
                )));
            }
            Block::fixed(bits as u32, rows, zipped, site)
        }
        Some(C::FixedSizeList(l)) => {
            let item = match l.values.as_deref().and_then(|v| v.compression.as_ref()) {
                Some(C::Flat(f))
                    if f.data.is_none() && matches!(f.bits_per_value, 8 | 16 | 32 | 64) =>
                {
                    f.bits_per_value
                }
                _ => {
                    return Err(site.unsupported(format!(
                        "{} for full-zip values",
                        compressive::describe(enc)
                    )));
                }
            };
            let dim = l.items_per_value;
            let validity_bytes = if l.has_validity { dim.div_ceil(8) } else { 0 };
            let row_bits = dim
                .checked_mul(item)
                .and_then(|b| b.checked_add(validity_bytes * 8));
            if dim == 0 || row_bits != Some(bits) {
                return Err(site.invalid(format!(
                    "the layout says {bits}-bit values, the encoding {}",
                    compressive::describe(enc)
                )));
            }
            let dimension = dim as usize;
            let items_n = site.check_count((rows as u64).saturating_mul(dim))?;
            let row_bytes = (bits / 8) as usize;
            let vb = validity_bytes as usize;
            let mut items = Vec::with_capacity(zipped.len());
            let mut validity = l.has_validity.then(Vec::new);
            for (r, row) in zipped.chunks_exact(row_bytes).enumerate() {
                if let Some(v) = validity.as_mut() {
                    append_bits(v, r * dimension, &row[..vb], dimension);
                }
                items.extend_from_slice(&row[vb..]);
            }
            Ok(Block::List {
                dimension,
                len: rows,
                item_validity: validity,
                items: Box::new(Block::fixed(item as u32, items_n, &items, site)?),
            })
        }
        _ => Err(site.unsupported(format!(
            "{} for full-zip values",
            compressive::describe(enc)
        ))),
    }
}
