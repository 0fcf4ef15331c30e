//! `lance-conformance`: the conformance kit's command line (under construction).
fn main() {}
