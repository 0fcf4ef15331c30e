//! The requirement ids the corpus pins to each error code: the requirement column of
//! `spec/error-codes.md`, generated with it by `lance-conformance generate` (edit the
//! cases, not this file). `generate --check` fails when it is stale.
//!
//! Invariant: codes in ascending order, each once, only codes some case expects.

/// By code: the requirement ids of the corpus cases that expect it.
#[rustfmt::skip]
pub(crate) const PINNED: &[(&str, &[&str])] = &[
    ("bad_committed_version", &["OVL-VER-1", "OVL-VER-5"]),
    ("bad_version_name", &["DS-NAME-4"]),
    ("base_length_mismatch", &["LIN-COL-3", "LIN-SEQ-1", "OVL-LAYOUT-7"]),
    ("data_file_bad_magic", &["IDX-FILE-2", "IDX-READ-1", "IDX-READ-6"]),
    ("deleted_row_count_mismatch", &["DS-DEL-4"]),
    ("deletion_offset_out_of_range", &["DS-DEL-2", "OVL-DEL-3"]),
    ("duplicate_deletion_offset", &["DS-DEL-3"]),
    ("duplicate_field", &["LIN-COL-2", "OVL-FOLD-2", "OVL-LAYOUT-5", "OVL-NULL-5"]),
    ("field_coverage_count_mismatch", &["OVL-SHAPE-3"]),
    ("index_coverage_without_entries", &["IDX-READ-4", "IDX-READ-6", "OVL-IDX-6"]),
    ("index_entry_mismatch", &["IDX-FILE-4", "IDX-READ-3", "IDX-READ-6", "OVL-IDX-2"]),
    ("index_file_layout", &["IDX-FILE-3", "IDX-READ-2", "IDX-READ-6"]),
    ("invalid_field", &["DS-FILE-1", "DS-FILE-4", "DS-FILE-5", "DS-FILE-6", "DS-FRAG-1", "DS-FRAG-2", "DS-LEAF-2", "DS-PATH-4", "IDX-META-3", "IDX-READ-8", "LIN-COL-3", "OVL-LAYOUT-9"]),
    ("invalid_page_data", &["DS-PAGE-1", "DS-PAGE-2"]),
    ("lineage_bitmap_padding", &["LIN-DEC-3", "LIN-ENC-8"]),
    ("lineage_byte_length", &["LIN-DEC-4"]),
    ("lineage_hole_outside_range", &["LIN-DEC-2", "LIN-ENC-2"]),
    ("lineage_length_mismatch", &["LIN-DEC-6", "LIN-ENC-7", "LIN-SEQ-1"]),
    ("lineage_missing_field", &["LIN-DEC-5"]),
    ("lineage_not_increasing", &["LIN-DEC-2", "LIN-ENC-2"]),
    ("lineage_offset_overflow", &["LIN-DEC-4"]),
    ("lineage_range_reversed", &["LIN-DEC-1"]),
    ("malformed_bitmap", &["OVL-LAYOUT-6"]),
    ("manifest_bad_magic", &["DS-FRAME-1"]),
    ("manifest_length_mismatch", &["DS-FRAME-2"]),
    ("manifest_section_out_of_range", &["DS-FRAME-3"]),
    ("manifest_too_short", &["DS-FRAME-1"]),
    ("missing_field", &["OVL-LAYOUT-6"]),
    ("missing_file", &["DS-FILE-1", "IDX-FILE-4", "IDX-META-2", "IDX-READ-1", "IDX-READ-6", "OVL-LAYOUT-6"]),
    ("missing_flag", &["FLG-CONS-1", "FLG-CONS-3", "FLG-CONS-5", "FLG-CONS-6", "FLG-CONS-7", "FLG-WRITE-8", "OVL-FLAG-1", "OVL-FLAG-3", "OVL-FLAG-4"]),
    ("missing_lineage_column", &["LIN-COL-2"]),
    ("missing_row_ids", &["FLG-CONS-4"]),
    ("mixed_naming_schemes", &["DS-NAME-1"]),
    ("offset_out_of_range", &["OVL-COV-3", "OVL-QRY-1"]),
    ("path_escape", &["DS-PATH-2", "DS-PATH-3", "DS-PATH-5", "DS-PATH-6", "IDX-READ-1"]),
    ("struct_validity_mismatch", &["DS-LEAF-3"]),
    ("type_mismatch", &["LIN-COL-3"]),
    ("unknown_deletion_file_type", &["DS-DEL-1"]),
    ("unknown_reader_flag", &["FLG-BITS-1", "FLG-BITS-2", "FLG-READ-1", "FLG-READ-2"]),
    ("unsupported", &["DS-FILE-3", "DS-PATH-4", "IDX-META-3", "IDX-READ-8", "LIN-EXT-1"]),
    ("value_count_mismatch", &["OVL-LAYOUT-4", "OVL-LAYOUT-8", "OVL-SHAPE-2"]),
    ("version_mismatch", &["DS-FRAME-2", "DS-NAME-2"]),
    ("writer_only_flag_in_reader_word", &["FLG-READ-1", "FLG-READ-2", "FLG-READ-4", "FLG-WRITE-6"]),
    ("wrong_deletion_schema", &["DS-DEL-5"]),
];
