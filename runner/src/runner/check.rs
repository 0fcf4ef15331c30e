//! The names of the runner's checks: what one verdict is about.
//!
//! Invariant: every check the runner records is a [`Check`], spelt by its one
//! [`Display`](fmt::Display) and read back by its one parser ([`FromStr`]);
//! `check.to_string().parse() == Ok(check)` for every check the runner makes, and the parser
//! accepts only a name spelt exactly as `Display` spells it. Known-failure files, JUnit and JSON
//! reports, the HTML report and fuzz signatures all go through this type, so a check renamed
//! here is renamed everywhere, and a misspelt check in a known-failure file is an error, not an
//! entry that never matches.
//!
//! A version's checks are named `v<n> <what>` (`v2 scan`, `v3 query "age = 26"`,
//! `v4 refusal class (corrupt_file)`); the undamaged twin's, `v<n> twin <what>`; a case's
//! checks that belong to no version by a word (`expected`, `write`, `walk`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One check of a case, as the spec's runner sections name it (spec/conformance.md §4, §7).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// `v<n> needs`: what the version needs of a reader (read by the kit; only ever a kit fault).
    Needs {
        /// The version.
        version: u64,
        /// Of the undamaged twin.
        twin: bool,
    },
    /// `v<n> open`.
    Open {
        /// The version.
        version: u64,
    },
    /// `v<n> scan`: every column, in schema order.
    Scan {
        /// The version.
        version: u64,
        /// Of the undamaged twin.
        twin: bool,
    },
    /// `v<n> scan [b, a]`: a scan projecting `columns`, in that order.
    ProjectedScan {
        /// The version.
        version: u64,
        /// The projected columns, in the order asked.
        columns: Vec<String>,
    },
    /// `v<n> lineage`.
    Lineage {
        /// The version.
        version: u64,
    },
    /// `v<n> exclusion`.
    Exclusion {
        /// The version.
        version: u64,
    },
    /// `v<n> query "<name>"` (the name quoted and escaped as Rust's `{:?}` does).
    Query {
        /// The version.
        version: u64,
        /// The query's name in the case.
        name: String,
    },
    /// `v<n> refuses (needs <words>)`: the refusal profile, a version needing capabilities the
    /// reader does not declare.
    RefusesForFeature {
        /// The version.
        version: u64,
        /// Of the undamaged twin.
        twin: bool,
        /// The capability words lacking, as [`super::needs::words`] joins them.
        needs: String,
    },
    /// `v<n> refuses`: the damaged version of a negative case.
    Refuses {
        /// The version.
        version: u64,
    },
    /// `v<n> read as its twin`: a damaged version a reader may read, read as its twin reads.
    ReadAsTwin {
        /// The version.
        version: u64,
    },
    /// `v<n> refusal class (<class>)`.
    RefusalClass {
        /// The version.
        version: u64,
        /// Of the undamaged twin.
        twin: bool,
        /// The class expected.
        class: String,
    },
    /// `v<n> refusal code (<code>)`.
    RefusalCode {
        /// The version.
        version: u64,
        /// The code expected.
        code: String,
    },
    /// `v<n> data file version`: the data file version a writer wrote.
    DataFileVersion {
        /// The version.
        version: u64,
    },
    /// `v<n> rules`: a written version validated.
    Rules {
        /// The version.
        version: u64,
    },
    /// `v<n> lineage lengths`: the lineage a commit wrote placed by the lengths the writer
    /// reports for it.
    LineageLengths {
        /// The version.
        version: u64,
    },
    /// `v<n> write (<op>)`: a writer's step committed as version `n`.
    Write {
        /// The version.
        version: u64,
        /// The step's operation word ([`crate::case::Step::op`]).
        op: String,
    },
    /// `v<n> prepare (<op>)`: a step prepared (not committed) on the way to version `n`.
    Prepare {
        /// The version.
        version: u64,
        /// The step's operation word.
        op: String,
    },
    /// `v<n> commit (<op>, retried)`: a prepared step committed after a conflict.
    CommitRetried {
        /// The version.
        version: u64,
        /// The step's operation word.
        op: String,
    },
    /// `v<n> commit prepared (<op>)`: a committer committing a prepared commit (a committer
    /// case's twin).
    CommitPrepared {
        /// The version.
        version: u64,
        /// The commit's operation word.
        op: String,
    },
    /// `v<n> refuses (<op>)`: a writer refusing a step that must be refused.
    RefusesWrite {
        /// The version the refused step would have made.
        version: u64,
        /// The step's operation word.
        op: String,
    },
    /// `v<n> refuses (<op>; needs <words>)`: a writer handed a version whose writer word
    /// announces features it lacks, refusing its first step on it.
    RefusesWriteLacking {
        /// The version the step was sent on.
        version: u64,
        /// The step's operation word.
        op: String,
        /// The writer words lacking, joined by `, `.
        needs: String,
    },
    /// `v<n> refuses prepared (<op>)`: a committer refusing a malformed prepared commit.
    RefusesPrepared {
        /// The version the refused commit would have made.
        version: u64,
        /// The commit's operation word.
        op: String,
    },
    /// `expected`: loading the case's `expected/` (only ever a kit fault).
    Expected,
    /// `write`: a writer case as a whole (not sent, or stopped before its first step).
    WriterCase,
    /// `walk`: the worked example walked by the reference (only ever a kit fault).
    Walk,
    /// `step <step>: <claim>`: one claim of the worked example.
    WalkStep {
        /// The example's step (`1 write an overlay`, `all`).
        step: String,
        /// The claim checked.
        claim: String,
    },
}

impl Check {
    /// Whether the check is a refusal the reader or writer owes (a damaged version, a version
    /// needing what the reader lacks, a step or prepared commit that must be refused): a pass
    /// of it is a refusal, not a read.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Check::RefusesForFeature { .. }
                | Check::Refuses { .. }
                | Check::RefusesWrite { .. }
                | Check::RefusesWriteLacking { .. }
                | Check::RefusesPrepared { .. }
        )
    }

    /// The version the check is about, for a version's check.
    pub fn version(&self) -> Option<u64> {
        match self {
            Check::Needs { version, .. }
            | Check::Open { version }
            | Check::Scan { version, .. }
            | Check::ProjectedScan { version, .. }
            | Check::Lineage { version }
            | Check::Exclusion { version }
            | Check::Query { version, .. }
            | Check::RefusesForFeature { version, .. }
            | Check::Refuses { version }
            | Check::ReadAsTwin { version }
            | Check::RefusalClass { version, .. }
            | Check::RefusalCode { version, .. }
            | Check::DataFileVersion { version }
            | Check::Rules { version }
            | Check::LineageLengths { version }
            | Check::Write { version, .. }
            | Check::Prepare { version, .. }
            | Check::CommitRetried { version, .. }
            | Check::CommitPrepared { version, .. }
            | Check::RefusesWrite { version, .. }
            | Check::RefusesWriteLacking { version, .. }
            | Check::RefusesPrepared { version, .. } => Some(*version),
            Check::Expected | Check::WriterCase | Check::Walk | Check::WalkStep { .. } => None,
        }
    }

    /// Whether the check reads the undamaged twin.
    pub fn is_twin(&self) -> bool {
        matches!(
            self,
            Check::Needs { twin: true, .. }
                | Check::Scan { twin: true, .. }
                | Check::RefusesForFeature { twin: true, .. }
                | Check::RefusalClass { twin: true, .. }
        )
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |version: &u64, twin: &bool| {
            if *twin {
                format!("v{version} twin")
            } else {
                format!("v{version}")
            }
        };
        match self {
            Check::Needs { version, twin } => write!(f, "{} needs", at(version, twin)),
            Check::Open { version } => write!(f, "v{version} open"),
            Check::Scan { version, twin } => write!(f, "{} scan", at(version, twin)),
            Check::ProjectedScan { version, columns } => {
                write!(f, "v{version} scan [{}]", columns.join(", "))
            }
            Check::Lineage { version } => write!(f, "v{version} lineage"),
            Check::Exclusion { version } => write!(f, "v{version} exclusion"),
            Check::Query { version, name } => write!(f, "v{version} query {name:?}"),
            Check::RefusesForFeature {
                version,
                twin,
                needs,
            } => write!(f, "{} refuses (needs {needs})", at(version, twin)),
            Check::Refuses { version } => write!(f, "v{version} refuses"),
            Check::ReadAsTwin { version } => write!(f, "v{version} read as its twin"),
            Check::RefusalClass {
                version,
                twin,
                class,
            } => write!(f, "{} refusal class ({class})", at(version, twin)),
            Check::RefusalCode { version, code } => write!(f, "v{version} refusal code ({code})"),
            Check::DataFileVersion { version } => write!(f, "v{version} data file version"),
            Check::Rules { version } => write!(f, "v{version} rules"),
            Check::LineageLengths { version } => write!(f, "v{version} lineage lengths"),
            Check::Write { version, op } => write!(f, "v{version} write ({op})"),
            Check::Prepare { version, op } => write!(f, "v{version} prepare ({op})"),
            Check::CommitRetried { version, op } => write!(f, "v{version} commit ({op}, retried)"),
            Check::CommitPrepared { version, op } => {
                write!(f, "v{version} commit prepared ({op})")
            }
            Check::RefusesWrite { version, op } => write!(f, "v{version} refuses ({op})"),
            Check::RefusesWriteLacking { version, op, needs } => {
                write!(f, "v{version} refuses ({op}; needs {needs})")
            }
            Check::RefusesPrepared { version, op } => {
                write!(f, "v{version} refuses prepared ({op})")
            }
            Check::Expected => f.write_str("expected"),
            Check::WriterCase => f.write_str("write"),
            Check::Walk => f.write_str("walk"),
            Check::WalkStep { step, claim } => write!(f, "step {step}: {claim}"),
        }
    }
}

/// A text that names no check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a check name ({problem})")]
pub struct CheckNameError {
    /// The text.
    pub name: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl FromStr for Check {
    type Err = CheckNameError;

    fn from_str(s: &str) -> Result<Check, CheckNameError> {
        let error = |problem| CheckNameError {
            name: s.to_string(),
            problem,
        };
        let check = parse(s).map_err(error)?;
        // One spelling per check: `v02 scan`, `v1 scan [a,b]` or an unusual escape in a query
        // name read as a check would never match the runner's own name.
        if check.to_string() != s {
            return Err(error("not spelt as the runner spells it"));
        }
        Ok(check)
    }
}

/// The check `s` names, if any (not yet checked to be spelt exactly as `Display` spells it).
fn parse(s: &str) -> Result<Check, &'static str> {
    match s {
        "expected" => return Ok(Check::Expected),
        "write" => return Ok(Check::WriterCase),
        "walk" => return Ok(Check::Walk),
        _ => {}
    }
    if let Some(rest) = s.strip_prefix("step ") {
        let (step, claim) = rest
            .split_once(": ")
            .ok_or("a worked-example step is `step <step>: <claim>`")?;
        return Ok(Check::WalkStep {
            step: step.to_string(),
            claim: claim.to_string(),
        });
    }
    let rest = s
        .strip_prefix('v')
        .ok_or("a version's check starts with `v<n> `")?;
    let (number, what) = rest
        .split_once(' ')
        .ok_or("a version's check is `v<n> <what>`")?;
    let version: u64 = number
        .parse()
        .map_err(|_| "a version's check starts with `v<n> `, n a number")?;
    let (twin, what) = match what.strip_prefix("twin ") {
        Some(w) => (true, w),
        None => (false, what),
    };
    let op = |w: &str| w.to_string();
    let check = match what {
        "needs" => Check::Needs { version, twin },
        "open" => Check::Open { version },
        "scan" => Check::Scan { version, twin },
        "lineage" => Check::Lineage { version },
        "exclusion" => Check::Exclusion { version },
        "refuses" => Check::Refuses { version },
        "read as its twin" => Check::ReadAsTwin { version },
        "data file version" => Check::DataFileVersion { version },
        "rules" => Check::Rules { version },
        "lineage lengths" => Check::LineageLengths { version },
        _ => {
            if let Some(columns) = what
                .strip_prefix("scan [")
                .and_then(|c| c.strip_suffix(']'))
            {
                Check::ProjectedScan {
                    version,
                    columns: columns.split(", ").map(str::to_string).collect(),
                }
            } else if let Some(quoted) = what.strip_prefix("query ") {
                Check::Query {
                    version,
                    name: unquote(quoted).ok_or("a query's name is quoted, as `\"age = 26\"`")?,
                }
            } else if let Some(needs) = in_parens(what, "refuses (needs ") {
                Check::RefusesForFeature {
                    version,
                    twin,
                    needs: needs.to_string(),
                }
            } else if let Some(o) = in_parens(what, "refuses prepared (") {
                Check::RefusesPrepared { version, op: op(o) }
            } else if let Some((o, needs)) =
                in_parens(what, "refuses (").and_then(|o| o.split_once("; needs "))
            {
                Check::RefusesWriteLacking {
                    version,
                    op: op(o),
                    needs: needs.to_string(),
                }
            } else if let Some(o) = in_parens(what, "refuses (") {
                Check::RefusesWrite { version, op: op(o) }
            } else if let Some(class) = in_parens(what, "refusal class (") {
                Check::RefusalClass {
                    version,
                    twin,
                    class: class.to_string(),
                }
            } else if let Some(code) = in_parens(what, "refusal code (") {
                Check::RefusalCode {
                    version,
                    code: code.to_string(),
                }
            } else if let Some(o) = in_parens(what, "write (") {
                Check::Write { version, op: op(o) }
            } else if let Some(o) = in_parens(what, "prepare (") {
                Check::Prepare { version, op: op(o) }
            } else if let Some(o) = in_parens(what, "commit prepared (") {
                Check::CommitPrepared { version, op: op(o) }
            } else if let Some(o) =
                in_parens(what, "commit (").and_then(|o| o.strip_suffix(", retried"))
            {
                Check::CommitRetried { version, op: op(o) }
            } else {
                return Err("no check of a version is named so");
            }
        }
    };
    if twin && !check.is_twin() {
        return Err("only needs, scan, a refusal for a feature and its class are twin checks");
    }
    Ok(check)
}

/// The text between `prefix` and a closing `)` ending `what`.
fn in_parens<'a>(what: &'a str, prefix: &str) -> Option<&'a str> {
    what.strip_prefix(prefix)?.strip_suffix(')')
}

/// The string a Rust `{:?}` rendering of a `&str` shows: quotes removed, escapes undone.
fn unquote(quoted: &str) -> Option<String> {
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '"' {
            return None; // an unescaped quote inside
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            '0' => '\0',
            '\\' => '\\',
            '"' => '"',
            '\'' => '\'',
            'u' => {
                let hex: String = chars
                    .by_ref()
                    .skip_while(|&c| c == '{')
                    .take_while(|&c| c != '}')
                    .collect();
                if hex.is_empty() || hex.len() > 6 {
                    return None;
                }
                char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
            }
            _ => return None,
        });
    }
    Some(out)
}

impl Serialize for Check {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Check {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Check, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One check of every variant, twin forms included, with names that need escaping.
    fn every_variant() -> Vec<Check> {
        let op = || "overlay".to_string();
        vec![
            Check::Needs {
                version: 3,
                twin: false,
            },
            Check::Needs {
                version: 3,
                twin: true,
            },
            Check::Open { version: 2 },
            Check::Scan {
                version: 2,
                twin: false,
            },
            Check::Scan {
                version: 12,
                twin: true,
            },
            Check::ProjectedScan {
                version: 2,
                columns: vec!["b".into(), "st.a".into(), "a".into()],
            },
            Check::ProjectedScan {
                version: 1,
                columns: vec!["only".into()],
            },
            Check::Lineage { version: 4 },
            Check::Exclusion { version: 4 },
            Check::Query {
                version: 1,
                name: "age = 25".into(),
            },
            Check::Query {
                version: 6,
                name: "nearest 2 to [-1, 0.5]".into(),
            },
            Check::Query {
                version: 2,
                name: "a \"quoted\" \\ name\twith\nescapes \u{7f} é".into(),
            },
            Check::Query {
                version: 2,
                name: "query (x)".into(),
            },
            Check::RefusesForFeature {
                version: 3,
                twin: false,
                needs: "spilled-lineage".into(),
            },
            Check::RefusesForFeature {
                version: 3,
                twin: true,
                needs: "spilled-lineage, vector-query".into(),
            },
            Check::Refuses { version: 2 },
            Check::ReadAsTwin { version: 1 },
            Check::RefusalClass {
                version: 2,
                twin: false,
                class: "corrupt_file".into(),
            },
            Check::RefusalClass {
                version: 3,
                twin: true,
                class: "unsupported_feature".into(),
            },
            Check::RefusalCode {
                version: 2,
                code: "deletion_past_end".into(),
            },
            Check::DataFileVersion { version: 2 },
            Check::Rules { version: 2 },
            Check::LineageLengths { version: 2 },
            Check::RefusesWriteLacking {
                version: 1,
                op: "append".into(),
                needs: "write:overlay, write:spilled-lineage".into(),
            },
            Check::Write {
                version: 2,
                op: op(),
            },
            Check::Prepare {
                version: 3,
                op: op(),
            },
            Check::CommitRetried {
                version: 3,
                op: "commit_retry".into(),
            },
            Check::CommitPrepared {
                version: 2,
                op: "append".into(),
            },
            Check::RefusesWrite {
                version: 2,
                op: "expect_refusal".into(),
            },
            Check::RefusesPrepared {
                version: 2,
                op: "delete".into(),
            },
            Check::Expected,
            Check::WriterCase,
            Check::Walk,
            Check::WalkStep {
                step: "6 fold".into(),
                claim: "fold drops fragment 0 from age_idx".into(),
            },
        ]
    }

    #[test]
    fn every_check_reads_back_as_itself() {
        let all = every_variant();
        for check in &all {
            let name = check.to_string();
            assert_eq!(name.parse::<Check>().as_ref(), Ok(check), "{name}");
            let json = serde_json::to_string(check).unwrap();
            assert_eq!(&serde_json::from_str::<Check>(&json).unwrap(), check);
        }
        // Distinct checks have distinct names.
        let names: std::collections::BTreeSet<String> = all.iter().map(|c| c.to_string()).collect();
        assert_eq!(names.len(), all.len());
    }

    #[test]
    fn names_keep_the_spelling_known_failure_files_use() {
        for name in [
            "v2 refuses",
            "v4 scan",
            "v3 twin refuses (needs spilled-lineage)",
            "v2 refuses prepared (overlay)",
            "v1 query \"age = 25\"",
            "v6 query \"nearest 2 to [-1, 0.5]\"",
            "v1 read as its twin",
            "v2 open",
            "v3 twin scan",
            "v2 scan [b, a]",
            "v3 refusal class (unsupported_feature)",
            "v2 refusal code (deletion_past_end)",
            "v2 commit (overlay, retried)",
        ] {
            let check: Check = name.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(check.to_string(), name);
        }
        assert_eq!(
            "v3 twin refuses (needs spilled-lineage)".parse(),
            Ok(Check::RefusesForFeature {
                version: 3,
                twin: true,
                needs: "spilled-lineage".into()
            })
        );
        assert_eq!(
            "v2 refuses (delete)".parse(),
            Ok(Check::RefusesWrite {
                version: 2,
                op: "delete".into()
            })
        );
    }

    #[test]
    fn misspelt_names_are_refused() {
        for (name, problem) in [
            ("v2 scna", "no check of a version is named so"),
            ("v2  scan", "no check of a version is named so"),
            ("v02 scan", "not spelt as the runner spells it"),
            ("v+2 scan", "not spelt as the runner spells it"),
            ("2 scan", "a version's check starts with `v<n> `"),
            (
                "vx scan",
                "a version's check starts with `v<n> `, n a number",
            ),
            (
                "v2 query age = 25",
                "a query's name is quoted, as `\"age = 26\"`",
            ),
            (
                "v2 query \"a\"b\"",
                "a query's name is quoted, as `\"age = 26\"`",
            ),
            (
                "v2 twin open",
                "only needs, scan, a refusal for a feature and its class are twin checks",
            ),
            ("v2 refuses ", "no check of a version is named so"),
            ("", "a version's check starts with `v<n> `"),
            ("step x", "a worked-example step is `step <step>: <claim>`"),
        ] {
            let err = name.parse::<Check>().unwrap_err();
            assert_eq!((err.name.as_str(), err.problem), (name, problem));
        }
    }
}
