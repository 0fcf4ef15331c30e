//! A finding: one requirement a dataset's bytes or history break, at one version.
//!
//! Invariant: every finding names the version it is about, the requirement ids it breaks, a
//! class and a stable code from the kit's error vocabulary (`spec/error-codes.md`), the file
//! and the field, and a message. A reader refusal keeps the reader's own class and code (the
//! error [`lance_reference_io::Dataset::read_version`] raised); a rule only a writer or a
//! commit can break, which no reader checks, is a [`HistoryError`] with a code of its own.

use lance_reference::ErrorClass;
use lance_reference::error::CodedError;
use lance_reference_io::DatasetError;
use lance_reference_io::index_file::IndexFileError;

use super::pinned::PINNED;

/// One broken requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The version judged (for a commit check: the commit's version); 0 when the dataset
    /// directory itself cannot be listed.
    pub version: u64,
    /// The requirement ids the finding breaks (may be empty for a code no case pins).
    pub requirements: Vec<String>,
    /// The error class.
    pub class: ErrorClass,
    /// The stable code.
    pub code: &'static str,
    /// The file (relative to the dataset root) the finding is about.
    pub file: String,
    /// The manifest field (or `fragments[i]`-style location), when there is one.
    pub field: String,
    /// What is wrong, in words.
    pub message: String,
}

impl Finding {
    /// A refusal by the reference reader: class and code of `error`, and the requirement ids
    /// the corpus pins to that code.
    pub fn refusal(version: u64, file: &str, error: &dyn CodedError) -> Finding {
        Finding {
            version,
            requirements: pinned_requirements(error.code()),
            class: error.class(),
            code: error.code(),
            file: file.to_string(),
            field: String::new(),
            message: error.to_string(),
        }
    }

    /// A refusal by the reference reader of a version: class and code of `error`, and the
    /// requirement ids that refusal is about ([`refusal_requirements`]).
    pub fn read_refusal(version: u64, file: &str, error: &DatasetError) -> Finding {
        Finding {
            requirements: refusal_requirements(error),
            ..Finding::refusal(version, file, error)
        }
    }

    /// Whether this refusal is a limit of the kit (a feature the reference does not implement:
    /// a data file version or encoding it does not decode, an index it does not read) rather than
    /// a requirement the dataset breaks. Such a refusal means the version could not be judged:
    /// it is reported apart from the findings and makes `validate` exit 2 (`spec/validate.md`).
    pub fn is_kit_limit(&self) -> bool {
        self.class == ErrorClass::UnsupportedFeature
            && matches!(
                self.code,
                "unsupported"
                    | "index_unsupported"
                    | "unsupported_file_version"
                    | "unsupported_encoding"
                    | "unsupported_arrow_feature"
                    | "unknown_deletion_file_type"
                    | "row_limit_exceeded"
                    | "file_too_large"
            )
    }

    /// A writer-side refusal of a readable version (`error` from a reference writer check),
    /// breaking `requirements` besides those the corpus pins to its code.
    pub fn writer(
        version: u64,
        file: &str,
        error: &dyn CodedError,
        requirements: &[&str],
    ) -> Finding {
        let mut f = Finding::refusal(version, file, error);
        for r in requirements {
            if !f.requirements.iter().any(|x| x == r) {
                f.requirements.push((*r).to_string());
            }
        }
        f
    }

    /// A rule `error` breaks at `version`, in `file`'s `field`.
    pub fn rule(version: u64, file: &str, field: String, error: HistoryError) -> Finding {
        Finding {
            version,
            requirements: error
                .requirements()
                .iter()
                .map(|r| (*r).to_string())
                .collect(),
            class: error.class(),
            code: error.code(),
            file: file.to_string(),
            field,
            message: error.to_string(),
        }
    }
}

/// The requirement ids `spec/error-codes.md` lists for `code` (those of the corpus cases that
/// pin it, from its generated copy `validate/pinned.rs`); empty when no case pins it.
pub fn pinned_requirements(code: &str) -> Vec<String> {
    PINNED
        .binary_search_by(|(c, _)| (*c).cmp(code))
        .map(|i| PINNED[i].1.iter().map(|r| (*r).to_string()).collect())
        .unwrap_or_default()
}

/// The requirement ids a reader refusal is about, from the error variant: an `unsupported`
/// refusal names the rule of the field it is about (a data file version [DS-FILE-3], a
/// `base_id` [DS-PATH-4], `covering_fields` [IDX-READ-8], an external lineage arm
/// [LIN-EXT-1]; none for a feature no requirement names, such as an index kind or a logical
/// type the kit does not implement), an index file refusal names the [IDX-READ-1]…[IDX-READ-4]
/// or [IDX-READ-9] rule it applies; any other refusal, the ids the corpus pins to its code.
pub fn refusal_requirements(error: &DatasetError) -> Vec<String> {
    let ids = |ids: &[&str]| ids.iter().map(|r| (*r).to_string()).collect();
    match error {
        DatasetError::Unsupported { field, .. } => {
            let last = field.rsplit('.').next().unwrap_or(field);
            let last = last.split('[').next().unwrap_or(last);
            match last {
                "file_major_version" | "file_minor_version" => ids(&["DS-FILE-3"]),
                "base_id" => ids(&["DS-PATH-4"]),
                "covering_fields" => ids(&["IDX-READ-8"]),
                l if l.starts_with("external_") => ids(&["LIN-EXT-1"]),
                _ => Vec::new(),
            }
        }
        DatasetError::FileTooLarge { .. } => ids(&["DS-FILE-2"]),
        DatasetError::IndexFile { error, .. } => match error.as_ref() {
            IndexFileError::SizeMismatch { .. } | IndexFileError::DataFile { .. } => {
                ids(&["IDX-READ-1"])
            }
            IndexFileError::Layout { .. }
            | IndexFileError::LookupMismatch { .. }
            | IndexFileError::Unsorted { .. }
            | IndexFileError::DuplicateId { .. } => ids(&["IDX-READ-2"]),
            IndexFileError::MissingEntry { remapped: true, .. }
            | IndexFileError::StaleEntry { remapped: true, .. } => ids(&["IDX-READ-9"]),
            IndexFileError::UnknownRow { .. }
            | IndexFileError::MissingEntry { .. }
            | IndexFileError::StaleEntry { .. } => ids(&["IDX-READ-3"]),
            IndexFileError::CoverageWithoutEntries { .. } => ids(&["IDX-READ-4"]),
            IndexFileError::Unsupported { .. } => Vec::new(),
            other => pinned_requirements(other.code()),
        },
        other => pinned_requirements(other.code()),
    }
}

/// A rule a writer or a commit must keep, which a reader of one version does not check: found
/// by `validate` from one version's bytes or from a commit against the version before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// A fragment's overlays are not stored in non-decreasing `committed_version` order.
    #[error(
        "fragment {fragment}: overlay {position} has committed_version {version}, older than {previous} before it"
    )]
    OverlayOrder {
        /// Fragment id.
        fragment: u64,
        /// Position in the overlay list.
        position: usize,
        /// Its committed_version.
        version: u64,
        /// The committed_version of the overlay before it.
        previous: u64,
    },
    /// An overlay lists a negative field id other than the tombstone `-2`.
    #[error("fragment {fragment}: overlay {path} lists field id {field} at position {position}")]
    ReservedOverlayField {
        /// Fragment id.
        fragment: u64,
        /// The overlay's data file.
        path: String,
        /// Position in `fields`.
        position: usize,
        /// The field id.
        field: i32,
    },
    /// An overlay added by a commit does not carry that commit's version.
    #[error(
        "fragment {fragment}: overlay {path} was added by the commit of version {commit} but has committed_version {version}"
    )]
    AddedOverlayVersion {
        /// Fragment id.
        fragment: u64,
        /// The overlay's data file.
        path: String,
        /// The commit's version.
        commit: u64,
        /// Its committed_version.
        version: u64,
    },
    /// A commit changed, removed or reordered overlays it did not compact, or inserted an
    /// overlay before existing ones.
    #[error("fragment {fragment}: {problem}")]
    CarriedOverlayChanged {
        /// Fragment id.
        fragment: u64,
        /// What changed.
        problem: String,
    },
    /// A lineage value differs from what the commit had to leave or assign.
    #[error(
        "fragment {fragment} offset {offset}: {sequence} is {found}, the commit of version {commit} must leave {expected}"
    )]
    LineageValue {
        /// Fragment id.
        fragment: u64,
        /// Physical offset.
        offset: u64,
        /// Which sequence.
        sequence: &'static str,
        /// The stored value.
        found: String,
        /// The value the rule demands.
        expected: String,
        /// The commit's version.
        commit: u64,
        /// The requirement the value breaks.
        requirement: &'static str,
    },
    /// A compaction changed a resolved cell.
    #[error(
        "{what}: row {row} field {field} resolves to {found}, it resolved to {before} before the compaction"
    )]
    ResolvedCellChanged {
        /// The compaction and fragment.
        what: String,
        /// The row (fragment:offset, or row id).
        row: String,
        /// Field id.
        field: i32,
        /// After.
        found: String,
        /// Before.
        before: String,
        /// Which compaction mode's requirement.
        requirement: &'static str,
    },
    /// A merged overlay does not carry the maximum committed_version of its inputs.
    #[error(
        "fragment {fragment}: merged overlay {path} has committed_version {version}, its inputs' maximum is {max}"
    )]
    MergedVersion {
        /// Fragment id.
        fragment: u64,
        /// The merged overlay's data file.
        path: String,
        /// Its committed_version.
        version: u64,
        /// The maximum over the inputs.
        max: u64,
    },
    /// A compaction changed something it must leave alone (physical rows, deletions, base files).
    #[error("fragment {fragment}: the {mode} changed {what}")]
    CompactionTouched {
        /// Fragment id.
        fragment: u64,
        /// `merge` or `fold`.
        mode: &'static str,
        /// What changed.
        what: &'static str,
        /// The requirement broken.
        requirement: &'static str,
    },
    /// A fold left an index covering the folded fragment that the folded overlays were
    /// excluding rows from, neither rebuilt nor uncovered.
    #[error(
        "index {index}: still covers folded fragment {fragment} at dataset_version {dataset_version}, but the folded overlays excluded offsets {offsets} from it"
    )]
    StaleIndexAfterFold {
        /// Index name.
        index: String,
        /// Fragment id.
        fragment: u64,
        /// The index's dataset_version.
        dataset_version: u64,
        /// A few of the excluded offsets.
        offsets: String,
    },
    /// A lineage sequence is placed where the rule does not put it.
    #[error("fragment {fragment}: {sequence} is {found}, the rule places it {expected}")]
    Placement {
        /// Fragment id.
        fragment: u64,
        /// Which sequence.
        sequence: &'static str,
        /// `inline` or `spilled`.
        found: &'static str,
        /// `inline` or `spilled`.
        expected: &'static str,
        /// The requirement broken.
        requirement: &'static str,
    },
    /// Live rows of removed fragments do not reappear after a row rewrite (or vice versa).
    #[error("{problem}")]
    RewriteRows {
        /// What differs.
        problem: String,
    },
}

lance_reference::error_codes! {HistoryError {
    HistoryError::OverlayOrder { .. } => code("overlay_order", Invalid, "A fragment's overlays are not stored in non-decreasing committed_version order"),
    HistoryError::ReservedOverlayField { .. } => code("reserved_overlay_field", Invalid, "An overlay lists a negative field id other than the tombstone -2"),
    HistoryError::AddedOverlayVersion { .. } => code("added_overlay_version", Invalid, "An overlay added by a commit does not carry that commit's version"),
    HistoryError::CarriedOverlayChanged { .. } => code("carried_overlay_changed", Invalid, "A commit changed, removed, reordered or inserted before overlays it did not compact"),
    HistoryError::LineageValue { .. } => code("lineage_value", Invalid, "A lineage value differs from what the commit had to keep or assign"),
    HistoryError::ResolvedCellChanged { .. } => code("resolved_cell_changed", Invalid, "A compaction (merge, fold, rewrite) changed a resolved cell"),
    HistoryError::MergedVersion { .. } => code("merged_version", Invalid, "A merged overlay does not carry its inputs' maximum committed_version"),
    HistoryError::CompactionTouched { .. } => code("compaction_touched", Invalid, "A merge or fold changed physical rows, deletions or base files it must leave alone"),
    HistoryError::StaleIndexAfterFold { .. } => code("stale_index_after_fold", Invalid, "A fold left an index covering the folded fragment stale"),
    HistoryError::Placement { .. } => code("lineage_placement", Invalid, "A lineage sequence is inline where the rule spills it, or spilled where it must stay inline"),
    HistoryError::RewriteRows { .. } => code("rewrite_rows", Invalid, "A row rewrite lost, duplicated or invented rows"),
}}

impl HistoryError {
    /// The requirement ids the finding breaks.
    pub fn requirements(&self) -> Vec<&'static str> {
        match self {
            HistoryError::OverlayOrder { .. } => vec!["OVL-PREC-5"],
            HistoryError::ReservedOverlayField { .. } => vec!["OVL-TOMB-6"],
            HistoryError::AddedOverlayVersion { .. } => vec!["OVL-VER-1", "OVL-VER-2"],
            HistoryError::CarriedOverlayChanged { .. } => {
                vec!["OVL-VER-3", "OVL-VER-4", "OVL-COV-2"]
            }
            HistoryError::LineageValue { requirement, .. }
            | HistoryError::ResolvedCellChanged { requirement, .. }
            | HistoryError::CompactionTouched { requirement, .. }
            | HistoryError::Placement { requirement, .. } => vec![*requirement],
            HistoryError::MergedVersion { .. } => vec!["OVL-MERGE-3"],
            HistoryError::StaleIndexAfterFold { .. } => vec!["OVL-FOLD-5"],
            HistoryError::RewriteRows { .. } => vec!["OVL-RWR-1"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_requirements_of_its_variant() {
        // covers: DS-FILE-3, LIN-EXT-1
        let unsupported = |field: &str| DatasetError::Unsupported {
            file: "m".into(),
            field: field.into(),
            feature: "f".into(),
        };
        // The code `unsupported` is pinned to five ids; each refusal names its own.
        assert!(pinned_requirements("unsupported").len() > 1);
        let of = |field: &str| refusal_requirements(&unsupported(field));
        assert_eq!(
            of("fragments[0].files[0].file_major_version"),
            ["DS-FILE-3"]
        );
        assert_eq!(of("fragments[2].deletion_file.base_id"), ["DS-PATH-4"]);
        assert_eq!(of("indices[0].covering_fields"), ["IDX-READ-8"]);
        assert_eq!(
            of("fragments[1].external_last_updated_at_versions"),
            ["LIN-EXT-1"]
        );
        assert!(of("indices[1].index_details.type_url").is_empty());
        let coverage = DatasetError::IndexFile {
            field: "indices[0]".into(),
            error: Box::new(IndexFileError::CoverageWithoutEntries {
                index: "i".into(),
                fragment: 1,
                dataset_version: 1,
            }),
        };
        assert_eq!(refusal_requirements(&coverage), ["IDX-READ-4"]);
    }

    #[test]
    fn pinned_requirements_come_from_the_table() {
        assert_eq!(
            pinned_requirements("manifest_bad_magic"),
            vec!["DS-FRAME-1".to_string()]
        );
        assert!(pinned_requirements("no_such_code").is_empty());
    }
}
