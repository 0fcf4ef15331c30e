//! The [`ConformanceWriter`] trait: what the runner asks of a writer under test.
//!
//! Invariant: a writer is asked only to commit steps of the case vocabulary to a dataset
//! directory it alone writes, and answers with the version it created or a [`Refusal`] that
//! says whose failure it is, exactly as a reader does ([`super::conformance_reader`]): the
//! writer declines the operation ([`Refusal::Error`], which the case may require), cannot do it
//! ([`Refusal::Unsupported`]), or broke ([`Refusal::Broken`]). The runner never trusts the
//! answer alone: what a commit left on disk is judged by the kit's reader and `validate`
//! ([`super::writer`]).

use super::conformance_reader::Refusal;
use super::conformance_reader::{Answer, Description};
use super::protocol::{CommitPreparedRequest, PrepareResult, WriteRequest, WriteResult};

/// A writer under test.
///
/// Contract, for implementers:
///
/// - [`describe`](Self::describe) names the writer and its capabilities: the `write:` words of
///   [`super::capability::WRITE_WORDS`] say which steps it commits. A step it does not declare
///   is never sent.
/// - [`write`](Self::write) commits `request.step` on top of `request.read_version` (the newest
///   version of `request.dataset`, 0 for `create` into an empty directory) as exactly one new
///   version, and returns that version. A step the writer declines because the spec forbids
///   it (a non-contiguous merge, a fold that would leave an index stale) is
///   [`Refusal::Error`] with class `refused`, and must leave no new version behind.
/// - [`prepare`](Self::prepare) does the work of a write without committing (it reads
///   `read_version` and writes whatever files the commit needs) and returns a token;
///   [`commit`](Self::commit) then commits it on the version that is newest *now*, which
///   another commit may have advanced since (a retried commit: [OVL-VER-2], [LIN-STAMP-3]).
/// - [`commit_prepared`](Self::commit_prepared) commits files the kit wrote itself, as the
///   transaction names them, on `read_version` (only for a writer declaring
///   `write:prepared-commit`; the default answers `unsupported`). A committer refuses a
///   transaction whose result would break a rule ([`Refusal::Error`], class `refused`, the
///   reference's code where it has one) and then leaves no new version behind.
/// - Nothing may panic for the runner's sake: return [`Refusal::Broken`] instead.
pub trait ConformanceWriter {
    /// Who the writer is and what it can do.
    fn describe(&mut self) -> Answer<Description>;
    /// Commits one step.
    fn write(&mut self, request: &WriteRequest) -> Answer<WriteResult>;
    /// Prepares one step's commit without committing it.
    fn prepare(&mut self, request: &WriteRequest) -> Answer<PrepareResult>;
    /// Commits a prepared step on the newest version of `dataset`.
    fn commit(&mut self, dataset: &str, transaction: &str) -> Answer<WriteResult>;
    /// Commits files the kit prepared, as `request.transaction` says.
    fn commit_prepared(&mut self, request: &CommitPreparedRequest) -> Answer<WriteResult> {
        let _ = request;
        Err(Refusal::Unsupported(
            "this writer does not commit prepared files".into(),
        ))
    }
}
