//! The `google.protobuf.Any` envelope around v2.0 page and column encodings.
//!
//! Invariant: the writer always emits the exact type URLs Lance 14 emits
//! (`/lance.encodings.ArrayEncoding`, `/lance.encodings.ColumnEncoding`), and the reader accepts
//! a URL when the part after its last `/` names the expected message (the rule prost's
//! `Any::to_msg` applies, so a `type.googleapis.com/` prefix is accepted too).

pub use prost_types::Any;

/// Type URL of a page encoding.
pub const ARRAY_ENCODING_URL: &str = "/lance.encodings.ArrayEncoding";
/// Type URL of a column encoding.
pub const COLUMN_ENCODING_URL: &str = "/lance.encodings.ColumnEncoding";

/// True when `type_url` names the same message as `expected` (compared after the last `/`).
pub fn names_message(type_url: &str, expected: &str) -> bool {
    let last = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    last(type_url) == last(expected)
}
