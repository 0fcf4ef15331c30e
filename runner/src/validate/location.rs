//! Where the table `validate` judges lives: a table URI or a plain path, turned into the
//! [`Storage`] every read goes through.
//!
//! Invariant: a plain path and a `file://` URI are the local file system
//! ([`LocalStorage`]) in every build; `s3://`, `gs://` and `az://` (also `s3a://`, `gcs://`,
//! `azure://`, `abfs://`, `abfss://`) are read through the `object_store` crate, with the
//! credentials and endpoint its builders take from the usual environment variables
//! (`AWS_*`, `GOOGLE_*`, `AZURE_*`), only in a build with the `object-store` feature; without
//! it such a URI is refused by name before anything is read, never read some other way. Any
//! other scheme is refused. Listing, ranged reads and retries of a remote table are
//! `object_store`'s (`object_storage.rs`), not code of ours.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lance_reference_io::{LocalStorage, Storage};

/// The remote schemes, by the store that serves them.
const REMOTE_SCHEMES: [&str; 8] = ["s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss"];

/// A table location as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A local directory (a plain path or a `file://` URI).
    Local(PathBuf),
    /// An object-store URI (`s3://bucket/prefix`, ...): the URI and its scheme.
    Remote {
        /// The URI as given.
        uri: String,
        /// Its scheme, lower-cased.
        scheme: String,
    },
}

/// Why a location cannot be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    /// A scheme no store serves.
    #[error("{uri}: unknown scheme {scheme:?} (a path, file://, s3://, gs:// or az://)")]
    UnknownScheme {
        /// The URI.
        uri: String,
        /// Its scheme.
        scheme: String,
    },
    /// A remote URI in a build without the `object-store` feature.
    #[error(
        "{uri}: {scheme}:// tables are read through object_store, which this build leaves out \
         (build with `--features object-store`)"
    )]
    NotBuiltIn {
        /// The URI.
        uri: String,
        /// Its scheme.
        scheme: String,
    },
    /// The object store refused the URI or its configuration (credentials, bucket name).
    #[error("{uri}: {problem}")]
    Store {
        /// The URI.
        uri: String,
        /// The store's words.
        problem: String,
    },
}

impl Location {
    /// Parses a command-line table argument: `scheme://...` is a URI, anything else a path.
    pub fn parse(arg: &str) -> Result<Location, LocationError> {
        let Some((scheme, rest)) = arg.split_once("://") else {
            return Ok(Location::Local(PathBuf::from(arg)));
        };
        let lower = scheme.to_ascii_lowercase();
        if lower == "file" {
            return Ok(Location::Local(PathBuf::from(rest)));
        }
        if REMOTE_SCHEMES.contains(&lower.as_str()) {
            return Ok(Location::Remote {
                uri: arg.to_string(),
                scheme: lower,
            });
        }
        Err(LocationError::UnknownScheme {
            uri: arg.to_string(),
            scheme: scheme.to_string(),
        })
    }

    /// The local directory, when the table is local.
    pub fn local_path(&self) -> Option<&Path> {
        match self {
            Location::Local(p) => Some(p),
            Location::Remote { .. } => None,
        }
    }

    /// The storage that reads the table.
    pub fn storage(&self) -> Result<Arc<dyn Storage>, LocationError> {
        match self {
            Location::Local(p) => Ok(Arc::new(LocalStorage::new(p))),
            Location::Remote { uri, scheme } => remote(uri, scheme),
        }
    }
}

#[cfg(feature = "object-store")]
fn remote(uri: &str, _scheme: &str) -> Result<Arc<dyn Storage>, LocationError> {
    super::object_storage::ObjectStorage::from_uri(uri)
        .map(|s| Arc::new(s) as Arc<dyn Storage>)
        .map_err(|problem| LocationError::Store {
            uri: uri.to_string(),
            problem: problem.to_string(),
        })
}

#[cfg(not(feature = "object-store"))]
fn remote(uri: &str, scheme: &str) -> Result<Arc<dyn Storage>, LocationError> {
    Err(LocationError::NotBuiltIn {
        uri: uri.to_string(),
        scheme: scheme.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_file_uris_are_local_and_remote_schemes_are_named() {
        assert_eq!(
            Location::parse("/tmp/t").unwrap(),
            Location::Local("/tmp/t".into())
        );
        assert_eq!(
            Location::parse("file:///tmp/t").unwrap(),
            Location::Local("/tmp/t".into())
        );
        for uri in ["s3://b/t", "gs://b/t", "az://c/t", "S3://b/t"] {
            assert!(
                matches!(Location::parse(uri).unwrap(), Location::Remote { .. }),
                "{uri}"
            );
        }
        assert!(matches!(
            Location::parse("ftp://h/t"),
            Err(LocationError::UnknownScheme { .. })
        ));
    }

    #[cfg(not(feature = "object-store"))]
    #[test]
    fn a_remote_uri_without_the_feature_is_refused_by_name() {
        let err = Location::parse("s3://bucket/table")
            .unwrap()
            .storage()
            .unwrap_err();
        assert!(err.to_string().contains("--features object-store"), "{err}");
    }
}
