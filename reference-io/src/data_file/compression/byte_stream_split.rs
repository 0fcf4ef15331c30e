//! Byte-stream-split reassembly: the `ByteStreamSplit` encoding.
//!
//! Invariant: the buffer is exactly one byte per value per byte position, checked before the
//! output (of the same length) is allocated; nothing here panics on any input.
//!
//! Learned from Lance 14.0.2: `rust/lance-encoding/src/encodings/physical/byte_stream_split.rs`.
//!
//! # Layout
//!
//! `n` values of `k` bytes (`k` = bits / 8) are stored as `k` streams of `n` bytes, one after
//! the other: stream `j` holds byte `j` (little-endian) of every value, in value order. So byte
//! `j` of value `i` is byte `j × n + i` of the buffer, and the buffer is `k × n` bytes long.
//!
//! In Lance 14.0.2 the encoding is a mini-block value compression (its child is `Flat{bits}`):
//! each chunk's values buffer holds that chunk's streams, with `n` the chunk's value count
//! (at most 1024 values of 32 bits or 512 of 64 bits). Lance writes it only for 32- and 64-bit
//! values, and only when asked (the `lance-encoding:bss` field metadata together with a general
//! compression), usually wrapped in `General{zstd}`: the general decompression comes first, and
//! its output is the buffer described here. This kernel also reassembles 8- and 16-bit values,
//! which Lance does not write (its decoder refuses them); a caller matching Lance refuses them.

use super::KernelError;

/// Reassembles `num_values` values of `bits` bits (8, 16, 32 or 64) from their byte streams
/// into little-endian values, one after the other.
pub fn decode(bits: u32, bytes: &[u8], num_values: usize) -> Result<Vec<u8>, KernelError> {
    match bits {
        8 => split::<1>(bytes, num_values),
        16 => split::<2>(bytes, num_values),
        32 => split::<4>(bytes, num_values),
        64 => split::<8>(bytes, num_values),
        bits => Err(KernelError::UnsupportedWidth {
            kernel: "byte-stream-split",
            bits,
            expected: "8, 16, 32 or 64",
        }),
    }
}

fn split<const K: usize>(bytes: &[u8], num_values: usize) -> Result<Vec<u8>, KernelError> {
    let expected = num_values as u128 * K as u128;
    if bytes.len() as u128 != expected {
        return Err(KernelError::ByteStreamSplitLength {
            num_values,
            bits: (K * 8) as u32,
            expected,
            len: bytes.len(),
        });
    }
    let mut out = vec![0u8; bytes.len()];
    if num_values == 0 {
        return Ok(out);
    }
    // `bytes.len()` is exactly `K × num_values`, so there are exactly K streams.
    let mut streams = [&bytes[..0]; K];
    for (stream, chunk) in streams.iter_mut().zip(bytes.chunks_exact(num_values)) {
        *stream = chunk;
    }
    for (i, value) in out.chunks_exact_mut(K).enumerate() {
        for (byte, stream) in value.iter_mut().zip(&streams) {
            *byte = stream[i];
        }
    }
    Ok(out)
}
