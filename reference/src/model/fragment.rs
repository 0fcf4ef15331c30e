//! Fragments, their data files, overlays and lineage.
//!
//! Invariant: after [`Fragment::validate`] succeeds, every lookup the resolver makes is in
//! bounds: each base column holds `physical_rows` values, each overlay coverage offset is below
//! `physical_rows`, each live overlay value column holds exactly one value per covered offset
//! (in rank order), each live field has at most one base column, every value fits its field's
//! type, and every base source of a struct's validity (its v2.0 column, its layer in v2.1+ leaf
//! columns) has one bit per row and agrees with the others. Tombstoned (`-2`) and other
//! negative ids keep their positions (so per-field bitmaps stay aligned) but are never read as
//! user data.

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_buffer::NullBuffer;
use roaring::RoaringBitmap;

use super::column::{Column, Misfit};
use super::schema::{DataType, FieldId, Schema};
use crate::error::{Error, Result};

/// The field id that marks a dead column in a data file or overlay.
pub const TOMBSTONE_FIELD_ID: FieldId = -2;
/// Reserved field id of the hidden `_rowid` lineage column.
pub const ROW_ID_FIELD_ID: FieldId = -3;
/// Reserved field id of the hidden `_row_created_at_version` lineage column.
pub const CREATED_AT_FIELD_ID: FieldId = -4;
/// Reserved field id of the hidden `_row_last_updated_at_version` lineage column.
pub const LAST_UPDATED_AT_FIELD_ID: FieldId = -5;

/// A data file: field ids and one column per field (aligned by position).
#[derive(Debug, Clone, PartialEq)]
pub struct DataFile {
    /// Path relative to the dataset's `data/` directory.
    pub path: String,
    /// Field ids by column position; `-2` marks a tombstoned column.
    pub fields: Vec<FieldId>,
    /// Columns, aligned with `fields`.
    pub columns: Vec<Column>,
}

/// Which offsets an overlay provides values for.
#[derive(Debug, Clone, PartialEq)]
pub enum Coverage {
    /// One bitmap shared by every field (a rectangular update).
    Dense(RoaringBitmap),
    /// One bitmap per `data_file.fields` position (tombstoned positions included).
    Sparse(Vec<RoaringBitmap>),
}

impl Coverage {
    /// The bitmap that applies to the field at `position` of the overlay's data file.
    pub fn at(&self, position: usize) -> Option<&RoaringBitmap> {
        match self {
            Coverage::Dense(b) => Some(b),
            Coverage::Sparse(bs) => bs.get(position),
        }
    }
}

/// A data overlay file attached to a fragment.
#[derive(Debug, Clone, PartialEq)]
pub struct Overlay {
    /// The value file: one column per field, value `k` belongs to the `k`-th covered offset.
    pub file: DataFile,
    /// Which offsets each field covers.
    pub coverage: Coverage,
    /// The dataset version at which the overlay became effective.
    pub committed_version: u64,
}

impl Overlay {
    /// The same overlay with its data file at `path`.
    pub fn with_path(mut self, path: &str) -> Overlay {
        self.file.path = path.to_string();
        self
    }
}

/// Where one lineage sequence of a fragment lives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LineageSequence {
    /// Not recorded.
    #[default]
    Absent,
    /// In the manifest: one value per physical row (decoded).
    Inline(Vec<u64>),
    /// In the hidden `uint64` column of the one data file whose `fields` hold the reserved id.
    Column,
}

/// A fragment's three lineage sequences.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lineage {
    /// Stable row ids (`_rowid`, field -3).
    pub row_ids: LineageSequence,
    /// Created-at versions (`_row_created_at_version`, field -4).
    pub created_at: LineageSequence,
    /// Last-updated-at versions (`_row_last_updated_at_version`, field -5).
    pub last_updated_at: LineageSequence,
}

/// One fragment.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragment {
    /// Fragment id.
    pub id: u64,
    /// Rows physically stored, deleted rows included.
    pub physical_rows: u64,
    /// Base data files (and any lineage-only file).
    pub files: Vec<DataFile>,
    /// Deleted physical offsets.
    pub deletions: RoaringBitmap,
    /// Overlays in stored order.
    pub overlays: Vec<Overlay>,
    /// Row lineage.
    pub lineage: Lineage,
}

impl Fragment {
    /// A fragment with one base file holding `columns` for `fields`, no deletions or overlays.
    pub fn new(id: u64, path: &str, fields: Vec<FieldId>, columns: Vec<Column>) -> Fragment {
        let physical_rows = columns.first().map_or(0, |c| c.len() as u64);
        Fragment {
            id,
            physical_rows,
            files: vec![DataFile {
                path: path.to_string(),
                fields,
                columns,
            }],
            deletions: RoaringBitmap::new(),
            overlays: Vec::new(),
            lineage: Lineage::default(),
        }
    }

    /// `physical_rows` as a count of row offsets. Offsets are 32-bit (coverage and deletion
    /// bitmaps are 32-bit roaring), so a fragment claiming more rows is refused before anything
    /// is enumerated or allocated for it.
    pub fn offset_count(&self) -> Result<u32> {
        u32::try_from(self.physical_rows).map_err(|_| Error::OffsetOutOfRange {
            fragment: self.id,
            file: "(manifest)".into(),
            what: "physical_rows".into(),
            offset: self.physical_rows,
            physical_rows: u64::from(u32::MAX),
        })
    }

    /// The live (non-deleted) physical offsets, in order. Offsets are 32-bit in Lance, so a
    /// fragment claiming more rows than that is refused before anything is enumerated.
    pub fn live_offsets(&self) -> Result<impl Iterator<Item = u32> + '_> {
        let rows = self.offset_count()?;
        Ok((0..rows).filter(|&o| !self.deletions.contains(o)))
    }

    /// The decoded values of one lineage sequence, wherever it lives; `None` when absent.
    pub fn lineage_values(&self, field: FieldId) -> Result<Option<Vec<u64>>> {
        Ok(self.lineage_slice(field)?.map(<[u64]>::to_vec))
    }

    /// The decoded values of one lineage sequence, borrowed from where the fragment holds
    /// them (its inline sequence, or its hidden `uint64` column), so that a reader of a large
    /// fragment does not copy 8 bytes per row and sequence; `None` when absent.
    pub fn lineage_slice(&self, field: FieldId) -> Result<Option<&[u64]>> {
        let seq = match field {
            ROW_ID_FIELD_ID => &self.lineage.row_ids,
            CREATED_AT_FIELD_ID => &self.lineage.created_at,
            LAST_UPDATED_AT_FIELD_ID => &self.lineage.last_updated_at,
            _ => {
                return Err(Error::UnknownField {
                    field,
                    context: "lineage".into(),
                });
            }
        };
        match seq {
            LineageSequence::Absent => Ok(None),
            LineageSequence::Inline(v) => Ok(Some(v.as_slice())),
            LineageSequence::Column => {
                let (_, column) = self.lineage_column(field)?;
                let uint64 = column.array().as_primitive_opt::<UInt64Type>();
                match (uint64, column.first_null()) {
                    (Some(values), None) => Ok(Some(values.values().as_ref())),
                    (_, null) => Err(Error::TypeMismatch {
                        fragment: self.id,
                        file: self.lineage_file_path(field),
                        field,
                        index: null.unwrap_or(0) as u64,
                        expected: "uint64 (non-null)".into(),
                        found: if null.is_some() {
                            "null"
                        } else {
                            column.kind()
                        }
                        .into(),
                    }),
                }
            }
        }
    }

    fn lineage_file_path(&self, field: FieldId) -> String {
        self.files
            .iter()
            .find(|f| f.fields.contains(&field))
            .map_or_else(String::new, |f| f.path.clone())
    }

    /// The one file holding the hidden column `field`, and that column.
    fn lineage_column(&self, field: FieldId) -> Result<(usize, &Column)> {
        let one = self.lineage_holder(field)?;
        let file = &self.files[one];
        file.fields
            .iter()
            .position(|&f| f == field)
            .and_then(|p| file.columns.get(p))
            .map(|c| (one, c))
            .ok_or_else(|| Error::ColumnCountMismatch {
                fragment: self.id,
                file: file.path.clone(),
                fields: file.fields.len(),
                columns: file.columns.len(),
            })
    }

    /// The one file whose `fields` hold the hidden column `field`.
    fn lineage_holder(&self, field: FieldId) -> Result<usize> {
        let holders: Vec<usize> = (0..self.files.len())
            .filter(|&i| self.files[i].fields.contains(&field))
            .collect();
        match holders.as_slice() {
            [one] => Ok(*one),
            [] => Err(Error::MissingLineageColumn {
                fragment: self.id,
                field,
            }),
            _ => Err(Error::DuplicateField {
                fragment: self.id,
                file: self.lineage_file_path(field),
                field,
                context: format!(
                    "a column lineage arm needs exactly one file holding the id, found {}",
                    holders.len()
                ),
            }),
        }
    }

    /// Checks every invariant the resolver relies on (see the module docs).
    ///
    /// `version` is the dataset version of the snapshot holding the fragment: an overlay cannot
    /// have become effective after it, nor at version 0.
    pub fn validate(&self, schema: &Schema, version: u64) -> Result<()> {
        self.check(schema, version, true)
    }

    /// The invariants of [`Fragment::validate`] that the manifest alone decides, in the same
    /// order: everything but the columns (their count, lengths and types, and the value count
    /// of each overlay position). A fragment whose files were not read (their `columns` empty)
    /// is judged by this.
    pub fn validate_manifest(&self, schema: &Schema, version: u64) -> Result<()> {
        self.check(schema, version, false)
    }

    /// The column `column` of `field` in base file `file` holds one value per physical row, or
    /// this is the [`Error::BaseLengthMismatch`] that leaves offsets without a value. The one
    /// statement of the rule: [`Fragment::validate`] applies it to every base column, and the
    /// resolution to the column it reads (a fragment may be resolved without being validated).
    pub fn check_base_length(&self, file: usize, field: FieldId, column: &Column) -> Result<()> {
        if column.len() as u64 == self.physical_rows {
            return Ok(());
        }
        Err(Error::BaseLengthMismatch {
            fragment: self.id,
            file: self.files[file].path.clone(),
            field,
            values: column.len() as u64,
            physical_rows: self.physical_rows,
        })
    }

    /// [`Fragment::validate`] (`data`) or [`Fragment::validate_manifest`].
    fn check(&self, schema: &Schema, version: u64, data: bool) -> Result<()> {
        let frag = self.id;
        if let Some(max) = self.deletions.max() {
            if u64::from(max) >= self.physical_rows {
                return Err(Error::OffsetOutOfRange {
                    fragment: frag,
                    file: "_deletions".into(),
                    what: "deletion".into(),
                    offset: u64::from(max),
                    physical_rows: self.physical_rows,
                });
            }
        }
        let mut live_base: Vec<FieldId> = Vec::new();
        for (f, file) in self.files.iter().enumerate() {
            if data {
                check_file_shape(frag, file)?;
            }
            for (pos, &field) in file.fields.iter().enumerate() {
                if field == TOMBSTONE_FIELD_ID {
                    continue;
                }
                if live_base.contains(&field) {
                    return Err(Error::DuplicateField {
                        fragment: frag,
                        file: file.path.clone(),
                        field,
                        context: "more than one base file holds it".into(),
                    });
                }
                live_base.push(field);
                if !data {
                    continue;
                }
                let col = &file.columns[pos];
                self.check_base_length(f, field, col)?;
                let data_type = match field {
                    ROW_ID_FIELD_ID | CREATED_AT_FIELD_ID | LAST_UPDATED_AT_FIELD_ID => {
                        DataType::UInt64
                    }
                    f if f < 0 => continue,
                    f => match schema.field(f) {
                        Some(sf) => sf.data_type.clone(),
                        None => continue, // a dropped field: never read
                    },
                };
                check_types(frag, &file.path, field, &data_type, col, field < 0)?;
            }
        }
        for (field, seq) in [
            (ROW_ID_FIELD_ID, &self.lineage.row_ids),
            (CREATED_AT_FIELD_ID, &self.lineage.created_at),
            (LAST_UPDATED_AT_FIELD_ID, &self.lineage.last_updated_at),
        ] {
            match seq {
                LineageSequence::Absent => {}
                LineageSequence::Inline(v) if v.len() as u64 != self.physical_rows => {
                    return Err(Error::BaseLengthMismatch {
                        fragment: frag,
                        file: "manifest (inline lineage)".into(),
                        field,
                        values: v.len() as u64,
                        physical_rows: self.physical_rows,
                    });
                }
                LineageSequence::Inline(_) => {}
                LineageSequence::Column if data => {
                    self.lineage_column(field)?;
                }
                LineageSequence::Column => {
                    self.lineage_holder(field)?;
                }
            }
        }
        for overlay in &self.overlays {
            self.validate_overlay(schema, version, overlay, data)?;
        }
        for field in schema.fields().iter().filter(|_| data) {
            if field.data_type == DataType::Struct {
                self.validate_struct_validity(field.id)?;
            }
        }
        Ok(())
    }

    /// Every base source of struct `field`'s validity (a v2.0 column of its own, the struct's
    /// layer in a v2.1+ leaf column) has one bit per physical row, and all of them agree.
    fn validate_struct_validity(&self, field: FieldId) -> Result<()> {
        let mut sources: Vec<(String, Option<NullBuffer>)> = Vec::new();
        for file in &self.files {
            for (&id, column) in file.fields.iter().zip(&file.columns) {
                let validity = if id == field {
                    column.array().logical_nulls()
                } else if let Some(layer) = column.struct_layer(field).filter(|_| id >= 0) {
                    let bits = layer
                        .validity
                        .as_ref()
                        .map_or(column.len(), NullBuffer::len);
                    if bits as u64 != self.physical_rows {
                        return Err(Error::BaseLengthMismatch {
                            fragment: self.id,
                            file: format!(
                                "{} (struct layer in the column of field {id})",
                                file.path
                            ),
                            field,
                            values: bits as u64,
                            physical_rows: self.physical_rows,
                        });
                    }
                    layer.validity.clone()
                } else {
                    continue;
                };
                sources.push((format!("{} column of field {id}", file.path), validity));
            }
        }
        let Some((first, first_validity)) = sources.first() else {
            return Ok(());
        };
        let present = |v: &Option<NullBuffer>, i: usize| v.as_ref().is_none_or(|n| n.is_valid(i));
        let rows = usize::try_from(self.physical_rows).unwrap_or(usize::MAX);
        for (second, validity) in &sources[1..] {
            let differs = (0..rows).find(|&i| {
                // A v2.0 column shorter than physical_rows was refused above.
                let in_range = |v: &Option<NullBuffer>| v.as_ref().is_none_or(|n| i < n.len());
                in_range(first_validity)
                    && in_range(validity)
                    && present(first_validity, i) != present(validity, i)
            });
            if let Some(offset) = differs {
                return Err(Error::StructValidityMismatch {
                    fragment: self.id,
                    field,
                    first: first.clone(),
                    second: second.clone(),
                    offset: offset as u64,
                    present_in_first: present(first_validity, offset),
                });
            }
        }
        Ok(())
    }

    fn validate_overlay(
        &self,
        schema: &Schema,
        version: u64,
        overlay: &Overlay,
        data: bool,
    ) -> Result<()> {
        let frag = self.id;
        let file = &overlay.file;
        if data {
            check_file_shape(frag, file)?;
        }
        if let Coverage::Sparse(bitmaps) = &overlay.coverage {
            if bitmaps.len() != file.fields.len() {
                return Err(Error::FieldCoverageCountMismatch {
                    fragment: frag,
                    file: file.path.clone(),
                    bitmaps: bitmaps.len(),
                    fields: file.fields.len(),
                });
            }
        }
        let cv = overlay.committed_version;
        if cv == 0 || cv > version {
            return Err(Error::BadCommittedVersion {
                fragment: frag,
                file: file.path.clone(),
                committed_version: cv,
                problem: if cv == 0 {
                    "is 0: an overlay is stamped with the version of its commit".into()
                } else {
                    format!("is newer than the snapshot's version {version}")
                },
            });
        }
        for (pos, &field) in file.fields.iter().enumerate() {
            if field < 0 {
                continue; // tombstones and system ids: positions only, never read
            }
            let Some(schema_field) = schema.field(field) else {
                continue; // a dropped field: ignored
            };
            if schema_field.data_type == DataType::Struct {
                continue; // a container: carries no cell values of its own
            }
            // Only a live field listed twice is ambiguous; dropped and struct ids never resolve.
            if file.fields[..pos].contains(&field) {
                return Err(Error::DuplicateField {
                    fragment: frag,
                    file: file.path.clone(),
                    field,
                    context: "one overlay lists it twice".into(),
                });
            }
            let Some(bitmap) = overlay.coverage.at(pos) else {
                continue;
            };
            if let Some(max) = bitmap.max() {
                if u64::from(max) >= self.physical_rows {
                    return Err(Error::OffsetOutOfRange {
                        fragment: frag,
                        file: file.path.clone(),
                        what: format!("coverage of field {field}"),
                        offset: u64::from(max),
                        physical_rows: self.physical_rows,
                    });
                }
            }
            if !data {
                continue;
            }
            let values = file.columns[pos].len() as u64;
            if values != bitmap.len() {
                return Err(Error::ValueCountMismatch {
                    fragment: frag,
                    file: file.path.clone(),
                    field,
                    values,
                    covered: bitmap.len(),
                });
            }
            check_types(
                frag,
                &file.path,
                field,
                &schema_field.data_type,
                &file.columns[pos],
                false,
            )?;
        }
        Ok(())
    }
}

fn check_file_shape(fragment: u64, file: &DataFile) -> Result<()> {
    if file.fields.len() != file.columns.len() {
        return Err(Error::ColumnCountMismatch {
            fragment,
            file: file.path.clone(),
            fields: file.fields.len(),
            columns: file.columns.len(),
        });
    }
    Ok(())
}

fn check_types(
    fragment: u64,
    file: &str,
    field: FieldId,
    data_type: &DataType,
    column: &Column,
    non_null: bool,
) -> Result<()> {
    let misfit = |m: Misfit| m.error(fragment, file, field, data_type);
    column.check_fits(data_type).map_err(misfit)?;
    match column.first_null() {
        Some(index) if non_null => Err(misfit(Misfit {
            index,
            found: "null",
        })),
        _ => Ok(()),
    }
}
