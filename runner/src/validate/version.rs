//! Each version alone: everything its bytes decide.
//!
//! Invariant: a version is judged by the reference reader's checks first, fragment by fragment
//! ([`VersionCheck::check`]: what [`Dataset::read_version`] checks, ending with
//! [`lance_reference::readable::check_readable`], one fragment's columns per worker at a time):
//! its refusal is the version's one finding, with the reader's class and code, so a negative
//! case's damage is reported exactly as a reader must report it. A refusal that only says the
//! kit cannot decode a file (a kit limit) is followed by a read of the levels below it (all but
//! the index files; the manifest and deletion files alone), which are judged as far as they
//! go. Only a version the reader accepts, at some level, gets the writer-side rules a reader
//! does not check: the flag words a writer may
//! write and that they match the content ([`check_written_flags`]), and overlays stored in
//! non-decreasing `committed_version` order ([OVL-PREC-5]), and no negative overlay field id
//! other than the tombstone ([OVL-TOMB-6]). No rule is written here a second
//! time: each is the reference's own check.

use lance_reference::flags::{FlagWord, check_mixed_versions, check_written_flags};
use lance_reference::model::{Snapshot, TOMBSTONE_FIELD_ID};
use std::collections::BTreeMap;

use lance_reference_io::codec;
use lance_reference_io::manifest_file::decode_manifest_file;
use lance_reference_io::version_check::VersionCheck;
use lance_reference_io::{Dataset, DatasetError, Layout};

use super::finding::{Finding, HistoryError};

/// A version that read, with its manifest file name.
#[derive(Debug, Clone)]
pub struct ReadVersion {
    /// The snapshot at its manifest level, without its fragments' data: no `columns` and no
    /// inline lineage values are held (a fragment is decoded and read again when a commit
    /// needs it, [`VersionCheck::fragment`]); deletions are.
    pub snapshot: Snapshot,
    /// Where each part lives.
    pub layout: Layout,
    /// The manifest file, relative to the root.
    pub file: String,
    /// Per fragment id, the byte length of each inline lineage arm as the writer encoded it
    /// (row ids, created-at, last-updated-at; `None` when not inline): the length
    /// [LIN-PLACE-3] compares with the budget ([LIN-ENC-6]).
    pub inline_lengths: BTreeMap<u64, [Option<usize>; 3]>,
    /// How much of it was read: a commit involving a version read at the manifest level is
    /// judged only by the rules that need no cell or hidden column.
    pub level: Level,
}

/// The stored inline lineage lengths of every fragment of the manifest `file` (empty when it
/// cannot be read again, which the reader's acceptance of it rules out).
pub fn inline_lengths(dataset: &Dataset, file: &str) -> BTreeMap<u64, [Option<usize>; 3]> {
    use lance_reference::proto::lance::table::data_fragment::{
        CreatedAtVersionSequence as Created, LastUpdatedAtVersionSequence as Updated,
        RowIdSequence as RowIds,
    };
    let Ok(bytes) = dataset.read_file(file, "_versions listing") else {
        return BTreeMap::new();
    };
    let Ok(decoded) = decode_manifest_file(&bytes, file) else {
        return BTreeMap::new();
    };
    decoded
        .manifest
        .fragments
        .iter()
        .map(|f| {
            let row_ids = match &f.row_id_sequence {
                Some(RowIds::InlineRowIds(b)) => Some(b.len()),
                _ => None,
            };
            let created = match &f.created_at_version_sequence {
                Some(Created::InlineCreatedAtVersions(b)) => Some(b.len()),
                _ => None,
            };
            let updated = match &f.last_updated_at_version_sequence {
                Some(Updated::InlineLastUpdatedAtVersions(b)) => Some(b.len()),
                _ => None,
            };
            (f.id, [row_ids, created, updated])
        })
        .collect()
}

/// Reads and judges `version` of `dataset`: the version when the reader accepts it (possibly
/// with writer-side findings), and the findings.
///
/// A refusal that is a limit of the kit ([`Finding::is_kit_limit`]: a file it cannot decode)
/// does not end the judgement: the version is read again without what could not be decoded,
/// first without its index files (what [`Dataset::read_data_level`] reads), then without any data file
/// ([`Dataset::read_manifest_level`]), and what that level reads is judged as usual. The
/// refusal is kept (it is what makes the version not judged in full), and a refusal of the
/// lower level that is not a kit limit is a finding of its own.
pub fn check(checker: &VersionCheck, version: u64) -> (Option<ReadVersion>, Vec<Finding>) {
    let dataset = checker.dataset();
    let file = manifest_file(dataset, version);
    let mut findings = Vec::new();
    let mut level = Level::Full;
    let mut read = checker.check(version, true);
    while let Err(e) = &read {
        let refusal = Finding::read_refusal(version, &file, e);
        let lower = match level {
            _ if !refusal.is_kit_limit() => None,
            Level::Full if matches!(e, DatasetError::IndexFile { .. }) => Some(Level::Data),
            Level::Full | Level::Data => Some(Level::Manifest),
            Level::Manifest => None,
        };
        // A lower level that refuses with the same kit limit adds nothing.
        if !findings.contains(&refusal) {
            findings.push(refusal);
        }
        let Some(lower) = lower else {
            return (None, findings);
        };
        level = lower;
        read = match level {
            Level::Data => checker.check(version, false),
            _ => dataset.read_manifest_level(version),
        };
    }
    let Ok((mut snapshot, layout)) = read else {
        return (None, findings);
    };
    findings.extend(writer_rules(&snapshot, &layout, &file));
    let inline_lengths = inline_lengths(dataset, &file);
    drop_lineage_values(&mut snapshot);
    (
        Some(ReadVersion {
            snapshot,
            layout,
            file,
            inline_lengths,
            level,
        }),
        findings,
    )
}

/// Empties every inline lineage sequence of `snapshot` (its kind stays): a held version
/// needs none, and a fragment a commit looks into is decoded again with its own
/// ([`VersionCheck::fragment`]). A manifest holds its inline lineage expanded, 8 bytes per row
/// and sequence: this is what keeps a held version's size following its fragment count. (A
/// version [`VersionCheck::check`] accepted has none already; one read at its manifest level
/// has them.)
fn drop_lineage_values(snapshot: &mut Snapshot) {
    snapshot
        .fragments
        .iter_mut()
        .for_each(codec::drop_lineage_values);
}

/// How much of a version was read and judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Everything: manifest, data files, index files.
    Full,
    /// All but the index files (one of them is a kind or layout the kit does not read); no
    /// index has entries.
    Data,
    /// The manifest, the reader word and the deletion files (a data file is one the kit does
    /// not decode); every `columns` list is empty.
    Manifest,
}

impl Level {
    /// The level's name in JSON output: `full`, `data` or `manifest`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Full => "full",
            Level::Data => "data",
            Level::Manifest => "manifest",
        }
    }
}

/// The manifest file of `version`, as the listing names it.
pub fn manifest_file(dataset: &Dataset, version: u64) -> String {
    dataset
        .entries()
        .iter()
        .find(|e| e.version == version)
        .map(|e| format!("_versions/{}", e.name))
        .unwrap_or_else(|| format!("_versions/(version {version})"))
}

/// The rules a writer keeps on one version that a reader does not check.
fn writer_rules(snapshot: &Snapshot, layout: &Layout, file: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Err(e) = check_written_flags(snapshot) {
        let mut f = Finding::writer(
            snapshot.version,
            file,
            &e,
            &["FLG-BITS-3", "FLG-WRITE-6", "FLG-CONS-2"],
        );
        f.field = "reader_feature_flags / writer_feature_flags".into();
        out.push(f);
    }
    // The reader checked bit 256 in the reader word; a writer sets it in both.
    let words = [
        (FlagWord::Reader, snapshot.reader_flags),
        (FlagWord::Writer, snapshot.writer_flags),
    ];
    if let Err(e) = check_mixed_versions(layout.mixed_versions().as_deref(), &words) {
        let mut f = Finding::writer(snapshot.version, file, &e, &["FLG-WRITE-8"]);
        f.field = "writer_feature_flags".into();
        out.push(f);
    }
    for (i, fragment) in snapshot.fragments.iter().enumerate() {
        let order = fragment.overlays.windows(2).enumerate().find_map(|(k, w)| {
            (w[1].committed_version < w[0].committed_version).then_some((k + 1, w))
        });
        for (k, o) in fragment.overlays.iter().enumerate() {
            let reserved = o
                .file
                .fields
                .iter()
                .enumerate()
                .find(|(_, f)| **f < 0 && **f != TOMBSTONE_FIELD_ID);
            if let Some((position, &field)) = reserved {
                out.push(Finding::rule(
                    snapshot.version,
                    file,
                    format!("fragments[{i}].overlays[{k}].data_file.fields[{position}]"),
                    HistoryError::ReservedOverlayField {
                        fragment: fragment.id,
                        path: o.file.path.clone(),
                        position,
                        field,
                    },
                ));
            }
        }
        if let Some((position, w)) = order {
            out.push(Finding::rule(
                snapshot.version,
                file,
                format!("fragments[{i}].overlays[{position}].committed_version"),
                HistoryError::OverlayOrder {
                    fragment: fragment.id,
                    position,
                    version: w[1].committed_version,
                    previous: w[0].committed_version,
                },
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lance_reference::worked_example;

    #[test]
    fn flags_must_be_writable_and_match_content() {
        // covers: FLG-CONS-2
        let mut s = worked_example::version_1();
        let layout = Layout::default();
        assert!(writer_rules(&s, &layout, "m").is_empty());
        s.reader_flags |= 1; // deletion bit in the reader word only: readable, not writable
        let found = writer_rules(&s, &layout, "m");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].requirements.iter().any(|r| r == "FLG-CONS-2"));
    }

    #[test]
    fn mixed_versions_need_bit_256_in_the_writer_word_too() {
        // covers: FLG-WRITE-8
        use lance_reference_io::layout::{DataFormat, FileLayout, FragmentLayout};
        let file = |minor| FileLayout {
            path: "data/f.lance".into(),
            column_indices: vec![0],
            file_major_version: 2,
            file_minor_version: minor,
            file_size_bytes: 0,
        };
        let mut layout = Layout {
            data_format: Some(DataFormat {
                file_format: "lance".into(),
                version: "2.0".into(),
            }),
            fragments: vec![FragmentLayout {
                files: vec![file(0)],
                overlays: vec![file(2)],
                deletion: None,
            }],
            ..Layout::default()
        };
        let mut s = worked_example::version_1();
        s.reader_flags |= 256;
        let found = writer_rules(&s, &layout, "m");
        let mixed: Vec<_> = found
            .iter()
            .filter(|f| f.requirements.iter().any(|r| r == "FLG-WRITE-8"))
            .collect();
        assert_eq!(mixed.len(), 1, "{found:?}");
        s.writer_flags |= 256;
        assert!(writer_rules(&s, &layout, "m").is_empty());
        // Not mixed: 256 is stale but allowed.
        layout.fragments[0].overlays[0].file_minor_version = 0;
        assert!(writer_rules(&s, &layout, "m").is_empty());
    }
}
