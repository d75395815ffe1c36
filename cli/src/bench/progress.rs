//! Progress of `toolstream bench` on stderr, so a run that takes seconds never looks stuck: on a
//! terminal one bar redrawn in place (corpus generation by bytes, then measurements by stage
//! runs); anywhere else (a pipe, a log, CI) one plain line per step — `bench: floor 1/3 … 812.4
//! MB/s` for each measured stage run. stdout is never touched: it carries only the report.
//!
//! Hand-written rather than `indicatif`: one bar with a label is all it draws, and a dependency
//! (with its own terminal-handling tree) would cost every engineer's build for that.

use std::io::{self, Write};

use super::measure::{Measurement, Stage};

/// Width of the bar, in cells.
const BAR_CELLS: usize = 24;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A bar redrawn in place (stderr is a terminal).
    Bar,
    /// One plain line per step.
    Lines,
}

/// Progress reporter of one bench run.
pub struct Progress<W: Write> {
    out: W,
    mode: Mode,
    /// Stage runs measured so far, and how many there are.
    done: u32,
    total: u32,
    /// Whether a bar is drawn on the current line.
    drawn: bool,
}

impl Progress<io::Stderr> {
    /// Progress on stderr: a bar on a terminal, plain lines otherwise.
    pub fn stderr() -> Self {
        use std::io::IsTerminal;
        let mode = if io::stderr().is_terminal() { Mode::Bar } else { Mode::Lines };
        Progress::new(io::stderr(), mode)
    }
}

impl<W: Write> Progress<W> {
    pub fn new(out: W, mode: Mode) -> Self {
        Progress { out, mode, done: 0, total: 0, drawn: false }
    }

    /// A one-off message (what is generated, what the corpus holds), above the bar if one is shown.
    pub fn note(&mut self, msg: &str) {
        self.clear();
        self.put(&format!("bench: {msg}\n"));
    }

    /// Corpus generation has written `written` of `target` bytes (a bar only; lines get notes).
    pub fn generating(&mut self, written: u64, target: u64) {
        if self.mode == Mode::Bar {
            let label = format!("generating corpus {}/{} MB", written / 1_000_000, target / 1_000_000);
            self.draw(written, target, &label);
        }
    }

    /// Measurements begin: `total` stage runs in all.
    pub fn start_measuring(&mut self, total: u32) {
        self.done = 0;
        self.total = total;
    }

    /// `stage` starts its run `round` of `repeat` (a bar only: a line follows when it is done).
    pub fn measuring(&mut self, stage: Stage, round: u32, repeat: u32) {
        if self.mode == Mode::Bar {
            let label = format!("{} {round}/{repeat} …", stage.name());
            self.draw(u64::from(self.done), u64::from(self.total), &label);
        }
    }

    /// A stage run was measured.
    pub fn measured(&mut self, m: &Measurement, round: u32, repeat: u32) {
        self.done += 1;
        let line = stage_line(m, round, repeat);
        match self.mode {
            Mode::Lines => self.put(&format!("bench: {line}\n")),
            Mode::Bar => self.draw(u64::from(self.done), u64::from(self.total), &line),
        }
    }

    /// Everything is measured: take the bar away.
    pub fn finish(&mut self) {
        self.clear();
    }

    fn draw(&mut self, done: u64, total: u64, label: &str) {
        let line = format!("\r\x1b[2Kbench {} {label}", bar(done, total));
        self.put(&line);
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.drawn {
            self.drawn = false;
            self.put("\r\x1b[2K");
        }
    }

    /// Progress is best effort: a closed stderr must not fail the benchmark.
    fn put(&mut self, s: &str) {
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.flush();
    }
}

/// `floor 1/3 … 812.4 MB/s, peak RSS 5 MiB` (the OTLP stage adds `, 123456 spans/s, 0 lost`).
fn stage_line(m: &Measurement, round: u32, repeat: u32) -> String {
    let mut line =
        format!("{} {round}/{repeat} … {:.1} MB/s, peak RSS {} MiB", m.stage.name(), m.mbps(), m.peak_rss_kib / 1024);
    if let (Some(rate), Some(o)) = (m.spans_per_s(), &m.otlp) {
        line.push_str(&format!(", {rate:.0} spans/s, {} lost", o.spans_lost));
    }
    line
}

/// `[██████░░░░…]`, `done` of `total` filled.
fn bar(done: u64, total: u64) -> String {
    let filled = (done.min(total) * BAR_CELLS as u64).checked_div(total).unwrap_or(0) as usize;
    format!("[{}{}]", "█".repeat(filled), "░".repeat(BAR_CELLS - filled))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(stage: Stage) -> Measurement {
        Measurement { stage, bytes: 2_000_000, lines: 10, events: 0, seconds: 0.5, peak_rss_kib: 5 * 1024, otlp: None }
    }

    fn text(p: Progress<Vec<u8>>) -> String {
        String::from_utf8(p.out).unwrap()
    }

    #[test]
    fn lines_mode_writes_one_plain_line_per_measured_stage_run() {
        let mut p = Progress::new(Vec::new(), Mode::Lines);
        p.note("generating corpus 2 MB…");
        p.generating(1_000_000, 2_000_000);
        p.start_measuring(2);
        p.measuring(Stage::Floor, 1, 2);
        p.measured(&m(Stage::Floor), 1, 2);
        p.measuring(Stage::E2eNull, 1, 2);
        p.measured(&m(Stage::E2eNull), 1, 2);
        p.finish();
        assert_eq!(
            text(p),
            "bench: generating corpus 2 MB…\n\
             bench: floor 1/2 … 4.0 MB/s, peak RSS 5 MiB\n\
             bench: e2e-null 1/2 … 4.0 MB/s, peak RSS 5 MiB\n"
        );
    }

    #[test]
    fn bar_mode_redraws_one_line_and_clears_it() {
        let mut p = Progress::new(Vec::new(), Mode::Bar);
        p.generating(100_000_000, 200_000_000);
        p.note("corpus: 200 MB");
        p.start_measuring(4);
        p.measuring(Stage::Decode, 1, 2);
        p.measured(&m(Stage::Decode), 1, 2);
        p.finish();
        let out = text(p);
        let half = format!("[{}{}]", "█".repeat(12), "░".repeat(12));
        assert!(out.starts_with(&format!("\r\x1b[2Kbench {half} generating corpus 100/200 MB")), "{out:?}");
        // The note clears the bar and is a line of its own.
        assert!(out.contains("\r\x1b[2Kbench: corpus: 200 MB\n"), "{out:?}");
        assert!(out.contains("decode 1/2 …\r"), "{out:?}");
        let quarter = format!("[{}{}]", "█".repeat(6), "░".repeat(18));
        assert!(out.contains(&format!("bench {quarter} decode 1/2 … 4.0 MB/s")), "{out:?}");
        // Nothing is left on the line: the report follows on a clean terminal.
        assert!(out.ends_with("\r\x1b[2K"), "{out:?}");
        assert_eq!(out.matches('\n').count(), 1, "{out:?}");
    }

    #[test]
    fn bar_fills_in_proportion() {
        assert_eq!(bar(0, 0), format!("[{}]", "░".repeat(BAR_CELLS)));
        assert_eq!(bar(3, 3), format!("[{}]", "█".repeat(BAR_CELLS)));
        assert_eq!(bar(9, 3), format!("[{}]", "█".repeat(BAR_CELLS)));
    }
}
