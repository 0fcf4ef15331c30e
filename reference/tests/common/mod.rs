//! Helpers shared by integration tests and examples.
pub mod dataset_scenarios;
