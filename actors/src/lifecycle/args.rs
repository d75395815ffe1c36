//! The few call arguments a lifecycle line reads (its label, the pi-bridge check), taken from the
//! raw args in one borrowed pass that skips everything else — no JSON tree is built. Reads
//! exactly what `serde_json::Value` lookups would: a key counts only when its value is a string.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use toolstream_schemas::RawJson;

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

/// The length of an array value (0 for anything else).
#[derive(Debug, Default, PartialEq)]
pub struct Count(pub usize);

/// `args.args` of an MCP call that is really a web search.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub struct Inner<'a> {
    #[serde(borrow, default)]
    pub query: Text<'a>,
    #[serde(borrow, default)]
    pub search_term: Text<'a>,
}

/// The arguments lifecycle lines read.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub struct LabelArgs<'a> {
    #[serde(borrow, default)]
    pub command: Text<'a>,
    #[serde(borrow, default)]
    pub description: Text<'a>,
    #[serde(borrow, default, rename = "toolName")]
    pub tool_name_camel: Text<'a>,
    #[serde(borrow, default)]
    pub tool_name: Text<'a>,
    #[serde(borrow, default)]
    pub name: Text<'a>,
    #[serde(borrow, default)]
    pub prompt: Text<'a>,
    #[serde(borrow, default)]
    pub mode: Text<'a>,
    #[serde(borrow, default)]
    pub query: Text<'a>,
    #[serde(borrow, default, rename = "searchTerm")]
    pub search_term_camel: Text<'a>,
    #[serde(borrow, default)]
    pub search_term: Text<'a>,
    #[serde(borrow, default)]
    pub plan: Text<'a>,
    #[serde(default)]
    pub todos: Count,
    /// `Some(None)`: `args` is there but is not an object.
    #[serde(borrow, default, deserialize_with = "object_or_other")]
    pub args: Option<Option<Inner<'a>>>,
}

impl<'a> LabelArgs<'a> {
    /// Parse `raw` (nothing for no args). Whatever the borrowed pass refuses (a repeated key, args
    /// that are not an object) is read through a `Value`, so the result is always the lookups'.
    pub fn parse(raw: Option<&'a RawJson>) -> LabelArgs<'a> {
        let Some(raw) = raw else { return LabelArgs::default() };
        // Only an object has keys (a derived struct would also take an array, by position).
        if !raw.get().trim_start().starts_with('{') {
            return LabelArgs::default();
        }
        serde_json::from_str(raw.get()).unwrap_or_else(|_| {
            serde_json::from_str::<Value>(raw.get()).map(|v| LabelArgs::from_value(&v)).unwrap_or_default()
        })
    }

    fn from_value(v: &Value) -> LabelArgs<'a> {
        let text = |o: &Value, k: &str| match o.get(k) {
            None => Text::Missing,
            Some(Value::String(s)) => Text::Str(Cow::Owned(s.clone())),
            Some(_) => Text::Other,
        };
        LabelArgs {
            command: text(v, "command"),
            description: text(v, "description"),
            tool_name_camel: text(v, "toolName"),
            tool_name: text(v, "tool_name"),
            name: text(v, "name"),
            prompt: text(v, "prompt"),
            mode: text(v, "mode"),
            query: text(v, "query"),
            search_term_camel: text(v, "searchTerm"),
            search_term: text(v, "search_term"),
            plan: text(v, "plan"),
            todos: Count(v.get("todos").and_then(Value::as_array).map_or(0, Vec::len)),
            args: v
                .get("args")
                .map(|a| a.as_object().map(|_| Inner { query: text(a, "query"), search_term: text(a, "search_term") })),
        }
    }

    /// The first of `fields` that is a string, as `keys.find_map(|k| v.get(k)?.as_str())` would.
    pub fn first<'s>(fields: &[&'s Text<'a>]) -> Option<&'s str> {
        fields.iter().find_map(|f| f.as_str())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor(PhantomData))
    }
}

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
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'a>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Text::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text<'a>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Text::Other)
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count(0))
            }
            fn visit_str<E>(self, _: &str) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
        }
        d.deserialize_any(CountVisitor)
    }
}

/// `args` as an object of the inner keys, or `None` inside for any other value.
fn object_or_other<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Inner<'a>>>, D::Error> {
    struct ObjectVisitor<'a>(PhantomData<&'a ()>);
    impl<'de: 'a, 'a> Visitor<'de> for ObjectVisitor<'a> {
        type Value = Option<Inner<'a>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Inner::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(ObjectVisitor(PhantomData)).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::value::RawValue;

    /// The lookups the lifecycle stage made on a `Value` before this module.
    fn by_value(v: &Value) -> LabelArgs<'static> {
        LabelArgs::from_value(v)
    }

    fn value_strategy() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z\"\\\\ /é]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "command",
                            "query",
                            "search_term",
                            "searchTerm",
                            "toolName",
                            "name",
                            "todos",
                            "args",
                            "x",
                        ]),
                        inner
                    ),
                    0..5
                )
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_borrowed_pass_reads_what_value_lookups_read(v in value_strategy()) {
            let raw = RawValue::from_string(v.to_string()).unwrap();
            prop_assert_eq!(LabelArgs::parse(Some(&raw)), by_value(&v));
        }
    }

    #[test]
    fn repeated_keys_read_the_last_one_as_value_does() {
        let raw = RawValue::from_string(r#"{"command":"a","command":"b"}"#.to_owned()).unwrap();
        let parsed = LabelArgs::parse(Some(&raw));
        assert_eq!(LabelArgs::first(&[&parsed.command]), Some("b"));
    }

    #[test]
    fn non_strings_do_not_count_and_arrays_are_counted() {
        let raw =
            RawValue::from_string(r#"{"toolName":3,"tool_name":"t","todos":[1,{},[]],"args":"x"}"#.to_owned()).unwrap();
        let p = LabelArgs::parse(Some(&raw));
        assert_eq!(LabelArgs::first(&[&p.tool_name_camel, &p.tool_name]), Some("t"));
        assert_eq!(p.todos, Count(3));
        assert_eq!(p.args, Some(None));
        assert_eq!(LabelArgs::parse(None), LabelArgs::default());
    }
}
