//! The `validate` subcommand: its arguments, its output on stdout, its exit code.
//!
//! Invariant: the exit code is the report's ([`report::Report::exit_code`]: 0 when nothing is found,
//! 1 on any finding), or 2 when validate cannot judge ([`SetupError`], printed on stderr); the
//! report is printed in the one format asked for, and `junit`, which `run` offers, is refused
//! before anything is read. While it runs, a progress line (the version being judged) is drawn
//! on stderr only when stderr is a terminal, and erased before the report: a pipe or a file
//! gets exactly the bytes it got without it.

use std::io::IsTerminal;

use clap::Args;

use super::location::Location;
use super::report;
use super::{Progress, SetupError, validate_at_with};
use crate::runner::command::Format;

/// Arguments of `validate`.
#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// The table: a directory (the one holding `_versions/`), a `file://` URI, or (in a build
    /// with the `object-store` feature) an `s3://`, `gs://` or `az://` URI, with credentials
    /// from the environment.
    pub dataset: String,
    /// Judge only this version (and its commit against the version before it).
    #[arg(long)]
    pub version: Option<u64>,
    /// Output format (`junit` is not offered).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// Runs `validate`; returns the exit code.
pub fn command(args: &ValidateArgs) -> u8 {
    if args.format == Format::Junit {
        eprintln!("lance-conformance validate: {}", SetupError::Format);
        return 2;
    }
    // A progress line on a terminal only: stderr that is a file or a pipe gets the same
    // bytes as before (nothing, or the error).
    let terminal = std::io::stderr().is_terminal();
    let mut shown = false;
    let mut progress = |p: Progress| {
        if terminal {
            eprint!(
                "\r\x1b[2Kvalidate: version {} ({} of {})",
                p.version, p.position, p.total
            );
            shown = true;
        }
    };
    let judged = Location::parse(&args.dataset)
        .map_err(SetupError::from)
        .and_then(|location| validate_at_with(&location, args.version, &mut progress));
    if shown {
        eprint!("\r\x1b[2K");
    }
    match judged {
        Ok(report) => {
            match args.format {
                Format::Json => print!("{}", report::json(&report)),
                _ => print!("{}", report::human(&report)),
            }
            report.exit_code()
        }
        Err(e) => {
            eprintln!("lance-conformance validate: {e}");
            2
        }
    }
}
