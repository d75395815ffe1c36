//! Sink threads: every sink runs on its own thread behind a bounded queue fed by every shard's
//! fan-out. A sink flushes whenever its queue runs dry (so live output shows at once and bulk
//! replays write in large batches) and on request. A failing sink is reported and isolated: it
//! keeps draining its queue so it never holds up the others. Also the stats counter, which is
//! simply one more sink.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};
use serde::Serialize;
use toolstream_schemas::{Output, OutputEvent, Tool};
use toolstream_sinks::{Sink, SinkError};

/// Batches a sink's queue holds before the shards block (`when_full = block`).
const QUEUE_CAPACITY: usize = 64;

/// What a sink thread receives.
pub enum SinkMsg {
    Events(Arc<Vec<OutputEvent>>),
    /// Flush, then reply.
    Flush(Sender<()>),
    /// Flush and end the thread (other senders may still hold the queue open).
    Stop,
}

/// A running sink thread.
pub struct SinkThread {
    queue: Sender<SinkMsg>,
    handle: JoinHandle<Vec<String>>,
}

impl SinkThread {
    pub fn start(mut sink: Box<dyn Sink>) -> std::io::Result<SinkThread> {
        let (tx, rx) = bounded::<SinkMsg>(QUEUE_CAPACITY);
        let name = sink.name();
        let handle = std::thread::Builder::new()
            .name(format!("toolstream-sink-{name}"))
            .spawn(move || drive(&mut *sink, &rx))?;
        Ok(SinkThread { queue: tx, handle })
    }

    pub fn queue(&self) -> Sender<SinkMsg> {
        self.queue.clone()
    }

    /// Wait for the sink to drain its queue and flush. Returns its errors.
    pub fn finish(self) -> Vec<String> {
        let _ = self.queue.send(SinkMsg::Stop);
        self.handle.join().unwrap_or_else(|_| vec!["sink thread panicked".to_owned()])
    }
}

fn drive(sink: &mut dyn Sink, rx: &Receiver<SinkMsg>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut failed = false;
    let mut dirty = false;
    for msg in rx {
        match msg {
            SinkMsg::Events(batch) if !failed => {
                match sink.write(&batch) {
                    Ok(()) => dirty = true,
                    Err(e) => fail(e, &mut failed, &mut errors),
                }
                if dirty && rx.is_empty() {
                    dirty = false;
                    if let Err(e) = sink.flush() {
                        fail(e, &mut failed, &mut errors);
                    }
                }
            }
            SinkMsg::Events(_) => {}
            SinkMsg::Flush(reply) => {
                if !failed {
                    if let Err(e) = sink.flush() {
                        fail(e, &mut failed, &mut errors);
                    }
                }
                let _ = reply.send(());
            }
            SinkMsg::Stop => break,
        }
    }
    if !failed {
        if let Err(e) = sink.flush() {
            errors.push(e.to_string());
        }
    }
    errors
}

fn fail(e: SinkError, failed: &mut bool, errors: &mut Vec<String>) {
    tracing::error!(sink = sink_name(&e), error = %e, "sink failed; its events are dropped from now on");
    errors.push(e.to_string());
    *failed = true;
}

fn sink_name(e: &SinkError) -> &'static str {
    match e {
        SinkError::Io { sink, .. } | SinkError::Other { sink, .. } => sink,
    }
}

/// What the output side counted.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OutputCounts {
    pub output_events: u64,
    pub runs: u64,
    pub calls: u64,
    pub calls_by_tool: BTreeMap<String, u64>,
    pub unknown_tools: BTreeMap<String, u64>,
    pub error_cards: u64,
    pub incomplete_calls: u64,
}

/// Counts runs, calls per canonical tool, unknown tools, error cards and incomplete calls.
#[derive(Clone, Default)]
pub struct StatsSink(pub Arc<Mutex<OutputCounts>>);

impl Sink for StatsSink {
    fn name(&self) -> &'static str {
        "stats"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        let mut c = self.0.lock().map_err(|_| SinkError::Other { sink: "stats", message: "poisoned".into() })?;
        c.output_events += batch.len() as u64;
        for ev in batch {
            let tool = match &ev.kind {
                Output::RunClosed { .. } => {
                    c.runs += 1;
                    continue;
                }
                // A visible incomplete call also produces a card marked `incomplete`; count it once.
                Output::Card(card) if card.args.get("incomplete") != Some(&serde_json::Value::Bool(true)) => {
                    if card.is_error {
                        c.error_cards += 1;
                    }
                    &card.source_tool
                }
                Output::IncompleteCall(i) => {
                    c.incomplete_calls += 1;
                    &i.source_tool
                }
                _ => continue,
            };
            c.calls += 1;
            *c.calls_by_tool.entry(tool.name().to_owned()).or_default() += 1;
            if let Tool::Unknown(name) = tool {
                *c.unknown_tools.entry(name.to_string()).or_default() += 1;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}
