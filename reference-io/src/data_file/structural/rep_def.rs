//! Definition levels of a v2.1+ page and what they say about each layer's validity.
//!
//! A page lists its layers inner-most first: layer 0 is the item (the leaf value), each later
//! layer an enclosing struct. A nullable layer (`REPDEF_NULLABLE_ITEM`) takes one definition
//! level, an all-valid layer (`REPDEF_ALL_VALID_ITEM`) none; levels are numbered from 1 in layer
//! order. A slot's definition level `d` is 0 when every layer is valid, and equals the level of
//! the outer-most null layer otherwise. So layer `k` is present and valid exactly when `d` is at
//! most the number of levels taken by the layers inside it (`levels_inside(k)`); for the item
//! that is `d == 0`.
//!
//! Invariant: [`Layers::parse`] accepts only item layers (list layers are refused by name: the
//! kit has no lists), and [`Layers::check_levels`] refuses any level above the page's maximum,
//! so every level a validity is computed from has a meaning.

use arrow_buffer::{BooleanBuffer, NullBuffer};

use super::Site;
use crate::data_file::DataFileError;
use lance_reference::proto::lance::encodings21 as pb;

/// The layers of a page, inner-most first: `true` for a nullable layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers(pub Vec<bool>);

impl Layers {
    /// Reads the `layers` field of a page layout.
    pub fn parse(layers: &[i32], site: &Site) -> Result<Layers, DataFileError> {
        if layers.is_empty() {
            return Err(site.missing("layers"));
        }
        let mut out = Vec::with_capacity(layers.len());
        for (i, &l) in layers.iter().enumerate() {
            let s = site.at(format!("layers[{i}]"));
            match pb::RepDefLayer::try_from(l) {
                Ok(pb::RepDefLayer::RepdefAllValidItem) => out.push(false),
                Ok(pb::RepDefLayer::RepdefNullableItem) => out.push(true),
                Ok(
                    list @ (pb::RepDefLayer::RepdefAllValidList
                    | pb::RepDefLayer::RepdefNullableList
                    | pb::RepDefLayer::RepdefEmptyableList
                    | pb::RepDefLayer::RepdefNullAndEmptyList),
                ) => {
                    return Err(s.unsupported(format!(
                        "list layer {} (repetition levels; the kit has no lists)",
                        list.as_str_name()
                    )));
                }
                Ok(pb::RepDefLayer::RepdefUnspecified) => {
                    return Err(s.invalid("layer REPDEF_UNSPECIFIED"));
                }
                Err(_) => return Err(s.unsupported(format!("unknown RepDefLayer {l}"))),
            }
        }
        Ok(Layers(out))
    }

    /// The highest definition level (the number of nullable layers).
    pub fn max_level(&self) -> u16 {
        self.0.iter().filter(|n| **n).count() as u16
    }

    /// True when some layer is nullable (so the page needs definition levels).
    pub fn has_nulls(&self) -> bool {
        self.max_level() > 0
    }

    /// Levels taken by the layers strictly inside layer `k` (inner-most first).
    pub fn levels_inside(&self, k: usize) -> u16 {
        self.0.iter().take(k).filter(|n| **n).count() as u16
    }

    /// Refuses a level above [`Layers::max_level`].
    pub fn check_levels(&self, levels: &[u16], site: &Site) -> Result<(), DataFileError> {
        let max = self.max_level();
        if let Some((i, d)) = levels.iter().enumerate().find(|(_, d)| **d > max) {
            return Err(site.invalid(format!(
                "definition level {d} at slot {i} but the layers allow at most {max}"
            )));
        }
        Ok(())
    }

    /// The validity of layer `k` (present and valid) for each slot, `None` when all are valid.
    /// `levels` is `None` when the page stores none (every slot is then valid).
    pub fn validity(&self, k: usize, levels: Option<&[u16]>) -> Option<NullBuffer> {
        let levels = levels?;
        let bound = self.levels_inside(k);
        let valid = BooleanBuffer::collect_bool(levels.len(), |i| levels[i] <= bound);
        let nulls = NullBuffer::new(valid);
        (nulls.null_count() > 0).then_some(nulls)
    }
}

/// Definition levels (any unsigned fixed-width block) as `u16`.
pub fn levels_from(values: Vec<u64>, site: &Site) -> Result<Vec<u16>, DataFileError> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            u16::try_from(v)
                .map_err(|_| site.invalid(format!("definition level {v} at slot {i} exceeds u16")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site<'static> {
        Site::new("f.lance", "page")
    }

    const NULLABLE: i32 = pb::RepDefLayer::RepdefNullableItem as i32;
    const VALID: i32 = pb::RepDefLayer::RepdefAllValidItem as i32;

    fn valid_bits(n: Option<NullBuffer>, len: usize) -> Vec<bool> {
        (0..len)
            .map(|i| n.as_ref().is_none_or(|n| n.is_valid(i)))
            .collect()
    }

    #[test]
    fn struct_leaf_levels_count_inner_most_first() {
        let layers = Layers::parse(&[NULLABLE, NULLABLE], &site()).unwrap();
        let d = [0u16, 1, 2, 0];
        assert_eq!(
            valid_bits(layers.validity(0, Some(&d)), 4),
            [true, false, false, true]
        );
        assert_eq!(
            valid_bits(layers.validity(1, Some(&d)), 4),
            [true, true, false, true]
        );
    }

    #[test]
    fn all_valid_item_inside_nullable_struct_takes_no_level() {
        let layers = Layers::parse(&[VALID, NULLABLE], &site()).unwrap();
        assert_eq!(layers.max_level(), 1);
        let d = [0u16, 1];
        assert_eq!(valid_bits(layers.validity(1, Some(&d)), 2), [true, false]);
        assert_eq!(valid_bits(layers.validity(0, Some(&d)), 2), [true, false]);
    }

    #[test]
    fn level_above_maximum_is_refused() {
        let layers = Layers::parse(&[NULLABLE], &site()).unwrap();
        let e = layers.check_levels(&[0, 2], &site()).unwrap_err();
        assert!(matches!(e, DataFileError::InvalidPageData { .. }), "{e}");
    }

    #[test]
    fn list_layers_are_refused_by_name() {
        let e = Layers::parse(
            &[NULLABLE, pb::RepDefLayer::RepdefNullableList as i32],
            &site(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("REPDEF_NULLABLE_LIST"), "{e}");
        assert!(matches!(e, DataFileError::UnsupportedEncoding { .. }));
    }

    #[test]
    fn empty_layers_are_missing() {
        assert!(matches!(
            Layers::parse(&[], &site()),
            Err(DataFileError::MissingField { .. })
        ));
    }
}
