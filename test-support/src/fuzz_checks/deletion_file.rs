//! Target `deletion_file`: bytes -> `read_deletion_file`, both forms.
//!
//! Input layout: byte 0 picks the form (bit 0: 0 Arrow IPC, 1 roaring) and whether
//! `num_deleted_rows` is declared (bit 1); bytes 1..5 are the fragment's `physical_rows` (u32
//! LE); then, when declared, `num_deleted_rows` (u32 LE); the rest is the file. Properties: no panic; an
//! accepted set has every offset below `physical_rows`; written back in either form it reads
//! back to the same set, with `num_deleted_rows` declared as its size.

use lance_reference_io::deletion::{
    DeletionFile, DeletionFileType, read_deletion_file, write_deletion_file,
};

pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Some((rows, rest)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let physical_rows = u64::from(u32::from_le_bytes(*rows));
    let form = if mode & 1 == 0 {
        DeletionFileType::ArrowArray
    } else {
        DeletionFileType::Bitmap
    };
    let (num_deleted_rows, rest) = if mode & 2 == 0 {
        (0, rest)
    } else {
        let Some((n, rest)) = rest.split_first_chunk::<4>() else {
            return;
        };
        (u64::from(u32::from_le_bytes(*n)), rest)
    };
    let described = DeletionFile {
        file_type: form.proto_value(),
        read_version: 1,
        id: 7,
        num_deleted_rows,
        base_id: None,
    };
    let Ok(deleted) = read_deletion_file(3, &described, rest, physical_rows) else {
        return;
    };
    if let Some(max) = deleted.max() {
        assert!(
            u64::from(max) < physical_rows,
            "accepted offset {max} >= physical_rows"
        );
    }
    if num_deleted_rows != 0 {
        assert_eq!(
            deleted.len(),
            num_deleted_rows,
            "accepted a wrong num_deleted_rows"
        );
    }
    for form in [DeletionFileType::ArrowArray, DeletionFileType::Bitmap] {
        let bytes = write_deletion_file(&deleted, form);
        let described = DeletionFile {
            file_type: form.proto_value(),
            num_deleted_rows: deleted.len(),
            ..described
        };
        let back = read_deletion_file(3, &described, &bytes, physical_rows)
            .unwrap_or_else(|e| panic!("re-written {form:?} file refused: {e}"));
        assert_eq!(back, deleted, "{form:?} round trip changed the set");
    }
}
