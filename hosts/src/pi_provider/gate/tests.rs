#![allow(clippy::unwrap_used)]
use super::*;
use serde_json::{json, Value};
use std::sync::Arc;
use toolstream_sinks::pi_events::{TextContent, ToolCall, ToolResultMessage};

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

fn ev(step: Step) -> Outgoing {
    Outgoing::Event(step)
}

fn start() -> Outgoing {
    ev(Step::Start(AssistantMessage::empty("auto", 1)))
}

fn end(reason: &'static str) -> Outgoing {
    let mut message = AssistantMessage::empty("auto", 1);
    message.stop_reason = reason;
    ev(Step::End { message, at: 1 })
}

fn text(index: usize, delta: &str) -> Outgoing {
    ev(Step::BlockDelta { kind: BlockKind::Text, index, delta: delta.into() })
}

fn tool_use_message(ids: &[&str]) -> Vec<Outgoing> {
    let mut out = vec![start()];
    for (index, id) in ids.iter().enumerate() {
        let call = ToolCall { id: (*id).into(), name: "bash".into(), arguments: json!({}) };
        out.push(ev(Step::ToolCall { index, call }));
    }
    out.push(end("toolUse"));
    let results = ids
        .iter()
        .map(|id| ToolResultMessage {
            role: "toolResult",
            tool_call_id: (*id).into(),
            tool_name: "bash".into(),
            content: vec![TextContent::new("ok")],
            details: None,
            is_error: false,
            timestamp: 1,
        })
        .collect();
    out.push(ev(Step::ToolResults { results, bridged: Vec::new(), at: 1 }));
    out
}

#[test]
fn holds_the_next_message_until_every_tool_call_is_answered() {
    let out = Shared::default();
    let gate = Gate::new(Box::new(out.clone()));
    let mut items = tool_use_message(&["a", "b"]);
    items.push(start());
    items.push(end("stop"));
    gate.push(items);
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
    assert_eq!(gate.wait(), Outcome::Finished { last_reason: Some("stop") });
    assert_eq!(gate.ack("zzz"), Ack::Unexpected);
}

#[test]
fn the_chat_line_goes_out_once_before_what_follows_it() {
    let out = Shared::default();
    let gate = Gate::new(Box::new(out.clone()));
    gate.push([Outgoing::Chat("chat-1".into()), start(), Outgoing::Chat("chat-2".into()), end("stop")]);
    let lines = out.lines();
    assert_eq!(lines[0], json!({"type": "chat", "chatId": "chat-1"}));
    assert_eq!(out.types(), ["chat", "start", "done"]);
}

#[test]
fn abort_ends_the_open_message_with_what_was_delivered() {
    let out = Shared::default();
    let gate = Gate::new(Box::new(out.clone()));
    gate.push([
        start(),
        ev(Step::BlockStart { kind: BlockKind::Thinking, index: 0 }),
        ev(Step::BlockDelta { kind: BlockKind::Thinking, index: 0, delta: "hm".into() }),
        ev(Step::BlockEnd { kind: BlockKind::Thinking, index: 0, content: "hm".into() }),
        ev(Step::BlockStart { kind: BlockKind::Text, index: 1 }),
        text(1, "Hel"),
        text(1, "lo"),
    ]);
    assert!(gate.abort());
    // Nothing more goes out.
    gate.push([end("stop")]);
    assert!(!gate.abort());
    let lines = out.lines();
    let last = lines.last().unwrap();
    assert_eq!((last["type"].as_str(), last["reason"].as_str()), (Some("error"), Some("aborted")));
    assert_eq!(last["error"]["stopReason"], "aborted");
    assert_eq!(last["error"]["errorMessage"], toolstream_schemas::CANCELLED_MESSAGE);
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
    gate.push(tool_use_message(&["a"]));
    gate.push([start()]);
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
    gate.push([start()]);
    assert_eq!(gate.wait(), Outcome::OutputGone);
}

#[test]
fn what_waits_for_pi_is_bounded_and_an_empty_queue_takes_anything() {
    let mut d = Delivery::default();
    for item in tool_use_message(&["a"]) {
        d.push(item);
    }
    while d.next_out().is_some() {}
    // Paused for pi: a step bigger than the whole limit still gets into the empty queue…
    let big = "x".repeat(WAITING_LIMIT_BYTES);
    assert!(d.has_room(big.len()));
    d.push(text(0, &big));
    // …and then nothing more does until pi answers and the queue drains.
    assert!(!d.has_room(1));
    assert!(d.next_out().is_none());
    assert_eq!(d.ack("a"), Ack::Accepted);
    assert!(matches!(d.next_out(), Some(Outgoing::Event(Step::BlockDelta { .. }))));
    assert!(d.has_room(WAITING_LIMIT_BYTES / 2));
}

#[test]
fn a_full_gate_holds_the_hand_over_until_pi_answers_and_loses_nothing() {
    let out = Shared::default();
    let gate = Arc::new(Gate::new(Box::new(out.clone())));
    gate.push(tool_use_message(&["a"]));
    // Far more than the limit, handed over while the gate waits for pi.
    let chunk = "y".repeat(64 * 1024);
    let n = 4 * WAITING_LIMIT_BYTES / chunk.len();
    let pusher = {
        let gate = gate.clone();
        let chunk = chunk.clone();
        std::thread::spawn(move || {
            let mut items = vec![start(), ev(Step::BlockStart { kind: BlockKind::Text, index: 0 })];
            items.extend((0..n).map(|i| text(0, &format!("{i}:{chunk}"))));
            items.push(end("stop"));
            gate.push(items);
            gate.end_input();
        })
    };
    // Wait (bounded) until the queue is full: the pusher is held there until pi answers.
    let delivered_before = out.lines().len();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while gate.held().0 + chunk.len() <= WAITING_LIMIT_BYTES {
        assert!(std::time::Instant::now() < deadline, "the pusher never filled the gate");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(!pusher.is_finished());
    assert_eq!(out.lines().len(), delivered_before, "nothing goes out before pi answers");
    assert_eq!(gate.ack("a"), Ack::Accepted);
    pusher.join().unwrap();
    assert_eq!(gate.wait(), Outcome::Finished { last_reason: Some("stop") });
    let lines = out.lines();
    let deltas: Vec<String> =
        lines.iter().filter(|l| l["type"] == "text_delta").map(|l| l["delta"].as_str().unwrap().to_owned()).collect();
    assert_eq!(deltas.len(), n);
    for (i, d) in deltas.iter().enumerate() {
        assert!(d.starts_with(&format!("{i}:")), "in order");
    }
    assert_eq!(lines.len(), delivered_before + n + 3);
    assert!(gate.held().1 <= WAITING_LIMIT_BYTES, "peak {} over the limit", gate.held().1);
}
