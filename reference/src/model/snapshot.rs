//! A snapshot: everything one dataset version's manifest says.
//!
//! Invariant: a validated snapshot has a valid schema, unique fragment ids, fragments that
//! pass [`Fragment::validate`] for this version, and indices whose `dataset_version` is not in
//! the future. Flags are checked against content by [`crate::flags`].

use std::collections::BTreeMap;

use super::fragment::Fragment;
use super::index::Index;
use super::schema::Schema;
use crate::error::{Error, Result};

/// One dataset version.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The dataset version.
    pub version: u64,
    /// The schema.
    pub schema: Schema,
    /// Fragments in manifest order.
    pub fragments: Vec<Fragment>,
    /// Indices.
    pub indices: Vec<Index>,
    /// Table config (`lance.row_lineage.spill`, ...). Ordered, so output is deterministic.
    pub config: BTreeMap<String, String>,
    /// Whether stable row ids are on.
    pub stable_row_ids: bool,
    /// The next stable row id to assign.
    pub next_row_id: u64,
    /// Reader feature flags as stored.
    pub reader_flags: u64,
    /// Writer feature flags as stored.
    pub writer_flags: u64,
}

impl Snapshot {
    /// The fragment with id `id`.
    pub fn fragment(&self, id: u64) -> Result<&Fragment> {
        self.fragments
            .iter()
            .find(|f| f.id == id)
            .ok_or_else(|| Error::UnknownFragment {
                fragment: id,
                context: "lookup".into(),
            })
    }

    /// The index named `name`.
    pub fn index(&self, name: &str) -> Option<&Index> {
        self.indices.iter().find(|i| i.name == name)
    }

    /// Validates every fragment and index against this version.
    pub fn validate(&self) -> Result<()> {
        self.check(true)
    }

    /// The part of [`Snapshot::validate`] the manifest alone decides (no column is looked at,
    /// [`Fragment::validate_manifest`]), in the same order.
    pub fn validate_manifest(&self) -> Result<()> {
        self.check(false)
    }

    fn check(&self, data: bool) -> Result<()> {
        self.validate_with(|_, frag| {
            if data {
                frag.validate(&self.schema, self.version)
            } else {
                frag.validate_manifest(&self.schema, self.version)
            }
        })
    }

    /// [`Snapshot::validate`] with each fragment's own check (its [`Fragment::validate`]) given
    /// by `fragment(i, &fragments[i])`, in the same order: a reader that checked its fragments
    /// one at a time, dropping their columns, passes each fragment's outcome here.
    pub fn validate_with(
        &self,
        mut fragment: impl FnMut(usize, &Fragment) -> Result<()>,
    ) -> Result<()> {
        for (i, frag) in self.fragments.iter().enumerate() {
            if self.fragments[..i].iter().any(|f| f.id == frag.id) {
                return Err(Error::DuplicateFragmentId { fragment: frag.id });
            }
            fragment(i, frag)?;
        }
        for index in &self.indices {
            if index.dataset_version > self.version {
                return Err(Error::InvalidIndex {
                    index: index.name.clone(),
                    problem: format!(
                        "dataset_version {} is newer than the snapshot's version {}",
                        index.dataset_version, self.version
                    ),
                });
            }
            for &field in &index.fields {
                if self.schema.field(field).is_none() {
                    return Err(Error::UnknownField {
                        field,
                        context: format!("index {}", index.name),
                    });
                }
            }
        }
        Ok(())
    }
}
