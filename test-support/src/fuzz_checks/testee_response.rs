//! Target `testee_response`: bytes -> the runner's parsing of testee response lines.
//!
//! The runner reads one JSON line per request and parses it as a [`Response`], then the
//! `result` as the command's answer type, then every tagged cell with [`untag`]. Properties:
//! no panic on any line; every parsed response and answer serializes and parses back equal (free-form JSON
//! floats to 12 significant digits: serde_json's default float parsing is not exact);
//! a decoded cell re-tagged by its own kind decodes to an identical value.
//!

use std::fmt::Debug;

use lance_conformance_runner::expected::FragmentLineage;
use lance_conformance_runner::expected::tagged::{tag_scalar, untag};
use lance_conformance_runner::runner::protocol::{
    ExclusionResult, OpenResult, QueryAnswer, Response, ScanResult, StartResult,
};
use lance_reference::model::Value;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Lines read per input, and cells decoded per answer.
const MAX_LINES: usize = 8;
const MAX_CELLS: usize = 256;

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for line in text.lines().take(MAX_LINES) {
        let Ok(response) = serde_json::from_str::<Response>(line) else {
            continue;
        };
        assert!(response.members() <= 5);
        round_trip(&response);
        let Some(result) = response.result else {
            continue;
        };
        as_answer::<StartResult>(&result);
        as_answer::<OpenResult>(&result);
        as_answer::<ExclusionResult>(&result);
        as_answer::<QueryAnswer>(&result);
        as_answer::<FragmentLineage>(&result);
        if let Some(scan) = as_answer::<ScanResult>(&result) {
            let cells = scan.rows.iter().flat_map(|row| {
                [&row.row_id, &row.created_at, &row.last_updated_at]
                    .into_iter()
                    .chain(&row.values)
            });
            for tagged in cells.take(MAX_CELLS) {
                let Ok(value) = untag(tagged) else {
                    continue;
                };
                if matches!(value, Value::Struct(_) | Value::Null) {
                    // Re-tagging a struct needs its schema, and so does a NULL: it is spelled
                    // with its column's type, which a bare value no longer has.
                    continue;
                }
                let spelled = tag_scalar(&value);
                let again = untag(&spelled)
                    .unwrap_or_else(|e| panic!("{value:?} re-tagged does not decode: {e}"));
                // The spelling is a fixed point, and it keeps every value exactly except a
                // NaN's sign and payload, which the protocol does not carry: every NaN is
                // spelled `NaN`, and NaNs compare equal (spec/conformance.md §4).
                assert_eq!(
                    tag_scalar(&again),
                    spelled,
                    "{value:?} spelled twice differs"
                );
                assert!(
                    again.identical(&value) || has_nan(&value),
                    "{value:?} re-tagged decodes as {again:?}"
                );
            }
        }
    }
}

/// Whether `value` is or holds a NaN.
fn has_nan(value: &Value) -> bool {
    match value {
        Value::Float32(x) => x.is_nan(),
        Value::Float64(x) => x.is_nan(),
        Value::Vector(items) => items.iter().flatten().any(|x| x.is_nan()),
        _ => false,
    }
}

/// Parses `result` as `T` (as the runner does for a command's answer) and round-trips it.
fn as_answer<T: DeserializeOwned + Serialize + PartialEq + Debug>(
    result: &serde_json::Value,
) -> Option<T> {
    let answer = serde_json::from_value::<T>(result.clone()).ok()?;
    round_trip(&answer);
    Some(answer)
}

fn round_trip<T: DeserializeOwned + Serialize + PartialEq + Debug>(value: &T) {
    let Ok(text) = serde_json::to_string(value) else {
        return; // e.g. a map key serde_json cannot write: not produced by parsing
    };
    let back: T = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{value:?} serialized as {text} does not parse back: {e}"));
    // serde_json (without `float_roundtrip`) may move a float in free-form JSON by an ULP;
    // anything else must come back equal.
    let json = |v: &T| serde_json::to_value(v).map(|j| coarse_floats(&j)).ok();
    assert_eq!(
        json(&back),
        json(value),
        "{value:?} changed through serialize/parse"
    );
}

/// `json` with every non-integer number replaced by its value to 12 significant digits.
fn coarse_floats(json: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match json {
        J::Number(n) if n.is_f64() => J::String(format!("{:.11e}", n.as_f64().unwrap_or(0.0))),
        J::Array(items) => J::Array(items.iter().map(coarse_floats).collect()),
        J::Object(members) => J::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), coarse_floats(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}
