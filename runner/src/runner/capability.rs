//! Capabilities: the words a reader declares in the handshake, and what each check needs.
//!
//! Invariant: a check is sent to a reader only when every capability it needs is
//! declared; otherwise it is `unsupported` without being run. The data capabilities are the
//! case `requires` vocabulary (`conformance-cases/README.md`): a case needing one the reader
//! lacks is `unsupported` as a whole. The other words gate single kinds of check, so a reader
//! that cannot report exclusion sets is still judged on its scans. The index words are the
//! one exception to "not run": a query is sent whatever index words are declared, because its
//! answer is judged anyway; only the judgement that needs the index used (its plan, the
//! refusal of damage to the index's files) is `unsupported` without the word.

use std::collections::BTreeSet;

use crate::case::Capability;

/// Answers `lineage` requests (where each lineage sequence lives).
pub const LINEAGE_PLACEMENT: &str = "lineage-placement";
/// Answers scalar `query` requests (at least the final rows).
pub const SCALAR_QUERY: &str = "scalar-query";
/// Answers vector `query` requests (at least the final rows).
pub const VECTOR_QUERY: &str = "vector-query";
/// Answers `exclusion` requests, and reports a query's reconciliation lists.
pub const EXCLUSION: &str = "exclusion";
/// Reports the reference's error codes; a negative case pinning a code is then judged on it.
pub const ERROR_CODES: &str = "error-codes";
/// Uses a BTree index as the kit stores it (details `/lance.table.BTreeIndexDetails`,
/// `index_version` 1, row addresses): its index-path checks and the damage to its files are
/// judged. A reader without it may ignore such an index and answer on the flat path.
pub const BTREE_INDEX: &str = "btree-index";
/// Uses a vector index as the kit stores it (IVF_FLAT, details
/// `/lance.index.pb.VectorIndexDetails`); as [`BTREE_INDEX`] for vector indices.
pub const VECTOR_INDEX: &str = "vector-index";

/// Every capability word the protocol defines, in the order the spec lists them.
pub const VOCABULARY: [&str; 14] = [
    "overlays",
    "sparse-overlays",
    "stable-row-ids",
    "deletions",
    "spilled-lineage",
    "nested-fields",
    "covered-index-metadata",
    EXCLUSION,
    VECTOR_QUERY,
    SCALAR_QUERY,
    LINEAGE_PLACEMENT,
    ERROR_CODES,
    BTREE_INDEX,
    VECTOR_INDEX,
];

/// The writer words: the steps of the case vocabulary a writer commits (`write:<step>`). A
/// writer run sends a case only to a writer that declares every word its steps need
/// ([`super::writer::needs`]).
pub const WRITE_WORDS: [&str; 22] = [
    "write:create",
    "write:append",
    "write:overlay",
    "write:sparse-overlay",
    "write:delete",
    "write:btree-index",
    "write:vector-index",
    "write:compact-overlays",
    "write:fold",
    "write:rewrite-rows",
    "write:update-rows",
    "write:update",
    "write:rewrite-columns",
    "write:merge-insert",
    "write:restore",
    "write:commit-retry",
    "write:set-config",
    "write:add-fields",
    "write:drop-fields",
    PREPARED_COMMIT,
    REFERENCE_LINEAGE_ENCODING,
    SPILLED_LINEAGE,
];

/// A writer that commits files the kit prepared (`commit_prepared`, spec/conformance.md §7.4):
/// the committer cases, where the kit hands the committer a malformed commit and its
/// well-formed twin. Not a step of the case vocabulary; a writer without it replays those
/// cases' own steps instead.
pub const PREPARED_COMMIT: &str = "write:prepared-commit";

/// A writer that commits on top of a table whose lineage is spilled (writer bit 2048): it
/// reads and carries column arms. Not a step; a writer without it must refuse to commit on a
/// version whose writer word sets 2048 ([FLG-WRITE-5]), which the kit judges where it hands a
/// writer such a version (`writer_from`, spec/conformance.md §7.3).
pub const SPILLED_LINEAGE: &str = "write:spilled-lineage";

/// A writer whose inline lineage encodings are the reference's (the encoder of
/// `spec/row-lineage.md`). Where the table spills, the budget is compared with the writer's
/// own encoding ([LIN-ENC-6]), which the kit can measure only for such a writer: it is judged
/// on placement exactly, any other writer only where its bytes decide it.
pub const REFERENCE_LINEAGE_ENCODING: &str = "write:reference-lineage-encoding";

/// The protocol word of a case capability (its `case.toml` spelling).
pub fn word(capability: Capability) -> &'static str {
    match capability {
        Capability::Overlays => "overlays",
        Capability::SparseOverlays => "sparse-overlays",
        Capability::StableRowIds => "stable-row-ids",
        Capability::Deletions => "deletions",
        Capability::SpilledLineage => "spilled-lineage",
        Capability::Exclusion => EXCLUSION,
        Capability::VectorQuery => VECTOR_QUERY,
        Capability::NestedFields => "nested-fields",
        Capability::CoveredIndexMetadata => "covered-index-metadata",
    }
}

/// Whether a case capability is about the data (gates the whole case) rather than about a
/// kind of check (`exclusion`, `vector-query`).
pub fn is_data(capability: Capability) -> bool {
    !matches!(capability, Capability::Exclusion | Capability::VectorQuery)
}

/// The index word a reader declares to have an index of `kind` judged on its use: an index
/// it does not declare it may ignore (spec/conformance.md §3).
pub fn index_word(kind: lance_reference::model::IndexKind) -> &'static str {
    match kind {
        lance_reference::model::IndexKind::BTree => BTREE_INDEX,
        lance_reference::model::IndexKind::Vector => VECTOR_INDEX,
    }
}

/// The data capabilities of `requires` that `declared` lacks.
pub fn missing_data(requires: &[Capability], declared: &BTreeSet<String>) -> Vec<&'static str> {
    requires
        .iter()
        .filter(|c| is_data(**c))
        .map(|c| word(*c))
        .filter(|w| !declared.contains(*w))
        .collect()
}

/// The capabilities among `needs` that `declared` lacks.
pub fn missing<'a>(needs: &[&'a str], declared: &BTreeSet<String>) -> Vec<&'a str> {
    needs
        .iter()
        .copied()
        .filter(|w| !declared.contains(*w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_words_are_the_case_vocabulary() {
        for c in [
            Capability::Overlays,
            Capability::SparseOverlays,
            Capability::StableRowIds,
            Capability::Deletions,
            Capability::SpilledLineage,
            Capability::Exclusion,
            Capability::VectorQuery,
            Capability::NestedFields,
            Capability::CoveredIndexMetadata,
        ] {
            let serde_word = serde_json::to_value(c).unwrap();
            assert_eq!(serde_word.as_str(), Some(word(c)));
            assert!(VOCABULARY.contains(&word(c)));
        }
    }

    #[test]
    fn only_data_capabilities_gate_a_case() {
        let declared: BTreeSet<String> = ["overlays".to_string()].into();
        let requires = [
            Capability::Overlays,
            Capability::Exclusion,
            Capability::Deletions,
        ];
        assert_eq!(missing_data(&requires, &declared), ["deletions"]);
    }
}
