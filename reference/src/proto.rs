//! Protobuf messages generated from the kit's own `spec/protos/*.proto`. Message names, field
//! numbers and wire types are identical to Lance 14.0.2, so bytes written with these types are
//! bytes Lance reads.
//!
//! The generated Rust is checked in under `reference/src/proto/` (one file per protobuf
//! package, and `_includes.rs`, the module tree), so no build runs protox or prost-build.
//! After changing or adding a `.proto`, run `cargo run --manifest-path tools/protogen/Cargo.toml`
//! from the repository root; `cargo test --manifest-path tools/protogen/Cargo.toml` (run by CI)
//! fails while the checked-in code differs from what the `.proto` files generate.
#![allow(missing_docs, clippy::all)]

include!("proto/_includes.rs");
