//! Writes a deletion file with this kit's writers, for interoperability checks against Lance
//! (`tests/interop/check_lance14_reads_our_deletions.py`).
//!
//! Usage: `write_deletion_file <arrow|bin|bin-runs> <out-path> <offsets>...` where each
//! offsets argument is one offset `7` or a half-open range `10..20`. `bin-runs` writes the
//! bitmap form with run containers (the optimized encoding Lance uses for coverage), to check
//! that Lance also reads run containers in a deletion file.
use std::process::ExitCode;

use lance_reference_io::deletion::{DeletionFileType, write_deletion_file};
use lance_reference_io::roaring_format::write_bitmap;
use roaring::RoaringBitmap;

fn parse(arg: &str) -> Option<std::ops::Range<u32>> {
    match arg.split_once("..") {
        Some((a, b)) => Some(a.parse().ok()?..b.parse().ok()?),
        None => {
            let v: u32 = arg.parse().ok()?;
            Some(v..v.checked_add(1)?)
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [form, out, offsets @ ..] = args.as_slice() else {
        eprintln!("usage: write_deletion_file <arrow|bin|bin-runs> <out-path> <offset|a..b>...");
        return ExitCode::FAILURE;
    };
    let mut deleted = RoaringBitmap::new();
    for arg in offsets {
        let Some(range) = parse(arg) else {
            eprintln!("not an offset or range: {arg}");
            return ExitCode::FAILURE;
        };
        deleted.insert_range(range);
    }
    let bytes = match form.as_str() {
        "arrow" => write_deletion_file(&deleted, DeletionFileType::ArrowArray),
        "bin" => write_deletion_file(&deleted, DeletionFileType::Bitmap),
        "bin-runs" => write_bitmap(&deleted),
        other => {
            eprintln!("unknown form {other}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(out, &bytes) {
        eprintln!("{out}: {e}");
        return ExitCode::FAILURE;
    }
    println!("{out}: {} offsets, {} bytes", deleted.len(), bytes.len());
    ExitCode::SUCCESS
}
