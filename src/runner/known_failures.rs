//! Known-failure files: `<case-id>  # <reason>` per line, and the rules that keep them honest.
//!
//! Invariant: a known-failure file can only describe the run it is used with. Every entry
//! needs a reason; an entry whose case now passes (an unexpected pass) or that names no case
//! of the corpus fails the run, and so does a duplicate; for each such entry, and for each
//! failing case the file does not list, the runner prints the exact line to remove or add.
//! Blank lines and lines starting with `#` are comments.

use std::collections::BTreeSet;

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// 1-based line number in the file.
    pub line: usize,
    /// The case id.
    pub case: String,
    /// Why it fails (text after `#`).
    pub reason: String,
    /// The line as written.
    pub text: String,
}

/// A parsed known-failure file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownFailures {
    /// Where it came from (for messages).
    pub path: String,
    /// The entries, in file order.
    pub entries: Vec<Entry>,
}

impl KnownFailures {
    /// Parses the file text; `path` is used in messages.
    pub fn parse(text: &str, path: &str) -> Result<KnownFailures, String> {
        let mut entries: Vec<Entry> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let Some((case, reason)) = trimmed.split_once('#') else {
                return Err(format!(
                    "{path}:{line}: an entry is `<case-id>  # <reason>`; this one gives no reason"
                ));
            };
            let (case, reason) = (case.trim(), reason.trim());
            if case.is_empty() || case.contains(char::is_whitespace) || reason.is_empty() {
                return Err(format!(
                    "{path}:{line}: an entry is `<case-id>  # <reason>` (one id, a non-empty reason)"
                ));
            }
            if let Some(first) = entries.iter().find(|e| e.case == case) {
                return Err(format!(
                    "{path}:{line}: {case} is already listed on line {}",
                    first.line
                ));
            }
            entries.push(Entry {
                line,
                case: case.to_string(),
                reason: reason.to_string(),
                text: raw.to_string(),
            });
        }
        Ok(KnownFailures {
            path: path.to_string(),
            entries,
        })
    }

    /// Reads and parses a file.
    pub fn load(path: &std::path::Path) -> Result<KnownFailures, String> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        KnownFailures::parse(&text, &shown)
    }

    /// The entry for `case`, if listed.
    pub fn get(&self, case: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.case == case)
    }

    /// Entries naming none of `ids`.
    pub fn unmatched(&self, ids: &BTreeSet<String>) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| !ids.contains(&e.case))
            .collect()
    }
}

/// The line to add for a failing case.
pub fn line_for(case: &str, reason: &str) -> String {
    let reason: String = reason
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(160)
        .collect();
    format!("{case}  # {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_need_a_reason_and_are_unique() {
        let k =
            KnownFailures::parse("# header\n\na  # Lance 14 bug: x\nb # spec gap\n", "k").unwrap();
        assert_eq!(k.entries.len(), 2);
        assert_eq!(k.entries[0].line, 3);
        assert_eq!(k.get("b").unwrap().reason, "spec gap");
        assert!(
            KnownFailures::parse("a\n", "k")
                .unwrap_err()
                .contains("k:1")
        );
        assert!(KnownFailures::parse("a  #  \n", "k").is_err());
        assert!(KnownFailures::parse("a b # r\n", "k").is_err());
        let dup = KnownFailures::parse("a # r\n\na # s\n", "k").unwrap_err();
        assert!(dup.contains("k:3") && dup.contains("line 1"), "{dup}");
        let ids: BTreeSet<String> = ["a".to_string()].into();
        assert_eq!(k.unmatched(&ids)[0].case, "b");
    }
}
