//! Placement: whether a lineage sequence stays inline in the manifest or spills to a hidden
//! `uint64` column, and how a compaction lays out the spilled columns over its output fragments.
//!
//! Invariant: a value a commit assigns is always placed inline, because a commit retry must be
//! able to rewrite it (appended row ids, the created-at of inserted rows, every stamped
//! last-updated-at). Only a value carried over from existing rows may spill, and only when the
//! table opted in (`lance.row_lineage.spill` = `true`, case-insensitive) and the sequence's
//! encoded inline length is strictly greater than the budget
//! (`lance.row_lineage.inline_max_bytes`, default [`DEFAULT_INLINE_MAX_BYTES`]).
//!
//! Config decisions: with spilling off the budget key is not read at all. With spilling on, a
//! budget that does not parse as a `usize` (decimal digits, no sign, no spaces, no unit) is an
//! [`LineageError::BadConfig`] error, the way Lance 14 refuses it, rather than a silent fallback
//! to the default: a typo would otherwise change where lineage lives.
//!
//! Compaction ([`plan_compaction`], Lance 14 `plan_row_lineage_spill`): for each kind, if its
//! sequence is over budget in every output fragment or in none, the plan is
//! [`CompactionPlacement::InFile`]: the over-budget kinds become extra columns of every output's
//! main data file, in the order `-3, -4, -5`. If any kind is over budget in some outputs but
//! not others, the plan is [`CompactionPlacement::PerFragment`]: each output fragment gets its
//! own lineage-only file holding just its over-budget sequences (no file when none is over).

use std::collections::BTreeMap;

use super::LineageError;
use crate::model::{CREATED_AT_FIELD_ID, FieldId, LAST_UPDATED_AT_FIELD_ID, ROW_ID_FIELD_ID};

/// Table config key that opts a table into spilling.
pub const SPILL_KEY: &str = "lance.row_lineage.spill";
/// Table config key overriding the inline budget, in bytes.
pub const INLINE_MAX_BYTES_KEY: &str = "lance.row_lineage.inline_max_bytes";
/// The default inline budget: 200 KiB.
pub const DEFAULT_INLINE_MAX_BYTES: usize = 200 * 1024;

/// One of a fragment's three lineage sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SequenceKind {
    /// Stable row ids (`_rowid`, field -3).
    RowIds,
    /// Created-at versions (`_row_created_at_version`, field -4).
    CreatedAt,
    /// Last-updated-at versions (`_row_last_updated_at_version`, field -5).
    LastUpdatedAt,
}

impl SequenceKind {
    /// The three kinds in hidden-column order.
    pub const ALL: [SequenceKind; 3] = [
        SequenceKind::RowIds,
        SequenceKind::CreatedAt,
        SequenceKind::LastUpdatedAt,
    ];

    /// The reserved field id of the kind's hidden column.
    pub fn field_id(self) -> FieldId {
        match self {
            SequenceKind::RowIds => ROW_ID_FIELD_ID,
            SequenceKind::CreatedAt => CREATED_AT_FIELD_ID,
            SequenceKind::LastUpdatedAt => LAST_UPDATED_AT_FIELD_ID,
        }
    }

    /// The hidden column's name.
    pub fn column_name(self) -> &'static str {
        match self {
            SequenceKind::RowIds => "_rowid",
            SequenceKind::CreatedAt => "_row_created_at_version",
            SequenceKind::LastUpdatedAt => "_row_last_updated_at_version",
        }
    }
}

/// Where a sequence's values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Assigned by the commit that writes them (may change on a retry).
    CommitAssigned,
    /// Carried over from existing rows (fixed before the commit).
    CarriedOver,
}

/// Where a sequence is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// In the manifest (`inline_*` arm).
    Inline,
    /// In a hidden column of a data file (`column_*` arm).
    Spill,
}

/// The table's spill settings, read from its config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillConfig {
    /// `lance.row_lineage.spill` is `true` (case-insensitive).
    pub enabled: bool,
    /// The inline budget in bytes.
    pub inline_max_bytes: usize,
}

impl Default for SpillConfig {
    fn default() -> Self {
        SpillConfig {
            enabled: false,
            inline_max_bytes: DEFAULT_INLINE_MAX_BYTES,
        }
    }
}

impl SpillConfig {
    /// Reads the two keys from a table config (see the module docs for an unparsable budget).
    pub fn from_table_config(
        config: &BTreeMap<String, String>,
    ) -> Result<SpillConfig, LineageError> {
        let enabled = config
            .get(SPILL_KEY)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if !enabled {
            return Ok(SpillConfig::default());
        }
        let inline_max_bytes = match config.get(INLINE_MAX_BYTES_KEY) {
            None => DEFAULT_INLINE_MAX_BYTES,
            Some(value) => value
                .parse::<usize>()
                .map_err(|e| LineageError::BadConfig {
                    key: INLINE_MAX_BYTES_KEY,
                    value: value.clone(),
                    problem: format!("not a byte count: {e}"),
                })?,
        };
        Ok(SpillConfig {
            enabled,
            inline_max_bytes,
        })
    }

    /// Whether an encoded sequence of `encoded_len` bytes is over the budget (strictly greater),
    /// with spilling on. Always false with spilling off.
    pub fn over_budget(&self, encoded_len: usize) -> bool {
        self.enabled && encoded_len > self.inline_max_bytes
    }
}

/// The placement rule for one sequence. The kind does not change the rule; it is taken so
/// callers state which sequence they place (a last-updated-at is commit-assigned everywhere
/// except compaction, which carries it over).
pub fn placement(
    _kind: SequenceKind,
    origin: Origin,
    encoded_len: usize,
    config: &SpillConfig,
) -> Placement {
    match origin {
        Origin::CarriedOver if config.over_budget(encoded_len) => Placement::Spill,
        _ => Placement::Inline,
    }
}

/// The encoded inline lengths of one output fragment's three sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EncodedLengths {
    /// `RowIdSequence` bytes.
    pub row_ids: usize,
    /// Created-at `RowDatasetVersionSequence` bytes.
    pub created_at: usize,
    /// Last-updated-at `RowDatasetVersionSequence` bytes.
    pub last_updated_at: usize,
}

impl EncodedLengths {
    /// The length for one kind.
    pub fn get(&self, kind: SequenceKind) -> usize {
        match kind {
            SequenceKind::RowIds => self.row_ids,
            SequenceKind::CreatedAt => self.created_at,
            SequenceKind::LastUpdatedAt => self.last_updated_at,
        }
    }
}

/// How a compaction places the lineage of its output fragments (plain data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactionPlacement {
    /// These kinds (in column order; possibly none) are columns appended to every output
    /// fragment's main data file; every other kind stays inline in every output.
    InFile {
        /// The spilled kinds.
        spilled: Vec<SequenceKind>,
    },
    /// Each output fragment, in order, spills just the listed kinds (in column order) to its
    /// own lineage-only data file; an empty list means no lineage file for that fragment.
    PerFragment {
        /// Spilled kinds per output fragment.
        spilled: Vec<Vec<SequenceKind>>,
    },
}

impl CompactionPlacement {
    /// The `fields` of the data file holding output fragment `i`'s hidden columns: for
    /// `InFile`, the reserved ids appended after the user fields; for `PerFragment`, the whole
    /// field list of the lineage-only file. Empty when nothing spills there.
    pub fn lineage_fields(&self, i: usize) -> Vec<FieldId> {
        let kinds = match self {
            CompactionPlacement::InFile { spilled } => spilled.as_slice(),
            CompactionPlacement::PerFragment { spilled } => {
                spilled.get(i).map_or(&[][..], Vec::as_slice)
            }
        };
        kinds.iter().map(|k| k.field_id()).collect()
    }
}

/// The compaction placement plan for outputs with the given encoded lengths (all carried over).
pub fn plan_compaction(config: &SpillConfig, outputs: &[EncodedLengths]) -> CompactionPlacement {
    let over = |o: &EncodedLengths, k: SequenceKind| config.over_budget(o.get(k));
    let uniform = SequenceKind::ALL.iter().all(|&k| {
        let n = outputs.iter().filter(|o| over(o, k)).count();
        n == 0 || n == outputs.len()
    });
    if uniform {
        let spilled = SequenceKind::ALL
            .into_iter()
            .filter(|&k| !outputs.is_empty() && outputs.iter().all(|o| over(o, k)))
            .collect();
        CompactionPlacement::InFile { spilled }
    } else {
        let spilled = outputs
            .iter()
            .map(|o| {
                SequenceKind::ALL
                    .into_iter()
                    .filter(|&k| over(o, k))
                    .collect()
            })
            .collect();
        CompactionPlacement::PerFragment { spilled }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn spill_needs_opt_in_carried_over_and_strictly_over_budget() {
        // covers: LIN-PLACE-1, LIN-PLACE-2, LIN-PLACE-4, LIN-CFG-1
        let on = SpillConfig::from_table_config(&config(&[
            (SPILL_KEY, "TRUE"),
            (INLINE_MAX_BYTES_KEY, "100"),
        ]))
        .unwrap();
        assert_eq!(
            on,
            SpillConfig {
                enabled: true,
                inline_max_bytes: 100
            }
        );
        let p = |origin, len| placement(SequenceKind::RowIds, origin, len, &on);
        assert_eq!(p(Origin::CarriedOver, 99), Placement::Inline);
        assert_eq!(p(Origin::CarriedOver, 100), Placement::Inline);
        assert_eq!(p(Origin::CarriedOver, 101), Placement::Spill);
        assert_eq!(p(Origin::CommitAssigned, 101), Placement::Inline);
        assert_eq!(p(Origin::CommitAssigned, usize::MAX), Placement::Inline);
    }

    #[test]
    fn default_budget_boundary() {
        // covers: LIN-CFG-2, LIN-PLACE-4
        let on = SpillConfig::from_table_config(&config(&[(SPILL_KEY, "true")])).unwrap();
        assert_eq!(on.inline_max_bytes, 204_800);
        for (len, expected) in [
            (204_799, Placement::Inline),
            (204_800, Placement::Inline),
            (204_801, Placement::Spill),
        ] {
            assert_eq!(
                placement(SequenceKind::CreatedAt, Origin::CarriedOver, len, &on),
                expected
            );
        }
    }

    #[test]
    fn without_opt_in_nothing_spills_and_the_budget_is_not_read() {
        // covers: LIN-CFG-1
        for v in ["false", "1", "yes", " true", ""] {
            let c = SpillConfig::from_table_config(&config(&[
                (SPILL_KEY, v),
                (INLINE_MAX_BYTES_KEY, "junk"),
            ]))
            .unwrap();
            assert!(!c.enabled, "{v:?}");
            assert_eq!(
                placement(SequenceKind::RowIds, Origin::CarriedOver, usize::MAX, &c),
                Placement::Inline
            );
        }
    }

    #[test]
    fn unparsable_budget_is_a_config_error() {
        // covers: LIN-CFG-3
        for v in ["-1", "1e3", "200KiB", " 5", "18446744073709551616"] {
            let e = SpillConfig::from_table_config(&config(&[
                (SPILL_KEY, "true"),
                (INLINE_MAX_BYTES_KEY, v),
            ]))
            .unwrap_err();
            assert_eq!(
                (e.code(), e.class()),
                ("lineage_bad_config", crate::ErrorClass::Invalid),
                "{v:?}"
            );
        }
        let c = SpillConfig::from_table_config(&config(&[
            (SPILL_KEY, "true"),
            (INLINE_MAX_BYTES_KEY, "0"),
        ]))
        .unwrap();
        assert_eq!(
            placement(SequenceKind::RowIds, Origin::CarriedOver, 1, &c),
            Placement::Spill
        );
    }

    #[test]
    fn compaction_plan_in_file_when_every_kind_agrees() {
        // covers: LIN-PLACE-3, LIN-COL-5
        let c = SpillConfig {
            enabled: true,
            inline_max_bytes: 10,
        };
        let big = EncodedLengths {
            row_ids: 11,
            created_at: 5,
            last_updated_at: 11,
        };
        let plan = plan_compaction(&c, &[big, big]);
        assert_eq!(
            plan,
            CompactionPlacement::InFile {
                spilled: vec![SequenceKind::RowIds, SequenceKind::LastUpdatedAt]
            }
        );
        assert_eq!(plan.lineage_fields(1), vec![-3, -5]);
        let all = EncodedLengths {
            row_ids: 11,
            created_at: 11,
            last_updated_at: 11,
        };
        assert_eq!(
            plan_compaction(&c, &[all]).lineage_fields(0),
            vec![-3, -4, -5]
        );
        assert_eq!(
            plan_compaction(&c, &[]),
            CompactionPlacement::InFile { spilled: vec![] }
        );
        let off = SpillConfig::default();
        assert_eq!(
            plan_compaction(&off, &[all]),
            CompactionPlacement::InFile { spilled: vec![] }
        );
    }

    #[test]
    fn compaction_plan_per_fragment_when_a_kind_disagrees() {
        // covers: LIN-PLACE-3, LIN-COL-5
        let c = SpillConfig {
            enabled: true,
            inline_max_bytes: 10,
        };
        let a = EncodedLengths {
            row_ids: 11,
            created_at: 11,
            last_updated_at: 3,
        };
        let b = EncodedLengths {
            row_ids: 11,
            created_at: 10,
            last_updated_at: 3,
        };
        let small = EncodedLengths::default();
        let plan = plan_compaction(&c, &[a, b, small]);
        assert_eq!(
            plan,
            CompactionPlacement::PerFragment {
                spilled: vec![
                    vec![SequenceKind::RowIds, SequenceKind::CreatedAt],
                    vec![SequenceKind::RowIds],
                    vec![]
                ]
            }
        );
        assert_eq!(plan.lineage_fields(0), vec![-3, -4]);
        assert!(plan.lineage_fields(2).is_empty());
        assert!(plan.lineage_fields(9).is_empty());
    }
}
