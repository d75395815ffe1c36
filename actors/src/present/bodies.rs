//! Per-tool rendering of a completed call: its one-line summary, its body text, its diff, whether
//! it is an error, and which pi card fits it (SPEC §4, §6b, §8). Raw text out; scrubbing and
//! bounding happen once, in `card`.

use std::borrow::Cow;
use std::fmt::Write as _;

use toolstream_schemas::cursor_cli::tool_models::{self as m, FailureResult, TodoStatus, ToolSuccess};
use toolstream_schemas::pi_contract::NEUTRAL_REPLAY_TOOL;
use toolstream_schemas::{CallArgs, Int, ResultStatus, ToolKind, ToolResult};

use super::bounds::{bound_list, bound_read, fallback_args, fallback_result, relative_path};
use super::card::CALL_ID_ARG;
use super::display_args::ArgFields;

/// What a tool's renderer produced.
#[derive(Debug, Default)]
pub struct Rendered {
    /// One line: the command, path, query, … (raw; display-bounded later).
    pub summary: String,
    pub body: String,
    /// A recorded unified diff.
    pub diff: Option<String>,
    /// `+N/-M` when the tool reported them (edit cards' title line).
    pub diff_stats: Option<(i64, i64)>,
    pub is_error: bool,
    /// `bash`, `read`, `grep`, `find`, `ls`, `edit`, `write` or `cursor`.
    pub pi_tool: &'static str,
    /// Replay detail variant: nativeEdit, nativeWrite, native, activity, genericFallback.
    pub variant: &'static str,
    /// Keep the collapsed card to its title line (web search/fetch, SPEC via seed 000).
    pub summary_only: bool,
    /// The short transcript header of what pi's model reads (SPEC §4 "Replayed result text"):
    /// `edit <path>`, `web search <query>`, `subagent <description>`, the MCP tool's name, …;
    /// `None` for tools whose result text is their body alone (read, bash, grep, find, …).
    pub header: Option<String>,
    /// The sections after the header (joined by blank lines); empty means the body alone.
    pub sections: Vec<String>,
    /// Where a generated image was saved (relative to the cwd when inside it): pi shows it inline.
    pub image_path: Option<String>,
    /// A shell call's body in its parts (its output is bounded, and maybe compacted, on its own).
    pub shell: Option<ShellBody>,
}

impl Rendered {
    /// What pi's model reads: the header and the sections (or the body), blank-line separated.
    pub fn result_text(&self) -> String {
        let body = std::slice::from_ref(&self.body);
        let sections = if self.sections.is_empty() { body } else { &self.sections[..] };
        let mut parts: Vec<&str> = self.header.as_deref().into_iter().collect();
        parts.extend(sections.iter().map(String::as_str).filter(|s| !s.trim().is_empty()));
        parts.join("\n\n")
    }
}

/// The result of a call, typed (borrowed from the event, where it was read once).
#[derive(Debug)]
pub enum Outcome<'a> {
    Success(&'a ToolSuccess),
    Failure(ResultStatus, &'a FailureResult),
    /// The payload could not be read as the tool's model: shown raw (bounded) instead.
    Unreadable(ResultStatus, &'a str),
    /// The completion carried no result.
    Missing,
}

impl Outcome<'_> {
    fn is_error(&self) -> bool {
        match self {
            Outcome::Success(_) | Outcome::Missing => false,
            Outcome::Failure(..) => true,
            Outcome::Unreadable(s, _) => !s.is_success(),
        }
    }
}

/// Context for rendering.
pub struct RenderCtx<'a> {
    pub cwd: Option<&'a str>,
}

impl RenderCtx<'_> {
    fn path(&self, p: &str) -> String {
        relative_path(p, self.cwd)
    }
}

fn s(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

fn nonblank(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|t| !t.trim().is_empty())
}

/// The recorded args of a call of a known tool, as its card reads them: field by field, by the
/// wire names of the tool's args model ([`arg`] lists every one read, and a test checks that the
/// model names each). `None` for args that are neither an object nor `null` (no model reads them).
#[derive(Clone, Copy, Debug)]
pub struct CardArgs<'a>(&'a CallArgs);

impl<'a> CardArgs<'a> {
    pub fn of(args: &'a CallArgs) -> Option<CardArgs<'a>> {
        (args.is_object() || args.is_null()).then_some(CardArgs(args))
    }

    /// A string field (`""` when absent or not a string).
    fn s(&self, key: &str) -> Cow<'a, str> {
        self.0.str_field(key).unwrap_or_default()
    }

    /// A string field that is not blank.
    fn nonblank(&self, key: &str) -> Option<Cow<'a, str>> {
        self.0.str_field(key).filter(|t| !t.trim().is_empty())
    }

    /// The first of `keys` that is not blank, or `""`.
    fn first(&self, keys: [&str; 2]) -> String {
        keys.iter().find_map(|k| self.nonblank(k)).unwrap_or_default().into_owned()
    }

    /// A field read as its model reads it.
    fn get<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.0.field_as(key)
    }

    /// The args as display arguments and the pi edit check read them.
    pub fn fields(&self) -> &'a CallArgs {
        self.0
    }
}

/// The wire names of the args fields a card reads (those of the tools' args models).
pub mod arg {
    pub const PATH: &str = "path";
    pub const PATTERN: &str = "pattern";
    pub const GLOB: &str = "glob";
    pub const GLOB_PATTERN: &str = "globPattern";
    pub const TARGET_DIRECTORY: &str = "targetDirectory";
    pub const COMMAND: &str = "command";
    pub const TIMEOUT: &str = "timeout";
    pub const PATHS: &str = "paths";
    pub const TODOS: &str = "todos";
    pub const PLAN: &str = "plan";
    pub const NAME: &str = "name";
    pub const OVERVIEW: &str = "overview";
    pub const DESCRIPTION: &str = "description";
    pub const PROMPT: &str = "prompt";
    pub const TOOL_NAME: &str = "toolName";
    pub const QUERY: &str = "query";
    pub const MODE: &str = "mode";
    pub const SEARCH_TERM: &str = "searchTerm";
    pub const URL: &str = "url";
    /// A write's content, in the order they are looked for.
    pub const WRITE_CONTENT: [&str; 5] = ["content", "fileText", "contents", "fileContent", "streamContent"];
}

/// The one-line summary of a call of `kind` from its args alone (also used for incomplete calls).
pub fn summary_from_args(ctx: &RenderCtx<'_>, kind: ToolKind, a: &CardArgs<'_>) -> String {
    match kind {
        ToolKind::Read | ToolKind::Ls | ToolKind::Edit | ToolKind::Write | ToolKind::Delete => {
            ctx.path(&a.s(arg::PATH))
        }
        ToolKind::Grep => {
            let mut out = a.s(arg::PATTERN).into_owned();
            if let Some(p) = a.nonblank(arg::PATH) {
                let _ = write!(out, " in {}", ctx.path(&p));
            }
            if let Some(g) = a.nonblank(arg::GLOB) {
                let _ = write!(out, " ({g})");
            }
            out
        }
        ToolKind::Glob => {
            let mut out = a.s(arg::GLOB_PATTERN).into_owned();
            if let Some(d) = a.nonblank(arg::TARGET_DIRECTORY) {
                let _ = write!(out, " in {}", ctx.path(&d));
            }
            out
        }
        ToolKind::Shell => a.s(arg::COMMAND).into_owned(),
        ToolKind::ReadLints => a
            .get::<Vec<String>>(arg::PATHS)
            .unwrap_or_default()
            .iter()
            .map(|p| ctx.path(p))
            .collect::<Vec<_>>()
            .join(", "),
        ToolKind::UpdateTodos => items(a.get::<Vec<m::TodoItem>>(arg::TODOS).map_or(0, |t| t.len())),
        ToolKind::CreatePlan => {
            let first = [arg::PLAN, arg::NAME, arg::OVERVIEW]
                .into_iter()
                .filter_map(|k| a.0.str_field(k))
                .find_map(|t| t.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned));
            first.as_deref().unwrap_or("").trim_start_matches('#').trim().to_owned()
        }
        ToolKind::Task | ToolKind::GenerateImage => a.first([arg::DESCRIPTION, arg::PROMPT]),
        ToolKind::Mcp => a.first([arg::TOOL_NAME, arg::NAME]),
        ToolKind::SemSearch => a.s(arg::QUERY).into_owned(),
        ToolKind::RecordScreen => a.s(arg::MODE).into_owned(),
        ToolKind::WebSearch => a.first([arg::SEARCH_TERM, arg::QUERY]),
        ToolKind::WebFetch => a.s(arg::URL).into_owned(),
    }
}

fn items(n: usize) -> String {
    if n == 1 {
        "1 item".into()
    } else {
        format!("{n} items")
    }
}

/// Render a known tool. `args` is `None` when neither the start nor the completion carried any.
pub fn render_known(
    ctx: &RenderCtx<'_>,
    kind: ToolKind,
    args: Option<&CardArgs<'_>>,
    outcome: &Outcome<'_>,
) -> Rendered {
    let mut r = Rendered {
        summary: args.map(|a| summary_from_args(ctx, kind, a)).unwrap_or_default(),
        is_error: outcome.is_error(),
        pi_tool: NEUTRAL_REPLAY_TOOL,
        variant: "activity",
        ..Rendered::default()
    };
    match outcome {
        Outcome::Success(ok) => render_success(ctx, kind, args, ok, &mut r),
        Outcome::Failure(status, f) => render_failure(ctx, kind, status, f, &mut r),
        Outcome::Unreadable(_, raw) => r.body = fallback_result(raw),
        Outcome::Missing => r.body = "(no result recorded)".into(),
    }
    // Native pi cards for tools whose pi card is fixed (SPEC §4); edit/write decided above.
    r.pi_tool = match kind {
        ToolKind::Read => "read",
        ToolKind::Grep => "grep",
        ToolKind::Glob => "find",
        ToolKind::Ls => "ls",
        ToolKind::Shell => "bash",
        _ => r.pi_tool,
    };
    if r.pi_tool != NEUTRAL_REPLAY_TOOL && r.variant == "activity" {
        r.variant = "native";
    }
    if matches!(kind, ToolKind::WebSearch | ToolKind::WebFetch) {
        r.summary_only = true;
    }
    r.header = transcript_header(kind, &r.summary, args);
    if r.is_error {
        // An error reads as its header and `Error: …` alone.
        r.sections.clear();
    }
    r
}

/// `Error: <error>`: the body of an explicit error result.
pub fn error_body(error: &str) -> String {
    format!("Error: {}", error.trim())
}

/// The short header of the tools whose replayed result text has one (SPEC §4).
pub fn transcript_header(kind: ToolKind, summary: &str, args: Option<&CardArgs<'_>>) -> Option<String> {
    let named = |word: &str, what: &str| if what.is_empty() { word.to_owned() } else { format!("{word} {what}") };
    match kind {
        ToolKind::Edit => Some(named("edit", summary)),
        ToolKind::Write => Some(named("write", summary)),
        ToolKind::WebSearch => Some(named("web search", summary)),
        ToolKind::WebFetch => Some(named("web fetch", summary)),
        ToolKind::Task => {
            let description = args
                .and_then(|a| a.nonblank(arg::DESCRIPTION).or_else(|| a.nonblank(arg::PROMPT)))
                .unwrap_or(Cow::Borrowed("task"));
            Some(format!("subagent {description}"))
        }
        ToolKind::Mcp => Some(if summary.is_empty() { "mcp".to_owned() } else { summary.to_owned() }),
        _ => None,
    }
}

fn render_success(
    ctx: &RenderCtx<'_>,
    kind: ToolKind,
    args: Option<&CardArgs<'_>>,
    ok: &ToolSuccess,
    r: &mut Rendered,
) {
    match ok {
        ToolSuccess::Shell(o) => {
            let body = ShellBody::new(
                s(&o.stdout),
                s(&o.stderr),
                s(&o.interleaved_output),
                o.exit_code,
                o.execution_time,
                shell_timeout(args),
            );
            r.body = body.text();
            r.shell = Some(body);
            r.is_error = o.exit_code.is_some_and(|c| c.get() != 0);
            if r.summary.is_empty() {
                r.summary = s(&o.command).to_owned();
            }
        }
        ToolSuccess::Read(o) => {
            if r.summary.is_empty() {
                r.summary = ctx.path(s(&o.path));
            }
            let start = o.read_range.as_ref().and_then(|rr| rr.start_line).and_then(Int::as_u64).unwrap_or(1);
            r.body = match o.content.as_deref() {
                Some(c) if !c.is_empty() => bound_read(c, start).into_owned(),
                _ if o.is_empty == Some(true) => "(empty file)".into(),
                _ => "(no content recorded)".into(),
            };
        }
        ToolSuccess::Grep(o) => r.body = grep_body(ctx, o),
        ToolSuccess::Glob(o) => {
            let files: Vec<String> = o.files.iter().flatten().map(|f| ctx.path(f)).collect();
            r.body = if files.is_empty() { "No files found".into() } else { list_body(&files) };
        }
        ToolSuccess::Ls(o) => {
            let mut lines = Vec::new();
            if let Some(root) = &o.directory_tree_root {
                ls_lines(root, 0, &mut lines);
            }
            r.body = if lines.is_empty() { "(empty directory)".into() } else { list_body(&lines) };
        }
        ToolSuccess::Edit(o) => {
            if r.summary.is_empty() {
                r.summary = ctx.path(s(&o.path));
            }
            r.diff = nonblank(&o.diff_string).map(str::to_owned);
            r.diff_stats = Some((o.lines_added.map_or(0, Int::get), o.lines_removed.map_or(0, Int::get)));
            r.body = r.diff.clone().or_else(|| nonblank(&o.message).map(str::to_owned)).unwrap_or_default();
            let stats = match (o.lines_added, o.lines_removed) {
                (None, None) => String::new(),
                (a, d) => format!("+{} -{}", a.map_or(0, Int::get), d.map_or(0, Int::get)),
            };
            r.sections = vec![stats, r.body.clone()];
            if fits_pi_edit(args.map(|a| a.fields() as &dyn ArgFields)) {
                r.pi_tool = "edit";
                r.variant = "nativeEdit";
            }
        }
        ToolSuccess::Write(o) => {
            if r.summary.is_empty() {
                r.summary = ctx.path(s(&o.path));
            }
            let content = args.and_then(|a| arg::WRITE_CONTENT.into_iter().find_map(|k| a.0.str_field(k)));
            let content = content.or(o.file_content_after_write.as_deref().map(Cow::Borrowed));
            let content = content.as_deref();
            r.body = match (content, &o.message) {
                (Some(c), _) => c.to_owned(),
                (None, Some(m)) => m.clone(),
                (None, None) => o.lines_created.map(|n| format!("Wrote {n} lines")).unwrap_or_default(),
            };
            r.sections = vec![
                o.lines_created.map(|n| format!("Created {n} lines")).unwrap_or_default(),
                o.file_size.map(|b| format!("File size: {b} bytes")).unwrap_or_default(),
                content.unwrap_or_default().to_owned(),
            ];
            if r.sections.iter().all(|s| s.is_empty()) {
                r.sections = vec![r.body.clone()];
            }
            if content.is_some() {
                r.pi_tool = "write";
                r.variant = "nativeWrite";
            }
        }
        ToolSuccess::Delete(o) => {
            let path = nonblank(&o.path).or(nonblank(&o.deleted_file)).unwrap_or("");
            if r.summary.is_empty() {
                r.summary = ctx.path(path);
            }
            r.body = nonblank(&o.message).map_or_else(|| format!("Deleted {}", ctx.path(path)), str::to_owned);
        }
        ToolSuccess::ReadLints(o) => r.body = lints_body(ctx, o),
        ToolSuccess::UpdateTodos(o) => {
            let from_args = match (&o.todos, args) {
                (None, Some(a)) => a.get::<Vec<m::TodoItem>>(arg::TODOS),
                _ => None,
            };
            let todos = o.todos.as_ref().or(from_args.as_ref());
            r.body = todos.map(|t| todos_body(t)).unwrap_or_default();
            if let Some(t) = todos {
                r.summary = items(t.len());
            }
        }
        ToolSuccess::CreatePlan(o) => {
            let plan =
                args.and_then(|a| a.nonblank(arg::PLAN).or_else(|| a.nonblank(arg::OVERVIEW))).map(Cow::into_owned);
            r.body = plan.or_else(|| nonblank(&o.message).map(str::to_owned)).unwrap_or_default();
        }
        ToolSuccess::Task(o) => {
            r.body = task_body(o);
            // `<description>: <first output line>` (SPEC §4).
            let first = r.body.lines().map(str::trim).find(|l| !l.is_empty());
            r.summary = match (r.summary.as_str(), first) {
                ("", Some(line)) => line.to_owned(),
                (d, Some(line)) if d != line => format!("{d}: {line}"),
                (d, _) => d.to_owned(),
            };
        }
        ToolSuccess::GenerateImage(o) => {
            r.image_path = nonblank(&o.file_path).map(|p| ctx.path(p));
            r.body = r.image_path.as_deref().map(|p| format!("Saved image to {p}")).unwrap_or_default();
        }
        ToolSuccess::Mcp(o) => {
            r.body = mcp_body(o);
            r.is_error = o.is_error == Some(true);
        }
        ToolSuccess::SemSearch(o) => r.body = s(&o.results).to_owned(),
        ToolSuccess::RecordScreen(o) => {
            r.body = nonblank(&o.path).map(|p| format!("Saved recording to {}", ctx.path(p))).unwrap_or_default();
        }
        ToolSuccess::WebSearch(o) => {
            let refs: Vec<String> =
                o.references.iter().flatten().map(|x| format!("{} — {}", s(&x.title), s(&x.url))).collect();
            r.body = list_body(&refs);
        }
        ToolSuccess::WebFetch(o) => r.body = s(&o.markdown).to_owned(),
    }
    if r.body.trim().is_empty() && kind != ToolKind::Shell {
        r.body = toolstream_schemas::NO_OUTPUT.into();
    }
}

fn render_failure(ctx: &RenderCtx<'_>, kind: ToolKind, status: &ResultStatus, f: &FailureResult, r: &mut Rendered) {
    if r.summary.is_empty() {
        r.summary = match kind {
            ToolKind::Shell => s(&f.command).to_owned(),
            _ => nonblank(&f.path).map(|p| ctx.path(p)).unwrap_or_default(),
        };
    }
    r.body = match status {
        ResultStatus::Rejected => match nonblank(&f.reason) {
            Some(reason) => format!("Rejected: {reason}"),
            None => "Rejected: not allowed to run (no reason given; a hook or a missing --force refused it)".into(),
        },
        _ if kind == ToolKind::Shell && (f.exit_code.is_some() || f.stdout.is_some() || f.stderr.is_some()) => {
            let mut b = ShellBody::new(s(&f.stdout), s(&f.stderr), s(&f.interleaved_output), f.exit_code, None, None);
            if f.aborted == Some(true) {
                let why = nonblank(&f.abort_reason).unwrap_or("aborted");
                b.aborted = Some(format!("Command aborted ({why})"));
            }
            let text = b.text();
            r.shell = Some(b);
            text
        }
        ResultStatus::Timeout => f.error_text().map_or_else(|| "Timed out".to_owned(), |e| format!("Timed out: {e}")),
        // An explicit error result reads `Error: <error>` (SPEC §4).
        _ => error_body(f.error_text().unwrap_or(status.as_str())),
    };
}

/// Render an unknown tool: bounded fallback of its args and result (SPEC §8), summarised by up to
/// three of its scalar args.
pub fn render_unknown(name: &str, args: Option<&serde_json::Value>, result: Option<&ToolResult>) -> Rendered {
    // The call id is not an argument: it is left out (read in place, not copied).
    let args_lines: Vec<String> = args.map(|a| fallback_args(a, Some(CALL_ID_ARG))).unwrap_or_default();
    let is_error = result.is_some_and(|r| !r.status.is_success());
    let result_text = result.map(|r| {
        let text = fallback_result(&result_text(r));
        if r.status.is_success() {
            text
        } else {
            error_body(&text)
        }
    });
    let mut body = args_lines.clone();
    body.extend(result_text.clone());
    Rendered {
        summary: args.map(scalar_args_summary).unwrap_or_default(),
        body: body.join("\n"),
        is_error,
        pi_tool: NEUTRAL_REPLAY_TOOL,
        variant: "genericFallback",
        header: Some(name.to_owned()),
        sections: vec![args_lines.join("\n"), result_text.unwrap_or_default()],
        ..Rendered::default()
    }
}

/// Most scalar args in an unknown tool's summary (SPEC §4).
const SUMMARY_MAX_ARGS: usize = 3;

/// `k=v, k=v`: up to three scalar (string, number, boolean) args, in key order.
fn scalar_args_summary(args: &serde_json::Value) -> String {
    let Some(obj) = args.as_object() else {
        return String::new();
    };
    obj.iter()
        .filter(|(k, _)| k.as_str() != CALL_ID_ARG)
        .filter_map(|(k, v)| match v {
            serde_json::Value::String(s) if !s.trim().is_empty() => Some(format!("{k}={s}")),
            serde_json::Value::Number(n) => Some(format!("{k}={n}")),
            serde_json::Value::Bool(b) => Some(format!("{k}={b}")),
            _ => None,
        })
        .take(SUMMARY_MAX_ARGS)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Best text of an unknown result: a string, or an object's only string field, stays text;
/// anything else is shown as compact JSON.
fn result_text(result: &ToolResult) -> String {
    match result.tree() {
        Some(serde_json::Value::String(t)) => t.clone(),
        Some(serde_json::Value::Object(o)) if o.len() == 1 && o.values().all(serde_json::Value::is_string) => {
            o.values().next().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
        }
        Some(v) => v.to_string(),
        None => result.value.get().to_owned(),
    }
}

fn shell_timeout(args: Option<&CardArgs<'_>>) -> Option<i64> {
    args?.get::<Int>(arg::TIMEOUT).map(Int::get)
}

/// A shell call's body in its parts (SPEC §6b): what the command printed — trimmed stdout, then
/// trimmed stderr, or its interleaved output — and the lines saying how it ended (exit code when
/// non-zero, the background note when it ran into its timeout, an abort). The output part is what
/// compaction and the shell bound work on; the status lines are always kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellBody {
    pub output: String,
    pub status: Vec<String>,
    /// `Command aborted (…)`, after everything else.
    pub aborted: Option<String>,
}

impl ShellBody {
    pub fn new(
        stdout: &str,
        stderr: &str,
        interleaved: &str,
        exit_code: Option<Int>,
        execution_ms: Option<Int>,
        timeout_ms: Option<i64>,
    ) -> ShellBody {
        let (out, err) = (stdout.trim(), stderr.trim());
        let output = match (out.is_empty(), err.is_empty()) {
            (true, true) => interleaved.trim().to_owned(),
            (false, true) => out.to_owned(),
            (true, false) => err.to_owned(),
            (false, false) => format!("{out}\n\n{err}"),
        };
        let mut status = Vec::new();
        if let Some(code) = exit_code.filter(|c| c.get() != 0) {
            status.push(format!("Command exited with code {code}"));
        }
        if let (Some(t), Some(e)) = (timeout_ms.filter(|t| *t > 0), execution_ms) {
            if e.get() >= t {
                status.push(format!("Command backgrounded after {} second timeout", t / 1000));
            }
        }
        ShellBody { output, status, aborted: None }
    }

    /// The body with `output` standing for the command's output: the parts joined by blank
    /// lines, `(no output)` when all are empty, then the abort note.
    pub fn text_with(&self, output: &str) -> String {
        let mut parts: Vec<&str> = Vec::with_capacity(1 + self.status.len());
        if !output.is_empty() {
            parts.push(output);
        }
        parts.extend(self.status.iter().map(String::as_str));
        let mut text = if parts.is_empty() { toolstream_schemas::NO_OUTPUT.to_owned() } else { parts.join("\n\n") };
        if let Some(a) = &self.aborted {
            text.push_str("\n\n");
            text.push_str(a);
        }
        text
    }

    /// The body as recorded.
    pub fn text(&self) -> String {
        self.text_with(&self.output)
    }
}

fn list_body(items: &[String]) -> String {
    let (shown, more) = bound_list(items);
    let mut out = shown.join("\n");
    if let Some(m) = more {
        out.push('\n');
        out.push_str(&m);
    }
    out
}

fn grep_body(ctx: &RenderCtx<'_>, o: &m::GrepSuccess) -> String {
    let mut lines: Vec<String> = Vec::new();
    for ws in o.workspace_results.iter().flat_map(|m| m.values()).chain(o.active_editor_result.iter()) {
        // CLI form: `{content|files|count: …}`.
        if let Some(c) = &ws.content {
            grep_matches(ctx, c.matches.iter().flatten(), &mut lines);
        }
        if let Some(f) = &ws.files {
            lines.extend(f.files.iter().flatten().map(|p| ctx.path(p)));
        }
        if let Some(c) = &ws.count {
            grep_counts(ctx, c.counts.iter().flatten(), &mut lines);
        }
        // SDK form: `{type, output: {matches|files|counts}}` (SPEC §1.2): the same lists.
        if let Some(out) = &ws.output {
            grep_matches(ctx, out.matches.iter().flatten(), &mut lines);
            lines.extend(out.files.iter().flatten().map(|p| ctx.path(p)));
            grep_counts(ctx, out.counts.iter().flatten(), &mut lines);
        }
    }
    if lines.is_empty() {
        "No matches found".into()
    } else {
        list_body(&lines)
    }
}

/// `file:line: text` per matching line (`file-line- text` for context lines): the CLI nests a
/// file's lines, the SDK lists one line per entry.
fn grep_matches<'a>(ctx: &RenderCtx<'_>, files: impl Iterator<Item = &'a m::GrepFileMatches>, out: &mut Vec<String>) {
    for fm in files {
        let file = ctx.path(s(&fm.file));
        if fm.line_number.is_some() || fm.line.is_some() {
            let no = fm.line_number.map(|n| n.to_string()).unwrap_or_default();
            out.push(format!("{file}:{no}: {}", s(&fm.line).trim_end()));
        } else if fm.matches.is_none() && !file.is_empty() {
            out.push(file.clone());
        }
        for lm in fm.matches.iter().flatten() {
            let sep = if lm.is_context_line == Some(true) { '-' } else { ':' };
            let no = lm.line_number.map(|n| n.to_string()).unwrap_or_default();
            out.push(format!("{file}{sep}{no}{sep} {}", s(&lm.content).trim_end()));
        }
    }
}

fn grep_counts<'a>(ctx: &RenderCtx<'_>, counts: impl Iterator<Item = &'a m::GrepFileCount>, out: &mut Vec<String>) {
    for fc in counts {
        out.push(format!("{}: {}", ctx.path(s(&fc.file)), fc.count.map_or(0, Int::get)));
    }
}

fn ls_lines(dir: &m::LsDirectory, depth: usize, out: &mut Vec<String>) {
    let indent = "  ".repeat(depth);
    for d in dir.children_dirs.iter().flatten() {
        let name = d.abs_path.as_deref().map(|p| p.rsplit(['/', '\\']).next().unwrap_or(p)).unwrap_or("?");
        out.push(format!("{indent}{name}/"));
        ls_lines(d, depth + 1, out);
    }
    for f in dir.children_files.iter().flatten() {
        out.push(format!("{indent}{}", s(&f.name)));
    }
}

fn lints_body(ctx: &RenderCtx<'_>, o: &m::ReadLintsSuccess) -> String {
    let mut lines = Vec::new();
    for fd in o.file_diagnostics.iter().flatten() {
        let path = ctx.path(s(&fd.path));
        for d in fd.diagnostics.iter().flatten() {
            let pos = d.range.as_ref().and_then(|r| r.start.as_ref());
            let line = pos.and_then(|p| p.line).map_or(0, Int::get);
            let col = pos.and_then(|p| p.column).map_or(0, Int::get);
            let sev = s(&d.severity).trim_start_matches("DIAGNOSTIC_SEVERITY_").to_ascii_lowercase();
            lines.push(format!("{path}:{line}:{col} {sev} {}", s(&d.message)));
        }
    }
    if lines.is_empty() {
        "No diagnostics".into()
    } else {
        list_body(&lines)
    }
}

fn todos_body(todos: &[m::TodoItem]) -> String {
    todos
        .iter()
        .map(|t| {
            let mark = match &t.status {
                Some(TodoStatus::Completed) => "[x]",
                Some(TodoStatus::InProgress) => "[~]",
                Some(TodoStatus::Cancelled) => "[-]",
                _ => "[ ]",
            };
            format!("{mark} {}", s(&t.content))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A subagent's output: its nested tool result (`$ <command>`, then its output) and its
/// assistant messages, or its final text; never the raw payload.
fn task_body(o: &m::TaskSuccess) -> String {
    let mut parts: Vec<String> = Vec::new();
    match &o.result {
        Some(serde_json::Value::String(t)) if !t.trim().is_empty() => parts.push(t.clone()),
        Some(v) => {
            let success = v.get("success").unwrap_or(v);
            let text = |k: &str| success.get(k).and_then(serde_json::Value::as_str).filter(|t| !t.trim().is_empty());
            if let Some(c) = text("command") {
                parts.push(format!("$ {c}"));
            }
            if let Some(out) = text("stdout").or_else(|| text("interleavedOutput")) {
                parts.push(out.trim_end().to_owned());
            }
        }
        None => {}
    }
    parts.extend(
        o.conversation_steps
            .iter()
            .flatten()
            .filter_map(|st| st.assistant_message.as_ref().and_then(|m| nonblank(&m.text)))
            .map(str::to_owned),
    );
    parts.join("\n")
}

fn mcp_body(o: &m::McpSuccess) -> String {
    let mut parts = Vec::new();
    for c in o.content.iter().flatten() {
        if let Some(t) = c.text.as_ref().and_then(|t| t.text.as_deref()) {
            parts.push(t.to_owned());
        } else if let Some(i) = &c.image {
            parts.push(format!("[image {}]", i.mime_type.as_deref().unwrap_or("")));
        } else if let Some(res) = &c.resource {
            parts.push(res.text.clone().unwrap_or_else(|| format!("[resource {}]", s(&res.uri))));
        }
    }
    parts.join("\n")
}

/// Whether recorded args truthfully fit pi's `edit` schema (SPEC §4): a path plus a non-empty old
/// text and a new text (may be empty), or an `edits[]` list of such pairs; never a notebook edit.
pub fn fits_pi_edit(args: Option<&dyn ArgFields>) -> bool {
    let Some(args) = args else {
        return false;
    };
    let str_of = |o: &dyn ArgFields, k: &str| match o.field(k)?.as_ref() {
        serde_json::Value::String(s) => Some(s.clone()),
        _ => None,
    };
    let has_path = ["path", "filePath", "file_path"].iter().any(|k| str_of(args, k).is_some_and(|p| !p.is_empty()));
    let notebook = ["notebookPath", "notebook_path", "cellId", "cell_id", "cellIndex"].iter().any(|k| args.has(k))
        || str_of(args, "path").is_some_and(|p| p.ends_with(".ipynb"));
    if !has_path || notebook {
        return false;
    }
    let pair = |o: &dyn ArgFields| {
        let old = ["oldText", "old_string", "oldString", "old_str", "old_text"].iter().find_map(|k| str_of(o, k));
        let new = ["newText", "new_string", "newString", "new_str", "new_text"].iter().find_map(|k| str_of(o, k));
        matches!((old, new), (Some(o), Some(_)) if !o.is_empty())
    };
    if pair(args) {
        return true;
    }
    match args.field("edits").as_deref().and_then(|v| v.as_array()) {
        Some(edits) if !edits.is_empty() => {
            edits.iter().all(|e| e.as_object().is_some_and(|o| pair(o as &dyn ArgFields)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolstream_schemas::cursor_cli::tool_models::parse_args;

    /// Every args field a card reads by its wire name is one its tool's args model names (a field
    /// the model does not name would land in its `extra`).
    #[test]
    fn the_args_a_card_reads_are_named_by_the_tools_models() {
        use ToolKind::*;
        let read: &[(ToolKind, &[&str])] = &[
            (Read, &[arg::PATH]),
            (Ls, &[arg::PATH]),
            (Edit, &[arg::PATH]),
            (Write, &[arg::PATH]),
            (Write, &arg::WRITE_CONTENT),
            (Delete, &[arg::PATH]),
            (Grep, &[arg::PATTERN, arg::PATH, arg::GLOB]),
            (Glob, &[arg::GLOB_PATTERN, arg::TARGET_DIRECTORY]),
            (Shell, &[arg::COMMAND, arg::TIMEOUT]),
            (ReadLints, &[arg::PATHS]),
            (UpdateTodos, &[arg::TODOS]),
            (CreatePlan, &[arg::PLAN, arg::NAME, arg::OVERVIEW]),
            (Task, &[arg::DESCRIPTION, arg::PROMPT]),
            (GenerateImage, &[arg::DESCRIPTION, arg::PROMPT]),
            (Mcp, &[arg::TOOL_NAME, arg::NAME]),
            (SemSearch, &[arg::QUERY]),
            (RecordScreen, &[arg::MODE]),
            (WebSearch, &[arg::SEARCH_TERM, arg::QUERY]),
            (WebFetch, &[arg::URL]),
        ];
        for (kind, keys) in read {
            for key in *keys {
                let model = parse_args(*kind, &json!({ *key: null }).to_string()).unwrap();
                assert!(model.extra().is_empty(), "{kind:?} args have no field {key}");
            }
            let unnamed = parse_args(*kind, r#"{"notAField": null}"#).unwrap();
            assert!(!unnamed.extra().is_empty(), "the check sees a field the model does not name");
        }
    }

    #[test]
    fn a_summary_reads_its_fields_from_the_recorded_text() {
        let ctx = RenderCtx { cwd: Some("/w") };
        let summary = |kind, text: &str| {
            let args = CallArgs::from_json(text).unwrap();
            CardArgs::of(&args).map(|a| summary_from_args(&ctx, kind, &a))
        };
        assert_eq!(summary(ToolKind::Shell, r#"{"command":"ls\t-la","timeout":"5"}"#).as_deref(), Some("ls\t-la"));
        assert_eq!(
            summary(ToolKind::Grep, r#"{"pattern":"fn","path":"/w/src","glob":"*.rs"}"#).as_deref(),
            Some("fn in src (*.rs)")
        );
        assert_eq!(summary(ToolKind::Task, r#"{"description":"  ","prompt":"p"}"#).as_deref(), Some("p"));
        assert_eq!(
            summary(ToolKind::UpdateTodos, "null").as_deref(),
            Some("0 items"),
            "null reads as a model with nothing set"
        );
        assert_eq!(summary(ToolKind::UpdateTodos, r#""not args""#), None, "nor an object nor null: no args");
        // A field of another type is not read; the others still are.
        assert_eq!(summary(ToolKind::Grep, r#"{"pattern":"fn","path":5}"#).as_deref(), Some("fn"));
    }

    #[test]
    fn shell_body_rules() {
        let shell_body = |o: &str, e: &str, i: &str, code: Option<Int>, ran: Option<Int>, timeout: Option<i64>| {
            ShellBody::new(o, e, i, code, ran, timeout).text()
        };
        assert_eq!(shell_body("", "", "", Some(Int(0)), None, None), "(no output)");
        assert_eq!(shell_body("  hi\n", "", "", Some(Int(0)), None, None), "hi");
        assert_eq!(shell_body("", "OOPS\n", "", Some(Int(3)), None, None), "OOPS\n\nCommand exited with code 3");
        assert_eq!(shell_body("", "", "", Some(Int(1)), None, None), "Command exited with code 1");
        assert_eq!(
            shell_body("x", "", "", None, Some(Int(30_000)), Some(30_000)),
            "x\n\nCommand backgrounded after 30 second timeout"
        );
        assert_eq!(shell_body("", "", "both\n", Some(Int(0)), None, None), "both");
    }

    #[test]
    fn pi_edit_fit_is_truthful() {
        let fits = |v: serde_json::Value| {
            let args = CallArgs::from_json(&v.to_string()).unwrap();
            let by_map = fits_pi_edit(v.as_object().map(|o| o as &dyn ArgFields));
            assert_eq!(fits_pi_edit(Some(&args as &dyn ArgFields)), by_map, "{v}: recorded args and a map agree");
            by_map
        };
        assert!(fits(json!({"path": "a", "old_string": "x", "new_string": ""})));
        assert!(fits(json!({"filePath": "a", "edits": [{"oldText": "x", "newText": "y"}]})));
        assert!(!fits(json!({"filePath": "a", "edits": [{"oldText": "x", "newText": "y"}, {"oldText": ""}]})));
        assert!(!fits(json!({"path": "a", "streamContent": "whole file"})));
        assert!(!fits(json!({"path": "a", "old_string": "", "new_string": "y"})));
        assert!(!fits(json!({"path": "a.ipynb", "old_string": "x", "new_string": "y"})));
        assert!(!fits(json!({"path": "a", "cellId": null, "old_string": "x", "new_string": "y"})));
        assert!(!fits(json!({"old_string": "x", "new_string": "y"})));
        assert!(!fits_pi_edit(None));
    }
}
