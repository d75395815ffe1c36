//! `toolstream pi-provider`: the backend of the pi extension (`integrations/pi`), one process per
//! Cursor run, speaking JSON lines on stdin/stdout. docs/pi-provider-protocol.md is
//! the public description; in short:
//!
//! **Input** (stdin), one JSON object per line:
//! - first, `{"type":"request","model","context":{messages,tools,systemPrompt?},"cwd",
//!   "source":{"kind":"replay","path","realtime"?} | {"kind":"cursor-agent","args"?}}`;
//! - then, for every replay tool call delivered, pi's result for it:
//!   `{"type":"tool_result","toolCallId",…}` (a pi-ai `ToolResultMessage`; `role` optional);
//! - `{"type":"abort"}` at any time. The end of stdin counts as `abort`.
//!
//! **Output** (stdout, nothing else ever goes there): first, as soon as the run's Cursor chat id is
//! known, `{"type":"chat","chatId"}` — the `session_id` of stream-json's `system/init` (what
//! `cursor-agent --resume` takes), or an SDK recording's `start.session_id`; once per run, before
//! the first message's `start`, none when the source names no id. Then the lines of the pi
//! live-events sink (`toolstream_sinks::pi_events`, handed over typed and serialized once by the
//! gate): per assistant message `start`, block events, exactly one `done{reason: stop|toolUse}` or
//! `error{reason: error|aborted}`; after a `toolUse` message its `tool_results` line (the recorded
//! result of each replay call). Then delivery **pauses** until every call of that message has its
//! `tool_result`, so each pi provider call reads exactly one message; what waits meanwhile is
//! bounded (`gate::WAITING_LIMIT_BYTES`; past it the source is not read further). After the last
//! message (`stop` or `error`) the process exits.
//!
//! Why one process per run, not one per provider call: pi calls its provider once per assistant
//! message, but a Cursor run is one `cursor-agent` invocation that cannot be restarted half-way
//! (its tools already ran) nor paused; so the run lives in one process from its request to its
//! last message, and the gate (`gate`) hands it out one message per call. Recordings are served
//! the same way so that the two sources cannot drift apart.
//!
//! Failures never break the stream: a source that cannot start, a recording without a run, a
//! `cursor-agent` that exits non-zero (its scrubbed stderr is the error, SPEC §1.1 rule 10) all
//! end as an `error` message. Exit status: 0 when the run ended with `stop`, 1 when it ended
//! with `error` (or stdout went away), 2 for a bad request, 130 after `abort`.

pub mod gate;
pub mod protocol;
pub mod sink;

use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use toolstream_actors::present::scrub::Scrubber;
use toolstream_sinks::jsonl_trace::JsonlTraceSink;
use toolstream_sinks::pi_events::failed_message_steps;
use toolstream_sinks::Sink;

use crate::bridge_server::BridgeSettings;
use crate::conversation;
use crate::cursor_agent::{AgentCommand, AgentProcess};
use crate::mcp_home::McpServer;
use crate::tool_bridge::ProviderBridge;
use gate::{Ack, Gate, Outcome, Outgoing};
use protocol::{InLine, Request, SourceSpec};
use sink::ProviderSink;
use toolstream_engine::config::Config;
use toolstream_engine::pipeline::{Canceller, Pipeline, PipelineError, PipelineOptions, END_WAIT};
use toolstream_engine::sinks::{keeps_recorded, report_to_stderr, SinkContext, SinkPlan, SinkSpec};
use toolstream_engine::source::Source;

/// The model named in failure messages when the request named none.
const NO_MODEL: &str = "unknown";

/// How the provider runs.
pub struct ProviderOptions {
    /// Engine settings (shards are forced to 1: one run).
    pub pipeline: PipelineOptions,
    pub config: Config,
    /// Replay recordings at their recorded pace, whatever the request says.
    pub realtime: bool,
    /// The cursor-agent binary (default: `$TOOLSTREAM_CURSOR_AGENT`, then `cursor-agent`).
    pub cursor_agent: Option<PathBuf>,
    /// Compact shell results in the events pi receives (`--compact`).
    pub compact: bool,
    /// The user's sinks (`--sink`), fed the same run beside the protocol (an OTLP export of the
    /// runs pi drives). Never `cards`: stdout is the protocol's.
    pub sinks: Vec<SinkSpec>,
}

/// Serve one request on stdin/stdout; returns the exit status.
pub fn serve(opts: ProviderOptions) -> i32 {
    let gate = Arc::new(Gate::new(Box::new(io::stdout())));
    let scrubber = opts.pipeline.shard.scrubber.clone();
    let mut input = io::BufReader::new(io::stdin());
    let request = match read_request(&mut input) {
        Ok(r) => r,
        Err(msg) => return fail(&gate, &scrubber, NO_MODEL, &msg, 2),
    };
    let model = request.model.clone().filter(|m| !m.trim().is_empty()).unwrap_or_else(|| NO_MODEL.to_owned());

    let delivered = Arc::new(AtomicBool::new(false));
    let display = request.display.clone().unwrap_or_default();
    let mut provider_sink = ProviderSink::new(gate.clone(), delivered.clone(), display, request.model.clone());
    // The pi tool bridge: Cursor (a live cursor-agent run) may call pi's own tools.
    let bridge = match &request.source {
        SourceSpec::CursorAgent { .. } if !request.context.tools.is_empty() => {
            let feed = provider_sink.bridge_feed();
            let settings = BridgeSettings::from_config(&opts.config);
            match ProviderBridge::start(&request.context.tools, settings, move |call| feed.call(&call)) {
                Ok(b) => b.map(Arc::new),
                Err(e) => {
                    toolstream_engine::say!("toolstream: {e}; Cursor runs without pi's tools");
                    None
                }
            }
        }
        _ => None,
    };
    if bridge.is_some() {
        provider_sink.hide_bridged_cards();
    }
    let provider: Box<dyn Sink> = Box::new(provider_sink);
    let mut sinks: Vec<Box<dyn Sink>> = vec![provider];
    if opts.config.trace_enabled.value {
        let path = &opts.config.trace_file.value;
        match JsonlTraceSink::create_with_limit(path, opts.config.trace_limit_bytes.value) {
            Ok(t) => sinks.push(Box::new(t)),
            Err(e) => tracing::warn!("cannot create trace file {}: {e}", path.display()),
        }
    }
    let mut plans: Vec<SinkPlan> = sinks.into_iter().map(SinkPlan::ready).collect();
    let ctx =
        SinkContext { otel: opts.config.otel_content(), ..SinkContext::headless(opts.config.trace_limit_bytes.value) };
    plans.extend(opts.sinks.iter().map(|spec| spec.plan(&ctx, opts.config.when_full(spec.kind))));
    let user_sinks: Vec<String> = opts.sinks.iter().map(SinkSpec::label).collect();
    let mut popts = opts.pipeline;
    popts.shards = 1;
    popts.shard.keep_recorded = keeps_recorded(&opts.sinks);
    if let Some(token) = bridge.as_ref().and_then(|b| b.token()) {
        popts.shard.scrubber = popts.shard.scrubber.with_known_secret(token);
    }
    // `--compact`: what pi's model reads is compacted (SPEC §10).
    popts.shard.compact.model = opts.compact;
    let mcp = bridge.as_ref().map(|b| b.server().clone());
    let agent_bin = crate::cursor_agent::agent_bin(opts.cursor_agent.as_deref(), &opts.config);
    let (source, agent) = match open_source(&request, agent_bin, mcp) {
        Ok(s) => s,
        Err((msg, code)) => return fail(&gate, &scrubber, &model, &msg, code),
    };
    popts.realtime = matches!(request.source, SourceSpec::Replay { realtime: true, .. })
        || (opts.realtime && matches!(request.source, SourceSpec::Replay { .. }));
    let mut pipeline = match Pipeline::with_sinks(popts, plans) {
        Ok(p) => p,
        Err(e) => {
            if let Some(a) = &agent {
                a.kill();
            }
            return fail(&gate, &scrubber, &model, &e.to_string(), 1);
        }
    };
    let canceller = pipeline.canceller();
    // The user's sinks get their final checkpoint (an OTLP sink waits for its collector) before
    // the process may exit once the client left.
    let finish_grace = if opts.sinks.is_empty() { FINISH_GRACE } else { FINISH_GRACE_WITH_SINKS };
    let stopper = Stopper {
        gate: gate.clone(),
        agent: agent.clone(),
        canceller: canceller.clone(),
        finish_grace,
        bridge: bridge.clone(),
    };
    if let Err(e) = std::thread::Builder::new().name("pi-provider-input".into()).spawn(move || control(input, &stopper))
    {
        tracing::error!("cannot read the protocol input: {e}");
    }

    let mut report = |e: &toolstream_engine::decode::DecodeError| toolstream_engine::say!("toolstream: {e}");
    let result = pipeline.run_source(&source, &mut report);
    if let Err(e) = &result {
        if !matches!(e, PipelineError::Cancelled) {
            toolstream_engine::say!("toolstream: {e}");
        }
    }
    let stats = pipeline.finish();
    for e in &stats.sink_errors {
        toolstream_engine::say!("toolstream: sink error: {e}");
    }
    // What the user's sinks dropped or lost (the provider's own failures are said above).
    report_to_stderr(stats.sinks.iter().filter(|s| user_sinks.contains(&s.sink)));
    let sinks_lost = stats.sinks.iter().any(|s| user_sinks.contains(&s.sink) && s.lost_anything());
    if stats.decode_errors > 0 {
        toolstream_engine::say!(
            "toolstream: {} line(s) could not be decoded ({} lines read)",
            stats.decode_errors,
            stats.lines
        );
    }
    if let Some(a) = &agent {
        a.kill();
    }
    if !delivered.load(Ordering::SeqCst) && !canceller.is_cancelled() {
        let msg = agent
            .as_ref()
            .and_then(|a| a.failure())
            .or_else(|| result.as_ref().err().map(ToString::to_string))
            .unwrap_or_else(|| match &request.source {
                SourceSpec::Replay { path, .. } => format!("{} holds no Cursor run", path.display()),
                SourceSpec::CursorAgent { .. } => "cursor-agent ended without starting a run".to_owned(),
            });
        return fail(&gate, &scrubber, &model, &msg, 1);
    }
    gate.end_input();
    match exit_code(&gate.wait()) {
        // The run reached pi, but a sink of the user's lost some of it.
        0 if sinks_lost => 1,
        code => code,
    }
}

fn exit_code(outcome: &Outcome) -> i32 {
    match outcome {
        Outcome::Finished { last_reason: Some("stop") } => 0,
        Outcome::Finished { .. } | Outcome::OutputGone => 1,
        Outcome::Aborted => 130,
    }
}

/// Deliver one failed message (`start` + `error`) and nothing else; returns `code`.
fn fail(gate: &Gate, scrubber: &Scrubber, model: &str, msg: &str, code: i32) -> i32 {
    toolstream_engine::say!("toolstream: {}", scrubber.scrub(msg));
    gate.push(failed_message_steps(model, now_ms(), false, &scrubber.scrub(msg)).map(Outgoing::Event));
    gate.end_input();
    match gate.wait() {
        Outcome::Aborted => 130,
        _ => code,
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The first non-empty input line, which must be the request.
fn read_request(input: &mut impl BufRead) -> Result<Request, String> {
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => return Err("no request: stdin ended before the first line".into()),
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read the request: {e}")),
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        return match InLine::parse(text.trim()) {
            Ok(InLine::Request(r)) => Ok(*r),
            Ok(_) => Err("the first line must be a `request`".into()),
            Err(e) => Err(format!("bad request: {e}")),
        };
    }
}

/// A source ready to read, with the cursor-agent process behind it if any.
type Opened = (Source, Option<Arc<AgentProcess>>);

/// The source named by the request (cursor-agent is started here); the error carries the exit
/// status to use.
fn open_source(request: &Request, agent_bin: PathBuf, mcp: Option<McpServer>) -> Result<Opened, (String, i32)> {
    match &request.source {
        SourceSpec::Replay { path, .. } => match std::fs::File::open(path) {
            Ok(_) => Ok((Source::File(path.clone()), None)),
            Err(e) => Err((format!("cannot read the recording {}: {e}", path.display()), 1)),
        },
        SourceSpec::CursorAgent { args } => {
            let (history, text) = conversation::pi::split_request(&request.context.messages)
                .ok_or(("the request holds no user message to send to cursor-agent".to_owned(), 2))?;
            let resume = request.resume.clone().filter(|c| !c.trim().is_empty());
            // A resumed chat has the earlier turns already; otherwise they travel in the prompt.
            let prompt = if resume.is_some() {
                text
            } else {
                let flat = conversation::flatten(&history, &text, conversation::Budget::default());
                if flat.cut_turns > 0 {
                    tracing::warn!(
                        cut = flat.cut_turns,
                        kept = flat.kept_turns,
                        "the oldest turns of the conversation did not fit in the prompt"
                    );
                }
                tracing::debug!(
                    turns = flat.kept_turns,
                    bytes = flat.prompt.len(),
                    "earlier conversation flattened into the prompt"
                );
                flat.prompt
            };
            let cmd = AgentCommand {
                bin: agent_bin,
                model: request.model.clone(),
                workspace: request.cwd.clone(),
                extra_args: args.clone(),
                resume,
                mode: request.mode.and_then(protocol::CursorMode::agent_option),
                mcp,
                prompt,
            };
            let (source, process) = crate::cursor_agent::spawn(&cmd).map_err(|m| (m, 1))?;
            Ok((source, Some(process)))
        }
    }
}

/// What `abort` (or the end of stdin) stops.
struct Stopper {
    gate: Arc<Gate>,
    agent: Option<Arc<AgentProcess>>,
    canceller: Canceller,
    /// How long the engine may take to wind down after the run's last message once the client left.
    finish_grace: Duration,
    /// The pi tool bridge of this run, which pi's results of bridged calls go to.
    bridge: Option<Arc<ProviderBridge>>,
}

impl Stopper {
    /// End the open message as aborted, kill cursor-agent, cancel the run, exit with 130.
    fn abort_and_exit(&self) -> ! {
        self.gate.abort();
        if let Some(a) = &self.agent {
            a.kill();
        }
        // Cancelling closes the run in the debug trace; never let it hold up the exit.
        let canceller = self.canceller.clone();
        if let Ok(h) = std::thread::Builder::new().name("pi-provider-cancel".into()).spawn(move || canceller.cancel()) {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let _ = io::stdout().flush();
        toolstream_engine::exit::exit(130)
    }
}

impl Stopper {
    /// The client left after the run's last message: give the engine a moment to finish on its
    /// own (the debug trace, cursor-agent's exit), then stop cursor-agent and exit.
    fn finish_delivered_run(&self) {
        let deadline = Instant::now() + self.finish_grace;
        while Instant::now() < deadline {
            if self.gate.is_finished() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        tracing::debug!("the run was delivered but its source did not end: stopping it");
        if let Some(a) = &self.agent {
            a.kill();
        }
        let _ = io::stdout().flush();
        let reason = self.gate.last_reason();
        toolstream_engine::exit::exit(exit_code(&Outcome::Finished { last_reason: reason }))
    }
}

/// How long the engine may take to wind down after the run's last message once the client left.
const FINISH_GRACE: Duration = Duration::from_secs(2);
/// The same with the user's sinks: the engine's end-of-run wait ([`END_WAIT`], 4 s: an OTLP
/// sink's final checkpoint waits for its collector within it), and the pi extension kills the
/// process group 5 s after it let go of the run.
const FINISH_GRACE_WITH_SINKS: Duration = END_WAIT.saturating_add(Duration::from_millis(500));

/// The input after the request: tool results and `abort`.
fn control(mut input: impl BufRead, stop: &Stopper) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => {
                if stop.gate.run_delivered() {
                    stop.finish_delivered_run();
                }
                if stop.gate.is_finished() {
                    return;
                }
                tracing::debug!("stdin ended before the run was delivered: aborting");
                stop.abort_and_exit();
            }
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        match InLine::parse(text) {
            Ok(InLine::ToolResult(r)) => {
                if let (Some(bridge), true) = (&stop.bridge, crate::tool_bridge::is_bridge_id(&r.tool_call_id)) {
                    // pi ran its own tool for Cursor: the result resolves Cursor's MCP call.
                    bridge.result(&r.tool_call_id, r.content.clone(), r.is_error);
                }
                if stop.gate.ack(&r.tool_call_id) == Ack::Unexpected {
                    tracing::warn!("a tool_result for a call that is not waiting for one was ignored");
                } else if r.is_error {
                    tracing::debug!("pi reported a replay call as failed ({})", r.tool_name.as_deref().unwrap_or("?"));
                }
            }
            Ok(InLine::Abort) => stop.abort_and_exit(),
            Ok(InLine::Request(_)) => {
                tracing::warn!("a second request was ignored: one pi-provider process serves one run");
            }
            Err(e) => tracing::warn!("an input line that is not part of the protocol was ignored: {e}"),
        }
    }
}
