//! Target `coverage_bitmap`: bytes -> `read_bitmap`.
//!
//! Properties: decoding never panics; an accepted bitmap written back (with and without run
//! containers) reads back to the same set, and writing is a function of the set; `rank`, the
//! lookup overlay resolution depends on, agrees with a naive count over `iter()` at offsets
//! taken from the input.

use lance_reference_io::roaring_format::{read_bitmap, write_bitmap, write_bitmap_without_runs};
use roaring::RoaringBitmap;

/// Above this cardinality the naive count is skipped (it is linear in the set).
const NAIVE_LIMIT: u64 = 1 << 18;

pub fn check(data: &[u8]) {
    let Ok(bitmap) = read_bitmap(data, "fuzz.bin", "bitmap") else {
        return;
    };
    let optimized = write_bitmap(&bitmap);
    let back =
        read_bitmap(&optimized, "rewrite.bin", "bitmap").expect("write_bitmap output reads back");
    assert_eq!(back, bitmap, "write_bitmap round trip changed the set");
    assert_eq!(
        write_bitmap(&back),
        optimized,
        "write_bitmap is not a function of the set"
    );
    let plain = write_bitmap_without_runs(&bitmap);
    let back = read_bitmap(&plain, "rewrite.bin", "bitmap")
        .expect("write_bitmap_without_runs output reads back");
    assert_eq!(
        back, bitmap,
        "write_bitmap_without_runs round trip changed the set"
    );
    if bitmap.len() <= NAIVE_LIMIT {
        for x in probes(data, &bitmap) {
            let naive = bitmap.iter().take_while(|&v| v <= x).count() as u64;
            assert_eq!(
                bitmap.rank(x),
                naive,
                "rank({x}) disagrees with a naive count"
            );
            // The resolver's view: a covered offset's value sits at index rank - 1.
            if bitmap.contains(x) {
                assert_eq!(bitmap.iter().nth(naive as usize - 1), Some(x));
            }
        }
    }
}

/// Offsets to probe: the set's ends and their neighbours, and u32s read from the input.
fn probes(data: &[u8], bitmap: &RoaringBitmap) -> Vec<u32> {
    let mut out = vec![0, u32::MAX];
    for end in [bitmap.min(), bitmap.max()].into_iter().flatten() {
        out.extend([end.saturating_sub(1), end, end.saturating_add(1)]);
    }
    out.extend(
        data.chunks_exact(4)
            .rev()
            .take(8)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
    out
}
