//! The kit's integration tests, in one test binary (`autotests = false` in `Cargo.toml`): a
//! change to the library relinks one executable instead of six, which is most of what a test
//! build costs on two cores. Each topic is a module; filter by its path, e.g.
//! `cargo test --release --test integration corpus::` or `... -- --exact runner::suite::NAME`.
//!
//! | module | what it checks |
//! |---|---|
//! | [`corpus`] | cases build as their files say, insta snapshots, refusals, traceability |
//! | [`fuzz_loop`] | the fuzz loop against the reference and against an injected bug |
//! | [`model_based`] | random histories against the reference writer and reader (proptest) |
//! | [`runner`] | the testee protocol, the suite in process and over processes, the writer run |
//! | [`spec`] | error-code table, requirement index, traceability, worked example, module cycles |
//! | [`validate`] | `validate` over the corpus and over hand-built bad histories |

mod corpus;
mod fuzz_loop;
mod model_based;
mod runner;
mod spec;
mod validate;
