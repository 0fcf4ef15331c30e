//! Generates the Rust types of the kit's `.proto` files (`spec/protos/*.proto`) into
//! `reference/src/proto/`, where they are checked in, so that no build of the workspace runs
//! protox or prost-build.
//!
//! Invariant: `reference/src/proto/` holds exactly what [`generate`] writes for the `.proto`
//! files present in `spec/protos/`, every one of them, in file-name order: one file per protobuf
//! package (`lance.table.rs`, ...) and `_includes.rs`, the module tree that `include!`s them.
//! Nothing else lives in that directory. The output depends only on the `.proto` files and the
//! versions locked in this crate's `Cargo.lock` (no clock, no absolute path), so regenerating
//! an unchanged tree rewrites identical bytes.
//!
//! `cargo run --manifest-path tools/protogen/Cargo.toml` rewrites the directory (and deletes a
//! file no `.proto` produces any more); `cargo run ... -- --check` and this crate's test only
//! compare, and fail naming each file that differs.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The include file prost-build writes: the `pub mod` tree of every package.
const INCLUDE_FILE: &str = "_includes.rs";

/// The repository root: this crate lives in `tools/protogen/`.
fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the `.proto` files are read from.
fn proto_dir(root: &Path) -> PathBuf {
    root.join("spec/protos")
}

/// Where the generated Rust is checked in.
fn generated_dir(root: &Path) -> PathBuf {
    root.join("reference/src/proto")
}

/// Every `*.proto` in `dir`, sorted by file name.
fn proto_files(dir: &Path) -> Result<Vec<PathBuf>, Box<dyn Error>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "proto") {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no .proto file", dir.display()).into());
    }
    Ok(files)
}

/// Compiles every `.proto` of `root`'s `spec/protos/` and returns the generated files, by name.
pub fn generate(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, Box<dyn Error>> {
    let protos = proto_dir(root);
    let files = proto_files(&protos)?;
    let fds = protox::compile(&files, [&protos])?;
    // One scratch directory per call: the tests call this from parallel threads.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let scratch =
        std::env::temp_dir().join(format!("lance-protogen-{}-{call}", std::process::id()));
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)?;
    }
    std::fs::create_dir_all(&scratch)?;
    let mut config = prost_build::Config::new();
    config.out_dir(&scratch);
    config.include_file(INCLUDE_FILE);
    config.btree_map(["."]);
    let compiled = config.compile_fds(fds);
    let out = read_dir_files(&scratch);
    std::fs::remove_dir_all(&scratch)?;
    compiled?;
    out
}

/// The regular files directly in `dir`, by name (an absent directory has none).
fn read_dir_files(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, Box<dyn Error>> {
    let mut files = BTreeMap::new();
    if !dir.exists() {
        return Ok(files);
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            let name = entry
                .file_name()
                .into_string()
                .map_err(|n| format!("{n:?}: not UTF-8"))?;
            files.insert(name, std::fs::read(entry.path())?);
        }
    }
    Ok(files)
}

/// The files of `dir` that differ from `want`: missing, different, or not generated at all.
pub fn differences(
    want: &BTreeMap<String, Vec<u8>>,
    dir: &Path,
) -> Result<Vec<String>, Box<dyn Error>> {
    let have = read_dir_files(dir)?;
    let mut out = Vec::new();
    for (name, bytes) in want {
        match have.get(name) {
            None => out.push(format!("{name}: missing")),
            Some(b) if b != bytes => out.push(format!("{name}: differs from the generated code")),
            Some(_) => {}
        }
    }
    for name in have.keys().filter(|n| !want.contains_key(*n)) {
        out.push(format!("{name}: not generated from any .proto (stale)"));
    }
    Ok(out)
}

/// Makes `dir` hold exactly `want`; returns the names it wrote or deleted.
fn write(want: &BTreeMap<String, Vec<u8>>, dir: &Path) -> Result<Vec<String>, Box<dyn Error>> {
    std::fs::create_dir_all(dir)?;
    let have = read_dir_files(dir)?;
    let mut changed = Vec::new();
    for name in have.keys().filter(|n| !want.contains_key(*n)) {
        std::fs::remove_file(dir.join(name))?;
        changed.push(format!("deleted {name}"));
    }
    for (name, bytes) in want {
        if have.get(name) != Some(bytes) {
            std::fs::write(dir.join(name), bytes)?;
            changed.push(format!("wrote {name}"));
        }
    }
    Ok(changed)
}

fn run(check: bool) -> Result<bool, Box<dyn Error>> {
    let root = repository_root();
    let dir = generated_dir(&root);
    let want = generate(&root)?;
    if check {
        let diffs = differences(&want, &dir)?;
        for d in &diffs {
            eprintln!("reference/src/proto/{d}");
        }
        if !diffs.is_empty() {
            eprintln!(
                "reference/src/proto/ is not what spec/protos/ generates: run \
                 `cargo run --manifest-path tools/protogen/Cargo.toml` and commit the result"
            );
        }
        return Ok(diffs.is_empty());
    }
    let changed = write(&want, &dir)?;
    for c in &changed {
        println!("{c}");
    }
    if changed.is_empty() {
        println!("reference/src/proto/ is current ({} files)", want.len());
    }
    Ok(true)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = match args.as_slice() {
        [] => false,
        [a] if a == "--check" => true,
        _ => {
            eprintln!("usage: protogen [--check]");
            return ExitCode::from(2);
        }
    };
    match run(check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("protogen: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_code_is_what_the_protos_generate() {
        let root = repository_root();
        let want = generate(&root).expect("generate");
        assert!(
            want.contains_key(INCLUDE_FILE),
            "no {INCLUDE_FILE} generated"
        );
        let diffs = differences(&want, &generated_dir(&root)).expect("read reference/src/proto");
        assert!(
            diffs.is_empty(),
            "reference/src/proto/ is stale ({diffs:?}): run \
             `cargo run --manifest-path tools/protogen/Cargo.toml` and commit the result"
        );
    }

    #[test]
    fn generating_twice_gives_the_same_bytes() {
        let root = repository_root();
        assert_eq!(
            generate(&root).expect("first"),
            generate(&root).expect("second")
        );
    }
}
