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

    /// Decodes and validates a serialized `RowDatasetVersionSequence`: prost's message, then
    /// every span checked (see [`U64Segment::from_proto`]) and the summed lengths kept within u64.
    pub fn decode(bytes: &[u8]) -> Result<RowDatasetVersionSequence, LineageError> {
        let msg =
            pb::RowDatasetVersionSequence::decode(bytes).map_err(|e| LineageError::Protobuf {
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
            // The location is spelled only when the span is refused: a sequence of many runs
            // would otherwise format one string per run to decode it.
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

    /// The protobuf bytes, as prost writes the message.
    pub fn encode(&self) -> Vec<u8> {
        pb::RowDatasetVersionSequence {
            runs: self
                .runs
                .iter()
                .map(|run| pb::RowDatasetVersionRun {
                    span: Some(run.span.to_proto()),
                    version: run.version,
                })
                .collect(),
        }
        .encode_to_vec()
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
        // Sized once: a collect would double its way up to the length, holding up to twice it.
        let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        out.extend(self.iter());
        Ok(out)
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
