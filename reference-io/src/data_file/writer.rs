//! Writing a Lance data file, format v2.0, v2.1 or v2.2, from columns of values.
//!
//! Invariant: the output is a file Lance 14.0.2 reads with the same values, laid out as its
//! writer lays it out: page buffers (each padded to 64 bytes with `0x48`), global buffer 0
//! (the `FileDescriptor`, unpadded), one `ColumnMetadata` per column, the column metadata offset
//! table, the global buffer offset table and a footer with version `(0,3)` for v2.0, `(2,1)`
//! for v2.1 or `(2,2)` for v2.2. One page per column; an empty non-struct column has no page.
//! In v2.0 every field has a column (a struct's holds its validity, [`super::page_encode`]);
//! in v2.1 and v2.2 only leaves do
//! (a struct field is in the schema but has no column, and its children's pages carry one
//! definition layer for it, [`super::structural_encode`]), so the file has one column per
//! non-struct field, in schema order. The same input always gives the same bytes (no clocks,
//! no maps with unstable order). Values are checked against their fields before anything is
//! written, so a file is never written that would not read back identically.

use prost::Message;

use super::DataFileError;
use super::any::{ARRAY_ENCODING_URL, Any, COLUMN_ENCODING_URL};
use super::container::{
    Extent, FOOTER_LEN, FileVersion, Footer, WRITER_VERSION, offset_table_bytes,
};
use super::page_encode::encode_page;
use super::structural_encode::{
    Grammar, PAGE_LAYOUT_URL, StructuralPage, encode_structural_page_in,
};
use lance_reference::model::{DataType, Field, Value};
use lance_reference::proto::lance::encodings as enc;
use lance_reference::proto::lance::file as pbf;
use lance_reference::proto::lance::file::v2 as pb2;

/// The data file format version a file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum DataFileVersion {
    /// Format v2.0: `ArrayEncoding` pages, a column per field; footer `(0,3)`.
    #[default]
    V2_0,
    /// Format v2.1: `PageLayout` pages in the u16 chunk grammar, a column per leaf field;
    /// footer `(2,1)`.
    V2_1,
    /// Format v2.2 (Lance 14's default): `PageLayout` pages, a column per leaf field; footer
    /// `(2,2)`.
    V2_2,
}

impl DataFileVersion {
    /// Every version the writer writes.
    pub const ALL: [DataFileVersion; 3] = [
        DataFileVersion::V2_0,
        DataFileVersion::V2_1,
        DataFileVersion::V2_2,
    ];

    /// The `(file_major_version, file_minor_version)` a manifest's `DataFile` records.
    pub fn manifest_numbers(self) -> (u32, u32) {
        match self {
            DataFileVersion::V2_0 => (2, 0),
            DataFileVersion::V2_1 => (2, 1),
            DataFileVersion::V2_2 => (2, 2),
        }
    }

    /// The `(major, minor)` the footer holds (Lance's standard v2.0 writer stores `(0,3)`).
    pub fn footer(self) -> FileVersion {
        match self {
            DataFileVersion::V2_0 => WRITER_VERSION,
            DataFileVersion::V2_1 => FileVersion { major: 2, minor: 1 },
            DataFileVersion::V2_2 => FileVersion { major: 2, minor: 2 },
        }
    }

    /// The version's name as Lance spells it (`data_format.version`, `data_storage_version`).
    pub fn name(self) -> &'static str {
        match self {
            DataFileVersion::V2_0 => "2.0",
            DataFileVersion::V2_1 => "2.1",
            DataFileVersion::V2_2 => "2.2",
        }
    }

    /// The version named `name` (`"2.0"`, `"2.1"` or `"2.2"`).
    pub fn from_name(name: &str) -> Option<DataFileVersion> {
        DataFileVersion::ALL.into_iter().find(|v| v.name() == name)
    }

    /// True when struct fields have a column of their own (v2.0 only).
    pub fn struct_has_column(self) -> bool {
        self == DataFileVersion::V2_0
    }

    /// The grammar of the version's `PageLayout` pages (`None` for v2.0, which has none).
    pub fn grammar(self) -> Option<Grammar> {
        match self {
            DataFileVersion::V2_0 => None,
            DataFileVersion::V2_1 => Some(Grammar::V2_1),
            DataFileVersion::V2_2 => Some(Grammar::V2_2),
        }
    }
}

/// Page buffers start at multiples of this many bytes.
pub const PAGE_BUFFER_ALIGNMENT: usize = 64;
/// The byte Lance pads page buffers with (`'H'`).
pub const PADDING_BYTE: u8 = 0x48;

/// One column to write: the schema field it stores and its values. Columns are given in the
/// file schema's pre-order: a struct column precedes its children's columns.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnData {
    /// The field (id, parent id, name, type, nullability) written into the file schema. Ids
    /// may be negative (the hidden lineage columns use -3, -4, -5).
    pub field: Field,
    /// The values, one per row. A struct column holds `Value::Struct(vec![])` per row.
    pub values: Vec<Value>,
    /// The column is `uint32` in the file: `field` is `int32` and each value holds the bit
    /// pattern of a `uint32` (the model has no unsigned 32-bit type; index files need one).
    pub uint32: bool,
}

impl ColumnData {
    /// A column of `field` holding `values`.
    pub fn new(field: Field, values: Vec<Value>) -> ColumnData {
        ColumnData {
            field,
            values,
            uint32: false,
        }
    }

    /// A non-nullable `uint32` column named `name` with field id `id`.
    pub fn uint32(id: i32, name: &str, values: &[u32]) -> ColumnData {
        ColumnData {
            field: Field {
                id,
                parent_id: -1,
                name: name.to_string(),
                data_type: DataType::Int32,
                nullable: false,
            },
            values: values
                .iter()
                .map(|v| Value::Int32(i32::from_ne_bytes(v.to_ne_bytes())))
                .collect(),
            uint32: true,
        }
    }
}

/// What a file holds beyond its columns: schema metadata and extra global buffers (index files
/// use both; data files use neither).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileExtras {
    /// `FileDescriptor.schema.metadata`, written in key order.
    pub metadata: std::collections::BTreeMap<String, Vec<u8>>,
    /// Global buffers 1, 2, ...: written first in the file, each padded to 64 bytes, and
    /// listed after the descriptor (global buffer 0) in the offset table.
    pub global_buffers: Vec<Vec<u8>>,
}

/// Checks that the columns are a pre-order field list and every value fits its field.
fn check_columns(version: DataFileVersion, columns: &[ColumnData]) -> Result<(), DataFileError> {
    for (column, c) in columns.iter().enumerate() {
        let field = c.field.id;
        if c.field.parent_id != -1 {
            let parent = columns
                .get(..column)
                .and_then(|earlier| earlier.iter().find(|p| p.field.id == c.field.parent_id));
            match parent {
                Some(p) if p.field.data_type == DataType::Struct => {}
                Some(_) => {
                    return Err(DataFileError::BadFieldOrder {
                        column,
                        field,
                        problem: format!("parent {} is not a struct", c.field.parent_id),
                    });
                }
                None => {
                    return Err(DataFileError::BadFieldOrder {
                        column,
                        field,
                        problem: format!("parent {} is not an earlier column", c.field.parent_id),
                    });
                }
            }
        }
        if let DataType::FixedSizeList { dimension: 0 } = c.field.data_type {
            return Err(DataFileError::BadFieldOrder {
                column,
                field,
                problem: "fixed_size_list dimension must be at least 1".into(),
            });
        }
        for (row, v) in c.values.iter().enumerate() {
            let row = row as u64;
            if v.is_null() {
                if c.field.data_type == DataType::Struct {
                    // v2.1+ stores a struct's validity in its leaves' layers; v2.0 nowhere.
                    if version.struct_has_column() {
                        return Err(DataFileError::NullStruct { column, field, row });
                    }
                    continue;
                }
                if !c.field.nullable {
                    return Err(DataFileError::NullInNonNullable { column, field, row });
                }
            } else if !v.fits(&c.field.data_type)
                || matches!(v, Value::Struct(xs) if !xs.is_empty())
            {
                return Err(DataFileError::ValueTypeMismatch {
                    column,
                    field,
                    row,
                    expected: c.field.data_type.logical_type(),
                    found: v.kind().to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The file schema entry Lance writes for `field`: `type` 0, and the v1 `encoding` hint it
/// derives from the Arrow type (PLAIN for fixed-width types, VAR_BINARY for strings, none for
/// structs). Readers ignore the hint; writing it keeps the bytes identical to Lance's.
fn schema_field(field: &Field, uint32: bool) -> pbf::Field {
    let encoding = match field.data_type {
        DataType::Struct => pbf::Encoding::None,
        DataType::Utf8 => pbf::Encoding::VarBinary,
        _ => pbf::Encoding::Plain,
    };
    pbf::Field {
        name: field.name.clone(),
        id: field.id,
        parent_id: field.parent_id,
        logical_type: if uint32 {
            "uint32".to_string()
        } else {
            field.data_type.logical_type()
        },
        nullable: field.nullable,
        encoding: encoding as i32,
        ..Default::default()
    }
}

fn direct(type_url: &str, value: Vec<u8>) -> pb2::Encoding {
    let any = Any {
        type_url: type_url.to_string(),
        value,
    };
    pb2::Encoding {
        location: Some(pb2::encoding::Location::Direct(pb2::DirectEncoding {
            encoding: any.encode_to_vec(),
        })),
    }
}

fn pad(out: &mut Vec<u8>) {
    let target = out.len().div_ceil(PAGE_BUFFER_ALIGNMENT) * PAGE_BUFFER_ALIGNMENT;
    out.resize(target, PADDING_BYTE);
}

/// Writes `columns` as one Lance v2.0 data file and returns its bytes. The file's row count
/// (`FileDescriptor.length`) is the longest column's; columns may differ in length.
pub fn write_data_file(columns: &[ColumnData]) -> Result<Vec<u8>, DataFileError> {
    write_data_file_with(columns, &FileExtras::default())
}

/// [`write_data_file`] with schema metadata and extra global buffers ([`FileExtras`]).
pub fn write_data_file_with(
    columns: &[ColumnData],
    extras: &FileExtras,
) -> Result<Vec<u8>, DataFileError> {
    write_data_file_in(DataFileVersion::V2_0, columns, extras)
}

/// One encoded page of either version: its row count, `Any`-wrapped encoding and buffers.
struct WrittenPage {
    rows: u64,
    encoding: pb2::Encoding,
    buffers: Vec<Vec<u8>>,
}

/// The validity of each struct above column `column`, outermost first (its parents were
/// checked to be earlier struct columns by [`check_columns`]): `None` when the struct is
/// present in every row, else one flag per row (`false` where its value is NULL).
fn struct_validity(columns: &[ColumnData], column: usize) -> Vec<Option<Vec<bool>>> {
    let mut out = Vec::new();
    let mut parent = columns.get(column).map_or(-1, |c| c.field.parent_id);
    while parent != -1 && out.len() < columns.len() {
        let Some(p) = columns.iter().find(|c| c.field.id == parent) else {
            break;
        };
        let validity: Vec<bool> = p.values.iter().map(|v| !v.is_null()).collect();
        out.push((!validity.iter().all(|b| *b)).then_some(validity));
        parent = p.field.parent_id;
    }
    out.reverse();
    out
}

/// The page of column `column` in `version`, or `None` when the column has no page (an empty
/// leaf) or, in v2.1+, no column at all (a struct: see [`DataFileVersion::struct_has_column`]).
fn written_page<E: std::fmt::Display>(
    version: DataFileVersion,
    columns: &[ColumnData],
    column: usize,
    edit: &PageEdit<'_, E>,
) -> Result<Option<WrittenPage>, DataFileError> {
    let Some(c) = columns.get(column) else {
        return Ok(None);
    };
    match version.grammar() {
        None => Ok(
            encode_page(&c.field.data_type, &c.values).map(|page| WrittenPage {
                rows: page.rows,
                encoding: direct(ARRAY_ENCODING_URL, page.encoding.encode_to_vec()),
                buffers: page.buffers,
            }),
        ),
        Some(grammar) => {
            let structs = struct_validity(columns, column);
            let page = encode_structural_page_in(grammar, &c.field.data_type, &c.values, &structs)
                .map_err(|too_large| DataFileError::BadFieldOrder {
                    column,
                    field: c.field.id,
                    problem: format!(
                        "a mini-block chunk of {} bytes does not fit the u32 chunk word",
                        too_large.bytes
                    ),
                })?;
            let page = match page {
                Some(page) => edit(grammar, column, c, structs.len(), page).map_err(|refusal| {
                    DataFileError::BadFieldOrder {
                        column,
                        field: c.field.id,
                        problem: refusal.to_string(),
                    }
                })?,
                None => None,
            };
            Ok(page.map(|page| WrittenPage {
                rows: page.rows,
                encoding: direct(PAGE_LAYOUT_URL, page.layout.encode_to_vec()),
                buffers: page.buffers,
            }))
        }
    }
}

/// [`write_data_file_with`] in a chosen format version. Columns are given in pre-order with
/// struct columns in both versions; in v2.2 a struct column contributes its schema entry and
/// its validity, which each leaf below it stores as a layer of its definition levels (a NULL
/// struct is refused in v2.0, which cannot store one).
pub fn write_data_file_in(
    version: DataFileVersion,
    columns: &[ColumnData],
    extras: &FileExtras,
) -> Result<Vec<u8>, DataFileError> {
    write_data_file_edited(version, columns, extras, &keep_page)
}

/// Replaces a v2.1+ page before it is written: called with the file's grammar, the column's
/// index, its data, the number of structs around it and the page [`encode_structural_page_in`]
/// made; returns the page to write (`None`: none), or why it cannot, as the edit's own error
/// `E` (the writer names the column and field around it).
pub type PageEdit<'a, E> = dyn Fn(Grammar, usize, &ColumnData, usize, StructuralPage) -> Result<Option<StructuralPage>, E>
    + 'a;

/// The page edit that changes nothing, and so cannot fail.
pub fn keep_page(
    _: Grammar,
    _: usize,
    _: &ColumnData,
    _: usize,
    page: StructuralPage,
) -> Result<Option<StructuralPage>, std::convert::Infallible> {
    Ok(Some(page))
}

/// [`write_data_file_in`] with each v2.1+ page passed through `edit` first. The corpus uses it
/// to write damaged files (a page whose layout breaks a rule of the format), so what `edit`
/// returns is written as it is, unchecked; v2.0 pages are written unchanged.
pub fn write_data_file_edited<E: std::fmt::Display>(
    version: DataFileVersion,
    columns: &[ColumnData],
    extras: &FileExtras,
    edit: &PageEdit<'_, E>,
) -> Result<Vec<u8>, DataFileError> {
    check_columns(version, columns)?;
    if let Some((column, c)) = columns
        .iter()
        .enumerate()
        .find(|(_, c)| c.uint32 && c.field.data_type != DataType::Int32)
    {
        return Err(DataFileError::BadFieldOrder {
            column,
            field: c.field.id,
            problem: "a uint32 column must carry int32 bit patterns".into(),
        });
    }
    let mut out: Vec<u8> = Vec::new();
    let mut extra_extents = Vec::with_capacity(extras.global_buffers.len());
    for b in &extras.global_buffers {
        extra_extents.push(Extent {
            position: out.len() as u64,
            size: b.len() as u64,
        });
        out.extend_from_slice(b);
        pad(&mut out);
    }
    let column_encoding = enc::ColumnEncoding {
        column_encoding: Some(enc::column_encoding::ColumnEncoding::Values(())),
    };
    let mut metadata = Vec::with_capacity(columns.len());
    for (column, c) in columns.iter().enumerate() {
        if c.field.data_type == DataType::Struct && !version.struct_has_column() {
            continue;
        }
        let mut pages = Vec::new();
        if let Some(page) = written_page(version, columns, column, edit)? {
            let mut buffer_offsets = Vec::with_capacity(page.buffers.len());
            let mut buffer_sizes = Vec::with_capacity(page.buffers.len());
            for b in &page.buffers {
                buffer_offsets.push(out.len() as u64);
                buffer_sizes.push(b.len() as u64);
                out.extend_from_slice(b);
                pad(&mut out);
            }
            pages.push(pb2::column_metadata::Page {
                buffer_offsets,
                buffer_sizes,
                length: page.rows,
                encoding: Some(page.encoding),
                priority: 0,
            });
        }
        metadata.push(pb2::ColumnMetadata {
            encoding: Some(direct(COLUMN_ENCODING_URL, column_encoding.encode_to_vec())),
            pages,
            buffer_offsets: Vec::new(),
            buffer_sizes: Vec::new(),
        });
    }
    let length = columns
        .iter()
        .map(|c| c.values.len() as u64)
        .max()
        .unwrap_or(0);
    let descriptor = pbf::FileDescriptor {
        schema: Some(pbf::Schema {
            fields: columns
                .iter()
                .map(|c| schema_field(&c.field, c.uint32))
                .collect(),
            metadata: extras.metadata.clone(),
        }),
        length,
    };
    let descriptor_extent = Extent {
        position: out.len() as u64,
        size: 0,
    };
    out.extend_from_slice(&descriptor.encode_to_vec());
    let descriptor_extent = Extent {
        size: out.len() as u64 - descriptor_extent.position,
        ..descriptor_extent
    };
    let column_meta_start = out.len() as u64;
    let mut column_extents = Vec::with_capacity(metadata.len());
    for m in &metadata {
        let position = out.len() as u64;
        out.extend_from_slice(&m.encode_to_vec());
        column_extents.push(Extent {
            position,
            size: out.len() as u64 - position,
        });
    }
    let cmo_table_start = out.len() as u64;
    out.extend_from_slice(&offset_table_bytes(&column_extents));
    let gbo_table_start = out.len() as u64;
    let mut global_extents = vec![descriptor_extent];
    global_extents.extend(extra_extents);
    out.extend_from_slice(&offset_table_bytes(&global_extents));
    let footer = Footer {
        column_meta_start,
        cmo_table_start,
        gbo_table_start,
        num_global_buffers: u32::try_from(global_extents.len()).unwrap_or(u32::MAX),
        num_columns: u32::try_from(metadata.len()).unwrap_or(u32::MAX),
        version: version.footer(),
    };
    out.reserve(FOOTER_LEN);
    out.extend_from_slice(&footer.to_bytes());
    Ok(out)
}
