#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Property tests of a whole shard (intake → shell delta → lifecycle → run → usage) over random
//! interleavings of 1–3 sessions' event scripts, with random event-time gaps (0–300 ms) so the
//! 75 ms lifecycle defer, the 75 ms batch settle and the 125 ms usage wait are both hit and missed.
//!
//! Each session's script is generated abstractly (ops that refer to earlier calls by index), then
//! resolved into concrete events (call ids, args, results), merged across sessions in a random
//! order with non-decreasing event times, and ended by an optional `Cancel` and an `EndOfSource`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::support;

use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::value::RawValue;
use toolstream_actors::item::Item;
use toolstream_actors::present::scrub::Scrubber;
use toolstream_actors::shard::ShardCore;
use toolstream_schemas::ids::call_ref;
use toolstream_schemas::{
    IncompleteReason, Input, InputEvent, Output, OutputEvent, ResultStatus, RunEnd, RunStart, RunStatus, SegmentKind,
    ShellStream, SourcePos, StopReason, TokenUsage, Tool, ToolEvent, ToolKind, ToolResult,
};

// ------------------------------------------------------------------------------------------------
// Scenario model
// ------------------------------------------------------------------------------------------------

const SESSIONS: [&str; 3] = ["sess-a", "sess-b", "sess-c"];
const DEFER_MS: u64 = 75;

/// The tools the scripts use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum T {
    Shell,
    Read,
    Mcp,
    Task,
    Grep,
    Edit,
}

const ALL_TOOLS: &[T] = &[T::Shell, T::Read, T::Mcp, T::Task, T::Grep, T::Edit];
const SHELL_ONLY: &[T] = &[T::Shell];

impl T {
    fn kind(self) -> ToolKind {
        match self {
            T::Shell => ToolKind::Shell,
            T::Read => ToolKind::Read,
            T::Mcp => ToolKind::Mcp,
            T::Task => ToolKind::Task,
            T::Grep => ToolKind::Grep,
            T::Edit => ToolKind::Edit,
        }
    }

    fn tool(self) -> Tool {
        Tool::Known(self.kind())
    }
}

const SHELL_CMDS: [&str; 4] = ["npm test", "cargo build", "make check", "ls"];
const WORDS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];
/// `pi__read` is a bridge call (SPEC §7): never a lifecycle line.
const MCP_NAMES: [&str; 4] = ["external_search", "db_query", "notes_lookup", "pi__read"];

/// Recorded args of variant `v` (variants ≥ 100 are "orphans" that match no start).
fn args_json(tool: T, v: u16) -> String {
    let i = usize::from(v % 4);
    let orphan = v >= 100;
    let word = if orphan { format!("orphan{v}") } else { WORDS[i].to_owned() };
    match tool {
        T::Shell => {
            let cmd = if orphan { format!("echo {word}") } else { SHELL_CMDS[i].to_owned() };
            serde_json::json!({ "command": cmd }).to_string()
        }
        T::Read => serde_json::json!({ "path": format!("/w/{word}.rs") }).to_string(),
        T::Grep => serde_json::json!({ "pattern": word, "path": "/w" }).to_string(),
        T::Edit => {
            serde_json::json!({ "path": format!("/w/{word}.rs"), "old_string": "a", "new_string": "b" }).to_string()
        }
        T::Mcp => {
            let name = if orphan { format!("{word}_tool") } else { MCP_NAMES[i].to_owned() };
            serde_json::json!({ "toolName": name, "args": { "q": "x" } }).to_string()
        }
        T::Task => serde_json::json!({ "description": format!("{word} task") }).to_string(),
    }
}

/// The lifecycle label of an eligible call (SPEC §6), `None` for tools/calls that never get one.
fn lifecycle_label(tool: T, v: u16) -> Option<String> {
    let i = usize::from(v % 4);
    match tool {
        T::Shell => Some(SHELL_CMDS[i].to_owned()),
        T::Task => Some(format!("{} task", WORDS[i])),
        T::Mcp if MCP_NAMES[i].starts_with("pi__") => None,
        T::Mcp => Some(MCP_NAMES[i].to_owned()),
        T::Read | T::Grep | T::Edit => None,
    }
}

fn result_json(tool: T, ok: bool, stdout: &str) -> (ResultStatus, String) {
    let value = match (tool, ok) {
        (T::Shell, true) => serde_json::json!({ "exitCode": 0, "stdout": stdout, "stderr": "" }),
        (T::Shell, false) => serde_json::json!({ "exitCode": 1, "stdout": "", "stderr": "boom" }),
        (T::Read, true) => serde_json::json!({ "content": "fn main() {}\n" }),
        (_, true) => serde_json::json!({}),
        (_, false) => serde_json::json!({ "error": "nope" }),
    };
    (if ok { ResultStatus::Success } else { ResultStatus::Failure }, value.to_string())
}

fn raw(s: String) -> Box<RawValue> {
    RawValue::from_string(s).unwrap()
}

fn tool_event(id: &str, tool: T, args: Option<u16>, result: Option<(bool, &str)>) -> Box<ToolEvent> {
    Box::new(ToolEvent {
        call_id: id.into(),
        tool: tool.tool(),
        wire_name: tool.kind().spec().cli_key.into(),
        args: args.map(|v| std::sync::Arc::new(toolstream_schemas::CallArgs::new(raw(args_json(tool, v))))),
        result: result.map(|(ok, stdout)| {
            let (status, value) = result_json(tool, ok, stdout);
            ToolResult::new(status, raw(value))
        }),
        model_call_id: None,
        started_at_ms: None,
        completed_at_ms: None,
        openai_call: None,
        reported_call_id: None,
        call: toolstream_schemas::CallIdent::default(),
        extra: vec![],
    })
}

/// How a completion names its call.
#[derive(Clone, Copy, Debug)]
enum IdMode {
    /// The id of the started call (a repeated completion when it already completed).
    Same,
    /// An unknown id, with args that match no start.
    Fresh,
    /// No id, with args that match no start.
    Empty,
    /// An id-less repeat of an earlier completion (SDK step after the delta completion):
    /// same tool, args and result, no id. Behaves like `Same` when the call did not complete yet.
    EmptyRepeat,
}

/// An abstract script operation: calls are referred to by index into the run's started calls.
#[derive(Clone, Debug)]
enum Op {
    Prompt(String),
    Thinking(String),
    Text(String),
    Segment { final_: bool, text: String },
    Start { tool: T, args: u16, partial: bool },
    Restart { pick: usize, partial: bool },
    Complete { pick: usize, open_only: bool, id: IdMode, ok: bool, empty: bool, omit_args: bool },
    ShellOut { stderr: bool, data: &'static str },
    Usage(TokenUsage),
    NewRun,
    Tick,
}

#[derive(Clone, Copy, Debug)]
enum ResultMode {
    None,
    Streamed,
    Other,
}

#[derive(Clone, Debug)]
struct Script {
    start_gap: u64,
    prompt: Option<String>,
    ops: Vec<(u64, Op)>,
    end: Option<(u64, RunStatus, ResultMode)>,
}

#[derive(Clone, Debug)]
struct Scenario {
    sessions: Vec<Script>,
    order: Vec<u8>,
    cancel: bool,
    /// Whether a repeated same-id completion carries the args again (else it omits them).
    repeat_args: bool,
}

/// A concrete event of one session (or a tick).
#[derive(Clone, Debug)]
enum Ev {
    RunStarted,
    Prompt(String),
    Thinking(String),
    Text(String),
    Segment(SegmentKind, String),
    Started { id: String, tool: T, args: u16, partial: bool },
    Completed { id: String, tool: T, args: Option<u16>, ok: bool, stdout: String },
    ShellOut { stream: ShellStream, data: String },
    Usage(TokenUsage),
    Ended { status: RunStatus, result: Option<String> },
    Tick,
}

#[derive(Clone, Debug)]
struct Step {
    session: usize,
    at: u64,
    ev: Ev,
}

impl Step {
    fn item(&self) -> Item {
        let kind = match &self.ev {
            Ev::Tick => return Item::Tick(self.at),
            Ev::RunStarted => Input::RunStarted(Box::new(RunStart { cwd: Some("/w".into()), ..RunStart::default() })),
            Ev::Prompt(text) => Input::UserPrompt { text: text.clone() },
            Ev::Thinking(text) => Input::ThinkingDelta { text: text.as_str().into() },
            Ev::Text(text) => Input::TextDelta { text: text.as_str().into() },
            Ev::Segment(kind, text) => Input::TextSegment { kind: *kind, text: text.clone() },
            Ev::Started { id, tool, args, partial } => {
                let t = tool_event(id, *tool, Some(*args), None);
                if *partial {
                    Input::ToolPartial(t)
                } else {
                    Input::ToolStarted(t)
                }
            }
            Ev::Completed { id, tool, args, ok, stdout } => {
                Input::ToolCompleted(tool_event(id, *tool, *args, Some((*ok, stdout))))
            }
            Ev::ShellOut { stream, data } => Input::ShellOutput { call_id: None, stream: *stream, data: data.clone() },
            Ev::Usage(u) => Input::TurnUsage(*u),
            Ev::Ended { status, result } => Input::RunEnded(Box::new(RunEnd {
                status: *status,
                result_text: result.clone(),
                usage: None,
                error: (*status != RunStatus::Finished).then(|| "boom".to_owned()),
                duration_ms: None,
                incomplete: false,
                extra: vec![],
            })),
        };
        Item::Input(InputEvent {
            session: Arc::from(SESSIONS[self.session]),
            at_ms: Some(self.at),
            pos: SourcePos::default(),
            kind,
        })
    }

    fn is_session_input(&self, session: usize) -> bool {
        self.session == session && !matches!(self.ev, Ev::Tick)
    }
}

/// Turns one session's abstract script into concrete events.
#[derive(Default)]
struct Resolver {
    repeat_args: bool,
    next_call: u32,
    next_orphan: u16,
    /// (id, tool, args) of the current run's starts, in start order.
    started: Vec<(String, T, u16)>,
    /// The first completion of each id of the current run: (ok, stdout).
    completed: HashMap<String, (bool, String)>,
    text: String,
}

impl Resolver {
    fn resolve(script: &Script, repeat_args: bool) -> Vec<(u64, Ev)> {
        let mut r = Resolver { repeat_args, ..Resolver::default() };
        let mut evs = vec![(script.start_gap, Ev::RunStarted)];
        if let Some(p) = &script.prompt {
            evs.push((0, Ev::Prompt(p.clone())));
        }
        for (gap, op) in &script.ops {
            if let Some(ev) = r.op(op) {
                evs.push((*gap, ev));
            }
        }
        if let Some((gap, status, mode)) = script.end {
            let result = match mode {
                ResultMode::None => None,
                ResultMode::Streamed => Some(r.text.clone()),
                ResultMode::Other => Some(format!("{}All done.", r.text)),
            };
            evs.push((gap, Ev::Ended { status, result }));
        }
        evs
    }

    fn op(&mut self, op: &Op) -> Option<Ev> {
        Some(match op {
            Op::Prompt(t) => Ev::Prompt(t.clone()),
            Op::Thinking(t) => Ev::Thinking(t.clone()),
            Op::Text(t) => {
                self.text.push_str(t);
                Ev::Text(t.clone())
            }
            Op::Segment { final_, text } => {
                let kind = if *final_ { SegmentKind::Final } else { SegmentKind::Consolidated };
                Ev::Segment(kind, text.clone())
            }
            Op::Start { tool, args, partial } => {
                let n = self.next_call;
                self.next_call += 1;
                // Short ids repeat across sessions; some carry a literal newline (SPEC §1.1 rule 2).
                let id = if n % 2 == 1 { format!("call_{n}\nfc_{n}") } else { format!("c{n}") };
                self.started.push((id.clone(), *tool, *args));
                Ev::Started { id, tool: *tool, args: *args, partial: *partial }
            }
            Op::Restart { pick, partial } => {
                if self.started.is_empty() {
                    return None;
                }
                let (id, tool, args) = self.started[pick % self.started.len()].clone();
                Ev::Started { id, tool, args, partial: *partial }
            }
            Op::Complete { pick, open_only, id, ok, empty, omit_args } => {
                let open: Vec<usize> =
                    (0..self.started.len()).filter(|i| !self.completed.contains_key(&self.started[*i].0)).collect();
                let chosen = if *open_only && !open.is_empty() {
                    Some(open[pick % open.len()])
                } else if self.started.is_empty() {
                    None
                } else {
                    Some(pick % self.started.len())
                };
                let orphan = |r: &mut Resolver, tool: T, with_id: bool| {
                    r.next_orphan += 1;
                    let n = r.next_orphan;
                    Ev::Completed {
                        id: if with_id { format!("orphan-{n}") } else { String::new() },
                        tool,
                        args: Some(100 + n),
                        ok: *ok,
                        stdout: if *empty { String::new() } else { format!("orphan output {n}") },
                    }
                };
                let Some(i) = chosen else { return Some(orphan(self, T::Shell, !matches!(id, IdMode::Empty))) };
                let done: Vec<usize> =
                    (0..self.started.len()).filter(|i| self.completed.contains_key(&self.started[*i].0)).collect();
                // An id-less repeat repeats a completed call when there is one.
                let i = match id {
                    IdMode::EmptyRepeat if !done.is_empty() => done[pick % done.len()],
                    _ => i,
                };
                let (cid, tool, args) = self.started[i].clone();
                match id {
                    IdMode::Fresh => orphan(self, tool, true),
                    IdMode::Empty => orphan(self, tool, false),
                    IdMode::EmptyRepeat if self.completed.contains_key(&cid) => {
                        let (ok, stdout) = self.completed[&cid].clone();
                        Ev::Completed { id: String::new(), tool, args: Some(args), ok, stdout }
                    }
                    IdMode::Same | IdMode::EmptyRepeat => {
                        let omit_args = *omit_args || (!self.repeat_args && self.completed.contains_key(&cid));
                        // A repeated completion repeats the first one's result.
                        let (ok, stdout) = self
                            .completed
                            .entry(cid.clone())
                            .or_insert_with(|| {
                                (*ok, if *empty { String::new() } else { format!("recorded output of {cid}") })
                            })
                            .clone();
                        Ev::Completed { id: cid, tool, args: (!omit_args).then_some(args), ok, stdout }
                    }
                }
            }
            Op::ShellOut { stderr, data } => Ev::ShellOut {
                stream: if *stderr { ShellStream::Stderr } else { ShellStream::Stdout },
                data: (*data).to_owned(),
            },
            Op::Usage(u) => Ev::Usage(*u),
            Op::NewRun => {
                self.started.clear();
                self.completed.clear();
                self.text.clear();
                Ev::RunStarted
            }
            Op::Tick => Ev::Tick,
        })
    }
}

impl Scenario {
    /// The merged, timed steps (before the final `Cancel`/`EndOfSource`).
    fn steps(&self) -> Vec<Step> {
        let per: Vec<Vec<(u64, Ev)>> = self.sessions.iter().map(|s| Resolver::resolve(s, self.repeat_args)).collect();
        let mut next = vec![0usize; per.len()];
        let mut at = 1_000u64;
        let mut steps = Vec::new();
        let mut k = 0;
        loop {
            let live: Vec<usize> = (0..per.len()).filter(|s| next[*s] < per[*s].len()).collect();
            if live.is_empty() {
                break;
            }
            let pick = live[usize::from(self.order.get(k).copied().unwrap_or(0)) % live.len()];
            k += 1;
            let (gap, ev) = per[pick][next[pick]].clone();
            next[pick] += 1;
            at += gap;
            steps.push(Step { session: pick, at, ev });
        }
        steps
    }
}

/// What a shard produced, with the index of the step that produced each output (`steps.len()`
/// for the final `Cancel`, `steps.len() + 1` for `EndOfSource`).
struct Outcome {
    out: Vec<OutputEvent>,
    step_of: Vec<usize>,
}

fn drive(steps: &[Step], cancel: bool) -> Outcome {
    let mut shard = ShardCore::default();
    let mut out = Vec::new();
    let mut step_of = Vec::new();
    let mut push = |shard: &mut ShardCore, item: Item, i: usize| {
        shard.push(item, &mut out);
        step_of.resize(out.len(), i);
    };
    for (i, s) in steps.iter().enumerate() {
        push(&mut shard, s.item(), i);
    }
    if cancel {
        push(&mut shard, Item::Cancel, steps.len());
    }
    push(&mut shard, Item::EndOfSource, steps.len() + 1);
    assert_eq!(shard.runs_open(), 0, "every run is closed at the end of the source");
    Outcome { out, step_of }
}

/// The same steps through the actor chain the binary runs (`shard::start_shard`: one actix actor
/// per stage on a System), handed over in batches of the given sizes (cycled), as the shard's
/// pump does. Its output must be the pure chain's, event for event.
fn drive_actors(steps: &[Step], cancel: bool, batch_sizes: &[usize]) -> Vec<OutputEvent> {
    let mut items: Vec<Item> = steps.iter().map(Step::item).collect();
    if cancel {
        items.push(Item::Cancel);
    }
    items.push(Item::EndOfSource);
    let mut batches = Vec::new();
    let mut sizes = batch_sizes.iter().copied().cycle();
    while !items.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, items.len());
        let rest = items.split_off(n);
        batches.push(std::mem::replace(&mut items, rest));
    }
    support::through_actors(batches)
}

type RunKey = (String, u32);

fn run_key(e: &OutputEvent) -> RunKey {
    (e.run.session.to_string(), e.run.seq)
}

fn by_run(out: &[OutputEvent]) -> BTreeMap<RunKey, Vec<&OutputEvent>> {
    let mut m: BTreeMap<RunKey, Vec<&OutputEvent>> = BTreeMap::new();
    for e in out {
        m.entry(run_key(e)).or_default().push(e);
    }
    m
}

fn is_incomplete_card(c: &toolstream_schemas::Card) -> bool {
    c.incomplete.is_some()
}

fn estimate(text: &str) -> u64 {
    (text.encode_utf16().count() as u64).div_ceil(4)
}

fn utf16(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

// ------------------------------------------------------------------------------------------------
// Strategies
// ------------------------------------------------------------------------------------------------

/// Which ops a scenario family uses, by weight (0 = never).
#[derive(Clone, Copy, Debug)]
struct Mix {
    tools: &'static [T],
    arg_variants: u16,
    max_ops: usize,
    prompt: u32,
    text: u32,
    start: u32,
    restart: u32,
    complete: u32,
    /// Completion ids: 0 = always the start's id; 1 = also unknown ids and no ids (orphans);
    /// 2 = also id-less repeats of earlier completions.
    odd_ids: u8,
    /// Repeated same-id completions carry the args again.
    repeat_args: bool,
    shell_out: u32,
    usage: u32,
    new_run: u32,
    tick: u32,
}

const GENERAL: Mix = Mix {
    tools: ALL_TOOLS,
    arg_variants: 4,
    max_ops: 24,
    prompt: 1,
    text: 4,
    start: 4,
    restart: 1,
    complete: 4,
    odd_ids: 2,
    repeat_args: true,
    shell_out: 2,
    usage: 2,
    new_run: 1,
    tick: 2,
};

fn gap() -> BoxedStrategy<u64> {
    prop_oneof![3 => 0u64..=10, 2 => 10u64..=60, 3 => 60u64..=90, 2 => 90u64..=300].boxed()
}

fn words() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-z]{1,6}( [a-z]{1,6})?",
        1 => Just(String::new()),
        1 => Just("héllo wörld ".to_owned()),
        1 => Just("😀 ok".to_owned()),
    ]
    .boxed()
}

fn prompt_text() -> BoxedStrategy<String> {
    prop_oneof![3 => "[a-zA-Z0-9 ]{0,40}", 2 => "\\PC{0,24}", 1 => Just("日本語のプロンプト 😀😀".to_owned())].boxed()
}

/// Turn usage: mostly sane (cache reads/writes partition the input), some insane (cache larger
/// than the input, output above the model maximum, sums past the context window or overflowing).
fn usage() -> BoxedStrategy<TokenUsage> {
    let tu = |i, o, r, w| TokenUsage {
        input_tokens: i,
        output_tokens: o,
        cache_read_tokens: r,
        cache_write_tokens: w,
        reasoning_tokens: None,
    };
    let sane = (0u64..30_000, 0u64..2_000, 0u64..=100, 0u64..=100)
        .prop_map(move |(i, o, rp, wp)| tu(i, o, i * rp / 200, i * wp / 200));
    let n = prop_oneof![4 => 0u64..5_000, 1 => 0u64..3_000_000, 1 => Just(u64::MAX), 1 => Just(u64::MAX / 2)];
    let insane = (n.clone(), n.clone(), n.clone(), n).prop_map(move |(i, o, r, w)| tu(i, o, r, w));
    prop_oneof![2 => sane, 1 => insane].boxed()
}

fn shell_data() -> BoxedStrategy<&'static str> {
    prop_oneof![
        1 => Just(""),
        1 => Just("   \n"),
        2 => Just("building widget\n"),
        2 => Just("\n\nPASS all tests\nmore\n"),
        1 => Just("warning unused import"),
    ]
    .boxed()
}

fn id_mode(odd: u8) -> BoxedStrategy<IdMode> {
    match odd {
        0 => Just(IdMode::Same).boxed(),
        1 => prop_oneof![5 => Just(IdMode::Same), 1 => Just(IdMode::Fresh), 1 => Just(IdMode::Empty)].boxed(),
        _ => prop_oneof![
            5 => Just(IdMode::Same),
            1 => Just(IdMode::Fresh),
            1 => Just(IdMode::Empty),
            3 => Just(IdMode::EmptyRepeat),
        ]
        .boxed(),
    }
}

fn op(mix: Mix) -> BoxedStrategy<Op> {
    let tools = mix.tools;
    let mut arms: Vec<(u32, BoxedStrategy<Op>)> = Vec::new();
    let mut add = |w: u32, s: BoxedStrategy<Op>| {
        if w > 0 {
            arms.push((w, s));
        }
    };
    add(mix.prompt, prompt_text().prop_map(Op::Prompt).boxed());
    add(mix.text, words().prop_map(Op::Text).boxed());
    add(mix.text / 2, words().prop_map(Op::Thinking).boxed());
    add(mix.text / 4, (any::<bool>(), words()).prop_map(|(final_, text)| Op::Segment { final_, text }).boxed());
    add(
        mix.start,
        (prop::sample::select(tools), 0..mix.arg_variants, prop::bool::weighted(0.2))
            .prop_map(|(tool, args, partial)| Op::Start { tool, args, partial })
            .boxed(),
    );
    add(mix.restart, (any::<usize>(), any::<bool>()).prop_map(|(pick, partial)| Op::Restart { pick, partial }).boxed());
    add(
        mix.complete,
        (
            any::<usize>(),
            prop::bool::weighted(0.8),
            id_mode(mix.odd_ids),
            prop::bool::weighted(0.8),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(pick, open_only, id, ok, empty, omit_args)| Op::Complete {
                pick,
                open_only,
                id,
                ok,
                empty,
                omit_args,
            })
            .boxed(),
    );
    add(
        mix.shell_out,
        (prop::bool::weighted(0.2), shell_data()).prop_map(|(stderr, data)| Op::ShellOut { stderr, data }).boxed(),
    );
    add(mix.usage, usage().prop_map(Op::Usage).boxed());
    add(mix.new_run, Just(Op::NewRun).boxed());
    add(mix.tick, Just(Op::Tick).boxed());
    Union::new_weighted(arms).boxed()
}

fn script(mix: Mix) -> BoxedStrategy<Script> {
    let end = (
        gap(),
        prop_oneof![3 => Just(RunStatus::Finished), 1 => Just(RunStatus::Error), 1 => Just(RunStatus::Cancelled)],
        prop_oneof![Just(ResultMode::None), Just(ResultMode::Streamed), Just(ResultMode::Other)],
    );
    let prompt =
        if mix.prompt > 0 { proptest::option::weighted(0.8, prompt_text()).boxed() } else { Just(None).boxed() };
    (gap(), prompt, prop::collection::vec((gap(), op(mix)), 0..mix.max_ops), proptest::option::weighted(0.7, end))
        .prop_map(|(start_gap, prompt, ops, end)| Script { start_gap, prompt, ops, end })
        .boxed()
}

fn scenario(mix: Mix) -> BoxedStrategy<Scenario> {
    (prop::collection::vec(script(mix), 1..=3), prop::collection::vec(any::<u8>(), 0..90), prop::bool::weighted(0.3))
        .prop_map(move |(sessions, order, cancel)| Scenario { sessions, order, cancel, repeat_args: mix.repeat_args })
        .boxed()
}

fn config() -> ProptestConfig {
    // No regression files: this test owns only its own source file.
    ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() }
}

// ------------------------------------------------------------------------------------------------
// Property 1: message and run framing
// ------------------------------------------------------------------------------------------------

fn check_framing(sc: &Scenario, steps: &[Step], o: &Outcome) -> Result<(), TestCaseError> {
    let runs = by_run(&o.out);
    // Exactly the runs the scripts started, and no phantom run opened by a late line.
    for (s, _) in sc.sessions.iter().enumerate() {
        let started = steps.iter().filter(|st| st.session == s && matches!(st.ev, Ev::RunStarted)).count() as u32;
        let seqs: Vec<u32> = runs.keys().filter(|(sess, _)| sess == SESSIONS[s]).map(|(_, seq)| *seq).collect();
        prop_assert_eq!(seqs, (1..=started).collect::<Vec<_>>(), "runs of session {}", SESSIONS[s]);
    }
    for (key, evs) in &runs {
        let closed = evs.iter().filter(|e| matches!(e.kind, Output::RunClosed { .. })).count();
        prop_assert_eq!(closed, 1, "RunClosed count of {:?}", key);
        prop_assert!(matches!(evs.last().unwrap().kind, Output::RunClosed { .. }), "RunClosed is last of {key:?}");
        prop_assert!(matches!(evs[0].kind, Output::RunOpened { .. }), "RunOpened is first of {key:?}");
        let mut open: Option<u32> = None;
        let mut next_turn = 0u32;
        let mut last_at = 0u64;
        let (mut cards, mut incomplete) = (0u32, 0u32);
        for e in evs {
            prop_assert!(e.at_ms >= last_at, "event time goes backwards in {key:?}: {e:?}");
            last_at = e.at_ms;
            match &e.kind {
                Output::MessageStarted { turn } => {
                    prop_assert_eq!(open, None, "MessageStarted while a message is open in {:?}", key);
                    prop_assert_eq!(*turn, next_turn);
                    open = Some(*turn);
                }
                Output::MessageEnded { turn, usage, .. } => {
                    prop_assert_eq!(open, Some(*turn), "MessageEnded without its start in {:?}", key);
                    prop_assert!(usage.total_tokens >= usage.input.saturating_add(usage.output), "usage {usage:?}");
                    open = None;
                    next_turn += 1;
                }
                Output::Text { turn, .. } | Output::Thinking { turn, .. } | Output::BlockEnded { turn } => {
                    prop_assert_eq!(open, Some(*turn), "content outside its message in {:?}: {:?}", key, e);
                }
                Output::Card(c) => {
                    prop_assert_eq!(open, Some(c.turn), "card outside its message in {:?}", key);
                    if !is_incomplete_card(c) {
                        cards += 1;
                    }
                }
                Output::IncompleteCall(_) => {
                    prop_assert!(open.is_some(), "incomplete call outside a message in {key:?}");
                    incomplete += 1;
                }
                Output::LifecycleLine { .. } => {
                    prop_assert!(open.is_some(), "lifecycle line outside a message in {key:?}");
                }
                Output::RunClosed { totals, .. } => {
                    prop_assert_eq!(open, None, "RunClosed with a message open in {:?}", key);
                    prop_assert!(next_turn >= 1, "a run delivers at least one message");
                    prop_assert_eq!(totals.messages, next_turn);
                    prop_assert_eq!(totals.cards, cards);
                    prop_assert_eq!(totals.incomplete_calls, incomplete);
                }
                _ => {}
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Property 2: each started call ends as exactly one card or one incomplete record
// ------------------------------------------------------------------------------------------------

fn check_one_record_per_call(sc: &Scenario, steps: &[Step], o: &Outcome) -> Result<(), TestCaseError> {
    let runs = by_run(&o.out);
    for (s, script) in sc.sessions.iter().enumerate() {
        let key: RunKey = (SESSIONS[s].to_owned(), 1);
        let evs = runs.get(&key).cloned().unwrap_or_default();
        let text: String = evs
            .iter()
            .filter_map(|e| match &e.kind {
                Output::Text { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        let reason = match (script.end, sc.cancel) {
            (Some((_, RunStatus::Finished, _)), _) => IncompleteReason::NoCompletionAtRunEnd,
            (Some((_, RunStatus::Cancelled, _)), _) | (None, true) => IncompleteReason::Abort,
            (Some((_, RunStatus::Error, _)), _) => IncompleteReason::SdkFailure,
            (None, false) => IncompleteReason::StreamEnded,
        };
        let mut starts: Vec<(String, T)> = Vec::new();
        let mut completed: HashSet<String> = HashSet::new();
        for st in steps.iter().filter(|st| st.session == s) {
            match &st.ev {
                Ev::Started { id, tool, .. } if !starts.iter().any(|(i, _)| i == id) => {
                    starts.push((id.clone(), *tool))
                }
                Ev::Completed { id, .. } if starts.iter().any(|(i, _)| i == id) => {
                    completed.insert(id.clone());
                }
                _ => {}
            }
        }
        for (id, tool) in &starts {
            let hash = call_ref(id).hash;
            let cards = evs
                .iter()
                .filter(|e| matches!(&e.kind, Output::Card(c) if c.call.hash == hash && !is_incomplete_card(c)))
                .count();
            let inc_cards = evs
                .iter()
                .filter(|e| matches!(&e.kind, Output::Card(c) if c.call.hash == hash && is_incomplete_card(c)))
                .count();
            let inc: Vec<_> = evs
                .iter()
                .filter_map(|e| match &e.kind {
                    Output::IncompleteCall(i) if i.call.hash == hash => Some(i),
                    _ => None,
                })
                .collect();
            let what = format!("call {id:?} ({tool:?}) of {}", SESSIONS[s]);
            if completed.contains(id) {
                prop_assert_eq!((cards, inc.len(), inc_cards), (1, 0, 0), "{} completed: exactly one card", what);
            } else {
                prop_assert_eq!((cards, inc.len()), (0, 1), "{} never completed: exactly one incomplete record", what);
                let rec = inc[0];
                prop_assert_eq!(rec.reason, reason, "{}", what);
                let visible = !(reason == IncompleteReason::NoCompletionAtRunEnd
                    && matches!(tool, T::Read | T::Grep)
                    && !text.trim().is_empty());
                prop_assert_eq!(rec.visible, visible, "{}", what);
                // SPEC §5.3: an error card only for a failed run, a stream that ended, or a run that
                // finished without text; otherwise (cancelled, or finished with text) a thinking line.
                let card = match reason {
                    IncompleteReason::SdkFailure | IncompleteReason::StreamEnded => true,
                    IncompleteReason::NoCompletionAtRunEnd => text.trim().is_empty(),
                    IncompleteReason::Abort => false,
                };
                prop_assert_eq!(inc_cards, usize::from(card), "{} incomplete card by run outcome", what);
                let line = format!("{} did not complete: {}\n", rec.title, reason.text());
                let lines =
                    evs.iter().filter(|e| matches!(&e.kind, Output::Thinking { delta, .. } if *delta == line)).count();
                prop_assert!(card || !visible || lines >= 1, "{} thinking line {:?}", what, line);
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Property 3: shell output attribution
// ------------------------------------------------------------------------------------------------

#[derive(Debug)]
struct ShellModel {
    id: String,
    tainted_at: Option<usize>,
    budget: u8,
    buffer: String,
}

#[derive(Debug, PartialEq, Eq)]
struct Progress {
    session: String,
    hash: String,
    stream: ShellStream,
    line: String,
}

fn check_shell_attribution(steps: &[Step], o: &Outcome) -> Result<(), TestCaseError> {
    let mut active: Vec<Vec<ShellModel>> = (0..SESSIONS.len()).map(|_| Vec::new()).collect();
    let mut done: Vec<HashSet<String>> = (0..SESSIONS.len()).map(|_| HashSet::new()).collect();
    let mut expected_progress = Vec::new();
    // (session, id) → (tainted step, expected card content when it is decidable)
    let mut expected_content: HashMap<(String, String), (Option<usize>, Option<String>)> = HashMap::new();
    let mut tainted: HashMap<(String, String), usize> = HashMap::new();
    for (i, st) in steps.iter().enumerate() {
        let s = st.session;
        let sess = SESSIONS[s].to_owned();
        match &st.ev {
            Ev::RunStarted | Ev::Ended { .. } => {
                active[s].clear();
                done[s].clear();
            }
            // A repeated start of an active or completed shell changes nothing.
            Ev::Started { id, tool: T::Shell, .. }
                if !active[s].iter().any(|a| &a.id == id) && !done[s].contains(id) =>
            {
                active[s].push(ShellModel { id: id.clone(), tainted_at: None, budget: 3, buffer: String::new() });
            }
            Ev::Completed { id, tool: T::Shell, ok, stdout, .. } => {
                if let Some(pos) = active[s].iter().position(|a| &a.id == id) {
                    let a = active[s].remove(pos);
                    done[s].insert(id.clone());
                    let content = (*ok && stdout.is_empty()).then(|| {
                        if a.tainted_at.is_none() && !a.buffer.trim().is_empty() {
                            a.buffer.trim().to_owned()
                        } else {
                            "(no output)".to_owned()
                        }
                    });
                    expected_content.insert((sess, id.clone()), (a.tainted_at, content));
                }
            }
            Ev::ShellOut { stream, data } if !data.is_empty() => match active[s].as_mut_slice() {
                [only] if only.tainted_at.is_none() => {
                    only.buffer.push_str(data);
                    // A chunk that ends mid-line shows no unfinished word at its end (it may be a
                    // secret's start that the next chunk completes).
                    let shown = if data.ends_with(['\n', '\r']) {
                        data.as_str()
                    } else {
                        data.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || "_-+/=.~%".contains(c))
                    };
                    if let Some(first) = shown.lines().map(str::trim).find(|l| !l.is_empty()) {
                        if only.budget > 0 {
                            only.budget -= 1;
                            expected_progress.push(Progress {
                                session: sess,
                                hash: call_ref(&only.id).hash,
                                stream: *stream,
                                line: first.to_owned(),
                            });
                        }
                    }
                }
                [_] => {}
                many => {
                    for a in many {
                        a.tainted_at.get_or_insert(i);
                        tainted.entry((sess.clone(), a.id.clone())).or_insert(i);
                    }
                }
            },
            _ => {}
        }
    }
    let mut actual = Vec::new();
    for (e, step) in o.out.iter().zip(&o.step_of) {
        if let Output::ShellProgress { call, stream, line } = &e.kind {
            let session = e.run.session.to_string();
            // Never for a call after output arrived while it overlapped another shell.
            for ((ts, tid), at) in &tainted {
                prop_assert!(
                    !(ts == &session && call_ref(tid).hash == call.hash && step > at),
                    "shell progress for overlapping call {tid:?} after step {at}: {line:?}"
                );
            }
            actual.push(Progress { session, hash: call.hash.clone(), stream: *stream, line: line.clone() });
        }
    }
    prop_assert_eq!(&actual, &expected_progress);
    let mut per_call: HashMap<(String, String), usize> = HashMap::new();
    for p in &actual {
        *per_call.entry((p.session.clone(), p.hash.clone())).or_default() += 1;
    }
    prop_assert!(per_call.values().all(|n| *n <= 3), "at most 3 progress lines per call: {per_call:?}");
    for ((sess, id), (tainted_at, content)) in &expected_content {
        let hash = call_ref(id).hash;
        let card = o.out.iter().find_map(|e| match &e.kind {
            Output::Card(c) if &*e.run.session == sess && c.call.hash == hash => Some(c),
            _ => None,
        });
        let card = card.ok_or_else(|| TestCaseError::fail(format!("no card for {id:?} of {sess}")))?;
        if let Some(want) = content {
            prop_assert_eq!(&card.content, want, "card of {:?} of {} (tainted at {:?})", id, sess, tainted_at);
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Property 4: usage estimates
// ------------------------------------------------------------------------------------------------

fn check_estimates(steps: &[Step], o: &Outcome) -> Result<(), TestCaseError> {
    for (key, evs) in by_run(&o.out) {
        let s = SESSIONS.iter().position(|x| *x == key.0).unwrap();
        // The prompt is the first UserPrompt, if it came before any other input of the run,
        // scrubbed as every sink gets it: a generated prompt can look like credentials
        // (`x:A@-:` is a `user:password@host`), and then it is shown redacted.
        let first_input = steps.iter().filter(|st| st.is_session_input(s)).nth(1).map(|st| &st.ev);
        let want_prompt = match first_input {
            Some(Ev::Prompt(p)) => Some(Scrubber::default().scrub(p).into_owned()),
            _ => None,
        };
        let Some(Output::RunOpened { prompt, .. }) = evs.first().map(|e| &e.kind) else {
            return Err(TestCaseError::fail("no RunOpened"));
        };
        prop_assert_eq!(prompt, &want_prompt, "prompt of {:?}", key);
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        let mut results_of_msg = Vec::new();
        let mut failed = Vec::new();
        let (mut units, mut results) = (0u64, 0u64);
        for e in &evs {
            match &e.kind {
                Output::MessageStarted { .. } => (units, results) = (0, 0),
                Output::Text { delta, .. } | Output::Thinking { delta, .. } => units += utf16(delta),
                Output::LifecycleLine { title, label, .. } => units += utf16(title) + utf16(label) + 3,
                Output::Card(c) => {
                    units += utf16(&c.args.to_string());
                    results += estimate(&c.result_text);
                }
                Output::MessageEnded { usage, stop_reason, .. } => {
                    prop_assert_eq!((usage.cache_read, usage.cache_write), (0, 0));
                    prop_assert!(usage.total_tokens >= usage.input + usage.output);
                    results_of_msg.push(results);
                    if matches!(stop_reason, StopReason::Error | StopReason::Aborted) {
                        // Error and aborted messages carry zero usage (SPEC §5.4).
                        prop_assert_eq!(usage.total_tokens, 0, "usage of a failed message of {:?}", key);
                        failed.push(inputs.len());
                    } else {
                        prop_assert_eq!(usage.output, units.div_ceil(4), "output estimate of {:?}", key);
                    }
                    inputs.push(usage.input);
                    outputs.push(usage.output);
                }
                _ => {}
            }
        }
        let mut want = vec![want_prompt.as_deref().map_or(0, estimate)];
        want.extend(results_of_msg.iter().take(results_of_msg.len().saturating_sub(1)));
        for i in &failed {
            want[*i] = 0;
        }
        prop_assert_eq!(&inputs, &want, "inputs of {:?}: prompt once, then each result once", key);
        let cards = evs.iter().filter(|e| matches!(e.kind, Output::Card(_))).count();
        if cards == 0 {
            prop_assert!(inputs.iter().skip(1).all(|i| *i == 0));
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Property 5: lifecycle lines
// ------------------------------------------------------------------------------------------------

fn check_lifecycle(steps: &[Step], o: &Outcome) -> Result<(), TestCaseError> {
    let mut lines: HashMap<(String, String), Vec<(String, String)>> = HashMap::new();
    for e in &o.out {
        if let Output::LifecycleLine { call, title, label } = &e.kind {
            lines
                .entry((e.run.session.to_string(), call.hash.clone()))
                .or_default()
                .push((title.clone(), label.clone()));
        }
    }
    for (k, v) in &lines {
        prop_assert_eq!(v.len(), 1, "at most one lifecycle line per call: {:?} {:?}", k, v);
    }
    for (i, st) in steps.iter().enumerate() {
        let Ev::Started { id, tool, args, .. } = &st.ev else { continue };
        let s = st.session;
        let same_id = |x: &Step| x.session == s && matches!(&x.ev, Ev::Started { id: o, .. } if o == id);
        if steps[..i].iter().any(same_id) {
            continue; // a repeated report: judged from the first start
        }
        let repeated = steps[i + 1..].iter().any(same_id);
        // The end of the call: its completion, else its run's end, else the end of the steps.
        let end = steps
            .iter()
            .enumerate()
            .skip(i + 1)
            .find(|(_, x)| {
                x.session == s
                    && match &x.ev {
                        Ev::Completed { id: cid, .. } => cid == id,
                        Ev::Ended { .. } | Ev::RunStarted => true,
                        _ => false,
                    }
            })
            .map(|(j, _)| j);
        let completed_at = end.and_then(|j| match &steps[j].ev {
            Ev::Completed { .. } => Some(steps[j].at),
            _ => None,
        });
        let got = lines.get(&(SESSIONS[s].to_owned(), call_ref(id).hash)).map_or(0, Vec::len);
        let what = format!("{tool:?} call {id:?} of {} started at {}", SESSIONS[s], st.at);
        if let Some(done) = completed_at {
            // Strictly within: a completion exactly at the deadline is decided below (a tick at
            // the deadline fires the line first; an event at the deadline does not).
            if done - st.at < DEFER_MS {
                prop_assert_eq!(got, 0, "{} completed at {} within the defer window", what, done);
            }
        }
        let Some(label) = lifecycle_label(*tool, *args) else {
            prop_assert_eq!(got, 0, "{} is not lifecycle-eligible", what);
            continue;
        };
        // Decidable positive case: no other call of the run with the same (tool, args), and an item
        // of the session after start + defer (or a tick at or after it) arrived before the call
        // ended.
        let run_start = steps[..i].iter().rposition(|x| x.session == s && matches!(x.ev, Ev::RunStarted)).unwrap_or(0);
        let run_end = steps
            .iter()
            .enumerate()
            .skip(i + 1)
            .find(|(_, x)| x.session == s && matches!(x.ev, Ev::Ended { .. } | Ev::RunStarted))
            .map_or(steps.len(), |(j, _)| j);
        let unique = !steps[run_start..run_end].iter().any(|x| {
            x.session == s
                && matches!(&x.ev, Ev::Started { id: o, tool: t, args: a, .. } if o != id && t == tool && a == args)
        });
        let last = end.unwrap_or(steps.len().saturating_sub(1));
        let reached = steps[i + 1..=last.max(i)]
            .iter()
            // SPEC §2: a timer fires before an event only when due strictly before it; a tick at
            // the due time fires it.
            .any(|x| {
                (x.session == s && x.at > st.at + DEFER_MS) || (matches!(x.ev, Ev::Tick) && x.at >= st.at + DEFER_MS)
            });
        if unique && !repeated {
            prop_assert_eq!(got, usize::from(reached), "{} (label {:?})", what, label);
            if reached {
                let (title, got_label) = &lines[&(SESSIONS[s].to_owned(), call_ref(id).hash)][0];
                prop_assert_eq!(title.as_str(), &*tool.tool().title());
                prop_assert_eq!(got_label, &label);
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// The properties
// ------------------------------------------------------------------------------------------------

/// Shell-heavy scripts: overlapping shells (identical commands included) and output deltas.
const SHELLS: Mix = Mix {
    tools: SHELL_ONLY,
    arg_variants: 4,
    max_ops: 24,
    prompt: 0,
    text: 1,
    start: 4,
    restart: 0,
    complete: 3,
    odd_ids: 0,
    repeat_args: false,
    shell_out: 6,
    usage: 0,
    new_run: 0,
    tick: 1,
};

fn run_scenario(sc: &Scenario) -> (Vec<Step>, Outcome) {
    let steps = sc.steps();
    let o = drive(&steps, sc.cancel);
    (steps, o)
}

/// A generated prompt that looks like credentials (`user:password@host`) once made property 4b
/// fail in a run of `.ci/run`: the engine shows it redacted, as every sink gets it. The case, kept.
#[test]
fn a_prompt_that_looks_like_credentials_is_expected_redacted() {
    let sc = Scenario {
        sessions: vec![Script { start_gap: 0, prompt: Some("\u{11180}:A@-:".into()), ops: vec![], end: None }],
        order: vec![],
        cancel: false,
        repeat_args: true,
    };
    let (steps, o) = run_scenario(&sc);
    let opened = o.out.iter().find_map(|e| match &e.kind {
        Output::RunOpened { prompt, .. } => Some(prompt.clone()),
        _ => None,
    });
    assert_eq!(opened, Some(Some("[redacted]@-:".to_owned())));
    check_estimates(&steps, &o).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..config() })]

    /// 0. The actor chain the binary runs gives exactly the pure chain's output, whatever the
    /// batch boundaries, so every property below holds for it too (fewer cases: each starts a
    /// System).
    #[test]
    fn p0_the_actor_chain_gives_the_pure_chains_output(
        sc in scenario(GENERAL),
        sizes in proptest::collection::vec(1usize..40, 1..4),
    ) {
        let (steps, o) = run_scenario(&sc);
        let actors = drive_actors(&steps, sc.cancel, &sizes);
        prop_assert_eq!(serde_json::to_string(&actors).unwrap(), serde_json::to_string(&o.out).unwrap());
        check_framing(&sc, &steps, &Outcome { step_of: vec![0; actors.len()], out: actors })?;
    }
}

proptest! {
    #![proptest_config(config())]

    /// 1. Exactly one terminal MessageEnded per MessageStarted, exactly one RunClosed per run, last
    /// of its events; content only inside its message; totals agree.
    #[test]
    fn p1_framing_one_end_per_message_and_one_close_per_run(sc in scenario(GENERAL)) {
        let (steps, o) = run_scenario(&sc);
        check_framing(&sc, &steps, &o)?;
    }

    /// 2. Each started call ends as exactly one card or exactly one incomplete record; completions
    /// carry the start's id (repeats included) or an unknown id / no id with unrelated args.
    #[test]
    fn p2_every_started_call_ends_as_exactly_one_record(sc in scenario(Mix { new_run: 0, odd_ids: 1, ..GENERAL })) {
        let (steps, o) = run_scenario(&sc);
        check_framing(&sc, &steps, &o)?;
        check_one_record_per_call(&sc, &steps, &o)?;
    }

    /// 2b. The same with completions that always carry the start's id (duplicates included).
    #[test]
    fn p2b_every_started_call_ends_as_exactly_one_record_same_ids(
        sc in scenario(Mix { new_run: 0, odd_ids: 0, ..GENERAL })
    ) {
        let (steps, o) = run_scenario(&sc);
        check_one_record_per_call(&sc, &steps, &o)?;
    }

    /// 2c. The same with id-less repeats of earlier completions (SPEC §5.2: the SDK step repeating
    /// the delta completion) while an identical call is still running.
    #[test]
    fn p2c_every_started_call_ends_as_exactly_one_record_with_idless_repeats(
        sc in scenario(Mix { new_run: 0, odd_ids: 2, arg_variants: 2, ..GENERAL })
    ) {
        let (steps, o) = run_scenario(&sc);
        check_one_record_per_call(&sc, &steps, &o)?;
    }

    /// 3. Shell output is attributed only while exactly one shell is active: exact progress lines
    /// (≤3 per call, blank chunks free), none for a call once output arrived while it overlapped
    /// another shell, and the card of such a call shows `(no output)` when its recorded output was
    /// empty (a lone shell's buffered output replaces empty recorded output).
    #[test]
    fn p3_shell_output_is_attributed_only_to_a_lone_shell(sc in scenario(SHELLS)) {
        let (steps, o) = run_scenario(&sc);
        check_shell_attribution(&steps, &o)?;
    }

    /// 3b. The same when a repeated completion of a finished shell carries its args again.
    #[test]
    fn p3b_shell_output_attribution_with_repeated_completions_carrying_args(
        sc in scenario(Mix { repeat_args: true, ..SHELLS })
    ) {
        let (steps, o) = run_scenario(&sc);
        check_shell_attribution(&steps, &o)?;
    }

    /// 3c. The same when start/partial reports of a call repeat, also after its completion.
    #[test]
    fn p3c_shell_output_attribution_with_repeated_starts(sc in scenario(Mix { restart: 3, ..SHELLS })) {
        let (steps, o) = run_scenario(&sc);
        check_shell_attribution(&steps, &o)?;
    }

    /// 4. Estimates only: the prompt is input once (first message), each tool result once (the
    /// message after its card); outputs are the estimate of the message's text, thinking,
    /// lifecycle lines and card args.
    #[test]
    fn p4_estimates_count_the_prompt_once_and_each_result_once(sc in scenario(Mix { usage: 0, new_run: 0, ..GENERAL })) {
        let (steps, o) = run_scenario(&sc);
        check_estimates(&steps, &o)?;
    }

    /// 4b. Runs without completed cards: first message input == ceil(utf16(prompt)/4), later 0.
    #[test]
    fn p4b_without_cards_only_the_first_message_has_input(
        sc in scenario(Mix { usage: 0, new_run: 0, complete: 0, ..GENERAL })
    ) {
        let (steps, o) = run_scenario(&sc);
        check_estimates(&steps, &o)?;
    }

    /// 5. No lifecycle line for a call completed within the defer window; at most one per call;
    /// exactly one (with its title and label) for a slow, unique, eligible call.
    #[test]
    fn p5_lifecycle_lines_only_for_slow_calls_and_at_most_once(
        sc in scenario(Mix { restart: 0, new_run: 0, odd_ids: 0, ..GENERAL })
    ) {
        let (steps, o) = run_scenario(&sc);
        check_lifecycle(&steps, &o)?;
    }

    /// 5b. The same when start/partial reports repeat, also after the completion.
    #[test]
    fn p5b_lifecycle_lines_with_repeated_starts(sc in scenario(Mix { restart: 3, new_run: 0, odd_ids: 0, ..GENERAL })) {
        let (steps, o) = run_scenario(&sc);
        check_lifecycle(&steps, &o)?;
    }
}

// ------------------------------------------------------------------------------------------------
// Regressions: minimal cases of the bugs these properties found (fixed by the intake stage,
// which matches and dedupes every call before the shell, lifecycle and run stages see it)
// ------------------------------------------------------------------------------------------------

fn step(session: usize, at: u64, ev: Ev) -> Step {
    Step { session, at, ev }
}

fn started(id: &str, tool: T, args: u16) -> Ev {
    Ev::Started { id: id.into(), tool, args, partial: false }
}

fn partial(id: &str, tool: T, args: u16) -> Ev {
    Ev::Started { id: id.into(), tool, args, partial: true }
}

fn completed(id: &str, tool: T, args: Option<u16>) -> Ev {
    Ev::Completed { id: id.into(), tool, args, ok: true, stdout: String::new() }
}

fn shell_out(data: &str) -> Ev {
    Ev::ShellOut { stream: ShellStream::Stdout, data: data.into() }
}

fn finished() -> Ev {
    Ev::Ended { status: RunStatus::Finished, result: None }
}

fn records_of(o: &Outcome, id: &str) -> (usize, usize) {
    let hash = call_ref(id).hash;
    let cards = o.out.iter().filter(|e| matches!(&e.kind, Output::Card(c) if c.call.hash == hash)).count();
    let inc = o.out.iter().filter(|e| matches!(&e.kind, Output::IncompleteCall(i) if i.call.hash == hash)).count();
    (cards, inc)
}

fn progress_of(o: &Outcome, id: &str) -> Vec<String> {
    let hash = call_ref(id).hash;
    o.out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::ShellProgress { call, line, .. } if call.hash == hash => Some(line.clone()),
            _ => None,
        })
        .collect()
}

fn lifecycle_of(o: &Outcome, id: &str) -> Vec<String> {
    let hash = call_ref(id).hash;
    o.out
        .iter()
        .filter_map(|e| match &e.kind {
            Output::LifecycleLine { call, title, label } if call.hash == hash => Some(format!("{title}: {label}")),
            _ => None,
        })
        .collect()
}

/// Two reads of the same file; `a` completes, then the SDK step repeats `a`'s completion without
/// an id (SPEC §5.2). `b` never completes: it must end as an incomplete record.
#[test]
fn regression_idless_repeat_of_a_completion_loses_an_identical_running_call() {
    let steps = vec![
        step(0, 0, Ev::RunStarted),
        step(0, 1, started("a", T::Read, 0)),
        step(0, 2, started("b", T::Read, 0)),
        step(0, 3, completed("a", T::Read, None)),
        step(0, 4, completed("", T::Read, Some(0))),
        step(0, 5, finished()),
    ];
    let o = drive(&steps, false);
    assert_eq!(records_of(&o, "a"), (1, 0));
    // Today: (0, 0) — `b` has neither a card nor an incomplete record.
    assert_eq!(records_of(&o, "b"), (1, 1), "one incomplete record (and its visible error card) for b");
}

/// `a` (`make check`) completed; `b` (`make check`) and `c` (`ls`) are running; `a`'s completion
/// is repeated with its args. Output while `b` and `c` both run must not be attributed.
#[test]
fn regression_repeated_shell_completion_with_args_detaches_another_identical_shell() {
    let steps = vec![
        step(0, 0, Ev::RunStarted),
        step(0, 1, started("a", T::Shell, 2)),
        step(0, 2, completed("a", T::Shell, Some(2))),
        step(0, 3, started("b", T::Shell, 2)),
        step(0, 4, started("c", T::Shell, 3)),
        step(0, 5, completed("a", T::Shell, Some(2))),
        step(0, 6, shell_out("building widget\n")),
        step(0, 7, finished()),
    ];
    let o = drive(&steps, false);
    // Today: c gets the progress line "building widget".
    assert_eq!(progress_of(&o, "c"), Vec::<String>::new());
    assert_eq!(progress_of(&o, "b"), Vec::<String>::new());
}

/// The lifecycle stage has the same fallback: a repeated completion of `a` cancels the pending
/// line of the still-running, slow `b` with the same `(tool, args)`.
#[test]
fn regression_repeated_completion_cancels_the_lifecycle_line_of_another_identical_call() {
    let steps = vec![
        step(0, 0, Ev::RunStarted),
        step(0, 1, started("a", T::Mcp, 0)),
        step(0, 10, completed("a", T::Mcp, Some(0))),
        step(0, 20, started("b", T::Mcp, 0)),
        step(0, 30, completed("a", T::Mcp, Some(0))),
        step(0, 200, Ev::Text("still waiting".into())),
        step(0, 300, completed("b", T::Mcp, None)),
        step(0, 301, finished()),
    ];
    let o = drive(&steps, false);
    assert_eq!(lifecycle_of(&o, "a"), Vec::<String>::new());
    // Today: no line for b, although it ran 280 ms.
    assert_eq!(lifecycle_of(&o, "b"), vec!["Cursor MCP: external_search".to_owned()]);
}

/// A start (or partial) report repeated after the call completed schedules a new lifecycle timer.
#[test]
fn regression_start_repeated_after_completion_shows_a_lifecycle_line_for_a_completed_call() {
    let steps = vec![
        step(0, 0, Ev::RunStarted),
        step(0, 1, started("a", T::Mcp, 0)),
        step(0, 10, completed("a", T::Mcp, None)),
        step(0, 20, partial("a", T::Mcp, 0)),
        step(0, 200, Ev::Text("ok".into())),
        step(0, 201, finished()),
    ];
    let o = drive(&steps, false);
    // Today: ["Cursor MCP: external_search"] at 95, 85 ms after the call completed.
    assert_eq!(lifecycle_of(&o, "a"), Vec::<String>::new());
}

/// The shell stage revives a completed shell the same way: it stays "active" for the rest of the
/// run, takes output of the next shell, or makes it ambiguous.
#[test]
fn regression_start_repeated_after_completion_revives_a_completed_shell() {
    let steps = vec![
        step(0, 0, Ev::RunStarted),
        step(0, 1, started("s", T::Shell, 0)),
        step(0, 10, completed("s", T::Shell, None)),
        step(0, 20, partial("s", T::Shell, 0)),
        step(0, 30, shell_out("ghost line\n")),
        step(0, 40, started("t", T::Shell, 1)),
        step(0, 50, shell_out("building widget\n")),
        step(0, 60, completed("t", T::Shell, None)),
        step(0, 70, finished()),
    ];
    let o = drive(&steps, false);
    // Today: s gets "ghost line" after its card, and t (the only running shell) gets nothing.
    assert_eq!(progress_of(&o, "s"), Vec::<String>::new());
    assert_eq!(progress_of(&o, "t"), vec!["building widget".to_owned()]);
}
