//! Compressive encodings of v2.1+ pages (`CompressiveEncoding`), in the two forms a layout asks
//! for:
//!
//! - **mini-block** ([`mini_block`]): the value buffers of one chunk (`num_buffers` of them);
//! - **block** ([`block`]): one whole buffer holding a stream (definition levels, a dictionary).
//!
//! Formats (Lance 14.0.2, `encodings/physical/{value,binary,rle,general,block}.rs`):
//!
//! | encoding | mini-block buffers | block buffer |
//! |---|---|---|
//! | `Flat{bits}` | the values | the values |
//! | `Variable{offsets: Flat 32/64}` | `n + 1` offsets into the buffer itself, then the bytes | u32 offset width, then the start of the bytes (u32 at 4, or u64 at 8 for 64-bit offsets), the `n + 1` offsets, the bytes |
//! | `FixedSizeList{dim, has_validity, Flat}` | [item validity bitmap,] the items | — |
//! | `Rle{values: Flat, run_lengths: Flat}` | run values, run lengths | u64 size of the run values, run values, run lengths |
//! | `General{compression, values}` | buffer 0 compressed as a whole | the buffer compressed as a whole |
//! | `Constant{value}` | — | no bytes: the value repeated |
//!
//! FastLanes bit packing (`InlineBitpacking` in both forms, `OutOfLineBitpacking` as a block),
//! FSST (over a mini-block `Variable`) and byte-stream-split (mini-block) are decoded by the
//! kernels of [`crate::data_file::compression`]; every other encoding or form is refused by name.
//!
//! Invariant: every function returns a [`Block`] of exactly `n` values (the caller bounds `n` by
//! [`super::super::MAX_DECODED_VALUES`]) or an error naming the encoding and the site; buffers
//! are checked to hold what the encoding needs before anything is read or allocated.

use super::Site;
use super::block::{Block, fixed_bytes};
use super::buffer_compression;
use crate::data_file::DataFileError;
use crate::data_file::compression::{KernelError, byte_stream_split, fastlanes, fsst};
use lance_reference::proto::lance::encodings21 as pb;
use pb::compressive_encoding::Compression as C;

/// The name of a `CompressiveEncoding` arm, as written in the proto.
pub fn name(e: &pb::CompressiveEncoding) -> &'static str {
    match &e.compression {
        None => "empty or unknown CompressiveEncoding",
        Some(c) => match c {
            C::Flat(_) => "flat",
            C::Variable(_) => "variable",
            C::Constant(_) => "constant",
            C::OutOfLineBitpacking(_) => "out_of_line_bitpacking",
            C::InlineBitpacking(_) => "inline_bitpacking",
            C::Fsst(_) => "fsst",
            C::Dictionary(_) => "dictionary",
            C::Rle(_) => "rle",
            C::ByteStreamSplit(_) => "byte_stream_split",
            C::General(_) => "general",
            C::FixedSizeList(_) => "fixed_size_list",
            C::PackedStruct(_) => "packed_struct",
            C::VariablePackedStruct(_) => "variable_packed_struct",
        },
    }
}

/// A compact one-line rendering of an encoding tree, e.g. `rle(flat(16), flat(8))`.
pub fn describe(e: &pb::CompressiveEncoding) -> String {
    let sub = |x: &Option<Box<pb::CompressiveEncoding>>| x.as_deref().map_or("?".into(), describe);
    let comp = |c: &Option<pb::BufferCompression>| {
        c.as_ref().map_or(String::new(), |c| {
            format!(
                ", {}",
                pb::CompressionScheme::try_from(c.scheme)
                    .map_or("unknown scheme", |s| s.as_str_name())
            )
        })
    };
    match &e.compression {
        Some(C::Flat(f)) => format!("flat({}{})", f.bits_per_value, comp(&f.data)),
        Some(C::Variable(v)) => format!("variable({}{})", sub(&v.offsets), comp(&v.values)),
        Some(C::InlineBitpacking(b)) => format!(
            "inline_bitpacking({}{})",
            b.uncompressed_bits_per_value,
            comp(&b.values)
        ),
        Some(C::OutOfLineBitpacking(b)) => format!(
            "out_of_line_bitpacking({}, {})",
            b.uncompressed_bits_per_value,
            sub(&b.values)
        ),
        Some(C::Fsst(f)) => format!("fsst({})", sub(&f.values)),
        Some(C::Rle(r)) => format!("rle({}, {})", sub(&r.values), sub(&r.run_lengths)),
        Some(C::General(g)) => format!(
            "general({}{})",
            sub(&g.values),
            comp(&g.compression.clone())
        ),
        Some(C::FixedSizeList(f)) => format!(
            "fixed_size_list({}{}, {})",
            f.items_per_value,
            if f.has_validity { ", validity" } else { "" },
            sub(&f.values)
        ),
        Some(C::ByteStreamSplit(b)) => format!("byte_stream_split({})", sub(&b.values)),
        _ => name(e).to_string(),
    }
}

/// The inner encoding `x`, which must be present.
fn inner<'e>(
    x: &'e Option<Box<pb::CompressiveEncoding>>,
    site: &Site,
    part: &str,
) -> Result<&'e pb::CompressiveEncoding, DataFileError> {
    x.as_deref().ok_or_else(|| site.missing(part))
}

/// The width of a `Flat` encoding that must be a whole number of bytes (8 to 64 bits).
fn flat_width(e: &pb::CompressiveEncoding, site: &Site, what: &str) -> Result<u32, DataFileError> {
    match &e.compression {
        Some(C::Flat(f)) => {
            if f.data.is_some() {
                return Err(site.unsupported(format!("{what}: flat with buffer compression")));
            }
            match f.bits_per_value {
                8 | 16 | 32 | 64 => Ok(f.bits_per_value as u32),
                b => Err(site.unsupported(format!("{what}: flat {b}-bit values"))),
            }
        }
        _ => Err(site.unsupported(format!("{what}: {} (only flat is decoded)", name(e)))),
    }
}

/// Decodes a `Flat` stream of `n` values from `bytes` (decompressing first when it says so).
fn flat(f: &pb::Flat, bytes: &[u8], n: usize, site: &Site) -> Result<Block, DataFileError> {
    let bits = u32::try_from(f.bits_per_value)
        .map_err(|_| site.unsupported(format!("flat {}-bit values", f.bits_per_value)))?;
    match &f.data {
        None => Block::fixed(bits, n, bytes, site),
        Some(c) => {
            let raw = buffer_compression::decompress(c, bytes, &site.at("data"))?;
            Block::fixed(bits, n, &raw, site)
        }
    }
}

/// Reads `count` little-endian unsigned integers of `width` bytes starting at `at`.
fn read_uints(
    bytes: &[u8],
    at: usize,
    width: usize,
    count: usize,
    site: &Site,
) -> Result<Vec<u64>, DataFileError> {
    let need = count.saturating_mul(width);
    let slice = at
        .checked_add(need)
        .and_then(|end| bytes.get(at..end))
        .ok_or_else(|| {
            site.oob(format!(
                "{count} offsets of {width} bytes at {at} need {} bytes but the buffer holds {}",
                at.saturating_add(need),
                bytes.len()
            ))
        })?;
    Ok(slice
        .chunks_exact(width)
        .map(|c| super::le_uint(c, 0, width).unwrap_or(0))
        .collect())
}

/// Expands run values and run lengths into at least `n` values; `exact` requires the runs to
/// cover exactly `n` values, otherwise extra values are dropped.
fn expand_runs(
    values: &[u8],
    value_bits: u32,
    lengths: &[u8],
    length_bits: u32,
    n: usize,
    exact: bool,
    site: &Site,
) -> Result<Block, DataFileError> {
    let w = (value_bits / 8) as usize;
    let lw = (length_bits / 8) as usize;
    if values.len() % w != 0 || lengths.len() % lw != 0 || values.len() / w != lengths.len() / lw {
        return Err(site.invalid(format!(
            "{} bytes of {value_bits}-bit run values and {} bytes of {length_bits}-bit run lengths do not pair up",
            values.len(),
            lengths.len()
        )));
    }
    let total = lengths
        .chunks_exact(lw)
        .map(|l| super::le_uint(l, 0, lw).unwrap_or(0))
        .fold(0u64, u64::saturating_add);
    if total < n as u64 || (exact && total != n as u64) {
        return Err(site.invalid(format!("runs cover {total} values, expected {n}")));
    }
    let mut out = Vec::with_capacity(fixed_bytes(value_bits, n));
    let mut have = 0usize;
    for (v, l) in values.chunks_exact(w).zip(lengths.chunks_exact(lw)) {
        let run = super::le_uint(l, 0, lw).unwrap_or(0);
        let take = usize::try_from(run).unwrap_or(usize::MAX).min(n - have);
        for _ in 0..take {
            out.extend_from_slice(v);
        }
        have += take;
    }
    Ok(Block::Fixed {
        bits: value_bits,
        len: n,
        data: out,
    })
}

/// A kernel's refusal, with the site it happened at.
fn kernel_error(site: &Site, e: KernelError) -> DataFileError {
    site.invalid(e.to_string())
}

/// An uncompressed width a kernel takes (8, 16, 32 or 64 bits).
fn kernel_width(bits: u64, site: &Site) -> Result<u32, DataFileError> {
    match bits {
        8 | 16 | 32 | 64 => Ok(bits as u32),
        b => Err(site.unsupported(format!("{b}-bit values"))),
    }
}

/// `InlineBitpacking`: FastLanes blocks, each behind its own bit width.
fn inline_bitpacking(
    b: &pb::InlineBitpacking,
    bytes: &[u8],
    n: usize,
    site: &Site,
) -> Result<Block, DataFileError> {
    let s = site.at("inline_bitpacking");
    let bits = kernel_width(b.uncompressed_bits_per_value, &s)?;
    let raw;
    let bytes = match &b.values {
        None => bytes,
        Some(c) => {
            raw = buffer_compression::decompress(c, bytes, &s.at("values"))?;
            &raw
        }
    };
    let out = fastlanes::unpack_inline(bits, bytes, n).map_err(|e| kernel_error(&s, e))?;
    Block::fixed(bits, n, &out, &s)
}

/// `OutOfLineBitpacking`: FastLanes blocks of one width, named by the inner `Flat`.
fn out_of_line_bitpacking(
    b: &pb::OutOfLineBitpacking,
    bytes: &[u8],
    n: usize,
    site: &Site,
) -> Result<Block, DataFileError> {
    let s = site.at("out_of_line_bitpacking");
    let bits = kernel_width(b.uncompressed_bits_per_value, &s)?;
    let packed = match inner(&b.values, &s, "values")?.compression.as_ref() {
        Some(C::Flat(f)) if f.data.is_none() => u32::try_from(f.bits_per_value)
            .map_err(|_| s.invalid(format!("packed width {}", f.bits_per_value)))?,
        _ => {
            return Err(s.at("values").unsupported(format!(
                "{} (only an uncompressed flat width is decoded)",
                b.values.as_deref().map_or("?", name)
            )));
        }
    };
    let out =
        fastlanes::unpack_out_of_line(bits, packed, bytes, n).map_err(|e| kernel_error(&s, e))?;
    Block::fixed(bits, n, &out, &s)
}

/// FSST-compressed strings, given as a variable-width block of compressed values.
pub fn fsst_block(
    symbol_table: &[u8],
    compressed: Block,
    site: &Site,
) -> Result<Block, DataFileError> {
    let Block::Variable { offsets, data } = compressed else {
        return Err(site.mismatch("FSST-compressed strings", compressed.shape()));
    };
    let (offsets, data) =
        fsst::decompress(symbol_table, &offsets, &data).map_err(|e| kernel_error(site, e))?;
    Ok(Block::Variable { offsets, data })
}

/// Decodes the `n` values of one mini-block chunk from its value `buffers`.
pub fn mini_block(
    e: &pb::CompressiveEncoding,
    buffers: &[&[u8]],
    n: usize,
    site: &Site,
) -> Result<Block, DataFileError> {
    let one = |site: &Site| -> Result<&[u8], DataFileError> {
        match buffers {
            [b] => Ok(b),
            _ => Err(site.invalid(format!(
                "{} expects 1 buffer per chunk, the chunk has {}",
                name(e),
                buffers.len()
            ))),
        }
    };
    let Some(c) = &e.compression else {
        return Err(site.unsupported(name(e)));
    };
    match c {
        C::Flat(f) => flat(f, one(site)?, n, &site.at("flat")),
        C::Variable(v) => {
            let s = site.at("variable");
            if v.values.is_some() {
                return Err(s.unsupported("variable with compressed bytes"));
            }
            let bits = flat_width(inner(&v.offsets, &s, "offsets")?, &s, "offsets")?;
            if bits < 32 {
                return Err(s.unsupported(format!("{bits}-bit offsets")));
            }
            let width = (bits / 8) as usize;
            let buf = one(&s)?;
            let offsets = read_uints(buf, 0, width, n + 1, &s)?;
            Block::variable(&offsets, buf, &s)
        }
        C::FixedSizeList(f) => {
            let s = site.at("fixed_size_list");
            let dimension = usize::try_from(f.items_per_value)
                .ok()
                .filter(|d| *d > 0 && (*d as u64) <= super::MAX_DECODED_VALUES)
                .ok_or_else(|| s.invalid(format!("items_per_value {}", f.items_per_value)))?;
            let items_n = s.check_count((n as u64).saturating_mul(dimension as u64))?;
            let values = inner(&f.values, &s, "values")?;
            let (validity, items_buf) = match (f.has_validity, buffers) {
                (true, [v, items]) => (Some(*v), *items),
                (false, [items]) => (None, *items),
                _ => {
                    return Err(s.invalid(format!(
                        "has_validity = {} but the chunk has {} buffers",
                        f.has_validity,
                        buffers.len()
                    )));
                }
            };
            let item_validity = match validity {
                None => None,
                Some(v) => Some(
                    v.get(..items_n.div_ceil(8))
                        .ok_or_else(|| {
                            s.oob(format!(
                                "{items_n} items need a {}-byte validity bitmap, the buffer holds {}",
                                items_n.div_ceil(8),
                                v.len()
                            ))
                        })?
                        .to_vec(),
                ),
            };
            let items = match &values.compression {
                Some(C::Flat(fl)) => flat(fl, items_buf, items_n, &s.at("values.flat"))?,
                _ => {
                    return Err(s.at("values").unsupported(format!(
                        "{} inside fixed_size_list (only flat is decoded)",
                        name(values)
                    )));
                }
            };
            Ok(Block::List {
                dimension,
                len: n,
                item_validity,
                items: Box::new(items),
            })
        }
        C::Rle(r) => {
            let s = site.at("rle");
            let vbits = flat_width(inner(&r.values, &s, "values")?, &s, "values")?;
            let lbits = flat_width(inner(&r.run_lengths, &s, "run_lengths")?, &s, "run_lengths")?;
            match buffers {
                [values, lengths] => expand_runs(values, vbits, lengths, lbits, n, false, &s),
                _ => Err(s.invalid(format!(
                    "rle expects 2 buffers per chunk, the chunk has {}",
                    buffers.len()
                ))),
            }
        }
        C::General(g) => {
            let s = site.at("general");
            let compression = g
                .compression
                .as_ref()
                .ok_or_else(|| s.missing("compression"))?;
            let values = inner(&g.values, &s, "values")?;
            let Some((first, rest)) = buffers.split_first() else {
                return Err(
                    s.invalid("general expects at least 1 buffer per chunk, the chunk has 0")
                );
            };
            let raw = buffer_compression::decompress(compression, first, &s)?;
            let mut bufs: Vec<&[u8]> = Vec::with_capacity(buffers.len());
            bufs.push(&raw);
            bufs.extend_from_slice(rest);
            mini_block(values, &bufs, n, &s.at("values"))
        }
        C::InlineBitpacking(b) => inline_bitpacking(b, one(site)?, n, site),
        C::Fsst(f) => {
            let s = site.at("fsst");
            let compressed =
                mini_block(inner(&f.values, &s, "values")?, buffers, n, &s.at("values"))?;
            fsst_block(&f.symbol_table, compressed, &s)
        }
        C::ByteStreamSplit(b) => {
            let s = site.at("byte_stream_split");
            let bits = flat_width(inner(&b.values, &s, "values")?, &s, "values")?;
            let out =
                byte_stream_split::decode(bits, one(&s)?, n).map_err(|e| kernel_error(&s, e))?;
            Block::fixed(bits, n, &out, &s)
        }
        _ => Err(site.unsupported(format!("{} in a mini-block chunk", name(e)))),
    }
}

/// Decodes `n` values of a stream stored as one whole buffer `bytes`.
pub fn block(
    e: &pb::CompressiveEncoding,
    bytes: &[u8],
    n: usize,
    site: &Site,
) -> Result<Block, DataFileError> {
    let Some(c) = &e.compression else {
        return Err(site.unsupported(name(e)));
    };
    match c {
        C::Flat(f) => flat(f, bytes, n, &site.at("flat")),
        C::Variable(v) => {
            let s = site.at("variable");
            if v.values.is_some() {
                return Err(s.unsupported("variable with compressed bytes"));
            }
            let declared = flat_width(inner(&v.offsets, &s, "offsets")?, &s, "offsets")? as usize;
            let header = super::le_uint(bytes, 0, 4)
                .ok_or_else(|| s.oob("too short for the 4-byte offset width"))?;
            let (start, first_offset) = match header {
                32 => (super::le_uint(bytes, 4, 4), 8usize),
                64 => (super::le_uint(bytes, 8, 8), 16usize),
                other => {
                    return Err(s.invalid(format!("offset width {other} (expected 32 or 64)")));
                }
            };
            if header as usize != declared {
                return Err(s.invalid(format!(
                    "the buffer stores {header}-bit offsets but the encoding declares {declared}"
                )));
            }
            let start = start
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| s.oob("too short for the start of the bytes"))?;
            let width = declared / 8;
            let offsets_len = start
                .checked_sub(first_offset)
                .filter(|l| l % width == 0 && *l / width == n + 1)
                .ok_or_else(|| {
                    s.invalid(format!(
                        "the bytes start at {start}, which does not leave room for exactly {} offsets of {width} bytes after the {first_offset}-byte header",
                        n + 1
                    ))
                })?;
            let offsets = read_uints(bytes, first_offset, width, offsets_len / width, &s)?;
            let data = bytes.get(start..).unwrap_or_default();
            Block::variable(&offsets, data, &s)
        }
        C::Rle(r) => {
            let s = site.at("rle");
            let vbits = flat_width(inner(&r.values, &s, "values")?, &s, "values")?;
            let lbits = flat_width(inner(&r.run_lengths, &s, "run_lengths")?, &s, "run_lengths")?;
            let size = super::le_uint(bytes, 0, 8)
                .ok_or_else(|| s.oob("too short for the 8-byte size of the run values"))?;
            let values = usize::try_from(size)
                .ok()
                .and_then(|size| bytes.get(8..8usize.checked_add(size)?))
                .ok_or_else(|| {
                    s.oob(format!(
                        "{size} bytes of run values after the 8-byte header, the buffer holds {}",
                        bytes.len()
                    ))
                })?;
            let lengths = bytes.get(8 + values.len()..).unwrap_or_default();
            expand_runs(values, vbits, lengths, lbits, n, true, &s)
        }
        C::General(g) => {
            let s = site.at("general");
            let compression = g
                .compression
                .as_ref()
                .ok_or_else(|| s.missing("compression"))?;
            let values = inner(&g.values, &s, "values")?;
            let raw = buffer_compression::decompress(compression, bytes, &s)?;
            block(values, &raw, n, &s.at("values"))
        }
        C::Constant(k) => {
            let s = site.at("constant");
            let value = k.value.as_deref().ok_or_else(|| s.missing("value"))?;
            constant_block(value, n, &s)
        }
        C::InlineBitpacking(b) => inline_bitpacking(b, bytes, n, site),
        C::OutOfLineBitpacking(b) => out_of_line_bitpacking(b, bytes, n, site),
        _ => Err(site.unsupported(format!("{} as a whole-buffer stream", name(e)))),
    }
}

/// `n` copies of the little-endian `value` (1, 2, 4 or 8 bytes).
pub fn constant_block(value: &[u8], n: usize, site: &Site) -> Result<Block, DataFileError> {
    let bits = match value.len() {
        1 | 2 | 4 | 8 => value.len() as u32 * 8,
        other => {
            return Err(site.unsupported(format!("a {other}-byte constant value")));
        }
    };
    Ok(Block::Fixed {
        bits,
        len: n,
        data: value.repeat(n),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site<'static> {
        Site::new("f.lance", "enc")
    }

    fn flat_enc(bits: u64) -> pb::CompressiveEncoding {
        pb::CompressiveEncoding {
            compression: Some(C::Flat(pb::Flat {
                bits_per_value: bits,
                data: None,
            })),
        }
    }

    fn rle_enc(v: u64, l: u64) -> pb::CompressiveEncoding {
        pb::CompressiveEncoding {
            compression: Some(C::Rle(Box::new(pb::Rle {
                values: Some(Box::new(flat_enc(v))),
                run_lengths: Some(Box::new(flat_enc(l))),
            }))),
        }
    }

    fn variable_enc(w: u64) -> pb::CompressiveEncoding {
        pb::CompressiveEncoding {
            compression: Some(C::Variable(Box::new(pb::Variable {
                offsets: Some(Box::new(flat_enc(w))),
                values: None,
            }))),
        }
    }

    #[test]
    fn rle_block_matches_lance_def_levels() {
        // From a Lance 14.0.2 v2.2 file: levels 0,0,0,1,0,0,0,0,0,0.
        let bytes = [6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 1, 6];
        let b = block(&rle_enc(16, 8), &bytes, 10, &site()).unwrap();
        assert_eq!(
            b.unsigned_values(&site()).unwrap(),
            [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn rle_block_runs_that_lie_about_the_count_are_refused() {
        let bytes = [6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 1, 5];
        let e = block(&rle_enc(16, 8), &bytes, 10, &site()).unwrap_err();
        assert!(matches!(e, DataFileError::InvalidPageData { .. }), "{e}");
        let long = [6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 1, 9];
        assert!(block(&rle_enc(16, 8), &long, 10, &site()).is_err());
    }

    #[test]
    fn rle_block_values_size_past_the_buffer_is_out_of_bounds() {
        let bytes = [200, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(matches!(
            block(&rle_enc(16, 8), &bytes, 1, &site()),
            Err(DataFileError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn variable_mini_block_offsets_are_positions_in_the_chunk_buffer() {
        // 2 values "ab", "c": offsets 12, 14, 15 then the bytes.
        let mut buf = Vec::new();
        for o in [12u32, 14, 15] {
            buf.extend_from_slice(&o.to_le_bytes());
        }
        buf.extend_from_slice(b"abc");
        let b = mini_block(&variable_enc(32), &[&buf], 2, &site()).unwrap();
        assert_eq!(
            b,
            Block::Variable {
                offsets: vec![0, 2, 3],
                data: b"abc".to_vec()
            }
        );
        let mut bad = buf.clone();
        bad[4] = 20; // the second offset past the third
        assert!(matches!(
            mini_block(&variable_enc(32), &[&bad], 2, &site()),
            Err(DataFileError::InvalidPageData { .. })
        ));
        bad[4] = 14;
        bad[8] = 99; // past the buffer
        assert!(matches!(
            mini_block(&variable_enc(32), &[&bad], 2, &site()),
            Err(DataFileError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn variable_block_header_is_checked() {
        let mut buf = 32u32.to_le_bytes().to_vec();
        buf.extend_from_slice(&20u32.to_le_bytes());
        for o in [0u32, 1, 3] {
            buf.extend_from_slice(&o.to_le_bytes());
        }
        buf.extend_from_slice(b"xyz");
        let b = block(&variable_enc(32), &buf, 2, &site()).unwrap();
        assert_eq!(
            b,
            Block::Variable {
                offsets: vec![0, 1, 3],
                data: b"xyz".to_vec()
            }
        );
        // Three values do not fit the offsets the header leaves room for.
        assert!(matches!(
            block(&variable_enc(32), &buf, 3, &site()),
            Err(DataFileError::InvalidPageData { .. })
        ));
        let mut wide = buf.clone();
        wide[0] = 16;
        assert!(block(&variable_enc(32), &wide, 2, &site()).is_err());
    }

    #[test]
    fn flat_short_buffer_is_out_of_bounds() {
        assert!(matches!(
            mini_block(&flat_enc(32), &[&[1, 2, 3]], 1, &site()),
            Err(DataFileError::OutOfBounds { .. })
        ));
        assert!(matches!(
            mini_block(&flat_enc(12), &[&[1, 2, 3]], 1, &site()),
            Err(DataFileError::UnsupportedEncoding { .. })
        ));
    }

    #[test]
    fn unknown_and_kernel_encodings_are_refused_by_name() {
        let empty = pb::CompressiveEncoding { compression: None };
        let e = mini_block(&empty, &[], 1, &site()).unwrap_err();
        assert!(
            e.to_string()
                .contains("empty or unknown CompressiveEncoding")
        );
        let packed = pb::CompressiveEncoding {
            compression: Some(C::PackedStruct(Box::default())),
        };
        let e = mini_block(&packed, &[], 1, &site()).unwrap_err();
        assert!(e.to_string().contains("packed_struct"), "{e}");
    }

    #[test]
    fn constant_block_repeats_the_value() {
        let b = constant_block(&42i64.to_le_bytes(), 3, &site()).unwrap();
        assert_eq!(b.unsigned_values(&site()).unwrap(), [42, 42, 42]);
        assert!(constant_block(&[1, 2, 3], 3, &site()).is_err());
    }
}
