//! The output gate: the provider's stdout, one assistant message per pi provider call.
//!
//! What goes out ([`Outgoing`]) is typed: the assembled pi-events steps of the run and the `chat`
//! line; each is serialized once, as it is written. Items go out in order as the sink hands them
//! over, until a `tool_results` step: then the gate holds everything after it until pi has answered
//! every tool call of that message (one `tool_result` input line per call, in any order), so the
//! caller reads exactly one assistant message per provider call.
//!
//! What waits for pi is bounded by the paused-run policy the front ends share
//! (`crate::paused_run`, [`WAITING_LIMIT_BYTES`] by [`Step::held_bytes`]). A hand-over that would go past it waits
//! until pi's answers let the queue drain, and so does the engine behind it — the sink thread, the
//! engine's bounded queues, and in the end the reading of the source: a recording is not read
//! further, a `cursor-agent` blocks writing to its stdout pipe. Nothing is dropped and the order is
//! kept. An empty queue takes any one item, however large, so the run never stalls.
//!
//! The gate also knows what it has delivered: on `abort`, a message that was started on the wire
//! but not ended is ended there with one `error{reason:"aborted"}` line carrying its content as
//! delivered, and nothing more is written.
//!
//! [`Delivery`] is the pure state machine (items and answers in, the items that may go out now
//! out); [`Gate`] puts it behind a lock, writes to stdout and makes hand-overs wait.

use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard};

use serde::Serialize;
use toolstream_sinks::pi_events::{write_step, AssistantMessage, BlockKind, ContentBlock, Step};

use crate::paused_run::Waiting;
pub use crate::paused_run::WAITING_LIMIT_BYTES;

/// One item for stdout.
// Nearly every item is an `Event`: boxing it would cost an allocation per step for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Outgoing {
    /// The run's Cursor chat id: `{"type":"chat","chatId":…}` (a provider-protocol line; at most
    /// one per run, ahead of the run's first message).
    Chat(String),
    /// An assembled pi-events step: its line(s) as `toolstream_sinks::pi_events` writes them.
    Event(Step),
}

impl Outgoing {
    fn held_bytes(&self) -> usize {
        match self {
            Outgoing::Chat(id) => std::mem::size_of::<Outgoing>() + id.len(),
            Outgoing::Event(step) => step.held_bytes(),
        }
    }

    /// Append the line(s) of this item to `out`.
    fn write_to(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Outgoing::Chat(id) => {
                serde_json::to_writer(&mut *out, &ChatLine::Chat { chat_id: id })?;
                out.push(b'\n');
                Ok(())
            }
            Outgoing::Event(step) => write_step(step, out),
        }
    }
}

/// The provider's own output lines (beside the pi-events lines).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatLine<'a> {
    Chat {
        #[serde(rename = "chatId")]
        chat_id: &'a str,
    },
}

/// How the gate ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every line was delivered and answered; `last_reason` is the reason of the last terminal
    /// line (`stop`, `error`, …), `None` when no message was delivered.
    Finished { last_reason: Option<&'static str> },
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

/// The delivery state machine: what waits, what pi still has to answer, what was delivered.
#[derive(Debug, Default)]
pub struct Delivery {
    /// Items not delivered yet, with their [`Outgoing::held_bytes`].
    queue: Waiting<Outgoing>,
    /// Tool call ids of the last delivered `tool_results` that pi has not answered yet.
    awaiting: Vec<String>,
    /// The message started on the wire and not ended, as delivered so far.
    open: Option<AssistantMessage>,
    chat_sent: bool,
    input_ended: bool,
    closed: Option<Closed>,
    last_reason: Option<&'static str>,
}

impl Delivery {
    /// Whether an item holding `bytes` may be queued now (always, into an empty queue).
    pub fn has_room(&self, bytes: usize) -> bool {
        self.queue.has_room(bytes)
    }

    /// Queue an item (nothing once delivery stopped; a second `chat` is dropped).
    pub fn push(&mut self, item: Outgoing) {
        if self.closed.is_some() {
            return;
        }
        let bytes = item.held_bytes();
        self.queue.push(item, bytes);
    }

    /// The next item that may go out now, taken as delivered; `None` while pi has calls to answer
    /// (or nothing waits).
    pub fn next_out(&mut self) -> Option<Outgoing> {
        loop {
            if self.closed.is_some() || !self.awaiting.is_empty() {
                return None;
            }
            let item = self.queue.pop()?;
            match &item {
                Outgoing::Chat(_) if self.chat_sent => continue,
                Outgoing::Chat(_) => self.chat_sent = true,
                Outgoing::Event(step) => self.observe(step),
            }
            return Some(item);
        }
    }

    /// Follow what goes out: the open message as delivered, the calls pi must answer, the reason
    /// of the last terminal line.
    fn observe(&mut self, step: &Step) {
        match step {
            Step::Start(m) => self.open = Some(m.clone()),
            Step::BlockStart { kind, .. } => {
                if let Some(m) = self.open.as_mut() {
                    m.content.push(match kind {
                        BlockKind::Text => ContentBlock::Text { text: String::new() },
                        BlockKind::Thinking => ContentBlock::Thinking { thinking: String::new() },
                    });
                }
            }
            Step::BlockDelta { index, delta, .. } => {
                if let Some(ContentBlock::Text { text: s } | ContentBlock::Thinking { thinking: s }) =
                    self.open.as_mut().and_then(|m| m.content.get_mut(*index))
                {
                    s.push_str(delta);
                }
            }
            Step::ToolCall { call, .. } => {
                if let Some(m) = self.open.as_mut() {
                    m.content.push(ContentBlock::ToolCall(call.clone()));
                }
            }
            Step::End { message, .. } => {
                self.open = None;
                self.last_reason = Some(message.stop_reason);
            }
            Step::ToolResults { results, bridged, .. } => {
                self.awaiting = results.iter().map(|r| r.tool_call_id.clone()).chain(bridged.iter().cloned()).collect();
            }
            Step::BlockEnd { .. } | Step::RunOpened { .. } | Step::RunClosed { .. } => {}
        }
    }

    /// pi answered tool call `id`.
    pub fn ack(&mut self, id: &str) -> Ack {
        let Some(k) = self.awaiting.iter().position(|a| a == id) else { return Ack::Unexpected };
        self.awaiting.remove(k);
        Ack::Accepted
    }

    /// No more items will be pushed.
    pub fn end_input(&mut self) {
        self.input_ended = true;
    }

    /// Stop delivering; returns the step that ends the open message as aborted, if one is open.
    /// Nothing waiting is delivered any more.
    pub fn abort(&mut self) -> Option<Outgoing> {
        if self.closed.is_some() {
            return None;
        }
        self.closed = Some(Closed::Aborted);
        self.queue.clear();
        let mut message = self.open.take()?;
        message.stop_reason = "aborted";
        message.error_message = Some(toolstream_schemas::CANCELLED_MESSAGE.to_owned());
        Some(Outgoing::Event(Step::End { message, at: 0 }))
    }

    /// The reader of stdout went away: nothing more can be delivered.
    pub fn output_gone(&mut self) {
        self.closed = Some(Closed::OutputGone);
        self.queue.clear();
    }

    /// What waits now, and the most that ever waited (bytes, by [`Step::held_bytes`]).
    pub fn held(&self) -> (usize, usize) {
        self.queue.held()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    fn drained(&self) -> bool {
        self.input_ended && self.queue.is_empty() && self.awaiting.is_empty()
    }

    /// How delivery ended, `None` while it goes on.
    pub fn outcome(&self) -> Option<Outcome> {
        match self.closed {
            Some(Closed::Aborted) => Some(Outcome::Aborted),
            Some(Closed::OutputGone) => Some(Outcome::OutputGone),
            None if self.drained() => Some(Outcome::Finished { last_reason: self.last_reason }),
            None => None,
        }
    }

    /// Whether the run's last message (`stop` or `error`) is out and nothing waits for pi.
    pub fn run_delivered(&self) -> bool {
        self.awaiting.is_empty() && self.last_reason.is_some_and(|r| r != "toolUse")
    }
}

struct State {
    delivery: Delivery,
    out: Box<dyn Write + Send>,
    /// Lines serialized and not written yet.
    buf: Vec<u8>,
}

impl State {
    /// Serialize everything that may go out now.
    fn pump(&mut self) {
        while let Some(item) = self.delivery.next_out() {
            if item.write_to(&mut self.buf).is_err() {
                // Serializing these plain types cannot fail; never write half a line.
                tracing::error!("cannot serialize an output line");
            }
        }
    }

    /// Write what was serialized, flushed.
    fn send(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let res = self.out.write_all(&self.buf).and_then(|()| self.out.flush());
        self.buf.clear();
        if res.is_err() {
            self.delivery.output_gone();
        }
    }
}

pub struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

impl Gate {
    pub fn new(out: Box<dyn Write + Send>) -> Gate {
        Gate {
            state: Mutex::new(State { delivery: Delivery::default(), out, buf: Vec::new() }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves consistent enough state to shut down.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wait_on<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hand items over in order and deliver what may go out now. Waits while the queue is full
    /// (see [`WAITING_LIMIT_BYTES`]); returns at once, dropping them, once delivery stopped.
    pub fn push<I: IntoIterator<Item = Outgoing>>(&self, items: I) {
        let mut st = self.lock();
        for item in items {
            let bytes = item.held_bytes();
            while !st.delivery.is_closed() && !st.delivery.has_room(bytes) {
                st.send();
                st = self.wait_on(st);
            }
            if st.delivery.is_closed() {
                break;
            }
            st.delivery.push(item);
            st.pump();
        }
        st.send();
        drop(st);
        self.changed.notify_all();
    }

    /// pi answered tool call `id`.
    pub fn ack(&self, id: &str) -> Ack {
        let mut st = self.lock();
        let ack = st.delivery.ack(id);
        if ack == Ack::Accepted {
            st.pump();
            st.send();
        }
        drop(st);
        self.changed.notify_all();
        ack
    }

    /// No more items will be pushed.
    pub fn end_input(&self) {
        self.lock().delivery.end_input();
        self.changed.notify_all();
    }

    /// Stop delivering: end an open message with `error{reason:"aborted"}`. Returns whether it did.
    pub fn abort(&self) -> bool {
        let mut st = self.lock();
        let ended = match st.delivery.abort() {
            Some(line) => {
                if line.write_to(&mut st.buf).is_err() {
                    tracing::error!("cannot serialize an output line");
                }
                let State { out, buf, .. } = &mut *st;
                let _ = out.write_all(buf).and_then(|()| out.flush());
                buf.clear();
                true
            }
            None => false,
        };
        drop(st);
        self.changed.notify_all();
        ended
    }

    /// Whether everything was delivered and answered (nothing can happen any more).
    pub fn is_finished(&self) -> bool {
        self.lock().delivery.outcome().is_some()
    }

    /// Whether the run's last message (`stop` or `error`) is out and nothing waits for pi.
    pub fn run_delivered(&self) -> bool {
        self.lock().delivery.run_delivered()
    }

    /// What waits for pi now, and the most that ever waited (bytes).
    pub fn held(&self) -> (usize, usize) {
        self.lock().delivery.held()
    }

    /// The reason of the last terminal line delivered.
    pub fn last_reason(&self) -> Option<&'static str> {
        self.lock().delivery.last_reason
    }

    /// Block until everything was delivered and answered, or delivery stopped.
    pub fn wait(&self) -> Outcome {
        let mut st = self.lock();
        loop {
            if let Some(outcome) = st.delivery.outcome() {
                return outcome;
            }
            st = self.wait_on(st);
        }
    }
}

#[cfg(test)]
mod tests;
