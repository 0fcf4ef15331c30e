//! The specification's and the workspace's structural checks (a module of `tests/main.rs`):
//! the generated error-code table (`error_codes`), the requirement index
//! (`index`), `covers:` traceability (`traceability`), the spec's worked example
//! (`worked_example`), the module structure the module docs promise (`module_cycles`), the
//! one error style of the kit's library code (`error_style`), and the one major of `syn` the
//! build compiles (`one_syn`).

mod error_codes;
mod error_style;
mod index;
mod module_cycles;
mod one_syn;
mod traceability;
mod worked_example;
