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
//!
//! Writing goes through [`StorageWrite`], a storage that also creates directories and files
//! ([`crate::write::write_version_in`]); [`LocalStorage`] and [`MemoryStorage`] are both. A
//! [`MemoryStorage`] holds every file in memory (the fuzz targets and the model-based test
//! write and read whole histories without touching a disk) and remembers what the readers
//! decoded from its files ([`Storage::decoded`], [`DecodedFiles`]): it sees every write, so it
//! forgets a file's decodings whenever the file is written, and an entry can never outlive the
//! bytes it was decoded from. A local directory can change behind the reader's back, so
//! [`LocalStorage`] remembers nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use crate::decoded::DecodedFiles;

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
    /// Where readers keep what they decoded from this storage's files, when the storage can
    /// tell that a file changed (it sees every write); `None` (the default) decodes every read.
    fn decoded(&self) -> Option<&DecodedFiles> {
        None
    }
}

/// A storage that is also written: the seam [`crate::write::write_version_in`] writes through.
pub trait StorageWrite: Storage {
    /// Makes `dir` exist (with its parents), empty if it is new.
    fn create_dir(&self, dir: &str) -> Result<(), StorageError>;
    /// Puts `bytes` at `path`, replacing a file there and creating missing parents.
    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), StorageError>;
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
        // Room for exactly the bytes asked for (as far as the file has them), so a large read
        // is one allocation of its own size rather than a vector doubled up to it.
        let have = file
            .metadata()
            .map_err(local_error)?
            .len()
            .saturating_sub(range.start);
        let mut bytes = Vec::with_capacity(usize::try_from(want.min(have)).unwrap_or(0));
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

impl StorageWrite for LocalStorage {
    fn create_dir(&self, dir: &str) -> Result<(), StorageError> {
        std::fs::create_dir_all(self.root.join(dir)).map_err(local_error)
    }

    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), StorageError> {
        let full = self.root.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(local_error)?;
        }
        std::fs::write(full, bytes).map_err(local_error)
    }
}

/// A dataset held in memory: files by root-relative path, directories as the set of paths
/// created or holding a file. Cloning shares the files (an `Arc`), so a writer and a
/// [`crate::Dataset`] can hold the same store.
#[derive(Debug, Clone, Default)]
pub struct MemoryStorage {
    inner: Arc<MemoryFiles>,
}

#[derive(Debug, Default)]
struct MemoryFiles {
    files: Mutex<BTreeMap<String, Arc<Vec<u8>>>>,
    dirs: Mutex<BTreeSet<String>>,
    decoded: DecodedFiles,
}

/// A lock whose holder panicked still guards consistent maps: every update is one insert or
/// remove.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MemoryStorage {
    /// An empty store.
    pub fn new() -> MemoryStorage {
        MemoryStorage::default()
    }

    /// Every file's path, sorted.
    pub fn paths(&self) -> Vec<String> {
        lock(&self.inner.files).keys().cloned().collect()
    }

    fn file(&self, path: &str) -> Result<Arc<Vec<u8>>, StorageError> {
        lock(&self.inner.files)
            .get(path)
            .cloned()
            .ok_or(StorageError::NotFound)
    }

    fn add_dirs_of(&self, path: &str) {
        let mut dirs = lock(&self.inner.dirs);
        let mut at = path;
        while let Some((parent, _)) = at.rsplit_once('/') {
            dirs.insert(parent.to_string());
            at = parent;
        }
    }
}

impl Storage for MemoryStorage {
    fn describe(&self) -> String {
        "(memory)".into()
    }

    fn list(&self, dir: &str) -> Result<Vec<String>, StorageError> {
        let dir = dir.trim_end_matches('/');
        if !lock(&self.inner.dirs).contains(dir) {
            return Err(StorageError::NotFound);
        }
        let prefix = format!("{dir}/");
        // BTreeMap order: the names come out sorted, as a listing's should.
        Ok(lock(&self.inner.files)
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| {
                let name = &p[prefix.len()..];
                (!name.contains('/')).then(|| name.to_string())
            })
            .collect())
    }

    fn size(&self, path: &str) -> Result<u64, StorageError> {
        Ok(self.file(path)?.len() as u64)
    }

    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Vec<u8>, StorageError> {
        let bytes = self.file(path)?;
        let (Ok(start), Ok(end)) = (usize::try_from(range.start), usize::try_from(range.end))
        else {
            return Err(StorageError::Other("range past the address space".into()));
        };
        bytes.get(start..end).map(<[u8]>::to_vec).ok_or_else(|| {
            StorageError::Other(format!(
                "short read: the file has {} bytes, {}..{} asked",
                bytes.len(),
                range.start,
                range.end
            ))
        })
    }

    fn decoded(&self) -> Option<&DecodedFiles> {
        Some(&self.inner.decoded)
    }
}

impl StorageWrite for MemoryStorage {
    fn create_dir(&self, dir: &str) -> Result<(), StorageError> {
        let dir = dir.trim_end_matches('/');
        self.add_dirs_of(dir);
        lock(&self.inner.dirs).insert(dir.to_string());
        Ok(())
    }

    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), StorageError> {
        self.add_dirs_of(path);
        // Forget first: a reader that decodes the old bytes after this point finds the new
        // ones, and nothing decoded from the old bytes is kept under this path.
        self.inner.decoded.forget(path);
        lock(&self.inner.files).insert(path.to_string(), Arc::new(bytes.to_vec()));
        self.inner.decoded.forget(path);
        Ok(())
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

    #[test]
    fn memory_storage_answers_as_a_directory_does() {
        let s = MemoryStorage::new();
        assert_eq!(s.list("_versions"), Err(StorageError::NotFound));
        s.create_dir("_versions").unwrap();
        assert_eq!(s.list("_versions").unwrap(), Vec::<String>::new());
        s.write("_versions/b", b"0123456789").unwrap();
        s.write("_versions/a", b"").unwrap();
        s.write("_versions/sub/c", b"x").unwrap();
        s.write("data/f.lance", b"yy").unwrap();
        assert_eq!(s.list("_versions").unwrap(), vec!["a", "b"]);
        assert_eq!(s.list("_versions/sub").unwrap(), vec!["c"]);
        assert_eq!(s.list("data").unwrap(), vec!["f.lance"]);
        assert_eq!(s.size("_versions/b").unwrap(), 10);
        assert_eq!(s.size("_versions/c"), Err(StorageError::NotFound));
        assert_eq!(s.read_range("_versions/b", 2..5).unwrap(), b"234");
        assert!(matches!(
            s.read_range("_versions/b", 8..12),
            Err(StorageError::Other(_))
        ));
        s.write("_versions/b", b"new").unwrap();
        assert_eq!(s.read_range("_versions/b", 0..3).unwrap(), b"new");
        // A clone is the same store.
        let t = s.clone();
        t.write("data/g.lance", b"z").unwrap();
        assert_eq!(s.list("data").unwrap(), vec!["f.lance", "g.lance"]);
        assert!(s.decoded().is_some());
        assert!(LocalStorage::new(Path::new(".")).decoded().is_none());
    }
}
