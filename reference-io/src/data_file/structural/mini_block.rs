//! The mini-block page layout (`MiniBlockLayout`): small values cut into chunks.
//!
//! Page buffers: 0 = chunk metadata, one word per chunk (u16 in v2.1, u32 in v2.2 where
//! `has_large_chunk` is set); 1 = the chunks, back to back; 2 = the dictionary when the layout
//! has one. A word's low 4 bits are log2 of the chunk's value count (0 in the last word, whose
//! count is what remains of `num_items`), its high bits the chunk's size in 8-byte units minus
//! one. A chunk is: a u16 level count; a u16 size of the definition levels when the layout has
//! them; one size per value buffer (u16 in v2.1, u32 in v2.2); padding to 8 bytes; the
//! definition levels, padded to 8; each value buffer, padded to 8. With a dictionary the chunk
//! values are indices (0-based) into the dictionary items, which are one whole-buffer stream.
//!
//! Invariant: the chunks' value counts add up to `num_items`, which equals the page's rows; each
//! chunk's parts lie inside the chunk and the chunks inside buffer 1; a chunk's level count
//! equals its value count; a valid slot's dictionary index names an item. Anything else is an
//! error naming the chunk.

use super::block::Block;
use super::buffer_compression::MAX_DECOMPRESSED_BYTES;
use super::rep_def::{Layers, levels_from};
use super::{Site, compressive};
use crate::data_file::DataFileError;
use crate::data_file::compression::fsst;
use lance_reference::proto::lance::encodings21 as pb;
use pb::compressive_encoding::Compression as C;

/// The decoded rows of a page: one value slot per row (NULL rows included) and the rows'
/// definition levels when the page stores them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageValues {
    /// One value per row, `None` when every row is NULL and no value is stored.
    pub values: Option<Block>,
    /// Definition levels, one per row.
    pub def: Option<Vec<u16>>,
    /// The page's layers.
    pub layers: Layers,
    /// Whether `values` repeats the bytes of one Arrow scalar (a constant page), whose width
    /// the column's type decides: a Boolean scalar is one byte, a one-value bitmap whose bit 0
    /// is the value, as Lance 14 stores it inline.
    pub scalar: bool,
}

/// The most value buffers a chunk may declare (Lance writes at most a handful).
const MAX_CHUNK_BUFFERS: u64 = 16;

/// Rounds `at` up to a multiple of 8.
fn pad8(at: usize) -> usize {
    at.div_ceil(8).saturating_mul(8)
}

/// Decodes a mini-block page of `rows` rows from its `buffers`.
pub fn decode(
    layout: &pb::MiniBlockLayout,
    buffers: &[&[u8]],
    rows: usize,
    site: &Site,
) -> Result<PageValues, DataFileError> {
    let layers = Layers::parse(&layout.layers, site)?;
    if layout.rep_compression.is_some() || layout.repetition_index_depth > 0 {
        return Err(site.unsupported("repetition levels (lists; the kit has no lists)"));
    }
    if layout.num_items != rows as u64 {
        return Err(site.invalid(format!(
            "num_items is {} but the page has {rows} rows",
            layout.num_items
        )));
    }
    let values_enc = layout
        .value_compression
        .as_ref()
        .ok_or_else(|| site.missing("value_compression"))?;
    let def_enc = layout.def_compression.as_ref();
    if layers.has_nulls() && def_enc.is_none() {
        return Err(site.missing("def_compression"));
    }
    let expected_buffers = 2 + usize::from(layout.dictionary.is_some());
    if buffers.len() != expected_buffers {
        return Err(site.invalid(format!(
            "{} page buffers, expected {expected_buffers} (metadata, chunks{})",
            buffers.len(),
            if layout.dictionary.is_some() {
                ", dictionary"
            } else {
                ""
            }
        )));
    }
    if layout.num_buffers == 0 || layout.num_buffers > MAX_CHUNK_BUFFERS {
        return Err(site.invalid(format!(
            "num_buffers is {} (expected 1 to {MAX_CHUNK_BUFFERS})",
            layout.num_buffers
        )));
    }
    let word = if layout.has_large_chunk { 4 } else { 2 };
    let meta = buffers[0];
    let chunks_buf = buffers[1];
    let ms = site.at("chunk_metadata");
    if meta.len() % word != 0 {
        return Err(ms.invalid(format!(
            "{} bytes is not a whole number of {word}-byte words",
            meta.len()
        )));
    }
    let num_chunks = meta.len() / word;
    if rows > 0 && num_chunks == 0 {
        return Err(ms.invalid(format!("no chunks for {rows} rows")));
    }
    let mut values: Option<Block> = None;
    let mut direct = Direct::for_page(layout, values_enc, rows);
    let mut def: Vec<u16> = Vec::new();
    let mut counted = 0usize;
    let mut at = 0usize;
    for c in 0..num_chunks {
        let w = super::le_uint(meta, c * word, word).unwrap_or(0);
        let log = (w & 0x0f) as u32;
        let size = ((w >> 4) + 1) * 8;
        let cs = site.at(format!("chunks[{c}]"));
        let remaining = rows - counted;
        let n = if c + 1 < num_chunks {
            let n = 1usize << log;
            if n >= remaining {
                return Err(ms.invalid(format!(
                    "chunk {c} holds {n} values but only {remaining} of the {rows} items remain for it and {} later chunks",
                    num_chunks - c - 1
                )));
            }
            n
        } else {
            if remaining == 0 || (log != 0 && 1usize << log != remaining) {
                return Err(ms.invalid(format!(
                    "the last chunk's word says 2^{log} values but {remaining} of the {rows} items remain"
                )));
            }
            remaining
        };
        let chunk = usize::try_from(size)
            .ok()
            .and_then(|size| chunks_buf.get(at..at.checked_add(size)?))
            .ok_or_else(|| {
                cs.oob(format!(
                    "{size} bytes at {at} but the chunk buffer holds {}",
                    chunks_buf.len()
                ))
            })?;
        at += chunk.len();
        counted += n;
        let (chunk_def, bufs) = chunk_parts(layout, def_enc, chunk, n, word, &cs)?;
        if let Some(d) = chunk_def {
            def.extend_from_slice(&d);
        }
        if let Some(direct) = direct.as_mut() {
            if direct.take(&bufs, n) {
                continue;
            }
        }
        // Any other encoding, or a chunk the direct copy did not take (whose error, if it has
        // one, is the one this reports).
        let chunk_values = chunk_values(values_enc, &bufs, n, &cs)?;
        match (direct.as_mut(), values.as_mut()) {
            (Some(direct), _) => direct.append(chunk_values, &cs)?,
            (None, None) => values = Some(chunk_values),
            (None, Some(v)) => v.append(chunk_values, &cs)?,
        }
    }
    if let Some(direct) = direct {
        values = direct.finish(rows);
    }
    if counted != rows {
        return Err(ms.invalid(format!("the chunks hold {counted} values for {rows} rows")));
    }
    let def = def_enc.map(|_| def);
    if let Some(d) = &def {
        layers.check_levels(d, &site.at("def"))?;
    }
    let values = match (&layout.dictionary, values) {
        (Some(dict), Some(indices)) => Some(dictionary(
            dict,
            layout.num_dictionary_items,
            buffers[2],
            &indices,
            def.as_deref(),
            &site.at("dictionary"),
        )?),
        (_, v) => v,
    };
    Ok(PageValues {
        values,
        def,
        layers,
        scalar: false,
    })
}

/// A chunk's definition levels, decoded, and its value buffers.
type ChunkParts<'c> = (Option<Vec<u16>>, Vec<&'c [u8]>);

/// Reads one chunk of `n` values: its definition levels, decoded, and its value buffers.
fn chunk_parts<'c>(
    layout: &pb::MiniBlockLayout,
    def_enc: Option<&pb::CompressiveEncoding>,
    chunk: &'c [u8],
    n: usize,
    word: usize,
    site: &Site,
) -> Result<ChunkParts<'c>, DataFileError> {
    let header = |what: &str| site.oob(format!("the chunk ends inside its header ({what})"));
    let num_levels = super::le_uint(chunk, 0, 2).ok_or_else(|| header("level count"))? as usize;
    let mut at = 2;
    let def_size = match def_enc {
        Some(_) => {
            let s = super::le_uint(chunk, at, 2).ok_or_else(|| header("definition size"))?;
            at += 2;
            Some(s as usize)
        }
        None => None,
    };
    let num_buffers = layout.num_buffers as usize;
    let mut sizes = Vec::with_capacity(num_buffers);
    for b in 0..num_buffers {
        let s = super::le_uint(chunk, at, word).ok_or_else(|| header(&format!("size {b}")))?;
        sizes.push(s as usize);
        at += word;
    }
    at = pad8(at);
    let mut take = |size: usize, what: &str| -> Result<&'c [u8], DataFileError> {
        let part = at
            .checked_add(size)
            .and_then(|end| chunk.get(at..end))
            .ok_or_else(|| {
                site.oob(format!(
                    "{what} of {size} bytes at {at} runs past the chunk's {} bytes",
                    chunk.len()
                ))
            })?;
        at = pad8(at + size);
        Ok(part)
    };
    let def_bytes = match def_size {
        Some(s) => Some(take(s, "the definition levels")?),
        None => None,
    };
    let mut bufs = Vec::with_capacity(num_buffers);
    for (b, s) in sizes.iter().enumerate() {
        bufs.push(take(*s, &format!("value buffer {b}"))?);
    }
    let def = match (def_enc, def_bytes) {
        (Some(enc), Some(bytes)) => {
            if num_levels != n {
                return Err(site.invalid(format!(
                    "{num_levels} definition levels for {n} values (the kit has no lists)"
                )));
            }
            let ds = site.at("def");
            let levels = compressive::block(enc, bytes, n, &ds)?;
            Some(levels_from(levels.unsigned_values(&ds)?, &ds)?)
        }
        _ => None,
    };
    Ok((def, bufs))
}

/// Decodes the `n` values of one chunk from its value buffers.
fn chunk_values(
    values_enc: &pb::CompressiveEncoding,
    bufs: &[&[u8]],
    n: usize,
    site: &Site,
) -> Result<Block, DataFileError> {
    let values = compressive::mini_block(values_enc, bufs, n, &site.at("values"))?;
    if values.len() != n {
        return Err(site.invalid(format!(
            "the values decode to {} slots for {n} values",
            values.len()
        )));
    }
    Ok(values)
}

/// The page's values built chunk by chunk straight into one buffer, for the two encodings
/// that dominate Lance's pages: uncompressed fixed-width values (copied as they are) and
/// FSST strings in `Variable` chunks (decoded with the symbol table parsed once). A chunk
/// whose bytes are not what these expect is left to the general decoder
/// ([`chunk_values`]), whose result or error is then used: so both paths accept and refuse
/// the same bytes with the same errors.
enum Direct {
    Fixed {
        bits: u32,
        data: Vec<u8>,
    },
    Fsst {
        table: Box<Option<fsst::SymbolTable>>,
        offset_width: usize,
        offsets: Vec<u64>,
        data: Vec<u8>,
    },
}

impl Direct {
    /// The direct form for a page of `rows` rows (bounded by the caller) in `values_enc`, if
    /// it has one; a dictionary page has none (its chunks hold indices).
    fn for_page(
        layout: &pb::MiniBlockLayout,
        values_enc: &pb::CompressiveEncoding,
        rows: usize,
    ) -> Option<Direct> {
        if layout.dictionary.is_some() {
            return None;
        }
        match values_enc.compression.as_ref()? {
            C::Flat(f) if f.data.is_none() && matches!(f.bits_per_value, 8 | 16 | 32 | 64) => {
                let bits = f.bits_per_value as u32;
                Some(Direct::Fixed {
                    bits,
                    data: Vec::with_capacity(rows * (bits as usize / 8)),
                })
            }
            C::Fsst(f) => {
                let C::Variable(v) = f.values.as_deref()?.compression.as_ref()? else {
                    return None;
                };
                let offset_width = match v.offsets.as_deref()?.compression.as_ref()? {
                    C::Flat(o) if o.data.is_none() && matches!(o.bits_per_value, 32 | 64) => {
                        o.bits_per_value as usize / 8
                    }
                    _ => return None,
                };
                if v.values.is_some() {
                    return None;
                }
                let table = fsst::SymbolTable::parse(&f.symbol_table).ok()?;
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                Some(Direct::Fsst {
                    table: Box::new(table),
                    offset_width,
                    offsets,
                    data: Vec::new(),
                })
            }
            _ => None,
        }
    }

    /// Appends a chunk of `n` values from its buffers when they are well formed for this
    /// form; false (and nothing appended) otherwise.
    fn take(&mut self, bufs: &[&[u8]], n: usize) -> bool {
        let [buf] = bufs else {
            return false;
        };
        match self {
            Direct::Fixed { bits, data } => match buf.get(..n.saturating_mul(*bits as usize / 8)) {
                Some(values) => {
                    data.extend_from_slice(values);
                    true
                }
                None => false,
            },
            Direct::Fsst {
                table,
                offset_width,
                offsets,
                data,
            } => {
                let w = *offset_width;
                let Some(raw) = n
                    .checked_add(1)
                    .and_then(|k| k.checked_mul(w))
                    .and_then(|end| buf.get(..end))
                else {
                    return false;
                };
                let chunk_offsets: Vec<u64> = raw
                    .chunks_exact(w)
                    .map(|c| super::le_uint(c, 0, w).unwrap_or(0))
                    .collect();
                let ordered = chunk_offsets.windows(2).all(|p| p[0] <= p[1]);
                let inside = chunk_offsets.last().is_some_and(|&l| l <= buf.len() as u64);
                if !ordered || !inside {
                    return false;
                }
                let (had_offsets, had_data) = (offsets.len(), data.len());
                match fsst::decompress_onto(
                    table.as_ref().as_ref(),
                    &chunk_offsets,
                    buf,
                    offsets,
                    data,
                ) {
                    Ok(()) => true,
                    Err(_) => {
                        offsets.truncate(had_offsets);
                        data.truncate(had_data);
                        false
                    }
                }
            }
        }
    }

    /// Appends a chunk the general decoder decoded.
    fn append(&mut self, block: Block, site: &Site) -> Result<(), DataFileError> {
        match (self, block) {
            (
                Direct::Fixed { bits, data },
                Block::Fixed {
                    bits: b, data: d, ..
                },
            ) if *bits == b => {
                data.extend_from_slice(&d);
                Ok(())
            }
            (
                Direct::Fsst { offsets, data, .. },
                Block::Variable {
                    offsets: o,
                    data: d,
                },
            ) => {
                let base = data.len() as u64;
                offsets.extend(o.iter().skip(1).map(|x| x + base));
                data.extend_from_slice(&d);
                Ok(())
            }
            (_, other) => Err(site.invalid(format!(
                "chunks decode to different shapes: {}",
                other.shape()
            ))),
        }
    }

    /// The page's values, `None` when no chunk was read.
    fn finish(self, rows: usize) -> Option<Block> {
        match self {
            Direct::Fixed { bits, data } => (rows > 0).then_some(Block::Fixed {
                bits,
                len: rows,
                data,
            }),
            Direct::Fsst { offsets, data, .. } => {
                (offsets.len() > 1).then_some(Block::Variable { offsets, data })
            }
        }
    }
}

/// Replaces dictionary `indices` by the dictionary's items. Slots whose definition level is
/// not 0 (NULL) take an empty or zero value whatever their index.
fn dictionary(
    dict: &pb::CompressiveEncoding,
    num_items: u64,
    bytes: &[u8],
    indices: &Block,
    def: Option<&[u16]>,
    site: &Site,
) -> Result<Block, DataFileError> {
    let n = site.check_count(num_items)?;
    let items = compressive::block(dict, bytes, n, site)?;
    let indices = indices.unsigned_values(&site.at("indices"))?;
    let valid = |row: usize| def.is_none_or(|d| d.get(row).is_none_or(|l| *l == 0));
    let index = |row: usize, i: u64| -> Result<Option<usize>, DataFileError> {
        match usize::try_from(i).ok().filter(|i| *i < n) {
            Some(i) => Ok(Some(i)),
            None if valid(row) => Err(site.at("indices").invalid(format!(
                "row {row}: index {i} but the dictionary has {n} items"
            ))),
            None => Ok(None),
        }
    };
    match &items {
        Block::Fixed { bits, data, .. } if *bits >= 8 => {
            let w = (*bits / 8) as usize;
            let mut out = Vec::with_capacity(indices.len().saturating_mul(w));
            for (row, i) in indices.iter().enumerate() {
                match index(row, *i)? {
                    Some(i) => out.extend_from_slice(data.get(i * w..(i + 1) * w).unwrap_or(&[])),
                    None => out.resize(out.len() + w, 0),
                }
            }
            Ok(Block::Fixed {
                bits: *bits,
                len: indices.len(),
                data: out,
            })
        }
        Block::Variable { offsets, data } => {
            let mut out_offsets = Vec::with_capacity(indices.len() + 1);
            out_offsets.push(0u64);
            let mut out = Vec::new();
            for (row, i) in indices.iter().enumerate() {
                if let Some(i) = index(row, *i)? {
                    let (a, b) = (offsets.get(i), offsets.get(i + 1));
                    let item = a
                        .zip(b)
                        .and_then(|(a, b)| data.get(*a as usize..*b as usize))
                        .unwrap_or(&[]);
                    if (out.len() + item.len()) as u64 > MAX_DECOMPRESSED_BYTES {
                        return Err(site.invalid(format!(
                            "the rows' dictionary items add up to more than {MAX_DECOMPRESSED_BYTES} bytes"
                        )));
                    }
                    out.extend_from_slice(item);
                }
                out_offsets.push(out.len() as u64);
            }
            Ok(Block::Variable {
                offsets: out_offsets,
                data: out,
            })
        }
        other => Err(site.unsupported(format!("a dictionary of {}", other.shape()))),
    }
}
