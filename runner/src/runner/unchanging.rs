//! A stored corpus as the built-in reference reads it during a run: files that nothing writes
//! while they are judged.
//!
//! Invariant: an [`UnchangingStorage`] answers every question exactly as
//! [`LocalStorage`] over the same root does (it asks it), and remembers what the reference
//! decoded from its files ([`Storage::decoded`]) for as long as it lives, so a data file or an
//! index that several versions of one dataset share is decoded once. That is sound only where
//! no file under the root is written while the storage lives, which is what a run of the stored
//! corpus promises (its files are the ones `SHA256SUMS` lists, verified during the run); a
//! directory a writer under test is still writing to is read through [`LocalStorage`], which
//! remembers nothing.

use std::ops::Range;
use std::path::Path;

use lance_reference_io::storage::{DecodedFiles, LocalStorage, Storage, StorageError};

/// The files under one root, read through [`LocalStorage`], with what was decoded from them
/// remembered (see the module docs).
#[derive(Debug)]
pub struct UnchangingStorage {
    local: LocalStorage,
    decoded: DecodedFiles,
}

impl UnchangingStorage {
    /// The storage under `root`, nothing decoded yet.
    pub fn new(root: &Path) -> UnchangingStorage {
        UnchangingStorage {
            local: LocalStorage::new(root),
            decoded: DecodedFiles::default(),
        }
    }
}

impl Storage for UnchangingStorage {
    fn describe(&self) -> String {
        self.local.describe()
    }

    fn list(&self, dir: &str) -> Result<Vec<String>, StorageError> {
        self.local.list(dir)
    }

    fn size(&self, path: &str) -> Result<u64, StorageError> {
        self.local.size(path)
    }

    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Vec<u8>, StorageError> {
        self.local.read_range(path, range)
    }

    fn decoded(&self) -> Option<&DecodedFiles> {
        Some(&self.decoded)
    }
}
