//! One request, one Cursor turn: `cursor-agent` started with the conversation flattened into its
//! prompt (`crate::conversation`), its stream run through the engine into the SSE of one
//! response, sent as it comes. Cursor runs its own tools; without the MCP bridge (phase 2) the
//! client's `tools` are not offered to it, and Cursor's tool activity reaches the client as
//! bounded, scrubbed `reasoning_content` lines (`toolstream_sinks::openai`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use toolstream_schemas::OutputEvent;
use toolstream_sinks::openai::{Naming, SseEncoder, SseEvent};
use toolstream_sinks::{Sink, SinkError};

use crate::conversation::{flatten, Budget, Turn};
use crate::pi_provider::cursor_agent::{self, AgentCommand, AgentProcess};
use crate::pipeline::{Canceller, Pipeline, PipelineOptions};

/// What a live run needs from the server.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    pub pipeline: PipelineOptions,
    pub agent_bin: PathBuf,
    pub workspace: Option<PathBuf>,
    pub budget: Budget,
}

/// A started run: stop it with [`LiveRun::stop`] (deadline, client gone).
pub struct LiveRun {
    agent: Arc<AgentProcess>,
    canceller: Canceller,
}

impl LiveRun {
    pub fn stop(&self) {
        self.agent.kill();
        let c = self.canceller.clone();
        // Cancelling waits for the shard; never on the async workers.
        let _ = std::thread::Builder::new().name("openai-cancel".into()).spawn(move || c.cancel());
    }
}

/// Start cursor-agent for `history` + `request`; SSE events of the run's first response go to
/// `tx`. Returns at once; the run goes on on its own thread.
pub fn start(
    opts: &LiveOptions,
    model: Option<String>,
    naming: Naming,
    history: &[Turn],
    request: &str,
    tx: mpsc::Sender<SseEvent>,
) -> Result<LiveRun, String> {
    let flat = flatten(history, request, opts.budget);
    if flat.cut_turns > 0 {
        tracing::info!(cut = flat.cut_turns, kept = flat.kept_turns, "older turns left out of the prompt");
    }
    let cmd = AgentCommand {
        bin: opts.agent_bin.clone(),
        model,
        workspace: opts.workspace.clone(),
        extra_args: Vec::new(),
        // Every request carries its whole conversation: a fresh chat each time (seed 002).
        resume: None,
        mode: None,
        mcp: None,
        prompt: flat.prompt,
    };
    let (source, agent) = cursor_agent::spawn(&cmd)?;
    let mut popts = opts.pipeline.clone();
    popts.shards = 1;
    let done = Arc::new(AtomicBool::new(false));
    let sink = Forward {
        encoder: SseEncoder::new(naming),
        tx: tx.clone(),
        agent: agent.clone(),
        done: done.clone(),
        buf: Vec::new(),
    };
    let mut pipeline = match Pipeline::new(popts, vec![Box::new(sink)]) {
        Ok(p) => p,
        Err(e) => {
            agent.kill();
            return Err(e.to_string());
        }
    };
    let canceller = pipeline.canceller();
    let thread_agent = agent.clone();
    std::thread::Builder::new()
        .name("openai-run".into())
        .spawn(move || {
            let result = pipeline.run_source(&source, &mut |e| tracing::warn!("{e}"));
            pipeline.finish();
            thread_agent.kill();
            // A run that never answered (cursor-agent failed before opening one) still answers.
            if !done.load(Ordering::SeqCst) {
                let failure = thread_agent.failure().or_else(|| result.err().map(|e| e.to_string()));
                let message = failure.unwrap_or_else(|| "cursor-agent ended without starting a run".into());
                let body = super::error::ApiError::server(message).body();
                let _ = tx.blocking_send(SseEvent::Error(body));
                let _ = tx.blocking_send(SseEvent::Done { tool_call_ids: Vec::new() });
            }
        })
        .map_err(|e| {
            agent.kill();
            format!("cannot start the run's thread: {e}")
        })?;
    Ok(LiveRun { agent, canceller })
}

/// Encodes the run's first response into the channel; a client gone stops cursor-agent.
struct Forward {
    encoder: SseEncoder,
    tx: mpsc::Sender<SseEvent>,
    agent: Arc<AgentProcess>,
    /// The response's `Done` went out (or the client left).
    done: Arc<AtomicBool>,
    buf: Vec<SseEvent>,
}

impl Sink for Forward {
    fn name(&self) -> &'static str {
        "openai-server"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        for ev in batch {
            self.encoder.push(ev, &mut self.buf);
        }
        for e in self.buf.drain(..) {
            if self.done.load(Ordering::SeqCst) {
                continue;
            }
            if matches!(e, SseEvent::Done { .. }) {
                self.done.store(true, Ordering::SeqCst);
            }
            if self.tx.blocking_send(e).is_err() {
                self.done.store(true, Ordering::SeqCst);
                tracing::debug!("the client left: stopping cursor-agent");
                self.agent.kill();
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}
