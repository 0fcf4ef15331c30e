//! What a manifest records about a version beyond the model: where each file sits, which
//! file-format version it has, its size and column mapping, how deletions are stored, and the
//! manifest's own bookkeeping fields.
//!
//! Invariant: a [`Layout`] is aligned with the [`lance_reference::model::Snapshot`] it was read or
//! written with: `fragments[i]` describes `snapshot.fragments[i]`, `fragments[i].files[j]` its
//! `files[j]`, `fragments[i].overlays[k]` the data file of its `overlays[k]`, and `indices[n]`
//! `snapshot.indices[n]`. The model stays free of on-disk detail (other modules construct it
//! directly); everything needed to write the same bytes again, or to explain a read, is here.

use std::collections::BTreeMap;

use super::deletion::DeletionFileType;
use lance_reference::flags::FileFormatVersion;

/// `Manifest.writer_version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterVersion {
    /// `library` (Lance writes `"lance"`; this kit `"lance-conformance"`).
    pub library: String,
    /// `version`.
    pub version: String,
}

/// `Manifest.data_format`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFormat {
    /// `file_format` (`"lance"`).
    pub file_format: String,
    /// `version` (`"2.0"`, ...).
    pub version: String,
}

/// One data file as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLayout {
    /// Path relative to the dataset root (`data/<name>`).
    pub path: String,
    /// `DataFile.column_indices`, aligned with `DataFile.fields`.
    pub column_indices: Vec<i32>,
    /// `file_major_version`.
    pub file_major_version: u32,
    /// `file_minor_version`.
    pub file_minor_version: u32,
    /// `file_size_bytes` (0 = unknown).
    pub file_size_bytes: u64,
}

impl FileLayout {
    /// The format the manifest entry names (`file_major_version`, `file_minor_version`).
    pub fn version(&self) -> FileFormatVersion {
        FileFormatVersion::from_pair(self.file_major_version, self.file_minor_version)
    }
}

/// A fragment's deletion file as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletionLayout {
    /// Path relative to the dataset root (`_deletions/{fragment}-{read_version}-{id}.{ext}`).
    pub path: String,
    /// `file_type`.
    pub form: DeletionFileType,
    /// `read_version`.
    pub read_version: u64,
    /// `id`.
    pub id: u64,
    /// `num_deleted_rows` (0 = unknown).
    pub num_deleted_rows: u64,
}

/// One fragment's files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FragmentLayout {
    /// Base (and lineage-only) files, aligned with `Fragment::files`.
    pub files: Vec<FileLayout>,
    /// Overlay value files, aligned with `Fragment::overlays`.
    pub overlays: Vec<FileLayout>,
    /// The deletion file, if the fragment has one.
    pub deletion: Option<DeletionLayout>,
}

/// One index's on-disk identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexLayout {
    /// `uuid` (16 bytes); the index files live in `_indices/{uuid}/`.
    pub uuid: [u8; 16],
    /// `index_details.type_url`.
    pub details_type_url: String,
    /// `index_version`.
    pub index_version: Option<i32>,
    /// `created_at` (milliseconds).
    pub created_at: Option<u64>,
    /// `index_details.value` (the details message's bytes).
    pub details_value: Vec<u8>,
    /// `files`: each file of the index directory and its size in bytes, sorted by path
    /// (empty when the manifest does not list them).
    pub files: Vec<(String, u64)>,
    /// `covering_fields`: the index's fields after the key.
    pub covering_fields: Vec<i32>,
}

impl IndexLayout {
    /// The uuid in its hyphenated text form, as Lance names `_indices/{uuid}/`.
    pub fn uuid_string(&self) -> String {
        let hex: String = self.uuid.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }
}

/// A version's on-disk layout (see the module docs for the alignment rule).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    /// The manifest file, relative to the dataset root.
    pub manifest: String,
    /// `writer_version`, if present.
    pub writer_version: Option<WriterVersion>,
    /// `data_format`, if present.
    pub data_format: Option<DataFormat>,
    /// `timestamp` as (seconds, nanos), if present.
    pub timestamp: Option<(i64, i32)>,
    /// `max_fragment_id`, if present.
    pub max_fragment_id: Option<u32>,
    /// `schema_metadata`.
    pub schema_metadata: BTreeMap<String, Vec<u8>>,
    /// Per fragment.
    pub fragments: Vec<FragmentLayout>,
    /// Per index.
    pub indices: Vec<IndexLayout>,
}

impl Layout {
    /// The format `data_format.version` names, when the manifest has a `data_format` whose
    /// version reads as `<major>.<minor>`.
    pub fn data_format_version(&self) -> Option<FileFormatVersion> {
        self.data_format
            .as_ref()
            .and_then(|d| FileFormatVersion::from_data_format(&d.version))
    }

    /// Every data file of the version (base and lineage files, then overlay value files, per
    /// fragment in manifest order), named by its manifest field, with the format it names.
    pub fn data_file_versions(&self) -> Vec<(String, FileFormatVersion)> {
        let mut out = Vec::new();
        for (i, fragment) in self.fragments.iter().enumerate() {
            for (j, file) in fragment.files.iter().enumerate() {
                out.push((format!("fragments[{i}].files[{j}]"), file.version()));
            }
            for (k, file) in fragment.overlays.iter().enumerate() {
                out.push((
                    format!("fragments[{i}].overlays[{k}].data_file"),
                    file.version(),
                ));
            }
        }
        out
    }

    /// Why the data files of this version are mixed (spec feature-flags.md, "Mixed data file
    /// versions"), or `None` when they are not: [`lance_reference::flags::mixed_versions`] over
    /// [`Layout::data_file_versions`].
    pub fn mixed_versions(&self) -> Option<String> {
        let files = self.data_file_versions();
        lance_reference::flags::mixed_versions(
            self.data_format_version(),
            files.iter().map(|(name, v)| (name.as_str(), *v)),
        )
    }
}
