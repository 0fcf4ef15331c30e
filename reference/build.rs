//! Compiles the kit's own `.proto` files (`spec/protos/`) with protox and prost-build, so no
//! system `protoc` is needed. All generated packages are reachable through `crate::proto`.
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time: a build-script binary can be shared between checkouts of the workspace.
    let proto_dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR")?).join("../spec/protos");
    println!("cargo:rerun-if-changed={}", proto_dir.display());
    let entries = match std::fs::read_dir(&proto_dir) {
        Ok(entries) => entries.collect::<Vec<_>>(),
        Err(_) => Vec::new(),
    };
    let mut files: Vec<PathBuf> = entries
        .into_iter()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "proto"))
        .collect();
    files.sort();
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    if files.is_empty() {
        std::fs::write(out.join("protos.rs"), "")?;
        return Ok(());
    }
    let fds = protox::compile(&files, [&proto_dir])?;
    let mut config = prost_build::Config::new();
    config.include_file("protos.rs");
    config.btree_map(["."]);
    config.compile_fds(fds)?;
    Ok(())
}
