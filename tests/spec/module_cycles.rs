//! No import cycle between files of different modules, in any crate of the workspace, and no
//! file I/O in the semantics crate: the structure the module docs promise, checked.
//!
//! A file's imports are its `crate::a::b` paths outside `#[cfg(test)]` code; `crate::Error`,
//! `crate::ErrorClass` and `crate::Result` count as `error.rs`. Files are grouped into strongly
//! connected components; a component that spans more than one top-level module is a cycle.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The file a `crate::` path names, if it is one of `files`.
fn target(files: &BTreeMap<String, String>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    if matches!(parts[0], "Error" | "ErrorClass" | "Result") {
        return Some("error.rs".into());
    }
    for k in (1..=parts.len()).rev() {
        let base = parts[..k].join("/");
        for candidate in [format!("{base}.rs"), format!("{base}/mod.rs")] {
            if files.contains_key(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

fn imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (file, text) in files {
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut out = BTreeSet::new();
        for line in code.lines() {
            let line = line.split("//").next().unwrap_or("");
            let mut rest = line;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                let path: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                if let Some(t) = target(files, path.trim_end_matches(':')) {
                    if &t != file && t != "lib.rs" && t != "main.rs" {
                        out.insert(t);
                    }
                }
            }
        }
        graph.insert(file.clone(), out);
    }
    graph
}

fn module(file: &str) -> &str {
    let first = file.split('/').next().unwrap_or(file);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// Files reachable from `from` (excluding itself unless on a cycle).
fn reachable(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<String> = graph[from].iter().cloned().collect();
    while let Some(f) = stack.pop() {
        if seen.insert(f.clone()) {
            stack.extend(graph.get(&f).into_iter().flatten().cloned());
        }
    }
    seen
}

#[test]
fn no_import_cycle_between_modules() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut cycles = Vec::new();
    for krate in [
        "reference/src",
        "reference-io/src",
        "src",
        "test-support/src",
    ] {
        let mut files = BTreeMap::new();
        rust_files(&root.join(krate), &root.join(krate), &mut files);
        let graph = imports(&files);
        let reach: BTreeMap<&String, BTreeSet<String>> =
            graph.keys().map(|f| (f, reachable(&graph, f))).collect();
        for (a, from_a) in &reach {
            for b in from_a {
                if module(a) != module(b) && a.as_str() < b.as_str() && reach[b].contains(*a) {
                    cycles.push(format!("{krate}: {a} <-> {b}"));
                }
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_semantics_crate_does_no_file_io() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("reference/src");
    let mut files = BTreeMap::new();
    rust_files(&root, &root, &mut files);
    let offenders: Vec<&String> = files
        .iter()
        .filter(|(_, text)| text.contains("std::fs") || text.contains("File::open"))
        .map(|(f, _)| f)
        .collect();
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn the_judge_does_not_reach_the_builder() {
    // The runner judges a reader against the stored corpus: it reads `expected/`, it never
    // executes steps or writes datasets, so no file it imports (directly or not) belongs to the
    // scenario engine, the store, the case builder or the generator.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = BTreeMap::new();
    rust_files(&root.join("src"), &root.join("src"), &mut files);
    let graph = imports(&files);
    let builder = ["scenario", "store", "build", "generate"];
    let mut reached = Vec::new();
    for file in graph.keys().filter(|f| module(f) == "runner") {
        for b in reachable(&graph, file) {
            if builder.contains(&module(&b)) {
                reached.push(format!("{file} -> {b}"));
            }
        }
    }
    assert!(
        reached.is_empty(),
        "the runner reaches the builder:\n{}",
        reached.join("\n")
    );
}
