//! Shell output attribution (SPEC §6b): `shell-output-delta` chunks are attributed only while
//! exactly one shell call is active — never guessed. Calls are known by the identity intake gave
//! them (a completion closes the shell intake matched it to). Attributed chunks give up to three progress
//! lines per call and a buffer that stands in for the recorded output of a successful shell whose
//! recorded stdout and stderr are both blank. Pure state machine: items in, items out.

use std::sync::Arc;

use toolstream_schemas::cursor_cli::tool_models::{ResultModel, ToolSuccess};
use toolstream_schemas::{CallRef, DiagFields, Input, InputEvent, ShellStream, Tool, ToolEvent, ToolKind};

use crate::item::{Item, Line};
use crate::present::bounds::display_line;
use crate::present::scrub::{settled, Scrubber};
use toolstream_schemas::by_arc::ByArc;

/// Progress lines per call.
pub const PROGRESS_LINES: u8 = 3;
/// Longest progress line.
pub const PROGRESS_CHARS: usize = 160;
/// Most output buffered per call (bytes); the card bounds it further.
pub const BUFFER_BYTES: usize = 64 * 1024;
/// How much of the output before a chunk its progress line is scrubbed with (a PEM private key
/// of 8192 bits is about 6.5 KB).
const CONTEXT_BYTES: usize = 8 * 1024;

#[derive(Debug)]
struct ActiveShell {
    /// The call's key (intake's identity).
    key: u64,
    call: CallRef,
    buffer: String,
    budget: u8,
    /// Output arrived while another shell was active too: this call never buffers again.
    ambiguous: bool,
}

/// The shell stage's state: the active shell calls of each session.
#[derive(Debug, Default)]
pub struct ShellCore {
    scrubber: Scrubber,
    active: ByArc<str, Vec<ActiveShell>>,
}

fn is_shell(t: &ToolEvent) -> bool {
    t.tool == Tool::Known(ToolKind::Shell)
}

impl ShellCore {
    pub fn new(scrubber: Scrubber) -> Self {
        ShellCore { scrubber, active: ByArc::default() }
    }

    /// Process one item, appending it (possibly amended) and anything it produces to `out`.
    pub fn push(&mut self, item: Item, out: &mut Vec<Item>) {
        match item {
            Item::Input(mut ev) => {
                self.on_input(&mut ev, out);
                out.push(Item::Input(ev));
            }
            Item::EndOfSource | Item::Cancel => {
                self.active.clear();
                out.push(item);
            }
            other => out.push(other),
        }
    }

    fn on_input(&mut self, ev: &mut InputEvent, out: &mut Vec<Item>) {
        let at_ms = ev.at_ms.unwrap_or(0);
        match &mut ev.kind {
            Input::RunStarted(_) | Input::RunEnded(_) => {
                self.active.remove(&ev.session);
            }
            Input::ToolStarted(t) | Input::ToolPartial(t) if is_shell(t) => {
                let list = self.active.state_of(&ev.session, Vec::new);
                if !list.iter().any(|s| s.key == t.call.key) {
                    list.push(ActiveShell {
                        key: t.call.key,
                        call: t.call.call_ref.clone(),
                        buffer: String::new(),
                        budget: PROGRESS_LINES,
                        ambiguous: false,
                    });
                }
            }
            Input::ToolCompleted(t) if is_shell(t) => {
                let Some(list) = self.active.get_mut(&ev.session) else { return };
                let Some(i) = list.iter().position(|s| s.key == t.call.key) else { return };
                let shell = list.remove(i);
                if !shell.ambiguous && !shell.buffer.trim().is_empty() && fill_blank_output(t, shell.buffer) {
                    out.push(diagnostic(&ev.session, at_ms, "display_decision", &shell.call, "shell-delta-fallback"));
                }
            }
            Input::ShellOutput { stream, data, .. } if !data.is_empty() => {
                let Some(list) = self.active.get_mut(&ev.session) else { return };
                match list.as_mut_slice() {
                    [only] if !only.ambiguous => {
                        // Scrubbed as the continuation of what came before: a private key
                        // streamed over several chunks stays one redaction.
                        let scrubbed = (only.budget > 0 && !data.trim().is_empty())
                            .then(|| self.scrubber.scrub_after(tail(&only.buffer, CONTEXT_BYTES), data));
                        if only.buffer.len() < BUFFER_BYTES {
                            let room = BUFFER_BYTES - only.buffer.len();
                            only.buffer.push_str(cut_bytes(data, room));
                        }
                        // A chunk that ends mid-line may end mid-secret: its open end is not shown.
                        let open = !data.ends_with(['\n', '\r']);
                        let shown = scrubbed.as_deref().map(|d| if open { settled(d) } else { d });
                        let first = shown.and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()));
                        if let Some(first) = first {
                            only.budget -= 1;
                            let text = display_line(first, PROGRESS_CHARS);
                            let line = Line {
                                session: ev.session.clone(),
                                at_ms,
                                call: only.call.clone(),
                                title: "Cursor shell".into(),
                                text,
                            };
                            out.push(Item::ShellProgress { line, stream: *stream });
                        }
                    }
                    [_] => {}
                    many => {
                        // Zero or several candidates: never guess. Every active shell loses its
                        // buffer and progress budget for good.
                        let n = many.len();
                        for s in many.iter_mut() {
                            s.ambiguous = true;
                            s.buffer = String::new();
                            s.budget = 0;
                        }
                        let mut fields = DiagFields::new();
                        fields.insert("activeShells", n);
                        fields.insert("stream", stream_name(*stream));
                        out.push(Item::Diagnostic {
                            session: ev.session.clone(),
                            at_ms,
                            phase: "shell_output_ambiguous",
                            fields,
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

fn stream_name(s: ShellStream) -> &'static str {
    s.as_str()
}

/// Replace the recorded output of a successful shell whose stdout and stderr are both blank.
/// Recorded non-empty output always wins. Returns whether it replaced anything. The result is read
/// as its model here, once: the card reads the same model.
fn fill_blank_output(t: &mut ToolEvent, buffered: String) -> bool {
    let Some(result) = t.result.as_mut() else { return false };
    if !result.status.is_success() {
        return false;
    }
    let ResultModel::Success(ToolSuccess::Shell(shell)) = result.model(ToolKind::Shell) else {
        return false;
    };
    let blank = |s: &Option<String>| s.as_deref().is_none_or(|s| s.trim().is_empty());
    if !blank(&shell.stdout) || !blank(&shell.stderr) {
        return false;
    }
    result.set_stdout_from_deltas(buffered);
    true
}

/// The last `max` bytes of `s` (or fewer, at a char boundary).
fn tail(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

fn cut_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn diagnostic(session: &Arc<str>, at_ms: u64, phase: &'static str, call: &CallRef, action: &str) -> Item {
    let mut fields = DiagFields::new();
    fields.insert("action", action);
    fields.insert("callIdHash", call.hash.as_str());
    Item::Diagnostic { session: session.clone(), at_ms, phase, fields }
}

#[cfg(test)]
mod tests;
