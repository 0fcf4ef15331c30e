//! Confining every path a manifest names to the dataset root.
//!
//! Invariant: a path returned by [`data_file_path`] or [`checked_relative`] is a relative path
//! of plain, non-empty components, none of them `.` or `..`, with no backslash, NUL, or drive
//! or scheme prefix, so joining it to the dataset root cannot name a file outside the root.
//! A manifest is untrusted input: without this check, `fragments[0].files[0].path =
//! "../../etc/passwd"` would make a reader open (or a writer overwrite) an arbitrary file.
//!
//! `base_id` (Lance's multi-base datasets, `Manifest.base_paths`) is not supported by the kit:
//! any `base_id` on a data file or deletion file is refused, as
//! [`DatasetError::Unsupported`] when the manifest declares base paths and as
//! [`DatasetError::InvalidField`] when the id names no declared base path.

use super::error::DatasetError;

/// The directory of data files (base, overlay and lineage files), relative to the root.
pub const DATA_DIR: &str = "data";

/// Checks one relative path against the rules in the module docs. `file` and `field` name the
/// manifest and the field the path came from.
pub fn checked_relative(path: &str, file: &str, field: &str) -> Result<String, DatasetError> {
    let escape = |problem| DatasetError::PathEscape {
        file: file.to_string(),
        field: field.to_string(),
        path: path.to_string(),
        problem,
    };
    if path.is_empty() {
        return Err(escape("the path is empty"));
    }
    if path.contains('\0') {
        return Err(escape("contains a NUL byte"));
    }
    if path.contains('\\') {
        return Err(escape("contains a backslash"));
    }
    if path.starts_with('/') {
        return Err(escape("is absolute"));
    }
    if path.contains(':') {
        return Err(escape("contains ':' (a drive letter or URL scheme)"));
    }
    for component in path.split('/') {
        match component {
            "" => return Err(escape("has an empty component")),
            "." | ".." => return Err(escape("has a '.' or '..' component")),
            _ => {}
        }
    }
    Ok(path.to_string())
}

/// The root-relative path of a data file whose manifest `path` is relative to `data/`.
pub fn data_file_path(path: &str, file: &str, field: &str) -> Result<String, DatasetError> {
    Ok(format!(
        "{DATA_DIR}/{}",
        checked_relative(path, file, field)?
    ))
}

/// Refuses a `base_id`: unsupported when the manifest declares base paths (`declared` lists
/// their ids), invalid when it names none of them.
pub fn refuse_base_id(
    base_id: Option<u32>,
    declared: &[u32],
    file: &str,
    field: &str,
) -> Result<(), DatasetError> {
    match base_id {
        None => Ok(()),
        Some(id) if declared.contains(&id) => Err(DatasetError::Unsupported {
            file: file.to_string(),
            field: field.to_string(),
            feature: format!("base_id {id} (multi-base datasets, Manifest.base_paths)"),
        }),
        Some(id) => Err(DatasetError::InvalidField {
            file: file.to_string(),
            field: field.to_string(),
            problem: format!("base_id {id} names no entry of Manifest.base_paths"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_relative_paths_pass() {
        // covers: DS-PATH-1
        assert_eq!(data_file_path("a.lance", "m", "f").unwrap(), "data/a.lance");
        assert_eq!(
            data_file_path("sub/a.lance", "m", "f").unwrap(),
            "data/sub/a.lance"
        );
    }

    #[test]
    fn escapes_are_refused_naming_the_field() {
        // covers: DS-PATH-2, DS-PATH-3
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "a/",
            "./a",
            "a\\b",
            "a\0b",
            "C:x",
            "s3://bucket/x",
        ] {
            let err = data_file_path(bad, "_versions/1.manifest", "fragments[2].files[0].path")
                .unwrap_err();
            assert_eq!(err.code(), "path_escape", "{bad:?}");
            assert!(err.to_string().contains("fragments[2].files[0].path"));
        }
    }

    #[test]
    fn base_ids_are_refused() {
        // covers: DS-PATH-4
        assert!(refuse_base_id(None, &[], "m", "f").is_ok());
        assert_eq!(
            refuse_base_id(Some(1), &[1], "m", "f").unwrap_err().code(),
            "unsupported"
        );
        assert_eq!(
            refuse_base_id(Some(2), &[1], "m", "f").unwrap_err().code(),
            "invalid_field"
        );
    }
}
