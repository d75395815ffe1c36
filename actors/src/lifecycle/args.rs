//! The few call arguments a lifecycle line reads (its label, the pi-bridge check), taken from the
//! raw args in one borrowed pass — no JSON tree is built. It reads exactly what lookups on a
//! `serde_json::Value` read: a key counts only when its value is a string, a repeated key counts
//! with its last value, and args a `Value` would refuse (a number out of range, a lone surrogate
//! escape, nesting past the parser's limit — anywhere, read or not) read as no args at all.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use toolstream_schemas::cursor_cli::line::Str;
use toolstream_schemas::RawJson;

/// Every scalar visit of a visitor yields `$value`.
macro_rules! scalars_are {
    ($value:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// A key's value as far as a string lookup cares.
#[derive(Debug, Default, PartialEq)]
pub enum Text<'a> {
    /// No such key.
    #[default]
    Missing,
    /// The key holds something other than a string (`null` included).
    Other,
    Str(Cow<'a, str>),
}

impl Text<'_> {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Text::Str(s) => Some(s),
            Text::Missing | Text::Other => None,
        }
    }

    pub fn is_missing(&self) -> bool {
        matches!(self, Text::Missing)
    }
}

/// `args.args` of an MCP call that is really a web search.
#[derive(Debug, Default, PartialEq)]
pub struct Inner<'a> {
    pub query: Text<'a>,
    pub search_term: Text<'a>,
}

/// The arguments lifecycle lines read.
#[derive(Debug, Default, PartialEq)]
pub struct LabelArgs<'a> {
    pub command: Text<'a>,
    pub description: Text<'a>,
    /// `toolName`.
    pub tool_name_camel: Text<'a>,
    pub tool_name: Text<'a>,
    pub name: Text<'a>,
    pub prompt: Text<'a>,
    pub mode: Text<'a>,
    pub query: Text<'a>,
    /// `searchTerm`.
    pub search_term_camel: Text<'a>,
    pub search_term: Text<'a>,
    pub plan: Text<'a>,
    /// The length of `todos` when it is an array, else 0.
    pub todos: usize,
    /// `None`: no `args` key; `Some(None)`: `args` is there but is not an object.
    pub args: Option<Option<Inner<'a>>>,
}

impl<'a> LabelArgs<'a> {
    /// Read `raw` (nothing for no args, or for args that are not an object or that a `Value`
    /// would refuse).
    pub fn parse(raw: Option<&'a RawJson>) -> LabelArgs<'a> {
        let Some(raw) = raw else { return LabelArgs::default() };
        serde_json::from_str::<Object<LabelArgs<'a>>>(raw.get()).ok().and_then(|o| o.0).unwrap_or_default()
    }

    /// The first of `fields` that is a string, as `keys.find_map(|k| v.get(k)?.as_str())` would.
    pub fn first<'s>(fields: &[&'s Text<'a>]) -> Option<&'s str> {
        fields.iter().find_map(|f| f.as_str())
    }

    fn set<A: MapAccess<'a>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let field = match key {
            "command" => &mut self.command,
            "description" => &mut self.description,
            "toolName" => &mut self.tool_name_camel,
            "tool_name" => &mut self.tool_name,
            "name" => &mut self.name,
            "prompt" => &mut self.prompt,
            "mode" => &mut self.mode,
            "query" => &mut self.query,
            "searchTerm" => &mut self.search_term_camel,
            "search_term" => &mut self.search_term,
            "plan" => &mut self.plan,
            "todos" => {
                self.todos = map.next_value::<Count>()?.0;
                return Ok(());
            }
            "args" => {
                self.args = Some(map.next_value::<Object<Inner<'a>>>()?.0);
                return Ok(());
            }
            _ => {
                map.next_value::<Count>()?;
                return Ok(());
            }
        };
        *field = map.next_value::<Text<'a>>()?;
        Ok(())
    }
}

impl<'a> Inner<'a> {
    fn set<A: MapAccess<'a>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "query" => self.query = map.next_value()?,
            "search_term" => self.search_term = map.next_value()?,
            _ => {
                map.next_value::<Count>()?;
            }
        }
        Ok(())
    }
}

/// A type read from the entries of a JSON object, one key at a time.
trait FromEntries<'a>: Default {
    fn set<A: MapAccess<'a>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

impl<'a> FromEntries<'a> for LabelArgs<'a> {
    fn set<A: MapAccess<'a>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        LabelArgs::set(self, key, map)
    }
}

impl<'a> FromEntries<'a> for Inner<'a> {
    fn set<A: MapAccess<'a>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        Inner::set(self, key, map)
    }
}

/// `Some` when the value is an object (read entry by entry), `None` for any other value.
struct Object<T>(Option<T>);

impl<'de, T: FromEntries<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: FromEntries<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<T>, A::Error> {
                let mut out = T::default();
                // Keys as a `Value` reads them (escapes checked); a repeated key: the last wins.
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    out.set(key.as_str(), &mut map)?;
                }
                Ok(Object(Some(out)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Object<T>, A::Error> {
                skip_seq(seq).map(|_| Object(None))
            }
            scalars_are!(Object(None));
        }
        d.deserialize_any(ObjectVisitor(PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'a>, E> {
                Ok(Text::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'a>, E> {
                Ok(Text::Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Text<'a>, E> {
                Ok(Text::Str(Cow::Owned(s)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Text<'a>, E> {
                Ok(Text::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Text<'a>, E> {
                Ok(Text::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Text<'a>, E> {
                Ok(Text::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Text<'a>, E> {
                Ok(Text::Other)
            }
            fn visit_unit<E>(self) -> Result<Text<'a>, E> {
                Ok(Text::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text<'a>, A::Error> {
                skip_seq(seq).map(|_| Text::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text<'a>, A::Error> {
                skip_map(map).map(|_| Text::Other)
            }
        }
        d.deserialize_any(TextVisitor(PhantomData))
    }
}

/// Any JSON value, read as a `Value` would read it (numbers in range, escapes valid, nesting
/// within the parser's limit) without being built; kept only as its length when it is an array
/// (0 for anything else). Values nobody reads are skipped as this too.
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Count, A::Error> {
                skip_seq(seq).map(Count)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Count, A::Error> {
                skip_map(map).map(|_| Count(0))
            }
            scalars_are!(Count(0));
        }
        d.deserialize_any(CountVisitor)
    }
}

/// Read every element; returns how many there were.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<usize, A::Error> {
    let mut n = 0;
    while seq.next_element::<Count>()?.is_some() {
        n += 1;
    }
    Ok(n)
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<Count, Count>()?.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::value::RawValue;
    use serde_json::Value;

    /// The lookups the lifecycle stage made on a `Value` before this module (the oracle).
    fn by_value(raw: &str) -> LabelArgs<'static> {
        let Ok(v) = serde_json::from_str::<Value>(raw) else { return LabelArgs::default() };
        let text = |o: &Value, k: &str| match o.get(k) {
            None => Text::Missing,
            Some(Value::String(s)) => Text::Str(Cow::Owned(s.clone())),
            Some(_) => Text::Other,
        };
        LabelArgs {
            command: text(&v, "command"),
            description: text(&v, "description"),
            tool_name_camel: text(&v, "toolName"),
            tool_name: text(&v, "tool_name"),
            name: text(&v, "name"),
            prompt: text(&v, "prompt"),
            mode: text(&v, "mode"),
            query: text(&v, "query"),
            search_term_camel: text(&v, "searchTerm"),
            search_term: text(&v, "search_term"),
            plan: text(&v, "plan"),
            todos: v.get("todos").and_then(Value::as_array).map_or(0, Vec::len),
            args: v
                .get("args")
                .map(|a| a.as_object().map(|_| Inner { query: text(a, "query"), search_term: text(a, "search_term") })),
        }
    }

    const KEYS: &[&str] = &[
        "command",
        "description",
        "toolName",
        "tool_name",
        "name",
        "prompt",
        "mode",
        "query",
        "searchTerm",
        "search_term",
        "plan",
        "todos",
        "args",
        "x",
    ];

    /// JSON text, including what a `Value` refuses but a raw value lets through.
    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("-0".to_owned()),
            Just("1.5e3".to_owned()),
            Just("1e400".to_owned()),
            Just(r#""\ud800""#.to_owned()),
            Just(r#""\ud83d\ude00 ok""#.to_owned()),
            Just(format!("{}1{}", "[".repeat(130), "]".repeat(130))),
            "[a-z /é\"\\\\]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                    let entries: Vec<String> = kv.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", entries.join(","))
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn the_borrowed_pass_reads_what_value_lookups_read(text in json_text()) {
            let raw = RawValue::from_string(text.clone()).unwrap();
            prop_assert_eq!(LabelArgs::parse(Some(&raw)), by_value(&text), "{}", text);
        }
    }

    fn parse(text: &str) -> LabelArgs<'static> {
        let raw = RawValue::from_string(text.to_owned()).unwrap();
        into_static(LabelArgs::parse(Some(&raw)))
    }

    fn into_static(a: LabelArgs<'_>) -> LabelArgs<'static> {
        let t = |t: Text<'_>| match t {
            Text::Missing => Text::Missing,
            Text::Other => Text::Other,
            Text::Str(s) => Text::Str(Cow::Owned(s.into_owned())),
        };
        LabelArgs {
            command: t(a.command),
            description: t(a.description),
            tool_name_camel: t(a.tool_name_camel),
            tool_name: t(a.tool_name),
            name: t(a.name),
            prompt: t(a.prompt),
            mode: t(a.mode),
            query: t(a.query),
            search_term_camel: t(a.search_term_camel),
            search_term: t(a.search_term),
            plan: t(a.plan),
            todos: a.todos,
            args: a.args.map(|i| i.map(|i| Inner { query: t(i.query), search_term: t(i.search_term) })),
        }
    }

    #[test]
    fn repeated_keys_read_the_last_one_as_value_does() {
        let p = parse(r#"{"command":"a","command":"b"}"#);
        assert_eq!(LabelArgs::first(&[&p.command]), Some("b"));
    }

    #[test]
    fn non_strings_do_not_count_and_arrays_are_counted() {
        let p = parse(r#"{"toolName":3,"tool_name":"t","todos":[1,{},[]],"args":"x"}"#);
        assert_eq!(LabelArgs::first(&[&p.tool_name_camel, &p.tool_name]), Some("t"));
        assert_eq!(p.todos, 3);
        assert_eq!(p.args, Some(None));
        assert_eq!(LabelArgs::parse(None), LabelArgs::default());
    }

    #[test]
    fn args_a_value_refuses_read_as_none() {
        for text in [r#"{"command":"echo hi","x":1e400}"#, r#"{"command":"a","todos":[{"c":"\ud800"}]}"#] {
            assert_eq!(parse(text), LabelArgs::default(), "{text}");
        }
        let deep = format!(r#"{{"command":"a","x":{}1{}}}"#, "[".repeat(130), "]".repeat(130));
        assert_eq!(parse(&deep), LabelArgs::default());
        assert_eq!(parse(r#"["command","a"]"#), LabelArgs::default(), "only objects have keys");
    }
}
