//! The stream-json line envelope: one borrowed pass over a line that picks out the keys every
//! line type shares and keeps every other key as an unparsed raw slice, so nothing read is lost
//! and payloads are never copied before they are needed.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::num::Int;

/// A string borrowed from the input when it has no escapes, owned otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Str<'a>(pub Cow<'a, str>);

impl<'a> Str<'a> {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// One stream-json line. `type` is required; everything else is optional. `T` is how the
/// `tool_call` value is read: kept raw (the default), or as a [`ToolCallObject`] in the same pass
/// (a decoder that reads it anyway saves scanning the payload twice; that parse fails on a
/// `tool_call` that is not a tool call object, where the raw one does not).
#[derive(Debug)]
pub struct Line<'a, T = &'a RawValue> {
    /// `type`: system, user, thinking, assistant, tool_call, interaction_query, result, …
    pub kind: Cow<'a, str>,
    pub subtype: Option<Cow<'a, str>>,
    pub session_id: Option<Cow<'a, str>>,
    pub timestamp_ms: Option<Int>,
    pub call_id: Option<Cow<'a, str>>,
    pub model_call_id: Option<Cow<'a, str>>,
    /// `thinking` lines: the delta text.
    pub text: Option<Cow<'a, str>>,
    /// `user` / `assistant` lines: `{role, content:[…]}`.
    pub message: Option<&'a RawValue>,
    /// `tool_call` lines: `{<x>ToolCall: {args, result}, …metadata}`.
    pub tool_call: Option<T>,
    /// Every other key, in order: type-specific fields (`cwd`, `usage`, …) and unknown ones.
    pub rest: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a, T> Default for Line<'a, T> {
    fn default() -> Self {
        Line {
            kind: Cow::Borrowed(""),
            subtype: None,
            session_id: None,
            timestamp_ms: None,
            call_id: None,
            model_call_id: None,
            text: None,
            message: None,
            tool_call: None,
            rest: Vec::new(),
        }
    }
}

impl<'a> Line<'a> {
    /// Parse one line. Fails only on malformed JSON, a non-object, or a missing/non-string `type`.
    pub fn parse(text: &'a str) -> Result<Line<'a>, serde_json::Error> {
        serde_json::from_str(text)
    }
}

impl<'a, T: Deserialize<'a>> Line<'a, T> {
    /// Parse one line into `line`, a fresh [`Line::default`] (a key the text lacks is left as it
    /// finds it), as [`Line::parse`] does; with `T` a boxed [`ToolCallObject`],
    /// its `tool_call` is read in the same pass (which then also fails on a `tool_call` that
    /// [`ToolCallObject::parse`] refuses; the object is boxed: most lines have none). A decoder
    /// that keeps its line where it is saves moving its two hundred bytes out through every layer
    /// of the parser, on every line.
    pub fn parse_into(text: &'a str, line: &mut Line<'a, T>) -> Result<(), serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        de::DeserializeSeed::deserialize(LineInto(line), &mut de)?;
        de.end()
    }
}

impl<'a, T> Line<'a, T> {
    /// The raw value of a key in [`Line::rest`].
    pub fn rest_get(&self, key: &str) -> Option<&'a RawValue> {
        self.rest.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Line<'de, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut line = Line::default();
        de::DeserializeSeed::deserialize(LineInto(&mut line), d)?;
        Ok(line)
    }
}

/// Reads a line into the [`Line`] it holds (every parse of a line goes through it).
struct LineInto<'l, 'de, T>(&'l mut Line<'de, T>);

impl<'de, T: Deserialize<'de>> de::DeserializeSeed<'de> for LineInto<'_, 'de, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for LineInto<'_, 'de, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a stream-json object with a string `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let line = self.0;
        let mut have_type = false;
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            // A `null` for an optional key means absent; the field's own type decides otherwise.
            match key.as_ref() {
                "type" => {
                    line.kind = map.next_value::<Str<'de>>()?.0;
                    have_type = true;
                }
                "subtype" => line.subtype = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                "session_id" => line.session_id = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                "timestamp_ms" => line.timestamp_ms = map.next_value()?,
                "call_id" => line.call_id = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                "model_call_id" => line.model_call_id = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                "text" => line.text = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                "message" => line.message = Some(map.next_value()?),
                "tool_call" => line.tool_call = Some(map.next_value()?),
                _ => {
                    let v: &'de RawValue = map.next_value()?;
                    line.rest.push((key, v));
                }
            }
        }
        if !have_type {
            return Err(de::Error::missing_field("type"));
        }
        Ok(())
    }
}

/// `message.content[]` of user/assistant lines. Blocks other than text are kept raw.
#[derive(Debug, Deserialize)]
pub struct MessageBody<'a> {
    #[serde(borrow, default)]
    pub role: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub content: Vec<ContentBlock<'a>>,
}

#[derive(Debug)]
pub enum ContentBlock<'a> {
    Text(Cow<'a, str>),
    /// Any other block (images, tool use, …), verbatim.
    Other(&'a RawValue),
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentBlock<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct TextBlock<'a> {
            #[serde(rename = "type", borrow)]
            kind: Str<'a>,
            #[serde(borrow)]
            text: Option<Str<'a>>,
        }
        let raw: &'a RawValue = Deserialize::deserialize(d)?;
        match serde_json::from_str::<TextBlock<'a>>(raw.get()) {
            Ok(TextBlock { kind, text: Some(text) }) if kind.as_str() == "text" => Ok(ContentBlock::Text(text.0)),
            _ => Ok(ContentBlock::Other(raw)),
        }
    }
}

impl<'a> MessageBody<'a> {
    pub fn parse(raw: &'a RawValue) -> Result<MessageBody<'a>, serde_json::Error> {
        serde_json::from_str(raw.get())
    }
}

/// The `tool_call` object: exactly one key ending in `ToolCall` is the tool (SPEC §1.1 rule 3);
/// the known siblings are metadata; anything else is kept.
#[derive(Debug, Default)]
pub struct ToolCallObject<'a> {
    /// e.g. `shellToolCall`.
    pub key: Option<Cow<'a, str>>,
    /// What is under `key`, read in the same pass as the rest of the object.
    pub payload: Option<ToolPayload<'a>>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub started_at_ms: Option<Int>,
    pub completed_at_ms: Option<Int>,
    /// `hookAdditionalContexts`, `description`, `isBackground`, further `*ToolCall` keys and
    /// unknown keys, verbatim.
    pub rest: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> ToolCallObject<'a> {
    pub fn parse(raw: &'a RawValue) -> Result<ToolCallObject<'a>, serde_json::Error> {
        serde_json::from_str(raw.get())
    }
}

impl<'de> Deserialize<'de> for ToolCallObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ToolCallObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool_call object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = ToolCallObject::default();
                while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
                    match key.as_ref() {
                        "toolCallId" => out.tool_call_id = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                        "startedAtMs" => out.started_at_ms = map.next_value()?,
                        "completedAtMs" => out.completed_at_ms = map.next_value()?,
                        k if k.ends_with("ToolCall") && k.len() > "ToolCall".len() && out.key.is_none() => {
                            let payload = map
                                .next_value::<ToolPayload<'de>>()
                                .map_err(|e| de::Error::custom(format!("{k}: {e}")))?;
                            out.payload = Some(payload);
                            out.key = Some(key);
                        }
                        _ => {
                            let v: &'de RawValue = map.next_value()?;
                            out.rest.push((key, v));
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// The payload under the `<x>ToolCall` key: `{args?, result?, …}`.
#[derive(Debug, Default)]
pub struct ToolPayload<'a> {
    pub args: Option<&'a RawValue>,
    pub result: Option<&'a RawValue>,
    pub rest: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> ToolPayload<'a> {
    pub fn parse(raw: &'a RawValue) -> Result<ToolPayload<'a>, serde_json::Error> {
        serde_json::from_str(raw.get())
    }
}

impl<'de> Deserialize<'de> for ToolPayload<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ToolPayload<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool payload object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = ToolPayload::default();
                while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
                    let v: &'de RawValue = map.next_value()?;
                    match key.as_ref() {
                        "args" if v.get() != "null" => out.args = Some(v),
                        "result" if v.get() != "null" => out.result = Some(v),
                        _ => out.rest.push((key, v)),
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// A result oneof: `{success|failure|rejected|error|…: {…}, …siblings}`.
#[derive(Debug, Default)]
pub struct ResultObject<'a> {
    /// The arm key and its inner object, when one was found.
    pub arm: Option<(Cow<'a, str>, &'a RawValue)>,
    /// Sibling keys (`isBackground`, `terminalsFolder`, …).
    pub rest: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> ResultObject<'a> {
    /// Parse a result. The arm is the first key that names a known oneof arm; failing that, the
    /// first key whose value is an object.
    pub fn parse(raw: &'a RawValue) -> Result<ResultObject<'a>, serde_json::Error> {
        let entries: Vec<(Str<'a>, &'a RawValue)> = serde_json::from_str::<RawEntries<'a>>(raw.get())?.0;
        let known = entries.iter().position(|(k, _)| crate::result_status::ResultStatus::is_known_key(k.as_str()));
        let pick = known.or_else(|| entries.iter().position(|(_, v)| v.get().starts_with('{')));
        let mut out = ResultObject::default();
        for (i, (k, v)) in entries.into_iter().enumerate() {
            if Some(i) == pick {
                out.arm = Some((k.0, v));
            } else {
                out.rest.push((k.0, v));
            }
        }
        Ok(out)
    }
}

/// An object's entries, in order, values unparsed.
struct RawEntries<'a>(Vec<(Str<'a>, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawEntries<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawEntries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Str<'de>>()? {
                    out.push((k, map.next_value()?));
                }
                Ok(RawEntries(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_keeps_unknown_keys_and_borrows() {
        let s = r#"{"type":"thinking","subtype":"delta","text":"hi","session_id":"s1","timestamp_ms":5,"zzz":{"a":1}}"#;
        let l = Line::parse(s).unwrap();
        assert_eq!(l.kind, "thinking");
        assert_eq!(l.subtype.as_deref(), Some("delta"));
        assert!(matches!(l.text, Some(Cow::Borrowed("hi"))));
        assert_eq!(l.timestamp_ms, Some(Int(5)));
        assert_eq!(l.rest.len(), 1);
        assert_eq!(l.rest[0].0, "zzz");
        assert_eq!(l.rest[0].1.get(), r#"{"a":1}"#);
    }

    #[test]
    fn escaped_strings_are_owned_and_decoded() {
        let l = Line::parse(r#"{"type":"tool_call","call_id":"a\nb"}"#).unwrap();
        assert_eq!(l.call_id.as_deref(), Some("a\nb"));
    }

    #[test]
    fn missing_type_is_an_error() {
        assert!(Line::parse(r#"{"subtype":"x"}"#).is_err());
        assert!(Line::parse(r#"[1]"#).is_err());
        assert!(Line::parse(r#"{"type":5}"#).is_err());
    }

    #[test]
    fn tool_key_is_the_toolcall_key_not_the_first_key() {
        let raw: &RawValue = serde_json::from_str(
            r#"{"hookAdditionalContexts":[],"toolCallId":"x","shellToolCall":{"args":{"command":"ls"}},"startedAtMs":"17"}"#,
        )
        .unwrap();
        let t = ToolCallObject::parse(raw).unwrap();
        assert_eq!(t.key.as_deref(), Some("shellToolCall"));
        assert_eq!(t.started_at_ms, Some(Int(17)));
        assert_eq!(t.rest.len(), 1);
        let p = t.payload.unwrap();
        assert_eq!(p.args.unwrap().get(), r#"{"command":"ls"}"#);
        assert!(p.result.is_none());
        // A payload that is not an object fails the whole object, naming its key.
        let bad: &RawValue = serde_json::from_str(r#"{"toolCallId":"x","shellToolCall":null}"#).unwrap();
        let e = ToolCallObject::parse(bad).unwrap_err().to_string();
        assert!(e.starts_with("shellToolCall: invalid type: null"), "{e}");
    }

    #[test]
    fn a_tool_call_read_with_the_line_is_the_tool_call_read_after_it() {
        let s = r#"{"type":"tool_call","subtype":"completed","call_id":"c\n1","tool_call":{"toolCallId":"t","readToolCall":{"args":{"path":"a\"b"},"result":{"success":{}}},"startedAtMs":3,"x":[1]},"session_id":"s"}"#;
        let raw = Line::parse(s).unwrap();
        let later = ToolCallObject::parse(raw.tool_call.unwrap()).unwrap();
        let mut once = Line::<Box<ToolCallObject>>::default();
        Line::parse_into(s, &mut once).unwrap();
        assert_eq!(once.call_id, raw.call_id);
        let with = once.tool_call.unwrap();
        assert_eq!(format!("{with:?}"), format!("{later:?}"));
        // A `tool_call` that is no tool call object fails the one-pass read only.
        for bad in
            [r#"{"type":"tool_call","tool_call":null}"#, r#"{"type":"tool_call","tool_call":{"shellToolCall":3}}"#]
        {
            assert!(Line::parse(bad).is_ok(), "{bad}");
            assert!(Line::parse_into(bad, &mut Line::<Box<ToolCallObject>>::default()).is_err(), "{bad}");
        }
    }

    #[test]
    fn result_arm_and_siblings() {
        let raw: &RawValue =
            serde_json::from_str(r#"{"isBackground":false,"rejected":{"reason":"no"},"terminalsFolder":"/t"}"#)
                .unwrap();
        let r = ResultObject::parse(raw).unwrap();
        let (k, v) = r.arm.unwrap();
        assert_eq!(k, "rejected");
        assert_eq!(v.get(), r#"{"reason":"no"}"#);
        assert_eq!(r.rest.len(), 2);
    }

    #[test]
    fn content_blocks() {
        let raw: &RawValue = serde_json::from_str(
            r#"{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image","x":1}]}"#,
        )
        .unwrap();
        let m = MessageBody::parse(raw).unwrap();
        assert!(matches!(&m.content[0], ContentBlock::Text(t) if t == "a"));
        assert!(matches!(&m.content[1], ContentBlock::Other(_)));
    }
}
