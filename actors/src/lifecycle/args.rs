//! The few call arguments a lifecycle line reads (its label, the pi-bridge check), looked up in
//! the args tree the call carries — read once from the recorded text and shared with every stage
//! after this one. A key counts only when its value is a string; args that are not an object (or
//! that no tree holds) read as no args at all.

use serde_json::{Map, Value};

/// The args of one call, as a lifecycle line reads them.
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelArgs<'a>(Option<&'a Map<String, Value>>);

impl<'a> LabelArgs<'a> {
    pub fn of(tree: Option<&'a Value>) -> LabelArgs<'a> {
        LabelArgs(tree.and_then(Value::as_object))
    }

    /// `args[key]` when it is a string.
    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.0?.get(key)?.as_str()
    }

    /// The first of `keys` whose value is a string.
    pub fn first(&self, keys: &[&str]) -> Option<&'a str> {
        keys.iter().find_map(|k| self.str(k))
    }

    /// How many items `todos` has (0 when it is not a list).
    pub fn todos(&self) -> usize {
        self.0.and_then(|o| o.get("todos")).and_then(Value::as_array).map_or(0, Vec::len)
    }

    /// `args.query` of an MCP call that is really a web search (`args.search_term` when it has no
    /// `query`).
    pub fn inner_query(&self) -> Option<&'a str> {
        let inner = self.0?.get("args")?.as_object()?;
        match inner.get("query") {
            None => inner.get("search_term")?.as_str(),
            Some(q) => q.as_str(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_strings_count_and_lists_are_counted() {
        let v = json!({"toolName": 3, "tool_name": "t", "todos": [1, {}, []], "args": "x"});
        let a = LabelArgs::of(Some(&v));
        assert_eq!(a.first(&["toolName", "tool_name"]), Some("t"));
        assert_eq!(a.todos(), 3);
        assert_eq!(a.inner_query(), None);
        let list = json!(["toolName", "a"]);
        let none = LabelArgs::of(Some(&list));
        assert_eq!((none.str("toolName"), none.todos()), (None, 0), "only objects have keys");
    }

    #[test]
    fn a_web_search_query_falls_back_only_when_missing() {
        let v = json!({"args": {"search_term": "b"}});
        assert_eq!(LabelArgs::of(Some(&v)).inner_query(), Some("b"));
        let v = json!({"args": {"query": 1, "search_term": "b"}});
        assert_eq!(LabelArgs::of(Some(&v)).inner_query(), None);
    }
}
