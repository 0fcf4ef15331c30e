//! The container of a v2 data file: the 40-byte footer and the two offset tables (column
//! metadata and global buffers) that it points at.
//!
//! Invariant: [`Container::parse`] returns only positions that lie inside the file and inside the
//! region their structure must occupy (column metadata between `column_meta_start` and the
//! offset table; global buffer 0 before the column metadata), and it checks every count against
//! the bytes that must hold it before allocating anything. Everything downstream can slice with
//! these numbers without re-checking them against the file length.
//!
//! The file need not be held whole: a [`Region`] is the bytes of the file from one position to
//! its end, and [`Container::parse_region`] decides from a region and the file's length exactly
//! what [`Container::parse`] decides from the whole file, provided the region holds everything
//! from `column_meta_start` on ([`Footer::parse`] tells where that is from the last
//! [`FOOTER_LEN`] bytes alone). Positions stay the file's: a region answers for an [`Extent`]
//! only the bytes it holds.

use super::DataFileError;

/// Length of the footer in bytes.
pub const FOOTER_LEN: usize = 40;
/// The last four bytes of every Lance file.
pub const MAGIC: [u8; 4] = *b"LANC";
/// Footer version the Lance 14 writer emits for format v2.0 (and the kit's writer copies).
pub const WRITER_VERSION: FileVersion = FileVersion { major: 0, minor: 3 };

/// The `(major, minor)` pair stored in the footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileVersion {
    /// Footer major version.
    pub major: u16,
    /// Footer minor version.
    pub minor: u16,
}

impl FileVersion {
    /// True for the two spellings of format v2.0: `(0,3)` (the standard writer) and `(2,0)`.
    pub fn is_v2_0(self) -> bool {
        matches!((self.major, self.minor), (0, 3) | (2, 0))
    }

    /// True for the versions this reader decodes: v2.0 and the structural v2.1 `(2,1)` and
    /// v2.2 `(2,2)`.
    pub fn is_supported(self) -> bool {
        self.is_v2_0() || matches!((self.major, self.minor), (2, 1) | (2, 2))
    }
}

/// The footer's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Position of the first column metadata message.
    pub column_meta_start: u64,
    /// Position of the column metadata offset table.
    pub cmo_table_start: u64,
    /// Position of the global buffer offset table.
    pub gbo_table_start: u64,
    /// Number of global buffers.
    pub num_global_buffers: u32,
    /// Number of columns.
    pub num_columns: u32,
    /// Format version.
    pub version: FileVersion,
}

impl Footer {
    /// The footer's 40 bytes: three u64, two u32, two u16 (all little-endian), then `LANC`.
    pub fn to_bytes(&self) -> [u8; FOOTER_LEN] {
        let mut out = [0u8; FOOTER_LEN];
        out[0..8].copy_from_slice(&self.column_meta_start.to_le_bytes());
        out[8..16].copy_from_slice(&self.cmo_table_start.to_le_bytes());
        out[16..24].copy_from_slice(&self.gbo_table_start.to_le_bytes());
        out[24..28].copy_from_slice(&self.num_global_buffers.to_le_bytes());
        out[28..32].copy_from_slice(&self.num_columns.to_le_bytes());
        out[32..34].copy_from_slice(&self.version.major.to_le_bytes());
        out[34..36].copy_from_slice(&self.version.minor.to_le_bytes());
        out[36..40].copy_from_slice(&MAGIC);
        out
    }
}

/// A position and a size in bytes (one row of an offset table, or one page buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Absolute file position.
    pub position: u64,
    /// Size in bytes.
    pub size: u64,
}

impl Extent {
    /// The end position, or `None` when it overflows.
    pub fn end(self) -> Option<u64> {
        self.position.checked_add(self.size)
    }

    /// The extent's bytes, or `None` when it does not lie inside `bytes`.
    pub fn slice(self, bytes: &[u8]) -> Option<&[u8]> {
        Region::whole(bytes).get(self)
    }
}

/// Consecutive bytes of a file and the file position of the first: the whole file (from 0), or
/// a part read alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region<'a> {
    /// The file position of `bytes[0]`.
    pub start: u64,
    /// The bytes held.
    pub bytes: &'a [u8],
}

impl<'a> Region<'a> {
    /// The whole file.
    pub fn whole(bytes: &'a [u8]) -> Region<'a> {
        Region { start: 0, bytes }
    }

    /// The file position just past the last byte held, or `None` when it overflows.
    pub fn end(self) -> Option<u64> {
        self.start.checked_add(self.bytes.len() as u64)
    }

    /// The bytes of `extent`, or `None` when the region does not hold all of them.
    pub fn get(self, extent: Extent) -> Option<&'a [u8]> {
        let start = usize::try_from(extent.position.checked_sub(self.start)?).ok()?;
        let end = usize::try_from(extent.end()?.checked_sub(self.start)?).ok()?;
        self.bytes.get(start..end)
    }

    fn at(self, position: u64, len: u64) -> Option<&'a [u8]> {
        self.get(Extent {
            position,
            size: len,
        })
    }
}

/// Writes an offset table (one little-endian `(position, size)` pair of u64 per entry).
pub fn offset_table_bytes(entries: &[Extent]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 16);
    for e in entries {
        out.extend_from_slice(&e.position.to_le_bytes());
        out.extend_from_slice(&e.size.to_le_bytes());
    }
    out
}

/// The validated container of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// The footer.
    pub footer: Footer,
    /// Where each column's metadata message lies (inside the column metadata region).
    pub columns: Vec<Extent>,
    /// Where each global buffer lies (buffer 0 before the column metadata).
    pub global_buffers: Vec<Extent>,
}

fn le_u64(bytes: Region<'_>, at: u64) -> Option<u64> {
    let b: [u8; 8] = bytes.at(at, 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

fn le_u32(bytes: Region<'_>, at: u64) -> Option<u32> {
    let b: [u8; 4] = bytes.at(at, 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

fn le_u16(bytes: Region<'_>, at: u64) -> Option<u16> {
    let b: [u8; 2] = bytes.at(at, 2)?.try_into().ok()?;
    Some(u16::from_le_bytes(b))
}

impl Footer {
    /// Parses and checks the footer of a file of `len` bytes from `bytes`, which must hold its
    /// last [`FOOTER_LEN`] bytes: the magic, a version this reader decodes, and positions in
    /// file order (`column_meta_start <= cmo_table_start <= gbo_table_start <=` the footer's
    /// own position).
    pub fn parse(bytes: Region<'_>, len: u64, file: &str) -> Result<Footer, DataFileError> {
        let footer_pos =
            len.checked_sub(FOOTER_LEN as u64)
                .ok_or_else(|| DataFileError::TooShort {
                    file: file.to_string(),
                    len,
                })?;
        let oob = |structure: &str, problem: String| DataFileError::OutOfBounds {
            file: file.to_string(),
            structure: structure.to_string(),
            problem,
        };
        let truncated = || oob("footer", "cannot read the footer".to_string());
        let f = footer_pos;
        let magic: [u8; 4] = bytes
            .at(f + 36, 4)
            .and_then(|m| m.try_into().ok())
            .ok_or_else(truncated)?;
        if magic != MAGIC {
            return Err(DataFileError::BadMagic {
                file: file.to_string(),
                found: magic,
            });
        }
        let version = FileVersion {
            major: le_u16(bytes, f + 32).ok_or_else(truncated)?,
            minor: le_u16(bytes, f + 34).ok_or_else(truncated)?,
        };
        if !version.is_supported() {
            let hint = match (version.major, version.minor) {
                (2, 3) => {
                    ": format v2.3 is unstable in Lance 14 and not read (v2.0, v2.1 and v2.2 are)"
                }
                (0, 0..=2) => ": the legacy v1 format is not supported",
                _ => ": only formats v2.0 (footer (0,3) or (2,0)), v2.1 and v2.2 are supported",
            };
            return Err(DataFileError::UnsupportedFileVersion {
                file: file.to_string(),
                major: version.major,
                minor: version.minor,
                hint: hint.to_string(),
            });
        }
        let footer = Footer {
            column_meta_start: le_u64(bytes, f).ok_or_else(truncated)?,
            cmo_table_start: le_u64(bytes, f + 8).ok_or_else(truncated)?,
            gbo_table_start: le_u64(bytes, f + 16).ok_or_else(truncated)?,
            num_global_buffers: le_u32(bytes, f + 24).ok_or_else(truncated)?,
            num_columns: le_u32(bytes, f + 28).ok_or_else(truncated)?,
            version,
        };
        if !(footer.column_meta_start <= footer.cmo_table_start
            && footer.cmo_table_start <= footer.gbo_table_start
            && footer.gbo_table_start <= footer_pos)
        {
            return Err(oob(
                "footer",
                format!(
                    "positions must satisfy column_meta_start {} <= cmo_table_start {} <= gbo_table_start {} <= footer position {}",
                    footer.column_meta_start,
                    footer.cmo_table_start,
                    footer.gbo_table_start,
                    footer_pos
                ),
            ));
        }
        Ok(footer)
    }
}

impl Container {
    /// Parses and checks the footer and both offset tables of `bytes`, the whole file.
    pub fn parse(bytes: &[u8], file: &str) -> Result<Container, DataFileError> {
        Container::parse_region(Region::whole(bytes), bytes.len() as u64, file)
    }

    /// Parses and checks the footer and both offset tables of a file of `len` bytes from
    /// `bytes`, which holds it from its `column_meta_start` (or earlier) to its end: the
    /// answer, and the error, [`Container::parse`] gives for the whole file.
    pub fn parse_region(
        bytes: Region<'_>,
        len: u64,
        file: &str,
    ) -> Result<Container, DataFileError> {
        let footer = Footer::parse(bytes, len, file)?;
        // Only called once the footer is read, so `len` holds it.
        let footer_pos = len - FOOTER_LEN as u64;
        let oob = |structure: &str, problem: String| DataFileError::OutOfBounds {
            file: file.to_string(),
            structure: structure.to_string(),
            problem,
        };
        // 16 * u32::MAX fits in u64, so these products cannot overflow.
        let cmo_len = 16 * u64::from(footer.num_columns);
        if footer.gbo_table_start - footer.cmo_table_start != cmo_len {
            return Err(oob(
                "column metadata offset table",
                format!(
                    "{} columns need {} bytes but the table spans {} bytes ({}..{})",
                    footer.num_columns,
                    cmo_len,
                    footer.gbo_table_start - footer.cmo_table_start,
                    footer.cmo_table_start,
                    footer.gbo_table_start
                ),
            ));
        }
        let gbo_len = 16 * u64::from(footer.num_global_buffers);
        if footer_pos - footer.gbo_table_start < gbo_len {
            return Err(oob(
                "global buffer offset table",
                format!(
                    "{} global buffers need {} bytes but only {} lie between {} and the footer",
                    footer.num_global_buffers,
                    gbo_len,
                    footer_pos - footer.gbo_table_start,
                    footer.gbo_table_start
                ),
            ));
        }
        // Both tables were just checked to lie inside the file, so the counts are bounded by
        // the file length and these allocations are too.
        let read_table =
            |start: u64, count: u32, name: &str| -> Result<Vec<Extent>, DataFileError> {
                let mut out = Vec::with_capacity(count as usize);
                for i in 0..u64::from(count) {
                    let at = start + 16 * i;
                    let position = le_u64(bytes, at);
                    let size = le_u64(bytes, at + 8);
                    match (position, size) {
                        (Some(position), Some(size)) => out.push(Extent { position, size }),
                        _ => {
                            return Err(oob(
                                &format!("{name}[{i}]"),
                                "entry lies past the end of the file".into(),
                            ));
                        }
                    }
                }
                Ok(out)
            };
        let columns = read_table(
            footer.cmo_table_start,
            footer.num_columns,
            "column metadata offset table",
        )?;
        let global_buffers = read_table(
            footer.gbo_table_start,
            footer.num_global_buffers,
            "global buffer offset table",
        )?;
        for (i, c) in columns.iter().enumerate() {
            let inside = c.position >= footer.column_meta_start
                && c.end().is_some_and(|end| end <= footer.cmo_table_start);
            if !inside {
                return Err(oob(
                    &format!("column metadata offset table[{i}]"),
                    format!(
                        "ColumnMetadata[{i}] at {} with size {} is outside the column metadata region {}..{}",
                        c.position, c.size, footer.column_meta_start, footer.cmo_table_start
                    ),
                ));
            }
        }
        for (i, g) in global_buffers.iter().enumerate() {
            // Global buffer 0 (the schema) must precede the column metadata; Lance 14 reads
            // from its start to the end of the file and slices the metadata out of that.
            let limit = if i == 0 {
                footer.column_meta_start
            } else {
                footer_pos
            };
            if g.end().is_none_or(|end| end > limit) {
                return Err(oob(
                    &format!("global buffer offset table[{i}]"),
                    format!(
                        "global buffer {i} at {} with size {} does not end by {}",
                        g.position, g.size, limit
                    ),
                ));
            }
        }
        if global_buffers.is_empty() {
            return Err(DataFileError::MissingField {
                file: file.to_string(),
                structure: "global buffer 0 (FileDescriptor)".to_string(),
            });
        }
        Ok(Container {
            footer,
            columns,
            global_buffers,
        })
    }
}
