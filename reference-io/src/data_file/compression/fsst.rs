//! FSST string decompression: the `Fsst` encoding.
//!
//! Invariant: the symbol table and the offsets are checked before anything is decoded, and
//! every code is checked as it is decoded (one pass). The output grows only as far as the codes
//! read so far can fill it (at most 8 bytes per compressed byte, plus 8 bytes of slack), never
//! from a stored length; nothing here panics on any input.
//!
//! Learned from Lance 14.0.2: `rust/compression/fsst/src/fsst.rs` (crate `fsst`: the symbol
//! table's export and the decoder) and `rust/lance-encoding/src/encodings/physical/fsst.rs`
//! (how the encoding wraps it).
//!
//! # Where the bytes are
//!
//! A page encoded `Fsst{symbol_table, values}` carries its symbol table in the encoding itself
//! (the `symbol_table` bytes). The strings are compressed one by one with that table, and the
//! compressed strings are then stored as `values` says (a `Variable` mini-block, in each chunk
//! `n + 1` offsets and the bytes they delimit). [`decompress`] takes the table, one chunk's
//! offsets and the bytes they index, and returns the decoded strings as offsets from 0 and their
//! bytes.
//!
//! # The symbol table (2312 bytes)
//!
//! | bytes | meaning |
//! |---|---|
//! | 0 | `n`: the number of symbols, 0..=255 |
//! | 1, 2 | the encoder's terminator and suffix limit (not needed to decode) |
//! | 3 | bit 0: 1 when the strings are compressed; 0 when the writer kept them as they were (it does when the page has less than 32 KiB of string data) |
//! | 4..8 | the magic `TSSF` (`FSST` as a little-endian u32: the header is one little-endian u64 whose high half is `0x46535354`) |
//! | 8..8 + 8n | symbol `c` (0 ≤ `c` < `n`) in the 8 bytes at `8 + 8c`, first byte first; only its first `len(c)` bytes count |
//! | 8 + 8n..8 + 9n | `len(c)`, one byte per symbol, each 1..=8 |
//! | the rest | unused (zero as Lance writes it) |
//!
//! The lengths follow the `n` symbols directly; the table is sized for 256 symbols of 8 bytes
//! and 256 lengths, so its tail is unused when `n` < 256.
//!
//! # A compressed string
//!
//! A sequence of one-byte codes: a code `c` < `n` stands for symbol `c`'s bytes; the code 255 is
//! an escape, and the byte after it is copied as it is. An escape and its byte belong to the
//! same string (Lance refuses an escape at the end of a string). When byte 3's bit 0 is clear,
//! the strings are not compressed and are their bytes as they are.
//!
//! # Where this reader is stricter than Lance 14.0.2
//!
//! Lance checks the magic with a mask (`header & magic == magic`); this reader wants the exact
//! four bytes. Lance decodes a code that names no symbol (`n` ≤ `c` < 255) as zero bytes; this
//! reader refuses it ([`KernelError::FsstUnknownCode`]). No writer produces either.

use super::KernelError;

/// The size of an FSST symbol table: an 8-byte header, room for 256 symbols of 8 bytes, and 256
/// lengths.
pub const SYMBOL_TABLE_LEN: usize = 8 + 256 * 8 + 256;

/// Bytes 4..8 of the header: `FSST` as a little-endian u32.
pub const MAGIC: [u8; 4] = *b"TSSF";

/// The escape code: the next byte is a literal.
pub const ESCAPE: u8 = 255;

/// The longest symbol.
pub const MAX_SYMBOL_LEN: usize = 8;

/// Decompresses the strings that `offsets` delimit in `compressed` (string `i` is
/// `compressed[offsets[i]..offsets[i + 1]]`) with the FSST `symbol_table`. Returns `n + 1`
/// offsets starting at 0 and the decoded bytes they delimit. See the module documentation for
/// the layouts.
pub fn decompress(
    symbol_table: &[u8],
    offsets: &[u64],
    compressed: &[u8],
) -> Result<(Vec<u64>, Vec<u8>), KernelError> {
    let table = SymbolTable::parse(symbol_table)?;
    let mut out_offsets = Vec::with_capacity(offsets.len());
    out_offsets.push(0u64);
    let mut out = Vec::new();
    decompress_onto(
        table.as_ref(),
        offsets,
        compressed,
        &mut out_offsets,
        &mut out,
    )?;
    Ok((out_offsets, out))
}

/// [`decompress`] with a parsed table (`None`: stored uncompressed), appending the decoded
/// strings to `out` and one end offset per string to `out_offsets` (which hold the strings
/// decoded before; its last entry is `out.len()`). On an error, `out` and `out_offsets` may
/// hold part of the strings.
pub fn decompress_onto(
    table: Option<&SymbolTable>,
    offsets: &[u64],
    compressed: &[u8],
    out_offsets: &mut Vec<u64>,
    out: &mut Vec<u8>,
) -> Result<(), KernelError> {
    let Some((&first, _)) = offsets.split_first() else {
        return Err(KernelError::FsstNoOffsets);
    };
    check_offsets(offsets, compressed.len())?;
    // `check_offsets` proved every offset ≤ `compressed.len()`, so these casts are lossless.
    let start = first as usize;
    let end = offsets.last().map_or(start, |&o| o as usize);
    let base = out.len();
    let Some(table) = table else {
        // Stored as they were: the bytes themselves.
        out_offsets.extend(offsets.iter().skip(1).map(|&o| (o - first) + base as u64));
        out.extend_from_slice(&compressed[start..end]);
        return Ok(());
    };

    // One pass over the codes. Every symbol is written as a whole 8-byte word and the position
    // advances by its length, so the buffer keeps 8 bytes of slack past the decoded bytes; it
    // grows before each string to what that string's codes could at most decode to, and is cut
    // to the decoded length at the end.
    out_offsets.reserve(offsets.len().saturating_sub(1));
    let mut at = base;
    let first_guess = base + (end - start).saturating_mul(3) + MAX_SYMBOL_LEN;
    if out.len() < first_guess {
        out.resize(first_guess, 0);
    }
    let most = base + MAX_SYMBOL_LEN * (end - start) + MAX_SYMBOL_LEN;
    for (value, pair) in offsets.windows(2).enumerate() {
        let (from, to) = (pair[0] as usize, pair[1] as usize);
        let codes = &compressed[from..to];
        // At most 8 bytes per code (`codes.len()` ≤ the compressed length), so this is bounded
        // by the input's size.
        let room = at + MAX_SYMBOL_LEN * codes.len() + MAX_SYMBOL_LEN;
        if out.len() < room {
            out.resize(room.max(out.len().saturating_mul(2).min(most)), 0);
        }
        at = table.decode_into(value, codes, from, out, at)?;
        out_offsets.push(at as u64);
    }
    out.truncate(at);
    Ok(())
}

/// A parsed symbol table: for each code, its 8 symbol bytes and its length (0 for codes that
/// name no symbol, and for the escape code).
pub struct SymbolTable {
    symbols: [[u8; 8]; 256],
    lens: [u8; 256],
    num_symbols: usize,
}

impl SymbolTable {
    /// The table, or `None` when the strings are stored uncompressed.
    pub fn parse(bytes: &[u8]) -> Result<Option<Self>, KernelError> {
        if bytes.len() != SYMBOL_TABLE_LEN {
            return Err(KernelError::FsstSymbolTableLength {
                len: bytes.len(),
                expected: SYMBOL_TABLE_LEN,
            });
        }
        let found = [bytes[4], bytes[5], bytes[6], bytes[7]];
        if found != MAGIC {
            return Err(KernelError::FsstBadMagic {
                found,
                expected: MAGIC,
            });
        }
        if bytes[3] & 1 == 0 {
            return Ok(None);
        }
        let num_symbols = usize::from(bytes[0]);
        let mut table = SymbolTable {
            symbols: [[0; 8]; 256],
            lens: [0; 256],
            num_symbols,
        };
        let lens_at = 8 + 8 * num_symbols;
        for code in 0..num_symbols {
            let at = 8 + 8 * code;
            table.symbols[code].copy_from_slice(&bytes[at..at + 8]);
            let len = bytes[lens_at + code];
            if !(1..=MAX_SYMBOL_LEN as u8).contains(&len) {
                return Err(KernelError::FsstSymbolLength {
                    code: code as u8,
                    len,
                });
            }
            table.lens[code] = len;
        }
        Ok(Some(table))
    }

    /// Decodes string `value`, whose codes are `codes` starting at byte `from` of the
    /// compressed bytes, into `out` at `at`; returns the position after its last byte. `out`
    /// must hold `at + 8 * codes.len() + 8` bytes. Refuses unknown codes and an escape without
    /// its literal.
    fn decode_into(
        &self,
        value: usize,
        codes: &[u8],
        from: usize,
        out: &mut [u8],
        mut at: usize,
    ) -> Result<usize, KernelError> {
        let mut i = 0usize;
        while let Some(&code) = codes.get(i) {
            let c = usize::from(code);
            let symbol_len = self.lens[c];
            if symbol_len != 0 {
                out[at..at + MAX_SYMBOL_LEN].copy_from_slice(&self.symbols[c]);
                at += usize::from(symbol_len);
                i += 1;
            } else if code == ESCAPE {
                let Some(&literal) = codes.get(i + 1) else {
                    return Err(KernelError::FsstDanglingEscape {
                        value,
                        position: from + i,
                    });
                };
                out[at] = literal;
                at += 1;
                i += 2;
            } else {
                return Err(KernelError::FsstUnknownCode {
                    value,
                    position: from + i,
                    code,
                    num_symbols: self.num_symbols,
                });
            }
        }
        Ok(at)
    }
}

/// Offsets never decrease and never point past the compressed bytes.
fn check_offsets(offsets: &[u64], len: usize) -> Result<(), KernelError> {
    let mut previous = 0u64;
    for (index, &offset) in offsets.iter().enumerate() {
        if offset > len as u64 {
            return Err(KernelError::FsstOffsetOutOfBounds { index, offset, len });
        }
        if index > 0 && offset < previous {
            return Err(KernelError::FsstOffsetDecreases {
                index,
                offset,
                previous_index: index - 1,
                previous,
            });
        }
        previous = offset;
    }
    Ok(())
}
