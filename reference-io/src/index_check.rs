//! A BTree index checked against the table by parts: its files read a page at a time through
//! the dataset's [`Storage`], its entries held compactly, the table read fragment by fragment.
//!
//! Invariant: [`check_btree`] accepts exactly the BTree indices that
//! [`read_index_files`](crate::read::read_index_files) followed by `checked_entries` accept (the
//! check [`Dataset::read_version`](crate::read::Dataset::read_version) makes), and refuses the
//! others with the same first error, except that no whole column of an index file meets the
//! data-file reader's value limit (it bounds each page) and a ranged read that fails is
//! [`IndexFileError::Io`]. What it holds: the stored ids (8 bytes an entry) until every id is
//! placed, the stored keys as the Arrow pages they were decoded in, the place of each stored
//! entry (8 bytes an entry, grouped by fragment), the row ids of the versions it compares as runs
//! of consecutive ids, and one fragment of the table at a time on each worker (its key column
//! and lineage, and the index entries rebuilt from it, a window at a time). Never a [`Value`]
//! per entry of the whole index.
//!
//! The order of the checks is `checked_entries`' (in `crate::read`): where an entry's id names
//! no row, in storage order; a remapped fragment with no entry; then the rebuilt entries of the
//! claimed version, fragment by fragment in manifest order, each against the stored entry of its
//! row; then the remapped fragments' entries; then any stored entry no row claimed. A rule
//! whose refusal the old order reports before a mismatch (a rebuilt entry that cannot be
//! computed) is still reported first: the fragments after a mismatch are rebuilt too. The
//! fragments are rebuilt and matched on several workers, each fragment's match on its own, and
//! their outcomes taken in manifest order ([`in_order`]): the first error, the first mismatch
//! and the least leftover entry are the same on any number of workers.

use std::collections::BTreeMap;

use lance_reference::columnar::resolve_array;
use lance_reference::exclusion::exclusion_set;
use lance_reference::index_build::entry;
use lance_reference::model::{
    CREATED_AT_FIELD_ID, Column, FieldId, Fragment, Index, IndexEntry, LAST_UPDATED_AT_FIELD_ID,
    LineageSequence, ROW_ID_FIELD_ID, Snapshot, Value, value_at,
};

use crate::codec::decode_fragment_at;
use crate::error::DatasetError;
use crate::in_order::in_order;
use crate::index_file::{
    IndexFileError, IndexFileParts, StoredKeys, index_dir, read_btree_by_parts,
};
use crate::layout::{IndexLayout, Layout};
use crate::manifest_file::ManifestFile;
use crate::read::{
    Checked, Dataset, bounded_size, entry_row, in_dir, index_key_type, index_names, stale_entry,
    stored_text, stores_addresses, unclaimed_entry, unplaced,
};
use crate::storage::{Storage, StorageError};

/// An index's files in the dataset's storage, read by parts; their sizes taken (and checked
/// against the manifest's `files` list) before any byte is read.
struct StorageParts<'s> {
    storage: &'s dyn Storage,
    dir: String,
    sizes: BTreeMap<String, u64>,
}

impl IndexFileParts for StorageParts<'_> {
    fn size(&self, name: &str) -> Option<u64> {
        self.sizes.get(name).copied()
    }

    fn read(&self, name: &str, range: std::ops::Range<u64>) -> Result<Vec<u8>, IndexFileError> {
        let path = format!("{}/{name}", self.dir);
        let (start, end) = (range.start, range.end);
        self.storage
            .read_range(&path, range)
            .map_err(|e| IndexFileError::Io {
                file: path,
                start,
                end,
                problem: match e {
                    StorageError::NotFound => "the file is gone".into(),
                    StorageError::Other(problem) => problem,
                },
            })
    }
}

/// The stored entries of a BTree index (`index`, laid out as `il`, keyed on a field of
/// `schema`), read by parts: every file the index's read opens is sized first (missing, over
/// `limit`, or not the size `il.files` lists: the errors of a whole read), then the two BTree
/// files are read a page at a time ([`read_btree_by_parts`]).
fn stored_keys(
    storage: &dyn Storage,
    il: &IndexLayout,
    index: &Index,
    schema: &lance_reference::model::Schema,
    limit: u64,
    field: &str,
) -> Result<StoredKeys, DatasetError> {
    let dir = index_dir(&il.uuid);
    let index_error = |error| DatasetError::IndexFile {
        field: field.to_string(),
        error: Box::new(error),
    };
    let mut sizes = BTreeMap::new();
    for name in index_names(index, il) {
        let rel = format!("{dir}/{name}");
        let size = bounded_size(storage, &rel, limit, &format!("{field}.files"))?;
        if let Some((_, listed)) = il.files.iter().find(|(n, _)| *n == name) {
            if *listed != size {
                return Err(index_error(IndexFileError::SizeMismatch {
                    file: rel,
                    listed: *listed,
                    actual: size,
                }));
            }
        }
        sizes.insert(name, size);
    }
    let key_type = index_key_type(index, schema, &dir).map_err(index_error)?;
    let parts = StorageParts {
        storage,
        dir: dir.clone(),
        sizes,
    };
    read_btree_by_parts(&parts, &key_type).map_err(|e| index_error(in_dir(&dir, e)))
}

/// One version of the table as the index check reads it: its manifest level (deletions read,
/// no columns, no lineage values) and its decoded manifest, from which each fragment is
/// decoded again when it is needed.
struct VersionAtHand {
    level: Snapshot,
    /// The fields whose columns the check reads ([`key_fields`]).
    keep: Vec<FieldId>,
    layout: Layout,
    file: String,
    manifest: ManifestFile,
}

impl VersionAtHand {
    fn read(
        dataset: &Dataset,
        version: u64,
        key: &[FieldId],
    ) -> Result<VersionAtHand, DatasetError> {
        let (mut level, layout, file, manifest) = dataset.decoded_with(version, false)?;
        for (i, (fragment, fl)) in level
            .fragments
            .iter_mut()
            .zip(&layout.fragments)
            .enumerate()
        {
            dataset.read_deletions(&file, i, fragment, fl)?;
        }
        Ok(VersionAtHand {
            keep: key_fields(&level, key),
            level,
            layout,
            file,
            manifest,
        })
    }

    /// Fragment `i` as the whole-version check holds it: decoded with its lineage and
    /// deletions; when `columns`, with the columns of the fields the check reads (every other
    /// column empty). Without `columns`, a lineage sequence held in a column is not read.
    fn fragment(
        &self,
        dataset: &Dataset,
        i: usize,
        columns: bool,
    ) -> Result<Fragment, DatasetError> {
        self.fragment_with(dataset, i, columns, true)
    }

    /// Fragment `i` with the columns its index entries are rebuilt from, as [`Self::fragment`]
    /// reads it, but its inline lineage values dropped as soon as it is decoded (no entry
    /// needs them), so that a worker never holds a fragment's lineage and its columns at once.
    fn to_rebuild(&self, dataset: &Dataset, i: usize) -> Result<Fragment, DatasetError> {
        self.fragment_with(dataset, i, true, false)
    }

    fn fragment_with(
        &self,
        dataset: &Dataset,
        i: usize,
        columns: bool,
        lineage: bool,
    ) -> Result<Fragment, DatasetError> {
        let max_rows = dataset.options().max_fragment_rows;
        let missing = || DatasetError::MissingField {
            file: self.file.clone(),
            field: format!("fragments[{i}]"),
        };
        let (mut fragment, fl) =
            decode_fragment_at(&self.manifest, i, &self.file, max_rows).ok_or_else(missing)??;
        if !lineage {
            crate::codec::drop_lineage_values(&mut fragment);
        }
        if !columns {
            fragment.deletions = self
                .level
                .fragments
                .get(i)
                .map(|f| f.deletions.clone())
                .unwrap_or_default();
            return Ok(fragment);
        }
        let layout = self.layout.fragments.get(i).unwrap_or(&fl);
        dataset.read_fragment_files(&self.level.schema, &self.file, i, &mut fragment, layout)?;
        keep_only(&mut fragment, &self.keep);
        Ok(fragment)
    }

    /// Fragment `i` with what its row ids need: its files read only when they hold them.
    fn fragment_with_row_ids(
        &self,
        dataset: &Dataset,
        i: usize,
        columns: bool,
    ) -> Result<Fragment, DatasetError> {
        let shell = self.fragment(dataset, i, false)?;
        if columns && matches!(shell.lineage.row_ids, LineageSequence::Column) {
            return self.fragment(dataset, i, true);
        }
        Ok(shell)
    }

    /// A snapshot of this version holding `fragments` only.
    fn with(&self, fragments: Vec<Fragment>) -> Snapshot {
        Snapshot {
            version: self.level.version,
            schema: self.level.schema.clone(),
            fragments,
            indices: Vec::new(),
            config: self.level.config.clone(),
            stable_row_ids: self.level.stable_row_ids,
            next_row_id: self.level.next_row_id,
            reader_flags: self.level.reader_flags,
            writer_flags: self.level.writer_flags,
        }
    }
}

/// Where row ids are: each run of consecutive ids at consecutive offsets of one fragment,
/// `(first id, length, fragment id, first offset)`. Built in the order a map from id to row
/// would be filled, so that where runs overlap (a row id held twice) the one added last
/// answers, as the map's last insert would.
#[derive(Debug, Default)]
struct RowIdRuns {
    /// Sorted by first id, when no two overlap.
    runs: Vec<(u64, u64, u64, u32)>,
    /// The runs in the order added, kept only while they may overlap.
    overlapping: Option<BTreeMap<u64, (u64, u32)>>,
}

impl RowIdRuns {
    fn add(&mut self, fragment: &Fragment) -> lance_reference::Result<()> {
        let ids = fragment.lineage_slice(ROW_ID_FIELD_ID)?.unwrap_or_default();
        let mut k = 0;
        while k < ids.len() {
            let first = ids[k];
            let mut len = 1u64;
            while k + (len as usize) < ids.len()
                && ids[k + len as usize] == first.wrapping_add(len)
                && first.checked_add(len).is_some()
            {
                len += 1;
            }
            self.runs.push((first, len, fragment.id, k as u32));
            k += len as usize;
        }
        Ok(())
    }

    /// Orders the runs for lookups; where two overlap, the runs become a map filled in the
    /// order they were added.
    fn finish(mut self) -> RowIdRuns {
        let added = self.runs.clone();
        self.runs.sort_by_key(|r| r.0);
        let overlap = self
            .runs
            .windows(2)
            .any(|w| w[0].0.saturating_add(w[0].1) > w[1].0);
        if overlap {
            let mut map = BTreeMap::new();
            for (first, len, fragment, offset) in added {
                for d in 0..len {
                    map.insert(first + d, (fragment, offset + d as u32));
                }
            }
            return RowIdRuns {
                runs: Vec::new(),
                overlapping: Some(map),
            };
        }
        self.runs.shrink_to_fit();
        self
    }

    fn get(&self, id: u64) -> Option<(u64, u32)> {
        if let Some(map) = &self.overlapping {
            return map.get(&id).copied();
        }
        let at = self.runs.partition_point(|r| r.0 <= id).checked_sub(1)?;
        let (first, len, fragment, offset) = self.runs[at];
        (id - first < len).then(|| (fragment, offset + (id - first) as u32))
    }

    fn contains(&self, id: u64) -> bool {
        self.get(id).is_some()
    }
}

/// One fragment's stored entries placed on its rows: `(offset, entry)` pairs.
type PlacedRows = Vec<(u32, u32)>;

/// The stored entries placed on rows, by fragment id: `(offset, entry)` pairs, sorted by
/// offset, one per offset (the last entry stored for it, as a map's last insert).
type Placed = BTreeMap<u64, PlacedRows>;

fn sort_placed(placed: &mut Placed) {
    for rows in placed.values_mut() {
        rows.sort_unstable();
        // Keep the last entry of each offset (the entries of an offset are in storage order).
        let mut kept: Vec<(u32, u32)> = Vec::with_capacity(rows.len());
        for &(offset, entry) in rows.iter() {
            match kept.last_mut() {
                Some(last) if last.0 == offset => *last = (offset, entry),
                _ => kept.push((offset, entry)),
            }
        }
        *rows = kept;
    }
}

/// A BTree check that passed, and what of the version read (`now`) its verdict rested on.
#[derive(Debug, Clone)]
pub(crate) struct Passed {
    /// No covered fragment was remapped (every one is a fragment of the claimed version) and
    /// every stored entry was placed on a row of the claimed version, so the version read
    /// answered nothing: neither its row ids nor its `next_row_id` decided an entry.
    claimed_only: bool,
    /// The ids of the claimed version's fragments.
    claimed_fragments: std::collections::BTreeSet<u64>,
}

impl Passed {
    /// Whether this verdict is also the verdict of the same index (the same manifest entry and
    /// layout) read at another version `now` whose own check passed ([`check_btree`]'s
    /// caller asks only then). It is when the verdict rested on the claimed version alone
    /// (`claimed_only`), `now` remaps no covered fragment either (each covered fragment of
    /// `now` is one of the claimed version's), and no fragment of `now` holds its row ids in a
    /// column. Then the check at `now` reads the same files, the same claimed version and
    /// places every entry on the same row (a row found at the claimed version is its answer,
    /// whatever `now` holds); what it reads of `now` besides (its manifest and deletions,
    /// which its own check read, and its fragments' row ids from the manifest) cannot fail;
    /// and it compares the same entries with the same rebuilt ones: the same answer.
    pub(crate) fn holds_at(&self, index: &Index, now: &Snapshot) -> bool {
        self.claimed_only
            && now.fragments.iter().all(|f| {
                let covered = index.fragment_bitmap.is_some() && index.covers(f.id);
                (!covered || self.claimed_fragments.contains(&f.id))
                    && !matches!(f.lineage.row_ids, LineageSequence::Column)
            })
    }
}

/// Checks a BTree index of the version `check` just accepted (`now`, read as
/// `now_version`) against the version it claims, as `read_index_files` and `checked_entries`
/// do (the module docs), its covered fragments rebuilt and matched on `workers` threads (each
/// holding one fragment; the answer is the one-thread answer); `None` when the index is not
/// one this check reads (not a BTree, a storage that remembers decodings, more entries than a
/// `u32` counts), for the caller to check it the whole way.
pub(crate) fn check_btree(
    dataset: &Dataset,
    workers: usize,
    now_version: u64,
    index: &Index,
    il: &IndexLayout,
    field: &str,
) -> Option<Result<Passed, DatasetError>> {
    if index.kind != lance_reference::model::IndexKind::BTree
        || dataset.storage().decoded().is_some()
    {
        return None;
    }
    let run = || -> Result<Option<Passed>, DatasetError> {
        let dataset_version = index.dataset_version;
        let at = VersionAtHand::read(dataset, dataset_version, &index.fields)?;
        let stored = stored_keys(
            dataset.storage(),
            il,
            index,
            &at.level.schema,
            dataset.options().max_file_bytes,
            field,
        )?;
        if u32::try_from(stored.len()).is_err() {
            return Ok(None);
        }
        let now = if dataset_version == now_version {
            None
        } else {
            Some(VersionAtHand::read(dataset, now_version, &index.fields)?)
        };
        let now = now.as_ref().unwrap_or(&at);
        compare(dataset, workers, &at, now, index, il, stored, field).map(Some)
    };
    run().transpose()
}

/// `checked_entries` of the stored entries against `at` (the claimed version) and `now`,
/// fragment by fragment (the module docs).
#[allow(clippy::too_many_arguments)]
fn compare(
    dataset: &Dataset,
    workers: usize,
    at: &VersionAtHand,
    now: &VersionAtHand,
    index: &Index,
    il: &IndexLayout,
    stored: StoredKeys,
    field: &str,
) -> Result<Passed, DatasetError> {
    let refused = |e: IndexFileError| Checked::Index(e).at(field);
    let model = |e: lance_reference::Error| Checked::Model(e).at(field);
    let unknown = |id: u64, problem: String| {
        refused(IndexFileError::UnknownRow {
            index: index.name.clone(),
            id,
            problem,
        })
    };
    let addresses = stores_addresses(index, il).map_err(refused)?;
    let same = std::ptr::eq(at, now);
    let at_ids: std::collections::BTreeSet<u64> = at.level.fragments.iter().map(|f| f.id).collect();
    // Covered fragments of the version read that did not exist at `dataset_version`.
    let remapped: Vec<usize> = now
        .level
        .fragments
        .iter()
        .enumerate()
        .filter(|(_, f)| index.fragment_bitmap.is_some() && index.covers(f.id))
        .filter(|(_, f)| !at_ids.contains(&f.id))
        .map(|(i, _)| i)
        .collect();
    // What the whole-version check holds with columns: every fragment of the claimed version,
    // and of the version read those covered after the build.
    let now_columns = |i: usize| same || remapped.contains(&i);
    let (at_build, now_level) = (&at.level, &now.level);
    let by_ids = !addresses && at_build.stable_row_ids;
    let (mut then, mut later, mut held_now) = Default::default();
    if by_ids {
        let mut runs = RowIdRuns::default();
        for i in 0..at_build.fragments.len() {
            runs.add(&at.fragment_with_row_ids(dataset, i, true)?)
                .map_err(model)?;
        }
        then = runs.finish();
        let mut runs = RowIdRuns::default();
        for &i in &remapped {
            runs.add(&now.fragment_with_row_ids(dataset, i, true)?)
                .map_err(model)?;
        }
        later = runs.finish();
    }
    let then: RowIdRuns = then;
    let later: RowIdRuns = later;
    if by_ids && now_level.next_row_id > at_build.next_row_id {
        let mut runs = RowIdRuns::default();
        for i in 0..now_level.fragments.len() {
            let f = now.fragment_with_row_ids(dataset, i, now_columns(i))?;
            runs.add(&f).map_err(model)?;
        }
        held_now = runs.finish();
    }
    let held_now: RowIdRuns = held_now;
    let remapped_ids: Vec<u64> = remapped
        .iter()
        .map(|&i| now_level.fragments[i].id)
        .collect();
    let mut rows: Placed = BTreeMap::new();
    let mut remapped_rows: Placed = BTreeMap::new();
    // Whether an entry was left out by what the version read holds (a row id it does not hold).
    let mut placed_by_now = false;
    for (entry, &id) in stored.ids().iter().enumerate() {
        let placed = entry_row(
            id,
            by_ids,
            index,
            |id| then.get(id),
            |id| later.get(id),
            |id| held_now.contains(id),
            at_build,
            now_level.next_row_id,
        );
        let Some((fragment, offset)) = placed.map_err(|problem| unknown(id, problem))? else {
            placed_by_now = true;
            continue;
        };
        if !index.covers(fragment) {
            continue;
        }
        let entry = entry as u32;
        if let Some(f) = remapped
            .iter()
            .map(|&i| &now_level.fragments[i])
            .find(|f| f.id == fragment)
        {
            if u64::from(offset) >= f.physical_rows {
                return Err(unknown(
                    id,
                    format!(
                        "offset {offset} is past remapped fragment {fragment}'s {} rows",
                        f.physical_rows
                    ),
                ));
            }
            remapped_rows
                .entry(fragment)
                .or_default()
                .push((offset, entry));
            continue;
        }
        if let Some(problem) = unplaced(at_build, fragment, offset) {
            return Err(unknown(id, problem));
        }
        rows.entry(fragment).or_default().push((offset, entry));
    }
    drop((then, later, held_now));
    let stored = stored.without_ids();
    if let Some(&f) = remapped_ids.iter().find(|f| !remapped_rows.contains_key(f)) {
        return Err(refused(IndexFileError::CoverageWithoutEntries {
            index: index.name.clone(),
            fragment: f,
            dataset_version: at_build.version,
        }));
    }
    sort_placed(&mut rows);
    sort_placed(&mut remapped_rows);
    // The claimed version's entries, rebuilt one covered fragment at a time on the workers;
    // the outcomes taken in manifest order, so the answer is the loop's on any number of them.
    let covered: Vec<(usize, u64, PlacedRows)> = at_build
        .fragments
        .iter()
        .enumerate()
        .filter(|(_, f)| index.covers(f.id))
        .map(|(i, f)| (i, f.id, rows.remove(&f.id).unwrap_or_default()))
        .collect();
    drop(rows);
    let matched = in_order(workers, covered.len(), |k| {
        let (i, _, placed) = &covered[k];
        let fragment = at.to_rebuild(dataset, *i)?;
        let mut matcher = Matcher::new(placed, index, false);
        let stale =
            |e: &IndexEntry, value: &Value| stale_entry(index, e, value, at_build.version, false);
        each_window(
            fragment,
            |f| at.with(vec![f]),
            index,
            |rebuilt| matcher.feed(&rebuilt, &stored, stale),
        )
        .map_err(model)?;
        let (mismatch, unclaimed) = matcher.outcome();
        let id = covered[k].1;
        Ok::<_, DatasetError>((mismatch, unclaimed.map(|(offset, e)| ((id, offset), e))))
    });
    let (first_mismatch, leftover) = first_failure(matched)?;
    if let Some(e) = first_mismatch {
        return Err(refused(e));
    }
    remapped_check(
        dataset,
        workers,
        now,
        &remapped,
        index,
        remapped_rows,
        &stored,
        field,
    )?;
    if let Some((row, entry)) = leftover {
        let value = stored_text(Some(&stored.value(entry as usize)));
        return Err(refused(unclaimed_entry(
            index,
            row,
            value,
            at_build.version,
            false,
        )));
    }
    Ok(Passed {
        claimed_only: remapped.is_empty() && !placed_by_now,
        claimed_fragments: at_ids,
    })
}

/// The most entries of a fragment handed over at once ([`each_window`]).
const WINDOW: usize = 1 << 16;

/// The entries an index holds for `fragment` (the index's own rule,
/// [`lance_reference::index_build::entry`] for each live row, as
/// [`lance_reference::index_build::entries`] applies it to the snapshot `alone` makes of the
/// fragment), handed to `each` at most [`WINDOW`] at a time in offset order, at least once. The
/// key column is resolved once, as Arrow ([`resolve_array`]: the live rows' values, in offset
/// order), and only a window of entries is held as values: time and memory grow with the
/// fragment's rows, not with their square. The fragment's inline lineage values are dropped
/// first: no entry needs them.
fn each_window(
    mut fragment: Fragment,
    alone: impl Fn(Fragment) -> Snapshot,
    index: &Index,
    mut each: impl FnMut(Vec<IndexEntry>),
) -> lance_reference::Result<()> {
    crate::codec::drop_lineage_values(&mut fragment);
    let Some(&key) = index.fields.first() else {
        each(Vec::new());
        return Ok(());
    };
    let snapshot = alone(fragment);
    let Some(fragment) = snapshot.fragments.first() else {
        each(Vec::new());
        return Ok(());
    };
    let keys = resolve_array(&snapshot.schema, fragment, key)?;
    let mut window = Vec::new();
    for (position, offset) in fragment.live_offsets()?.enumerate() {
        // The resolved array holds one value per live row; a shorter one leaves the rest NULL,
        // as the row resolution reads a value it has not got.
        let value = value_at(keys.as_ref(), position).unwrap_or(Value::Null);
        window.extend(entry(index.kind, fragment.id, offset, value));
        if window.len() == WINDOW {
            each(std::mem::take(&mut window));
        }
    }
    each(window);
    Ok(())
}

/// One fragment's rebuilt entries, given window by window in offset order, against the stored
/// entries placed on its rows (sorted by offset): the first missing or differing entry, and
/// which stored entries no rebuilt entry claimed.
struct Matcher<'p> {
    placed: &'p [(u32, u32)],
    claimed: Vec<bool>,
    index: &'p Index,
    remapped: bool,
    mismatch: Option<IndexFileError>,
}

impl<'p> Matcher<'p> {
    fn new(placed: &'p [(u32, u32)], index: &'p Index, remapped: bool) -> Matcher<'p> {
        Matcher {
            placed,
            claimed: vec![false; placed.len()],
            index,
            remapped,
            mismatch: None,
        }
    }

    /// The next rebuilt entries; `stale` names an entry whose stored value differs.
    fn feed(
        &mut self,
        rebuilt: &[IndexEntry],
        stored: &StoredKeys,
        stale: impl Fn(&IndexEntry, &Value) -> IndexFileError,
    ) {
        if self.mismatch.is_some() {
            return;
        }
        for e in rebuilt {
            let Ok(at) = self.placed.binary_search_by_key(&e.offset, |p| p.0) else {
                self.mismatch = Some(IndexFileError::MissingEntry {
                    index: self.index.name.clone(),
                    fragment: e.fragment,
                    offset: e.offset,
                    remapped: self.remapped,
                });
                return;
            };
            self.claimed[at] = true;
            let value = stored.value(self.placed[at].1 as usize);
            if !value.identical(&e.value) {
                self.mismatch = Some(stale(e, &value));
                return;
            }
        }
    }

    /// The first missing or differing entry, and the first stored entry (in offset order) no
    /// rebuilt entry claimed.
    fn outcome(mut self) -> (Option<IndexFileError>, Option<(u32, u32)>) {
        let unclaimed = self.unclaimed().next().copied();
        (self.mismatch.take(), unclaimed)
    }

    /// The stored entries no rebuilt entry claimed, in offset order.
    fn unclaimed(&self) -> impl Iterator<Item = &(u32, u32)> {
        self.placed
            .iter()
            .zip(&self.claimed)
            .filter(|(_, c)| !**c)
            .map(|(p, _)| p)
    }
}

/// `remapped_entries` of `checked_entries`, one remapped fragment at a time: the entries of
/// rows in a fragment's exclusion set are taken as they are; every other live row needs an
/// entry holding its base value; a stored entry left over names a deleted row or is refused.
#[allow(clippy::too_many_arguments)]
fn remapped_check(
    dataset: &Dataset,
    workers: usize,
    now: &VersionAtHand,
    remapped: &[usize],
    index: &Index,
    mut placed: Placed,
    stored: &StoredKeys,
    field: &str,
) -> Result<(), DatasetError> {
    if remapped.is_empty() {
        return Ok(());
    }
    let refused = |e: IndexFileError| Checked::Index(e).at(field);
    // Each remapped fragment's stored entries, taken in manifest order (a fragment id listed
    // twice finds its entries the first time, as the loop's removal would).
    let jobs: Vec<(usize, PlacedRows)> = remapped
        .iter()
        .map(|&i| {
            let id = now.level.fragments.get(i).map(|f| f.id);
            (i, id.and_then(|id| placed.remove(&id)).unwrap_or_default())
        })
        .collect();
    let matched = in_order(workers, jobs.len(), |k| {
        let (i, placed) = &jobs[k];
        let fragment = now.to_rebuild(dataset, *i)?;
        let set = exclusion_set(&now.level.schema, index, &fragment);
        let rows: Vec<(u32, u32)> = placed
            .iter()
            .filter(|(offset, _)| !set.contains(*offset))
            .copied()
            .collect();
        let mut as_stored = fragment;
        as_stored.overlays.clear();
        let deletions = as_stored.deletions.clone();
        let id = as_stored.id;
        let mut matcher = Matcher::new(&rows, index, true);
        let stale = |e: &IndexEntry, value: &Value| {
            stale_entry(index, e, value, index.dataset_version, true)
        };
        let alone = |f: Fragment| {
            let mut shell = now.with(vec![f]);
            shell.config = BTreeMap::new();
            shell
        };
        each_window(as_stored, alone, index, |mut rebuilt| {
            rebuilt.retain(|e| !set.contains(e.offset));
            matcher.feed(&rebuilt, stored, stale);
        })
        .map_err(|e| Checked::Model(e).at(field))?;
        // Unclaimed and not deleted: an entry for a row the index may not hold.
        let unclaimed = matcher
            .unclaimed()
            .find(|(o, _)| !deletions.contains(*o))
            .map(|&(offset, entry)| ((id, offset), entry));
        Ok::<_, DatasetError>((matcher.mismatch.take(), unclaimed))
    });
    let (first_mismatch, leftover) = first_failure(matched)?;
    if let Some(e) = first_mismatch {
        return Err(refused(e));
    }
    if let Some((row, entry)) = leftover {
        let value = stored_text(Some(&stored.value(entry as usize)));
        return Err(refused(unclaimed_entry(
            index,
            row,
            value,
            index.dataset_version,
            true,
        )));
    }
    Ok(())
}

/// What matching one fragment's rebuilt entries found: its first mismatch, and its least stored
/// entry no rebuilt entry claimed (`((fragment, offset), entry)`).
type Matched = (Option<IndexFileError>, Option<((u64, u32), u32)>);

/// The fragments' matches, in manifest order, as one answer: the first fragment's mismatch
/// that has one, else the least unclaimed entry of all of them. A fragment after the first
/// mismatch was rebuilt only for an error a rebuild may still raise (the module docs): its own
/// error still counts, its mismatch and unclaimed entries do not.
fn first_failure(matched: Vec<Result<Matched, DatasetError>>) -> Result<Matched, DatasetError> {
    let mut first_mismatch: Option<IndexFileError> = None;
    let mut leftover: Option<((u64, u32), u32)> = None;
    for outcome in matched {
        let (mismatch, unclaimed) = outcome?;
        if first_mismatch.is_some() {
            continue;
        }
        first_mismatch = mismatch;
        if let Some((key, entry)) = unclaimed {
            if leftover.is_none_or(|(k, _)| key < k) {
                leftover = Some((key, entry));
            }
        }
    }
    Ok((first_mismatch, leftover))
}

/// The fields whose columns an index keyed on `fields` is checked with: the key fields, every
/// field below them, and the hidden lineage columns (row ids name rows).
pub(crate) fn key_fields(snapshot: &Snapshot, fields: &[FieldId]) -> Vec<FieldId> {
    let mut keep = vec![
        ROW_ID_FIELD_ID,
        CREATED_AT_FIELD_ID,
        LAST_UPDATED_AT_FIELD_ID,
    ];
    for f in snapshot.schema.fields() {
        if snapshot
            .schema
            .ancestry(f.id)
            .iter()
            .any(|a| fields.contains(a))
        {
            keep.push(f.id);
        }
    }
    keep.extend_from_slice(fields);
    keep
}

/// Empties every column of `fragment`'s base and overlay files whose field is not in `keep`
/// (the [`key_fields`] of an index): what an index check holds of a fragment it read.
pub(crate) fn keep_only(fragment: &mut Fragment, keep: &[FieldId]) {
    let files = fragment
        .files
        .iter_mut()
        .chain(fragment.overlays.iter_mut().map(|o| &mut o.file));
    for df in files {
        for (field, column) in df.fields.iter().zip(df.columns.iter_mut()) {
            if !keep.contains(field) {
                *column = Column::empty();
            }
        }
    }
}
