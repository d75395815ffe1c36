//! The terminal cards sink (SPEC §9.4): assistant text as it streams, thinking dimmed, lifecycle
//! lines, and one card per call — a title line, then the collapsed preview or (`--expanded`) the
//! full body, diffs with line numbers. Colour only when asked; plain output is byte-stable.
//!
//! Every string from the stream is untrusted: before it is written it becomes display body text
//! (SPEC §8, [`toolstream_schemas::display`]): escape sequences are removed, other control
//! characters (C0 such as CR and BEL, DEL, C1), bidi controls and U+2028/2029 become spaces and
//! tabs three spaces, so nothing in a prompt, a model name, assistant text or a tool's output can
//! act on the terminal or reorder what it shows. Only this sink's own colour codes ([`Style`]) are
//! written as escapes.

mod style;

use std::io::Write;
use std::sync::Arc;

use toolstream_schemas::display::{display_body, display_line, truncate_chars, DISPLAY_LINE_CHARS};
use toolstream_schemas::{Card, LineKind, Output, OutputEvent, RunId, RunStatus, RunTotals, StopReason};

use crate::{Sink, SinkError};
pub use style::Style;

/// How cards are laid out.
#[derive(Clone, Copy, Debug, Default)]
pub struct CardsOptions {
    /// Show full bodies instead of collapsed previews.
    pub expanded: bool,
    /// Emit ANSI colour.
    pub color: bool,
}

const BODY_INDENT: &str = "    ";
const THINKING_PREFIX: &str = "┆ ";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
}

/// Writes cards to any `Write` (stdout, a file, a buffer in tests).
pub struct CardsSink<W: Write + Send> {
    out: W,
    opts: CardsOptions,
    style: Style,
    /// The run whose streaming block is open, and which block.
    open: Option<(Arc<RunId>, Open)>,
    at_line_start: bool,
}

impl<W: Write + Send> CardsSink<W> {
    pub fn new(out: W, opts: CardsOptions) -> Self {
        CardsSink { out, opts, style: Style::new(opts.color), open: None, at_line_start: true }
    }

    /// The writer back (tests read the buffer).
    pub fn into_inner(self) -> W {
        self.out
    }

    fn io(e: std::io::Error) -> SinkError {
        SinkError::Io { sink: "cards", source: e }
    }

    fn newline_if_needed(&mut self) -> std::io::Result<()> {
        if !self.at_line_start {
            self.out.write_all(b"\n")?;
            self.at_line_start = true;
        }
        Ok(())
    }

    /// Close any open streaming block (a different run's text, or before a card).
    fn settle(&mut self) -> std::io::Result<()> {
        if self.open.take().is_some() {
            self.newline_if_needed()?;
        }
        Ok(())
    }

    /// Stream `delta` as part of the given block, prefixing each new line for thinking.
    fn stream(&mut self, run: &Arc<RunId>, kind: Open, delta: &str) -> std::io::Result<()> {
        let same = matches!(&self.open, Some((r, k)) if Arc::ptr_eq(r, run) && *k == kind);
        if !same {
            self.settle()?;
            self.newline_if_needed()?;
            self.open = Some((run.clone(), kind));
        }
        let (pre, post) = match kind {
            Open::Thinking => (self.style.dim, self.style.reset),
            _ => ("", ""),
        };
        let mut pieces = delta.split('\n').peekable();
        let mut first = true;
        while let Some(piece) = pieces.next() {
            if !std::mem::take(&mut first) {
                self.out.write_all(b"\n")?;
                self.at_line_start = true;
            }
            // A CRLF line end is a line end, not a stray CR.
            let piece = if pieces.peek().is_some() { piece.strip_suffix('\r').unwrap_or(piece) } else { piece };
            if piece.is_empty() {
                continue;
            }
            if self.at_line_start && kind == Open::Thinking {
                write!(self.out, "{pre}{THINKING_PREFIX}{post}")?;
            }
            write!(self.out, "{pre}{}{post}", display_body(piece))?;
            self.at_line_start = false;
        }
        Ok(())
    }

    fn line(&mut self, text: &str) -> std::io::Result<()> {
        self.settle()?;
        self.newline_if_needed()?;
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    fn card(&mut self, card: &Card) -> std::io::Result<()> {
        let s = self.style;
        let (mark, color) = if card.is_error { ("✗", s.red) } else { ("●", s.green) };
        let headline = display_line(&card.headline, DISPLAY_LINE_CHARS);
        self.line(&format!("{color}{mark}{reset} {bold}{headline}{reset}", reset = s.reset, bold = s.bold))?;
        // A card with a diff shows it (cut to 8 lines collapsed, 40 expanded); others their body.
        let is_diff = !card.diff.is_empty();
        let (lines, hidden): (Vec<(LineKind, &str)>, usize) = if self.opts.expanded {
            if is_diff {
                (card.diff.iter().map(|l| (l.kind, l.text.as_str())).collect(), card.diff_hidden)
            } else {
                (card.content.lines().map(|l| (LineKind::Plain, l)).collect(), 0)
            }
        } else {
            (card.preview.iter().map(|l| (l.kind, l.text.as_str())).collect(), card.preview_hidden)
        };
        for (kind, text) in lines {
            let color = match kind {
                LineKind::Plain => "",
                LineKind::Added => s.green,
                LineKind::Removed => s.red,
                LineKind::Context => s.dim,
            };
            let reset = if color.is_empty() { "" } else { s.reset };
            if text.is_empty() {
                writeln!(self.out)?;
                continue;
            }
            let text = display_body(text);
            writeln!(self.out, "{BODY_INDENT}{color}{text}{reset}")?;
        }
        if hidden > 0 {
            let (dim, reset) = (s.dim, s.reset);
            if is_diff {
                // SPEC §8, exactly.
                writeln!(self.out, "{BODY_INDENT}{dim}... ({hidden} more diff lines hidden){reset}")?;
            } else {
                writeln!(self.out, "{BODY_INDENT}{dim}… ({hidden} more lines; --expanded shows them){reset}")?;
            }
        }
        Ok(())
    }

    fn event(&mut self, ev: &OutputEvent) -> std::io::Result<()> {
        let s = self.style;
        match &ev.kind {
            Output::RunOpened { model, prompt, context, .. } => {
                let model =
                    model.as_deref().map(|m| format!(" · {}", display_line(m, DISPLAY_LINE_CHARS))).unwrap_or_default();
                // A subagent's run shows where it sits: inside its parent's task call.
                let kind = if context.as_ref().is_some_and(|c| c.parent.is_some()) { "subagent run" } else { "run" };
                self.line(&format!("{}── Cursor {kind} {}{model} ──{}", s.bold, ev.run.seq, s.reset))?;
                // User text, shown as its first non-blank line. It may carry secrets: the run stage
                // scrubs it before it gets here (sinks cannot see the scrubber); this only makes it
                // terminal-safe and bounds it.
                // Its inner spacing is kept (unlike a display line's), as the prompt was typed.
                let first_line =
                    prompt.as_deref().and_then(|p| p.lines().map(display_body).find(|l| !l.trim().is_empty()));
                if let Some(p) = first_line {
                    self.line(&format!("{}> {}{}", s.cyan, truncate_chars(p.trim(), DISPLAY_LINE_CHARS), s.reset))?;
                }
            }
            Output::Text { delta, .. } => self.stream(&ev.run, Open::Text, delta)?,
            Output::Thinking { delta, .. } => self.stream(&ev.run, Open::Thinking, delta)?,
            Output::BlockEnded { .. } => {
                if matches!(&self.open, Some((r, _)) if Arc::ptr_eq(r, &ev.run)) {
                    self.settle()?;
                }
            }
            Output::LifecycleLine { title, label, .. } => {
                let (title, label) = (display_line(title, DISPLAY_LINE_CHARS), display_line(label, DISPLAY_LINE_CHARS));
                self.line(&format!("{}… {title}: {label}{}", s.dim, s.reset))?;
            }
            Output::ShellProgress { stream, line, .. } => {
                let line = display_line(line, DISPLAY_LINE_CHARS);
                self.line(&format!("{}{BODY_INDENT}Cursor shell {}: {line}{}", s.dim, stream.as_str(), s.reset))?;
            }
            Output::Card(card) => {
                self.settle()?;
                self.card(card)?;
            }
            Output::MessageEnded { stop_reason, error, .. } => match stop_reason {
                StopReason::Error => {
                    let msg = display_line(error.as_deref().unwrap_or("error"), DISPLAY_LINE_CHARS);
                    self.line(&format!("{}✗ error: {msg}{}", s.red, s.reset))?;
                }
                StopReason::Aborted => self.line(&format!("{}⊘ aborted{}", s.yellow, s.reset))?,
                StopReason::Stop | StopReason::ToolUse => {}
            },
            Output::RunClosed { status, totals, .. } => {
                let summary = run_summary(*status, totals);
                self.line(&format!("{}── {summary} ──{}", s.bold, s.reset))?;
            }
            Output::MessageStarted { .. } | Output::IncompleteCall(_) | Output::Diagnostic { .. } => {}
        }
        Ok(())
    }
}

impl<W: Write + Send> Sink for CardsSink<W> {
    fn name(&self) -> &'static str {
        "cards"
    }

    fn write(&mut self, batch: &[OutputEvent]) -> Result<(), SinkError> {
        for ev in batch {
            self.event(ev).map_err(Self::io)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.out.flush().map_err(Self::io)
    }
}

/// `finished · 5 cards, 3 errors · 16.9s · tokens: …` for a run's closing line.
fn run_summary(status: RunStatus, t: &RunTotals) -> String {
    let mut parts = vec![status.as_str().to_owned()];
    let plural = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut calls = plural(t.cards, "card", "cards");
    if t.error_cards > 0 {
        calls.push_str(&format!(", {}", plural(t.error_cards, "error", "errors")));
    }
    if t.incomplete_calls > 0 {
        calls.push_str(&format!(", {} incomplete", t.incomplete_calls));
    }
    parts.push(calls);
    if let Some(ms) = t.duration_ms {
        parts.push(format!("{}.{}s", ms / 1000, (ms % 1000) / 100));
    }
    if let Some(u) = &t.reported_usage {
        parts.push(format!(
            "tokens: input {}, output {}, cache read {}, cache write {}, total {}",
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.total()
        ));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_mentions_errors_and_tokens() {
        let t = RunTotals {
            cards: 5,
            error_cards: 1,
            duration_ms: Some(16_862),
            reported_usage: Some(toolstream_schemas::TokenUsage {
                input_tokens: 1,
                output_tokens: 2,
                cache_read_tokens: 3,
                cache_write_tokens: 4,
                reasoning_tokens: None,
            }),
            ..RunTotals::default()
        };
        assert_eq!(
            run_summary(RunStatus::Finished, &t),
            "finished · 5 cards, 1 error · 16.8s · tokens: input 1, output 2, cache read 3, cache write 4, total 10"
        );
    }
}
