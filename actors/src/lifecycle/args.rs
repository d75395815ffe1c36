//! The few call arguments a lifecycle line reads (its label, the pi-bridge check), read from the
//! index of the args' fields the call carries — made once from the recorded text and shared with
//! every stage after this one. A key counts only when its value is a string; args that are not
//! an object read as no args at all.

use std::borrow::Cow;

use serde_json::Value;
use toolstream_schemas::CallArgs;

/// The args of one call, as a lifecycle line reads them.
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelArgs<'a>(Option<&'a CallArgs>);

impl<'a> LabelArgs<'a> {
    pub fn of(args: Option<&'a CallArgs>) -> LabelArgs<'a> {
        LabelArgs(args.filter(|a| a.is_object()))
    }

    /// `args[key]` when it is a string.
    pub fn str(&self, key: &str) -> Option<Cow<'a, str>> {
        self.0?.str_field(key)
    }

    /// The first of `keys` whose value is a string.
    pub fn first(&self, keys: &[&str]) -> Option<Cow<'a, str>> {
        keys.iter().find_map(|k| self.str(k))
    }

    /// How many items `todos` has (0 when it is not a list).
    pub fn todos(&self) -> usize {
        self.0.and_then(|a| a.field_as::<Vec<serde::de::IgnoredAny>>("todos")).map_or(0, |t| t.len())
    }

    /// `args.query` of an MCP call that is really a web search (`args.search_term` when it has no
    /// `query`).
    pub fn inner_query(&self) -> Option<String> {
        let inner = self.0?.field_as::<Value>("args")?;
        let inner = inner.as_object()?;
        match inner.get("query") {
            None => inner.get("search_term")?.as_str().map(str::to_owned),
            Some(q) => q.as_str().map(str::to_owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> CallArgs {
        CallArgs::from_json(text).unwrap()
    }

    #[test]
    fn only_strings_count_and_lists_are_counted() {
        let v = args(r#"{"toolName": 3, "tool_name": "t", "todos": [1, {}, []], "args": "x"}"#);
        let a = LabelArgs::of(Some(&v));
        assert_eq!(a.first(&["toolName", "tool_name"]).as_deref(), Some("t"));
        assert_eq!(a.todos(), 3);
        assert_eq!(a.inner_query(), None);
        let list = args(r#"["toolName", "a"]"#);
        let none = LabelArgs::of(Some(&list));
        assert_eq!((none.str("toolName"), none.todos()), (None, 0), "only objects have keys");
        let not_a_list = args(r#"{"todos": {"a": 1}}"#);
        assert_eq!(LabelArgs::of(Some(&not_a_list)).todos(), 0);
    }

    #[test]
    fn a_web_search_query_falls_back_only_when_missing() {
        let v = args(r#"{"args": {"search_term": "b"}}"#);
        assert_eq!(LabelArgs::of(Some(&v)).inner_query().as_deref(), Some("b"));
        let v = args(r#"{"args": {"query": 1, "search_term": "b"}}"#);
        assert_eq!(LabelArgs::of(Some(&v)).inner_query(), None);
    }
}
