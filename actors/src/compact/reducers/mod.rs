//! Code reducers: the few outputs a line rule cannot reduce because they are structured (JSON).
//! A rule names one with `reducer = "…"`; it rewrites the whole output before the line rules run
//! and returns it unchanged (borrowed) when the output is not what it expects.

mod cloud;
mod json;

use std::borrow::Cow;

/// A code reducer a rule may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeReducer {
    /// A JSON document rendered as indented `key: value` lines.
    JsonDoc,
    /// `gh … --json` issues and pull requests as `#N title {labels} date` lines.
    GhJson,
}

impl CodeReducer {
    /// Every code reducer with the name rules use for it.
    pub const ALL: &'static [(&'static str, CodeReducer)] =
        &[("json-doc", CodeReducer::JsonDoc), ("gh-json", CodeReducer::GhJson)];

    pub fn from_name(name: &str) -> Option<CodeReducer> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
    }

    pub fn apply(self, output: &str) -> Cow<'_, str> {
        match self {
            CodeReducer::JsonDoc => json::render(output),
            CodeReducer::GhJson => cloud::gh_items(output),
        }
    }
}
