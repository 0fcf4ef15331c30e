//! Exporting a failing history as a conformance case (`LANCE_CONFORMANCE_EXPORT_CASE`).

use super::*;

// ---------------------------------------------------------------------------------------------
// Export: a history as a conformance case.
// ---------------------------------------------------------------------------------------------

pub(crate) fn requirement_index() -> RequirementIndex {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    RequirementIndex::load(&root.join("spec/requirements.toml")).unwrap()
}

/// `built` as a `case.toml` case: its steps, a query per index at every version it exists, and
/// requirement ids picked by the operations it uses.
pub(crate) fn export_case(built: &Built, why: &str) -> Case {
    let index = requirement_index();
    let mut wanted = vec!["OVL-PREC-1", "OVL-COV-1"];
    let mut requires = BTreeSet::new();
    let visit = |step: &Step, wanted: &mut Vec<&'static str>| match step {
        Step::Overlay { .. } => wanted.extend(["OVL-LIN-1", "OVL-SHAPE-1", "OVL-SHAPE-2"]),
        Step::Delete { .. } => wanted.extend(["OVL-DEL-1"]),
        Step::BuildIndex { .. } => wanted.extend(["OVL-IDX-2", "OVL-QRY-1"]),
        Step::CompactOverlays { .. } => wanted.extend(["OVL-MERGE-1"]),
        Step::Fold { .. } => wanted.extend(["OVL-FOLD-1"]),
        Step::RewriteRows { .. } => wanted.extend(["OVL-RWR-1", "LIN-PLACE-2"]),
        Step::CommitRetry { .. } => wanted.extend(["OVL-VER-2"]),
        _ => {}
    };
    for step in &built.steps {
        visit(step, &mut wanted);
        if let Step::CommitRetry { write, conflict } = step {
            visit(write, &mut wanted);
            visit(conflict, &mut wanted);
        }
    }
    let mut requirements: Vec<String> = Vec::new();
    for id in wanted {
        if index.levels.contains_key(id) && !requirements.iter().any(|r| r == id) {
            requirements.push(id.to_string());
        }
    }
    let last = built.versions.last().unwrap();
    if last.stable {
        requires.insert(lance_conformance::case::Capability::StableRowIds);
    }
    requires.insert(lance_conformance::case::Capability::Overlays);
    let mut queries = Vec::new();
    let mut names: Vec<(String, &'static str, bool)> = Vec::new();
    for m in &built.versions {
        for ix in &m.indices {
            if !names.iter().any(|(n, _, _)| n == &ix.name) {
                names.push((ix.name.clone(), ix.field, ix.vector));
            }
        }
    }
    for (name, field, vector) in names {
        let at: Vec<u64> = built
            .versions
            .iter()
            .filter(|m| m.indices.iter().any(|i| i.name == name))
            .map(|m| m.version)
            .collect();
        queries.push(QuerySpec {
            name: format!("{name}: {field}"),
            index: name,
            predicate: (!vector).then(|| PredicateSpec::Leaf {
                field: field.to_string(),
                op: SpecOp::IsNotNull,
                value: None,
            }),
            vector: vector.then(|| vec![0.0, 1.0]),
            k: vector.then_some(3),
            at,
        });
    }
    let binding = requirements
        .iter()
        .any(|r| index.levels.get(r).is_some_and(|l| l.starts_with("MUST")));
    Case {
        id: "model-based-history".into(),
        title: "A history found by the model-based property test".into(),
        requirements,
        level: if binding { Level::Must } else { Level::Should },
        tags: vec!["model-based".into()],
        requires: requires.into_iter().collect(),
        description: format!(
            "Exported by tests/model_based/. The reference broke this invariant:\n{why}\n"
        ),
        expect_error: None,
        queries,
        steps: built.steps.clone(),
    }
}

/// Writes `case` to `path` (a file, or `case.toml` inside a directory).
pub(crate) fn write_case(case: &Case, path: &Path) -> PathBuf {
    let file = if path.is_dir() {
        path.join("case.toml")
    } else {
        path.to_path_buf()
    };
    std::fs::write(&file, toml::to_string(case).unwrap()).unwrap();
    file
}

pub(crate) fn export_if_asked(built: &Built, why: &str) {
    if let Some(path) = std::env::var_os(EXPORT_VAR) {
        let file = write_case(&export_case(built, why), Path::new(&path));
        eprintln!("model_based: failing history written to {}", file.display());
    }
}
