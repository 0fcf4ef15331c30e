//! Property tests for the lineage encodings: built sequences round-trip exactly and re-encode to
//! the same bytes, builders agree with a plain `Vec` model, and decoding arbitrary bytes never
//! panics (and anything accepted round-trips).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lance_reference::lineage::{
    RowDatasetVersionSequence, RowIdSequence, U64Segment, row_ids, version,
};
use proptest::prelude::*;
use roaring::RoaringBitmap;

/// Value lists shaped so every segment kind appears: contiguous runs, sparse and dense gaps,
/// large spreads (u32 / u64 widths), unsorted lists, values near u64::MAX.
fn values() -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        (0u64..1000, 0u64..200).prop_map(|(s, n)| (s..s + n).collect()),
        proptest::collection::btree_set(0u64..300, 0..120).prop_map(|s| s.into_iter().collect()),
        proptest::collection::btree_set(0u64..5000, 0..40).prop_map(|s| s.into_iter().collect()),
        proptest::collection::btree_set(any::<u64>(), 0..20).prop_map(|s| s.into_iter().collect()),
        proptest::collection::btree_set(0u64..(1 << 33), 0..20)
            .prop_map(|s| s.into_iter().collect()),
        proptest::collection::vec(0u64..100_000, 0..40),
        proptest::collection::btree_set(u64::MAX - 300..=u64::MAX, 0..50)
            .prop_map(|s| s.into_iter().collect()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn row_ids_round_trip_and_reencode_identically(v in values()) {
        // covers: LIN-ENC-1, LIN-ENC-6
        let seq = RowIdSequence::from_values(&v);
        let bytes = seq.encode();
        let back = RowIdSequence::decode(&bytes).unwrap();
        prop_assert_eq!(&back, &seq);
        prop_assert_eq!(back.values(v.len() as u64).unwrap(), v.clone());
        prop_assert_eq!(back.encode(), bytes);
    }

    #[test]
    fn segment_len_matches_its_values(v in values()) {
        let s = U64Segment::from_values(&v);
        prop_assert_eq!(s.len(), v.len() as u64);
        s.validate("prop").unwrap();
    }

    #[test]
    fn versions_round_trip_and_reencode_identically(v in proptest::collection::vec(1u64..5, 0..200)) {
        // covers: LIN-ENC-7
        let seq = RowDatasetVersionSequence::from_versions(&v);
        let bytes = seq.encode();
        let back = RowDatasetVersionSequence::decode(&bytes).unwrap();
        prop_assert_eq!(back.versions(v.len() as u64).unwrap(), v.clone());
        prop_assert_eq!(back.encode(), bytes);
    }

    #[test]
    fn version_encoding_is_what_prost_writes(
        runs in proptest::collection::vec(
            (prop_oneof![
                (any::<u64>(), any::<u64>()).prop_map(|(a, b)| U64Segment::Range { start: a.min(b), end: a.max(b) }),
                (0u64..3, 0u64..300).prop_map(|(a, n)| U64Segment::Range { start: a, end: a + n }),
                values().prop_map(|v| U64Segment::from_values(&v)),
            ], prop_oneof![Just(0u64), 0u64..200, any::<u64>()]),
            0..20,
        )
    ) {
        // covers: LIN-ENC-7
        // `encode` writes Range spans itself; the bytes must be prost's for every run shape.
        use lance_reference::proto::lance::table as pb;
        use prost::Message;
        let seq = RowDatasetVersionSequence {
            runs: runs.into_iter().map(|(span, version)| version::VersionRun { span, version }).collect(),
        };
        let prost_bytes = pb::RowDatasetVersionSequence {
            runs: seq.runs.iter().map(|r| pb::RowDatasetVersionRun { span: Some(r.span.to_proto()), version: r.version }).collect(),
        }
        .encode_to_vec();
        prop_assert_eq!(seq.encode(), prost_bytes);
    }

    #[test]
    fn compaction_equals_the_vec_model(
        parts in proptest::collection::vec((values(), any::<u64>()), 1..4),
        cut in any::<u64>(),
    ) {
        // covers: LIN-SEQ-2
        // Model: concatenate each source's values minus its deleted offsets.
        let mut model = Vec::new();
        let mut sources = Vec::new();
        let mut vsources = Vec::new();
        for (v, seed) in &parts {
            let deleted: RoaringBitmap =
                (0..v.len() as u32).filter(|i| (seed >> (i % 64)) & 1 == 1).collect();
            model.extend(v.iter().enumerate().filter(|(i, _)| !deleted.contains(*i as u32)).map(|(_, x)| *x));
            sources.push((RowIdSequence::from_values(v), deleted.clone()));
            let versions: Vec<u64> = v.iter().map(|x| x % 3 + 1).collect();
            vsources.push((RowDatasetVersionSequence::from_versions(&versions), deleted));
        }
        let total = model.len() as u64;
        let first = if total == 0 { 0 } else { cut % (total + 1) };
        let sizes = [first, total - first];
        let out = row_ids::compact(&sources, &sizes).unwrap();
        let got: Vec<u64> = out.iter().flat_map(|s| s.iter().collect::<Vec<_>>()).collect();
        prop_assert_eq!(got, model);
        for (s, &n) in out.iter().zip(&sizes) {
            prop_assert_eq!(s.len(), n);
            prop_assert_eq!(RowIdSequence::decode(&s.encode()).unwrap(), s.clone());
        }
        let vout = version::compact(&vsources, &sizes).unwrap();
        for (s, &n) in vout.iter().zip(&sizes) {
            prop_assert_eq!(s.len(), n);
        }
    }

    #[test]
    fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        // covers: LIN-DEC-6
        if let Ok(seq) = RowIdSequence::decode(&bytes) {
            // Accepted input re-decodes to the same sequence; expansion is refused unless the
            // caller's row count matches.
            prop_assert_eq!(RowIdSequence::decode(&seq.encode()).unwrap(), seq.clone());
            let _ = seq.values(seq.len().min(10_000));
        }
        if let Ok(seq) = RowDatasetVersionSequence::decode(&bytes) {
            prop_assert_eq!(RowDatasetVersionSequence::decode(&seq.encode()).unwrap(), seq.clone());
        }
    }

    #[test]
    fn decoding_mutated_valid_bytes_never_panics(v in values(), at in any::<usize>(), byte in any::<u8>()) {
        let mut bytes = RowIdSequence::from_values(&v).encode();
        if !bytes.is_empty() {
            let i = at % bytes.len();
            bytes[i] = byte;
        }
        if let Ok(seq) = RowIdSequence::decode(&bytes) {
            for s in &seq.segments {
                s.validate("prop").unwrap();
            }
        }
    }
}
