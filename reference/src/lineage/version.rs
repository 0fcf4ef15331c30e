//! `RowDatasetVersionSequence`: one dataset version per physical row (created-at or
//! last-updated-at), run-length encoded.
//!
//! Invariant: a decoded sequence has a span on every run, every span passes
//! [`U64Segment::validate`], and the summed span lengths fit in u64. Only a span's LENGTH
//! carries meaning (Lance 14 sums `span.len()` to find a row's run); the values inside a span
//! are whatever the writer put there, usually the run's row offsets, and after masking or
//! rechunking they are not renumbered. Per-row versions are expanded only through
//! [`RowDatasetVersionSequence::versions`], after a row-count check.
//!
//! Builders, each reproducing what Lance 14 writes:
//!
//! - [`RowDatasetVersionSequence::uniform`]: `n` rows at one version → one run with span
//!   `Range(0..n)` (no runs at all for `n == 0`). Appended fragments get this for both
//!   created-at and last-updated-at.
//! - [`RowDatasetVersionSequence::from_versions`]: run-length encoding with `Range(a..b)` spans
//!   in offset coordinates.
//! - [`RowDatasetVersionSequence::mask`], [`rechunk`], [`compact`]: like row ids, run by run;
//!   a masked span is re-encoded (`U64Segment::mask`), runs left empty are dropped, every
//!   rechunked piece is a new run whose span is the slice re-encoded by `from_values`, and
//!   neighbouring runs are never merged, even at equal versions.

use prost::Message;
use prost::encoding::encoded_len_varint;
use roaring::RoaringBitmap;

use super::LineageError;
use super::row_ids::local_positions;
use super::segment::U64Segment;
use crate::proto::lance::table as pb;

/// A run of rows sharing one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRun {
    /// A segment whose length is the run's row count.
    pub span: U64Segment,
    /// The dataset version of every row in the run.
    pub version: u64,
}

/// Per-row dataset versions as runs, in row-offset order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowDatasetVersionSequence {
    /// The runs.
    pub runs: Vec<VersionRun>,
}

impl RowDatasetVersionSequence {
    /// `rows` rows at `version`: one run with span `Range(0..rows)`; no runs when `rows == 0`.
    pub fn uniform(rows: u64, version: u64) -> RowDatasetVersionSequence {
        if rows == 0 {
            return RowDatasetVersionSequence::default();
        }
        RowDatasetVersionSequence {
            runs: vec![VersionRun {
                span: U64Segment::Range {
                    start: 0,
                    end: rows,
                },
                version,
            }],
        }
    }

    /// Run-length encodes one version per row; spans are `Range`s of row offsets.
    pub fn from_versions(versions: &[u64]) -> RowDatasetVersionSequence {
        let mut runs = Vec::new();
        let mut start = 0usize;
        for i in 1..=versions.len() {
            if i == versions.len() || versions[i] != versions[start] {
                runs.push(VersionRun {
                    span: U64Segment::Range {
                        start: start as u64,
                        end: i as u64,
                    },
                    version: versions[start],
                });
                start = i;
            }
        }
        RowDatasetVersionSequence { runs }
    }

    /// Decodes and validates a serialized `RowDatasetVersionSequence`.
    pub fn decode(bytes: &[u8]) -> Result<RowDatasetVersionSequence, LineageError> {
        match decode_range_runs(bytes) {
            Some(sequence) => Ok(sequence),
            None => decode_with_prost(bytes),
        }
    }

    /// The protobuf bytes: exactly what prost writes for the message (fields in tag order, zero
    /// scalars omitted, the span sub-message always present). A run whose span is a `Range` (what
    /// `from_versions` and `uniform` build, one per run) is written directly, without building
    /// its protobuf value; any other span goes through prost.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.runs.len() * 12);
        for run in &self.runs {
            // RowDatasetVersionSequence.runs (1), length-delimited.
            out.push(0x0a);
            match run.span {
                U64Segment::Range { start, end } => {
                    // RowDatasetVersionRun {1: span = U64Segment {1: range = Range {1: start,
                    // 2: end}}, 2: version}
                    let range_len = uint64_field_len(start) + uint64_field_len(end);
                    let span_len = 1 + varint_len(range_len) + range_len;
                    let run_len =
                        1 + varint_len(span_len) + span_len + uint64_field_len(run.version);
                    put_varint(run_len as u64, &mut out);
                    out.push(0x0a);
                    put_varint(span_len as u64, &mut out);
                    out.push(0x0a);
                    put_varint(range_len as u64, &mut out);
                    put_uint64_field(0x08, start, &mut out);
                    put_uint64_field(0x10, end, &mut out);
                    put_uint64_field(0x10, run.version, &mut out);
                }
                _ => {
                    let msg = pb::RowDatasetVersionRun {
                        span: Some(run.span.to_proto()),
                        version: run.version,
                    };
                    put_varint(msg.encoded_len() as u64, &mut out);
                    msg.encode_raw(&mut out);
                }
            }
        }
        out
    }

    /// Number of rows covered (saturating; exact for a decoded or built sequence).
    pub fn len(&self) -> u64 {
        self.runs
            .iter()
            .fold(0u64, |acc, r| acc.saturating_add(r.span.len()))
    }

    /// Whether no rows are covered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One version per row, lazily.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs
            .iter()
            .flat_map(|r| (0..r.span.len()).map(move |_| r.version))
    }

    /// One version per physical row, after checking there are exactly `physical_rows`.
    pub fn versions(&self, physical_rows: u64) -> Result<Vec<u64>, LineageError> {
        let len = self.len();
        if len != physical_rows {
            return Err(LineageError::LengthMismatch {
                sequence: "versions",
                len,
                expected: physical_rows,
            });
        }
        Ok(self.iter().collect())
    }

    /// The sequence without the rows at `deleted` (physical offsets): each run holding a deleted
    /// offset has its span masked; runs left empty are dropped.
    pub fn mask(&self, deleted: &RoaringBitmap) -> Result<RowDatasetVersionSequence, LineageError> {
        let total = self.len();
        if let Some(max) = deleted.max() {
            if u64::from(max) >= total {
                return Err(LineageError::OffsetOutOfRange {
                    what: "mask: deleted row".into(),
                    offset: u64::from(max),
                    physical_rows: total,
                });
            }
        }
        let mut runs = Vec::with_capacity(self.runs.len());
        let mut offset = 0u64;
        for run in &self.runs {
            let len = run.span.len();
            let span = run.span.mask(&local_positions(deleted, offset, len));
            offset += len;
            if !span.is_empty() {
                runs.push(VersionRun {
                    span,
                    version: run.version,
                });
            }
        }
        Ok(RowDatasetVersionSequence { runs })
    }
}

/// The general decoder: prost's message, then every span checked (see [`U64Segment::from_proto`]).
fn decode_with_prost(bytes: &[u8]) -> Result<RowDatasetVersionSequence, LineageError> {
    let msg = pb::RowDatasetVersionSequence::decode(bytes).map_err(|e| LineageError::Protobuf {
        message: "RowDatasetVersionSequence",
        problem: e.to_string(),
    })?;
    let mut runs = Vec::with_capacity(msg.runs.len());
    let mut total = 0u64;
    for (i, run) in msg.runs.iter().enumerate() {
        let location = || format!("RowDatasetVersionSequence.runs[{i}]");
        let Some(span) = &run.span else {
            return Err(LineageError::MissingField {
                location: location(),
                field: "RowDatasetVersionRun.span",
            });
        };
        // The location is spelled only when the span is refused (decoding it again names it
        // in the error): formatting it for every run cost more than decoding the run.
        let span = U64Segment::from_proto(span, "")
            .or_else(|_| U64Segment::from_proto(span, &format!("{}.span", location())))?;
        total = total
            .checked_add(span.len())
            .ok_or(LineageError::LengthOverflow {
                message: "RowDatasetVersionSequence",
            })?;
        runs.push(VersionRun {
            span,
            version: run.version,
        });
    }
    Ok(RowDatasetVersionSequence { runs })
}

/// The decoding of the common shape, every run a `Range` span written field by field in tag
/// order (what [`RowDatasetVersionSequence::encode`] writes), without building prost's message.
/// `None` whenever the bytes are anything else: unknown, repeated or reordered fields, another
/// span kind, a reversed range, a bad varint or length, a total past u64. [`decode_with_prost`]
/// then decides, so the result (value or error) is always the general decoder's.
fn decode_range_runs(bytes: &[u8]) -> Option<RowDatasetVersionSequence> {
    let mut runs = Vec::new();
    let mut total = 0u64;
    let mut rest = bytes;
    while let Some((&tag, tail)) = rest.split_first() {
        if tag != 0x0a {
            return None;
        }
        let (run, tail) = take_len_delimited(tail)?;
        rest = tail;
        let (span, after_span) = take_len_delimited(run.strip_prefix(&[0x0a])?)?;
        let version = match after_span.split_first() {
            None => 0,
            Some((&0x10, v)) => match take_varint(v)? {
                (version, []) => version,
                _ => return None,
            },
            Some(_) => return None,
        };
        let (mut range, after_range) = take_len_delimited(span.strip_prefix(&[0x0a])?)?;
        if !after_range.is_empty() {
            return None;
        }
        let (mut start, mut end) = (0, 0);
        if let Some(v) = range.strip_prefix(&[0x08]) {
            (start, range) = take_varint(v)?;
        }
        if let Some(v) = range.strip_prefix(&[0x10]) {
            (end, range) = take_varint(v)?;
        }
        if !range.is_empty() || start > end {
            return None;
        }
        total = total.checked_add(end - start)?;
        runs.push(VersionRun {
            span: U64Segment::Range { start, end },
            version,
        });
    }
    Some(RowDatasetVersionSequence { runs })
}

/// A protobuf varint as prost reads it (at most 10 bytes, the tenth at most 1) and the bytes
/// after it; `None` when prost would refuse it.
fn take_varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        if i == 9 && b > 1 {
            return None;
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// A length-delimited field's payload and the bytes after it.
fn take_len_delimited(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = take_varint(bytes)?;
    let len = usize::try_from(len).ok()?;
    (len <= rest.len()).then(|| rest.split_at(len))
}

/// Bytes of a varint.
fn varint_len(value: usize) -> usize {
    encoded_len_varint(value as u64)
}

/// Writes a protobuf varint (the bytes prost writes).
fn put_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Bytes of a proto3 `uint64` field with a one-byte key: none for 0 (omitted), else key + varint.
fn uint64_field_len(value: u64) -> usize {
    if value == 0 {
        0
    } else {
        1 + encoded_len_varint(value)
    }
}

/// Writes a proto3 `uint64` field (one-byte `key`), omitted when `value` is 0.
fn put_uint64_field(key: u8, value: u64, out: &mut Vec<u8>) {
    if value != 0 {
        out.push(key);
        put_varint(value, out);
    }
}

/// Re-cuts `sequences` (concatenated) into chunks of `sizes` rows, as Lance's
/// `rechunk_version_sequences` does (see the module docs). The sizes must add up to exactly
/// the rows available.
pub fn rechunk(
    sequences: &[RowDatasetVersionSequence],
    sizes: &[u64],
) -> Result<Vec<RowDatasetVersionSequence>, LineageError> {
    let runs: Vec<&VersionRun> = sequences
        .iter()
        .flat_map(|s| s.runs.iter())
        .filter(|r| !r.span.is_empty())
        .collect();
    let available = runs
        .iter()
        .fold(0u64, |a, r| a.saturating_add(r.span.len()));
    let requested = sizes.iter().fold(0u64, |a, &b| a.saturating_add(b));
    if available != requested {
        return Err(LineageError::ChunkMismatch {
            requested,
            available,
        });
    }
    let mut out = Vec::with_capacity(sizes.len());
    let mut pieces = runs
        .into_iter()
        .map(|r| (r.span.iter().collect::<Vec<u64>>(), r.version));
    let (mut current, mut version, mut used) = (Vec::new(), 0u64, 0usize);
    for &size in sizes {
        let mut chunk = RowDatasetVersionSequence::default();
        let mut remaining = size;
        while remaining > 0 {
            if used == current.len() {
                // The sizes add up to the rows available, so a piece is always left here.
                let Some((values, v)) = pieces.next() else {
                    break;
                };
                (current, version, used) = (values, v, 0);
            }
            let take = (current.len() - used).min(remaining as usize);
            let span = U64Segment::from_values(&current[used..used + take]);
            chunk.runs.push(VersionRun { span, version });
            used += take;
            remaining -= take as u64;
        }
        out.push(chunk);
    }
    Ok(out)
}

/// Compaction of one kind of version sequence: each source is masked by its fragment's deleted
/// offsets, then all are rechunked to the output fragments' `sizes`.
pub fn compact(
    sources: &[(RowDatasetVersionSequence, RoaringBitmap)],
    sizes: &[u64],
) -> Result<Vec<RowDatasetVersionSequence>, LineageError> {
    let masked = sources
        .iter()
        .map(|(s, d)| s.mask(d))
        .collect::<Result<Vec<_>, _>>()?;
    rechunk(&masked, sizes)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn range_runs() -> impl Strategy<Value = RowDatasetVersionSequence> {
        let bound = prop_oneof![0u64..4, 0u64..70_000, any::<u64>()];
        proptest::collection::vec((bound.clone(), bound, any::<u64>()), 0..12).prop_map(|runs| {
            RowDatasetVersionSequence {
                runs: runs
                    .into_iter()
                    .map(|(a, b, version)| VersionRun {
                        span: U64Segment::Range {
                            start: a.min(b),
                            end: a.max(b),
                        },
                        version,
                    })
                    .collect(),
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn the_range_path_decodes_what_prost_decodes(
            seq in range_runs(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            // covers: LIN-DEC-1, LIN-ENC-7
            // Valid encodings, then the same bytes with a few bytes changed or cut short: the
            // fast path either declines or gives exactly the general decoder's answer.
            let mut bytes = seq.encode();
            // A Range-only sequence takes the fast path, unless its length overflows u64.
            let total = seq.runs.iter().try_fold(0u64, |a, r| a.checked_add(r.span.len()));
            let clean = decode_range_runs(&bytes);
            prop_assert_eq!(clean, total.map(|_| seq.clone()));
            for (at, byte) in edits {
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    bytes[i] = byte;
                }
            }
            if truncate && !bytes.is_empty() {
                bytes.truncate(cut.index(bytes.len()));
            }
            if let Some(fast) = decode_range_runs(&bytes) {
                prop_assert_eq!(Ok(fast), decode_with_prost(&bytes));
            }
            prop_assert_eq!(
                RowDatasetVersionSequence::decode(&bytes),
                decode_with_prost(&bytes)
            );
        }

        #[test]
        fn the_range_path_agrees_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            // covers: LIN-DEC-1
            if let Some(fast) = decode_range_runs(&bytes) {
                prop_assert_eq!(Ok(fast), decode_with_prost(&bytes));
            }
        }
    }

    #[test]
    fn a_ten_byte_varint_ends_with_at_most_one() {
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(take_varint(&max), Some((u64::MAX, &[][..])));
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(take_varint(&over), None);
        let mut out = Vec::new();
        put_varint(u64::MAX, &mut out);
        assert_eq!(out, max);
    }
}
