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
/// `tool_call` value is read and `M` how the `message` is: kept raw (the default), or as a
/// [`ToolCallObject`] and a [`TextMessage`] in the same pass (a decoder that reads them anyway
/// saves scanning them twice; that parse fails on what those types refuse, where the raw one does
/// not).
#[derive(Debug)]
pub struct Line<'a, T = &'a RawValue, M = &'a RawValue> {
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
    pub message: Option<M>,
    /// `tool_call` lines: `{<x>ToolCall: {args, result}, …metadata}`.
    pub tool_call: Option<T>,
    /// Every other key, in order: type-specific fields (`cwd`, `usage`, …) and unknown ones.
    pub rest: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a, T, M> Default for Line<'a, T, M> {
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

impl<'a, T: Deserialize<'a>, M: Deserialize<'a>> Line<'a, T, M> {
    /// Parse one line into `line`, a fresh [`Line::default`] (a key the text lacks is left as it
    /// finds it), as [`Line::parse`] does; with `T` a boxed [`ToolCallObject`] and `M` a
    /// [`TextMessage`], its `tool_call` and `message` are read in the same pass (which then also
    /// fails on what those refuse and the raw read keeps; the object is boxed: most lines have
    /// none). A decoder that keeps its line where it is saves moving its two hundred bytes out
    /// through every layer of the parser, on every line.
    pub fn parse_into(text: &'a str, line: &mut Line<'a, T, M>) -> Result<(), serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        de::DeserializeSeed::deserialize(LineInto(line), &mut de)?;
        de.end()
    }
}

impl<'a, T, M> Line<'a, T, M> {
    /// The raw value of a key in [`Line::rest`].
    pub fn rest_get(&self, key: &str) -> Option<&'a RawValue> {
        self.rest.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

impl<'de, T: Deserialize<'de>, M: Deserialize<'de>> Deserialize<'de> for Line<'de, T, M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut line = Line::default();
        de::DeserializeSeed::deserialize(LineInto(&mut line), d)?;
        Ok(line)
    }
}

/// Reads a line into the [`Line`] it holds (every parse of a line goes through it).
struct LineInto<'l, 'de, T, M>(&'l mut Line<'de, T, M>);

impl<'de, T: Deserialize<'de>, M: Deserialize<'de>> de::DeserializeSeed<'de> for LineInto<'_, 'de, T, M> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>, M: Deserialize<'de>> Visitor<'de> for LineInto<'_, 'de, T, M> {
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

/// The keys of a content block that make it a text block.
#[derive(Deserialize)]
struct TextBlockKeys<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Option<Str<'a>>,
}

impl<'a> TextBlockKeys<'a> {
    /// The text, when this is a text block.
    fn text(self) -> Option<Cow<'a, str>> {
        match self {
            TextBlockKeys { kind, text: Some(text) } if kind.as_str() == "text" => Some(text.0),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentBlock<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw: &'a RawValue = Deserialize::deserialize(d)?;
        match serde_json::from_str::<TextBlockKeys<'a>>(raw.get()).ok().and_then(TextBlockKeys::text) {
            Some(text) => Ok(ContentBlock::Text(text)),
            None => Ok(ContentBlock::Other(raw)),
        }
    }
}

impl<'a> MessageBody<'a> {
    pub fn parse(raw: &'a RawValue) -> Result<MessageBody<'a>, serde_json::Error> {
        serde_json::from_str(raw.get())
    }
}

/// A `message` read in its line's own pass, when every block of it is a text block: what
/// [`MessageBody::parse`] makes of it then, without reading it twice. A message with any other
/// block is refused (the caller reads that line raw, and [`MessageBody`] keeps the block).
#[derive(Debug, Deserialize)]
pub struct TextMessage<'a> {
    #[serde(borrow, default)]
    pub role: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Vec<TextOnly<'a>>,
}

impl<'a> TextMessage<'a> {
    /// The message as [`MessageBody::parse`] reads it.
    pub fn into_body(self) -> MessageBody<'a> {
        MessageBody { role: self.role, content: self.content.into_iter().map(|t| ContentBlock::Text(t.0)).collect() }
    }
}

/// A content block that must be a text block.
#[derive(Debug)]
struct TextOnly<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for TextOnly<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match TextBlockKeys::deserialize(d)?.text() {
            Some(text) => Ok(TextOnly(text)),
            None => Err(de::Error::custom("a content block other than text")),
        }
    }
}

/// The `tool_call` object: exactly one key ending in `ToolCall` is the tool (SPEC §1.1 rule 3);
/// the known siblings are metadata; anything else is kept.
/// `R` is how the payload's `result` is read (see [`ResultField`]).
#[derive(Debug)]
pub struct ToolCallObject<'a, R = &'a RawValue> {
    /// e.g. `shellToolCall`.
    pub key: Option<Cow<'a, str>>,
    /// What is under `key`, read in the same pass as the rest of the object.
    pub payload: Option<ToolPayload<'a, R>>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub started_at_ms: Option<Int>,
    pub completed_at_ms: Option<Int>,
    /// `hookAdditionalContexts`, `description`, `isBackground`, further `*ToolCall` keys and
    /// unknown keys, verbatim.
    pub rest: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a, R> Default for ToolCallObject<'a, R> {
    fn default() -> Self {
        ToolCallObject {
            key: None,
            payload: None,
            tool_call_id: None,
            started_at_ms: None,
            completed_at_ms: None,
            rest: Vec::new(),
        }
    }
}

impl<'a> ToolCallObject<'a> {
    pub fn parse(raw: &'a RawValue) -> Result<ToolCallObject<'a>, serde_json::Error> {
        serde_json::from_str(raw.get())
    }
}

impl<'de, R: ResultField<'de>> Deserialize<'de> for ToolCallObject<'de, R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<R>(std::marker::PhantomData<R>);
        impl<'de, R: ResultField<'de>> Visitor<'de> for V<R> {
            type Value = ToolCallObject<'de, R>;
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
                                .next_value::<ToolPayload<'de, R>>()
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
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// The payload under the `<x>ToolCall` key: `{args?, result?, …}`.
#[derive(Debug)]
pub struct ToolPayload<'a, R = &'a RawValue> {
    pub args: Option<&'a RawValue>,
    pub result: Option<R>,
    pub rest: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a, R> Default for ToolPayload<'a, R> {
    fn default() -> Self {
        ToolPayload { args: None, result: None, rest: Vec::new() }
    }
}

/// How a tool payload's `result` is read: kept raw (`&RawValue`; a `null` result is then kept
/// as an unknown key like any other), or as its [`ArmedResult`] in the payload's own pass, which
/// refuses what the raw read keeps (`null`, a result without an arm): the caller then reads that
/// line raw.
pub trait ResultField<'de>: Sized {
    /// Read the value of the `result` key: the result, or a value kept as an unknown key.
    fn read<A: MapAccess<'de>>(map: &mut A) -> Result<Result<Self, &'de RawValue>, A::Error>;
}

impl<'de> ResultField<'de> for &'de RawValue {
    fn read<A: MapAccess<'de>>(map: &mut A) -> Result<Result<Self, &'de RawValue>, A::Error> {
        let v: &'de RawValue = map.next_value()?;
        Ok(if v.get() != "null" { Ok(v) } else { Err(v) })
    }
}

impl<'de> ResultField<'de> for ArmedResult<'de> {
    fn read<A: MapAccess<'de>>(map: &mut A) -> Result<Result<Self, &'de RawValue>, A::Error> {
        map.next_value().map(Ok)
    }
}

impl<'a> ToolPayload<'a> {
    pub fn parse(raw: &'a RawValue) -> Result<ToolPayload<'a>, serde_json::Error> {
        serde_json::from_str(raw.get())
    }
}

impl<'de, R: ResultField<'de>> Deserialize<'de> for ToolPayload<'de, R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<R>(std::marker::PhantomData<R>);
        impl<'de, R: ResultField<'de>> Visitor<'de> for V<R> {
            type Value = ToolPayload<'de, R>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool payload object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = ToolPayload::default();
                while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
                    if key == "result" {
                        match R::read(&mut map)? {
                            Ok(r) => out.result = Some(r),
                            Err(v) => out.rest.push((key, v)),
                        }
                        continue;
                    }
                    let v: &'de RawValue = map.next_value()?;
                    match key.as_ref() {
                        "args" if v.get() != "null" => out.args = Some(v),
                        _ => out.rest.push((key, v)),
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
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
        Ok(Self::from_entries(serde_json::from_str::<RawEntries<'a>>(raw.get())?.0))
    }

    /// The result, when it has an arm.
    pub fn armed(self) -> Result<ArmedResult<'a>, ResultObject<'a>> {
        match self.arm {
            Some(arm) => Ok(ArmedResult { arm, rest: self.rest }),
            None => Err(self),
        }
    }

    fn from_entries(entries: Vec<(Str<'a>, &'a RawValue)>) -> ResultObject<'a> {
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
        out
    }
}

/// A result with an arm, read in its payload's own pass ([`ResultField`]): what
/// [`ResultObject::parse`] makes of it. A result without an arm is refused: it is kept whole, so
/// it is read raw.
#[derive(Debug)]
pub struct ArmedResult<'a> {
    /// The arm key and its inner object.
    pub arm: (Cow<'a, str>, &'a RawValue),
    /// Sibling keys (`isBackground`, `terminalsFolder`, …).
    pub rest: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'de> Deserialize<'de> for ArmedResult<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let RawEntries(entries) = RawEntries::deserialize(d)?;
        ResultObject::from_entries(entries).armed().map_err(|_| de::Error::custom("a result without an arm"))
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
