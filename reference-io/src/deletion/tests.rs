use proptest::prelude::*;
use roaring::RoaringBitmap;

use super::arrow_file::{Column, FileShape, ROW_ID, write_file};
use super::*;
use crate::roaring_format::{read_bitmap, write_bitmap};
use lance_reference::error::ErrorClass;

fn golden(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/lance14_deletions/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn file_of(form: DeletionFileType, num_deleted_rows: u64) -> DeletionFile {
    DeletionFile {
        file_type: form.proto_value(),
        read_version: 1,
        id: 42,
        num_deleted_rows,
        base_id: None,
    }
}

fn read(
    form: DeletionFileType,
    bytes: &[u8],
    physical_rows: u64,
) -> Result<RoaringBitmap, DatasetIoError> {
    read_deletion_file(3, &file_of(form, 0), bytes, physical_rows)
}

const ARROW: DeletionFileType = DeletionFileType::ArrowArray;
const BITMAP: DeletionFileType = DeletionFileType::Bitmap;

#[test]
fn paths_are_rebuilt_from_the_message_fields() {
    // covers: DS-DEL-1
    let mut f = DeletionFile {
        file_type: 0,
        read_version: 7,
        id: 1234,
        num_deleted_rows: 2,
        base_id: None,
    };
    assert_eq!(f.relative_path(5).unwrap(), "_deletions/5-7-1234.arrow");
    f.file_type = 1;
    assert_eq!(f.relative_path(5).unwrap(), "_deletions/5-7-1234.bin");
    f.file_type = 2;
    let err = f.relative_path(5).unwrap_err();
    assert_eq!(
        err,
        DatasetIoError::UnknownDeletionFileType {
            fragment: 5,
            file_type: 2
        }
    );
    assert_eq!(
        (err.class(), err.code()),
        (ErrorClass::UnsupportedFeature, "unknown_deletion_file_type")
    );
    assert!(read_deletion_file(5, &f, &[], 10).is_err());
}

#[test]
fn both_forms_round_trip() {
    let sets: Vec<RoaringBitmap> = vec![
        RoaringBitmap::new(),
        [0u32].into_iter().collect(),
        [9u32, 2, 5].into_iter().collect(),
        (0..6000).collect(),
        (0..200_000).step_by(7).collect(),
    ];
    for set in sets {
        for form in [ARROW, BITMAP] {
            let bytes = write_deletion_file(&set, form);
            let file = file_of(form, set.len());
            assert_eq!(
                read_deletion_file(3, &file, &bytes, 200_000).unwrap(),
                set,
                "{form:?}"
            );
        }
    }
}

#[test]
fn lance_picks_the_bitmap_form_from_5000_deletions_in_one_write() {
    // Observed with pylance 14.0.2 (tests/data/lance14_deletions/README.md).
    assert_eq!(lance_file_type(4999), ARROW);
    assert_eq!(lance_file_type(5000), BITMAP);
}

#[test]
fn lance_written_arrow_files_decode() {
    let cases: [(&str, RoaringBitmap); 3] = [
        ("arrow_scattered.arrow", (0..10).chain([1234]).collect()),
        ("arrow_one.arrow", [19_999u32].into_iter().collect()),
        ("arrow_zstd.arrow", (0..2000).collect()),
    ];
    for (name, expected) in cases {
        let bytes = golden(name);
        let file = file_of(ARROW, expected.len());
        assert_eq!(
            read_deletion_file(0, &file, &bytes, 20_000).unwrap(),
            expected,
            "{name}"
        );
    }
    // The 2000-row file really exercises ZSTD: its buffers are ZSTD frames.
    let zstd = golden("arrow_zstd.arrow");
    assert!(zstd.windows(4).any(|w| w == [0x28, 0xb5, 0x2f, 0xfd]));
}

#[test]
fn lance_written_bitmap_files_decode_and_our_writer_reproduces_them() {
    let three: RoaringBitmap = (0..5001).chain([70_000, 70_001, 140_000]).collect();
    let cases = [
        ("bin_bitset.bin", (10_000..16_000).collect(), 20_000),
        ("bin_three_containers.bin", three, 150_000),
    ];
    for (name, expected, physical_rows) in cases {
        let bytes = golden(name);
        let file = file_of(BITMAP, expected.len());
        assert_eq!(
            read_deletion_file(0, &file, &bytes, physical_rows).unwrap(),
            expected,
            "{name}"
        );
        assert_eq!(write_deletion_file(&expected, BITMAP), bytes, "{name}");
    }
}

#[test]
fn lance_written_index_fragment_bitmaps_decode_and_reencode() {
    let cases: [(&str, &[u32]); 3] = [
        ("index_fragments_0_to_2.bin", &[0, 1, 2]),
        ("index_fragments_0_to_3.bin", &[0, 1, 2, 3]),
        ("index_fragments_gap.bin", &[0, 2, 3, 4]),
    ];
    for (name, ids) in cases {
        let bytes = golden(name);
        let expected: RoaringBitmap = ids.iter().copied().collect();
        assert_eq!(
            read_bitmap(&bytes, name, "IndexMetadata.fragment_bitmap").unwrap(),
            expected,
            "{name}"
        );
        assert_eq!(write_bitmap(&expected), bytes, "{name}");
    }
}

#[test]
fn num_deleted_rows_zero_is_unknown_and_nonzero_must_match() {
    // covers: DS-DEL-4
    let set: RoaringBitmap = [1u32, 4].into_iter().collect();
    for form in [ARROW, BITMAP] {
        let bytes = write_deletion_file(&set, form);
        assert!(read_deletion_file(3, &file_of(form, 0), &bytes, 10).is_ok());
        let err = read_deletion_file(3, &file_of(form, 3), &bytes, 10).unwrap_err();
        let path = format!("_deletions/3-1-42.{}", form.suffix());
        assert_eq!(
            err,
            DatasetIoError::DeletedRowCountMismatch {
                file: path,
                declared: 3,
                found: 2
            }
        );
        assert_eq!(err.class(), ErrorClass::Invalid);
    }
}

#[test]
fn offsets_must_be_below_physical_rows() {
    // covers: OVL-DEL-3, DS-DEL-2
    let set: RoaringBitmap = [3u32, 10].into_iter().collect();
    for form in [ARROW, BITMAP] {
        let err = read(form, &write_deletion_file(&set, form), 10).unwrap_err();
        assert!(
            matches!(
                err,
                DatasetIoError::DeletionOffsetOutOfRange {
                    offset: 10,
                    physical_rows: 10,
                    ..
                }
            ),
            "{err}"
        );
        assert!(read(form, &write_deletion_file(&set, form), 11).is_ok());
    }
}

#[test]
fn duplicate_arrow_offsets_are_refused() {
    // covers: DS-DEL-3
    let bytes = write_file(&FileShape::deletion(3), &[4, 1, 4]);
    let err = read(ARROW, &bytes, 10).unwrap_err();
    assert!(
        matches!(
            err,
            DatasetIoError::DuplicateDeletionOffset { offset: 4, .. }
        ),
        "{err}"
    );
}

#[test]
fn arrow_offsets_may_come_in_any_order() {
    let bytes = write_file(&FileShape::deletion(3), &[7, 1, 4]);
    assert_eq!(
        read(ARROW, &bytes, 10).unwrap(),
        [1u32, 4, 7].into_iter().collect()
    );
}

fn column(name: &'static str, bit_width: i32, signed: bool, nullable: bool) -> Column {
    Column {
        name,
        bit_width,
        signed,
        nullable,
    }
}

#[test]
fn wrong_schemas_are_refused() {
    // covers: DS-DEL-5
    let row_id = column(ROW_ID, 32, false, false);
    let cases: Vec<(Vec<Column>, &str)> = vec![
        (vec![column(ROW_ID, 32, true, false)], "Int32"),
        (vec![column(ROW_ID, 64, false, false)], "UInt64"),
        (vec![column(ROW_ID, 32, false, true)], "nullable"),
        (vec![column("offset", 32, false, false)], "named"),
        (
            vec![row_id.clone(), column("extra", 32, false, false)],
            "2 fields",
        ),
        (vec![], "0 fields"),
    ];
    for (columns, expected) in cases {
        let layout = FileShape {
            columns,
            ..FileShape::deletion(1)
        };
        let err = read(ARROW, &write_file(&layout, &[0]), 10).unwrap_err();
        assert_eq!(err.code(), "wrong_deletion_schema", "{expected}: {err}");
        assert!(err.to_string().contains(expected), "{expected}: {err}");
    }
}

#[test]
fn exactly_one_batch_is_required() {
    // covers: DS-DEL-5
    for blocks in [0, 2] {
        let layout = FileShape {
            footer_blocks: blocks,
            ..FileShape::deletion(1)
        };
        let err = read(ARROW, &write_file(&layout, &[0]), 10).unwrap_err();
        assert!(
            matches!(err, DatasetIoError::DeletionBatchCount { batches, .. } if batches == blocks),
            "{err}"
        );
    }
}

#[test]
fn huge_or_lying_row_counts_are_refused_before_allocation() {
    let layout = FileShape {
        rows: i64::MAX,
        ..FileShape::deletion(1)
    };
    let err = read(ARROW, &write_file(&layout, &[0]), 10).unwrap_err();
    assert!(
        matches!(err, DatasetIoError::DeletionCountExceedsRows { rows, .. } if rows == i64::MAX as u64),
        "{err}"
    );
    // A row count the fragment could hold, but more values than the buffer has.
    let layout = FileShape {
        rows: 9,
        ..FileShape::deletion(1)
    };
    assert_eq!(
        read(ARROW, &write_file(&layout, &[0]), 10)
            .unwrap_err()
            .code(),
        "malformed_arrow_file"
    );
    let layout = FileShape {
        rows: -1,
        ..FileShape::deletion(1)
    };
    assert_eq!(
        read(ARROW, &write_file(&layout, &[0]), 10)
            .unwrap_err()
            .code(),
        "malformed_arrow_file"
    );
}

#[test]
fn nulls_are_refused() {
    // covers: DS-DEL-5
    // Lance's file carries an all-valid validity buffer for its 11 rows: ffff at body start.
    let mut bytes = golden("arrow_scattered.arrow");
    assert_eq!(&bytes[0x180..0x18a], &[0xff; 10]);
    bytes[0x188] = 0xfb; // row 2 null
    let err = read(ARROW, &bytes, 20_000).unwrap_err();
    assert!(
        matches!(err, DatasetIoError::NullDeletionOffset { row: 2, .. }),
        "{err}"
    );
}

#[test]
fn a_zstd_length_that_lies_is_refused() {
    let mut bytes = golden("arrow_zstd.arrow");
    // The values buffer's prefix declares 8000 bytes (2000 u32); claim 8004 instead.
    assert_eq!(&bytes[0x1c0..0x1c8], &8000i64.to_le_bytes());
    bytes[0x1c0..0x1c8].copy_from_slice(&8004i64.to_le_bytes());
    let err = read(ARROW, &bytes, 20_000).unwrap_err();
    assert_eq!(err.code(), "malformed_arrow_file", "{err}");
    assert!(err.to_string().contains("8004"), "{err}");
}

#[test]
fn streams_garbage_and_truncations_are_malformed() {
    let file = write_deletion_file(&(0..10).collect(), ARROW);
    // An IPC stream is the file without the leading magic and the footer.
    let footer_len =
        i32::from_le_bytes(file[file.len() - 10..file.len() - 6].try_into().unwrap()) as usize;
    let stream = &file[8..file.len() - 10 - footer_len];
    let err = read(ARROW, stream, 100).unwrap_err();
    assert!(err.to_string().contains("IPC stream"), "{err}");
    for bad in [
        &b"not an arrow file at all"[..],
        &[],
        &file[..file.len() - 1],
        &file[1..],
    ] {
        let err = read(ARROW, bad, 100).unwrap_err();
        assert_eq!(
            (err.class(), err.code()),
            (ErrorClass::Malformed, "malformed_arrow_file"),
            "{err}"
        );
    }
    assert_eq!(
        read(BITMAP, b"garbage!", 100).unwrap_err().code(),
        "malformed_bitmap"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Overwriting, inserting or cutting bytes of valid files (ours and Lance's, in both
    /// forms) yields a set or a typed error, never a panic; what is accepted obeys the rules.
    #[test]
    fn mutated_files_never_panic(
        which in 0usize..5,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..5),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let (form, mut bytes) = match which {
            0 => (ARROW, write_deletion_file(&(0..50).step_by(3).collect(), ARROW)),
            1 => (BITMAP, write_deletion_file(&(0..50).step_by(3).collect(), BITMAP)),
            2 => (ARROW, golden("arrow_zstd.arrow")),
            3 => (ARROW, golden("arrow_scattered.arrow")),
            _ => (BITMAP, golden("bin_three_containers.bin")),
        };
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Ok(set) = read(form, &bytes, 150_000) {
            prop_assert!(set.max().is_none_or(|m| m < 150_000));
        }
    }
}

#[test]
fn listed_offsets_are_written_as_given_and_a_repeat_is_refused() {
    // covers: DS-DEL-3
    let bytes = super::write_arrow_offsets(&[2, 0, 2]);
    let f = DeletionFile {
        file_type: 0,
        read_version: 1,
        id: 9,
        num_deleted_rows: 3,
        base_id: None,
    };
    let err = read_deletion_file(4, &f, &bytes, 5).unwrap_err();
    assert_eq!(err.code(), "duplicate_deletion_offset");
    let ok = super::write_arrow_offsets(&[2, 0]);
    let set = read_deletion_file(
        4,
        &DeletionFile {
            num_deleted_rows: 2,
            ..f
        },
        &ok,
        5,
    )
    .unwrap();
    assert_eq!(set.iter().collect::<Vec<_>>(), [0, 2]);
}

#[test]
fn a_signed_row_id_column_is_refused() {
    // covers: DS-DEL-5
    let f = DeletionFile {
        file_type: 0,
        read_version: 1,
        id: 9,
        num_deleted_rows: 2,
        base_id: None,
    };
    let bytes = super::write_arrow_int32_offsets(&[0, 2]);
    let err = read_deletion_file(4, &f, &bytes, 5).unwrap_err();
    assert_eq!(
        (err.class(), err.code()),
        (ErrorClass::Invalid, "wrong_deletion_schema"),
        "{err}"
    );
}
