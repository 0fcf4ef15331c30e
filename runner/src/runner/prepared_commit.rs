//! Committer cases: the commit of a negative case's last step, handed to a writer as files the
//! kit prepared ([`super::protocol::Command::CommitPrepared`], `spec/conformance.md` §7.4).
//!
//! Invariant: a committer case is derived from the stored case's bytes alone, never from a
//! list kept by hand. A negative case is one when its damaged version `N` and the undamaged
//! twin differ from version `N-1` in the same one way a caller's commit can, and the damage
//! touched nothing else of the manifest: so the damaged commit is one a caller can hand a
//! committer, and its twin is the same commit well formed. The three ways:
//!
//! - overlays added at the end of fragments' overlay lists, nothing else of those fragments
//!   changed but their last-updated-at (a value file, a coverage, a `committed_version`): the
//!   operation is `merge` when an added overlay's `committed_version` is not `N` (only a
//!   caller-built commit states one), `overlay` otherwise;
//! - fragments added after the existing ones, with data files only (no overlay, no deletion
//!   file, no file of system columns), the existing fragments unchanged: `append`;
//! - fragments whose deletion file changed and nothing else: `delete`.
//!
//! The twin is sent with the damaged commit's operation. In a `merge` the overlays the fragment
//! carries are the writer's own, read from its directory, so file names stay the writer's
//! choice. A deletion file is handed over by its `DeletionFile` fields (its path follows from
//! them), and only in a form Lance's API can name (`array` or `bitmap`).
//!
//! A stated merge ([`StatedMerge`]) is the other source of a `merge`: an overlay compaction as a
//! caller states it, the version a case's `prepared` refusal would create (stored under
//! `refused/`) or its twin (the stored dataset's next version). It too is derived from stored
//! bytes alone: an overlay equal to one of the list it replaces is carried (in a writer's run,
//! the writer's own overlay at that position), any other is the kit's, and its file is copied.

use std::path::{Path, PathBuf};

use lance_reference::proto::lance::table as pb;
use lance_reference_io::{Dataset, DatasetError};
use lance_reference_io::deletion::{DeletionFile, DeletionFileType};
use lance_reference_io::manifest_file::{ManifestFile, decode_manifest_file};
use lance_reference_io::paths::data_file_path;
use lance_reference_io::roaring_format::read_bitmap;
use pb::data_overlay_file::Coverage;

use super::protocol::{
    PreparedCoverage, PreparedDeletionFile, PreparedDeletionFileType, PreparedFile,
    PreparedFragment, PreparedOperation, PreparedOverlay, PreparedTransaction,
};
use crate::corpus::{CaseDir, UNDAMAGED_DIR};

/// One side of a committer case: where its files are, and what its commit adds.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// The stored dataset the files come from (`dataset/` or `undamaged/`).
    pub root: PathBuf,
    /// Per fragment, in manifest order, what the commit adds: the overlays (their stored
    /// `committed_version` included), an appended fragment's files and `physical_rows`, or a
    /// fragment's new deletion file.
    pub added: Vec<PreparedFragment>,
}

/// A negative case's last commit, as a prepared commit and its well-formed twin.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitterCase {
    /// The version the commit creates.
    pub version: u64,
    /// `overlay`, `merge`, `append` or `delete` (see the module docs).
    pub operation: PreparedOperation,
    /// The malformed commit.
    pub damaged: Side,
    /// Its twin.
    pub twin: Side,
}

/// Why the kit could not build one side of a prepared commit: a stored case (or directory) it
/// cannot read, or a writer's dataset without what the stored commit builds on.
#[derive(Debug, thiserror::Error)]
pub enum PreparedCommitError {
    /// The dataset at `root` does not open.
    #[error("{}: {error}", root.display())]
    Open {
        /// The dataset root.
        root: PathBuf,
        /// Why.
        error: Box<DatasetError>,
    },
    /// The dataset at `root` has no (attached) version `version`.
    #[error("{}: no version {version}", root.display())]
    NoVersion {
        /// The dataset root.
        root: PathBuf,
        /// The version asked for.
        version: u64,
    },
    /// A file, relative to the dataset root, could not be read, copied or given a directory.
    #[error("{path}: {error}")]
    File {
        /// The file, relative to the dataset root.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// A manifest does not decode, or a data file's path is not one under the dataset root.
    #[error("{0}")]
    Stored(Box<DatasetError>),
    /// Reading the writer's own version `version` failed.
    #[error("the writer's v{version}: {error}")]
    WritersVersion {
        /// The writer's version the commit builds on.
        version: u64,
        /// Why.
        error: Box<PreparedCommitError>,
    },
    /// The writer's version `version` lacks a fragment the commit changes.
    #[error("the writer's v{version} has no fragment {fragment}")]
    NoFragment {
        /// The writer's version.
        version: u64,
        /// The fragment id.
        fragment: u64,
    },
    /// An overlay the writer's version `version` carries in `fragment` has no value file or
    /// bitmap coverage, so a `merge` cannot carry it.
    #[error(
        "the writer's v{version} fragment {fragment}: an overlay without a value file or bitmap coverage"
    )]
    WritersOverlay {
        /// The writer's version.
        version: u64,
        /// The fragment id.
        fragment: u64,
    },
    /// The writer's version `version` has no overlay at `position` of `fragment`'s list that a
    /// stated merge carries.
    #[error(
        "the writer's v{version} fragment {fragment} has no overlay {position} with a value file and bitmap coverage (the stored case has one)"
    )]
    NoCarriedOverlay {
        /// The writer's version.
        version: u64,
        /// The fragment id.
        fragment: u64,
        /// The position in the fragment's overlay list.
        position: usize,
    },
    /// A new overlay of a stated merge has no value file or bitmap coverage a caller could
    /// state.
    #[error(
        "{} v{version} fragment {fragment} overlay {position}: no value file or bitmap coverage a caller could state",
        root.display()
    )]
    UnstatableOverlay {
        /// The stored directory holding the merge.
        root: PathBuf,
        /// The version the merge creates.
        version: u64,
        /// The fragment id.
        fragment: u64,
        /// The position in the fragment's new overlay list.
        position: usize,
    },
    /// A stated merge changes no fragment's overlay list.
    #[error("{} v{version} changes no overlay list of v{}", root.display(), version - 1)]
    NoMerge {
        /// The stored directory holding the merge.
        root: PathBuf,
        /// The version the merge creates.
        version: u64,
    },
}

impl From<DatasetError> for PreparedCommitError {
    fn from(e: DatasetError) -> PreparedCommitError {
        PreparedCommitError::Stored(Box::new(e))
    }
}

impl PreparedCommitError {
    /// The error of reading `path` (relative to the dataset root).
    fn file(path: &str) -> impl FnOnce(std::io::Error) -> PreparedCommitError + '_ {
        move |error| PreparedCommitError::File {
            path: path.to_string(),
            error,
        }
    }

    /// The same error, met reading the writer's own version `version`.
    pub fn in_writers_version(self, version: u64) -> PreparedCommitError {
        PreparedCommitError::WritersVersion {
            version,
            error: Box::new(self),
        }
    }
}

/// The decoded manifest of `version` in `root`.
pub fn manifest(root: &Path, version: u64) -> Result<ManifestFile, PreparedCommitError> {
    let dataset = Dataset::open(root).map_err(|e| PreparedCommitError::Open {
        root: root.to_path_buf(),
        error: Box::new(e),
    })?;
    let entry = dataset
        .entries()
        .iter()
        .find(|e| e.version == version && !e.detached)
        .ok_or_else(|| PreparedCommitError::NoVersion {
            root: root.to_path_buf(),
            version,
        })?;
    let rel = format!("_versions/{}", entry.name);
    let bytes = std::fs::read(root.join(&rel)).map_err(PreparedCommitError::file(&rel))?;
    Ok(decode_manifest_file(&bytes, &rel)?)
}

fn offsets(bytes: &[u8], field: &str) -> Option<Vec<u32>> {
    read_bitmap(bytes, "manifest", field)
        .ok()
        .map(|b| b.iter().collect())
}

/// The wire form of a stored data file; `None` for one under another base path.
fn prepared_file(file: &pb::DataFile) -> Option<PreparedFile> {
    file.base_id.is_none().then(|| PreparedFile {
        path: file.path.clone(),
        fields: file.fields.clone(),
        column_indices: file.column_indices.clone(),
        file_major_version: file.file_major_version,
        file_minor_version: file.file_minor_version,
        file_size_bytes: file.file_size_bytes,
    })
}

/// The wire form of a stored overlay; `None` for one no caller could hand over (no value file,
/// a file under another base path, a coverage that is not a bitmap).
pub fn prepared_overlay(o: &pb::DataOverlayFile) -> Option<PreparedOverlay> {
    let file = prepared_file(o.data_file.as_ref()?)?;
    let coverage = match o.coverage.as_ref()? {
        Coverage::SharedOffsetBitmap(b) => PreparedCoverage::Dense(offsets(b, "coverage")?),
        Coverage::FieldCoverage(c) => PreparedCoverage::Sparse(
            c.offset_bitmaps
                .iter()
                .map(|b| offsets(b, "field_coverage"))
                .collect::<Option<_>>()?,
        ),
    };
    Some(PreparedOverlay {
        file,
        coverage,
        committed_version: Some(o.committed_version),
    })
}

/// A fragment without its overlays: what an overlay commit must leave as it was (lineage
/// apart, which the committer stamps).
fn without_overlays(f: &pb::DataFragment) -> pb::DataFragment {
    let mut f = f.clone();
    f.overlays.clear();
    f.last_updated_at_version_sequence = None;
    f
}

/// A fragment without its deletion file: what a delete must leave as it was.
fn without_deletion(f: &pb::DataFragment) -> pb::DataFragment {
    let mut f = f.clone();
    f.deletion_file = None;
    f
}

/// The wire form of a stored deletion file; `None` for one no caller could hand over (an
/// unknown `file_type`, a file under another base path).
fn prepared_deletion_file(d: &pb::DeletionFile) -> Option<PreparedDeletionFile> {
    let file_type = match d.file_type {
        0 => PreparedDeletionFileType::Array,
        1 => PreparedDeletionFileType::Bitmap,
        _ => return None,
    };
    d.base_id.is_none().then_some(PreparedDeletionFile {
        file_type,
        read_version: d.read_version,
        id: d.id,
        num_deleted_rows: d.num_deleted_rows,
    })
}

/// A fragment carrying only `id`, for the members of one operation to be filled in.
fn bare(id: u64) -> PreparedFragment {
    PreparedFragment {
        id,
        overlays: Vec::new(),
        files: Vec::new(),
        physical_rows: None,
        deletion_file: None,
    }
}

/// The overlays `cur` adds to `prev`, per fragment; `None` when `cur` changes anything else.
fn added_overlays(prev: &pb::Manifest, cur: &pb::Manifest) -> Option<Vec<PreparedFragment>> {
    if prev.fragments.len() != cur.fragments.len() {
        return None;
    }
    let mut out = Vec::new();
    for (p, c) in prev.fragments.iter().zip(&cur.fragments) {
        if without_overlays(p) != without_overlays(c)
            || c.overlays.len() < p.overlays.len()
            || c.overlays[..p.overlays.len()] != p.overlays[..]
        {
            return None;
        }
        let new = &c.overlays[p.overlays.len()..];
        if !new.is_empty() {
            out.push(PreparedFragment {
                overlays: new.iter().map(prepared_overlay).collect::<Option<_>>()?,
                ..bare(c.id)
            });
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The fragments `cur` appends to `prev`; `None` when `cur` changes anything else, or an
/// appended fragment holds what a caller does not hand over (overlays, a deletion file, a file
/// of system columns: an append's lineage is the committer's).
fn appended(prev: &pb::Manifest, cur: &pb::Manifest) -> Option<Vec<PreparedFragment>> {
    let kept = prev.fragments.len();
    if cur.fragments.len() <= kept || cur.fragments[..kept] != prev.fragments[..] {
        return None;
    }
    cur.fragments[kept..]
        .iter()
        .map(|f| {
            let plain = f.overlays.is_empty()
                && f.deletion_file.is_none()
                && f.files.iter().all(|d| d.fields.iter().all(|&id| id >= 0));
            plain.then_some(())?;
            Some(PreparedFragment {
                files: f.files.iter().map(prepared_file).collect::<Option<_>>()?,
                physical_rows: Some(f.physical_rows),
                ..bare(f.id)
            })
        })
        .collect()
}

/// The fragments whose deletion file `cur` changes; `None` when it changes anything else or
/// removes one.
fn deleted(prev: &pb::Manifest, cur: &pb::Manifest) -> Option<Vec<PreparedFragment>> {
    if prev.fragments.len() != cur.fragments.len() {
        return None;
    }
    let mut out = Vec::new();
    for (p, c) in prev.fragments.iter().zip(&cur.fragments) {
        if without_deletion(p) != without_deletion(c) {
            return None;
        }
        if p.deletion_file != c.deletion_file {
            out.push(PreparedFragment {
                deletion_file: Some(prepared_deletion_file(c.deletion_file.as_ref()?)?),
                ..bare(c.id)
            });
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The one way `cur` changes `prev` that a caller's commit can, and what it adds (module docs).
fn commit_of(
    prev: &pb::Manifest,
    cur: &pb::Manifest,
) -> Option<(PreparedOperation, Vec<PreparedFragment>)> {
    if prev.fields != cur.fields {
        return None;
    }
    if let Some(list) = added_overlays(prev, cur) {
        return Some((PreparedOperation::Overlay, list));
    }
    if let Some(list) = appended(prev, cur) {
        return Some((PreparedOperation::Append, list));
    }
    deleted(prev, cur).map(|list| (PreparedOperation::Delete, list))
}

/// The committer case of `case` at its damaged version `version`, if it is one (module docs).
/// An error is a stored case the kit cannot read.
pub fn committer_case(case: &CaseDir, version: u64) -> Result<Option<CommitterCase>, PreparedCommitError> {
    let twin_root = case.dir.join(UNDAMAGED_DIR);
    let damaged_root = case.dir.join("dataset");
    if case.case.expect_error.is_none() || !twin_root.is_dir() || version < 2 {
        return Ok(None);
    }
    let prev = manifest(&twin_root, version - 1)?;
    let twin = manifest(&twin_root, version)?;
    // A damage that leaves the manifest undecodable is not a commit a caller hands over.
    let Ok(damaged) = manifest(&damaged_root, version) else {
        return Ok(None);
    };
    let same_elsewhere = damaged.index_section == twin.index_section
        && damaged.manifest.reader_feature_flags == twin.manifest.reader_feature_flags
        && damaged.manifest.writer_feature_flags == twin.manifest.writer_feature_flags
        && damaged.manifest.config == twin.manifest.config;
    let (Some((twin_op, twin_added)), Some((damaged_op, damaged_added))) = (
        commit_of(&prev.manifest, &twin.manifest),
        commit_of(&prev.manifest, &damaged.manifest),
    ) else {
        return Ok(None);
    };
    if !same_elsewhere || twin_op != damaged_op {
        return Ok(None);
    }
    let damaged = Side {
        root: damaged_root,
        added: damaged_added,
    };
    let twin = Side {
        root: twin_root,
        added: twin_added,
    };
    // The committer assigns an appended fragment's id: a damage of the id alone hands it
    // nothing malformed.
    if twin_op == PreparedOperation::Append && same_handed(&damaged, &twin) {
        return Ok(None);
    }
    let (damaged_added, twin_added) = (&damaged.added, &twin.added);
    let stamped = |list: &[PreparedFragment]| {
        list.iter()
            .flat_map(|f| &f.overlays)
            .all(|o| o.committed_version == Some(version))
    };
    if !stamped(twin_added) {
        return Ok(None);
    }
    let operation = if twin_op == PreparedOperation::Overlay && !stamped(damaged_added) {
        PreparedOperation::Merge
    } else {
        twin_op
    };
    Ok(Some(CommitterCase {
        version,
        operation,
        damaged,
        twin,
    }))
}

/// Whether two sides hand a committer the same thing: the same transaction once fragment ids
/// are set aside, and byte-identical files.
fn same_handed(a: &Side, b: &Side) -> bool {
    let without_ids = |s: &Side| -> Vec<PreparedFragment> {
        s.added
            .iter()
            .map(|f| PreparedFragment { id: 0, ..f.clone() })
            .collect()
    };
    let files = CommitterCase::files(a);
    without_ids(a) == without_ids(b)
        && files == CommitterCase::files(b)
        && files.iter().all(|rel| {
            match (
                std::fs::read(a.root.join(rel)),
                std::fs::read(b.root.join(rel)),
            ) {
                (Ok(x), Ok(y)) => x == y,
                _ => false,
            }
        })
}

impl CommitterCase {
    /// The transaction of `side`; `writer_prev` is the writer's own version `N-1`, whose
    /// overlays a `merge` carries.
    pub fn transaction(
        &self,
        side: &Side,
        writer_prev: &pb::Manifest,
    ) -> Result<PreparedTransaction, PreparedCommitError> {
        let mut fragments = Vec::new();
        for added in &side.added {
            let id = added.id;
            let fragment = match self.operation {
                PreparedOperation::Overlay => PreparedFragment {
                    overlays: added
                        .overlays
                        .iter()
                        .map(|o| PreparedOverlay {
                            committed_version: None,
                            ..o.clone()
                        })
                        .collect(),
                    ..added.clone()
                },
                PreparedOperation::Merge => {
                    let fragment = writer_prev
                        .fragments
                        .iter()
                        .find(|f| f.id == id)
                        .ok_or(PreparedCommitError::NoFragment {
                            version: self.version - 1,
                            fragment: id,
                        })?;
                    let mut list = fragment
                        .overlays
                        .iter()
                        .map(|o| {
                            prepared_overlay(o).ok_or(PreparedCommitError::WritersOverlay {
                                version: self.version - 1,
                                fragment: id,
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    list.extend(added.overlays.iter().cloned());
                    PreparedFragment {
                        overlays: list,
                        ..added.clone()
                    }
                }
                PreparedOperation::Append | PreparedOperation::Delete => added.clone(),
            };
            fragments.push(fragment);
        }
        Ok(PreparedTransaction {
            operation: self.operation,
            fragments,
        })
    }

    /// The files `side` adds, relative to the dataset root: value files, appended data files,
    /// deletion files.
    pub fn files(side: &Side) -> Vec<String> {
        let mut out = Vec::new();
        for f in &side.added {
            let data = f.overlays.iter().map(|o| &o.file).chain(&f.files);
            // A path that leaves the dataset (the damage of a path case) is not placed: the
            // kit never writes outside the writer's directory.
            out.extend(
                data.filter_map(|d| data_file_path(&d.path, "manifest", "data_file.path").ok()),
            );
            if let Some(d) = &f.deletion_file {
                let stored = DeletionFile {
                    file_type: match d.file_type {
                        PreparedDeletionFileType::Array => DeletionFileType::ArrowArray,
                        PreparedDeletionFileType::Bitmap => DeletionFileType::Bitmap,
                    }
                    .proto_value(),
                    read_version: d.read_version,
                    id: d.id,
                    num_deleted_rows: d.num_deleted_rows,
                    base_id: None,
                };
                out.extend(stored.relative_path(f.id).ok());
            }
        }
        out
    }

    /// Copies the files `side` adds ([`CommitterCase::files`]) into `dir` (the writer's
    /// dataset), replacing any file of the same name; a file the stored side lacks (the damage
    /// removed it) is not copied, and the committer is handed its name alone.
    pub fn place_files(side: &Side, dir: &Path) -> Result<(), PreparedCommitError> {
        for rel in CommitterCase::files(side) {
            let from = side.root.join(&rel);
            if !from.is_file() {
                continue;
            }
            let to = dir.join(&rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(PreparedCommitError::file(&rel))?;
            }
            std::fs::copy(&from, &to).map_err(PreparedCommitError::file(&rel))?;
        }
        Ok(())
    }
}

/// One overlay of a stated merge's list.
#[derive(Debug, Clone, PartialEq)]
pub enum StatedOverlay {
    /// Carried from this position of the fragment's list in the version the merge reads: in a
    /// writer's run, the writer's own overlay there.
    Carried(usize),
    /// An overlay the merge makes, its value file the kit's.
    New(PreparedOverlay),
}

/// A compaction stated by a caller (`expect_refusal` with `prepared`, and its twin): per
/// fragment whose overlay list it changes, the whole new list ([`StatedOverlay`]), handed to a
/// committer as a `merge` (spec/conformance.md §7.4).
#[derive(Debug, Clone, PartialEq)]
pub struct StatedMerge {
    /// The version the merge creates.
    pub version: u64,
    /// Where the new overlays' files are (the case's `refused/`, or its `dataset/`).
    pub root: PathBuf,
    /// Per fragment id, in manifest order, the stated list.
    pub lists: Vec<(u64, Vec<StatedOverlay>)>,
}

impl StatedMerge {
    /// The merge that version `version` of `after` (a stored directory holding that version's
    /// manifest) states on version `version - 1` of the stored dataset `before`: every fragment
    /// whose overlay list differs, each overlay equal to one of the earlier list carried from
    /// the first such position not yet taken, the others new.
    pub fn between(before: &Path, after: &Path, version: u64) -> Result<StatedMerge, PreparedCommitError> {
        let prev = manifest(before, version - 1)?.manifest;
        let next = manifest(after, version)?.manifest;
        let mut lists = Vec::new();
        for f in &next.fragments {
            let old = prev
                .fragments
                .iter()
                .find(|p| p.id == f.id)
                .map_or(&[][..], |p| &p.overlays[..]);
            if old == &f.overlays[..] {
                continue;
            }
            let mut taken = vec![false; old.len()];
            let mut list = Vec::new();
            for (k, o) in f.overlays.iter().enumerate() {
                match (0..old.len()).find(|&p| !taken[p] && old[p] == *o) {
                    Some(p) => {
                        taken[p] = true;
                        list.push(StatedOverlay::Carried(p));
                    }
                    None => list.push(StatedOverlay::New(prepared_overlay(o).ok_or_else(
                        || PreparedCommitError::UnstatableOverlay {
                            root: after.to_path_buf(),
                            version,
                            fragment: f.id,
                            position: k,
                        },
                    )?)),
                }
            }
            lists.push((f.id, list));
        }
        if lists.is_empty() {
            return Err(PreparedCommitError::NoMerge {
                root: after.to_path_buf(),
                version,
            });
        }
        Ok(StatedMerge {
            version,
            root: after.to_path_buf(),
            lists,
        })
    }

    /// The `merge` transaction on `writer_prev`, the writer's own version `version - 1`: each
    /// carried overlay is the writer's at that position.
    pub fn transaction(&self, writer_prev: &pb::Manifest) -> Result<PreparedTransaction, PreparedCommitError> {
        let at = self.version - 1;
        let mut fragments = Vec::new();
        for (id, list) in &self.lists {
            let fragment = writer_prev
                .fragments
                .iter()
                .find(|f| f.id == *id)
                .ok_or(PreparedCommitError::NoFragment {
                    version: at,
                    fragment: *id,
                })?;
            let overlays = list
                .iter()
                .map(|o| match o {
                    StatedOverlay::New(o) => Ok(o.clone()),
                    StatedOverlay::Carried(p) => fragment
                        .overlays
                        .get(*p)
                        .and_then(prepared_overlay)
                        .ok_or(PreparedCommitError::NoCarriedOverlay {
                            version: at,
                            fragment: *id,
                            position: *p,
                        }),
                })
                .collect::<Result<Vec<_>, _>>()?;
            fragments.push(PreparedFragment {
                overlays,
                ..bare(*id)
            });
        }
        Ok(PreparedTransaction {
            operation: PreparedOperation::Merge,
            fragments,
        })
    }

    /// Copies the value files of the new overlays into `dir` (the writer's dataset) and returns
    /// their `DataFile.path`s.
    pub fn place_files(&self, dir: &Path) -> Result<Vec<String>, PreparedCommitError> {
        let mut placed = Vec::new();
        for (_, list) in &self.lists {
            for o in list {
                let StatedOverlay::New(o) = o else { continue };
                let rel = data_file_path(&o.file.path, "manifest", "data_file.path")?;
                let to = dir.join(&rel);
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent).map_err(PreparedCommitError::file(&rel))?;
                }
                std::fs::copy(self.root.join(&rel), &to).map_err(PreparedCommitError::file(&rel))?;
                placed.push(o.file.path.clone());
            }
        }
        Ok(placed)
    }
}
