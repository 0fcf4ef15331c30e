//! The testee protocol's JSON Schemas (`spec/schemas/protocol/*.json`) describe exactly what is
//! exchanged: every request the runner sends and every response the reference testee gives
//! during a full run validates, and malformed messages do not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("spec/schemas/protocol")
}

/// A validator for the JSON Schema keywords these schemas use; any other keyword is an error,
/// so a schema cannot rely on a keyword this check ignores.
pub(crate) struct Schemas {
    files: BTreeMap<String, Value>,
}

impl Schemas {
    fn load() -> Schemas {
        Schemas::load_dir(&schema_dir())
    }

    pub(crate) fn load_dir(dir: &std::path::Path) -> Schemas {
        let mut files = BTreeMap::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            files.insert(name, serde_json::from_str(&text).unwrap());
        }
        Schemas { files }
    }

    fn resolve(&self, file: &str, reference: &str) -> (String, &Value) {
        let (target, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let file = if target.is_empty() { file } else { target };
        let doc = self
            .files
            .get(file)
            .unwrap_or_else(|| panic!("$ref to missing file {file}"));
        let node = doc
            .pointer(pointer)
            .unwrap_or_else(|| panic!("$ref {reference} does not resolve"));
        (file.to_string(), node)
    }

    pub(crate) fn check(&self, name: &str, value: &Value) -> Result<(), String> {
        let schema = &self.files[name];
        self.at(name, schema, value, "")
    }

    fn at(&self, file: &str, schema: &Value, v: &Value, path: &str) -> Result<(), String> {
        let Some(map) = schema.as_object() else {
            return Ok(());
        };
        for (key, rule) in map {
            let bad = |m: String| Err(format!("{file} at {path:?}: {m}"));
            match key.as_str() {
                "$schema" | "$id" | "title" | "description" | "$defs" => {}
                "$ref" => {
                    let (f, node) = self.resolve(file, rule.as_str().unwrap());
                    self.at(&f, node, v, path)?;
                }
                "type" => {
                    let ok = match rule.as_str().unwrap() {
                        "object" => v.is_object(),
                        "array" => v.is_array(),
                        "string" => v.is_string(),
                        "integer" => v.is_u64() || v.is_i64(),
                        "number" => v.is_number(),
                        "boolean" => v.is_boolean(),
                        "null" => v.is_null(),
                        other => panic!("unknown type {other}"),
                    };
                    if !ok {
                        return bad(format!("{v} is not of type {rule}"));
                    }
                }
                "const" if v != rule => return bad(format!("{v} is not {rule}")),
                "const" => {}
                "enum" if !rule.as_array().unwrap().contains(v) => {
                    return bad(format!("{v} is not one of {rule}"));
                }
                "enum" => {}
                "minimum" => {
                    if v.as_f64().is_some_and(|x| x < rule.as_f64().unwrap()) {
                        return bad(format!("{v} < {rule}"));
                    }
                }
                "required" => {
                    for r in rule.as_array().unwrap() {
                        if v.is_object() && v.get(r.as_str().unwrap()).is_none() {
                            return bad(format!("missing {r}"));
                        }
                    }
                }
                "properties" => {
                    if let Some(o) = v.as_object() {
                        for (k, sub) in rule.as_object().unwrap() {
                            if let Some(x) = o.get(k) {
                                self.at(file, sub, x, &format!("{path}/{k}"))?;
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    let known = map.get("properties").and_then(Value::as_object);
                    if let Some(o) = v.as_object() {
                        for (k, x) in o {
                            if known.is_some_and(|p| p.contains_key(k)) {
                                continue;
                            }
                            match rule {
                                Value::Bool(false) => return bad(format!("unexpected member {k}")),
                                Value::Bool(true) => {}
                                sub => self.at(file, sub, x, &format!("{path}/{k}"))?,
                            }
                        }
                    }
                }
                "items" => {
                    if let Some(a) = v.as_array() {
                        for (i, x) in a.iter().enumerate() {
                            self.at(file, rule, x, &format!("{path}/{i}"))?;
                        }
                    }
                }
                "uniqueItems" => {
                    if let Some(a) = v.as_array() {
                        for (i, x) in a.iter().enumerate() {
                            if a[..i].contains(x) {
                                return bad(format!("duplicate item {x}"));
                            }
                        }
                    }
                }
                "oneOf" => {
                    let errors: Vec<String> = rule
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|s| self.at(file, s, v, path).err())
                        .collect();
                    let matched = rule.as_array().unwrap().len() - errors.len();
                    if matched != 1 {
                        return bad(format!("matches {matched} of oneOf: {errors:?}"));
                    }
                }
                other => panic!("{file}: keyword {other} is not supported by this check"),
            }
        }
        Ok(())
    }
}

#[test]
fn every_reference_resolves_and_every_command_has_its_schemas() {
    let s = Schemas::load();
    // Every command has a request schema; every command but `stop` has a result schema.
    for cmd in [
        "start",
        "open",
        "scan",
        "lineage",
        "exclusion",
        "query",
        "write",
        "prepare",
        "commit",
        "stop",
    ] {
        assert!(
            s.files.contains_key(&format!("request-{cmd}.json")),
            "{cmd}"
        );
        if cmd != "stop" {
            assert!(s.files.contains_key(&format!("result-{cmd}.json")), "{cmd}");
        }
    }
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    for (name, doc) in &s.files {
        let mut found = Vec::new();
        refs(doc, &mut found);
        for r in found {
            s.resolve(name, &r);
        }
    }
}

/// Runs `run <args> <flag> "<recording testee>"` and checks every message exchanged against the
/// schemas; returns how often each `cmd/member` occurred.
fn recorded_run(flag: &str, args: &[&str]) -> BTreeMap<String, usize> {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bin = env!("CARGO_BIN_EXE_lance-conformance");
    let cmd = format!(
        "python3 {} record - {} {bin} testee",
        root.join("tests/testees/misbehave.py").display(),
        pidfile.display()
    );
    let out = Command::new(bin)
        .arg("run")
        .args(args)
        .args([flag, &cmd])
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let log = std::fs::read_to_string(format!("{}.log", pidfile.display())).unwrap();
    let s = Schemas::load();
    let mut pending = None;
    let mut seen = BTreeMap::<String, usize>::new();
    for line in log.lines() {
        let (dir, text) = line.split_at(2);
        let v: Value = serde_json::from_str(text).unwrap();
        if dir == "> " {
            s.check("request.json", &v).unwrap();
            let cmd = v["cmd"].as_str().unwrap().to_string();
            s.check(&format!("request-{cmd}.json"), &v)
                .unwrap_or_else(|e| panic!("{cmd}: {e}\n{v}"));
            pending = Some(cmd);
        } else {
            s.check("response.json", &v).unwrap();
            let cmd = pending.take().unwrap();
            if let (Some(result), true) = (v.get("result"), cmd != "stop") {
                s.check(&format!("result-{cmd}.json"), result)
                    .unwrap_or_else(|e| panic!("{cmd}: {e}"));
            }
            let kind = v.as_object().unwrap().keys().find(|k| *k != "seq").unwrap();
            *seen.entry(format!("{cmd}/{kind}")).or_default() += 1;
        }
    }
    seen
}

#[test]
fn a_full_run_exchanges_only_messages_the_schemas_allow() {
    let seen = recorded_run("--reader-cmd", &[]);
    // The run exercised every command, and refusals as well as results.
    for key in [
        "start/result",
        "open/result",
        "open/error",
        "scan/result",
        "lineage/result",
        "exclusion/result",
        "query/result",
        "stop/result",
    ] {
        assert!(seen.contains_key(key), "no {key} in {seen:?}");
    }
}

#[test]
fn a_writer_run_exchanges_only_messages_the_schemas_allow() {
    // Cases with a retried commit, a refused merge, a delete by predicate, sparse overlays,
    // float cells and an index build: every writer command, results and refusals.
    let seen = recorded_run(
        "--writer-cmd",
        &[
            "--case",
            "retry-overlay",
            "--case",
            "retry-append",
            "--case",
            "merge-refuses-non-contiguous",
            "--case",
            "rewrite-overlays-deletions",
            "--case",
            "sparse-per-field",
            "--case",
            "vector-topk-rescore-ties",
        ],
    );
    for key in [
        "start/result",
        "write/result",
        "write/error",
        "prepare/result",
        "commit/result",
        "stop/result",
    ] {
        assert!(seen.contains_key(key), "no {key} in {seen:?}");
    }
}

#[test]
fn malformed_messages_do_not_validate() {
    let s = Schemas::load();
    let ok = serde_json::json!({"seq": 3, "error": {"class": "invalid", "message": "x"}});
    s.check("response.json", &ok).unwrap();
    for bad in [
        serde_json::json!({"seq": 3, "result": {}, "error": {"class": "invalid"}}),
        serde_json::json!({"seq": 3}),
        serde_json::json!({"seq": -1, "result": {}}),
        serde_json::json!({"seq": 3, "error": {"class": "wrong"}}),
        serde_json::json!({"result": {}}),
    ] {
        assert!(s.check("response.json", &bad).is_err(), "{bad}");
    }
    let partial = serde_json::json!({"kind": "scalar", "final": [], "candidates": []});
    assert!(s.check("result-query.json", &partial).is_err());
    let req = serde_json::json!({"seq": 1, "cmd": "scan", "dataset": "/d", "version": 0});
    assert!(s.check("request.json", &req).is_err());
}

#[test]
fn run_reports_validate_against_the_report_schema() {
    // The report `run --format json` writes is what `report` reads: schema-checked, with a
    // failing and a refusal-profile run so that every optional member occurs.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let schemas = Schemas::load_dir(&root.join("spec/schemas"));
    let bin = env!("CARGO_BIN_EXE_lance-conformance");
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known.txt");
    std::fs::write(
        &known,
        "null-cover  wrong-value  # on purpose\nno-such-case  # gone\n",
    )
    .unwrap();
    let wrong = format!(
        "python3 {} wrong null-cover {} {bin} testee",
        root.join("tests/testees/misbehave.py").display(),
        dir.path().join("pids").display()
    );
    let limited = format!("{bin} testee --capabilities stable-row-ids,deletions,nested-fields");
    for (cmd, label) in [(wrong.as_str(), "wrong"), (limited.as_str(), "limited")] {
        let out = Command::new(bin)
            .args([
                "run",
                "--reader-cmd",
                cmd,
                "--format",
                "json",
                "--label",
                label,
            ])
            .args(["--known-failures", &known.display().to_string()])
            .current_dir(&root)
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        schemas
            .check("report.schema.json", &report)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(report["label"], label);
    }
    let bad = serde_json::json!({"implementation": {"name": "x", "version": "1"}, "capabilities": [],
        "cases": [{"id": "a", "area": "b", "level": "MUST", "requirements": [], "tags": [],
                   "verdict": "passed", "outcome": "passed", "checks": []}],
        "summary": {}, "known_failures": {"remove": [], "add": []}});
    assert!(schemas.check("report.schema.json", &bad).is_err());
}
