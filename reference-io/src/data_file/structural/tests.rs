//! Malformed v2.1+ pages, assembled by hand: each error path of the layouts gets its typed
//! error, and the well-formed twin of each decodes.

use super::mini_block::PageValues;
use super::{Site, block::Block, page_layout};
use crate::data_file::DataFileError;
use crate::data_file::container::FileVersion;
use lance_reference::proto::lance::encodings21 as pb;
use pb::compressive_encoding::Compression as C;
use pb::page_layout::Layout;

const NULLABLE: i32 = pb::RepDefLayer::RepdefNullableItem as i32;
const VALID: i32 = pb::RepDefLayer::RepdefAllValidItem as i32;

fn site() -> Site<'static> {
    Site::new("f.lance", "ColumnMetadata[0].pages[0]")
}

fn flat(bits: u64) -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(C::Flat(pb::Flat {
            bits_per_value: bits,
            data: None,
        })),
    }
}

fn variable() -> pb::CompressiveEncoding {
    pb::CompressiveEncoding {
        compression: Some(C::Variable(Box::new(pb::Variable {
            offsets: Some(Box::new(flat(32))),
            values: None,
        }))),
    }
}

fn mini(rows: u64, large: bool, nullable: bool) -> pb::MiniBlockLayout {
    pb::MiniBlockLayout {
        def_compression: nullable.then(|| flat(16)),
        value_compression: Some(flat(32)),
        layers: vec![if nullable { NULLABLE } else { VALID }],
        num_buffers: 1,
        num_items: rows,
        has_large_chunk: large,
        ..Default::default()
    }
}

fn pad8(v: &mut Vec<u8>) {
    while v.len() % 8 != 0 {
        v.push(0);
    }
}

/// One chunk of int32 `values` with optional u16 levels, and its metadata word.
fn chunk(values: &[i32], def: Option<&[u16]>, large: bool) -> (Vec<u8>, Vec<u8>) {
    let mut c = (values.len() as u16).to_le_bytes().to_vec();
    if let Some(d) = def {
        c.extend_from_slice(&((d.len() * 2) as u16).to_le_bytes());
    }
    let size = values.len() * 4;
    if large {
        c.extend_from_slice(&(size as u32).to_le_bytes());
    } else {
        c.extend_from_slice(&(size as u16).to_le_bytes());
    }
    pad8(&mut c);
    if let Some(d) = def {
        for l in d {
            c.extend_from_slice(&l.to_le_bytes());
        }
        pad8(&mut c);
    }
    for v in values {
        c.extend_from_slice(&v.to_le_bytes());
    }
    pad8(&mut c);
    let word = ((c.len() / 8 - 1) << 4) as u32;
    let meta = if large {
        word.to_le_bytes().to_vec()
    } else {
        (word as u16).to_le_bytes().to_vec()
    };
    (meta, c)
}

fn decode_mini(
    layout: &pb::MiniBlockLayout,
    bufs: &[&[u8]],
    rows: usize,
) -> Result<PageValues, DataFileError> {
    let page = pb::PageLayout {
        layout: Some(Layout::MiniBlockLayout(layout.clone())),
    };
    page_layout::decode(&page, bufs, rows, &site())
}

#[test]
fn well_formed_mini_block_page_decodes_in_both_grammars() {
    for large in [false, true] {
        let (meta, c) = chunk(&[7, 8, 9], Some(&[0, 1, 0]), large);
        let p = decode_mini(&mini(3, large, true), &[&meta, &c], 3).unwrap();
        assert_eq!(p.def, Some(vec![0, 1, 0]));
        let Some(Block::Fixed {
            bits: 32, len: 3, ..
        }) = p.values
        else {
            panic!("{:?}", p.values)
        };
    }
}

#[test]
fn mini_block_layout_that_lies_about_its_item_count_is_refused() {
    // covers: DS-PAGE-1
    let (meta, c) = chunk(&[7, 8, 9], None, true);
    let e = decode_mini(&mini(4, true, false), &[&meta, &c], 3).unwrap_err();
    assert_eq!(e.code(), "invalid_page_data");
    assert!(e.to_string().contains("num_items is 4"), "{e}");
    // The page's rows and the layout agree, but the chunks hold fewer values: the last word
    // says 2^2 values while 3 remain.
    let mut meta4 = meta.clone();
    meta4[0] |= 2;
    let e = decode_mini(&mini(3, true, false), &[&meta4, &c], 3).unwrap_err();
    assert_eq!(e.code(), "invalid_page_data", "{e}");
}

#[test]
fn mini_block_chunk_past_its_buffer_is_out_of_bounds() {
    let (meta, c) = chunk(&[7, 8, 9], None, true);
    let e = decode_mini(&mini(3, true, false), &[&meta, &c[..8]], 3).unwrap_err();
    assert_eq!(e.code(), "data_file_out_of_bounds", "{e}");
    assert!(e.to_string().contains("chunks[0]"), "{e}");
}

#[test]
fn mini_block_buffer_sizes_past_the_chunk_are_out_of_bounds() {
    let (meta, mut c) = chunk(&[7, 8, 9], None, true);
    c[2..6].copy_from_slice(&1000u32.to_le_bytes());
    let e = decode_mini(&mini(3, true, false), &[&meta, &c], 3).unwrap_err();
    assert_eq!(e.code(), "data_file_out_of_bounds", "{e}");
    assert!(e.to_string().contains("value buffer 0"), "{e}");
}

#[test]
fn mini_block_metadata_of_odd_length_is_refused() {
    let (meta, c) = chunk(&[7], None, true);
    let e = decode_mini(&mini(1, true, false), &[&meta[..3], &c], 1).unwrap_err();
    assert_eq!(e.code(), "invalid_page_data", "{e}");
    assert!(e.to_string().contains("chunk_metadata"), "{e}");
}

#[test]
fn mini_block_level_count_other_than_values_is_refused() {
    let (meta, mut c) = chunk(&[7, 8], Some(&[0, 0]), false);
    c[0] = 3;
    let e = decode_mini(&mini(2, false, true), &[&meta, &c], 2).unwrap_err();
    assert!(
        e.to_string().contains("3 definition levels for 2 values"),
        "{e}"
    );
}

#[test]
fn definition_level_above_the_layers_maximum_is_refused() {
    let (meta, c) = chunk(&[7, 8], Some(&[0, 2]), false);
    let e = decode_mini(&mini(2, false, true), &[&meta, &c], 2).unwrap_err();
    assert_eq!(e.code(), "invalid_page_data");
    assert!(e.to_string().contains("definition level 2"), "{e}");
}

#[test]
fn missing_def_compression_with_nullable_layers_is_a_missing_field() {
    let (meta, c) = chunk(&[7], None, false);
    let mut layout = mini(1, false, false);
    layout.layers = vec![NULLABLE];
    let e = decode_mini(&layout, &[&meta, &c], 1).unwrap_err();
    assert_eq!(e.code(), "data_file_missing_field", "{e}");
}

/// A dictionary page of int32 indices over `items` strings (Variable block format).
fn dictionary_page(
    indices: &[i32],
    def: &[u16],
    items: &[&str],
) -> (pb::MiniBlockLayout, Vec<Vec<u8>>) {
    let (meta, c) = chunk(indices, Some(def), true);
    let mut layout = mini(indices.len() as u64, true, true);
    layout.dictionary = Some(variable());
    layout.num_dictionary_items = items.len() as u64;
    let start = 8 + 4 * (items.len() + 1);
    let mut d = 32u32.to_le_bytes().to_vec();
    d.extend_from_slice(&(start as u32).to_le_bytes());
    let mut at = 0u32;
    d.extend_from_slice(&at.to_le_bytes());
    for s in items {
        at += s.len() as u32;
        d.extend_from_slice(&at.to_le_bytes());
    }
    for s in items {
        d.extend_from_slice(s.as_bytes());
    }
    (layout, vec![meta, c, d])
}

#[test]
fn dictionary_indices_name_items_and_out_of_range_ones_are_refused() {
    // covers: DS-PAGE-2
    let (layout, bufs) = dictionary_page(&[1, 0, 9, 1], &[0, 0, 1, 0], &["ab", "c"]);
    let refs: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
    // Index 9 sits in a NULL row: ignored.
    let p = decode_mini(&layout, &refs, 4).unwrap();
    assert_eq!(
        p.values,
        Some(Block::Variable {
            offsets: vec![0, 1, 3, 3, 4],
            data: b"cabc".to_vec()
        })
    );
    let (layout, bufs) = dictionary_page(&[1, 0, 9, 1], &[0, 0, 0, 0], &["ab", "c"]);
    let refs: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
    let e = decode_mini(&layout, &refs, 4).unwrap_err();
    assert_eq!(e.code(), "invalid_page_data");
    assert!(
        e.to_string()
            .contains("index 9 but the dictionary has 2 items"),
        "{e}"
    );
}

#[test]
fn mini_block_chunk_grammar_must_match_the_file_version() {
    let v21 = FileVersion { major: 2, minor: 1 };
    let v22 = FileVersion { major: 2, minor: 2 };
    for (large, version) in [(true, v21), (false, v22)] {
        let page = pb::PageLayout {
            layout: Some(Layout::MiniBlockLayout(mini(1, large, false))),
        };
        let e = page_layout::check_grammar(&page, version, &site()).unwrap_err();
        assert_eq!(e.code(), "data_file_version_grammar", "{e}");
        assert!(e.to_string().contains("has_large_chunk"), "{e}");
    }
    let ok = pb::PageLayout {
        layout: Some(Layout::MiniBlockLayout(mini(1, true, false))),
    };
    page_layout::check_grammar(&ok, v22, &site()).unwrap();
}

fn constant(inline: Option<Vec<u8>>, def: Option<pb::CompressiveEncoding>) -> pb::PageLayout {
    pb::PageLayout {
        layout: Some(Layout::ConstantLayout(pb::ConstantLayout {
            layers: vec![NULLABLE, NULLABLE],
            inline_value: inline,
            num_def_values: 2,
            def_compression: def,
            ..Default::default()
        })),
    }
}

#[test]
fn constant_forms_of_v2_2_are_refused_in_v2_1() {
    let v21 = FileVersion { major: 2, minor: 1 };
    for page in [
        constant(Some(vec![1, 0, 0, 0]), None),
        constant(None, Some(flat(16))),
    ] {
        let e = page_layout::check_grammar(&page, v21, &site()).unwrap_err();
        assert_eq!(e.code(), "data_file_version_grammar", "{e}");
        page_layout::check_grammar(&page, FileVersion { major: 2, minor: 2 }, &site()).unwrap();
    }
}

#[test]
fn constant_page_levels_are_checked() {
    let raw = |levels: &[u16]| -> Vec<u8> { levels.iter().flat_map(|l| l.to_le_bytes()).collect() };
    let ok = page_layout::decode(&constant(None, None), &[&[], &raw(&[1, 2])], 2, &site()).unwrap();
    assert_eq!(ok.def, Some(vec![1, 2]));
    // Three levels for two rows.
    let e = page_layout::decode(&constant(None, None), &[&[], &raw(&[1, 2, 1])], 2, &site())
        .unwrap_err();
    assert_eq!(e.code(), "invalid_page_data", "{e}");
    // A valid row in an all-NULL page.
    let e =
        page_layout::decode(&constant(None, None), &[&[], &raw(&[0, 2])], 2, &site()).unwrap_err();
    assert!(e.to_string().contains("row 0 is valid"), "{e}");
    // An inline value longer than 32 bytes.
    let e = page_layout::decode(&constant(Some(vec![0; 33]), None), &[], 2, &site()).unwrap_err();
    assert!(e.to_string().contains("at most 32"), "{e}");
}

fn full_zip_fixed(bits: u32) -> pb::PageLayout {
    pb::PageLayout {
        layout: Some(Layout::FullZipLayout(pb::FullZipLayout {
            bits_def: 1,
            details: Some(pb::full_zip_layout::Details::BitsPerValue(bits)),
            num_items: 2,
            num_visible_items: 2,
            value_compression: Some(flat(u64::from(bits))),
            layers: vec![NULLABLE],
            ..Default::default()
        })),
    }
}

#[test]
fn full_zip_rows_must_fill_their_buffer_exactly() {
    let rows = [0u8, 5, 0, 0, 0, 1, 0, 0, 0, 0];
    let p = page_layout::decode(&full_zip_fixed(32), &[&rows], 2, &site()).unwrap();
    assert_eq!(p.def, Some(vec![0, 1]));
    let e = page_layout::decode(&full_zip_fixed(32), &[&rows[..9]], 2, &site()).unwrap_err();
    assert_eq!(e.code(), "data_file_out_of_bounds", "{e}");
}

#[test]
fn full_zip_variable_length_past_the_buffer_is_out_of_bounds() {
    let page = pb::PageLayout {
        layout: Some(Layout::FullZipLayout(pb::FullZipLayout {
            bits_def: 1,
            details: Some(pb::full_zip_layout::Details::BitsPerOffset(32)),
            num_items: 1,
            num_visible_items: 1,
            value_compression: Some(variable()),
            layers: vec![NULLABLE],
            ..Default::default()
        })),
    };
    let mut rows = vec![0u8];
    rows.extend_from_slice(&3u32.to_le_bytes());
    rows.extend_from_slice(b"abc");
    let p = page_layout::decode(&page, &[&rows], 1, &site()).unwrap();
    assert_eq!(
        p.values,
        Some(Block::Variable {
            offsets: vec![0, 3],
            data: b"abc".to_vec()
        })
    );
    rows[1] = 200;
    let e = page_layout::decode(&page, &[&rows], 1, &site()).unwrap_err();
    assert_eq!(e.code(), "data_file_out_of_bounds", "{e}");
}

#[test]
fn blob_and_unknown_layouts_are_refused_by_name() {
    let blob = pb::PageLayout {
        layout: Some(Layout::BlobLayout(Box::default())),
    };
    let e = page_layout::decode(&blob, &[], 1, &site()).unwrap_err();
    assert_eq!(e.code(), "unsupported_encoding");
    assert!(e.to_string().contains("blob_layout"), "{e}");
    let e = page_layout::decode(&pb::PageLayout { layout: None }, &[], 1, &site()).unwrap_err();
    assert!(e.to_string().contains("empty or unknown PageLayout"), "{e}");
}

/// A constant page of `layers` with no inline value (a value buffer or all NULL).
fn constant_no_inline(layers: Vec<i32>) -> pb::PageLayout {
    pb::PageLayout {
        layout: Some(Layout::ConstantLayout(pb::ConstantLayout {
            layers,
            ..Default::default()
        })),
    }
}

/// The value buffer Lance writes for one string: two Arrow buffers, offsets `[0, len]` and
/// the bytes.
fn string_value_buffer(s: &str) -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    v.extend_from_slice(&8u32.to_le_bytes());
    v.extend_from_slice(&(s.len() as u32).to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&(s.len() as u32).to_le_bytes());
    v.extend_from_slice(s.as_bytes());
    v
}

fn raw_levels(levels: &[u16]) -> Vec<u8> {
    levels.iter().flat_map(|l| l.to_le_bytes()).collect()
}

fn strings(page: &PageValues) -> Vec<String> {
    let Some(Block::Variable { offsets, data }) = &page.values else {
        panic!("not strings: {page:?}")
    };
    offsets
        .windows(2)
        .map(|w| String::from_utf8(data[w[0] as usize..w[1] as usize].to_vec()).unwrap())
        .collect()
}

#[test]
fn constant_string_in_a_value_buffer_fills_every_row() {
    // As Lance 14 writes a column set to one string by an update: one buffer, no levels.
    let rome = string_value_buffer("Rome");
    assert_eq!(
        rome,
        b"\x02\x00\x00\x00\x08\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00Rome"
    );
    let page = page_layout::decode(&constant_no_inline(vec![VALID]), &[&rome], 3, &site()).unwrap();
    assert_eq!(strings(&page), ["Rome", "Rome", "Rome"]);
    assert_eq!(page.def, None);
}

#[test]
fn constant_string_with_nulls_puts_the_value_only_in_valid_rows() {
    // Value, an empty repetition buffer (no lists), raw u16 definition levels.
    let v = string_value_buffer("ab");
    let def = raw_levels(&[0, 1, 0]);
    let page = page_layout::decode(
        &constant_no_inline(vec![NULLABLE]),
        &[&v, &[], &def],
        3,
        &site(),
    )
    .unwrap();
    assert_eq!(strings(&page), ["ab", "", "ab"]);
    assert_eq!(page.def, Some(vec![0, 1, 0]));
    // Repetition levels of a column without lists: one 0 per row is the same page.
    let rep = raw_levels(&[0, 0, 0]);
    let same = page_layout::decode(
        &constant_no_inline(vec![NULLABLE]),
        &[&v, &rep, &def],
        3,
        &site(),
    )
    .unwrap();
    assert_eq!(same, page);
    // Any other repetition level, or another count, is malformed.
    let e = page_layout::decode(
        &constant_no_inline(vec![NULLABLE]),
        &[&v, &raw_levels(&[0, 1, 0]), &def],
        3,
        &site(),
    )
    .unwrap_err();
    assert_eq!(e.code(), "invalid_page_data", "{e}");
    assert!(
        e.to_string().contains("repetition level 1 at slot 1"),
        "{e}"
    );
    let e = page_layout::decode(
        &constant_no_inline(vec![NULLABLE]),
        &[&v, &raw_levels(&[0, 0]), &def],
        3,
        &site(),
    )
    .unwrap_err();
    assert_eq!(e.code(), "invalid_page_data", "{e}");
}

#[test]
fn constant_inline_value_with_levels_and_an_empty_repetition_buffer() {
    let layout = pb::PageLayout {
        layout: Some(Layout::ConstantLayout(pb::ConstantLayout {
            layers: vec![NULLABLE],
            inline_value: Some(7i32.to_le_bytes().to_vec()),
            ..Default::default()
        })),
    };
    let def = raw_levels(&[1, 0]);
    let page = page_layout::decode(&layout, &[&[], &def], 2, &site()).unwrap();
    assert_eq!(page.def, Some(vec![1, 0]));
    assert_eq!(page.values.as_ref().map(Block::len), Some(2));
}

#[test]
fn malformed_constant_pages_get_typed_errors() {
    let one = constant_no_inline(vec![VALID]);
    let rome = string_value_buffer("Rome");
    let cases: Vec<(Vec<u8>, &str, &str)> = vec![
        // A buffer count its bytes cannot hold.
        (
            {
                let mut v = rome.clone();
                v[0] = 0xff;
                v
            },
            "data_file_out_of_bounds",
            "cannot hold",
        ),
        // Bytes after the last buffer.
        (
            {
                let mut v = rome.clone();
                v.push(0);
                v
            },
            "invalid_page_data",
            "after the buffers",
        ),
        // A buffer running past the end.
        (
            {
                let mut v = rome.clone();
                v[8] = 9;
                v
            },
            "data_file_out_of_bounds",
            "runs past",
        ),
        // Offsets pointing past the string's bytes.
        (
            {
                let mut v = rome.clone();
                v[16] = 5;
                v
            },
            "data_file_out_of_bounds",
            "outside",
        ),
        // Fewer than four bytes.
        (vec![1, 0], "data_file_out_of_bounds", "no buffer count"),
        // Three Arrow buffers.
        (
            {
                let mut v = 3u32.to_le_bytes().to_vec();
                v.extend_from_slice(&[0; 12]);
                v
            },
            "unsupported_encoding",
            "3 Arrow buffers",
        ),
    ];
    for (bytes, code, text) in cases {
        let e = page_layout::decode(&one, &[&bytes], 2, &site()).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        assert!(e.to_string().contains(text), "{text}: {e}");
        assert!(e.to_string().contains("constant_layout.value"), "{e}");
    }
    // Buffer counts that name no form.
    for n in [4usize, 5] {
        let bufs: Vec<&[u8]> = vec![&[]; n];
        let e = page_layout::decode(&one, &bufs, 2, &site()).unwrap_err();
        assert_eq!(e.code(), "invalid_page_data", "{e}");
    }
    let inline = constant(Some(vec![1, 0, 0, 0]), None);
    let e = page_layout::decode(&inline, &[&rome], 2, &site()).unwrap_err();
    assert!(
        e.to_string().contains("inline value with 1 page buffers"),
        "{e}"
    );
    // Compressed levels on a page with a value: Lance would read them as raw u16.
    let e = page_layout::decode(
        &constant(Some(vec![1, 0, 0, 0]), Some(flat(16))),
        &[],
        2,
        &site(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("raw u16"), "{e}");
    // A value repeated past the decoded-bytes limit is refused before it is built.
    let long = string_value_buffer(&"x".repeat(100));
    let rows = crate::data_file::MAX_DECODED_VALUES as usize;
    let e = page_layout::decode(&one, &[&long], rows, &site()).unwrap_err();
    assert!(e.to_string().contains("limit"), "{e}");
}
