//! Byte samples written by pylance 14.0.2 (`tests/data/lineage/lance14_samples.json`, made by
//! `extract_lance14.py`; provenance in that directory's README): our decoder must read each to
//! the values Lance itself reports, our encoder must give back the identical bytes, and where
//! Lance's builder path can be replayed from the values, our builders must produce the same bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use lance_reference::lineage::{
    RowDatasetVersionSequence, RowIdSequence, U64Segment, row_ids, version,
};
use roaring::RoaringBitmap;
use serde::Deserialize;

#[derive(Deserialize)]
struct Doc {
    producer: String,
    samples: Vec<Sample>,
}

#[derive(Deserialize, Clone)]
struct Sample {
    name: String,
    scenario: String,
    step: String,
    dataset_version: u64,
    fragment: u64,
    physical_rows: u64,
    deleted: Vec<[i64; 3]>,
    sequence: String,
    segments: Vec<String>,
    hex: String,
    values: Vec<[i64; 3]>,
}

fn expand(runs: &[[i64; 3]]) -> Vec<u64> {
    runs.iter()
        .flat_map(|&[first, count, step]| (0..count).map(move |i| (first + i * step) as u64))
        .collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn samples() -> Vec<Sample> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/lineage/lance14_samples.json"
    );
    let doc: Doc = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(doc.producer, "pylance 14.0.2");
    doc.samples
}

fn sample(name: &str) -> Sample {
    samples()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no sample {name}"))
}

fn kind_name(s: &U64Segment) -> &'static str {
    match s {
        U64Segment::Range { .. } => "range",
        U64Segment::RangeWithHoles { .. } => "range_with_holes",
        U64Segment::RangeWithBitmap { .. } => "range_with_bitmap",
        U64Segment::SortedArray(_) => "sorted_array",
        U64Segment::Array(_) => "array",
    }
}

#[test]
fn every_lance14_sample_decodes_to_lances_values_and_reencodes_byte_identically() {
    // covers: LIN-ENC-1, LIN-ENC-2, LIN-ENC-3, LIN-ENC-5, LIN-ENC-7, LIN-SEQ-2
    let all = samples();
    assert!(all.len() >= 70);
    let mut kinds = BTreeMap::new();
    for s in &all {
        let bytes = unhex(&s.hex);
        let expected = expand(&s.values);
        assert_eq!(expected.len() as u64, s.physical_rows, "{}", s.name);
        if s.sequence == "row_ids" {
            let seq = RowIdSequence::decode(&bytes).unwrap();
            assert_eq!(seq.values(s.physical_rows).unwrap(), expected, "{}", s.name);
            assert_eq!(seq.encode(), bytes, "{}", s.name);
            let names: Vec<&str> = seq.segments.iter().map(kind_name).collect();
            assert_eq!(names, s.segments, "{}", s.name);
            for k in names {
                *kinds.entry(k).or_insert(0) += 1;
            }
        } else {
            let seq = RowDatasetVersionSequence::decode(&bytes).unwrap();
            assert_eq!(
                seq.versions(s.physical_rows).unwrap(),
                expected,
                "{}",
                s.name
            );
            assert_eq!(seq.encode(), bytes, "{}", s.name);
            let names: Vec<&str> = seq.runs.iter().map(|r| kind_name(&r.span)).collect();
            assert_eq!(names, s.segments, "{}", s.name);
        }
    }
    // Lance 14 never produced an unsorted Array here; the other four kinds all appear.
    for k in [
        "range",
        "range_with_holes",
        "range_with_bitmap",
        "sorted_array",
    ] {
        assert!(
            kinds.contains_key(k),
            "no Lance sample with a {k} row-id segment"
        );
    }
}

#[test]
fn appended_fragments_match_new_fragment_and_uniform_builders() {
    // covers: LIN-STAMP-1, LIN-STAMP-2
    for s in samples() {
        let fresh = matches!(
            (s.scenario.as_str(), s.step.as_str(), s.fragment),
            (_, "v1_create", 0) | ("append", "v2_append", 1) | ("update", "v3_update", 1)
        );
        if !fresh {
            continue;
        }
        let bytes = unhex(&s.hex);
        let values = expand(&s.values);
        if s.sequence == "row_ids" {
            assert_eq!(
                RowIdSequence::new_fragment(values[0], s.physical_rows).encode(),
                bytes,
                "{}",
                s.name
            );
        } else {
            // written at the fragment's creation version: every value is that version
            let v = values[0];
            assert_eq!(
                RowDatasetVersionSequence::uniform(s.physical_rows, v).encode(),
                bytes,
                "{}",
                s.name
            );
        }
    }
    // The facts sheet's example: 10 rows at v1.
    assert_eq!(
        sample("append/v1_create/frag0/created_at").hex,
        "0a080a040a02100a1001"
    );
}

#[test]
fn moved_rows_match_rechunked_pieces_and_rle_versions() {
    // covers: LIN-STAMP-4
    // Row-moving update: one captured piece per source fragment, rechunked into the new fragment.
    let pieces = |p: &[&[u64]]| {
        p.iter()
            .map(|v| RowIdSequence::from_values(v))
            .collect::<Vec<_>>()
    };
    let s = sample("update/v3_update/frag2/row_ids");
    let out = row_ids::rechunk(&pieces(&[&[5], &[15]]), &[2]).unwrap();
    assert_eq!(out[0].encode(), unhex(&s.hex));
    let s = sample("update/v4_update/frag3/row_ids");
    let out = row_ids::rechunk(&pieces(&[&[3, 4], &[12]]), &[3]).unwrap();
    assert_eq!(out[0].encode(), unhex(&s.hex));
    // Matched-only merge_insert captured one piece per row.
    let s = sample("merge/v2_merge/frag1/row_ids");
    let out = row_ids::rechunk(&pieces(&[&[2], &[4], &[11], &[17]]), &[4]).unwrap();
    assert_eq!(out[0].encode(), unhex(&s.hex));
    // merge_insert with inserts: old ids + fresh ids as ONE segment (from_values).
    let s = sample("upsert/v2_upsert/frag1/row_ids");
    assert_eq!(
        RowIdSequence::from_values(&expand(&s.values)).encode(),
        unhex(&s.hex)
    );
    // created-at copied per row: run-length encoded in offset coordinates.
    for name in [
        "update/v3_update/frag2/created_at",
        "update/v4_update/frag3/created_at",
        "upsert/v2_upsert/frag1/created_at",
    ] {
        let s = sample(name);
        assert_eq!(
            RowDatasetVersionSequence::from_versions(&expand(&s.values)).encode(),
            unhex(&s.hex),
            "{name}"
        );
    }
    // last-updated-at of moved rows: the commit's version, uniform.
    for name in [
        "update/v3_update/frag2/last_updated_at",
        "merge/v2_merge/frag1/last_updated_at",
        "upsert/v2_upsert/frag1/last_updated_at",
    ] {
        let s = sample(name);
        let expected = RowDatasetVersionSequence::uniform(s.physical_rows, s.dataset_version);
        assert_eq!(expected.encode(), unhex(&s.hex), "{name}");
    }
}

#[test]
fn compactions_match_mask_then_rechunk_of_the_source_fragments() {
    // covers: LIN-ENC-8, LIN-SEQ-2
    let all = samples();
    for (scenario, before, after) in [
        ("bitmap", "v3_delete", "v4_compact"),
        ("holes", "v2_delete", "v3_compact"),
        ("sorted_u16", "v2_delete", "v3_compact"),
        ("sorted_u32", "v2_delete", "v3_compact"),
        ("update", "v4_update", "v5_compact"),
        ("merge", "v2_merge", "v3_compact"),
    ] {
        let pick = |step: &str, seq: &str| -> Vec<Sample> {
            let mut v: Vec<Sample> = all
                .iter()
                .filter(|s| s.scenario == scenario && s.step == step && s.sequence == seq)
                .cloned()
                .collect();
            v.sort_by_key(|s| s.fragment);
            v
        };
        // In each scenario the compaction rewrote every fragment: all "before" fragments are
        // sources, all "after" fragments are outputs (new ids), sized by their physical_rows.
        let outputs = pick(after, "row_ids");
        assert!(outputs.iter().all(|o| {
            pick(before, "row_ids")
                .iter()
                .all(|b| b.fragment != o.fragment)
        }));
        let sizes: Vec<u64> = outputs.iter().map(|s| s.physical_rows).collect();
        let deleted = |s: &Sample| -> RoaringBitmap {
            expand(&s.deleted).into_iter().map(|o| o as u32).collect()
        };
        let sources: Vec<(RowIdSequence, RoaringBitmap)> = pick(before, "row_ids")
            .iter()
            .map(|s| (RowIdSequence::decode(&unhex(&s.hex)).unwrap(), deleted(s)))
            .collect();
        let out = row_ids::compact(&sources, &sizes).unwrap();
        assert_eq!(out.len(), outputs.len(), "{scenario}");
        for (got, want) in out.iter().zip(&outputs) {
            assert_eq!(got.encode(), unhex(&want.hex), "{}", want.name);
        }
        for seq in ["created_at", "last_updated_at"] {
            let sources: Vec<(RowDatasetVersionSequence, RoaringBitmap)> = pick(before, seq)
                .iter()
                .map(|s| {
                    (
                        RowDatasetVersionSequence::decode(&unhex(&s.hex)).unwrap(),
                        deleted(s),
                    )
                })
                .collect();
            let out = version::compact(&sources, &sizes).unwrap();
            let expected = pick(after, seq);
            assert_eq!(out.len(), expected.len(), "{scenario} {seq}");
            for (got, want) in out.iter().zip(&expected) {
                assert_eq!(got.encode(), unhex(&want.hex), "{}", want.name);
            }
        }
    }
}
