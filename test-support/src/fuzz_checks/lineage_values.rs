//! Target `lineage_values`: an `Arbitrary` list of u64 values -> `RowIdSequence::from_values`
//! and `RowDatasetVersionSequence::from_versions` -> encode -> decode.
//!
//! Properties: the decoded sequence yields exactly the input values (in order, repeats
//! kept) and equals, field by field, the sequence it was encoded from. That equality also gives the two
//! properties this target once computed again on every run: re-encoding the decoded sequence
//! is byte-identical, and the encoder's choice is stable (`from_values` of the decoded values
//! gives the same segments), as `encode` and `from_values` are functions of their input (no
//! clock, no randomness, no hash order) and the decoded values are the input values.
//!
//! The values are built from pieces (runs with a stride, repeats, literals) so that every
//! segment encoding is reachable: contiguous ranges, ranges with a few holes, dense bitmaps,
//! sparse sorted arrays, unsorted arrays, and values near `u64::MAX`.

use arbitrary::Arbitrary;
use lance_reference::lineage::{RowDatasetVersionSequence, RowIdSequence};

use super::structured;

/// Values per input, at most: keeps one run fast and bounded.
///
/// 256 is as far as the fuzzer can count: libFuzzer sees how often an edge ran through an
/// 8-bit counter, which wraps at 256, and folds counts from 128 up into one feature, so for
/// the edges run once per value a longer list gives no new feedback, only a slower run (with
/// 2,048, a run of a committed `grown-*` seed took 2.5 to 5.7 ms: a version run per changed
/// value, encoded and decoded under comparison tracing). Nothing the encoders choose depends on
/// the count beyond that: a segment's form is decided by the values' span, holes and order,
/// which 256 values reach (a bitmap over up to 4,096 ids, arrays of u16, u32 and u64 offsets,
/// values near `u64::MAX`), and the version sequence starts a run wherever the value changes.
const MAX_VALUES: usize = 1 << 8;

#[derive(Debug, Arbitrary)]
enum Piece {
    Literal(u64),
    /// `len` values from `start` with stride `step` (0 repeats `start`), wrapping.
    Run {
        start: u64,
        len: u8,
        step: u8,
    },
    /// A run near the top of the u64 range.
    High {
        below_max: u8,
        len: u8,
    },
}

#[derive(Debug, Arbitrary)]
struct Input {
    pieces: Vec<Piece>,
}

fn values(input: &Input) -> Vec<u64> {
    let mut out = Vec::new();
    for piece in &input.pieces {
        match *piece {
            Piece::Literal(v) => out.push(v),
            Piece::Run { start, len, step } => {
                out.extend((0..u64::from(len)).map(|i| start.wrapping_add(i * u64::from(step))));
            }
            Piece::High { below_max, len } => {
                let first = u64::MAX - u64::from(below_max);
                out.extend((0..u64::from(len)).map(|i| first.saturating_add(i)));
            }
        }
        if out.len() >= MAX_VALUES {
            out.truncate(MAX_VALUES);
            break;
        }
    }
    out
}

pub fn check(data: &[u8]) {
    let Some(input) = structured::<Input>(data) else {
        return;
    };
    let values = values(&input);

    let ids = RowIdSequence::from_values(&values);
    let bytes = ids.encode();
    let decoded = RowIdSequence::decode(&bytes).expect("encoded row ids decode");
    assert_eq!(decoded, ids, "row ids changed through encode/decode");
    assert_eq!(
        decoded.iter().collect::<Vec<_>>(),
        values,
        "row ids lost values"
    );
    assert_eq!(decoded.values(values.len() as u64).unwrap(), values);

    let versions = RowDatasetVersionSequence::from_versions(&values);
    let bytes = versions.encode();
    let decoded = RowDatasetVersionSequence::decode(&bytes).expect("encoded versions decode");
    assert_eq!(decoded, versions, "versions changed through encode/decode");
    assert_eq!(
        decoded.iter().collect::<Vec<_>>(),
        values,
        "versions lost values"
    );
    assert_eq!(decoded.versions(values.len() as u64).unwrap(), values);
    for run in &decoded.runs {
        assert!(!run.span.is_empty(), "from_versions wrote an empty run");
    }
    for pair in decoded.runs.windows(2) {
        assert_ne!(
            pair[0].version, pair[1].version,
            "from_versions split a run"
        );
    }
}
