//! Turning one v2.0 page (an `ArrayEncoding` tree plus the page's buffers) back into values,
//! as one Arrow array of the column's stored type ([`Kind::arrow_type`]).
//!
//! Invariant: decoding never reads outside a buffer and never allocates for a count the input
//! has not backed: before building `rows` values from a buffer it checks the buffer holds
//! `rows` values, and every count is first checked against [`super::MAX_DECODED_VALUES`]. Every
//! encoding this reader does not decode is refused by name ([`DataFileError::UnsupportedEncoding`])
//! and every mismatch between the tree and the expected type is reported, never guessed at.
//! A `flat` page becomes its array with one copy of its buffer; validity is a bitmap, never a
//! value per row.

use super::DataFileError;
use super::MAX_DECODED_VALUES;
use super::container::{Extent, Region};
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, FixedSizeListArray, PrimitiveArray,
    StructArray, UInt64Array, new_null_array,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType as ArrowType, Fields};
use lance_reference::model::{DataType, vector_item};
use lance_reference::proto::lance::encodings as pb;
use pb::array_encoding::ArrayEncoding as Arm;

/// What the caller expects a (sub)tree to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `bool`: one bit per value.
    Bool,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint64`.
    UInt64,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `utf8`.
    Utf8,
    /// `fixed_size_list<float32, N>`.
    Vector(u32),
    /// A struct header column.
    Struct,
    /// Unsigned integers of 8, 16, 32 or 64 bits (string end offsets, dictionary codes),
    /// returned as `uint64`.
    Code,
}

impl Kind {
    /// The kind of a column of `data_type`.
    pub fn of(data_type: &DataType) -> Kind {
        match data_type {
            DataType::Bool => Kind::Bool,
            DataType::Int32 => Kind::Int32,
            DataType::Int64 => Kind::Int64,
            DataType::UInt64 => Kind::UInt64,
            DataType::Float32 => Kind::Float32,
            DataType::Float64 => Kind::Float64,
            DataType::Utf8 => Kind::Utf8,
            DataType::FixedSizeList { dimension } => Kind::Vector(*dimension),
            DataType::Struct => Kind::Struct,
        }
    }

    /// The Arrow type of an array of this kind: a field's stored type
    /// ([`lance_reference::model::stored_type`]); `UInt64` for codes.
    pub fn arrow_type(self) -> ArrowType {
        match self {
            Kind::Bool => ArrowType::Boolean,
            Kind::Int32 => ArrowType::Int32,
            Kind::Int64 => ArrowType::Int64,
            Kind::UInt64 | Kind::Code => ArrowType::UInt64,
            Kind::Float32 => ArrowType::Float32,
            Kind::Float64 => ArrowType::Float64,
            Kind::Utf8 => ArrowType::Utf8,
            Kind::Vector(n) => {
                ArrowType::FixedSizeList(vector_item(), i32::try_from(n).unwrap_or(i32::MAX))
            }
            Kind::Struct => ArrowType::Struct(Fields::empty()),
        }
    }

    fn name(self) -> String {
        match self {
            Kind::Bool => "bool".into(),
            Kind::Int32 => "int32".into(),
            Kind::Int64 => "int64".into(),
            Kind::UInt64 => "uint64".into(),
            Kind::Float32 => "float32".into(),
            Kind::Float64 => "float64".into(),
            Kind::Utf8 => "utf8".into(),
            Kind::Vector(n) => format!("fixed_size_list<float32, {n}>"),
            Kind::Struct => "struct".into(),
            Kind::Code => "unsigned integer codes".into(),
        }
    }

    /// The `bits_per_value` a `flat` leaf of this kind may have.
    fn flat_widths(self) -> &'static [u64] {
        match self {
            Kind::Bool => &[1],
            Kind::Int32 | Kind::Float32 => &[32],
            Kind::Int64 | Kind::UInt64 | Kind::Float64 => &[64],
            Kind::Code => &[8, 16, 32, 64],
            Kind::Utf8 | Kind::Vector(_) | Kind::Struct => &[],
        }
    }
}

/// The name of an `ArrayEncoding` arm, as written in the proto.
pub fn arm_name(encoding: &pb::ArrayEncoding) -> &'static str {
    match &encoding.array_encoding {
        None => "empty or unknown ArrayEncoding",
        Some(a) => match a {
            Arm::Flat(_) => "flat",
            Arm::Nullable(_) => "nullable",
            Arm::FixedSizeList(_) => "fixed_size_list",
            Arm::List(_) => "list",
            Arm::Struct(_) => "struct",
            Arm::Binary(_) => "binary",
            Arm::Dictionary(_) => "dictionary",
            Arm::Fsst(_) => "fsst",
            Arm::PackedStruct(_) => "packed_struct",
            Arm::Bitpacked(_) => "bitpacked",
            Arm::FixedSizeBinary(_) => "fixed_size_binary",
            Arm::BitpackedForNonNeg(_) => "bitpacked_for_non_neg",
            Arm::Constant(_) => "constant",
            Arm::InlineBitpacking(_) => "inline_bitpacking",
            Arm::OutOfLineBitpacking(_) => "out_of_line_bitpacking",
            Arm::Variable(_) => "variable",
            Arm::PackedStructFixedWidthMiniBlock(_) => "packed_struct_fixed_width_mini_block",
            Arm::Block(_) => "block",
            Arm::Rle(_) => "rle",
            Arm::GeneralMiniBlock(_) => "general_mini_block",
            Arm::ByteStreamSplit(_) => "byte_stream_split",
        },
    }
}

/// A compact one-line rendering of an encoding tree, e.g.
/// `nullable.some_nulls(flat(1), flat(32))`, for summaries and reports.
pub fn describe(encoding: &pb::ArrayEncoding) -> String {
    let sub = |e: &Option<Box<pb::ArrayEncoding>>| e.as_deref().map_or("?".to_string(), describe);
    match &encoding.array_encoding {
        Some(Arm::Flat(f)) => {
            let c = if f.compression.is_some() {
                ", compressed"
            } else {
                ""
            };
            format!("flat({}{c})", f.bits_per_value)
        }
        Some(Arm::Nullable(n)) => match &n.nullability {
            Some(pb::nullable::Nullability::NoNulls(x)) => {
                format!("nullable.no_nulls({})", sub(&x.values))
            }
            Some(pb::nullable::Nullability::SomeNulls(x)) => {
                format!(
                    "nullable.some_nulls({}, {})",
                    sub(&x.validity),
                    sub(&x.values)
                )
            }
            Some(pb::nullable::Nullability::AllNulls(_)) => "nullable.all_nulls".into(),
            None => "nullable(?)".into(),
        },
        Some(Arm::FixedSizeList(f)) => {
            format!("fixed_size_list({}, {})", f.dimension, sub(&f.items))
        }
        Some(Arm::Binary(b)) => format!(
            "binary({}, {}, null_adjustment={})",
            sub(&b.indices),
            sub(&b.bytes),
            b.null_adjustment
        ),
        Some(Arm::Dictionary(d)) => format!(
            "dictionary({}, {}, items={})",
            sub(&d.indices),
            sub(&d.items),
            d.num_dictionary_items
        ),
        _ => arm_name(encoding).to_string(),
    }
}

/// The nesting depth of an encoding tree (a lone `flat` is 1). What Lance writes for the
/// supported types is at most 4 deep; the reader refuses trees deeper than
/// [`MAX_ENCODING_DEPTH`], which bounds the memory one page's decoding holds at once.
pub fn depth(encoding: &pb::ArrayEncoding) -> u32 {
    let sub = |e: &Option<Box<pb::ArrayEncoding>>| e.as_deref().map_or(0, depth);
    1 + match &encoding.array_encoding {
        Some(Arm::Nullable(n)) => match &n.nullability {
            Some(pb::nullable::Nullability::NoNulls(x)) => sub(&x.values),
            Some(pb::nullable::Nullability::SomeNulls(x)) => sub(&x.validity).max(sub(&x.values)),
            _ => 0,
        },
        Some(Arm::FixedSizeList(f)) => sub(&f.items),
        Some(Arm::Binary(b)) => sub(&b.indices).max(sub(&b.bytes)),
        Some(Arm::Dictionary(d)) => sub(&d.indices).max(sub(&d.items)),
        _ => 0,
    }
}

/// The deepest encoding tree the reader decodes.
pub const MAX_ENCODING_DEPTH: u32 = 8;

/// The buffers of one page, already checked to lie inside the file.
pub struct PageData<'a> {
    /// File path, for errors.
    pub file: &'a str,
    /// The file's bytes, holding at least the page's buffers (positions are the file's).
    pub bytes: Region<'a>,
    /// The page's buffers (`Page.buffer_offsets` / `buffer_sizes`).
    pub buffers: &'a [Extent],
}

fn required<'e>(
    e: &'e Option<Box<pb::ArrayEncoding>>,
    file: &str,
    path: &str,
) -> Result<&'e pb::ArrayEncoding, DataFileError> {
    e.as_deref().ok_or_else(|| DataFileError::MissingField {
        file: file.to_string(),
        structure: path.to_string(),
    })
}

impl PageData<'_> {
    fn mismatch(&self, path: &str, expected: Kind, found: String) -> DataFileError {
        DataFileError::EncodingTypeMismatch {
            file: self.file.to_string(),
            structure: path.to_string(),
            expected: expected.name(),
            found,
        }
    }

    fn invalid(&self, path: &str, problem: String) -> DataFileError {
        DataFileError::InvalidPageData {
            file: self.file.to_string(),
            structure: path.to_string(),
            problem,
        }
    }

    fn unsupported(&self, path: &str, encoding: String) -> DataFileError {
        DataFileError::UnsupportedEncoding {
            file: self.file.to_string(),
            structure: path.to_string(),
            encoding,
        }
    }

    /// Decodes `rows` values of `kind` from the tree `encoding` (found at `path`), as an array
    /// of [`Kind::arrow_type`].
    pub fn decode(
        &self,
        encoding: &pb::ArrayEncoding,
        kind: Kind,
        rows: u64,
        path: &str,
    ) -> Result<ArrayRef, DataFileError> {
        if rows > MAX_DECODED_VALUES {
            return Err(DataFileError::RowLimitExceeded {
                file: self.file.to_string(),
                structure: path.to_string(),
                rows,
                limit: MAX_DECODED_VALUES,
            });
        }
        let Some(a) = &encoding.array_encoding else {
            return Err(self.unsupported(path, arm_name(encoding).to_string()));
        };
        match a {
            Arm::Flat(f) => self.flat(f, kind, rows, &format!("{path}.flat")),
            Arm::Nullable(n) => self.nullable(n, kind, rows, &format!("{path}.nullable")),
            Arm::FixedSizeList(f) => {
                self.fixed_size_list(f, kind, rows, &format!("{path}.fixed_size_list"))
            }
            Arm::Binary(b) => self.binary(b, kind, rows, &format!("{path}.binary")),
            Arm::Dictionary(d) => self.dictionary(d, kind, rows, &format!("{path}.dictionary")),
            Arm::Struct(_) => {
                if kind != Kind::Struct {
                    return Err(self.mismatch(path, kind, "a struct header".into()));
                }
                Ok(Arc::new(StructArray::new_empty_fields(rows as usize, None)))
            }
            _ => Err(self.unsupported(path, arm_name(encoding).to_string())),
        }
    }

    /// The bytes of the page buffer `buffer` refers to.
    fn buffer(&self, buffer: Option<&pb::Buffer>, path: &str) -> Result<&[u8], DataFileError> {
        let buffer = buffer.ok_or_else(|| DataFileError::MissingField {
            file: self.file.to_string(),
            structure: path.to_string(),
        })?;
        match pb::buffer::BufferType::try_from(buffer.buffer_type) {
            Ok(pb::buffer::BufferType::Page) => {}
            Ok(other) => {
                return Err(self.unsupported(path, format!("{} buffer", other.as_str_name())));
            }
            Err(_) => {
                return Err(DataFileError::MalformedProtobuf {
                    file: self.file.to_string(),
                    structure: path.to_string(),
                    problem: format!("unknown buffer_type {}", buffer.buffer_type),
                });
            }
        }
        let extent = self
            .buffers
            .get(buffer.buffer_index as usize)
            .ok_or_else(|| DataFileError::OutOfBounds {
                file: self.file.to_string(),
                structure: path.to_string(),
                problem: format!(
                    "buffer_index {} but the page has {} buffers",
                    buffer.buffer_index,
                    self.buffers.len()
                ),
            })?;
        self.bytes
            .get(*extent)
            .ok_or_else(|| DataFileError::OutOfBounds {
                file: self.file.to_string(),
                structure: path.to_string(),
                problem: format!("buffer {} lies outside the file", buffer.buffer_index),
            })
    }

    fn flat(
        &self,
        f: &pb::Flat,
        kind: Kind,
        rows: u64,
        path: &str,
    ) -> Result<ArrayRef, DataFileError> {
        if let Some(c) = &f.compression {
            return Err(self.unsupported(path, format!("flat with compression {:?}", c.scheme)));
        }
        let bits = f.bits_per_value;
        if !kind.flat_widths().contains(&bits) {
            return Err(self.mismatch(path, kind, format!("flat {bits}-bit values")));
        }
        let data = self.buffer(f.buffer.as_ref(), &format!("{path}.buffer"))?;
        // bits <= 64 and rows <= MAX_DECODED_VALUES, so this cannot overflow.
        let need = (rows * bits).div_ceil(8);
        let data = data
            .get(..need as usize)
            .ok_or_else(|| DataFileError::OutOfBounds {
                file: self.file.to_string(),
                structure: path.to_string(),
                problem: format!(
                    "{rows} values of {bits} bits need {need} bytes but the buffer holds {}",
                    data.len()
                ),
            })?;
        let rows = rows as usize;
        // One copy of the values into an aligned buffer; the widths match the native types
        // (checked above), except codes, which are widened to 64 bits.
        Ok(match kind {
            Kind::Bool => Arc::new(BooleanArray::new(
                BooleanBuffer::new(Buffer::from(data), 0, rows),
                None,
            )),
            Kind::Int32 => copied::<Int32Type>(data),
            Kind::Int64 => copied::<Int64Type>(data),
            Kind::Float32 => copied::<Float32Type>(data),
            Kind::Float64 => copied::<Float64Type>(data),
            Kind::UInt64 | Kind::Code if bits == 64 => copied::<UInt64Type>(data),
            _ => {
                let width = (bits / 8) as usize;
                Arc::new(UInt64Array::from_iter_values(
                    data.chunks_exact(width.max(1)).take(rows).map(widen),
                ))
            }
        })
    }

    fn nullable(
        &self,
        n: &pb::Nullable,
        kind: Kind,
        rows: u64,
        path: &str,
    ) -> Result<ArrayRef, DataFileError> {
        use pb::nullable::Nullability;
        match &n.nullability {
            None => Err(DataFileError::MissingField {
                file: self.file.to_string(),
                structure: format!("{path}.nullability"),
            }),
            Some(Nullability::AllNulls(_)) => Ok(new_null_array(&kind.arrow_type(), rows as usize)),
            Some(Nullability::NoNulls(x)) => {
                let p = format!("{path}.no_nulls.values");
                self.decode(required(&x.values, self.file, &p)?, kind, rows, &p)
            }
            Some(Nullability::SomeNulls(x)) => {
                let pv = format!("{path}.some_nulls.validity");
                let validity = self.decode(
                    required(&x.validity, self.file, &pv)?,
                    Kind::Bool,
                    rows,
                    &pv,
                )?;
                // A NULL validity bit is no bit at all: such a row is NULL.
                let validity = validity.as_boolean();
                let valid = match validity.nulls() {
                    Some(n) => validity.values() & n.inner(),
                    None => validity.values().clone(),
                };
                let p = format!("{path}.some_nulls.values");
                let values = self.decode(required(&x.values, self.file, &p)?, kind, rows, &p)?;
                self.with_validity(values, NullBuffer::new(valid), &p)
            }
        }
    }

    /// `values` with the rows `valid` leaves out made NULL (rows NULL already stay NULL).
    fn with_validity(
        &self,
        values: ArrayRef,
        valid: NullBuffer,
        path: &str,
    ) -> Result<ArrayRef, DataFileError> {
        if valid.len() != values.len() {
            return Err(self.invalid(
                path,
                format!("{} validity bits for {} values", valid.len(), values.len()),
            ));
        }
        let nulls = NullBuffer::union(Some(&valid), values.logical_nulls().as_ref());
        let data = values.into_data().into_builder().nulls(nulls).build();
        data.map(arrow_array::make_array)
            .map_err(|e| self.invalid(path, format!("validity does not apply: {e}")))
    }

    fn fixed_size_list(
        &self,
        f: &pb::FixedSizeList,
        kind: Kind,
        rows: u64,
        path: &str,
    ) -> Result<ArrayRef, DataFileError> {
        let Kind::Vector(dimension) = kind else {
            return Err(self.mismatch(
                path,
                kind,
                format!("fixed_size_list of dimension {}", f.dimension),
            ));
        };
        if f.dimension != dimension {
            return Err(self.mismatch(
                path,
                kind,
                format!("fixed_size_list of dimension {}", f.dimension),
            ));
        }
        if dimension == 0 {
            return Err(self.invalid(path, "dimension is 0".into()));
        }
        if f.has_validity {
            return Err(self.unsupported(path, "fixed_size_list with has_validity".into()));
        }
        let size = i32::try_from(dimension)
            .map_err(|_| self.unsupported(path, format!("dimension {dimension} past i32")))?;
        let p = format!("{path}.items");
        let items = self.decode(
            required(&f.items, self.file, &p)?,
            Kind::Float32,
            rows.saturating_mul(u64::from(dimension)),
            &p,
        )?;
        FixedSizeListArray::try_new(vector_item(), size, items, None)
            .map(|a| Arc::new(a) as ArrayRef)
            .map_err(|e| self.invalid(path, e.to_string()))
    }

    /// The concatenated bytes of a `binary` page: a `flat` 8-bit page buffer.
    fn byte_buffer(&self, e: &pb::ArrayEncoding, path: &str) -> Result<&[u8], DataFileError> {
        match &e.array_encoding {
            Some(Arm::Flat(f)) => {
                let p = format!("{path}.flat");
                if let Some(c) = &f.compression {
                    return Err(
                        self.unsupported(&p, format!("flat with compression {:?}", c.scheme))
                    );
                }
                if f.bits_per_value != 8 {
                    return Err(DataFileError::EncodingTypeMismatch {
                        file: self.file.to_string(),
                        structure: p,
                        expected: "bytes (flat 8-bit)".into(),
                        found: format!("flat {}-bit values", f.bits_per_value),
                    });
                }
                self.buffer(f.buffer.as_ref(), &format!("{p}.buffer"))
            }
            _ => Err(self.unsupported(path, format!("{} as binary bytes", arm_name(e)))),
        }
    }

    fn binary(
        &self,
        b: &pb::Binary,
        kind: Kind,
        rows: u64,
        path: &str,
    ) -> Result<ArrayRef, DataFileError> {
        if kind != Kind::Utf8 {
            return Err(self.mismatch(path, kind, "binary (strings)".into()));
        }
        let pi = format!("{path}.indices");
        let ends = self.decode(required(&b.indices, self.file, &pi)?, Kind::Code, rows, &pi)?;
        let ends = codes(&ends);
        let pb_ = format!("{path}.bytes");
        let data = self.byte_buffer(required(&b.bytes, self.file, &pb_)?, &pb_)?;
        let mut out = StringBuilder::with_capacity(ends.len(), data.len());
        let mut start = 0u64;
        for (row, end) in ends.iter().enumerate() {
            let Some(stored) = end else {
                return Err(self.invalid(&pi, format!("row {row}: end offset is NULL")));
            };
            let is_null = stored >= b.null_adjustment;
            let end = if is_null {
                stored - b.null_adjustment
            } else {
                stored
            };
            if end < start || end > data.len() as u64 {
                return Err(self.invalid(
                    &pi,
                    format!(
                        "row {row}: end offset {end} is before the previous end {start} or past the {} bytes",
                        data.len()
                    ),
                ));
            }
            if is_null {
                out.append_null();
            } else {
                let slice = data.get(start as usize..end as usize).unwrap_or_default();
                let s = std::str::from_utf8(slice)
                    .map_err(|e| self.invalid(&pb_, format!("row {row}: not UTF-8: {e}")))?;
                out.append_value(s);
            }
            start = end;
        }
        Ok(Arc::new(out.finish()))
    }

    fn dictionary(
        &self,
        d: &pb::Dictionary,
        kind: Kind,
        rows: u64,
        path: &str,
    ) -> Result<ArrayRef, DataFileError> {
        if kind != Kind::Utf8 {
            return Err(self.mismatch(path, kind, "dictionary-encoded strings".into()));
        }
        let pi = format!("{path}.items");
        let items = self.decode(
            required(&d.items, self.file, &pi)?,
            Kind::Utf8,
            u64::from(d.num_dictionary_items),
            &pi,
        )?;
        let items = items.as_string::<i32>();
        let pc = format!("{path}.indices");
        let codes_array =
            self.decode(required(&d.indices, self.file, &pc)?, Kind::Code, rows, &pc)?;
        let mut out = StringBuilder::with_capacity(codes_array.len(), 0);
        for (row, code) in codes(&codes_array).iter().enumerate() {
            match code {
                None | Some(0) => out.append_null(),
                Some(k) => {
                    let item = usize::try_from(k - 1)
                        .ok()
                        .filter(|&i| i < items.len())
                        .ok_or_else(|| {
                            self.invalid(
                                &pc,
                                format!(
                                    "row {row}: code {k} but the dictionary has {} items",
                                    items.len()
                                ),
                            )
                        })?;
                    out.append_option(items.is_valid(item).then(|| items.value(item)));
                }
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// The codes of an array [`PageData::decode`] made for [`Kind::Code`] (empty for any other).
fn codes(array: &ArrayRef) -> UInt64Array {
    array
        .as_primitive_opt::<UInt64Type>()
        .cloned()
        .unwrap_or_else(|| UInt64Array::from(Vec::<u64>::new()))
}

/// The little-endian values of `T` in `data` (exactly whole values), copied into an aligned
/// buffer.
fn copied<T: ArrowPrimitiveType>(data: &[u8]) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(
        ScalarBuffer::from(Buffer::from(data)),
        None,
    ))
}

/// One little-endian unsigned integer from a chunk of at most 8 bytes.
fn widen(c: &[u8]) -> u64 {
    let mut b8 = [0u8; 8];
    let n = c.len().min(8);
    b8[..n].copy_from_slice(&c[..n]);
    u64::from_le_bytes(b8)
}
