//! Kit faults: a corpus or runner problem injected into a scratch copy of a few cases (an
//! `expected/` file that does not parse or cannot be read, a query the case no longer declares,
//! a stored version the reference cannot read, a writer directory that cannot be made) ends the
//! run with exit status 2 and blames the kit, naming the case, in the human, JSON, JUnit and HTML
//! forms, on the reader run and on the writer run; the other cases are still judged, and no
//! failure is counted against the implementation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output};

use super::copy_dir;
use lance_conformance::case::{Level, RequirementIndex};
use lance_conformance::runner::kit_fault::KitFault;
use lance_conformance::runner::protocol::Implementation;
use lance_conformance::runner::{CaseResult, CheckResult, KnownFailures, Outcome, Report, Verdict};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_lance-conformance")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The case a fault is injected into, and one left alone beside it.
const FAULTY: &str = "overlays/null-cover";
const SOUND: &str = "overlays/worked-example";

/// A scratch corpus of `FAULTY` and `SOUND` with the spec's requirement index beside it.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        for case in [FAULTY, SOUND] {
            copy_dir(
                &root().join("conformance-cases").join(case),
                &dir.path().join("conformance-cases").join(case),
            );
        }
        std::fs::create_dir_all(dir.path().join("spec")).unwrap();
        std::fs::copy(
            root().join("spec/requirements.toml"),
            dir.path().join("spec/requirements.toml"),
        )
        .unwrap();
        let s = Scratch { dir };
        s.seal();
        s
    }

    fn corpus(&self) -> PathBuf {
        self.dir.path().join("conformance-cases")
    }

    fn case(&self) -> PathBuf {
        self.corpus().join(FAULTY)
    }

    /// Writes `SHA256SUMS` for the files as they are now, so that the injected fault reaches
    /// the judging instead of failing the checksums.
    fn seal(&self) {
        let index =
            RequirementIndex::load(&self.dir.path().join("spec/requirements.toml")).unwrap();
        let cases = lance_conformance::corpus::load(&self.corpus(), &index).unwrap();
        let sums = lance_conformance::checksums::sums(&self.corpus(), &cases).unwrap();
        std::fs::write(self.corpus().join("SHA256SUMS"), sums).unwrap();
    }

    fn run(&self, extra: &[&str]) -> Run {
        let json = self.dir.path().join("report.json");
        let junit = self.dir.path().join("report.xml");
        let _ = std::fs::remove_file(&json);
        let _ = std::fs::remove_file(&junit);
        let corpus = self.corpus().display().to_string();
        let mut args = vec![
            "run", "--corpus", &corpus, "--case", FAULTY, "--case", SOUND,
        ];
        let (j, x) = (json.display().to_string(), junit.display().to_string());
        args.extend(["--json-file", &j, "--junit-file", &x]);
        args.extend(extra);
        let out = Command::new(bin())
            .args(&args)
            .current_dir(self.dir.path())
            .output()
            .unwrap();
        Run {
            json: std::fs::read_to_string(&json).unwrap_or_default(),
            junit: std::fs::read_to_string(&junit).unwrap_or_default(),
            out,
            json_file: json,
        }
    }

    fn writer_run(&self) -> Run {
        let writer = format!("{} testee", bin());
        self.run(&["--writer-cmd", &writer])
    }
}

struct Run {
    out: Output,
    json: String,
    junit: String,
    json_file: PathBuf,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
}

/// The run exits 2, blames the kit for `FAULTY` with a check of code `code`, and judges `SOUND`
/// as before; no form counts a failure against the implementation.
fn assert_blames_kit(run: &Run, role: &str, code: &str) {
    let (stdout, stderr) = (run.stdout(), run.stderr());
    assert_eq!(run.out.status.code(), Some(2), "{stdout}\n{stderr}");
    // Human: the case labelled KIT, a line naming it, and the closing line with nothing failed.
    assert!(
        stdout.contains(&format!("KIT    {FAULTY}")),
        "human form:\n{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "the kit failed (1): it could not judge {FAULTY} (a kit or corpus problem, not the {role}'s failure; exit 2)"
        )),
        "human form:\n{stdout}"
    );
    assert!(stdout.contains(&format!("kit fault [{code}]")), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("1 passed, 0 failed, 0 skipped"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("the kit failed on {FAULTY} at `")),
        "{stderr}"
    );
    // JSON: its own outcome and count, never a failure kind of the implementation.
    let report: serde_json::Value = serde_json::from_str(&run.json).unwrap();
    assert_eq!(report["summary"]["kit_faults"], 1, "{}", run.json);
    assert_eq!(report["summary"]["failed"], 0);
    assert_eq!(report["summary"]["errors"], 0);
    let cases = report["cases"].as_array().unwrap();
    let faulty = cases
        .iter()
        .find(|c| {
            format!(
                "{}/{}",
                c["area"].as_str().unwrap(),
                c["id"].as_str().unwrap()
            ) == FAULTY
        })
        .unwrap();
    assert_eq!(faulty["outcome"], "kit_fault");
    assert_eq!(faulty["verdict"], "kit_fault");
    let checks = faulty["checks"].as_array().unwrap();
    let fault = checks.iter().find(|k| k["verdict"] == "kit_fault").unwrap();
    assert!(
        fault["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("kit fault [{code}]")),
        "{fault}"
    );
    assert!(fault.get("kind").is_none(), "{fault}");
    assert!(
        checks.iter().all(|k| k["kind"] != "crash"),
        "a kit fault blamed on the implementation: {faulty}"
    );
    let sound = cases.iter().find(|c| c["id"] != faulty["id"]).unwrap();
    assert_eq!(sound["outcome"], "passed", "{sound}");
    // The report validates against the published schema.
    super::protocol_schemas::Schemas::load_dir(&root().join("spec/schemas"))
        .check("report.schema.json", &report)
        .unwrap_or_else(|e| panic!("{e}\n{}", run.json));
    // JUnit: an error of type kit_fault on that test case, and no failure.
    assert!(
        run.junit.contains("type=\"kit_fault\"") && run.junit.contains("the kit failed"),
        "{}",
        run.junit
    );
    assert!(
        run.junit.contains("failures=\"0\" errors=\"1\""),
        "{}",
        run.junit
    );
}

#[test]
fn an_unparseable_expected_file_is_the_kits_fault_on_the_reader_and_writer_runs() {
    let s = Scratch::new();
    let clean = s.run(&[]);
    assert_eq!(clean.out.status.code(), Some(0), "{}", clean.stdout());
    std::fs::write(s.case().join("expected/v2.json"), "{\"version\": ").unwrap();
    s.seal();
    let reader = s.run(&[]);
    assert_blames_kit(&reader, "reader", "expected_malformed");
    assert!(
        reader.stdout().contains("expected/v2.json"),
        "names the file"
    );
    assert_blames_kit(&s.writer_run(), "writer", "expected_malformed");
    // The HTML page shows the cell as the kit's.
    let page = s.dir.path().join("page.html");
    let out = Command::new(bin())
        .args([
            "report",
            &reader.json_file.display().to_string(),
            "-o",
            &page.display().to_string(),
            "--requirements",
            &root().join("spec/requirements.toml").display().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<td class=\"cell kit\">").count(), 1, "{html}");
    assert!(html.contains("the kit failed, not the implementation"));
    assert!(
        html.contains("<td class=\"kit\">1</td>"),
        "the run's kit faults counted"
    );
}

#[test]
fn an_unreadable_expected_file_is_the_kits_fault() {
    let s = Scratch::new();
    // A directory where the file should be: reading it fails, for root as for anyone.
    let file = s.case().join("expected/v2.json");
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    std::fs::write(file.join("keep"), "").unwrap();
    s.seal();
    assert_blames_kit(&s.run(&[]), "reader", "expected_unreadable");
    assert_blames_kit(&s.writer_run(), "writer", "expected_unreadable");
}

#[test]
fn a_query_the_case_no_longer_declares_is_the_kits_fault() {
    let s = Scratch::new();
    let file = s.case().join("case.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let start = text.find("[[queries]]").unwrap();
    let end = start + text[start..].find("[[steps]]").unwrap();
    std::fs::write(&file, format!("{}{}", &text[..start], &text[end..])).unwrap();
    s.seal();
    assert_blames_kit(&s.run(&[]), "reader", "undeclared_query");
    assert_blames_kit(&s.writer_run(), "writer", "undeclared_query");
}

#[test]
fn a_stored_version_the_reference_cannot_read_is_the_kits_fault() {
    let s = Scratch::new();
    // The first version's manifest is gone: the runner cannot tell what v1 needs (reader run),
    // and cannot type the first step against the stored v1 (writer run).
    let first = s
        .case()
        .join("dataset/_versions")
        .join(lance_reference_io::version_names::manifest_name(1));
    std::fs::remove_file(&first).unwrap();
    s.seal();
    assert_blames_kit(&s.run(&[]), "reader", "needs_unknown");
    assert_blames_kit(&s.writer_run(), "writer", "stored_case");
}

#[test]
fn a_writer_directory_that_cannot_be_made_is_the_kits_fault() {
    let s = Scratch::new();
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let writer = format!("{} testee", bin());
    let under = file.join("scratch").display().to_string();
    let run = s.run(&["--writer-cmd", &writer, "--scratch", &under]);
    assert_eq!(run.out.status.code(), Some(2), "{}", run.stdout());
    let report: serde_json::Value = serde_json::from_str(&run.json).unwrap();
    assert_eq!(report["summary"]["kit_faults"], 2, "{}", run.json);
    assert_eq!(report["summary"]["failed"], 0);
    for c in report["cases"].as_array().unwrap() {
        assert_eq!(c["outcome"], "kit_fault", "{c}");
        let message = c["checks"][0]["message"].as_str().unwrap();
        assert!(message.starts_with("kit fault [scratch]"), "{message}");
    }
}

fn case_with(checks: Vec<CheckResult>, level: Level) -> CaseResult {
    CaseResult::new("c", "overlays", level, Vec::new(), Vec::new(), checks)
}

fn report_of(cases: Vec<CaseResult>, known: Option<&KnownFailures>) -> Report {
    let ids: BTreeSet<String> = cases.iter().map(|c| c.id.clone()).collect();
    Report::new(
        Implementation {
            name: "r".into(),
            version: "1".into(),
            language: None,
            homepage: None,
        },
        Vec::new(),
        cases,
        known,
        &ids,
    )
}

#[test]
fn a_kit_fault_outranks_every_verdict_of_the_implementation_and_no_entry_covers_it() {
    let fault = KitFault::UndeclaredQuery { name: "q".into() };
    let failing = CheckResult::new(
        "v1 scan".parse().unwrap(),
        Verdict::Fail,
        Level::Must,
        Some(lance_conformance::runner::FailureKind::WrongValue),
        Some("differs".into()),
    );
    for level in [Level::Must, Level::Should] {
        let checks = vec![
            failing.clone(),
            CheckResult::kit_fault("v1 query \"q\"".parse().unwrap(), level, &fault),
        ];
        let known = KnownFailures::parse("c  wrong-value  # listed\n", "k").unwrap();
        let report = report_of(vec![case_with(checks, level)], Some(&known));
        let c = &report.cases[0];
        assert_eq!(c.verdict, Verdict::KitFault);
        assert_eq!(c.outcome, Outcome::KitFault);
        assert_eq!(report.summary.kit_faults, 1);
        assert_eq!(report.summary.failed, 0);
        assert_eq!(report.summary.known_failures, 0);
        assert!(!report.passed());
        assert_eq!(report.exit_code(), 2);
        // The entry is neither matched nor dropped: the run says nothing about the reader.
        assert!(
            report.known_failures.is_empty(),
            "{:?}",
            report.known_failures
        );
        let rewritten = lance_conformance::runner::known_failures::rewrite(Some(&known), &report);
        assert!(
            rewritten.contains("c  wrong-value  # listed"),
            "{rewritten}"
        );
    }
    // Without the kit fault the same case is the reader's failure (exit 1).
    let report = report_of(vec![case_with(vec![failing], Level::Must)], None);
    assert_eq!(report.cases[0].outcome, Outcome::Failed);
    assert_eq!(report.exit_code(), 1);
    assert_eq!(report_of(Vec::new(), None).exit_code(), 0);
}
