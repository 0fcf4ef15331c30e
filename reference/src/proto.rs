//! Protobuf messages generated from the kit's own `spec/protos/*.proto` (compiled by
//! `build.rs` with protox and prost-build). Message names, field numbers and wire types are
//! identical to Lance 14.0.2, so bytes written with these types are bytes Lance reads.
#![allow(missing_docs, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/protos.rs"));
