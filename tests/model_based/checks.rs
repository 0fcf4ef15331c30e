//! Running a history on disk and checking every version against the model.

use super::*;

// ---------------------------------------------------------------------------------------------
// Running and checking.
// ---------------------------------------------------------------------------------------------

/// Executes `steps`, writes every version with the reference's writer into a fresh in-memory
/// store (the storage seam a directory is written through: the same bytes, no file system),
/// and reads all of them back with its reader (which decodes each manifest, so the writer is
/// not asked to decode it again for a layout).
pub(crate) fn run_on_disk(steps: &[Step]) -> Result<OnDisk, String> {
    let execution = scenario::execute(steps).map_err(|e| format!("execute: {e}"))?;
    let store = MemoryStorage::new();
    for snapshot in &execution.versions {
        write_version_files_in(&store, snapshot, &WriteOptions::default())
            .map_err(|e| format!("write version {}: {e}", snapshot.version))?;
    }
    let dataset = Dataset::open_in(Arc::new(store.clone()), ReadOptions::default())
        .map_err(|e| format!("open: {e}"))?;
    let read = dataset.read_all().map_err(|e| format!("read back: {e}"))?;
    Ok(OnDisk {
        store,
        read,
        executed: execution.versions.len(),
    })
}

/// A history written as a dataset and read back.
pub(crate) struct OnDisk {
    /// The dataset's files.
    pub(crate) store: MemoryStorage,
    /// Every version as the reader returns it, oldest first.
    pub(crate) read: Vec<(Snapshot, Layout)>,
    /// How many versions the scenario committed.
    pub(crate) executed: usize,
}

pub(crate) fn same_scan(version: u64, got: &[ScanRow], want: &[ScanRow]) -> Result<(), String> {
    let key = |r: &ScanRow| {
        (
            r.fragment,
            r.offset,
            r.row_id,
            r.created_at,
            r.last_updated_at,
        )
    };
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let values_equal = g.values.len() == w.values.len()
            && g.values.iter().zip(&w.values).all(|(a, b)| a.identical(b));
        if key(g) != key(w) || !values_equal {
            return Err(format!(
                "v{version}: scan row {i} differs\n  read  {g:?}\n  model {w:?}"
            ));
        }
    }
    if got.len() != want.len() {
        return Err(format!(
            "v{version}: scan has {} rows, the model {}",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}

pub(crate) fn arm_of(seq: &LineageSequence) -> Arm {
    match seq {
        LineageSequence::Absent => Arm::Absent,
        LineageSequence::Inline(_) => Arm::Inline,
        LineageSequence::Column => Arm::Column,
    }
}

/// Every invariant of one version (see the module docs).
pub(crate) fn check_version(
    store: &MemoryStorage,
    (read, layout): &(Snapshot, Layout),
    model: &MState,
    seed: u64,
) -> Result<(), String> {
    let v = model.version;
    if read.version != v {
        return Err(format!(
            "read version {} where {v} was expected",
            read.version
        ));
    }
    // Scan.
    let got = scan(read, None).map_err(|e| format!("v{v}: scan: {e}"))?;
    same_scan(v, &got, &model.expected_scan())?;
    // Fragments: ids, overlay versions in order, lineage placement.
    let ids: Vec<u64> = read.fragments.iter().map(|f| f.id).collect();
    let want: Vec<u64> = model.frags.iter().map(|f| f.id).collect();
    if ids != want {
        return Err(format!("v{v}: fragments {ids:?}, the model {want:?}"));
    }
    for (f, m) in read.fragments.iter().zip(&model.frags) {
        let cvs: Vec<u64> = f.overlays.iter().map(|o| o.committed_version).collect();
        let want: Vec<u64> = m.overlays.iter().map(|o| o.cv).collect();
        if cvs != want || cvs.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!(
                "v{v}: fragment {} overlay committed_versions {cvs:?}, the model {want:?}",
                f.id
            ));
        }
        let arms = [
            arm_of(&f.lineage.row_ids),
            arm_of(&f.lineage.created_at),
            arm_of(&f.lineage.last_updated_at),
        ];
        if arms != m.arms {
            return Err(format!(
                "v{v}: fragment {} lineage placed {arms:?}, the placement rule says {:?}",
                f.id, m.arms
            ));
        }
    }
    // Flags.
    flags::check_consistency(read).map_err(|e| format!("v{v}: flags: {e}"))?;
    let (reader, writer) = model.expected_flags();
    if (read.reader_flags, read.writer_flags) != (reader, writer) {
        return Err(format!(
            "v{v}: flags reader {} writer {}, the model says reader {reader} writer {writer}",
            read.reader_flags, read.writer_flags
        ));
    }
    // Manifest round trip.
    let size = store.size(&layout.manifest).map_err(|e| e.to_string())?;
    let bytes = store
        .read_range(&layout.manifest, 0..size)
        .map_err(|e| e.to_string())?;
    let decoded = decode_manifest_file(&bytes, &layout.manifest).map_err(|e| e.to_string())?;
    let again = encode_manifest_file(&decoded.manifest, decoded.index_section.as_ref())
        .map_err(|e| e.to_string())?;
    if again != bytes {
        return Err(format!(
            "v{v}: the decoded manifest re-encodes to other bytes"
        ));
    }
    let (manifest, section) = encode_manifest(read, layout).map_err(|e| e.to_string())?;
    let again = encode_manifest_file(&manifest, section.as_ref()).map_err(|e| e.to_string())?;
    if again != bytes {
        return Err(format!(
            "v{v}: the decoded snapshot and layout re-encode to other bytes"
        ));
    }
    // Index queries.
    let names: BTreeSet<&str> = read.indices.iter().map(|i| i.name.as_str()).collect();
    let want: BTreeSet<&str> = model.indices.iter().map(|i| i.name.as_str()).collect();
    if names != want {
        return Err(format!("v{v}: indices {names:?}, the model {want:?}"));
    }
    for (n, ix) in model.indices.iter().enumerate() {
        let id = field_id(&read.schema, ix.field).unwrap();
        let index = read.index(&ix.name).unwrap();
        let kind = if ix.vector {
            IndexKind::Vector
        } else {
            IndexKind::BTree
        };
        if index.fields != [id] || index.kind != kind {
            return Err(format!(
                "v{v}: index {} is {:?} on {:?}",
                ix.name, index.kind, index.fields
            ));
        }
        for q in 0..3u64 {
            let r = mix(seed ^ mix(v.wrapping_mul(131) + n as u64 * 7 + q));
            if ix.vector {
                check_vector_query(read, model, ix, r)?;
            } else {
                let ty = MENU.iter().find(|f| f.name == ix.field).unwrap().ty;
                let p = predicate(ix.field, ty, r);
                let spec = p.to_spec();
                let pred = spec
                    .to_predicate(&read.schema, &|name| field_id(&read.schema, name))
                    .map_err(|e| e.to_string())?;
                let got = reconcile(read, &ix.name, &pred)
                    .map_err(|e| format!("v{v}: reconcile {}: {e}", ix.name))?;
                let got: Vec<(u64, u64)> = got
                    .final_rows
                    .iter()
                    .map(|r| (r.fragment, r.offset))
                    .collect();
                let want = p.filter(model);
                if got != want {
                    return Err(format!(
                        "v{v}: index {} answers {p:?} with {got:?}, the model's flat filter {want:?}",
                        ix.name
                    ));
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn check_vector_query(
    read: &Snapshot,
    model: &MState,
    ix: &MIndex,
    r: u64,
) -> Result<(), String> {
    let v = model.version;
    let query: Vec<f32> = (0..2)
        .map(|j| ITEMS[((r >> (8 * j)) % 4) as usize])
        .collect();
    let k = 1 + (r >> 24) as usize % 4;
    let got = reconcile_vector(read, &ix.name, &query, k)
        .map_err(|e| format!("v{v}: vector query {}: {e}", ix.name))?;
    let got: Vec<(u64, u64, u32)> = got
        .final_rows
        .iter()
        .map(|s| (s.row.fragment, s.row.offset, s.distance.to_bits()))
        .collect();
    let mut scored = Vec::new();
    for frag in &model.frags {
        for (offset, row) in frag.rows.iter().enumerate() {
            let Some(row) = row else { continue };
            let Value::Vector(items) = &row.cells[ix.field] else {
                continue;
            };
            let mut sum = 0.0f32;
            let mut ok = true;
            for (q, x) in query.iter().zip(items) {
                match x {
                    Some(x) => sum += (x - q) * (x - q),
                    None => ok = false,
                }
            }
            if ok {
                scored.push((
                    sum,
                    row_address(frag.id, offset as u64),
                    frag.id,
                    offset as u64,
                ));
            }
        }
    }
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let want: Vec<(u64, u64, u32)> = scored
        .iter()
        .take(k)
        .map(|s| (s.2, s.3, s.0.to_bits()))
        .collect();
    if got != want {
        return Err(format!(
            "v{v}: vector index {} top-{k} of {query:?} is {got:?}, the model's {want:?}",
            ix.name
        ));
    }
    Ok(())
}

/// The same steps with the spill config forced: `Some(budget)` spills at that budget, `None`
/// never spills. Other config keys are kept.
pub(crate) fn twin(steps: &[Step], spill: Option<&str>) -> Vec<Step> {
    let strip = |m: &mut BTreeMap<String, String>| {
        m.remove(SPILL_KEY);
        m.remove(INLINE_MAX_BYTES_KEY);
    };
    let mut out = steps.to_vec();
    for step in &mut out {
        let targets: Vec<&mut Step> = match step {
            Step::CommitRetry { conflict, .. } => vec![conflict.as_mut()],
            other => vec![other],
        };
        for t in targets {
            match t {
                Step::Create { config, .. } => {
                    strip(config);
                    if let Some(budget) = spill {
                        config.insert(SPILL_KEY.into(), "true".into());
                        config.insert(INLINE_MAX_BYTES_KEY.into(), budget.into());
                    }
                }
                Step::SetConfig { set, unset } => {
                    strip(set);
                    unset.retain(|k| k != SPILL_KEY && k != INLINE_MAX_BYTES_KEY);
                }
                _ => {}
            }
        }
    }
    out
}

/// Runs a built history and checks every version; `Err` describes the first broken invariant.
pub(crate) fn check_history(built: &Built) -> Result<(), String> {
    let OnDisk {
        store,
        read,
        executed,
    } = run_on_disk(&built.steps)?;
    if executed != built.versions.len() || read.len() != built.versions.len() {
        return Err(format!(
            "{} versions executed, {} read back, the model has {}",
            executed,
            read.len(),
            built.versions.len()
        ));
    }
    for (snapshot, model) in read.iter().zip(&built.versions) {
        check_version(&store, snapshot, model, built.query_seed)?;
    }
    // Twins differ from the history only where a rewrite places lineage; without one they
    // would repeat the same run.
    let rewritten = built
        .steps
        .iter()
        .any(|s| matches!(s, Step::RewriteRows { .. }));
    if !rewritten {
        return Ok(());
    }
    // When nothing spilled, the history itself is its inline twin.
    let spilled_here = built
        .versions
        .iter()
        .flat_map(|m| &m.frags)
        .any(|f| f.arms.contains(&Arm::Column));
    let twins: &[(&str, Option<&str>)] = if spilled_here {
        &[("inline twin", None), ("spilled twin", Some("0"))]
    } else {
        &[("spilled twin", Some("0"))]
    };
    for &(label, spill) in twins {
        let twin_run =
            run_on_disk(&twin(&built.steps, spill)).map_err(|e| format!("{label}: {e}"))?;
        let twin_read = &twin_run.read;
        if twin_read.len() != built.versions.len() {
            return Err(format!("{label}: {} versions read back", twin_read.len()));
        }
        for ((snapshot, _), model) in twin_read.iter().zip(&built.versions) {
            let got = scan(snapshot, None).map_err(|e| format!("{label}: scan: {e}"))?;
            same_scan(model.version, &got, &model.expected_scan())
                .map_err(|e| format!("{label}: {e}"))?;
        }
        let spilled = twin_read
            .iter()
            .flat_map(|(s, _)| &s.fragments)
            .any(|f| f.lineage.created_at == LineageSequence::Column);
        if spill.is_some() && !spilled {
            return Err(format!(
                "{label}: a rewrite at budget 0 must spill created-at"
            ));
        }
        if spill.is_none() && spilled {
            return Err(format!("{label}: spilled with spilling off"));
        }
    }
    Ok(())
}
