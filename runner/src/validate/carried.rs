//! The rows a commit may carry into new fragments, followed by row id without holding them.
//!
//! Invariant: a row of an old fragment is never held longer than the fragment's scan it came
//! from. [`MovedRows`] keeps, per old row a commit may carry (every live row of a fragment it
//! removed, every row it deleted from a fragment it kept), only where the row is: consecutive
//! row ids at consecutive offsets of one fragment are one run, so a table written in order costs
//! a few runs per fragment, and a shuffled one at most one run (32 bytes) per row. The row
//! itself is read again when a new row names it ([`OldRows`]), from a scan of its fragment
//! ([`FragmentRows`]: the reference's [`FragmentScan`], one fragment resolved once and read row
//! by row, holding no per-row column beyond the fragment's own), of which at most
//! [`OLD_FRAGMENTS_HELD`] are held at once. A row id found twice names the row seen
//! last (fragments in manifest order, rows in physical order), as a map filled in that order
//! would.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

use lance_reference::model::{FieldId, Fragment, Snapshot};
use lance_reference::scan::{FragmentScan, ScanRow};

/// How many old fragments' scans [`OldRows`] holds at once: a compaction's output draws from
/// consecutive old fragments, so two cover a boundary between them.
pub const OLD_FRAGMENTS_HELD: usize = 2;

/// How many consecutive rows [`FragmentRows::at_offset`] reads at once: carried rows are
/// looked up in their old order, so one read serves the next lookups.
const ROWS_READ_AHEAD: usize = 1024;

/// The live rows of one fragment, as a scan returns them, read by position.
#[derive(Debug)]
pub struct FragmentRows {
    scan: FragmentScan<'static>,
    /// The rows last read by [`Self::at_offset`] and the position of the first.
    ahead: (usize, Vec<Option<ScanRow>>),
}

impl FragmentRows {
    /// Scans `fragment` (read with its columns) of `snapshot` for the top-level `fields`;
    /// `None` when the scan refuses it (a field it does not hold, a column it cannot resolve).
    /// The fragment is moved into the scan, which reads its lineage where it is held.
    pub fn scan(snapshot: &Snapshot, fragment: Fragment, fields: &[FieldId]) -> Option<Self> {
        FragmentScan::new(snapshot, Cow::Owned(fragment), fields)
            .ok()
            .map(|scan| FragmentRows {
                scan,
                ahead: (0, Vec::new()),
            })
    }

    /// The fragment scanned.
    pub fn fragment(&self) -> &Fragment {
        self.scan.fragment()
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.scan.len()
    }

    /// Whether the fragment has no live row.
    pub fn is_empty(&self) -> bool {
        self.scan.is_empty()
    }

    /// The physical offset and row id of every row, in order.
    pub fn places(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.scan.row_ids()
    }

    /// Every row as [`lance_reference::scan::scan`] returns it, in order (a row whose values
    /// the model cannot hold is left out).
    pub fn rows(&self) -> impl Iterator<Item = ScanRow> + '_ {
        self.scan.rows(0..self.len()).flatten()
    }

    /// The row at physical `offset`, if it is live.
    pub fn at_offset(&mut self, offset: u64) -> Option<ScanRow> {
        let k = self.scan.position(offset)?;
        let (first, rows) = &self.ahead;
        if !(*first..first + rows.len()).contains(&k) {
            let end = k.saturating_add(ROWS_READ_AHEAD);
            self.ahead = (k, self.scan.rows(k..end).collect());
        }
        let (first, rows) = &self.ahead;
        rows.get(k - first).cloned().flatten()
    }
}

/// Consecutive row ids at consecutive offsets of one old fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    first_id: u64,
    /// The fragment's position in the old version's manifest.
    fragment: usize,
    first_offset: u64,
    len: u64,
}

impl Run {
    fn end(&self) -> u64 {
        self.first_id.saturating_add(self.len)
    }
}

/// Where each old row a commit may carry is, by row id (see the module docs).
#[derive(Debug, Default)]
pub struct MovedRows {
    /// Runs sorted by first row id, none overlapping another.
    runs: Vec<Run>,
    /// When two runs overlap (a row id found twice): every row id, the last place found.
    exact: Option<BTreeMap<u64, (usize, u64)>>,
    /// Runs in the order they were found, until [`MovedRows::finish`].
    pending: Vec<Run>,
}

impl MovedRows {
    /// Records that the old fragment at manifest position `fragment` holds row id `row_id` at
    /// `offset`; rows are added fragment by fragment, in physical order.
    pub fn add(&mut self, fragment: usize, offset: u64, row_id: u64) {
        if let Some(last) = self.pending.last_mut() {
            if last.fragment == fragment
                && last.end() == row_id
                && last.first_offset.saturating_add(last.len) == offset
            {
                last.len += 1;
                return;
            }
        }
        self.pending.push(Run {
            first_id: row_id,
            fragment,
            first_offset: offset,
            len: 1,
        });
    }

    /// Sorts the runs once every row is added; overlapping runs fall back to one entry per
    /// row id, the last place found winning.
    pub fn finish(&mut self) {
        let found = std::mem::take(&mut self.pending);
        let mut runs = found.clone();
        runs.sort_by_key(|r| r.first_id);
        if runs.windows(2).all(|w| w[0].end() <= w[1].first_id) {
            self.runs = runs;
            return;
        }
        let mut exact = BTreeMap::new();
        for r in found {
            for k in 0..r.len {
                exact.insert(r.first_id + k, (r.fragment, r.first_offset + k));
            }
        }
        self.exact = Some(exact);
    }

    /// Where the old row with `row_id` is: its fragment's manifest position and its offset.
    pub fn get(&self, row_id: u64) -> Option<(usize, u64)> {
        if let Some(exact) = &self.exact {
            return exact.get(&row_id).copied();
        }
        let k = self.runs.partition_point(|r| r.first_id <= row_id);
        let r = self.runs.get(k.checked_sub(1)?)?;
        (row_id < r.end()).then(|| (r.fragment, r.first_offset + (row_id - r.first_id)))
    }

    /// Every row id recorded, ascending.
    pub fn ids(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match &self.exact {
            Some(exact) => Box::new(exact.keys().copied()),
            None => Box::new(self.runs.iter().flat_map(|r| r.first_id..r.end())),
        }
    }
}

/// The old rows read back by place, holding at most [`OLD_FRAGMENTS_HELD`] fragments' scans.
pub struct OldRows<'a> {
    scan: Box<dyn FnMut(usize) -> Option<FragmentRows> + 'a>,
    held: VecDeque<(usize, Option<FragmentRows>)>,
}

impl<'a> OldRows<'a> {
    /// Old rows scanned by `scan` (an old fragment's manifest position to its rows).
    pub fn new(scan: impl FnMut(usize) -> Option<FragmentRows> + 'a) -> Self {
        OldRows {
            scan: Box::new(scan),
            held: VecDeque::new(),
        }
    }

    /// The row at `offset` of the old fragment at manifest position `fragment`.
    pub fn row(&mut self, fragment: usize, offset: u64) -> Option<ScanRow> {
        if !self.held.iter().any(|(f, _)| *f == fragment) {
            if self.held.len() >= OLD_FRAGMENTS_HELD {
                self.held.pop_front();
            }
            let rows = (self.scan)(fragment);
            self.held.push_back((fragment, rows));
        }
        let (_, rows) = self.held.iter_mut().find(|(f, _)| *f == fragment)?;
        rows.as_mut()?.at_offset(offset)
    }

    /// The most fragments' scans held at once is [`OLD_FRAGMENTS_HELD`]; how many now.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_find_rows_and_a_duplicate_id_names_the_last_place() {
        let mut m = MovedRows::default();
        for o in 0..100 {
            m.add(0, o, 1000 + o); // one run
        }
        m.add(1, 5, 7);
        m.add(1, 6, 9); // a gap in ids: a second run
        m.finish();
        assert_eq!(m.runs.len(), 3);
        assert_eq!(m.get(1042), Some((0, 42)));
        assert_eq!(m.get(9), Some((1, 6)));
        assert_eq!(m.get(8), None);
        assert_eq!(m.get(1100), None);
        assert_eq!(m.ids().take(3).collect::<Vec<_>>(), vec![7, 9, 1000]);
        let mut d = MovedRows::default();
        d.add(0, 0, 5);
        d.add(0, 1, 6);
        d.add(1, 3, 6); // row id 6 again, found later
        d.finish();
        assert_eq!(d.get(6), Some((1, 3)));
        assert_eq!(d.get(5), Some((0, 0)));
        assert_eq!(d.ids().collect::<Vec<_>>(), vec![5, 6]);
    }

    #[test]
    fn old_rows_hold_at_most_two_fragments() {
        let mut scans = Vec::new();
        let mut old = OldRows::new(|f| {
            scans.push(f);
            None
        });
        for f in [0, 1, 0, 2, 3, 3] {
            assert!(old.row(f, 0).is_none());
            assert!(old.held() <= OLD_FRAGMENTS_HELD);
        }
        drop(old);
        assert_eq!(scans, vec![0, 1, 2, 3]);
    }
}
