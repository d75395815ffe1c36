//! The output gate: the provider's stdout, one assistant message per pi provider call.
//!
//! Lines go out in order as the sink produces them, until a `tool_results` line: then the gate
//! holds everything after it until pi has answered every tool call of that message (one
//! `tool_result` input line per call, in any order), so the caller reads exactly one assistant
//! message per provider call. The engine is not paused meanwhile (a live `cursor-agent` cannot
//! be): later lines wait here, in memory.
//!
//! The gate also knows what it has delivered: on `abort`, a message that was started on the wire
//! but not ended is ended there with one `error{reason:"aborted"}` line carrying its content as
//! delivered, and nothing more is written.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard};

use serde_json::{json, Value};

/// How the gate ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every line was delivered and answered; `last_reason` is the reason of the last terminal
    /// line (`stop`, `error`, …), `None` when no message was delivered.
    Finished { last_reason: Option<String> },
    /// `abort` (or the end of the input) stopped delivery.
    Aborted,
    /// The reader of our stdout went away.
    OutputGone,
}

/// What became of a `tool_result`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ack {
    /// It answered a call the gate was waiting for.
    Accepted,
    /// No delivered call was waiting for it (a repeat, or an unknown id).
    Unexpected,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closed {
    Aborted,
    OutputGone,
}

struct State {
    out: Box<dyn Write + Send>,
    queue: VecDeque<String>,
    /// Tool call ids of the last delivered `tool_results` that pi has not answered yet.
    awaiting: Vec<String>,
    tracker: Tracker,
    input_ended: bool,
    closed: Option<Closed>,
    last_reason: Option<String>,
}

pub struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

impl Gate {
    pub fn new(out: Box<dyn Write + Send>) -> Gate {
        Gate {
            state: Mutex::new(State {
                out,
                queue: VecDeque::new(),
                awaiting: Vec::new(),
                tracker: Tracker::default(),
                input_ended: false,
                closed: None,
                last_reason: None,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves consistent enough state to shut down.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queue complete lines (without their `\n`) and deliver what may go out now.
    pub fn push_lines<I: IntoIterator<Item = String>>(&self, lines: I) {
        let mut st = self.lock();
        if st.closed.is_some() {
            return;
        }
        st.queue.extend(lines);
        st.pump();
        drop(st);
        self.changed.notify_all();
    }

    /// pi answered tool call `id`.
    pub fn ack(&self, id: &str) -> Ack {
        let mut st = self.lock();
        let Some(k) = st.awaiting.iter().position(|a| a == id) else { return Ack::Unexpected };
        st.awaiting.remove(k);
        st.pump();
        drop(st);
        self.changed.notify_all();
        Ack::Accepted
    }

    /// No more lines will be pushed.
    pub fn end_input(&self) {
        self.lock().input_ended = true;
        self.changed.notify_all();
    }

    /// Stop delivering: end an open message with `error{reason:"aborted"}`. Returns whether it did.
    pub fn abort(&self) -> bool {
        let mut st = self.lock();
        if st.closed.is_some() {
            return false;
        }
        let ended = match st.tracker.take_aborted() {
            Some(message) => {
                let line = json!({"type": "error", "reason": "aborted", "error": message}).to_string();
                st.write_line(&line);
                let _ = st.out.flush();
                true
            }
            None => false,
        };
        st.closed = Some(Closed::Aborted);
        drop(st);
        self.changed.notify_all();
        ended
    }

    /// Whether everything was delivered and answered (nothing can happen any more).
    pub fn is_finished(&self) -> bool {
        let st = self.lock();
        st.closed.is_some() || st.drained()
    }

    /// Whether the run's last message (`stop` or `error`) is out and nothing waits for pi.
    pub fn run_delivered(&self) -> bool {
        let st = self.lock();
        st.awaiting.is_empty() && st.last_reason.as_deref().is_some_and(|r| r != "toolUse")
    }

    /// The reason of the last terminal line delivered.
    pub fn last_reason(&self) -> Option<String> {
        self.lock().last_reason.clone()
    }

    /// Block until everything was delivered and answered, or delivery stopped.
    pub fn wait(&self) -> Outcome {
        let mut st = self.lock();
        loop {
            match st.closed {
                Some(Closed::Aborted) => return Outcome::Aborted,
                Some(Closed::OutputGone) => return Outcome::OutputGone,
                None if st.drained() => return Outcome::Finished { last_reason: st.last_reason.clone() },
                None => {}
            }
            st = self.changed.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

impl State {
    fn drained(&self) -> bool {
        self.input_ended && self.queue.is_empty() && self.awaiting.is_empty()
    }

    /// Write queued lines until the gate must wait for tool results.
    fn pump(&mut self) {
        let mut wrote = false;
        while self.closed.is_none() && self.awaiting.is_empty() {
            let Some(line) = self.queue.pop_front() else { break };
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                match v["type"].as_str() {
                    Some("tool_results") => {
                        self.awaiting = v["results"]
                            .as_array()
                            .map(|rs| rs.iter().filter_map(|r| r["toolCallId"].as_str().map(str::to_owned)).collect())
                            .unwrap_or_default();
                    }
                    Some("done" | "error") => self.last_reason = v["reason"].as_str().map(str::to_owned),
                    _ => {}
                }
                self.tracker.observe(&v);
            }
            self.write_line(&line);
            wrote = true;
        }
        if wrote && self.closed.is_none() && self.out.flush().is_err() {
            self.closed = Some(Closed::OutputGone);
        }
    }

    fn write_line(&mut self, line: &str) {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if self.out.write_all(&bytes).is_err() {
            self.closed = Some(Closed::OutputGone);
        }
    }
}

/// The message being delivered, rebuilt from the lines (as the consumer rebuilds `partial`).
#[derive(Debug, Default)]
struct Tracker {
    partial: Option<Value>,
}

impl Tracker {
    fn observe(&mut self, line: &Value) {
        let kind = line["type"].as_str().unwrap_or("");
        if kind == "start" {
            self.partial = Some(line["partial"].clone());
            return;
        }
        if matches!(kind, "done" | "error") {
            self.partial = None;
            return;
        }
        let Some(content) = self.partial.as_mut().and_then(|p| p["content"].as_array_mut()) else { return };
        let index = line["contentIndex"].as_u64().and_then(|i| usize::try_from(i).ok());
        let block = index.and_then(|i| content.get_mut(i));
        match (kind, block) {
            ("text_start", _) => content.push(json!({"type": "text", "text": ""})),
            ("thinking_start", _) => content.push(json!({"type": "thinking", "thinking": ""})),
            ("toolcall_start", _) => content.push(line["toolCall"].clone()),
            ("text_delta", Some(b)) => append(&mut b["text"], &line["delta"]),
            ("thinking_delta", Some(b)) => append(&mut b["thinking"], &line["delta"]),
            ("text_end", Some(b)) => b["text"] = line["content"].clone(),
            ("thinking_end", Some(b)) => b["thinking"] = line["content"].clone(),
            ("toolcall_end", Some(b)) => *b = line["toolCall"].clone(),
            _ => {}
        }
    }

    /// The open message, ended as aborted (`None` when no message is open).
    fn take_aborted(&mut self) -> Option<Value> {
        let mut m = self.partial.take()?;
        m["stopReason"] = "aborted".into();
        m["errorMessage"] = toolstream_schemas::CANCELLED_MESSAGE.into();
        Some(m)
    }
}

fn append(target: &mut Value, delta: &Value) {
    let mut s = target.as_str().unwrap_or("").to_owned();
    s.push_str(delta.as_str().unwrap_or(""));
    *target = s.into();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    /// A `Write` whose bytes the test can read while the gate owns it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn lines(&self) -> Vec<Value> {
            let bytes = self.0.lock().unwrap();
            std::str::from_utf8(&bytes).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
        }
        fn types(&self) -> Vec<String> {
            self.lines().iter().map(|l| l["type"].as_str().unwrap().to_owned()).collect()
        }
    }

    fn start() -> String {
        json!({"type": "start", "partial": {"role": "assistant", "content": [], "stopReason": "stop"}}).to_string()
    }

    fn l(v: Value) -> String {
        v.to_string()
    }

    fn tool_use_message(ids: &[&str]) -> Vec<String> {
        let mut out = vec![start()];
        for (i, id) in ids.iter().enumerate() {
            let call = json!({"type": "toolCall", "id": id, "name": "bash", "arguments": {}});
            out.push(l(json!({"type": "toolcall_start", "contentIndex": i, "toolCall": call})));
            out.push(l(json!({"type": "toolcall_delta", "contentIndex": i, "delta": "{}"})));
            out.push(l(json!({"type": "toolcall_end", "contentIndex": i, "toolCall": call})));
        }
        out.push(l(json!({"type": "done", "reason": "toolUse", "message": {}})));
        let results: Vec<Value> = ids.iter().map(|id| json!({"toolCallId": id})).collect();
        out.push(l(json!({"type": "tool_results", "results": results})));
        out
    }

    #[test]
    fn holds_the_next_message_until_every_tool_call_is_answered() {
        let out = Shared::default();
        let gate = Gate::new(Box::new(out.clone()));
        let mut lines = tool_use_message(&["a", "b"]);
        lines.push(start());
        lines.push(l(json!({"type": "done", "reason": "stop", "message": {}})));
        gate.push_lines(lines);
        gate.end_input();
        assert_eq!(out.types().last().map(String::as_str), Some("tool_results"));
        assert!(!gate.is_finished());
        assert!(!gate.run_delivered());
        assert_eq!(gate.ack("b"), Ack::Accepted);
        assert_eq!(gate.ack("b"), Ack::Unexpected);
        assert_eq!(out.types().last().map(String::as_str), Some("tool_results"));
        assert_eq!(gate.ack("a"), Ack::Accepted);
        assert_eq!(out.types()[out.types().len() - 2..], ["start", "done"]);
        assert!(gate.run_delivered());
        assert_eq!(gate.wait(), Outcome::Finished { last_reason: Some("stop".into()) });
        assert_eq!(gate.ack("zzz"), Ack::Unexpected);
    }

    #[test]
    fn abort_ends_the_open_message_with_what_was_delivered() {
        let out = Shared::default();
        let gate = Gate::new(Box::new(out.clone()));
        gate.push_lines([
            start(),
            l(json!({"type": "thinking_start", "contentIndex": 0})),
            l(json!({"type": "thinking_delta", "contentIndex": 0, "delta": "hm"})),
            l(json!({"type": "thinking_end", "contentIndex": 0, "content": "hm"})),
            l(json!({"type": "text_start", "contentIndex": 1})),
            l(json!({"type": "text_delta", "contentIndex": 1, "delta": "Hel"})),
            l(json!({"type": "text_delta", "contentIndex": 1, "delta": "lo"})),
        ]);
        assert!(gate.abort());
        // Nothing more goes out.
        gate.push_lines([l(json!({"type": "done", "reason": "stop", "message": {}}))]);
        assert!(!gate.abort());
        let lines = out.lines();
        let last = lines.last().unwrap();
        assert_eq!((last["type"].as_str(), last["reason"].as_str()), (Some("error"), Some("aborted")));
        assert_eq!(last["error"]["stopReason"], "aborted");
        assert_eq!(
            last["error"]["content"],
            json!([{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Hello"}])
        );
        assert_eq!(lines.iter().filter(|l| l["type"] == "error" || l["type"] == "done").count(), 1);
        assert_eq!(gate.wait(), Outcome::Aborted);
    }

    #[test]
    fn abort_between_messages_writes_nothing() {
        let out = Shared::default();
        let gate = Gate::new(Box::new(out.clone()));
        gate.push_lines(tool_use_message(&["a"]));
        gate.push_lines([start()]);
        let before = out.lines().len();
        assert!(!gate.abort());
        assert_eq!(out.lines().len(), before);
        assert!(gate.is_finished());
    }

    #[test]
    fn a_vanished_reader_closes_the_gate() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let gate = Gate::new(Box::new(Broken));
        gate.push_lines([start()]);
        assert_eq!(gate.wait(), Outcome::OutputGone);
    }
}
