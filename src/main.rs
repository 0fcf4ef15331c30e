//! `lance-conformance`: the conformance kit's command line.
//!
//! Exit codes: 0 when every check passes, 1 on a conformance failure, 2 when the runner itself
//! cannot run (bad arguments, unreadable input).

mod suite;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Run the suite against the built-in reference reader, printing how each checked cell
    /// was decided.
    Run {
        /// Print only failures and the summary.
        #[arg(long)]
        quiet: bool,
    },
    /// Print the decision trail of one cell of the worked example.
    Explain {
        /// Dataset version (1 to 4).
        #[arg(long, default_value_t = 2)]
        version: u64,
        /// The cell as FRAGMENT:OFFSET:FIELD, FIELD a name or an id (e.g. 0:1:age).
        #[arg(long)]
        cell: String,
    },
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
        Command::Run { quiet } => suite::run(quiet),
        Command::Explain { version, cell } => suite::explain_cell(version, &cell),
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
