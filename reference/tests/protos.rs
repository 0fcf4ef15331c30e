//! Wire-level checks of the kit's `.proto` files (`spec/protos/`): every byte string below was
//! worked out by hand from the protobuf encoding rules (key = field_number << 3 | wire_type;
//! wire type 0 = varint, 2 = length-delimited; negative int32 = ten-byte varint), so a wrong
//! field number, wire type, oneof grouping or `optional` marker makes a test fail.
#![allow(clippy::unwrap_used, clippy::panic)]

use lance_reference::proto::lance::file::{Field, FileDescriptor, Schema};
use lance_reference::proto::lance::table::{
    BasePath, DataFile, DataFragment, DataOverlayFile, DeletionFile, ExternalFile, FieldCoverage,
    IndexFile, IndexMetadata, IndexSection, Manifest, RowLineageColumn, Uuid, data_fragment,
    data_overlay_file, deletion_file, manifest,
};
use prost::Message;
use roaring::RoaringBitmap;

fn encode<M: Message>(m: &M) -> Vec<u8> {
    m.encode_to_vec()
}

/// -1 as an int32 varint: sign-extended to 64 bits, nine 7-bit groups of ones with the
/// continuation bit (0xff) and a final group holding bit 63 (0x01).
const MINUS_ONE: [u8; 10] = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
/// -2 likewise: the lowest group is 1111110 (0x7e | 0x80 = 0xfe), the rest as for -1.
const MINUS_TWO: [u8; 10] = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn data_fragment_overlays_is_field_11_length_delimited() {
    let frag = DataFragment {
        overlays: vec![DataOverlayFile::default()],
        ..Default::default()
    };
    // 0x5a = 11 << 3 | 2; 0x00 = the empty DataOverlayFile's length.
    assert_eq!(encode(&frag), [0x5a, 0x00]);
}

#[test]
fn column_lineage_arms_are_empty_markers_at_12_13_14() {
    // covers: LIN-COL-1
    use data_fragment::RowIdSequence as R;
    use data_fragment::{CreatedAtVersionSequence as C, LastUpdatedAtVersionSequence as L};
    let ids = DataFragment {
        row_id_sequence: Some(R::ColumnRowIds(RowLineageColumn {})),
        ..Default::default()
    };
    // 0x62 = 12 << 3 | 2, then length 0.
    assert_eq!(encode(&ids), [0x62, 0x00]);
    let updated = DataFragment {
        last_updated_at_version_sequence: Some(L::ColumnLastUpdatedAtVersions(RowLineageColumn {})),
        ..Default::default()
    };
    // 0x6a = 13 << 3 | 2.
    assert_eq!(encode(&updated), [0x6a, 0x00]);
    let created = DataFragment {
        created_at_version_sequence: Some(C::ColumnCreatedAtVersions(RowLineageColumn {})),
        ..Default::default()
    };
    // 0x72 = 14 << 3 | 2.
    assert_eq!(encode(&created), [0x72, 0x00]);
}

#[test]
fn inline_lineage_arms_are_bytes_at_5_7_9() {
    use data_fragment::RowIdSequence as R;
    use data_fragment::{CreatedAtVersionSequence as C, LastUpdatedAtVersionSequence as L};
    let frag = DataFragment {
        row_id_sequence: Some(R::InlineRowIds(vec![0xaa])),
        ..Default::default()
    };
    // 0x2a = 5 << 3 | 2, length 1, the payload byte.
    assert_eq!(encode(&frag), [0x2a, 0x01, 0xaa]);
    let frag = DataFragment {
        last_updated_at_version_sequence: Some(L::InlineLastUpdatedAtVersions(vec![0xbb])),
        ..Default::default()
    };
    // 0x3a = 7 << 3 | 2.
    assert_eq!(encode(&frag), [0x3a, 0x01, 0xbb]);
    let frag = DataFragment {
        created_at_version_sequence: Some(C::InlineCreatedAtVersions(vec![0xcc])),
        ..Default::default()
    };
    // 0x4a = 9 << 3 | 2.
    assert_eq!(encode(&frag), [0x4a, 0x01, 0xcc]);
}

#[test]
fn lineage_arms_of_one_oneof_replace_each_other() {
    // Inline row ids (0x2a 01 aa) followed by the column marker (0x62 00) for the SAME oneof:
    // protobuf keeps the last arm seen, which proves 5 and 12 share the `row_id_sequence` group.
    let bytes = [0x2a, 0x01, 0xaa, 0x62, 0x00];
    let frag = DataFragment::decode(&bytes[..]).unwrap();
    assert_eq!(
        frag.row_id_sequence,
        Some(data_fragment::RowIdSequence::ColumnRowIds(
            RowLineageColumn {}
        ))
    );
    // 7 then 13 (0x3a 01 bb, 0x6a 00) and 14 then 9 (0x72 00, 0x4a 01 cc).
    let bytes = [0x3a, 0x01, 0xbb, 0x6a, 0x00, 0x72, 0x00, 0x4a, 0x01, 0xcc];
    let frag = DataFragment::decode(&bytes[..]).unwrap();
    assert_eq!(
        frag.last_updated_at_version_sequence,
        Some(
            data_fragment::LastUpdatedAtVersionSequence::ColumnLastUpdatedAtVersions(
                RowLineageColumn {}
            )
        )
    );
    assert_eq!(
        frag.created_at_version_sequence,
        Some(data_fragment::CreatedAtVersionSequence::InlineCreatedAtVersions(vec![0xcc]))
    );
}

#[test]
fn external_lineage_arms_6_8_10_decode_so_they_can_be_refused() {
    // covers: LIN-EXT-1
    // 0x32 = 6 << 3 | 2, 0x42 = 8 << 3 | 2, 0x52 = 10 << 3 | 2, each an empty ExternalFile;
    // then physical_rows (0x20 = 4 << 3 | 0) = 7. Lance 14 reserves the numbers and skips them;
    // the kit decodes them into their oneofs so a reader sees them and refuses them.
    let bytes = [0x32, 0x00, 0x42, 0x00, 0x52, 0x00, 0x20, 0x07];
    let frag = DataFragment::decode(&bytes[..]).unwrap();
    assert_eq!(
        frag.row_id_sequence,
        Some(data_fragment::RowIdSequence::ExternalRowIds(
            ExternalFile::default()
        ))
    );
    assert_eq!(
        frag.last_updated_at_version_sequence,
        Some(
            data_fragment::LastUpdatedAtVersionSequence::ExternalLastUpdatedAtVersions(
                ExternalFile::default()
            )
        )
    );
    assert_eq!(
        frag.created_at_version_sequence,
        Some(
            data_fragment::CreatedAtVersionSequence::ExternalCreatedAtVersions(
                ExternalFile::default()
            )
        )
    );
    assert_eq!(frag.physical_rows, 7);
}

#[test]
fn data_fragment_scalars_and_files() {
    let frag = DataFragment {
        id: 3,
        ..Default::default()
    };
    // 0x08 = 1 << 3 | 0, value 3.
    assert_eq!(encode(&frag), [0x08, 0x03]);
    let frag = DataFragment {
        files: vec![DataFile::default()],
        ..Default::default()
    };
    // 0x12 = 2 << 3 | 2, empty DataFile.
    assert_eq!(encode(&frag), [0x12, 0x00]);
    let frag = DataFragment {
        deletion_file: Some(DeletionFile::default()),
        ..Default::default()
    };
    // 0x1a = 3 << 3 | 2; an empty but present message is still emitted.
    assert_eq!(encode(&frag), [0x1a, 0x00]);
    let frag = DataFragment {
        physical_rows: 300,
        ..Default::default()
    };
    // 0x20 = 4 << 3 | 0; 300 = 0b10_0101100 -> 0xac (0x2c | 0x80), 0x02.
    assert_eq!(encode(&frag), [0x20, 0xac, 0x02]);
    let frag = DataFragment {
        clustering_id: Some(0),
        ..Default::default()
    };
    // 15 << 3 | 0 = 0x78; `optional`, so an explicit 0 is emitted.
    assert_eq!(encode(&frag), [0x78, 0x00]);
    let frag = DataFragment {
        metadata: [("k".to_string(), "v".to_string())].into_iter().collect(),
        ..Default::default()
    };
    // 16 << 3 | 2 = 130 -> varint 0x82 0x01; entry length 6: key (0x0a 01 'k'), value
    // (0x12 01 'v').
    assert_eq!(
        encode(&frag),
        [0x82, 0x01, 0x06, 0x0a, 0x01, b'k', 0x12, 0x01, b'v']
    );
}

#[test]
fn data_file_fields_are_packed_int32_with_ten_byte_negatives() {
    let file = DataFile {
        fields: vec![0, -2],
        ..Default::default()
    };
    // 0x12 = 2 << 3 | 2 (packed); length 11 = 1 byte for 0 + 10 bytes for -2.
    assert_eq!(encode(&file), cat(&[&[0x12, 0x0b, 0x00], &MINUS_TWO]));
    let file = DataFile {
        path: "a".into(),
        column_indices: vec![1],
        file_major_version: 2,
        file_minor_version: 1,
        file_size_bytes: 5,
        base_id: Some(0),
        ..Default::default()
    };
    assert_eq!(
        encode(&file),
        [
            0x0a, 0x01, b'a', // 1 << 3 | 2, "a"
            0x1a, 0x01, 0x01, // 3 << 3 | 2 packed [1]
            0x20, 0x02, // 4 << 3 | 0, major 2
            0x28, 0x01, // 5 << 3 | 0, minor 1
            0x30, 0x05, // 6 << 3 | 0, size 5
            0x38, 0x00, // 7 << 3 | 0, optional base_id 0 kept
        ]
    );
    // base_id absent: nothing emitted.
    assert_eq!(
        encode(&DataFile {
            base_id: None,
            ..Default::default()
        }),
        [] as [u8; 0]
    );
}

#[test]
fn data_overlay_file_fields_and_coverage_oneof() {
    use data_overlay_file::Coverage;
    let dense = DataOverlayFile {
        coverage: Some(Coverage::SharedOffsetBitmap(vec![0xab])),
        ..Default::default()
    };
    // 0x12 = 2 << 3 | 2, one byte of bitmap.
    assert_eq!(encode(&dense), [0x12, 0x01, 0xab]);
    let sparse = DataOverlayFile {
        coverage: Some(Coverage::FieldCoverage(FieldCoverage {
            offset_bitmaps: vec![vec![0xab]],
        })),
        ..Default::default()
    };
    // 0x22 = 4 << 3 | 2, length 3: FieldCoverage { 0x0a = 1 << 3 | 2, length 1, 0xab }.
    assert_eq!(encode(&sparse), [0x22, 0x03, 0x0a, 0x01, 0xab]);
    let stamped = DataOverlayFile {
        committed_version: 3,
        ..Default::default()
    };
    // 0x18 = 3 << 3 | 0.
    assert_eq!(encode(&stamped), [0x18, 0x03]);
    let with_file = DataOverlayFile {
        data_file: Some(DataFile::default()),
        ..Default::default()
    };
    // 0x0a = 1 << 3 | 2.
    assert_eq!(encode(&with_file), [0x0a, 0x00]);
    // The two coverage arms share one oneof: a later field_coverage replaces the bitmap.
    let bytes = [0x12, 0x01, 0xab, 0x22, 0x00];
    let decoded = DataOverlayFile::decode(&bytes[..]).unwrap();
    assert_eq!(
        decoded.coverage,
        Some(Coverage::FieldCoverage(FieldCoverage::default()))
    );
}

#[test]
fn deletion_file_enum_values_and_fields() {
    use deletion_file::DeletionFileType;
    // ARROW_ARRAY is 0, the proto3 default, so it is not emitted.
    let arrow = DeletionFile {
        file_type: DeletionFileType::ArrowArray as i32,
        ..Default::default()
    };
    assert_eq!(encode(&arrow), [] as [u8; 0]);
    let bitmap = DeletionFile {
        file_type: DeletionFileType::Bitmap as i32,
        read_version: 2,
        id: 9,
        num_deleted_rows: 4,
        base_id: Some(1),
    };
    assert_eq!(
        encode(&bitmap),
        [
            0x08, 0x01, // 1 << 3 | 0, BITMAP = 1
            0x10, 0x02, // 2 << 3 | 0, read_version
            0x18, 0x09, // 3 << 3 | 0, id
            0x20, 0x04, // 4 << 3 | 0, num_deleted_rows
            0x38, 0x01, // 7 << 3 | 0, base_id
        ]
    );
    // An unknown type (2) decodes as a raw number the reader must reject itself.
    let odd = DeletionFile::decode(&[0x08, 0x02][..]).unwrap();
    assert_eq!(odd.file_type, 2);
    assert!(DeletionFileType::try_from(odd.file_type).is_err());
}

#[test]
fn schema_field_negative_parent_id_is_a_ten_byte_varint() {
    let field = Field {
        parent_id: -1,
        ..Default::default()
    };
    // 0x20 = 4 << 3 | 0, then -1 as a ten-byte varint.
    assert_eq!(encode(&field), cat(&[&[0x20], &MINUS_ONE]));
}

#[test]
fn schema_field_numbers() {
    let field = Field {
        r#type: 2,
        name: "x".into(),
        id: 1,
        logical_type: "bool".into(),
        nullable: true,
        encoding: 1,
        extension_name: "e".into(),
        ..Default::default()
    };
    let mut expected = vec![
        0x08, 0x02, // 1 << 3 | 0, type LEAF = 2
        0x12, 0x01, b'x', // 2 << 3 | 2, name
        0x18, 0x01, // 3 << 3 | 0, id
        0x2a, 0x04, // 5 << 3 | 2, logical_type (4 bytes follow)
    ];
    expected.extend_from_slice(b"bool");
    expected.extend_from_slice(&[
        0x30, 0x01, // 6 << 3 | 0, nullable
        0x38, 0x01, // 7 << 3 | 0, encoding PLAIN = 1
        0x4a, 0x01, b'e', // 9 << 3 | 2, extension_name
    ]);
    assert_eq!(encode(&field), expected);
    let keyed = Field {
        unenforced_primary_key: true,
        unenforced_primary_key_position: 1,
        unenforced_clustering_key: true,
        unenforced_clustering_key_position: 2,
        ..Default::default()
    };
    assert_eq!(
        encode(&keyed),
        [
            0x60, 0x01, // 12 << 3 | 0
            0x68, 0x01, // 13 << 3 | 0
            0x70, 0x01, // 14 << 3 | 0
            0x78, 0x02, // 15 << 3 | 0
        ]
    );
    let with_meta = Field {
        metadata: [("k".to_string(), vec![0x01])].into_iter().collect(),
        ..Default::default()
    };
    // 0x52 = 10 << 3 | 2; entry of 6 bytes: key 0x0a 01 'k', value 0x12 01 01.
    assert_eq!(
        encode(&with_meta),
        [0x52, 0x06, 0x0a, 0x01, b'k', 0x12, 0x01, 0x01]
    );
    // Field number 11 is reserved: an old storage-class string there is skipped.
    let old = Field::decode(&[0x5a, 0x01, b's', 0x18, 0x04][..]).unwrap();
    assert_eq!(
        old,
        Field {
            id: 4,
            ..Default::default()
        }
    );
}

#[test]
fn file_descriptor_and_schema_numbers() {
    let fd = FileDescriptor {
        schema: Some(Schema {
            fields: vec![Field::default()],
            metadata: [("m".to_string(), vec![])].into_iter().collect(),
        }),
        length: 3,
    };
    assert_eq!(
        encode(&fd),
        [
            0x0a, 0x07, // 1 << 3 | 2, Schema of 7 bytes:
            0x0a, 0x00, //   1 << 3 | 2, one empty Field
            0x2a, 0x03, //   5 << 3 | 2, map entry of 3 bytes:
            0x0a, 0x01, b'm', //     key "m"; the empty value is a default and is left out
            0x10, 0x03, // 2 << 3 | 0, length 3
        ]
    );
}

#[test]
fn manifest_optional_fields_keep_presence() {
    // Absent optionals emit nothing.
    assert_eq!(encode(&Manifest::default()), [] as [u8; 0]);
    let m = Manifest {
        index_section: Some(0),
        ..Default::default()
    };
    // 0x30 = 6 << 3 | 0; Some(0) is an index section at offset 0 and must survive.
    assert_eq!(encode(&m), [0x30, 0x00]);
    assert_eq!(
        Manifest::decode(&[0x30, 0x00][..]).unwrap().index_section,
        Some(0)
    );
    let m = Manifest {
        max_fragment_id: Some(0),
        ..Default::default()
    };
    // 0x58 = 11 << 3 | 0.
    assert_eq!(encode(&m), [0x58, 0x00]);
    let m = Manifest {
        branch: Some(String::new()),
        ..Default::default()
    };
    // 20 << 3 | 2 = 162 -> 0xa2 0x01, empty string.
    assert_eq!(encode(&m), [0xa2, 0x01, 0x00]);
    let m = Manifest {
        transaction_section_deprecated: Some(0),
        ..Default::default()
    };
    // 21 << 3 | 0 = 168 -> 0xa8 0x01.
    assert_eq!(encode(&m), [0xa8, 0x01, 0x00]);
    let m = Manifest {
        transaction_section: Some(0),
        ..Default::default()
    };
    // 23 << 3 | 0 = 184 -> 0xb8 0x01.
    assert_eq!(encode(&m), [0xb8, 0x01, 0x00]);
    let m = Manifest {
        max_allocated_field_id: Some(-1),
        ..Default::default()
    };
    // 24 << 3 | 0 = 192 -> 0xc0 0x01, then -1 as an int32 (ten bytes).
    assert_eq!(encode(&m), cat(&[&[0xc0, 0x01], &MINUS_ONE]));
}

#[test]
fn manifest_field_numbers() {
    let one = |m: Manifest| encode(&m);
    // 0x0a = 1 << 3 | 2 (fields).
    assert_eq!(
        one(Manifest {
            fields: vec![Field::default()],
            ..Default::default()
        }),
        [0x0a, 0x00]
    );
    // 0x12 = 2 << 3 | 2 (fragments).
    assert_eq!(
        one(Manifest {
            fragments: vec![DataFragment::default()],
            ..Default::default()
        }),
        [0x12, 0x00]
    );
    // 0x18 = 3 << 3 | 0 (version), 0x20 = 4 << 3 | 0 (version_aux_data).
    assert_eq!(
        one(Manifest {
            version: 1,
            ..Default::default()
        }),
        [0x18, 0x01]
    );
    assert_eq!(
        one(Manifest {
            version_aux_data: 1,
            ..Default::default()
        }),
        [0x20, 0x01]
    );
    // 0x2a = 5 << 3 | 2 (schema_metadata), entry "k" -> b"" (the empty value is left out).
    assert_eq!(
        one(Manifest {
            schema_metadata: [("k".to_string(), vec![])].into_iter().collect(),
            ..Default::default()
        }),
        [0x2a, 0x03, 0x0a, 0x01, b'k']
    );
    // 0x3a = 7 << 3 | 2 (timestamp): Timestamp { seconds (0x08) = 5 }.
    assert_eq!(
        one(Manifest {
            timestamp: Some(prost_types::Timestamp {
                seconds: 5,
                nanos: 0
            }),
            ..Default::default()
        }),
        [0x3a, 0x02, 0x08, 0x05]
    );
    // 0x42 = 8 << 3 | 2 (tag).
    assert_eq!(
        one(Manifest {
            tag: "t".into(),
            ..Default::default()
        }),
        [0x42, 0x01, b't']
    );
    // 0x48 = 9 << 3 | 0 (reader flags), 0x50 = 10 << 3 | 0 (writer flags); 2048 = 0x80 0x10.
    assert_eq!(
        one(Manifest {
            reader_feature_flags: 2048,
            writer_feature_flags: 2058,
            ..Default::default()
        }),
        [0x48, 0x80, 0x10, 0x50, 0x8a, 0x10]
    );
    // 0x62 = 12 << 3 | 2 (transaction_file).
    assert_eq!(
        one(Manifest {
            transaction_file: "x".into(),
            ..Default::default()
        }),
        [0x62, 0x01, b'x']
    );
    // 0x6a = 13 << 3 | 2 (writer_version): library (0x0a) "l", prerelease (0x1a) "", and
    // build_metadata (0x22) "" are kept because they are `optional`.
    assert_eq!(
        one(Manifest {
            writer_version: Some(manifest::WriterVersion {
                library: "l".into(),
                version: String::new(),
                prerelease: Some(String::new()),
                build_metadata: Some(String::new()),
            }),
            ..Default::default()
        }),
        [0x6a, 0x07, 0x0a, 0x01, b'l', 0x1a, 0x00, 0x22, 0x00]
    );
    // 0x70 = 14 << 3 | 0 (next_row_id).
    assert_eq!(
        one(Manifest {
            next_row_id: 9,
            ..Default::default()
        }),
        [0x70, 0x09]
    );
    // 0x7a = 15 << 3 | 2 (data_format): file_format (0x0a) "l", version (0x12) "2".
    assert_eq!(
        one(Manifest {
            data_format: Some(manifest::DataStorageFormat {
                file_format: "l".into(),
                version: "2".into(),
            }),
            ..Default::default()
        }),
        [0x7a, 0x06, 0x0a, 0x01, b'l', 0x12, 0x01, b'2']
    );
    // 16 << 3 | 2 = 130 -> 0x82 0x01 (config).
    assert_eq!(
        one(Manifest {
            config: [("a".to_string(), "b".to_string())].into_iter().collect(),
            ..Default::default()
        }),
        [0x82, 0x01, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01, b'b']
    );
    // 18 << 3 | 2 = 146 -> 0x92 0x01 (base_paths): BasePath { id 1 (0x08), name Some("")
    // (0x12), is_dataset_root (0x18) true, path (0x22) "p" }.
    assert_eq!(
        one(Manifest {
            base_paths: vec![BasePath {
                id: 1,
                name: Some(String::new()),
                is_dataset_root: true,
                path: "p".into(),
            }],
            ..Default::default()
        }),
        [
            0x92, 0x01, 0x09, 0x08, 0x01, 0x12, 0x00, 0x18, 0x01, 0x22, 0x01, b'p'
        ]
    );
    // 19 << 3 | 2 = 154 -> 0x9a 0x01 (table_metadata).
    assert_eq!(
        one(Manifest {
            table_metadata: [("a".to_string(), "b".to_string())].into_iter().collect(),
            ..Default::default()
        }),
        [0x9a, 0x01, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01, b'b']
    );
}

#[test]
fn manifest_reserved_numbers_are_skipped() {
    // 17 (blob_dataset_version, varint): 17 << 3 | 0 = 136 -> 0x88 0x01.
    // 22 (fragment_tree, message): 22 << 3 | 2 = 178 -> 0xb2 0x01.
    // 25 (clustering, message): 25 << 3 | 2 = 202 -> 0xca 0x01.
    // 26 (max_clustering_id, varint): 26 << 3 | 0 = 208 -> 0xd0 0x01.
    // Then version = 4 so the result is recognisable.
    let bytes = [
        0x88, 0x01, 0x07, 0xb2, 0x01, 0x00, 0xca, 0x01, 0x00, 0xd0, 0x01, 0x02, 0x18, 0x04,
    ];
    let m = Manifest::decode(&bytes[..]).unwrap();
    assert_eq!(
        m,
        Manifest {
            version: 4,
            ..Default::default()
        }
    );
}

#[test]
fn index_metadata_field_numbers() {
    let uuid: Vec<u8> = (0u8..16).collect();
    let index = IndexMetadata {
        uuid: Some(Uuid { uuid: uuid.clone() }),
        fields: vec![3],
        name: "i".into(),
        dataset_version: 1,
        fragment_bitmap: vec![0xee],
        index_details: Some(prost_types::Any {
            type_url: "/lance.table.BTreeIndexDetails".into(),
            value: vec![],
        }),
        index_version: Some(1),
        created_at: Some(0),
        base_id: Some(0),
        files: vec![IndexFile {
            path: "f".into(),
            size_bytes: 2,
        }],
        covering_fields: vec![4],
        clustering_id: Some(1),
        metadata: [("k".to_string(), "v".to_string())].into_iter().collect(),
    };
    let expected = cat(&[
        // 1 << 3 | 2: UUID of 18 bytes = { 1 << 3 | 2, 16, the 16 bytes }.
        &[0x0a, 0x12, 0x0a, 0x10],
        &uuid,
        // 2 << 3 | 2 packed [3]; 3 << 3 | 2 "i"; 4 << 3 | 0 = 1; 5 << 3 | 2 one byte.
        &[
            0x12, 0x01, 0x03, 0x1a, 0x01, b'i', 0x20, 0x01, 0x2a, 0x01, 0xee,
        ],
        // 6 << 3 | 2: Any of 32 bytes = { type_url (0x0a), 30 chars }; an empty value is
        // omitted.
        &[0x32, 0x20, 0x0a, 0x1e],
        b"/lance.table.BTreeIndexDetails",
        // 7 << 3 | 0 = 1; 8 << 3 | 0 = 0 and 9 << 3 | 0 = 0 (optional, kept).
        &[0x38, 0x01, 0x40, 0x00, 0x48, 0x00],
        // 10 << 3 | 2: IndexFile { path (0x0a) "f", size_bytes (0x10) 2 }.
        &[0x52, 0x05, 0x0a, 0x01, b'f', 0x10, 0x02],
        // 11 << 3 | 2 packed [4]; 12 << 3 | 0 = 1; 13 << 3 | 2 map entry "k" -> "v".
        &[
            0x5a, 0x01, 0x04, 0x60, 0x01, 0x6a, 0x06, 0x0a, 0x01, b'k', 0x12, 0x01, b'v',
        ],
    ]);
    assert_eq!(encode(&index), expected);
    let section = IndexSection {
        indices: vec![IndexMetadata::default()],
    };
    // 1 << 3 | 2.
    assert_eq!(encode(&section), [0x0a, 0x00]);
}

/// The one-value roaring bitmap {1} in the portable "no runs" layout: cookie 12346 (u32 LE
/// 3a 30 00 00), one container (u32 LE 1), container key 0 and cardinality-1 0 (u16 LE each),
/// the container's offset 16 = 8 + 4 + 4 (u32 LE), then the array container's value 1 (u16 LE).
const ROARING_ONE: [u8; 18] = [
    0x3a, 0x30, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
    0x01, 0x00,
];

#[test]
fn decodes_a_hand_built_manifest() {
    // Schema entry: Field { name (0x12) "id", parent_id (0x20) -1, logical_type (0x2a) "int64",
    // nullable (0x30) true }; id 0 is the default and is left out. 4 + 11 + 7 + 2 = 24 bytes.
    let field = cat(&[
        &[0x12, 0x02, b'i', b'd', 0x20],
        &MINUS_ONE,
        &[0x2a, 0x05],
        b"int64",
        &[0x30, 0x01],
    ]);
    assert_eq!(field.len(), 24);
    // Base file: path (0x0a) "f0.lance", fields (0x12) packed [0], column_indices (0x1a)
    // packed [0], file_major_version (0x20) 2. 10 + 3 + 3 + 2 = 18 bytes.
    let base = cat(&[
        &[0x0a, 0x08],
        b"f0.lance",
        &[0x12, 0x01, 0x00, 0x1a, 0x01, 0x00, 0x20, 0x02],
    ]);
    assert_eq!(base.len(), 18);
    // Overlay value file: the same shape with path "o.lance": 9 + 3 + 3 + 2 = 17 bytes.
    let value_file = cat(&[
        &[0x0a, 0x07],
        b"o.lance",
        &[0x12, 0x01, 0x00, 0x1a, 0x01, 0x00, 0x20, 0x02],
    ]);
    assert_eq!(value_file.len(), 17);
    // Overlay: data_file (0x0a, 17), shared_offset_bitmap (0x12, 18) = {1},
    // committed_version (0x18) 2. 2 + 17 + 2 + 18 + 2 = 41 bytes.
    let overlay = cat(&[
        &[0x0a, 0x11],
        &value_file,
        &[0x12, 0x12],
        &ROARING_ONE,
        &[0x18, 0x02],
    ]);
    assert_eq!(overlay.len(), 41);
    // Fragment: id 0 left out, files (0x12, 18), physical_rows (0x20) 3, overlays (0x5a, 41).
    // 2 + 18 + 2 + 2 + 41 = 65 bytes.
    let fragment = cat(&[&[0x12, 0x12], &base, &[0x20, 0x03, 0x5a, 0x29], &overlay]);
    assert_eq!(fragment.len(), 65);
    // WriterVersion: library (0x0a) "lance", version (0x12) "14.0.2": 7 + 8 = 15 bytes.
    let writer = cat(&[&[0x0a, 0x05], b"lance", &[0x12, 0x06], b"14.0.2"]);
    assert_eq!(writer.len(), 15);
    let bytes = cat(&[
        &[0x0a, 0x18],
        &field, // fields (1 << 3 | 2)
        &[0x12, 0x41],
        &fragment,                 // fragments (2 << 3 | 2)
        &[0x18, 0x02],             // version (3 << 3 | 0) = 2
        &[0x30, 0x00],             // index_section (6 << 3 | 0) = Some(0)
        &[0x48, 0x40, 0x50, 0x40], // reader / writer flags (9, 10 << 3 | 0) = 64
        &[0x6a, 0x0f],
        &writer, // writer_version (13 << 3 | 2)
    ]);
    let m = Manifest::decode(&bytes[..]).unwrap();
    assert_eq!(m.version, 2);
    assert_eq!(m.index_section, Some(0));
    assert_eq!(m.max_fragment_id, None);
    assert_eq!((m.reader_feature_flags, m.writer_feature_flags), (64, 64));
    let wv = m.writer_version.as_ref().unwrap();
    assert_eq!(
        (wv.library.as_str(), wv.version.as_str()),
        ("lance", "14.0.2")
    );
    assert_eq!(wv.prerelease, None);
    let [f] = m.fields.as_slice() else {
        panic!("one field expected")
    };
    assert_eq!((f.name.as_str(), f.id, f.parent_id), ("id", 0, -1));
    assert_eq!((f.logical_type.as_str(), f.nullable), ("int64", true));
    let [frag] = m.fragments.as_slice() else {
        panic!("one fragment expected")
    };
    assert_eq!((frag.id, frag.physical_rows), (0, 3));
    assert_eq!(frag.files[0].path, "f0.lance");
    assert_eq!(frag.files[0].fields, [0]);
    assert_eq!(frag.files[0].column_indices, [0]);
    assert_eq!(
        (
            frag.files[0].file_major_version,
            frag.files[0].file_minor_version
        ),
        (2, 0)
    );
    let [ov] = frag.overlays.as_slice() else {
        panic!("one overlay expected")
    };
    assert_eq!(ov.committed_version, 2);
    assert_eq!(ov.data_file.as_ref().unwrap().path, "o.lance");
    let Some(data_overlay_file::Coverage::SharedOffsetBitmap(bitmap)) = &ov.coverage else {
        panic!("dense coverage expected")
    };
    let coverage = RoaringBitmap::deserialize_from(&bitmap[..]).unwrap();
    assert_eq!(coverage.iter().collect::<Vec<u32>>(), [1]);
    // prost writes oneof arms after the plain fields, so its bytes need not equal ours; they
    // must decode to the same message.
    assert_eq!(Manifest::decode(&m.encode_to_vec()[..]).unwrap(), m);
}

#[test]
fn full_manifest_round_trips() {
    use data_fragment::RowIdSequence as R;
    use data_fragment::{CreatedAtVersionSequence as C, LastUpdatedAtVersionSequence as L};
    let file = |path: &str, fields: Vec<i32>| DataFile {
        path: path.into(),
        column_indices: (0..fields.len() as i32).collect(),
        fields,
        file_major_version: 2,
        file_minor_version: 0,
        file_size_bytes: 100,
        base_id: None,
    };
    let fragments = vec![
        DataFragment {
            id: 0,
            files: vec![file("a.lance", vec![0, 1])],
            deletion_file: Some(DeletionFile {
                file_type: deletion_file::DeletionFileType::Bitmap as i32,
                read_version: 3,
                id: u64::MAX,
                num_deleted_rows: 1,
                base_id: None,
            }),
            physical_rows: 10,
            row_id_sequence: Some(R::InlineRowIds(vec![1, 2, 3])),
            last_updated_at_version_sequence: Some(L::InlineLastUpdatedAtVersions(vec![4])),
            created_at_version_sequence: Some(C::InlineCreatedAtVersions(vec![5])),
            overlays: vec![
                DataOverlayFile {
                    data_file: Some(file("o1.lance", vec![1])),
                    coverage: Some(data_overlay_file::Coverage::SharedOffsetBitmap(
                        ROARING_ONE.to_vec(),
                    )),
                    committed_version: 2,
                },
                DataOverlayFile {
                    data_file: Some(file("o2.lance", vec![-2, 1])),
                    coverage: Some(data_overlay_file::Coverage::FieldCoverage(FieldCoverage {
                        offset_bitmaps: vec![vec![], ROARING_ONE.to_vec()],
                    })),
                    committed_version: 3,
                },
            ],
            clustering_id: None,
            metadata: Default::default(),
        },
        DataFragment {
            id: 1,
            files: vec![
                file("b.lance", vec![0, 1]),
                file("lineage.lance", vec![-3, -4, -5]),
            ],
            physical_rows: 4,
            row_id_sequence: Some(R::ColumnRowIds(RowLineageColumn {})),
            last_updated_at_version_sequence: Some(L::ColumnLastUpdatedAtVersions(
                RowLineageColumn {},
            )),
            created_at_version_sequence: Some(C::ColumnCreatedAtVersions(RowLineageColumn {})),
            ..Default::default()
        },
    ];
    let m = Manifest {
        fields: vec![
            Field {
                name: "id".into(),
                id: 0,
                parent_id: -1,
                logical_type: "int64".into(),
                ..Default::default()
            },
            Field {
                name: "v".into(),
                id: 1,
                parent_id: -1,
                logical_type: "string".into(),
                nullable: true,
                ..Default::default()
            },
        ],
        fragments,
        version: 3,
        index_section: Some(0),
        timestamp: Some(prost_types::Timestamp {
            seconds: 1_700_000_000,
            nanos: 5,
        }),
        reader_feature_flags: 2115,
        writer_feature_flags: 2123,
        max_fragment_id: Some(1),
        transaction_file: "2-x.txn".into(),
        writer_version: Some(manifest::WriterVersion {
            library: "lance-conformance".into(),
            version: "0.1.0".into(),
            prerelease: None,
            build_metadata: None,
        }),
        next_row_id: 14,
        data_format: Some(manifest::DataStorageFormat {
            file_format: "lance".into(),
            version: "2.0".into(),
        }),
        config: [("lance.row_lineage.spill".to_string(), "true".to_string())]
            .into_iter()
            .collect(),
        transaction_section: None,
        max_allocated_field_id: None,
        ..Default::default()
    };
    let bytes = m.encode_to_vec();
    assert_eq!(Manifest::decode(&bytes[..]).unwrap(), m);
}
