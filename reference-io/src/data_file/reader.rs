//! Reading a Lance data file of format v2.0, v2.1 or v2.2: its container, schema buffer and
//! column metadata up front, and any column's values on request, through one API for all three.
//!
//! Invariant: [`read_data_file`] decodes and checks every structure except page contents: after
//! it succeeds each page's buffers lie inside the data region, each page's encoding (a v2.0
//! `ArrayEncoding` tree or a v2.1+ `PageLayout`) has been decoded from its `Any` envelope and,
//! for v2.1+, checked against the grammar of the file's version, and each column's row count is
//! known, fits in `u64` and does not exceed the file's declared `length`.
//! [`DataFileContents::column`] then decodes pages with [`super::page_decode`] (v2.0) or
//! [`super::structural`] (v2.1+), which check contents against these numbers; a column of
//! several pages is their values joined in page order, each page copied once. The file schema
//! is reported but never used to decode: the caller's expected [`DataType`] (from the manifest)
//! decides, as in Lance.
//!
//! Columns and fields: in v2.0 every schema field has a column, in pre-order (a struct's
//! column is a header). In v2.1+ only leaves have columns, in pre-order of the leaves, and a
//! struct's validity lives in each leaf's definition levels.
//! [`DataFileContents::column_field`] says which field a column holds and
//! [`DataFileContents::struct_validity`] gives the validity of the structs around a leaf.
//!
//! The file need not be held whole: [`read_data_file_in`] parses it from its metadata region
//! (everything from global buffer 0 or the column metadata, whichever comes first, to the end)
//! and decides exactly what [`read_data_file`] decides from the whole file, since every check
//! before page contents reads only that region and the file's length. Its columns are then
//! decoded from each page's bytes as the caller fetches them
//! ([`DataFileContents::column_array_with`]: one page's buffers at a time).

use std::borrow::Cow;
use std::collections::BTreeMap;

use prost::Message;

use super::DataFileError;
use super::MAX_DECODED_VALUES;
use super::any::{ARRAY_ENCODING_URL, Any, COLUMN_ENCODING_URL, names_message};
use super::container::{Container, Extent, FileVersion, Footer, Region};
use super::page_decode::{Kind, MAX_ENCODING_DEPTH, PageData, depth, describe};
use super::structural::{Site, assemble, page_layout};
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, PrimitiveBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, StringArray, make_array, new_empty_array};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_data::transform::MutableArrayData;
use lance_reference::model::{Column as StoredColumn, DataType, Value};
use lance_reference::proto::lance::encodings as enc;
use lance_reference::proto::lance::encodings21 as enc21;
use lance_reference::proto::lance::file as pbf;
use lance_reference::proto::lance::file::v2 as pb2;

/// One entry of the file's own schema (informational: decoding follows the caller's types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileField {
    /// Field id as written (may be negative for hidden system columns).
    pub id: i32,
    /// Parent field id, `-1` at top level.
    pub parent_id: i32,
    /// Field name.
    pub name: String,
    /// Lance logical type string (`int32`, `string`, `fixed_size_list:float:8`, ...).
    pub logical_type: String,
    /// Declared nullability.
    pub nullable: bool,
}

/// The encoding of one page: a v2.0 encoding tree or a v2.1+ page layout.
#[derive(Debug, Clone, PartialEq)]
enum PageEncoding {
    V2_0(enc::ArrayEncoding),
    Structural(enc21::PageLayout),
}

/// One page of a column, as read from its metadata.
#[derive(Debug, Clone, PartialEq)]
struct Page {
    rows: u64,
    buffers: Vec<Extent>,
    encoding: PageEncoding,
}

/// One column: its pages in row order.
#[derive(Debug, Clone, PartialEq)]
struct Column {
    rows: u64,
    pages: Vec<Page>,
}

/// A summary of one page, for reports and interop evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSummary {
    /// Rows in the page.
    pub rows: u64,
    /// Number of page buffers.
    pub buffers: usize,
    /// The encoding tree in one line (see [`super::page_decode::describe`]).
    pub encoding: String,
}

/// A parsed data file. Borrows the file's bytes (the whole file or its metadata region);
/// columns are decoded on request.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFileContents<'a> {
    held: Region<'a>,
    path: String,
    version: FileVersion,
    num_rows: u64,
    schema: Vec<FileField>,
    schema_metadata: BTreeMap<String, Vec<u8>>,
    global_buffers: Vec<Extent>,
    columns: Vec<Column>,
    /// For each column, the index in `schema` of the field it holds.
    column_fields: Vec<usize>,
}

impl<'a> DataFileContents<'a> {
    /// The footer version: `(0,3)` or `(2,0)` for v2.0, `(2,1)`, `(2,2)`.
    pub fn version(&self) -> FileVersion {
        self.version
    }

    /// True for v2.1 and later, where only leaf fields have columns.
    pub fn is_structural(&self) -> bool {
        !self.version.is_v2_0()
    }

    /// The file schema field that column `index` holds. In v2.0 that is `schema()[index]`; in
    /// v2.1+ struct fields have no column, so columns are the leaf fields in pre-order.
    pub fn column_field(&self, index: usize) -> Option<&FileField> {
        self.column_fields
            .get(index)
            .and_then(|&f| self.schema.get(f))
    }

    /// The column that holds the schema field with id `field_id`, if any (none for a struct in
    /// v2.1+).
    pub fn field_column(&self, field_id: i32) -> Option<usize> {
        self.column_fields
            .iter()
            .position(|&f| self.schema.get(f).is_some_and(|x| x.id == field_id))
    }

    /// The validity of each struct that encloses the field of column `index`, **outermost
    /// first**, one entry per enclosing struct field (its parents in the schema); `None` when
    /// every row of that struct is valid. A row of a struct is valid when it and every struct
    /// around it are valid. v2.1+ files store this in the leaf's definition levels; a v2.0 file
    /// stores no struct validity (its struct header columns have none), so every entry is
    /// `None` there.
    pub fn struct_validity(&self, index: usize) -> Result<Vec<Option<NullBuffer>>, DataFileError> {
        self.struct_validity_with(index, |span| self.held_page(span))
    }

    /// [`Self::struct_validity`], each page's buffers fetched by `fetch` (given the extent from
    /// the page's first buffer to its last, it returns exactly those bytes).
    pub fn struct_validity_with<'b, E: From<DataFileError>>(
        &self,
        index: usize,
        mut fetch: impl FnMut(Extent) -> Result<Cow<'b, [u8]>, E>,
    ) -> Result<Vec<Option<NullBuffer>>, E> {
        let column = self.column_meta(index)?;
        let depth = self.struct_depth(index);
        if !self.is_structural() {
            return Ok(vec![None; depth]);
        }
        let mut layers: Vec<Vec<BooleanBuffer>> = vec![Vec::new(); depth];
        for (p, page) in column.pages.iter().enumerate() {
            let PageEncoding::Structural(layout) = &page.encoding else {
                continue;
            };
            let site = Site::new(&self.path, format!("ColumnMetadata[{index}].pages[{p}]"));
            let (start, bytes) = page_bytes(page, &mut fetch)?;
            let held = Region {
                start,
                bytes: &bytes,
            };
            let (decoded, rows) = self.structural_page(layout, page, held, &site)?;
            let struct_layers = assemble::struct_layers(&decoded, rows);
            if struct_layers.len() != depth {
                return Err(E::from(site.invalid(format!(
                    "the page has {} struct layers but the column's field is inside {depth} structs",
                    struct_layers.len()
                ))));
            }
            // Inner-most first in the page; outermost first in the answer.
            for (k, b) in struct_layers.into_iter().rev().enumerate() {
                layers[k].push(b);
            }
        }
        Ok(layers
            .into_iter()
            .map(|parts| {
                let mut all = arrow_buffer::BooleanBufferBuilder::new(column.rows as usize);
                for b in &parts {
                    all.append_buffer(b);
                }
                let nulls = NullBuffer::new(all.finish());
                (nulls.null_count() > 0).then_some(nulls)
            })
            .collect())
    }

    /// How many struct fields enclose the field of column `index`.
    fn struct_depth(&self, index: usize) -> usize {
        let mut depth = 0;
        let Some(mut field) = self.column_field(index) else {
            return 0;
        };
        while field.parent_id >= 0 && depth <= self.schema.len() {
            match self.schema.iter().find(|f| f.id == field.parent_id) {
                Some(parent) => {
                    depth += 1;
                    field = parent;
                }
                None => break,
            }
        }
        depth
    }

    fn column_meta(&self, index: usize) -> Result<&Column, DataFileError> {
        self.columns
            .get(index)
            .ok_or_else(|| DataFileError::NoSuchColumn {
                file: self.path.clone(),
                column: index,
                num_columns: self.columns.len(),
            })
    }

    /// The bytes of `span` from the bytes held (every page's, when the whole file is held).
    fn held_page(&self, span: Extent) -> Result<Cow<'a, [u8]>, DataFileError> {
        self.held
            .get(span)
            .map(Cow::Borrowed)
            .ok_or_else(|| DataFileError::OutOfBounds {
                file: self.path.clone(),
                structure: format!("page buffers at {} with size {}", span.position, span.size),
                problem: "not among the bytes read".into(),
            })
    }

    /// Decodes one v2.1+ page from `held`, which holds its buffers.
    fn structural_page(
        &self,
        layout: &enc21::PageLayout,
        page: &Page,
        held: Region<'_>,
        site: &Site,
    ) -> Result<(super::structural::mini_block::PageValues, usize), DataFileError> {
        let rows = site.check_count(page.rows)?;
        let mut buffers = Vec::with_capacity(page.buffers.len());
        for (b, e) in page.buffers.iter().enumerate() {
            buffers.push(
                held.get(*e)
                    .ok_or_else(|| site.oob(format!("buffer {b} lies outside the file")))?,
            );
        }
        let decoded = page_layout::decode(layout, &buffers, rows, &site.at("encoding"))?;
        Ok((decoded, rows))
    }

    /// `FileDescriptor.length`: the declared row count (the longest column).
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// The file's schema fields, in pre-order.
    pub fn schema(&self) -> &[FileField] {
        &self.schema
    }

    /// The file schema's key/value metadata.
    pub fn schema_metadata(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.schema_metadata
    }

    /// The bytes of global buffer `index` (0 is the `FileDescriptor`), when the file has it
    /// and its bytes are held (every buffer of a file read whole; buffer 0 always).
    pub fn global_buffer(&self, index: usize) -> Option<&'a [u8]> {
        self.global_buffers
            .get(index)
            .and_then(|g| self.held.get(*g))
    }

    /// Number of global buffers, the descriptor included.
    pub fn num_global_buffers(&self) -> usize {
        self.global_buffers.len()
    }

    /// Number of columns.
    pub fn num_columns(&self) -> usize {
        self.columns.len()
    }

    /// Rows stored in column `index` (the sum of its page lengths).
    pub fn column_rows(&self, index: usize) -> Option<u64> {
        self.columns.get(index).map(|c| c.rows)
    }

    /// The pages of column `index`, summarised.
    pub fn page_summaries(&self, index: usize) -> Option<Vec<PageSummary>> {
        self.columns.get(index).map(|c| {
            c.pages
                .iter()
                .map(|p| PageSummary {
                    rows: p.rows,
                    buffers: p.buffers.len(),
                    encoding: match &p.encoding {
                        PageEncoding::V2_0(e) => describe(e),
                        PageEncoding::Structural(l) => page_layout::describe(l),
                    },
                })
                .collect()
        })
    }

    /// Decodes column `index` as values of `data_type` (the type the manifest gives its field).
    pub fn column(&self, index: usize, data_type: &DataType) -> Result<Vec<Value>, DataFileError> {
        self.column_array(index, data_type)
            .map(|array| StoredColumn::new(array).values())
    }

    /// Decodes column `index` as an array of `data_type`'s stored type
    /// ([`lance_reference::model::stored_type`]), its pages concatenated.
    pub fn column_array(
        &self,
        index: usize,
        data_type: &DataType,
    ) -> Result<ArrayRef, DataFileError> {
        self.column_array_with(index, data_type, |span| self.held_page(span))
    }

    /// [`Self::column_array`], each page's buffers fetched by `fetch` (given the extent from
    /// the page's first buffer to its last, it returns exactly those bytes), one page at a
    /// time: only one page's bytes are held at once.
    pub fn column_array_with<'b, E: From<DataFileError>>(
        &self,
        index: usize,
        data_type: &DataType,
        mut fetch: impl FnMut(Extent) -> Result<Cow<'b, [u8]>, E>,
    ) -> Result<ArrayRef, E> {
        let column = self.column_meta(index)?;
        if column.rows > MAX_DECODED_VALUES {
            return Err(E::from(DataFileError::RowLimitExceeded {
                file: self.path.clone(),
                structure: format!("ColumnMetadata[{index}]"),
                rows: column.rows,
                limit: MAX_DECODED_VALUES,
            }));
        }
        let kind = Kind::of(data_type);
        self.check_leaf_kind(index, kind)?;
        let mut pages = Gathered::new(kind, column.pages.len(), column.rows);
        for p in 0..column.pages.len() {
            pages.push(self.decode_page(index, p, kind, &mut fetch)?);
        }
        pages.finish(kind).map_err(|e| {
            E::from(DataFileError::InvalidPageData {
                file: self.path.clone(),
                structure: format!("ColumnMetadata[{index}].pages"),
                problem: format!("pages do not concatenate: {e}"),
            })
        })
    }

    /// The number of pages of column `index`.
    pub fn column_pages(&self, index: usize) -> Option<usize> {
        self.columns.get(index).map(|c| c.pages.len())
    }

    /// Page `p` of column `index` alone, decoded as [`Self::column_array_with`] decodes it
    /// (its buffers fetched by `fetch`): a reader going through a column page by page holds
    /// one page's values at a time, and the value limit ([`MAX_DECODED_VALUES`]) bounds each
    /// page instead of the column.
    pub fn page_array_with<'b, E: From<DataFileError>>(
        &self,
        index: usize,
        p: usize,
        data_type: &DataType,
        mut fetch: impl FnMut(Extent) -> Result<Cow<'b, [u8]>, E>,
    ) -> Result<ArrayRef, E> {
        let column = self.column_meta(index)?;
        let rows = column.pages.get(p).map_or(0, |page| page.rows);
        if rows > MAX_DECODED_VALUES {
            return Err(E::from(DataFileError::RowLimitExceeded {
                file: self.path.clone(),
                structure: format!("ColumnMetadata[{index}].pages[{p}]"),
                rows,
                limit: MAX_DECODED_VALUES,
            }));
        }
        let kind = Kind::of(data_type);
        self.check_leaf_kind(index, kind)?;
        self.decode_page(index, p, kind, &mut fetch)
    }

    /// Refuses reading a v2.1+ file's column as a struct before any page is looked at, so that
    /// a column without pages is refused as one with pages is (each page's decoder refuses it
    /// too).
    fn check_leaf_kind(&self, index: usize, kind: Kind) -> Result<(), DataFileError> {
        if self.is_structural() && kind == Kind::Struct {
            let site = Site::new(&self.path, format!("ColumnMetadata[{index}]"));
            return Err(site.mismatch(
                "a struct column",
                super::structural::assemble::LEAF_COLUMNS_ONLY,
            ));
        }
        Ok(())
    }

    /// Decodes page `p` of column `index` (which exists) as values of `kind`.
    fn decode_page<'b, E: From<DataFileError>>(
        &self,
        index: usize,
        p: usize,
        kind: Kind,
        fetch: &mut impl FnMut(Extent) -> Result<Cow<'b, [u8]>, E>,
    ) -> Result<ArrayRef, E> {
        let column = self.column_meta(index)?;
        let page = column.pages.get(p).ok_or_else(|| {
            E::from(DataFileError::InvalidPageData {
                file: self.path.clone(),
                structure: format!("ColumnMetadata[{index}].pages"),
                problem: format!("no page {p} among {}", column.pages.len()),
            })
        })?;
        let path = format!("ColumnMetadata[{index}].pages[{p}].encoding");
        let (start, bytes) = page_bytes(page, fetch)?;
        let held = Region {
            start,
            bytes: &bytes,
        };
        let values = match &page.encoding {
            PageEncoding::V2_0(encoding) => {
                let data = PageData {
                    file: &self.path,
                    bytes: held,
                    buffers: &page.buffers,
                };
                data.decode(encoding, kind, page.rows, &path)?
            }
            PageEncoding::Structural(layout) => {
                let site = Site::new(&self.path, format!("ColumnMetadata[{index}].pages[{p}]"));
                let (decoded, rows) = self.structural_page(layout, page, held, &site)?;
                assemble::page_array(decoded, kind, rows, &site.at("encoding"))?
            }
        };
        drop(bytes);
        if values.len() as u64 != page.rows {
            return Err(E::from(DataFileError::InvalidPageData {
                file: self.path.clone(),
                structure: path,
                problem: format!("decoded {} values for {} rows", values.len(), page.rows),
            }));
        }
        Ok(values)
    }
}

/// A column's decoded pages on their way to being the column's one array. A column of several
/// pages of a primitive type, `bool` or `utf8` is appended page by page into a builder made for
/// the whole column, and each page is dropped once appended, so the column never exists twice
/// (every page and their concatenation); the array equals what [`join_pages`] gives for the
/// same pages. Any other column, and a column of one page, keeps its pages and joins them at
/// the end with [`join_pages`].
enum Gathered {
    Pages(Vec<ArrayRef>),
    Int32(PrimitiveBuilder<Int32Type>),
    Int64(PrimitiveBuilder<Int64Type>),
    UInt64(PrimitiveBuilder<UInt64Type>),
    Float32(PrimitiveBuilder<Float32Type>),
    Float64(PrimitiveBuilder<Float64Type>),
    Bool(BooleanBuilder),
    /// Strings, and the rows of the whole column (the first page tells how many bytes a row
    /// takes, for the values buffer's first size).
    Utf8(Option<StringBuilder>, usize),
}

/// The most bytes [`Gathered`] allocates for a string column's values on a guess.
const GUESSED_BYTES: usize = 1 << 26;

impl Gathered {
    /// The gathering of a column of `kind` with `pages` pages and `rows` rows (at most
    /// [`MAX_DECODED_VALUES`], checked by the caller).
    fn new(kind: Kind, pages: usize, rows: u64) -> Gathered {
        let rows = usize::try_from(rows).unwrap_or(0);
        if pages < 2 {
            return Gathered::Pages(Vec::with_capacity(pages));
        }
        match kind {
            Kind::Int32 => Gathered::Int32(PrimitiveBuilder::with_capacity(rows)),
            Kind::Int64 => Gathered::Int64(PrimitiveBuilder::with_capacity(rows)),
            Kind::UInt64 => Gathered::UInt64(PrimitiveBuilder::with_capacity(rows)),
            Kind::Float32 => Gathered::Float32(PrimitiveBuilder::with_capacity(rows)),
            Kind::Float64 => Gathered::Float64(PrimitiveBuilder::with_capacity(rows)),
            Kind::Bool => Gathered::Bool(BooleanBuilder::with_capacity(rows)),
            Kind::Utf8 => Gathered::Utf8(None, rows),
            _ => Gathered::Pages(Vec::with_capacity(pages)),
        }
    }

    /// Appends the next page (an array of the column's kind, as every page decodes to); a page
    /// of another type ends the appending: the pages are then concatenated at the end, which
    /// reports it.
    fn push(&mut self, page: ArrayRef) {
        let appended = match self {
            Gathered::Pages(pages) => {
                pages.push(page);
                return;
            }
            Gathered::Int32(b) => page.as_primitive_opt().map(|a| b.append_array(a)),
            Gathered::Int64(b) => page.as_primitive_opt().map(|a| b.append_array(a)),
            Gathered::UInt64(b) => page.as_primitive_opt().map(|a| b.append_array(a)),
            Gathered::Float32(b) => page.as_primitive_opt().map(|a| b.append_array(a)),
            Gathered::Float64(b) => page.as_primitive_opt().map(|a| b.append_array(a)),
            Gathered::Bool(b) => page.as_boolean_opt().map(|a| b.append_array(a)),
            Gathered::Utf8(b, rows) => page.as_string_opt::<i32>().and_then(|a| {
                let b = b.get_or_insert_with(|| {
                    // As many bytes per row as the first page holds, for every row: a guess
                    // from untrusted bytes, so never more than `GUESSED_BYTES` ahead of what
                    // is appended (past it the builder grows as values arrive).
                    let per_row = a.value_data().len().div_ceil(a.len().max(1));
                    let guess = per_row.saturating_mul(*rows).min(GUESSED_BYTES);
                    StringBuilder::with_capacity(*rows, guess)
                });
                // Appending fails only past i32 offsets, where concatenating fails too.
                b.append_array(a).ok()
            }),
        };
        if appended.is_none() {
            let mut pages: Vec<ArrayRef> = self.take().into_iter().collect();
            pages.push(page);
            *self = Gathered::Pages(pages);
        }
    }

    /// What was appended so far, as one array (none when nothing was).
    fn take(&mut self) -> Option<ArrayRef> {
        let finished: ArrayRef = match self {
            Gathered::Pages(_) | Gathered::Utf8(None, _) => return None,
            Gathered::Int32(b) => Arc::new(b.finish()),
            Gathered::Int64(b) => Arc::new(b.finish()),
            Gathered::UInt64(b) => Arc::new(b.finish()),
            Gathered::Float32(b) => Arc::new(b.finish()),
            Gathered::Float64(b) => Arc::new(b.finish()),
            Gathered::Bool(b) => Arc::new(b.finish()),
            Gathered::Utf8(Some(b), _) => Arc::new(b.finish()),
        };
        Some(finished)
    }

    /// The column's array; why the pages do not join, when they do not ([`join_pages`]).
    fn finish(mut self, kind: Kind) -> Result<ArrayRef, String> {
        if let Some(array) = self.take() {
            return Ok(array);
        }
        let Gathered::Pages(pages) = self else {
            return Ok(new_empty_array(&kind.arrow_type()));
        };
        match pages.as_slice() {
            [] => Ok(new_empty_array(&kind.arrow_type())),
            [one] => Ok(one.clone()),
            [first, rest @ ..] => join_pages(first, rest),
        }
    }
}

/// A column's pages `first` and `rest` as one array, in page order, each page's rows copied
/// whole once (values, offsets and validity together). The pages must share one Arrow type,
/// and text must stay within what a `Utf8` array's 32-bit offsets address; either problem is
/// named before anything is copied.
fn join_pages(first: &ArrayRef, rest: &[ArrayRef]) -> Result<ArrayRef, String> {
    if let Some(other) = rest.iter().find(|p| p.data_type() != first.data_type()) {
        return Err(format!(
            "a page of type {} among pages of type {}",
            other.data_type(),
            first.data_type()
        ));
    }
    let pages: Vec<ArrayData> = std::iter::once(first)
        .chain(rest)
        .map(|p| p.to_data())
        .collect();
    let text_bytes: usize = std::iter::once(first)
        .chain(rest)
        .filter_map(|p| p.as_any().downcast_ref::<StringArray>())
        .map(|text| {
            let offsets = text.value_offsets();
            match (offsets.first(), offsets.last()) {
                (Some(&start), Some(&end)) => (end - start) as usize,
                _ => 0,
            }
        })
        .sum();
    if text_bytes > i32::MAX as usize {
        return Err(format!(
            "{text_bytes} bytes of text, past what 32-bit offsets address"
        ));
    }
    let rows = pages.iter().map(ArrayData::len).sum();
    let mut joined = MutableArrayData::new(pages.iter().collect(), false, rows);
    for (page, data) in pages.iter().enumerate() {
        joined.extend(page, 0, data.len());
    }
    Ok(make_array(joined.freeze()))
}

/// The bytes of `page`'s buffers, from its first buffer's start to its last buffer's end,
/// fetched by `fetch`, with the file position they start at; none for a page without buffers.
fn page_bytes<'b, E>(
    page: &Page,
    fetch: &mut impl FnMut(Extent) -> Result<Cow<'b, [u8]>, E>,
) -> Result<(u64, Cow<'b, [u8]>), E> {
    let start = page.buffers.iter().map(|b| b.position).min();
    // Every buffer's end was checked not to overflow when the metadata was read.
    let end = page.buffers.iter().filter_map(|b| b.end()).max();
    match (start, end) {
        (Some(start), Some(end)) => {
            let span = Extent {
                position: start,
                size: end.saturating_sub(start),
            };
            Ok((start, fetch(span)?))
        }
        _ => Ok((0, Cow::Borrowed(&[]))),
    }
}

/// Context for error construction while reading one file.
struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn protobuf(&self, structure: &str, e: prost::DecodeError) -> DataFileError {
        DataFileError::MalformedProtobuf {
            file: self.file.to_string(),
            structure: structure.to_string(),
            problem: e.to_string(),
        }
    }

    fn missing(&self, structure: &str) -> DataFileError {
        DataFileError::MissingField {
            file: self.file.to_string(),
            structure: structure.to_string(),
        }
    }

    fn unsupported(&self, structure: &str, encoding: String) -> DataFileError {
        DataFileError::UnsupportedEncoding {
            file: self.file.to_string(),
            structure: structure.to_string(),
            encoding,
        }
    }

    fn oob(&self, structure: &str, problem: String) -> DataFileError {
        DataFileError::OutOfBounds {
            file: self.file.to_string(),
            structure: structure.to_string(),
            problem,
        }
    }

    /// The `Any` payload of a direct encoding whose type URL names `expected_url`.
    fn direct_payload(
        &self,
        e: Option<&pb2::Encoding>,
        expected_url: &str,
        structure: &str,
    ) -> Result<Vec<u8>, DataFileError> {
        let e = e.ok_or_else(|| self.missing(structure))?;
        match &e.location {
            None => Err(self.missing(&format!("{structure}.location"))),
            Some(pb2::encoding::Location::Indirect(_)) => {
                Err(self.unsupported(structure, "indirect (deferred) encoding".into()))
            }
            Some(pb2::encoding::Location::None(())) => {
                Err(self.unsupported(structure, "encoding location `none`".into()))
            }
            Some(pb2::encoding::Location::Direct(d)) => {
                let any = Any::decode(d.encoding.as_slice())
                    .map_err(|e| self.protobuf(&format!("{structure}.direct"), e))?;
                if !names_message(&any.type_url, expected_url) {
                    return Err(self.unsupported(structure, format!("type URL {:?}", any.type_url)));
                }
                Ok(any.value)
            }
        }
    }
}

/// Parses the container, the schema buffer and every column's metadata of a v2.0, v2.1 or v2.2
/// data file. `path_for_errors` names the file in every error.
pub fn read_data_file<'a>(
    bytes: &'a [u8],
    path_for_errors: &str,
) -> Result<DataFileContents<'a>, DataFileError> {
    read_data_file_in(Region::whole(bytes), bytes.len() as u64, path_for_errors)
}

/// [`read_data_file`] of a file of `len` bytes from `bytes`, which holds it from global buffer
/// 0 or `column_meta_start` (whichever comes first) to its end: the same answer and the same
/// errors as from the whole file (the module docs). Its columns' pages are then fetched with
/// [`DataFileContents::column_array_with`].
pub fn read_data_file_in<'a>(
    bytes: Region<'a>,
    len: u64,
    path_for_errors: &str,
) -> Result<DataFileContents<'a>, DataFileError> {
    let ctx = Ctx {
        file: path_for_errors,
    };
    let layout = Container::parse_region(bytes, len, path_for_errors)?;
    let gb0 = "global buffer 0 (FileDescriptor)";
    let descriptor_bytes = layout
        .global_buffers
        .first()
        .and_then(|g| bytes.get(*g))
        .ok_or_else(|| ctx.missing(gb0))?;
    let descriptor =
        pbf::FileDescriptor::decode(descriptor_bytes).map_err(|e| ctx.protobuf(gb0, e))?;
    let schema = descriptor
        .schema
        .ok_or_else(|| ctx.missing("FileDescriptor.schema"))?;
    let fields: Vec<FileField> = schema
        .fields
        .into_iter()
        .map(|f| FileField {
            id: f.id,
            parent_id: f.parent_id,
            name: f.name,
            logical_type: f.logical_type,
            nullable: f.nullable,
        })
        .collect();
    let version = layout.footer.version;
    let structural = !version.is_v2_0();
    let column_fields = column_fields(&fields, structural, layout.columns.len(), &ctx)?;
    let data_end = layout.footer.column_meta_start;
    let mut columns = Vec::with_capacity(layout.columns.len());
    for (i, extent) in layout.columns.iter().enumerate() {
        let structure = format!("ColumnMetadata[{i}]");
        let raw = bytes
            .get(*extent)
            .ok_or_else(|| ctx.oob(&structure, "outside the file".into()))?;
        let meta = pb2::ColumnMetadata::decode(raw).map_err(|e| ctx.protobuf(&structure, e))?;
        let payload = ctx.direct_payload(
            meta.encoding.as_ref(),
            COLUMN_ENCODING_URL,
            &format!("{structure}.encoding"),
        )?;
        let column_encoding = enc::ColumnEncoding::decode(payload.as_slice())
            .map_err(|e| ctx.protobuf(&format!("{structure}.encoding (ColumnEncoding)"), e))?;
        match column_encoding.column_encoding {
            Some(enc::column_encoding::ColumnEncoding::Values(())) => {}
            Some(enc::column_encoding::ColumnEncoding::ZoneIndex(_)) => {
                return Err(ctx.unsupported(
                    &format!("{structure}.encoding"),
                    "zone_index column encoding".into(),
                ));
            }
            Some(enc::column_encoding::ColumnEncoding::Blob(_)) => {
                return Err(ctx.unsupported(
                    &format!("{structure}.encoding"),
                    "blob column encoding".into(),
                ));
            }
            None => {
                return Err(ctx.unsupported(
                    &format!("{structure}.encoding"),
                    "empty or unknown ColumnEncoding".into(),
                ));
            }
        }
        if meta.buffer_offsets.len() != meta.buffer_sizes.len() {
            return Err(ctx.oob(
                &structure,
                format!(
                    "{} buffer_offsets but {} buffer_sizes",
                    meta.buffer_offsets.len(),
                    meta.buffer_sizes.len()
                ),
            ));
        }
        let mut pages = Vec::with_capacity(meta.pages.len());
        let mut rows: u64 = 0;
        for (p, page) in meta.pages.iter().enumerate() {
            let ps = format!("{structure}.pages[{p}]");
            if page.buffer_offsets.len() != page.buffer_sizes.len() {
                return Err(ctx.oob(
                    &ps,
                    format!(
                        "{} buffer_offsets but {} buffer_sizes",
                        page.buffer_offsets.len(),
                        page.buffer_sizes.len()
                    ),
                ));
            }
            let mut buffers = Vec::with_capacity(page.buffer_offsets.len());
            for (b, (&position, &size)) in page
                .buffer_offsets
                .iter()
                .zip(&page.buffer_sizes)
                .enumerate()
            {
                let e = Extent { position, size };
                if e.end().is_none_or(|end| end > data_end) {
                    return Err(ctx.oob(
                        &ps,
                        format!(
                            "buffer {b} at {position} with size {size} does not end by the column metadata at {data_end}"
                        ),
                    ));
                }
                buffers.push(e);
            }
            let es = format!("{ps}.encoding");
            let encoding = if structural {
                let payload =
                    ctx.direct_payload(page.encoding.as_ref(), page_layout::PAGE_LAYOUT_URL, &es)?;
                let layout = enc21::PageLayout::decode(payload.as_slice())
                    .map_err(|e| ctx.protobuf(&format!("{es} (PageLayout)"), e))?;
                page_layout::check_grammar(&layout, version, &Site::new(ctx.file, es.clone()))?;
                PageEncoding::Structural(layout)
            } else {
                let payload =
                    ctx.direct_payload(page.encoding.as_ref(), ARRAY_ENCODING_URL, &es)?;
                let encoding = enc::ArrayEncoding::decode(payload.as_slice())
                    .map_err(|e| ctx.protobuf(&format!("{es} (ArrayEncoding)"), e))?;
                let tree_depth = depth(&encoding);
                if tree_depth > MAX_ENCODING_DEPTH {
                    return Err(ctx.unsupported(
                        &es,
                        format!(
                            "an encoding tree {tree_depth} levels deep (limit {MAX_ENCODING_DEPTH})"
                        ),
                    ));
                }
                PageEncoding::V2_0(encoding)
            };
            rows = rows
                .checked_add(page.length)
                .ok_or_else(|| ctx.oob(&ps, "the column's page lengths overflow u64".into()))?;
            pages.push(Page {
                rows: page.length,
                buffers,
                encoding,
            });
        }
        if rows > descriptor.length {
            return Err(ctx.oob(
                &structure,
                format!(
                    "pages hold {rows} rows but the file declares length {}",
                    descriptor.length
                ),
            ));
        }
        columns.push(Column { rows, pages });
    }
    Ok(DataFileContents {
        held: bytes,
        path: path_for_errors.to_string(),
        version: layout.footer.version,
        num_rows: descriptor.length,
        schema: fields,
        schema_metadata: schema.metadata,
        global_buffers: layout.global_buffers.clone(),
        columns,
        column_fields,
    })
}

/// Where the bytes [`read_data_file_in`] reads from a file of `len` bytes begin, as far as
/// `held` tells (bytes that end at the file's end: at least its last
/// [`FOOTER_LEN`](super::container::FOOTER_LEN), or all of a shorter file): `column_meta_start`
/// once the footer is held, then global buffer 0's position if it comes first, once the offset
/// tables are held; the start of `held` when it holds them already, or when its footer or
/// tables do not parse (the error [`read_data_file_in`] then reports from `held` is the whole
/// file's). A reader holding less reads from the answer on and asks again, until the answer is
/// the start of what it holds.
pub fn metadata_start(held: Region<'_>, len: u64, path_for_errors: &str) -> u64 {
    let Ok(footer) = Footer::parse(held, len, path_for_errors) else {
        return held.start;
    };
    if footer.column_meta_start < held.start {
        return footer.column_meta_start;
    }
    Container::parse_region(held, len, path_for_errors)
        .ok()
        .and_then(|c| c.global_buffers.first().map(|g| g.position))
        .map_or(held.start, |gb0| gb0.min(held.start))
}

/// The schema field of each column: every field in v2.0; the leaves (fields that are not
/// structs) in v2.1+. Lists are not among the kit's types; a list field is refused in v2.1+,
/// where its columns would not line up.
fn column_fields(
    fields: &[FileField],
    structural: bool,
    num_columns: usize,
    ctx: &Ctx,
) -> Result<Vec<usize>, DataFileError> {
    if !structural {
        return Ok((0..num_columns).collect());
    }
    let mut out = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let t = f.logical_type.as_str();
        if t == "struct" {
            continue;
        }
        if t == "list" || t == "large_list" || t.starts_with("list") || t.starts_with("large_list")
        {
            return Err(ctx.unsupported(
                &format!("FileDescriptor.schema.fields[{i}]"),
                format!("a {t} field in a v2.1+ file (the kit has no lists)"),
            ));
        }
        out.push(i);
    }
    if out.len() != num_columns {
        return Err(ctx.oob(
            "FileDescriptor.schema",
            format!(
                "{} leaf fields but the file has {num_columns} columns",
                out.len()
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Arc;

    use arrow_array::{BooleanArray, Int64Array};

    use super::*;

    #[test]
    fn pages_join_in_order_with_their_nulls() {
        let first: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        let rest: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![3, 4])),
            Arc::new(Int64Array::from(vec![None, Some(6)]).slice(1, 1)),
        ];
        let joined = join_pages(&first, &rest).unwrap();
        let want = Int64Array::from(vec![Some(1), None, Some(3), Some(4), Some(6)]);
        assert_eq!(joined.as_ref(), &want as &dyn Array);

        let first: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
        let rest: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec!["bc", ""]).slice(0, 1))];
        let joined = join_pages(&first, &rest).unwrap();
        let want = StringArray::from(vec![Some("a"), None, Some("bc")]);
        assert_eq!(joined.as_ref(), &want as &dyn Array);
    }

    #[test]
    fn pages_of_two_types_are_a_problem_not_a_panic() {
        let first: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        let rest: Vec<ArrayRef> = vec![Arc::new(BooleanArray::from(vec![true]))];
        let problem = join_pages(&first, &rest).unwrap_err();
        assert_eq!(problem, "a page of type Boolean among pages of type Int64");
    }
}
