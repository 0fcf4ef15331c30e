//! The textual layout of expected-results JSON: 2-space indentation, with any object or array
//! whose one-line form fits in [`WIDTH`] columns kept on one line.
//!
//! Invariant: layout never changes content or key order: the input is serde_json's compact
//! output (struct fields in declaration order, map keys sorted), only whitespace is added, and
//! the result is a pure function of that input ending in exactly one newline. So a tagged
//! value reads `{"type": "int64", "value": "-3"}` on one line, and a file still diffs line by
//! line.

/// Maximum line width (indentation included) for a one-line object or array.
pub const WIDTH: usize = 100;

/// A parsed compact JSON value; scalars and keys keep their exact source text.
enum Node {
    Scalar(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

/// Lays out compact JSON text (as produced by `serde_json::to_string`); the top-level object or
/// array is always expanded.
pub fn layout(compact: &str) -> String {
    let bytes = compact.as_bytes();
    let mut pos = 0;
    let node = parse(bytes, &mut pos);
    let mut out = String::new();
    // The top level is always expanded, so every file starts the same way.
    write_at(&node, 0, usize::MAX / 2, &mut out);
    out.push('\n');
    out
}

fn parse(b: &[u8], pos: &mut usize) -> Node {
    match b.get(*pos) {
        Some(b'[') => {
            *pos += 1;
            let mut items = Vec::new();
            while let Some(&c) = b.get(*pos) {
                match c {
                    b']' => {
                        *pos += 1;
                        break;
                    }
                    b',' => *pos += 1,
                    _ => items.push(parse(b, pos)),
                }
            }
            Node::Array(items)
        }
        Some(b'{') => {
            *pos += 1;
            let mut entries = Vec::new();
            while let Some(&c) = b.get(*pos) {
                match c {
                    b'}' => {
                        *pos += 1;
                        break;
                    }
                    b',' => *pos += 1,
                    _ => {
                        let key = string(b, pos);
                        *pos += 1; // ':'
                        entries.push((key, parse(b, pos)));
                    }
                }
            }
            Node::Object(entries)
        }
        Some(b'"') => Node::Scalar(string(b, pos)),
        _ => {
            let start = *pos;
            while b
                .get(*pos)
                .is_some_and(|c| !matches!(c, b',' | b']' | b'}'))
            {
                *pos += 1;
            }
            Node::Scalar(String::from_utf8_lossy(&b[start..*pos]).into_owned())
        }
    }
}

/// A JSON string starting at `pos` (a `"`), with its quotes and escapes as written.
fn string(b: &[u8], pos: &mut usize) -> String {
    let start = *pos;
    *pos += 1;
    while let Some(&c) = b.get(*pos) {
        *pos += 1;
        match c {
            b'\\' => *pos += 1,
            b'"' => break,
            _ => {}
        }
    }
    String::from_utf8_lossy(&b[start..(*pos).min(b.len())]).into_owned()
}

fn one_line(node: &Node) -> String {
    match node {
        Node::Scalar(s) => s.clone(),
        Node::Array(items) => format!(
            "[{}]",
            items.iter().map(one_line).collect::<Vec<_>>().join(", ")
        ),
        Node::Object(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{k}: {}", one_line(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Writes `node` at nesting `indent` when its first character lands at `column`.
fn write_at(node: &Node, indent: usize, column: usize, out: &mut String) {
    let flat = one_line(node);
    if matches!(node, Node::Scalar(_)) || column.saturating_add(flat.len()) <= WIDTH {
        out.push_str(&flat);
        return;
    }
    let pad = " ".repeat(indent + 2);
    match node {
        Node::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad);
                write_at(item, indent + 2, indent + 2, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        Node::Object(entries) => {
            out.push_str("{\n");
            for (i, (k, v)) in entries.iter().enumerate() {
                out.push_str(&pad);
                out.push_str(k);
                out.push_str(": ");
                write_at(v, indent + 2, indent + 2 + k.len() + 2, out);
                out.push_str(if i + 1 < entries.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push('}');
        }
        Node::Scalar(s) => out.push_str(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_stay_on_one_line_and_content_is_unchanged() {
        let compact = r#"{"b":{"type":"int64","value":"-3"},"a":["x\"y",[],{}],"long":["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"]}"#;
        let text = layout(compact);
        assert!(
            text.contains(r#"  "b": {"type": "int64", "value": "-3"},"#),
            "{text}"
        );
        assert!(text.contains(r#"  "a": ["x\"y", [], {}],"#), "{text}");
        assert!(text.contains("\n    \"aaaa"), "{text}");
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
        let a: serde_json::Value = serde_json::from_str(compact).unwrap();
        let b: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(a, b);
        let keys: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().split(':').next())
            .collect();
        assert_eq!(&keys[1..4], ["\"b\"", "\"a\"", "\"long\""]);
    }
}
