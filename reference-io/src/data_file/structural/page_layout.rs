//! The `PageLayout` of a v2.1+ page: which layout arranges its rows, whether the file's version
//! allows the form it uses, and decoding it into [`PageValues`].
//!
//! The grammar differences between the two versions (as Lance 14.0.2's
//! `lance-file/src/versions/v2_{1,2}/reader.rs` enforces them):
//!
//! | form | v2.1 | v2.2 |
//! |---|---|---|
//! | mini-block chunk grammar | u16 words and sizes (`has_large_chunk = false`) | u32 (`has_large_chunk = true`), required |
//! | constant layout | all NULL, raw u16 levels | also an inline scalar; compressed levels |
//! | `variable_packed_struct` | refused | allowed (this reader refuses it anyway) |
//!
//! Invariant: [`check_grammar`] refuses a page whose form its file version does not allow, with
//! [`DataFileError::VersionGrammar`], before any page is decoded (Lance checks the whole page
//! table up front); [`decode`] dispatches on the layout and refuses the blob layout and unknown
//! layouts by name.

use super::mini_block::PageValues;
use super::{Site, compressive, constant, full_zip, mini_block};
use crate::data_file::DataFileError;
use crate::data_file::container::FileVersion;
use lance_reference::proto::lance::encodings21 as pb;
use pb::compressive_encoding::Compression as C;
use pb::page_layout::Layout;

/// Type URL of a v2.1+ page encoding.
pub const PAGE_LAYOUT_URL: &str = "/lance.encodings21.PageLayout";

/// The name of a `PageLayout` arm, as written in the proto.
pub fn name(layout: &pb::PageLayout) -> &'static str {
    match &layout.layout {
        None => "empty or unknown PageLayout",
        Some(Layout::MiniBlockLayout(_)) => "mini_block_layout",
        Some(Layout::ConstantLayout(_)) => "constant_layout",
        Some(Layout::FullZipLayout(_)) => "full_zip_layout",
        Some(Layout::BlobLayout(_)) => "blob_layout",
    }
}

/// A one-line rendering of a page layout for summaries, e.g.
/// `mini_block(values=flat(32), def=rle(flat(16), flat(8)), u32)`.
pub fn describe(layout: &pb::PageLayout) -> String {
    let opt = |e: &Option<pb::CompressiveEncoding>| e.as_ref().map(compressive::describe);
    match &layout.layout {
        Some(Layout::MiniBlockLayout(m)) => {
            let mut parts = vec![format!(
                "values={}",
                opt(&m.value_compression).unwrap_or_else(|| "?".into())
            )];
            if let Some(d) = opt(&m.def_compression) {
                parts.push(format!("def={d}"));
            }
            if let Some(d) = opt(&m.dictionary) {
                parts.push(format!("dictionary={d}"));
            }
            parts.push(if m.has_large_chunk { "u32" } else { "u16" }.to_string());
            format!("mini_block({})", parts.join(", "))
        }
        Some(Layout::ConstantLayout(c)) => {
            let what = if c.inline_value.is_some() {
                "inline"
            } else {
                "null"
            };
            match opt(&c.def_compression) {
                Some(d) => format!("constant({what}, def={d})"),
                None => format!("constant({what})"),
            }
        }
        Some(Layout::FullZipLayout(f)) => {
            let width = match f.details {
                Some(pb::full_zip_layout::Details::BitsPerValue(b)) => format!("{b}-bit values"),
                Some(pb::full_zip_layout::Details::BitsPerOffset(b)) => format!("{b}-bit lengths"),
                None => "?".into(),
            };
            format!(
                "full_zip({}, {width}, def {} bits)",
                opt(&f.value_compression).unwrap_or_else(|| "?".into()),
                f.bits_def
            )
        }
        _ => name(layout).to_string(),
    }
}

fn grammar(site: &Site, version: FileVersion, form: String) -> DataFileError {
    DataFileError::VersionGrammar {
        file: site.file.to_string(),
        structure: site.path.clone(),
        major: version.major,
        minor: version.minor,
        form,
    }
}

/// True when `e` or an encoding inside it is `variable_packed_struct`.
fn has_variable_packed_struct(e: &pb::CompressiveEncoding) -> bool {
    let sub = |x: &Option<Box<pb::CompressiveEncoding>>| {
        x.as_deref().is_some_and(has_variable_packed_struct)
    };
    match &e.compression {
        Some(C::VariablePackedStruct(_)) => true,
        Some(C::Variable(v)) => sub(&v.offsets),
        Some(C::OutOfLineBitpacking(b)) => sub(&b.values),
        Some(C::Fsst(f)) => sub(&f.values),
        Some(C::Dictionary(d)) => sub(&d.indices) || sub(&d.items),
        Some(C::Rle(r)) => sub(&r.values) || sub(&r.run_lengths),
        Some(C::ByteStreamSplit(b)) => sub(&b.values),
        Some(C::General(g)) => sub(&g.values),
        Some(C::FixedSizeList(f)) => sub(&f.values),
        Some(C::PackedStruct(p)) => sub(&p.values),
        _ => false,
    }
}

/// Refuses a page whose form `version` (2.1 or 2.2) does not allow.
pub fn check_grammar(
    layout: &pb::PageLayout,
    version: FileVersion,
    site: &Site,
) -> Result<(), DataFileError> {
    let v22 = (version.major, version.minor) >= (2, 2);
    let encodings: Vec<&pb::CompressiveEncoding> = match &layout.layout {
        Some(Layout::MiniBlockLayout(m)) => {
            if m.has_large_chunk != v22 {
                return Err(grammar(
                    &site.at("mini_block_layout.has_large_chunk"),
                    version,
                    format!(
                        "has_large_chunk = {} (v2.1 requires the u16 chunk grammar, v2.2 the u32 one)",
                        m.has_large_chunk
                    ),
                ));
            }
            [
                &m.rep_compression,
                &m.def_compression,
                &m.value_compression,
                &m.dictionary,
            ]
            .into_iter()
            .flatten()
            .collect()
        }
        Some(Layout::ConstantLayout(c)) => {
            let s = site.at("constant_layout");
            if !v22 {
                if c.inline_value.is_some() {
                    return Err(grammar(
                        &s.at("inline_value"),
                        version,
                        "an inline constant value (v2.2 only)".into(),
                    ));
                }
                if c.rep_compression.is_some() || c.def_compression.is_some() {
                    return Err(grammar(
                        &s,
                        version,
                        "compressed repetition or definition levels in a constant page (v2.2 only)"
                            .into(),
                    ));
                }
            }
            [&c.rep_compression, &c.def_compression]
                .into_iter()
                .flatten()
                .collect()
        }
        Some(Layout::FullZipLayout(f)) => f.value_compression.iter().collect(),
        _ => Vec::new(),
    };
    if !v22 && encodings.into_iter().any(has_variable_packed_struct) {
        return Err(grammar(
            site,
            version,
            "variable_packed_struct (v2.2 only)".into(),
        ));
    }
    Ok(())
}

/// Decodes one page of `rows` rows (the caller bounds `rows` by
/// [`crate::data_file::MAX_DECODED_VALUES`]).
pub fn decode(
    layout: &pb::PageLayout,
    buffers: &[&[u8]],
    rows: usize,
    site: &Site,
) -> Result<PageValues, DataFileError> {
    match &layout.layout {
        Some(Layout::MiniBlockLayout(m)) => {
            mini_block::decode(m, buffers, rows, &site.at("mini_block_layout"))
        }
        Some(Layout::ConstantLayout(c)) => {
            constant::decode(c, buffers, rows, &site.at("constant_layout"))
        }
        Some(Layout::FullZipLayout(f)) => {
            full_zip::decode(f, buffers, rows, &site.at("full_zip_layout"))
        }
        Some(Layout::BlobLayout(_)) => Err(site.unsupported("blob_layout")),
        None => Err(site.unsupported(name(layout))),
    }
}
