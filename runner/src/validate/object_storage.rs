//! A table on object storage (S3, GCS, Azure) as a [`Storage`], through the `object_store`
//! crate. Built only with the `object-store` feature.
//!
//! Invariant: every request goes through `object_store` with its own client, credentials and
//! retry policy ([`RetryConfig`]: exponential backoff on throttling, 5xx answers and
//! connection errors, ten attempts within three minutes by default); nothing here speaks HTTP,
//! signs a request or retries by hand. The three questions of [`Storage`] map onto one call
//! each: `list_with_delimiter` (one level, names only), `head` (the size) and `get_range` (a
//! ranged GET for exactly the bytes asked). An empty listing is a missing directory, as an
//! object store has no directory without an object under it. The async calls run to
//! completion on one small runtime owned by the storage, from whichever thread asks.

use std::ops::Range;
use std::sync::Arc;

use lance_reference_io::{Storage, StorageError};
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::{Path as StorePath, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, RetryConfig};

/// An object-store prefix holding one table.
#[derive(Debug)]
pub struct ObjectStorage {
    uri: String,
    store: Arc<dyn ObjectStore>,
    prefix: StorePath,
    runtime: tokio::runtime::Runtime,
}

fn store_error(e: object_store::Error) -> StorageError {
    match e {
        object_store::Error::NotFound { .. } => StorageError::NotFound,
        other => StorageError::Other(other.to_string()),
    }
}

/// Why the storage for a URI could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ObjectStorageError {
    /// The location does not parse as a URI.
    #[error("not a URI: {0}")]
    NotAUri(url::ParseError),
    /// The store's builder refused the URI or its configuration from the environment.
    #[error("{0}")]
    Store(object_store::Error),
    /// The URI's path is not a store path.
    #[error("{0}")]
    Prefix(object_store::path::Error),
    /// The I/O runtime did not start.
    #[error("cannot start the I/O runtime: {0}")]
    Runtime(std::io::Error),
}

impl ObjectStorage {
    /// The storage for `uri` (`s3://bucket/prefix`, `gs://...`, `az://container/prefix`), with
    /// the builder's configuration from the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
    pub fn from_uri(uri: &str) -> Result<ObjectStorage, ObjectStorageError> {
        let url = url::Url::parse(uri).map_err(ObjectStorageError::NotAUri)?;
        let retry = RetryConfig::default();
        let store: Arc<dyn ObjectStore> = match url.scheme() {
            "s3" | "s3a" => Arc::new(
                AmazonS3Builder::from_env()
                    .with_url(uri)
                    .with_retry(retry)
                    .build()
                    .map_err(ObjectStorageError::Store)?,
            ),
            "gs" | "gcs" => Arc::new(
                GoogleCloudStorageBuilder::from_env()
                    .with_url(uri)
                    .with_retry(retry)
                    .build()
                    .map_err(ObjectStorageError::Store)?,
            ),
            _ => Arc::new(
                MicrosoftAzureBuilder::from_env()
                    .with_url(uri)
                    .with_retry(retry)
                    .build()
                    .map_err(ObjectStorageError::Store)?,
            ),
        };
        let prefix = StorePath::from_url_path(url.path()).map_err(ObjectStorageError::Prefix)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(ObjectStorageError::Runtime)?;
        Ok(ObjectStorage {
            uri: uri.to_string(),
            store,
            prefix,
            runtime,
        })
    }

    /// The object path of the root-relative `rel`.
    fn location(&self, rel: &str) -> StorePath {
        self.prefix
            .parts()
            .chain(
                rel.split('/')
                    .filter(|p| !p.is_empty())
                    .map(|p| PathPart::from(p.to_string())),
            )
            .collect()
    }
}

impl Storage for ObjectStorage {
    fn describe(&self) -> String {
        self.uri.clone()
    }

    fn list(&self, dir: &str) -> Result<Vec<String>, StorageError> {
        let location = self.location(dir);
        let listed = self
            .runtime
            .block_on(self.store.list_with_delimiter(Some(&location)))
            .map_err(store_error)?;
        if listed.objects.is_empty() && listed.common_prefixes.is_empty() {
            return Err(StorageError::NotFound);
        }
        let mut names: Vec<String> = listed
            .objects
            .iter()
            .filter_map(|o| o.location.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    fn size(&self, path: &str) -> Result<u64, StorageError> {
        let location = self.location(path);
        let meta = self
            .runtime
            .block_on(self.store.head(&location))
            .map_err(store_error)?;
        Ok(meta.size)
    }

    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Vec<u8>, StorageError> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let want = range.end - range.start;
        let location = self.location(path);
        let bytes = self
            .runtime
            .block_on(self.store.get_range(&location, range.clone()))
            .map_err(store_error)?;
        if bytes.len() as u64 != want {
            return Err(StorageError::Other(format!(
                "short read: {} of {want} bytes at offset {}",
                bytes.len(),
                range.start
            )));
        }
        Ok(bytes.to_vec())
    }
}
