//! One error style in the kit's library code (ARCHITECTURE.md, "One error style: typed
//! errors"): outside test code, no function of the runner, generate or `lance-conformance`
//! crates returns a `Result<_, String>`, and only the command line's `main.rs` may name
//! `anyhow`.
//!
//! The check reads source text with comments and literals blanked and `#[cfg(test)]` items
//! left out (the scanner of `module_cycles`); a `Result<..>` is read with its generic
//! arguments balanced, so `Result<Vec<String>, E>` is not a string error and
//! `Result<Option<(String, String)>, String>` is.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::module_cycles::{production_code, rust_files};

/// The crates whose library code keeps the one style, as source directories.
const LIBRARY_CRATES: [&str; 3] = ["runner/src", "generate/src", "src"];

/// The error argument of every `Result<..>` in `code` whose last generic argument is `String`,
/// as the whole `Result<..>` text.
fn string_results(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("Result<") {
        let before = &rest[..at];
        let own_name = !before
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let args = &rest[at + "Result<".len()..];
        let (mut depth, mut commas, mut end) = (1usize, Vec::new(), None);
        let mut prev = ' ';
        for (k, c) in args.char_indices() {
            match c {
                '<' => depth += 1,
                // `->` inside the arguments (a `dyn Fn() -> T`) closes nothing.
                '>' if prev != '-' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(k);
                        break;
                    }
                }
                ',' if depth == 1 => commas.push(k),
                _ => {}
            }
            prev = c;
        }
        let Some(end) = end else { break };
        // A multi-line list may end in a comma: the last argument is the one before it.
        let list = args[..end].trim_end();
        let list = list.strip_suffix(',').unwrap_or(list);
        let last = commas.iter().rev().find(|k| **k < list.len());
        if let Some(k) = last.filter(|_| own_name) {
            if list[k + 1..].trim() == "String" {
                found.push(format!(
                    "Result<{}>",
                    list.split_whitespace().collect::<Vec<_>>().join(" ")
                ));
            }
        }
        rest = args;
    }
    found
}

#[test]
fn library_code_returns_no_string_error_and_names_no_anyhow() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut offenders = Vec::new();
    for krate in LIBRARY_CRATES {
        let mut files = BTreeMap::new();
        rust_files(&root.join(krate), &root.join(krate), &mut files);
        for (file, code) in production_code(&files) {
            for r in string_results(&code) {
                offenders.push(format!("{krate}/{file}: {r}"));
            }
            if file != "main.rs" && code.contains("anyhow") {
                offenders.push(format!("{krate}/{file}: names anyhow"));
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

#[test]
fn the_scanner_reads_generic_arguments_balanced() {
    let code = "fn a() -> Result<Vec<String>, E> {}\n\
                fn b() -> Result<Option<(String, String)>, String> {}\n\
                fn c(f: &dyn Fn() -> Result<u8, String>) {}\n\
                type T = Result<Box<dyn Fn(u8) -> u8>, String>;\n\
                fn d() -> io::Result<String> {}\n\
                fn e() -> MyResult<u8, String> {}\n\
                fn f() -> Result<\n    Vec<u8>,\n    String,\n> {}";
    assert_eq!(
        string_results(code),
        [
            "Result<Option<(String, String)>, String>",
            "Result<u8, String>",
            "Result<Box<dyn Fn(u8) -> u8>, String>",
            "Result<Vec<u8>, String>",
        ]
    );
}
