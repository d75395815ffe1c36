//! A JSON document (the whole output) rendered as indented `key: value` lines, keys in their
//! original order: no quotes around keys and plain strings, no braces, arrays of scalars on one
//! line. Not JSON: unchanged.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A JSON value whose objects keep their key order (serde_json's `Map` sorts them here).
#[derive(Debug)]
enum Node {
    Scalar(Value),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Scalar(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Node::Object(entries))
    }
}

/// `output` rendered when it is one JSON object or array; otherwise borrowed unchanged.
pub fn render(output: &str) -> Cow<'_, str> {
    let t = output.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return Cow::Borrowed(output);
    }
    match serde_json::from_str::<Node>(t) {
        Ok(node) => {
            let mut out = String::with_capacity(output.len() / 2);
            write(&mut out, None, &node, 0, 0);
            Cow::Owned(out)
        }
        Err(_) => Cow::Borrowed(output),
    }
}

/// Objects of scalars this short go on one line, `{a: 1, b: x}`.
const FLOW_MAX_CHARS: usize = 100;

fn is_scalar_list(items: &[Node]) -> bool {
    items.iter().all(|i| matches!(i, Node::Scalar(_)))
}

/// `{a: 1, b: x}` for a small object of scalars (and lists of scalars); `None` otherwise.
fn flow(entries: &[(String, Node)]) -> Option<String> {
    let mut out = String::from("{");
    for (i, (k, v)) in entries.iter().enumerate() {
        match v {
            Node::Scalar(_) => {}
            Node::Array(items) if is_scalar_list(items) => {}
            _ => return None,
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(k);
        out.push_str(": ");
        scalar(&mut out, v);
        if out.len() > FLOW_MAX_CHARS {
            return None;
        }
    }
    out.push('}');
    Some(out)
}

/// Write `node` under `key` on a line indented by `depth`; its children go at `inner`.
fn write(out: &mut String, key: Option<&str>, node: &Node, depth: usize, inner: usize) {
    let start_line = |out: &mut String| {
        if !out.is_empty() {
            out.push('\n');
        }
        out.extend(std::iter::repeat_n(' ', depth));
        if let Some(k) = key {
            out.push_str(k);
            out.push(':');
        }
    };
    if let (Some(_), Node::Object(entries)) = (key, node) {
        if let Some(one_line) = flow(entries) {
            start_line(out);
            out.push(' ');
            out.push_str(&one_line);
            return;
        }
    }
    match node {
        Node::Object(entries) if !entries.is_empty() => {
            if key.is_some() {
                start_line(out);
            }
            for (k, child) in entries {
                write(out, Some(k), child, inner, inner + 1);
            }
        }
        Node::Array(items) if !is_scalar_list(items) => {
            if key.is_some() {
                start_line(out);
            }
            for item in items {
                item_line(out, item, inner);
            }
        }
        _ => {
            start_line(out);
            if key.is_some() {
                out.push(' ');
            }
            scalar(out, node);
        }
    }
}

/// One array item as `- …`: an object's first key shares the dash's line, the rest align with it.
fn item_line(out: &mut String, item: &Node, depth: usize) {
    match item {
        Node::Object(entries) if !entries.is_empty() && flow(entries).is_none() => {
            for (i, (k, child)) in entries.iter().enumerate() {
                if i == 0 {
                    write(out, Some(&format!("- {k}")), child, depth, depth + 3);
                } else {
                    write(out, Some(k), child, depth + 2, depth + 3);
                }
            }
        }
        Node::Array(items) if !is_scalar_list(items) => {
            write(out, Some("-"), item, depth, depth + 2);
        }
        _ => {
            if !out.is_empty() {
                out.push('\n');
            }
            out.extend(std::iter::repeat_n(' ', depth));
            out.push_str("- ");
            scalar(out, item);
        }
    }
}

fn scalar(out: &mut String, node: &Node) {
    match node {
        Node::Scalar(Value::String(s)) if !s.is_empty() && !s.contains('\n') => out.push_str(s),
        Node::Scalar(v) => out.push_str(&v.to_string()),
        Node::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                scalar(out, item);
            }
            out.push(']');
        }
        Node::Object(entries) => out.push_str(&flow(entries).unwrap_or_else(|| "{…}".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_become_key_value_lines_in_their_order() {
        let doc =
            "{\n  \"z\": 1,\n  \"b\": {\"c\": \"x y\", \"d\": [1, 2]},\n  \"e\": [{\"f\": true}],\n  \"g\": {}\n}\n";
        assert_eq!(render(doc), "z: 1\nb: {c: x y, d: [1, 2]}\ne:\n - {f: true}\ng: {}");
        let list = r#"[{"a": 1, "b": {"c": 2}, "d": [{"e": [3]}, {"e": {"f": {}}}]}, "s", [{"f": 4}]]"#;
        assert_eq!(render(list), "- a: 1\n  b: {c: 2}\n  d:\n   - {e: [3]}\n   - e:\n      f: {}\n- s\n-:\n  - {f: 4}");
        let long = format!(r#"{{"o": {{"a": "{}", "b": 1}}}}"#, "x".repeat(100));
        assert_eq!(render(&long), format!("o:\n a: {}\n b: 1", "x".repeat(100)));
    }

    #[test]
    fn non_json_is_borrowed_unchanged() {
        assert!(matches!(render("{ not json"), Cow::Borrowed("{ not json")));
        assert!(matches!(render("plain text"), Cow::Borrowed(_)));
        assert!(matches!(render("42"), Cow::Borrowed(_)));
    }
}
