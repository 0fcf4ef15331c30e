//! `lance-conformance testee`: the reference reader and the reference writer served over the
//! JSON-lines protocol, the protocol's reference implementation.
//!
//! Invariant: the testee is exactly the in-process reference ([`ReferenceReader`] and
//! [`ReferenceWriter`]) behind [`crate::runner::serve::serve`], so a run through the process
//! boundary judges the same code as a run in process; `--capabilities` limits what both declare.

use crate::reference_writer::ReferenceWriter;
use crate::runner::ReferenceReader;
use crate::runner::command::TesteeArgs;

/// Serves the reference reader and writer on stdin/stdout; returns the exit code.
pub fn command(args: &TesteeArgs) -> u8 {
    let (mut reader, mut writer) = match &args.capabilities {
        None => (ReferenceReader::new(), ReferenceWriter::new()),
        Some(list) => {
            let words: std::collections::BTreeSet<String> = list.iter().cloned().collect();
            (
                ReferenceReader::with_capabilities(words.clone()),
                ReferenceWriter::with_capabilities(words),
            )
        }
    };
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    match crate::runner::serve::serve(&mut reader, Some(&mut writer), stdin, stdout) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("lance-conformance testee: {e}");
            2
        }
    }
}
