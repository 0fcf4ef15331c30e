//! No import cycle between files of different modules, in any crate of the workspace, and no
//! file I/O in the semantics crate: the structure the module docs promise, checked.
//!
//! The check reads source text, so it must see every way one file names another, or a move can
//! hide a new arrow. A file's imports are the module paths it names outside test code:
//! `crate::a::b`, `super::` and `self::` paths (resolved against the file's own module), and
//! `use` paths whose first segment is a child module (2018 uniform paths), with `{...}` groups
//! expanded. A path that lands on a module's root (`mod.rs`) is followed through that root's
//! `use` re-exports (`pub use`, `pub(crate) use`) to the file that defines the item. Test code
//! is left out precisely: the item after `#[cfg(test)]` (a block, or a whole `mod x;` file),
//! not "everything after the first `#[cfg(test)]`". `crate::Error`, `crate::ErrorClass` and
//! `crate::Result` count as `error.rs`. Files are grouped into strongly connected components;
//! a component that spans more than one top-level module is a cycle.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub(super) fn rust_files(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
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

/// `text` with comments, string and char literals blanked (so a `crate::` inside a message or
/// a `{` inside a string is not read as code). Lifetimes are kept.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            // raw string r"..." or r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|h| b.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // a char literal ('x', '\n', '\'', '\u{..}') or a lifetime ('a)
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// `code` without the items marked `#[cfg(test)]`, and the names of test-only `mod x;` files.
fn without_test_items(code: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_mods = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        // The item ends at its first `;` outside braces, or at the brace that closes its body.
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, ch) in item.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        let head = item[..end].trim();
        if let Some(name) = head
            .strip_prefix("mod ")
            .or_else(|| head.strip_prefix("pub mod "))
            .and_then(|m| m.strip_suffix(';'))
        {
            test_mods.push(name.trim().to_string());
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_mods)
}

/// The module path of a file: `a/b.rs` and `a/b/mod.rs` are `[a, b]`; `lib.rs` is `[]`.
fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file.split('/').map(str::to_string).collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
    if !matches!(stem.as_str(), "mod" | "lib" | "main") {
        parts.push(stem);
    }
    parts
}

/// Expands one `use` tree (`a::{b, c::{d, e}}`, `a::b as c`) into its full paths, each with the
/// name it binds (its alias, or its last segment). ` as ` must already read `@`.
fn expand_use(tree: &str) -> Vec<(String, String)> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        let mut parts = tree.splitn(2, '@');
        let path = parts.next().unwrap_or_default().to_string();
        let name = parts
            .next()
            .map(str::to_string)
            .unwrap_or_else(|| path.rsplit("::").next().unwrap_or_default().to_string());
        return vec![(path, name)];
    };
    let prefix = &tree[..open];
    let inner: Vec<char> = tree[open + 1..tree.rfind('}').unwrap_or(tree.len())]
        .chars()
        .collect();
    let (mut depth, mut start) = (0usize, 0usize);
    let mut pieces = Vec::new();
    for (k, ch) in inner.iter().enumerate() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                pieces.push(inner[start..k].iter().collect::<String>());
                start = k + 1;
            }
            _ => {}
        }
    }
    pieces.push(inner[start..].iter().collect::<String>());
    let mut out = Vec::new();
    for piece in pieces.into_iter().filter(|p| !p.is_empty()) {
        for (sub, name) in expand_use(&piece) {
            if sub == "self" {
                let path = prefix.trim_end_matches("::").to_string();
                let name = if name == "self" {
                    path.rsplit("::").next().unwrap_or_default().to_string()
                } else {
                    name
                };
                out.push((path, name));
            } else {
                out.push((format!("{prefix}{sub}"), name));
            }
        }
    }
    out
}

/// Every `use` statement of `code`: its expanded paths with the names they bind, and whether
/// the statement re-exports them (`pub use`, `pub(crate) use`, ...).
fn use_paths(code: &str) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let before = rest[..at].trim_end();
        let reexport = is_reexport(before);
        let stmt = &rest[at + 3..];
        let end = stmt.find(';').unwrap_or(stmt.len());
        for (path, name) in expand_use(&stmt[..end].replace(" as ", "@")) {
            out.push((path, name, reexport));
        }
        rest = &stmt[end..];
    }
    out
}

/// Every module path a file names, each as segments from the crate root.
fn named_paths(files: &BTreeMap<String, String>, file: &str, code: &str) -> Vec<Vec<String>> {
    let here = module_path(file);
    let mut out = Vec::new();
    // `use` statements: relative first segments included. A re-export is not an arrow of its
    // own: it is followed for whoever names the item through this file (`defining_file`).
    for (path, _, reexport) in use_paths(code) {
        if reexport {
            continue;
        }
        if let Some(p) = resolve(files, &here, &path, true) {
            out.push(p);
        }
    }
    // paths in expressions and types (re-export statements left out, as above)
    let code = &without_reexports(code);
    for anchor in ["crate::", "super::", "self::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(anchor) {
            let before = rest[..at].chars().next_back();
            let path: String = rest[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            rest = &rest[at + anchor.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // part of a longer path, handled from its start
            }
            if let Some(p) = resolve(files, &here, path.trim_end_matches(':'), false) {
                out.push(p);
            }
        }
    }
    out
}

/// Whether a `use` preceded by `before` (trimmed) is a re-export: `pub use`, `pub(crate) use`.
fn is_reexport(before: &str) -> bool {
    // `pub(...)` must be the visibility of this statement, not text further back
    let restricted = before.ends_with(')')
        && before
            .rfind("pub(")
            .is_some_and(|at| !before[at..].contains([';', '{', '}']));
    before.ends_with("pub") || restricted
}

/// `code` without its `pub use ...;` statements.
fn without_reexports(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let before = rest[..at].trim_end();
        let reexport = is_reexport(before);
        let end = rest[at..].find(';').map_or(rest.len(), |e| at + e + 1);
        if reexport {
            let vis = before.rfind("pub").unwrap_or(at);
            out.push_str(&rest[..vis]);
        } else {
            out.push_str(&rest[..end]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && after.is_some_and(char::is_whitespace)
        {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `path` as segments from the crate root, or `None` when it leaves the crate (std, another crate).
fn resolve(
    files: &BTreeMap<String, String>,
    here: &[String],
    path: &str,
    in_use: bool,
) -> Option<Vec<String>> {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let first = *segs.first()?;
    let mut base: Vec<String> = match first {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => here.to_vec(),
        _ if in_use => {
            // uniform paths: a child module of the current one
            let mut child = here.to_vec();
            child.push(first.to_string());
            if file_of(files, &child).is_some_and(|f| module_path(&f) == child) {
                here.to_vec()
            } else {
                return None;
            }
        }
        _ => return None,
    };
    let mut k = if first == "crate" || first == "self" {
        1
    } else {
        0
    };
    while segs.get(k) == Some(&"super") {
        base.pop()?;
        k += 1;
    }
    base.extend(segs[k..].iter().map(|s| s.to_string()));
    Some(base)
}

/// The file that holds the longest module prefix of `path`.
fn file_of(files: &BTreeMap<String, String>, path: &[String]) -> Option<String> {
    if matches!(
        path.first().map(String::as_str),
        Some("Error" | "ErrorClass" | "Result")
    ) {
        return Some("error.rs".into());
    }
    for k in (0..=path.len()).rev() {
        let base = path[..k].join("/");
        let candidates = if k == 0 {
            vec!["lib.rs".to_string(), "main.rs".to_string()]
        } else {
            vec![format!("{base}.rs"), format!("{base}/mod.rs")]
        };
        for candidate in candidates {
            if files.contains_key(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// The file that defines what `path` names: its module's file, followed through that module's
/// `use` re-exports when the item is re-exported there.
fn defining_file(
    files: &BTreeMap<String, String>,
    reexports: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
    path: &[String],
    depth: usize,
) -> Option<String> {
    let file = file_of(files, path)?;
    let module = module_path(&file);
    if depth < 8 && path.len() > module.len() {
        let item = &path[module.len()];
        if let Some(target) = reexports.get(&file).and_then(|r| r.get(item)) {
            let mut followed = target.clone();
            followed.extend(path[module.len() + 1..].iter().cloned());
            if followed != path {
                return defining_file(files, reexports, &followed, depth + 1);
            }
        }
    }
    Some(file)
}

/// Files of a crate with test code removed; test-only `mod x;` files dropped.
pub(super) fn production_code(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut code = BTreeMap::new();
    let mut test_files = BTreeSet::new();
    for (file, text) in files {
        let (kept, test_mods) = without_test_items(&code_only(text));
        let here = module_path(file);
        for m in test_mods {
            let mut child = here.clone();
            child.push(m);
            let dir = child.join("/");
            test_files.insert(format!("{dir}.rs"));
            test_files.insert(format!("{dir}/mod.rs"));
        }
        code.insert(file.clone(), kept);
    }
    code.retain(|f, _| {
        !test_files.contains(f)
            && !test_files.iter().any(|t| {
                t.strip_suffix("/mod.rs")
                    .is_some_and(|dir| f.starts_with(&format!("{dir}/")))
            })
    });
    code
}

fn imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let code = production_code(files);
    // each file's `use` re-exports: item name -> full path
    let mut reexports: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (file, text) in &code {
        let here = module_path(file);
        for (path, name, _) in use_paths(text) {
            if let Some(full) = resolve(&code, &here, &path, true) {
                if name != "*" && name != "_" {
                    reexports
                        .entry(file.clone())
                        .or_default()
                        .insert(name, full);
                }
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (file, text) in &code {
        let mut out = BTreeSet::new();
        for path in named_paths(&code, file, text) {
            if let Some(t) = defining_file(&code, &reexports, &path, 0) {
                if &t != file && t != "lib.rs" && t != "main.rs" {
                    out.insert(t);
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
        "runner/src",
        "generate/src",
        "src",
        "test-support/src",
    ] {
        let mut files = BTreeMap::new();
        rust_files(&root.join(krate), &root.join(krate), &mut files);
        cycles.extend(
            cycles_in(&files)
                .into_iter()
                .map(|c| format!("{krate}: {c}")),
        );
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_error_hub_wraps_only_error_types() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut offenders = Vec::new();
    for krate in [
        "reference/src",
        "reference-io/src",
        "runner/src",
        "generate/src",
        "src",
        "test-support/src",
    ] {
        let mut files = BTreeMap::new();
        rust_files(&root.join(krate), &root.join(krate), &mut files);
        let code = production_code(&files);
        let Some(text) = code.get("error.rs") else {
            continue;
        };
        for path in named_paths(&code, "error.rs", text) {
            // the error hub's own items, and its `#[macro_export]` macros (at the crate root)
            let inside_error_rs = matches!(
                file_of(&code, &path).as_deref(),
                Some("error.rs" | "lib.rs" | "main.rs")
            );
            let last = path.last().map(String::as_str).unwrap_or_default();
            if !inside_error_rs && !last.ends_with("Error") {
                offenders.push(format!("{krate}/error.rs names {}", path.join("::")));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
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

/// The judge crate's dependencies that would let it reach the builder or the command line:
/// `manifest` is `runner/Cargo.toml`, every dependency table of it read (normal, dev, build,
/// and per target), each offender as `table: name`.
fn judge_arrows_out(manifest: &str) -> Vec<String> {
    const REFUSED: [&str; 4] = [
        "lance-conformance-generate",
        "lance-conformance",
        "clap",
        "anyhow",
    ];
    let manifest: toml::Table = toml::from_str(manifest).unwrap();
    fn add<'a>(tables: &mut Vec<(String, &'a toml::Table)>, prefix: &str, t: &'a toml::Table) {
        for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
            if let Some(deps) = t.get(kind).and_then(toml::Value::as_table) {
                tables.push((format!("{prefix}{kind}"), deps));
            }
        }
    }
    let mut tables = Vec::new();
    add(&mut tables, "", &manifest);
    for (cfg, t) in manifest
        .get("target")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
    {
        if let Some(t) = t.as_table() {
            add(&mut tables, &format!("target.{cfg}."), t);
        }
    }
    let mut out = Vec::new();
    for (table, deps) in tables {
        for (name, spec) in deps {
            // `foo = { package = "clap" }` is clap under another name
            let package = spec
                .get("package")
                .and_then(toml::Value::as_str)
                .unwrap_or(name);
            if REFUSED.contains(&package) {
                out.push(format!("{table}: {package}"));
            }
        }
    }
    out
}

#[test]
fn the_judge_does_not_reach_the_builder() {
    // The judge (`lance-conformance-runner`) judges a reader against the stored corpus: it reads
    // `expected/`, it never executes steps or writes datasets, and it parses no command line.
    // Cargo enforces most of this since the split into crates: the builder
    // (`lance-conformance-generate`) depends on the judge, so a normal dependency back would be
    // a cycle cargo refuses. What cargo allows, and this test refuses, is the rest: a
    // dev-dependency on the builder (the judge's unit tests reaching the builder), a dependency
    // on the CLI crate, clap or anyhow, in any dependency table of the judge's manifest.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("runner/Cargo.toml")).unwrap();
    let reached = judge_arrows_out(&manifest);
    assert!(
        reached.is_empty(),
        "the judge crate reaches the builder or the command line: {reached:?}"
    );
    // and its source names neither crate (a path dependency could come back under any name)
    let mut files = BTreeMap::new();
    rust_files(
        &root.join("runner/src"),
        &root.join("runner/src"),
        &mut files,
    );
    let named: Vec<&String> = files
        .iter()
        .filter(|(_, text)| {
            let code = code_only(text);
            code.contains("lance_conformance_generate") || code.contains("lance_conformance::")
        })
        .map(|(f, _)| f)
        .collect();
    assert!(named.is_empty(), "{named:?}");
}

#[test]
fn the_judge_check_reads_every_dependency_table() {
    let clean = "[package]\nname = \"lance-conformance-runner\"\n[dependencies]\nserde = \"1\"\n";
    assert_eq!(judge_arrows_out(clean), Vec::<String>::new());
    let planted = format!(
        "{clean}[dev-dependencies]\nlance-conformance-generate = {{ path = \"../generate\" }}\n\
         [target.'cfg(unix)'.dependencies]\ncli = {{ package = \"clap\", version = \"4\" }}\n"
    );
    assert_eq!(
        judge_arrows_out(&planted),
        [
            "dev-dependencies: lance-conformance-generate",
            "target.cfg(unix).dependencies: clap"
        ]
    );
}

/// Cycles between top-level modules of one crate's files, as `a <-> b` pairs.
///
/// A crate's `error.rs` is the one hub allowed: it wraps each module's error type into the
/// crate's `Error`, and every module returns that `Error`, so its arrows out are not followed.
/// That is sound only while `error.rs` names nothing but error types, which
/// `the_error_hub_wraps_only_error_types` checks.
fn cycles_in(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut graph = imports(files);
    if let Some(out) = graph.get_mut("error.rs") {
        out.clear();
    }
    let reach: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|f| (f, reachable(&graph, f))).collect();
    let mut cycles = Vec::new();
    for (a, from_a) in &reach {
        for b in from_a {
            if module(a) != module(b) && a.as_str() < b.as_str() && reach[b].contains(*a) {
                let there = path_between(&graph, a, b).join(" -> ");
                let back = path_between(&graph, b, a).join(" -> ");
                cycles.push(format!("{a} <-> {b} ({there}; {back})"));
            }
        }
    }
    cycles
}

/// A shortest import path from `from` to `to` (both included), for the failure message.
fn path_between(graph: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> Vec<String> {
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from.to_string()]);
    while let Some(f) = queue.pop_front() {
        for next in graph.get(&f).into_iter().flatten() {
            if next != from && !parent.contains_key(next) {
                parent.insert(next.clone(), f.clone());
                if next == to {
                    let mut path = vec![to.to_string()];
                    while let Some(p) = parent.get(path.last().unwrap()) {
                        path.push(p.clone());
                        if p == from {
                            break;
                        }
                    }
                    path.reverse();
                    return path;
                }
                queue.push_back(next.clone());
            }
        }
    }
    Vec::new()
}

fn synthetic(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect()
}

#[test]
fn the_scanner_sees_super_paths_and_child_use() {
    // runner/a.rs reaches validate through `super::b` then a relative `use`; validate comes back.
    let files = synthetic(&[
        ("lib.rs", "pub mod runner; pub mod validate;"),
        ("runner/mod.rs", "mod a; mod b;"),
        ("runner/a.rs", "fn f() { super::b::g() }"),
        ("runner/b.rs", "pub fn g() { crate::validate::v() }"),
        ("validate/mod.rs", "mod inner; use inner::w;"),
        ("validate/inner.rs", "use super::super::runner::a;"),
    ]);
    let cycles = cycles_in(&files);
    assert!(
        cycles
            .iter()
            .any(|c| c.contains("runner/") && c.contains("validate/")),
        "{cycles:?}"
    );
}

#[test]
fn the_scanner_follows_reexports_to_the_defining_file() {
    // `crate::runner::Format` is defined in runner/format.rs; runner/mod.rs also re-exports the
    // writer, which imports validate. Following the re-export, validate reaches only format.rs:
    // no cycle. Stopping at mod.rs would report one.
    let files = synthetic(&[
        ("lib.rs", "pub mod runner; pub mod validate;"),
        (
            "runner/mod.rs",
            "mod format; mod writer;\npub use format::Format;\npub use writer::{Writer as W, run};",
        ),
        ("runner/format.rs", "pub enum Format { Human }"),
        (
            "runner/writer.rs",
            "pub fn run() { crate::validate::check() }",
        ),
        (
            "validate/mod.rs",
            "use crate::runner::Format;\npub fn check() {}",
        ),
    ]);
    assert_eq!(cycles_in(&files), Vec::<String>::new());
    let graph = imports(&files);
    assert!(
        graph["validate/mod.rs"].contains("runner/format.rs"),
        "{graph:?}"
    );
    // and a re-export of the writer does lead back
    let mut files = files;
    files.insert(
        "validate/mod.rs".into(),
        "use crate::runner::{Format, W};\npub fn check() {}".into(),
    );
    assert!(!cycles_in(&files).is_empty());
}

#[test]
fn the_scanner_skips_test_items_comments_and_strings_only() {
    let files = synthetic(&[
        ("lib.rs", "pub mod a; pub mod b;"),
        (
            "a.rs",
            "#[cfg(test)]\nmod tests { use crate::b::x; }\n// crate::b::y\nconst S: &str = \"crate::b::z\";\nconst C: char = '{';\npub fn f() { crate::b::g() }",
        ),
        (
            "b.rs",
            "pub fn g() { crate::a::f() }\n#[cfg(test)]\nmod tests;",
        ),
        ("b/tests.rs", "use crate::a::f;"),
    ]);
    // the code after a test block still counts: a <-> b through g and f
    let cycles = cycles_in(&files);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].starts_with("a.rs <-> b.rs"), "{cycles:?}");
    let graph = imports(&files);
    assert!(
        !graph.contains_key("b/tests.rs"),
        "a test-only file is not production code"
    );
    // without the real calls, comments, strings and test code alone make no arrow
    let mut quiet = files.clone();
    quiet.insert("a.rs".into(), files["a.rs"].replace("crate::b::g()", "()"));
    assert!(cycles_in(&quiet).is_empty(), "{:?}", imports(&quiet));
}
