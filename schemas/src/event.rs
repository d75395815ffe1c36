//! The canonical event model (SPEC §3): input events every source decodes to, and output events
//! every sink consumes. Actors and sinks meet here and nowhere else.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::arg_fields::{self, FieldIndex};
use crate::cursor_cli::tool_models::ResultModel;
use crate::cursor_exec::to_openai::OpenAiToolCall;
use crate::diag_fields::DiagFields;
pub use crate::ids::{CallRef, RunId};
pub use crate::result_status::{is_success_arm, ResultStatus};
use crate::tools::{Tool, ToolKind};

/// JSON kept verbatim: tool payloads, unknown lines and unknown fields.
pub type RawJson = Box<RawValue>;

/// A call's recorded arguments: the JSON text as recorded, and what every later stage reads of
/// it, each made once, when first asked for: the index of its fields (lifecycle labels, card
/// summaries, display arguments read a few of them, [`FieldIndex`]), and the whole tree (the
/// card of an unknown tool lists its args; a kept recording copies them). A call's start and its
/// completion share one (`Arc`) when they carry the same text.
#[derive(Debug)]
pub struct CallArgs {
    text: RawJson,
    fields: OnceLock<FieldIndex>,
    tree: OnceLock<Option<serde_json::Value>>,
}

impl CallArgs {
    /// Arguments recorded as this JSON text.
    pub fn new(text: RawJson) -> CallArgs {
        CallArgs { text, fields: OnceLock::new(), tree: OnceLock::new() }
    }

    /// Arguments a decoder already holds as a tree (its text is written from it).
    pub fn from_tree(tree: serde_json::Value) -> Result<CallArgs, serde_json::Error> {
        let text = serde_json::value::to_raw_value(&tree)?;
        Ok(CallArgs { text, fields: OnceLock::new(), tree: OnceLock::from(Some(tree)) })
    }

    /// Arguments from JSON text (for builders of synthetic streams, benches and tests).
    pub fn from_json(text: &str) -> Result<CallArgs, serde_json::Error> {
        Ok(CallArgs::new(RawValue::from_string(text.to_owned())?))
    }

    /// The JSON text as recorded.
    pub fn text(&self) -> &str {
        self.text.get()
    }

    /// The arguments as a tree; `None` when the text is not a value a tree holds (a number out
    /// of range). Read once, on the first call.
    pub fn tree(&self) -> Option<&serde_json::Value> {
        self.tree.get_or_init(|| serde_json::from_str(self.text.get()).ok()).as_ref()
    }

    fn fields(&self) -> &FieldIndex {
        self.fields.get_or_init(|| FieldIndex::of(self.text.get()))
    }

    /// Whether the args are an object (only an object has fields).
    pub fn is_object(&self) -> bool {
        self.fields().is_object()
    }

    /// Whether the args are `null` (read as a model, no field set).
    pub fn is_null(&self) -> bool {
        self.text.get().trim() == "null"
    }

    /// The JSON text of field `key` (its last value when the key is given twice).
    pub fn raw_field(&self, key: &str) -> Option<&str> {
        self.fields().raw(self.text.get(), key)
    }

    /// Whether the args have field `key` (whatever its value, `null` too).
    pub fn has(&self, key: &str) -> bool {
        self.raw_field(key).is_some()
    }

    /// Field `key` when it is a string.
    pub fn str_field(&self, key: &str) -> Option<Cow<'_, str>> {
        self.raw_field(key).and_then(arg_fields::raw_str)
    }

    /// Field `key` read as `T` (`None` when absent or not a `T`).
    pub fn field_as<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.raw_field(key).and_then(arg_fields::raw_as)
    }
}

/// A streamed piece of text or thinking: most are a few words, kept inline (up to 24 bytes)
/// instead of in an allocation of their own. Three of four events of a busy stream are such
/// deltas, each decoded on the reading thread and freed on a sink's, so an allocation each cost
/// allocator work on both threads.
pub type Delta = compact_str::CompactString;

/// Fields a decoder did not recognise, kept in arrival order so nothing read is silently dropped.
pub type UnknownFields = Vec<(String, RawJson)>;

/// Where an input event came from in its source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SourcePos {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
}

/// One decoded input event.
#[derive(Debug)]
pub struct InputEvent {
    /// The Cursor session (`session_id`); empty when the line had none.
    pub session: Arc<str>,
    /// Event time in ms when the line carries one (`timestamp_ms` / `at_ms`).
    pub at_ms: Option<u64>,
    pub pos: SourcePos,
    pub kind: Input,
}

/// Input side of SPEC §3. A run's start and end are boxed: they are rare and the largest
/// variants, and every stage hand-off copies an event whole.
#[derive(Debug)]
pub enum Input {
    RunStarted(Box<RunStart>),
    UserPrompt {
        text: String,
    },
    /// A per-token assistant delta.
    TextDelta {
        text: Delta,
    },
    /// A consolidated or final assistant segment that may repeat the deltas since the last boundary.
    TextSegment {
        kind: SegmentKind,
        text: String,
    },
    /// A boundary between assistant text blocks (SDK `assistantMessage` step).
    TextBoundary,
    ThinkingDelta {
        text: Delta,
    },
    ThinkingCompleted {
        duration_ms: Option<u64>,
    },
    ToolStarted(Box<ToolEvent>),
    ToolPartial(Box<ToolEvent>),
    ToolCompleted(Box<ToolEvent>),
    ShellOutput {
        call_id: Option<String>,
        stream: ShellStream,
        data: String,
    },
    TurnUsage(TokenUsage),
    RunEnded(Box<RunEnd>),
    /// Anything not understood (unknown line type, plan-mode queries, notifications): passed through.
    Raw {
        /// `type/subtype` or a short description.
        what: String,
        value: RawJson,
    },
}

#[derive(Debug, Default)]
pub struct RunStart {
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub prompt: Option<String>,
    /// What the source knows of the run beyond these (its parent call, the client's version).
    pub context: Option<Box<RunContext>>,
    pub extra: UnknownFields,
}

/// Where a nested run hangs: a subagent's run is the child of its parent's task call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ParentCall {
    /// The parent run's session (its conversation).
    pub session: Arc<str>,
    /// The parent's task call, as outputs name calls.
    pub call: CallRef,
}

/// Typed facts about a run that some sources report (Cursor hooks and agent transcripts): the
/// parent call of a nested run, the Cursor build, the composer mode and the workspace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentCall>,
    /// `cursor_version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor_version: Option<String>,
    /// `composer_mode` (`agent`, `ask`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub composer_mode: Option<String>,
    /// `workspace_roots`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workspace_roots: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SegmentKind {
    /// Carries a `model_call_id`: repeats the deltas of that model call.
    Consolidated,
    /// Neither `model_call_id` nor `timestamp_ms`: the final segment of the run.
    Final,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShellStream {
    Stdout,
    Stderr,
}

impl ShellStream {
    pub fn as_str(self) -> &'static str {
        match self {
            ShellStream::Stdout => "stdout",
            ShellStream::Stderr => "stderr",
        }
    }
}

/// One tool call report (started, partial or completed).
#[derive(Debug)]
pub struct ToolEvent {
    /// The raw call id: state key only, never shown to users.
    pub call_id: String,
    pub tool: Tool,
    /// The wire name the tool came under (`shellToolCall`, SDK `shell`, …).
    pub wire_name: String,
    pub args: Option<Arc<CallArgs>>,
    pub result: Option<ToolResult>,
    pub model_call_id: Option<String>,
    /// Tool-clock times (`startedAtMs`/`completedAtMs`): a different clock from event time.
    pub started_at_ms: Option<u64>,
    pub completed_at_ms: Option<u64>,
    /// The OpenAI tool call an exec call maps to (SPEC §1.4, §9.5): the card keeps it for the
    /// OpenAI sink. `None` for Cursor's own tool activity.
    pub openai_call: Option<Arc<OpenAiToolCall>>,
    /// Set by intake on a completion it matched to a start reported under another id (the
    /// completion then carries the start's id): the id it came with. A raw id: state only, traced
    /// hashed.
    pub reported_call_id: Option<String>,
    /// Which call this report belongs to: set by intake, the one matcher (SPEC §5.2). Every later
    /// stage keys its state of the call by it and reads the call's hashed id and fingerprint from
    /// it; unset ([`CallIdent::default`]) before intake.
    pub call: CallIdent,
    /// Unknown sibling metadata of the tool payload, kept: only what no field above names.
    pub extra: UnknownFields,
}

/// A call as intake identified it, carried on each of its reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallIdent {
    /// Unique among the calls one intake has seen (never 0 once set): the key of every later
    /// stage's state of the call.
    pub key: u64,
    /// How outputs name the call: the hash of its start's id, computed once.
    pub call_ref: CallRef,
    /// Fingerprint of `(tool, args)` of the call's start; `None` without args.
    pub fingerprint: Option<u64>,
}

impl ToolEvent {
    /// The kind whose models the payloads follow: the tool's, except that an MCP call
    /// reclassified as a web search or fetch keeps MCP-shaped payloads. `None` for a tool no
    /// model knows.
    pub fn payload_kind(&self) -> Option<ToolKind> {
        let kind = self.tool.kind()?;
        Some(if self.wire_name.starts_with("mcp") && kind != ToolKind::Mcp { ToolKind::Mcp } else { kind })
    }

    /// Read now, on the calling thread, what the stages will read of a call's args: their
    /// fields, or (for a tool no model knows: its card lists them) their tree. For a call's
    /// start: its completion shares these args when it carries the same text (the intake stage
    /// gives it the start's), so the card reads what was read here. The reading thread calls
    /// this before it hands the event to its shard when the shard is behind: each payload is
    /// still read once, on whichever of the two threads has time for it.
    pub fn read_args(&self) {
        match (&self.args, self.payload_kind()) {
            (Some(args), Some(_)) => {
                args.fields();
            }
            (Some(args), None) => {
                args.tree();
            }
            (None, _) => {}
        }
    }

    /// Like [`ToolEvent::read_args`], for a completion's result: read as its tool's model, or as
    /// a tree for a tool no model knows. With `trees` (a sink keeps the recorded call), the tree
    /// is read first, as the card reads it then.
    pub fn read_result(&self, trees: bool) {
        let Some(result) = &self.result else { return };
        if trees || self.payload_kind().is_none() {
            result.tree();
        }
        if let Some(kind) = self.payload_kind() {
            result.model(kind);
        }
    }

    /// A tool event from JSON texts: `args`, and the inner object of the result with its status
    /// (for builders of synthetic streams, benches and tests). The wire name is the tool's CLI key.
    pub fn from_json(
        call_id: &str,
        tool: Tool,
        args: Option<&str>,
        result: Option<(ResultStatus, &str)>,
    ) -> Result<ToolEvent, serde_json::Error> {
        let wire_name = match &tool {
            Tool::Known(k) => k.spec().cli_key.to_owned(),
            Tool::Unknown(n) => format!("{n}ToolCall"),
        };
        Ok(ToolEvent {
            call_id: call_id.to_owned(),
            tool,
            wire_name,
            args: args.map(CallArgs::from_json).transpose()?.map(Arc::new),
            result: match result {
                Some((status, value)) => Some(ToolResult::new(status, RawValue::from_string(value.to_owned())?)),
                None => None,
            },
            model_call_id: None,
            started_at_ms: None,
            completed_at_ms: None,
            openai_call: None,
            reported_call_id: None,
            call: CallIdent::default(),
            extra: Vec::new(),
        })
    }
}

/// The oneof result of a tool call, normalised across sources.
#[derive(Debug)]
pub struct ToolResult {
    pub status: ResultStatus,
    /// The inner object of the oneof (`result.success`, `result.rejected`, SDK `value`/`error`).
    pub value: RawJson,
    /// Siblings of the oneof key (`isBackground`, `terminalsFolder`, …).
    pub extra: UnknownFields,
    /// Shell output attributed from `shell-output-delta` chunks, standing in for the recorded
    /// stdout of a successful shell whose recorded stdout and stderr were blank (SPEC §6b).
    stdout_from_deltas: Option<String>,
    /// `value` as a tree (read once, only for those who keep the recorded result).
    tree: OnceLock<Option<serde_json::Value>>,
    /// `value` read as its tool's model (once, by the first stage that reads it). Boxed: a
    /// model is most of a result's size, and only a completed call's result is ever read as one;
    /// every tool event is allocated, moved and handed between threads without it.
    model: OnceLock<Box<ResultModel>>,
}

impl ToolResult {
    pub fn new(status: ResultStatus, value: RawJson) -> ToolResult {
        ToolResult::with_extra(status, value, Vec::new())
    }

    pub fn with_extra(status: ResultStatus, value: RawJson, extra: UnknownFields) -> ToolResult {
        ToolResult { status, value, extra, stdout_from_deltas: None, tree: OnceLock::new(), model: OnceLock::new() }
    }

    /// The recorded inner object as a tree (the shell output from deltas in place of its blank
    /// stdout); `None` when the text is not a value a tree holds. Read once.
    pub fn tree(&self) -> Option<&serde_json::Value> {
        self.tree
            .get_or_init(|| {
                let mut tree: serde_json::Value = serde_json::from_str(self.value.get()).ok()?;
                if let (Some(stdout), Some(obj)) = (&self.stdout_from_deltas, tree.as_object_mut()) {
                    obj.insert("stdout".into(), stdout.as_str().into());
                }
                Some(tree)
            })
            .as_ref()
    }

    /// The result read as the model of `kind` (the payload's kind: an MCP call reclassified as
    /// a web search has an MCP-shaped result), once: from the tree when one was read, else from
    /// the text.
    pub fn model(&self, kind: ToolKind) -> &ResultModel {
        self.model.get_or_init(|| {
            let mut model = match self.tree.get() {
                Some(Some(tree)) => ResultModel::from_tree(kind, &self.status, tree),
                Some(None) => ResultModel::Unreadable,
                None => ResultModel::parse(kind, &self.status, self.value.get()),
            };
            if let Some(stdout) = &self.stdout_from_deltas {
                model.set_stdout(stdout);
            }
            Box::new(model)
        })
    }

    /// Shell output attributed from deltas replaces the recorded stdout (see
    /// [`ToolResult::tree`] and [`ToolResult::model`]).
    pub fn set_stdout_from_deltas(&mut self, stdout: String) {
        if let Some(model) = self.model.get_mut() {
            model.set_stdout(&stdout);
        }
        if let Some(Some(serde_json::Value::Object(obj))) = self.tree.get_mut() {
            obj.insert("stdout".into(), stdout.as_str().into());
        }
        self.stdout_from_deltas = Some(stdout);
    }

    /// The shell output that stands in for the recorded stdout, if any.
    pub fn stdout_from_deltas(&self) -> Option<&str> {
        self.stdout_from_deltas.as_deref()
    }
}

/// Token counts as a source reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl TokenUsage {
    /// input + output + cache read + cache write, as reported (SPEC §6c).
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Finished,
    Error,
    Cancelled,
}

/// The body of a card whose call completed with nothing to show.
pub const NO_OUTPUT: &str = "(no output)";

/// The error message of a cancelled run's last (aborted) message (SPEC §5.4; the pi contract's).
pub use crate::pi_contract::CANCELLED_MESSAGE;

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Finished => "finished",
            RunStatus::Error => "error",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug)]
pub struct RunEnd {
    pub status: RunStatus,
    pub result_text: Option<String>,
    pub usage: Option<TokenUsage>,
    pub error: Option<String>,
    pub duration_ms: Option<u64>,
    /// The source ended the run without its own end being reported (a turn still open when its
    /// conversation or its input ended): sinks that mark such runs do (OTel `error.type`).
    pub incomplete: bool,
    pub extra: UnknownFields,
}

// ------------------------------------------------------------------------------------------------
// Output side
// ------------------------------------------------------------------------------------------------

/// One output event, in causal order per run.
#[derive(Clone, Debug, Serialize)]
pub struct OutputEvent {
    pub run: Arc<RunId>,
    /// Event time at which it was produced; 0 while its run has no known time yet (a Cursor CLI
    /// run opens on lines without `timestamp_ms`). Sinks that write times date such events at
    /// their run's first known time.
    pub at_ms: u64,
    #[serde(flatten)]
    pub kind: Output,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    Stop,
    ToolUse,
    Error,
    Aborted,
}

/// pi's usage object: complete, with cost (zeros when no price is known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: Cost,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

impl std::ops::AddAssign<&Usage> for Usage {
    /// Token counts and costs of two model calls together.
    fn add_assign(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

/// Output side of SPEC §3.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum Output {
    RunOpened {
        cwd: Option<String>,
        model: Option<String>,
        prompt: Option<String>,
        /// The source's [`RunContext`], when it has one.
        #[serde(skip_serializing_if = "Option::is_none")]
        context: Option<Box<RunContext>>,
    },
    MessageStarted {
        turn: u32,
    },
    Text {
        turn: u32,
        delta: Delta,
    },
    Thinking {
        turn: u32,
        delta: Delta,
    },
    BlockEnded {
        turn: u32,
    },
    /// An in-progress line (SPEC §6), part of the current message's thinking block: pi shows it
    /// as the thinking text `"<title>: <label>\n"`.
    LifecycleLine {
        call: CallRef,
        title: String,
        label: String,
    },
    ShellProgress {
        call: CallRef,
        stream: ShellStream,
        line: String,
    },
    Card(Box<Card>),
    IncompleteCall(Box<IncompleteCall>),
    MessageEnded {
        turn: u32,
        stop_reason: StopReason,
        /// Boxed, as `totals` below: a message's end is rare and every hand-off copies an event.
        usage: Box<Usage>,
        error: Option<String>,
    },
    RunClosed {
        status: RunStatus,
        final_text: String,
        totals: Box<RunTotals>,
        error: Option<String>,
    },
    Diagnostic {
        phase: Cow<'static, str>,
        fields: DiagFields,
    },
}

/// The rendered record of one completed (or failed) call. Every string here is scrubbed and
/// bounded (SPEC §8) by the card builder; sinks only lay it out.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Card {
    pub turn: u32,
    pub call: CallRef,
    /// `cursor-replay-<run>-tool-<k>`.
    pub replay_id: String,
    pub source_tool: Tool,
    /// The pi tool the card renders as: `bash`, `read`, …, or `cursor`.
    pub pi_tool: Cow<'static, str>,
    /// Neutral title, e.g. `Cursor shell`.
    pub title: Cow<'static, str>,
    /// One-line summary: the command, the path, the query, …
    pub summary: String,
    /// The card's title line for terminals: `$ npm test`, `read src/a.rs`, `Cursor MCP search`.
    pub headline: String,
    /// Display arguments of the pi tool call (SPEC §4): fitted to `pi_tool`'s schema, paths
    /// relative to the cwd; neutral cards carry `activityTitle`/`activitySummary` and the few
    /// fields their tool displays. Never the raw recorded args.
    pub args: serde_json::Value,
    /// The full body text (transcript-bounded): what the terminal shows expanded.
    pub content: String,
    /// What pi's model reads as the call's result (SPEC §4 "Replayed result text"): the body,
    /// with the short transcript header of tools that have one; bounded.
    pub result_text: String,
    /// Collapsed preview (SPEC §8: ≤8 lines, ≤4,000 chars, ≤240 chars a line, tabs expanded).
    pub preview: Vec<StyledLine>,
    /// Lines of the body not in the collapsed preview.
    pub preview_hidden: usize,
    /// The recorded diff as numbered lines for the expanded view (≤40), headers dropped.
    pub diff: Vec<StyledLine>,
    /// Diff lines beyond `diff`.
    pub diff_hidden: usize,
    /// What pi's replay renderers read beyond the text (pi's `toolResult.details`); shared, as
    /// the pi sinks hand it on with every tool result.
    pub details: Arc<CardDetails>,
    pub is_error: bool,
    /// Set when this card stands for a call that never completed (SPEC §5.3): the same call also
    /// has its [`IncompleteCall`] record, so counting calls counts this card once, not twice.
    pub incomplete: Option<IncompleteReason>,
    pub started_ms: Option<u64>,
    pub completed_ms: Option<u64>,
    /// The recorded result (the inner object of its arm, `details.status` names the arm),
    /// scrubbed and bounded like `args`: for sinks that store the call itself rather than show it
    /// (Cursor bubbles). Not part of the serialized card.
    #[serde(skip)]
    pub recorded_result: Option<serde_json::Value>,
    /// The recorded args, scrubbed and bounded, for the same sinks (only when asked for: see
    /// `CardContext::keep_recorded`). Not part of the serialized card.
    #[serde(skip)]
    pub recorded_args: Option<serde_json::Value>,
    /// The OpenAI tool call an exec call maps to, scrubbed (also in `details.openai_tool_call`):
    /// the OpenAI sink answers with it. Not part of the serialized card.
    #[serde(skip)]
    pub openai_call: Option<Arc<OpenAiToolCall>>,
}

/// A card's `details`: what pi's replay renderers read of a call beyond its text
/// (`integrations/pi/replay-tools.ts`), and what a Cursor bubble reads back (`status`). Every
/// string is scrubbed and bounded like the rest of the card.
///
/// The fields are in the order they are written: by name, as the JSON object cards carried
/// before was; traces and pi sessions are byte-identical with it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CardDetails {
    /// A write's recorded content (pi highlights it by the language of `path`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A recorded diff in pi's own numbered form (`+N`/`-N`/` N` lines, no unified headers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The result text's short header (`edit src/a.ts`, `web search …`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Where Cursor saved a generated image (relative to the cwd when inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_path: Option<String>,
    /// The OpenAI tool call an exec call maps to (`{id, name, arguments}`), scrubbed; calls
    /// without it are Cursor's own tool activity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai_tool_call: Option<serde_json::Value>,
    /// The file an edit or write belongs to (relative to the cwd).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The recorded tool's name (`shell`, `webSearch`, an MCP tool's …).
    pub source_tool_name: Cow<'static, str>,
    /// The result's arm (`success`, `failure`, `rejected`, …), or none.
    #[serde(serialize_with = "status_name")]
    pub status: Option<ResultStatus>,
    /// The card's summary; none for an error.
    pub summary: Option<String>,
    /// The neutral title (`Cursor shell`).
    pub title: Cow<'static, str>,
    /// How pi draws it: `native`, `activity`, `genericFallback`, ….
    pub variant: &'static str,
}

/// A result arm as its name (`null` for none).
fn status_name<S: serde::Serializer>(status: &Option<ResultStatus>, s: S) -> Result<S::Ok, S::Error> {
    Serialize::serialize(&status.as_ref().map(ResultStatus::as_str), s)
}

/// How a display line is styled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LineKind {
    Plain,
    /// A diff line adding text (`+<new line no> text`).
    Added,
    /// A diff line removing text (`-<old line no> text`).
    Removed,
    /// A diff context line (` <line no> text`).
    Context,
}

/// One display-ready line (already scrubbed, bounded and formatted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StyledLine {
    pub kind: LineKind,
    pub text: String,
}

/// Why a started call never completed (SPEC §5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IncompleteReason {
    NoCompletionAtRunEnd,
    Abort,
    SdkFailure,
    /// A stream-json input ended without its `result` line.
    StreamEnded,
}

impl IncompleteReason {
    pub fn as_str(self) -> &'static str {
        match self {
            IncompleteReason::NoCompletionAtRunEnd => "no-completion-at-run-end",
            IncompleteReason::Abort => "abort",
            IncompleteReason::SdkFailure => "sdk-failure",
            IncompleteReason::StreamEnded => "stream-ended",
        }
    }

    /// The user-facing text (`missing completion`, `aborted`, `SDK run failed`, `stream ended
    /// without a result`).
    pub fn text(self) -> &'static str {
        match self {
            IncompleteReason::NoCompletionAtRunEnd => "missing completion",
            IncompleteReason::Abort => "aborted",
            IncompleteReason::SdkFailure => "SDK run failed",
            IncompleteReason::StreamEnded => "stream ended without a result",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IncompleteCall {
    pub call: CallRef,
    pub source_tool: Tool,
    /// e.g. `Cursor shell`.
    pub title: String,
    pub reason: IncompleteReason,
    /// False when suppressed from users (stale fast local start); still traced.
    pub visible: bool,
}

/// What a run added up to, reported on its close.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTotals {
    /// The source's run-total usage, as reported (CLI `result.usage`).
    pub reported_usage: Option<TokenUsage>,
    pub messages: u32,
    /// Cards of completed calls.
    pub cards: u32,
    /// Of those, error cards.
    pub error_cards: u32,
    /// Calls that never completed (shown or suppressed); not counted in `cards`.
    pub incomplete_calls: u32,
    pub duration_ms: Option<u64>,
    /// The run ended without its source reporting the end (its input, or its conversation,
    /// ended first).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A card's details are written field by field in name order, as the JSON object cards
    /// carried before them was (traces and pi sessions keep their bytes); a result arm by its
    /// name, an error's summary as `null`.
    #[test]
    fn card_details_are_written_in_name_order() {
        let every = CardDetails {
            content: Some("fn main() {}".into()),
            diff: Some("+1 fn main() {}".into()),
            header: Some("write src/main.rs".into()),
            image_path: Some("out.png".into()),
            openai_tool_call: Some(serde_json::json!({"id": "call_1", "name": "shell"})),
            path: Some("src/main.rs".into()),
            source_tool_name: "write".into(),
            status: Some(ResultStatus::Other("partial".into())),
            summary: None,
            title: "Cursor write".into(),
            variant: "native",
        };
        assert_eq!(
            serde_json::to_string(&every).unwrap(),
            concat!(
                r#"{"content":"fn main() {}","diff":"+1 fn main() {}","header":"write src/main.rs","#,
                r#""imagePath":"out.png","openaiToolCall":{"id":"call_1","name":"shell"},"#,
                r#""path":"src/main.rs","sourceToolName":"write","status":"partial","summary":null,"#,
                r#""title":"Cursor write","variant":"native"}"#
            )
        );
        let fewest = CardDetails { source_tool_name: "shell".into(), status: Some(ResultStatus::Success), ..every };
        let fewest = CardDetails {
            content: None,
            diff: None,
            header: None,
            image_path: None,
            openai_tool_call: None,
            path: None,
            summary: Some("npm test".into()),
            ..fewest
        };
        assert_eq!(
            serde_json::to_string(&fewest).unwrap(),
            r#"{"sourceToolName":"shell","status":"success","summary":"npm test","title":"Cursor write","variant":"native"}"#
        );
    }
}
