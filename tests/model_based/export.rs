//! Exporting a failing history as a conformance case (`LANCE_CONFORMANCE_EXPORT_CASE`).

use super::*;
use lance_conformance::fuzz::judge::{Scratch, requires};

// ---------------------------------------------------------------------------------------------
// Export: a history as a conformance case.
// ---------------------------------------------------------------------------------------------

pub(crate) fn requirement_index() -> RequirementIndex {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    RequirementIndex::load(&root.join("spec/requirements.toml")).unwrap()
}

/// `built` as a `case.toml` case: the fuzz command's own conversion
/// ([`lance_conformance::fuzz::case::to_case`]: its steps, a query per index at every version it
/// exists, requirement ids picked by the operations it uses, and the `requires` of the content
/// written, [`lance_conformance::fuzz::judge::requires`]), titled as this test's find.
pub(crate) fn export_case(built: &Built, why: &str) -> Case {
    let mut case = lance_conformance::fuzz::case::to_case(
        built,
        None,
        "model-based-history",
        &requirement_index(),
    );
    case.title = "A history found by the model-based property test".into();
    case.tags = vec!["model-based".into()];
    case.description =
        format!("Exported by tests/model_based/. The reference broke this invariant:\n{why}\n");
    let requires = Scratch::new().and_then(|mut scratch| requires(&case, &mut scratch));
    match requires {
        Ok(r) => case.requires = r,
        // A history the reference cannot write has no content to need anything; say so.
        Err(e) => case.description.push_str(&format!(
            "(`requires` not computed: the case cannot be written: {e})\n"
        )),
    }
    case
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
