//! Target `lineage_sequence`: bytes -> `RowIdSequence::decode` and
//! `RowDatasetVersionSequence::decode`.
//!
//! Properties: no panic; an accepted sequence re-encodes to bytes that decode to an equal
//! sequence and re-encode byte-identically (prost does not keep the input's own byte layout,
//! so the fixed point is checked from the first re-encoding); for a short sequence, `iter`
//! yields exactly `len` values, `values`/`versions` expand it, and masking offsets taken from
//! the input removes exactly those rows.

use lance_reference::lineage::{RowDatasetVersionSequence, RowIdSequence};
use roaring::RoaringBitmap;

/// Sequences longer than this are not expanded (expansion is linear in the row count).
const EXPAND_LIMIT: u64 = 1 << 16;

pub fn check(data: &[u8]) {
    if let Ok(ids) = RowIdSequence::decode(data) {
        let bytes = ids.encode();
        let again = RowIdSequence::decode(&bytes).expect("re-encoded row ids decode");
        assert_eq!(again, ids, "row-id sequence changed through encode/decode");
        assert_eq!(
            again.encode(),
            bytes,
            "row-id encoding is not a fixed point"
        );
        let len = ids.len();
        if len <= EXPAND_LIMIT {
            let values = ids.values(len).expect("values at its own length");
            assert_eq!(values.len() as u64, len);
            assert!(
                ids.values(len + 1).is_err(),
                "values accepted a wrong row count"
            );
            let deleted = offsets(data, len);
            let masked = ids.mask(&deleted).expect("mask with in-range offsets");
            assert_eq!(masked.iter().collect::<Vec<_>>(), keep(&values, &deleted));
        }
    }
    if let Ok(versions) = RowDatasetVersionSequence::decode(data) {
        let bytes = versions.encode();
        let again = RowDatasetVersionSequence::decode(&bytes).expect("re-encoded versions decode");
        assert_eq!(
            again, versions,
            "version sequence changed through encode/decode"
        );
        assert_eq!(
            again.encode(),
            bytes,
            "version encoding is not a fixed point"
        );
        let len = versions.len();
        if len <= EXPAND_LIMIT {
            let values = versions.versions(len).expect("versions at its own length");
            assert_eq!(values.len() as u64, len);
            let deleted = offsets(data, len);
            let masked = versions.mask(&deleted).expect("mask with in-range offsets");
            assert_eq!(masked.iter().collect::<Vec<_>>(), keep(&values, &deleted));
        }
    }
}

/// Up to 8 row offsets below `len`, derived from the input's last bytes.
fn offsets(data: &[u8], len: u64) -> RoaringBitmap {
    if len == 0 {
        return RoaringBitmap::new();
    }
    data.iter()
        .rev()
        .take(8)
        .map(|&b| (u64::from(b) * 257 % len) as u32)
        .collect()
}

fn keep(values: &[u64], deleted: &RoaringBitmap) -> Vec<u64> {
    values
        .iter()
        .enumerate()
        .filter(|(i, _)| !deleted.contains(*i as u32))
        .map(|(_, &v)| v)
        .collect()
}
