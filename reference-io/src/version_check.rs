//! Checking a version fragment by fragment, in bounded memory: what [`Dataset::read_version`]
//! checks, without holding the version's columns.
//!
//! Invariant: [`VersionCheck::check`] accepts exactly the versions [`Dataset::read_version`]
//! (or, without indices, [`Dataset::read_data_level`]) accepts and refuses the others with the
//! same first error, but holds at most one fragment's decoded columns per worker at a time:
//! each fragment's files are read, the fragment is checked ([`Fragment::validate`]) and its
//! columns dropped before the worker takes the next. What it returns is the version's manifest
//! level (every `columns` list empty, deletions read, inline lineage values dropped), which is
//! what a commit is classified by; a fragment's columns and lineage are read again on demand
//! ([`VersionCheck::fragment`]). Neither is ever held for the whole version: the manifest is
//! decoded dropping each fragment's inline lineage values once its own checks passed, and each
//! worker decodes its fragment's lineage again from the manifest for the fragment's check.
//!
//! The order of the checks is the reader's: the manifest, then each fragment's files in
//! manifest order (the first fragment that fails is the error; fragments after it are not
//! started), then [`check_readable_with`] given each fragment's recorded outcome, then each
//! index. An index is checked against the version it claims (`dataset_version`): that version
//! must pass this same check (its verdict is kept, so each version is checked at most once per
//! [`VersionCheck`]), and the index's stored entries are compared with a read of that version
//! holding only the columns the index's key needs (its key field and the fields below it, and
//! the hidden lineage columns). A BTree is checked by parts (`index_check.rs`): its
//! files a page at a time, its entries held compactly (a few bytes each, never a `Value`),
//! the table one fragment at a time on each worker; any other index holds the key column of
//! the covered fragments and its entries, besides the bound above. A BTree index that passed
//! is not checked again at a later version listing it unchanged when nothing its verdict rested
//! on differs there (`index_check::Passed::holds_at` states when); every other verdict, a
//! refusal included, is made again at each version.
//!
//! [`Fragment::validate`]: lance_reference::model::Fragment::validate

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use lance_reference::model::{FieldId, Fragment, Index, Schema, Snapshot};
use lance_reference::readable::check_readable_with;

use super::codec::{decode_fragment_at, schema_from_proto};
use super::error::DatasetError;
use super::in_order::{in_order, lock};
use super::index_check::{Passed, check_btree, keep_only, key_fields};
use super::index_file::index_dir;
use super::layout::{IndexLayout, Layout};
use super::manifest_file::{ManifestFile, decode_manifest_file};
use super::read::{Dataset, check_indices_in_order, checked_entries, read_index_files};

/// Checks versions of one dataset fragment by fragment (see the module docs).
#[derive(Debug)]
pub struct VersionCheck<'d> {
    dataset: &'d Dataset,
    workers: usize,
    /// The outcome of the full check (indices included) of every version checked so far.
    verdicts: Mutex<BTreeMap<u64, Result<(), DatasetError>>>,
    /// Every BTree index (its manifest entry and layout) whose check passed by parts, with
    /// what that verdict rested on ([`Passed::holds_at`]).
    passed: Mutex<Vec<(Index, IndexLayout, Passed)>>,
    /// How many index checks a kept verdict answered.
    reused: AtomicUsize,
    /// How many fragments' columns are held right now, and the most ever held at once.
    held: AtomicUsize,
    most_held: AtomicUsize,
}

/// One fragment's columns held while they are in use: counted in
/// [`VersionCheck::most_held`].
#[derive(Debug)]
pub struct Held<'a> {
    held: &'a AtomicUsize,
}

impl<'a> Held<'a> {
    fn take(held: &'a AtomicUsize, most: &AtomicUsize) -> Held<'a> {
        let now = held.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(now, Ordering::SeqCst);
        Held { held }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.held.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What one worker found in one fragment: its deletions and the outcome of its own check, or
/// the read error.
type FragmentOutcome = Result<(roaring::RoaringBitmap, lance_reference::Result<()>), DatasetError>;

impl<'d> VersionCheck<'d> {
    /// A check of `dataset` on the available cores.
    pub fn new(dataset: &'d Dataset) -> VersionCheck<'d> {
        let workers = super::read::cores();
        VersionCheck::with_workers(dataset, workers)
    }

    /// A check of `dataset` with `workers` threads (at least one).
    pub fn with_workers(dataset: &'d Dataset, workers: usize) -> VersionCheck<'d> {
        VersionCheck {
            dataset,
            workers: workers.max(1),
            verdicts: Mutex::new(BTreeMap::new()),
            passed: Mutex::new(Vec::new()),
            reused: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            most_held: AtomicUsize::new(0),
        }
    }

    /// The dataset checked.
    pub fn dataset(&self) -> &'d Dataset {
        self.dataset
    }

    /// The number of worker threads.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The most fragments whose columns were held at once so far (at most [`Self::workers`]
    /// while a version is checked; a caller reading fragments with [`Self::fragment`] adds
    /// those it holds).
    pub fn most_held(&self) -> usize {
        self.most_held.load(Ordering::SeqCst)
    }

    /// How many index checks were answered by the verdict of the same index at another
    /// version (`index_check::Passed::holds_at`) instead of being made again.
    pub fn reused_index_verdicts(&self) -> usize {
        self.reused.load(Ordering::SeqCst)
    }

    /// Checks `version` as [`Dataset::read_version`] (`indices`) or [`Dataset::read_data_level`]
    /// (not `indices`) reads it, and returns its manifest level: the snapshot without columns
    /// (deletions read, no index entries) and its layout.
    pub fn check(&self, version: u64, indices: bool) -> Result<(Snapshot, Layout), DatasetError> {
        let checked = self.check_uncached(version, indices);
        if indices {
            let verdict = checked.as_ref().map(|_| ()).map_err(Clone::clone);
            lock(&self.verdicts).insert(version, verdict);
        }
        checked
    }

    /// Fragment `i` of `version` decoded again from its manifest, with its deletions and,
    /// when `columns`, its columns, as [`Dataset::read_version`] holds it (a version
    /// [`Self::check`] accepted, so this refuses nothing it accepted). A holder of the
    /// version's manifest level may so drop its fragments' lineage values.
    pub fn fragment(
        &self,
        version: u64,
        i: usize,
        columns: bool,
    ) -> Result<Fragment, DatasetError> {
        let file = self.manifest_file(version);
        let bytes = self.dataset.read_file(&file, "_versions listing")?;
        let manifest = decode_manifest_file(&bytes, &file)?;
        let schema = schema_from_proto(&manifest.manifest.fields, &file)?;
        let max_rows = self.dataset.options().max_fragment_rows;
        let (mut fragment, fl) =
            decode_fragment_at(&manifest, i, &file, max_rows).ok_or_else(|| {
                DatasetError::MissingField {
                    file: file.clone(),
                    field: format!("fragments[{i}]"),
                }
            })??;
        if columns {
            self.dataset
                .read_fragment_files(&schema, &file, i, &mut fragment, &fl)?;
        } else {
            self.dataset.read_deletions(&file, i, &mut fragment, &fl)?;
        }
        Ok(fragment)
    }

    /// The schema of `version`, decoded from its manifest alone.
    fn schema(&self, version: u64) -> Result<Schema, DatasetError> {
        let file = self.manifest_file(version);
        let bytes = self.dataset.read_file(&file, "_versions listing")?;
        let manifest = decode_manifest_file(&bytes, &file)?;
        schema_from_proto(&manifest.manifest.fields, &file)
    }

    /// The manifest file of `version`, as the listing names it.
    fn manifest_file(&self, version: u64) -> String {
        self.dataset
            .entries()
            .iter()
            .find(|e| e.version == version)
            .map(|e| format!("{}/{}", super::version_names::VERSIONS_DIR, e.name))
            .unwrap_or_default()
    }

    /// Marks one fragment's columns as held until the guard is dropped (for
    /// [`Self::most_held`]).
    pub fn hold(&self) -> Held<'_> {
        Held::take(&self.held, &self.most_held)
    }

    /// The outcome of the full check of `version`, checking it if it was not yet.
    fn verdict(&self, version: u64) -> Result<(), DatasetError> {
        if let Some(v) = lock(&self.verdicts).get(&version) {
            return v.clone();
        }
        self.check(version, true).map(|_| ())
    }

    fn check_uncached(
        &self,
        version: u64,
        indices: bool,
    ) -> Result<(Snapshot, Layout), DatasetError> {
        // The manifest level without lineage values: each worker decodes its fragment's
        // lineage again, so a version's lineage is never expanded whole.
        let (mut snapshot, layout, file, manifest) = self.dataset.decoded_with(version, false)?;
        let outcomes = self.fragments(&snapshot, &layout, &file, &manifest);
        let mut verdicts = Vec::with_capacity(outcomes.len());
        for (fragment, outcome) in snapshot.fragments.iter_mut().zip(outcomes) {
            let (deletions, verdict) = outcome?;
            fragment.deletions = deletions;
            verdicts.push(Some(verdict));
        }
        let (schema, v) = (&snapshot.schema, snapshot.version);
        check_readable_with(&snapshot, |i, fragment| match verdicts.get_mut(i) {
            Some(verdict) => verdict.take().unwrap_or(Ok(())),
            None => fragment.validate(schema, v),
        })
        .map_err(|error| DatasetError::Model {
            file: file.clone(),
            error: Box::new(error),
        })?;
        if indices {
            self.check_indices(&snapshot, &layout, &file)?;
        }
        Ok((snapshot, layout))
    }

    /// Reads and checks every fragment the layout describes, on the workers, holding one
    /// fragment's columns per worker; the outcomes in manifest order, up to and including the
    /// first read error (fragments after it are not started).
    fn fragments(
        &self,
        snapshot: &Snapshot,
        layout: &Layout,
        file: &str,
        manifest: &ManifestFile,
    ) -> Vec<FragmentOutcome> {
        let count = snapshot.fragments.len().min(layout.fragments.len());
        let max_rows = self.dataset.options().max_fragment_rows;
        let one = |i: usize| -> FragmentOutcome {
            let _held = self.hold();
            let mut fragment = snapshot.fragments[i].clone();
            // Its lineage, decoded again: the manifest decoded it once already, so this cannot
            // fail where that passed.
            if let Some(decoded) = decode_fragment_at(manifest, i, file, max_rows) {
                fragment.lineage = decoded?.0.lineage;
            }
            self.dataset.read_fragment_files(
                &snapshot.schema,
                file,
                i,
                &mut fragment,
                &layout.fragments[i],
            )?;
            let verdict = fragment.validate(&snapshot.schema, snapshot.version);
            Ok((std::mem::take(&mut fragment.deletions), verdict))
        };
        in_order(self.workers, count, one)
    }

    /// Each index against the version it claims, in the order [`Dataset::read_version`]
    /// checks them ([`check_indices_in_order`]).
    fn check_indices(
        &self,
        snapshot: &Snapshot,
        layout: &Layout,
        file: &str,
    ) -> Result<(), DatasetError> {
        let version = snapshot.version;
        check_indices_in_order(
            snapshot,
            layout,
            file,
            |older| self.verdict(older),
            |index, il, _, field| {
                // A BTree by parts (its files a page at a time, the table a fragment at a time);
                // any other index the whole way, below.
                // The same index passed at another version, and its verdict holds at this one.
                let kept = lock(&self.passed)
                    .iter()
                    .any(|(i, l, p)| i == index && l == il && p.holds_at(index, snapshot));
                if kept {
                    self.reused.fetch_add(1, Ordering::SeqCst);
                    return Ok(Vec::new());
                }
                if let Some(checked) =
                    check_btree(self.dataset(), self.workers, version, index, il, field)
                {
                    let passed = checked?;
                    lock(&self.passed).push((index.clone(), il.clone(), passed));
                    return Ok(Vec::new());
                }
                let dataset_version = index.dataset_version;
                // The index files first (their key type is the claimed version's), then that
                // version's key columns: a file the kit cannot decode costs no data read.
                let (stored, _) = read_index_files(
                    self.dataset.storage(),
                    &index_dir(&il.uuid),
                    il,
                    index,
                    &self.schema(dataset_version)?,
                    self.dataset.options().max_file_bytes,
                    field,
                )?;
                let at_build = self.projected(dataset_version, &index.fields, |_| true)?;
                // The version read is needed only for the fragments covered after the build.
                let now = if dataset_version == version {
                    None
                } else {
                    let later = |f: &Fragment| {
                        index.fragment_bitmap.is_some()
                            && index.covers(f.id)
                            && !at_build.fragments.iter().any(|b| b.id == f.id)
                    };
                    Some(self.projected(version, &index.fields, later)?)
                };
                let now = now.as_ref().unwrap_or(&at_build);
                // Checked, then dropped: the check keeps no entries.
                checked_entries(&at_build, now, index, il, stored.into_pairs())
                    .map(|_| Vec::new())
                    .map_err(|e| e.at(field))
            },
        )
        .map(|_| ())
    }

    /// `version` with the columns of the fragments `wanted` selects, each holding only the
    /// positions an index keyed on `key` needs ([`key_fields`]), and deletions read; a
    /// version whose check passed, so nothing here refuses what the check accepted.
    fn projected(
        &self,
        version: u64,
        key: &[FieldId],
        wanted: impl Fn(&Fragment) -> bool,
    ) -> Result<Snapshot, DatasetError> {
        let (mut snapshot, layout, file) = self.dataset.decoded(version)?;
        let keep = key_fields(&snapshot, key);
        let schema = snapshot.schema.clone();
        for (i, (fragment, fl)) in snapshot
            .fragments
            .iter_mut()
            .zip(&layout.fragments)
            .enumerate()
        {
            if !wanted(fragment) {
                self.dataset.read_deletions(&file, i, fragment, fl)?;
                continue;
            }
            let _held = self.hold();
            self.dataset
                .read_fragment_files(&schema, &file, i, fragment, fl)?;
            keep_only(fragment, &keep);
        }
        Ok(snapshot)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{WriteOptions, write_version};
    use lance_reference::worked_example;

    /// `snapshot` as [`VersionCheck::check`] returns it: no columns, no index entries.
    fn manifest_level(mut snapshot: Snapshot) -> Snapshot {
        for f in &mut snapshot.fragments {
            for df in f
                .files
                .iter_mut()
                .chain(f.overlays.iter_mut().map(|o| &mut o.file))
            {
                df.columns.clear();
            }
        }
        for index in &mut snapshot.indices {
            index.entries.clear();
        }
        snapshot
    }

    #[test]
    fn a_version_is_checked_as_the_reader_reads_it_holding_one_fragment_per_worker() {
        let dir = tempfile::tempdir().unwrap();
        for s in worked_example::versions().unwrap() {
            write_version(dir.path(), &s, &WriteOptions::default()).unwrap();
        }
        let dataset = Dataset::open(dir.path()).unwrap();
        for workers in [1, 2] {
            let check = VersionCheck::with_workers(&dataset, workers);
            for v in dataset.versions() {
                let (read, _) = dataset.read_version(v).unwrap();
                assert!(
                    read.fragments
                        .iter()
                        .any(|f| !f.files[0].columns.is_empty())
                );
                let (checked, _) = check.check(v, true).unwrap();
                // The manifest level holds no inline lineage values (the module docs).
                let mut want = manifest_level(read);
                want.fragments
                    .iter_mut()
                    .for_each(crate::codec::drop_lineage_values);
                assert_eq!(checked, want, "version {v}");
                check.check(v, false).unwrap();
                let (read, _) = dataset.read_version(v).unwrap();
                for (i, f) in read.fragments.iter().enumerate() {
                    assert_eq!(&check.fragment(v, i, true).unwrap(), f, "version {v}");
                    let shell = &manifest_level(read.clone()).fragments[i];
                    assert_eq!(&check.fragment(v, i, false).unwrap(), shell, "version {v}");
                }
            }
            // The structural bound: never more fragments' columns at once than workers.
            assert!(check.most_held() >= 1);
            assert!(check.most_held() <= workers, "{}", check.most_held());
        }
    }

    #[test]
    fn a_damaged_fragment_is_refused_with_the_readers_error() {
        let dir = tempfile::tempdir().unwrap();
        let versions = worked_example::versions().unwrap();
        for s in &versions {
            write_version(dir.path(), s, &WriteOptions::default()).unwrap();
        }
        let dataset = Dataset::open(dir.path()).unwrap();
        // Truncate one data file the last version reads.
        let (_, layout) = dataset.read_version(versions.len() as u64).unwrap();
        let path = dir.path().join(&layout.fragments[0].files[0].path);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let check = VersionCheck::with_workers(&dataset, 2);
        let mut refused = 0;
        for v in dataset.versions() {
            let read = dataset.read_version(v).map(|(s, _)| manifest_level(s));
            let checked = check.check(v, true).map(|(s, _)| s);
            refused += usize::from(read.is_err());
            assert_eq!(checked, read, "version {v}");
        }
        assert!(refused > 0, "the damage refused no version");
    }
}
