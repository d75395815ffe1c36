//! One Cursor run through `cursor-agent`, started with the conversation flattened into its prompt
//! (`crate::conversation`); its stream runs through the engine into the SSE of the responses,
//! sent as it comes. Cursor's own tool activity reaches the client as bounded, scrubbed
//! `reasoning_content` lines (`toolstream_sinks::openai`).
//!
//! **Client tools** (the request's `tools`) are exposed to the run through the pi tool bridge
//! (`crate::tool_bridge`, a run-own MCP configuration for cursor-agent): when Cursor
//! calls one, the current response ends with it as a `tool_calls` entry (its id is the bridge's
//! call id) and the run stays alive, blocked on that MCP call. The response's channel is then
//! detached; what the run produces meanwhile waits until the client's next request
//! brings the tool result ([`LiveRun::resume`]): the result answers the MCP call and the run's
//! continuation streams into that request's response. Parallel calls end one response each.
//! What waits is bounded by the paused-run policy both front ends share (`crate::paused_run`):
//! past its limit the run is held back (the sink waits for room, cursor-agent in the end blocks
//! on its stdout) until the client comes back or the wait for it expires and the run is stopped.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use serde_json::{json, Value};
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use toolstream_actors::bridge::exposure::ExposureSettings;
use toolstream_schemas::cursor_exec::to_openai::OpenAiToolCall;
use toolstream_schemas::{Output, OutputEvent, RunId};
use toolstream_sinks::openai::{Naming, SseEncoder, SseEvent};
use toolstream_sinks::{Sink, SinkError};

use crate::bridge_server::BridgeSettings;
use crate::conversation::{flatten, Budget, Turn};
use crate::cursor_agent::{self, AgentCommand, AgentProcess};
use crate::paused_run::Waiting;
use crate::tool_bridge::is_bridged_card;
use crate::tool_bridge::{BridgeCall, EarlyCalls, ProviderBridge};
use toolstream_engine::pipeline::{Canceller, Pipeline, PipelineOptions};

/// What a live run needs from the server.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    pub pipeline: PipelineOptions,
    pub agent_bin: PathBuf,
    pub workspace: Option<PathBuf>,
    pub budget: Budget,
    /// Hide client tools named like pi's built-ins (`read`, `bash`, …) from Cursor, as SPEC §7
    /// does for pi (`serve openai --hide-builtin-tool-names`); by default every client tool is
    /// exposed ([`client_exposure`]).
    pub hide_builtin_names: bool,
    /// The bridge's deadlines and diagnostics (the table's `bridge_*` settings); its exposure is
    /// [`client_exposure`]'s.
    pub bridge: BridgeSettings,
}

/// Which of an OpenAI client's tools Cursor sees. Every function tool, by default, whatever its
/// name: SPEC §7 hides pi's built-ins because they duplicate Cursor's native tools on pi's own
/// machine, but an OpenAI client's `bash` or `read` is the client's (it runs where and as the
/// client decides, e.g. opencode's permission prompts), and hiding it would leave the client
/// without its main tools. `hide_builtin_names` restores the SPEC §7 rule. The pi bridge's
/// switches (`bridge_enabled`, `bridge_expose_builtins`, `bridge_ask_question`) do not apply
/// here; the bridge's deadlines and diagnostics (the other `bridge_*` settings) do.
pub fn client_exposure(hide_builtin_names: bool) -> ExposureSettings {
    ExposureSettings { bridge_enabled: true, expose_builtins: !hide_builtin_names, ask_question: true }
}

/// OpenAI function tools (`{type:"function", function:{name, description, parameters}}`) as the
/// bridge's tool definitions (`{name, description, parameters}`); other kinds are left out.
pub fn bridge_tools(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .filter(|t| t.get("type").and_then(Value::as_str).unwrap_or("function") == "function")
        .filter_map(|t| {
            let f = t.get("function")?;
            let name = f.get("name")?.as_str()?;
            Some(json!({
                "name": name,
                "description": f.get("description").cloned().unwrap_or(Value::Null),
                "parameters": f.get("parameters").cloned().unwrap_or(Value::Null),
            }))
        })
        .collect()
}

/// One response of a run: where its events go and how its chunks are named.
pub struct Response {
    pub tx: mpsc::Sender<SseEvent>,
    pub naming: Naming,
}

/// What the client asked for.
pub struct RunRequest<'a> {
    pub model: Option<String>,
    pub history: &'a [Turn],
    pub request: &'a str,
    /// The request's `tools` (OpenAI shape).
    pub tools: &'a [Value],
}

/// A started run. Stop it with [`LiveRun::stop`] (deadline, client gone); holds its slot among
/// the runs at once until it is dropped.
pub struct LiveRun {
    agent: Arc<AgentProcess>,
    canceller: Canceller,
    shared: Arc<Mutex<Shared>>,
    /// Signalled when what waits for the client drained or the run is over.
    room: Arc<Condvar>,
    _permit: OwnedSemaphorePermit,
}

impl LiveRun {
    pub fn stop(&self) {
        {
            let mut s = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            s.outlet.over = true;
            s.outlet.waiting.clear();
        }
        // A sink held back for room lets go (its events are dropped: the run is over).
        self.room.notify_all();
        self.agent.kill();
        let c = self.canceller.clone();
        // Cancelling waits for the shard; never on the async workers.
        let _ = std::thread::Builder::new().name("openai-cancel".into()).spawn(move || c.cancel());
    }

    /// The client's results for calls of this run (`(tool_call_id, text)`): `response` takes the
    /// run's next events (those that waited first), and the results answer Cursor's MCP calls.
    pub fn resume(&self, answered: Vec<(String, String)>, response: Response) {
        let (shared, room) = (self.shared.clone(), self.room.clone());
        // Attaching sends what waited: blocking sends, off the async workers.
        tokio::task::spawn_blocking(move || {
            let bridge = {
                let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
                let Shared { outlet, agent, .. } = &mut *s;
                outlet.attach(response, agent);
                s.bridge.clone()
            };
            room.notify_all();
            let Some(bridge) = bridge else {
                tracing::debug!("the run ended before the client's tool result came");
                return;
            };
            for (id, text) in answered {
                bridge.result(&id, vec![json!({"type": "text", "text": text})], false);
            }
        });
    }
}

/// Start cursor-agent for `req`, its client tools behind the bridge; the events of its first
/// response go to `response`. Returns at once; the run goes on on its own thread.
pub fn start(
    opts: &LiveOptions,
    req: RunRequest<'_>,
    permit: OwnedSemaphorePermit,
    response: Response,
) -> Result<LiveRun, String> {
    let flat = flatten(req.history, req.request, opts.budget);
    if flat.cut_turns > 0 {
        tracing::info!(cut = flat.cut_turns, kept = flat.kept_turns, "older turns left out of the prompt");
    }
    let (calls_tx, calls) = std::sync::mpsc::channel::<BridgeCall>();
    let bridge = match bridge_tools(req.tools) {
        tools if tools.is_empty() => None,
        tools => {
            let settings = BridgeSettings { exposure: client_exposure(opts.hide_builtin_names), ..opts.bridge.clone() };
            // Called on the bridge's thread (a runtime): hand the call over, never block there.
            let on_call = move |call: BridgeCall| {
                let _ = calls_tx.send(call);
            };
            match ProviderBridge::start(&tools, settings, on_call) {
                Ok(b) => b.map(Arc::new),
                Err(e) => {
                    tracing::warn!("{e}; Cursor runs without the client's tools");
                    None
                }
            }
        }
    };
    let cmd = AgentCommand {
        bin: opts.agent_bin.clone(),
        model: req.model,
        workspace: opts.workspace.clone(),
        extra_args: Vec::new(),
        // Every fresh run carries its whole conversation (seed 002).
        resume: None,
        mode: None,
        mcp: bridge.as_ref().map(|b| b.server().clone()),
        prompt: flat.prompt,
    };
    let bridge_token = bridge.as_ref().and_then(|b| b.token()).map(str::to_owned);
    let (source, agent) = cursor_agent::spawn(&cmd)?;
    let shared = Arc::new(Mutex::new(Shared {
        encoder: SseEncoder::new(Naming::default()),
        run: None,
        outlet: Outlet { current: Some(response), waiting: Waiting::default(), over: false },
        agent: agent.clone(),
        bridged: bridge.is_some(),
        bridge,
        early: EarlyCalls::default(),
    }));
    let mut popts = opts.pipeline.clone();
    popts.shards = 1;
    if let Some(token) = &bridge_token {
        popts.shard.scrubber = popts.shard.scrubber.with_known_secret(token.as_str());
    }
    let scrubber = popts.shard.scrubber.clone();
    let room = Arc::new(Condvar::new());
    let sink = Forward { shared: shared.clone(), room: room.clone() };
    let mut pipeline = match Pipeline::new(popts, vec![Box::new(sink)]) {
        Ok(p) => p,
        Err(e) => {
            agent.kill();
            return Err(e.to_string());
        }
    };
    let canceller = pipeline.canceller();
    if shared.lock().unwrap_or_else(PoisonError::into_inner).bridged {
        let feed = shared.clone();
        let spawned = std::thread::Builder::new().name("openai-bridge-calls".into()).spawn(move || {
            // Ends when the bridge (and its sender) is gone.
            for call in calls {
                feed.lock().unwrap_or_else(PoisonError::into_inner).client_call(call);
            }
        });
        if let Err(e) = spawned {
            agent.kill();
            return Err(format!("cannot start the run's thread: {e}"));
        }
    }
    let thread_shared = shared.clone();
    let thread_agent = agent.clone();
    std::thread::Builder::new()
        .name("openai-run".into())
        .spawn(move || {
            let result = pipeline.run_source(&source, &mut |e| tracing::warn!("{e}"));
            pipeline.finish();
            thread_agent.kill();
            let bridge = {
                let mut s = thread_shared.lock().unwrap_or_else(PoisonError::into_inner);
                // A run that never answered (cursor-agent failed before opening one) still answers.
                if !s.outlet.over {
                    let failure = thread_agent.failure().or_else(|| result.err().map(|e| e.to_string()));
                    let message = failure.unwrap_or_else(|| "cursor-agent ended without ending its answer".into());
                    // cursor-agent's stderr, like every output, is scrubbed (SPEC §8).
                    let body = super::error::ApiError::server(scrubber.scrub(&message).into_owned()).body();
                    let Shared { outlet, agent, .. } = &mut *s;
                    outlet.send(vec![SseEvent::Error(body), SseEvent::Done { tool_call_ids: Vec::new() }], agent);
                }
                s.bridge.take()
            };
            // The endpoint stops here, off the async workers (it joins its thread).
            drop(bridge);
        })
        .map_err(|e| {
            agent.kill();
            format!("cannot start the run's thread: {e}")
        })?;
    Ok(LiveRun { agent, canceller, shared, room, _permit: permit })
}

/// The run's state shared by its pipeline, the bridge's calls and the requests.
struct Shared {
    encoder: SseEncoder,
    /// The run delivered (the first the source opens).
    run: Option<Arc<RunId>>,
    outlet: Outlet,
    agent: Arc<AgentProcess>,
    /// Client tools are bridged: Cursor's own record of those calls is not reported.
    bridged: bool,
    /// The endpoint; taken (and stopped) when the run ends.
    bridge: Option<Arc<ProviderBridge>>,
    /// Client calls that came before the run opened.
    early: EarlyCalls,
}

impl Shared {
    fn push(&mut self, batch: &[OutputEvent]) {
        let mut out = Vec::new();
        for ev in batch {
            match &self.run {
                Some(run) if *run != ev.run => continue,
                None if matches!(ev.kind, Output::RunOpened { .. }) => self.run = Some(ev.run.clone()),
                _ => {}
            }
            if self.bridged && matches!(&ev.kind, Output::Card(card) if is_bridged_card(card)) {
                continue;
            }
            self.encoder.push(ev, &mut out);
        }
        if let Some(run) = self.run.clone() {
            for call in self.early.release() {
                self.encoder.client_call(&run, openai_call(call), &mut out);
            }
        }
        self.outlet.send(out, &self.agent);
    }

    fn client_call(&mut self, call: BridgeCall) {
        let Some(run) = self.run.clone() else {
            self.early.hold(call);
            return;
        };
        let mut out = Vec::new();
        self.encoder.client_call(&run, openai_call(call), &mut out);
        self.outlet.send(out, &self.agent);
    }
}

/// Where the run's events go: the current response, or a bounded wait for the next one.
struct Outlet {
    current: Option<Response>,
    /// By the bytes of each event on the wire.
    waiting: Waiting<SseEvent>,
    /// The run's last response ended (or its client left): later events are dropped.
    over: bool,
}

impl Outlet {
    fn send(&mut self, events: Vec<SseEvent>, agent: &AgentProcess) {
        for e in events {
            if self.over {
                return;
            }
            let Some(resp) = &self.current else {
                let bytes = e.to_sse().len();
                self.waiting.push(e, bytes);
                continue;
            };
            let ends = match &e {
                SseEvent::Done { tool_call_ids } => Some(tool_call_ids.is_empty()),
                _ => None,
            };
            if resp.tx.blocking_send(super::rename(e, &resp.naming)).is_err() {
                tracing::debug!("the client left: stopping cursor-agent");
                self.over = true;
                self.current = None;
                agent.kill();
                return;
            }
            match ends {
                Some(true) => {
                    self.over = true;
                    self.current = None;
                }
                // The response ended with a client tool call: the run waits for its result.
                Some(false) => self.current = None,
                None => {}
            }
        }
    }

    /// The next response: what waited goes to it first.
    fn attach(&mut self, response: Response, agent: &AgentProcess) {
        self.current = Some(response);
        let waited: Vec<SseEvent> = self.waiting.drain().collect();
        self.send(waited, agent);
    }
}

/// A bridged call as the OpenAI tool call the client runs.
fn openai_call(call: BridgeCall) -> OpenAiToolCall {
    OpenAiToolCall { id: call.id, name: call.tool, arguments: call.args }
}

/// The pipeline's sink: the run's events into its responses.
struct Forward {
    shared: Arc<Mutex<Shared>>,
    room: Arc<Condvar>,
}

impl Sink for Forward {
    fn name(&self) -> &'static str {
        "openai-server"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        let mut s = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        s.push(batch);
        // Held back while what waits for the client is past the limit (`crate::paused_run`).
        while s.outlet.current.is_none() && !s.outlet.over && s.outlet.waiting.is_full() {
            s = self.room.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_tools_become_bridge_definitions() {
        let tools = vec![
            json!({"type": "function", "function": {"name": "bash", "description": "Run a command",
                   "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}),
            json!({"type": "function", "function": {"name": "todo"}}),
            json!({"type": "web_search"}),
        ];
        let defs = bridge_tools(&tools);
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0]["name"], "bash");
        assert_eq!(defs[0]["description"], "Run a command");
        assert_eq!(defs[0]["parameters"]["properties"]["command"]["type"], "string");
        assert_eq!(defs[1], json!({"name": "todo", "description": null, "parameters": null}));
    }

    #[test]
    fn every_client_tool_is_exposed_unless_builtin_names_are_hidden() {
        use toolstream_actors::bridge::exposure::{expose, PiToolDef};
        let defs: Vec<PiToolDef> = bridge_tools(&[
            json!({"type": "function", "function": {"name": "bash"}}),
            json!({"type": "function", "function": {"name": "read"}}),
            json!({"type": "function", "function": {"name": "webfetch"}}),
        ])
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}")))
        .collect();
        let names = |s| expose(&defs, &s).into_iter().map(|t| t.mcp_name).collect::<Vec<_>>();
        assert_eq!(names(client_exposure(false)), ["pi__bash", "pi__read", "pi__webfetch"]);
        assert_eq!(names(client_exposure(true)), ["pi__webfetch"]);
    }
}
