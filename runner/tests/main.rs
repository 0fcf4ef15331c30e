//! The runner crate's integration tests: one binary (`autotests = false`), one module per topic.
//!
//! They use only what an implementer sees (the crate without `internal-api`), so they are also
//! the proof that the public API is enough to run the corpus inside `cargo test`. They build
//! without the generator or the command line, which makes them the quick test of the mutation
//! run (`tools/mutants.sh`): a mutant of the reference rebuilds the reference crates, this
//! crate and this binary, nothing else.

mod corpus;
