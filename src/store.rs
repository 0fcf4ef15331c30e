//! Where a scenario's versions are written, and how they are read back.
//!
//! Invariant: expected results are computed from what a reader gets back from the store,
//! never from the scenario's memory, and the read-back of every undamaged version must equal
//! the version the scenario committed ([`write_and_read_back`] checks it). Corruptions are
//! applied to the written newest version only.
//!
//! Today the store keeps the versions in memory: the reference's on-disk dataset writer
//! (`lance_reference::dataset`) has not landed, so "written" means "handed over as decoded
//! snapshots", and `dataset/` stays empty. Wiring the writer changes this module only: write
//! every version under `dataset/`, apply the corruptions to the files, and read each version
//! back with the reference reader.

use std::path::Path;

use lance_reference::model::Snapshot;

use crate::scenario::Execution;
use crate::scenario::corrupt::{CorruptError, apply_to_snapshot};

/// The versions as read back from the store.
#[derive(Debug, Clone)]
pub struct ReadBack {
    /// Every undamaged version, oldest first.
    pub versions: Vec<Snapshot>,
    /// The damaged newest version of a negative case, as a reader sees it.
    pub corrupted: Option<Snapshot>,
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A corruption could not be applied.
    #[error(transparent)]
    Corrupt(#[from] CorruptError),
    /// A version read back differs from the version committed.
    #[error("version {version} read back differs from the version the scenario committed")]
    RoundTrip {
        /// The version.
        version: u64,
    },
}

/// Writes `execution`'s versions (into `dataset_dir` once the writer exists) and reads them
/// back (see the module docs).
pub fn write_and_read_back(
    _dataset_dir: Option<&Path>,
    execution: &Execution,
) -> Result<ReadBack, StoreError> {
    let mut versions: Vec<Snapshot> = execution.versions.clone();
    for (committed, read) in execution.versions.iter().zip(&versions) {
        // Debug text compares floats by their shortest round-trip spelling, so NaN equals NaN
        // and -0.0 differs from 0.0 (derived `PartialEq` would call a NaN cell unequal).
        if format!("{committed:?}") != format!("{read:?}") {
            return Err(StoreError::RoundTrip {
                version: committed.version,
            });
        }
    }
    let corrupted = if execution.corruptions.is_empty() {
        None
    } else {
        let Some(mut newest) = versions.pop() else {
            return Ok(ReadBack {
                versions,
                corrupted: None,
            });
        };
        for c in &execution.corruptions {
            apply_to_snapshot(&mut newest, c)?;
        }
        Some(newest)
    };
    Ok(ReadBack {
        versions,
        corrupted,
    })
}
