//! General-purpose buffer compression of v2.1+ pages (`BufferCompression`, `General`): LZ4 and
//! zstd as Lance 14 frames them.
//!
//! - LZ4: the LZ4 *block* format behind a 4-byte little-endian decompressed size.
//! - zstd: one zstd frame, either bare or behind an 8-byte little-endian decompressed size. A
//!   buffer that starts with the zstd magic and a frame header descriptor whose bit 4 (0x10,
//!   unused in RFC 8878) is clear is bare; anything else carries the prefix (the rule Lance 14's
//!   reader applies, `encodings/physical/block.rs`).
//!
//! Invariant: the output is never larger than [`MAX_DECOMPRESSED_BYTES`] nor than the format
//! allows for the input's size (LZ4 expands at most 255:1), it is allocated only after that
//! check, and it must have exactly the declared size; anything else is a
//! [`DataFileError::Decompression`].

use std::io::Read;

use super::Site;
use crate::data_file::DataFileError;
use lance_reference::proto::lance::encodings21 as pb;

/// The largest buffer this reader decompresses (256 MiB): [`super::super::MAX_DECODED_VALUES`]
/// values of 64 bits.
pub const MAX_DECOMPRESSED_BYTES: u64 = super::MAX_DECODED_VALUES * 64;

/// The zstd frame magic, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

fn failed(site: &Site, scheme: &str, problem: impl Into<String>) -> DataFileError {
    DataFileError::Decompression {
        file: site.file.to_string(),
        structure: site.path.clone(),
        scheme: scheme.to_string(),
        problem: problem.into(),
    }
}

/// Decompresses `data` with `compression`.
pub fn decompress(
    compression: &pb::BufferCompression,
    data: &[u8],
    site: &Site,
) -> Result<Vec<u8>, DataFileError> {
    match pb::CompressionScheme::try_from(compression.scheme) {
        Ok(pb::CompressionScheme::CompressionAlgorithmLz4) => lz4(data, site),
        Ok(pb::CompressionScheme::CompressionAlgorithmZstd) => zstd(data, site),
        Ok(pb::CompressionScheme::CompressionAlgorithmUnspecified) => {
            Err(site.unsupported("buffer compression scheme COMPRESSION_ALGORITHM_UNSPECIFIED"))
        }
        Err(_) => {
            Err(site.unsupported(format!("buffer compression scheme {}", compression.scheme)))
        }
    }
}

/// An LZ4 block behind its 4-byte little-endian decompressed size.
pub fn lz4(data: &[u8], site: &Site) -> Result<Vec<u8>, DataFileError> {
    let Some((size, block)) = data.split_first_chunk::<4>() else {
        return Err(failed(
            site,
            "lz4",
            format!("{} bytes cannot hold the 4-byte size prefix", data.len()),
        ));
    };
    let size = u64::from(u32::from_le_bytes(*size));
    // One LZ4 sequence of n bytes expands to at most 255 * n + 15 or so; 256 * n + 64 bounds it.
    let bound = (block.len() as u64).saturating_mul(256).saturating_add(64);
    if size > bound || size > MAX_DECOMPRESSED_BYTES {
        return Err(failed(
            site,
            "lz4",
            format!(
                "declares {size} bytes from {} compressed bytes (limit {})",
                block.len(),
                bound.min(MAX_DECOMPRESSED_BYTES)
            ),
        ));
    }
    let mut out = vec![0u8; size as usize];
    let written = lz4_flex::block::decompress_into(block, &mut out)
        .map_err(|e| failed(site, "lz4", e.to_string()))?;
    if written as u64 != size {
        return Err(failed(
            site,
            "lz4",
            format!("declares {size} bytes but the block holds {written}"),
        ));
    }
    Ok(out)
}

/// A zstd frame, bare or behind an 8-byte little-endian decompressed size.
pub fn zstd(data: &[u8], site: &Site) -> Result<Vec<u8>, DataFileError> {
    if data.is_empty() {
        return Ok(Vec::new());
    }
    let bare = data.len() < 8
        || (data.get(..4) == Some(&ZSTD_MAGIC[..]) && data.get(4).is_some_and(|d| d & 0x10 == 0));
    let (declared, frame) = if bare {
        (None, data)
    } else {
        let (size, frame) = data
            .split_first_chunk::<8>()
            .ok_or_else(|| failed(site, "zstd", "too short for the 8-byte size prefix"))?;
        (Some(u64::from_le_bytes(*size)), frame)
    };
    if let Some(size) = declared {
        if size > MAX_DECOMPRESSED_BYTES {
            return Err(failed(
                site,
                "zstd",
                format!("declares {size} bytes (limit {MAX_DECOMPRESSED_BYTES})"),
            ));
        }
    }
    let mut source = frame;
    let decoder = ruzstd::decoding::StreamingDecoder::new(&mut source)
        .map_err(|e| failed(site, "zstd", format!("frame header: {e}")))?;
    let limit = declared.unwrap_or(MAX_DECOMPRESSED_BYTES);
    // The Vec grows only as real output appears; one byte past the limit detects a lie.
    let mut out = Vec::new();
    decoder
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| failed(site, "zstd", format!("frame data: {e}")))?;
    match declared {
        Some(size) if out.len() as u64 != size => Err(failed(
            site,
            "zstd",
            format!(
                "declares {size} bytes but the frame holds {} or more",
                out.len()
            ),
        )),
        None if out.len() as u64 > limit => Err(failed(
            site,
            "zstd",
            format!("the frame holds more than {limit} bytes"),
        )),
        _ => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site<'static> {
        Site::new("f.lance", "buf")
    }

    /// An LZ4 block of literals only: token (len << 4), the literals.
    fn lz4_literals(bytes: &[u8]) -> Vec<u8> {
        assert!(bytes.len() < 15);
        let mut out = (bytes.len() as u32).to_le_bytes().to_vec();
        out.push((bytes.len() as u8) << 4);
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn lz4_literal_block_decodes() {
        assert_eq!(lz4(&lz4_literals(b"hello"), &site()).unwrap(), b"hello");
    }

    #[test]
    fn lz4_size_lie_is_refused() {
        let mut b = lz4_literals(b"hello");
        b[0] = 6;
        let e = lz4(&b, &site()).unwrap_err();
        assert!(matches!(e, DataFileError::Decompression { .. }), "{e}");
    }

    #[test]
    fn lz4_huge_declared_size_is_refused_before_allocating() {
        let mut b = lz4_literals(b"hi");
        b[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = lz4(&b, &site()).unwrap_err();
        assert!(e.to_string().contains("declares 4294967295"), "{e}");
    }

    #[test]
    fn lz4_missing_prefix_is_refused() {
        assert!(matches!(
            lz4(&[1, 2], &site()),
            Err(DataFileError::Decompression { .. })
        ));
    }

    #[test]
    fn zstd_garbage_is_refused() {
        let e = zstd(&[0u8; 16], &site()).unwrap_err();
        assert!(matches!(e, DataFileError::Decompression { .. }), "{e}");
    }

    #[test]
    fn zstd_raw_block_frame_decodes_with_and_without_prefix() {
        // A frame: magic, FHD 0x20 (single segment, 1-byte content size), size 3, then one
        // raw last block of 3 bytes (header: last=1, type=raw, size=3 → 3<<3 | 1 = 0x19).
        let frame = [
            0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x03, 0x19, 0x00, 0x00, b'a', b'b', b'c',
        ];
        assert_eq!(zstd(&frame, &site()).unwrap(), b"abc");
        let mut prefixed = 3u64.to_le_bytes().to_vec();
        prefixed.extend_from_slice(&frame);
        assert_eq!(zstd(&prefixed, &site()).unwrap(), b"abc");
        prefixed[0] = 4;
        assert!(matches!(
            zstd(&prefixed, &site()),
            Err(DataFileError::Decompression { .. })
        ));
    }
}
