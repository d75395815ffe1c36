//! The top-level fields of a call's recorded args, found once in the JSON text: where each key's
//! value lies, so that a stage reading a few fields (a lifecycle label, a card's summary, the
//! display arguments) parses those and nothing else. A shell call's args carry twenty-odd fields
//! and Cursor's parse of the command line; building all of it as a tree cost more than the rest
//! of the card (measured: 2.7 µs a shell call for the tree and its typed model, 0.8 µs for this
//! index).
//!
//! Read as a tree reads them: a key given twice counts with its last value, keys are compared
//! unescaped, and text that is not an object has no fields. Unlike a tree, one field's number out
//! of `f64` range leaves the other fields readable.

use std::borrow::Cow;
use std::ops::Range;

use serde::de::DeserializeOwned;

use crate::json_text::string_end_in_json;

/// Where the fields of one JSON object lie in its text.
#[derive(Debug, Default)]
pub struct FieldIndex {
    object: bool,
    fields: Vec<Field>,
}

#[derive(Debug)]
struct Field {
    key: Key,
    /// The value's JSON text, as a range of the object's text.
    value: Range<usize>,
}

#[derive(Debug)]
enum Key {
    /// Written without escapes: this range of the text (between the quotes).
    Span(Range<usize>),
    /// Written with escapes: the key unescaped.
    Unescaped(Box<str>),
}

impl FieldIndex {
    /// The index of `text` (valid JSON, as a recorded `RawValue` is); no fields unless it is an
    /// object. Text that is not valid JSON has no fields either, whatever it holds.
    pub fn of(text: &str) -> FieldIndex {
        Scan { text: text.as_bytes(), at: 0 }.object().unwrap_or_default()
    }

    /// Whether the text is an object.
    pub fn is_object(&self) -> bool {
        self.object
    }

    /// The JSON text of `key`'s value in `text` (the text this index was made of).
    pub fn raw<'t>(&self, text: &'t str, key: &str) -> Option<&'t str> {
        let field = self.fields.iter().rev().find(|f| match &f.key {
            Key::Span(r) => text.get(r.clone()) == Some(key),
            Key::Unescaped(k) => &**k == key,
        })?;
        text.get(field.value.clone())
    }
}

/// The text of a JSON string value, unescaped (borrowed when it has no escapes); `None` for any
/// other value.
pub fn raw_str(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// A value read as `T`; `None` when it is not one.
pub fn raw_as<T: DeserializeOwned>(raw: &str) -> Option<T> {
    serde_json::from_str(raw).ok()
}

/// A scan of one JSON object's top level: where each key and value lies. Strings are skipped to
/// their closing quote (memchr), nested objects and lists by their depth, so a value is passed over
/// without being read.
struct Scan<'t> {
    text: &'t [u8],
    at: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == b).then(|| self.at += 1)
    }

    /// Past a string whose opening quote is at `at`; whether it had escapes.
    fn string(&mut self) -> Option<bool> {
        let (end, escaped) = string_end_in_json(self.text, self.at)?;
        self.at = end + 1;
        Some(escaped)
    }

    /// Past one value (whitespace before it skipped): its range.
    fn value(&mut self) -> Option<Range<usize>> {
        self.skip_ws();
        let start = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while !matches!(self.peek(), None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                    self.at += 1;
                }
            }
        }
        (self.at > start).then_some(start..self.at)
    }

    fn object(&mut self) -> Option<FieldIndex> {
        self.skip_ws();
        if self.peek()? != b'{' {
            return Some(FieldIndex::default());
        }
        self.at += 1;
        // Most args have a handful of fields, a shell call's about twenty.
        let mut fields = Vec::with_capacity(16);
        self.skip_ws();
        if self.peek()? == b'}' {
            return Some(FieldIndex { object: true, fields });
        }
        loop {
            self.skip_ws();
            if self.peek()? != b'"' {
                return None;
            }
            let open = self.at;
            let escaped = self.string()?;
            let key = if escaped {
                let quoted = std::str::from_utf8(self.text.get(open..self.at)?).ok()?;
                Key::Unescaped(serde_json::from_str::<String>(quoted).ok()?.into_boxed_str())
            } else {
                Key::Span(open + 1..self.at - 1)
            };
            self.eat(b':')?;
            let value = self.value()?;
            fields.push(Field { key, value });
            self.skip_ws();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => return Some(FieldIndex { object: true, fields }),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Every field as the index reads it, against the tree of the same text.
    fn same_as_tree(text: &str) {
        let index = FieldIndex::of(text);
        let tree: Value = serde_json::from_str(text).unwrap();
        assert_eq!(index.is_object(), tree.is_object(), "{text}");
        let Some(obj) = tree.as_object() else {
            return;
        };
        for (k, v) in obj {
            let raw = index.raw(text, k).unwrap_or_else(|| panic!("{k} of {text}"));
            assert_eq!(&serde_json::from_str::<Value>(raw).unwrap(), v, "{k} of {text}");
            assert_eq!(raw_str(raw).as_deref(), v.as_str(), "{k} of {text}");
        }
    }

    #[test]
    fn fields_read_as_a_tree_reads_them() {
        for text in [
            r#"{"command":"ls -la","timeout":10000,"parsingResult":{"executableCommands":[{"name":"ls"}]}}"#,
            r#" { "a" : 1 , "b" :[ 1, {"a": 2} ], "c": null, "d": true, "e": "x\"y\\z\n" } "#,
            r#"{"comm\u0061nd":"escaped key","tab\tkey":"t","é":"ü","":"empty key"}"#,
            r#"{"dup":1,"other":2,"dup":"last wins"}"#,
            r#"{}"#,
            r#"[{"a":1}]"#,
            r#""a string""#,
            "null",
            "12.5",
        ] {
            same_as_tree(text);
        }
    }

    #[test]
    fn a_missing_key_and_a_non_object_have_nothing() {
        let text = r#"{"a":1}"#;
        let index = FieldIndex::of(text);
        assert_eq!(index.raw(text, "b"), None);
        assert!(index.raw(text, "a").is_some() && index.raw(text, "A").is_none());
        let list = r#"[{"a":1}]"#;
        assert_eq!(FieldIndex::of(list).raw(list, "a"), None);
    }

    #[test]
    fn text_cut_short_has_no_fields_and_nothing_panics() {
        for text in
            ["", "{", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"a\":\"x", "{\"a\\", "{\"a\":[1,", "{1:2}", "{\"a\":1,}"]
        {
            let index = FieldIndex::of(text);
            assert_eq!((index.raw(text, "a"), index.is_object()), (None, false), "{text}");
        }
        // Not JSON, but read without a panic.
        for text in ["}", "{\"a\":{\"b\":]}", "{\"a\":]", "[}", "{\"\\u12\":1}"] {
            let _ = FieldIndex::of(text).raw(text, "a");
        }
    }

    #[test]
    fn strings_are_borrowed_unless_escaped() {
        assert!(matches!(raw_str(r#""plain""#), Some(Cow::Borrowed("plain"))));
        assert_eq!(raw_str(r#""a\u00e9\n""#).as_deref(), Some("aé\n"));
        assert_eq!(raw_str("5"), None);
        assert_eq!(raw_str("null"), None);
        assert_eq!(raw_as::<u32>("5"), Some(5));
        assert_eq!(raw_as::<u32>(r#""x""#), None);
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = proptest::collection::vec(
            prop_oneof![
                Just('"'),
                Just('\\'),
                Just('\n'),
                Just('{'),
                Just(']'),
                Just(','),
                Just(':'),
                Just('é'),
                Just('a')
            ],
            0..12,
        )
        .prop_map(|c| c.into_iter().collect::<String>());
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            text.clone().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                proptest::collection::btree_map(text.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_object_is_read_as_its_tree_compact_or_pretty(v in json_value()) {
            same_as_tree(&serde_json::to_string(&v).unwrap());
            same_as_tree(&serde_json::to_string_pretty(&v).unwrap());
            let wrapped = serde_json::json!({"x": v, "last": 1});
            same_as_tree(&serde_json::to_string_pretty(&wrapped).unwrap());
        }
    }

    #[test]
    fn a_number_out_of_range_hides_only_its_own_field() {
        let text = r#"{"big":1e400,"command":"ls"}"#;
        assert!(serde_json::from_str::<Value>(text).is_err(), "no tree holds it");
        let index = FieldIndex::of(text);
        assert_eq!(index.raw(text, "command").and_then(raw_str).as_deref(), Some("ls"));
        assert_eq!(index.raw(text, "big").and_then(raw_as::<Value>), None);
    }
}
