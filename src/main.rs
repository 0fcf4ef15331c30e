//! `lance-conformance`: the conformance kit's command line.
//!
//! Exit codes: 0 when every check passes, 1 on a conformance failure, 2 when the runner itself
//! cannot run (bad arguments, unreadable input).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use lance_conformance::runner::command as runner;

#[derive(Parser)]
#[command(
    name = "lance-conformance",
    version,
    about = "Conformance kit for Lance data overlay files and row lineage placement"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a reader against every case of the corpus (default: the built-in reference
    /// reader, plus the spec's worked-example walk).
    Run(lance_conformance::runner::command::RunArgs),
    /// Turn several JSON results of `run` into one static HTML page: cases by implementation,
    /// verdicts coloured, reasons expandable, requirement ids linked to the spec.
    Report(lance_conformance::runner::command::ReportArgs),
    /// Serve the reference reader and writer over the testee protocol on stdin/stdout.
    Testee(lance_conformance::runner::command::TesteeArgs),
    /// Print the reference's decision trail for a corpus case: a version's layout, one cell,
    /// or one query.
    Explain(lance_conformance::runner::command::ExplainArgs),
    /// Judge a dataset directory written by anyone against every requirement its bytes and
    /// its version history decide; exit 0 when nothing is found, 1 on findings, 2 when it
    /// cannot judge.
    Validate(lance_conformance::validate::ValidateArgs),
    /// Read one version of a table (a directory, file://, or with the object-store feature
    /// s3://, gs://, az://) with the reference reader and print its rows; exit 0 when it reads,
    /// 1 when the reference refuses it, 2 when nothing could be read.
    Scan(lance_conformance::validate::scan::ScanArgs),
    /// Differential testing: random histories written by the reference, read by a reader,
    /// judged by the runner; every distinct disagreement shrunk and written as a `case.toml`.
    Fuzz(lance_conformance::fuzz::command::FuzzArgs),
    /// Rebuild the generated `dataset/` and `expected/` of conformance cases from their
    /// `case.toml`, and `SHA256SUMS`; with `--check`, fail on any difference instead.
    Generate {
        /// Case ids or directories (default: every case).
        cases: Vec<String>,
        /// Regenerate into a scratch directory and fail (exit 1) on any difference.
        #[arg(long)]
        check: bool,
        /// The corpus root.
        #[arg(long, default_value = "conformance-cases")]
        root: PathBuf,
        /// The requirement index the cases are checked against.
        #[arg(long, default_value = "spec/requirements.toml")]
        requirements: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(args) => return ExitCode::from(runner::run(&args)),
        Command::Testee(args) => return ExitCode::from(lance_conformance::testee::command(&args)),
        Command::Report(args) => return ExitCode::from(runner::report(&args)),
        Command::Explain(args) => return ExitCode::from(runner::explain(&args)),
        Command::Validate(args) => {
            return ExitCode::from(lance_conformance::validate::command(&args));
        }
        Command::Scan(args) => {
            return ExitCode::from(lance_conformance::validate::scan::command(&args));
        }
        Command::Fuzz(args) => {
            return ExitCode::from(lance_conformance::fuzz::command::fuzz(&args));
        }
        Command::Generate {
            cases,
            check,
            root,
            requirements,
        } => lance_conformance::generate::command(&root, &requirements, &cases, check)
            .map(|code| code == 0),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("lance-conformance: {e:#}");
            ExitCode::from(2)
        }
    }
}
