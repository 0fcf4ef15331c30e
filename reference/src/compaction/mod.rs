//! Compaction: bounding the read cost of overlays without changing what readers see.
//!
//! Invariant: **every compaction is invisible to readers**: resolving any cell of the snapshot
//! after the compaction gives the value it had before (the scan is unchanged), and **no
//! compaction leaves an index trusting a value it did not see**. Both matter because a
//! compaction is not a user write: it carries no new data, so any change a reader can observe is
//! a bug, and an overlay it removes may have been the only thing excluding a stale index entry.
//!
//! Three modes, one per module:
//!
//! | mode | module | touches |
//! |---|---|---|
//! | overlay → overlay | [`merge`](mod@merge) | one fragment's overlay list; base, deletions, lineage untouched |
//! | a caller's stated merge | [`stated_merge`](mod@stated_merge) | nothing: the committer's judgement of a merged overlay list handed to it |
//! | overlay → base | [`fold`](mod@fold) | a new base file + tombstones, overlays cleared; a commit |
//! | row rewrite | [`rewrite`](mod@rewrite) | whole fragments replaced by new fragments of their live rows; a commit |
//!
//! Every requested operation the specification forbids (a non-contiguous merge, a fold that
//! would leave an index stale, a malformed request) is a [`CompactionError`] of class
//! [`ErrorClass::Refused`](crate::ErrorClass::Refused). Problems found in the data itself (a value column of the wrong
//! length, an unknown fragment) keep the crate's own [`crate::Error`] variants.

pub mod fold;
#[cfg(test)]
mod generated;
pub mod merge;
pub mod rewrite;
pub mod stated_merge;

pub use fold::{FoldPlan, IndexPolicy, fold};
pub use merge::{merge_overlays, stated_merge};
pub use rewrite::{
    RewriteLineage, RewriteOutput, place_carried_lineage, rewrite_rows, rewrite_rows_into,
};
pub use stated_merge::check_stated_merge;

use crate::model::FieldId;

/// A compaction request the kit refuses to perform.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactionError {
    /// A merge needs at least two overlays.
    #[error("fragment {fragment}: a merge needs at least 2 overlays, {count} given")]
    TooFewInputs {
        /// Fragment id.
        fragment: u64,
        /// How many positions were given.
        count: usize,
    },
    /// A merge names the same overlay twice.
    #[error("fragment {fragment}: overlay position {position} is named more than once")]
    DuplicateInput {
        /// Fragment id.
        fragment: u64,
        /// The repeated position.
        position: usize,
    },
    /// A merge names an overlay position the fragment does not have.
    #[error(
        "fragment {fragment}: overlay position {position} does not exist ({overlays} overlays)"
    )]
    InputOutOfRange {
        /// Fragment id.
        fragment: u64,
        /// The requested position.
        position: usize,
        /// How many overlays the fragment has.
        overlays: usize,
    },
    /// The merge inputs are not contiguous in precedence order: an overlay outside the set ranks
    /// between the oldest and the newest input, and stamping the result with the newest version
    /// would promote the older inputs above it.
    #[error(
        "fragment {fragment}: cannot merge overlays committed at {oldest_version}..={newest_version}: \
         overlay #{intervening_position} ({intervening_path}, committed_version \
         {intervening_version}) ranks between them and is not merged"
    )]
    NonContiguous {
        /// Fragment id.
        fragment: u64,
        /// committed_version of the oldest input.
        oldest_version: u64,
        /// committed_version of the newest input.
        newest_version: u64,
        /// List position of the overlay in between.
        intervening_position: usize,
        /// Its committed_version.
        intervening_version: u64,
        /// Its data file path.
        intervening_path: String,
    },
    /// A merged overlay list a caller states is not a merge of the fragment's overlays: it
    /// replaces fewer than two of them, states more than one new overlay, moves what it carries,
    /// or drops inputs that carry live values.
    #[error("fragment {fragment}: the stated overlay list is not a merge: {problem}")]
    NotAMerge {
        /// Fragment id.
        fragment: u64,
        /// What is wrong with the list.
        problem: String,
    },
    /// A merged overlay a caller states does not carry the newest committed_version of the
    /// overlays it replaces.
    #[error(
        "fragment {fragment}: merged overlay {path} states committed_version {stated}; the newest \
         overlay it replaces was committed at {newest}"
    )]
    MergedVersionMismatch {
        /// Fragment id.
        fragment: u64,
        /// The merged overlay's data file path.
        path: String,
        /// Its stated committed_version.
        stated: u64,
        /// The newest committed_version among the overlays it replaces.
        newest: u64,
    },
    /// A fold was asked of a fragment that has no overlays.
    #[error("fragment {fragment} has no overlays to fold")]
    NothingToFold {
        /// Fragment id.
        fragment: u64,
    },
    /// A fold would remove the overlay that keeps an index from serving a stale value, and the
    /// plan says neither to rebuild the index nor to drop the fragment from it.
    #[error(
        "fold of fragment {fragment}: index {index} (dataset_version {dataset_version}) is stale for \
         field {field} (overlay committed_version {committed_version}); the plan must rebuild it or \
         drop the fragment"
    )]
    StaleIndex {
        /// Index name.
        index: String,
        /// Fragment id.
        fragment: u64,
        /// The folded field the index relates to.
        field: FieldId,
        /// The newest committed_version among the folded overlays carrying `field`.
        committed_version: u64,
        /// The index's dataset_version.
        dataset_version: u64,
    },
    /// A fold plan names an index the snapshot does not have.
    #[error("fold plan names index {index}, which does not exist")]
    UnknownIndex {
        /// The name in the plan.
        index: String,
    },
    /// A commit's version is not newer than the snapshot it starts from.
    #[error("new version {new_version} is not newer than the snapshot's version {version}")]
    VersionNotNewer {
        /// The snapshot's version.
        version: u64,
        /// The requested version.
        new_version: u64,
    },
    /// The path of the file to write is already used by a file of the snapshot.
    #[error("path {path} is already used by a data or overlay file")]
    PathInUse {
        /// The requested path.
        path: String,
    },
    /// A row rewrite needs at least one fragment.
    #[error("a row rewrite needs at least one fragment")]
    NoFragments,
    /// A row rewrite names the same fragment twice.
    #[error("fragment {fragment} is named more than once")]
    DuplicateFragment {
        /// The repeated fragment id.
        fragment: u64,
    },
    /// A row rewrite's inputs are not adjacent in the fragment list, so one new fragment could
    /// not keep the scan's row order.
    #[error("fragment {fragment} lies between the rewritten fragments but is not rewritten")]
    NotAdjacent {
        /// The fragment in between.
        fragment: u64,
    },
    /// The new fragment id is already used.
    #[error("fragment id {fragment} is already used")]
    FragmentIdInUse {
        /// The requested id.
        fragment: u64,
    },
    /// A row rewrite's output fragments do not hold exactly the live rows of its inputs, or one
    /// of several outputs would be empty.
    #[error(
        "the output fragments hold {outputs} rows (one of them {smallest}); the inputs have {live} live rows"
    )]
    OutputRowsMismatch {
        /// Rows the outputs were asked to hold, summed.
        outputs: u64,
        /// The smallest output.
        smallest: u64,
        /// Live rows of the inputs.
        live: u64,
    },
}

crate::error_codes! {CompactionError {
    CompactionError::TooFewInputs { .. } => code("too_few_inputs", Refused, "A merge needs at least two overlays"),
    CompactionError::DuplicateInput { .. } => code("duplicate_input", Refused, "A merge names the same overlay twice"),
    CompactionError::InputOutOfRange { .. } => code("input_out_of_range", Refused, "A merge names an overlay position the fragment does not have"),
    CompactionError::NonContiguous { .. } => code("non_contiguous_merge", Refused, "The merge inputs are not contiguous in precedence order"),
    CompactionError::NotAMerge { .. } => code("not_a_merge", Refused, "A merged overlay list a caller states is not a merge of the fragment's overlays"),
    CompactionError::MergedVersionMismatch { .. } => code("merged_version_mismatch", Refused, "A merged overlay a caller states does not carry the newest committed_version of the overlays it replaces"),
    CompactionError::NothingToFold { .. } => code("nothing_to_fold", Refused, "A fold was asked of a fragment that has no overlays"),
    CompactionError::StaleIndex { .. } => code("stale_index", Refused, "A fold would remove the overlay that keeps an index from serving a stale value, and the plan says neither to rebuild the index nor to drop the fragment from it"),
    CompactionError::UnknownIndex { .. } => code("fold_plan_unknown_index", Refused, "A fold plan names an index the snapshot does not have"),
    CompactionError::VersionNotNewer { .. } => code("version_not_newer", Refused, "A commit's version is not newer than the snapshot it starts from"),
    CompactionError::PathInUse { .. } => code("path_in_use", Refused, "The path of the file to write is already used by a file of the snapshot"),
    CompactionError::NoFragments => code("no_fragments", Refused, "A row rewrite needs at least one fragment"),
    CompactionError::DuplicateFragment { .. } => code("duplicate_fragment", Refused, "A row rewrite names the same fragment twice"),
    CompactionError::NotAdjacent { .. } => code("not_adjacent", Refused, "A row rewrite's inputs are not adjacent in the fragment list, so one new fragment could not keep the scan's row order"),
    CompactionError::FragmentIdInUse { .. } => code("fragment_id_in_use", Refused, "The new fragment id is already used"),
    CompactionError::OutputRowsMismatch { .. } => code("output_rows_mismatch", Refused, "A row rewrite's output fragments do not hold exactly the live rows of its inputs, or one of several outputs would be empty"),
}}

/// Whether any base, lineage or overlay file of `fragments` uses `path`.
fn path_in_use<'a>(
    mut fragments: impl Iterator<Item = &'a crate::model::Fragment>,
    path: &str,
) -> bool {
    fragments.any(|f| {
        f.files.iter().any(|d| d.path == path) || f.overlays.iter().any(|o| o.file.path == path)
    })
}

/// The live user fields an overlay carries that hold cell values: non-negative ids still in the
/// schema, structs excluded (a struct is a container; its validity comes from the base).
fn carried_value_fields<'a>(
    schema: &'a crate::model::Schema,
    overlay: &'a crate::model::Overlay,
) -> impl Iterator<Item = FieldId> + 'a {
    overlay.file.fields.iter().copied().filter(move |&f| {
        f >= 0
            && schema
                .field(f)
                .is_some_and(|sf| sf.data_type != crate::model::DataType::Struct)
    })
}

/// Removes `removed` fragments from an index's coverage. An absent bitmap covers no fragment
/// (OVL-IDX-6), so there is nothing to remove from it. Entries of removed fragments are dropped
/// with them.
fn uncover(index: &mut crate::model::Index, removed: &[u64]) {
    if let Some(bitmap) = index.fragment_bitmap.as_mut() {
        for &id in removed {
            if let Ok(id) = u32::try_from(id) {
                bitmap.remove(id);
            }
        }
    }
    index.entries.retain(|e| !removed.contains(&e.fragment));
}

/// Refuses a compaction commit whose version is not newer than the snapshot it rewrites.
fn check_newer(snapshot: &crate::model::Snapshot, new_version: u64) -> crate::Result<()> {
    if new_version <= snapshot.version {
        return Err(CompactionError::VersionNotNewer {
            version: snapshot.version,
            new_version,
        }
        .into());
    }
    Ok(())
}
