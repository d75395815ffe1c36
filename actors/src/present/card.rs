//! Card building: one completed (or never completed) call → one [`Card`] whose every string is
//! scrubbed and bounded (SPEC §4, §5.3, §8), with its title line, collapsed preview, numbered diff
//! lines and pi replay arguments. Pure functions.

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;
use toolstream_schemas::cursor_cli::tool_models::ResultModel;

use toolstream_schemas::cursor_exec::to_openai::OpenAiToolCall;
use toolstream_schemas::pi_contract::NEUTRAL_REPLAY_TOOL;
use toolstream_schemas::{
    CallArgs, CallRef, Card, CardDetails, IncompleteCall, LineKind, ResultStatus, StyledLine, Tool, ToolEvent,
    ToolKind, ToolResult,
};

use super::bodies::{
    render_known, render_unknown, summary_from_args, transcript_header, CardArgs, Outcome, RenderCtx, Rendered,
    ShellBody,
};
use super::bounds::{
    bound_shell_output, bound_transcript, display_line, preview, relative_path, shell_preview, Preview,
    DISPLAY_LINE_CHARS, TRANSCRIPT_MAX_CHARS,
};
use super::diff::{diff_preview, format_diff_line, parse_unified, DiffLine, DiffLineKind, DIFF_PREVIEW_COLLAPSED};
use super::display_args::{display_args, incomplete_args, string_any, ArgFields, DisplayInput};
use super::scrub::Scrubber;
use crate::compact::{compact, Request};

/// Which shell results are compacted (SPEC §10): what pi's model reads (`--compact`), what the
/// terminal cards show (`--compact-cards`). Compaction reads the whole recorded output, before
/// any bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compaction {
    pub model: bool,
    pub cards: bool,
}

/// What a card needs besides the call itself.
#[derive(Clone, Debug)]
pub struct CardContext<'a> {
    pub scrubber: &'a Scrubber,
    /// The run's working directory: paths inside it are shown relative.
    pub cwd: Option<&'a str>,
    pub turn: u32,
    /// `cursor-replay-<run>-tool-<k>`.
    pub replay_id: String,
    /// Keep the recorded args and result on the card (scrubbed, bounded) for sinks that store
    /// the call itself (Cursor bubbles); off, nobody pays for it.
    pub keep_recorded: bool,
    pub compact: Compaction,
}

/// Longest string kept in replay arguments.
const MAX_ARG_CHARS: usize = 24_000;

/// Build the card of a completed call.
pub fn build_card(mut ctx: CardContext<'_>, ev: &ToolEvent) -> Card {
    // The args and the result were each read once (the args' fields maybe by an earlier stage);
    // every part of the card reads those. The card of a known tool reads a few fields of the
    // args; an unknown tool's lists them all (from their tree).
    let args = ev.args.as_deref();
    if let (true, Some(r)) = (ctx.keep_recorded, &ev.result) {
        // Kept as recorded: read as a tree first, the model is then read from it.
        r.tree();
    }
    let rctx = RenderCtx { cwd: ctx.cwd };
    let status = ev.result.as_ref().map(|r| r.status.clone());
    let replay_id = std::mem::take(&mut ctx.replay_id);
    let ctx = &ctx;
    let rendered = match (ev.tool.kind(), ev.payload_kind()) {
        (Some(kind), Some(payload_kind)) => {
            // MCP calls reclassified as web search/fetch keep MCP-shaped payloads.
            let from_mcp = payload_kind != kind;
            let card_args = args.and_then(CardArgs::of);
            let outcome = outcome(payload_kind, ev.result.as_ref());
            let mut r = render_known(&rctx, payload_kind, card_args.as_ref(), &outcome);
            if from_mcp {
                r.summary = args.and_then(web_query_from_mcp).unwrap_or_default();
                r.summary_only = true;
                r.header = transcript_header(kind, &r.summary, None);
            }
            r
        }
        _ => render_unknown(ev.tool.name(), args.and_then(CallArgs::tree), ev.result.as_ref()),
    };
    let mut card = assemble(ctx, replay_id, &ev.tool, rendered, args, status, ev.call.call_ref.clone());
    card.started_ms = ev.started_at_ms;
    card.completed_ms = ev.completed_at_ms;
    // An exec call (SPEC §1.4) carries the OpenAI tool call it maps to, for the OpenAI sink.
    if let Some(call) = &ev.openai_call {
        let mut shown = call.to_json();
        ctx.scrubber.scrub_json(&mut shown);
        card.openai_call = OpenAiToolCall::from_json(&shown).map(Arc::new);
        Arc::make_mut(&mut card.details).openai_tool_call = Some(shown);
    }
    if ctx.keep_recorded {
        card.recorded_result = ev.result.as_ref().and_then(ToolResult::tree).map(|v| recorded(ctx, v.clone()));
        card.recorded_args = args.and_then(CallArgs::tree).map(|v| recorded(ctx, v.clone()));
    }
    card
}

/// A recorded value as a card keeps it: scrubbed and bounded.
fn recorded(ctx: &CardContext<'_>, mut v: Value) -> Value {
    ctx.scrubber.scrub_json(&mut v);
    bound_strings(&mut v);
    v
}

/// The visible error card of a call that never completed (SPEC §5.3).
pub fn incomplete_card(mut ctx: CardContext<'_>, rec: &IncompleteCall, args: Option<&CallArgs>) -> Card {
    let replay_id = std::mem::take(&mut ctx.replay_id);
    let ctx = &ctx;
    let summary = match (rec.source_tool.kind(), args.and_then(CardArgs::of)) {
        (Some(kind), Some(a)) => summary_from_args(&RenderCtx { cwd: ctx.cwd }, kind, &a),
        _ => String::new(),
    };
    let reason = rec.reason.text();
    let rendered = Rendered {
        summary,
        body: format!("{} did not complete\n{reason}", rec.title),
        is_error: true,
        pi_tool: NEUTRAL_REPLAY_TOOL,
        variant: "activity",
        ..Rendered::default()
    };
    let recorded_args =
        if ctx.keep_recorded { args.and_then(CallArgs::tree).map(|v| recorded(ctx, v.clone())) } else { None };
    let mut card = assemble(ctx, replay_id, &rec.source_tool, rendered, args, None, rec.call.clone());
    card.headline = format!("{} did not complete: {reason}", card.headline);
    // The title line says it all; the body (for pi) repeats it.
    card.preview.clear();
    card.preview_hidden = 0;
    card.pi_tool = NEUTRAL_REPLAY_TOOL.into();
    card.args = incomplete_args(&card.title, reason);
    card.incomplete = Some(rec.reason);
    card.recorded_args = recorded_args;
    card
}

fn outcome(kind: ToolKind, result: Option<&ToolResult>) -> Outcome<'_> {
    let Some(r) = result else {
        return Outcome::Missing;
    };
    match r.model(kind) {
        ResultModel::Success(s) => Outcome::Success(s),
        ResultModel::Failure(f) => Outcome::Failure(r.status.clone(), f),
        ResultModel::Unreadable => Outcome::Unreadable(r.status.clone(), r.value.get()),
    }
}

/// `args.args.{query|searchTerm|search_term|url}` of an MCP call that is really a web search/fetch.
fn web_query_from_mcp(args: &CallArgs) -> Option<String> {
    let inner = args.field_as::<Value>("args")?;
    ["query", "searchTerm", "search_term", "q", "url"]
        .iter()
        .find_map(|k| inner.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
}

fn assemble(
    ctx: &CardContext<'_>,
    replay_id: String,
    tool: &Tool,
    r: Rendered,
    args: Option<&CallArgs>,
    status: Option<ResultStatus>,
    call: CallRef,
) -> Card {
    let sc = ctx.scrubber;
    let title = tool.title();
    let summary = display_line(&sc.scrub(&r.summary), DISPLAY_LINE_CHARS);
    let headline = match (tool.kind(), r.diff_stats) {
        (Some(ToolKind::Shell), _) => ["$ ", &summary].concat(),
        (Some(ToolKind::Read), _) => ["read ", &summary].concat(),
        (Some(ToolKind::Edit), Some((added, removed))) => {
            format!("edit {summary} added {added} {}, removed {removed} {}", lines(added), lines(removed))
        }
        (Some(ToolKind::Edit), None) => ["edit ", &summary].concat(),
        _ if summary.is_empty() => title.clone().into_owned(),
        _ => [&*title, " ", &summary].concat(),
    };
    // An edit's body is its diff: scrubbed and bounded once for both.
    let scrubbed_diff = r.diff.as_deref().map(|d| sc.scrub(d));
    let body_is_diff = r.diff.as_deref() == Some(r.body.as_str());
    // A shell's output is bounded as pi's bash bounds it, compacted first where asked for.
    let mut shell = r.shell.as_ref().map(|b| ShellShown::new(ctx, b, &r.summary));
    let content = match (&scrubbed_diff, &mut shell) {
        (_, Some(shell)) => std::mem::take(&mut shell.content),
        (Some(d), None) if body_is_diff => bound_transcript(d).into_owned(),
        _ => bound_transcript(&sc.scrub(&r.body)).into_owned(),
    };
    // Web activity stays a title line when collapsed; an error still shows why.
    let summary_only = r.summary_only && !r.is_error;

    // Parsed once: for the terminal's styled lines and for pi's numbered `details.diff`.
    let parsed_diff = scrubbed_diff.as_deref().map(parse_unified);
    let (preview_lines, preview_hidden, diff, diff_hidden) = match &parsed_diff {
        Some(parsed) => {
            // The collapsed preview is the first lines of the expanded one.
            let (expanded, e_more) = styled_diff(parsed);
            let (preview_lines, preview_hidden) = if summary_only {
                (Vec::new(), 0)
            } else {
                let collapsed = expanded[..expanded.len().min(DIFF_PREVIEW_COLLAPSED)].to_vec();
                let hidden = parsed.len() - collapsed.len();
                (collapsed, hidden)
            };
            (preview_lines, preview_hidden, expanded, e_more)
        }
        None if summary_only => (Vec::new(), 0, Vec::new(), 0),
        None => {
            let p = match &mut shell {
                Some(shell) => std::mem::take(&mut shell.preview),
                None => preview(&content, false),
            };
            let lines = p.lines.into_iter().map(|text| StyledLine { kind: LineKind::Plain, text }).collect();
            (lines, p.hidden_lines, Vec::new(), 0)
        }
    };

    // Display arguments are built from the recorded args, scrubbed and bounded (field by field:
    // a card shows a few of them).
    // Args that are not an object are shown as one field, `value`.
    let wrapped: Option<Map<String, Value>> = match args {
        Some(a) if !a.is_object() => a.tree().map(|other| Map::from_iter([("value".to_owned(), other.clone())])),
        _ => None,
    };
    let raw = match (args, &wrapped) {
        (_, Some(map)) => Some(RecordedArgs { fields: Fields::Map(map), scrubber: sc }),
        (Some(a), None) if a.is_object() => Some(RecordedArgs { fields: Fields::Args(a), scrubber: sc }),
        _ => None,
    };
    let (pi_tool, args) = display_args(&DisplayInput {
        kind: tool.kind(),
        pi_tool: r.pi_tool,
        raw: raw.as_ref().map(|r| r as &dyn ArgFields),
        cwd: ctx.cwd,
        title: &title,
        summary: &summary,
        body: &content,
    });
    let variant =
        if pi_tool == NEUTRAL_REPLAY_TOOL && r.variant.starts_with("native") { "activity" } else { r.variant };
    // What pi's model reads. Without a header or sections it is the body alone: the content,
    // already scrubbed and bounded (one pass over the body, not two).
    let result_text = if let Some(shell) = shell {
        shell.result_text.unwrap_or_else(|| content.clone())
    } else if r.header.is_none() && r.sections.is_empty() {
        if r.body.trim().is_empty() {
            String::new()
        } else {
            content.clone()
        }
    } else {
        bound_transcript(&sc.scrub(&r.result_text())).into_owned()
    };
    let details = CardDetails {
        variant,
        source_tool_name: tool.name_cow(),
        title: title.clone(),
        summary: (!r.is_error).then(|| summary.clone()),
        status,
        // pi's diff renderer (its native edit card, and the replay `cursor` card) colours
        // `details.diff` in pi's own form: numbered `+N`/`-N`/` N` lines, no unified headers.
        diff: parsed_diff.as_deref().map(|parsed| {
            let numbered: Vec<String> = parsed.iter().map(format_diff_line).collect();
            bound_transcript(&numbered.join("\n")).into_owned()
        }),
        // The result text starts with it; the replay renderers show the rest.
        header: r.header.as_deref().map(|h| display_line(&sc.scrub(h), TRANSCRIPT_MAX_CHARS)),
        // A write's preview (highlighted by language in pi) is its recorded content.
        content: (tool.kind() == Some(ToolKind::Write) && !r.is_error).then(|| content.clone()),
        // The replay card shows the image inline while the file can still be read.
        image_path: r.image_path.as_deref().map(|p| display_line(&sc.scrub(p), TRANSCRIPT_MAX_CHARS)),
        // The replay renderers infer a preview's language from it.
        path: match tool.kind() {
            Some(ToolKind::Edit | ToolKind::Write) => raw
                .as_ref()
                .and_then(|a| string_any(a, &["path", "filePath", "file_path"]))
                .map(|p| relative_path(&p, ctx.cwd)),
            _ => None,
        },
        openai_tool_call: None,
    };
    Card {
        turn: ctx.turn,
        call,
        replay_id,
        source_tool: tool.clone(),
        pi_tool: pi_tool.into(),
        title,
        summary,
        headline,
        args,
        content,
        result_text,
        preview: preview_lines,
        preview_hidden,
        diff,
        diff_hidden,
        details: Arc::new(details),
        is_error: r.is_error,
        started_ms: None,
        incomplete: None,
        completed_ms: None,
        recorded_result: None,
        recorded_args: None,
        openai_call: None,
    }
}

/// Recorded args as a card shows them: each field scrubbed and bounded as the whole object
/// would be (`Scrubber::scrub_field`), read only when asked for.
#[derive(Debug)]
struct RecordedArgs<'a> {
    fields: Fields<'a>,
    scrubber: &'a Scrubber,
}

/// Where recorded args' fields are read from.
#[derive(Debug)]
enum Fields<'a> {
    /// The args object itself (its fields found in its text).
    Args(&'a CallArgs),
    /// Args that are not an object, as `{"value": …}`.
    Map(&'a Map<String, Value>),
}

impl Fields<'_> {
    fn get(&self, key: &str) -> Option<Cow<'_, Value>> {
        match self {
            Fields::Args(a) => a.field_as::<Value>(key).map(Cow::Owned),
            Fields::Map(m) => m.get(key).map(Cow::Borrowed),
        }
    }
}

/// The args field in which Cursor repeats the call's id. Raw call ids are never shown (SPEC §1.1
/// rule 2); the card carries its hashed ref.
pub(super) const CALL_ID_ARG: &str = "toolCallId";

impl ArgFields for RecordedArgs<'_> {
    fn field(&self, key: &str) -> Option<Cow<'_, Value>> {
        if key == CALL_ID_ARG {
            return None;
        }
        let mut v = self.scrubber.scrub_field(&|k| self.fields.get(k), key)?;
        bound_strings(&mut v);
        Some(Cow::Owned(v))
    }

    fn has(&self, key: &str) -> bool {
        key != CALL_ID_ARG
            && match &self.fields {
                Fields::Args(a) => a.has(key),
                Fields::Map(m) => m.contains_key(key),
            }
    }
}

/// A shell call's body as its card shows it (SPEC §8): scrubbed; its output compacted (SPEC §10)
/// where asked for — whole, before any bound — then bounded as pi's bash bounds it.
struct ShellShown {
    /// What the terminal shows expanded (and pi's model reads, unless only its result text is
    /// compacted).
    content: String,
    /// What pi's model reads, when it differs from `content` (compacted for the model only).
    result_text: Option<String>,
    /// The collapsed preview: the first and the last lines of the whole body.
    preview: Preview,
}

impl ShellShown {
    /// `command`: what ran (it picks the compaction rules).
    fn new(ctx: &CardContext<'_>, recorded: &ShellBody, command: &str) -> ShellShown {
        let sc = ctx.scrubber;
        let output = sc.scrub(&recorded.output);
        let scrubbed_abort = recorded.aborted.as_deref().map(|a| sc.scrub(a));
        // The status lines are the body's own words; only the abort reason came from the input.
        let body = ShellBody {
            output: String::new(),
            status: recorded.status.clone(),
            aborted: scrubbed_abort.map(std::borrow::Cow::into_owned),
        };
        let command = sc.scrub(command);
        let compacted = |on: bool| -> Option<String> {
            on.then(|| {
                // No exit code: the body's own status line says it, after the output (the
                // compactor would add an `exit N` header of its own).
                let req = Request { command: Some(&command), output: &output, ..Request::default() };
                compact(&req).text
            })
        };
        let cards = compacted(ctx.compact.cards);
        let shown_output = cards.as_deref().unwrap_or(&output);
        let bounded = bound_shell_output(shown_output);
        let content = body.text_with(&bounded);
        // The preview reads the whole body: the content itself unless the bound cut it.
        let preview = match bounded {
            std::borrow::Cow::Borrowed(_) => shell_preview(&content),
            std::borrow::Cow::Owned(_) => shell_preview(&body.text_with(shown_output)),
        };
        let result_text = (ctx.compact.model != ctx.compact.cards).then(|| {
            let model = compacted(ctx.compact.model);
            body.text_with(&bound_shell_output(model.as_deref().unwrap_or(&output)))
        });
        ShellShown { content, result_text, preview }
    }
}

fn lines(n: i64) -> &'static str {
    if n == 1 {
        "line"
    } else {
        "lines"
    }
}

/// Numbered diff lines with their style, and how many were left out.
fn styled_diff(parsed: &[DiffLine]) -> (Vec<StyledLine>, usize) {
    let (texts, _marker) = diff_preview(parsed, true);
    let shown = texts.len();
    let styled = texts
        .into_iter()
        .zip(parsed)
        .map(|(text, l)| StyledLine {
            kind: match l.kind {
                DiffLineKind::Added => LineKind::Added,
                DiffLineKind::Removed => LineKind::Removed,
                DiffLineKind::Context => LineKind::Context,
            },
            text,
        })
        .collect();
    (styled, parsed.len().saturating_sub(shown))
}

/// Cut every string in `v` to [`MAX_ARG_CHARS`] (recorded file contents can be huge).
fn bound_strings(v: &mut Value) {
    match v {
        Value::String(s) if s.len() > MAX_ARG_CHARS => {
            if let Some((i, _)) = s.char_indices().nth(MAX_ARG_CHARS) {
                let more = s[i..].chars().count();
                s.truncate(i);
                s.push_str(&format!("… ({more} more chars truncated)"));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(bound_strings),
        Value::Object(o) => o.values_mut().for_each(bound_strings),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;
    use toolstream_schemas::{RawJson, ResultStatus};

    fn raw(s: &str) -> RawJson {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    fn ev(key: &str, args: Option<&str>, arm: &str, value: &str) -> ToolEvent {
        ToolEvent {
            call_id: "call-1".into(),
            tool: Tool::from_cli_key(key),
            wire_name: key.into(),
            args: args.map(|a| Arc::new(CallArgs::from_json(a).unwrap())),
            result: Some(ToolResult::new(ResultStatus::from_key(arm), raw(value))),
            model_call_id: None,
            started_at_ms: None,
            completed_at_ms: None,
            openai_call: None,
            reported_call_id: None,
            call: toolstream_schemas::CallIdent::default(),
            extra: Vec::new(),
        }
    }

    fn ctx(scrubber: &Scrubber) -> CardContext<'_> {
        CardContext {
            scrubber,
            cwd: Some("/w"),
            turn: 0,
            replay_id: "cursor-replay-r-tool-1".into(),
            keep_recorded: false,
            compact: Compaction::default(),
        }
    }

    #[test]
    fn failed_shell_is_an_error_card_with_exit_code() {
        let sc = Scrubber::default();
        let c = build_card(
            ctx(&sc),
            &ev(
                "shellToolCall",
                Some(r#"{"command":"false"}"#),
                "failure",
                r#"{"exitCode":1,"stdout":"","stderr":""}"#,
            ),
        );
        assert!(c.is_error);
        assert_eq!(c.headline, "$ false");
        assert_eq!(c.content, "Command exited with code 1");
        assert_eq!(c.pi_tool, "bash");
    }

    #[test]
    fn a_generated_image_shows_its_saved_path_and_names_it_for_pi() {
        let sc = Scrubber::default();
        let c = build_card(
            ctx(&sc),
            &ev(
                "generateImageToolCall",
                Some(r#"{"description":"a red square","filePath":"/w/assets/square.png"}"#),
                "success",
                r#"{"filePath":"/w/assets/square.png","imageData":"iVBORw0KGgo="}"#,
            ),
        );
        assert_eq!(c.pi_tool, "cursor");
        assert!(c.content.contains("Saved image to assets/square.png"), "{}", c.content);
        assert!(!c.content.contains("iVBORw0KGgo="), "the image data is not text");
        assert_eq!(c.details.image_path.as_deref(), Some("assets/square.png"));
    }

    #[test]
    fn rejected_shell_shows_reason_from_result_without_args() {
        let sc = Scrubber::default();
        let c = build_card(
            ctx(&sc),
            &ev(
                "shellToolCall",
                None,
                "rejected",
                r#"{"command":"rm -rf x","reason":"blocked by hook","isReadonly":false}"#,
            ),
        );
        assert!(c.is_error);
        assert_eq!(c.headline, "$ rm -rf x");
        assert_eq!(c.content, "Rejected: blocked by hook");
    }

    #[test]
    fn edit_with_stream_content_is_a_neutral_card_with_numbered_diff() {
        let sc = Scrubber::default();
        let c = build_card(
            ctx(&sc),
            &ev(
                "editToolCall",
                Some(r#"{"path":"/w/note.txt","streamContent":"hi"}"#),
                "success",
                r#"{"path":"/w/note.txt","linesAdded":1,"linesRemoved":0,"diffString":"--- /dev/null\n+++ b/w/note.txt\n@@ -1,0 +1 @@\n+hi"}"#,
            ),
        );
        assert_eq!(c.pi_tool, "cursor");
        assert_eq!(c.headline, "edit note.txt added 1 line, removed 0 lines");
        assert_eq!(c.preview, vec![StyledLine { kind: LineKind::Added, text: "+1 hi".into() }]);
        assert_eq!(c.args["activityTitle"], "Cursor edit");
    }

    #[test]
    fn secrets_never_reach_the_card() {
        let sc = Scrubber::new(Some("sk-live-123".into()));
        let c = build_card(
            ctx(&sc),
            &ev(
                "shellToolCall",
                Some(r#"{"command":"curl -H 'Authorization: Bearer abc.def' https://u:p@h/x?k=sk-live-123"}"#),
                "success",
                r#"{"exitCode":0,"stdout":"token=zzz sk-live-123"}"#,
            ),
        );
        let all = serde_json::to_string(&c).unwrap();
        for secret in ["abc.def", "u:p@", "sk-live-123", "zzz"] {
            assert!(!all.contains(secret), "{secret} leaked: {all}");
        }
    }

    #[test]
    fn unknown_tools_get_a_bounded_generic_card() {
        let sc = Scrubber::default();
        let c = build_card(
            ctx(&sc),
            &ev("getMcpToolsToolCall", Some(r#"{"pattern":"x"}"#), "success", r#"{"content":"list"}"#),
        );
        assert_eq!(c.title, "Cursor getMcpTools");
        assert_eq!(c.pi_tool, "cursor");
        assert!(c.content.contains("pattern: x"), "{}", c.content);
        assert_eq!(c.details.variant, "genericFallback");
    }

    #[test]
    fn mcp_web_search_is_titled_and_summary_only() {
        let sc = Scrubber::default();
        let mut e = ev(
            "mcpToolCall",
            Some(r#"{"toolName":"WebSearch","args":{"query":"rust actors"}}"#),
            "success",
            r#"{"content":[{"text":{"text":"results"}}]}"#,
        );
        e.tool = e.tool.reclassified_for_mcp(Some("WebSearch"));
        let c = build_card(ctx(&sc), &e);
        assert_eq!(c.headline, "Cursor web search rust actors");
        assert!(c.preview.is_empty());
        assert_eq!(c.content, "results");
    }
}
