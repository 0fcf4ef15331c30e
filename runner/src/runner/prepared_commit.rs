//! Committer cases: the commit of a negative case's last step, handed to a writer as files the
//! kit prepared ([`super::protocol::Command::CommitPrepared`], `spec/conformance.md` §7.4).
//!
//! Invariant: a committer case is derived from the stored case's bytes alone, never from a
//! list kept by hand. A negative case is one when its damaged version `N` and the undamaged
//! twin differ from version `N-1` only by overlays added at the end of fragments' overlay lists
//! (the commit of an `overlay` step), and the damage touched nothing else of the manifest: so
//! the damaged commit is one a caller can hand a committer (a value file, a coverage, a
//! `committed_version`), and its twin is the same commit well formed. The operation follows
//! from the damaged commit: `merge` when an added overlay's `committed_version` is not `N` (only
//! a caller-built commit states one), `overlay` otherwise; the twin is sent with the same
//! operation. In a `merge` the overlays the fragment carries are the writer's own, read from its
//! directory, so file names stay the writer's choice.

use std::path::{Path, PathBuf};

use lance_reference::proto::lance::table as pb;
use lance_reference_io::Dataset;
use lance_reference_io::manifest_file::{ManifestFile, decode_manifest_file};
use lance_reference_io::paths::data_file_path;
use lance_reference_io::roaring_format::read_bitmap;
use pb::data_overlay_file::Coverage;

use super::protocol::{
    PreparedCoverage, PreparedFile, PreparedFragment, PreparedOperation, PreparedOverlay,
    PreparedTransaction,
};
use crate::corpus::{CaseDir, UNDAMAGED_DIR};

/// One side of a committer case: where its files are, and the overlays its commit adds.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// The stored dataset the files come from (`dataset/` or `undamaged/`).
    pub root: PathBuf,
    /// Per fragment id, in manifest order, the overlays the commit adds (their stored
    /// `committed_version` included).
    pub added: Vec<(u64, Vec<PreparedOverlay>)>,
}

/// A negative case's last commit, as a prepared commit and its well-formed twin.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitterCase {
    /// The version the commit creates.
    pub version: u64,
    /// `overlay` or `merge` (see the module docs).
    pub operation: PreparedOperation,
    /// The malformed commit.
    pub damaged: Side,
    /// Its twin.
    pub twin: Side,
}

/// The decoded manifest of `version` in `root`.
pub fn manifest(root: &Path, version: u64) -> Result<ManifestFile, String> {
    let dataset = Dataset::open(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let entry = dataset
        .entries()
        .iter()
        .find(|e| e.version == version && !e.detached)
        .ok_or_else(|| format!("{}: no version {version}", root.display()))?;
    let rel = format!("_versions/{}", entry.name);
    let bytes = std::fs::read(root.join(&rel)).map_err(|e| format!("{rel}: {e}"))?;
    decode_manifest_file(&bytes, &rel).map_err(|e| e.to_string())
}

fn offsets(bytes: &[u8], field: &str) -> Option<Vec<u32>> {
    read_bitmap(bytes, "manifest", field)
        .ok()
        .map(|b| b.iter().collect())
}

/// The wire form of a stored overlay; `None` for one no caller could hand over (no value file,
/// a file under another base path, a coverage that is not a bitmap).
pub fn prepared_overlay(o: &pb::DataOverlayFile) -> Option<PreparedOverlay> {
    let file = o.data_file.as_ref().filter(|f| f.base_id.is_none())?;
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
        file: PreparedFile {
            path: file.path.clone(),
            fields: file.fields.clone(),
            column_indices: file.column_indices.clone(),
            file_major_version: file.file_major_version,
            file_minor_version: file.file_minor_version,
            file_size_bytes: file.file_size_bytes,
        },
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

/// The overlays `cur` adds to `prev`, per fragment; `None` when `cur` changes anything else.
fn added(prev: &pb::Manifest, cur: &pb::Manifest) -> Option<Vec<(u64, Vec<PreparedOverlay>)>> {
    if prev.fragments.len() != cur.fragments.len() || prev.fields != cur.fields {
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
            let list = new
                .iter()
                .map(prepared_overlay)
                .collect::<Option<Vec<_>>>()?;
            out.push((c.id, list));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The committer case of `case` at its damaged version `version`, if it is one (module docs).
/// An error is a stored case the kit cannot read.
pub fn committer_case(case: &CaseDir, version: u64) -> Result<Option<CommitterCase>, String> {
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
    let (Some(twin_added), Some(damaged_added)) = (
        added(&prev.manifest, &twin.manifest),
        added(&prev.manifest, &damaged.manifest),
    ) else {
        return Ok(None);
    };
    if !same_elsewhere {
        return Ok(None);
    }
    let stamped = |list: &[(u64, Vec<PreparedOverlay>)]| {
        list.iter()
            .flat_map(|(_, l)| l)
            .all(|o| o.committed_version == Some(version))
    };
    if !stamped(&twin_added) {
        return Ok(None);
    }
    let operation = if stamped(&damaged_added) {
        PreparedOperation::Overlay
    } else {
        PreparedOperation::Merge
    };
    Ok(Some(CommitterCase {
        version,
        operation,
        damaged: Side {
            root: damaged_root,
            added: damaged_added,
        },
        twin: Side {
            root: twin_root,
            added: twin_added,
        },
    }))
}

impl CommitterCase {
    /// The transaction of `side`; `writer_prev` is the writer's own version `N-1`, whose
    /// overlays a `merge` carries.
    pub fn transaction(
        &self,
        side: &Side,
        writer_prev: &pb::Manifest,
    ) -> Result<PreparedTransaction, String> {
        let mut fragments = Vec::new();
        for (id, added) in &side.added {
            let overlays = match self.operation {
                PreparedOperation::Overlay => added
                    .iter()
                    .map(|o| PreparedOverlay {
                        committed_version: None,
                        ..o.clone()
                    })
                    .collect(),
                PreparedOperation::Merge => {
                    let fragment = writer_prev
                        .fragments
                        .iter()
                        .find(|f| f.id == *id)
                        .ok_or_else(|| {
                            format!("the writer's v{} has no fragment {id}", self.version - 1)
                        })?;
                    let mut list = fragment
                        .overlays
                        .iter()
                        .map(|o| {
                            prepared_overlay(o).ok_or_else(|| {
                                format!(
                                    "the writer's v{} fragment {id}: an overlay without a value file or bitmap coverage",
                                    self.version - 1
                                )
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    list.extend(added.iter().cloned());
                    list
                }
            };
            fragments.push(PreparedFragment { id: *id, overlays });
        }
        Ok(PreparedTransaction {
            operation: self.operation,
            fragments,
        })
    }

    /// Copies the value files `side` adds into `dir` (the writer's dataset), replacing any file
    /// of the same name; a file the stored side lacks (the damage removed it) is not copied,
    /// and neither is one whose path leaves the dataset (the damage of a path case: the kit
    /// never writes outside the writer's directory, and the committer is handed the path alone).
    pub fn place_files(side: &Side, dir: &Path) -> Result<(), String> {
        for o in side.added.iter().flat_map(|(_, l)| l) {
            let Ok(rel) = data_file_path(&o.file.path, "manifest", "data_file.path") else {
                continue;
            };
            let from = side.root.join(&rel);
            if !from.is_file() {
                continue;
            }
            let to = dir.join(&rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("{rel}: {e}"))?;
            }
            std::fs::copy(&from, &to).map_err(|e| format!("{rel}: {e}"))?;
        }
        Ok(())
    }
}
