//! `case.toml`: the hand-written description of one conformance case.
//!
//! Invariant: a [`Case`] that passed [`Case::validate`] has a well-formed stable id, names only
//! requirement ids that exist in `spec/requirements.toml`, starts with exactly one `create`
//! step, keeps `corrupt` steps at the end, and declares an expected error exactly when it
//! corrupts (a negative case). Everything else (field names, offsets, values) is checked when
//! the scenario runs, against the schema it builds.
//!
//! The format is documented for case authors in `conformance-cases/README.md` and as a JSON
//! Schema in `spec/schemas/case.schema.json`.

pub mod cell;
pub mod corruption;
pub mod names;
pub mod query;
pub mod step;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use cell::Cell;
pub use corruption::{ContentCorruption, Corruption, FileBytesCorruption, ManifestBytesCorruption};
pub use query::{Op, PredicateSpec, QuerySpec};
pub use step::{FieldSpec, IndexKindSpec, OverlaySpec, Shape, Step};

/// The conformance level of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Level {
    /// Failing it is non-conformance.
    #[serde(rename = "MUST")]
    Must,
    /// Failing it is reported as advisory.
    #[serde(rename = "SHOULD")]
    Should,
}

impl Level {
    /// `MUST` or `SHOULD`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        }
    }
}

/// A reader capability a case needs; runners skip cases needing capabilities they lack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capability {
    /// Dense data overlay files.
    Overlays,
    /// Sparse (`field_coverage`) overlays.
    SparseOverlays,
    /// Stable row ids.
    StableRowIds,
    /// Deletion files.
    Deletions,
    /// Lineage sequences in hidden columns.
    SpilledLineage,
    /// Index exclusion sets and scalar query reconciliation.
    Exclusion,
    /// Vector top-k reconciliation.
    VectorQuery,
    /// Struct fields.
    NestedFields,
    /// Indices with covering fields (reader bit 128, covered index metadata).
    CoveredIndexMetadata,
}

/// A data file format version a case writes its data files in (`data_file_version`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DataFileVersionSpec {
    /// Format v2.0 (the default): a column per field, structs included.
    #[default]
    #[serde(rename = "2.0")]
    V2_0,
    /// Format v2.1: as v2.2 in which fields take columns, with the u16 mini-block chunk
    /// grammar and no compressed levels in constant pages.
    #[serde(rename = "2.1")]
    V2_1,
    /// Format v2.2, Lance 14's default: a column per leaf; struct fields take no position in
    /// `DataFile.fields`.
    #[serde(rename = "2.2")]
    V2_2,
}

impl DataFileVersionSpec {
    /// The version as `data_format.version` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            DataFileVersionSpec::V2_0 => "2.0",
            DataFileVersionSpec::V2_1 => "2.1",
            DataFileVersionSpec::V2_2 => "2.2",
        }
    }

    /// Whether this is v2.0 (the default, left out of a written `case.toml`).
    pub fn is_default(&self) -> bool {
        *self == DataFileVersionSpec::V2_0
    }
}

/// A twin's `case.toml`: a case that runs another case's steps with its data files in another
/// version, and shares that case's `expected/` (it has none of its own). The corpus resolves it
/// into a full [`Case`] ([`crate::corpus::load`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwinSpec {
    /// Stable id, as for every case.
    pub id: String,
    /// The id of the case whose steps, queries and `expected/` the twin shares. It must not be
    /// a twin itself.
    pub twin_of: String,
    /// The version the twin's data files are written in (it must differ from the other case's,
    /// or the twin would repeat it byte for byte).
    pub data_file_version: DataFileVersionSpec,
    /// Requirement ids the twin pins beyond the other case's: what only its version shows.
    #[serde(default)]
    pub requirements: Vec<String>,
}

impl TwinSpec {
    /// Parses a twin's `case.toml` text; `Ok(None)` when the text declares no `twin_of` (an
    /// ordinary case).
    pub fn parse(text: &str, path: &str) -> Result<Option<TwinSpec>, CaseError> {
        let value: toml::Table = toml::from_str(text).map_err(|e| CaseError::Parse {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        if !value.contains_key("twin_of") {
            return Ok(None);
        }
        toml::from_str(text)
            .map(Some)
            .map_err(|e| CaseError::Parse {
                path: path.to_string(),
                message: e.to_string(),
            })
    }

    /// The case the twin stands for: `source` with the twin's id, title and data file version.
    pub fn resolve(&self, source: &Case) -> Result<Case, CaseError> {
        let bad = |problem: String| CaseError::Invalid {
            id: self.id.clone(),
            problem,
        };
        if self.data_file_version == source.data_file_version {
            return Err(bad(format!(
                "a twin of {} must write another data file version than its {}",
                source.id,
                source.data_file_version.as_str()
            )));
        }
        if !source.step_data_file_versions.is_empty() {
            return Err(bad(format!(
                "{} sets step_data_file_versions; a twin of a mixed-version case would not \
                 differ from it in one version only",
                source.id
            )));
        }
        let mut case = source.clone();
        case.id = self.id.clone();
        case.title = format!(
            "{} (data files v{})",
            source.title,
            self.data_file_version.as_str()
        );
        case.data_file_version = self.data_file_version;
        for r in &self.requirements {
            if case.requirements.contains(r) {
                return Err(bad(format!("{r} is named by {} already", source.id)));
            }
            case.requirements.push(r.clone());
        }
        Ok(case)
    }
}

/// The error a negative case requires of a reader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectErrorSpec {
    /// `malformed`, `invalid` or `unsupported_feature` ([`lance_reference::ErrorClass`]).
    pub class: String,
    /// Optionally the reference's stable error code (`offset_out_of_range`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// A feature (e.g. "reader bit 16, base paths") that makes the damaged version readable for
    /// a reader implementing it: such a reader may read the version instead of refusing it,
    /// and must then return exactly what the undamaged twin returns. The reference does not
    /// implement it and refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unless_implemented: Option<String>,
    /// Refusing is only recommended (a SHOULD case): a reader may read the damaged version
    /// instead, and then must return exactly what the undamaged twin returns. The refusal is
    /// judged at the case's level; what such a read returns is judged at MUST, so a reader
    /// that reads the damage wrongly (stale base values, default lineage) fails the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub may_read: bool,
}

/// One case, as written in `case.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Stable id: lower-case letters, digits and `-`; equal to the case's directory name.
    pub id: String,
    /// One-line title.
    pub title: String,
    /// Requirement ids the case checks.
    pub requirements: Vec<String>,
    /// `MUST` or `SHOULD`.
    pub level: Level,
    /// Free-form tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Reader capabilities the case needs.
    #[serde(default)]
    pub requires: Vec<Capability>,
    /// What the case shows and why, in prose.
    pub description: String,
    /// The error a reader must raise on the newest version (negative cases only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<ExpectErrorSpec>,
    /// Queries whose reconciliation is recorded.
    #[serde(default)]
    pub queries: Vec<QuerySpec>,
    /// The version every data file the case writes is in (base, lineage and overlay value
    /// files); `2.0` when absent.
    #[serde(default, skip_serializing_if = "DataFileVersionSpec::is_default")]
    pub data_file_version: DataFileVersionSpec,
    /// Per step (its position, counting from 0, as in file names `f<fragment>-s<step>...`):
    /// the version of the data files that step writes, overriding `data_file_version`. A case
    /// whose files then differ is a mixed-version one (bit 256).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub step_data_file_versions: BTreeMap<String, DataFileVersionSpec>,
    /// A writer run of the case starts from a copy of the stored dataset at this version
    /// (spec/conformance.md §7.3): the steps up to it are not the writer's, and may be steps no
    /// writer makes (`set_writer_flag`); the writer replays only the steps after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_from: Option<u64>,
    /// The scenario.
    pub steps: Vec<Step>,
}

/// Why a case file is unusable.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// The file could not be read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The TOML does not parse or does not match the vocabulary.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// The case breaks a rule of the format.
    #[error("case {id}: {problem}")]
    Invalid {
        /// The case id.
        id: String,
        /// What is wrong.
        problem: String,
    },
}

/// The requirement ids of `spec/requirements.toml`, with their levels, and the text of each
/// requirement line of the markdown files beside it.
#[derive(Debug, Clone, Default)]
pub struct RequirementIndex {
    /// Id → level (`MUST`, `MUST NOT`, `SHOULD`, `SHOULD NOT`, `MAY`).
    pub levels: BTreeMap<String, String>,
    /// Id → whether the requirement is a clarification (a decision of the kit where the
    /// source documents are silent or ambiguous).
    pub clarification: BTreeMap<String, bool>,
    /// Id → `section` (`overlays.md#feature-gate`).
    pub sections: BTreeMap<String, String>,
    /// Id → the requirement's sentence, after its level (from `spec/*.md`).
    pub bodies: BTreeMap<String, String>,
}

impl RequirementIndex {
    /// Reads `spec/requirements.toml`, and the requirement lines
    /// (`- **[ID]** LEVEL — sentence`) of the markdown files in the same directory.
    pub fn load(path: &Path) -> Result<RequirementIndex, CaseError> {
        #[derive(Deserialize)]
        struct Entry {
            id: String,
            level: String,
            #[serde(default)]
            clarification: bool,
            #[serde(default)]
            section: String,
        }
        #[derive(Deserialize)]
        struct File {
            requirement: Vec<Entry>,
        }
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| CaseError::Io {
            path: shown.clone(),
            error,
        })?;
        let file: File = toml::from_str(&text).map_err(|e| CaseError::Parse {
            path: shown,
            message: e.to_string(),
        })?;
        let mut index = RequirementIndex::default();
        for e in file.requirement {
            index.clarification.insert(e.id.clone(), e.clarification);
            index.sections.insert(e.id.clone(), e.section);
            index.levels.insert(e.id, e.level);
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut markdown: Vec<_> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "md"))
                    .collect()
            })
            .unwrap_or_default();
        markdown.sort();
        for md in markdown {
            let Ok(text) = std::fs::read_to_string(&md) else {
                continue;
            };
            for line in text.lines() {
                let Some(rest) = line.strip_prefix("- **[") else {
                    continue;
                };
                let Some((id, after)) = rest.split_once("]**") else {
                    continue;
                };
                if let Some((_, body)) = after.split_once(" — ") {
                    index.bodies.insert(id.to_string(), body.trim().to_string());
                }
            }
        }
        Ok(index)
    }
}

impl Case {
    /// Parses `case.toml` text; `path` is only used in messages.
    pub fn parse(text: &str, path: &str) -> Result<Case, CaseError> {
        toml::from_str(text).map_err(|e| CaseError::Parse {
            path: path.to_string(),
            message: e.to_string(),
        })
    }

    /// Reads and parses a `case.toml` file.
    pub fn load(path: &Path) -> Result<Case, CaseError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| CaseError::Io {
            path: shown.clone(),
            error,
        })?;
        Case::parse(&text, &shown)
    }

    /// Whether this is a negative case (it requires an error).
    pub fn is_negative(&self) -> bool {
        self.expect_error.is_some()
    }

    /// Checks the format rules listed in the module docs.
    pub fn validate(&self, requirements: &RequirementIndex) -> Result<(), CaseError> {
        let bad = |problem: String| CaseError::Invalid {
            id: self.id.clone(),
            problem,
        };
        let id_ok = !self.id.is_empty()
            && self.id.len() <= 80
            && self
                .id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !self.id.starts_with('-')
            && !self.id.ends_with('-');
        if !id_ok {
            return Err(bad(
                "id must be 1-80 lower-case letters, digits and inner dashes".into(),
            ));
        }
        if self.title.trim().is_empty() || self.description.trim().is_empty() {
            return Err(bad("title and description must not be empty".into()));
        }
        if self.requirements.is_empty() {
            return Err(bad("a case names at least one requirement id".into()));
        }
        for (i, r) in self.requirements.iter().enumerate() {
            if !requirements.levels.contains_key(r) {
                return Err(bad(format!(
                    "requirement {r} is not in spec/requirements.toml"
                )));
            }
            if self.requirements[..i].contains(r) {
                return Err(bad(format!("requirement {r} is listed twice")));
            }
        }
        let binding = self
            .requirements
            .iter()
            .filter_map(|r| requirements.levels.get(r))
            .any(|l| l.starts_with("MUST"));
        if self.level == Level::Must && !binding {
            return Err(bad(
                "level MUST needs at least one MUST / MUST NOT requirement".into(),
            ));
        }
        match self.steps.first() {
            Some(Step::Create { .. }) => {}
            _ => return Err(bad("the first step must be `create`".into())),
        }
        if self
            .steps
            .iter()
            .skip(1)
            .any(|s| matches!(s, Step::Create { .. }))
        {
            return Err(bad("only the first step may be `create`".into()));
        }
        let first_corrupt = self
            .steps
            .iter()
            .position(|s| matches!(s, Step::Corrupt(_)));
        if let Some(p) = first_corrupt {
            if self.steps[p..]
                .iter()
                .any(|s| !matches!(s, Step::Corrupt(_)))
            {
                return Err(bad("`corrupt` steps must all come at the end".into()));
            }
        }
        if let Some(p) = self
            .steps
            .iter()
            .position(|s| matches!(s, Step::Reencode(step::Reencoding::V1ManifestNames)))
        {
            if p + 1 != self.steps.len() {
                return Err(bad(
                    "`reencode` `v1_manifest_names` must be the last step (a later commit or \
                     damage would name its manifest by the V2 scheme)"
                        .into(),
                ));
            }
        }
        if self.writer_from.is_some() && self.expect_error.is_some() {
            return Err(bad(
                "`writer_from` hands a writer a readable version; a negative case has none to hand"
                    .into(),
            ));
        }
        match (&self.expect_error, first_corrupt) {
            (Some(e), Some(_)) => {
                if !["malformed", "invalid", "unsupported_feature"].contains(&e.class.as_str()) {
                    return Err(bad(format!(
                        "expect_error.class {:?} is not malformed, invalid or unsupported_feature",
                        e.class
                    )));
                }
            }
            (Some(_), None) => {
                return Err(bad("expect_error needs at least one `corrupt` step".into()));
            }
            (None, Some(_)) => return Err(bad("`corrupt` steps need an [expect_error]".into())),
            (None, None) => {}
        }
        for step in self.step_data_file_versions.keys() {
            if !step
                .parse::<usize>()
                .is_ok_and(|s| s < self.steps.len() && step == &s.to_string())
            {
                return Err(bad(format!(
                    "step_data_file_versions names step {step:?}, not a step position (0 to {})",
                    self.steps.len().saturating_sub(1)
                )));
            }
        }
        for (i, q) in self.queries.iter().enumerate() {
            if self.queries[..i].iter().any(|other| other.name == q.name) {
                return Err(bad(format!("query name {:?} is used twice", q.name)));
            }
            match (&q.predicate, &q.vector, q.k) {
                (Some(_), None, None) | (None, Some(_), Some(_)) => {}
                _ => {
                    return Err(bad(format!(
                        "query {:?} needs either `where`, or `vector` and `k`",
                        q.name
                    )));
                }
            }
            if q.at.is_empty() {
                return Err(bad(format!("query {:?} names no version in `at`", q.name)));
            }
        }
        Ok(())
    }
}
