//! Manifest file names in `_versions/`, and listing the versions a directory holds.
//!
//! Invariant: [`list_versions`] returns each version at most once, sorted, from a directory
//! that uses one naming scheme only; the scheme of a name is detected exactly as Lance 14
//! detects it (a name ending in `manifest` that is 29 characters long is V2, any other such
//! name V1; a `d` prefix marks a detached version, which counts as V2), so the same directory
//! lists the same versions here and in Lance. Writers use [`manifest_name`], the V2 name Lance
//! 14 gives new datasets.
//!
//! | scheme | name of version `v` | example (v = 1) |
//! |---|---|---|
//! | V1 | `{v}.manifest` | `1.manifest` |
//! | V2 | `{u64::MAX - v:020}.manifest` | `18446744073709551614.manifest` |
//! | detached | `d{v}.manifest` (`v` has bit 63 set) | `d9223372036854775809.manifest` |
//!
//! Rules of the kit, where Lance is lenient:
//! - Names that do not end in `manifest` are ignored (Lance's temporary files,
//!   `latest_version_hint.json`).
//! - A name that ends in `manifest` but is not `<decimal>.manifest` (or `d<decimal>.manifest`)
//!   is refused ([`DatasetError::BadVersionName`]); Lance silently skips it after using it for
//!   scheme detection. A `d` name not ending in `manifest` is ignored (Lance would count it
//!   as V2).
//! - Two names of one version (e.g. `1.manifest` and `01.manifest`) are refused.
//! - Mixing V1 names with V2 or detached names is refused, as Lance refuses it.

use std::path::Path;

use super::error::DatasetError;
use super::storage::{LocalStorage, Storage, StorageError};

/// The directory holding manifests, relative to the dataset root.
pub const VERSIONS_DIR: &str = "_versions";
/// The optional latest-version hint file inside [`VERSIONS_DIR`].
pub const VERSION_HINT_FILE: &str = "latest_version_hint.json";
/// Bit 63 marks a detached version.
pub const DETACHED_VERSION_MASK: u64 = 1 << 63;

/// Length of a V2 name: 20 digits, a dot, `manifest`.
const V2_NAME_LEN: usize = 29;
const SUFFIX: &str = ".manifest";

/// A manifest naming scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NamingScheme {
    /// `{version}.manifest`.
    V1,
    /// `{u64::MAX - version:020}.manifest` (detached names count as V2).
    V2,
}

/// One manifest found in `_versions/`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct VersionEntry {
    /// The version the name denotes.
    pub version: u64,
    /// The file name (inside `_versions/`).
    pub name: String,
    /// The naming scheme of the name.
    pub scheme: NamingScheme,
    /// Whether this is a detached version (`d{version}.manifest`).
    pub detached: bool,
}

/// The V2 file name of `version`: `{u64::MAX - version:020}.manifest`.
pub fn manifest_name(version: u64) -> String {
    format!("{:020}{SUFFIX}", u64::MAX - version)
}

/// The scheme Lance detects for a name, or `None` when the name is ignored.
pub fn detect_scheme(name: &str) -> Option<NamingScheme> {
    if !name.ends_with("manifest") {
        return None;
    }
    if name.starts_with('d') || name.len() == V2_NAME_LEN {
        Some(NamingScheme::V2)
    } else {
        Some(NamingScheme::V1)
    }
}

/// Parses one file name; `Ok(None)` for names that are ignored.
pub fn parse_manifest_name(name: &str) -> Result<Option<VersionEntry>, DatasetError> {
    let Some(scheme) = detect_scheme(name) else {
        return Ok(None);
    };
    let bad = |problem| DatasetError::BadVersionName {
        file: name.to_string(),
        problem,
    };
    let stem = name
        .strip_suffix(SUFFIX)
        .ok_or(bad("does not end in \".manifest\""))?;
    let (detached, digits) = match stem.strip_prefix('d') {
        Some(rest) => (true, rest),
        None => (false, stem),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("the part before \".manifest\" is not a decimal number"));
    }
    let number: u64 = digits
        .parse()
        .map_err(|_| bad("the number does not fit a u64"))?;
    let version = match (detached, scheme) {
        (true, _) => {
            if number & DETACHED_VERSION_MASK == 0 {
                return Err(bad("a detached version must have bit 63 set"));
            }
            number
        }
        (false, NamingScheme::V1) => number,
        (false, NamingScheme::V2) => u64::MAX - number,
    };
    if !detached && version & DETACHED_VERSION_MASK != 0 {
        return Err(bad("an attached version must not have bit 63 set"));
    }
    Ok(Some(VersionEntry {
        version,
        name: name.to_string(),
        scheme,
        detached,
    }))
}

/// Checks a list of names (one directory's listing) and returns its manifests sorted by
/// version; `dir` names the directory in errors.
pub fn versions_from_names<'a>(
    dir: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<VersionEntry>, DatasetError> {
    let mut entries = Vec::new();
    for name in names {
        if let Some(entry) = parse_manifest_name(name)? {
            entries.push(entry);
        }
    }
    entries.sort();
    let v1 = entries.iter().find(|e| e.scheme == NamingScheme::V1);
    let v2 = entries.iter().find(|e| e.scheme == NamingScheme::V2);
    if let (Some(a), Some(b)) = (v1, v2) {
        return Err(DatasetError::MixedNamingSchemes {
            dir: dir.to_string(),
            v1: a.name.clone(),
            v2: b.name.clone(),
        });
    }
    if let Some(pair) = entries.windows(2).find(|w| w[0].version == w[1].version) {
        return Err(DatasetError::DuplicateVersion {
            version: pair[0].version,
            first: pair[0].name.clone(),
            second: pair[1].name.clone(),
        });
    }
    Ok(entries)
}

/// Lists the manifests of the dataset at `root`, sorted by version.
pub fn list_versions(root: &Path) -> Result<Vec<VersionEntry>, DatasetError> {
    list_versions_in(&LocalStorage::new(root))
}

/// Lists the manifests `storage` holds under `_versions/`, sorted by version.
pub fn list_versions_in(storage: &dyn Storage) -> Result<Vec<VersionEntry>, DatasetError> {
    let shown = VERSIONS_DIR.to_string();
    let names = storage.list(VERSIONS_DIR).map_err(|e| DatasetError::Io {
        file: shown.clone(),
        operation: "list",
        problem: match e {
            StorageError::NotFound => "no such directory".into(),
            StorageError::Other(problem) => problem,
        },
    })?;
    versions_from_names(&shown, names.iter().map(String::as_str))
}

/// The content of `latest_version_hint.json` for `version`: `{"version":N}`, no spaces.
pub fn version_hint(version: u64) -> String {
    format!("{{\"version\":{version}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_name_of_version_one_matches_lance() {
        // covers: DS-NAME-1
        assert_eq!(manifest_name(1), "18446744073709551614.manifest");
        assert_eq!(manifest_name(1).len(), V2_NAME_LEN);
        let e = parse_manifest_name(&manifest_name(42)).unwrap().unwrap();
        assert_eq!(
            (e.version, e.scheme, e.detached),
            (42, NamingScheme::V2, false)
        );
    }

    #[test]
    fn scheme_detection_is_by_length() {
        assert_eq!(detect_scheme("1.manifest"), Some(NamingScheme::V1));
        // A V1 name padded to 20 digits is taken as V2, as in Lance.
        let padded = format!("{:020}.manifest", 5);
        assert_eq!(detect_scheme(&padded), Some(NamingScheme::V2));
        // ... which denotes u64::MAX - 5, a version with bit 63 set: refused as attached.
        assert_eq!(
            parse_manifest_name(&padded).unwrap_err().code(),
            "bad_version_name"
        );
        assert_eq!(detect_scheme(".tmp_7.manifest_9c10"), None);
        assert_eq!(detect_scheme("latest_version_hint.json"), None);
    }

    #[test]
    fn detached_names_need_bit_63() {
        let v = DETACHED_VERSION_MASK | 7;
        let e = parse_manifest_name(&format!("d{v}.manifest"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (e.version, e.detached, e.scheme),
            (v, true, NamingScheme::V2)
        );
        assert_eq!(
            parse_manifest_name("d7.manifest").unwrap_err().code(),
            "bad_version_name"
        );
    }

    #[test]
    fn listing_sorts_ignores_and_refuses() {
        // covers: DS-NAME-1
        let names = [
            "3.manifest",
            "1.manifest",
            "latest_version_hint.json",
            "2.manifest",
        ];
        let listed = versions_from_names("_versions", names).unwrap();
        assert_eq!(
            listed.iter().map(|e| e.version).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let mixed = ["1.manifest".to_string(), manifest_name(2)];
        let err = versions_from_names("_versions", mixed.iter().map(String::as_str)).unwrap_err();
        assert_eq!(err.code(), "mixed_naming_schemes");
        let dup = versions_from_names("_versions", ["1.manifest", "01.manifest"]).unwrap_err();
        assert_eq!(dup.code(), "duplicate_version");
        let junk = versions_from_names("_versions", ["x.manifest"]).unwrap_err();
        assert_eq!(junk.code(), "bad_version_name");
        let junk = versions_from_names("_versions", ["1manifest"]).unwrap_err();
        assert_eq!(junk.code(), "bad_version_name");
    }

    #[test]
    fn hint_has_no_spaces() {
        assert_eq!(version_hint(2), "{\"version\":2}");
    }
}
