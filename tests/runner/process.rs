//! The runner's command line with a testee process: the reference behind the protocol,
//! testees that crash, hang, print garbage or answer wrongly, known-failure files, the JSON
//! and JUnit reports, and a corpus that no longer matches SHA256SUMS.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::copy_dir;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_lance-conformance")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn closing_line(o: &Output) -> String {
    stdout(o).lines().last().unwrap_or_default().to_string()
}

/// `(passed, failed, skipped)` from the closing line.
fn counts(o: &Output) -> (usize, usize, usize) {
    let line = closing_line(o);
    let n: Vec<usize> = line
        .split(", ")
        .map(|part| part.split(' ').next().unwrap().parse().unwrap())
        .collect();
    (n[0], n[1], n[2])
}

fn case_count() -> usize {
    cases_in(None)
}

/// The number of cases (of one area, or of all).
fn cases_in(area: Option<&str>) -> usize {
    std::fs::read_to_string(root().join("conformance-cases/SHA256SUMS"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(_, p)| p))
        .filter_map(|p| {
            let mut parts = p.split('/');
            Some((parts.next()?.to_string(), parts.next()?.to_string()))
        })
        .filter(|(a, _)| area.is_none_or(|x| x == a))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// The area the misbehaving testee is run on: its cases are small, so a loaded machine answers
/// every request well within the two-second timeout the hang test needs (the lineage area holds
/// 14 000-row scans, the dataset area a 65 540-row one).
const MISBEHAVE_AREA: &str = "overlays";

fn testee_cmd() -> String {
    format!("{} testee", bin())
}

#[test]
fn the_reference_passes_in_process_and_behind_the_protocol() {
    // covers: OVL-PREC-1, OVL-COV-3
    let inproc = run(&["run"]);
    assert_eq!(inproc.status.code(), Some(0), "{}", stdout(&inproc));
    // In process, the worked-example walk is one more case.
    assert_eq!(counts(&inproc), (case_count() + 1, 0, 0));
    let cmd = testee_cmd();
    let process = run(&["run", "--reader-cmd", &cmd]);
    assert_eq!(process.status.code(), Some(0), "{}", stdout(&process));
    assert_eq!(counts(&process), (case_count(), 0, 0));
    assert!(stdout(&process).contains("reader: lance-reference"));
}

fn pids_of(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Alive and not a zombie, still after a second's grace (SIGKILL is delivered
/// asynchronously).
fn alive(pid: u32) -> bool {
    let running = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            state != Some("Z") && state != Some("X")
        }
    };
    for _ in 0..50 {
        if !running() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// Runs the corpus through `misbehave.py MODE null-cover`; returns the output and the pids
/// of every testee process started (the proxy and the reference behind it).
fn misbehave(mode: &str, extra: &[&str]) -> (Output, Vec<u32>) {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let script = root().join("tests/testees/misbehave.py");
    let cmd = format!(
        "python3 {} {mode} null-cover {} {} testee",
        script.display(),
        pidfile.display(),
        bin()
    );
    let mut args = vec![
        "run",
        "--reader-cmd",
        &cmd,
        "--timeout",
        "2",
        "--area",
        MISBEHAVE_AREA,
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    (out, pids_of(&pidfile))
}

fn case_line<'a>(text: &'a str, id: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(&format!("/{id} ")))
        .unwrap_or_else(|| panic!("no line for {id} in\n{text}"))
}

#[test]
fn a_crashing_hanging_or_garbage_testee_costs_one_case_and_leaves_no_process() {
    for (mode, says) in [
        ("crash", "exited"),
        ("hang", "no response within 2.0 s"),
        ("garbage", "not a protocol response"),
        ("badseq", "carries seq"),
        ("two", "exactly one of"),
    ] {
        let (out, pids) = misbehave(mode, &[]);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{mode}: {text}");
        assert!(
            case_line(&text, "null-cover").starts_with("ERROR"),
            "{mode}: {text}"
        );
        assert!(text.contains(says), "{mode}: {text}");
        // The run continued after a restart: every other case passed.
        assert_eq!(
            counts(&out),
            (cases_in(Some(MISBEHAVE_AREA)) - 1, 1, 0),
            "{mode}: {text}"
        );
        assert!(
            pids.len() >= 4,
            "{mode}: the testee was restarted: {pids:?}"
        );
        for pid in pids {
            assert!(!alive(pid), "{mode}: process {pid} outlived the run");
        }
    }
}

#[test]
fn wrong_answers_fail_and_noise_on_stderr_does_not() {
    // covers: OVL-NULL-1
    let (out, pids) = misbehave("wrong", &[]);
    let text = stdout(&out);
    assert!(case_line(&text, "null-cover").starts_with("FAIL"), "{text}");
    assert!(text.contains("rows expected"), "{text}");
    assert_eq!(counts(&out), (cases_in(Some(MISBEHAVE_AREA)) - 1, 1, 0));
    assert_eq!(pids.len(), 2, "a wrong answer is no reason to restart");
    let (out, _) = misbehave("noisy", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn a_testee_that_never_starts_is_a_runner_error() {
    let out = run(&["run", "--reader-cmd", "exit 3", "--timeout", "2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not start"), "{err}");
    let out = run(&["run", "--reader-cmd", "echo '{\"seq\": 1, \"result\": {}}'"]);
    assert_eq!(out.status.code(), Some(2));
}

fn known(lines: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("known-failures.txt");
    std::fs::write(&path, lines).unwrap();
    (dir, path.display().to_string())
}

#[test]
fn known_failures_cannot_rot() {
    // A listed failing case: the run passes, the case is XFAIL.
    let (_d, path) = known("null-cover  # wrong rows on purpose\n");
    let (out, _) = misbehave("wrong", &["--known-failures", &path]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(case_line(&text, "null-cover").starts_with("XFAIL"));
    assert_eq!(counts(&out), (cases_in(Some(MISBEHAVE_AREA)) - 1, 0, 0));
    assert!(text.contains("1 known failures"));
    // A listed case that passes, and an entry naming no case: both fail the run, and the
    // exact lines to remove are printed.
    let (_d, path) = known("# header\nnull-cover  # fixed since\nno-such-case  # typo\n");
    let out = run(&["run", "--known-failures", &path]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(case_line(&text, "null-cover").starts_with("XPASS"));
    assert!(
        text.contains("  remove: null-cover  # fixed since"),
        "{text}"
    );
    assert!(text.contains("  remove: no-such-case  # typo"), "{text}");
    assert_eq!(counts(&out).1, 2);
    // An unlisted failure prints the line to add.
    let (_d, path) = known("");
    let (out, _) = misbehave("wrong", &["--known-failures", &path]);
    let text = stdout(&out);
    assert!(
        text.contains("  add:    null-cover  wrong-value  `v1 scan`  # "),
        "{text}"
    );
    // A malformed file is a runner error.
    let (_d, path) = known("null-cover\n");
    let out = run(&["run", "--known-failures", &path]);
    assert_eq!(out.status.code(), Some(2));
    // So is a misspelt check: it names the line, instead of pinning a check that never runs.
    let (_d, path) = known("# header\nnull-cover  wrong-value  `v1 sacn`  # typo\n");
    let out = run(&["run", "--known-failures", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{path}:2: \"v1 sacn\" is not a check name")),
        "{err}"
    );
}

/// Every known-failure file the adapters keep parses, each check it pins is a check the
/// runner makes, and reads back spelt exactly as written.
#[test]
fn every_adapter_known_failure_file_names_real_checks() {
    use lance_conformance::runner::KnownFailures;
    let mut files = 0;
    let mut checks = 0;
    for adapter in std::fs::read_dir(root().join("adapters")).unwrap() {
        let dir = adapter.unwrap().path().join("known-failures");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for file in entries {
            let path = file.unwrap().path();
            if path.extension().is_none_or(|e| e != "txt") {
                continue;
            }
            files += 1;
            let known = KnownFailures::load(&path).unwrap_or_else(|e| panic!("{e}"));
            for entry in &known.entries {
                if let Some(check) = &entry.check {
                    checks += 1;
                    let spelt = format!("`{check}`");
                    assert!(
                        entry.text.contains(&spelt),
                        "{}: {}",
                        path.display(),
                        entry.text
                    );
                }
            }
        }
    }
    assert!(
        files >= 10 && checks >= 500,
        "{files} files, {checks} checks"
    );
}

#[test]
fn known_failures_name_a_kind_and_a_check_and_can_be_rewritten() {
    // Pinned as it fails: a known failure.
    let (_d, path) = known("null-cover  wrong-value  `v1 scan`  # drops a row on purpose\n");
    let (out, _) = misbehave("wrong", &["--known-failures", &path]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        case_line(&text, "null-cover").starts_with("XFAIL"),
        "{text}"
    );
    // Pinned with another kind: the failure changed, the run fails, and the lines say how.
    let (_d, path) = known("null-cover  accepted-damage  # was accepted damage\n");
    let (out, _) = misbehave("wrong", &["--known-failures", &path]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(case_line(&text, "null-cover").starts_with("XCHG"), "{text}");
    assert!(
        text.contains("  remove: null-cover  accepted-damage  # was accepted damage"),
        "{text}"
    );
    assert!(
        text.contains("  add:    null-cover  wrong-value  `v1 scan`  # "),
        "{text}"
    );
    assert!(text.contains("(was: was accepted damage)"), "{text}");
    // --update-known-failures writes the file so that the next run passes; reasons are
    // whole messages, and the header stays.
    let (d, _) = known("");
    let file = d.path().join("new.txt");
    std::fs::write(&file, "# my header\nno-such-case  # gone\n").unwrap();
    let f = file.display().to_string();
    let (out, _) = misbehave(
        "wrong",
        &["--known-failures", &f, "--update-known-failures"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with("# my header\n"), "{written}");
    assert!(!written.contains("no-such-case"), "{written}");
    let line = written
        .lines()
        .find(|l| l.starts_with("null-cover"))
        .unwrap();
    assert!(
        line.contains("rows expected") && line.ends_with("0:2])"),
        "{line}"
    );
    let (out, _) = misbehave("wrong", &["--known-failures", &f]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn json_and_junit_reports_are_well_formed() {
    let (out, _) = misbehave("wrong", &["--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["failed"], 1);
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), cases_in(Some(MISBEHAVE_AREA)));
    let nc = cases.iter().find(|c| c["id"] == "null-cover").unwrap();
    assert_eq!(nc["verdict"], "fail");
    assert_eq!(nc["outcome"], "failed");
    assert!(
        nc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["verdict"] == "fail")
    );

    let (out, _) = misbehave("crash", &["--format", "junit"]);
    let xml = stdout(&out);
    well_formed(&xml);
    assert_eq!(
        xml.matches("<testcase ").count(),
        cases_in(Some(MISBEHAVE_AREA))
    );
    assert_eq!(xml.matches("<error ").count(), 1);
    assert!(xml.contains("errors=\"1\""));
    // Messages with markup characters are escaped.
    let (_d, path) = known("null-cover  # <b>&\"quoted\"</b>\n");
    let (out, _) = misbehave("wrong", &["--known-failures", &path, "--format", "junit"]);
    let xml = stdout(&out);
    well_formed(&xml);
    assert!(xml.contains("&lt;b&gt;&amp;&quot;quoted&quot;&lt;/b&gt;"));
}

/// A small XML well-formedness check: declaration, balanced and properly nested elements,
/// quoted attributes, only the five predefined entities, no raw `<` or `&` in text.
fn well_formed(xml: &str) {
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .expect("XML declaration");
    let mut stack: Vec<String> = Vec::new();
    let mut rest = body;
    let check_text = |t: &str| {
        assert!(!t.contains('<'), "raw < in {t:?}");
        let mut s = t;
        while let Some(i) = s.find('&') {
            let tail = &s[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                    .iter()
                    .any(|e| tail.starts_with(e)),
                "bad entity in {t:?}"
            );
            s = &tail[1..];
        }
    };
    while let Some(open) = rest.find('<') {
        check_text(&rest[..open]);
        let close = rest[open..].find('>').expect("unclosed tag") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else {
            let self_closing = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let (name, attrs) = tag.split_once(' ').unwrap_or((tag, ""));
            let mut a = attrs.trim();
            while !a.is_empty() {
                let eq = a.find("=\"").expect("attribute without =\"");
                let end = a[eq + 2..].find('"').expect("unterminated attribute") + eq + 2;
                check_text(&a[eq + 2..end]);
                a = a[end + 1..].trim_start();
            }
            if !self_closing {
                stack.push(name.to_string());
            }
        }
        rest = &rest[close + 1..];
    }
    check_text(rest.trim());
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
}

#[test]
fn a_corpus_that_does_not_match_its_checksums_is_a_runner_error() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("conformance-cases");
    copy_dir(&root().join("conformance-cases"), &corpus);
    copy_dir(&root().join("spec"), &dir.path().join("spec"));
    let corpus_arg = corpus.display().to_string();
    let ok = run(&["run", "--corpus", &corpus_arg]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    // One byte of one expected file changes.
    let file = corpus.join("overlays/null-cover/expected/v2.json");
    let mut bytes = std::fs::read(&file).unwrap();
    let i = bytes.iter().position(|b| *b == b'"').unwrap();
    bytes[i] = b' ';
    std::fs::write(&file, &bytes).unwrap();
    let out = run(&["run", "--corpus", &corpus_arg]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("content differs: overlays/null-cover/expected/v2.json"),
        "{err}"
    );
    // The cases may be judged while the corpus is hashed, but no verdict is reported: only the
    // closing line every run ends with.
    assert_eq!(stdout(&out).trim(), "0 passed, 0 failed, 0 skipped");
    // A dataset file differing by one byte, every expected file parsing: the same.
    std::fs::write(
        &file,
        std::fs::read(root().join("conformance-cases/overlays/null-cover/expected/v2.json"))
            .unwrap(),
    )
    .unwrap();
    let data = corpus.join("overlays/null-cover/dataset/_versions");
    let manifest = std::fs::read_dir(&data)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&manifest).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&manifest, &bytes).unwrap();
    let out = run(&["run", "--corpus", &corpus_arg, "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out).trim(), "0 passed, 0 failed, 0 skipped");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("content differs: overlays/null-cover/dataset/_versions/"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        &manifest,
        bytes
            .iter()
            .enumerate()
            .map(|(i, b)| if i == last { b ^ 1 } else { *b })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    // An extra file is caught too.
    std::fs::write(
        &file,
        std::fs::read(root().join("conformance-cases/overlays/null-cover/expected/v2.json"))
            .unwrap(),
    )
    .unwrap();
    std::fs::write(corpus.join("overlays/null-cover/expected/v9.json"), "{}").unwrap();
    let out = run(&["run", "--corpus", &corpus_arg]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not listed in SHA256SUMS"));
}

#[test]
fn explain_prints_the_decision_trail_of_a_corpus_case() {
    let out = run(&[
        "explain",
        "worked-example",
        "--version",
        "2",
        "--cell",
        "0:1:age",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains("26"), "{text}");
    let out = run(&[
        "explain",
        "null-cover",
        "--version",
        "2",
        "--query",
        "note is null",
    ]);
    let text = stdout(&out);
    assert!(text.contains("re-evaluated"), "{text}");
    assert!(text.contains("0:1 = NULL -> matches"), "{text}");
    assert!(
        text.contains("final = (index − excluded) ∪ matches = [0:1]"),
        "{text}"
    );
    let out = run(&["explain", "coverage-past-end", "--version", "2"]);
    let text = stdout(&out);
    assert!(
        text.contains("refuses it: invalid/offset_out_of_range"),
        "{text}"
    );
    assert!(text.contains("the case requires class invalid"), "{text}");
    let out = run(&["explain", "precedence-dense"]);
    assert!(stdout(&out).contains("overlay #"), "{}", stdout(&out));
    let out = run(&["explain", "no-such-case"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn report_puts_runs_side_by_side_in_one_page() {
    // Two runs of the same corpus: the reference, and a reader that drops a row of null-cover.
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let out = run(&[
        "run",
        "--reader-cmd",
        &testee_cmd(),
        "--json-file",
        &a.display().to_string(),
        "--label",
        "reference <one>",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let (out, _) = misbehave("wrong", &["--json-file", &b.display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let page = dir.path().join("out/report.html");
    let out = run(&[
        "report",
        &a.display().to_string(),
        &b.display().to_string(),
        "-o",
        &page.display().to_string(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // One row per case, one cell per run; labels escaped; verdicts as classes.
    assert_eq!(html.matches("<td class=\"case\">").count(), case_count());
    assert_eq!(html.matches("<td class=\"cell ").count(), 2 * case_count());
    assert!(
        html.contains("reference &lt;one&gt;"),
        "the label is the column head"
    );
    assert!(html.contains("<td class=\"cell fail\">"));
    assert!(
        html.contains("rows expected"),
        "the failing check's message unfolds"
    );
    // Requirement ids link to their spec section, relative to the page.
    assert!(
        html.contains("href=\"") && html.contains("overlays.md#"),
        "links to the spec"
    );
    // Not a report: a runner error.
    let out = run(&["report", &page.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
}
