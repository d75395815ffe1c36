//! Usage accounting (SPEC §6c): fills in the usage of every message the run stage ends. A turn's
//! SDK `turn-ended` usage is used when it is sane, at most once, and only for the message it
//! belongs to — usage that arrives after its message was emitted is discarded, never attributed
//! to a later message. Otherwise usage is estimated: `ceil(utf16 / 4)` of the message's text,
//! thinking and tool-call JSON as output; the prompt (first message only) and the tool results
//! the message consumed as input. Pure state machine over output events.

use std::sync::Arc;

use toolstream_schemas::models::{ModelLimits, ModelTable};
use toolstream_schemas::{DiagFields, Output, OutputEvent, RunId, StopReason, TokenUsage, Usage};

use crate::item::RunOutput;
use crate::present::bounds::estimate_tokens;
use toolstream_schemas::by_arc::ByArc;

/// Limits a turn's SDK usage must respect to be believed: those of the run's model (SPEC §6c),
/// from the table of known Cursor models (`schemas/models.json`). Override an entry with
/// `cfg.models.set(id, ModelLimits{…})`, what unknown models count as with `set_default`.
#[derive(Clone, Debug, Default)]
pub struct UsageConfig {
    pub models: ModelTable,
}

#[derive(Debug, Default)]
struct RunUsage {
    /// The run's model's limits.
    limits: Option<ModelLimits>,
    message_open: bool,
    /// UTF-16 units of this message's text, thinking and tool-call JSON.
    output_units: u64,
    /// Estimated input of the current message: the prompt (first message), then consumed results.
    input: u64,
    /// Tool results of this message, consumed by the next one.
    next_input: u64,
    /// Estimate of the whole context so far: the prompt, every output, every tool result.
    context: u64,
    /// The SDK usage received for the open message.
    sdk: Option<TokenUsage>,
    /// Usage that arrived before its message opened (e.g. between a tool's start and its
    /// completion): it goes to the next message.
    held: Option<TokenUsage>,
    /// The last tool-use message ended without its turn usage: the next one to arrive is late.
    owed: bool,
}

/// The usage stage's state, per open run.
#[derive(Debug, Default)]
pub struct UsageCore {
    cfg: UsageConfig,
    runs: ByArc<RunId, RunUsage>,
}

fn utf16_len(s: &str) -> u64 {
    utf16_units(s.as_bytes())
}

/// UTF-16 code units of valid UTF-8 bytes: one per character, two for those of four bytes. Most
/// text is ASCII, one unit per byte: checked first, in words.
fn utf16_units(bytes: &[u8]) -> u64 {
    if bytes.is_ascii() {
        return bytes.len() as u64;
    }
    bytes.iter().map(|&b| u64::from(b & 0xC0 != 0x80) + u64::from(b >= 0xF0)).sum()
}

/// UTF-16 code units of a JSON value's compact serialization, counted as it is written.
fn json_utf16_len(value: &serde_json::Value) -> u64 {
    struct Units(u64);
    impl std::io::Write for Units {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += utf16_units(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut units = Units(0);
    // Writing to a counter cannot fail, and serde_json writes whole characters.
    let _ = serde_json::to_writer(&mut units, value);
    units.0
}

impl UsageCore {
    pub fn new(cfg: UsageConfig) -> Self {
        UsageCore { cfg, runs: ByArc::default() }
    }

    /// Map a turn's SDK usage to pi's (SPEC §6c), or `None` when it is not sane for a model with
    /// these limits (a whole run's total, over the window, never reaches a message).
    pub fn sdk_usage(limits: ModelLimits, u: &TokenUsage) -> Option<Usage> {
        let cache = u.cache_read_tokens.checked_add(u.cache_write_tokens)?;
        let input = u.input_tokens.checked_sub(cache)?;
        let total = u.input_tokens.checked_add(u.output_tokens)?;
        if u.output_tokens > limits.max_tokens || total > limits.context_window {
            return None;
        }
        Some(Usage {
            input,
            output: u.output_tokens,
            cache_read: u.cache_read_tokens,
            cache_write: u.cache_write_tokens,
            total_tokens: total,
            ..Usage::default()
        })
    }

    /// Process one output of the run stage: a turn's usage is held for its message (or discarded
    /// as late); every event passes on, with `MessageEnded` usage filled in, plus `usage_applied`
    /// diagnostics.
    pub fn push(&mut self, input: RunOutput, out: &mut Vec<OutputEvent>) {
        let mut ev = match input {
            RunOutput::Event(ev) => ev,
            RunOutput::TurnUsage { run, at_ms, usage } => return self.turn_usage(run, at_ms, usage, out),
        };
        let run = &ev.run;
        match &mut ev.kind {
            Output::RunOpened { prompt, model, .. } => {
                // The prompt is input once per run: on its first message.
                let input = prompt.as_deref().map_or(0, estimate_tokens);
                let limits = Some(self.cfg.models.limits(model.as_deref()));
                *self.runs.state_of(run, RunUsage::default) =
                    RunUsage { limits, input, context: input, ..RunUsage::default() };
            }
            Output::MessageStarted { .. } => {
                let r = self.runs.state_of(run, RunUsage::default);
                r.message_open = true;
                r.sdk = r.held.take();
                r.output_units = 0;
            }
            Output::Text { delta, .. } | Output::Thinking { delta, .. } => {
                self.runs.state_of(run, RunUsage::default).output_units += utf16_len(delta);
            }
            Output::LifecycleLine { title, label, .. } => {
                // Shown as the thinking text "<title>: <label>\n".
                self.runs.state_of(run, RunUsage::default).output_units += utf16_len(title) + utf16_len(label) + 3;
            }
            Output::Card(card) => {
                let r = self.runs.state_of(run, RunUsage::default);
                r.output_units += json_utf16_len(&card.args);
                let result = estimate_tokens(&card.result_text);
                r.next_input += result;
                r.context += result;
            }
            Output::MessageEnded { turn, stop_reason, usage, .. } => {
                let default_limits = self.cfg.models.limits(None);
                let r = self.runs.state_of(run, RunUsage::default);
                let limits = r.limits.unwrap_or(default_limits);
                let sdk = r.sdk.and_then(|u| UsageCore::sdk_usage(limits, &u));
                let failed = matches!(stop_reason, StopReason::Error | StopReason::Aborted);
                let (applied, source) = match sdk {
                    // Error and aborted messages carry zero usage (SPEC §5.4).
                    _ if failed => (Usage::default(), "none"),
                    Some(u) => (u, "sdk"),
                    None => {
                        let output = r.output_units.div_ceil(4);
                        let input = r.input;
                        let total = (input + output).max(r.context + output);
                        (Usage { input, output, total_tokens: total, ..Usage::default() }, "estimate")
                    }
                };
                **usage = applied;
                r.owed = *stop_reason == StopReason::ToolUse && r.sdk.is_none();
                r.context += applied.output;
                r.input = std::mem::take(&mut r.next_input);
                r.message_open = false;
                r.sdk = None;
                r.output_units = 0;
                // In name order, each goes at the end.
                let mut fields = DiagFields::with_capacity(7);
                fields.insert("cacheRead", applied.cache_read);
                fields.insert("cacheWrite", applied.cache_write);
                fields.insert("input", applied.input);
                fields.insert("output", applied.output);
                fields.insert("source", source);
                fields.insert("totalTokens", applied.total_tokens);
                fields.insert("turn", *turn);
                let (run, at_ms) = (run.clone(), ev.at_ms);
                out.push(ev);
                out.push(OutputEvent {
                    run,
                    at_ms,
                    kind: Output::Diagnostic { phase: "usage_applied".into(), fields },
                });
                return;
            }
            Output::RunClosed { .. } => {
                self.runs.remove(run);
            }
            _ => {}
        }
        out.push(ev);
    }

    /// A turn's SDK usage: held for the message it belongs to, or discarded (late, or a second
    /// usage for one message) with a `usage_discarded` diagnostic.
    fn turn_usage(&mut self, run: Arc<RunId>, at_ms: u64, usage: TokenUsage, out: &mut Vec<OutputEvent>) {
        let r = self.runs.state_of(&run, RunUsage::default);
        let verdict = if r.owed {
            r.owed = false;
            "late"
        } else if r.message_open && r.sdk.is_none() {
            r.sdk = Some(usage);
            "held"
        } else if !r.message_open && r.held.is_none() {
            r.held = Some(usage);
            "held"
        } else {
            "already-has-usage"
        };
        if verdict != "held" {
            let mut fields = DiagFields::new();
            fields.insert("action", "discard-turn-usage");
            fields.insert("reason", verdict);
            out.push(OutputEvent { run, at_ms, kind: Output::Diagnostic { phase: "usage_discarded".into(), fields } });
        }
    }
}

#[cfg(test)]
mod tests;
