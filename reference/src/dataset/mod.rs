//! On-disk I/O of a Lance dataset: the bytes of data files (and, later, manifests and the other
//! files a dataset directory holds).
//!
//! Invariant: nothing in this tree interprets table semantics. Readers turn bytes into the plain
//! values of [`crate::model`] (or a typed error naming the file and the structure that is
//! wrong); writers turn those values into bytes Lance 14.0.2 reads. Resolution, lineage and
//! overlays live elsewhere and never see bytes.

pub mod data_file;
