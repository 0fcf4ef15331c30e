//! The byte-level decompression kernels of Lance data files 2.1 and 2.2: FastLanes bit
//! unpacking, FSST string decompression and byte-stream-split reassembly.
//!
//! Invariant: each kernel is a pure function from a buffer's bytes (and the widths and counts
//! its encoding names) to the little-endian bytes of the uncompressed values. It never panics
//! and never allocates for a count that its input bytes do not back: every claimed length is
//! checked against the bytes given before the output is allocated, and the output is bounded by
//! the value count the caller passes (which the caller has itself bounded). Malformed input gets
//! a [`KernelError`] that says what was wrong with the numbers expected and found; it names no
//! file, column or page, which the caller adds.
//!
//! | module | encoding (`encodings_v2_1.proto`) | learned from (Lance 14.0.2) |
//! |---|---|---|
//! | [`fastlanes`] | `InlineBitpacking`, `OutOfLineBitpacking` | `lance-bitpacking/src/lib.rs`, `lance-encoding/src/encodings/physical/bitpacking.rs` |
//! | [`fsst`] | `Fsst` | `fsst/src/fsst.rs`, `lance-encoding/src/encodings/physical/fsst.rs` |
//! | [`byte_stream_split`] | `ByteStreamSplit` | `lance-encoding/src/encodings/physical/byte_stream_split.rs` |

pub mod byte_stream_split;
pub mod fastlanes;
pub mod fsst;

#[cfg(test)]
mod tests;

/// What is wrong with the bytes handed to a kernel. The caller wraps it with the file, column
/// and page it was decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// The uncompressed width is not one the kernel decodes.
    #[error("{kernel}: uncompressed width of {bits} bits is not supported (expected {expected})")]
    UnsupportedWidth {
        /// The kernel (`inline bit-packing`, `byte-stream-split`, ...).
        kernel: &'static str,
        /// The width found.
        bits: u32,
        /// The widths the kernel decodes.
        expected: &'static str,
    },
    /// A bit-packing width is larger than the width of the values it packs.
    #[error(
        "{kernel}: block {block} is packed with {compressed_bits} bits per value, more than the \
         {uncompressed_bits}-bit values it holds"
    )]
    CompressedWidthTooLarge {
        /// The kernel.
        kernel: &'static str,
        /// The block (of 1024 values) that names the width; 0 for a width out of line.
        block: usize,
        /// The packed width found.
        compressed_bits: u64,
        /// The uncompressed width.
        uncompressed_bits: u32,
    },
    /// The bytes end before a structure they must hold.
    #[error("{kernel}: {structure} needs bytes {start}..{end}, but the buffer has {len} bytes")]
    Truncated {
        /// The kernel.
        kernel: &'static str,
        /// What was being read (`bit width of block 3`, `packed data of block 3`).
        structure: String,
        /// First byte needed.
        start: usize,
        /// One past the last byte needed.
        end: usize,
        /// Bytes available.
        len: usize,
    },
    /// Bytes are left over after every value has been decoded.
    #[error("{kernel}: {num_values} values end at byte {consumed}, but the buffer has {len} bytes")]
    TrailingBytes {
        /// The kernel.
        kernel: &'static str,
        /// The value count decoded.
        num_values: usize,
        /// Bytes the values took.
        consumed: usize,
        /// Bytes given.
        len: usize,
    },
    /// An out-of-line bit-packed buffer has neither of the two lengths its values allow.
    #[error(
        "out-of-line bit-packing: {num_values} values of {uncompressed_bits} bits packed with \
         {compressed_bits} bits take {raw_tail} bytes (last partial block raw) or {padded_tail} \
         bytes (last partial block packed), but the buffer has {len} bytes"
    )]
    OutOfLineLength {
        /// The value count.
        num_values: usize,
        /// The uncompressed width.
        uncompressed_bits: u32,
        /// The packed width.
        compressed_bits: u32,
        /// Expected length when the last partial block is stored raw.
        raw_tail: u128,
        /// Expected length when the last partial block is padded and packed.
        padded_tail: u128,
        /// Bytes given.
        len: usize,
    },
    /// A byte-stream-split buffer does not hold exactly one byte per value per stream.
    #[error(
        "byte-stream-split: {num_values} values of {bits} bits take {expected} bytes, but the \
         buffer has {len} bytes"
    )]
    ByteStreamSplitLength {
        /// The value count.
        num_values: usize,
        /// The value width.
        bits: u32,
        /// Bytes expected.
        expected: u128,
        /// Bytes given.
        len: usize,
    },
    /// The decoded values would not fit in memory addresses at all.
    #[error("{kernel}: {num_values} values of {bits} bits overflow the address space")]
    OutputTooLarge {
        /// The kernel.
        kernel: &'static str,
        /// The value count.
        num_values: usize,
        /// The value width.
        bits: u32,
    },
    /// An FSST symbol table is not 2312 bytes long.
    #[error("FSST: symbol table has {len} bytes, expected {expected}")]
    FsstSymbolTableLength {
        /// Bytes given.
        len: usize,
        /// The fixed size, [`fsst::SYMBOL_TABLE_LEN`].
        expected: usize,
    },
    /// Bytes 4..8 of an FSST symbol table header are not `TSSF` (the magic `FSST` as a
    /// little-endian u32).
    #[error("FSST: symbol table magic is {found:02x?}, expected {expected:02x?} (\"FSST\")")]
    FsstBadMagic {
        /// The four bytes found.
        found: [u8; 4],
        /// The four bytes expected.
        expected: [u8; 4],
    },
    /// An FSST symbol's length is outside 1..=8.
    #[error("FSST: symbol {code} has length {len}, expected 1..=8")]
    FsstSymbolLength {
        /// The symbol's code.
        code: u8,
        /// The length found.
        len: u8,
    },
    /// FSST was handed no offsets (a string array of n values has n + 1).
    #[error("FSST: no offsets given (n values need n + 1 offsets)")]
    FsstNoOffsets,
    /// An FSST offset is smaller than the one before it.
    #[error("FSST: offset {index} is {offset}, smaller than offset {previous_index} = {previous}")]
    FsstOffsetDecreases {
        /// Position of the offset.
        index: usize,
        /// Its value.
        offset: u64,
        /// Position of the previous offset.
        previous_index: usize,
        /// The previous value.
        previous: u64,
    },
    /// An FSST offset points past the compressed bytes.
    #[error("FSST: offset {index} is {offset}, past the {len} compressed bytes")]
    FsstOffsetOutOfBounds {
        /// Position of the offset.
        index: usize,
        /// Its value.
        offset: u64,
        /// Compressed bytes given.
        len: usize,
    },
    /// An FSST code names no symbol of the table (and is not the escape code 255).
    #[error(
        "FSST: value {value} has code {code} at byte {position}, but the symbol table has only \
         {num_symbols} symbols (codes 0..{num_symbols}; 255 escapes)"
    )]
    FsstUnknownCode {
        /// The value (string) being decoded.
        value: usize,
        /// Position of the code in the compressed bytes.
        position: usize,
        /// The code.
        code: u8,
        /// Symbols in the table.
        num_symbols: usize,
    },
    /// An FSST escape code is the last byte of a value, so its literal byte is missing.
    #[error("FSST: value {value} ends with an escape code at byte {position} and no literal byte")]
    FsstDanglingEscape {
        /// The value being decoded.
        value: usize,
        /// Position of the escape code.
        position: usize,
    },
}

/// An unsigned value width that a kernel decodes: 8, 16, 32 or 64 bits. The kernels are
/// generic over it so that each width compiles to its own straight-line loops.
pub(crate) trait Word:
    Copy
    + Default
    + Eq
    + std::fmt::Debug
    + std::ops::Shr<usize, Output = Self>
    + std::ops::Shl<usize, Output = Self>
    + std::ops::BitAnd<Output = Self>
    + std::ops::BitOr<Output = Self>
{
    /// Bits of the word.
    const BITS: usize;
    /// Bytes of the word.
    const BYTES: usize = Self::BITS / 8;
    /// All bits set.
    const MAX: Self;
    /// The word from exactly [`Word::BYTES`] little-endian bytes (the caller slices exactly).
    fn from_le(bytes: &[u8]) -> Self;
    /// Writes the word's little-endian bytes into exactly [`Word::BYTES`] bytes.
    fn write_le(self, out: &mut [u8]);
    /// The word widened to 64 bits.
    fn to_u64(self) -> u64;
    /// The low `bits` bits set (`bits` < [`Word::BITS`]).
    fn low_mask(bits: usize) -> Self;
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            const BITS: usize = <$t>::BITS as usize;
            const MAX: Self = <$t>::MAX;
            #[inline(always)]
            fn from_le(bytes: &[u8]) -> Self {
                let mut word = [0u8; Self::BYTES];
                word.copy_from_slice(bytes);
                <$t>::from_le_bytes(word)
            }
            #[inline(always)]
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn to_u64(self) -> u64 {
                u64::from(self)
            }
            #[inline(always)]
            fn low_mask(bits: usize) -> Self {
                (1 << bits) - 1
            }
        }
    };
}
word!(u8);
word!(u16);
word!(u32);
word!(u64);
