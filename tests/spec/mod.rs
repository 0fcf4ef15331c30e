//! The specification's and the workspace's structural checks (a module of `tests/main.rs`):
//! the generated error-code table (`error_codes`), the requirement index
//! (`index`), `covers:` traceability (`traceability`), the spec's worked example
//! (`worked_example`), and the module structure the module docs promise (`module_cycles`).

mod error_codes;
mod index;
mod module_cycles;
mod traceability;
mod worked_example;
