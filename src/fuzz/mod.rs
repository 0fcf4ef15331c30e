//! Differential testing of any reader: random histories, written by the reference, read by the
//! reader under test, judged by the runner, and a disagreement shrunk to a `case.toml`.
//!
//! Invariant: history `i` of seed `S` is always the same case ([`history::History::draw`],
//! [`case::to_case`]); it is written and its expected answers computed by the same code that
//! generates the corpus ([`crate::corpus::build`]), and judged by the same runner that runs
//! the corpus ([`crate::runner::execute::run_case`]), so verdicts, capabilities and refusal
//! profiles are the runner's, never a second implementation. A time budget only decides when
//! to stop, never what is generated.
//!
//! | module | concept |
//! |---|---|
//! | [`history`] | a history as seeds, drawn from a seed |
//! | [`model`] | the model a history is resolved against |
//! | [`builder`] | seeds → steps of the case vocabulary |
//! | [`case`] | a history (and its damage) as a [`crate::case::Case`] |
//! | [`judge`] | one case written to a scratch directory and judged |
//! | [`shrink`] | a disagreement made small |
//! | [`command`] | the `fuzz` subcommand: the loop, progress and summary |

pub mod builder;
pub mod history;
pub mod model;
