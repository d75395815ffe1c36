//! Decoding of Cursor hook payloads (SPEC §1.5) into canonical input events: a conversation is a
//! session, a `generation_id` turn is a run (opened by `beforeSubmitPrompt` or its first event,
//! closed by `stop`, `sessionEnd`, the next turn, or the end of the input), `preToolUse` /
//! `postToolUse` / `postToolUseFailure` are one call, the shell, MCP, read and file-edit hooks
//! attach to their call (never a second card), a thought is thinking and a response is text with
//! its usage. A subagent's conversation is a run nested under its parent's Task/Subagent call:
//! `subagentStart` names the call (`tool_call_id`), the subagent's first event claims it (its
//! payloads carry a new `conversation_id` and nothing else that links them), and `subagentStop`
//! ends the subagent's run and completes the call.
//!
//! Payloads carry no time: the envelope's (the receiving process's) time is the event time.
//! Hooks give no call id that is always unique (`tool_use_id` may be `""` or reused), so the
//! decoder names each call itself: the hook's id when it is new in its conversation, else that id
//! with a `#hook<n>` suffix. Every event is tagged with the turn it belongs to
//! ([`HookDecoder::decode_payload`]), for delivery of whole turns from the spool.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::value::{to_raw_value, RawValue};
use serde_json::{json, Map, Value};
use toolstream_schemas::cursor_hooks::{
    canonical_args, canonical_result, glob_args_from_grep, hook_tool, is_glob_as_grep, mcp_is_error, parse_line,
    HookEvent, HookLine, HookPayload, Recorded,
};
use toolstream_schemas::ids::call_ref;
use toolstream_schemas::{
    CallArgs, CallIdent, Input, InputEvent, ParentCall, ResultStatus, RunContext, RunEnd, RunStart, RunStatus,
    SourcePos, TokenUsage, Tool, ToolEvent, ToolKind, ToolResult,
};

/// The error of a turn that ended without its `stop` hook (a later turn began, the conversation
/// ended, or the input did).
pub const INCOMPLETE_TURN: &str = "incomplete: the turn ended without a `stop` hook";

/// Calls remembered after they completed, per conversation, so a late `afterShellExecution` or
/// `afterFileEdit` still finds its call (and never becomes a second card).
const RECENT_CALLS: usize = 64;

/// The turn an event belongs to: `(conversation, generation)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TurnKey {
    pub conversation: Arc<str>,
    pub generation: Arc<str>,
}

/// An event and the turn it belongs to (`None`: no turn, e.g. a diagnostic).
#[derive(Debug)]
pub struct Tagged {
    pub turn: Option<TurnKey>,
    pub event: InputEvent,
}

/// How the decoder ended a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnEnd {
    /// Its `stop`, `sessionEnd` or `subagentStop` (or a later turn of its conversation) closed it.
    Reported,
    /// The input ended with it open ([`HookDecoder::finish`]).
    EndOfInput,
}

/// What the decoder counted that no card or run shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookCounts {
    pub payloads: u64,
    /// Events of a kind toolstream does not know (kept as raw in their turn).
    pub unknown_events: u64,
    /// Fields no version of the payload model names (traced as raw in their turn).
    pub unknown_fields: u64,
    /// Shell, MCP, read and file-edit hooks folded into their call.
    pub attached: u64,
    /// Events that belong to no turn and were not shown (`sessionStart` aside): an unknown event
    /// outside any turn, a repeated completion.
    pub ignored: u64,
    /// Recorder lines that hold no hook payload.
    pub not_hooks: u64,
}

#[derive(Debug)]
struct OpenCall {
    id: String,
    tool_use_id: String,
    tool_name: String,
    input: Option<Value>,
    kind: Option<ToolKind>,
    tool: Tool,
    /// The canonical args, read once: the start and the completion share them.
    args: Option<Arc<CallArgs>>,
    started_at: Option<u64>,
    /// Opened by `beforeShellExecution` / `beforeMCPExecution` (no `preToolUse` reported it).
    from_execution_hook: bool,
    /// Output an `afterShellExecution` / `afterMCPExecution` reported before `postToolUse`.
    execution_output: Option<Value>,
    /// `afterFileEdit` edits for this call's file.
    edits: Option<Value>,
}

#[derive(Debug)]
struct OpenTurn {
    key: TurnKey,
    last_at: Option<u64>,
}

#[derive(Debug, Default)]
struct Conversation {
    open: Option<OpenTurn>,
    calls: Vec<OpenCall>,
    /// Completed calls (id, tool name, command or path), most recent last.
    recent: VecDeque<(String, String, String)>,
    /// Hook call ids used so far in this conversation.
    used_ids: HashSet<String>,
    next_call: u32,
    closed: HashSet<Arc<str>>,
    composer_mode: Option<String>,
    /// Set when this conversation is a subagent's.
    parent: Option<Subagent>,
}

/// A subagent that started (`subagentStart`), and the call it runs for.
#[derive(Clone, Debug)]
struct Subagent {
    subagent_id: String,
    parent_conversation: Arc<str>,
    /// The parent's task call (decoder call id), when it was found.
    parent_call: Option<String>,
    task: Option<String>,
    model: Option<String>,
}

/// Decodes hook payloads; holds the conversations seen and their open turns and calls.
#[derive(Debug, Default)]
pub struct HookDecoder {
    conversations: HashMap<Arc<str>, Conversation>,
    /// Subagents started but not yet claimed by their conversation, oldest first.
    pending: VecDeque<Subagent>,
    /// `subagent_id` → the subagent's conversation.
    children: HashMap<String, Arc<str>>,
    /// Calls completed by `subagentStop`: a later `postToolUse` for them is a repeat.
    subagent_calls_done: HashSet<(Arc<str>, String)>,
    counts: HookCounts,
    ends: Vec<(TurnKey, TurnEnd)>,
}

type Out<'a> = &'a mut Vec<Tagged>;

impl HookDecoder {
    pub fn counts(&self) -> &HookCounts {
        &self.counts
    }

    /// Turns closed so far, and how.
    pub fn take_ends(&mut self) -> Vec<(TurnKey, TurnEnd)> {
        std::mem::take(&mut self.ends)
    }

    /// Decode one log line (a payload, bare or in an envelope).
    pub fn decode_line(&mut self, text: &str, pos: SourcePos, out: Out<'_>) -> Result<(), String> {
        match parse_line(text).map_err(|e| e.to_string())? {
            HookLine::Payload { at_ms, payload, .. } => {
                self.decode_payload(at_ms, *payload, pos, out);
                Ok(())
            }
            HookLine::NotAHook { what } => {
                tracing::trace!(what, "a recorder line without a hook payload");
                self.counts.not_hooks += 1;
                Ok(())
            }
        }
    }

    /// Decode one payload received at `at_ms`.
    pub fn decode_payload(&mut self, at_ms: Option<u64>, mut p: HookPayload, pos: SourcePos, out: Out<'_>) {
        self.counts.payloads += 1;
        // A file's content is never kept (SPEC §1.5).
        p.content = None;
        let conv: Arc<str> = Arc::from(p.conversation_id.as_deref().or(p.session_id.as_deref()).unwrap_or(""));
        let mut cx = Cx { conv, at_ms, pos, out };
        let gen = p.generation_id.clone().unwrap_or_default();
        // `sessionStart` has `""`; `subagentStart`/`subagentStop` the conversation id: no turn.
        let turn_gen = (!gen.is_empty() && *gen != *cx.conv).then_some(gen);
        let Some(event) = p.event() else {
            self.unknown_event(&mut cx, turn_gen.as_deref(), p);
            return;
        };
        if !matches!(event, HookEvent::SessionStart | HookEvent::BeforeSubmitPrompt) {
            self.claim_subagent(&cx.conv);
        }
        match event {
            HookEvent::SessionStart => {
                let c = self.conversations.entry(cx.conv.clone()).or_default();
                if p.composer_mode.is_some() {
                    c.composer_mode = p.composer_mode.clone();
                }
            }
            HookEvent::SessionEnd => {
                // A turn still open had no `stop`: incomplete, unless the session says it was
                // aborted or failed.
                let status =
                    end_status(p.final_status.as_deref().or(p.reason.as_deref())).filter(|s| *s != RunStatus::Finished);
                self.close_open(&mut cx, status, None);
            }
            HookEvent::BeforeSubmitPrompt => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                self.close_open(&mut cx, None, None);
                self.open_turn(&mut cx, &g, &p);
                if let Some(text) = p.prompt.clone() {
                    cx.push(self, Input::UserPrompt { text });
                }
                self.unknown_fields(&mut cx, &p);
            }
            HookEvent::Stop => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                if !self.ensure_turn(&mut cx, &g, &p) {
                    return;
                }
                self.unknown_fields(&mut cx, &p);
                let status = end_status(p.status.as_deref()).unwrap_or(RunStatus::Finished);
                let usage = p.tokens().map(|t| TokenUsage {
                    // A run total as the CLI reports one: input without the cached tokens.
                    input_tokens: t.input.saturating_sub(t.cache_read).saturating_sub(t.cache_write),
                    output_tokens: t.output,
                    cache_read_tokens: t.cache_read,
                    cache_write_tokens: t.cache_write,
                    reasoning_tokens: None,
                });
                self.close_open(&mut cx, Some(status), usage);
            }
            HookEvent::AfterAgentThought => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                if self.ensure_turn(&mut cx, &g, &p) {
                    cx.push(self, Input::ThinkingDelta { text: p.text.as_deref().unwrap_or_default().into() });
                    let duration_ms = p.duration_ms.and_then(|d| d.as_u64());
                    cx.push(self, Input::ThinkingCompleted { duration_ms });
                    self.unknown_fields(&mut cx, &p);
                }
            }
            HookEvent::AfterAgentResponse => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                if self.ensure_turn(&mut cx, &g, &p) {
                    if let Some(text) = p.text.clone().filter(|t| !t.is_empty()) {
                        cx.push(self, Input::TextDelta { text: text.into() });
                    }
                    if let Some(t) = p.tokens() {
                        // The turn's prompt in full: cache reads and writes are part of `input`.
                        let usage = TokenUsage {
                            input_tokens: t.input,
                            output_tokens: t.output,
                            cache_read_tokens: t.cache_read,
                            cache_write_tokens: t.cache_write,
                            reasoning_tokens: None,
                        };
                        cx.push(self, Input::TurnUsage(usage));
                    }
                    cx.push(self, Input::TextBoundary);
                    self.unknown_fields(&mut cx, &p);
                }
            }
            HookEvent::PreToolUse => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                if self.ensure_turn(&mut cx, &g, &p) {
                    self.start_call(&mut cx, &p, false);
                    self.unknown_fields(&mut cx, &p);
                }
            }
            HookEvent::PostToolUse | HookEvent::PostToolUseFailure => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                if self.ensure_turn(&mut cx, &g, &p) {
                    self.complete_call(&mut cx, &p, event == HookEvent::PostToolUseFailure);
                    self.unknown_fields(&mut cx, &p);
                }
            }
            HookEvent::BeforeShellExecution | HookEvent::BeforeMcpExecution => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                if !self.ensure_turn(&mut cx, &g, &p) {
                    return;
                }
                if self.find_execution_call(&cx.conv, &p).is_some() {
                    self.counts.attached += 1;
                } else {
                    // No `preToolUse` reported this call: the execution hook stands for it.
                    self.start_call(&mut cx, &p, true);
                }
            }
            HookEvent::AfterShellExecution | HookEvent::AfterMcpExecution => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                if self.ensure_turn(&mut cx, &g, &p) {
                    self.execution_done(&mut cx, &p);
                }
            }
            HookEvent::BeforeReadFile => {
                // Its call is the Read `preToolUse`; its `content` was dropped above.
                self.counts.attached += 1;
            }
            HookEvent::AfterFileEdit => {
                let Some(g) = turn_gen else { return self.unknown_event(&mut cx, None, p) };
                if self.ensure_turn(&mut cx, &g, &p) {
                    self.file_edited(&mut cx, &p);
                }
            }
            HookEvent::SubagentStart => self.subagent_started(&cx.conv, &p),
            HookEvent::SubagentStop => self.subagent_stopped(&mut cx, &p),
        }
    }

    /// End of input: every turn still open ends without its `stop`.
    pub fn finish(&mut self, out: Out<'_>) {
        let mut open: Vec<(Arc<str>, Option<u64>)> =
            self.conversations.iter().filter_map(|(k, c)| c.open.as_ref().map(|t| (k.clone(), t.last_at))).collect();
        open.sort();
        for (conv, at_ms) in open {
            let mut cx = Cx { conv, at_ms, pos: SourcePos::default(), out };
            if let Some(key) = self.end_turn(&mut cx, None, None) {
                self.ends.push((key, TurnEnd::EndOfInput));
            }
        }
    }

    fn conversation(&mut self, conv: &Arc<str>) -> &mut Conversation {
        self.conversations.entry(conv.clone()).or_default()
    }

    /// A conversation seen for the first time while a subagent waits for its own is that
    /// subagent's.
    fn claim_subagent(&mut self, conv: &Arc<str>) {
        if self.conversations.contains_key(conv) || conv.is_empty() {
            return;
        }
        let Some(i) = self.pending.iter().position(|s| *s.parent_conversation != **conv) else { return };
        let Some(sub) = self.pending.remove(i) else { return };
        self.children.insert(sub.subagent_id.clone(), conv.clone());
        self.conversation(conv).parent = Some(sub);
    }

    /// Open a turn of `g` (its `RunStarted`, and the subagent's task as its prompt).
    fn open_turn(&mut self, cx: &mut Cx<'_>, g: &str, p: &HookPayload) {
        let key = TurnKey { conversation: cx.conv.clone(), generation: Arc::from(g) };
        let c = self.conversation(&cx.conv);
        let parent = c.parent.clone();
        let composer_mode = p.composer_mode.clone().or_else(|| c.composer_mode.clone());
        c.open = Some(OpenTurn { key, last_at: cx.at_ms });
        let model = parent.as_ref().and_then(|s| s.model.clone()).or_else(|| p.model_name().map(str::to_owned));
        let roots = p.workspace_roots.clone().unwrap_or_default();
        let context = RunContext {
            parent: parent.as_ref().and_then(|s| {
                let call = s.parent_call.as_deref()?;
                Some(ParentCall { session: s.parent_conversation.clone(), call: call_ref(call) })
            }),
            cursor_version: p.cursor_version.clone(),
            composer_mode,
            workspace_roots: roots.clone(),
        };
        let start = RunStart {
            cwd: roots.first().cloned(),
            // `default` is what hooks call Auto.
            model: model.map(|m| if m == "default" { "auto".to_owned() } else { m }),
            prompt: None,
            context: Some(Box::new(context)),
            extra: Vec::new(),
        };
        cx.push(self, Input::RunStarted(Box::new(start)));
        if p.event() != Some(HookEvent::BeforeSubmitPrompt) {
            if let Some(task) = parent.and_then(|s| s.task) {
                cx.push(self, Input::UserPrompt { text: task });
            }
        }
    }

    /// Make `g` the conversation's open turn: opened when it is new (closing another open one);
    /// false when `g` already ended (the event is late: kept as raw, no new run).
    fn ensure_turn(&mut self, cx: &mut Cx<'_>, g: &str, p: &HookPayload) -> bool {
        let c = self.conversation(&cx.conv);
        if let Some(t) = &mut c.open {
            if &*t.key.generation == g {
                t.last_at = cx.at_ms.or(t.last_at);
                return true;
            }
        }
        if c.closed.contains(g) {
            let what = format!("hook:{}:after-turn-end", p.hook_event_name.as_deref().unwrap_or("event"));
            self.counts.ignored += 1;
            tracing::debug!(what, "an event of a turn that already ended");
            return false;
        }
        self.close_open(cx, None, None);
        self.open_turn(cx, g, p);
        true
    }

    /// Close the conversation's open turn: with `status` (reported), or as incomplete when `None`.
    fn close_open(&mut self, cx: &mut Cx<'_>, status: Option<RunStatus>, usage: Option<TokenUsage>) {
        if let Some(key) = self.end_turn(cx, status, usage) {
            self.ends.push((key, TurnEnd::Reported));
        }
    }

    /// End the conversation's open turn with `status`, or as incomplete when `None`.
    fn end_turn(&mut self, cx: &mut Cx<'_>, status: Option<RunStatus>, usage: Option<TokenUsage>) -> Option<TurnKey> {
        let incomplete = status.is_none();
        let (status, error) = match status {
            Some(RunStatus::Finished) => (RunStatus::Finished, None),
            Some(RunStatus::Cancelled) => (RunStatus::Cancelled, Some(toolstream_schemas::CANCELLED_MESSAGE.into())),
            Some(RunStatus::Error) => (RunStatus::Error, Some("the Cursor turn ended with an error".into())),
            None => (RunStatus::Error, Some(INCOMPLETE_TURN.into())),
        };
        let c = self.conversation(&cx.conv);
        let turn = c.open.as_ref()?.key.clone();
        let end = RunEnd { status, result_text: None, usage, error, duration_ms: None, incomplete, extra: Vec::new() };
        cx.push(self, Input::RunEnded(Box::new(end)));
        let c = self.conversation(&cx.conv);
        c.open = None;
        c.calls.clear();
        c.closed.insert(turn.generation.clone());
        Some(turn)
    }

    /// A call id for a hook's `tool_use_id`: the id itself when new in the conversation.
    fn new_call_id(&mut self, conv: &Arc<str>, tool_use_id: &str) -> String {
        let c = self.conversation(conv);
        if !tool_use_id.is_empty() && c.used_ids.insert(tool_use_id.to_owned()) {
            return tool_use_id.to_owned();
        }
        c.next_call += 1;
        format!("{tool_use_id}#hook{}", c.next_call)
    }

    /// A call as a payload reports it, named (see [`HookDecoder::new_call_id`]).
    fn new_call(
        &mut self,
        conv: &Arc<str>,
        p: &HookPayload,
        started_at: Option<u64>,
        from_execution_hook: bool,
    ) -> OpenCall {
        let (tool_name, input) = call_name_and_input(p);
        let (kind, tool, args) = resolve(&tool_name, input.as_ref());
        let tool_use_id = p.tool_use_id.clone().unwrap_or_default();
        let id = self.new_call_id(conv, &tool_use_id);
        OpenCall {
            id,
            tool_use_id,
            tool_name,
            input,
            kind,
            tool,
            args: CallArgs::from_tree(args).ok().map(Arc::new),
            started_at,
            from_execution_hook,
            execution_output: None,
            edits: None,
        }
    }

    fn start_call(&mut self, cx: &mut Cx<'_>, p: &HookPayload, from_execution_hook: bool) {
        let call = self.new_call(&cx.conv, p, cx.at_ms, from_execution_hook);
        let ev = tool_event(&call.id, &call.tool_name, call.tool.clone(), call.args.clone(), None, cx.at_ms, None);
        self.conversation(&cx.conv).calls.push(call);
        cx.push(self, Input::ToolStarted(Box::new(ev)));
    }

    /// The open call a completion is for: by id when one open call has it, else by tool and
    /// input, else none (the completion stands alone).
    fn take_call(&mut self, conv: &Arc<str>, p: &HookPayload) -> Option<OpenCall> {
        let c = self.conversation(conv);
        let id = p.tool_use_id.as_deref().unwrap_or("");
        let by_id: Vec<usize> = if id.is_empty() {
            Vec::new()
        } else {
            c.calls.iter().enumerate().filter(|(_, k)| k.tool_use_id == id).map(|(i, _)| i).collect()
        };
        let i = match by_id.as_slice() {
            [one] => Some(*one),
            _ => {
                let name = p.tool_name.as_deref().unwrap_or("");
                c.calls.iter().position(|k| k.tool_name == name && k.input.as_ref() == p.tool_input.as_ref())
            }
        }?;
        Some(c.calls.remove(i))
    }

    fn complete_call(&mut self, cx: &mut Cx<'_>, p: &HookPayload, failed: bool) {
        let key = (cx.conv.clone(), p.tool_use_id.clone().unwrap_or_default());
        let call = self.take_call(&cx.conv, p);
        if call.is_none() && !key.1.is_empty() && self.subagent_calls_done.contains(&key) {
            // The task call was completed by its `subagentStop` already.
            self.counts.ignored += 1;
            return;
        }
        let call = match call {
            Some(c) => c,
            None => self.new_call(&cx.conv, p, None, false),
        };
        let result = if failed {
            failure(p)
        } else {
            let output = p.tool_output.as_ref().or(call.execution_output.as_ref());
            output.and_then(|o| recorded_result(call.kind, o))
        };
        self.finish_call(cx, call, result);
    }

    /// Emit a call's completion and remember it.
    fn finish_call(&mut self, cx: &mut Cx<'_>, call: OpenCall, result: Option<ToolResult>) {
        let args = with_edits(&call).or_else(|| call.args.clone());
        let ev = tool_event(&call.id, &call.tool_name, call.tool.clone(), args, result, call.started_at, cx.at_ms);
        let target = call_target(&call);
        let c = self.conversation(&cx.conv);
        if c.recent.len() >= RECENT_CALLS {
            c.recent.pop_front();
        }
        c.recent.push_back((call.id, call.tool_name, target));
        cx.push(self, Input::ToolCompleted(Box::new(ev)));
    }

    /// The open call an execution hook (`before/afterShellExecution`, `before/afterMCPExecution`)
    /// belongs to: the shell with the same command, or the MCP call of the same tool and input.
    fn find_execution_call(&mut self, conv: &Arc<str>, p: &HookPayload) -> Option<usize> {
        let c = self.conversation(conv);
        match p.event() {
            Some(HookEvent::BeforeShellExecution | HookEvent::AfterShellExecution) => {
                let cmd = p.command.as_deref()?;
                c.calls.iter().position(|k| k.kind == Some(ToolKind::Shell) && shell_command(k) == Some(cmd))
            }
            _ => {
                let name = p.tool_name.as_deref()?;
                c.calls.iter().position(|k| {
                    k.kind == Some(ToolKind::Mcp)
                        && k.tool_name.strip_prefix("MCP:").unwrap_or(&k.tool_name) == name
                        && (p.tool_input.is_none() || k.input == p.tool_input)
                })
            }
        }
    }

    fn execution_done(&mut self, cx: &mut Cx<'_>, p: &HookPayload) {
        let shell = p.event() == Some(HookEvent::AfterShellExecution);
        let output = if shell { p.output.clone().map(|o| json!({ "output": o })) } else { p.result_json.clone() };
        match self.find_execution_call(&cx.conv, p) {
            Some(i) if self.conversation(&cx.conv).calls[i].from_execution_hook => {
                let call = self.conversation(&cx.conv).calls.remove(i);
                let result = output.as_ref().and_then(|o| recorded_result(call.kind, o));
                self.finish_call(cx, call, result);
            }
            Some(i) => {
                // `postToolUse` will complete the call; its output fills in when that has none.
                self.counts.attached += 1;
                let call = &mut self.conversation(&cx.conv).calls[i];
                call.execution_output = output;
            }
            None => {
                let target = if shell { p.command.clone() } else { p.tool_name.clone() };
                let c = self.conversation(&cx.conv);
                if c.recent.iter().any(|(_, _, t)| Some(t) == target.as_ref()) {
                    // The call completed already: this is its echo.
                    self.counts.attached += 1;
                } else {
                    // A call no other hook reported: it stands alone.
                    self.start_call(cx, p, true);
                    if let Some(i) = self.find_execution_call(&cx.conv, p) {
                        let call = self.conversation(&cx.conv).calls.remove(i);
                        let result = output.as_ref().and_then(|o| recorded_result(call.kind, o));
                        self.finish_call(cx, call, result);
                    }
                }
            }
        }
    }

    /// `afterFileEdit`: the edits of the open (or just completed) call on the same file.
    fn file_edited(&mut self, cx: &mut Cx<'_>, p: &HookPayload) {
        let path = p.file_path.clone().unwrap_or_default();
        let edits = p.edits.as_ref().and_then(|e| serde_json::to_value(e).ok());
        let c = self.conversation(&cx.conv);
        let open = c.calls.iter_mut().find(|k| {
            matches!(k.kind, Some(ToolKind::Edit | ToolKind::Write)) && call_target_of(k.kind, k.args_tree()) == path
        });
        if let Some(call) = open {
            call.edits = edits;
            self.counts.attached += 1;
        } else if c.recent.iter().any(|(_, _, t)| *t == path) {
            self.counts.attached += 1;
        } else {
            // An edit no tool call reported (the user's own, Tab): traced, never a card.
            let value = json!({ "file_path": path, "edits": p.edits.as_ref().map_or(0, Vec::len) });
            if let Some(value) = raw(&value) {
                cx.push(self, Input::Raw { what: "hook:afterFileEdit".into(), value });
            }
        }
    }

    fn subagent_started(&mut self, conv: &Arc<str>, p: &HookPayload) {
        let parent: Arc<str> = p.parent_conversation_id.as_deref().map_or_else(|| conv.clone(), Arc::from);
        let wanted = p.tool_call_id.as_deref().or(p.subagent_id.as_deref()).unwrap_or("");
        let pc = self.conversation(&parent);
        let by_id = pc.calls.iter().find(|k| !wanted.is_empty() && k.tool_use_id == wanted);
        let call =
            by_id.or_else(|| pc.calls.iter().rev().find(|k| k.kind == Some(ToolKind::Task))).map(|k| k.id.clone());
        let sub = Subagent {
            subagent_id: p.subagent_id.clone().or_else(|| p.tool_call_id.clone()).unwrap_or_default(),
            parent_conversation: parent,
            parent_call: call,
            task: p.task.clone(),
            model: p.subagent_model.clone().filter(|m| !m.is_empty()),
        };
        self.counts.attached += 1;
        self.pending.push_back(sub);
    }

    fn subagent_stopped(&mut self, cx: &mut Cx<'_>, p: &HookPayload) {
        let sub_id = p.subagent_id.clone().or_else(|| p.tool_call_id.clone()).unwrap_or_default();
        let status = end_status(p.status.as_deref()).unwrap_or(RunStatus::Finished);
        // The subagent's own turn ends here.
        if let Some(child) = self.children.remove(&sub_id) {
            let mut child_cx = Cx { conv: child, at_ms: cx.at_ms, pos: cx.pos, out: &mut *cx.out };
            self.close_open(&mut child_cx, Some(status), None);
        }
        let parent: Arc<str> = p.parent_conversation_id.as_deref().map_or_else(|| cx.conv.clone(), Arc::from);
        let pending = self.pending.iter().position(|s| s.subagent_id == sub_id);
        if let Some(i) = pending {
            // It never ran a step of its own.
            self.pending.remove(i);
        }
        let pc = self.conversation(&parent);
        let i = pc.calls.iter().position(|k| !sub_id.is_empty() && k.tool_use_id == sub_id);
        let Some(i) = i else {
            self.counts.attached += 1;
            return;
        };
        let call = pc.calls.remove(i);
        self.subagent_calls_done.insert((parent.clone(), call.tool_use_id.clone()));
        let mut value = Map::new();
        if let Some(d) = p.description.clone() {
            value.insert("description".into(), d.into());
        }
        if let Some(d) = p.duration_ms.and_then(|d| d.as_u64()) {
            value.insert("durationMs".into(), d.into());
        }
        let (arm, value) = match status {
            RunStatus::Finished => (ResultStatus::Success, Value::Object(value)),
            _ => {
                let text = format!("subagent {}", p.status.as_deref().unwrap_or("failed"));
                value.insert("errorMessage".into(), text.into());
                (ResultStatus::Error, Value::Object(value))
            }
        };
        let result = raw(&value).map(|value| ToolResult::new(arm, value));
        let mut parent_cx = Cx { conv: parent, at_ms: cx.at_ms, pos: cx.pos, out: &mut *cx.out };
        self.finish_call(&mut parent_cx, call, result);
    }

    fn unknown_event(&mut self, cx: &mut Cx<'_>, g: Option<&str>, p: HookPayload) {
        self.counts.unknown_events += 1;
        let name = p.hook_event_name.clone().unwrap_or_else(|| "(none)".into());
        let open = self.conversations.get(&cx.conv).and_then(|c| c.open.as_ref()).map(|t| t.key.generation.clone());
        let in_turn = match (g, &open) {
            (Some(g), Some(o)) => **o == *g,
            (None, Some(_)) => true,
            _ => false,
        };
        if !in_turn {
            tracing::debug!(event = %name, "a hook event outside any turn");
            self.counts.ignored += 1;
            return;
        }
        if let Some(value) = serde_json::to_value(&p).ok().as_ref().and_then(raw) {
            cx.push(self, Input::Raw { what: format!("hook:{name}"), value });
        }
    }

    /// Fields no version of the model names reach the trace (SPEC §1 rule 1).
    fn unknown_fields(&mut self, cx: &mut Cx<'_>, p: &HookPayload) {
        if p.extra.is_empty() {
            return;
        }
        self.counts.unknown_fields += p.extra.len() as u64;
        if let Some(value) = raw(&Value::Object(p.extra.clone())) {
            cx.push(
                self,
                Input::Raw {
                    what: format!("unknown-fields:hook:{}", p.hook_event_name.as_deref().unwrap_or("")),
                    value,
                },
            );
        }
    }
}

/// Where events go: the conversation (session), the event time and position, the output.
struct Cx<'a> {
    conv: Arc<str>,
    at_ms: Option<u64>,
    pos: SourcePos,
    out: &'a mut Vec<Tagged>,
}

impl Cx<'_> {
    fn push(&mut self, d: &HookDecoder, kind: Input) {
        let turn = d.conversations.get(&self.conv).and_then(|c| c.open.as_ref()).map(|t| t.key.clone());
        let event = InputEvent { session: self.conv.clone(), at_ms: self.at_ms, pos: self.pos, kind };
        self.out.push(Tagged { turn, event });
    }
}

fn raw(v: &Value) -> Option<Box<RawValue>> {
    to_raw_value(v).ok()
}

/// A call's tool name and input from a payload: `preToolUse`-style fields, or the shell and MCP
/// execution hooks' own (`command`, `tool_name` without the `MCP:` prefix).
fn call_name_and_input(p: &HookPayload) -> (String, Option<Value>) {
    match p.event() {
        Some(HookEvent::BeforeShellExecution | HookEvent::AfterShellExecution) => {
            let mut input = Map::new();
            input.insert("command".into(), p.command.clone().unwrap_or_default().into());
            if let Some(cwd) = p.cwd.clone().filter(|c| !c.is_empty()) {
                input.insert("cwd".into(), cwd.into());
            }
            ("Shell".into(), Some(Value::Object(input)))
        }
        Some(HookEvent::BeforeMcpExecution | HookEvent::AfterMcpExecution) => {
            (format!("MCP:{}", p.tool_name.as_deref().unwrap_or("")), p.tool_input.clone())
        }
        _ => (p.tool_name.clone().unwrap_or_default(), p.tool_input.clone()),
    }
}

/// The canonical tool and args of a hook tool name and input.
fn resolve(tool_name: &str, input: Option<&Value>) -> (Option<ToolKind>, Tool, Value) {
    let (kind, mcp_tool) = hook_tool(tool_name);
    if kind == Some(ToolKind::Grep) && is_glob_as_grep(input) {
        return (Some(ToolKind::Glob), Tool::Known(ToolKind::Glob), glob_args_from_grep(input));
    }
    let args = canonical_args(kind, mcp_tool, input);
    let tool = match kind {
        Some(k) => Tool::Known(k).reclassified_for_mcp(mcp_tool),
        None => Tool::unknown(tool_name),
    };
    (tool.kind(), tool, args)
}

fn tool_event(
    id: &str,
    wire_name: &str,
    tool: Tool,
    args: Option<Arc<CallArgs>>,
    result: Option<ToolResult>,
    started: Option<u64>,
    completed: Option<u64>,
) -> ToolEvent {
    // An MCP call reclassified as web search/fetch keeps its MCP-shaped args (see the card).
    let wire_name = if wire_name.starts_with("MCP:") { format!("mcp:{wire_name}") } else { wire_name.to_owned() };
    ToolEvent {
        call_id: id.to_owned(),
        tool,
        wire_name,
        args,
        result,
        model_call_id: None,
        started_at_ms: started,
        completed_at_ms: completed,
        openai_call: None,
        reported_call_id: None,
        call: CallIdent::default(),
        extra: Vec::new(),
    }
}

/// The result a call recorded (`tool_output`, an execution hook's output): success, unless an MCP
/// result says `isError`; `None` when it recorded nothing a card could truthfully show.
fn recorded_result(kind: Option<ToolKind>, output: &Value) -> Option<ToolResult> {
    let o = Recorded::parse(output)?;
    let status = if mcp_is_error(&o) { ResultStatus::Error } else { ResultStatus::Success };
    let value = raw(&canonical_result(kind, &o)?)?;
    Some(ToolResult::new(status, value))
}

/// The failure result of a `postToolUseFailure`.
fn failure(p: &HookPayload) -> Option<ToolResult> {
    let status = match p.failure_type.as_deref() {
        Some("permission_denied") => ResultStatus::PermissionDenied,
        Some("timeout") => ResultStatus::Timeout,
        Some("rejected") => ResultStatus::Rejected,
        _ => ResultStatus::Error,
    };
    let mut value = Map::new();
    let message = p.error_message.clone().filter(|m| !m.trim().is_empty());
    let message = message.or_else(|| p.is_interrupt.filter(|i| *i).map(|_| "interrupted".to_owned()));
    value.insert("errorMessage".into(), message.unwrap_or_else(|| "the tool call failed".into()).into());
    if p.is_interrupt == Some(true) {
        value.insert("aborted".into(), true.into());
    }
    raw(&Value::Object(value)).map(|value| ToolResult::new(status, value))
}

/// A call's args with `afterFileEdit`'s old/new texts added, when it reported some and the call's
/// own args have none; `None` when they stay as they are (shared with the start).
fn with_edits(call: &OpenCall) -> Option<Arc<CallArgs>> {
    let edits = call.edits.as_ref()?;
    let obj = call.args_tree()?.as_object()?;
    let has_pair = ["old_string", "oldText", "new_string", "newText", "edits"].iter().any(|k| obj.contains_key(*k));
    if has_pair {
        return None;
    }
    let mut obj = obj.clone();
    obj.insert("edits".into(), edits.clone());
    CallArgs::from_tree(Value::Object(obj)).ok().map(Arc::new)
}

impl OpenCall {
    /// The canonical args as a tree (read when the call opened).
    fn args_tree(&self) -> Option<&Value> {
        self.args.as_deref().and_then(CallArgs::tree)
    }
}

fn shell_command(c: &OpenCall) -> Option<&str> {
    c.args_tree()?.get("command").and_then(Value::as_str)
}

/// What identifies a call for the execution and edit hooks: the command, the path, the tool.
fn call_target(c: &OpenCall) -> String {
    match c.kind {
        Some(ToolKind::Shell) => shell_command(c).unwrap_or_default().to_owned(),
        Some(ToolKind::Mcp) => c.tool_name.strip_prefix("MCP:").unwrap_or(&c.tool_name).to_owned(),
        k => call_target_of(k, c.args_tree()),
    }
}

fn call_target_of(kind: Option<ToolKind>, args: Option<&Value>) -> String {
    match kind {
        Some(ToolKind::Edit | ToolKind::Write | ToolKind::Read | ToolKind::Delete) => {
            args.and_then(|a| a.get("path")).and_then(Value::as_str).unwrap_or_default().to_owned()
        }
        _ => String::new(),
    }
}

/// A `stop` / `subagentStop` / `sessionEnd` status as a run status.
fn end_status(status: Option<&str>) -> Option<RunStatus> {
    match status? {
        "completed" | "complete" | "success" | "finished" => Some(RunStatus::Finished),
        "aborted" | "cancelled" | "canceled" | "interrupted" => Some(RunStatus::Cancelled),
        "error" | "failed" | "failure" => Some(RunStatus::Error),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
