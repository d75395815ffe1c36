//! The pure part of the OpenAI sink: output events in, SSE events out ([`SseEncoder`]), and a
//! streamed response assembled into one non-streamed `chat.completion` ([`assemble`]).

use std::collections::HashMap;
use std::sync::Arc;

use toolstream_schemas::cursor_exec::to_openai::OpenAiToolCall;
use toolstream_schemas::openai::{
    ChatChunk, ChatCompletion, ChunkChoice, CompletionChoice, CompletionMessage, CompletionUsage, Delta, ErrorBody,
    ErrorDetail, FinishReason, FunctionCall, ToolCallDelta, CHUNK_OBJECT, COMPLETION_OBJECT,
};
use toolstream_schemas::{Card, Output, OutputEvent, RunId, StopReason, Usage};

/// One server-sent event of a response.
#[derive(Clone, Debug, PartialEq)]
pub enum SseEvent {
    Chunk(ChatChunk),
    /// The run failed: `data: {"error":{…}}`.
    Error(ErrorBody),
    /// `data: [DONE]`: the response is over; `tool_call_ids` are the client tool calls it ended
    /// with (empty after `stop` or an error).
    Done {
        tool_call_ids: Vec<String>,
    },
}

impl SseEvent {
    /// As it goes on the wire: `data: <json>\n\n`.
    pub fn to_sse(&self) -> String {
        let json = match self {
            SseEvent::Chunk(c) => serde_json::to_string(c),
            SseEvent::Error(e) => serde_json::to_string(e),
            SseEvent::Done { .. } => return "data: [DONE]\n\n".to_owned(),
        };
        format!("data: {}\n\n", json.unwrap_or_else(|_| "{}".to_owned()))
    }
}

/// How responses are named. Unset fields come from the run: `chatcmpl-<run label>-<n>`, the
/// run's first event time in seconds, the run's model (or `cursor`).
#[derive(Clone, Debug, Default)]
pub struct Naming {
    pub id: Option<String>,
    pub created: Option<u64>,
    pub model: Option<String>,
}

#[derive(Debug, Default)]
struct RunState {
    model: Option<String>,
    created: Option<u64>,
    /// Responses ended so far.
    responses: u32,
    /// The role chunk of the current response was sent.
    open: bool,
    calls: Vec<OpenAiToolCall>,
    usage: CompletionUsage,
    /// The reasoning so far ends mid-line (an activity line then starts on a new one).
    reasoning_mid_line: bool,
}

/// Output events → SSE events, per run.
#[derive(Debug)]
pub struct SseEncoder {
    naming: Naming,
    runs: HashMap<Arc<RunId>, RunState>,
}

impl SseEncoder {
    pub fn new(naming: Naming) -> Self {
        SseEncoder { naming, runs: HashMap::new() }
    }

    /// Feed one output event; SSE events are appended to `out`.
    pub fn push(&mut self, ev: &OutputEvent, out: &mut Vec<SseEvent>) {
        let naming = &self.naming;
        let st = self.runs.entry(ev.run.clone()).or_default();
        if st.created.is_none() && ev.at_ms > 0 {
            st.created = Some(ev.at_ms / 1000);
        }
        let mut w = Writer { naming, run: &ev.run, st, out };
        match &ev.kind {
            Output::RunOpened { model, .. } => w.st.model = model.clone(),
            Output::MessageStarted { .. } => w.open(),
            Output::Text { delta, .. } if !delta.is_empty() => {
                w.delta(Delta { content: Some(delta.as_str().to_owned()), ..Delta::default() })
            }
            Output::Thinking { delta, .. } if !delta.is_empty() => w.reasoning(delta.as_str().to_owned()),
            Output::LifecycleLine { title, label, .. } => w.reasoning_line(format!("{title}: {label}\n")),
            Output::Card(card) => match client_call(card) {
                Some(call) => w.st.calls.push(call),
                None => w.reasoning_line(activity_line(card)),
            },
            Output::IncompleteCall(rec) if rec.visible => {
                w.reasoning_line(format!("{} did not complete: {}\n", rec.title, rec.reason.text()))
            }
            Output::MessageEnded { stop_reason, usage, error, .. } => {
                w.add_usage(usage);
                match stop_reason {
                    StopReason::ToolUse if !w.st.calls.is_empty() => w.end_with_calls(),
                    // Cursor's own tools: the response goes on.
                    StopReason::ToolUse => {}
                    StopReason::Stop => w.end(FinishReason::Stop),
                    StopReason::Error | StopReason::Aborted => {
                        let message = error.clone().unwrap_or_else(|| "the Cursor run failed".to_owned());
                        w.fail(message, *stop_reason);
                    }
                }
            }
            Output::RunClosed { .. } => {
                if w.st.open {
                    w.end(FinishReason::Stop);
                }
                self.runs.remove(&ev.run);
            }
            _ => {}
        }
    }
}

impl SseEncoder {
    /// A client tool call made beside the run's stream (the tool bridge: Cursor called one of
    /// the client's own tools over MCP and waits for its result): the current response ends with
    /// it (`finish_reason:"tool_calls"`, `Done`), whatever the run is doing; what the run does next
    /// opens the next response.
    pub fn client_call(&mut self, run: &Arc<RunId>, call: OpenAiToolCall, out: &mut Vec<SseEvent>) {
        let naming = &self.naming;
        let st = self.runs.entry(run.clone()).or_default();
        st.calls.push(call);
        Writer { naming, run, st, out }.end_with_calls();
    }
}

/// The client tool call a card stands for (an exec call), if any.
fn client_call(card: &Card) -> Option<OpenAiToolCall> {
    card.openai_call.as_deref().cloned()
}

/// One line of Cursor's own tool activity.
fn activity_line(card: &Card) -> String {
    let headline: &str = if card.headline.is_empty() { &card.title } else { &card.headline };
    format!("{headline}{}\n", if card.is_error { " (error)" } else { "" })
}

struct Writer<'a> {
    naming: &'a Naming,
    run: &'a RunId,
    st: &'a mut RunState,
    out: &'a mut Vec<SseEvent>,
}

impl Writer<'_> {
    fn chunk(&mut self, delta: Delta, finish_reason: Option<FinishReason>, usage: Option<CompletionUsage>) {
        let id = match &self.naming.id {
            Some(id) => id.clone(),
            None => format!("chatcmpl-{}-{}", self.run.label(), self.st.responses + 1),
        };
        let model = self.naming.model.clone().or_else(|| self.st.model.clone()).unwrap_or_else(|| "cursor".into());
        self.out.push(SseEvent::Chunk(ChatChunk {
            id,
            object: CHUNK_OBJECT.into(),
            created: self.naming.created.or(self.st.created).unwrap_or(0),
            model,
            choices: vec![ChunkChoice { index: 0, delta, finish_reason }],
            usage,
        }));
    }

    /// The role chunk, once per response.
    fn open(&mut self) {
        if !self.st.open {
            self.st.open = true;
            self.chunk(
                Delta { role: Some("assistant".into()), content: Some(String::new()), ..Delta::default() },
                None,
                None,
            );
        }
    }

    fn delta(&mut self, d: Delta) {
        self.open();
        self.chunk(d, None, None);
    }

    fn reasoning(&mut self, text: String) {
        self.st.reasoning_mid_line = !text.ends_with('\n');
        self.delta(Delta { reasoning_content: Some(text), ..Delta::default() });
    }

    /// A line of its own in the reasoning.
    fn reasoning_line(&mut self, line: String) {
        let line = if self.st.reasoning_mid_line { format!("\n{line}") } else { line };
        self.reasoning(line);
    }

    fn add_usage(&mut self, u: &Usage) {
        let prompt = u.input.saturating_add(u.cache_read).saturating_add(u.cache_write);
        let s = &mut self.st.usage;
        s.prompt_tokens = s.prompt_tokens.saturating_add(prompt);
        s.completion_tokens = s.completion_tokens.saturating_add(u.output);
        s.total_tokens = s.prompt_tokens.saturating_add(s.completion_tokens);
    }

    fn end_with_calls(&mut self) {
        self.open();
        let calls = std::mem::take(&mut self.st.calls);
        for (i, c) in calls.iter().enumerate() {
            let tc = ToolCallDelta {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                id: c.id.clone(),
                kind: "function".into(),
                function: FunctionCall { name: c.name.clone(), arguments: c.arguments.to_string() },
            };
            self.chunk(Delta { tool_calls: Some(vec![tc]), ..Delta::default() }, None, None);
        }
        let usage = Some(std::mem::take(&mut self.st.usage));
        self.chunk(Delta::default(), Some(FinishReason::ToolCalls), usage);
        self.close(calls.into_iter().map(|c| c.id).collect());
    }

    fn end(&mut self, reason: FinishReason) {
        self.open();
        // Client calls Cursor asked for in a message that then stopped are still the client's.
        if !self.st.calls.is_empty() {
            return self.end_with_calls();
        }
        let usage = Some(std::mem::take(&mut self.st.usage));
        self.chunk(Delta::default(), Some(reason), usage);
        self.close(Vec::new());
    }

    fn fail(&mut self, message: String, reason: StopReason) {
        let kind = if reason == StopReason::Aborted { "cancelled" } else { "cursor_run_error" };
        self.out.push(SseEvent::Error(ErrorBody { error: ErrorDetail { message, kind: kind.into(), code: None } }));
        self.st.calls.clear();
        self.st.usage = CompletionUsage::default();
        self.close(Vec::new());
    }

    fn close(&mut self, tool_call_ids: Vec<String>) {
        self.out.push(SseEvent::Done { tool_call_ids });
        self.st.open = false;
        self.st.responses += 1;
    }
}

/// One streamed response as a non-streamed `chat.completion`; its error when it failed.
pub fn assemble(events: &[SseEvent]) -> Result<ChatCompletion, ErrorBody> {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    let mut finish = FinishReason::Stop;
    let mut usage = CompletionUsage::default();
    let (mut id, mut created, mut model) = (String::new(), 0, String::new());
    for e in events {
        match e {
            SseEvent::Chunk(c) => {
                id.clone_from(&c.id);
                created = c.created;
                model.clone_from(&c.model);
                if let Some(u) = c.usage {
                    usage = u;
                }
                for choice in &c.choices {
                    content.push_str(choice.delta.content.as_deref().unwrap_or(""));
                    reasoning.push_str(choice.delta.reasoning_content.as_deref().unwrap_or(""));
                    tool_calls.extend(choice.delta.tool_calls.iter().flatten().cloned());
                    if let Some(f) = choice.finish_reason {
                        finish = f;
                    }
                }
            }
            SseEvent::Error(err) => return Err(err.clone()),
            SseEvent::Done { .. } => break,
        }
    }
    Ok(ChatCompletion {
        id,
        object: COMPLETION_OBJECT,
        created,
        model,
        choices: vec![CompletionChoice {
            index: 0,
            message: CompletionMessage {
                role: "assistant",
                content: (!content.is_empty() || tool_calls.is_empty()).then_some(content),
                reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
                tool_calls,
            },
            finish_reason: finish,
        }],
        usage,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn ev(run: &Arc<RunId>, kind: Output) -> OutputEvent {
        OutputEvent { run: run.clone(), at_ms: 1_000, kind }
    }

    #[test]
    fn a_bridged_call_ends_the_response_and_the_run_goes_on_in_the_next() {
        let run = Arc::new(RunId { session: "s".into(), seq: 1 });
        let mut enc = SseEncoder::new(Naming::default());
        let mut out = Vec::new();
        enc.push(&ev(&run, Output::MessageStarted { turn: 1 }), &mut out);
        enc.push(&ev(&run, Output::Text { turn: 1, delta: "Let me look.".into() }), &mut out);
        let call = OpenAiToolCall {
            id: "cursor-pi-bridge-run-x-tool-1".into(),
            name: "bash".into(),
            arguments: json!({"command": "ls"}),
        };
        enc.client_call(&run, call, &mut out);
        let first = assemble(&out).unwrap();
        assert_eq!(first.choices[0].finish_reason, FinishReason::ToolCalls);
        assert_eq!(first.choices[0].message.tool_calls[0].function.name, "bash");
        assert_eq!(first.choices[0].message.tool_calls[0].function.arguments, r#"{"command":"ls"}"#);
        assert_eq!(out.last(), Some(&SseEvent::Done { tool_call_ids: vec!["cursor-pi-bridge-run-x-tool-1".into()] }));
        // The continuation: a new response, with its own role chunk, ending with `stop`.
        out.clear();
        enc.push(&ev(&run, Output::Text { turn: 1, delta: "Two files.".into() }), &mut out);
        enc.push(
            &ev(
                &run,
                Output::MessageEnded { turn: 1, stop_reason: StopReason::Stop, usage: Box::default(), error: None },
            ),
            &mut out,
        );
        let second = assemble(&out).unwrap();
        assert_eq!(second.choices[0].message.content.as_deref(), Some("Two files."));
        assert_eq!(second.choices[0].finish_reason, FinishReason::Stop);
        assert!(second.id.ends_with("-2"), "{}", second.id);
        assert_eq!(out.last(), Some(&SseEvent::Done { tool_call_ids: vec![] }));
    }
}
