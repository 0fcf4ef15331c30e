//! Where a scenario's versions are written, and how they are read back.
//!
//! Invariant: expected results are computed from what the reference's dataset reader
//! ([`Dataset::read_version`]) returns for the directory the reference's writer
//! ([`write_version`]) produced, never from the scenario's memory; and the read-back of every
//! undamaged version must equal the version the scenario committed ([`write_and_read_back`]
//! checks it, before any damage), re-encoded versions ([`crate::case::step::Reencoding`])
//! included. Corruptions damage the newest version *on disk*: content-level
//! ones re-encode its manifest (and any data file whose columns they change, under a new
//! name) from the decoded snapshot; byte-level ones edit the manifest protobuf or the files
//! directly. Earlier versions stay readable, except where the damage is to the directory as a
//! whole (mixed manifest naming schemes).

pub mod bytes;
mod index_damage;
mod reencode;

use std::path::Path;

use lance_reference::flags::set_mixed_versions_flag;
use lance_reference::model::{Column, DataFile, DataType, Schema, Snapshot, StructLayer, Value};
use lance_reference_io::codec::{deletion_layout, encode_manifest};
use lance_reference_io::data_file::DataFileVersion;
use lance_reference_io::deletion::{lance_file_type, write_deletion_file};
use lance_reference_io::manifest_file::encode_manifest_file;
use lance_reference_io::read::reads_position;
use lance_reference_io::write::{data_file_bytes_in, leaf_positions_only, overlay_file_bytes_in};
use lance_reference_io::{Dataset, DatasetError, Layout, WriteOptions, write_version};
use sha2::{Digest, Sha256};

use crate::case::{
    Case, ContentCorruption, Corruption, DataFileVersionSpec, ManifestBytesCorruption,
};
use crate::scenario::Execution;
use crate::scenario::corrupt::{CorruptError, apply_to_snapshot};

/// The damaged newest version of a negative case.
#[derive(Debug, Clone)]
pub struct Damaged {
    /// The damaged version.
    pub version: u64,
    /// The decoded snapshot after content-level damage, for renderings (absent when only
    /// bytes were damaged).
    pub snapshot: Option<Snapshot>,
    /// What the reference's dataset reader makes of it: an error, or (if it reads) the
    /// snapshot a reader then has to refuse while scanning.
    pub read: Result<Snapshot, Box<DatasetError>>,
}

/// The versions as read back from the store.
#[derive(Debug, Clone)]
pub struct ReadBack {
    /// Every undamaged version, oldest first.
    pub versions: Vec<Snapshot>,
    /// The damaged newest version of a negative case.
    pub corrupted: Option<Damaged>,
    /// A negative case's newest version as read back before the damage: its undamaged twin,
    /// which [`write_undamaged`] writes into a directory of its own.
    pub undamaged: Option<Snapshot>,
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A corruption could not be applied.
    #[error(transparent)]
    Corrupt(#[from] CorruptError),
    /// Writing or reading the dataset failed.
    #[error("dataset: {0}")]
    Dataset(Box<DatasetError>),
    /// A scratch directory could not be created.
    #[error("scratch directory: {0}")]
    Scratch(std::io::Error),
    /// A version read back differs from the version the scenario committed.
    #[error(
        "version {version} read back differs from the version the scenario committed:\n  committed {committed}\n  read back {read}"
    )]
    RoundTrip {
        /// The version.
        version: u64,
        /// The first differing line of the committed version's debug text.
        committed: String,
        /// The same line read back.
        read: String,
    },
}

impl From<DatasetError> for StoreError {
    fn from(e: DatasetError) -> Self {
        StoreError::Dataset(Box::new(e))
    }
}

/// Reads one version with the reference's dataset reader.
fn read_one(root: &Path, version: u64) -> Result<Snapshot, Box<DatasetError>> {
    let read = match Dataset::open(root) {
        Ok(dataset) => dataset.read_version(version),
        Err(e) => Err(e),
    };
    read.map(|(snapshot, _)| snapshot).map_err(Box::new)
}

fn version_of(spec: DataFileVersionSpec) -> DataFileVersion {
    match spec {
        DataFileVersionSpec::V2_0 => DataFileVersion::V2_0,
        DataFileVersionSpec::V2_1 => DataFileVersion::V2_1,
        DataFileVersionSpec::V2_2 => DataFileVersion::V2_2,
    }
}

/// The step that wrote the data file `path`: files are named `f<fragment>-s<step>...`.
fn writing_step(path: &str) -> Option<&str> {
    let rest = path.strip_prefix('f')?;
    let (_, after) = rest.split_once("-s")?;
    let end = after
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after.len());
    (end > 0).then(|| &after[..end])
}

/// How `case`'s versions are written: every data file in its `data_file_version`, except the
/// files of a step `step_data_file_versions` names, in that step's version.
pub fn write_options(case: &Case, execution: &Execution) -> WriteOptions {
    let mut options = WriteOptions {
        data_file_version: version_of(case.data_file_version),
        ..WriteOptions::default()
    };
    if case.step_data_file_versions.is_empty() {
        return options;
    }
    for snapshot in &execution.versions {
        for fragment in &snapshot.fragments {
            let files = fragment
                .files
                .iter()
                .chain(fragment.overlays.iter().map(|o| &o.file));
            for file in files {
                let step = writing_step(&file.path);
                if let Some(v) = step.and_then(|s| case.step_data_file_versions.get(s)) {
                    options
                        .file_versions
                        .insert(file.path.clone(), version_of(*v));
                }
            }
        }
    }
    options
}

/// Writes `execution`'s versions into `dataset_dir` (a scratch directory when `None`),
/// damages the newest one as the corruptions say, and reads every version back; every data file
/// in v2.0.
pub fn write_and_read_back(
    dataset_dir: Option<&Path>,
    execution: &Execution,
) -> Result<ReadBack, StoreError> {
    write_and_read_back_with(dataset_dir, execution, &WriteOptions::default())
}

/// [`write_and_read_back`] with the data file versions of `options` ([`write_options`]).
pub fn write_and_read_back_with(
    dataset_dir: Option<&Path>,
    execution: &Execution,
    options: &WriteOptions,
) -> Result<ReadBack, StoreError> {
    let scratch = match dataset_dir {
        Some(_) => None,
        None => Some(tempfile::tempdir().map_err(StoreError::Scratch)?),
    };
    let root = match (&scratch, dataset_dir) {
        (Some(s), _) => s.path(),
        (None, Some(d)) => d,
        (None, None) => return Err(StoreError::Scratch(std::io::Error::other("no directory"))),
    };
    // What each version must read back as: the committed snapshot, with the new names of the
    // files a re-encoding rewrote (nothing else may differ).
    let mut committed_versions = execution.versions.clone();
    let mut mixed = false;
    for snapshot in &mut committed_versions {
        write_in_history(root, snapshot, options, &mut mixed)?;
        let version = snapshot.version;
        for (_, plan) in execution.reencodings.iter().filter(|(v, _)| *v == version) {
            reencode::apply(root, snapshot, plan)?;
        }
    }
    let damaged = !execution.corruptions.is_empty();
    let clean = execution.versions.len() - usize::from(damaged && !execution.versions.is_empty());
    // The undamaged versions are read before the damage: some damage (mixed manifest names)
    // makes the whole directory unreadable, which is the point of it.
    let dataset = Dataset::open(root)?;
    let mut versions = Vec::with_capacity(clean);
    for committed in committed_versions.iter().take(clean) {
        let (read, _) = dataset.read_version(committed.version)?;
        same(committed, &read, options)?;
        versions.push(read);
    }
    let mut corrupted = None;
    let mut undamaged = None;
    if let Some(newest) = execution.versions.last().filter(|_| damaged) {
        let (read, _) = dataset.read_version(newest.version)?;
        same(committed_versions.last().unwrap_or(newest), &read, options)?;
        undamaged = Some(read);
        let snapshot = damage(root, newest.version, &execution.corruptions)?;
        let read = read_one(root, newest.version);
        corrupted = Some(Damaged {
            version: newest.version,
            snapshot,
            read,
        });
    }
    Ok(ReadBack {
        versions,
        corrupted,
        undamaged,
    })
}

/// Writes one version of a history: once a written version's data files were mixed, every
/// later one keeps bit 256 in both words (FLG-WRITE-9; the writer sets it for a mixed version
/// itself, FLG-WRITE-8). `snapshot` gets the bit too, so it is what the version must read
/// back as.
fn write_in_history(
    root: &Path,
    snapshot: &mut Snapshot,
    options: &WriteOptions,
    mixed: &mut bool,
) -> Result<(), StoreError> {
    set_mixed_versions_flag(snapshot, *mixed);
    let layout = write_version(root, snapshot, options)?;
    *mixed |= layout.mixed_versions().is_some();
    set_mixed_versions_flag(snapshot, *mixed);
    Ok(())
}

/// Writes every version of `execution` into `dir` without applying its damage: the undamaged
/// twin of a negative case, the same steps and so the same bytes as the case's dataset had
/// before the damage. Returns the newest version as read back from `dir`, after checking that
/// it equals the committed one.
pub fn write_undamaged(
    dir: &Path,
    execution: &Execution,
    options: &WriteOptions,
) -> Result<Option<Snapshot>, StoreError> {
    let mut mixed = false;
    for snapshot in &execution.versions {
        write_in_history(dir, &mut snapshot.clone(), options, &mut mixed)?;
    }
    let Some(newest) = execution.versions.last() else {
        return Ok(None);
    };
    let (read, _) = Dataset::open(dir)?.read_version(newest.version)?;
    let mut newest = newest.clone();
    if mixed {
        set_mixed_versions_flag(&mut newest, true);
    }
    same(&newest, &read, options)?;
    Ok(Some(read))
}

/// Writes the commits of `execution`'s prepared refusals into `dir` (a case's `refused/`): for
/// each, the manifest of the version it would have created, and each file it lists that
/// `dataset` (the case's dataset, already written) does not hold with the same bytes: the
/// files the refused commit adds. Nothing when there is none.
pub fn write_refused(
    dir: &Path,
    dataset: &Path,
    execution: &Execution,
    options: &WriteOptions,
) -> Result<(), StoreError> {
    for snapshot in &execution.refused {
        let scratch = tempfile::tempdir().map_err(StoreError::Scratch)?;
        let layout = write_version(scratch.path(), snapshot, options)?;
        let listed = layout
            .fragments
            .iter()
            .flat_map(|f| f.files.iter().chain(&f.overlays))
            .map(|f| f.path.clone());
        for rel in std::iter::once(layout.manifest.clone()).chain(listed) {
            let bytes = std::fs::read(scratch.path().join(&rel))
                .map_err(|e| StoreError::Scratch(std::io::Error::other(format!("{rel}: {e}"))))?;
            let same = std::fs::read(dataset.join(&rel)).is_ok_and(|b| b == bytes);
            if !same {
                write(dir, &rel, &bytes)?;
            }
        }
    }
    Ok(())
}

/// `snapshot` as a reader decodes it once written with `options`: positions a reader never
/// reads (tombstones, and in overlay files everything but live value fields) hold no values
/// ([`reads_position`]); and a file of v2.1 or later has no struct positions ([DS-LEAF-2]), so
/// its manifest entry lists leaves only (a sparse overlay keeps one bitmap per leaf,
/// [OVL-SHAPE-7]) while each leaf of a base file whose struct ancestors the file holds carries
/// their validity as struct layers, outermost first ([DS-LEAF-1]), NULL under a NULL struct
/// ([DS-LEAF-4]). An overlay's leaves carry no layers ([OVL-SHAPE-8]).
fn as_read(snapshot: &Snapshot, options: &WriteOptions) -> Snapshot {
    let mut out = snapshot.clone();
    let schema = snapshot.schema.clone();
    let mask = |file: &mut DataFile, overlay: bool| {
        for (id, column) in file.fields.iter().zip(file.columns.iter_mut()) {
            if !reads_position(&schema, *id, overlay) {
                *column = Column::empty();
            }
        }
    };
    let leaf_only = |path: &str| !options.version_of(path).struct_has_column();
    for fragment in &mut out.fragments {
        fragment.files.iter_mut().for_each(|f| mask(f, false));
        fragment
            .overlays
            .iter_mut()
            .for_each(|o| mask(&mut o.file, true));
        for file in fragment.files.iter_mut().filter(|f| leaf_only(&f.path)) {
            with_struct_layers(&schema, file);
        }
    }
    leaf_positions_only(&out, &leaf_only)
}

/// Gives each leaf column of the v2.1+ base file `file` the validity of its struct ancestors,
/// taken from their columns in the same file: the layers its column stores once written. A
/// leaf whose parent the file does not hold is written at the file schema's top level and
/// stores no layer.
fn with_struct_layers(schema: &Schema, file: &mut DataFile) {
    let validity: Vec<(i32, Column)> = file
        .fields
        .iter()
        .zip(&file.columns)
        .filter(|(id, _)| {
            schema
                .field(**id)
                .is_some_and(|f| f.data_type == DataType::Struct)
        })
        .map(|(id, c)| (*id, c.clone()))
        .collect();
    for (&id, column) in file.fields.iter().zip(file.columns.iter_mut()) {
        let Some((_, structs)) = schema
            .ancestry(id)
            .split_last()
            .map(|(l, s)| (*l, s.to_vec()))
        else {
            continue;
        };
        let Some(data_type) = schema.field(id).map(|f| f.data_type.clone()) else {
            continue;
        };
        if id < 0 || structs.is_empty() || data_type == DataType::Struct || column.is_empty() {
            continue;
        }
        let layers: Vec<StructLayer> = structs
            .iter()
            .filter_map(|s| {
                validity
                    .iter()
                    .find(|(f, _)| f == s)
                    .map(|(_, c)| StructLayer::new(*s, c.array().nulls().cloned()))
            })
            .collect();
        if layers.is_empty() {
            continue;
        }
        // Under a NULL struct the column stores no value; the innermost layer decides (a struct
        // is present only where every struct around it is).
        let mut values = column.values();
        if let Some(innermost) = layers.last() {
            for (i, v) in values.iter_mut().enumerate() {
                if !innermost.is_present(i) {
                    *v = Value::Null;
                }
            }
        }
        let nulled = Column::of(&data_type, &values).unwrap_or_else(|_| column.clone());
        *column = nulled.with_struct_layers(layers);
    }
}

/// Compares what a reader decodes, by debug text: that spells floats by their shortest round
/// trip, so NaN equals NaN and -0.0 differs from 0.0 (derived `PartialEq` would call a NaN cell
/// unequal).
fn same(committed: &Snapshot, read: &Snapshot, options: &WriteOptions) -> Result<(), StoreError> {
    let a = format!("{:#?}", as_read(committed, options));
    let b = format!("{read:#?}");
    if a == b {
        return Ok(());
    }
    let al: Vec<&str> = a.lines().collect();
    let bl: Vec<&str> = b.lines().collect();
    let at = al
        .iter()
        .zip(&bl)
        .position(|(x, y)| x != y)
        .unwrap_or(al.len().min(bl.len()));
    let context =
        |lines: &[&str]| lines[at.saturating_sub(6)..(at + 2).min(lines.len())].join("\n");
    Err(StoreError::RoundTrip {
        version: committed.version,
        committed: context(&al),
        read: context(&bl),
    })
}

/// Applies `corruptions` to version `version` under `root`; returns the damaged snapshot when
/// any corruption works on content.
fn damage(
    root: &Path,
    version: u64,
    corruptions: &[Corruption],
) -> Result<Option<Snapshot>, StoreError> {
    let content: Vec<&ContentCorruption> = corruptions
        .iter()
        .filter_map(|c| match c {
            Corruption::Content(c) => Some(c),
            Corruption::ManifestBytes(_) | Corruption::FileBytes(_) => None,
        })
        .collect();
    let before = Dataset::open(root)?.read_version(version)?;
    let mut damaged = None;
    if !content.is_empty() {
        let (mut snapshot, mut layout) = Dataset::open(root)?.read_version(version)?;
        let before = snapshot.clone();
        for c in content {
            apply_to_snapshot(&mut snapshot, c)?;
        }
        rewrite_changed_files(root, &before, &mut snapshot, &mut layout)?;
        // Files of v2.1 and later record no struct positions (as the writer wrote them).
        let leaf_only: std::collections::BTreeSet<String> = layout
            .fragments
            .iter()
            .flat_map(|f| f.files.iter().chain(&f.overlays))
            .filter(|l| file_version(l) != DataFileVersion::V2_0)
            .map(|l| l.path.clone())
            .collect();
        let recorded = leaf_positions_only(&snapshot, &|path| leaf_only.contains(path));
        let (manifest, index) = encode_manifest(&recorded, &layout)?;
        write(
            root,
            &layout.manifest,
            &encode_manifest_file(&manifest, index.as_ref())?,
        )?;
        damaged = Some(snapshot);
    }
    // The byte-level stages, in the case's order (a later one damages the earlier's output).
    for c in corruptions {
        match c {
            Corruption::Content(_) => {}
            Corruption::ManifestBytes(c) => bytes::edit_manifest(root, version, c)?,
            Corruption::FileBytes(c) => bytes::damage_files(root, version, c)?,
        }
    }
    for c in corruptions {
        place_decoys(root, &before, c)?;
    }
    Ok(damaged)
}

/// Where a reader that does not confine paths to `data/` would look for a data file whose
/// manifest path is `path`: Lance's object-store mapping, which keeps the whole path as one
/// file name under `data/` with `/` percent-encoded (`data/..%2Fx.lance`), and, for a relative
/// path, plain joining to `data/` when the result stays inside the dataset root
/// (`data/../x.lance` is `x.lance`). Both relative to the dataset root.
pub fn decoy_paths(path: &str) -> Vec<String> {
    let encoded: String = path
        .chars()
        .map(|c| match c {
            '%' => "%25".to_string(),
            '/' => "%2F".to_string(),
            c => c.to_string(),
        })
        .collect();
    let mut out = vec![format!("data/{encoded}")];
    if !path.starts_with('/') {
        let mut parts: Vec<&str> = vec!["data"];
        let mut inside = true;
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => inside &= parts.pop().is_some(),
                p => parts.push(p),
            }
        }
        let joined = parts.join("/");
        if inside && !parts.is_empty() && !out.contains(&joined) && joined != format!("data/{path}")
        {
            out.push(joined);
        }
    }
    out
}

/// A decoy for a path the rules refuse (`set_data_file_path`): a copy of the file
/// the manifest named before the damage, at every place [`decoy_paths`] gives. A reader that
/// refuses the path never opens a decoy; one that follows the path finds a valid data file of
/// the right size, reads it, and so fails the case instead of passing it by a "not found".
fn place_decoys(
    root: &Path,
    (snapshot, layout): &(Snapshot, Layout),
    c: &Corruption,
) -> Result<(), StoreError> {
    let Corruption::ManifestBytes(ManifestBytesCorruption::SetDataFilePath {
        fragment,
        file,
        path,
    }) = c
    else {
        return Ok(());
    };
    // A path the rules refuse that a careless reader still resolves to a file: absolute,
    // with a `..`, or with an empty or `.` component (`sub//x.lance` is `sub/x.lance`).
    let resolvable = path.starts_with('/')
        || path
            .split('/')
            .any(|p| p == ".." || p == "." || p.is_empty());
    if !resolvable {
        return Ok(());
    }
    let what = c.name();
    let missing = |problem: String| {
        StoreError::Corrupt(CorruptError::Target {
            what: what.clone(),
            problem,
        })
    };
    let position = snapshot
        .fragments
        .iter()
        .position(|f| f.id == *fragment)
        .ok_or_else(|| missing(format!("no fragment {fragment}")))?;
    let original = layout
        .fragments
        .get(position)
        .and_then(|f| f.files.get(*file))
        .ok_or_else(|| missing(format!("no file {file} in fragment {fragment}")))?;
    let bytes = std::fs::read(root.join(&original.path)).map_err(|e| missing(e.to_string()))?;
    for decoy in decoy_paths(path) {
        write(root, &decoy, &bytes)?;
    }
    Ok(())
}

fn write(root: &Path, rel: &str, bytes: &[u8]) -> Result<(), StoreError> {
    let path = root.join(rel);
    let made = match path.parent() {
        Some(parent) => std::fs::create_dir_all(parent),
        None => Ok(()),
    };
    made.and_then(|()| std::fs::write(&path, bytes))
        .map_err(|e| {
            StoreError::from(DatasetError::Io {
                file: rel.to_string(),
                operation: "write",
                problem: e.to_string(),
            })
        })
}

/// Writes every data or overlay file whose fields or columns the damage changed as a new file
/// (`<name>-damaged.lance`), and a changed deletion vector as a new deletion file (named as the
/// writer names them), and points the snapshot and layout at them.
fn rewrite_changed_files(
    root: &Path,
    before: &Snapshot,
    after: &mut Snapshot,
    layout: &mut Layout,
) -> Result<(), StoreError> {
    let schema = after.schema.clone();
    for (i, fragment) in after.fragments.iter_mut().enumerate() {
        let Some(old) = before.fragments.iter().find(|f| f.id == fragment.id) else {
            continue;
        };
        let Some(fl) = layout.fragments.get_mut(i) else {
            continue;
        };
        if old.deletions != fragment.deletions {
            let count = fragment.deletions.len();
            let form = lance_file_type(count);
            let bytes = write_deletion_file(&fragment.deletions, form);
            let digest = Sha256::digest(&bytes);
            let mut id = [0u8; 8];
            id.copy_from_slice(&digest[..8]);
            let deletion = deletion_layout(fragment.id, form, u64::from_le_bytes(id), count)?;
            write(root, &deletion.path, &bytes)?;
            fl.deletion = Some(deletion);
        }
        for (j, file) in fragment.files.iter_mut().enumerate() {
            let unchanged = old
                .files
                .get(j)
                .is_some_and(|o| format!("{o:?}") == format!("{file:?}"));
            if unchanged {
                continue;
            }
            if let Some(l) = fl.files.get_mut(j) {
                let bytes = data_file_bytes_in(file_version(l), &schema, file)?;
                relocate(root, &schema, file, l, &bytes)?;
            } else if let Some(first) = fl.files.first().cloned() {
                // A file the corruption added: in the version of the fragment's first file.
                let mut l = first;
                let bytes = data_file_bytes_in(file_version(&l), &schema, file)?;
                relocate(root, &schema, file, &mut l, &bytes)?;
                fl.files.push(l);
            }
        }
        for (k, overlay) in fragment.overlays.iter_mut().enumerate() {
            let unchanged = old
                .overlays
                .get(k)
                .is_some_and(|o| format!("{:?}", o.file) == format!("{:?}", overlay.file));
            if unchanged {
                continue;
            }
            if let Some(l) = fl.overlays.get_mut(k) {
                let bytes = overlay_file_bytes_in(file_version(l), &schema, overlay)?;
                relocate(root, &schema, &mut overlay.file, l, &bytes)?;
            }
        }
    }
    Ok(())
}

/// The version a file's manifest entry records (the writer writes v2.0, v2.1 and v2.2 only).
fn file_version(layout: &lance_reference_io::layout::FileLayout) -> DataFileVersion {
    match (layout.file_major_version, layout.file_minor_version) {
        (2, 1) => DataFileVersion::V2_1,
        (2, 2) => DataFileVersion::V2_2,
        _ => DataFileVersion::V2_0,
    }
}

fn relocate(
    root: &Path,
    schema: &lance_reference::model::Schema,
    file: &mut lance_reference::model::DataFile,
    layout: &mut lance_reference_io::layout::FileLayout,
    bytes: &[u8],
) -> Result<(), StoreError> {
    let stem = file
        .path
        .strip_suffix(".lance")
        .unwrap_or(&file.path)
        .to_string();
    file.path = format!("{stem}-damaged.lance");
    layout.path = format!("data/{}", file.path);
    // A v2.1+ file has a column per leaf: its struct positions take none.
    let columns = if file_version(layout) == DataFileVersion::V2_0 {
        file.fields.len()
    } else {
        file.fields
            .iter()
            .filter(|&&id| {
                schema
                    .field(id)
                    .is_none_or(|f| f.data_type != lance_reference::model::DataType::Struct)
            })
            .count()
    };
    layout.column_indices = (0..columns).map(|i| i as i32).collect();
    layout.file_size_bytes = bytes.len() as u64;
    write(root, &layout.path, bytes)
}
