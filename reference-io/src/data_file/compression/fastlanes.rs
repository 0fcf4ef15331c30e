//! FastLanes bit unpacking: `InlineBitpacking` and `OutOfLineBitpacking`.
//!
//! Invariant: a block is unpacked only after the bytes it needs are known to be there, and the
//! output (`num_values` × the uncompressed width in bytes) is allocated only after the whole
//! input has been checked against the value count; nothing here panics on any input.
//!
//! Learned from Lance 14.0.2: the kernels in `rust/compression/bitpacking/src/lib.rs`
//! (crate `lance-bitpacking`, a fork of the `fastlanes` crate) and the two encodings in
//! `rust/lance-encoding/src/encodings/physical/bitpacking.rs`.
//!
//! # A packed block
//!
//! Values of `T` bits (`T` ∈ {8, 16, 32, 64}) are packed 1024 at a time with a width of `W`
//! bits (0 ≤ `W` ≤ `T`). A packed block is `1024 × W / T` words of `T` bits, little-endian,
//! that is `128 × W` bytes whatever `T` is (`W` = 0 takes no bytes).
//!
//! The 1024 values are spread over `L = 1024 / T` lanes (128, 64, 32 or 16) of `T` rows each.
//! Word `k` of lane `l` is word `k × L + l` of the block, so the words of one "row of words"
//! are contiguous. Each lane is a little-endian bit stream of its `W` words: the value of row
//! `r` (0 ≤ `r` < `T`) takes the `W` bits starting at bit `r × W` of that stream, low bits
//! first, crossing into the next word of the same lane when it does not fit.
//!
//! The value at row `r`, lane `l` is value number
//!
//! ```text
//! FL_ORDER[r / 8] × 16 + (r mod 8) × 128 + l        FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]
//! ```
//!
//! of the block (the FastLanes transposition; for `T` = 8 only `FL_ORDER[0]` is used, for `T` =
//! 16 the first two entries, for 32 the first four). Packing keeps the low `W` bits of each
//! value, so unpacking yields values below `2^W`.
//!
//! # `InlineBitpacking` (mini-block values)
//!
//! The values of one mini-block chunk are one buffer: for each block of 1024 values, a header
//! word of `T` bits (little-endian) holding `W`, then the `128 × W` bytes of the packed block.
//! The writer packs a last partial block as a full block, padded with zero values, so every
//! block has its header and all of its words; the buffer's length is exactly the sum. Lance's
//! writer puts one block in each chunk (chunks hold at most 1024 values); [`unpack_inline`]
//! also reads several in a row. A chunk of zero values decodes to nothing whatever its bytes
//! (Lance does not read them).
//!
//! # `OutOfLineBitpacking` (block-compressed buffers, such as definition levels)
//!
//! One width `W` for the whole buffer, named by the encoding (its `values` is `Flat{W}`). The
//! buffer is the packed blocks of the `n / 1024` full blocks, back to back, then the last
//! `n mod 1024` values, if any, in one of two forms that the writer chooses by size:
//!
//! - **raw**: the values themselves, `T` bits each, little-endian (`(n mod 1024) × T / 8` bytes);
//! - **padded**: one more packed block (`128 × W` bytes) whose values past `n` are padding.
//!
//! The reader tells them apart by the buffer length; when both forms have the same length, the
//! tail is raw (as Lance 14.0.2 reads it). Any other length is refused.

use super::{KernelError, Word};

/// Values in one packed block.
pub const BLOCK_VALUES: usize = 1024;

/// The FastLanes transposition of rows: row `r` of a lane holds value
/// `FL_ORDER[r / 8] × 16 + (r mod 8) × 128 + lane` of the block.
pub const FL_ORDER: [usize; 8] = [0, 4, 2, 6, 1, 5, 3, 7];

const INLINE: &str = "inline bit-packing";
const OUT_OF_LINE: &str = "out-of-line bit-packing";

/// Bytes of one packed block of `width`-bit values: `1024 × width / 8`.
pub const fn packed_block_len(width: usize) -> usize {
    BLOCK_VALUES / 8 * width
}

/// Unpacks an `InlineBitpacking` buffer (the values buffer of one mini-block chunk, exactly as
/// long as the chunk header says) into `num_values` little-endian values of
/// `uncompressed_bits` bits. See the module documentation for the layout.
pub fn unpack_inline(
    uncompressed_bits: u32,
    bytes: &[u8],
    num_values: usize,
) -> Result<Vec<u8>, KernelError> {
    match uncompressed_bits {
        8 => inline::<u8>(bytes, num_values),
        16 => inline::<u16>(bytes, num_values),
        32 => inline::<u32>(bytes, num_values),
        64 => inline::<u64>(bytes, num_values),
        bits => Err(unsupported(INLINE, bits)),
    }
}

/// Unpacks an `OutOfLineBitpacking` buffer of `num_values` values of `uncompressed_bits` bits
/// packed with `compressed_bits` bits each, into little-endian values of `uncompressed_bits`
/// bits. See the module documentation for the layout and its two forms of the last block.
pub fn unpack_out_of_line(
    uncompressed_bits: u32,
    compressed_bits: u32,
    bytes: &[u8],
    num_values: usize,
) -> Result<Vec<u8>, KernelError> {
    match uncompressed_bits {
        8 => out_of_line::<u8>(compressed_bits, bytes, num_values),
        16 => out_of_line::<u16>(compressed_bits, bytes, num_values),
        32 => out_of_line::<u32>(compressed_bits, bytes, num_values),
        64 => out_of_line::<u64>(compressed_bits, bytes, num_values),
        bits => Err(unsupported(OUT_OF_LINE, bits)),
    }
}

fn unsupported(kernel: &'static str, bits: u32) -> KernelError {
    KernelError::UnsupportedWidth {
        kernel,
        bits,
        expected: "8, 16, 32 or 64",
    }
}

fn output_len<W: Word>(kernel: &'static str, num_values: usize) -> Result<usize, KernelError> {
    num_values
        .checked_mul(W::BYTES)
        .ok_or(KernelError::OutputTooLarge {
            kernel,
            num_values,
            bits: W::BITS as u32,
        })
}

fn inline<W: Word>(bytes: &[u8], num_values: usize) -> Result<Vec<u8>, KernelError> {
    if num_values == 0 {
        return Ok(Vec::new());
    }
    // First pass: walk the block headers, so that the whole buffer is known to back
    // `num_values` before anything is allocated. Each block consumes at least one header word,
    // so this loop ends within `bytes.len() / W::BYTES` steps whatever `num_values` claims.
    let num_blocks = num_values.div_ceil(BLOCK_VALUES);
    let mut pos = 0usize;
    for block in 0..num_blocks {
        let width = read_header::<W>(bytes, pos, block)?;
        let end = pos + W::BYTES + packed_block_len(width);
        if end > bytes.len() {
            return Err(KernelError::Truncated {
                kernel: INLINE,
                structure: format!("packed data of block {block} ({width} bits per value)"),
                start: pos + W::BYTES,
                end,
                len: bytes.len(),
            });
        }
        pos = end;
    }
    if pos != bytes.len() {
        return Err(KernelError::TrailingBytes {
            kernel: INLINE,
            num_values,
            consumed: pos,
            len: bytes.len(),
        });
    }

    let mut out = vec![0u8; output_len::<W>(INLINE, num_values)?];
    let mut scratch = Scratch::<W>::new();
    let mut pos = 0usize;
    for (block, out_block) in out.chunks_mut(BLOCK_VALUES * W::BYTES).enumerate() {
        let width = read_header::<W>(bytes, pos, block)?;
        let start = pos + W::BYTES;
        pos = start + packed_block_len(width);
        scratch.unpack(width, &bytes[start..pos]);
        scratch.write(out_block);
    }
    Ok(out)
}

/// The width in the header word of `block` at `pos`, checked against `W::BITS`.
fn read_header<W: Word>(bytes: &[u8], pos: usize, block: usize) -> Result<usize, KernelError> {
    let Some(header) = bytes.get(pos..pos + W::BYTES) else {
        return Err(KernelError::Truncated {
            kernel: INLINE,
            structure: format!("bit width word of block {block}"),
            start: pos,
            end: pos + W::BYTES,
            len: bytes.len(),
        });
    };
    let width = W::from_le(header).to_u64();
    if width > W::BITS as u64 {
        return Err(KernelError::CompressedWidthTooLarge {
            kernel: INLINE,
            block,
            compressed_bits: width,
            uncompressed_bits: W::BITS as u32,
        });
    }
    // At most 64, so the cast is lossless.
    Ok(width as usize)
}

fn out_of_line<W: Word>(
    compressed_bits: u32,
    bytes: &[u8],
    num_values: usize,
) -> Result<Vec<u8>, KernelError> {
    if compressed_bits as usize > W::BITS {
        return Err(KernelError::CompressedWidthTooLarge {
            kernel: OUT_OF_LINE,
            block: 0,
            compressed_bits: u64::from(compressed_bits),
            uncompressed_bits: W::BITS as u32,
        });
    }
    let width = compressed_bits as usize;
    let block_len = packed_block_len(width);
    let full_blocks = num_values / BLOCK_VALUES;
    let tail = num_values % BLOCK_VALUES;
    // Exact in u128: at most 2^64 × 2^13.
    let full_len = full_blocks as u128 * block_len as u128;
    let raw_len = full_len + (tail * W::BYTES) as u128;
    let padded_len = full_len + if tail > 0 { block_len as u128 } else { 0 };
    let len = bytes.len() as u128;
    let raw_tail = if tail > 0 && len == raw_len {
        true
    } else if len == padded_len {
        false
    } else {
        return Err(KernelError::OutOfLineLength {
            num_values,
            uncompressed_bits: W::BITS as u32,
            compressed_bits,
            raw_tail: raw_len,
            padded_tail: padded_len,
            len: bytes.len(),
        });
    };

    let mut out = vec![0u8; output_len::<W>(OUT_OF_LINE, num_values)?];
    let (out_full, out_tail) = out.split_at_mut(full_blocks * BLOCK_VALUES * W::BYTES);
    // `len` equals one of the lengths above, so every slice below is inside `bytes`.
    let full_end = full_blocks * block_len;
    let mut scratch = Scratch::<W>::new();
    if width == 0 {
        // Every value is zero, and `out` is zero already; only a raw tail carries bytes.
    } else {
        for (packed, out_block) in bytes[..full_end]
            .chunks_exact(block_len)
            .zip(out_full.chunks_exact_mut(BLOCK_VALUES * W::BYTES))
        {
            scratch.unpack(width, packed);
            scratch.write(out_block);
        }
    }
    if tail > 0 {
        if raw_tail {
            out_tail.copy_from_slice(&bytes[full_end..]);
        } else if width > 0 {
            scratch.unpack(width, &bytes[full_end..]);
            scratch.write(out_tail);
        }
    }
    Ok(out)
}

/// One block's packed words and unpacked values, reused from block to block.
struct Scratch<W: Word> {
    packed: Vec<W>,
    values: Vec<W>,
}

impl<W: Word> Scratch<W> {
    fn new() -> Self {
        Scratch {
            packed: Vec::with_capacity(BLOCK_VALUES),
            values: vec![W::default(); BLOCK_VALUES],
        }
    }

    /// Unpacks one block of `width`-bit values from exactly `packed_block_len(width)` bytes.
    fn unpack(&mut self, width: usize, bytes: &[u8]) {
        self.packed.clear();
        self.packed
            .extend(bytes.chunks_exact(W::BYTES).map(W::from_le));
        unpack_block(width, &self.packed, &mut self.values);
    }

    /// Writes the first `out.len() / W::BYTES` values (at most one block) little-endian.
    fn write(&self, out: &mut [u8]) {
        for (dst, value) in out.chunks_exact_mut(W::BYTES).zip(&self.values) {
            value.write_le(dst);
        }
    }
}

/// Unpacks one block: `packed` holds `width × lanes` words, `values` receives 1024 values.
///
/// The loop runs over the `T` rows; within a row every lane does the same shifts, so the inner
/// loop is one straight-line pass over `lanes` contiguous words (which the compiler vectorises),
/// with no per-value or per-bit branching.
fn unpack_block<W: Word>(width: usize, packed: &[W], values: &mut [W]) {
    let lanes = BLOCK_VALUES / W::BITS;
    if width == 0 || packed.len() != width * lanes || values.len() != BLOCK_VALUES {
        // Width 0 packs nothing: every value is zero. (The lengths are guaranteed by the
        // callers; a mismatch would be a bug here, and zeros are returned instead of a panic.)
        values.fill(W::default());
        return;
    }
    let mask = if width == W::BITS {
        W::MAX
    } else {
        W::low_mask(width)
    };
    for row in 0..W::BITS {
        let first_bit = row * width;
        let word = first_bit / W::BITS;
        let shift = first_bit % W::BITS;
        let base = FL_ORDER[row / 8] * 16 + (row % 8) * 128;
        let dst = &mut values[base..base + lanes];
        let low = &packed[word * lanes..(word + 1) * lanes];
        if shift + width > W::BITS {
            // The value straddles two words of its lane (so `shift` > 0 and `word + 1` <
            // `width`): its high bits start the next word.
            let high = &packed[(word + 1) * lanes..(word + 2) * lanes];
            let back = W::BITS - shift;
            for ((d, &lo), &hi) in dst.iter_mut().zip(low).zip(high) {
                *d = ((lo >> shift) | (hi << back)) & mask;
            }
        } else {
            for (d, &lo) in dst.iter_mut().zip(low) {
                *d = (lo >> shift) & mask;
            }
        }
    }
}
