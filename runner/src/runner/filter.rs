//! Selecting cases: by id (with `*` wildcards), area, requirement id and tag.
//!
//! Invariant: a case runs when it matches every kind of filter given, and any one value
//! within a kind (`--area overlays --area lineage` is "either area"); with no filter every
//! case runs. A filter value that matches no case in the corpus is reported, so a typo never
//! silently selects nothing.

use crate::corpus::CaseDir;

/// The filters of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    /// Case ids or `area/id`, `*` matching any run of characters.
    pub cases: Vec<String>,
    /// Areas (`overlays`, `lineage`, ...).
    pub areas: Vec<String>,
    /// Requirement ids (`OVL-PREC-1`), `*` allowed (`OVL-PREC-*`).
    pub requirements: Vec<String>,
    /// Tags.
    pub tags: Vec<String>,
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters.
pub fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(tail) = text.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|i| tail.is_char_boundary(*i))
                .any(|i| glob(rest, &tail[i..]))
        }
    }
}

impl Filters {
    fn case_matches(&self, c: &CaseDir, value: &str) -> bool {
        glob(value, &c.case.id) || glob(value, &format!("{}/{}", c.area, c.case.id))
    }

    fn requirement_matches(c: &CaseDir, value: &str) -> bool {
        c.case.requirements.iter().any(|r| glob(value, r))
    }

    /// Whether `c` is selected.
    pub fn selects(&self, c: &CaseDir) -> bool {
        let kind = |values: &[String], hit: &dyn Fn(&str) -> bool| {
            values.is_empty() || values.iter().any(|v| hit(v))
        };
        kind(&self.cases, &|v| self.case_matches(c, v))
            && kind(&self.areas, &|v| c.area == v)
            && kind(&self.requirements, &|v| Self::requirement_matches(c, v))
            && kind(&self.tags, &|v| c.case.tags.iter().any(|t| t == v))
    }

    /// Filter values that match no case of `all`, as `--flag value`.
    pub fn unmatched(&self, all: &[CaseDir]) -> Vec<String> {
        let mut out = Vec::new();
        for v in &self.cases {
            if !all.iter().any(|c| self.case_matches(c, v)) {
                out.push(format!("--case {v}"));
            }
        }
        for v in &self.areas {
            if !all.iter().any(|c| c.area == *v) {
                out.push(format!("--area {v}"));
            }
        }
        for v in &self.requirements {
            if !all.iter().any(|c| Self::requirement_matches(c, v)) {
                out.push(format!("--requirement {v}"));
            }
        }
        for v in &self.tags {
            if !all.iter().any(|c| c.case.tags.contains(v)) {
                out.push(format!("--tag {v}"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_runs_of_characters() {
        assert!(glob("OVL-PREC-*", "OVL-PREC-12"));
        assert!(glob("*-cover", "null-cover"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("a*c*e", "abcd"));
        assert!(!glob("null-cover", "null-cover-2"));
        assert!(glob("*", ""));
    }
}
