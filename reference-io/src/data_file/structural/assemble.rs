//! A decoded v2.1+ page ([`PageValues`]) → one Arrow array of the caller's type, of the same
//! shape the v2.0 decoder gives ([`Kind::arrow_type`]), and the validity of the struct layers
//! around a leaf.
//!
//! Invariant: the array has exactly the page's rows; its nulls are the item layer's validity
//! (a row is NULL when its definition level is not 0, so a leaf is NULL wherever an enclosing
//! struct is); a vector row's items carry nulls only when a valid row has a NULL item; a block
//! whose shape does not fit the type is an [`DataFileError::EncodingTypeMismatch`], never a
//! reinterpretation.

use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BooleanArray, FixedSizeListArray, PrimitiveArray, StringArray,
    new_null_array,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use lance_reference::model::vector_item;

use super::Site;
use super::block::{Block, bit};
use super::mini_block::PageValues;
use crate::data_file::DataFileError;
use crate::data_file::page_decode::Kind;

/// What a v2.1+ file's column holds, named when one is asked for as a struct: the file stores
/// leaf columns only (a struct's validity rides in its leaves' repetition and definition).
pub(crate) const LEAF_COLUMNS_ONLY: &str = "a leaf column (v2.1+ files store no struct columns)";

/// The Arrow array of `kind` for a page of `rows` rows. The page's decoded bytes move into the
/// array; they are copied only when they are not aligned for the Arrow type.
pub fn page_array(
    page: PageValues,
    kind: Kind,
    rows: usize,
    site: &Site,
) -> Result<ArrayRef, DataFileError> {
    if let Some(d) = &page.def {
        if d.len() != rows {
            return Err(site.invalid(format!("{} definition levels for {rows} rows", d.len())));
        }
    }
    if matches!(kind, Kind::Struct | Kind::Code) {
        return Err(site.mismatch(kind_name(kind), LEAF_COLUMNS_ONLY));
    }
    let nulls = page.layers.validity(0, page.def.as_deref());
    let Some(mut values) = page.values else {
        return Ok(new_null_array(&kind.arrow_type(), rows));
    };
    // A constant page's Boolean scalar is one byte, a one-value bitmap: the value is its bit 0
    // (Lance 14's `try_inline_value` stores a length-1 BooleanArray's buffer; its reader reads
    // that buffer as the array's bitmap), the other bits are not read.
    if page.scalar && kind == Kind::Bool {
        if let Block::Fixed { bits: 8, len, data } = &values {
            let set = data.first().is_some_and(|b| b & 1 == 1);
            values = Block::Fixed {
                bits: 1,
                len: *len,
                data: vec![if set { 0xFF } else { 0 }; len.div_ceil(8)],
            };
        }
    }
    if values.len() != rows {
        return Err(site.invalid(format!("{} values decoded for {rows} rows", values.len())));
    }
    let shape = values.shape();
    let mismatch = || site.mismatch(kind_name(kind), shape.clone());
    Ok(match (kind, values) {
        (Kind::Int32, Block::Fixed { bits: 32, data, .. }) => primitive::<Int32Type>(data, nulls),
        (Kind::Float32, Block::Fixed { bits: 32, data, .. }) => {
            primitive::<Float32Type>(data, nulls)
        }
        (Kind::Int64, Block::Fixed { bits: 64, data, .. }) => primitive::<Int64Type>(data, nulls),
        (Kind::UInt64, Block::Fixed { bits: 64, data, .. }) => primitive::<UInt64Type>(data, nulls),
        (Kind::Float64, Block::Fixed { bits: 64, data, .. }) => {
            primitive::<Float64Type>(data, nulls)
        }
        (Kind::Bool, Block::Fixed { bits: 1, data, .. }) => Arc::new(BooleanArray::new(
            BooleanBuffer::new(Buffer::from(data), 0, rows),
            nulls,
        )),
        (Kind::Utf8, Block::Variable { offsets, data }) => {
            let end = offsets.last().copied().unwrap_or(0);
            if end > i32::MAX as u64 {
                return Err(site.invalid(format!("{end} bytes of strings exceed i32 offsets")));
            }
            let offsets: Vec<i32> = offsets.iter().map(|o| *o as i32).collect();
            let array = StringArray::try_new(
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Buffer::from(data),
                nulls,
            )
            .map_err(|e| site.invalid(format!("not a valid UTF-8 string array: {e}")))?;
            Arc::new(array)
        }
        (
            Kind::Vector(n),
            Block::List {
                dimension,
                item_validity,
                items,
                ..
            },
        ) if dimension as u64 == u64::from(n) => {
            let Block::Fixed {
                bits: 32,
                data,
                len,
            } = *items
            else {
                return Err(mismatch());
            };
            let d = dimension;
            // Items of NULL rows count as valid, as the v2.0 decoder gives them.
            let item_nulls = item_validity.as_ref().and_then(|v| {
                let valid = BooleanBuffer::collect_bool(len, |i| {
                    bit(v, i) || nulls.as_ref().is_some_and(|n| n.is_null(i / d))
                });
                let nb = NullBuffer::new(valid);
                (nb.null_count() > 0).then_some(nb)
            });
            let items = primitive::<Float32Type>(data, item_nulls);
            let size = i32::try_from(n).map_err(|_| site.invalid(format!("dimension {n}")))?;
            Arc::new(
                FixedSizeListArray::try_new(vector_item(), size, items, nulls)
                    .map_err(|e| site.invalid(e.to_string()))?,
            )
        }
        _ => return Err(mismatch()),
    })
}

/// The validity of each struct layer around the leaf of `page` (layers 1.., inner-most first),
/// as one boolean per row (true = the struct slot and every enclosing struct slot is valid).
pub fn struct_layers(page: &PageValues, rows: usize) -> Vec<BooleanBuffer> {
    (1..page.layers.0.len())
        .map(|k| match page.layers.validity(k, page.def.as_deref()) {
            Some(n) => n.inner().clone(),
            None => BooleanBuffer::new_set(rows),
        })
        .collect()
}

fn kind_name(kind: Kind) -> String {
    match kind {
        Kind::Struct => "a struct column".into(),
        Kind::Code => "unsigned integer codes".into(),
        other => format!("{:?}", other.arrow_type()),
    }
}

/// A primitive array over `data` (little-endian values of `T`): the bytes move into the array
/// when the allocation is aligned for `T` (as the allocator gives it in practice), and are copied
/// into an aligned Arrow buffer otherwise.
fn primitive<T: ArrowPrimitiveType>(data: Vec<u8>, nulls: Option<NullBuffer>) -> ArrayRef {
    let aligned = data
        .as_ptr()
        .align_offset(std::mem::align_of::<T::Native>())
        == 0;
    let buffer = if aligned {
        Buffer::from(data)
    } else {
        Buffer::from(data.as_slice())
    };
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(buffer), nulls))
}
