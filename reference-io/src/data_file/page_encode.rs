//! Turning one column's values into one v2.0 page: an `ArrayEncoding` tree plus its buffers.
//!
//! Invariant: the tree and the buffers are exactly what the Lance 14 v2.0 writer produces for
//! the same values (checked byte for byte against pylance in the tests), so a Lance reader and
//! this kit's reader agree on them. The choice between `no_nulls`, `some_nulls` and `all_nulls`
//! depends only on the values, as in Lance: no NULL, some NULL, every value NULL. Strings are
//! always `binary` (never `dictionary`, never `all_nulls`), as Lance writes them in v2.0.
//! Buffers are numbered in the order they are pushed, which is the depth-first order of the
//! tree (validity before values, offsets before bytes).

use lance_reference::model::{DataType, Value};
use lance_reference::proto::lance::encodings as pb;

/// One encoded page.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedPage {
    /// Rows in the page.
    pub rows: u64,
    /// The encoding tree.
    pub encoding: pb::ArrayEncoding,
    /// The page's buffers, in `buffer_index` order.
    pub buffers: Vec<Vec<u8>>,
}

/// Encodes a column whose values were already checked to fit `data_type` (a value of another
/// kind is written like NULL filler and never panics). Returns `None` for an empty column of a
/// non-struct type: Lance writes no page for it. A struct column gets its header page even when
/// empty, as in Lance.
pub fn encode_page(data_type: &DataType, values: &[Value]) -> Option<EncodedPage> {
    let rows = values.len() as u64;
    if *data_type == DataType::Struct {
        let encoding = arm(pb::array_encoding::ArrayEncoding::Struct(
            pb::SimpleStruct {},
        ));
        return Some(EncodedPage {
            rows,
            encoding,
            buffers: Vec::new(),
        });
    }
    if values.is_empty() {
        return None;
    }
    let mut buffers = Vec::new();
    let validity: Vec<bool> = values.iter().map(|v| !v.is_null()).collect();
    let encoding = match data_type {
        DataType::Utf8 => binary(values, &mut buffers),
        DataType::FixedSizeList { dimension } => nullable(&validity, &mut buffers, |buffers| {
            fixed_size_list(*dimension, values, buffers)
        }),
        fixed => {
            let bits = flat_bits(fixed);
            nullable(&validity, &mut buffers, |buffers| {
                let data = fixed_width_bytes(values, bits);
                flat(bits, push(buffers, data))
            })
        }
    };
    Some(EncodedPage {
        rows,
        encoding,
        buffers,
    })
}

fn arm(a: pb::array_encoding::ArrayEncoding) -> pb::ArrayEncoding {
    pb::ArrayEncoding {
        array_encoding: Some(a),
    }
}

fn push(buffers: &mut Vec<Vec<u8>>, data: Vec<u8>) -> u32 {
    buffers.push(data);
    // A page never holds more than a handful of buffers.
    u32::try_from(buffers.len() - 1).unwrap_or(u32::MAX)
}

fn flat(bits: u64, buffer_index: u32) -> pb::ArrayEncoding {
    arm(pb::array_encoding::ArrayEncoding::Flat(pb::Flat {
        bits_per_value: bits,
        buffer: Some(pb::Buffer {
            buffer_index,
            buffer_type: pb::buffer::BufferType::Page as i32,
        }),
        compression: None,
    }))
}

/// Bits per value of a fixed-width type (1 for `bool`).
fn flat_bits(data_type: &DataType) -> u64 {
    match data_type {
        DataType::Bool => 1,
        DataType::Int32 | DataType::Float32 => 32,
        _ => 64,
    }
}

/// Packs booleans least-significant bit first, `ceil(n / 8)` bytes.
pub fn bitmap(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
        if let Some(byte) = out.get_mut(i / 8) {
            *byte |= 1 << (i % 8);
        }
    }
    out
}

/// Wraps the encoding `values` builds in a `Nullable` arm chosen from `validity`.
fn nullable(
    validity: &[bool],
    buffers: &mut Vec<Vec<u8>>,
    values: impl FnOnce(&mut Vec<Vec<u8>>) -> pb::ArrayEncoding,
) -> pb::ArrayEncoding {
    use pb::nullable::Nullability;
    let nullability = if validity.iter().all(|v| *v) {
        Nullability::NoNulls(Box::new(pb::nullable::NoNull {
            values: Some(Box::new(values(buffers))),
        }))
    } else if validity.iter().all(|v| !*v) {
        Nullability::AllNulls(pb::nullable::AllNull {})
    } else {
        let validity_index = push(buffers, bitmap(validity));
        Nullability::SomeNulls(Box::new(pb::nullable::SomeNull {
            validity: Some(Box::new(flat(1, validity_index))),
            values: Some(Box::new(values(buffers))),
        }))
    };
    arm(pb::array_encoding::ArrayEncoding::Nullable(Box::new(
        pb::Nullable {
            nullability: Some(nullability),
        },
    )))
}

/// Little-endian values (or a bitmap when `bits == 1`); a NULL slot holds zeros.
fn fixed_width_bytes(values: &[Value], bits: u64) -> Vec<u8> {
    if bits == 1 {
        let set: Vec<bool> = values
            .iter()
            .map(|v| matches!(v, Value::Bool(true)))
            .collect();
        return bitmap(&set);
    }
    let mut out = Vec::with_capacity(values.len() * (bits as usize / 8));
    for v in values {
        match (v, bits) {
            (Value::Int32(x), _) => out.extend_from_slice(&x.to_le_bytes()),
            (Value::Float32(x), _) => out.extend_from_slice(&x.to_le_bytes()),
            (Value::Int64(x), _) => out.extend_from_slice(&x.to_le_bytes()),
            (Value::UInt64(x), _) => out.extend_from_slice(&x.to_le_bytes()),
            (Value::Float64(x), _) => out.extend_from_slice(&x.to_le_bytes()),
            (_, 32) => out.extend_from_slice(&[0; 4]),
            _ => out.extend_from_slice(&[0; 8]),
        }
    }
    out
}

/// `fixed_size_list{dimension, items}`. Items of a NULL row are written as valid zeros (as
/// pyarrow hands them to Lance); a NULL item of a present row is an invalid item.
fn fixed_size_list(
    dimension: u32,
    values: &[Value],
    buffers: &mut Vec<Vec<u8>>,
) -> pb::ArrayEncoding {
    let dim = dimension as usize;
    let mut items: Vec<Value> = Vec::with_capacity(values.len() * dim);
    for v in values {
        match v {
            Value::Vector(xs) if xs.len() == dim => {
                items.extend(xs.iter().map(|x| x.map_or(Value::Null, Value::Float32)));
            }
            _ => items.extend(std::iter::repeat_n(Value::Float32(0.0), dim)),
        }
    }
    let item_validity: Vec<bool> = items.iter().map(|v| !v.is_null()).collect();
    let items_encoding = nullable(&item_validity, buffers, |buffers| {
        flat(32, push(buffers, fixed_width_bytes(&items, 32)))
    });
    arm(pb::array_encoding::ArrayEncoding::FixedSizeList(Box::new(
        pb::FixedSizeList {
            dimension,
            has_validity: false,
            items: Some(Box::new(items_encoding)),
        },
    )))
}

/// `binary{indices: nullable{no_nulls{flat 64}}, bytes: flat 8, null_adjustment}`: one
/// cumulative end offset per row; a NULL row adds nothing to the bytes and has
/// `null_adjustment = total bytes + 1` added to its end offset.
fn binary(values: &[Value], buffers: &mut Vec<Vec<u8>>) -> pb::ArrayEncoding {
    let mut bytes = Vec::new();
    let mut ends = Vec::with_capacity(values.len());
    for v in values {
        if let Value::Utf8(s) = v {
            bytes.extend_from_slice(s.as_bytes());
        }
        ends.push(bytes.len() as u64);
    }
    let null_adjustment = bytes.len() as u64 + 1;
    let mut indices = Vec::with_capacity(values.len() * 8);
    for (end, v) in ends.iter().zip(values) {
        let stored = if matches!(v, Value::Utf8(_)) {
            *end
        } else {
            end + null_adjustment
        };
        indices.extend_from_slice(&stored.to_le_bytes());
    }
    let all_valid = vec![true; values.len()];
    let indices_encoding = nullable(&all_valid, buffers, |buffers| {
        flat(64, push(buffers, indices))
    });
    let bytes_encoding = flat(8, push(buffers, bytes));
    arm(pb::array_encoding::ArrayEncoding::Binary(Box::new(
        pb::Binary {
            indices: Some(Box::new(indices_encoding)),
            bytes: Some(Box::new(bytes_encoding)),
            null_adjustment,
        },
    )))
}
