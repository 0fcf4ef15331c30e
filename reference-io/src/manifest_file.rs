//! The byte framing of a manifest file (`_versions/*.manifest`).
//!
//! Invariant: [`decode_manifest_file`] returns messages only from a file whose footer ends in
//! `LANC`, whose footer position points at a u32 length prefix that reaches *exactly* to the
//! footer (the Manifest sits directly before it, as Lance 14 requires), and whose IndexSection,
//! when `Manifest.index_section` names one, lies wholly before the Manifest. Every length is
//! checked against the bytes present before anything is sliced or allocated, so a lying
//! length is a typed error, never a panic or a large allocation. [`encode_manifest_file`]
//! writes the layout Lance 14 writes, so its output is read by Lance and by this module alike.
//!
//! ```text
//! [u32 LE len | lance.table.IndexSection]   optional; at offset 0 (Manifest.index_section = 0)
//! [u32 LE len | lance.table.Manifest]
//! [i64 LE manifest_pos][i16 LE major = 0][i16 LE minor = 2]["LANC"]     16-byte footer
//! ```
//!
//! The footer's major/minor numbers are written as Lance writes them (0, 2) and, as in Lance,
//! not checked on read. An inline Transaction (`Manifest.transaction_section`) is never written
//! and ignored on read: it carries nothing a reader needs.

use prost::Message;

use super::error::{DatasetError, FramingProblem};
use lance_reference::proto::lance::table::{IndexSection, Manifest};

/// The footer's magic bytes.
pub const MAGIC: &[u8; 4] = b"LANC";
/// The footer's major version as Lance 14 writes it.
pub const FOOTER_MAJOR: i16 = 0;
/// The footer's minor version as Lance 14 writes it.
pub const FOOTER_MINOR: i16 = 2;
/// Footer length: i64 position, i16 major, i16 minor, 4 magic bytes.
pub const FOOTER_LEN: u64 = 16;

/// The messages of one manifest file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ManifestFile {
    /// The Manifest.
    pub manifest: Manifest,
    /// The IndexSection `Manifest.index_section` points at, if any.
    pub index_section: Option<IndexSection>,
}

fn frame(out: &mut Vec<u8>, message: &[u8]) -> Result<(), DatasetError> {
    let len = u32::try_from(message.len()).map_err(|_| DatasetError::Unwritable {
        what: "manifest".into(),
        problem: format!(
            "a message of {} bytes does not fit a u32 length prefix",
            message.len()
        ),
    })?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(message);
    Ok(())
}

/// Encodes a manifest file. With `index_section`, the section is written first, at offset 0,
/// and `Manifest.index_section` is set to 0; without it, the field is cleared. The
/// `transaction_section` fields are cleared (no inline Transaction is written).
pub fn encode_manifest_file(
    manifest: &Manifest,
    index_section: Option<&IndexSection>,
) -> Result<Vec<u8>, DatasetError> {
    encode_manifest_file_with_transaction(manifest, index_section, None)
}

/// [`encode_manifest_file`], with `transaction` (the bytes of a serialized Transaction) written
/// as an inline transaction section after the IndexSection and before the Manifest, as Lance
/// writes a commit's transaction, and `Manifest.transaction_section` pointing at it. Readers
/// ignore the section; it only moves the Manifest away from the IndexSection's end.
pub fn encode_manifest_file_with_transaction(
    manifest: &Manifest,
    index_section: Option<&IndexSection>,
    transaction: Option<&[u8]>,
) -> Result<Vec<u8>, DatasetError> {
    let mut manifest = manifest.clone();
    let mut out = Vec::new();
    manifest.index_section = None;
    manifest.transaction_section = None;
    manifest.transaction_section_deprecated = None;
    if let Some(section) = index_section {
        manifest.index_section = Some(0);
        frame(&mut out, &section.encode_to_vec())?;
    }
    if let Some(bytes) = transaction {
        manifest.transaction_section = Some(out.len() as u64);
        frame(&mut out, bytes)?;
    }
    let position = out.len() as u64;
    frame(&mut out, &manifest.encode_to_vec())?;
    let position = i64::try_from(position).map_err(|_| DatasetError::Unwritable {
        what: "manifest".into(),
        problem: "manifest position does not fit an i64".into(),
    })?;
    out.extend_from_slice(&position.to_le_bytes());
    out.extend_from_slice(&FOOTER_MAJOR.to_le_bytes());
    out.extend_from_slice(&FOOTER_MINOR.to_le_bytes());
    out.extend_from_slice(MAGIC);
    Ok(out)
}

/// Reads `N` bytes at `at`, or `None` when they are not all present.
fn read_array<const N: usize>(bytes: &[u8], at: u64) -> Option<[u8; N]> {
    let start = usize::try_from(at).ok()?;
    let end = start.checked_add(N)?;
    bytes.get(start..end)?.try_into().ok()
}

/// Decodes a manifest file's bytes; `file` names it in errors.
pub fn decode_manifest_file(bytes: &[u8], file: &str) -> Result<ManifestFile, DatasetError> {
    let framing = |problem| DatasetError::Framing {
        file: file.to_string(),
        problem,
    };
    let size = bytes.len() as u64;
    if size < FOOTER_LEN {
        return Err(framing(FramingProblem::TooShort { size }));
    }
    let footer = size - FOOTER_LEN;
    let magic: [u8; 4] =
        read_array(bytes, size - 4).ok_or(framing(FramingProblem::TooShort { size }))?;
    if &magic != MAGIC {
        return Err(framing(FramingProblem::BadMagic { found: magic }));
    }
    let raw_position = i64::from_le_bytes(
        read_array(bytes, footer).ok_or(framing(FramingProblem::TooShort { size }))?,
    );
    let out_of_range = || {
        framing(FramingProblem::PositionOutOfRange {
            position: raw_position,
            size,
        })
    };
    let position = u64::try_from(raw_position).map_err(|_| out_of_range())?;
    // The length prefix itself must lie before the footer.
    if position.checked_add(4).is_none_or(|end| end > footer) {
        return Err(out_of_range());
    }
    let declared = u32::from_le_bytes(read_array(bytes, position).ok_or_else(out_of_range)?);
    let expected = footer - position - 4;
    if u64::from(declared) != expected {
        return Err(framing(FramingProblem::LengthMismatch {
            declared,
            expected,
        }));
    }
    let body = bytes
        .get(position as usize + 4..footer as usize)
        .ok_or_else(out_of_range)?;
    let manifest = Manifest::decode(body).map_err(|e| DatasetError::Protobuf {
        file: file.to_string(),
        message: "lance.table.Manifest",
        problem: e.to_string(),
    })?;
    let index_section = match manifest.index_section {
        None => None,
        Some(offset) => Some(decode_section(bytes, file, offset, position)?),
    };
    Ok(ManifestFile {
        manifest,
        index_section,
    })
}

/// Decodes the IndexSection framed at `offset`, which must end at or before `manifest_position`.
fn decode_section(
    bytes: &[u8],
    file: &str,
    offset: u64,
    manifest_position: u64,
) -> Result<IndexSection, DatasetError> {
    let bad = |length| DatasetError::Framing {
        file: file.to_string(),
        problem: FramingProblem::SectionOutOfRange {
            section: "IndexSection",
            offset,
            length,
            manifest_position,
        },
    };
    if offset
        .checked_add(4)
        .is_none_or(|end| end > manifest_position)
    {
        return Err(bad(None));
    }
    let length = u32::from_le_bytes(read_array(bytes, offset).ok_or(bad(None))?);
    let end = offset + 4 + u64::from(length);
    if end > manifest_position {
        return Err(bad(Some(length)));
    }
    let body = bytes
        .get(offset as usize + 4..end as usize)
        .ok_or(bad(Some(length)))?;
    IndexSection::decode(body).map_err(|e| DatasetError::Protobuf {
        file: file.to_string(),
        message: "lance.table.IndexSection",
        problem: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance_reference::proto::lance::table::{IndexMetadata, Uuid};

    fn sample() -> (Manifest, IndexSection) {
        let manifest = Manifest {
            version: 3,
            ..Default::default()
        };
        let section = IndexSection {
            indices: vec![IndexMetadata {
                uuid: Some(Uuid { uuid: vec![7; 16] }),
                name: "idx".into(),
                ..Default::default()
            }],
        };
        (manifest, section)
    }

    #[test]
    fn layout_is_section_then_manifest_then_footer() {
        let (manifest, section) = sample();
        let bytes = encode_manifest_file(&manifest, Some(&section)).unwrap();
        let section_len = section.encoded_len();
        // The section's prefix is at 0, the Manifest's right after the section.
        assert_eq!(
            u32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize,
            section_len
        );
        let pos = i64::from_le_bytes(bytes[bytes.len() - 16..bytes.len() - 8].try_into().unwrap());
        assert_eq!(pos as usize, 4 + section_len);
        assert_eq!(
            &bytes[bytes.len() - 8..],
            &[0, 0, 2, 0, b'L', b'A', b'N', b'C']
        );
        let read = decode_manifest_file(&bytes, "m").unwrap();
        assert_eq!(read.manifest.index_section, Some(0));
        assert_eq!(read.manifest.version, 3);
        assert_eq!(read.index_section, Some(section));
    }

    #[test]
    fn without_section_the_manifest_starts_at_zero() {
        let (manifest, _) = sample();
        let bytes = encode_manifest_file(&manifest, None).unwrap();
        assert_eq!(
            &bytes[bytes.len() - 16..bytes.len() - 8],
            &0i64.to_le_bytes()
        );
        let read = decode_manifest_file(&bytes, "m").unwrap();
        assert_eq!(read.manifest.index_section, None);
        assert_eq!(read.index_section, None);
    }

    #[test]
    fn framing_errors_are_typed() {
        // covers: DS-FRAME-1, DS-FRAME-2, DS-FRAME-3
        let (manifest, section) = sample();
        let good = encode_manifest_file(&manifest, Some(&section)).unwrap();
        let code = |b: &[u8]| decode_manifest_file(b, "m").unwrap_err().code();
        assert_eq!(code(&good[..10]), "manifest_too_short");
        let mut magic = good.clone();
        *magic.last_mut().unwrap() = b'D';
        assert_eq!(code(&magic), "manifest_bad_magic");
        // Truncating from the front keeps the footer but the position now overshoots.
        assert_eq!(code(&good[8..]), "manifest_position_out_of_range");
        let n = good.len();
        let pos = i64::from_le_bytes(good[n - 16..n - 8].try_into().unwrap()) as usize;
        let mut lying = good.clone();
        let declared = u32::from_le_bytes(good[pos..pos + 4].try_into().unwrap());
        lying[pos..pos + 4].copy_from_slice(&(declared - 1).to_le_bytes());
        assert_eq!(code(&lying), "manifest_length_mismatch");
        let mut negative = good.clone();
        negative[n - 16..n - 8].copy_from_slice(&(-1i64).to_le_bytes());
        assert_eq!(code(&negative), "manifest_position_out_of_range");
        let mut past = good.clone();
        past[n - 16..n - 8].copy_from_slice(&((n - 17) as i64).to_le_bytes());
        assert_eq!(code(&past), "manifest_position_out_of_range");
        // Padding between the Manifest and the footer breaks "directly before the footer".
        let mut padded = good[..n - 16].to_vec();
        padded.push(0);
        padded.extend_from_slice(&good[n - 16..]);
        assert_eq!(code(&padded), "manifest_length_mismatch");
        // A lying section length.
        let mut section_lie = good.clone();
        section_lie[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(code(&section_lie), "manifest_section_out_of_range");
    }
}
