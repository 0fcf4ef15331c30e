//! `lance-conformance generate [--check] [CASE...]`: rebuild each case's `dataset/` and
//! `expected/` from its `case.toml`, and `conformance-cases/SHA256SUMS` over every generated
//! file.
//!
//! Invariant: the generated files are a pure function of the case files and the reference, so
//! `--check` (regenerate into a temporary directory and compare byte for byte, file sets
//! included, then verify `SHA256SUMS` against the files on disk) passes exactly when the
//! committed corpus is what the current code generates. Generated files are never edited by
//! hand.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::build::{self, BuildError};
use crate::case::{CaseError, RequirementIndex};
use crate::checksums::{ChecksumError, GENERATED_DIRS, SUMS_FILE, generated_files, sums};
use crate::corpus::{self, CaseDir, CorpusError};
use crate::error_codes;

/// Why `generate` could not regenerate (or check) the corpus: the command exits 2.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The requirement index does not load.
    #[error(transparent)]
    Requirements(#[from] CaseError),
    /// The corpus does not load.
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    /// The error-code tables contradict themselves or the corpus ([`error_codes::problems`]).
    #[error("the error-code tables: {}", .0.join("; "))]
    CodeTables(Vec<String>),
    /// A case selector names no case.
    #[error("no case matches {0:?} (give an id or a case directory)")]
    NoSuchCase(String),
    /// A case does not build.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A twin does not read exactly as the case whose `expected/` it shares.
    #[error("twin {twin}: {problem}")]
    Twin {
        /// The twin's id.
        twin: String,
        /// What differs.
        problem: String,
    },
    /// The generated files cannot be read or hashed.
    #[error(transparent)]
    Checksums(#[from] ChecksumError),
    /// A file or directory cannot be written, removed or created.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done (`writing`, `removing`, ...).
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

type Result<T, E = GenerateError> = std::result::Result<T, E>;

/// An I/O failure of `what` at `path`.
fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> GenerateError {
    let path = path.to_path_buf();
    move |source| GenerateError::Io { what, path, source }
}

/// Writes `text` to `path` unless the file already holds exactly that (an unchanged source
/// file keeps its modification time, so cargo does not rebuild what includes it).
fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(io("writing", path))
}

/// The corpus README, whose case table the generator maintains between [`TABLE_BEGIN`] and
/// [`TABLE_END`].
pub const README_FILE: &str = "README.md";
/// Marker line opening the generated case table.
pub const TABLE_BEGIN: &str = "<!-- generated: case table (lance-conformance generate) -->";
/// Marker line closing the generated case table.
pub const TABLE_END: &str = "<!-- end of generated case table -->";

/// Runs the command: `root` is the corpus (`conformance-cases`), `requirements` the path of
/// `spec/requirements.toml`, `selectors` case ids or paths (none = all). Returns the exit code:
/// 0 on success, 1 when `--check` finds a difference.
pub fn command(root: &Path, requirements: &Path, selectors: &[String], check: bool) -> Result<i32> {
    let index = RequirementIndex::load(requirements)?;
    let all = corpus::load(root, &index)?;
    let selected = select(&all, selectors)?;
    let spec = requirements.parent().unwrap_or(Path::new("."));
    let codes_file = spec.join(error_codes::FILE);
    // The runner crate's copy of the table's requirement column, beside `spec/` in the
    // repository (not there for a corpus and spec copied elsewhere).
    let pinned_file = spec
        .parent()
        .map(|repo| repo.join(error_codes::PINNED_FILE))
        .filter(|p| p.parent().is_some_and(Path::is_dir));
    let table_problems = error_codes::problems(&all);
    if !table_problems.is_empty() {
        return Err(GenerateError::CodeTables(table_problems));
    }
    if check {
        let mut problems = check_cases(root, &all, &selected)?;
        if std::fs::read_to_string(&codes_file).ok().as_deref() != Some(&error_codes::render(&all))
        {
            problems.push(format!(
                "{} differs from the error-code tables",
                codes_file.display()
            ));
        }
        if let Some(pinned_file) = &pinned_file {
            if std::fs::read_to_string(pinned_file).ok().as_deref()
                != Some(&error_codes::render_pinned(&all))
            {
                problems.push(format!(
                    "{} differs from the error-code tables",
                    pinned_file.display()
                ));
            }
        }
        if problems.is_empty() {
            println!(
                "generate --check: {} case(s) and {SUMS_FILE} are up to date",
                selected.len()
            );
            return Ok(0);
        }
        let mut err = std::io::stderr().lock();
        // Best effort: the exit code says it, whether or not stderr takes the list.
        let _ = writeln!(
            err,
            "generate --check: {} difference(s); run `lance-conformance generate`:",
            problems.len()
        );
        for p in &problems {
            let _ = writeln!(err, "  {p}");
        }
        return Ok(1);
    }
    // Twins last: each is checked against the `expected/` of the case it shares, written first.
    for c in selected.iter().filter(|c| c.twin_of.is_none()) {
        write_case(c, &c.dir)?;
    }
    for c in selected.iter().filter(|c| c.twin_of.is_some()) {
        write_case(c, &c.dir)?;
    }
    write_if_changed(&codes_file, &error_codes::render(&all))?;
    if let Some(pinned_file) = &pinned_file {
        write_if_changed(pinned_file, &error_codes::render_pinned(&all))?;
    }
    let sums_file = root.join(SUMS_FILE);
    std::fs::write(&sums_file, sums(root, &all)?).map_err(io("writing", &sums_file))?;
    let readme = root.join(README_FILE);
    if let Ok(text) = std::fs::read_to_string(&readme) {
        if let Some(updated) = with_table(&text, &all) {
            std::fs::write(&readme, updated).map_err(io("writing", &readme))?;
        }
    }
    println!(
        "generated {} case(s); {SUMS_FILE} covers {} case(s)",
        selected.len(),
        all.len()
    );
    Ok(0)
}

/// The cases matching `selectors` (id, case directory or `case.toml` path); all when empty.
pub fn select<'a>(all: &'a [CaseDir], selectors: &[String]) -> Result<Vec<&'a CaseDir>> {
    if selectors.is_empty() {
        return Ok(all.iter().collect());
    }
    let mut out: Vec<&CaseDir> = Vec::new();
    for s in selectors {
        let as_path = Path::new(s);
        let as_dir = if as_path.file_name().is_some_and(|n| n == "case.toml") {
            as_path.parent().map(Path::to_path_buf)
        } else {
            Some(as_path.to_path_buf())
        };
        let canon = as_dir.and_then(|d| d.canonicalize().ok());
        let found = all.iter().find(|c| {
            c.case.id == *s
                || canon
                    .as_ref()
                    .is_some_and(|p| c.dir.canonicalize().ok().as_ref() == Some(p))
        });
        match found {
            Some(c) if !out.iter().any(|o| o.case.id == c.case.id) => out.push(c),
            Some(_) => {}
            None => return Err(GenerateError::NoSuchCase(s.clone())),
        }
    }
    Ok(out)
}

/// Regenerates one case into `dir` (its own directory, or a scratch copy for `--check`):
/// clears the generated subdirectories, lets the store write `dataset/`, writes `expected/`.
/// A twin gets no `expected/`: what it would generate must equal, byte for byte, the committed
/// `expected/` of the case it shares, or generation fails.
fn write_case(c: &CaseDir, dir: &Path) -> Result<()> {
    for sub in GENERATED_DIRS {
        let p = dir.join(sub);
        if p.exists() {
            std::fs::remove_dir_all(&p).map_err(io("removing", &p))?;
        }
    }
    let Some(source) = &c.twin_of else {
        build::write(&c.case, dir)?;
        return Ok(());
    };
    // Built under the shared case's id, which the expected files name.
    let mut case = c.case.clone();
    case.id = c.expected_id();
    let built = build::case(&case, Some(&dir.join("dataset")))?;
    let shared = generated_files(source, source)?;
    let shared: BTreeMap<&str, &Vec<u8>> = shared
        .iter()
        .filter(|(rel, _)| rel.starts_with("expected/"))
        .map(|(rel, bytes)| (rel.as_str(), bytes))
        .collect();
    let twin = |problem: String| GenerateError::Twin {
        twin: c.case.id.clone(),
        problem,
    };
    for (rel, bytes) in &built.files {
        match shared.get(rel.as_str()) {
            Some(stored) if *stored == bytes => {}
            Some(_) => {
                return Err(twin(format!(
                    "its {rel} would differ from {}'s; a twin must read exactly as the case \
                     whose expected/ it shares",
                    case.id
                )));
            }
            None => return Err(twin(format!("{} has no {rel}", case.id))),
        }
    }
    if let Some(extra) = shared.keys().find(|rel| !built.files.contains_key(**rel)) {
        return Err(twin(format!(
            "it generates no {extra}, which {} has",
            case.id
        )));
    }
    Ok(())
}

/// Regenerates `selected` into a scratch directory and lists every difference from the
/// committed files, then checks `SHA256SUMS` against all committed generated files.
fn check_cases(root: &Path, all: &[CaseDir], selected: &[&CaseDir]) -> Result<Vec<String>> {
    let scratch = tempfile::tempdir().map_err(io("creating", &std::env::temp_dir()))?;
    let mut problems = Vec::new();
    for c in selected {
        let fresh_dir = scratch.path().join(&c.area).join(&c.case.id);
        std::fs::create_dir_all(&fresh_dir).map_err(io("creating", &fresh_dir))?;
        match write_case(c, &fresh_dir) {
            Ok(()) => {}
            // A twin that no longer reads as the committed case it shares `expected/` with is
            // a difference to list (that case's files may be the stale ones).
            Err(e) if c.twin_of.is_some() => {
                problems.push(e.to_string());
                continue;
            }
            Err(e) => return Err(e),
        }
        let fresh = generated_files(&fresh_dir, scratch.path())?;
        let committed = generated_files(&c.dir, root)?;
        for (path, bytes) in &fresh {
            match committed.get(path) {
                None => problems.push(format!("missing: {path}")),
                Some(b) if b != bytes => problems.push(format!("differs: {path}")),
                Some(_) => {}
            }
        }
        for path in committed.keys().filter(|p| !fresh.contains_key(*p)) {
            problems.push(format!("extra: {path}"));
        }
    }
    if let Ok(text) = std::fs::read_to_string(root.join(README_FILE)) {
        if with_table(&text, all).is_some_and(|t| t != text) {
            problems.push(format!("{README_FILE}: the generated case table is stale"));
        }
    }
    let expected = sums(root, all)?;
    match std::fs::read_to_string(root.join(SUMS_FILE)) {
        Ok(found) if found == expected => {}
        Ok(_) => problems.push(format!("{SUMS_FILE} does not match the generated files")),
        Err(_) => problems.push(format!("missing: {SUMS_FILE}")),
    }
    Ok(problems)
}

/// The markdown case table: counts per area, level and negative, then one row per case.
pub fn case_table(cases: &[CaseDir]) -> String {
    let mut by_area: BTreeMap<&str, (usize, usize, usize, usize)> = BTreeMap::new();
    for c in cases {
        let e = by_area.entry(c.area.as_str()).or_default();
        e.0 += 1;
        match c.case.level {
            crate::case::Level::Must => e.1 += 1,
            crate::case::Level::Should => e.2 += 1,
        }
        e.3 += usize::from(c.case.is_negative());
    }
    let mut t =
        String::from("| area | cases | MUST | SHOULD | negative |\n|---|---|---|---|---|\n");
    let mut total = (0, 0, 0, 0);
    for (area, (n, must, should, neg)) in &by_area {
        t.push_str(&format!("| {area} | {n} | {must} | {should} | {neg} |\n"));
        total = (total.0 + n, total.1 + must, total.2 + should, total.3 + neg);
    }
    t.push_str(&format!(
        "| **all** | {} | {} | {} | {} |\n\n",
        total.0, total.1, total.2, total.3
    ));
    t.push_str("| case | level | requirements | title |\n|---|---|---|---|\n");
    for c in cases {
        let level = match &c.case.expect_error {
            Some(e) => format!("{} (error: {})", c.case.level.as_str(), e.class),
            None => c.case.level.as_str().to_string(),
        };
        t.push_str(&format!(
            "| `{}/{}` | {level} | {} | {} |\n",
            c.area,
            c.case.id,
            c.case.requirements.join(", "),
            c.case.title.replace('|', "\\|")
        ));
    }
    t
}

/// `text` with the part between the table markers replaced by the current table; `None` when
/// the markers are missing.
fn with_table(text: &str, cases: &[CaseDir]) -> Option<String> {
    let start = text.find(TABLE_BEGIN)? + TABLE_BEGIN.len();
    let end = start + text[start..].find(TABLE_END)?;
    Some(format!(
        "{}\n\n{}\n{}",
        &text[..start],
        case_table(cases),
        &text[end..]
    ))
}
