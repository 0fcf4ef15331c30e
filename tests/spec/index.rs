//! Keeps the normative markdown (`spec/overlays.md`, `spec/row-lineage.md`,
//! `spec/feature-flags.md`, `spec/dataset.md`) and the machine-readable index (`spec/requirements.toml`) in
//! agreement.
//!
//! Invariant: every requirement line `- **[ID]** LEVEL — ...` in the markdown has exactly one
//! index entry with the same level, clarification flag and file, whose anchor is the heading the
//! line sits under. Conversely, every index entry has such a line. Upper-case modal keywords
//! appear nowhere but as a requirement's level. Other suites annotate tests with these ids
//! (`// covers: ...`), and they can only rely on the index if it cannot drift from the text.

#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)] // test code: fail loudly

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Deserialize;

/// The markdown files that hold requirements, with the id prefix each one owns.
const MARKDOWN: [(&str, &str); 5] = [
    ("overlays.md", "OVL"),
    ("row-lineage.md", "LIN"),
    ("feature-flags.md", "FLG"),
    ("dataset.md", "DS"),
    ("indices.md", "IDX"),
];

/// The id prefixes, one per markdown file.
const PREFIXES: [&str; 5] = ["OVL", "LIN", "FLG", "DS", "IDX"];

/// Requirement levels, longest first so that `MUST NOT` is not read as `MUST`.
const LEVELS: [&str; 5] = ["MUST NOT", "MUST", "SHOULD NOT", "SHOULD", "MAY"];

/// Upper-case keywords that make a sentence normative.
const MODAL_KEYWORDS: [&str; 5] = ["MUST", "SHOULD", "MAY", "SHALL", "REQUIRED"];

const CLARIFICATION_MARK: &str = "*(clarification)*";
const REASON_MARK: &str = "**Reason:**";
const LEVEL_SEPARATOR: &str = " — ";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    requirement: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    level: String,
    section: String,
    summary: String,
    clarification: bool,
}

/// One requirement line as found in a markdown file.
#[derive(Debug, Clone)]
struct Requirement {
    id: String,
    level: String,
    file: String,
    line: usize,
    /// Slug of the closest heading above the line.
    anchor: String,
    clarification: bool,
    /// The text after the level.
    body: String,
}

/// A parsed markdown file.
#[derive(Debug, Default)]
struct Doc {
    file: String,
    /// Heading slugs, disambiguated the way GitHub does (`x`, `x-1`, `x-2`).
    anchors: BTreeSet<String>,
    requirements: Vec<Requirement>,
    /// Every problem found while parsing (malformed lines, stray modal keywords, ...).
    problems: Vec<String>,
    /// Every `[XXX-...]` cross reference: (line, id).
    references: Vec<(usize, String)>,
}

/// GitHub's heading slug: lowercase, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `^(OVL|LIN|FLG|DS)-[A-Z]+-[0-9]+$`
fn id_is_well_formed(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    let [prefix, area, number] = parts.as_slice() else {
        return false;
    };
    PREFIXES.contains(prefix)
        && !area.is_empty()
        && area.chars().all(|c| c.is_ascii_uppercase())
        && !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit())
}

/// Upper-case modal keywords standing as whole words in `text`.
fn modal_keywords(text: &str) -> Vec<&'static str> {
    let words = text.split(|c: char| !c.is_alphanumeric());
    let mut found = Vec::new();
    for word in words {
        if let Some(k) = MODAL_KEYWORDS.iter().find(|k| **k == word) {
            found.push(*k);
        }
    }
    found
}

/// Every bracketed `[OVL-...]`, `[LIN-...]`, `[FLG-...]` or `[DS-...]` in `line`.
fn bracketed_ids(line: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else { break };
        let inner = &after[..close];
        if PREFIXES
            .iter()
            .any(|p| inner.strip_prefix(p).is_some_and(|r| r.starts_with('-')))
        {
            ids.push(inner.to_string());
        }
        rest = &after[close..];
    }
    ids
}

/// Parses a requirement line `- **[ID]** LEVEL — body`; `Err` explains what is malformed.
fn parse_requirement_line(line: &str) -> Result<(String, String, String), String> {
    let rest = line
        .trim_start()
        .strip_prefix("- **[")
        .ok_or("a requirement line starts with `- **[`")?;
    let (id, rest) = rest
        .split_once("]** ")
        .ok_or("the id is closed by `]** `")?;
    let level = LEVELS
        .iter()
        .find(|l| rest.starts_with(&format!("{l}{LEVEL_SEPARATOR}")))
        .ok_or_else(|| format!("`{id}`: the level is one of {LEVELS:?} followed by ` — `"))?;
    let body = &rest[level.len() + LEVEL_SEPARATOR.len()..];
    Ok((id.to_string(), level.to_string(), body.to_string()))
}

/// Parses one markdown text.
fn parse_doc(file: &str, prefix: &str, text: &str) -> Doc {
    let mut doc = Doc {
        file: file.to_string(),
        ..Doc::default()
    };
    let mut slug_counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchor = String::new();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            let heading = heading.trim_start_matches('#');
            if heading.starts_with(' ') {
                let base = slug(heading);
                let seen = slug_counts.entry(base.clone()).or_insert(0);
                anchor = if *seen == 0 {
                    base.clone()
                } else {
                    format!("{base}-{seen}")
                };
                *seen += 1;
                doc.anchors.insert(anchor.clone());
                continue;
            }
        }
        for id in bracketed_ids(line) {
            doc.references.push((n, id));
        }
        let keywords = modal_keywords(line);
        if !line.contains("**[") {
            if !keywords.is_empty() {
                doc.problems.push(format!(
                    "{file}:{n}: modal keyword {keywords:?} outside a requirement line"
                ));
            }
            if line.contains(CLARIFICATION_MARK) || line.contains(REASON_MARK) {
                doc.problems.push(format!(
                    "{file}:{n}: clarification mark outside a requirement line"
                ));
            }
            continue;
        }
        let (id, level, body) = match parse_requirement_line(line) {
            Ok(parsed) => parsed,
            Err(why) => {
                doc.problems
                    .push(format!("{file}:{n}: malformed requirement line: {why}"));
                continue;
            }
        };
        if !id_is_well_formed(&id) {
            doc.problems.push(format!(
                "{file}:{n}: id `{id}` does not match (OVL|LIN|FLG|DS)-[A-Z]+-[0-9]+"
            ));
        } else if !id.starts_with(&format!("{prefix}-")) {
            doc.problems.push(format!(
                "{file}:{n}: id `{id}` belongs in a `{prefix}-` file"
            ));
        }
        let stray = modal_keywords(&body);
        if !stray.is_empty() {
            doc.problems.push(format!(
                "{file}:{n}: `{id}` has modal keywords {stray:?} besides its level {level}"
            ));
        }
        let clarification = body.contains(CLARIFICATION_MARK);
        let has_reason = body
            .split_once(CLARIFICATION_MARK)
            .is_some_and(|(_, after)| after.contains(REASON_MARK));
        if clarification != has_reason || (!clarification && body.contains(REASON_MARK)) {
            doc.problems.push(format!(
                "{file}:{n}: `{id}`: a clarification mark and a following **Reason:** come together"
            ));
        }
        if anchor.is_empty() {
            doc.problems
                .push(format!("{file}:{n}: `{id}` sits above every heading"));
        }
        doc.requirements.push(Requirement {
            id,
            level,
            file: file.to_string(),
            line: n,
            anchor: anchor.clone(),
            clarification,
            body,
        });
    }
    if in_fence {
        doc.problems.push(format!("{file}: unclosed code fence"));
    }
    doc
}

fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("spec")
}

fn load_docs() -> Vec<Doc> {
    MARKDOWN
        .iter()
        .map(|(file, prefix)| {
            let text = std::fs::read_to_string(spec_dir().join(file))
                .unwrap_or_else(|e| panic!("reading spec/{file}: {e}"));
            parse_doc(file, prefix, &text)
        })
        .collect()
}

fn load_index() -> Index {
    let text = std::fs::read_to_string(spec_dir().join("requirements.toml"))
        .expect("reading spec/requirements.toml");
    toml::from_str(&text).expect("spec/requirements.toml parses as [[requirement]] tables")
}

fn all_requirements(docs: &[Doc]) -> Vec<Requirement> {
    docs.iter()
        .flat_map(|d| d.requirements.iter().cloned())
        .collect()
}

fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}:\n  {}", problems.join("\n  "));
}

#[test]
fn every_requirement_line_is_well_formed_and_modal_keywords_appear_only_as_levels() {
    // Covers the line syntax, id shape, one level per line, stray keywords and clarification
    // marks; see `parse_doc`.
    let docs = load_docs();
    let problems: Vec<String> = docs.iter().flat_map(|d| d.problems.clone()).collect();
    assert_no_problems("malformed spec markdown", &problems);
    for doc in &docs {
        assert!(
            !doc.requirements.is_empty(),
            "{} holds no requirement lines",
            doc.file
        );
    }
}

#[test]
fn requirement_ids_are_unique_across_markdown_and_index() {
    let docs = load_docs();
    let mut problems = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for r in all_requirements(&docs) {
        let here = format!("{}:{}", r.file, r.line);
        if let Some(first) = seen.insert(r.id.clone(), here.clone()) {
            problems.push(format!(
                "`{}` is defined at {first} and again at {here}",
                r.id
            ));
        }
    }
    let mut seen_index = BTreeSet::new();
    for e in &load_index().requirement {
        if !seen_index.insert(e.id.clone()) {
            problems.push(format!("requirements.toml lists `{}` twice", e.id));
        }
        if !id_is_well_formed(&e.id) {
            problems.push(format!("requirements.toml: id `{}` is malformed", e.id));
        }
    }
    assert_no_problems("duplicate or malformed ids", &problems);
}

#[test]
fn markdown_and_index_list_the_same_ids() {
    let in_markdown: BTreeSet<String> = all_requirements(&load_docs())
        .into_iter()
        .map(|r| r.id)
        .collect();
    let in_index: BTreeSet<String> = load_index().requirement.into_iter().map(|e| e.id).collect();
    let mut problems = Vec::new();
    for id in in_markdown.difference(&in_index) {
        problems.push(format!(
            "`{id}` is in the markdown but not in requirements.toml"
        ));
    }
    for id in in_index.difference(&in_markdown) {
        problems.push(format!(
            "`{id}` is in requirements.toml but in no markdown file"
        ));
    }
    assert_no_problems("markdown and index disagree on the id set", &problems);
}

#[test]
fn index_entries_agree_with_their_requirement_lines() {
    let docs = load_docs();
    let by_id: BTreeMap<String, Requirement> = all_requirements(&docs)
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect();
    let mut problems = Vec::new();
    for e in &load_index().requirement {
        let Some(r) = by_id.get(&e.id) else { continue }; // reported by the id-set test
        let at = format!("`{}` ({}:{})", e.id, r.file, r.line);
        if e.level != r.level {
            problems.push(format!(
                "{at}: index level {} but markdown {}",
                e.level, r.level
            ));
        }
        if e.clarification != r.clarification {
            problems.push(format!(
                "{at}: index clarification = {} but markdown {}",
                e.clarification,
                if r.clarification {
                    "marks it"
                } else {
                    "does not mark it"
                }
            ));
        }
        let Some((file, anchor)) = e.section.split_once('#') else {
            problems.push(format!(
                "{at}: section `{}` is not `file#anchor`",
                e.section
            ));
            continue;
        };
        if file != r.file {
            problems.push(format!(
                "{at}: index section file `{file}` but the line is elsewhere"
            ));
        }
        if anchor != r.anchor {
            problems.push(format!(
                "{at}: index anchor `#{anchor}` but the line sits under `#{}`",
                r.anchor
            ));
        }
        if e.summary.trim().is_empty() || e.summary.contains('\n') {
            problems.push(format!("{at}: the summary is one non-empty line"));
        }
    }
    assert_no_problems("index entries disagree with the markdown", &problems);
}

#[test]
fn every_index_section_names_an_existing_heading_of_its_file() {
    let docs = load_docs();
    let anchors: BTreeMap<&str, &BTreeSet<String>> =
        docs.iter().map(|d| (d.file.as_str(), &d.anchors)).collect();
    let mut problems = Vec::new();
    for e in &load_index().requirement {
        match e.section.split_once('#') {
            Some((file, anchor)) => match anchors.get(file) {
                Some(set) if set.contains(anchor) => {}
                Some(_) => problems.push(format!("`{}`: no heading `#{anchor}` in {file}", e.id)),
                None => problems.push(format!("`{}`: `{file}` is not a spec file", e.id)),
            },
            None => problems.push(format!("`{}`: section `{}` lacks `#`", e.id, e.section)),
        }
    }
    assert_no_problems("dangling section anchors", &problems);
}

#[test]
fn cross_references_name_existing_requirements() {
    let docs = load_docs();
    let ids: BTreeSet<String> = all_requirements(&docs).into_iter().map(|r| r.id).collect();
    let mut problems = Vec::new();
    for doc in &docs {
        for (line, id) in &doc.references {
            if !ids.contains(id) {
                problems.push(format!(
                    "{}:{line}: `[{id}]` names no requirement",
                    doc.file
                ));
            }
        }
    }
    assert_no_problems("dangling cross references", &problems);
}

#[test]
fn every_spec_file_has_a_differences_section_free_of_requirements() {
    let docs = load_docs();
    for doc in &docs {
        assert!(
            doc.anchors.contains("differences-from-lance-1402"),
            "{} lacks a `Differences from Lance 14.0.2` section",
            doc.file
        );
        for r in &doc.requirements {
            assert_ne!(
                r.anchor, "differences-from-lance-1402",
                "{}:{}: `{}` sits among the Lance observations",
                r.file, r.line, r.id
            );
        }
    }
}

// The checker itself: each check above is only worth something if it can fail.

const SAMPLE: &str = "# Title\n\n## Part one\n\nProse.\n\n\
- **[OVL-PART-1]** MUST — A reader does a thing.\n\
- **[OVL-PART-2]** SHOULD NOT — A writer does it. *(clarification)* **Reason:** because.\n";

#[test]
fn checker_accepts_a_well_formed_sample() {
    let doc = parse_doc("s.md", "OVL", SAMPLE);
    assert_no_problems("sample", &doc.problems);
    let got: Vec<(&str, &str, &str, bool)> = doc
        .requirements
        .iter()
        .map(|r| {
            (
                r.id.as_str(),
                r.level.as_str(),
                r.anchor.as_str(),
                r.clarification,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("OVL-PART-1", "MUST", "part-one", false),
            ("OVL-PART-2", "SHOULD NOT", "part-one", true)
        ]
    );
    assert_eq!(
        doc.requirements[1].body,
        "A writer does it. *(clarification)* **Reason:** because."
    );
}

#[test]
fn checker_flags_a_modal_keyword_in_prose() {
    let doc = parse_doc(
        "s.md",
        "OVL",
        &format!("{SAMPLE}\nReaders MUST also do this.\n"),
    );
    assert_eq!(doc.problems.len(), 1, "{:?}", doc.problems);
    assert!(doc.problems[0].contains("outside a requirement line"));
}

#[test]
fn checker_flags_a_second_level_inside_a_requirement() {
    let doc = parse_doc(
        "s.md",
        "OVL",
        "## A\n- **[OVL-A-1]** MUST — A reader does x and MAY do y.\n",
    );
    assert_eq!(doc.problems.len(), 1, "{:?}", doc.problems);
    assert!(doc.problems[0].contains("besides its level"));
}

#[test]
fn checker_flags_malformed_ids_levels_and_prefixes() {
    let cases = [
        ("- **[OVL-a-1]** MUST — x", "does not match"),
        ("- **[OVL-A-x]** MUST — x", "does not match"),
        ("- **[XYZ-A-1]** MUST — x", "does not match"),
        ("- **[LIN-A-1]** MUST — x", "belongs in a `OVL-` file"),
        ("- **[DS-A-1]** MUST — x", "belongs in a `OVL-` file"),
        ("- **[DSX-A-1]** MUST — x", "does not match"),
        ("- **[D-A-1]** MUST — x", "does not match"),
        ("- **[OVL-A-1]** MUSTN'T — x", "the level is one of"),
        ("- **[OVL-A-1]** MUST - x", "the level is one of"),
        ("* **[OVL-A-1]** MUST — x", "starts with"),
    ];
    for (line, expected) in cases {
        let doc = parse_doc("s.md", "OVL", &format!("## A\n{line}\n"));
        assert!(
            doc.problems.iter().any(|p| p.contains(expected)),
            "{line:?}: expected a problem containing {expected:?}, got {:?}",
            doc.problems
        );
    }
}

#[test]
fn checker_flags_a_clarification_without_reason() {
    let doc = parse_doc(
        "s.md",
        "OVL",
        "## A\n- **[OVL-A-1]** MUST — x. *(clarification)*\n",
    );
    assert!(
        doc.problems.iter().any(|p| p.contains("Reason")),
        "{:?}",
        doc.problems
    );
}

#[test]
fn checker_slugs_headings_like_github_and_disambiguates_repeats() {
    let doc = parse_doc(
        "s.md",
        "OVL",
        "# T\n## Compaction: overlay to base\n## Differences from Lance 14.0.2\n## Notes\n## Notes\n",
    );
    let expected: BTreeSet<String> = [
        "t",
        "compaction-overlay-to-base",
        "differences-from-lance-1402",
        "notes",
        "notes-1",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(doc.anchors, expected);
}

#[test]
fn checker_ignores_keywords_inside_code_fences() {
    let doc = parse_doc("s.md", "OVL", "## A\n```text\nMUST [OVL-Q-9]\n```\n");
    assert_no_problems("fenced sample", &doc.problems);
    assert!(doc.references.is_empty());
}

#[test]
fn checker_collects_cross_references_of_every_prefix_only() {
    let ids = bracketed_ids("see [DS-PATH-1], [FLG-READ-2], [DSL-X-1], [D-X-1] and [OVL-PREC-1]");
    assert_eq!(ids, ["DS-PATH-1", "FLG-READ-2", "OVL-PREC-1"]);
}
