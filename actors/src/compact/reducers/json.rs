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
            write(&mut out, None, &node, 0);
            Cow::Owned(out)
        }
        Err(_) => Cow::Borrowed(output),
    }
}

fn is_scalar_list(items: &[Node]) -> bool {
    items.iter().all(|i| matches!(i, Node::Scalar(_)))
}

fn write(out: &mut String, key: Option<&str>, node: &Node, depth: usize) {
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
    let inner = depth + usize::from(key.is_some());
    match node {
        Node::Object(entries) if !entries.is_empty() => {
            if key.is_some() {
                start_line(out);
            }
            for (k, child) in entries {
                write(out, Some(k), child, inner);
            }
        }
        Node::Array(items) if !is_scalar_list(items) => {
            if key.is_some() {
                start_line(out);
            }
            for item in items {
                write(out, Some("-"), item, inner);
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
        Node::Object(_) => out.push_str("{}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_become_key_value_lines_in_their_order() {
        let doc =
            "{\n  \"z\": 1,\n  \"b\": {\"c\": \"x y\", \"d\": [1, 2]},\n  \"e\": [{\"f\": true}],\n  \"g\": {}\n}\n";
        assert_eq!(render(doc), "z: 1\nb:\n c: x y\n d: [1, 2]\ne:\n -:\n  f: true\ng: {}");
    }

    #[test]
    fn non_json_is_borrowed_unchanged() {
        assert!(matches!(render("{ not json"), Cow::Borrowed("{ not json")));
        assert!(matches!(render("plain text"), Cow::Borrowed(_)));
        assert!(matches!(render("42"), Cow::Borrowed(_)));
    }
}
