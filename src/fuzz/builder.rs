//! Concretizing: seeds become steps of the case vocabulary, applied to the model as they are
//! chosen.
//!
//! Invariant: every step is chosen against the model's current state (a selector picks among
//! what exists), and applied to the model as it is chosen, so the steps always execute and
//! `versions[n - 1]` is what version `n` must read as. The same seeds always give the same
//! steps.
// The model's own consistency is asserted: it is driven by the generator's seeds, never by
// testee output, so a panic here is a generator bug.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};

use lance_reference::lineage::{
    INLINE_MAX_BYTES_KEY, RowDatasetVersionSequence, RowIdSequence, SPILL_KEY,
};
use lance_reference::model::Value;

use super::history::{BUDGETS, ConfigSeed, History, OpSeed, OverlaySeed, RowSeed};
use super::model::*;
use crate::case::step::{FoldPolicySpec, IndexSpec, Row};
use crate::case::{Cell, FieldSpec, OverlaySpec, Shape, Step};

/// An unrelated config key, to change the config without touching lineage placement.
pub const NOTE_KEY: &str = "model.note";

// ---------------------------------------------------------------------------------------------
// Concretizing: seeds → steps, applied to the model as they are chosen.
// ---------------------------------------------------------------------------------------------

/// A history made concrete: the steps, the model after every version, and the query seed.
#[derive(Debug, Clone)]
pub struct Built {
    /// The steps, `create` first.
    pub steps: Vec<Step>,
    /// `versions[n - 1]` is the model of version `n`.
    pub versions: Vec<MState>,
    /// Drives the query predicates and vectors.
    pub query_seed: u64,
}

/// An overlay as the model applies it: every covered cell with the value it ends up holding
/// (dense widening already resolved against the version the writer read).
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The target fragment.
    pub frag: u64,
    /// Cells of live (not tombstoned) positions.
    pub cells: Vec<(&'static str, u32, Value)>,
    /// The live positions' fields, with their generation.
    pub fields: BTreeSet<(&'static str, u32)>,
}

/// Concretizes seeds: the model's state, its versions so far, and the steps so far.
pub struct Builder {
    /// The model now.
    pub s: MState,
    /// The model after every committed version, oldest first.
    pub versions: Vec<MState>,
    /// The steps so far.
    pub steps: Vec<Step>,
    /// The number the next index is named with (`idx<N>`).
    pub next_index: usize,
}

/// `choices[selector % len]`, or `None` when there is nothing to choose.
pub fn pick<T: Copy>(choices: &[T], selector: u64) -> Option<T> {
    if choices.is_empty() {
        None
    } else {
        Some(choices[(selector % choices.len() as u64) as usize])
    }
}

/// Applies a config seed to a config map; returns what was set and unset.
pub fn config_change(
    config: &BTreeMap<String, String>,
    seed: &ConfigSeed,
    version: u64,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut set = BTreeMap::new();
    let mut unset = Vec::new();
    match seed.spill {
        1 => drop(set.insert(SPILL_KEY.to_string(), "true".to_string())),
        2 => drop(set.insert(SPILL_KEY.to_string(), "TRUE".to_string())),
        3 => drop(set.insert(SPILL_KEY.to_string(), "false".to_string())),
        4 if config.contains_key(SPILL_KEY) => unset.push(SPILL_KEY.to_string()),
        _ => {}
    }
    match seed.budget {
        0 => {}
        1 if config.contains_key(INLINE_MAX_BYTES_KEY) => {
            unset.push(INLINE_MAX_BYTES_KEY.to_string())
        }
        1 => {}
        b => drop(set.insert(
            INLINE_MAX_BYTES_KEY.to_string(),
            BUDGETS[usize::from(b - 2) % BUDGETS.len()].to_string(),
        )),
    }
    match seed.note {
        1 => drop(set.insert(NOTE_KEY.to_string(), version.to_string())),
        2 if config.contains_key(NOTE_KEY) => unset.push(NOTE_KEY.to_string()),
        _ => {}
    }
    (set, unset)
}

impl Builder {
    /// The `create` step of `h` (schema, config, rows, indices) and version 1.
    pub fn new(h: &History) -> Builder {
        let fields: Vec<&'static FieldDef> = MENU
            .iter()
            .filter(|f| f.group == 0 || h.schema & f.group != 0)
            .collect();
        let (config, _) = config_change(&BTreeMap::new(), &h.config, 1);
        let gens = fields.iter().map(|f| (f.name, 0)).collect();
        let mut b = Builder {
            s: MState {
                version: 0,
                fields,
                frags: Vec::new(),
                next_row_id: 0,
                next_frag: 0,
                config,
                stable: h.stable,
                indices: Vec::new(),
                gens,
            },
            versions: Vec::new(),
            steps: Vec::new(),
            next_index: 0,
        };
        let schema = b.schema_specs();
        let rows: Vec<Row> = h.rows.iter().map(|r| b.row_cells(r)).collect();
        if !h.rows.is_empty() {
            b.append_rows(&h.rows, 1);
        }
        let mut indices = Vec::new();
        for &(field, vector) in &h.indices {
            if let Some(ix) = b.new_index(u64::from(field), vector) {
                indices.push(IndexSpec {
                    name: ix.name.clone(),
                    fields: vec![ix.field.to_string()],
                    kind: ix.kind(),
                });
                b.s.indices.push(ix);
            }
        }
        b.steps.push(Step::Create {
            schema,
            rows,
            generate_rows: None,
            stable_row_ids: h.stable,
            config: b.s.config.clone(),
            indices,
        });
        b.commit();
        b
    }

    /// Records the current state as the next version.
    pub fn commit(&mut self) {
        self.s.version += 1;
        self.versions.push(self.s.clone());
    }

    /// The schema's `case.toml` field specs.
    pub fn schema_specs(&self) -> Vec<FieldSpec> {
        self.field_specs(&self.s.fields)
    }

    /// `case.toml` field specs of the top-level fields in `fields` (children nested).
    pub fn field_specs(&self, fields: &[&'static FieldDef]) -> Vec<FieldSpec> {
        let spec = |f: &FieldDef, children: Vec<FieldSpec>| FieldSpec {
            name: f.name.rsplit('.').next().unwrap().to_string(),
            data_type: type_name(f.ty).to_string(),
            id: None,
            nullable: true,
            children,
        };
        fields
            .iter()
            .filter(|f| is_top(f))
            .map(|f| {
                let children = fields
                    .iter()
                    .filter(|c| c.name.starts_with(&format!("{}.", f.name)))
                    .map(|c| spec(c, Vec::new()))
                    .collect();
                spec(f, children)
            })
            .collect()
    }

    /// A row's leaf values from its seed, and the struct's validity.
    pub fn row_values(&self, seed: &RowSeed) -> (BTreeMap<&'static str, Value>, bool) {
        // Always present: format v2.0 stores no struct validity, so the writer refuses a NULL
        // struct (as Lance 14 does).
        let _ = seed[5];
        let st_valid = true;
        let cells = self
            .s
            .leaves()
            .iter()
            .map(|f| {
                let v = if f.name.starts_with("st.") && !st_valid {
                    Value::Null
                } else {
                    value_of(f.ty, seed[f.slot])
                };
                (f.name, v)
            })
            .collect();
        (cells, st_valid)
    }

    /// A row's `case.toml` cells from its seed.
    pub fn row_cells(&self, seed: &RowSeed) -> Row {
        let (cells, st_valid) = self.row_values(seed);
        let mut row = Row::new();
        for f in self.s.fields.iter().filter(|f| is_top(f)) {
            let cell = if f.ty == Ty::Struct {
                if st_valid {
                    Cell::Struct(
                        cells
                            .iter()
                            .filter_map(|(name, v)| {
                                name.strip_prefix("st.")
                                    .map(|c| (c.to_string(), cell_of(v)))
                            })
                            .collect(),
                    )
                } else {
                    Cell::null()
                }
            } else {
                cell_of(&cells[f.name])
            };
            row.insert(f.name.to_string(), cell);
        }
        row
    }

    /// A fragment of freshly inserted rows, committed at `version`.
    pub fn append_rows(&mut self, seeds: &[RowSeed], version: u64) {
        let rows = seeds
            .iter()
            .enumerate()
            .map(|(i, seed)| {
                let (cells, st_valid) = self.row_values(seed);
                Some(MRow {
                    id: self.s.next_row_id + i as u64,
                    created: if self.s.stable { version } else { 1 },
                    updated: if self.s.stable { version } else { 1 },
                    cells,
                    st_valid,
                })
            })
            .collect();
        if self.s.stable {
            self.s.next_row_id += seeds.len() as u64;
        }
        let arm = if self.s.stable {
            Arm::Inline
        } else {
            Arm::Absent
        };
        self.s.frags.push(MFrag {
            id: self.s.next_frag,
            rows,
            overlays: Vec::new(),
            arms: [arm; 3],
        });
        self.s.next_frag += 1;
    }

    /// A new index over a field picked by `field` (vector or scalar), if there is one.
    pub fn new_index(&mut self, field: u64, vector: bool) -> Option<MIndex> {
        let choices: Vec<&'static str> = self
            .s
            .leaves()
            .iter()
            .filter(|f| (f.ty == Ty::Vec2) == vector)
            .map(|f| f.name)
            .collect();
        let field = pick(&choices, field)?;
        let name = format!("idx{}", self.next_index);
        self.next_index += 1;
        Some(MIndex {
            name,
            field,
            vector,
        })
    }

    /// The overlays of an overlay seed list, prepared against the current state, as a step.
    pub fn prepare_overlays(&self, seeds: &[OverlaySeed]) -> Option<(Step, Vec<Prepared>)> {
        let frag_ids: Vec<u64> = self.s.frags.iter().map(|f| f.id).collect();
        let leaves = self.s.leaves();
        let mut specs = Vec::new();
        let mut prepared = Vec::new();
        for seed in seeds {
            let frag_id = pick(&frag_ids, u64::from(seed.frag))?;
            let frag = self.s.frag(frag_id)?;
            let rows = frag.rows.len() as u64;
            let mut given: BTreeMap<&'static str, BTreeMap<u32, Value>> = BTreeMap::new();
            for &(field, offset, value) in &seed.cells {
                let f = pick(&leaves, u64::from(field))?;
                given
                    .entry(f.name)
                    .or_default()
                    .insert((u64::from(offset) % rows) as u32, value_of(f.ty, value));
            }
            let shape = match seed.shape {
                0 => Shape::Dense,
                1 => Shape::Sparse,
                _ => Shape::Auto,
            };
            let dead: Vec<&'static str> = given
                .keys()
                .enumerate()
                .filter(|(i, _)| seed.tombstone >> (i % 7) & 1 == 1)
                .map(|(_, f)| *f)
                .collect();
            let mut cells = Vec::new();
            let union: BTreeSet<u32> = given.values().flat_map(|m| m.keys().copied()).collect();
            for (&field, by_offset) in given.iter().filter(|(f, _)| !dead.contains(f)) {
                let covered: Vec<u32> = if shape == Shape::Dense {
                    union.iter().copied().collect()
                } else {
                    by_offset.keys().copied().collect()
                };
                for offset in covered {
                    let value = match by_offset.get(&offset) {
                        Some(v) => v.clone(),
                        // Dense widening: the post-image as of the version the writer read.
                        None => frag.rows[offset as usize]
                            .as_ref()
                            .map_or(Value::Null, |r| r.cells[field].clone()),
                    };
                    cells.push((field, offset, value));
                }
            }
            prepared.push(Prepared {
                frag: frag_id,
                cells,
                fields: given
                    .keys()
                    .filter(|f| !dead.contains(f))
                    .map(|f| (*f, self.s.gens[f]))
                    .collect(),
            });
            let order: Option<Vec<String>> = seed
                .reverse
                .then(|| given.keys().rev().map(|f| f.to_string()).collect());
            specs.push(OverlaySpec {
                fragment: Some(frag_id),
                shape,
                cells: given
                    .iter()
                    .map(|(f, m)| {
                        (
                            f.to_string(),
                            m.iter().map(|(o, v)| (o.to_string(), cell_of(v))).collect(),
                        )
                    })
                    .collect(),
                fields: order,
                // Dead positions are tombstones (-2), or with the seed's high bit, relabelled to
                // another reserved id (-9) as a non-conforming writer might: readers ignore both.
                // (Not -3..-5: the writer stores those as non-null uint64 lineage columns.)
                tombstone: if seed.tombstone & 0x80 == 0 {
                    dead.iter().map(|f| f.to_string()).collect()
                } else {
                    Vec::new()
                },
                relabel: if seed.tombstone & 0x80 == 0 {
                    BTreeMap::new()
                } else {
                    dead.iter().map(|f| (f.to_string(), -9)).collect()
                },
                struct_coverage: BTreeMap::new(),
                list_ancestors: true,
            });
        }
        let step = if specs.len() == 1 {
            let spec = specs.remove(0);
            Step::Overlay {
                fragment: spec.fragment,
                shape: Some(spec.shape),
                cells: Some(spec.cells),
                fields: spec.fields,
                tombstone: spec.tombstone,
                relabel: spec.relabel,
                struct_coverage: spec.struct_coverage,
                list_ancestors: spec.list_ancestors,
                overlays: Vec::new(),
            }
        } else {
            Step::Overlay {
                fragment: None,
                shape: None,
                cells: None,
                fields: None,
                tombstone: Vec::new(),
                relabel: BTreeMap::new(),
                struct_coverage: BTreeMap::new(),
                list_ancestors: true,
                overlays: specs,
            }
        };
        Some((step, prepared))
    }

    /// Lands prepared overlays at `version`: values (later overlays win), last-updated-at
    /// stamped for every covered offset with stable row ids, committed_version recorded.
    pub fn land_overlays(&mut self, prepared: &[Prepared], version: u64) {
        let stable = self.s.stable;
        let mut stamped: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
        for p in prepared {
            let frag = self.s.frag_mut(p.frag);
            for (field, offset, value) in &p.cells {
                if let Some(row) = frag.rows[*offset as usize].as_mut() {
                    row.cells.insert(field, value.clone());
                }
                stamped.entry(p.frag).or_default().insert(*offset);
            }
            frag.overlays.push(MOverlay {
                cv: version,
                fields: p.fields.clone(),
            });
        }
        if stable {
            for (id, offsets) in stamped {
                let frag = self.s.frag_mut(id);
                for o in offsets {
                    if let Some(row) = frag.rows[o as usize].as_mut() {
                        row.updated = version;
                    }
                }
                frag.arms[2] = Arm::Inline;
            }
        }
    }

    /// Deletes `offsets` of fragment `frag_id`; a fragment left without live rows is removed.
    pub fn delete(&mut self, frag_id: u64, offsets: &BTreeSet<u32>) {
        let frag = self.s.frag_mut(frag_id);
        for &o in offsets {
            frag.rows[o as usize] = None;
        }
        self.s.frags.retain(|f| f.live() > 0);
    }

    /// One seed as zero or one step (a retry is one step of two versions). `protected`
    /// fragments must survive (the target of a retried overlay, when this is its conflict).
    pub fn op(&mut self, seed: &OpSeed, protected: &[u64]) -> bool {
        let v = self.s.version + 1;
        match seed {
            OpSeed::Append(rows) => {
                let cells = rows.iter().map(|r| self.row_cells(r)).collect();
                self.append_rows(rows, v);
                self.steps.push(Step::Append {
                    rows: cells,
                    generate_rows: None,
                });
            }
            OpSeed::Overlay(seeds) => {
                let Some((step, prepared)) = self.prepare_overlays(seeds) else {
                    return false;
                };
                self.land_overlays(&prepared, v);
                self.steps.push(step);
            }
            OpSeed::Delete { frag, offsets } => {
                let ids: Vec<u64> = self.s.frags.iter().map(|f| f.id).collect();
                let Some(id) = pick(&ids, u64::from(*frag)) else {
                    return false;
                };
                let f = self.s.frag(id).unwrap();
                let set: BTreeSet<u32> = offsets
                    .iter()
                    .map(|o| (u64::from(*o) % f.rows.len() as u64) as u32)
                    .collect();
                let left = f
                    .rows
                    .iter()
                    .enumerate()
                    .filter(|(o, r)| r.is_some() && !set.contains(&(*o as u32)))
                    .count();
                if left == 0 && protected.contains(&id) {
                    return false;
                }
                self.delete(id, &set);
                self.steps.push(Step::Delete {
                    fragment: Some(id),
                    offsets: set.into_iter().collect(),
                    predicate: None,
                });
            }
            OpSeed::DeleteWhere { field, pred } => {
                let fields: Vec<&'static FieldDef> = self.s.fields.clone();
                let f = pick(&fields, u64::from(*field)).unwrap();
                let p = predicate(f.name, f.ty, *pred);
                let hits = p.filter(&self.s);
                let mut by_frag: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
                for (fr, o) in hits {
                    by_frag.entry(fr).or_default().insert(o as u32);
                }
                for (fr, set) in by_frag {
                    self.delete(fr, &set);
                }
                self.steps.push(Step::Delete {
                    fragment: None,
                    offsets: Vec::new(),
                    predicate: Some(p.to_spec()),
                });
            }
            OpSeed::BuildIndex {
                field,
                vector,
                back,
            } => {
                let Some(ix) = self.new_index(u64::from(*field), *vector) else {
                    return false;
                };
                let mut from = self.s.version - u64::from(*back) % self.s.version;
                // The build reads an older version only if the field already existed there.
                let generation = self.s.gens.get(ix.field).copied();
                while self.versions[from as usize - 1].gens.get(ix.field).copied() != generation {
                    from += 1;
                }
                self.steps.push(Step::BuildIndex {
                    name: ix.name.clone(),
                    fields: vec![ix.field.to_string()],
                    kind: ix.kind(),
                    built_from: (from != self.s.version).then_some(from),
                });
                self.s.indices.push(ix);
            }
            OpSeed::Merge { frag, start, len } => {
                let ids: Vec<u64> = self
                    .s
                    .frags
                    .iter()
                    .filter(|f| f.overlays.len() >= 2)
                    .map(|f| f.id)
                    .collect();
                let Some(id) = pick(&ids, u64::from(*frag)) else {
                    return false;
                };
                let f = self.s.frag_mut(id);
                let n = f.overlays.len();
                // Precedence, newest first: higher committed_version, then later position.
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&a, &b| f.overlays[b].cv.cmp(&f.overlays[a].cv).then(b.cmp(&a)));
                let len = 2 + usize::from(*len) % (n - 1);
                let start = usize::from(*start) % (n - len + 1);
                let window: BTreeSet<usize> = order[start..start + len].iter().copied().collect();
                let newest = order[start];
                // The merged overlay carries the inputs' live fields; with none it vanishes.
                let state = self.s.clone();
                let f = self.s.frag_mut(id);
                let merged = MOverlay {
                    cv: f.overlays[newest].cv,
                    fields: window
                        .iter()
                        .flat_map(|&p| f.overlays[p].fields.iter().copied())
                        .filter(|&fg| state.live(fg))
                        .collect(),
                };
                let mut kept = Vec::new();
                for (p, o) in f.overlays.iter().enumerate() {
                    if p == newest && !merged.fields.is_empty() {
                        kept.push(merged.clone());
                    } else if !window.contains(&p) {
                        kept.push(o.clone());
                    }
                }
                f.overlays = kept;
                self.steps.push(Step::CompactOverlays {
                    fragment: id,
                    positions: window.into_iter().collect(),
                    committed_version: None,
                });
            }
            OpSeed::Fold { frag, policies } => {
                let ids: Vec<u64> = self
                    .s
                    .frags
                    .iter()
                    .filter(|f| !f.overlays.is_empty())
                    .map(|f| f.id)
                    .collect();
                let Some(id) = pick(&ids, u64::from(*frag)) else {
                    return false;
                };
                self.s.frag_mut(id).overlays.clear();
                let indices = self
                    .s
                    .indices
                    .iter()
                    .enumerate()
                    .map(|(i, ix)| {
                        let policy = if (policies >> (i % 32)) & 1 == 1 {
                            FoldPolicySpec::Rebuild
                        } else {
                            FoldPolicySpec::Drop
                        };
                        (ix.name.clone(), policy)
                    })
                    .collect();
                self.steps.push(Step::Fold {
                    fragment: id,
                    indices,
                });
            }
            OpSeed::Rewrite { frag, len } => {
                let n = self.s.frags.len();
                if n == 0 {
                    return false;
                }
                let len = 1 + usize::from(*len) % n.min(3);
                let start = usize::from(*frag) % (n - len + 1);
                let inputs: Vec<MFrag> = self.s.frags[start..start + len].to_vec();
                let rows: Vec<Option<MRow>> = inputs
                    .iter()
                    .flat_map(|f| f.rows.iter().flatten().cloned())
                    .map(Some)
                    .collect();
                let (spill, budget) = self.s.spill();
                let place = |len: usize| {
                    if spill && len > budget {
                        Arm::Column
                    } else {
                        Arm::Inline
                    }
                };
                let live: Vec<&MRow> = rows.iter().flatten().collect();
                let ids: Vec<u64> = live.iter().map(|r| r.id).collect();
                let created: Vec<u64> = live.iter().map(|r| r.created).collect();
                let updated: Vec<u64> = live.iter().map(|r| r.updated).collect();
                let arms = [
                    if self.s.stable {
                        place(RowIdSequence::from_values(&ids).encode().len())
                    } else {
                        Arm::Absent
                    },
                    place(
                        RowDatasetVersionSequence::from_versions(&created)
                            .encode()
                            .len(),
                    ),
                    place(
                        RowDatasetVersionSequence::from_versions(&updated)
                            .encode()
                            .len(),
                    ),
                ];
                let new = MFrag {
                    id: self.s.next_frag,
                    rows,
                    overlays: Vec::new(),
                    arms,
                };
                self.s.next_frag += 1;
                self.s
                    .frags
                    .splice(start..start + len, std::iter::once(new));
                self.steps.push(Step::RewriteRows {
                    fragments: inputs.iter().map(|f| f.id).collect(),
                    rows_per_fragment: None,
                });
            }
            OpSeed::Config(seed) => {
                let (set, unset) = config_change(&self.s.config, seed, v);
                for k in &unset {
                    self.s.config.remove(k);
                }
                self.s.config.extend(set.clone());
                self.steps.push(Step::SetConfig { set, unset });
            }
            OpSeed::Retry { write, conflict } => return self.retry(write, conflict),
            OpSeed::AddField(field) => {
                let absent: Vec<&'static FieldDef> = MENU
                    .iter()
                    .filter(|f| is_top(f) && !self.s.gens.contains_key(f.name))
                    .collect();
                let Some(top) = pick(&absent, u64::from(*field)) else {
                    return false;
                };
                let added: Vec<&'static FieldDef> = MENU
                    .iter()
                    .filter(|f| f.name == top.name || f.name.starts_with(&format!("{}.", top.name)))
                    .collect();
                let generation = self.versions.len() as u32;
                for f in &added {
                    self.s.fields.push(f);
                    self.s.gens.insert(f.name, generation);
                    for frag in &mut self.s.frags {
                        for row in frag.rows.iter_mut().flatten() {
                            if f.ty != Ty::Struct {
                                row.cells.insert(f.name, Value::Null);
                            }
                        }
                    }
                }
                let schema = self.field_specs(&added);
                self.steps.push(Step::AddFields {
                    schema,
                    fill: std::collections::BTreeMap::new(),
                });
            }
            OpSeed::DropField(field) => {
                let droppable: Vec<&'static str> = self
                    .s
                    .fields
                    .iter()
                    .filter(|f| is_top(f) && f.name != "id")
                    .map(|f| f.name)
                    .collect();
                let Some(top) = pick(&droppable, u64::from(*field)) else {
                    return false;
                };
                let gone = |name: &str| name == top || name.starts_with(&format!("{top}."));
                self.s.fields.retain(|f| !gone(f.name));
                self.s.gens.retain(|name, _| !gone(name));
                self.s.indices.retain(|ix| !gone(ix.field));
                for frag in &mut self.s.frags {
                    for row in frag.rows.iter_mut().flatten() {
                        row.cells.retain(|name, _| !gone(name));
                    }
                }
                self.steps.push(Step::DropFields {
                    fields: vec![top.to_string()],
                });
            }
        }
        self.commit();
        true
    }

    /// `write` prepared against the current version, `conflict` committed first, `write`
    /// re-stamped at the version after it.
    pub fn retry(&mut self, write: &OpSeed, conflict: &OpSeed) -> bool {
        let (write_step, prepared, rows) = match write {
            OpSeed::Append(rows) => {
                let cells = rows.iter().map(|r| self.row_cells(r)).collect();
                (
                    Step::Append {
                        rows: cells,
                        generate_rows: None,
                    },
                    Vec::new(),
                    rows.clone(),
                )
            }
            OpSeed::Overlay(seeds) => match self.prepare_overlays(seeds) {
                Some((step, prepared)) => (step, prepared, Vec::new()),
                None => return false,
            },
            _ => return false,
        };
        let protected: Vec<u64> = prepared.iter().map(|p| p.frag).collect();
        let before = self.steps.len();
        if !self.op(conflict, &protected) {
            // Nothing to race with: an unrelated config change wins the race instead.
            let seed = ConfigSeed {
                spill: 0,
                budget: 0,
                note: 1,
            };
            assert!(self.op(&OpSeed::Config(seed), &protected));
        }
        let conflict_step = self.steps.pop().unwrap();
        assert_eq!(self.steps.len(), before);
        let v = self.s.version + 1;
        if rows.is_empty() {
            self.land_overlays(&prepared, v);
        } else {
            self.append_rows(&rows, v);
        }
        self.steps.push(Step::CommitRetry {
            write: Box::new(write_step),
            conflict: Box::new(conflict_step),
        });
        self.commit();
        true
    }
}

/// Seeds → steps, applying each to the model.
pub fn concretize(h: &History) -> Built {
    let mut b = Builder::new(h);
    for op in &h.ops {
        b.op(op, &[]);
    }
    Built {
        steps: b.steps,
        versions: b.versions,
        query_seed: h.query_seed,
    }
}
