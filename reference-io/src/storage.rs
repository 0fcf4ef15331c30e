//! Where a dataset's bytes live: the seam between reading a dataset and the place it is read
//! from.
//!
//! Invariant: every byte [`crate::Dataset`] reads, and every name it lists, comes through one
//! [`Storage`], addressed by a root-relative path with `/` separators that
//! [`crate::paths`] has already confined to the root. A storage answers three questions only
//! (the names under a directory, the size of a file, a range of a file's bytes); it never
//! interprets what it returns, so a local directory, an object store or an in-memory map give
//! the same reads and the same errors for the same bytes. A missing file is
//! [`StorageError::NotFound`], distinct from any other failure, because a reader reports a
//! file the manifest names but the table lacks differently from a failing device.
//! [`LocalStorage`] is the default: the local file system under one root directory.

use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Why a storage could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// No file or directory at that path.
    #[error("not found")]
    NotFound,
    /// Any other failure (permissions, network, a short read), in the storage's words.
    #[error("{0}")]
    Other(String),
}

/// A place holding a dataset's files: a directory, an object-store prefix, memory.
///
/// Paths are root-relative, `/`-separated, and already confined to the root.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// How the root is shown in messages (a directory path or a URI).
    fn describe(&self) -> String;
    /// The names of the files directly under `dir` (not recursive, names only); a missing
    /// directory is [`StorageError::NotFound`].
    fn list(&self, dir: &str) -> Result<Vec<String>, StorageError>;
    /// The size of the file at `path` in bytes.
    fn size(&self, path: &str) -> Result<u64, StorageError>;
    /// The bytes `range` of the file at `path`; fewer bytes than asked for (the file shrank) is
    /// an error, never a short answer.
    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Vec<u8>, StorageError>;
}

/// The local file system under one root directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalStorage {
    root: PathBuf,
}

impl LocalStorage {
    /// The storage under `root`.
    pub fn new(root: &Path) -> LocalStorage {
        LocalStorage {
            root: root.to_path_buf(),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

fn local_error(e: std::io::Error) -> StorageError {
    if e.kind() == std::io::ErrorKind::NotFound {
        StorageError::NotFound
    } else {
        StorageError::Other(e.to_string())
    }
}

impl Storage for LocalStorage {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn list(&self, dir: &str) -> Result<Vec<String>, StorageError> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(self.root.join(dir)).map_err(local_error)? {
            let entry = entry.map_err(local_error)?;
            // A name that is not UTF-8 cannot be one a manifest names; it is skipped.
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn size(&self, path: &str) -> Result<u64, StorageError> {
        let meta = std::fs::metadata(self.root.join(path)).map_err(local_error)?;
        if meta.is_dir() {
            return Err(StorageError::Other("is a directory".into()));
        }
        Ok(meta.len())
    }

    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Vec<u8>, StorageError> {
        let mut file = std::fs::File::open(self.root.join(path)).map_err(local_error)?;
        file.seek(SeekFrom::Start(range.start))
            .map_err(local_error)?;
        let want = range.end.saturating_sub(range.start);
        let mut bytes = Vec::new();
        // `take` keeps the read within the range even if the file grew since its size was read.
        file.take(want)
            .read_to_end(&mut bytes)
            .map_err(local_error)?;
        if bytes.len() as u64 != want {
            return Err(StorageError::Other(format!(
                "short read: {} of {want} bytes at offset {}",
                bytes.len(),
                range.start
            )));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_storage_lists_sizes_and_reads_ranges() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("_versions")).unwrap();
        std::fs::write(dir.path().join("_versions/b"), b"0123456789").unwrap();
        std::fs::write(dir.path().join("_versions/a"), b"").unwrap();
        let s = LocalStorage::new(dir.path());
        assert_eq!(s.list("_versions").unwrap(), vec!["a", "b"]);
        assert_eq!(s.list("missing"), Err(StorageError::NotFound));
        assert_eq!(s.size("_versions/b").unwrap(), 10);
        assert_eq!(s.size("_versions/c"), Err(StorageError::NotFound));
        assert_eq!(s.read_range("_versions/b", 2..5).unwrap(), b"234");
        assert!(matches!(
            s.read_range("_versions/b", 8..12),
            Err(StorageError::Other(_))
        ));
    }
}
