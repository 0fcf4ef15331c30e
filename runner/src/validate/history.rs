//! Each commit against the version before it: the rules a version alone cannot decide.
//!
//! Invariant: a commit is classified fragment by fragment from what changed, and each class is
//! judged with the reference's own operations, never a second copy of a rule:
//!
//! | what changed in a fragment kept by id | class | judged by |
//! |---|---|---|
//! | overlays appended after the old list | overlay commit | [`stamp_overlays`] on the old fragment gives the lineage the commit must leave; each added overlay's `committed_version` is the commit's version ([OVL-VER-1]), carried ones keep theirs ([OVL-VER-3]), a stamped last-updated-at is inline ([LIN-PLACE-5]) |
//! | a run of overlays replaced by one new overlay | merge | inputs' maximum version ([OVL-MERGE-3]), base files, deletions and lineage untouched ([OVL-MERGE-5]), resolved cells unchanged ([OVL-MERGE-4], [`resolve_column`]) |
//! | every overlay gone, base files changed | fold | physical rows, deletions, lineage untouched ([OVL-FOLD-4]), resolved cells unchanged ([OVL-FOLD-1]), no index left covering the fragment that the folded overlays were excluding rows from ([OVL-FOLD-5], [`exclusion_set`]) |
//! | overlays otherwise changed | — | [OVL-VER-3] / [OVL-VER-4] / [OVL-COV-2] |
//!
//! Fragments a commit adds are judged with stable row ids on: rows with new row ids are
//! inserted (ids from the old `next_row_id` on and `next_row_id` advanced, [LIN-STAMP-1];
//! created-at = last-updated-at = the commit's version, [LIN-STAMP-2]; commit-assigned lineage
//! inline, [LIN-PLACE-1]); rows with old ids are carried (created-at kept, [LIN-STAMP-4] /
//! [LIN-STAMP-5]; last-updated-at kept, with every resolved value kept, as a rewrite
//! ([OVL-RWR-1], [OVL-RWR-2]), or stamped with the commit's version, as a row-moving update).
//! A commit that carries rows only unchanged is a row rewrite: every live row of the fragments
//! it removed reappears exactly once ([OVL-RWR-1]), and each carried sequence is spilled iff its
//! inline encoding (the reference's, which is Lance's encoder choice) is over the budget of the
//! table config in force ([LIN-PLACE-3], [LIN-PLACE-4], [`placement()`]). Without stable row
//! ids nothing ties a new row to an old one, so those rules are not decided then.
//!
//! Memory: the two versions are held at their manifest level (no columns). A fragment's
//! columns are read again ([`FragmentColumns`]) only when a rule looks at its cells or hidden
//! lineage: a kept fragment whose overlays changed (both sides, one fragment at a time), each
//! added fragment in turn, and the old fragments rows may have been carried from, which are
//! scanned one at a time to record where each row is ([`MovedRows`]) and read back on demand,
//! at most [`super::carried::OLD_FRAGMENTS_HELD`] at once ([`OldRows`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use lance_reference::exclusion::exclusion_set;
use lance_reference::lineage::{
    Origin, Placement, SequenceKind, SpillConfig, placement, stamp_overlays,
};
use lance_reference::model::{
    CREATED_AT_FIELD_ID, FieldId, Fragment, LAST_UPDATED_AT_FIELD_ID, LineageSequence, Overlay,
    ROW_ID_FIELD_ID, Snapshot, TOMBSTONE_FIELD_ID,
};
use lance_reference::resolve::resolve_column;
use lance_reference::scan::{DEFAULT_ROW_VERSION, ScanRow};
use roaring::RoaringTreemap;

use super::carried::{FragmentRows, MovedRows, OldRows};
use super::finding::{Finding, HistoryError};
use lance_reference_io::version_check::VersionCheck;

use super::version::{Level, ReadVersion};

/// The three lineage sequences, with their reserved ids and names.
const SEQUENCES: [(SequenceKind, FieldId, &str); 3] = [
    (SequenceKind::RowIds, ROW_ID_FIELD_ID, "row id"),
    (SequenceKind::CreatedAt, CREATED_AT_FIELD_ID, "created-at"),
    (
        SequenceKind::LastUpdatedAt,
        LAST_UPDATED_AT_FIELD_ID,
        "last-updated-at",
    ),
];

/// What a commit did, as classified. Declared in name order, so a set of kinds iterates (and
/// a report lists them) alphabetically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommitKind {
    /// Fragments added holding new rows, or, without stable row ids, fragments only added.
    Append,
    /// The table config changed.
    Config,
    /// Deletions of a kept fragment changed.
    Delete,
    /// Every overlay of a fragment folded into its base files.
    Fold,
    /// An index was built, rebuilt, dropped or had its coverage changed.
    Index,
    /// A contiguous run of overlays replaced by one new overlay.
    Merge,
    /// Overlays appended after a fragment's old ones.
    Overlay,
    /// Fragments replaced without stable row ids (a rewrite cannot be told from a delete and
    /// an append).
    Replace,
    /// Rows carried unchanged into new fragments.
    Rewrite,
    /// The schema changed.
    Schema,
    /// Rows carried into new fragments with last-updated-at stamped.
    Update,
}

impl CommitKind {
    /// Every kind, in name order.
    pub const ALL: [CommitKind; 11] = [
        CommitKind::Append,
        CommitKind::Config,
        CommitKind::Delete,
        CommitKind::Fold,
        CommitKind::Index,
        CommitKind::Merge,
        CommitKind::Overlay,
        CommitKind::Replace,
        CommitKind::Rewrite,
        CommitKind::Schema,
        CommitKind::Update,
    ];

    /// The word a report prints (`overlay`, `merge`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CommitKind::Append => "append",
            CommitKind::Config => "config",
            CommitKind::Delete => "delete",
            CommitKind::Fold => "fold",
            CommitKind::Index => "index",
            CommitKind::Merge => "merge",
            CommitKind::Overlay => "overlay",
            CommitKind::Replace => "replace",
            CommitKind::Rewrite => "rewrite",
            CommitKind::Schema => "schema",
            CommitKind::Update => "update",
        }
    }
}

impl std::fmt::Display for CommitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one commit was judged to do, and what it broke.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judged {
    /// What the commit did, as classified, in name order; empty when nothing a rule looks at
    /// changed.
    pub kinds: BTreeSet<CommitKind>,
    /// The findings.
    pub findings: Vec<Finding>,
}

/// Judges the commit that produced `cur` against `prev`, the version before it.
///
/// When either version was read at the manifest level only ([`Level::Manifest`]), both are
/// compared without their columns, and only the rules that need no cell are judged: the
/// classes, overlay versions and coverage, lineage held inline, the placement of sequences.
pub fn check_commit(prev: &ReadVersion, cur: &ReadVersion, source: &dyn FragmentColumns) -> Judged {
    let data = prev.level != Level::Manifest && cur.level != Level::Manifest;
    let (p, c) = (&prev.snapshot, &cur.snapshot);
    let mut out = Commit {
        prev: p,
        cur: c,
        prev_read: prev,
        cur_read: cur,
        source,
        file: &cur.file,
        inline_lengths: &cur.inline_lengths,
        data,
        findings: Vec::new(),
        kinds: BTreeSet::new(),
    };
    out.other_kinds();
    for (i, fc) in c.fragments.iter().enumerate() {
        if let Some(j) = p.fragments.iter().position(|f| f.id == fc.id) {
            out.kept_fragment(i, j);
        }
    }
    out.added_fragments();
    out.next_row_id_kept();
    Judged {
        kinds: out.kinds,
        findings: out.findings,
    }
}

/// Where a commit's judgement reads the fragments it looks into: a [`ReadVersion`] holds
/// neither columns nor lineage values, so each fragment is decoded and read again when needed
/// and dropped after.
pub trait FragmentColumns {
    /// Fragment `i` of `version` as the reader holds it: lineage and deletions, and its
    /// columns when `columns`; `None` when it cannot be read again (which the version's own
    /// check, having passed, rules out).
    fn fragment(&self, version: &ReadVersion, i: usize, columns: bool) -> Option<Fragment>;
}

impl FragmentColumns for VersionCheck<'_> {
    fn fragment(&self, version: &ReadVersion, i: usize, columns: bool) -> Option<Fragment> {
        VersionCheck::fragment(self, version.snapshot.version, i, columns).ok()
    }
}

struct Commit<'a> {
    prev: &'a Snapshot,
    cur: &'a Snapshot,
    prev_read: &'a ReadVersion,
    cur_read: &'a ReadVersion,
    source: &'a dyn FragmentColumns,
    file: &'a str,
    /// The stored inline lineage lengths of `cur`'s fragments.
    inline_lengths: &'a BTreeMap<u64, [Option<usize>; 3]>,
    /// Whether both versions' columns were read: without them no cell is compared and no row
    /// of an added fragment is followed.
    data: bool,
    findings: Vec<Finding>,
    kinds: BTreeSet<CommitKind>,
}

/// Lineage values of one sequence, an absent version sequence read as version 1; borrowed
/// where the fragment holds them, so that asking costs no copy of a large fragment's lineage.
fn values(fragment: &Fragment, field: FieldId) -> Option<Cow<'_, [u64]>> {
    match fragment.lineage_slice(field).ok()? {
        Some(v) => Some(Cow::Borrowed(v)),
        None if field == ROW_ID_FIELD_ID => None,
        None => usize::try_from(fragment.physical_rows)
            .ok()
            .map(|n| Cow::Owned(vec![DEFAULT_ROW_VERSION; n])),
    }
}

fn is_spilled(fragment: &Fragment, kind: SequenceKind) -> bool {
    let seq = match kind {
        SequenceKind::RowIds => &fragment.lineage.row_ids,
        SequenceKind::CreatedAt => &fragment.lineage.created_at,
        SequenceKind::LastUpdatedAt => &fragment.lineage.last_updated_at,
    };
    *seq == LineageSequence::Column
}

fn same_overlay(a: &Overlay, b: &Overlay) -> bool {
    a.file.path == b.file.path
}

impl<'a> Commit<'a> {
    fn version(&self) -> u64 {
        self.cur.version
    }

    /// The kinds that need no rule of their own here: deletes, index builds, config and
    /// schema changes.
    fn other_kinds(&mut self) {
        let (p, c) = (self.prev, self.cur);
        if c.fragments.iter().any(|fc| {
            p.fragments
                .iter()
                .any(|fp| fp.id == fc.id && fp.deletions != fc.deletions)
        }) {
            self.kinds.insert(CommitKind::Delete);
        }
        if p.indices.len() != c.indices.len()
            || p.indices.iter().zip(&c.indices).any(|(a, b)| {
                a.name != b.name
                    || a.dataset_version != b.dataset_version
                    || a.fragment_bitmap != b.fragment_bitmap
            })
        {
            self.kinds.insert(CommitKind::Index);
        }
        if p.config != c.config {
            self.kinds.insert(CommitKind::Config);
        }
        if p.schema != c.schema {
            self.kinds.insert(CommitKind::Schema);
        }
    }

    fn push(&mut self, field: String, error: HistoryError) {
        self.findings
            .push(Finding::rule(self.version(), self.file, field, error));
    }

    /// Fragment `i` of the version before (`prev`) or of the commit's, with its lineage, and
    /// with its columns when both versions' columns were read.
    fn load(&self, prev: bool, i: usize) -> Option<Fragment> {
        let read = if prev { self.prev_read } else { self.cur_read };
        self.source.fragment(read, i, self.data)
    }

    /// A fragment present in both versions: `cur`'s `i`-th, `prev`'s `j`-th. Its overlays are
    /// compared by their manifest entries first; only a fragment whose overlays changed (or
    /// may decode differently: another schema or another layout) is read with its columns.
    fn kept_fragment(&mut self, i: usize, j: usize) {
        let (hp, hc) = (&self.prev.fragments[j], &self.cur.fragments[i]);
        let same_layout = self.prev_read.layout.fragments.get(j).map(|l| &l.overlays)
            == self.cur_read.layout.fragments.get(i).map(|l| &l.overlays);
        if hp.overlays == hc.overlays && self.prev.schema == self.cur.schema && same_layout {
            return; // unchanged overlays: an append elsewhere, a delete, an index build
        }
        let (Some(fp), Some(fc)) = (self.load(true, j), self.load(false, i)) else {
            return;
        };
        self.kept_fragment_read(i, &fp, &fc);
    }

    /// [`Self::kept_fragment`] once both fragments are read.
    fn kept_fragment_read(&mut self, i: usize, fp: &Fragment, fc: &Fragment) {
        let at = format!("fragments[{i}]");
        if fp.overlays == fc.overlays {
            return; // unchanged overlays: an append elsewhere, a delete, an index build
        }
        // [OVL-TOMB-3]: a committer may drop an overlay with no live field left.
        let live = |o: &Overlay| {
            o.file
                .fields
                .iter()
                .any(|&f| f >= 0 && self.cur.schema.field(f).is_some())
        };
        let mut fp = fp.clone();
        fp.overlays
            .retain(|a| live(a) || fc.overlays.iter().any(|b| same_overlay(a, b)));
        let fp = &fp;
        let kept = fp.overlays.len();
        let appended = fc.overlays.len() >= kept
            && fp
                .overlays
                .iter()
                .zip(&fc.overlays)
                .all(|(a, b)| same_overlay(a, b));
        let permuted = fc.overlays.len() == kept
            && fc.overlays.iter().all(|b| {
                fp.overlays
                    .iter()
                    .any(|a| same_overlay(a, b) && carried_unchanged(a, b))
            });
        let sorted = fc
            .overlays
            .windows(2)
            .all(|w| w[0].committed_version <= w[1].committed_version);
        if appended {
            self.kinds.insert(CommitKind::Overlay);
            self.overlay_commit(&at, fp, fc);
        } else if permuted && !sorted {
            // Stored out of order: the version's own check reports [OVL-PREC-5], and a stable
            // sort on committed_version resolves every cell as before ([OVL-PREC-4]).
        } else if fc.overlays.is_empty() && fp.files != fc.files {
            self.kinds.insert(CommitKind::Fold);
            self.fold(&at, fp, fc);
        } else if let Some(merged) = merged_overlay(fp, fc) {
            self.kinds.insert(CommitKind::Merge);
            self.merge(&at, fp, fc, merged);
        } else {
            self.push(
                format!("{at}.overlays"),
                HistoryError::CarriedOverlayChanged {
                    fragment: fc.id,
                    problem: format!(
                        "the overlay list changed from [{}] to [{}], which is neither an append, a merge nor a fold",
                        paths(&fp.overlays),
                        paths(&fc.overlays)
                    ),
                },
            );
        }
    }

    /// Overlays appended after the old ones: versions and lineage stamping.
    fn overlay_commit(&mut self, at: &str, fp: &Fragment, fc: &Fragment) {
        let kept = fp.overlays.len();
        for (k, (a, b)) in fp.overlays.iter().zip(&fc.overlays).enumerate() {
            if !carried_unchanged(a, b) {
                self.push(
                    format!("{at}.overlays[{k}]"),
                    HistoryError::CarriedOverlayChanged {
                        fragment: fc.id,
                        problem: format!(
                            "carried overlay {} changed (committed_version {} -> {}, or its coverage or fields)",
                            a.file.path, a.committed_version, b.committed_version
                        ),
                    },
                );
            }
        }
        let added = &fc.overlays[kept..];
        for (k, o) in added.iter().enumerate() {
            if o.committed_version != self.version() {
                self.push(
                    format!("{at}.overlays[{}].committed_version", kept + k),
                    HistoryError::AddedOverlayVersion {
                        fragment: fc.id,
                        path: o.file.path.clone(),
                        commit: self.version(),
                        version: o.committed_version,
                    },
                );
            }
        }
        if fp.files != fc.files {
            return; // lineage of a fragment rewritten in the same commit: not judged here
        }
        // Rows deleted in the same commit keep their physical offsets, so the stamping is
        // judged as without the delete.
        let mut expected = fp.clone();
        expected.deletions = fc.deletions.clone();
        let stable = self.cur.stable_row_ids;
        if stamp_overlays(
            &mut expected,
            added.to_vec(),
            self.version(),
            stable,
            &self.cur.schema,
        )
        .is_err()
        {
            return; // coverage past the end: the reader refused this version already
        }
        let stamped = expected.lineage.last_updated_at != fp.lineage.last_updated_at;
        for (_, field, name) in SEQUENCES {
            let requirement = match (stable, field) {
                (false, _) => "OVL-LIN-6",
                (true, LAST_UPDATED_AT_FIELD_ID) => "OVL-LIN-1",
                (true, _) => "OVL-LIN-3",
            };
            self.lineage_equal(at, fc, &expected, field, name, requirement);
        }
        if stable && stamped && is_spilled(fc, SequenceKind::LastUpdatedAt) {
            self.push(
                format!("{at}.last_updated_at_version_sequence"),
                HistoryError::Placement {
                    fragment: fc.id,
                    sequence: "last-updated-at",
                    found: "spilled",
                    expected: "inline",
                    requirement: "LIN-PLACE-5",
                },
            );
        }
    }

    /// `fc`'s `field` sequence equals `expected`'s, offset by offset.
    fn lineage_equal(
        &mut self,
        at: &str,
        fc: &Fragment,
        expected: &Fragment,
        field: FieldId,
        name: &'static str,
        requirement: &'static str,
    ) {
        let (found, want) = (values(fc, field), values(expected, field));
        if found == want {
            return;
        }
        let (offset, f, w) = match (&found, &want) {
            (Some(f), Some(w)) => match f.iter().zip(w.iter()).position(|(a, b)| a != b) {
                Some(o) => (o as u64, f[o].to_string(), w[o].to_string()),
                None => (
                    0,
                    format!("{} values", f.len()),
                    format!("{} values", w.len()),
                ),
            },
            (f, w) => (0, present(f), present(w)),
        };
        self.push(
            format!("{at}.lineage"),
            HistoryError::LineageValue {
                fragment: fc.id,
                offset,
                sequence: name,
                found: f,
                expected: w,
                commit: self.version(),
                requirement,
            },
        );
    }

    /// Every live cell of `fc` resolves as it did in `fp` (same offsets).
    fn cells_unchanged(
        &mut self,
        at: &str,
        what: &str,
        fp: &Fragment,
        fc: &Fragment,
        req: &'static str,
    ) {
        if !self.data {
            return;
        }
        for field in self.prev.schema.top_level().map(|f| f.id) {
            let (Ok(before), Ok(after)) = (
                resolve_column(&self.prev.schema, fp, field),
                resolve_column(&self.cur.schema, fc, field),
            ) else {
                continue; // a field the commit dropped from the schema
            };
            let changed = before.iter().zip(&after).enumerate().find(|(_, (b, a))| {
                matches!((b, a), (Some(b), Some(a)) if !b.identical(a))
                    || matches!((b, a), (Some(_), None))
            });
            if let Some((offset, (b, a))) = changed {
                let show = |v: &Option<_>| match v {
                    Some(v) => format!("{v}"),
                    None => "(deleted)".into(),
                };
                self.push(
                    format!("{at}.files"),
                    HistoryError::ResolvedCellChanged {
                        what: format!("{what} of fragment {}", fc.id),
                        row: format!("{}:{offset}", fc.id),
                        field,
                        found: show(a),
                        before: show(b),
                        requirement: req,
                    },
                );
                return;
            }
        }
    }

    fn untouched(
        &mut self,
        at: &str,
        mode: &'static str,
        fp: &Fragment,
        fc: &Fragment,
        req: &'static str,
        files_too: bool,
    ) {
        let touched = if fp.physical_rows != fc.physical_rows {
            Some("physical_rows")
        } else if fp.deletions != fc.deletions {
            Some("the deletions")
        } else if files_too && fp.files != fc.files {
            Some("the base files")
        } else {
            None
        };
        if let Some(what) = touched {
            self.push(
                at.to_string(),
                HistoryError::CompactionTouched {
                    fragment: fc.id,
                    mode,
                    what,
                    requirement: req,
                },
            );
            return;
        }
        for (_, field, name) in SEQUENCES {
            self.lineage_equal(at, fc, fp, field, name, req);
        }
    }

    fn merge(&mut self, at: &str, fp: &Fragment, fc: &Fragment, merged: usize) {
        let o = &fc.overlays[merged];
        let max = fp
            .overlays
            .iter()
            .filter(|a| !fc.overlays.iter().any(|b| same_overlay(a, b)))
            .map(|a| a.committed_version)
            .max()
            .unwrap_or(0);
        if o.committed_version != max {
            self.push(
                format!("{at}.overlays[{merged}].committed_version"),
                HistoryError::MergedVersion {
                    fragment: fc.id,
                    path: o.file.path.clone(),
                    version: o.committed_version,
                    max,
                },
            );
        }
        self.untouched(at, "merge", fp, fc, "OVL-MERGE-5", true);
        self.cells_unchanged(at, "the merge", fp, fc, "OVL-MERGE-4");
    }

    fn fold(&mut self, at: &str, fp: &Fragment, fc: &Fragment) {
        self.untouched(at, "fold", fp, fc, "OVL-FOLD-4", false);
        self.cells_unchanged(at, "the fold", fp, fc, "OVL-FOLD-1");
        for (n, index) in self.cur.indices.iter().enumerate() {
            if index.dataset_version >= self.version() || !index.covers(fc.id) {
                continue; // rebuilt by the fold, or uncovered
            }
            let mut excluded = exclusion_set(&self.prev.schema, index, fp);
            excluded -= &fp.deletions;
            if excluded.is_empty() {
                continue;
            }
            let offsets: Vec<String> = excluded.iter().take(5).map(|o| o.to_string()).collect();
            self.push(
                format!("indices[{n}]"),
                HistoryError::StaleIndexAfterFold {
                    index: index.name.clone(),
                    fragment: fc.id,
                    dataset_version: index.dataset_version,
                    offsets: offsets.join(", "),
                },
            );
        }
    }

    /// Fragments the commit added (ids the previous version does not hold).
    fn added_fragments(&mut self) {
        let old: BTreeSet<u64> = self.prev.fragments.iter().map(|f| f.id).collect();
        let added: Vec<(usize, &Fragment)> = self
            .cur
            .fragments
            .iter()
            .enumerate()
            .filter(|(_, f)| !old.contains(&f.id))
            .collect();
        if added.is_empty() {
            return;
        }
        if !self.cur.stable_row_ids || !self.prev.stable_row_ids || !self.data {
            let removed = self.prev.fragments.len() + added.len() > self.cur.fragments.len();
            // Without stable row ids a rewrite cannot be told from a delete and an append;
            // without the columns no row is followed.
            self.kinds.insert(if removed {
                CommitKind::Replace
            } else {
                CommitKind::Append
            });
            return;
        }
        let fields: Vec<FieldId> = self.cur.schema.top_level().map(|f| f.id).collect();
        let moved = self.moved_rows(&fields);
        let (prev, prev_snapshot) = (self.prev_read, self.prev);
        let source = self.source;
        let data = self.data;
        let mut old_rows = OldRows::new(|j| {
            let fp = source.fragment(prev, j, data)?;
            FragmentRows::scan(prev_snapshot, fp, &fields)
        });
        let mut next_id = self.prev.next_row_id;
        let mut carried_unchanged = 0usize;
        let mut carried_stamped = false;
        let mut inserted_any = false;
        let mut seen = RoaringTreemap::new();
        for &(i, _) in &added {
            let at = format!("fragments[{i}]");
            let Some(fc) = self.load(false, i) else {
                continue;
            };
            // Which lineage sequences the fragment has values for.
            let present = SEQUENCES.map(|(_, field, _)| values(&fc, field).is_some());
            // The scan holds the fragment and reads each row's lineage from it: a compaction's
            // output fragment may hold millions of rows, so nothing per row is held besides.
            let Some(rows) = FragmentRows::scan(self.cur, fc, &fields) else {
                continue;
            };
            let fc = rows.fragment();
            let mut inserted_here = false;
            let mut carried_here = false;
            let mut stamped_here = false;
            for row in rows.rows() {
                seen.insert(row.row_id);
                if row.row_id >= self.prev.next_row_id {
                    inserted_here = true;
                    inserted_any = true;
                    self.inserted_row(&at, &row, &mut next_id);
                } else if let Some(old) = moved
                    .get(row.row_id)
                    .and_then(|(j, offset)| old_rows.row(j, offset))
                {
                    carried_here = true;
                    match self.carried_row(&at, &row, &old) {
                        Carried::Unchanged => carried_unchanged += 1,
                        Carried::Stamped => {
                            carried_stamped = true;
                            stamped_here = true;
                        }
                        Carried::Wrong => {}
                    }
                }
            }
            for (kind, _, name) in SEQUENCES {
                // Commit-assigned lineage is inline ([LIN-PLACE-1]): every sequence of inserted
                // rows, and the last-updated-at a row-moving update stamps. The row ids and
                // created-at an update carries may be spilled or not ([LIN-PLACE-2]).
                let assigned =
                    inserted_here || (stamped_here && kind == SequenceKind::LastUpdatedAt);
                if assigned && is_spilled(fc, kind) {
                    self.push(
                        format!("{at}.lineage"),
                        HistoryError::Placement {
                            fragment: fc.id,
                            sequence: name,
                            found: "spilled",
                            expected: "inline",
                            requirement: "LIN-PLACE-1",
                        },
                    );
                }
            }
            // Only a fragment of carried, unchanged rows is a compaction's output, which
            // [LIN-PLACE-3] places by the budget; an update's output is placed by the rules above.
            if carried_here && !inserted_here && !stamped_here {
                self.carried_placement(&at, fc, present);
            }
        }
        if self.cur.next_row_id < next_id {
            self.push(
                "next_row_id".into(),
                HistoryError::LineageValue {
                    fragment: added.first().map_or(0, |(_, f)| f.id),
                    offset: 0,
                    sequence: "next_row_id",
                    found: self.cur.next_row_id.to_string(),
                    expected: format!("at least {next_id}"),
                    commit: self.version(),
                    requirement: "LIN-STAMP-1",
                },
            );
        }
        let removed_any = self
            .prev
            .fragments
            .iter()
            .any(|f| !self.cur.fragments.iter().any(|c| c.id == f.id));
        if inserted_any {
            self.kinds.insert(CommitKind::Append);
        }
        if carried_stamped {
            self.kinds.insert(CommitKind::Update);
        }
        if removed_any && !inserted_any && carried_unchanged > 0 {
            self.kinds.insert(CommitKind::Rewrite);
            self.rewrite_complete(&moved, &seen);
        }
    }

    /// Where the old rows a commit may carry into new fragments are: every live row of the
    /// fragments it removed, and the rows it deleted from fragments it kept; by row id. Each
    /// old fragment is read and scanned alone and dropped before the next ([`MovedRows`]).
    /// A commit never lowers `next_row_id` while row ids are stable ([LIN-STAMP-8]): a restore
    /// keeps the newest counter, so the ids the undone versions handed out are never handed out
    /// again.
    fn next_row_id_kept(&mut self) {
        if self.prev.stable_row_ids
            && self.cur.stable_row_ids
            && self.cur.next_row_id < self.prev.next_row_id
        {
            self.push(
                "next_row_id".into(),
                HistoryError::LineageValue {
                    fragment: 0,
                    offset: 0,
                    sequence: "next_row_id",
                    found: self.cur.next_row_id.to_string(),
                    expected: format!("at least {}", self.prev.next_row_id),
                    commit: self.version(),
                    requirement: "LIN-STAMP-8",
                },
            );
        }
    }

    fn moved_rows(&self, fields: &[FieldId]) -> MovedRows {
        let mut out = MovedRows::default();
        for (j, fp) in self.prev.fragments.iter().enumerate() {
            let kept = self.cur.fragments.iter().find(|f| f.id == fp.id);
            if kept.is_some_and(|fc| fc.deletions == fp.deletions) {
                continue;
            }
            let Some(fp) = self.load(true, j) else {
                continue;
            };
            let Some(rows) = FragmentRows::scan(self.prev, fp, fields) else {
                continue;
            };
            for (offset, row_id) in rows.places() {
                let moved = match kept {
                    None => true,
                    Some(fc) => u32::try_from(offset).is_ok_and(|o| fc.deletions.contains(o)),
                };
                if moved {
                    out.add(j, offset, row_id);
                }
            }
        }
        out.finish();
        out
    }

    fn inserted_row(&mut self, at: &str, row: &ScanRow, next_id: &mut u64) {
        let v = self.version();
        let problem = if row.row_id != *next_id {
            Some(("row id", row.row_id, *next_id, "LIN-STAMP-1"))
        } else if row.created_at != v {
            Some(("created-at", row.created_at, v, "LIN-STAMP-2"))
        } else if row.last_updated_at != v {
            Some(("last-updated-at", row.last_updated_at, v, "LIN-STAMP-2"))
        } else {
            None
        };
        *next_id = row.row_id.max(*next_id).saturating_add(1);
        if let Some((sequence, found, expected, requirement)) = problem {
            self.push(
                format!("{at}.lineage"),
                HistoryError::LineageValue {
                    fragment: row.fragment,
                    offset: row.offset,
                    sequence,
                    found: found.to_string(),
                    expected: expected.to_string(),
                    commit: v,
                    requirement,
                },
            );
        }
    }

    /// A row with an old row id in a new fragment: carried unchanged (a rewrite), stamped (a
    /// row-moving update), or wrong (a finding).
    fn carried_row(&mut self, at: &str, row: &ScanRow, old: &ScanRow) -> Carried {
        let v = self.version();
        let lineage = |s: &mut Self, sequence, found: u64, expected: String, requirement| {
            s.push(
                format!("{at}.lineage"),
                HistoryError::LineageValue {
                    fragment: row.fragment,
                    offset: row.offset,
                    sequence,
                    found: found.to_string(),
                    expected,
                    commit: v,
                    requirement,
                },
            );
        };
        if row.created_at != old.created_at {
            lineage(
                self,
                "created-at",
                row.created_at,
                old.created_at.to_string(),
                "LIN-STAMP-5",
            );
            return Carried::Wrong;
        }
        if row.last_updated_at == v && old.last_updated_at != v {
            return Carried::Stamped; // a row-moving update ([LIN-STAMP-4])
        }
        if row.last_updated_at != old.last_updated_at {
            lineage(
                self,
                "last-updated-at",
                row.last_updated_at,
                format!("{} (carried) or {v} (updated)", old.last_updated_at),
                "OVL-RWR-2",
            );
            return Carried::Wrong;
        }
        let changed = row
            .values
            .iter()
            .zip(&old.values)
            .enumerate()
            .find(|(_, (a, b))| !a.identical(b));
        if let Some((k, (a, b))) = changed {
            let field = self.cur.schema.top_level().nth(k).map_or(0, |f| f.id);
            self.push(
                format!("{at}.files"),
                HistoryError::ResolvedCellChanged {
                    what: format!("the row rewrite into fragment {}", row.fragment),
                    row: format!("row id {}", row.row_id),
                    field,
                    found: a.to_string(),
                    before: b.to_string(),
                    requirement: "OVL-RWR-1",
                },
            );
            return Carried::Wrong;
        }
        Carried::Unchanged
    }

    /// A rewrite output's carried sequences: spilled iff the writer's own inline encoding is
    /// over the budget in force ([LIN-PLACE-3], [LIN-ENC-6]). An inline sequence's length is
    /// what the manifest stores, so it is judged exactly. A spilled one left no inline
    /// encoding to measure: with spilling off it is wrong ([LIN-CFG-1]); with spilling on it is
    /// right whenever the writer's encoding was longer than the budget, which bytes cannot
    /// refute, so it is not judged (the writer run judges a writer that declares the
    /// reference's encoding, `write:reference-lineage-encoding`, spec/conformance.md §7).
    /// `present[k]`: whether the fragment has values for the `k`-th of [`SEQUENCES`].
    fn carried_placement(&mut self, at: &str, fc: &Fragment, present: [bool; 3]) {
        let Ok(config) = SpillConfig::from_table_config(&self.cur.config) else {
            return;
        };
        let stored = self.inline_lengths.get(&fc.id).copied().unwrap_or_default();
        for (k, (kind, _, name)) in SEQUENCES.into_iter().enumerate() {
            if !present[k] {
                continue;
            }
            let word = |s: bool| if s { "spilled" } else { "inline" };
            let (found, want, requirement) = match (is_spilled(fc, kind), stored[k]) {
                (true, _) if !config.enabled => (true, false, "LIN-CFG-1"),
                (true, _) => continue,
                (false, Some(len)) => {
                    let want =
                        placement(kind, Origin::CarriedOver, len, &config) == Placement::Spill;
                    if !want {
                        continue;
                    }
                    (false, true, "LIN-PLACE-3")
                }
                (false, None) => continue,
            };
            self.push(
                format!("{at}.lineage"),
                HistoryError::Placement {
                    fragment: fc.id,
                    sequence: name,
                    found: word(found),
                    expected: word(want),
                    requirement,
                },
            );
        }
    }

    /// A row rewrite: every live row of the removed fragments reappears.
    fn rewrite_complete(&mut self, moved: &MovedRows, seen: &RoaringTreemap) {
        let lost: Vec<u64> = moved
            .ids()
            .filter(|id| !seen.contains(*id))
            .take(5)
            .collect();
        if !lost.is_empty() {
            let ids: Vec<String> = lost.iter().map(|i| i.to_string()).collect();
            self.push(
                "fragments".into(),
                HistoryError::RewriteRows {
                    problem: format!(
                        "the row rewrite of version {} lost live rows with row ids {}",
                        self.version(),
                        ids.join(", ")
                    ),
                },
            );
        }
    }
}

/// How a row with an old row id came into a new fragment.
enum Carried {
    Unchanged,
    Stamped,
    Wrong,
}

/// The position in `fc` of the one overlay a merge wrote: `fc`'s list is `fp`'s with one
/// contiguous run (two or more) replaced by a single new overlay.
///
/// "Contiguous" here is in the list's *stored* order: this recognises a merge commit by where
/// its output stands ([OVL-MERGE-4], the merged overlay replaces its inputs in place). It is not
/// the compactor's rule that the inputs be contiguous in *precedence* order ([OVL-MERGE-1],
/// `lance_reference::compaction::merge_overlays`), which refuses a merge before it is written;
/// for a written merge, what that rule protects is judged directly, every resolved cell
/// unchanged ([OVL-MERGE-4], `cells_unchanged`).
fn merged_overlay(fp: &Fragment, fc: &Fragment) -> Option<usize> {
    let new: Vec<usize> = (0..fc.overlays.len())
        .filter(|&k| !fp.overlays.iter().any(|a| same_overlay(a, &fc.overlays[k])))
        .collect();
    let [merged] = new.as_slice() else {
        return None;
    };
    let removed = (fp.overlays.len() + 1).checked_sub(fc.overlays.len())?;
    let (head, tail) = (&fc.overlays[..*merged], &fc.overlays[merged + 1..]);
    let prefix_ok = head.iter().zip(&fp.overlays).all(|(a, b)| a == b);
    let suffix_ok = tail
        .iter()
        .rev()
        .zip(fp.overlays.iter().rev())
        .all(|(a, b)| a == b);
    (removed >= 2
        && prefix_ok
        && suffix_ok
        && head.len() + tail.len() + removed == fp.overlays.len())
    .then_some(*merged)
}

/// Whether `b` is `a` carried forward: equal, except that positions may have been tombstoned
/// in place ([OVL-TOMB-2]), whose columns are then never read, and a column the reader left
/// empty (a field since dropped from the schema, [OVL-TOMB-4]) is not compared.
fn carried_unchanged(a: &Overlay, b: &Overlay) -> bool {
    if a == b {
        return true;
    }
    a.file.path == b.file.path
        && a.committed_version == b.committed_version
        && a.coverage == b.coverage
        && a.file.fields.len() == b.file.fields.len()
        && a.file
            .fields
            .iter()
            .zip(&b.file.fields)
            .enumerate()
            .all(|(p, (x, y))| {
                *y == TOMBSTONE_FIELD_ID
                    || (x == y
                        && match b.file.columns.get(p) {
                            Some(c) if !c.is_empty() => a.file.columns.get(p) == Some(c),
                            _ => true,
                        })
            })
}

fn paths(overlays: &[Overlay]) -> String {
    overlays
        .iter()
        .map(|o| format!("{}@{}", o.file.path, o.committed_version))
        .collect::<Vec<_>>()
        .join(", ")
}

fn present(v: &Option<Cow<'_, [u64]>>) -> String {
    match v {
        Some(v) => format!("{} values", v.len()),
        None => "absent".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::CommitKind;

    #[test]
    fn commit_kinds_order_by_their_words() {
        let words: Vec<&str> = CommitKind::ALL.iter().map(|k| k.as_str()).collect();
        let mut sorted = words.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(words, sorted, "declared in name order, each word once");
        assert!(CommitKind::ALL.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(CommitKind::Merge.to_string(), "merge");
    }
}
