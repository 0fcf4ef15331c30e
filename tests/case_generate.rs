//! The generated corpus is exactly what the generator produces (`generate --check`), the check
//! notices every kind of drift, and the expected-results parser reads every generated file
//! back to the same bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use lance_conformance::{expected, generate};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

#[test]
fn the_committed_corpus_is_up_to_date() {
    let code = generate::command(
        &root().join("conformance-cases"),
        &root().join("spec/requirements.toml"),
        &[],
        true,
    )
    .unwrap();
    assert_eq!(code, 0, "run `cargo run -- generate` and commit the result");
}

#[test]
fn check_fails_on_a_changed_missing_or_extra_file_and_on_stale_sums() {
    let requirements = root().join("spec/requirements.toml");
    type Edit = fn(&Path);
    let edits: [(&str, Edit); 4] = [
        ("changed byte", |c| {
            let f = c.join("overlays/worked-example/expected/v2.json");
            let text = std::fs::read_to_string(&f).unwrap().replacen("26", "27", 1);
            std::fs::write(f, text).unwrap();
        }),
        ("missing file", |c| {
            std::fs::remove_file(c.join("overlays/worked-example/expected/v4.json")).unwrap()
        }),
        ("extra file", |c| {
            std::fs::write(c.join("overlays/worked-example/expected/v9.json"), "{}\n").unwrap()
        }),
        ("stale sums", |c| {
            let f = c.join(generate::SUMS_FILE);
            let text = std::fs::read_to_string(&f).unwrap();
            std::fs::write(f, &text[..text.len() / 2]).unwrap();
        }),
    ];
    for (what, edit) in edits {
        let scratch = tempfile::tempdir().unwrap();
        let corpus = scratch.path().join("conformance-cases");
        copy_dir(&root().join("conformance-cases"), &corpus);
        assert_eq!(
            generate::command(&corpus, &requirements, &[], true).unwrap(),
            0,
            "{what}: clean copy"
        );
        edit(&corpus);
        assert_eq!(
            generate::command(&corpus, &requirements, &[], true).unwrap(),
            1,
            "{what} not noticed"
        );
        // Regenerating repairs it.
        assert_eq!(
            generate::command(&corpus, &requirements, &[], false).unwrap(),
            0
        );
        let extra = corpus.join("overlays/worked-example/expected/v9.json");
        assert!(!extra.exists(), "{what}: regeneration keeps a stale file");
        assert_eq!(
            generate::command(&corpus, &requirements, &[], true).unwrap(),
            0,
            "{what}: after repair"
        );
    }
}

#[test]
fn selecting_cases_by_id_or_path() {
    let requirements = root().join("spec/requirements.toml");
    let corpus = root().join("conformance-cases");
    let by_id =
        generate::command(&corpus, &requirements, &["worked-example".into()], true).unwrap();
    assert_eq!(by_id, 0);
    let path = corpus.join("overlays/null-cover").display().to_string();
    assert_eq!(
        generate::command(&corpus, &requirements, &[path], true).unwrap(),
        0
    );
    assert!(generate::command(&corpus, &requirements, &["no-such-case".into()], true).is_err());
}

#[test]
fn every_expected_file_parses_back_to_the_same_bytes() {
    let mut files = Vec::new();
    collect(&root().join("conformance-cases"), &mut files);
    assert!(files.len() > 20);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let again = if f.ends_with("error.json") {
            expected::to_json(&expected::parse_error(&text).unwrap())
        } else {
            let parsed = expected::parse_version(&text).unwrap();
            for row in &parsed.rows {
                for v in &row.values {
                    expected::tagged::untag(v).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                }
            }
            expected::to_json(&parsed)
        };
        assert_eq!(again, text, "{}", f.display());
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json")
            && path.parent().unwrap().ends_with("expected")
        {
            out.push(path);
        }
    }
}
