//! The `run`, `report` and `explain` subcommands, and the arguments of `testee`: arguments and
//! exit codes.
//!
//! Invariant: `run` exits 0 when the report passes, 1 when it does not (a conformance
//! failure), and 2 when the runner cannot judge (unusable corpus or checksums, bad
//! known-failure file, filters matching nothing, a testee that does not start) or the report
//! holds a kit fault (a case the kit could not judge, named in every form); the human form
//! always ends with the closing line `N passed, N failed, N skipped`. Without `--reader-cmd`
//! the built-in reference reader runs in process, together with the spec's worked-example walk.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::output::{self, Detail};
use super::process::{ProcessOptions, ProcessReader};
use super::{KnownFailures, Options, ReferenceReader, RunnerError, walk};
use lance_reference_io::read::cores;

/// The renderings a report is printed in (`--format`): `run` offers all three, `validate`
/// human and JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table and a summary.
    Human,
    /// The report as JSON.
    Json,
    /// JUnit XML.
    Junit,
}

/// Arguments of `run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Run this command (with `sh -c`) as the reader under test: one persistent process
    /// speaking the JSON-lines protocol of spec/conformance.md. Default: the built-in
    /// reference reader, in process.
    #[arg(long, value_name = "CMD ARGS")]
    pub reader_cmd: Option<String>,
    /// Run this command (with `sh -c`) as the writer under test instead of judging a reader:
    /// for each case it replays the steps in a fresh directory through `write`, `prepare` and
    /// `commit` (spec/conformance.md §7), and the kit judges every version it commits.
    #[arg(long, value_name = "CMD ARGS", conflicts_with = "reader_cmd")]
    pub writer_cmd: Option<String>,
    /// Where the writer's datasets go, one directory per case (default: a fresh directory
    /// under the system's temporary directory, removed after the run). Kept when given.
    #[arg(long, value_name = "DIR", requires = "writer_cmd")]
    pub scratch: Option<PathBuf>,
    /// Ask the writer to write every data file in this data file version (`2.0`, `2.1`, `2.2`, as
    /// Lance spells it): sent with every `write` and `prepare`, and each version written is
    /// checked to list only data files of it (check `vN data file version`). Without it the
    /// writer chooses and the version is not checked.
    #[arg(long, value_name = "MAJOR.MINOR", requires = "writer_cmd", value_parser = file_version)]
    pub data_file_version: Option<String>,
    /// Seconds one request may take before the testee is killed (process readers).
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Known failures: one ``<case-id> [<kind>] [`<check>`]  # <reason>`` per line.
    #[arg(long, value_name = "FILE")]
    pub known_failures: Option<PathBuf>,
    /// Rewrite the --known-failures file (created when missing) so that it describes this
    /// run: entries that still hold are kept as written, the others are updated, removed or
    /// added with the checks' whole messages as reasons. The exit code is the run's before
    /// the update.
    #[arg(long, requires = "known_failures")]
    pub update_known_failures: bool,
    /// What to call the run in reports: the reader and its set-up (a pylance release and
    /// whether its feature gates were on, say), which the handshake cannot tell.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Report format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Also write the JSON report to this file.
    #[arg(long, value_name = "FILE")]
    pub json_file: Option<PathBuf>,
    /// Also write the JUnit report to this file.
    #[arg(long, value_name = "FILE")]
    pub junit_file: Option<PathBuf>,
    /// Only cases with this id (or area/id); `*` wildcards; repeatable.
    #[arg(long = "case", value_name = "ID")]
    pub cases: Vec<String>,
    /// Only cases of this area; repeatable.
    #[arg(long = "area", value_name = "AREA")]
    pub areas: Vec<String>,
    /// Only cases checking this requirement id (`*` wildcards); repeatable.
    #[arg(long = "requirement", value_name = "ID")]
    pub requirements: Vec<String>,
    /// Only cases with this tag; repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// The corpus root.
    #[arg(long, default_value = "conformance-cases")]
    pub corpus: PathBuf,
    /// The requirement index (default: `<corpus>/../spec/requirements.toml`).
    #[arg(long, value_name = "FILE")]
    pub requirements_file: Option<PathBuf>,
    /// Print only cases that did not pass, and the summary.
    #[arg(long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print every check of every case.
    #[arg(long)]
    pub verbose: bool,
}

/// A `--data-file-version` that is not `<major>.<minor>`.
#[derive(Debug, thiserror::Error)]
#[error("expected MAJOR.MINOR such as 2.2, not {0:?}")]
pub struct NotAFileVersion(String);

/// A data file version as Lance spells it: `<major>.<minor>`, both decimal numbers.
fn file_version(text: &str) -> Result<String, NotAFileVersion> {
    match text.split_once('.') {
        Some((major, minor))
            if [major, minor]
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
        {
            Ok(text.to_string())
        }
        _ => Err(NotAFileVersion(text.to_string())),
    }
}

/// Runs `run`; returns the exit code.
pub fn run(args: &RunArgs) -> u8 {
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lance-conformance run: {e}");
            println!("0 passed, 0 failed, 0 skipped");
            2
        }
    }
}

fn run_inner(args: &RunArgs) -> Result<u8, RunnerError> {
    let known_failures = match &args.known_failures {
        Some(p) if args.update_known_failures && !p.exists() => Some(KnownFailures {
            path: p.display().to_string(),
            ..KnownFailures::default()
        }),
        Some(p) => Some(KnownFailures::load(p).map_err(|e| RunnerError::Input(e.to_string()))?),
        None => None,
    };
    let kept = known_failures.clone();
    let mut options = Options {
        corpus: args.corpus.clone(),
        requirements: args.requirements_file.clone(),
        filters: super::Filters {
            cases: args.cases.clone(),
            areas: args.areas.clone(),
            requirements: args.requirements.clone(),
            tags: args.tags.clone(),
        },
        known_failures,
        progress: None,
        extra: Vec::new(),
        label: args.label.clone(),
    };
    let interactive = std::io::stdout().is_terminal() && args.format == Format::Human;
    if interactive {
        options.progress = Some(Box::new(|i, n, id| {
            eprint!("\r\x1b[2K[{}/{n}] {id}", i + 1);
        }));
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(RunnerError::Input(
            "--timeout must be a positive number".into(),
        ));
    }
    let report = if let Some(cmd) = &args.writer_cmd {
        let mut process = ProcessReader::new(ProcessOptions {
            command: cmd.clone(),
            timeout: Duration::from_secs_f64(args.timeout),
        });
        let (scratch, temporary) = match &args.scratch {
            Some(dir) => (dir.clone(), false),
            None => (
                std::env::temp_dir()
                    .join(format!("lance-conformance-writer-{}", std::process::id())),
                true,
            ),
        };
        let report = super::writer::run_writer_suite(
            &mut process,
            options,
            &scratch,
            args.data_file_version.as_deref(),
        );
        if temporary {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        report?
    } else {
        read_run(args, options)?
    };
    finish(args, kept.as_ref(), &report, interactive)
}

/// The reader run: the built-in reference, or a testee process.
fn read_run(args: &RunArgs, mut options: Options) -> Result<super::Report, RunnerError> {
    match &args.reader_cmd {
        None => {
            let no_filter = options.filters == super::Filters::default();
            if no_filter {
                options.extra.push(walk::as_case());
            }
            // The reference on every core: one reader a core, the cases shared out among them.
            let mut readers: Vec<ReferenceReader> = (0..cores())
                .map(|_| ReferenceReader::of_stored_corpus())
                .collect();
            super::run_suite_shared(&mut readers, options)
        }
        Some(cmd) => {
            let mut process = ProcessReader::new(ProcessOptions {
                command: cmd.clone(),
                timeout: Duration::from_secs_f64(args.timeout),
            });
            super::run_suite(&mut process, options)
        }
    }
}

/// Writes the report where asked, updates the known-failure file, prints; the run's exit
/// status ([`super::Report::exit_code`]).
fn finish(
    args: &RunArgs,
    kept: Option<&KnownFailures>,
    report: &super::Report,
    interactive: bool,
) -> Result<u8, RunnerError> {
    if interactive {
        eprint!("\r\x1b[2K");
    }
    let write = |path: &PathBuf, text: String| {
        std::fs::write(path, text)
            .map_err(|e| RunnerError::Input(format!("{}: {e}", path.display())))
    };
    if let Some(p) = &args.json_file {
        write(p, output::json(report))?;
    }
    if let Some(p) = &args.junit_file {
        write(p, output::junit(report))?;
    }
    if let (true, Some(p)) = (args.update_known_failures, &args.known_failures) {
        let text = super::known_failures::rewrite(kept, report);
        write(p, text)?;
        eprintln!(
            "lance-conformance run: wrote {} ({} line(s) removed, {} added)",
            p.display(),
            report.known_failures.remove.len(),
            report.known_failures.add.len()
        );
    }
    let detail = if args.quiet {
        Detail::Quiet
    } else if args.verbose {
        Detail::Verbose
    } else {
        Detail::Normal
    };
    match args.format {
        Format::Human => print!("{}", output::human(report, detail)),
        Format::Json => print!("{}", output::json(report)),
        Format::Junit => print!("{}", output::junit(report)),
    }
    for (c, k) in report
        .kit_faults()
        .filter_map(|c| c.kit_fault().map(|k| (c, k)))
    {
        eprintln!(
            "lance-conformance run: the kit failed on {}/{} at `{}`: {}",
            c.area,
            c.id,
            k.name,
            k.message.as_deref().unwrap_or_default()
        );
    }
    Ok(report.exit_code())
}

/// Arguments of `report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// JSON reports of `run` (`--format json` or `--json-file`), one per implementation or
    /// set-up; the columns follow this order.
    #[arg(required = true, value_name = "JSON")]
    pub results: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(long, short, default_value = "target/conformance-report.html")]
    pub output: PathBuf,
    /// The requirement index, for requirement levels and the spec sections they link to.
    #[arg(long, default_value = "spec/requirements.toml")]
    pub requirements: PathBuf,
    /// Where requirement links point: a directory or URL holding the spec's markdown files
    /// (default: the spec directory beside the requirement index, relative to the output).
    #[arg(long, value_name = "URL")]
    pub spec_base: Option<String>,
    /// The page title.
    #[arg(
        long,
        default_value = "lance-conformance: readers and writers against the corpus"
    )]
    pub title: String,
}

/// Writes the HTML matrix of several JSON results; returns the exit code.
pub fn report(args: &ReportArgs) -> u8 {
    match super::html::command(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("lance-conformance report: {e}");
            2
        }
    }
}

/// Arguments of `testee`.
#[derive(Debug, Clone, Args)]
pub struct TesteeArgs {
    /// Declare only these capabilities (comma-separated); default: all.
    #[arg(long, value_delimiter = ',')]
    pub capabilities: Option<Vec<String>>,
}

/// Arguments of `explain`.
#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// The case id (or area/id).
    #[arg(default_value = "worked-example")]
    pub case: String,
    /// Dataset version (default: the newest readable one).
    #[arg(long)]
    pub version: Option<u64>,
    /// One cell as FRAGMENT:OFFSET:FIELD, FIELD a (dotted) name or an id (e.g. 0:1:age).
    #[arg(long, conflicts_with = "query")]
    pub cell: Option<String>,
    /// One declared query of the case, by name.
    #[arg(long)]
    pub query: Option<String>,
    /// The corpus root.
    #[arg(long, default_value = "conformance-cases")]
    pub corpus: PathBuf,
}

/// Prints the explanation; returns the exit code.
pub fn explain(args: &ExplainArgs) -> u8 {
    let focus = match (&args.cell, &args.query) {
        (Some(c), _) => super::explain::Focus::Cell(c.clone()),
        (None, Some(q)) => super::explain::Focus::Query(q.clone()),
        (None, None) => super::explain::Focus::Version,
    };
    match super::explain::explain(&args.corpus, &args.case, args.version, &focus) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(e) => {
            eprintln!("lance-conformance explain: {e:#}");
            2
        }
    }
}
