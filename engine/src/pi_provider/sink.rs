//! The provider's sink: the pi live-events sink (`toolstream_sinks::pi_events`) for the first run
//! of the source, writing into the output gate.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use toolstream_schemas::{Output, OutputEvent, RunId};
use toolstream_sinks::pi_events::display::ToolDisplay;
use toolstream_sinks::pi_events::PiEventsSink;
use toolstream_sinks::{Sink, SinkError};

use super::gate::Gate;

/// Hands complete lines to the gate.
pub struct GateWriter {
    gate: Arc<Gate>,
    buf: Vec<u8>,
}

impl GateWriter {
    pub fn new(gate: Arc<Gate>) -> Self {
        GateWriter { gate, buf: Vec::new() }
    }
}

impl Write for GateWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if let Some(end) = self.buf.iter().rposition(|b| *b == b'\n') {
            let rest = self.buf.split_off(end + 1);
            let complete = std::mem::replace(&mut self.buf, rest);
            let lines = complete
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect::<Vec<_>>();
            self.gate.push_lines(lines);
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One pi request is one Cursor run: the first run the source opens is delivered, any other is
/// left out (and reported once on stderr).
pub struct ProviderSink {
    inner: PiEventsSink<GateWriter>,
    run: Option<Arc<RunId>>,
    delivered: Arc<AtomicBool>,
    others_reported: bool,
}

impl ProviderSink {
    /// `delivered` turns true once the run opened (its messages are on their way); `display`
    /// says which cards pi can take as replay tool calls.
    pub fn new(gate: Arc<Gate>, delivered: Arc<AtomicBool>, display: ToolDisplay) -> Self {
        ProviderSink {
            inner: PiEventsSink::with_display(GateWriter::new(gate), display),
            run: None,
            delivered,
            others_reported: false,
        }
    }

    /// Whether `ev` belongs to the delivered run (choosing it at its opening).
    fn keep(&mut self, ev: &OutputEvent) -> bool {
        match &self.run {
            Some(run) => *run == ev.run,
            None if matches!(ev.kind, Output::RunOpened { .. }) => {
                self.run = Some(ev.run.clone());
                self.delivered.store(true, Ordering::SeqCst);
                true
            }
            // Nothing of a run comes before its opening; diagnostics are not delivered anyway.
            None => true,
        }
    }
}

impl Sink for ProviderSink {
    fn name(&self) -> &'static str {
        "pi-provider"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        let keep: Vec<bool> = batch.iter().map(|ev| self.keep(ev)).collect();
        if keep.iter().all(|k| *k) {
            return self.inner.write(batch);
        }
        if !self.others_reported {
            self.others_reported = true;
            tracing::warn!("the source holds more than one Cursor run; only the first is delivered to pi");
        }
        let kept: Vec<OutputEvent> = batch.iter().zip(&keep).filter(|(_, k)| **k).map(|(ev, _)| ev.clone()).collect();
        self.inner.write(&kept)
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Mutex;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn split_writes_become_whole_lines() {
        let out = Shared::default();
        let gate = Arc::new(Gate::new(Box::new(out.clone())));
        let mut w = GateWriter::new(gate);
        w.write_all(br#"{"type":"text_start","contentIndex":0}"#).unwrap();
        assert!(out.0.lock().unwrap().is_empty());
        w.write_all(b"\n{\"type\":\"text_delta\",").unwrap();
        w.write_all(b"\"contentIndex\":0,\"delta\":\"x\"}\n").unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "{\"type\":\"text_start\",\"contentIndex\":0}\n{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"x\"}\n"
        );
    }
}
