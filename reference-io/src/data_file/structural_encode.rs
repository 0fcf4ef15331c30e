//! Turning one leaf column's values into one format v2.1 or v2.2 page: a `PageLayout`
//! (structural encoding) plus its buffers.
//!
//! Invariant: every page written here is one Lance 14.0.2 reads back with the same values, and
//! it uses only the smallest part of the v2.1+ grammar: a column with no value is a
//! `ConstantLayout` (all NULL: no buffers for a top-level leaf, else an empty repetition buffer
//! and raw u16 definition levels, as Lance writes it: under `def_compression` `Flat(16)` in
//! v2.2, with no `def_compression` in v2.1, whose constant layout has none); any other column
//! is one `MiniBlockLayout` in its version's chunk grammar ([`Grammar`]: u32 words and sizes,
//! `has_large_chunk = true`, in v2.2; u16 ones, `has_large_chunk = false`, in v2.1), values compressed
//! with `Flat` (`int32`, `int64`, `uint64`, `float32`, `float64`, `bool`), `Variable` with
//! `Flat(32)` offsets (`utf8`) or `FixedSizeList` over `Flat(32)` (`fixed_size_list<float32,
//! N>`), and definition levels (when a value or an enclosing struct is NULL) stored raw as
//! `Flat(16)`. The layers list the item first, then one layer per struct ancestor, inner-most
//! first, nullable when that struct is NULL in some row. The bytes depend only on the values (no clock, no hash order): the chunking rule
//! is [`chunk_sizes_within`] (32 KiB of values per chunk in v2.2, 16 KiB in v2.1).
//!
//! A mini-block page has two buffers: the chunk metadata words (one little-endian u32 per
//! chunk in v2.2, u16 in v2.1: `(chunk_bytes / 8 - 1) << 4 | log2(values)`, the last chunk's
//! low bits 0) and the chunks. A chunk is
//!
//! ```text
//! u16 num_levels | [u16 def_bytes] | u32 (v2.2) or u16 (v2.1) size of each value buffer | pad
//! [def levels, u16 each | pad] | value buffer 0 | pad | value buffer 1 | pad ...
//! ```
//!
//! where every pad brings the offset from the chunk's start to a multiple of 8 with `0xFE`
//! (a `Variable` buffer is first padded to a multiple of 4 with `0x48`, inside its size).

use lance_reference::model::{DataType, Value};
use lance_reference::proto::lance::encodings21 as pb;

/// Type URL of a v2.1+ page encoding.
pub const PAGE_LAYOUT_URL: &str = "/lance.encodings21.PageLayout";
/// Most values in one mini-block chunk (a power of two: non-final chunks hold `2^k` values).
pub const MAX_CHUNK_VALUES: usize = 4096;
/// The chunker closes a chunk before its value bytes pass this size, unless the chunk would
/// then hold fewer than two values (a non-final chunk needs at least `2^1`).
pub const TARGET_CHUNK_BYTES: usize = 32 * 1024;
/// Chunks and the buffers inside them are aligned (and padded) to this many bytes.
pub const CHUNK_ALIGNMENT: usize = 8;
/// The byte chunk padding is made of.
pub const CHUNK_PADDING_BYTE: u8 = 0xFE;
/// The byte a `Variable` buffer is padded with to a whole number of offsets.
pub const VARIABLE_PADDING_BYTE: u8 = 0x48;

/// The most bytes a v2.1 chunk's value buffers take before the chunker closes it (so that
/// the whole chunk, with its header, 4096 u16 levels and padding, stays within the 32 KiB a
/// u16 metadata word can state).
pub const TARGET_CHUNK_BYTES_V2_1: usize = 16 * 1024;

/// Which of the two v2.1+ grammars a page is written in. They differ, for the pages written
/// here, in the mini-block chunk grammar (the width of the chunk metadata words and of a
/// chunk's value buffer sizes) and in how an all-NULL page below a struct states its levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grammar {
    /// Format v2.1: u16 chunk words and buffer sizes (`has_large_chunk = false`, chunks of at
    /// most 32 KiB); a constant page's levels are raw, with no `def_compression`.
    V2_1,
    /// Format v2.2: u32 chunk words and buffer sizes (`has_large_chunk = true`); a constant
    /// page's levels are declared `Flat(16)`.
    V2_2,
}

impl Grammar {
    fn large_chunks(self) -> bool {
        self == Grammar::V2_2
    }

    /// The most value bytes a chunk takes before the chunker closes it.
    fn target_chunk_bytes(self) -> usize {
        match self {
            Grammar::V2_1 => TARGET_CHUNK_BYTES_V2_1,
            Grammar::V2_2 => TARGET_CHUNK_BYTES,
        }
    }

    /// The number of bits a chunk metadata word has for `chunk_bytes / 8 - 1`.
    fn size_bits(self) -> u32 {
        match self {
            Grammar::V2_1 => 12,
            Grammar::V2_2 => 28,
        }
    }
}

/// One encoded v2.1+ page.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuralPage {
    /// Rows in the page.
    pub rows: u64,
    /// The page layout.
    pub layout: pb::PageLayout,
    /// The page's buffers, in order.
    pub buffers: Vec<Vec<u8>>,
}

/// A chunk that does not fit its metadata word (more than 32 KiB of bytes in v2.1, 4 GiB in
/// v2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkTooLarge {
    /// The chunk's size in bytes.
    pub bytes: usize,
}

/// Encodes a leaf column whose values were already checked to fit `data_type` (a value of
/// another kind is written like NULL filler and never panics). `struct_depth` is the number of
/// struct ancestors of the field, each present in every row. Returns `None` for an empty
/// column (no page is written). `data_type` must not be `Struct`: in v2.1+ a struct has no
/// column of its own.
pub fn encode_structural_page(
    data_type: &DataType,
    values: &[Value],
    struct_depth: usize,
) -> Result<Option<StructuralPage>, ChunkTooLarge> {
    encode_structural_page_under(data_type, values, &vec![None; struct_depth])
}

/// [`encode_structural_page_in`] in v2.2.
pub fn encode_structural_page_under(
    data_type: &DataType,
    values: &[Value],
    structs: &[Option<Vec<bool>>],
) -> Result<Option<StructuralPage>, ChunkTooLarge> {
    encode_structural_page_in(Grammar::V2_2, data_type, values, structs)
}

/// [`encode_structural_page`] in `grammar` for a leaf below the structs `structs` (outermost
/// first): each is `None` when present in every row, else its validity per row (`false` = NULL
/// struct; a row missing from the list is present). A struct that is NULL somewhere makes its
/// layer nullable; levels are numbered from 1 over the nullable layers, item first, and a
/// row's level is that of its outer-most NULL struct, else the item's when the value is NULL,
/// else 0 (the leaf stores no value under a NULL struct).
pub fn encode_structural_page_in(
    grammar: Grammar,
    data_type: &DataType,
    values: &[Value],
    structs: &[Option<Vec<bool>>],
) -> Result<Option<StructuralPage>, ChunkTooLarge> {
    if values.is_empty() {
        return Ok(None);
    }
    let rows = values.len() as u64;
    let present = |s: &Option<Vec<bool>>, i: usize| {
        s.as_ref().is_none_or(|v| v.get(i).copied().unwrap_or(true))
    };
    let struct_nullable: Vec<bool> = structs
        .iter()
        .map(|s| (0..values.len()).any(|i| !present(s, i)))
        .collect();
    let item_nullable = values
        .iter()
        .enumerate()
        .any(|(i, v)| v.is_null() && structs.iter().all(|s| present(s, i)));
    let layer = |nullable: bool| {
        if nullable {
            pb::RepDefLayer::RepdefNullableItem as i32
        } else {
            pb::RepDefLayer::RepdefAllValidItem as i32
        }
    };
    let mut layers = vec![layer(item_nullable)];
    layers.extend(struct_nullable.iter().rev().map(|&n| layer(n)));
    // Levels of the nullable layers, inner-most (the item) first.
    let mut next = 0u16;
    let mut level_of = |nullable: bool| {
        if nullable {
            next += 1;
            next
        } else {
            0
        }
    };
    let item_level = level_of(item_nullable);
    let mut struct_levels: Vec<u16> = struct_nullable.iter().rev().map(|&n| level_of(n)).collect();
    struct_levels.reverse(); // outermost first, like `structs`
    let with_def = next > 0;
    let def: Vec<u16> = (0..values.len())
        .map(|i| {
            structs
                .iter()
                .zip(&struct_levels)
                .find(|(s, _)| !present(s, i))
                .map_or_else(
                    || if values[i].is_null() { item_level } else { 0 },
                    |(_, level)| *level,
                )
        })
        .collect();
    if values.iter().all(Value::is_null) {
        // Lance 14 writes (and reads) an all-NULL page with no buffers only for a top-level
        // leaf; below a struct it stores the levels, raw u16 after an empty repetition
        // buffer: declared `Flat(16)` with their count in v2.2, undeclared in v2.1.
        let levels = !structs.is_empty();
        let declared = levels && grammar == Grammar::V2_2;
        let layout = pb::PageLayout {
            layout: Some(pb::page_layout::Layout::ConstantLayout(
                pb::ConstantLayout {
                    layers,
                    def_compression: declared.then(|| flat(16)),
                    num_def_values: if declared { rows } else { 0 },
                    ..Default::default()
                },
            )),
        };
        let buffers = if levels {
            vec![
                Vec::new(),
                def.iter().flat_map(|l| l.to_le_bytes()).collect(),
            ]
        } else {
            Vec::new()
        };
        return Ok(Some(StructuralPage {
            rows,
            layout,
            buffers,
        }));
    }
    let kind = ValueKind::of(data_type, values);
    let (words, chunks) =
        mini_block_chunks(grammar, kind, values, with_def.then_some(def.as_slice()))?;
    let def_compression = with_def.then(|| flat(16));
    let layout = pb::PageLayout {
        layout: Some(pb::page_layout::Layout::MiniBlockLayout(
            pb::MiniBlockLayout {
                rep_compression: None,
                def_compression,
                value_compression: Some(kind.compression()),
                dictionary: None,
                num_dictionary_items: 0,
                layers,
                num_buffers: kind.num_buffers(),
                repetition_index_depth: 0,
                num_items: rows,
                has_large_chunk: grammar.large_chunks(),
            },
        )),
    };
    Ok(Some(StructuralPage {
        rows,
        layout,
        buffers: vec![words, chunks],
    }))
}

/// The chunk metadata words and the chunks of a mini-block page holding `values` as `kind`,
/// in `grammar`.
fn mini_block_chunks(
    grammar: Grammar,
    kind: ValueKind,
    values: &[Value],
    levels: Option<&[u16]>,
) -> Result<(Vec<u8>, Vec<u8>), ChunkTooLarge> {
    let sizes = chunk_sizes_within(
        values,
        |v| kind.value_bytes(v),
        grammar.target_chunk_bytes(),
    );
    let mut words = Vec::with_capacity(sizes.len() * 4);
    let mut chunks = Vec::new();
    let mut start = 0usize;
    for (k, &n) in sizes.iter().enumerate() {
        let chunk_values = values.get(start..start + n).unwrap_or_default();
        let chunk_levels = levels.map(|l| l.get(start..start + n).unwrap_or_default());
        start += n;
        let chunk_start = chunks.len();
        write_chunk(grammar, &mut chunks, &kind, chunk_values, chunk_levels);
        let bytes = chunks.len() - chunk_start;
        let last = k + 1 == sizes.len();
        let log = if last { 0 } else { n.trailing_zeros() };
        let word = u32::try_from(bytes / CHUNK_ALIGNMENT - 1)
            .ok()
            .filter(|w| *w < (1 << grammar.size_bits()))
            .ok_or(ChunkTooLarge { bytes })?;
        let word = (word << 4) | log;
        match grammar {
            // The filter above keeps the word within 16 bits.
            Grammar::V2_1 => words.extend_from_slice(&(word as u16).to_le_bytes()),
            Grammar::V2_2 => words.extend_from_slice(&word.to_le_bytes()),
        }
    }
    Ok((words, chunks))
}

/// [`encode_dictionary_page_in`] in v2.2.
pub fn encode_dictionary_page(
    data_type: &DataType,
    values: &[Value],
    struct_depth: usize,
) -> Result<Option<StructuralPage>, ChunkTooLarge> {
    encode_dictionary_page_in(Grammar::V2_2, data_type, values, struct_depth)
}

/// A dictionary-encoded mini-block page (in `grammar`) of a fixed-width column (`int32`, `int64`, `uint64`,
/// `float32`, `float64`), as Lance 14 writes dictionaries: page buffer 2 holds the distinct
/// values (`Flat`, in order of first occurrence, compared bit for bit), and the chunks hold
/// one `Flat(32)` index per row (0 for a NULL row, whose definition level says it is NULL).
/// `None` for another type, or for a column with no value (which [`encode_structural_page`]
/// writes as a constant page, with no dictionary). The kit writes such pages only to build damaged files.
pub fn encode_dictionary_page_in(
    grammar: Grammar,
    data_type: &DataType,
    values: &[Value],
    struct_depth: usize,
) -> Result<Option<StructuralPage>, ChunkTooLarge> {
    let ValueKind::Flat(bits @ (32 | 64)) = ValueKind::of(data_type, values) else {
        return Ok(None);
    };
    let Some(page) =
        encode_structural_page_in(grammar, data_type, values, &vec![None; struct_depth])?
    else {
        return Ok(None);
    };
    let any_null = values.iter().any(Value::is_null);
    let mut items: Vec<Value> = Vec::new();
    let mut item_bytes: Vec<Vec<u8>> = Vec::new();
    let mut indices = Vec::with_capacity(values.len());
    for v in values {
        if v.is_null() {
            indices.push(Value::Null);
            continue;
        }
        let bytes = flat_bytes(std::slice::from_ref(v), bits);
        let index = match item_bytes.iter().position(|b| *b == bytes) {
            Some(i) => i,
            None => {
                item_bytes.push(bytes);
                items.push(v.clone());
                item_bytes.len() - 1
            }
        };
        indices.push(Value::Int32(i32::try_from(index).unwrap_or(i32::MAX)));
    }
    // A top-level leaf's levels: 1 for a NULL row (the only dictionary pages the kit writes).
    let levels: Vec<u16> = values.iter().map(|v| u16::from(v.is_null())).collect();
    let (words, chunks) = mini_block_chunks(
        grammar,
        ValueKind::Flat(32),
        &indices,
        any_null.then_some(levels.as_slice()),
    )?;
    let Some(pb::page_layout::Layout::MiniBlockLayout(mut layout)) = page.layout.layout else {
        return Ok(None);
    };
    layout.value_compression = Some(flat(32));
    layout.dictionary = Some(flat(bits));
    layout.num_dictionary_items = items.len() as u64;
    Ok(Some(StructuralPage {
        rows: page.rows,
        layout: pb::PageLayout {
            layout: Some(pb::page_layout::Layout::MiniBlockLayout(layout)),
        },
        buffers: vec![words, chunks, flat_bytes(&items, bits)],
    }))
}

/// How a column's values are laid out in a chunk's value buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    /// Fixed-width values of this many bits (1 for `bool`: a bitmap).
    Flat(u64),
    /// `utf8`: one buffer of `n + 1` u32 offsets (counted from the buffer's start) then bytes.
    Variable,
    /// `fixed_size_list<float32, dimension>`: an item validity bitmap (when `has_validity`)
    /// then the items as `f32`.
    Vector { dimension: u32, has_validity: bool },
}

impl ValueKind {
    fn of(data_type: &DataType, values: &[Value]) -> ValueKind {
        match data_type {
            DataType::Bool => ValueKind::Flat(1),
            DataType::Int32 | DataType::Float32 => ValueKind::Flat(32),
            DataType::Utf8 => ValueKind::Variable,
            DataType::FixedSizeList { dimension } => ValueKind::Vector {
                dimension: *dimension,
                has_validity: values
                    .iter()
                    .any(|v| !item_validity(v, *dimension).iter().all(|b| *b)),
            },
            _ => ValueKind::Flat(64),
        }
    }

    /// Bytes one value adds to a chunk's value buffers (rounded up for bitmaps; only used to
    /// size chunks).
    fn value_bytes(self, v: &Value) -> usize {
        match self {
            ValueKind::Flat(bits) => (bits as usize).div_ceil(8),
            ValueKind::Variable => 4 + if let Value::Utf8(s) = v { s.len() } else { 0 },
            ValueKind::Vector { dimension, .. } => 4 * dimension as usize + 1,
        }
    }

    fn num_buffers(self) -> u64 {
        match self {
            ValueKind::Vector {
                has_validity: true, ..
            } => 2,
            _ => 1,
        }
    }

    fn compression(self) -> pb::CompressiveEncoding {
        use pb::compressive_encoding::Compression;
        match self {
            ValueKind::Flat(bits) => flat(bits),
            ValueKind::Variable => pb::CompressiveEncoding {
                compression: Some(Compression::Variable(Box::new(pb::Variable {
                    offsets: Some(Box::new(flat(32))),
                    values: None,
                }))),
            },
            ValueKind::Vector {
                dimension,
                has_validity,
            } => pb::CompressiveEncoding {
                compression: Some(Compression::FixedSizeList(Box::new(pb::FixedSizeList {
                    items_per_value: u64::from(dimension),
                    values: Some(Box::new(flat(32))),
                    has_validity,
                }))),
            },
        }
    }

    /// The chunk's value buffers for `values`.
    fn buffers(self, values: &[Value]) -> Vec<Vec<u8>> {
        match self {
            ValueKind::Flat(bits) => vec![flat_bytes(values, bits)],
            ValueKind::Variable => vec![variable_bytes(values)],
            ValueKind::Vector {
                dimension,
                has_validity,
            } => {
                let mut items = Vec::with_capacity(values.len() * dimension as usize * 4);
                let mut validity = Vec::with_capacity(values.len() * dimension as usize);
                for v in values {
                    validity.extend(item_validity(v, dimension));
                    match v {
                        Value::Vector(xs) if xs.len() == dimension as usize => {
                            for x in xs {
                                items.extend_from_slice(&x.unwrap_or(0.0).to_le_bytes());
                            }
                        }
                        _ => items.resize(items.len() + 4 * dimension as usize, 0),
                    }
                }
                if has_validity {
                    vec![super::page_encode::bitmap(&validity), items]
                } else {
                    vec![items]
                }
            }
        }
    }
}

/// The validity of a row's `dimension` items: an item is valid when the row is present and
/// the item is not NULL.
fn item_validity(v: &Value, dimension: u32) -> Vec<bool> {
    match v {
        Value::Vector(xs) if xs.len() == dimension as usize => {
            xs.iter().map(Option::is_some).collect()
        }
        _ => vec![false; dimension as usize],
    }
}

fn flat(bits: u64) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(pb::compressive_encoding::Compression::Flat(pb::Flat {
            bits_per_value: bits,
            data: None,
        })),
    }
}

/// Little-endian values (a bitmap when `bits == 1`); a NULL slot holds zeros.
fn flat_bytes(values: &[Value], bits: u64) -> Vec<u8> {
    if bits == 1 {
        let set: Vec<bool> = values
            .iter()
            .map(|v| matches!(v, Value::Bool(true)))
            .collect();
        return super::page_encode::bitmap(&set);
    }
    let width = bits as usize / 8;
    let mut out = Vec::with_capacity(values.len() * width);
    for v in values {
        match v {
            Value::Int32(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Float32(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Int64(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::UInt64(x) => out.extend_from_slice(&x.to_le_bytes()),
            Value::Float64(x) => out.extend_from_slice(&x.to_le_bytes()),
            _ => out.resize(out.len() + width, 0),
        }
    }
    out
}

/// `n + 1` u32 offsets, counted from the start of this buffer (so the first is `4 (n + 1)`),
/// then the strings' bytes (a NULL adds none), padded to a multiple of 4 bytes.
fn variable_bytes(values: &[Value]) -> Vec<u8> {
    let header = 4 * (values.len() + 1);
    let text: usize = values
        .iter()
        .map(|v| if let Value::Utf8(s) = v { s.len() } else { 0 })
        .sum();
    let mut out = Vec::with_capacity(header + text);
    let mut end = header;
    out.extend_from_slice(&offset_u32(end).to_le_bytes());
    for v in values {
        if let Value::Utf8(s) = v {
            end += s.len();
        }
        out.extend_from_slice(&offset_u32(end).to_le_bytes());
    }
    for v in values {
        if let Value::Utf8(s) = v {
            out.extend_from_slice(s.as_bytes());
        }
    }
    // Lance reads the buffer as whole offsets, so its size is a multiple of 4 (padded as
    // Lance pads it, with `0x48`).
    out.resize(out.len().div_ceil(4) * 4, VARIABLE_PADDING_BYTE);
    out
}

/// An offset inside one chunk; [`chunk_sizes`] keeps chunks far below 4 GiB unless two
/// strings alone pass it, and such a chunk is refused by its metadata word first.
fn offset_u32(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

fn pad(out: &mut Vec<u8>, chunk_start: usize) {
    let len = out.len() - chunk_start;
    let target = len.div_ceil(CHUNK_ALIGNMENT) * CHUNK_ALIGNMENT;
    out.resize(chunk_start + target, CHUNK_PADDING_BYTE);
}

fn write_chunk(
    grammar: Grammar,
    out: &mut Vec<u8>,
    kind: &ValueKind,
    values: &[Value],
    levels: Option<&[u16]>,
) {
    let start = out.len();
    let buffers = kind.buffers(values);
    let with_def = levels.is_some();
    let def: Vec<u8> = levels
        .unwrap_or_default()
        .iter()
        .flat_map(|l| l.to_le_bytes())
        .collect();
    let num_levels = if with_def { values.len() } else { 0 };
    // At most MAX_CHUNK_VALUES (4096) values, so levels and their bytes fit u16.
    out.extend_from_slice(&(num_levels as u16).to_le_bytes());
    if with_def {
        out.extend_from_slice(&(def.len() as u16).to_le_bytes());
    }
    for b in &buffers {
        match grammar {
            // A v2.1 chunk is at most 32 KiB ([`mini_block_chunks`] refuses a larger one).
            Grammar::V2_1 => {
                let size = u16::try_from(b.len()).unwrap_or(u16::MAX);
                out.extend_from_slice(&size.to_le_bytes());
            }
            Grammar::V2_2 => out.extend_from_slice(&offset_u32(b.len()).to_le_bytes()),
        }
    }
    pad(out, start);
    if with_def {
        out.extend_from_slice(&def);
        pad(out, start);
    }
    for b in &buffers {
        out.extend_from_slice(b);
        pad(out, start);
    }
}

/// How many values each chunk holds: greedily, the largest power of two (at most
/// [`MAX_CHUNK_VALUES`], at least 2) whose value bytes (`size` per value) stay within
/// [`TARGET_CHUNK_BYTES`]; the final chunk takes whatever remains when it fits those bounds
/// (so a column of `n ≤ 4096` small values is one chunk of `n`).
pub fn chunk_sizes(values: &[Value], size: impl Fn(&Value) -> usize) -> Vec<usize> {
    chunk_sizes_within(values, size, TARGET_CHUNK_BYTES)
}

/// [`chunk_sizes`] with `target` value bytes in place of [`TARGET_CHUNK_BYTES`].
pub fn chunk_sizes_within(
    values: &[Value],
    size: impl Fn(&Value) -> usize,
    target: usize,
) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < values.len() {
        let rest = values.get(start..).unwrap_or_default();
        let bytes_of = |n: usize| -> usize { rest.iter().take(n).map(&size).sum() };
        let take = if rest.len() <= MAX_CHUNK_VALUES
            && (rest.len() == 1 || bytes_of(rest.len()) <= target)
        {
            rest.len()
        } else {
            let mut n = MAX_CHUNK_VALUES;
            while n > 2 && (n >= rest.len() || bytes_of(n) > target) {
                n /= 2;
            }
            n.min(rest.len())
        };
        out.push(take);
        start += take;
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use prost::Message;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn page(data_type: DataType, values: Vec<Value>, depth: usize) -> StructuralPage {
        encode_structural_page(&data_type, &values, depth)
            .unwrap()
            .unwrap()
    }

    /// Ten cells: NULL where `null(i)`, else `v(i)`.
    fn ten(null: impl Fn(usize) -> bool, v: impl Fn(usize) -> Value) -> Vec<Value> {
        (0..10)
            .map(|i| if null(i) { Value::Null } else { v(i) })
            .collect()
    }

    /// (PageLayout, metadata words, chunks) as pylance 14.0.2's `LanceFileWriter(version="2.2")`
    /// wrote them for 10-row columns (read back from its file with a protobuf walk).
    fn assert_lance_bytes(p: &StructuralPage, layout: &str, words: &str, chunks: &str) {
        assert_eq!(hex(&p.layout.encode_to_vec()), layout, "PageLayout");
        assert_eq!(p.buffers.len(), 2);
        assert_eq!(hex(&p.buffers[0]), words, "chunk metadata words");
        assert_eq!(hex(&p.buffers[1]), chunks, "chunks");
    }

    #[test]
    fn nullable_int32_page_is_the_one_lance_writes() {
        let values = ten(|i| i % 3 == 1, |i| Value::Int32(i as i32));
        let p = page(DataType::Int32, values, 0);
        assert_lance_bytes(
            &p,
            "0a1512040a0208101a040a0208203201033801480a5001",
            "80000000",
            "0a001400280000000000010000000000010000000000010000000000fefefefe\
             00000000000000000200000003000000000000000500000006000000000000000800000009000000",
        );
    }

    /// The pages pylance 14.0.2's `LanceFileWriter(version="2.1")` writes for the columns of
    /// the four tests around this one (PageLayout aside, which differs only in
    /// `has_large_chunk`): u16 chunk words and u16 value buffer sizes.
    #[test]
    fn v2_1_pages_are_the_ones_lance_writes() {
        let v21 = |data_type: DataType, values: Vec<Value>| {
            encode_structural_page_in(Grammar::V2_1, &data_type, &values, &[])
                .unwrap()
                .unwrap()
        };
        let cases = [
            (
                v21(
                    DataType::Int32,
                    ten(|i| i % 3 == 1, |i| Value::Int32(i as i32)),
                ),
                "8000",
                "0a0014002800fefe0000010000000000010000000000010000000000fefefefe\
                 00000000000000000200000003000000000000000500000006000000000000000800000009000000",
            ),
            (
                v21(
                    DataType::Utf8,
                    ten(|i| i % 5 == 2, |i| Value::Utf8(format!("s{i}"))),
                ),
                "b000",
                "0a0014003c00fefe0000000001000000000000000000010000000000fefefefe\
                 2c0000002e000000300000003000000032000000340000003600000038000000380000003a0000003c000000\
                 73307331733373347335733673387339fefefefe",
            ),
            (
                v21(
                    DataType::Bool,
                    ten(|i| i % 6 == 3, |i| Value::Bool(i % 2 == 0)),
                ),
                "4000",
                "0a0014000200fefe0000000000000100000000000000000000000100fefefefe5501fefefefefefe",
            ),
            (
                v21(
                    DataType::FixedSizeList { dimension: 3 },
                    ten(
                        |i| i % 4 == 2,
                        |i| Value::Vector(vec![Some(i as f32), (i != 5).then_some(1.0), Some(2.0)]),
                    ),
                ),
                "3001",
                "0a001400040078000000000001000000000000000100000000000000fefefefe\
                 3ffee23ffefefefe\
                 000000000000803f000000400000803f0000803f00000040000000000000000000000000\
                 000040400000803f00000040000080400000803f000000400000a040000000000000004000\
                 00000000000000000000000000e0400000803f00000040000000410000803f00000040\
                 000010410000803f00000040",
            ),
        ];
        for (p, words, chunks) in cases {
            let Some(pb::page_layout::Layout::MiniBlockLayout(m)) = &p.layout.layout else {
                panic!("not a mini-block page: {:?}", p.layout);
            };
            assert!(!m.has_large_chunk);
            assert_eq!(hex(&p.buffers[0]), words, "chunk metadata words");
            assert_eq!(hex(&p.buffers[1]), chunks, "chunks");
        }
    }

    #[test]
    fn v2_1_chunks_fit_their_u16_words() {
        // 3,000 strings of 300 bytes: 900 KB, far past one 32 KiB chunk.
        let values: Vec<Value> = (0..3000)
            .map(|i| Value::Utf8(format!("{i:0>300}")))
            .collect();
        for grammar in [Grammar::V2_1, Grammar::V2_2] {
            let p = encode_structural_page_in(grammar, &DataType::Utf8, &values, &[])
                .unwrap()
                .unwrap();
            let width = if grammar == Grammar::V2_1 { 2 } else { 4 };
            let words: Vec<u64> = p.buffers[0]
                .chunks(width)
                .map(|w| w.iter().rev().fold(0u64, |a, b| (a << 8) | u64::from(*b)))
                .collect();
            let total: u64 = words.iter().map(|w| ((w >> 4) + 1) * 8).sum();
            assert_eq!(total, p.buffers[1].len() as u64, "{grammar:?}");
            if grammar == Grammar::V2_1 {
                assert!(words.iter().all(|w| ((w >> 4) + 1) * 8 <= 32 * 1024));
                assert!(words.len() > 900_000 / TARGET_CHUNK_BYTES_V2_1);
            }
        }
        // A single value larger than a u16 chunk can hold cannot be written in v2.1.
        let huge = [Value::Utf8("x".repeat(40_000))];
        assert!(encode_structural_page_in(Grammar::V2_1, &DataType::Utf8, &huge, &[]).is_err());
        assert!(encode_structural_page_in(Grammar::V2_2, &DataType::Utf8, &huge, &[]).is_ok());
    }

    #[test]
    fn nullable_utf8_page_is_the_one_lance_writes() {
        let values = ten(|i| i % 5 == 2, |i| Value::Utf8(format!("s{i}")));
        let p = page(DataType::Utf8, values, 0);
        assert_lance_bytes(
            &p,
            "0a1912040a0208101a0812060a040a0208203201033801480a5001",
            "b0000000",
            "0a0014003c0000000000000001000000000000000000010000000000fefefefe\
             2c0000002e000000300000003000000032000000340000003600000038000000380000003a0000003c000000\
             73307331733373347335733673387339fefefefe",
        );
    }

    #[test]
    fn nullable_bool_page_is_the_one_lance_writes() {
        let values = ten(|i| i % 6 == 3, |i| Value::Bool(i % 2 == 0));
        let p = page(DataType::Bool, values, 0);
        assert_lance_bytes(
            &p,
            "0a1512040a0208101a040a0208013201033801480a5001",
            "40000000",
            "0a001400020000000000000000000100000000000000000000000100fefefefe5501fefefefefefe",
        );
    }

    #[test]
    fn vector_page_with_null_rows_and_items_is_the_one_lance_writes() {
        let values = ten(
            |i| i % 4 == 2,
            |i| Value::Vector(vec![Some(i as f32), (i != 5).then_some(1.0), Some(2.0)]),
        );
        let p = page(DataType::FixedSizeList { dimension: 3 }, values, 0);
        assert_lance_bytes(
            &p,
            "0a1d12040a0208101a0c5a0a080312040a02082018013201033802480a5001",
            "40010000",
            "0a0014000400000078000000fefefefe0000000001000000000000000100000000000000fefefefe\
             3ffee23ffefefefe\
             000000000000803f000000400000803f0000803f00000040000000000000000000000000\
             000040400000803f00000040000080400000803f000000400000a040000000000000004000\
             00000000000000000000000000e0400000803f00000040000000410000803f00000040\
             000010410000803f00000040",
        );
    }

    #[test]
    fn struct_leaf_has_an_all_valid_struct_layer_as_lance_writes_it() {
        let values = ten(|i| i % 3 == 0, |i| Value::Int32(i as i32));
        let p = page(DataType::Int32, values, 1);
        assert_lance_bytes(
            &p,
            "0a1612040a0208101a040a020820320203013801480a5001",
            "80000000",
            "0a001400280000000100000000000100000000000100000000000100fefefefe\
             00000000010000000200000000000000040000000500000000000000070000000800000000000000",
        );
    }

    #[test]
    fn all_null_column_is_a_constant_page_without_buffers() {
        let p = page(DataType::Int32, vec![Value::Null; 10], 0);
        assert_eq!(hex(&p.layout.encode_to_vec()), "12032a0103");
        assert!(p.buffers.is_empty());
        assert_eq!(p.rows, 10);
        let nested = page(DataType::Utf8, vec![Value::Null; 3], 2);
        let Some(pb::page_layout::Layout::ConstantLayout(c)) = nested.layout.layout else {
            panic!("not constant: {:?}", nested.layout)
        };
        assert_eq!(c.layers, vec![3, 1, 1]);
        // Below a struct, as Lance 14 writes it (its reader panics on the form without
        // buffers): an empty repetition buffer, then one raw u16 level per row.
        assert_eq!(c.def_compression, Some(flat(16)));
        assert_eq!(c.num_def_values, 3);
        assert_eq!(nested.buffers, vec![Vec::new(), vec![1, 0, 1, 0, 1, 0]]);
    }

    #[test]
    fn odd_string_bytes_are_padded_to_whole_offsets_as_lance_pads_them() {
        let values = ["abc", "de", "f"].map(|s| Value::Utf8(s.into())).to_vec();
        let p = page(DataType::Utf8, values, 0);
        assert_eq!(hex(&p.buffers[0]), "30000000");
        assert_eq!(
            hex(&p.buffers[1]),
            "000018000000fefe100000001300000015000000160000006162636465664848"
        );
    }

    #[test]
    fn empty_column_has_no_page() {
        assert_eq!(encode_structural_page(&DataType::Int64, &[], 0), Ok(None));
    }

    /// Splits the chunk buffer with the metadata words and checks every chunk's header.
    fn chunk_layout(p: &StructuralPage) -> Vec<(usize, u32)> {
        let words: Vec<u32> = p.buffers[0]
            .chunks(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect();
        let mut at = 0;
        let mut out = Vec::new();
        for w in words {
            let bytes = ((w >> 4) as usize + 1) * CHUNK_ALIGNMENT;
            out.push((bytes, w & 0xF));
            at += bytes;
        }
        assert_eq!(
            at,
            p.buffers[1].len(),
            "the words cover the chunk buffer exactly"
        );
        out
    }

    #[test]
    fn large_columns_split_into_power_of_two_chunks_and_a_remainder() {
        let values: Vec<Value> = (0..6000).map(Value::Int64).collect();
        let p = page(DataType::Int64, values, 0);
        let chunks = chunk_layout(&p);
        // 4096 values of 8 bytes are exactly 32 KiB, so the first chunk holds 2^12 values; the
        // remaining 1904 form the final chunk (low bits 0).
        assert_eq!(chunks.iter().map(|c| c.1).collect::<Vec<_>>(), vec![12, 0]);
        assert_eq!(chunks[0].0, 8 + 4096 * 8);
        assert_eq!(chunks[1].0, 8 + 1904 * 8);
    }

    #[test]
    fn chunk_sizes_obey_the_mini_block_rules() {
        let strings: Vec<Value> = (0..5000)
            .map(|i| Value::Utf8("x".repeat(if i % 997 == 3 { 50_000 } else { i % 50 })))
            .collect();
        let sizes = chunk_sizes(&strings, |v| {
            4 + if let Value::Utf8(s) = v { s.len() } else { 0 }
        });
        assert_eq!(sizes.iter().sum::<usize>(), strings.len());
        let (last, rest) = sizes.split_last().unwrap();
        assert!(*last >= 1 && *last <= MAX_CHUNK_VALUES);
        for n in rest {
            assert!(
                n.is_power_of_two() && *n >= 2 && *n <= MAX_CHUNK_VALUES,
                "{n}"
            );
        }
        assert!(
            sizes.len() > 3,
            "50 KB strings force small chunks: {sizes:?}"
        );
        assert_eq!(chunk_sizes(&strings[..10], |_| 1), vec![10]);
        assert_eq!(chunk_sizes(&strings[..1], |_| 1 << 20), vec![1]);
        assert_eq!(chunk_sizes(&strings[..3], |_| 1 << 20), vec![2, 1]);
    }

    #[test]
    fn same_values_give_same_bytes() {
        let values: Vec<Value> = (0..3000)
            .map(|i| {
                if i % 7 == 0 {
                    Value::Null
                } else {
                    Value::Utf8(format!("{i}"))
                }
            })
            .collect();
        assert_eq!(
            page(DataType::Utf8, values.clone(), 1),
            page(DataType::Utf8, values, 1)
        );
    }

    #[test]
    fn dictionary_pages_read_back_as_their_values() {
        use crate::data_file::{
            ColumnData, DataFileVersion, FileExtras, read_data_file, write_data_file_edited,
        };
        use lance_reference::model::Field;
        // 5,000 rows (two chunks), NULLs, three distinct values per type.
        type Row = Box<dyn Fn(usize) -> Value>;
        let cases: Vec<(DataType, Row)> = vec![
            (
                DataType::Int32,
                Box::new(|i| Value::Int32([7, -9, 7][i % 3])),
            ),
            (
                DataType::Int64,
                Box::new(|i| Value::Int64([7, i64::MIN, 5][i % 3])),
            ),
            (
                DataType::UInt64,
                Box::new(|i| Value::UInt64([u64::MAX, 0, 3][i % 3])),
            ),
            (
                DataType::Float32,
                Box::new(|i| Value::Float32([0.0, -0.0, 1.5][i % 3])),
            ),
            (
                DataType::Float64,
                Box::new(|i| Value::Float64([f64::NAN, -0.0, 2.5][i % 3])),
            ),
        ];
        for (data_type, v) in cases {
            let values: Vec<Value> = (0..5000)
                .map(|i| if i % 11 == 4 { Value::Null } else { v(i) })
                .collect();
            let column = ColumnData::new(Field::new(0, "v", data_type.clone()), values.clone());
            let bytes = write_data_file_edited(
                DataFileVersion::V2_2,
                std::slice::from_ref(&column),
                &FileExtras::default(),
                &|_, _, c, depth, _| {
                    encode_dictionary_page(&c.field.data_type, &c.values, depth)
                        .map_err(|e| e.bytes.to_string())
                },
            )
            .unwrap();
            let file = read_data_file(&bytes, "dict.lance").unwrap();
            let summary = format!("{:?}", file.page_summaries(0).unwrap());
            assert!(summary.contains("dictionary"), "{data_type:?}: {summary}");
            let back = file.column(0, &data_type).unwrap();
            assert_eq!(back.len(), values.len());
            for (row, (a, b)) in values.iter().zip(&back).enumerate() {
                assert!(a.identical(b), "{data_type:?} row {row}: {a:?} -> {b:?}");
            }
        }
        // No dictionary for a type it does not cover, or for a column of NULLs only.
        assert_eq!(
            encode_dictionary_page(&DataType::Utf8, &[Value::Utf8("a".into())], 0),
            Ok(None)
        );
        assert_eq!(
            encode_dictionary_page(&DataType::Int32, &[Value::Null], 0),
            Ok(None)
        );
    }
}
