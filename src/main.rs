//! `lance-conformance`: the conformance kit's command line.
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Conformance kit for Lance data overlay files and row lineage placement.
#[derive(Parser)]
#[command(name = "lance-conformance")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Rebuild the generated `dataset/` and `expected/` of cases from their `case.toml`.
    Generate {
        /// Case ids or directories (default: every case).
        cases: Vec<String>,
        /// Regenerate into a scratch directory and fail on any difference.
        #[arg(long)]
        check: bool,
        /// The corpus root.
        #[arg(long, default_value = "conformance-cases")]
        root: PathBuf,
        /// The requirement index.
        #[arg(long, default_value = "spec/requirements.toml")]
        requirements: PathBuf,
    },
}

fn main() -> anyhow::Result<std::process::ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Generate { cases, check, root, requirements } => {
            let code = lance_conformance::generate::command(&root, &requirements, &cases, check)?;
            Ok(std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
    }
}
