//! `serve openai --replay FILE`: a recording served instead of cursor-agent. The recording is run
//! through the engine once, at start, into the responses an OpenAI client would receive
//! (`toolstream_sinks::openai`); each response that ends with client tool calls waits for them.
//! A request's trailing `role:"tool"` messages name the calls it answers: the next response is
//! the one after those calls (an id the recording never emitted is a 400). The registry of
//! pending calls, keyed by tool_call_id, is what a live run waiting on its tool calls needs too.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use toolstream_schemas::cursor_exec::to_openai::{to_client_messages, tool_call_id};
use toolstream_schemas::cursor_exec::{ExecRecordLine, ExecServerMessage};
use toolstream_schemas::OutputEvent;
use toolstream_sinks::openai::{Naming, SseEncoder, SseEvent};
use toolstream_sinks::{Sink, SinkError};

use toolstream_engine::pipeline::{Pipeline, PipelineOptions};
use toolstream_engine::source::Source;

/// The responses of a recording and the calls that end them.
#[derive(Debug)]
pub struct Recording {
    /// Each response's events, up to and including its `Done`.
    responses: Vec<Vec<SseEvent>>,
    /// tool_call_id → the index of the response it ends.
    ends: HashMap<String, usize>,
    /// tool_call_id → the exec request it stands for (exec recordings only).
    exec: HashMap<String, ExecServerMessage>,
}

impl Recording {
    /// Run `path` through the engine; an error when it cannot be read or holds no response.
    pub fn load(path: &Path, mut opts: PipelineOptions) -> Result<Recording, String> {
        opts.shards = 1;
        opts.realtime = false;
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Collect { encoder: SseEncoder::new(Naming::default()), out: events.clone() };
        let mut pipeline = Pipeline::new(opts, vec![Box::new(sink)]).map_err(|e| e.to_string())?;
        let mut errors = 0u64;
        let ran = pipeline.run_source(&Source::File(path.to_path_buf()), &mut |e| {
            errors += 1;
            tracing::warn!("{e}");
        });
        pipeline.finish();
        ran.map_err(|e| format!("cannot replay {}: {e}", path.display()))?;
        let events = std::mem::take(&mut *events.lock().map_err(|_| "the recording's sink failed")?);
        let mut responses = Vec::new();
        let mut ends = HashMap::new();
        let mut current = Vec::new();
        for e in events {
            let done = match &e {
                SseEvent::Done { tool_call_ids } => Some(tool_call_ids.clone()),
                _ => None,
            };
            current.push(e);
            if let Some(ids) = done {
                for id in ids {
                    ends.insert(id, responses.len());
                }
                responses.push(std::mem::take(&mut current));
            }
        }
        if responses.is_empty() {
            return Err(format!("{} holds no Cursor run ({errors} line(s) could not be decoded)", path.display()));
        }
        Ok(Recording { responses, ends, exec: exec_requests(path) })
    }

    /// The response that follows the calls `answered` (tool_call_id and the client's answer);
    /// the first response when nothing is answered. `Err` names an id the recording never
    /// emitted or a recording that has nothing after it.
    pub fn next(&self, answered: &[(String, String)]) -> Result<&[SseEvent], String> {
        let mut after: Option<usize> = None;
        for (id, answer) in answered {
            let Some(i) = self.ends.get(id) else {
                return Err(format!("tool_call_id `{id}` matches no tool call of this recording"));
            };
            after = Some(after.map_or(*i, |a| a.max(*i)));
            if let Some((result, close)) = self.exec.get(id).and_then(|m| to_client_messages(m, answer)) {
                // What would go back to the agent backend: the mapping made visible (SPEC §9.5).
                tracing::info!(
                    target: "toolstream::openai::exec",
                    result = %serde_json::to_string(&result).unwrap_or_default(),
                    close = %serde_json::to_string(&close).unwrap_or_default(),
                    "ExecClientMessage"
                );
            }
        }
        let next = after.map_or(0, |a| a + 1);
        self.responses
            .get(next)
            .map(Vec::as_slice)
            .ok_or_else(|| "the recording ended before this tool call's answer".into())
    }
}

/// The exec requests of an exec recording, by their OpenAI tool call id (none for other formats).
fn exec_requests(path: &Path) -> HashMap<String, ExecServerMessage> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<ExecRecordLine>(l).ok()?.exec_server_message)
        .map(|m| (tool_call_id(&m.call_key()), m))
        .collect()
}

/// Collects a recording's SSE events.
struct Collect {
    encoder: SseEncoder,
    out: Arc<Mutex<Vec<SseEvent>>>,
}

impl Sink for Collect {
    fn name(&self) -> &'static str {
        "openai-replay"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        let mut out =
            self.out.lock().map_err(|_| SinkError::Other { sink: "openai-replay", message: "poisoned".into() })?;
        for ev in batch {
            self.encoder.push(ev, &mut out);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}
