//! What a dataset version needs of a reader, computed from its content: the data capabilities
//! a reader must have to read it, and hence the versions a reader without one must refuse
//! (its refusal profile, `spec/conformance.md` §4).
//!
//! Invariant: the needs come from the manifest as stored, decoded without any validation (so
//! a damaged version has needs too, as long as its manifest still decodes): a feature counts
//! when its reader flag is set *or* when the content uses it, whichever the writer got wrong.
//! Nothing is taken from a case's `requires`: [`of_case`] computes what it has to say, from
//! the case's generated files (and its declared queries, for `vector-query`), and is the one
//! place that rule lives: the traceability test checks the corpus's `case.toml` files against
//! it, and `lance-conformance fuzz` writes it into the cases it shrinks.
//!
//! | capability | needed when |
//! |---|---|
//! | `deletions` | reader bit 1, or a fragment has a deletion file |
//! | `stable-row-ids` | reader bit 2, or a fragment has a row id sequence |
//! | `overlays` | reader bit 64, or a fragment lists an overlay |
//! | `sparse-overlays` | an overlay has per-field coverage |
//! | `spilled-lineage` | reader bit 2048, or a lineage sequence uses a column arm |
//! | `nested-fields` | the schema has a struct field |
//! | `covered-index-metadata` | reader bit 128, or an index declares covering fields |

use std::collections::BTreeSet;
use std::path::Path;

use lance_reference::model::DataType;
use lance_reference::proto::lance::table as pb;
use lance_reference_io::manifest_file::{ManifestFile, decode_manifest_file};
use lance_reference_io::version_names::{VERSIONS_DIR, manifest_name};

use super::execute::Expected;
use crate::case::{Capability, Case};
use crate::corpus::UNDAMAGED_DIR;

/// The data capabilities, in the order the spec lists them.
pub const DATA_CAPABILITIES: [Capability; 7] = [
    Capability::Overlays,
    Capability::SparseOverlays,
    Capability::StableRowIds,
    Capability::Deletions,
    Capability::SpilledLineage,
    Capability::NestedFields,
    Capability::CoveredIndexMetadata,
];

/// The reader feature bit that announces a data capability, if it has one.
pub fn reader_bit(capability: Capability) -> Option<u64> {
    match capability {
        Capability::Deletions => Some(1),
        Capability::StableRowIds => Some(2),
        Capability::Overlays => Some(64),
        Capability::SpilledLineage => Some(2048),
        Capability::CoveredIndexMetadata => Some(128),
        _ => None,
    }
}

/// The requirement that makes refusing a version needing `capability` a MUST for a reader
/// without it, or `None` when the spec has no such rule (the refusal is then SHOULD).
pub fn refusal_rule(capability: Capability) -> Option<&'static str> {
    match capability {
        Capability::Overlays => Some("OVL-FLAG-1"),
        Capability::Deletions
        | Capability::StableRowIds
        | Capability::SpilledLineage
        | Capability::CoveredIndexMetadata => Some("FLG-READ-1"),
        _ => None,
    }
}

/// The data capabilities `manifest` (with the index section it points at, if any) needs (see
/// the module docs).
pub fn of_manifest(
    manifest: &pb::Manifest,
    index_section: Option<&pb::IndexSection>,
) -> BTreeSet<Capability> {
    let flags = manifest.reader_feature_flags;
    let fragments = &manifest.fragments;
    let mut out = BTreeSet::new();
    let mut need = |c: Capability, content: bool| {
        if content || reader_bit(c).is_some_and(|b| flags & b != 0) {
            out.insert(c);
        }
    };
    need(
        Capability::Deletions,
        fragments.iter().any(|f| f.deletion_file.is_some()),
    );
    need(
        Capability::StableRowIds,
        fragments.iter().any(|f| f.row_id_sequence.is_some()),
    );
    need(
        Capability::Overlays,
        fragments.iter().any(|f| !f.overlays.is_empty()),
    );
    need(
        Capability::SparseOverlays,
        fragments.iter().flat_map(|f| &f.overlays).any(|o| {
            matches!(
                o.coverage,
                Some(pb::data_overlay_file::Coverage::FieldCoverage(_))
            )
        }),
    );
    need(
        Capability::SpilledLineage,
        fragments.iter().any(|f| {
            matches!(
                f.row_id_sequence,
                Some(pb::data_fragment::RowIdSequence::ColumnRowIds(_))
            ) || matches!(
                f.created_at_version_sequence,
                Some(pb::data_fragment::CreatedAtVersionSequence::ColumnCreatedAtVersions(_))
            ) || matches!(
                f.last_updated_at_version_sequence,
                Some(
                    pb::data_fragment::LastUpdatedAtVersionSequence::ColumnLastUpdatedAtVersions(_)
                )
            )
        }),
    );
    need(
        Capability::NestedFields,
        manifest
            .fields
            .iter()
            .any(|f| DataType::from_logical_type(&f.logical_type) == Some(DataType::Struct)),
    );
    need(
        Capability::CoveredIndexMetadata,
        index_section.is_some_and(|s| s.indices.iter().any(|i| i.fields.len() > 1)),
    );
    out
}

/// The data capabilities version `version` of the dataset at `root` needs, read from its
/// manifest file (the V2 name first, then the V1 name); an error when neither decodes.
pub fn of_version(root: &Path, version: u64) -> Result<BTreeSet<Capability>, NoManifest> {
    let file = manifest_file(root, version)?;
    Ok(of_manifest(&file.manifest, file.index_section.as_ref()))
}

/// Version `version` of the dataset at `root` as stored, decoded without validation (the V2
/// name first, then the V1 name); an error when neither decodes.
fn manifest_file(root: &Path, version: u64) -> Result<ManifestFile, NoManifest> {
    let mut tried = Vec::new();
    for name in [manifest_name(version), format!("{version}.manifest")] {
        let rel = format!("{VERSIONS_DIR}/{name}");
        match std::fs::read(root.join(&rel)) {
            Ok(bytes) => match decode_manifest_file(&bytes, &rel) {
                Ok(file) => return Ok(file),
                Err(e) => tried.push(ManifestNameProblem::Decode(Box::new(e))),
            },
            Err(error) => tried.push(ManifestNameProblem::Read { path: rel, error }),
        }
    }
    Err(NoManifest { tried })
}

/// Why no manifest file of a version decodes: what each name tried (V2 first, then V1) gave,
/// in that order, `; ` between them.
#[derive(Debug, thiserror::Error)]
#[error("{}", tried.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct NoManifest {
    tried: Vec<ManifestNameProblem>,
}

/// What one manifest file name gave.
#[derive(Debug, thiserror::Error)]
pub enum ManifestNameProblem {
    /// The file could not be read (it is absent, for one of the two names, as a rule).
    #[error("{path}: {error}")]
    Read {
        /// The file, relative to the dataset root.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The file does not decode.
    #[error("{0}")]
    Decode(Box<lance_reference_io::DatasetError>),
}

/// What the case in `dir`, whose `expected/` files are `expected`, needs of a reader: the
/// `requires` its `case.toml` declares (`spec/conformance.md` §3).
///
/// - The data capabilities: those of every version a reader is sent, by [`of_version`]: each
///   version `expected/` answers for and the damaged version of a negative case, in `dataset/`
///   and in the undamaged twin (`undamaged/`). A version whose manifest does not decode needs
///   nothing.
/// - `vector-query`, when the case declares a vector query: it gates those query checks.
/// - `exclusion`, when some version `expected/` answers for holds both an overlay and an
///   index: it gates that version's exclusion check and the reconciliation lists of its
///   queries, which then show what the overlays exclude, or that they exclude nothing. The
///   twin is only scanned, so it never counts here.
pub fn of_case(dir: &Path, case: &Case, expected: &Expected) -> BTreeSet<Capability> {
    let dataset = dir.join("dataset");
    let twin = dir.join(UNDAMAGED_DIR);
    let readable: Vec<u64> = expected.versions.iter().map(|v| v.version).collect();
    let damaged = expected.error.as_ref().map(|e| e.version);
    let mut out = BTreeSet::new();
    for root in [&dataset, &twin] {
        if !root.is_dir() {
            continue;
        }
        for v in readable.iter().chain(&damaged) {
            out.extend(of_version(root, *v).unwrap_or_default());
        }
    }
    if case.queries.iter().any(|q| q.vector.is_some()) {
        out.insert(Capability::VectorQuery);
    }
    let excludes = expected.versions.iter().any(|v| {
        manifest_file(&dataset, v.version).is_ok_and(|file| {
            file.manifest
                .fragments
                .iter()
                .any(|f| !f.overlays.is_empty())
                && file.index_section.is_some_and(|s| !s.indices.is_empty())
        })
    });
    if excludes {
        out.insert(Capability::Exclusion);
    }
    out
}

/// The capabilities of `needs` that `declared` lacks (a reader without `overlays` lacks
/// `sparse-overlays` too, whatever it says).
pub fn missing(needs: &BTreeSet<Capability>, declared: &BTreeSet<String>) -> Vec<Capability> {
    let lacks = |c: Capability| !declared.contains(super::capability::word(c));
    needs
        .iter()
        .copied()
        .filter(|c| lacks(*c) || (*c == Capability::SparseOverlays && lacks(Capability::Overlays)))
        .collect()
}

/// `overlays, spilled-lineage`.
pub fn words(capabilities: &[Capability]) -> String {
    capabilities
        .iter()
        .map(|c| super::capability::word(*c))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_content_both_count() {
        let mut m = pb::Manifest {
            reader_feature_flags: 64,
            ..pb::Manifest::default()
        };
        assert_eq!(of_manifest(&m, None), [Capability::Overlays].into());
        m.reader_feature_flags = 0;
        m.fragments.push(pb::DataFragment {
            overlays: vec![pb::DataOverlayFile::default()],
            created_at_version_sequence: Some(
                pb::data_fragment::CreatedAtVersionSequence::ColumnCreatedAtVersions(
                    pb::RowLineageColumn {},
                ),
            ),
            ..pb::DataFragment::default()
        });
        assert_eq!(
            of_manifest(&m, None),
            [Capability::Overlays, Capability::SpilledLineage].into()
        );
        let declared: BTreeSet<String> = ["sparse-overlays".to_string()].into();
        assert_eq!(
            missing(&[Capability::SparseOverlays].into(), &declared),
            [Capability::SparseOverlays]
        );
    }
}
