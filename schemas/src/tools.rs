//! The tool registry (SPEC §4): the one table every other part of toolstream consults for a tool's
//! canonical name, aliases, wire key, pi card, neutral title and lifecycle flags.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The 18 canonical tool kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolKind {
    Read,
    Grep,
    Glob,
    Ls,
    Shell,
    Edit,
    Write,
    Delete,
    ReadLints,
    UpdateTodos,
    CreatePlan,
    Task,
    GenerateImage,
    Mcp,
    SemSearch,
    RecordScreen,
    WebSearch,
    WebFetch,
}

/// Which pi card a tool renders as (SPEC §4, column "pi card").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PiCard {
    Read,
    Grep,
    Find,
    Ls,
    Bash,
    /// Native `edit` when the recorded args truthfully fit pi's edit schema, else `cursor`.
    EditOrCursor,
    /// Native `write` when content was recorded, else `cursor`.
    WriteOrCursor,
    /// The neutral `cursor` activity card.
    Cursor,
}

/// One row of the registry.
#[derive(Debug)]
pub struct ToolSpec {
    pub kind: ToolKind,
    /// Canonical name, as used in stats, traces and SDK `ToolCall.type`.
    pub canonical: &'static str,
    /// The Cursor CLI `tool_call` key (`<canonical>ToolCall`).
    pub cli_key: &'static str,
    /// Lower-case aliases (besides the canonical name itself).
    pub aliases: &'static [&'static str],
    pub pi_card: PiCard,
    /// Neutral title, e.g. `Cursor shell`.
    pub title: &'static str,
    /// Whether a deferred in-progress lifecycle line may be shown (SPEC §6).
    pub lifecycle: bool,
    /// Fast local discovery tool (stale starts are suppressed, SPEC §5.3).
    pub fast_local: bool,
    /// Default lifecycle label when no better one can be derived.
    pub default_label: &'static str,
}

#[allow(clippy::too_many_arguments)] // one argument per registry column
const fn spec(
    kind: ToolKind,
    canonical: &'static str,
    cli_key: &'static str,
    aliases: &'static [&'static str],
    pi_card: PiCard,
    title: &'static str,
    lifecycle: bool,
    fast_local: bool,
    default_label: &'static str,
) -> ToolSpec {
    ToolSpec { kind, canonical, cli_key, aliases, pi_card, title, lifecycle, fast_local, default_label }
}

use PiCard as C;
use ToolKind as K;

/// The registry, in SPEC §4 order. Index with [`ToolKind::spec`].
pub static REGISTRY: [ToolSpec; 18] = [
    spec(K::Read, "read", "readToolCall", &["read_file", "readfile"], C::Read, "Cursor read", false, true, "read"),
    spec(K::Grep, "grep", "grepToolCall", &["grep_search", "search"], C::Grep, "Cursor grep", false, true, "grep"),
    spec(K::Glob, "glob", "globToolCall", &["file_search"], C::Find, "Cursor find", false, true, "find"),
    spec(K::Ls, "ls", "lsToolCall", &["list_dir"], C::Ls, "Cursor ls", false, true, "ls"),
    spec(
        K::Shell,
        "shell",
        "shellToolCall",
        &["run_terminal_cmd", "terminal", "bash"],
        C::Bash,
        "Cursor shell",
        true,
        false,
        "shell",
    ),
    spec(
        K::Edit,
        "edit",
        "editToolCall",
        &[
            "strreplace",
            "str_replace",
            "str-replace",
            "edit_file",
            "editfile",
            "edit_notebook",
            "editnotebook",
            "notebook_edit",
            "notebookedit",
            "multiedit",
        ],
        C::EditOrCursor,
        "Cursor edit",
        false,
        false,
        "edit",
    ),
    spec(
        K::Write,
        "write",
        "writeToolCall",
        &["write_file", "writefile"],
        C::WriteOrCursor,
        "Cursor write",
        false,
        false,
        "write",
    ),
    spec(K::Delete, "delete", "deleteToolCall", &[], C::Cursor, "Cursor delete", false, false, "delete"),
    spec(
        K::ReadLints,
        "readLints",
        "readLintsToolCall",
        &[],
        C::Cursor,
        "Cursor diagnostics",
        false,
        false,
        "diagnostics",
    ),
    spec(
        K::UpdateTodos,
        "updateTodos",
        "updateTodosToolCall",
        &["todowrite"],
        C::Cursor,
        "Cursor todos",
        true,
        false,
        "todos",
    ),
    spec(K::CreatePlan, "createPlan", "createPlanToolCall", &[], C::Cursor, "Cursor plan", true, false, "plan"),
    spec(K::Task, "task", "taskToolCall", &["subagent"], C::Cursor, "Cursor subagent", true, false, "task"),
    spec(
        K::GenerateImage,
        "generateImage",
        "generateImageToolCall",
        &[],
        C::Cursor,
        "Cursor image generation",
        true,
        false,
        "image generation",
    ),
    spec(K::Mcp, "mcp", "mcpToolCall", &[], C::Cursor, "Cursor MCP", true, false, "mcp"),
    spec(
        K::SemSearch,
        "semSearch",
        "semSearchToolCall",
        &[],
        C::Cursor,
        "Cursor semantic search",
        true,
        false,
        "semantic search",
    ),
    spec(
        K::RecordScreen,
        "recordScreen",
        "recordScreenToolCall",
        &[],
        C::Cursor,
        "Cursor screen recording",
        true,
        false,
        "screen recording",
    ),
    spec(
        K::WebSearch,
        "webSearch",
        "webSearchToolCall",
        &["websearch", "web_search", "web-search"],
        C::Cursor,
        "Cursor web search",
        true,
        false,
        "web search",
    ),
    spec(
        K::WebFetch,
        "webFetch",
        "webFetchToolCall",
        &["webfetch", "web_fetch", "web-fetch"],
        C::Cursor,
        "Cursor web fetch",
        true,
        false,
        "web fetch",
    ),
];

impl ToolKind {
    /// All kinds, in registry order.
    pub fn all() -> impl Iterator<Item = ToolKind> {
        REGISTRY.iter().map(|s| s.kind)
    }

    /// This kind's registry row.
    pub fn spec(self) -> &'static ToolSpec {
        // REGISTRY is declared in enum order; the unit test `registry_is_in_enum_order` holds that.
        &REGISTRY[self as usize]
    }

    pub fn canonical(self) -> &'static str {
        self.spec().canonical
    }

    /// Exact canonical name (case-sensitive), e.g. `readLints`.
    pub fn from_canonical(name: &str) -> Option<ToolKind> {
        REGISTRY.iter().find(|s| s.canonical == name).map(|s| s.kind)
    }

    /// The Cursor CLI key, e.g. `shellToolCall`.
    pub fn from_cli_key(key: &str) -> Option<ToolKind> {
        REGISTRY.iter().find(|s| s.cli_key == key).map(|s| s.kind)
    }

    /// Case-insensitive lookup by canonical name or alias, whitespace collapsed (SPEC §4).
    /// Only names in the table match: inherited/object-like keys such as `constructor` never do.
    pub fn from_alias(name: &str) -> Option<ToolKind> {
        let norm = normalize_name(name);
        REGISTRY
            .iter()
            .find(|s| s.canonical.eq_ignore_ascii_case(&norm) || s.aliases.iter().any(|a| *a == norm))
            .map(|s| s.kind)
    }
}

impl fmt::Display for ToolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.canonical())
    }
}

/// Lower-cases and collapses runs of whitespace to a single space, trimming the ends.
fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for word in name.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// The longest unknown tool name kept (SPEC §4).
pub const MAX_UNKNOWN_NAME_CHARS: usize = 120;

/// A tool as seen on the wire: one of the 18 kinds, or an unknown name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tool {
    Known(ToolKind),
    /// An unknown tool, named by its key minus `ToolCall` (≤120 chars).
    Unknown(Box<str>),
}

impl Tool {
    /// Resolve a Cursor CLI `tool_call` key such as `shellToolCall` or `getMcpToolsToolCall`.
    pub fn from_cli_key(key: &str) -> Tool {
        match ToolKind::from_cli_key(key) {
            Some(kind) => Tool::Known(kind),
            None => Tool::unknown(key.strip_suffix("ToolCall").unwrap_or(key)),
        }
    }

    /// Resolve a name from the SDK (`ToolCall.type|name`), a bubble or an alias.
    pub fn from_name(name: &str) -> Tool {
        match ToolKind::from_alias(name) {
            Some(kind) => Tool::Known(kind),
            None => Tool::unknown(name),
        }
    }

    /// An unknown tool; the name is cut to [`MAX_UNKNOWN_NAME_CHARS`] characters.
    pub fn unknown(name: &str) -> Tool {
        let cut = match name.char_indices().nth(MAX_UNKNOWN_NAME_CHARS) {
            Some((i, _)) => &name[..i],
            None => name,
        };
        Tool::Unknown(cut.into())
    }

    pub fn kind(&self) -> Option<ToolKind> {
        match self {
            Tool::Known(k) => Some(*k),
            Tool::Unknown(_) => None,
        }
    }

    /// Canonical name or the unknown name.
    pub fn name(&self) -> &str {
        match self {
            Tool::Known(k) => k.canonical(),
            Tool::Unknown(n) => n,
        }
    }

    /// [`Tool::name`], owned only for an unknown tool (a known tool's name is static).
    pub fn name_cow(&self) -> Cow<'static, str> {
        match self {
            Tool::Known(k) => Cow::Borrowed(k.canonical()),
            Tool::Unknown(n) => Cow::Owned(n.to_string()),
        }
    }

    /// Neutral title: the registry title, or `Cursor <name>` for unknown tools.
    pub fn title(&self) -> Cow<'static, str> {
        match self {
            Tool::Known(k) => Cow::Borrowed(k.spec().title),
            Tool::Unknown(n) => Cow::Owned(format!("Cursor {n}")),
        }
    }

    pub fn pi_card(&self) -> PiCard {
        self.kind().map_or(PiCard::Cursor, |k| k.spec().pi_card)
    }

    pub fn is_lifecycle(&self) -> bool {
        self.kind().is_some_and(|k| k.spec().lifecycle)
    }

    pub fn is_fast_local(&self) -> bool {
        self.kind().is_some_and(|k| k.spec().fast_local)
    }

    /// Reclassify an `mcp` call by its `toolName` (SPEC §4): web search / web fetch names become
    /// those tools; anything else stays as it is.
    pub fn reclassified_for_mcp(self, mcp_tool_name: Option<&str>) -> Tool {
        match (&self, mcp_tool_name) {
            (Tool::Known(ToolKind::Mcp), Some(name)) => match web_tool_for_mcp_name(name) {
                Some(kind) => Tool::Known(kind),
                None => self,
            },
            _ => self,
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Tool {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `^(web[-_ ]?search|search[-_ ]?web|websearch|browser[-_ ]?search)$` → webSearch,
/// `^(web[-_ ]?fetch|fetch[-_ ]?web|webfetch|browser[-_ ]?fetch|fetch[-_ ]?url)$` → webFetch,
/// case-insensitive.
pub fn web_tool_for_mcp_name(name: &str) -> Option<ToolKind> {
    let lower = name.to_ascii_lowercase();
    let pair = |a: &str, b: &str| -> bool {
        let Some(rest) = lower.strip_prefix(a) else {
            return false;
        };
        let rest = rest.strip_prefix(['-', '_', ' ']).unwrap_or(rest);
        rest == b
    };
    if pair("web", "search") || pair("search", "web") || pair("browser", "search") {
        Some(ToolKind::WebSearch)
    } else if pair("web", "fetch") || pair("fetch", "web") || pair("browser", "fetch") || pair("fetch", "url") {
        Some(ToolKind::WebFetch)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_in_enum_order() {
        for (i, s) in REGISTRY.iter().enumerate() {
            assert_eq!(s.kind as usize, i, "{}", s.canonical);
            assert_eq!(s.cli_key, format!("{}ToolCall", s.canonical));
        }
    }

    #[test]
    fn cli_keys_resolve_and_unknown_keys_keep_their_name() {
        assert_eq!(Tool::from_cli_key("shellToolCall"), Tool::Known(ToolKind::Shell));
        assert_eq!(Tool::from_cli_key("readLintsToolCall"), Tool::Known(ToolKind::ReadLints));
        assert_eq!(Tool::from_cli_key("getMcpToolsToolCall"), Tool::Unknown("getMcpTools".into()));
        assert_eq!(Tool::from_cli_key("awaitToolCall").title(), "Cursor await");
    }

    #[test]
    fn aliases_are_case_insensitive_with_whitespace_collapsed() {
        assert_eq!(ToolKind::from_alias("Read_File"), Some(ToolKind::Read));
        assert_eq!(ToolKind::from_alias("  BASH "), Some(ToolKind::Shell));
        assert_eq!(ToolKind::from_alias("readlints"), Some(ToolKind::ReadLints));
        assert_eq!(ToolKind::from_alias("StrReplace"), Some(ToolKind::Edit));
        assert_eq!(ToolKind::from_alias("file_search"), Some(ToolKind::Glob));
        assert_eq!(ToolKind::from_alias("constructor"), None);
        // The names Cursor's hooks and agent transcripts use (SPEC §1.5, §1.6).
        for (name, kind) in [
            ("Shell", ToolKind::Shell),
            ("Read", ToolKind::Read),
            ("ReadFile", ToolKind::Read),
            ("Write", ToolKind::Write),
            ("StrReplace", ToolKind::Edit),
            ("Edit", ToolKind::Edit),
            ("MultiEdit", ToolKind::Edit),
            ("Delete", ToolKind::Delete),
            ("Grep", ToolKind::Grep),
            ("Glob", ToolKind::Glob),
            ("LS", ToolKind::Ls),
            ("Task", ToolKind::Task),
            ("Subagent", ToolKind::Task),
            ("TodoWrite", ToolKind::UpdateTodos),
            ("WebSearch", ToolKind::WebSearch),
            ("WebFetch", ToolKind::WebFetch),
        ] {
            assert_eq!(ToolKind::from_alias(name), Some(kind), "{name}");
        }
        assert_eq!(ToolKind::from_alias("toString"), None);
    }

    #[test]
    fn unknown_names_are_bounded() {
        let long = "x".repeat(500);
        assert_eq!(Tool::unknown(&long).name().chars().count(), MAX_UNKNOWN_NAME_CHARS);
    }

    #[test]
    fn mcp_web_tools_are_reclassified() {
        let mcp = Tool::Known(ToolKind::Mcp);
        for n in ["WebSearch", "web_search", "web-search", "web search", "search_web", "browser-search"] {
            assert_eq!(mcp.clone().reclassified_for_mcp(Some(n)), Tool::Known(ToolKind::WebSearch), "{n}");
        }
        for n in ["WebFetch", "web_fetch", "fetch_url", "fetchurl", "browser_fetch", "fetch-web"] {
            assert_eq!(mcp.clone().reclassified_for_mcp(Some(n)), Tool::Known(ToolKind::WebFetch), "{n}");
        }
        for n in ["external_search", "websearcher", "web__search", "fetch"] {
            assert_eq!(mcp.clone().reclassified_for_mcp(Some(n)), mcp, "{n}");
        }
        assert_eq!(mcp.clone().reclassified_for_mcp(Some("WebSearch")).title(), "Cursor web search");
    }
}
