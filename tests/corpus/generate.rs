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
            let f = c.join(lance_conformance::checksums::SUMS_FILE);
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
            for row in &parsed.rows.to_vec() {
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

#[test]
fn every_corruption_makes_the_reference_refuse_the_damaged_version() {
    // covers: OVL-FLAG-3, OVL-VER-5, OVL-LAYOUT-4, OVL-LAYOUT-5, OVL-LAYOUT-7, OVL-DEL-3
    let base = r#"
id = "scratch"
title = "t"
requirements = ["OVL-COV-3"]
level = "MUST"
description = "d"
expect_error = { class = "CLASS", code = "CODE" }
[[steps]]
op = "create"
schema = [{ name = "x", type = "int32" }, { name = "y", type = "int32" }]
rows = [{ x = 1, y = 1 }, { x = 2, y = 2 }, { x = 3, y = 3 }]
[[steps]]
op = "overlay"
fragment = 0
shape = "dense"
cells.x = { 1 = 20, 2 = 30 }
[[steps]]
op = "corrupt"
CORRUPTION
"#;
    let cases = [
        (
            "what = \"clear_flag\"\nword = \"reader\"\nbit = 64",
            "invalid",
            "missing_flag",
        ),
        (
            "what = \"set_flag\"\nword = \"reader\"\nbit = 1048576",
            "unsupported_feature",
            "unknown_reader_flag",
        ),
        (
            "what = \"set_committed_version\"\nfragment = 0\noverlay = 0\ncommitted_version = 0",
            "invalid",
            "bad_committed_version",
        ),
        (
            "what = \"set_committed_version\"\nfragment = 0\noverlay = 0\ncommitted_version = 9",
            "invalid",
            "bad_committed_version",
        ),
        (
            "what = \"drop_overlay_value\"\nfragment = 0\noverlay = 0\nfield = \"x\"",
            "invalid",
            "value_count_mismatch",
        ),
        (
            "what = \"duplicate_overlay_field\"\nfragment = 0\noverlay = 0",
            "invalid",
            "duplicate_field",
        ),
        (
            "what = \"truncate_base_column\"\nfragment = 0\nfield = \"y\"",
            "invalid",
            "base_length_mismatch",
        ),
        (
            "what = \"deletion_past_end\"\nfragment = 0\noffset = 7",
            "invalid",
            "deletion_offset_out_of_range",
        ),
        (
            "what = \"path_escapes_root\"\nfragment = 0\noverlay = 0",
            "invalid",
            "path_escape",
        ),
        (
            "what = \"mixed_manifest_names\"",
            "invalid",
            "mixed_naming_schemes",
        ),
        (
            "what = \"truncate_overlay_file\"\nfragment = 0\noverlay = 0",
            "invalid",
            "invalid_field",
        ),
        (
            "what = \"malformed_roaring\"\nfragment = 0\noverlay = 0",
            "malformed",
            "malformed_bitmap",
        ),
        (
            "what = \"drop_overlay_data_file\"\nfragment = 0\noverlay = 0",
            "malformed",
            "missing_field",
        ),
        (
            "what = \"drop_overlay_coverage\"\nfragment = 0\noverlay = 0",
            "malformed",
            "missing_field",
        ),
        (
            // A run container whose two runs overlap.
            "what = \"coverage_bytes\"\nfragment = 0\noverlay = 0\nhex = \"3b300000 01 0000 0400 0200 0000 0200 0100 0200\"",
            "malformed",
            "malformed_bitmap",
        ),
    ];
    for (corruption, class, code) in cases {
        let text = base
            .replace("CORRUPTION", corruption)
            .replace("CLASS", class)
            .replace("CODE", code);
        let case = lance_conformance::case::Case::parse(&text, corruption).unwrap();
        match lance_conformance::build::case(&case, None) {
            Ok(built) => {
                let error = std::str::from_utf8(&built.files["expected/error.json"])
                    .unwrap()
                    .to_string();
                assert!(error.contains(code), "{corruption}: {error}");
                assert_eq!(
                    built.read.versions.len(),
                    1,
                    "{corruption}: version 1 stays readable"
                );
            }
            Err(e) => panic!("{corruption}: {e}"),
        }
    }
}

/// Runs a scratch case's steps (`STEPS` in a minimal case) and returns the build outcome.
fn build_steps(steps: &str) -> Result<lance_conformance::build::Built, String> {
    let text = format!(
        "id = \"scratch\"\ntitle = \"t\"\nrequirements = [\"OVL-MERGE-1\"]\nlevel = \"MUST\"\ndescription = \"d\"\n{steps}"
    );
    let case = lance_conformance::case::Case::parse(&text, "scratch").map_err(|e| e.to_string())?;
    lance_conformance::build::case(&case, None).map_err(|e| e.to_string())
}

const THREE_OVERLAYS: &str = r#"
[[steps]]
op = "create"
schema = [{ name = "v", type = "int32" }]
rows = [{ v = 0 }, { v = 1 }, { v = 2 }]
[[steps]]
op = "overlay"
fragment = 0
shape = "dense"
cells.v = { 0 = 10, 1 = 11 }
[[steps]]
op = "overlay"
fragment = 0
shape = "dense"
cells.v = { 1 = 21 }
[[steps]]
op = "overlay"
fragment = 0
shape = "dense"
cells.v = { 1 = 31, 2 = 32 }
"#;

#[test]
fn expect_refusal_needs_the_declared_refusal_and_commits_nothing() {
    // covers: OVL-MERGE-1, OVL-FOLD-6
    let refused = "[[steps]]\nop = \"expect_refusal\"\ncode = \"CODE\"\nattempt = ATTEMPT\n";
    let run = |code: &str, attempt: &str| {
        build_steps(&format!(
            "{THREE_OVERLAYS}{}",
            refused.replace("CODE", code).replace("ATTEMPT", attempt)
        ))
    };
    let merge_0_2 = "{ op = \"compact_overlays\", fragment = 0, positions = [0, 2] }";
    let built = run("non_contiguous_merge", merge_0_2).unwrap();
    assert_eq!(built.read.versions.len(), 4, "the refusal adds no version");
    let note = &built.execution.records[4].note;
    assert!(note.contains("refused/non_contiguous_merge"), "{note}");
    // A different code, an operation that succeeds, and a plan-less fold with a stale index.
    let wrong = run("stale_index", merge_0_2).unwrap_err();
    assert!(wrong.contains("non_contiguous_merge"), "{wrong}");
    let merge_1_2 = "{ op = \"compact_overlays\", fragment = 0, positions = [1, 2] }";
    let accepted = run("non_contiguous_merge", merge_1_2).unwrap_err();
    assert!(accepted.contains("was committed"), "{accepted}");
    let nested = run("x", "{ op = \"corrupt\", what = \"mixed_manifest_names\" }").unwrap_err();
    assert!(nested.contains("cannot be an expected refusal"), "{nested}");
}

#[test]
fn reorder_overlays_permutes_the_stored_list_and_reads_the_same() {
    // covers: OVL-PREC-4
    let reorder = "[[steps]]\nop = \"reorder_overlays\"\nfragment = 0\norder = ORDER\n";
    let built = build_steps(&format!(
        "{THREE_OVERLAYS}{}",
        reorder.replace("ORDER", "[2, 0, 1]")
    ))
    .unwrap();
    let v5 = &built.read.versions[4];
    let versions: Vec<u64> = v5.fragments[0]
        .overlays
        .iter()
        .map(|o| o.committed_version)
        .collect();
    assert_eq!(versions, vec![4, 2, 3]);
    let rows = |v: &str| {
        let text = std::str::from_utf8(&built.files[v]).unwrap();
        lance_conformance::expected::parse_version(text)
            .unwrap()
            .rows
    };
    assert_eq!(rows("expected/v4.json"), rows("expected/v5.json"));
    for bad in ["[0, 1]", "[0, 1, 1]", "[0, 1, 3]"] {
        let e = build_steps(&format!(
            "{THREE_OVERLAYS}{}",
            reorder.replace("ORDER", bad)
        ))
        .unwrap_err();
        assert!(e.contains("not a permutation"), "{bad}: {e}");
    }
}

#[test]
fn duplicate_base_field_is_refused_with_one_or_two_base_files() {
    // covers: OVL-NULL-5
    let fold = "[[steps]]\nop = \"fold\"\nfragment = 0\n";
    let corrupt = "expect_error = { class = \"invalid\", code = \"duplicate_field\" }\n";
    let damage = "[[steps]]\nop = \"corrupt\"\nwhat = \"duplicate_base_field\"\nfragment = 0\nfield = \"v\"\n";
    let built = build_steps(&format!("{corrupt}{THREE_OVERLAYS}{fold}{damage}")).unwrap();
    let error = std::str::from_utf8(&built.files["expected/error.json"]).unwrap();
    assert!(error.contains("duplicate_field"), "{error}");
    // Without the fold the fragment has one base file: the corruption adds a second one that
    // holds the field again, and the version is refused the same way.
    let built = build_steps(&format!("{corrupt}{THREE_OVERLAYS}{damage}")).unwrap();
    let error = std::str::from_utf8(&built.files["expected/error.json"]).unwrap();
    assert!(error.contains("duplicate_field"), "{error}");
}
