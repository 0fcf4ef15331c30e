//! Whether a version may be read at all: the one check every read path makes before it trusts
//! a snapshot (the in-memory reader of `expected/`, the on-disk [`Dataset`] reader, the runner's
//! reference testee).
//!
//! Invariant: rows, lineage and query answers of a version are produced only after
//! [`check_readable`] passed, and its steps run in one fixed order, so the error a negative
//! case pins is the first rule a reader must apply: the reader word (unknown bits refused,
//! [`crate::flags::check_for_read`]), then flags consistent with the content, then the
//! snapshot's own validation ([`Snapshot::validate`]).
//!
//! [`Dataset`]: https://docs.rs/lance-reference-io "lance_reference_io::Dataset"

use crate::Result;
use crate::flags;
use crate::model::Snapshot;

/// Refuses a snapshot a conforming reader must not read; `Ok` when every rule holds.
pub fn check_readable(snapshot: &Snapshot) -> Result<()> {
    flags::check_for_read(snapshot)?;
    snapshot.validate()
}

/// [`check_readable`] with each fragment's own check given by `fragment(i, &fragments[i])`
/// ([`Snapshot::validate_with`]), in the same order: for a reader that checked each fragment
/// with its columns and dropped them before the next.
pub fn check_readable_with(
    snapshot: &Snapshot,
    fragment: impl FnMut(usize, &crate::model::Fragment) -> Result<()>,
) -> Result<()> {
    flags::check_for_read(snapshot)?;
    snapshot.validate_with(fragment)
}

/// The part of [`check_readable`] that needs no data file: the reader word, flags against the
/// content, and [`Snapshot::validate_manifest`]. `validate` judges a version by it when a data
/// or index file could not be decoded by this kit (spec/validate.md).
pub fn check_readable_manifest(snapshot: &Snapshot) -> Result<()> {
    flags::check_for_read(snapshot)?;
    snapshot.validate_manifest()
}
